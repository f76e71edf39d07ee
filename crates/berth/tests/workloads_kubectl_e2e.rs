//! The apps/v1 workload types with the real kubectl (v1.37,
//! `common::kubectl`) against a real `berth server`, on the embedded store
//! and on etcd: `apply` of every kind, `get` with upstream's columns,
//! `describe`, `scale` through `/scale`, `create deployment`, `set image`
//! (a strategic merge patch of the template), and the 422s of an invalid
//! object and of a changed selector.
//!
//! No workload controller runs here (`--controllers` names none, and
//! there are no nodes and no scheduler), so what the assertions read is what the API server itself decides:
//! defaults, generations, validation, and the printed columns of objects
//! whose status nobody has written.

mod common;

use common::Backend;
use common::kubectl::Cluster;

/// One object of each apps/v1 kind.
const WORKLOADS: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: frontend
spec:
  replicas: 3
  selector:
    matchLabels: {tier: frontend}
  template:
    metadata:
      labels: {tier: frontend}
    spec:
      containers:
      - {name: php, image: 'php:8'}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      nodeSelector: {disk: ssd}
      containers:
      - {name: agent, image: 'fluentd:v5'}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - {name: db, image: 'postgres:17'}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
";

/// A revision of the StatefulSet `db`, owned by it (`UID` replaced by its
/// uid: the garbage collector deletes a dependent whose owner's uid is not
/// the one referenced).
const REVISION: &str = "\
apiVersion: apps/v1
kind: ControllerRevision
metadata:
  name: db-5d8c7b9f4
  ownerReferences:
  - {apiVersion: apps/v1, kind: StatefulSet, name: db, uid: UID, controller: true}
data: {spec: {template: {metadata: {labels: {app: db}}}}}
revision: 1
";

/// A Deployment whose selector misses its template, with a negative
/// replica count.
const INVALID: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  replicas: -1
  selector:
    matchLabels: {app: bad}
  template:
    metadata:
      labels: {app: other}
    spec:
      containers:
      - {name: c, image: nginx}
";

#[test]
fn workloads_with_real_kubectl_on_the_embedded_store() {
    workloads(Backend::Embedded);
}

#[test]
fn workloads_with_real_kubectl_on_etcd() {
    workloads(Backend::Etcd);
}

