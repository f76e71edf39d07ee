//! API errors as Kubernetes `Status` objects.
//!
//! Every failure the API server returns is a `metav1.Status` with the HTTP
//! code, the upstream `reason` and message wording (`pods "x" not found`,
//! `Operation cannot be fulfilled on ...`, `Pod "x" is invalid: ...`), and,
//! for validation errors, one `cause` per field error, so kubectl and client
//! libraries print and branch on them as they do against kube-apiserver.

use berth_core::validation::{ErrorList, FieldError};
use serde_json::{Value, json};

/// A failed API request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

/// `resource` as upstream's `qualifiedResource.String()` prints it:
/// `pods`, `leases.coordination.k8s.io`.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn details(group: &str, kind: &str, name: &str) -> Value {
    let mut d = json!({"kind": kind});
    if !name.is_empty() {
        d["name"] = json!(name);
    }
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

impl ApiError {
    /// An error from its parts, for modules that classify their own
    /// failures (the patch engine).
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", qualified(group, resource)),
        )
        .with_details(details(group, resource, name))
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", qualified(group, resource)),
        )
        .with_details(details(group, resource, name))
    }

    /// The optimistic-concurrency conflict kubectl retries on.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {why}",
                qualified(group, resource)
            ),
        )
        .with_details(details(group, resource, name))
    }

    pub fn modified(group: &str, resource: &str, name: &str) -> Self {
        ApiError::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 with one cause per field error (upstream `NewInvalid`).
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &ErrorList) -> Self {
        let rendered: Vec<String> = errors.iter().map(FieldError::to_string).collect();
        let summary = match rendered.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| {
                json!({
                    "reason": e.error_type.reason(),
                    "message": e.error_body(),
                    "field": e.field,
                })
            })
            .collect();
        let mut d = details(group, kind, name);
        d["causes"] = json!(causes);
        // Upstream names the kind with its group (`GroupKind.String()`).
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified_kind} {name:?} is invalid: {summary}"),
        )
        .with_details(d)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn unauthorized() -> Self {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 in upstream's RBAC wording.
    pub fn forbidden(
        user: &str,
        verb: &str,
        group: &str,
        resource: &str,
        subresource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        let what = if subresource.is_empty() {
            format!("resource {resource:?}")
        } else {
            format!("resource \"{resource}/{subresource}\"")
        };
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {namespace:?}")
        };
        let subject = if name.is_empty() {
            qualified(group, resource)
        } else {
            format!("{} {name:?}", qualified(group, resource))
        };
        ApiError::new(
            403,
            "Forbidden",
            format!(
                "{subject} is forbidden: User {user:?} cannot {verb} {what} in API group {group:?} {scope}"
            ),
        )
        .with_details(details(group, resource, name))
    }

    /// 403 with a message of the caller's (admission's NodeRestriction).
    pub fn forbidden_message(
        group: &str,
        resource: &str,
        name: &str,
        message: impl AsRef<str>,
    ) -> Self {
        ApiError::new(
            403,
            "Forbidden",
            format!(
                "{} {name:?} is forbidden: {}",
                qualified(group, resource),
                message.as_ref()
            ),
        )
        .with_details(details(group, resource, name))
    }

    /// 403 whose message the caller wrote in full (admission's).
    pub fn forbidden_raw(message: impl Into<String>) -> Self {
        ApiError::new(403, "Forbidden", message)
    }

    /// 410: a watch or list from a resourceVersion the history no longer has.
    pub fn expired(requested: i64, oldest: i64) -> Self {
        ApiError::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 410 for an expired `continue` token.
    pub fn continue_expired() -> Self {
        ApiError::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        )
    }

    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// An object bigger than the store keeps (etcd's 1.5 MiB request
    /// limit, which the embedded store keeps too). Upstream passes etcd's
    /// own error through (`etcdserver: request is too large`, as a 500);
    /// berth answers with that text as the client's error it is: 413.
    pub fn object_too_large() -> Self {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            "etcdserver: request is too large",
        )
    }

    pub fn method_not_allowed(verb: &str, resource: &str) -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {resource})"
            ),
        )
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {content_type:?})"
            ),
        )
    }

    pub fn not_acceptable(accept: &str) -> Self {
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (got {accept:?})"
            ),
        )
    }

    pub fn path_not_found(path: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
    }

    /// 429, as upstream's max-in-flight filter refuses: the client waits
    /// `retry_after_seconds` (sent as the `Retry-After` header too, see
    /// [`ApiError::retry_after_seconds`]) and tries again.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u64) -> Self {
        ApiError::new(429, "TooManyRequests", message)
            .with_details(json!({"retryAfterSeconds": retry_after_seconds}))
    }

    /// `details.retryAfterSeconds`, which upstream also sends as the
    /// `Retry-After` header.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.details
            .as_ref()?
            .get("retryAfterSeconds")?
            .as_u64()
            .filter(|s| *s > 0)
    }

    /// Timeouts are 504.
    pub fn timeout(message: impl Into<String>) -> Self {
        ApiError::new(504, "Timeout", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// The `Status` a successful delete of a collection or a subresource
/// returns (`{"status": "Success"}`), with details naming the object.
pub fn success_status(group: &str, kind: &str, name: &str, uid: Option<&str>) -> Value {
    let mut d = details(group, kind, name);
    if let Some(uid) = uid {
        d["uid"] = json!(uid);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": d,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::validation::Path;

    #[test]
    fn statuses_carry_upstream_codes_reasons_and_messages() {
        let cases: &[(ApiError, u16, &str, &str)] = &[
            (
                ApiError::not_found("", "pods", "web"),
                404,
                "NotFound",
                "pods \"web\" not found",
            ),
            (
                ApiError::not_found("coordination.k8s.io", "leases", "n1"),
                404,
                "NotFound",
                "leases.coordination.k8s.io \"n1\" not found",
            ),
            (
                ApiError::already_exists("", "nodes", "n1"),
                409,
                "AlreadyExists",
                "nodes \"n1\" already exists",
            ),
            (
                ApiError::modified("", "nodes", "n1"),
                409,
                "Conflict",
                "Operation cannot be fulfilled on nodes \"n1\": the object has been modified; please apply your changes to the latest version and try again",
            ),
            (
                ApiError::unauthorized(),
                401,
                "Unauthorized",
                "Unauthorized",
            ),
            (
                ApiError::forbidden("system:node:a", "update", "", "nodes", "", "", "b"),
                403,
                "Forbidden",
                "nodes \"b\" is forbidden: User \"system:node:a\" cannot update resource \"nodes\" in API group \"\" at the cluster scope",
            ),
            (
                ApiError::forbidden("bob", "list", "", "pods", "", "default", ""),
                403,
                "Forbidden",
                "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
            ),
            (
                ApiError::expired(5, 10),
                410,
                "Expired",
                "too old resource version: 5 (10)",
            ),
            (
                ApiError::too_large(3145728),
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728",
            ),
        ];
        for (err, code, reason, message) in cases {
            let status = err.to_status();
            assert_eq!(status["code"], *code, "{message}");
            assert_eq!(status["reason"], *reason, "{message}");
            assert_eq!(status["message"], *message);
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["status"], "Failure");
        }
    }

    #[test]
    fn invalid_lists_every_field_error_as_a_cause() {
        let path = Path::new("spec").child("tolerations").index(0);
        let errors = vec![
            FieldError::invalid(&path.child("key"), "bad key", "a detail"),
            FieldError::required(&path.child("effect"), ""),
        ];
        let status = ApiError::invalid("", "Pod", "web", &errors).to_status();
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(
            status["message"],
            "Pod \"web\" is invalid: [spec.tolerations[0].key: Invalid value: \"bad key\": a detail, spec.tolerations[0].effect: Required value]"
        );
        assert_eq!(status["details"]["kind"], "Pod");
        assert_eq!(status["details"]["name"], "web");
        assert_eq!(
            status["details"]["causes"][0]["field"],
            "spec.tolerations[0].key"
        );
        assert_eq!(
            status["details"]["causes"][0]["reason"],
            "FieldValueInvalid"
        );
        assert_eq!(
            status["details"]["causes"][1]["reason"],
            "FieldValueRequired"
        );
    }
}
