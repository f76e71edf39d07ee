//! What a resource request is about, resolved once by the dispatcher and
//! passed to every verb: the resource type, the object's namespace and
//! name, the subresource, who asks, the query and the headers that choose
//! the content (the body's type, a Table or the object).

use axum::http::{HeaderMap, header};

use super::query::Query;
use crate::auth::User;
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::table_output::Include;

/// A resource request, authenticated and authorized.
#[derive(Clone)]
pub(super) struct Scope<'a> {
    /// The resource type in its stored form.
    pub rt: &'static ResourceType,
    /// The version the client asked for, when it is another version of
    /// `rt` (events.k8s.io Events over core/v1's): requests are converted
    /// to the stored form, responses back.
    pub external: Option<&'static ResourceType>,
    /// The namespace; "" for cluster-scoped types and all-namespace lists.
    pub namespace: &'a str,
    /// The object's name; "" for lists, watches and creates.
    pub name: &'a str,
    /// "", "status", "binding", "eviction" or "log".
    pub subresource: &'a str,
    pub user: &'a User,
    pub query: Query,
    /// The query as sent (a log request passes it on to the node's agent).
    pub raw_query: &'a str,
    pub headers: &'a HeaderMap,
}

impl Scope<'_> {
    /// The body's `Content-Type` ("" when unset).
    pub fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Whether the client asked for a Table (`kubectl get`), and how.
    pub fn table(&self) -> Result<Option<Include>, ApiError> {
        crate::table_output::wants_table(self.headers, self.query.get("includeObject"))
    }
}
