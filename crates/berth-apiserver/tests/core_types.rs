//! The common core types through the API: ConfigMaps and Secrets
//! (validation, defaults, `stringData`), Services (cluster IPs and node
//! ports from their ranges, unique, given back on delete, durable across a
//! server's restart), a namespace's default ServiceAccount, tables, the
//! access reviews for an admin, a node and the join token, and a protobuf
//! round trip of every served kind.

mod common;

use std::collections::BTreeSet;
use std::net::IpAddr;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::resources::RESOURCES;
use berth_core::clock::Clock;
use berth_store::Store;
use common::{
    ADMIN, Api, JOIN, NODE1, api, api_with, assert_status, collection_path, sample, send,
};
use serde_json::{Value, json};

const NS: &str = "/api/v1/namespaces/default";

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn cluster_ip_service(name: &str) -> Value {
    service(
        name,
        json!({"selector": {"app": name}, "ports": [{"port": 80}]}),
    )
}

fn small_ranges(cidr: &str, ports: &str) -> ApiConfig {
    ApiConfig {
        service_cluster_ip_range: cidr.parse().expect("a CIDR"),
        service_node_port_range: ports.parse().expect("a port range"),
        ..ApiConfig::default()
    }
}

/// Creates `count` ClusterIP Services `<prefix>0`, ... in the namespace at
/// `ns` (its API path); their cluster IPs.
async fn create_services(api: &Api, ns: &str, prefix: &str, count: usize) -> BTreeSet<String> {
    let mut ips = BTreeSet::new();
    for i in 0..count {
        let service = cluster_ip_service(&format!("{prefix}{i}"));
        let created = api.create(&format!("{ns}/services"), service).await;
        let ip = created["spec"]["clusterIP"].as_str().unwrap_or("");
        ips.insert(ip.to_string());
    }
    ips
}

/// How many cluster IPs are held (IPAddress objects in the store).
async fn held_addresses(api: &Api) -> usize {
    let listed = api
        .server
        .store
        .list("/registry/ipaddresses/", Default::default())
        .await;
    listed.expect("list").items.len()
}

/// A create the API refuses, and how.
struct Refused {
    name: &'static str,
    /// The collection under the default namespace.
    uri: &'static str,
    body: Value,
    code: StatusCode,
    message: String,
}

async fn assert_refused(api: &Api, cases: Vec<Refused>) {
    for case in cases {
        let (code, value) = api
            .req("POST", &format!("{NS}/{}", case.uri), case.body)
            .await;
        assert_eq!(code, case.code, "{}: {value}", case.name);
        assert_eq!(message(&value), case.message, "{}", case.name);
    }
}

/// The message of a 422's only cause, as `kubectl` prints it.
fn message(value: &Value) -> &str {
    value["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn config_maps_and_secrets_are_validated_and_defaulted() {
    let api = api().await;
    let created = api
        .create(
            &format!("{NS}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"app.yaml": "port: 8080"}}),
        )
        .await;
    assert_eq!(created["data"]["app.yaml"], "port: 8080");

    let cases = vec![
        Refused {
            name: "a key that climbs out of its directory",
            uri: "configmaps",
            body: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": {"..dot": "x"}}),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "ConfigMap \"bad\" is invalid: data[..dot]: Invalid value: \"..dot\": must not start with '..'".into(),
        },
        Refused {
            name: "a token Secret naming no account",
            uri: "secrets",
            body: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "type": "kubernetes.io/service-account-token"}),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Secret \"token\" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value".into(),
        },
        Refused {
            name: "a TLS Secret without its key",
            uri: "secrets",
            body: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA=="}}),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Secret \"tls\" is invalid: data[tls.key]: Required value".into(),
        },
    ];
    assert_refused(&api, cases).await;
    let (code, value) = api
        .req(
            "POST",
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b64"}, "data": {"k": "not base64!"}}),
        )
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{value}");

    // stringData is folded into data; the type defaults to Opaque.
    let secret = api
        .create(
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                   "data": {"user": "YWRtaW4=", "password": "b2xk"}, "stringData": {"password": "hunter2"}, "immutable": true}),
        )
        .await;
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["data"],
        json!({"user": "YWRtaW4=", "password": "aHVudGVyMg=="})
    );
    assert!(secret.get("stringData").is_none(), "{secret}");
    let mut changed = secret.clone();
    changed["data"]["password"] = json!("bmV3");
    let (code, value) = api.req("PUT", &format!("{NS}/secrets/db"), changed).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{value}");
    assert_eq!(
        message(&value),
        "Secret \"db\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
    // Secrets are selected by type.
    let (_, list) = api
        .req(
            "GET",
            &format!("{NS}/secrets?fieldSelector=type%3DOpaque"),
            Value::Null,
        )
        .await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
}

