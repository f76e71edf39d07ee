//! Joining: the join token is traded once for the node's own credential
//! (`POST /berth/v1/node-credential {"nodeName": ...}`, answered with the
//! bearer token of `system:node:<name>`), which the agent keeps as a
//! kubeconfig in its data dir and reuses after a restart, as a kubelet
//! keeps the client certificate it bootstrapped. The server issues a
//! name's credential only once, so two agents cannot hold one node, and
//! only for a name not yet registered or a Node an admin created with
//! `berth.dev/join-allowed: "true"`.
//!
//! A kept credential is checked against the server before use
//! ([`check_credential`]): one from another cluster (a data dir reused
//! after the cluster was made anew) is refused with 401, and then the
//! agent says so and joins again with the join token, if it has one, as a
//! kubelet falls back to its bootstrap kubeconfig. The server and its CA
//! are always the command line's; the data dir keeps only the identity.

use std::path::{Path, PathBuf};

use base64::Engine;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The node credential's file in the data dir.
pub const KUBECONFIG_FILE: &str = "kubelet.kubeconfig";
/// Where the server trades join tokens for node credentials.
pub const NODE_CREDENTIAL_PATH: &str = "/berth/v1/node-credential";

/// Joining failed.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("connecting to the server: {0}")]
    Client(#[from] kube::Error),
    #[error("the server refused a credential for node {node:?}: {message}")]
    Refused { node: String, message: String },
    #[error(
        "{}: the node credential kept here was rejected by {server} ({reason}): it belongs to another cluster; give the cluster's join token (--token) to join again",
        path.display()
    )]
    Rejected {
        path: PathBuf,
        server: String,
        reason: String,
    },
    #[error("the certificate of {server} does not verify with the CA given: {detail}")]
    Untrusted { server: String, detail: String },
    #[error(
        "{}: no node credential here, and no join token (--token) to obtain one",
        path.display()
    )]
    NoCredential { path: PathBuf },
}

impl JoinError {
    /// The fault is in what was given (the kept credential, the CA, a
    /// missing join token), not in the server or the network.
    pub fn is_users_to_fix(&self) -> bool {
        matches!(
            self,
            JoinError::Rejected { .. }
                | JoinError::Untrusted { .. }
                | JoinError::NoCredential { .. }
        )
    }
}

/// Why a server would not take a node's credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialProblem {
    /// The server refused it: 401 (it does not know the token: another
    /// cluster's), or 403 on the node's own Node (another node's token).
    Rejected(String),
    /// The server's certificate does not verify with the CA.
    Untrusted(String),
}

/// A certificate that failed verification, somewhere in `err`'s chain.
pub fn untrusted_certificate(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>()
            && matches!(tls, rustls::Error::InvalidCertificate(_))
        {
            return Some(tls.to_string());
        }
        // An io::Error's source() skips the error it wraps (the TLS error
        // comes wrapped in two).
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner),
            None => e.source(),
        };
    }
    None
}

/// Checks `client`'s credential with the one request every node may make:
/// a read of its own Node (found, or not yet registered). A failure to
/// reach the server is not the credential's: `Ok`, and the agent's loops
/// retry and log it.
pub async fn check_credential(client: &kube::Client, node: &str) -> Result<(), CredentialProblem> {
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client.clone());
    match nodes.get_opt(node).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 401 => Err(CredentialProblem::Rejected(
            format!("401 {}", status.message),
        )),
        Err(kube::Error::Api(status)) if status.code == 403 => Err(CredentialProblem::Rejected(
            format!("403 {}", status.message),
        )),
        Err(e) => match untrusted_certificate(&e) {
            Some(detail) => Err(CredentialProblem::Untrusted(detail)),
            None => {
                tracing::warn!(%node, error = %e, "could not check the node credential; going on");
                Ok(())
            }
        },
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JoinError + '_ {
    move |source| JoinError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A kubeconfig for `server` trusting `ca_pem`, authenticating with
/// `token` (with none, requests carry whatever token they already have).
pub fn render_kubeconfig(server: &str, ca_pem: &[u8], user: &str, token: Option<&str>) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let credentials = match token {
        Some(token) => format!("\n    token: {token}"),
        None => " {}".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: berth\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:{credentials}\ncontexts:\n- name: berth\n  context:\n    cluster: berth\n    user: {user}\ncurrent-context: berth\n"
    )
}

/// The bearer token of a kubeconfig's current user.
pub fn kubeconfig_token(text: &str) -> Option<String> {
    let config = Kubeconfig::from_yaml(text).ok()?;
    let context = config.current_context.as_deref()?;
    let user = config
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .user
        .clone()?;
    let auth = config
        .auth_infos
        .iter()
        .find(|a| a.name == user)?
        .auth_info
        .as_ref()?;
    use secrecy::ExposeSecret;
    auth.token.as_ref().map(|t| t.expose_secret().to_string())
}

