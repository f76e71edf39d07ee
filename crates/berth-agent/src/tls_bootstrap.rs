//! TLS bootstrap, as upstream's kubelet (`--bootstrap-kubeconfig`): with a
//! bootstrap token (user `system:bootstrap:<id>`, group
//! `system:bootstrappers`) the agent makes a key, asks for a client
//! certificate for `system:node:<name>` in `system:nodes` with a
//! CertificateSigningRequest for the signer
//! `kubernetes.io/kube-apiserver-client-kubelet`, waits for it to be
//! approved (the controller manager's `csrapproving` approves it when the
//! bootstrap token's group may create `certificatesigningrequests/nodeclient`)
//! and signed (`csrsigning`), and writes a kubeconfig with that
//! certificate and key. From then on the node is itself, under the Node
//! authorizer and NodeRestriction, as any kubelet.
//!
//! The request's shape is upstream's (`k8s.io/kubernetes/pkg/kubelet/
//! certificate/bootstrap`): subject `O=system:nodes, CN=system:node:<name>`,
//! no SANs, an ECDSA P-256 key, usages `digital signature` and
//! `client auth` (`key encipherment` is for RSA keys only); anything else
//! and `csrapproving` leaves it pending. Upstream waits 15 minutes for
//! the certificate; so does the agent.
//!
//! berth server has no certificates API: this is for clusters that offer
//! it (kubeadm's and most others).

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::config::Kubeconfig;

/// The signer of kubelets' client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// How long upstream's kubelet waits for its certificate.
pub const CERTIFICATE_WAIT: Duration = Duration::from_secs(15 * 60);
/// How often the agent looks at its request while it waits.
const POLL: Duration = Duration::from_secs(1);

/// TLS bootstrap failed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("{}: {source}", path.display())]
    Kubeconfig {
        path: PathBuf,
        source: kube::config::KubeconfigError,
    },
    #[error("{}: {message}", path.display())]
    Incomplete { path: PathBuf, message: String },
    #[error("making the node's key and certificate request: {0}")]
    Key(#[from] rcgen::Error),
    #[error("creating the CertificateSigningRequest: {0}")]
    Create(kube::Error),
    #[error("CertificateSigningRequest {name} was denied: {message}")]
    Denied { name: String, message: String },
    #[error("CertificateSigningRequest {name} failed: {message}")]
    Failed { name: String, message: String },
    #[error(
        "CertificateSigningRequest {name} was not signed within {} s: is the controller manager's csrapproving allowed to approve it (the bootstrap token's group bound to system:certificates.k8s.io:certificatesigningrequests:nodeclient) and csrsigning running?",
        waited.as_secs()
    )]
    TimedOut { name: String, waited: Duration },
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A node's new key (PKCS#8 PEM) and its certificate request (PEM).
pub struct NodeKey {
    pub key_pem: String,
    pub csr_pem: String,
}

/// A fresh ECDSA P-256 key and upstream's request for `node`'s client
/// certificate.
pub fn node_key(node: &str) -> Result<NodeKey, BootstrapError> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::default();
    let mut subject = rcgen::DistinguishedName::new();
    subject.push(rcgen::DnType::OrganizationName, "system:nodes");
    subject.push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    params.distinguished_name = subject;
    let csr = params.serialize_request(&key)?;
    Ok(NodeKey {
        key_pem: key.serialize_pem(),
        csr_pem: csr.pem()?,
    })
}

/// The CertificateSigningRequest for `csr_pem`, as the kubelet makes it.
pub fn csr_object(node: &str, csr_pem: &str) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            // Upstream names it after a digest of the key and subject;
            // a generated name is as unique, and names the node.
            generate_name: Some(format!("node-csr-{node}-")),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.as_bytes().to_vec()),
            signer_name: KUBELET_CLIENT_SIGNER.to_string(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        status: None,
    }
}

/// Where a request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Not yet approved, or approved and not yet signed.
    Waiting,
    /// Signed: the certificate (PEM).
    Issued(Vec<u8>),
    Denied(String),
    Failed(String),
}

/// Where `csr` stands, from its status: a Denied or Failed condition ends
/// it; a certificate, once Approved, is the answer.
pub fn standing(csr: &CertificateSigningRequest) -> Standing {
    let Some(status) = &csr.status else {
        return Standing::Waiting;
    };
    let conditions = status.conditions.as_deref().unwrap_or_default();
    let holds = |type_: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status != "False")
    };
    let said = |c: &k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition| {
        c.message
            .clone()
            .or_else(|| c.reason.clone())
            .unwrap_or_default()
    };
    if let Some(denied) = holds("Denied") {
        return Standing::Denied(said(denied));
    }
    if let Some(failed) = holds("Failed") {
        return Standing::Failed(said(failed));
    }
    match &status.certificate {
        Some(cert) if !cert.0.is_empty() && holds("Approved").is_some() => {
            Standing::Issued(cert.0.clone())
        }
        _ => Standing::Waiting,
    }
}

