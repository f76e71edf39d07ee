//! The reviews of one's own access and identity, answered from berth's
//! authorizer ([`crate::auth`]) and never stored: authorization.k8s.io/v1
//! SelfSubjectAccessReview (`kubectl auth can-i`), SelfSubjectRulesReview
//! (`kubectl auth can-i --list`) and authentication.k8s.io/v1
//! SelfSubjectReview (`kubectl auth whoami`).
//!
//! A rules review lists what the authorizer allows by asking it: every
//! served resource and subresource, each of its verbs, in the review's
//! namespace (and, for a node, by its own name). What depends on an object
//! (a node's pods, bound to it or not) cannot be a rule, so a node's list
//! is marked incomplete, as upstream marks it.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
use serde_json::{Value, json};

use super::{ObjectType, PodBinding, ResourceType, Strategy};
use crate::auth::{self, DISCOVERY_PATHS, Decision, NODE_CREDENTIAL_PATH, User};
use crate::request_info::RequestInfo;
use crate::status::ApiError;
use berth_core::validation::{FieldError, Path};

type ApiResult<T> = Result<T, ApiError>;

/// The strategy of the three reviews.
#[derive(Debug)]
pub enum Review {
    /// authorization.k8s.io/v1 SelfSubjectAccessReview: may I do this?
    Access,
    /// authorization.k8s.io/v1 SelfSubjectRulesReview: what may I do here?
    Rules {
        /// Every served type, whose verbs the review asks the authorizer
        /// about (the declarations name this strategy, so they hand it in).
        served: fn() -> &'static [&'static ResourceType],
    },
    /// authentication.k8s.io/v1 SelfSubjectReview: who am I?
    Identity,
}

impl Strategy for Review {
    fn object_type(&self) -> ObjectType {
        match self {
            Review::Access => ObjectType::unlisted::<SelfSubjectAccessReview>(),
            Review::Rules { .. } => ObjectType::unlisted::<SelfSubjectRulesReview>(),
            Review::Identity => ObjectType::unlisted::<SelfSubjectReview>(),
        }
    }

    fn is_stored(&self) -> bool {
        false
    }

    fn answer<'a>(
        &'a self,
        rt: &'a ResourceType,
        request: Value,
        user: &'a User,
        pods: &'a dyn PodBinding,
    ) -> BoxFuture<'a, ApiResult<Value>> {
        Box::pin(async move {
            let status = match self {
                Review::Access => access(rt, &request, user, pods).await?,
                Review::Rules { served } => rules(&request, user, served())?,
                Review::Identity => {
                    json!({"userInfo": {"username": user.name, "groups": user.groups}})
                }
            };
            Ok(answered(request, status))
        })
    }
}

fn answered(mut request: Value, status: Value) -> Value {
    if let Some(object) = request.as_object_mut() {
        object.entry("metadata").or_insert_with(|| json!({}));
        object.insert("status".into(), status);
    }
    request
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The request a review's `resourceAttributes` describe, as the
/// authorizer reads requests.
fn request_info(attributes: &Value) -> RequestInfo {
    let field = |name: &str| text(attributes, &format!("/{name}"));
    RequestInfo {
        is_resource_request: true,
        verb: field("verb"),
        api_group: field("group"),
        api_version: field("version"),
        namespace: field("namespace"),
        resource: field("resource"),
        subresource: field("subresource"),
        name: field("name"),
        field_selector: text(attributes, "/fieldSelector/rawSelector"),
        ..RequestInfo::default()
    }
}

/// A SelfSubjectAccessReview's status: the authorizer's decision on the
/// request its attributes describe (a node's pod read asks the store).
async fn access(
    rt: &ResourceType,
    request: &Value,
    user: &User,
    pods: &dyn PodBinding,
) -> ApiResult<Value> {
    let resource = request
        .pointer("/spec/resourceAttributes")
        .filter(|v| !v.is_null());
    let non_resource = request
        .pointer("/spec/nonResourceAttributes")
        .filter(|v| !v.is_null());
    let path = Path::new("spec").child("resourceAttributes");
    let (allowed, reason) = match (resource, non_resource) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                rt,
                FieldError::invalid(
                    &path,
                    resource.cloned().unwrap_or(Value::Null),
                    "cannot be specified in combination with nonResourceAttributes",
                ),
            ));
        }
        (None, None) => {
            return Err(invalid(
                rt,
                FieldError::invalid(
                    &path,
                    Value::Null,
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ),
            ));
        }
        (Some(attributes), None) => {
            let info = request_info(attributes);
            match auth::decide(user, &info) {
                Decision::Allow => (true, String::new()),
                Decision::IfPodBoundTo(node) => {
                    let bound = pods.bound(&info.namespace, &info.name, &node).await;
                    let reason = if bound {
                        String::new()
                    } else {
                        format!("no relationship found between node '{node}' and this object")
                    };
                    (bound, reason)
                }
                Decision::Deny(reason) => (false, reason),
            }
        }
        (None, Some(attributes)) => {
            let allowed = auth::non_resource_allowed(
                user,
                &text(attributes, "/path"),
                &text(attributes, "/verb"),
            );
            (allowed, String::new())
        }
    };
    let mut status = json!({"allowed": allowed});
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    Ok(status)
}

