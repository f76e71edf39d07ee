//! The scheduler's flags, with kube-scheduler's names, shared by `berth
//! server` (which runs the scheduler in-process) and `berth scheduler`.

use std::path::PathBuf;

use berth_core::FeatureGates;
use berth_scheduler::config::{self, SchedulerFileConfig};
use berth_scheduler::cycle::Profile;
use berth_scheduler::queue::QueueConfig;
use clap::Args;

use crate::input::InputError;

#[derive(Debug, Args)]
pub struct SchedulerFlags {
    /// The `spec.schedulerName` of the pods the scheduler takes (without
    /// --config).
    #[arg(long, default_value = berth_scheduler::cycle::DEFAULT_SCHEDULER_NAME)]
    scheduler_name: String,
    /// A `KubeSchedulerConfiguration` file (kubescheduler.config.k8s.io/v1):
    /// profiles, plugins per extension point, plugin args,
    /// percentageOfNodesToScore. Without it: upstream's default profile.
    #[arg(long, value_name = "FILE", conflicts_with = "scheduler_name")]
    config: Option<PathBuf>,
}

impl SchedulerFlags {
    /// The scheduler's profiles: the `--config` file's, or the default
    /// profile under `--scheduler-name`. A bad file is the user's to fix
    /// (exit 2), with the file and the field named.
    pub fn setup(&self, gates: FeatureGates) -> anyhow::Result<SchedulerFileConfig> {
        let Some(path) = &self.config else {
            return Ok(SchedulerFileConfig {
                profiles: vec![Profile::new(self.scheduler_name.clone(), gates)],
                queue: QueueConfig::default(),
            });
        };
        let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, e))?;
        config::parse(&text, gates).map_err(|e| InputError::new(path, e).into())
    }
}