#[tokio::test]
async fn services_are_defaulted_and_get_cluster_ips_and_node_ports() {
    let api = api().await;
    let web = api
        .create(&format!("{NS}/services"), cluster_ip_service("web"))
        .await;
    let spec = &web["spec"];
    let ip: IpAddr = spec["clusterIP"]
        .as_str()
        .unwrap_or("")
        .parse()
        .expect("an address");
    let range: berth_apiserver::allocators::range::ServiceCidr =
        "10.96.0.0/12".parse().expect("CIDR");
    assert!(range.index_of(ip).is_some(), "{ip} in 10.96.0.0/12");
    assert_eq!(spec["clusterIPs"], json!([ip.to_string()]));
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        spec["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 80}])
    );
    assert_eq!(web["status"], json!({"loadBalancer": {}}));
    // The address is held as upstream holds it: an IPAddress naming the Service.
    let held = api
        .server
        .store
        .get(&format!("/registry/ipaddresses/{ip}"))
        .await
        .expect("store")
        .expect("an IPAddress");
    let held: Value = serde_json::from_slice(&held.value).expect("JSON");
    assert_eq!(
        held["spec"]["parentRef"],
        json!({"group": "", "resource": "services", "namespace": "default", "name": "web"})
    );

    let headless = api
        .create(
            &format!("{NS}/services"),
            service(
                "db",
                json!({"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}),
            ),
        )
        .await;
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));

    let node_port = api
        .create(
            &format!("{NS}/services"),
            service("np", json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]})),
        )
        .await;
    let np = node_port["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .unwrap_or(0);
    assert!((30000..=32767).contains(&np), "{node_port}");
    assert_eq!(node_port["spec"]["externalTrafficPolicy"], "Cluster");

    let cases = vec![
        Refused {
            name: "an address outside the range",
            uri: "services",
            body: service("out", json!({"clusterIP": "192.168.0.1", "ports": [{"port": 80}]})),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Service \"out\" is invalid: spec.clusterIPs: Invalid value: [\"192.168.0.1\"]: failed to allocate IP 192.168.0.1: provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12".into(),
        },
        Refused {
            name: "an address held by another Service",
            uri: "services",
            body: service("dup", json!({"clusterIP": ip.to_string(), "ports": [{"port": 80}]})),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: format!("Service \"dup\" is invalid: spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"),
        },
        Refused {
            name: "a node port held by another Service",
            uri: "services",
            body: service("np2", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": np}]})),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: format!("Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: {np}: provided port is already allocated"),
        },
        Refused {
            name: "a node port outside the range",
            uri: "services",
            body: service("np3", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]})),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Service \"np3\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767".into(),
        },
        Refused {
            name: "a name that is not a DNS-1035 label",
            uri: "services",
            body: cluster_ip_service("1web"),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Service \"1web\" is invalid: metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".into(),
        },
        Refused {
            name: "dual-stack on a single-stack cluster",
            uri: "services",
            body: service("dual", json!({"ipFamilyPolicy": "RequireDualStack", "selector": {"a": "b"}, "ports": [{"port": 80}]})),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Service \"dual\" is invalid: spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services".into(),
        },
        Refused {
            name: "a port out of range (validation after allocation gives the address back)",
            uri: "services",
            body: service("badport", json!({"ports": [{"port": 70000, "targetPort": 8080}]})),
            code: StatusCode::UNPROCESSABLE_ENTITY,
            message: "Service \"badport\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
        },
    ];
    assert_refused(&api, cases).await;
    assert_eq!(
        held_addresses(&api).await,
        2,
        "web and np hold one each; the refused hold none"
    );

    // A replace that leaves out the allocated values keeps them.
    let mut replaced = cluster_ip_service("web");
    replaced["metadata"]["resourceVersion"] = web["metadata"]["resourceVersion"].clone();
    replaced["spec"]["ports"] = json!([{"port": 8080}]);
    let (code, updated) = api
        .req("PUT", &format!("{NS}/services/web"), replaced)
        .await;
    assert_eq!(code, StatusCode::OK, "{updated}");
    assert_eq!(updated["spec"]["clusterIP"], ip.to_string());
    // A changed cluster IP is refused.
    let mut moved = updated.clone();
    moved["spec"]["clusterIP"] = json!("10.96.0.99");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.99"]);
    let (code, value) = api.req("PUT", &format!("{NS}/services/web"), moved).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{value}");
    assert_eq!(
        message(&value),
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may not change once set"
    );
    // NodePort to ClusterIP gives the node port back: another Service can take it.
    let (code, value) = merge_patch(
        &api,
        &format!("{NS}/services/np"),
        json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": null}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{value}");
    let taken_again = api
        .create(
            &format!("{NS}/services"),
            service(
                "np4",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": np}]}),
            ),
        )
        .await;
    assert_eq!(taken_again["spec"]["ports"][0]["nodePort"], np);
}