/// The server and CA (PEM) of a kubeconfig's current context.
fn cluster_of(path: &Path, config: &Kubeconfig) -> Result<(String, Vec<u8>), BootstrapError> {
    let incomplete = |message: &str| BootstrapError::Incomplete {
        path: path.to_path_buf(),
        message: message.to_string(),
    };
    let context = config
        .current_context
        .as_deref()
        .ok_or_else(|| incomplete("no current-context"))?;
    let cluster_name = config
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .ok_or_else(|| incomplete("the current context names no cluster"))?;
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| incomplete("the current context's cluster is not in the file"))?;
    let server = cluster
        .server
        .clone()
        .ok_or_else(|| incomplete("the cluster has no server"))?;
    let ca = if let Some(data) = &cluster.certificate_authority_data {
        base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| incomplete(&format!("certificate-authority-data: {e}")))?
    } else if let Some(file) = &cluster.certificate_authority {
        std::fs::read(file)
            .map_err(|e| incomplete(&format!("certificate-authority {file}: {e}")))?
    } else {
        return Err(incomplete(
            "the cluster has no certificate-authority: the node's kubeconfig would trust no one",
        ));
    };
    Ok((server, ca))
}

/// A kubeconfig for `node` at `server`, trusting `ca_pem`, with a client
/// certificate and key.
pub fn render_client_cert_kubeconfig(
    server: &str,
    ca_pem: &[u8],
    node: &str,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> String {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: default-cluster\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: system:node:{node}\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: default-context\n  context:\n    cluster: default-cluster\n    user: system:node:{node}\ncurrent-context: default-context\n",
        b64(ca_pem),
        b64(cert_pem),
        b64(key_pem),
    )
}

