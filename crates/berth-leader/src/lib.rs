//! Leader election on a `coordination.k8s.io/v1` Lease, the way client-go's
//! `leaderelection` package does it, so that of several `berth server`s sharing one etcd
//! exactly one runs the scheduler and one runs each controller.
//!
//! The algorithm is client-go's `tryAcquireOrRenew`:
//! - no Lease: create it naming ourselves; we lead;
//! - a Lease held by someone else that this process saw change less than
//!   `leaseDurationSeconds` ago (by its own monotonic clock, never by comparing the other
//!   holder's `renewTime` with ours, so clock skew between machines does not matter): wait;
//! - otherwise write ourselves in with a compare-and-swap on the resourceVersion
//!   (`leaseTransitions` + 1 when the holder changes, `acquireTime` kept while we hold it).
//!
//! A candidate retries every `retry_period` (jittered); the leader renews every
//! `retry_period` and gives up leadership when it could not renew for `renew_deadline`.
//! Work guarded by [`run_while_leading`] is cancelled at once when leadership is lost.
//! Defaults are kube-scheduler's and kube-controller-manager's (`--leader-elect-lease-duration`
//! 15 s, `--leader-elect-renew-deadline` 10 s, `--leader-elect-retry-period` 2 s).
//!
//! Every wait goes through [`Clock`], so elections run on virtual time in tests.

use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use berth_core::clock::Clock;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Where the lock lives, who we are, and the timing.
#[derive(Debug, Clone)]
pub struct Config {
    /// Namespace of the Lease (`kube-system`).
    pub namespace: String,
    /// Name of the Lease (`kube-scheduler`, `kube-controller-manager`, ...).
    pub name: String,
    /// Our identity, written as `holderIdentity`; unique per process.
    pub identity: String,
    /// How long a non-leader waits after last seeing the Lease change before taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl Config {
    /// A lock on `kube-system/<name>` held as `identity`, with upstream's default timing.
    pub fn new(name: impl Into<String>, identity: impl Into<String>) -> Config {
        Config {
            namespace: "kube-system".to_owned(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// An identity for this process as upstream builds it: the host name and a unique suffix.
pub fn default_identity(unique: &str) -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "berth".to_owned());
    format!("{host}_{unique}")
}

/// A running election: whether we lead now, and a way to stop (releasing the Lease).
/// Dropping it ends the election abruptly, as a crash would: the Lease is not released
/// and a successor waits out the lease duration.
pub struct Leadership {
    leading: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Leadership {
    /// Whether this process leads right now.
    pub fn is_leader(&self) -> bool {
        *self.leading.borrow()
    }

    /// A receiver that changes whenever leadership is gained or lost.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Stops campaigning; a leader releases the Lease (empty holder, as client-go's
    /// `ReleaseOnCancel`) so a successor need not wait out the lease duration.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Starts campaigning for `config`'s Lease.
pub fn spawn(client: kube::Client, clock: Clock, config: Config) -> Leadership {
    let (leading_tx, leading) = watch::channel(false);
    let (stop, stop_rx) = watch::channel(false);
    let elector = Elector {
        leases: Api::namespaced(client, &config.namespace),
        clock,
        config,
        observed: None,
        leading: leading_tx,
        attempts: 0,
    };
    let task = tokio::spawn(elector.run(stop_rx));
    Leadership {
        leading,
        stop,
        task: Some(task),
    }
}

/// A `watch` receiver that always says "leading": for a component run without election.
pub fn always_leading() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(true);
    // Keep the sender alive forever so receivers never see the channel close.
    std::mem::forget(tx);
    rx
}

/// Runs `work` whenever `leading` says we lead, and drops it (cancelling it at its next
/// await point) the moment leadership is lost; runs it again from the start if
/// leadership comes back. Returns when the election ends.
pub async fn run_while_leading<F, Fut>(mut leading: watch::Receiver<bool>, mut work: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        if leading.wait_for(|l| *l).await.is_err() {
            return;
        }
        let lost = async {
            // An error means the election ended: stop the work as if leadership was lost.
            let _ = leading.wait_for(|l| !*l).await;
        };
        tokio::select! {
            () = work() => return,
            () = lost => tracing::info!("leadership lost; stopping work"),
        }
        if leading.has_changed().is_err() {
            return;
        }
    }
}

/// What we last saw of the Lease, and when (by our monotonic clock).
struct Observed {
    lease_duration: Duration,
    /// The Lease's spec as JSON, to tell whether it changed since we last looked.
    raw: String,
    at: Instant,
}

struct Elector {
    leases: Api<Lease>,
    clock: Clock,
    config: Config,
    observed: Option<Observed>,
    leading: watch::Sender<bool>,
    attempts: u64,
}

impl Elector {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            // Campaign.
            loop {
                if self.try_acquire_or_renew().await {
                    break;
                }
                let wait = self.jittered_retry();
                tokio::select! {
                    () = self.clock.sleep(wait) => {}
                    _ = stop.changed() => return,
                }
            }
            tracing::info!(lease = %self.config.name, identity = %self.config.identity, "became leader");
            self.leading.send_replace(true);
            // Lead: renew every retry period until a renewal fails for renew_deadline.
            let mut last_renewed = self.clock.instant();
            loop {
                tokio::select! {
                    () = self.clock.sleep(self.config.retry_period) => {}
                    _ = stop.changed() => {
                        self.leading.send_replace(false);
                        self.release().await;
                        return;
                    }
                }
                let deadline = last_renewed + self.config.renew_deadline;
                let remaining = deadline.saturating_duration_since(self.clock.instant());
                let renewed = tokio::time::timeout(remaining, self.try_acquire_or_renew())
                    .await
                    .unwrap_or(false);
                if renewed {
                    last_renewed = self.clock.instant();
                } else if self.clock.instant() >= deadline {
                    tracing::warn!(lease = %self.config.name, "failed to renew the lease in time; leadership lost");
                    self.leading.send_replace(false);
                    break;
                }
            }
        }
    }