/// A merge patch, as `kubectl patch --type=merge` sends it.
async fn merge_patch(api: &Api, uri: &str, patch: Value) -> (StatusCode, Value) {
    api.call(
        Some(ADMIN),
        "PATCH",
        uri,
        "application/merge-patch+json",
        patch.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn a_full_range_is_a_500_and_deletes_give_addresses_back() {
    // A /29 gives six addresses.
    let api = api_with(small_ranges("10.0.0.0/29", "30000-30001")).await;
    let ips = create_services(&api, NS, "s", 6).await;
    assert_eq!(ips.len(), 6, "{ips:?}");
    let (code, full) = api
        .req("POST", &format!("{NS}/services"), cluster_ip_service("s6"))
        .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{full}");
    assert_status(&full, 500, "InternalError");
    assert_eq!(
        message(&full),
        "Internal error occurred: failed to allocate a serviceIP: range is full"
    );
    // A deleted Service's address is free again.
    let (code, _) = api
        .req("DELETE", &format!("{NS}/services/s3"), Value::Null)
        .await;
    assert_eq!(code, StatusCode::OK);
    let again = api
        .create(&format!("{NS}/services"), cluster_ip_service("s6"))
        .await;
    assert!(
        ips.contains(again["spec"]["clusterIP"].as_str().unwrap_or("")),
        "{again}"
    );

    // Two node ports; the third Service finds none. Headless NodePorts are
    // refused, so these take no address: the range is full of them anyway.
    let (code, _) = api
        .req(
            "DELETE",
            &format!("{NS}/services?labelSelector="),
            Value::Null,
        )
        .await;
    assert_eq!(
        code,
        StatusCode::OK,
        "deletecollection gives every address back"
    );
    for name in ["n0", "n1"] {
        api.create(
            &format!("{NS}/services"),
            service(name, json!({"type": "NodePort", "ports": [{"port": 80}]})),
        )
        .await;
    }
    let (code, full) = api
        .req(
            "POST",
            &format!("{NS}/services"),
            service("n2", json!({"type": "NodePort", "ports": [{"port": 80}]})),
        )
        .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{full}");
    assert_eq!(
        message(&full),
        "Internal error occurred: failed to allocate a nodePort: range is full"
    );
    assert_eq!(
        held_addresses(&api).await,
        2,
        "n2's address went back when its node port failed"
    );
    let (code, _) = merge_patch(
        &api,
        &format!("{NS}/services/n0"),
        json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": null}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    api.create(
        &format!("{NS}/services"),
        service("n2", json!({"type": "NodePort", "ports": [{"port": 80}]})),
    )
    .await;
}

#[tokio::test]
async fn addresses_stay_unique_across_a_restart_and_concurrent_creates() {
    let api = api_with(small_ranges("10.0.0.0/28", "30000-32767")).await;
    let mut ips = create_services(&api, NS, "a", 4).await;
    // A restarted server knows nothing but the store.
    let config = small_ranges("10.0.0.0/28", "30000-32767");
    let restarted = ApiServer::new(api.server.store.clone(), Clock::real(), config)
        .await
        .expect("restarted");
    restarted
        .auth
        .add_token(ADMIN, berth_apiserver::auth::User::admin());
    let creates = (0..10).map(|i| {
        let request = Request::post(format!("{NS}/services"))
            .header("authorization", format!("Bearer {ADMIN}"))
            .header("content-type", "application/json")
            .body(Body::from(cluster_ip_service(&format!("b{i}")).to_string()))
            .expect("request");
        send(&restarted, request)
    });
    for (status, _, bytes) in futures::future::join_all(creates).await {
        assert_eq!(status, StatusCode::CREATED);
        let created: Value = serde_json::from_slice(&bytes).expect("JSON");
        let ip = created["spec"]["clusterIP"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(ips.insert(ip.clone()), "{ip} handed out twice");
    }
    // 14 addresses in a /28: all taken, none twice.
    assert_eq!(ips.len(), 14);
}

#[tokio::test]
async fn deleting_a_namespace_gives_its_services_addresses_back() {
    let api = api_with(small_ranges("10.0.0.0/29", "30000-32767")).await;
    api.create(
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    )
    .await;
    create_services(&api, "/api/v1/namespaces/team-a", "s", 6).await;
    let (code, full) = api
        .req("POST", &format!("{NS}/services"), cluster_ip_service("web"))
        .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{full}");
    let (code, _) = api
        .req("DELETE", "/api/v1/namespaces/team-a", Value::Null)
        .await;
    assert_eq!(code, StatusCode::OK);
    api.create(&format!("{NS}/services"), cluster_ip_service("web"))
        .await;
}

#[tokio::test]
async fn namespaces_get_a_default_service_account() {
    let api = api().await;
    for ns in ["default", "kube-system"] {
        let (code, account) = api
            .req(
                "GET",
                &format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
                Value::Null,
            )
            .await;
        assert_eq!(code, StatusCode::OK, "{ns}: {account}");
    }
    api.create(
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    )
    .await;
    let (code, account) = api
        .req(
            "GET",
            "/api/v1/namespaces/team-a/serviceaccounts/default",
            Value::Null,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{account}");
    assert_eq!(account["metadata"]["namespace"], "team-a");
}

/// A watch's body as text (one event alone parses as JSON).
fn watch_lines(body: &Value) -> String {
    match body {
        Value::String(text) => text.clone(),
        event => event.to_string(),
    }
}

#[tokio::test]
async fn services_and_config_maps_are_watched() {
    let api = api().await;
    let web = api
        .create(&format!("{NS}/services"), cluster_ip_service("web"))
        .await;
    api.create(
        &format!("{NS}/configmaps"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}}),
    )
    .await;
    for (resource, name) in [("services", "web"), ("configmaps", "app")] {
        let uri = format!("{NS}/{resource}?watch=1&resourceVersion=0&timeoutSeconds=1");
        let (code, body) = api.req("GET", &uri, Value::Null).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        let events: Vec<Value> = watch_lines(&body)
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let added: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "ADDED")
            .map(|e| &e["object"]["metadata"]["name"])
            .collect();
        assert!(added.contains(&&json!(name)), "{resource}: {body}");
    }
    // Deleting the Service is seen by a watch from its creation on.
    let rv = web["metadata"]["resourceVersion"].as_str().unwrap_or("0");
    api.req("DELETE", &format!("{NS}/services/web"), Value::Null)
        .await;
    let uri = format!("{NS}/services?watch=1&resourceVersion={rv}&timeoutSeconds=1");
    let (_, body) = api.req("GET", &uri, Value::Null).await;
    assert!(watch_lines(&body).contains("\"DELETED\""), "{body}");
}

#[tokio::test]
async fn services_print_upstreams_columns() {
    let api = api().await;
    let web = api
        .create(&format!("{NS}/services"), cluster_ip_service("web"))
        .await;
    let request = Request::get(format!("{NS}/services"))
        .header("authorization", format!("Bearer {ADMIN}"))
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Body::empty())
        .expect("request");
    let (_, _, bytes) = send(&api.server, request).await;
    let table: Value = serde_json::from_slice(&bytes).expect("JSON");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        columns,
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    // The age (cell 5) depends on the test's speed.
    let mut cells = table["rows"][0]["cells"].clone();
    cells[5] = json!("<age>");
    assert_eq!(
        cells,
        json!([
            "web",
            "ClusterIP",
            web["spec"]["clusterIP"],
            "<none>",
            "80/TCP",
            "<age>",
            "app=web"
        ])
    );
}

