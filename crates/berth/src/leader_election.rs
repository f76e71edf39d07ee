//! The leader election flags of `berth server`, `berth scheduler` and
//! `berth controllers`, with kube-scheduler's and kube-controller-manager's
//! names and defaults, and the one identity under which a process
//! campaigns for each component's Lease.

use berth_core::duration::parse_duration;
use std::time::Duration;

use berth_core::clock::Clock;
use berth_leader::{Config, Leadership, Timing};
use clap::Args;

#[derive(Debug, Args)]
pub struct LeaderElectionFlags {
    /// Run the scheduler and the controllers only while holding their Leases
    /// (`kube-system/kube-scheduler`, `kube-system/kube-controller-manager`);
    /// default: on for `berth scheduler` and `berth controllers` (as
    /// upstream's), and for `berth server` with --etcd, where several
    /// servers may share the cluster.
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

/// Where a standalone component's Lease lives (`berth scheduler`, `berth
/// controllers`): upstream's `--leader-elect-resource-name` and
/// `--leader-elect-resource-namespace`. `berth server` has no such flags:
/// it campaigns for both components' Leases under their upstream names.
#[derive(Debug, Args)]
pub struct LeaseLockFlags {
    /// The Lease's name (default: the component's, `kube-scheduler` or
    /// `kube-controller-manager`).
    #[arg(long, value_name = "NAME")]
    leader_elect_resource_name: Option<String>,
    /// The Lease's namespace.
    #[arg(long, default_value = "kube-system", value_name = "NAMESPACE")]
    leader_elect_resource_namespace: String,
}

impl LeaseLockFlags {
    /// The Lease's namespace and name, `default_name` unless the flag says.
    pub fn lock(&self, default_name: &str) -> (String, String) {
        (
            self.leader_elect_resource_namespace.clone(),
            self.leader_elect_resource_name
                .clone()
                .unwrap_or_else(|| default_name.to_string()),
        )
    }
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

    /// The election this process runs, if any (`--leader-elect`, else
    /// `by_default`). One identity for both Leases: the host name, the
    /// process id and a random suffix (`host_1234-5f0c9a1e`), unique per
    /// process as upstream's host name and UUID.
    pub fn election(&self, by_default: bool) -> Option<Election> {
        if !self.leader_elect.unwrap_or(by_default) {
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
    /// Starts campaigning for the Lease `namespace/name`.
    pub fn spawn(
        &self,
        client: kube::Client,
        clock: Clock,
        (namespace, name): (String, String),
    ) -> Leadership {
        let config = Config {
            namespace,
            ..Config::new(name, self.identity.clone()).with_timing(self.timing)
        };
        berth_leader::spawn(client, clock, config)
    }
}
