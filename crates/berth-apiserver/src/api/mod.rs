//! The REST API over the store: one entry point, [`ApiServer::handle`],
//! that authenticates, reads the request the way upstream does
//! ([`crate::request_info`]), authorizes, and runs the verb on the resource
//! type's store and cache.
//!
//! Reads of single objects go to the store; lists without `limit` and all
//! watches are served from the watch cache after it has caught up with the
//! store (a consistent read); paginated lists read the store at one
//! revision. Writes go to the store with compare-and-swap on the object's
//! revision, so an update from a stale `resourceVersion` is a 409. How the
//! store and the watch caches are kept consistent is
//! [`crate::registry`]'s; what differs per type, [`crate::strategy`]'s.
//!
//! One file per job: [`server`] (the state and its start), `dispatch` (the
//! entry point: public paths, authentication, authorization, routing a
//! resource request to its verb), `scope` (what a resource request is
//! about, resolved once), `query`, `request_body` (decoding and checking
//! bodies), `response`, then one file per verb: `get`, `list`, `watch`,
//! `create` (and the access reviews' answers), `update`, `patch`,
//! `delete`, `subresources` (binding, eviction, log), `scale` (the
//! workloads' `/scale`) and `node_credential`; `node_impact` (the warnings
//! of a write that taints or cordons a Node); `kubernetes_service` (the
//! `default/kubernetes` Service pointing at the server); `authentication_trust`
//! (`kube-system/extension-apiserver-authentication`, the client CA
//! upstream's components read); `ui` (the live
//! page at `/ui/`: its embedded files and the evictions it counts down to).

mod authentication_trust;
mod create;
mod delete;
mod dispatch;
mod eviction;
pub mod explainer;
mod get;
mod kubernetes_service;
mod list;
mod node_credential;
mod node_impact;
mod patch;
mod query;
mod request_body;
mod resource_metrics;
mod response;
mod scale;
pub mod scheduling;
mod scope;
pub mod server;
mod subresources;
#[cfg(test)]
mod tests;
mod ui;
mod update;
mod watch;

pub use list::Filter;
pub use response::error_response;
pub use server::{
    ApiConfig, ApiServer, MAX_BODY_BYTES, NODE_CREDENTIAL_PATH, SYSTEM_NAMESPACES, VersionInfo,
};