/// A review as `user` (a token); its status.
async fn review(api: &Api, token: &str, uri: &str, body: Value) -> Value {
    let (code, value) = api
        .call(
            Some(token),
            "POST",
            uri,
            "application/json",
            body.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{uri}: {value}");
    value["status"].clone()
}

const ACCESS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const RULES: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

fn access(attributes: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attributes})
}

#[tokio::test]
async fn access_reviews_tell_the_truth_for_admin_node_and_join_identities() {
    let api = api().await;
    let pod = |name: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
    };
    api.create(&format!("{NS}/pods"), pod("mine", "node1"))
        .await;
    api.create(&format!("{NS}/pods"), pod("theirs", "node2"))
        .await;

    struct Case {
        name: &'static str,
        token: &'static str,
        spec: Value,
        allowed: bool,
    }
    let resource = |verb: &str, resource: &str, name: &str| json!({"resourceAttributes": {"verb": verb, "resource": resource, "name": name, "namespace": "default"}});
    let cases = [
        Case {
            name: "admin deletes nodes",
            token: ADMIN,
            spec: resource("delete", "nodes", ""),
            allowed: true,
        },
        Case {
            name: "a node deletes nodes",
            token: NODE1,
            spec: resource("delete", "nodes", ""),
            allowed: false,
        },
        Case {
            name: "a node reads its own Node",
            token: NODE1,
            spec: resource("get", "nodes", "node1"),
            allowed: true,
        },
        Case {
            name: "a node reads another Node",
            token: NODE1,
            spec: resource("get", "nodes", "node2"),
            allowed: false,
        },
        Case {
            name: "a node reads a pod bound to it",
            token: NODE1,
            spec: resource("get", "pods", "mine"),
            allowed: true,
        },
        Case {
            name: "a node reads another node's pod",
            token: NODE1,
            spec: resource("get", "pods", "theirs"),
            allowed: false,
        },
        Case {
            name: "a node reads services",
            token: NODE1,
            spec: resource("list", "services", ""),
            allowed: true,
        },
        Case {
            name: "a node reads secrets",
            token: NODE1,
            spec: resource("get", "secrets", "db"),
            allowed: false,
        },
        Case {
            name: "the join token lists pods",
            token: JOIN,
            spec: resource("list", "pods", ""),
            allowed: false,
        },
        Case {
            name: "the join token asks for a node credential",
            token: JOIN,
            spec: json!({"nonResourceAttributes": {"path": "/berth/v1/node-credential", "verb": "post"}}),
            allowed: true,
        },
        Case {
            name: "a node gets discovery",
            token: NODE1,
            spec: json!({"nonResourceAttributes": {"path": "/apis/apps/v1", "verb": "get"}}),
            allowed: true,
        },
        Case {
            name: "a node gets metrics",
            token: NODE1,
            spec: json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}),
            allowed: false,
        },
    ];
    for case in cases {
        let status = review(&api, case.token, ACCESS, access(case.spec)).await;
        assert_eq!(status["allowed"], case.allowed, "{}: {status}", case.name);
    }
    let denied = review(
        &api,
        NODE1,
        ACCESS,
        access(resource("get", "nodes", "node2")),
    )
    .await;
    assert_eq!(
        denied["reason"],
        "node 'node1' cannot read 'node2', only its own Node object"
    );

    // Who am I.
    let cases = [
        (
            ADMIN,
            json!({"username": "admin", "groups": ["system:masters", "system:authenticated"]}),
        ),
        (
            NODE1,
            json!({"username": "system:node:node1", "groups": ["system:nodes", "system:authenticated"]}),
        ),
        (
            JOIN,
            json!({"username": "system:bootstrap:berth-join", "groups": ["system:bootstrappers", "system:authenticated"]}),
        ),
    ];
    for (token, want) in cases {
        let status = review(
            &api,
            token,
            WHOAMI,
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        )
        .await;
        assert_eq!(status["userInfo"], want);
    }

    // What may I do.
    let rules = |ns: &str| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": ns}});
    let admin = review(&api, ADMIN, RULES, rules("default")).await;
    assert_eq!(
        admin["resourceRules"][0],
        json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
    );
    assert_eq!(admin["incomplete"], false);
    let node = review(&api, NODE1, RULES, rules("kube-node-lease")).await;
    let rule_of = |resource: &str| {
        node["resourceRules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["resources"] == json!([resource]))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(
        rule_of("nodes").contains(&json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["nodes"], "resourceNames": ["node1"]})),
        "{node}"
    );
    assert!(
        rule_of("leases").contains(&json!({"verbs": ["create"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]})),
        "{node}"
    );
    assert_eq!(
        node["incomplete"], true,
        "which pods it may read depends on the pods"
    );
    let join = review(&api, JOIN, RULES, rules("default")).await;
    let join_resources: Vec<&Value> = join["resourceRules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| &r["resources"])
        .collect();
    assert_eq!(
        join_resources,
        [
            &json!(["selfsubjectreviews"]),
            &json!(["selfsubjectaccessreviews"]),
            &json!(["selfsubjectrulesreviews"])
        ]
    );
    assert!(
        join["nonResourceRules"]
            .as_array()
            .is_some_and(|r| r.contains(
                &json!({"verbs": ["post"], "nonResourceURLs": ["/berth/v1/node-credential"]})
            )),
        "{join}"
    );

    // Reviews are created, never read, and say what is wrong with them.
    let (code, value) = api.req("GET", ACCESS, Value::Null).await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "{value}");
    let (code, value) = api.req("POST", ACCESS, access(json!({}))).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{value}");
    assert_eq!(
        message(&value),
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );
    let (code, value) = api.req("POST", RULES, rules("")).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{value}");
}

