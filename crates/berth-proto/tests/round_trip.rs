//! JSON → protobuf → JSON is the identity for realistic objects of every kind berth serves
//! and the ones it is about to, through the object envelope as a protobuf body carries them
//! and through watch frames.

use serde_json::{Value, json};

struct Case {
    name: &'static str,
    object: Value,
}

fn meta(name: &str, namespace: Option<&str>) -> Value {
    let mut meta = json!({
        "name": name,
        "uid": "9d0c3a4e-1b2f-4c5d-8e7f-6a5b4c3d2e1f",
        "resourceVersion": "4711",
        "creationTimestamp": "2025-03-14T09:26:53Z",
        "labels": {"app": "web"},
    });
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    }
    meta
}

fn pod_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30
        }
    })
}

fn cases() -> Vec<Case> {
    let pod: Value = serde_json::from_str(include_str!("data/pod.json")).expect("pod.json is JSON");
    // A list's items carry no apiVersion and kind (the list's envelope names them).
    let mut pod_item = pod.clone();
    if let Some(item) = pod_item.as_object_mut() {
        item.remove("apiVersion");
        item.remove("kind");
    }
    vec![
        Case {
            name: "pod with everything",
            object: pod.clone(),
        },
        Case {
            name: "node with taints, conditions, quantities and images",
            object: json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": meta("worker-3", None),
                "spec": {
                    "podCIDR": "10.244.3.0/24", "podCIDRs": ["10.244.3.0/24", "fd00:10:244:3::/64"],
                    "providerID": "berth://worker-3", "unschedulable": false,
                    "taints": [
                        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2025-03-14T10:00:00Z"},
                        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "", "effect": "PreferNoSchedule"}
                    ]
                },
                "status": {
                    "capacity": {"cpu": "8", "memory": "32780604Ki", "pods": "110", "ephemeral-storage": "101430960Ki", "hugepages-2Mi": "0"},
                    "allocatable": {"cpu": "7800m", "memory": "32166204Ki", "pods": "110"},
                    "phase": "Running",
                    "conditions": [
                        {"type": "Ready", "status": "Unknown", "lastHeartbeatTime": "2025-03-14T09:59:20Z", "lastTransitionTime": "2025-03-14T10:00:00Z", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."},
                        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2025-03-14T09:59:20Z", "lastTransitionTime": "2025-03-01T00:00:00Z", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available"}
                    ],
                    "addresses": [{"type": "InternalIP", "address": "192.168.10.13"}, {"type": "Hostname", "address": "worker-3"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                    "nodeInfo": {"machineID": "m1", "systemUUID": "u1", "bootID": "b1", "kernelVersion": "6.8.0", "osImage": "Ubuntu 24.04", "containerRuntimeVersion": "containerd://2.0.0", "kubeletVersion": "v1.37.0", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
                    "images": [{"names": ["registry.example.com/shop/web@sha256:2233", "registry.example.com/shop/web:2.8.1"], "sizeBytes": 123456789}],
                    "config": {}
                }
            }),
        },
        Case {
            name: "namespace",
            object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta("team-a", None), "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        },
        Case {
            name: "core event with MicroTime eventTime and series",
            object: json!({
                "apiVersion": "v1", "kind": "Event", "metadata": meta("web.17c9", Some("shop")),
                "involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web", "uid": "u", "apiVersion": "v1", "resourceVersion": "12", "fieldPath": "spec.containers{web}"},
                "reason": "BackOff", "message": "Back-off restarting failed container",
                "source": {"component": "kubelet", "host": "worker-3"},
                "firstTimestamp": "2025-03-14T09:00:00Z", "lastTimestamp": "2025-03-14T09:30:00Z", "count": 7, "type": "Warning",
                "eventTime": "2025-03-14T09:30:00.123456Z",
                "series": {"count": 2, "lastObservedTime": "2025-03-14T09:30:01.000001Z"},
                "action": "Pulling", "reportingComponent": "kubelet", "reportingInstance": "worker-3"
            }),
        },
        Case {
            name: "events.k8s.io event",
            object: json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("web.17ca", Some("shop")),
                "eventTime": "2025-03-14T09:30:00.000000Z", "reportingController": "berth.dev/scheduler", "reportingInstance": "berth-1",
                "action": "Scheduling", "reason": "FailedScheduling", "regarding": {"kind": "Pod", "namespace": "shop", "name": "web"},
                "note": "0/3 nodes are available", "type": "Warning", "deprecatedCount": 0
            }),
        },
        Case {
            name: "lease with MicroTimes",
            object: json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta("worker-3", Some("kube-node-lease")),
                "spec": {"holderIdentity": "worker-3", "leaseDurationSeconds": 40, "acquireTime": "2025-03-14T09:00:00.000000Z", "renewTime": "2025-03-14T09:59:59.999999Z", "leaseTransitions": 0}
            }),
        },
        Case {
            name: "binding",
            object: json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web", "namespace": "shop"}, "target": {"kind": "Node", "name": "worker-3", "apiVersion": "v1"}}),
        },
        Case {
            name: "eviction with delete options",
            object: json!({
                "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web", "namespace": "shop"},
                "deleteOptions": {"gracePeriodSeconds": 0, "preconditions": {"uid": "u1", "resourceVersion": "7"}, "propagationPolicy": "Background", "dryRun": ["All"]}
            }),
        },
        Case {
            name: "status of a failed request",
            object: json!({
                "apiVersion": "v1", "kind": "Status", "metadata": {"resourceVersion": ""}, "status": "Failure",
                "message": "pods \"web\" is forbidden: node worker-3 can only update its own pods", "reason": "Forbidden",
                "details": {"name": "web", "kind": "pods", "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value", "field": "spec.nodeName"}], "retryAfterSeconds": 1},
                "code": 403
            }),
        },
        Case {
            name: "delete options",
            object: json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 30, "orphanDependents": false, "ignoreStoreReadErrorWithClusterBreakingPotential": true}),
        },
        Case {
            name: "deployment",
            object: json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web", Some("shop")),
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template(),
                         "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
                         "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "minReadySeconds": 0},
                "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2, "unavailableReplicas": 1,
                           "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2025-03-14T09:00:00Z", "lastTransitionTime": "2025-03-14T09:00:00Z", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]}
            }),
        },
        Case {
            name: "replica set",
            object: json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("web-7d4b9c8f6d", Some("shop")),
                           "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template()},
                           "status": {"replicas": 0, "fullyLabeledReplicas": 0, "observedGeneration": 4}}),
        },
        Case {
            name: "daemon set",
            object: json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("agent", Some("kube-system")),
                           "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template(),
                                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
                           "status": {"currentNumberScheduled": 3, "numberMisscheduled": 0, "desiredNumberScheduled": 3, "numberReady": 3}}),
        },
        Case {
            name: "stateful set with claim templates",
            object: json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db", Some("shop")),
                           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template(), "serviceName": "db",
                                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}, "storageClassName": ""}}],
                                    "podManagementPolicy": "OrderedReady", "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}},
                           "status": {"replicas": 1, "currentRevision": "db-1", "updateRevision": "db-1", "collisionCount": 0}}),
        },
        Case {
            name: "controller revision with RawExtension data",
            object: json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta("db-1", Some("shop")),
                           "data": {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}}}, "n": 1.5, "list": [1, "two", null]},
                           "revision": 1}),
        },
        Case {
            name: "pod disruption budget with IntOrString",
            object: json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("web", Some("shop")),
                           "spec": {"minAvailable": "50%", "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
                           "status": {"observedGeneration": 1, "disruptedPods": {"web-1": "2025-03-14T09:00:00Z"}, "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 3}}),
        },
        Case {
            name: "priority class",
            object: json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta("high", None), "value": -5, "globalDefault": false, "description": "", "preemptionPolicy": "Never"}),
        },
        Case {
            name: "config map with binaryData",
            object: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("web-config", Some("shop")), "data": {"app.yaml": "port: 8080\n", "empty": ""}, "binaryData": {"logo.png": "iVBORw0KGgo=", "none": ""}, "immutable": true}),
        },
        Case {
            name: "secret with data bytes",
            object: json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("db", Some("shop")), "data": {"password": "aHVudGVyMg==", "binary": "AAH/"}, "type": "Opaque"}),
        },
        Case {
            name: "service",
            object: json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("web", Some("shop")),
                           "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http", "nodePort": 30080}, {"name": "metrics", "port": 9090, "targetPort": 9090}],
                                    "selector": {"app": "web"}, "clusterIP": "10.96.12.34", "clusterIPs": ["10.96.12.34"], "type": "NodePort", "externalIPs": ["203.0.113.7"],
                                    "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                                    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster"},
                           "status": {"loadBalancer": {}}}),
        },
        Case {
            name: "endpoints",
            object: json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": meta("web", Some("shop")),
                           "subsets": [{"addresses": [{"ip": "10.244.3.17", "nodeName": "worker-3", "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web", "uid": "u"}}],
                                        "notReadyAddresses": [{"ip": "10.244.1.4"}], "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}),
        },
        Case {
            name: "endpoint slice",
            object: json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": meta("web-abc12", Some("shop")), "addressType": "IPv4",
                           "endpoints": [{"addresses": ["10.244.3.17"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "worker-3", "zone": "eu-west-1a",
                                          "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web"}, "hints": {"forZones": [{"name": "eu-west-1a"}]}}],
                           "ports": [{"name": "http", "protocol": "TCP", "port": 8080, "appProtocol": "http"}]}),
        },
        Case {
            name: "service account",
            object: json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("web", Some("shop")), "secrets": [{"name": "web-token"}], "imagePullSecrets": [{"name": "registry"}], "automountServiceAccountToken": true}),
        },
        Case {
            name: "resource quota",
            object: json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("compute", Some("shop")),
                           "spec": {"hard": {"requests.cpu": "4", "pods": "20"}, "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}},
                           "status": {"hard": {"requests.cpu": "4", "pods": "20"}, "used": {"requests.cpu": "1250m", "pods": "5"}}}),
        },
        Case {
            name: "limit range",
            object: json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("defaults", Some("shop")),
                           "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "10m"}, "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m"}, "maxLimitRequestRatio": {"cpu": "10"}}]}}),
        },
        Case {
            name: "self subject access review",
            object: json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {"creationTimestamp": "2025-03-14T09:26:53Z"},
                           "spec": {"resourceAttributes": {"namespace": "shop", "verb": "delete", "group": "", "resource": "nodes", "name": "worker-3",
                                                           "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["worker-3"]}]}}},
                           "status": {"allowed": false, "denied": false, "reason": "no RBAC policy matched", "evaluationError": ""}}),
        },
        Case {
            name: "subject access review with extra (ExtraValue)",
            object: json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
                           "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "system:node:worker-3", "groups": ["system:nodes"],
                                    "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab"], "empty": []}, "uid": "u"},
                           "status": {"allowed": true}}),
        },
        Case {
            name: "self subject review",
            object: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
                           "status": {"userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}}}),
        },
        Case {
            name: "node metrics with Duration window",
            object: json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics", "metadata": meta("worker-3", None),
                           "timestamp": "2025-03-14T09:30:00Z", "window": "20.052s", "usage": {"cpu": "1234567n", "memory": "2048Ki"}}),
        },
        Case {
            name: "pod metrics",
            object: json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics", "metadata": meta("web", Some("shop")),
                           "timestamp": "2025-03-14T09:30:00Z", "window": "1m0s",
                           "containers": [{"name": "web", "usage": {"cpu": "12m", "memory": "80Mi"}}, {"name": "sidecar", "usage": {"cpu": "0", "memory": "0"}}]}),
        },
        Case {
            name: "scale",
            object: json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": meta("web", Some("shop")), "spec": {"replicas": 5}, "status": {"replicas": 3, "selector": "app=web"}}),
        },
        Case {
            name: "pod list",
            object: json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "184467", "continue": "eyJ2Ijoi", "remainingItemCount": 12},
                           "items": [pod_item.clone(), {"metadata": meta("second", Some("shop")), "spec": {}, "status": {}}]}),
        },
        Case {
            name: "API resource list (Verbs)",
            object: json!({"apiVersion": "v1", "kind": "APIResourceList", "groupVersion": "v1",
                           "resources": [{"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": ["create", "delete", "get", "list", "watch"], "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "xPOwRZ+Yhw8="},
                                         {"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy", "version": "v1", "kind": "Eviction", "verbs": []}]}),
        },
    ]
}

