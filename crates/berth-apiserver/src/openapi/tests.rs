use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::v2_protobuf::wire;
use super::*;

fn v3(gv: &str) -> Value {
    let types = group_versions().remove(gv).expect("a served group-version");
    v3_document(&types)
}

/// Every `$ref` in `value`.
fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(r)) = object.get("$ref") {
                out.push(r.clone());
            }
            object.values().for_each(|v| references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

/// The documents with the prefix their references use and their schemas.
fn all_documents() -> Vec<(String, Value, &'static str, &'static str)> {
    let mut documents = vec![(
        "v2".to_string(),
        v2_document(),
        "#/definitions/",
        "/definitions",
    )];
    for gv in group_versions().keys() {
        documents.push((
            gv.clone(),
            v3(gv),
            "#/components/schemas/",
            "/components/schemas",
        ));
    }
    documents
}

#[test]
fn pod_and_node_schemas_carry_upstream_field_docs() {
    struct Case {
        name: &'static str,
        definition: &'static str,
        property: &'static str,
        description: &'static str,
        items: &'static str,
    }
    let cases = [
        Case {
            name: "pod.spec.tolerations",
            definition: "io.k8s.api.core.v1.PodSpec",
            property: "tolerations",
            description: "If specified, the pod's tolerations.",
            items: "io.k8s.api.core.v1.Toleration",
        },
        Case {
            name: "node.spec.taints",
            definition: "io.k8s.api.core.v1.NodeSpec",
            property: "taints",
            description: "If specified, the node's taints.",
            items: "io.k8s.api.core.v1.Taint",
        },
    ];
    let core = v3("api/v1");
    let v2 = v2_document();
    for case in cases {
        for (schemas, prefix) in [
            (&core["components"]["schemas"], "#/components/schemas/"),
            (&v2["definitions"], "#/definitions/"),
        ] {
            let what = format!("{} ({prefix})", case.name);
            let property = &schemas[case.definition]["properties"][case.property];
            assert_eq!(property["description"], case.description, "{what}");
            assert_eq!(property["type"], "array", "{what}");
            assert_eq!(
                property["items"]["$ref"],
                format!("{prefix}{}", case.items),
                "{what}"
            );
            assert!(
                schemas[case.items]["properties"]["effect"]["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{what}: the element's fields are documented"
            );
        }
    }
    assert_eq!(
        core["components"]["schemas"]["io.k8s.api.core.v1.Toleration"]["properties"]["tolerationSeconds"]
            ["format"],
        "int64"
    );
}

#[test]
fn every_reference_resolves_in_its_own_document() {
    for (name, document, prefix, schemas) in all_documents() {
        let mut refs = Vec::new();
        references(&document, &mut refs);
        assert!(!refs.is_empty(), "{name}: has references");
        for r in refs {
            let target = r
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("{name}: {r} does not start with {prefix}"));
            assert!(
                document
                    .pointer(schemas)
                    .and_then(|s| s.get(target))
                    .is_some(),
                "{name}: {r} does not resolve"
            );
        }
    }
}

#[test]
fn every_served_type_has_a_schema_tagged_with_its_group_version_kind() {
    let v2 = v2_document();
    for rt in RESOURCES {
        let (name, list) = definitions::names(rt);
        assert!(
            name.ends_with(&format!(".{}", rt.kind)),
            "{}/{} {}: its strategy names the schema {name}",
            rt.group,
            rt.version,
            rt.kind
        );
        let document = v3(&gv_path(rt));
        for (dialect, definitions) in [
            ("v2", &v2["definitions"]),
            ("v3", &document["components"]["schemas"]),
        ] {
            let list = list.iter().map(|list| (list, rt.list_kind()));
            for (definition, kind) in std::iter::once((&name, rt.kind.to_string())).chain(list) {
                let gvks = &definitions[definition.as_str()]["x-kubernetes-group-version-kind"];
                assert!(
                    gvks.as_array().is_some_and(|gvks| gvks.contains(
                        &json!({"group": rt.group, "version": rt.version, "kind": kind})
                    )),
                    "{dialect}: {definition} lacks its group-version-kind: {gvks}"
                );
            }
        }
    }
}

#[test]
fn definitions_are_named_as_upstream() {
    let core = v3("api/v1");
    let schemas = core["components"]["schemas"].as_object().expect("schemas");
    for name in [
        "io.k8s.api.core.v1.Pod",
        "io.k8s.api.core.v1.PodList",
        "io.k8s.api.core.v1.Node",
        "io.k8s.api.core.v1.Namespace",
        "io.k8s.api.core.v1.Event",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
    ] {
        assert!(schemas.contains_key(name), "{name} missing");
    }
    let lease = v3("apis/coordination.k8s.io/v1");
    assert!(lease["components"]["schemas"]["io.k8s.api.coordination.v1.Lease"].is_object());
    assert!(
        lease["components"]["schemas"]["io.k8s.api.core.v1.Pod"].is_null(),
        "a group-version's document holds only what its kinds reference"
    );
}

/// A property's patch strategy, merge key, list type and map keys.
struct Tags {
    definition: &'static str,
    property: &'static str,
    strategy: Option<&'static str>,
    merge_key: Option<&'static str>,
    list_type: Option<&'static str>,
    map_keys: Option<Value>,
}

fn tags(
    definition: &'static str,
    property: &'static str,
    strategy: Option<&'static str>,
    merge_key: Option<&'static str>,
    list_type: Option<&'static str>,
    map_keys: Option<Value>,
) -> Tags {
    Tags {
        definition,
        property,
        strategy,
        merge_key,
        list_type,
        map_keys,
    }
}

/// Checks `cases` in the v2 document and in the v3 document of `gv`.
fn check_tags(gv: &str, cases: &[Tags]) {
    for (dialect, document, schemas) in [
        ("v2", v2_document(), "/definitions"),
        ("v3", v3(gv), "/components/schemas"),
    ] {
        for case in cases {
            let property = document
                .pointer(&format!(
                    "{schemas}/{}/properties/{}",
                    case.definition, case.property
                ))
                .unwrap_or_else(|| panic!("{dialect}: {}.{}", case.definition, case.property));
            let what = format!("{dialect}: {}.{}", case.definition, case.property);
            let text = |key: &str| property.get(key).and_then(Value::as_str);
            assert_eq!(text("x-kubernetes-patch-strategy"), case.strategy, "{what}");
            assert_eq!(
                text("x-kubernetes-patch-merge-key"),
                case.merge_key,
                "{what}"
            );
            assert_eq!(text("x-kubernetes-list-type"), case.list_type, "{what}");
            assert_eq!(
                property.get("x-kubernetes-list-map-keys"),
                case.map_keys.as_ref(),
                "{what}"
            );
        }
    }
}

#[test]
fn patch_strategies_and_list_types_follow_upstream_tags() {
    #[rustfmt::skip]
    let cases = [
        tags("io.k8s.api.core.v1.PodSpec", "containers", Some("merge"), Some("name"), Some("map"), Some(json!(["name"]))),
        tags("io.k8s.api.core.v1.Container", "ports", Some("merge"), Some("containerPort"), Some("map"), Some(json!(["containerPort", "protocol"]))),
        tags("io.k8s.api.core.v1.Container", "env", Some("merge"), Some("name"), Some("map"), Some(json!(["name"]))),
        tags("io.k8s.api.core.v1.PodSpec", "volumes", Some("merge,retainKeys"), Some("name"), Some("map"), Some(json!(["name"]))),
        // Untagged upstream: replaced whole, atomic.
        tags("io.k8s.api.core.v1.PodSpec", "tolerations", None, None, None, None),
        tags("io.k8s.api.core.v1.NodeSpec", "taints", None, None, None, None),
        tags("io.k8s.api.core.v1.NodeSpec", "podCIDRs", Some("merge"), None, Some("set"), None),
        tags("io.k8s.api.core.v1.NodeStatus", "conditions", Some("merge"), Some("type"), Some("map"), Some(json!(["type"]))),
        // A merge key on an atomic list (`+listType=atomic`).
        tags("io.k8s.api.core.v1.PodStatus", "hostIPs", Some("merge"), Some("ip"), None, None),
        tags("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", Some("merge"), None, Some("set"), None),
        tags("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", Some("merge"), Some("uid"), Some("map"), Some(json!(["uid"]))),
    ];
    check_tags("api/v1", &cases);
}

/// The apps/v1 kinds' tags: what `kubectl apply` and `kubectl set image`
/// compute their patches from (a Deployment's `strategy` is `retainKeys`
/// alone, so switching to Recreate drops `rollingUpdate`).
#[test]
fn workload_patch_strategies_follow_upstream_tags() {
    #[rustfmt::skip]
    let cases = [
        tags("io.k8s.api.apps.v1.DeploymentSpec", "strategy", Some("retainKeys"), None, None, None),
        tags("io.k8s.api.apps.v1.DeploymentStatus", "conditions", Some("merge"), Some("type"), Some("map"), Some(json!(["type"]))),
        tags("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", Some("merge"), Some("type"), Some("map"), Some(json!(["type"]))),
        tags("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", Some("merge"), Some("type"), Some("map"), Some(json!(["type"]))),
        tags("io.k8s.api.apps.v1.StatefulSetStatus", "conditions", Some("merge"), Some("type"), Some("map"), Some(json!(["type"]))),
        tags("io.k8s.api.apps.v1.StatefulSetSpec", "volumeClaimTemplates", None, None, None, None),
        tags("io.k8s.api.core.v1.PodSpec", "containers", Some("merge"), Some("name"), Some("map"), Some(json!(["name"]))),
    ];
    check_tags("apis/apps/v1", &cases);
}

#[test]
fn int_or_string_and_quantity_take_each_dialects_shape() {
    let v2 = v2_document();
    let core = v3("api/v1");
    let definitions = &v2["definitions"];
    let schemas = &core["components"]["schemas"];
    let int_or_string = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
    let quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity";
    assert_eq!(definitions[int_or_string]["type"], "string");
    assert_eq!(definitions[int_or_string]["format"], "int-or-string");
    assert_eq!(definitions[quantity]["type"], "string");
    assert_eq!(schemas[int_or_string]["format"], "int-or-string");
    assert_eq!(
        schemas[int_or_string]["oneOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    assert_eq!(
        schemas[quantity]["oneOf"],
        json!([{"type": "string"}, {"type": "number"}])
    );
    for (schemas, name) in [(definitions, "v2"), (schemas, "v3")] {
        assert!(
            schemas[quantity]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("Quantity is a fixed-point")),
            "{name}"
        );
        assert!(
            schemas[int_or_string]
                .get("x-kubernetes-int-or-string")
                .is_none(),
            "{name}: a CRD-only extension"
        );
    }
}

#[test]
fn v3_wraps_a_documented_reference_in_all_of_and_v2_keeps_it_beside() {
    let core = v3("api/v1");
    let spec = &core["components"]["schemas"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"];
    assert_eq!(
        spec["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}])
    );
    assert!(spec["description"].as_str().is_some());
    let v2 = v2_document();
    let spec = &v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"];
    assert_eq!(spec["$ref"], "#/definitions/io.k8s.api.core.v1.PodSpec");
    assert!(spec["description"].as_str().is_some());
}

#[test]
fn metadata_is_required_only_where_upstream_requires_it() {
    let core = v3("api/v1");
    let schemas = &core["components"]["schemas"];
    assert!(schemas["io.k8s.api.core.v1.Pod"].get("required").is_none());
    assert!(schemas["io.k8s.api.core.v1.Node"].get("required").is_none());
    assert!(
        schemas["io.k8s.api.core.v1.Event"]["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("metadata")))
    );
}

#[test]
fn patch_operations_advertise_field_validation_and_strategic_merge() {
    let core = v3("api/v1");
    let pod = &core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(pod["operationId"], "patchCoreV1NamespacedPod");
    assert!(pod["parameters"].as_array().is_some_and(|p| {
        p.iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    }));
    assert!(pod["requestBody"]["content"]["application/strategic-merge-patch+json"].is_object());
    let node_status = &core["paths"]["/api/v1/nodes/{name}/status"]["patch"];
    assert_eq!(node_status["operationId"], "patchCoreV1NodeStatus");
    let v2 = v2_document();
    let lease =
        &v2["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"]["patch"];
    assert_eq!(lease["operationId"], "patchCoordinationV1NamespacedLease");
    assert!(
        lease["consumes"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("application/strategic-merge-patch+json")))
    );
    assert_eq!(
        v2["paths"]["/api/v1/pods"]["get"]["operationId"],
        "listCoreV1PodForAllNamespaces"
    );
    assert_eq!(
        v2["paths"]["/api/v1/namespaces/{namespace}/pods"]["delete"]["operationId"],
        "deleteCoreV1CollectionNamespacedPod"
    );
}

fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        headers.insert(
            name.clone(),
            HeaderValue::from_str(value).expect("header value"),
        );
    }
    headers
}

fn header_of(response: &Response, name: header::HeaderName) -> String {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn body_of(response: Response) -> Vec<u8> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
        .expect("body")
        .to_vec()
}

#[test]
fn v3_index_hashes_let_clients_cache_each_document() {
    let index = serve("/openapi/v3", "", &HeaderMap::new()).expect("index");
    assert_eq!(index.status(), StatusCode::OK);
    let index: Value = serde_json::from_slice(&body_of(index)).expect("JSON");
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .expect("api/v1 listed")
        .to_string();
    assert!(index["paths"]["apis/coordination.k8s.io/v1"].is_object());
    let (path, query) = url.split_once('?').expect("a hash");
    let hash = query.strip_prefix("hash=").expect("hash=");
    assert_eq!(hash.len(), 128, "SHA-512 in hex");

    let json_accept = headers(&[(header::ACCEPT, "application/json")]);
    let document = serve(path, query, &json_accept).expect("document");
    assert_eq!(document.status(), StatusCode::OK);
    let etag = header_of(&document, header::ETAG);
    assert_eq!(etag, format!("\"{hash}\""));
    assert_eq!(
        header_of(&document, header::CACHE_CONTROL),
        "public, immutable"
    );
    assert!(!header_of(&document, header::EXPIRES).is_empty());
    let body = body_of(document);
    assert_eq!(Served::new(body).hash, hash, "the hash is the body's");

    let cached = headers(&[
        (header::ACCEPT, "application/json"),
        (header::IF_NONE_MATCH, &etag),
    ]);
    let again = serve(path, query, &cached).expect("revalidated");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert!(body_of(again).is_empty());

    let stale = serve(path, "hash=0123", &json_accept).expect("stale");
    assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(header_of(&stale, header::LOCATION), url);

    let protobuf_only = headers(&[(
        header::ACCEPT,
        "application/com.github.proto-openapi.spec.v3.v1.0+protobuf",
    )]);
    let refused = serve(path, query, &protobuf_only).expect("answered");
    assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);

    let missing = serve("/openapi/v3/apis/batch/v1", "", &json_accept);
    assert!(missing.is_err_and(|e| e.code == 404));
}

