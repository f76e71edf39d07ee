//! scheduling.k8s.io/v1 PriorityClasses and the Priority admission plugin
//! as the API serves them, through an in-process kube client: the system
//! classes there from the start and protected, upstream's validation and
//! one global default, a pod's class resolved to its priority and
//! preemption policy, and upstream's refusals (403, 422) with their
//! messages.

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

/// An admin client of a fresh server on the in-memory store.
async fn cluster() -> kube::Client {
    let store = AnyStore::Memory(MemStore::new());
    let server = ApiServer::new(store, Clock::real(), ApiConfig::default()).await;
    let server = server.expect("the API server starts");
    in_process::client(&server, User::admin(), "default").expect("a client")
}

fn refusal<T>(result: kube::Result<T>) -> Option<(u16, String)> {
    match result {
        Err(kube::Error::Api(status)) => Some((status.code, status.message)),
        _ => None,
    }
}

fn class(name: &str, value: i64, extra: Value) -> PriorityClass {
    let mut object = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": name}, "value": value});
    if let (Some(object), Some(extra)) = (object.as_object_mut(), extra.as_object()) {
        object.extend(extra.clone());
    }
    serde_json::from_value(object).expect("a PriorityClass")
}

fn pod(name: &str, spec: Value) -> Pod {
    let mut full = json!({"containers": [{"name": "c", "image": "nginx:1"}]});
    if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        full.extend(extra.clone());
    }
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": name}, "spec": full}))
    .expect("a Pod")
}

#[tokio::test]
async fn the_system_classes_exist_from_the_start_and_are_protected() {
    let client = cluster().await;
    let classes: Api<PriorityClass> = Api::all(client);
    let listed = classes.list(&Default::default()).await.expect("a list");
    let found: Vec<(String, Option<i32>, Option<String>)> = listed
        .items
        .iter()
        .map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            (name, c.value, c.preemption_policy.clone())
        })
        .collect();
    let lower = Some("PreemptLowerPriority".to_string());
    assert_eq!(
        found,
        vec![
            (
                "system-cluster-critical".into(),
                Some(2_000_000_000),
                lower.clone()
            ),
            ("system-node-critical".into(), Some(2_000_001_000), lower),
        ]
    );
    let deleted = classes
        .delete("system-node-critical", &DeleteParams::default())
        .await;
    assert_eq!(
        refusal(deleted),
        Some((
            403,
            "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted".into()
        ))
    );
    let mut changed = classes
        .get("system-cluster-critical")
        .await
        .expect("a class");
    changed.global_default = Some(true);
    let replaced = classes
        .replace("system-cluster-critical", &PostParams::default(), &changed)
        .await;
    assert_eq!(
        refusal(replaced),
        Some((
            422,
            "PriorityClass.scheduling.k8s.io \"system-cluster-critical\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-cluster-critical PriorityClass must be false".into()
        ))
    );
}