/// The lines of a `kubectl get`, each split into its cells.
fn table(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn workloads(backend: Backend) {
    // The workload controllers are left out (their own tests are
    // workloads_e2e.rs and berth-sim's): what is read here is the API
    // server's alone.
    let cluster = Cluster {
        server: common::Server::start_blocking(
            "workloads",
            backend,
            &[
                "--disable-scheduler",
                "--controllers=node-lifecycle-controller,taint-eviction-controller",
            ],
        ),
    };

    assert_eq!(
        cluster.apply(WORKLOADS).trim(),
        "deployment.apps/web created\nreplicaset.apps/frontend created\ndaemonset.apps/agent created\nstatefulset.apps/db created"
    );
    let db_uid = cluster.ok(&["get", "statefulset", "db", "-o", "jsonpath={.metadata.uid}"]);
    assert_eq!(
        cluster
            .apply(&REVISION.replace("UID", db_uid.trim()))
            .trim(),
        "controllerrevision.apps/db-5d8c7b9f4 created"
    );

    // `kubectl get`: upstream's columns, the wide ones with -o wide; the
    // counts are the status nobody has written yet.
    struct Get {
        args: &'static [&'static str],
        header: &'static str,
        /// The row, without the AGE cell (its index is `age`).
        row: &'static [&'static str],
        age: usize,
    }
    let gets = [
        Get {
            args: &["get", "deployments", "-o", "wide"],
            header: "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
            row: &["web", "0/2", "0", "0", "web", "nginx:1.27", "app=web"],
            age: 4,
        },
        Get {
            args: &["get", "rs", "-o", "wide"],
            header: "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR",
            row: &["frontend", "3", "0", "0", "php", "php:8", "tier=frontend"],
            age: 4,
        },
        Get {
            args: &["get", "ds"],
            header: "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
            row: &["agent", "0", "0", "0", "0", "0", "disk=ssd"],
            // NODE SELECTOR is two words in the header, one cell in a row.
            age: 7,
        },
        Get {
            args: &["get", "sts", "-o", "wide"],
            header: "NAME READY AGE CONTAINERS IMAGES",
            row: &["db", "0/2", "db", "postgres:17"],
            age: 2,
        },
        Get {
            args: &["get", "controllerrevision", "db-5d8c7b9f4"],
            header: "NAME CONTROLLER REVISION AGE",
            row: &["db-5d8c7b9f4", "statefulset.apps/db", "1"],
            age: 3,
        },
    ];
    for get in gets {
        let out = cluster.ok(get.args);
        let rows = table(&out);
        assert_eq!(rows[0].join(" "), get.header, "{:?}: {out}", get.args);
        let mut row = rows[1].clone();
        row.remove(get.age);
        assert_eq!(row, get.row, "{:?}: {out}", get.args);
    }
    // The category `all` names the four workloads.
    let all = cluster.ok(&["get", "all"]);
    for name in [
        "deployment.apps/web",
        "replicaset.apps/frontend",
        "daemonset.apps/agent",
        "statefulset.apps/db",
    ] {
        assert!(all.contains(name), "{name} in {all}");
    }

    // `kubectl describe deployment`: the defaults as upstream describes them.
    let describe = cluster.ok(&["describe", "deployment", "web"]);
    for want in [
        "Selector:               app=web",
        "Replicas:               2 desired | 0 updated | 0 total | 0 available | 0 unavailable",
        "StrategyType:           RollingUpdate",
        "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
        "Image:         nginx:1.27",
        "Port:          80/TCP",
    ] {
        assert!(describe.contains(want), "{want:?} in {describe}");
    }

    // `kubectl scale` writes /scale: the spec's replicas, a new generation.
    assert_eq!(
        cluster
            .ok(&["scale", "deployment", "web", "--replicas=5"])
            .trim(),
        "deployment.apps/web scaled"
    );
    let web = cluster.json(&["get", "deployment", "web"]);
    assert_eq!(web["spec"]["replicas"], 5);
    assert_eq!(web["metadata"]["generation"], 2);
    let rows = table(&cluster.ok(&["get", "deployment", "web"]));
    assert_eq!(rows[1][1], "0/5");

    // `kubectl create deployment`, then `kubectl set image`: the template's
    // container patched by name, the rest of it kept, the generation moved.
    assert_eq!(
        cluster
            .ok(&["create", "deployment", "nginx", "--image=nginx"])
            .trim(),
        "deployment.apps/nginx created"
    );
    let created = cluster.json(&["get", "deployment", "nginx"]);
    assert_eq!(created["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(created["spec"]["replicas"], 1);
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(
        cluster
            .ok(&["set", "image", "deployment/nginx", "nginx=nginx:1.27"])
            .trim(),
        "deployment.apps/nginx image updated"
    );
    let updated = cluster.json(&["get", "deployment", "nginx"]);
    let container = &updated["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "nginx");
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(container["terminationMessagePolicy"], "File");
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(updated["status"], serde_json::json!({}));

    // An invalid object: upstream's field errors, on stderr.
    let path = cluster.manifest("bad.yaml", INVALID);
    let err = cluster.fails(&["apply", "-f", &path]);
    for want in [
        "The Deployment \"bad\" is invalid:",
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
    ] {
        assert!(err.contains(want), "{want:?} in {err}");
    }

    // A changed selector is refused, the Deployment kept as it was.
    let changed = WORKLOADS
        .split("---")
        .next()
        .unwrap_or_default()
        .replace("{app: web}", "{app: web, tier: front}");
    let path = cluster.manifest("changed.yaml", &changed);
    let err = cluster.fails(&["apply", "-f", &path]);
    assert!(
        err.contains(
            "The Deployment \"web\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"front\"}}: field is immutable"
        ),
        "{err}"
    );
    let web = cluster.json(&["get", "deployment", "web"]);
    assert_eq!(
        web["spec"]["selector"],
        serde_json::json!({"matchLabels": {"app": "web"}})
    );
}