#[tokio::test]
async fn every_served_kind_round_trips_through_protobuf() {
    let api = api().await;
    for (i, rt) in RESOURCES.iter().enumerate() {
        // Two kinds share one storage (core and events.k8s.io Events).
        let name = format!("proto-{i}");
        let object = sample(rt, &name);
        let collection = collection_path(rt);
        let body = berth_proto::encode_object(&object).expect("encodes");
        let request = Request::post(&collection)
            .header("authorization", format!("Bearer {ADMIN}"))
            .header("content-type", berth_proto::CONTENT_TYPE)
            .header("accept", berth_proto::CONTENT_TYPE)
            .body(Body::from(body))
            .expect("request");
        let (status, headers, bytes) = send(&api.server, request).await;
        let content_type = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let answer = berth_proto::decode_object(&bytes).unwrap_or_default();
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{} {}: {answer}",
            rt.group,
            rt.kind
        );
        assert_eq!(content_type, berth_proto::CONTENT_TYPE, "{}", rt.kind);
        let back = answer;
        assert_eq!(back["kind"], rt.kind, "{back}");
        assert_eq!(back["apiVersion"], rt.api_version(), "{back}");
        if rt.strategy.is_stored() {
            assert_eq!(back["metadata"]["name"], name, "{back}");
        } else {
            assert!(back.get("status").is_some(), "{} answered: {back}", rt.kind);
        }
    }
}
