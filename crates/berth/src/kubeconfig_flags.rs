//! The flags `berth scheduler` and `berth controllers` share as upstream's
//! components do: `--kubeconfig` (the API server and credential),
//! `--feature-gates` and leader election.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::input::InputError;

#[derive(Debug, Args)]
pub struct ComponentFlags {
    #[command(flatten)]
    pub kubeconfig: KubeconfigFlags,
    /// Feature gates, e.g. `TaintTolerationComparisonOperators=false`.
    #[arg(long = "feature-gates", value_name = "NAME=BOOL,...", default_value = "", value_parser = crate::check::parse_gates)]
    pub feature_gates: berth_core::FeatureGates,
    #[command(flatten)]
    pub leader_election: crate::leader_election::LeaderElectionFlags,
    #[command(flatten)]
    pub lease: crate::leader_election::LeaseLockFlags,
}

#[derive(Debug, Args)]
pub struct KubeconfigFlags {
    /// A kubeconfig: the API server to talk to and the credential to use
    /// (upstream gives kube-scheduler `system:kube-scheduler`'s and
    /// kube-controller-manager `system:kube-controller-manager`'s). Without
    /// it: `KUBECONFIG`, then `~/.kube/config`, then the in-cluster service
    /// account.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
}

impl KubeconfigFlags {
    /// A client of the API server the flag names. A file that cannot be
    /// read or parsed is the user's to fix (exit 2).
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = match &self.kubeconfig {
            Some(path) => config_from_file(path).await?,
            None => kube::Config::infer()
                .await
                .context("no --kubeconfig, and neither KUBECONFIG, ~/.kube/config nor an in-cluster service account")?,
        };
        berth_client::transport::kube_client(config).context("making the API client")
    }
}

/// The client config of a kubeconfig file; one that cannot be read or
/// parsed is the user's to fix (exit 2).
pub async fn config_from_file(path: &Path) -> anyhow::Result<kube::Config> {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|e| InputError::new(path, e))?;
    Ok(
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|e| InputError::new(path, e))?,
    )
}

/// A client of the API server a kubeconfig file names, with its
/// credential.
pub async fn client_from_file(path: &Path) -> anyhow::Result<kube::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    berth_client::transport::kube_client(config_from_file(path).await?)
        .context("making the API client")
}

/// The server a kubeconfig file names (its first cluster's), for a
/// command's first line; the file's path when it names none.
pub fn server_of(path: &Path) -> String {
    kube::config::Kubeconfig::read_from(path)
        .ok()
        .and_then(|k| k.clusters.into_iter().next())
        .and_then(|c| c.cluster)
        .and_then(|c| c.server)
        .unwrap_or_else(|| path.display().to_string())
}

/// Resolves when this process gets SIGTERM or SIGINT, with the signal's name.
pub async fn stop_signal() -> anyhow::Result<&'static str> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    Ok(tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    })
}
