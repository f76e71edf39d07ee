//! The `paths` of the documents: for each served type the operations
//! kube-apiserver publishes (collection: list, create, deletecollection;
//! all namespaces: list; object: read, replace, patch, delete; `/status`:
//! read, replace, patch), with upstream's operation ids, actions, query
//! parameters, request and response bodies, and group-version-kind.
//!
//! kubectl reads two things here: whether a PATCH operation for a kind
//! takes the `fieldValidation` query parameter (then it validates on the
//! server), and whether it consumes `application/strategic-merge-patch+json`
//! (then `kubectl apply` computes a strategic merge patch from the
//! schemas).

use serde_json::{Map, Value, json};

use super::definitions::{self, DELETE_OPTIONS, Dialect, PATCH, STATUS, V2_REF_PREFIX};
use crate::patch::PatchType;
use crate::resources::ResourceType;

/// A query parameter and its type.
type Param = (&'static str, &'static str);

const LIST_PARAMS: &[Param] = &[
    ("allowWatchBookmarks", "boolean"),
    ("continue", "string"),
    ("fieldSelector", "string"),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("resourceVersion", "string"),
    ("resourceVersionMatch", "string"),
    ("sendInitialEvents", "boolean"),
    ("timeoutSeconds", "integer"),
    ("watch", "boolean"),
];
const WRITE_PARAMS: &[Param] = &[
    ("dryRun", "string"),
    ("fieldManager", "string"),
    ("fieldValidation", "string"),
];
const PATCH_PARAMS: &[Param] = &[
    ("dryRun", "string"),
    ("fieldManager", "string"),
    ("fieldValidation", "string"),
    ("force", "boolean"),
];
const DELETE_PARAMS: &[Param] = &[
    ("dryRun", "string"),
    ("gracePeriodSeconds", "integer"),
    (
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
    ),
    ("orphanDependents", "boolean"),
    ("propagationPolicy", "string"),
];
const DELETE_COLLECTION_PARAMS: &[Param] = &[
    ("continue", "string"),
    ("dryRun", "string"),
    ("fieldSelector", "string"),
    ("gracePeriodSeconds", "integer"),
    (
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
    ),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("orphanDependents", "boolean"),
    ("propagationPolicy", "string"),
    ("resourceVersion", "string"),
    ("resourceVersionMatch", "string"),
    ("sendInitialEvents", "boolean"),
    ("timeoutSeconds", "integer"),
];

/// The media types every operation answers in.
const PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// What an operation takes as its request body.
#[derive(Clone, Copy)]
enum Body<'a> {
    None,
    /// The object itself (create, replace).
    Object(&'a str),
    /// A patch, in any of the four patch types.
    Patch,
    /// Optional `DeleteOptions`.
    DeleteOptions,
}

/// One operation of a path.
struct Operation<'a> {
    /// `x-kubernetes-action`.
    action: &'static str,
    operation_id: String,
    description: String,
    params: &'static [Param],
    body: Body<'a>,
    /// The definition of the 200 answer.
    response: &'a str,
    /// The other success codes upstream lists.
    also: &'static [&'static str],
}

/// The operations of one served type, in upstream's naming.
struct TypePaths<'a> {
    rt: &'a ResourceType,
    dialect: Dialect,
    /// `CoreV1`, `CoordinationV1`: the group-version part of operation ids.
    gv_id: String,
    /// `core_v1`: the operations' tag.
    tag: String,
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn reference(definition: &str) -> Value {
    json!({"$ref": format!("{V2_REF_PREFIX}{definition}")})
}