/// A kube client from kubeconfig text.
pub async fn client_from_kubeconfig(text: &str) -> Result<kube::Client, JoinError> {
    let kubeconfig = Kubeconfig::from_yaml(text)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(berth_client::transport::kube_client(config)?)
}

/// Trades `join_token` for the credential of `node` at `server`.
pub async fn request_node_token(
    server: &str,
    ca_pem: &[u8],
    join_token: &str,
    node: &str,
) -> Result<String, JoinError> {
    let client = client_from_kubeconfig(&render_kubeconfig(
        server,
        ca_pem,
        "bootstrap",
        Some(join_token),
    ))
    .await?;
    let body = serde_json::json!({"nodeName": node})
        .to_string()
        .into_bytes();
    let request = http::Request::post(NODE_CREDENTIAL_PATH)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(|e| JoinError::Refused {
            node: node.to_string(),
            message: e.to_string(),
        })?;
    let answer: serde_json::Value = client.request(request).await.map_err(|e| match e {
        kube::Error::Api(status) => JoinError::Refused {
            node: node.to_string(),
            message: status.message.clone(),
        },
        other => match untrusted_certificate(&other) {
            Some(detail) => JoinError::Untrusted {
                server: server.to_string(),
                detail,
            },
            None => JoinError::Client(other),
        },
    })?;
    answer
        .get("token")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| JoinError::Refused {
            node: node.to_string(),
            message: "no token in the answer".into(),
        })
}

/// Writes `contents` to `path`, readable by its owner only (it holds a
/// credential).
pub fn write_secret(path: &Path, contents: &str) -> Result<(), JoinError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io(path))?;
    file.write_all(contents.as_bytes()).map_err(io(path))?;
    file.sync_all().map_err(io(path))
}

/// The node's kubeconfig text: the credential kept in `data_dir`, checked
/// against `server`, or a new one bought with `join_token` when none is
/// kept or the server rejects the kept one (another cluster's).
pub async fn node_kubeconfig(
    data_dir: &Path,
    server: &str,
    ca_file: &Path,
    join_token: Option<&str>,
    node: &str,
) -> Result<String, JoinError> {
    let path = data_dir.join(KUBECONFIG_FILE);
    let ca_pem = std::fs::read(ca_file).map_err(io(ca_file))?;
    let user = format!("system:node:{node}");
    let kept = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(JoinError::Io { path, source: e }),
    };
    if let Some(kept) = kept {
        match check_kept(&kept, server, &ca_pem, &user, node).await? {
            Ok(text) => {
                if text != kept {
                    write_secret(&path, &text)?;
                }
                return Ok(text);
            }
            Err(problem) => refused(problem, &path, server, join_token.is_some())?,
        }
    }
    let join_token = join_token.ok_or(JoinError::NoCredential { path: path.clone() })?;
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let token = request_node_token(server, &ca_pem, join_token.trim(), node).await?;
    let text = render_kubeconfig(server, &ca_pem, &user, Some(&token));
    write_secret(&path, &text)?;
    Ok(text)
}

/// The server refused the credentials kept at `path`: an untrusted
/// certificate is an error; a rejected credential is said plainly, and is
/// an error unless a join token is at hand to join again (`Ok`).
pub fn refused(
    problem: CredentialProblem,
    path: &Path,
    server: &str,
    can_join_again: bool,
) -> Result<(), JoinError> {
    let reason = match problem {
        CredentialProblem::Untrusted(detail) => {
            return Err(JoinError::Untrusted {
                server: server.to_string(),
                detail,
            });
        }
        CredentialProblem::Rejected(reason) => reason,
    };
    tracing::error!(
        %server,
        credentials = %path.display(),
        %reason,
        "the server rejected the node credentials kept in the data dir: they belong to another cluster"
    );
    if !can_join_again {
        return Err(JoinError::Rejected {
            path: path.to_path_buf(),
            server: server.to_string(),
            reason,
        });
    }
    tracing::warn!(%server, "joining again with the join token");
    Ok(())
}

/// The kept kubeconfig's token, pointed at `server` with `ca_pem`, if the
/// server takes it.
async fn check_kept(
    kept: &str,
    server: &str,
    ca_pem: &[u8],
    user: &str,
    node: &str,
) -> Result<Result<String, CredentialProblem>, JoinError> {
    let Some(token) = kubeconfig_token(kept) else {
        return Ok(Err(CredentialProblem::Rejected("it holds no token".into())));
    };
    let text = render_kubeconfig(server, ca_pem, user, Some(&token));
    let client = client_from_kubeconfig(&text).await?;
    Ok(check_credential(&client, node).await.map(|()| text))
}
