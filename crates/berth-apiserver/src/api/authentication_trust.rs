//! The `kube-system/extension-apiserver-authentication` ConfigMap, as
//! upstream's ClusterAuthenticationTrust controller keeps it: the CA that
//! signs the cluster's client certificates under `client-ca-file`.
//! Upstream's components read it at start for their own HTTPS endpoints
//! (kube-scheduler's and kube-controller-manager's delegated
//! authentication) and log an error every few seconds while it is missing.
//!
//! berth's CA is the cluster's CA, so it is the one published. The
//! `requestheader-*` keys are written by kube-apiserver only when it is
//! given a front-proxy CA (`--requestheader-client-ca-file`); berth has no
//! front-proxy authentication, so it writes none of them, as kube-apiserver
//! without that flag does: publishing them would tell an aggregated server
//! to trust identity headers berth never checks.
//!
//! Like upstream, the bundle already published is kept and ours is added
//! to it (servers of one cluster on a shared etcd share the CA, so the
//! second adds nothing); an unchanged bundle is not written again.

use serde_json::{Value, json};

use super::server::ApiServer;
use crate::auth::User;
use crate::resources::CONFIG_MAPS;

pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";
pub const CLIENT_CA_KEY: &str = "client-ca-file";

const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
const END: &str = "-----END CERTIFICATE-----";
/// A write that lost a race with another server of the cluster is tried
/// again on the object it lost to, this many times.
const ATTEMPTS: usize = 5;

/// The certificates of a PEM bundle, each as its base64 body without
/// whitespace (what two copies of one certificate have in common however
/// they were wrapped); anything outside certificate blocks is ignored.
fn certificates(bundle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = bundle;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let Some(end) = after.find(END) else { break };
        let body: String = after[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if !body.is_empty() {
            out.push(body);
        }
        rest = &after[end + END.len()..];
    }
    out
}

fn to_pem(certificate: &str) -> String {
    let mut pem = String::from(BEGIN);
    pem.push('\n');
    // 64 base64 characters per line, as RFC 7468 writes them; the bytes
    // are ASCII, so chunking bytes is chunking characters.
    for line in certificate.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(END);
    pem.push('\n');
    pem
}

/// The `client-ca-file` bundle after adding `ours` to `published` (the
/// value already in the ConfigMap, if any): the published certificates
/// first, ours after them unless one of them is ours, no duplicates.
/// `None` when that is what is published already (nothing to write).
pub fn combined_client_ca(published: Option<&str>, ours: &str) -> Option<String> {
    let mut combined: Vec<String> = Vec::new();
    for certificate in certificates(published.unwrap_or_default())
        .into_iter()
        .chain(certificates(ours))
    {
        if !combined.contains(&certificate) {
            combined.push(certificate);
        }
    }
    let bundle: String = combined.iter().map(|c| to_pem(c)).collect();
    (published != Some(bundle.as_str())).then_some(bundle)
}

impl ApiServer {
    /// Publishes `ca_pem` (the cluster's CA) as `client-ca-file` in
    /// `kube-system/extension-apiserver-authentication`, creating the
    /// ConfigMap if there is none. A failure is logged, not fatal: the
    /// ConfigMap serves other components' endpoints, not berth's.
    pub async fn publish_authentication_trust(&self, ca_pem: &str) {
        for _ in 0..ATTEMPTS {
            match self.write_authentication_trust(ca_pem).await {
                Ok(Some(action)) => {
                    tracing::info!(
                        namespace = NAMESPACE,
                        name = NAME,
                        action,
                        "published the client CA for upstream's components"
                    );
                    return;
                }
                Ok(None) => return,
                // Another server of the cluster wrote it between our read
                // and our write: read again.
                Err(e) if e.code == 409 => continue,
                Err(e) => {
                    tracing::warn!(namespace = NAMESPACE, name = NAME, error = %e, "the client CA was not published");
                    return;
                }
            }
        }
        tracing::warn!(
            namespace = NAMESPACE,
            name = NAME,
            "the client CA was not published: other writers kept changing the ConfigMap"
        );
    }

