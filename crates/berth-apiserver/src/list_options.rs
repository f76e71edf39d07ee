//! The list and watch query parameters that choose what state is read, as
//! upstream checks and reads them: `resourceVersion`, `resourceVersionMatch`,
//! `continue` and `sendInitialEvents` (apimachinery's `ValidateListOptions`
//! and `SetListOptionsDefaults`, apiserver's `storage.ValidateListOptions`),
//! and the `continue` token itself (`storage.EncodeContinue` /
//! `DecodeContinue`).

use base64::Engine;
use berth_core::validation::{ErrorList, FieldError, Path};
use berth_store::{Continue, Revision};
use serde::{Deserialize, Serialize};

use crate::status::ApiError;

/// The query parameters, as sent (unset and empty are the same, as in Go).
#[derive(Debug, Clone, Copy, Default)]
pub struct ListParams<'a> {
    pub watch: bool,
    pub resource_version: Option<&'a str>,
    pub resource_version_match: Option<&'a str>,
    pub continue_token: Option<&'a str>,
    pub send_initial_events: Option<&'a str>,
}

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Unset: the legacy rules (a paginated list with a resourceVersion reads at exactly it).
    Legacy,
    NotOlderThan,
    Exact,
}

impl ListParams<'_> {
    /// `ValidateListOptions` (with the WatchList defaults, on as in 1.37):
    /// upstream's 422 on `ListOptions.meta.k8s.io`, and 400 for a
    /// `sendInitialEvents` that is not a boolean.
    pub fn validate(&self) -> Result<Match, ApiError> {
        let send_initial_events = match self.send_initial_events {
            None => None,
            Some(v) => Some(parse_bool(v).ok_or_else(|| {
                ApiError::bad_request(format!("strconv.ParseBool: parsing {v:?}: invalid syntax"))
            })?),
        };
        let mut matching = self.resource_version_match;
        let mut send_initial_events = send_initial_events;
        // SetListOptionsDefaults: a watch from "" or "0" streams the
        // initial state, as a watch from those always did.
        if self.watch
            && send_initial_events.is_none()
            && matching.is_none()
            && matches!(self.resource_version, None | Some("0"))
        {
            send_initial_events = Some(true);
            matching = Some("NotOlderThan");
        }
        let path = Path::new("resourceVersionMatch");
        let mut errors = ErrorList::new();
        if self.watch {
            if send_initial_events.is_some() && matching != Some("NotOlderThan") {
                errors.push(FieldError::forbidden(
                    &path,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if let Some(m) = matching {
                if send_initial_events.is_none() {
                    errors.push(FieldError::forbidden(
                        &path,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    ));
                }
                if m != "NotOlderThan" {
                    errors.push(FieldError::not_supported(&path, m, &["NotOlderThan"]));
                }
                if self.continue_token.is_some() {
                    errors.push(FieldError::forbidden(
                        &path,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
        } else {
            if let Some(m) = matching {
                if self.resource_version.is_none() {
                    errors.push(FieldError::forbidden(
                        &path,
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if self.continue_token.is_some() {
                    errors.push(FieldError::forbidden(
                        &path,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if m != "Exact" && m != "NotOlderThan" {
                    errors.push(FieldError::not_supported(
                        &path,
                        m,
                        &["Exact", "NotOlderThan", ""],
                    ));
                }
                if m == "Exact" && self.resource_version == Some("0") {
                    errors.push(FieldError::forbidden(
                        &path,
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            if send_initial_events.is_some() {
                errors.push(FieldError::forbidden(
                    &Path::new("sendInitialEvents"),
                    "sendInitialEvents is forbidden for list",
                ));
            }
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", &errors));
        }
        Ok(match matching {
            Some("Exact") => Match::Exact,
            Some(_) => Match::NotOlderThan,
            None => Match::Legacy,
        })
    }

    /// Where a paginated list reads (storage's `ValidateListOptions`): a
    /// continuation (its token decoded against `prefix`), or the revision
    /// the list is pinned to (`None`: the latest).
    pub fn paginated_start(
        &self,
        matching: Match,
        limit: usize,
        prefix: &str,
    ) -> Result<(Option<Continue>, Option<Revision>), ApiError> {
        if let Some(token) = self.continue_token {
            let next = decode_continue(token, prefix)?;
            if !matches!(self.resource_version, None | Some("0")) {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            return Ok((Some(next), None));
        }
        let Some(rv) = self.resource_version else {
            return Ok((None, None));
        };
        let rv = parse_resource_version(rv)?;
        let exact = match matching {
            Match::Exact => true,
            Match::NotOlderThan => false,
            Match::Legacy => limit > 0 && rv > 0,
        };
        Ok((None, exact.then_some(rv)))
    }
}

/// A `resourceVersion` as a revision, with upstream's 400.
pub fn parse_resource_version(rv: &str) -> Result<Revision, ApiError> {
    rv.parse::<u64>()
        .ok()
        .and_then(|v| Revision::try_from(v).ok())
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {rv}")))
}

/// Go's `strconv.ParseBool`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The token's JSON (upstream's `continueToken`, a public API).
#[derive(Debug, Default, Serialize, Deserialize)]
struct ContinueToken {
    #[serde(rename = "v", default)]
    api_version: String,
    #[serde(rename = "rv", default)]
    resource_version: i64,
    #[serde(rename = "start", default)]
    start_key: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// The `continue` token of the page after `next`, in a list of `prefix`:
/// the start key relative to the prefix, so a token can name nothing
/// outside the list it came from.
pub fn encode_continue(next: &Continue, prefix: &str) -> String {
    let token = ContinueToken {
        api_version: TOKEN_VERSION.into(),
        resource_version: next.revision,
        start_key: next
            .start_key
            .strip_prefix(prefix)
            .unwrap_or(&next.start_key)
            .to_string(),
    };
    let json = serde_json::to_vec(&token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

/// Upstream's `DecodeContinue` for a list of `prefix`, with the 400
/// `invalid continue token: ...` its storage answers. A start key that
/// `path.Clean` would change (`..`, `//`, `.`) is refused, so the key the
/// list resumes from is always under `prefix`.
pub fn decode_continue(token: &str, prefix: &str) -> Result<Continue, ApiError> {
    let invalid = |why: String| ApiError::bad_request(format!("invalid continue token: {why}"));
    const NOT_VALID: &str = "continue key is not valid";
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|e| invalid(format!("{NOT_VALID}: {e}")))?;
    let token: ContinueToken =
        serde_json::from_slice(&bytes).map_err(|e| invalid(format!("{NOT_VALID}: {e}")))?;
    if token.api_version != TOKEN_VERSION {
        return Err(invalid(format!(
            "{NOT_VALID}: server does not recognize this encoded version {}",
            token.api_version
        )));
    }
    if token.resource_version == 0 {
        return Err(invalid(format!(
            "{NOT_VALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )));
    }
    if token.start_key.is_empty() {
        return Err(invalid(format!(
            "{NOT_VALID}: encoded start key empty (version meta.k8s.io/v1)"
        )));
    }
    let rooted = if token.start_key.starts_with('/') {
        token.start_key.clone()
    } else {
        format!("/{}", token.start_key)
    };
    if !is_clean_rooted_path(&rooted) {
        return Err(invalid(format!("{NOT_VALID}: {}", token.start_key)));
    }
    Ok(Continue {
        revision: token.resource_version,
        start_key: format!("{prefix}{}", &rooted[1..]),
    })
}

/// Whether Go's `path.Clean` leaves a rooted path as it is: no empty, `.`
/// or `..` element, no trailing slash (but `/` itself).
fn is_clean_rooted_path(path: &str) -> bool {
    path == "/"
        || path[1..]
            .split('/')
            .all(|element| !matches!(element, "" | "." | ".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(json: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn continue_tokens_round_trip_relative_to_the_prefix() {
        let prefix = "/registry/pods/default/";
        let next = Continue {
            revision: 42,
            start_key: format!("{prefix}web\0"),
        };
        let encoded = encode_continue(&next, prefix);
        assert_eq!(decode_continue(&encoded, prefix), Ok(next));
        // The same token resumes at the same name in another list.
        let other = decode_continue(&encoded, "/registry/pods/kube-system/").map(|c| c.start_key);
        assert_eq!(other, Ok("/registry/pods/kube-system/web\0".to_string()));
    }

    /// Upstream's `TestDecodeContinue` cases and their messages.
    #[test]
    fn bad_continue_tokens_are_400s_with_upstreams_messages() {
        struct Case {
            name: &'static str,
            token: String,
            want: Result<(&'static str, i64), &'static str>,
        }
        let prefix = "/test/";
        let cases = [
            Case {
                name: "valid",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"key"}"#),
                want: Ok(("/test/key", 1)),
            },
            Case {
                name: "root path",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"/"}"#),
                want: Ok(("/test/", 1)),
            },
            Case {
                name: "negative rv reads the latest",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"key"}"#),
                want: Ok(("/test/key", -1)),
            },
            Case {
                name: "traversal",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#),
                want: Err("invalid continue token: continue key is not valid: ../secrets/x"),
            },
            Case {
                name: "double slash",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"a//b"}"#),
                want: Err("invalid continue token: continue key is not valid: a//b"),
            },
            Case {
                name: "dot",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"./a"}"#),
                want: Err("invalid continue token: continue key is not valid: ./a"),
            },
            Case {
                name: "zero rv",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"key"}"#),
                want: Err(
                    "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
                ),
            },
            Case {
                name: "empty start",
                token: token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#),
                want: Err(
                    "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
                ),
            },
            Case {
                name: "unknown version",
                token: token(r#"{"v":"other","rv":1,"start":"key"}"#),
                want: Err(
                    "invalid continue token: continue key is not valid: server does not recognize this encoded version other",
                ),
            },
            Case {
                name: "not base64",
                token: "%%%".into(),
                want: Err("invalid continue token: continue key is not valid: "),
            },
            Case {
                name: "not json",
                token: token("[1]"),
                want: Err("invalid continue token: continue key is not valid: "),
            },
        ];
        for case in cases {
            let got = decode_continue(&case.token, prefix);
            match (got, case.want) {
                (Ok(c), Ok((key, rv))) => {
                    assert_eq!(
                        (c.start_key.as_str(), c.revision),
                        (key, rv),
                        "{}",
                        case.name
                    );
                }
                (Err(e), Err(want)) => {
                    assert_eq!(e.code, 400, "{}", case.name);
                    assert!(e.message.starts_with(want), "{}: {}", case.name, e.message);
                }
                (got, want) => panic!("{}: {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn list_options_are_validated_as_upstream() {
        struct Case {
            name: &'static str,
            params: ListParams<'static>,
            want: Result<Match, &'static str>,
        }
        let list = ListParams::default();
        let watch = ListParams {
            watch: true,
            ..ListParams::default()
        };
        let cases = [
            Case {
                name: "plain list",
                params: list,
                want: Ok(Match::Legacy),
            },
            Case {
                name: "bogus match",
                params: ListParams {
                    resource_version: Some("5"),
                    resource_version_match: Some("bogus"),
                    ..list
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
                ),
            },
            Case {
                name: "match without rv",
                params: ListParams {
                    resource_version_match: Some("NotOlderThan"),
                    ..list
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                ),
            },
            Case {
                name: "match with continue",
                params: ListParams {
                    resource_version: Some("5"),
                    resource_version_match: Some("Exact"),
                    continue_token: Some("x"),
                    ..list
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
                ),
            },
            Case {
                name: "exact 0",
                params: ListParams {
                    resource_version: Some("0"),
                    resource_version_match: Some("Exact"),
                    ..list
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ),
            },
            Case {
                name: "exact",
                params: ListParams {
                    resource_version: Some("5"),
                    resource_version_match: Some("Exact"),
                    ..list
                },
                want: Ok(Match::Exact),
            },
            Case {
                name: "not older than",
                params: ListParams {
                    resource_version: Some("0"),
                    resource_version_match: Some("NotOlderThan"),
                    ..list
                },
                want: Ok(Match::NotOlderThan),
            },
            Case {
                name: "initial events on a list",
                params: ListParams {
                    send_initial_events: Some("true"),
                    ..list
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
                ),
            },
            Case {
                name: "legacy watch",
                params: watch,
                want: Ok(Match::NotOlderThan),
            },
            Case {
                name: "watch from a revision",
                params: ListParams {
                    resource_version: Some("7"),
                    ..watch
                },
                want: Ok(Match::Legacy),
            },
            Case {
                name: "streaming watch",
                params: ListParams {
                    send_initial_events: Some("true"),
                    resource_version_match: Some("NotOlderThan"),
                    ..watch
                },
                want: Ok(Match::NotOlderThan),
            },
            Case {
                name: "initial events without match",
                params: ListParams {
                    resource_version: Some("7"),
                    send_initial_events: Some("false"),
                    ..watch
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ),
            },
            Case {
                name: "watch with exact",
                params: ListParams {
                    resource_version: Some("7"),
                    resource_version_match: Some("Exact"),
                    ..watch
                },
                want: Err(
                    "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]",
                ),
            },
            Case {
                name: "bad boolean",
                params: ListParams {
                    send_initial_events: Some("yes"),
                    ..watch
                },
                want: Err("strconv.ParseBool: parsing \"yes\": invalid syntax"),
            },
        ];
        for case in cases {
            let got = case.params.validate().map_err(|e| e.message);
            assert_eq!(got, case.want.map_err(String::from), "{}", case.name);
        }
    }
}
