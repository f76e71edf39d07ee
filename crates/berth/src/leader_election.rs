//! `berth server`'s leader election flags, with kube-scheduler's and
//! kube-controller-manager's names and defaults, and the one identity under
//! which the server campaigns for each component's Lease.

use berth_core::duration::parse_duration;
use std::time::Duration;

use berth_core::clock::Clock;
use berth_leader::{Config, Leadership, Timing};
use clap::Args;

#[derive(Debug, Args)]
pub struct LeaderElectionFlags {
    /// Run the scheduler and the controllers only while holding their Leases
    /// (`kube-system/kube-scheduler`, `kube-system/kube-controller-manager`);
    /// default: on with --etcd, where several servers may share the cluster.
    #[arg(long, value_name = "BOOL")]
    leader_elect: Option<bool>,
    /// How long a server that does not lead waits, after it last saw the
    /// leader renew, before it takes a Lease over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader tries to renew before it stops leading; less
    /// than the lease duration.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often the leader renews and the others try to take over.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
}

/// The flags' values do not make a safe election.
#[derive(Debug, thiserror::Error)]
#[error(
    "--leader-elect-lease-duration {lease:?}, --leader-elect-renew-deadline {renew:?}, \
     --leader-elect-retry-period {retry:?}: {problem}"
)]
pub struct TimingFlagsError {
    lease: Duration,
    renew: Duration,
    retry: Duration,
    problem: berth_leader::TimingError,
}

/// How this server campaigns: as whom, and with what timing.
#[derive(Debug, Clone)]
pub struct Election {
    pub identity: String,
    pub timing: Timing,
}

impl LeaderElectionFlags {
    fn timing(&self) -> Timing {
        Timing {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        }
    }

    /// client-go's checks of the three durations (a usage error at start).
    pub fn validate(&self) -> Result<(), TimingFlagsError> {
        let timing = self.timing();
        timing.validate().map_err(|problem| TimingFlagsError {
            lease: timing.lease_duration,
            renew: timing.renew_deadline,
            retry: timing.retry_period,
            problem,
        })
    }

    /// The election this server runs, if any (`--leader-elect`, by default
    /// on with etcd). One identity for both Leases: the host name, the
    /// process id and a random suffix (`host_1234-5f0c9a1e`), unique per
    /// process as upstream's host name and UUID.
    pub fn election(&self, on_etcd: bool) -> Option<Election> {
        if !self.leader_elect.unwrap_or(on_etcd) {
            return None;
        }
        let mut suffix = [0u8; 4];
        let suffix = match getrandom::fill(&mut suffix) {
            Ok(()) => u32::from_le_bytes(suffix),
            // The process id alone is still unique on this host.
            Err(_) => 0,
        };
        let unique = format!("{}-{suffix:08x}", std::process::id());
        Some(Election {
            identity: berth_leader::default_identity(&unique),
            timing: self.timing(),
        })
    }
}

impl Election {
    /// Starts campaigning for `kube-system/<lease>`.
    pub fn spawn(&self, client: kube::Client, clock: Clock, lease: &str) -> Leadership {
        berth_leader::spawn(
            client,
            clock,
            Config::new(lease, self.identity.clone()).with_timing(self.timing),
        )
    }
}