    /// A retry period stretched by up to 1.2× (client-go's JitterFactor), deterministic per
    /// identity and attempt so runs on a virtual clock repeat exactly.
    fn jittered_retry(&mut self) -> Duration {
        self.attempts += 1;
        let mut h = DefaultHasher::new();
        (&self.config.identity, self.attempts).hash(&mut h);
        let fraction = (h.finish() % 1000) as f64 / 1000.0;
        self.config.retry_period.mul_f64(1.0 + 1.2 * fraction)
    }

    fn lease_valid(&self, now: Instant) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|o| o.at + o.lease_duration > now)
    }

    fn observe(&mut self, lease_duration: Duration, raw: String) {
        let changed = self.observed.as_ref().is_none_or(|o| o.raw != raw);
        if changed {
            self.observed = Some(Observed {
                lease_duration,
                raw,
                at: self.clock.instant(),
            });
        }
    }

    fn record(&self, acquire_time: MicroTime, transitions: i32) -> LeaseSpec {
        let now = MicroTime(self.clock.now());
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: Some(acquire_time),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = MicroTime(self.clock.now());
        let existing = match self.leases.get_opt(&self.config.name).await {
            Ok(existing) => existing,
            Err(e) => {
                tracing::debug!(error = %e, lease = %self.config.name, "reading the lease");
                return false;
            }
        };
        let Some(mut lease) = existing else {
            let spec = self.record(now, 0);
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec.clone()),
            };
            return match self.leases.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.observe_spec(&spec);
                    true
                }
                Err(e) => {
                    tracing::debug!(error = %e, lease = %self.config.name, "creating the lease");
                    false
                }
            };
        };
        let old = lease.spec.clone().unwrap_or_default();
        self.observe_spec(&old);
        let holder = old.holder_identity.clone().unwrap_or_default();
        // As client-go: we are the leader when the Lease names us.
        let ours = holder == self.config.identity;
        if !holder.is_empty() && self.lease_valid(self.clock.instant()) && !ours {
            return false;
        }
        let spec = if ours {
            self.record(
                old.acquire_time.clone().unwrap_or(now),
                old.lease_transitions.unwrap_or(0),
            )
        } else {
            self.record(now, old.lease_transitions.unwrap_or(0).saturating_add(1))
        };
        lease.spec = Some(spec.clone());
        match self
            .leases
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observe_spec(&spec);
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, lease = %self.config.name, "updating the lease");
                false
            }
        }
    }

    fn observe_spec(&mut self, spec: &LeaseSpec) {
        let raw = serde_json::to_string(spec).unwrap_or_default();
        let seconds = spec.lease_duration_seconds.unwrap_or(0).max(0);
        self.observe(
            Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
            raw,
        );
    }

    /// Gives the Lease up: empty holder and a one-second duration, as client-go does.
    async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.leases.get_opt(&self.config.name).await else {
            return;
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(self.clock.now()));
        lease.spec = Some(spec);
        if let Err(e) = self
            .leases
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            tracing::debug!(error = %e, lease = %self.config.name, "releasing the lease");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_upstreams() {
        let c = Config::new("kube-scheduler", "me");
        assert_eq!(c.namespace, "kube-system");
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
    }

    #[test]
    fn identity_names_the_host_and_the_suffix() {
        assert!(default_identity("abc").ends_with("_abc"));
    }
}