    /// One read and, if the bundle changes, one write; which write it was.
    async fn write_authentication_trust(
        &self,
        ca_pem: &str,
    ) -> Result<Option<&'static str>, crate::status::ApiError> {
        let rt = &CONFIG_MAPS;
        match self.registry.find(rt, NAMESPACE, NAME).await? {
            None => {
                let Some(bundle) = combined_client_ca(None, ca_pem) else {
                    return Ok(None);
                };
                let mut object = json!({
                    "metadata": {"name": NAME, "namespace": NAMESPACE},
                    "data": {CLIENT_CA_KEY: bundle},
                });
                self.create_object(rt, NAMESPACE, &mut object, &User::admin(), false)
                    .await?;
                Ok(Some("created"))
            }
            Some((mut object, revision)) => {
                let published = object
                    .pointer(&format!("/data/{CLIENT_CA_KEY}"))
                    .and_then(Value::as_str);
                let Some(bundle) = combined_client_ca(published, ca_pem) else {
                    return Ok(None);
                };
                let Some(map) = object.as_object_mut() else {
                    return Err(crate::status::ApiError::internal(format!(
                        "{NAMESPACE}/{NAME} is stored as something other than an object"
                    )));
                };
                let data = map.entry("data").or_insert_with(|| json!({}));
                if !data.is_object() {
                    *data = json!({});
                }
                data[CLIENT_CA_KEY] = Value::String(bundle);
                let key = rt.key(NAMESPACE, NAME);
                self.registry
                    .write(rt, &key, &object, Some(revision))
                    .await
                    .map_err(|e| crate::registry::store_error(rt, NAME, e))?;
                Ok(Some("updated"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "MIIBAAAA";
    const B: &str = "MIIBBBBB";

    fn pem(body: &str) -> String {
        to_pem(body)
    }

    #[test]
    fn combined_client_ca_keeps_what_is_published_and_adds_ours_once() {
        struct Case {
            name: &'static str,
            published: Option<String>,
            ours: String,
            want: Option<String>,
        }
        let cases = [
            Case {
                name: "nothing published: ours alone",
                published: None,
                ours: pem(A),
                want: Some(pem(A)),
            },
            Case {
                name: "ours already published: nothing to write",
                published: Some(pem(A)),
                ours: pem(A),
                want: None,
            },
            Case {
                name: "another CA published: kept, ours after it",
                published: Some(pem(B)),
                ours: pem(A),
                want: Some(format!("{}{}", pem(B), pem(A))),
            },
            Case {
                name: "ours published wrapped differently: nothing new, rewritten in one form",
                published: Some(format!("{BEGIN}\nMIIB\nAAAA\n{END}\n")),
                ours: pem(A),
                want: Some(pem(A)),
            },
            Case {
                name: "a duplicate in what is published is dropped",
                published: Some(format!("{}{}{}", pem(B), pem(B), pem(A))),
                ours: pem(A),
                want: Some(format!("{}{}", pem(B), pem(A))),
            },
            Case {
                name: "text outside certificate blocks is not a certificate",
                published: Some(format!("garbage\n{}", pem(A))),
                ours: pem(A),
                want: Some(pem(A)),
            },
        ];
        for case in cases {
            assert_eq!(
                combined_client_ca(case.published.as_deref(), &case.ours),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn a_long_certificate_is_wrapped_at_64_characters() {
        let body = "A".repeat(130);
        let pem = to_pem(&body);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines.first(), Some(&BEGIN));
        assert_eq!(lines.last(), Some(&END));
        assert_eq!(
            lines[1..lines.len() - 1]
                .iter()
                .map(|l| l.len())
                .collect::<Vec<_>>(),
            vec![64, 64, 2]
        );
        assert_eq!(certificates(&pem), vec![body]);
    }
}
