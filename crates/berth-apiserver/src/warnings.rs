//! `Warning` response headers, as kube-apiserver sends them and kubectl
//! prints them (`Warning: unknown field "spec.foo"`).
//!
//! Any code serving a request calls [`add`]; [`collect`] wraps the serving
//! of one request and writes what was added as RFC 7234 headers
//! (`299 - "text"`), with upstream's recorder rules
//! (`k8s.io/apiserver/pkg/endpoints/filters/warning.go`): each text once,
//! in the order added, and past 4,096 characters in all every warning cut
//! to 256. Outside [`collect`] (a pure function under test) warnings are
//! dropped.

use std::cell::RefCell;
use std::collections::HashSet;
use std::future::Future;

use axum::http::HeaderValue;
use axum::response::Response;

/// Upstream's `truncateAtTotalRunes` and `truncateItemRunes`.
const TRUNCATE_AT_TOTAL_CHARS: usize = 4 * 1024;
const TRUNCATE_ITEM_CHARS: usize = 256;

tokio::task_local! {
    static RECORDER: RefCell<Recorder>;
}

/// The warnings of one request.
#[derive(Debug, Default)]
struct Recorder {
    seen: HashSet<String>,
    ordered: Vec<String>,
}

/// Records a warning for the request being served (upstream's
/// `warning.AddWarning(ctx, "", text)`).
pub fn add(text: impl Into<String>) {
    let text = text.into();
    if text.is_empty() {
        return;
    }
    let _ = RECORDER.try_with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        if recorder.seen.insert(text.clone()) {
            recorder.ordered.push(text);
        }
    });
}

/// Serves a request with a recorder in scope, then writes its warnings
/// onto the response.
pub async fn collect(serve: impl Future<Output = Response>) -> Response {
    RECORDER
        .scope(RefCell::new(Recorder::default()), async {
            let mut response = serve.await;
            let warnings = RECORDER.with(|r| std::mem::take(&mut r.borrow_mut().ordered));
            for header in headers(&warnings) {
                response.headers_mut().append("warning", header);
            }
            response
        })
        .await
}

/// The header values for `warnings`: all of them whole while they fit in
/// upstream's 4,096 characters, else each cut to 256 characters.
fn headers(warnings: &[String]) -> Vec<HeaderValue> {
    let total: usize = warnings.iter().map(|w| w.chars().count()).sum();
    let truncate = total > TRUNCATE_AT_TOTAL_CHARS;
    let mut written = 0;
    let mut out = Vec::new();
    for warning in warnings {
        if truncate && written >= TRUNCATE_AT_TOTAL_CHARS {
            break;
        }
        let text: String = if truncate {
            warning.chars().take(TRUNCATE_ITEM_CHARS).collect()
        } else {
            warning.clone()
        };
        if let Some(value) = header_value(&text) {
            written += text.chars().count();
            out.push(value);
        }
    }
    out
}

/// `net.NewWarningHeader(299, "-", text)`: the text quoted with `"` and
/// `\` escaped; a text with a control character is not sent.
fn header_value(text: &str) -> Option<HeaderValue> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut quoted = String::with_capacity(text.len() + 8);
    quoted.push_str("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    // Non-ASCII text goes out as its UTF-8 bytes (obs-text), as Go's
    // net/http writes it.
    HeaderValue::from_bytes(quoted.as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(add_warnings: Vec<String>) -> Vec<String> {
        let runtime = tokio::runtime::Builder::new_current_thread().build();
        let Ok(runtime) = runtime else {
            return Vec::new();
        };
        let response = runtime.block_on(collect(async move {
            for w in add_warnings {
                add(w);
            }
            Response::new(axum::body::Body::empty())
        }));
        response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    }

    #[test]
    fn warnings_are_sent_once_each_quoted_as_upstream() {
        struct Case {
            name: &'static str,
            added: Vec<String>,
            want: Vec<String>,
        }
        let long = "x".repeat(3000);
        let cases = [
            Case {
                name: "none",
                added: vec![],
                want: vec![],
            },
            Case {
                name: "quotes and backslashes escaped, duplicates dropped",
                added: vec![
                    "unknown field \"spec.foo\"".into(),
                    "a\\b".into(),
                    "unknown field \"spec.foo\"".into(),
                    String::new(),
                ],
                want: vec![
                    r#"299 - "unknown field \"spec.foo\"""#.into(),
                    r#"299 - "a\\b""#.into(),
                ],
            },
            Case {
                name: "control characters are not sent",
                added: vec!["a\nb".into(), "ok".into()],
                want: vec![r#"299 - "ok""#.into()],
            },
            Case {
                name: "non-ascii is kept",
                added: vec!["ünïcode".into()],
                want: vec!["299 - \"ünïcode\"".into()],
            },
            Case {
                name: "past 4096 characters every warning is cut to 256",
                added: vec![long.clone(), format!("y{long}")],
                want: vec![
                    format!("299 - \"{}\"", "x".repeat(256)),
                    format!("299 - \"y{}\"", "x".repeat(255)),
                ],
            },
        ];
        for case in cases {
            assert_eq!(sent(case.added), case.want, "{}", case.name);
        }
    }

    #[test]
    fn outside_a_request_warnings_are_dropped() {
        add("nobody listens");
    }
}
