//! The node credential kept in a data dir, against two real clusters (two
//! API servers over HTTPS, each with its own CA and tokens): a credential
//! from the other cluster is rejected and said so, and replaced when a join
//! token is at hand; a CA that does not verify the server is refused.

use berth_agent::credential::{
    JoinError, check_credential, client_from_kubeconfig, node_kubeconfig,
};
use berth_apiserver::server::{RunningServer, ServerOptions, start};

async fn cluster(dir: &std::path::Path) -> RunningServer {
    start(ServerOptions::new(
        dir.to_path_buf(),
        "127.0.0.1:0".parse().expect("address"),
    ))
    .await
    .expect("server starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_from_another_cluster_is_rejected_and_replaced_with_a_join_token() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dirs = [
        tempfile::tempdir(),
        tempfile::tempdir(),
        tempfile::tempdir(),
    ]
    .map(|d| d.expect("temp dir"));
    let (old, new) = (cluster(dirs[0].path()).await, cluster(dirs[1].path()).await);
    let agent_dir = dirs[2].path().join("agent");
    // The agent "n1" against `server`, trusting `ca`'s CA, with `join`'s
    // join token (or none).
    let agent = |server: &RunningServer, ca: &RunningServer, join: Option<&RunningServer>| {
        let (url, ca) = (server.url.clone(), ca.credentials.ca_cert.clone());
        let token = join.map(|c| c.credentials.join_token.clone());
        let agent_dir = agent_dir.clone();
        async move { node_kubeconfig(&agent_dir, &url, &ca, token.as_deref(), "n1").await }
    };

    // Joined to the old cluster, then pointed at the new one.
    agent(&old, &old, Some(&old))
        .await
        .expect("joined the old cluster");
    let err = agent(&new, &new, None).await.expect_err("rejected");
    assert!(
        matches!(&err, JoinError::Rejected { reason, .. } if reason.starts_with("401")),
        "{err}"
    );
    assert!(err.is_users_to_fix());
    let message = err.to_string();
    assert!(
        message.contains("kubelet.kubeconfig: the node credential kept here was rejected by")
            && message.contains("it belongs to another cluster; give the cluster's join token (--token) to join again"),
        "{message}"
    );

    let text = agent(&new, &new, Some(&new))
        .await
        .expect("joined again with the new cluster's token");
    let client = client_from_kubeconfig(&text).await.expect("client");
    assert_eq!(check_credential(&client, "n1").await, Ok(()));
    // Kept from now on: the new cluster issues a name's credential once,
    // so a second join would fail.
    let again = agent(&new, &new, Some(&new)).await.expect("kept");
    assert_eq!(again, text);

    // The old cluster's CA does not verify the new cluster's server.
    let err = agent(&new, &old, Some(&new)).await.expect_err("untrusted");
    assert!(matches!(err, JoinError::Untrusted { .. }), "{err}");
    assert!(err.is_users_to_fix());

    let err = node_kubeconfig(
        &dirs[2].path().join("empty"),
        &new.url,
        &new.credentials.ca_cert,
        None,
        "n2",
    )
    .await
    .expect_err("nothing to join with");
    assert!(matches!(err, JoinError::NoCredential { .. }), "{err}");
}
