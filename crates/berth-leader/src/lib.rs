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
//! A candidate retries every `retry_period` (jittered), and also the moment the Lease it
//! watches expires by its clock (client-go only retries, so a successor took over up to
//! 2.2 retry periods after the expiry); the leader renews every `retry_period` and gives up
//! leadership when it could not renew for `renew_deadline`. Work guarded by
//! [`run_while_leading`] is cancelled at once when leadership is lost, and also when the
//! last renewal is older than `renew_deadline` although the election has not said so yet
//! (a process stopped and resumed: see [`Standing`]). [`Timing`] holds the three durations,
//! with kube-scheduler's and kube-controller-manager's defaults
//! (`--leader-elect-lease-duration` 15 s, `--leader-elect-renew-deadline` 10 s,
//! `--leader-elect-retry-period` 2 s) and client-go's checks of them.
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

/// client-go's `JitterFactor`: a candidate waits between one and 2.2 retry periods.
const JITTER_FACTOR: f64 = 1.2;

/// The election's three durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a non-leader waits after last seeing the Lease change before taking it.
    /// Written to the Lease in whole seconds (`leaseDurationSeconds`), which is what the
    /// other candidates go by.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl Default for Timing {
    /// Upstream's defaults: 15 s, 10 s, 2 s.
    fn default() -> Self {
        Timing {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Durations that cannot make a safe election, in client-go's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    #[error("leaseDuration must be greater than zero (it is written in whole seconds)")]
    LeaseDurationZero,
    #[error("renewDeadline must be greater than zero")]
    RenewDeadlineZero,
    #[error("retryPeriod must be greater than zero")]
    RetryPeriodZero,
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseNotLongerThanRenewDeadline,
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewDeadlineNotLongerThanJitteredRetry,
}

impl Timing {
    /// client-go's `NewLeaderElector` checks: a leader gives up (after `renew_deadline`)
    /// before any candidate may take over (after `lease_duration`), and has more than one
    /// jittered retry in which to renew. The lease duration counts in the whole seconds
    /// written to the Lease, since that is what the other candidates wait for.
    pub fn validate(&self) -> Result<(), TimingError> {
        let written = Duration::from_secs(self.lease_duration.as_secs());
        if written.is_zero() {
            return Err(TimingError::LeaseDurationZero);
        }
        if self.renew_deadline.is_zero() {
            return Err(TimingError::RenewDeadlineZero);
        }
        if self.retry_period.is_zero() {
            return Err(TimingError::RetryPeriodZero);
        }
        if written <= self.renew_deadline {
            return Err(TimingError::LeaseNotLongerThanRenewDeadline);
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(TimingError::RenewDeadlineNotLongerThanJitteredRetry);
        }
        Ok(())
    }
}

/// Where the lock lives, who we are, and the timing.
#[derive(Debug, Clone)]
pub struct Config {
    /// Namespace of the Lease (`kube-system`).
    pub namespace: String,
    /// Name of the Lease (`kube-scheduler`, `kube-controller-manager`, ...).
    pub name: String,
    /// Our identity, written as `holderIdentity`; unique per process.
    pub identity: String,
    pub timing: Timing,
}

impl Config {
    /// A lock on `kube-system/<name>` held as `identity`, with upstream's default timing.
    pub fn new(name: impl Into<String>, identity: impl Into<String>) -> Config {
        Config {
            namespace: "kube-system".to_owned(),
            name: name.into(),
            identity: identity.into(),
            timing: Timing::default(),
        }
    }

    /// The same lock with other durations.
    pub fn with_timing(self, timing: Timing) -> Config {
        Config { timing, ..self }
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

/// What an election says about this process, as it publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Not leading: campaigning, or stopped.
    Follower,
    /// Leading, at the latest until `until`: the start of the last successful renewal plus
    /// the renew deadline, the moment the election gives up unless it renews first. A
    /// successor can take over only a lease duration (longer) after it saw that renewal.
    /// Past `until` this process must not act as the leader even while the election has
    /// not said otherwise yet: after the process was stopped (SIGSTOP, a paused VM) every
    /// timer fires at once on resuming, and the work's may run before the election's.
    Leader { until: Instant },
}

impl Standing {
    /// Leading with no end: for a component run without election, and for tests.
    pub fn leader_indefinitely() -> Standing {
        // A hundred years: as good as never, and far from overflowing an Instant.
        Standing::Leader {
            until: Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600),
        }
    }

    /// Whether the election last said this process leads (to act on it, ask
    /// [`leads_at`](Self::leads_at)).
    pub fn is_leader(&self) -> bool {
        matches!(self, Standing::Leader { .. })
    }

    /// Whether this process may act as the leader at `now`.
    pub fn leads_at(&self, now: Instant) -> bool {
        match self {
            Standing::Follower => false,
            Standing::Leader { until } => now < *until,
        }
    }
}

/// A running election: whether we lead now, and a way to stop (releasing the Lease).
/// Dropping it ends the election abruptly, as a crash would: the Lease is not released
/// and a successor waits out the lease duration.
pub struct Leadership {
    leading: watch::Receiver<Standing>,
    clock: Clock,
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
        self.leading.borrow().leads_at(self.clock.instant())
    }

    /// A receiver that changes whenever leadership is gained, renewed or lost.
    pub fn subscribe(&self) -> watch::Receiver<Standing> {
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
    let (leading_tx, leading) = watch::channel(Standing::Follower);
    let (stop, stop_rx) = watch::channel(false);
    let elector = Elector {
        leases: Api::namespaced(client, &config.namespace),
        clock: clock.clone(),
        config,
        observed: None,
        leading: leading_tx,
        attempts: 0,
    };
    let task = tokio::spawn(elector.run(stop_rx));
    Leadership {
        leading,
        clock,
        stop,
        task: Some(task),
    }
}

/// A `watch` receiver that always says "leading": for a component run without election.
pub fn always_leading() -> watch::Receiver<Standing> {
    let (tx, rx) = watch::channel(Standing::leader_indefinitely());
    // Keep the sender alive forever so receivers never see the channel close.
    std::mem::forget(tx);
    rx
}

/// Runs `work` whenever `leading` says we lead, and drops it (cancelling it at its next
/// await point) the moment leadership is lost or lapses (see [`Standing::Leader`]); runs
/// it again from the start if leadership comes back. Returns when the election ends.
///
/// Whenever this future is polled, the lapse is checked before the work is: the work is
/// never polled past `until`, whichever timer woke the task.
pub async fn run_while_leading<F, Fut>(mut leading: watch::Receiver<Standing>, mut work: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        let gained = leading
            .wait_for(|s| s.leads_at(Instant::now()))
            .await
            .is_ok();
        if !gained {
            return;
        }
        tokio::select! {
            biased;
            () = lapsed(&mut leading) => tracing::info!("leadership lost; stopping work"),
            () = work() => return,
        }
        if leading.has_changed().is_err() {
            return;
        }
    }
}

