//! berth-apiserver: the Kubernetes API that kubectl and client libraries
//! talk to, served over `berth-store`.
//!
//! Pure building blocks first (each a module of plain functions over JSON
//! values and k8s-openapi types, tested without a server); the HTTP
//! server, registry and watch cache are wired on top of them.
//!
//! - [`selectors`]: `labelSelector` and `fieldSelector` parsing and
//!   matching, and the per-kind field sets, with upstream's 400 messages.
//! - [`table`]: the server-side `Table` kubectl asks `get` for, with
//!   upstream's columns and printers.

mod json_path;
pub mod selectors;
pub mod table;
