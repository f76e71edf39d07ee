//! Joining: the join token is traded once for the node's own credential
//! (`POST /berth/v1/node-credential {"nodeName": ...}`, answered with the
//! bearer token of `system:node:<name>`), which the agent keeps as a
//! kubeconfig in its data dir and reuses after a restart, as a kubelet
//! keeps the client certificate it bootstrapped. The server issues a
//! name's credential only once, so two agents cannot hold one node, and
//! only for a name not yet registered or a Node an admin created with
//! `berth.dev/join-allowed: "true"`.

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
    Ok(kube::Client::try_from(config)?)
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
        other => JoinError::Client(other),
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

fn write_secret(path: &Path, contents: &str) -> Result<(), JoinError> {
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

/// The node's kubeconfig text: the one kept in `data_dir`, or, on first
/// start, a new one made from a credential bought with `join_token`.
pub async fn ensure_node_kubeconfig(
    data_dir: &Path,
    server: &str,
    ca_file: &Path,
    join_token: &str,
    node: &str,
) -> Result<String, JoinError> {
    let path = data_dir.join(KUBECONFIG_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => return Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(JoinError::Io { path, source: e }),
    }
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let ca_pem = std::fs::read(ca_file).map_err(io(ca_file))?;
    let token = request_node_token(server, &ca_pem, join_token.trim(), node).await?;
    let text = render_kubeconfig(
        server,
        &ca_pem,
        &format!("system:node:{node}"),
        Some(&token),
    );
    write_secret(&path, &text)?;
    Ok(text)
}
