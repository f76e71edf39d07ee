//! The shared watches of one process: the types several of its clients
//! follow in full (Pods and Nodes), each watched and decoded once
//! ([`SharedWatch`]), as kube-controller-manager's controllers share one
//! informer factory.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::runtime::watcher;

use crate::shared_watch::SharedWatch;

/// See the module documentation. Cloning it shares the same watches; each
/// starts with its first subscriber.
#[derive(Clone)]
pub struct SharedWatches {
    client: kube::Client,
    pods: SharedWatch<Pod>,
    nodes: SharedWatch<Node>,
}

impl SharedWatches {
    /// The watches of `client`'s process (nothing is watched until a
    /// client subscribes).
    pub fn new(client: kube::Client) -> SharedWatches {
        SharedWatches {
            pods: SharedWatch::new(Api::all(client.clone()), watcher::Config::default()),
            nodes: SharedWatch::new(Api::all(client.clone()), watcher::Config::default()),
            client,
        }
    }

    /// The client the watches use, for everything else.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// Every Pod of the cluster.
    pub fn pods(&self) -> &SharedWatch<Pod> {
        &self.pods
    }

    /// Every Node of the cluster.
    pub fn nodes(&self) -> &SharedWatch<Node> {
        &self.nodes
    }
}