fn invalid(rt: &ResourceType, error: FieldError) -> ApiError {
    ApiError::invalid(rt.group, rt.kind, "", &vec![error])
}

/// One resource rule being gathered: its verbs, in the order found.
type Rules = BTreeMap<(String, String, Option<String>), Vec<String>>;

fn add(rules: &mut Rules, rt: &ResourceType, resource: String, name: Option<&str>, verb: &str) {
    let verbs = rules
        .entry((rt.group.to_string(), resource, name.map(str::to_string)))
        .or_default();
    if !verbs.iter().any(|v| v == verb) {
        verbs.push(verb.to_string());
    }
}

/// What `user` may do in `namespace`, asked of the authorizer type by
/// type and verb by verb; whether some of it depends on the objects.
fn probed_rules(user: &User, namespace: &str, served: &[&ResourceType]) -> (Rules, bool) {
    let mut rules = Rules::new();
    let mut incomplete = false;
    for rt in served {
        let targets = std::iter::once(("", rt.verbs))
            .chain(rt.subresources.iter().map(|sub| (sub.name, sub.verbs)));
        for (subresource, verbs) in targets {
            let resource = match subresource {
                "" => rt.plural.to_string(),
                sub => format!("{}/{sub}", rt.plural),
            };
            for verb in verbs.iter().copied() {
                let mut info = RequestInfo {
                    is_resource_request: true,
                    verb: verb.to_string(),
                    api_group: rt.group.to_string(),
                    api_version: rt.version.to_string(),
                    namespace: if rt.namespaced {
                        namespace.to_string()
                    } else {
                        String::new()
                    },
                    resource: rt.plural.to_string(),
                    subresource: subresource.to_string(),
                    ..RequestInfo::default()
                };
                match auth::decide(user, &info) {
                    Decision::Allow => add(&mut rules, rt, resource.clone(), None, verb),
                    Decision::IfPodBoundTo(_) => incomplete = true,
                    Decision::Deny(_) => {
                        // A node may still act on its own objects (its Node,
                        // its Lease), named after it.
                        let Some(node) = user.node_name() else {
                            continue;
                        };
                        info.name = node.to_string();
                        match auth::decide(user, &info) {
                            Decision::Allow => {
                                add(&mut rules, rt, resource.clone(), Some(node), verb)
                            }
                            Decision::IfPodBoundTo(_) => incomplete = true,
                            Decision::Deny(_) => {}
                        }
                    }
                }
            }
        }
    }
    (rules, incomplete)
}

/// A SelfSubjectRulesReview's status: what the authorizer allows in the
/// review's namespace, asked of it type by type and verb by verb.
fn rules(request: &Value, user: &User, served: &[&ResourceType]) -> ApiResult<Value> {
    let namespace = text(request, "/spec/namespace");
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let admin = auth::is_admin(user);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    if admin {
        // Upstream's cluster-admin.
        resource_rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    let everyone = User {
        name: String::new(),
        groups: vec![auth::GROUP_AUTHENTICATED.into()],
    };
    let (rules, incomplete) =
        probed_rules(if admin { &everyone } else { user }, &namespace, served);
    for ((group, resource, name), verbs) in rules {
        let mut rule = json!({"verbs": verbs, "apiGroups": [group], "resources": [resource]});
        if let Some(name) = name {
            rule["resourceNames"] = json!([name]);
        }
        resource_rules.push(rule);
    }
    non_resource_rules.push(json!({"verbs": ["get"], "nonResourceURLs": DISCOVERY_PATHS}));
    if user.in_group(auth::GROUP_BOOTSTRAPPERS) {
        non_resource_rules
            .push(json!({"verbs": ["post"], "nonResourceURLs": [NODE_CREDENTIAL_PATH]}));
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": incomplete,
    });
    if incomplete {
        status["evaluationError"] =
            json!("the pods a node may read are the ones bound to it, which no rule can name");
    }
    Ok(status)
}
