//! What answers `pods/NAME/scheduling` ([`super::scheduling`]): the
//! question (the cluster as the watch caches hold it) and the
//! [`SchedulingExplainer`] the `berth` binary wires to berth-scheduler's
//! framework. Apart from the handler so that the server's configuration
//! can hold an explainer without the handler and the server importing each
//! other.

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::Value;

/// The cluster as the watch caches hold it, for an explanation.
#[derive(Debug, Clone, Default)]
pub struct SchedulingQuestion {
    /// The pod explained.
    pub pod: Pod,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub namespaces: Vec<Namespace>,
    /// What-if: nodes as the taints would leave them (replacing the nodes
    /// of the same name); empty without a what-if.
    pub changed_nodes: Vec<Node>,
}

/// Answers a [`SchedulingQuestion`] with the scheduler's own framework: the
/// explanation as JSON, or why there is none (a message for a 400).
pub trait SchedulingExplainer: Send + Sync {
    fn explain(&self, question: &SchedulingQuestion) -> Result<Value, String>;
}

/// The explainer a server was given (none: no scheduler in this process).
#[derive(Clone, Default)]
pub struct Explainer(pub Option<Arc<dyn SchedulingExplainer>>);

impl fmt::Debug for Explainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Explainer(Some)"
        } else {
            "Explainer(None)"
        })
    }
}
