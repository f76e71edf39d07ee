//! `kubectl taint` as a client call, for every berth tool that taints a
//! node (`berth taint`, a scenario's `taint` steps): the command's rules
//! (add, remove, `--overwrite`) are berth-core's [`taint_spec`], a taint
//! may be made to expire ([`taint_expiry`]: both written in one update),
//! and the node is written with a compare-and-swap on the revision read,
//! read again on a conflict. The server's `Warning` headers (what the
//! taint will do) come back with the outcome, and `dry_run` makes the call
//! a preview.
//!
//! [`taint_spec`]: berth_core::taint_spec
//! [`taint_expiry`]: berth_core::taint_expiry

use berth_core::taint_expiry;
use berth_core::taint_spec::{TaintSpec, TaintSpecError, apply_taint_spec};
use http_body_util::BodyExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};
use kube::core::{Request, Status};

/// What to do to a node's taints.
#[derive(Debug, Clone, Copy)]
pub struct TaintCommand<'a> {
    pub spec: &'a TaintSpec,
    /// `--overwrite`: an added taint may replace one of the same key and
    /// effect.
    pub overwrite: bool,
    /// The added taints expire then.
    pub expires_at: Option<Timestamp>,
    /// `dryRun=All`: everything but storing it.
    pub dry_run: bool,
}

/// What a taint command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tainted {
    /// kubectl's word: `tainted`, `untainted` or `modified`.
    pub operation: &'static str,
    /// The server's `Warning` headers, as kubectl prints them.
    pub warnings: Vec<String>,
}

/// Why a taint command failed.
#[derive(Debug, thiserror::Error)]
pub enum TaintError {
    /// The command does not apply to the node (kubectl's message).
    #[error(transparent)]
    Spec(#[from] TaintSpecError),
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("node {0}: kept conflicting with other writers")]
    Conflicts(String),
}

/// Conflicts retried before giving up.
const ATTEMPTS: usize = 10;

/// Applies `command` to node `name`.
pub async fn taint_node(
    client: &kube::Client,
    name: &str,
    command: TaintCommand<'_>,
) -> Result<Tainted, TaintError> {
    let nodes: Api<Node> = Api::all(client.clone());
    for _ in 0..ATTEMPTS {
        let mut node = nodes.get(name).await?;
        let current = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        let (taints, operation) = apply_taint_spec(&current, command.spec, command.overwrite)
            .map_err(|e| e.with_node_name(name))?;
        node.spec.get_or_insert_default().taints = (!taints.is_empty()).then_some(taints);
        if let Some(at) = command.expires_at {
            for taint in &command.spec.to_add {
                taint_expiry::set(&mut node, taint, at);
            }
        }
        match replace(client, name, &node, command.dry_run).await {
            Ok(warnings) => {
                return Ok(Tainted {
                    operation,
                    warnings,
                });
            }
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) => return Err(err.into()),
        }
    }
    Err(TaintError::Conflicts(name.to_string()))
}

/// PUTs the node and returns the response's warnings (kube's typed calls
/// do not surface them).
async fn replace(
    client: &kube::Client,
    name: &str,
    node: &Node,
    dry_run: bool,
) -> Result<Vec<String>, kube::Error> {
    let params = PostParams {
        dry_run,
        ..PostParams::default()
    };
    let body = serde_json::to_vec(node).map_err(kube::Error::SerdeError)?;
    let request = Request::new("/api/v1/nodes")
        .replace(name, &params, body)
        .map_err(kube::Error::BuildRequest)?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| warning_text(v.as_bytes()))
        .collect();
    let code = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    if code.is_client_error() || code.is_server_error() {
        let status = serde_json::from_slice::<Status>(&bytes).unwrap_or_else(|_| {
            Status::failure(&String::from_utf8_lossy(&bytes), "").with_code(code.as_u16())
        });
        return Err(kube::Error::Api(Box::new(status)));
    }
    Ok(warnings)
}

/// The text of a `299 - "text"` warning header (RFC 7234, as
/// kube-apiserver writes it), unquoted.
pub fn warning_text(header: &[u8]) -> Option<String> {
    let header = String::from_utf8_lossy(header);
    let quoted = header.splitn(3, ' ').nth(2)?;
    let inner = quoted.strip_prefix('"')?;
    let mut text = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.push(chars.next()?),
            '"' => return Some(text),
            c => text.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_are_unquoted_as_kubectl_reads_them() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"299 - "plain""#, Some("plain")),
            (
                r#"299 - "a \"quoted\" word and a \\""#,
                Some(r#"a "quoted" word and a \"#),
            ),
            (
                r#"299 - "date follows" "Tue, 15 Nov 1994""#,
                Some("date follows"),
            ),
            ("299 - unquoted", None),
            (r#"299 - "unterminated"#, None),
        ];
        for (header, want) in cases {
            assert_eq!(
                warning_text(header.as_bytes()).as_deref(),
                *want,
                "{header}"
            );
        }
    }
}