/// Returns when the standing `leading` publishes no longer lets this process lead: a
/// `Follower`, a `Leader` whose `until` has passed without a renewal, or the election's
/// end.
async fn lapsed(leading: &mut watch::Receiver<Standing>) {
    loop {
        let standing = *leading.borrow_and_update();
        let Standing::Leader { until } = standing else {
            return;
        };
        if !standing.leads_at(Instant::now()) {
            return;
        }
        tokio::select! {
            biased;
            () = tokio::time::sleep_until(until) => {}
            changed = leading.changed() => if changed.is_err() {
                return;
            },
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
    leading: watch::Sender<Standing>,
    attempts: u64,
}

impl Elector {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let timing = self.config.timing;
        loop {
            // Campaign. A renewal counts from the moment it was sent: a rival cannot have
            // seen it earlier, so its lease duration starts later than our renew deadline.
            let mut attempt = self.clock.instant();
            loop {
                if self.try_acquire_or_renew().await {
                    break;
                }
                let wait = self.next_attempt_in();
                tokio::select! {
                    () = self.clock.sleep(wait) => {}
                    _ = stop.changed() => return,
                }
                attempt = self.clock.instant();
            }
            tracing::info!(lease = %self.config.name, identity = %self.config.identity, "became leader");
            // Lead: renew every retry period until a renewal fails for renew_deadline.
            let mut last_renewed = attempt;
            self.leading.send_replace(Standing::Leader {
                until: last_renewed + timing.renew_deadline,
            });
            loop {
                tokio::select! {
                    () = self.clock.sleep(timing.retry_period) => {}
                    _ = stop.changed() => {
                        self.leading.send_replace(Standing::Follower);
                        self.release().await;
                        return;
                    }
                }
                let deadline = last_renewed + timing.renew_deadline;
                let attempt = self.clock.instant();
                let remaining = deadline.saturating_duration_since(attempt);
                let renewed = tokio::time::timeout(remaining, self.try_acquire_or_renew())
                    .await
                    .unwrap_or(false);
                if renewed && attempt < deadline {
                    last_renewed = attempt;
                    self.leading.send_replace(Standing::Leader {
                        until: last_renewed + timing.renew_deadline,
                    });
                } else if self.clock.instant() >= deadline {
                    tracing::warn!(lease = %self.config.name, "failed to renew the lease in time; leadership lost");
                    self.leading.send_replace(Standing::Follower);
                    break;
                }
            }
        }
    }

    /// How long a candidate waits before its next attempt: a jittered retry period, but no
    /// longer than until the Lease it saw held by another expires by our clock.
    fn next_attempt_in(&mut self) -> Duration {
        let retry = self.jittered_retry();
        let now = self.clock.instant();
        match &self.observed {
            Some(o) if o.at + o.lease_duration > now => {
                retry.min((o.at + o.lease_duration).saturating_duration_since(now))
            }
            _ => retry,
        }
    }

    /// A retry period stretched by up to 1.2× (client-go's JitterFactor), deterministic per
    /// identity and attempt so runs on a virtual clock repeat exactly.
    fn jittered_retry(&mut self) -> Duration {
        self.attempts += 1;
        let mut h = DefaultHasher::new();
        (&self.config.identity, self.attempts).hash(&mut h);
        let fraction = (h.finish() % 1000) as f64 / 1000.0;
        self.config
            .timing
            .retry_period
            .mul_f64(1.0 + JITTER_FACTOR * fraction)
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
                i32::try_from(self.config.timing.lease_duration.as_secs()).unwrap_or(i32::MAX),
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
        assert_eq!(c.timing.lease_duration, Duration::from_secs(15));
        assert_eq!(c.timing.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.timing.retry_period, Duration::from_secs(2));
        assert_eq!(c.timing.validate(), Ok(()));
    }

    /// client-go's `NewLeaderElector` checks, with the lease duration in the whole seconds
    /// a Lease records.
    #[test]
    fn timings_that_cannot_make_a_safe_election_are_refused() {
        struct Case {
            name: &'static str,
            lease_ms: u64,
            renew_ms: u64,
            retry_ms: u64,
            want: Result<(), TimingError>,
        }
        let cases = [
            Case {
                name: "upstream defaults",
                lease_ms: 15_000,
                renew_ms: 10_000,
                retry_ms: 2_000,
                want: Ok(()),
            },
            Case {
                name: "short but consistent",
                lease_ms: 4_000,
                renew_ms: 3_000,
                retry_ms: 500,
                want: Ok(()),
            },
            Case {
                name: "lease not longer than the renew deadline",
                lease_ms: 10_000,
                renew_ms: 10_000,
                retry_ms: 2_000,
                want: Err(TimingError::LeaseNotLongerThanRenewDeadline),
            },
            Case {
                name: "a fractional lease counts in whole seconds",
                lease_ms: 3_900,
                renew_ms: 3_500,
                retry_ms: 500,
                want: Err(TimingError::LeaseNotLongerThanRenewDeadline),
            },
            Case {
                name: "lease under a second is written as zero",
                lease_ms: 900,
                renew_ms: 500,
                retry_ms: 100,
                want: Err(TimingError::LeaseDurationZero),
            },
            Case {
                name: "renew deadline within one jittered retry",
                lease_ms: 15_000,
                renew_ms: 2_400,
                retry_ms: 2_000,
                want: Err(TimingError::RenewDeadlineNotLongerThanJitteredRetry),
            },
            Case {
                name: "no renew deadline",
                lease_ms: 15_000,
                renew_ms: 0,
                retry_ms: 2_000,
                want: Err(TimingError::RenewDeadlineZero),
            },
            Case {
                name: "no retry period",
                lease_ms: 15_000,
                renew_ms: 10_000,
                retry_ms: 0,
                want: Err(TimingError::RetryPeriodZero),
            },
        ];
        for case in cases {
            let timing = Timing {
                lease_duration: Duration::from_millis(case.lease_ms),
                renew_deadline: Duration::from_millis(case.renew_ms),
                retry_period: Duration::from_millis(case.retry_ms),
            };
            assert_eq!(timing.validate(), case.want, "{}", case.name);
        }
    }

    #[test]
    fn a_leader_leads_only_until_its_renew_deadline_passes() {
        let now = Instant::now();
        let until = now + Duration::from_secs(3);
        assert!(Standing::Leader { until }.leads_at(now));
        assert!(!Standing::Leader { until }.leads_at(until));
        assert!(!Standing::Follower.leads_at(now));
    }

    #[test]
    fn identity_names_the_host_and_the_suffix() {
        assert!(default_identity("abc").ends_with("_abc"));
    }
}