/// Bootstraps `node`'s client certificate with the credential of
/// `bootstrap_kubeconfig` and writes the node's kubeconfig to `kubeconfig`
/// (mode 0600: it holds the key). Waits up to `wait` for the signature.
pub async fn bootstrap(
    bootstrap_kubeconfig: &Path,
    kubeconfig: &Path,
    node: &str,
    wait: Duration,
) -> Result<(), BootstrapError> {
    let read = |source| BootstrapError::Kubeconfig {
        path: bootstrap_kubeconfig.to_path_buf(),
        source,
    };
    let config = Kubeconfig::read_from(bootstrap_kubeconfig).map_err(read)?;
    let (server, ca_pem) = cluster_of(bootstrap_kubeconfig, &config)?;
    let client_config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .map_err(read)?;
    let client =
        berth_client::transport::kube_client(client_config).map_err(BootstrapError::Create)?;
    let key = node_key(node)?;
    let csrs: kube::Api<CertificateSigningRequest> = kube::Api::all(client);
    let created = csrs
        .create(&Default::default(), &csr_object(node, &key.csr_pem))
        .await
        .map_err(BootstrapError::Create)?;
    let name = created.metadata.name.clone().unwrap_or_default();
    tracing::info!(%node, csr = %name, signer = KUBELET_CLIENT_SIGNER, "waiting for the client certificate");
    let deadline = tokio::time::Instant::now() + wait;
    let mut current = created;
    let cert = loop {
        match standing(&current) {
            Standing::Issued(cert) => break cert,
            Standing::Denied(message) => return Err(BootstrapError::Denied { name, message }),
            Standing::Failed(message) => return Err(BootstrapError::Failed { name, message }),
            Standing::Waiting => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(BootstrapError::TimedOut { name, waited: wait });
        }
        tokio::time::sleep(POLL).await;
        match csrs.get(&name).await {
            Ok(csr) => current = csr,
            // The server or network, not the request: look again.
            Err(e) => {
                tracing::warn!(csr = %name, error = %e, "reading the CertificateSigningRequest")
            }
        }
    };
    tracing::info!(%node, csr = %name, "client certificate issued");
    let text = render_client_cert_kubeconfig(&server, &ca_pem, node, &cert, key.key_pem.as_bytes());
    crate::credential::write_secret(kubeconfig, &text).map_err(|e| match e {
        crate::credential::JoinError::Io { path, source } => BootstrapError::Write { path, source },
        other => BootstrapError::Write {
            path: kubeconfig.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::certificates::v1::{
        CertificateSigningRequestCondition, CertificateSigningRequestStatus,
    };

    fn condition(type_: &str, status: &str, message: &str) -> CertificateSigningRequestCondition {
        CertificateSigningRequestCondition {
            type_: type_.into(),
            status: status.into(),
            message: Some(message.into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_request_is_issued_only_once_approved_and_signed_and_ends_when_denied_or_failed() {
        struct Case {
            name: &'static str,
            conditions: Vec<CertificateSigningRequestCondition>,
            certificate: Option<&'static [u8]>,
            want: Standing,
        }
        let cases = [
            Case {
                name: "new: no status",
                conditions: vec![],
                certificate: None,
                want: Standing::Waiting,
            },
            Case {
                name: "approved, not yet signed",
                conditions: vec![condition("Approved", "True", "auto")],
                certificate: None,
                want: Standing::Waiting,
            },
            Case {
                name: "approved and signed",
                conditions: vec![condition("Approved", "True", "auto")],
                certificate: Some(b"PEM"),
                want: Standing::Issued(b"PEM".to_vec()),
            },
            Case {
                name: "an empty certificate is not one",
                conditions: vec![condition("Approved", "True", "auto")],
                certificate: Some(b""),
                want: Standing::Waiting,
            },
            Case {
                name: "denied",
                conditions: vec![condition("Denied", "True", "not a node")],
                certificate: None,
                want: Standing::Denied("not a node".into()),
            },
            Case {
                name: "signing failed",
                conditions: vec![
                    condition("Approved", "True", "auto"),
                    condition("Failed", "True", "bad key"),
                ],
                certificate: None,
                want: Standing::Failed("bad key".into()),
            },
            Case {
                name: "a condition with status False does not hold",
                conditions: vec![
                    condition("Denied", "False", "no"),
                    condition("Approved", "True", "auto"),
                ],
                certificate: Some(b"PEM"),
                want: Standing::Issued(b"PEM".to_vec()),
            },
        ];
        for case in cases {
            let csr = CertificateSigningRequest {
                status: Some(CertificateSigningRequestStatus {
                    conditions: Some(case.conditions),
                    certificate: case.certificate.map(|c| ByteString(c.to_vec())),
                }),
                ..csr_object("n1", "")
            };
            let csr = if case.name.starts_with("new") {
                CertificateSigningRequest {
                    status: None,
                    ..csr
                }
            } else {
                csr
            };
            assert_eq!(standing(&csr), case.want, "{}", case.name);
        }
    }

    #[test]
    fn the_request_has_the_subject_usages_and_signer_csrapproving_approves() {
        let key = node_key("node-7").expect("key");
        assert!(key.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let csr = csr_object("node-7", &key.csr_pem);
        assert_eq!(csr.spec.signer_name, KUBELET_CLIENT_SIGNER);
        assert_eq!(
            csr.spec.usages.as_deref(),
            Some(&["digital signature".to_string(), "client auth".to_string()][..])
        );
        assert_eq!(
            csr.metadata.generate_name.as_deref(),
            Some("node-csr-node-7-")
        );
        // The request's DER: the subject's two names as UTF8Strings
        // (tag 0x0c), and no subjectAltName (OID 2.5.29.17: 55 1d 11).
        let pem = String::from_utf8(csr.spec.request.0).expect("pem");
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("base64");
        let utf8 = |s: &str| {
            let mut v = vec![0x0c, u8::try_from(s.len()).expect("short")];
            v.extend_from_slice(s.as_bytes());
            v
        };
        let has = |needle: &[u8]| der.windows(needle.len()).any(|w| w == needle);
        assert!(has(&utf8("system:nodes")), "O=system:nodes");
        assert!(has(&utf8("system:node:node-7")), "CN=system:node:node-7");
        assert!(!has(&[0x55, 0x1d, 0x11]), "no SANs");
    }

    #[test]
    fn the_node_kubeconfig_keeps_the_bootstrap_clusters_server_and_ca() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca_path = dir.path().join("ca.crt");
        std::fs::write(&ca_path, b"CA PEM").expect("ca");
        struct Case {
            name: &'static str,
            cluster: String,
            want: Result<(&'static str, &'static [u8]), &'static str>,
        }
        let cases = [
            Case {
                name: "CA as a file, relative to the kubeconfig",
                cluster: "server: https://10.0.0.1:6443\n    certificate-authority: ca.crt".into(),
                want: Ok(("https://10.0.0.1:6443", b"CA PEM")),
            },
            Case {
                name: "CA inline",
                cluster: format!(
                    "server: https://k:6443\n    certificate-authority-data: {}",
                    base64::engine::general_purpose::STANDARD.encode(b"INLINE")
                ),
                want: Ok(("https://k:6443", b"INLINE")),
            },
            Case {
                name: "no CA: refused, the node would trust no one",
                cluster: "server: https://k:6443".into(),
                want: Err("no certificate-authority"),
            },
        ];
        for case in cases {
            let path = dir.path().join("bootstrap.kubeconfig");
            std::fs::write(
                &path,
                format!(
                    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    {}\nusers:\n- name: u\n  user:\n    token: abcdef.0123456789abcdef\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
                    case.cluster
                ),
            )
            .expect("write");
            let config = Kubeconfig::read_from(&path).expect("read");
            match (cluster_of(&path, &config), case.want) {
                (Ok((server, ca)), Ok((want_server, want_ca))) => {
                    assert_eq!(
                        (server.as_str(), ca.as_slice()),
                        (want_server, want_ca),
                        "{}",
                        case.name
                    );
                }
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{}: {e}", case.name),
                (got, want) => panic!(
                    "{}: got {:?}, want {want:?}",
                    case.name,
                    got.map(|(s, _)| s)
                ),
            }
        }
    }
}