#[test]
fn objects_round_trip_through_the_envelope() {
    for case in cases() {
        let bytes = berth_proto::encode_object(&case.object)
            .unwrap_or_else(|error| panic!("{}: encode: {error}", case.name));
        assert!(bytes.starts_with(b"k8s\x00"), "{}", case.name);
        let back = berth_proto::decode_object(&bytes)
            .unwrap_or_else(|error| panic!("{}: decode: {error}", case.name));
        assert_eq!(back, case.object, "{}", case.name);
    }
}

/// Protobuf has no empty repeated field nor empty map: an empty JSON list or object in such
/// a field is not written and reads back absent, as Go's JSON omits a nil slice or map.
#[test]
fn empty_lists_and_maps_read_back_absent() {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "a", "labels": {}, "finalizers": []}, "spec": {"finalizers": []}});
    let bytes = berth_proto::encode_object(&namespace).expect("encodes");
    let back = berth_proto::decode_object(&bytes).expect("decodes");
    assert_eq!(
        back,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}, "spec": {}})
    );
}

#[test]
fn objects_round_trip_through_watch_frames() {
    let mut stream = Vec::new();
    let cases = cases();
    for case in &cases {
        berth_proto::watch::encode_event_into(&mut stream, "MODIFIED", &case.object)
            .unwrap_or_else(|error| panic!("{}: encode: {error}", case.name));
    }
    let mut rest = stream.as_slice();
    for case in &cases {
        let (frame, after) = berth_proto::watch::split_frame(rest, 1 << 20)
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("{}: no whole frame", case.name));
        let (event_type, object) = berth_proto::watch::decode_event(frame)
            .unwrap_or_else(|error| panic!("{}: decode: {error}", case.name));
        assert_eq!(event_type, "MODIFIED", "{}", case.name);
        assert_eq!(object, case.object, "{}", case.name);
        rest = after;
    }
    assert!(rest.is_empty());
}