impl TypePaths<'_> {
    fn gvk(&self) -> Value {
        json!({"group": self.rt.group, "kind": self.rt.kind, "version": self.rt.version})
    }

    fn query(&self, (name, ty): Param) -> Value {
        match self.dialect {
            Dialect::V2 => json!({"in": "query", "name": name, "type": ty, "uniqueItems": true}),
            Dialect::V3 => {
                json!({"in": "query", "name": name, "schema": {"type": ty, "uniqueItems": true}})
            }
        }
    }

    fn path_param(&self, name: &str, description: String) -> Value {
        match self.dialect {
            Dialect::V2 => json!({"in": "path", "name": name, "required": true, "type": "string",
                                  "uniqueItems": true, "description": description}),
            Dialect::V3 => json!({"in": "path", "name": name, "required": true,
                                  "schema": {"type": "string", "uniqueItems": true},
                                  "description": description}),
        }
    }

    /// The parameters every operation of a path shares.
    fn path_params(&self, named: bool) -> Value {
        let mut params = Vec::new();
        if named {
            params.push(self.path_param("name", format!("name of the {}", self.rt.kind)));
        }
        if self.rt.namespaced {
            params.push(self.path_param(
                "namespace",
                "object name and auth scope, such as for teams and projects".into(),
            ));
        }
        params.push(self.query(("pretty", "string")));
        Value::Array(params)
    }

    fn operation(&self, op: Operation<'_>) -> Value {
        let mut parameters: Vec<Value> = op.params.iter().map(|p| self.query(*p)).collect();
        let consumes: Vec<&str> = match op.body {
            Body::Patch => PatchType::ALL.iter().map(|t| t.content_type()).collect(),
            _ => vec!["*/*"],
        };
        let body_schema = match op.body {
            Body::None => None,
            Body::Object(definition) => Some((reference(definition), true)),
            Body::Patch => Some((reference(PATCH), true)),
            Body::DeleteOptions => Some((reference(DELETE_OPTIONS), false)),
        };
        let mut responses = Map::new();
        for code in std::iter::once(&"200").chain(op.also) {
            let description = match *code {
                "201" => "Created",
                "202" => "Accepted",
                _ => "OK",
            };
            let answer = match self.dialect {
                Dialect::V2 => {
                    json!({"description": description, "schema": reference(op.response)})
                }
                Dialect::V3 => {
                    let content: Map<String, Value> = PRODUCES
                        .iter()
                        .map(|t| (t.to_string(), json!({"schema": reference(op.response)})))
                        .collect();
                    json!({"description": description, "content": content})
                }
            };
            responses.insert(code.to_string(), answer);
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        let mut operation = json!({
            "description": op.description,
            "operationId": op.operation_id,
            "responses": responses,
            "tags": [self.tag],
            "x-kubernetes-action": op.action,
            "x-kubernetes-group-version-kind": self.gvk(),
        });
        match self.dialect {
            Dialect::V2 => {
                if let Some((schema, required)) = body_schema {
                    parameters.push(
                        json!({"in": "body", "name": "body", "required": required, "schema": schema}),
                    );
                }
                operation["consumes"] = json!(consumes);
                operation["produces"] = json!(PRODUCES);
                operation["schemes"] = json!(["https"]);
            }
            Dialect::V3 => {
                if let Some((schema, required)) = body_schema {
                    let content: Map<String, Value> = consumes
                        .iter()
                        .map(|t| (t.to_string(), json!({"schema": schema})))
                        .collect();
                    operation["requestBody"] = json!({"content": content, "required": required});
                }
            }
        }
        operation["parameters"] = Value::Array(parameters);
        operation
    }

    fn has_verb(&self, verb: &str) -> bool {
        self.rt.verbs.contains(&verb)
    }

    fn scope(&self) -> &'static str {
        if self.rt.namespaced { "Namespaced" } else { "" }
    }

    /// `listCoreV1NamespacedPod`, `readCoreV1NodeStatus`.
    fn id(&self, verb: &str, suffix: &str) -> String {
        format!(
            "{verb}{}{}{}{suffix}",
            self.gv_id,
            self.scope(),
            self.rt.kind
        )
    }

    fn insert(&self, paths: &mut Map<String, Value>, kind: &str, list: &str) {
        let rt = self.rt;
        let kind_name = rt.kind;
        let base = if rt.group.is_empty() {
            format!("/api/{}", rt.version)
        } else {
            format!("/apis/{}/{}", rt.group, rt.version)
        };
        let scoped = if rt.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", rt.plural)
        } else {
            format!("{base}/{}", rt.plural)
        };

        let mut collection = Map::new();
        if self.has_verb("list") {
            collection.insert(
                "get".into(),
                self.operation(Operation {
                    action: "list",
                    operation_id: self.id("list", ""),
                    description: format!("list or watch objects of kind {kind_name}"),
                    params: LIST_PARAMS,
                    body: Body::None,
                    response: list,
                    also: &[],
                }),
            );
        }
        if self.has_verb("create") {
            collection.insert(
                "post".into(),
                self.operation(Operation {
                    action: "post",
                    operation_id: self.id("create", ""),
                    description: format!("create a {kind_name}"),
                    params: WRITE_PARAMS,
                    body: Body::Object(kind),
                    response: kind,
                    also: &["201", "202"],
                }),
            );
        }
        if self.has_verb("deletecollection") {
            collection.insert(
                "delete".into(),
                self.operation(Operation {
                    action: "deletecollection",
                    operation_id: format!(
                        "delete{}Collection{}{kind_name}",
                        self.gv_id,
                        self.scope()
                    ),
                    description: format!("delete collection of {kind_name}"),
                    params: DELETE_COLLECTION_PARAMS,
                    body: Body::DeleteOptions,
                    response: STATUS,
                    also: &[],
                }),
            );
        }
        collection.insert("parameters".into(), self.path_params(false));
        paths.insert(scoped.clone(), Value::Object(collection));

        if rt.namespaced && self.has_verb("list") {
            let all = json!({
                "get": self.operation(Operation {
                    action: "list",
                    operation_id: format!("list{}{kind_name}ForAllNamespaces", self.gv_id),
                    description: format!("list or watch objects of kind {kind_name}"),
                    params: LIST_PARAMS,
                    body: Body::None,
                    response: list,
                    also: &[],
                }),
                "parameters": [self.query(("pretty", "string"))],
            });
            paths.insert(format!("{base}/{}", rt.plural), all);
        }

        let mut object = Map::new();
        for op in OBJECT_OPERATIONS {
            if self.has_verb(op.verb) {
                object.insert(op.method.into(), self.object_operation(op, kind, ""));
            }
        }
        if self.has_verb("delete") {
            object.insert(
                "delete".into(),
                self.operation(Operation {
                    action: "delete",
                    operation_id: self.id("delete", ""),
                    description: format!("delete a {kind_name}"),
                    params: DELETE_PARAMS,
                    body: Body::DeleteOptions,
                    response: STATUS,
                    also: &["202"],
                }),
            );
        }
        // Create-only kinds (the reviews) have no object path.
        if !object.is_empty() {
            object.insert("parameters".into(), self.path_params(true));
            paths.insert(format!("{scoped}/{{name}}"), Value::Object(object));
        }

        if let Some(status) = rt.subresource("status") {
            let mut ops = Map::new();
            for op in OBJECT_OPERATIONS {
                if status.verbs.contains(&op.verb) {
                    ops.insert(op.method.into(), self.object_operation(op, kind, "Status"));
                }
            }
            ops.insert("parameters".into(), self.path_params(true));
            paths.insert(format!("{scoped}/{{name}}/status"), Value::Object(ops));
        }
    }

    /// Read, replace or patch of an object (`subresource` "") or of its
    /// status (`"Status"`).
    fn object_operation(&self, op: ObjectOperation, kind: &str, subresource: &str) -> Value {
        let target = if subresource.is_empty() {
            "the specified"
        } else {
            "status of the specified"
        };
        self.operation(Operation {
            action: op.method,
            operation_id: self.id(op.id_verb, subresource),
            description: format!("{} {target} {}", op.what, self.rt.kind),
            params: op.params,
            body: match op.method {
                "get" => Body::None,
                "patch" => Body::Patch,
                _ => Body::Object(kind),
            },
            response: kind,
            also: if op.method == "get" { &[] } else { &["201"] },
        })
    }
}

