//! `berth taint NODE SPEC... [--for DURATION]`: `kubectl taint` (the same
//! syntax and rules, `--overwrite`, `--dry-run=server`) whose added taints
//! may expire: `--for 2h` writes the taints and their time in the node's
//! `berth.dev/taint-expiry` annotation in one update, and the node
//! lifecycle controller removes them then. The server's warnings (what the
//! taint will do) are printed as kubectl prints them.

use std::path::PathBuf;

use anyhow::Context;
use berth_client::taint::{TaintCommand, TaintError, taint_node};
use berth_core::clock::Clock;
use berth_core::duration::parse_duration;
use berth_core::taint_expiry;
use berth_core::taint_spec::parse_taint_specs;
use clap::{Args, ValueEnum};
use jiff::SignedDuration;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::input::{InputError, UsageError};

#[derive(Debug, Args)]
pub struct TaintArgs {
    /// The node.
    #[arg(value_name = "NODE")]
    node: String,
    /// Taints in `kubectl taint` syntax: `key=value:Effect` or `key:Effect`
    /// adds, `key:Effect-` or `key-` removes.
    #[arg(value_name = "SPEC", required = true)]
    specs: Vec<String>,
    /// The added taints expire this long from now (`30m`, `2h`, `1h30m`):
    /// the node lifecycle controller removes them then.
    #[arg(long = "for", value_name = "DURATION")]
    expires_after: Option<String>,
    /// Replace an existing taint of the same key and effect.
    #[arg(long)]
    overwrite: bool,
    /// `server`: everything but storing it; the server's warnings preview
    /// what the taint would do.
    #[arg(long, value_enum, value_name = "STRATEGY", default_value = "none")]
    dry_run: DryRun,
    /// The kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DryRun {
    None,
    Server,
}

pub async fn run(args: &TaintArgs) -> anyhow::Result<()> {
    // Every argument is checked before the cluster is asked anything.
    let specs: Vec<&str> = args.specs.iter().map(String::as_str).collect();
    let spec = parse_taint_specs(&specs).map_err(|e| UsageError::new("SPEC", e))?;
    let expires_at = match &args.expires_after {
        None => None,
        Some(text) => {
            let after = parse_duration(text).map_err(|e| UsageError::new("--for", e))?;
            if after.is_zero() {
                return Err(UsageError::new("--for", "must be longer than 0s").into());
            }
            if spec.to_add.is_empty() {
                return Err(UsageError::new("--for", "no taint is added to expire").into());
            }
            let after = SignedDuration::try_from(after).map_err(|e| UsageError::new("--for", e))?;
            let at = Clock::real()
                .now()
                .checked_add(after)
                .map_err(|e| UsageError::new("--for", e))?;
            Some(at)
        }
    };
    let client = client(args.kubeconfig.as_ref()).await?;
    let command = TaintCommand {
        spec: &spec,
        overwrite: args.overwrite,
        expires_at,
        dry_run: args.dry_run == DryRun::Server,
    };
    let tainted = match taint_node(&client, &args.node, command).await {
        Ok(tainted) => tainted,
        Err(TaintError::Api(kube::Error::Api(status))) => anyhow::bail!("{}", status.message),
        Err(err) => return Err(err.into()),
    };
    for warning in &tainted.warnings {
        eprintln!("Warning: {warning}");
    }
    let mut line = format!("node/{} {}", args.node, tainted.operation);
    if let Some(at) = expires_at {
        line.push_str(&format!(" (until {})", taint_expiry::format_time(at)));
    }
    if command.dry_run {
        line.push_str(" (server dry run)");
    }
    println!("{line}");
    Ok(())
}

/// A client from `--kubeconfig`, else as kubectl finds one.
pub(crate) async fn client(path: Option<&PathBuf>) -> anyhow::Result<kube::Client> {
    let config = match path {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| InputError::new(path, e))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| InputError::new(path, e))?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig: give --kubeconfig or set KUBECONFIG")?,
    };
    Ok(berth_client::transport::kube_client(config)?)
}