#[tokio::test]
async fn priority_classes_are_validated_as_upstream() {
    struct Case {
        name: &'static str,
        class: PriorityClass,
        want: Result<Option<&'static str>, (u16, &'static str)>,
    }
    let client = cluster().await;
    let classes: Api<PriorityClass> = Api::all(client);
    let cases = [
        Case {
            name: "a user class gets the default preemption policy",
            class: class("high", 1000, json!({"globalDefault": true})),
            want: Ok(Some("PreemptLowerPriority")),
        },
        Case {
            name: "a second global default is forbidden",
            class: class("higher", 2000, json!({"globalDefault": true})),
            want: Err((
                403,
                "priorityclasses.scheduling.k8s.io \"higher\" is forbidden: PriorityClass high is already marked as default. Only one default can exist",
            )),
        },
        Case {
            name: "a user value above one billion",
            class: class("huge", 1_000_000_001, json!({})),
            want: Err((
                422,
                "PriorityClass.scheduling.k8s.io \"huge\" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            )),
        },
        Case {
            name: "the system- prefix is reserved",
            class: class("system-mine", 5, json!({})),
            want: Err((
                422,
                "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
            )),
        },
        Case {
            name: "a class that never preempts",
            class: class("batch", -10, json!({"preemptionPolicy": "Never"})),
            want: Ok(Some("Never")),
        },
    ];
    for Case { name, class, want } in cases {
        let got = classes.create(&PostParams::default(), &class).await;
        let got = match refusal(got) {
            Some((code, message)) => Err((code, message)),
            None => Ok(classes
                .get(class.metadata.name.as_deref().unwrap_or(""))
                .await
                .ok()
                .and_then(|c| c.preemption_policy)),
        };
        let want = want
            .map(|p| p.map(str::to_string))
            .map_err(|(code, message)| (code, message.to_string()));
        assert_eq!(got, want, "{name}");
    }
    let mut batch = classes.get("batch").await.expect("batch");
    batch.value = Some(-5);
    let replaced = classes
        .replace("batch", &PostParams::default(), &batch)
        .await;
    assert_eq!(
        refusal(replaced),
        Some((
            422,
            "PriorityClass.scheduling.k8s.io \"batch\" is invalid: value: Forbidden: may not be changed in an update.".into()
        ))
    );
}

#[tokio::test]
async fn pods_get_their_class_priority_or_are_refused_as_upstream() {
    struct Case {
        name: &'static str,
        spec: Value,
        want: Result<(i32, &'static str, &'static str), (u16, &'static str)>,
    }
    let client = cluster().await;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    for class in [
        class("batch", -10, json!({"preemptionPolicy": "Never"})),
        class("web", 500, json!({})),
    ] {
        classes
            .create(&PostParams::default(), &class)
            .await
            .expect("a class");
    }
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let cases = [
        Case {
            name: "no class and no default: priority 0",
            spec: json!({}),
            want: Ok((0, "", "PreemptLowerPriority")),
        },
        Case {
            name: "a system class",
            spec: json!({"priorityClassName": "system-node-critical"}),
            want: Ok((
                2_000_001_000,
                "system-node-critical",
                "PreemptLowerPriority",
            )),
        },
        Case {
            name: "a class that never preempts",
            spec: json!({"priorityClassName": "batch"}),
            want: Ok((-10, "batch", "Never")),
        },
        Case {
            name: "the class's own priority may be sent",
            spec: json!({"priorityClassName": "web", "priority": 500}),
            want: Ok((500, "web", "PreemptLowerPriority")),
        },
        Case {
            name: "a missing class",
            spec: json!({"priorityClassName": "nope"}),
            want: Err((
                403,
                "pods \"a-missing-class\" is forbidden: no PriorityClass with name nope was found",
            )),
        },
        Case {
            name: "a user-set priority without a class",
            spec: json!({"priority": 1000}),
            want: Err((
                403,
                "pods \"a-user-set-priority-without-a-class\" is forbidden: the integer value of priority (1000) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name",
            )),
        },
        Case {
            name: "a priority that disagrees with the class",
            spec: json!({"priorityClassName": "web", "priority": 7}),
            want: Err((
                403,
                "pods \"a-priority-that-disagrees-with-the-class\" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 500 from the given PriorityClass name",
            )),
        },
    ];
    for Case { name, spec, want } in cases {
        let pod_name = name
            .replace([' ', ':', '\'', '\u{2019}'], "-")
            .replace("--", "-");
        let got = pods
            .create(&PostParams::default(), &pod(&pod_name, spec))
            .await;
        let got = match refusal(got) {
            Some((code, message)) => Err((code, message)),
            None => {
                let created = pods.get(&pod_name).await.expect("the pod");
                let spec = created.spec.unwrap_or_default();
                Ok((
                    spec.priority.unwrap_or(i32::MIN),
                    spec.priority_class_name.unwrap_or_default(),
                    spec.preemption_policy.unwrap_or_default(),
                ))
            }
        };
        let want = want
            .map(|(p, c, policy)| (p, c.to_string(), policy.to_string()))
            .map_err(|(code, message)| (code, message.to_string()));
        assert_eq!(got, want, "{name}");
    }
}

#[tokio::test]
async fn the_global_default_class_applies_to_pods_without_one() {
    let client = cluster().await;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    let default = class("everyone", 42, json!({"globalDefault": true}));
    classes
        .create(&PostParams::default(), &default)
        .await
        .expect("a class");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let created = pods
        .create(&PostParams::default(), &pod("plain", json!({})))
        .await
        .expect("a pod");
    let spec = created.spec.unwrap_or_default();
    assert_eq!(
        (spec.priority, spec.priority_class_name.as_deref()),
        (Some(42), Some("everyone"))
    );
}

/// Admission keeps the classes it parsed until one of them changes: a
/// class created or deleted after a pod was admitted decides the next pod.
#[tokio::test]
async fn admission_sees_classes_created_and_deleted_after_its_last_read() {
    let client = cluster().await;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let priority_of = |pod: Pod| {
        let spec = pod.spec.unwrap_or_default();
        (spec.priority, spec.priority_class_name)
    };
    let before = pods
        .create(&PostParams::default(), &pod("before", json!({})))
        .await
        .expect("a pod before any default class");
    assert_eq!(priority_of(before), (Some(0), None));

    classes
        .create(
            &PostParams::default(),
            &class("later", 7, json!({"globalDefault": true})),
        )
        .await
        .expect("a default class");
    let with_class = pods
        .create(&PostParams::default(), &pod("with-class", json!({})))
        .await
        .expect("a pod after the default class");
    assert_eq!(priority_of(with_class), (Some(7), Some("later".into())));

    classes
        .delete("later", &DeleteParams::default())
        .await
        .expect("the class deleted");
    let after = pods
        .create(&PostParams::default(), &pod("after", json!({})))
        .await
        .expect("a pod after the class went");
    assert_eq!(priority_of(after), (Some(0), None));
}