#[test]
fn v2_is_served_as_json_or_protobuf_with_etags() {
    struct Case {
        name: &'static str,
        accept: &'static str,
        status: StatusCode,
        content_type: &'static str,
    }
    let cases = [
        Case {
            name: "client-go's OpenAPISchema()",
            accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            status: StatusCode::OK,
            content_type: V2_PROTOBUF,
        },
        Case {
            name: "JSON",
            accept: "application/json",
            status: StatusCode::OK,
            content_type: JSON,
        },
        Case {
            name: "anything",
            accept: "*/*",
            status: StatusCode::OK,
            content_type: JSON,
        },
        Case {
            name: "preferred protobuf, JSON as a fallback",
            accept: "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            status: StatusCode::OK,
            content_type: V2_PROTOBUF,
        },
        Case {
            name: "a media type not served",
            accept: "text/html",
            status: StatusCode::NOT_ACCEPTABLE,
            content_type: "",
        },
    ];
    for case in cases {
        let accept = headers(&[(header::ACCEPT, case.accept)]);
        let response = serve("/openapi/v2", "", &accept).expect("answered");
        assert_eq!(response.status(), case.status, "{}", case.name);
        assert_eq!(
            header_of(&response, header::CONTENT_TYPE),
            case.content_type,
            "{}",
            case.name
        );
        if case.status != StatusCode::OK {
            continue;
        }
        let etag = header_of(&response, header::ETAG);
        let cached = headers(&[
            (header::ACCEPT, case.accept),
            (header::IF_NONE_MATCH, &etag),
        ]);
        let again = serve("/openapi/v2", "", &cached).expect("revalidated");
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{}", case.name);
    }
}

