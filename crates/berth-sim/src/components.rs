//! The seam where the control plane's components plug into a run.
//!
//! A component (the scheduler, the controllers) is an ordinary Kubernetes
//! client of the in-process API server. The run starts each one on the
//! virtual clock, stops and starts it again for a `restart` step, and
//! gives it a [`ZoneSink`] to report zone states for the timeline.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use berth_apiserver::api::ApiServer;
use berth_core::clock::Clock;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::SimConfig;

/// A running component: a future the run spawns and, to stop it, cancels
/// `stop` for and then drops.
pub type ComponentFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What a component gets when it starts.
#[derive(Clone)]
pub struct ComponentContext {
    /// The API server; make clients with `berth_apiserver::in_process`.
    pub api: Arc<ApiServer>,
    pub clock: Clock,
    pub config: SimConfig,
    /// Seed for every random choice the component makes (tie-breaks,
    /// jitter), so runs repeat. Differs per component and per start.
    pub seed: u64,
    /// Cancelled when the component must stop.
    pub stop: CancellationToken,
    pub zones: ZoneSink,
}

/// A part of the control plane a scenario runs.
pub trait Component: Send + Sync {
    /// The name `restart` steps use: `scheduler` or `controllers`.
    fn name(&self) -> &'static str;
    /// Starts the component; it runs until the future ends or is dropped.
    fn start(&self, ctx: ComponentContext) -> ComponentFuture;
}

/// Where the node lifecycle controller reports a zone's state when it
/// changes (upstream's `Initial`, `Normal`, `PartialDisruption`,
/// `FullDisruption`). Reports of an unchanged state are dropped.
#[derive(Clone, Debug)]
pub struct ZoneSink {
    tx: mpsc::UnboundedSender<(String, String)>,
}

impl ZoneSink {
    pub(crate) fn new() -> (ZoneSink, mpsc::UnboundedReceiver<(String, String)>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ZoneSink { tx }, rx)
    }

    /// Reports `zone`'s current state.
    pub fn report(&self, zone: &str, state: &str) {
        // The run has ended when nobody listens; nothing is left to record.
        let _ = self.tx.send((zone.to_owned(), state.to_owned()));
    }
}

/// The components this build of berth runs in a scenario.
pub fn default_components() -> Vec<Box<dyn Component>> {
    Vec::new()
}

/// A component that is started, with the means to stop it.
pub(crate) struct Started {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Started {
    pub(crate) fn spawn(component: &dyn Component, ctx: ComponentContext) -> Started {
        let stop = ctx.stop.clone();
        let task = tokio::spawn(component.start(ctx));
        Started { stop, task }
    }

    /// Cancels the component and drops its future.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        self.task.abort();
        let _ = self.task.await;
    }
}