/// An operation on one object: read, replace or patch.
#[derive(Clone, Copy)]
struct ObjectOperation {
    /// The HTTP method, which is also its `x-kubernetes-action`.
    method: &'static str,
    /// The verb that discovery lists for it.
    verb: &'static str,
    /// The verb of its operation id.
    id_verb: &'static str,
    /// Its description's verb.
    what: &'static str,
    params: &'static [Param],
}

const OBJECT_OPERATIONS: [ObjectOperation; 3] = [
    ObjectOperation {
        method: "get",
        verb: "get",
        id_verb: "read",
        what: "read",
        params: &[],
    },
    ObjectOperation {
        method: "put",
        verb: "update",
        id_verb: "replace",
        what: "replace",
        params: WRITE_PARAMS,
    },
    ObjectOperation {
        method: "patch",
        verb: "patch",
        id_verb: "patch",
        what: "partially update",
        params: PATCH_PARAMS,
    },
];

/// The paths of `types` in `dialect`, with references in the neutral form.
pub(super) fn paths(types: &[&ResourceType], dialect: Dialect) -> Map<String, Value> {
    let mut paths = Map::new();
    for rt in types {
        let (kind, list) = definitions::names(rt);
        let group_word = rt.group.split('.').next().unwrap_or_default();
        let group_word = if group_word.is_empty() {
            "core"
        } else {
            group_word
        };
        let type_paths = TypePaths {
            rt,
            dialect,
            gv_id: format!("{}{}", capitalized(group_word), capitalized(rt.version)),
            tag: format!("{group_word}_{}", rt.version),
        };
        // Kinds without lists (the reviews) serve no list operation.
        type_paths.insert(&mut paths, &kind, &list.unwrap_or_default());
    }
    paths
}