#[test]
fn v2_protobuf_is_gnostics_document() {
    let bytes = v2_protobuf::encode(&v2_document());
    let fields = wire::fields(&bytes).expect("well-formed protobuf");
    assert!(
        fields
            .iter()
            .any(|(n, f)| *n == 1 && matches!(f, wire::Field::Bytes(b) if *b == b"2.0"))
    );
    // Document.definitions (9) → Definitions.additional_properties (1) →
    // NamedSchema { name: 1, value: 2 }.
    let definitions = wire::messages(&bytes, 9);
    assert_eq!(definitions.len(), 1);
    let named = wire::messages(definitions[0], 1);
    let pod = named
        .iter()
        .find(|n| wire::messages(n, 1).first() == Some(&&b"io.k8s.api.core.v1.Pod"[..]))
        .expect("the Pod definition");
    let schema = wire::messages(pod, 2)[0];
    // Schema.vendor_extension (31): NamedAny { name, Any { yaml: 2 } }.
    let gvk = wire::messages(schema, 31)
        .into_iter()
        .find(|e| wire::messages(e, 1).first() == Some(&&b"x-kubernetes-group-version-kind"[..]))
        .expect("the group-version-kind extension");
    let yaml = wire::messages(wire::messages(gvk, 2)[0], 2)[0];
    let value: Value = serde_json::from_slice(yaml).expect("JSON text, which is YAML");
    assert_eq!(
        value,
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    // Schema.properties (25) holds `spec`, a reference (1) with its
    // description (4).
    let properties = wire::messages(schema, 25)[0];
    let spec = wire::messages(properties, 1)
        .into_iter()
        .find(|n| wire::messages(n, 1).first() == Some(&&b"spec"[..]))
        .expect("spec");
    let spec = wire::messages(spec, 2)[0];
    assert_eq!(
        wire::messages(spec, 1),
        vec![&b"#/definitions/io.k8s.api.core.v1.PodSpec"[..]]
    );
    assert_eq!(wire::messages(spec, 4).len(), 1);
}

#[test]
fn accept_ranges_are_ordered_as_goautoneg_orders_them() {
    let cases: &[(&str, &[&str])] = &[
        ("", &["*/*"]),
        ("application/json", &["application/json"]),
        ("*/*, application/json", &["application/json", "*/*"]),
        (
            "application/json;q=0.2, text/plain;q=0.9",
            &["text/plain", "application/json"],
        ),
        ("application/json;q=0, text/plain", &["text/plain"]),
    ];
    for (accept, want) in cases {
        let got = media_ranges(&headers(&[(header::ACCEPT, accept)]));
        assert_eq!(got, *want, "{accept:?}");
    }
}
