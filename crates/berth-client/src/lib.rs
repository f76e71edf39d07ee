//! berth-client: what every Kubernetes client of berth shares.
//!
//! The scheduler, the controllers, the node agent and the simulator each
//! keep their own view of the cluster, built from watches. They all need
//! the same bookkeeping around a kube-rs [`watcher`](kube::runtime::watcher):
//! a relist (after the first list, or after a watch expired) shows the
//! objects that exist *now*, and every object the client knew of that the
//! relist lacks was deleted while nobody watched. [`watch::changes`] does
//! that once, the way kube-rs's reflector folds a relist
//! (`Writer::apply_watcher_event`), and hands each client a stream of
//! [`Change`]s: an object to upsert, a key to delete, or the mark that the
//! view is complete. A client's own code is then a `match` over its
//! domain.
//!
//! ```no_run
//! # async fn run(client: kube::Client) {
//! use berth_client::{Change, changes};
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::Node;
//! use kube::runtime::{WatchStreamExt, watcher};
//!
//! let nodes = watcher(kube::Api::<Node>::all(client), watcher::Config::default())
//!     .default_backoff();
//! let mut nodes = std::pin::pin!(changes(nodes));
//! while let Some(change) = nodes.next().await {
//!     match change {
//!         Change::Upsert(node) => { /* remember it */ }
//!         Change::Delete(gone) => { /* forget gone.key */ }
//!         Change::Synced => { /* the view is complete: start deciding */ }
//!     }
//! }
//! # }
//! ```
//!
//! The pod helpers every client needs (its key, its bound node, whether it
//! has finished) are pure rules and live in `berth_core::pod`.
//!
//! Inside one process the clients that follow a type in full share one
//! watch of it ([`shared_watch::SharedWatch`], the process's set:
//! [`SharedWatches`]): one decode per change, the same `Arc` to each, and
//! each subscriber still reads it through [`watch::changes`]'s bookkeeping.
//!
//! [`taint::taint_node`] is `kubectl taint` for berth's own tools (`berth
//! taint`, a scenario's steps): the command's rules from berth-core, an
//! optional expiry, the server's warnings handed back. [`writes`] holds the
//! writes whose answer is not read (the Event recorders').
//!
//! [`transport::kube_client`] makes the client itself from a kubeconfig:
//! over HTTP/2, as client-go's transport, where kube-rs's default speaks
//! HTTP/1.1 only.

pub mod shared_watch;
pub mod shared_watches;
pub mod taint;
pub mod transport;
pub mod watch;
pub mod writes;

pub use berth_core::object_key::ObjectKey;
pub use shared_watch::SharedWatch;
pub use shared_watches::SharedWatches;
pub use watch::{Change, Changes, Gone, changes, changes_of, changes_of_kind};
