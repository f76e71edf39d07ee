//! Taints that expire: berth's node annotation
//!
//! ```text
//! berth.dev/taint-expiry: "dedicated:NoExecute=2026-07-01T12:00:00Z,example.com/maint:NoSchedule=2026-07-01T14:30:00Z"
//! ```
//!
//! Each entry is a taint as `kubectl taint` removes it (`key:Effect`; a
//! `key=value:Effect` is read the same, the value ignored), `=`, and an
//! RFC 3339 time. At that time the node lifecycle controller removes the
//! taint (a node has at most one taint per key and effect) and the entry;
//! a time that passed while the controller was down is acted on when it
//! starts.
//!
//! Why one annotation rather than one per taint
//! (`berth.dev/taint-expiry.<key>.<effect>`): an annotation's name is at
//! most 63 characters of `[A-Za-z0-9._-]` after its one `/`, and taint keys
//! have a `/` of their own (`example.com/maint`) and run to 253 + 63
//! characters, so most keys could not be spelled in a name at all. In the
//! value anything a taint key may hold can be written, `kubectl annotate`
//! can still set it by hand, and `kubectl describe node` shows it.
//!
//! This module owns the syntax ([`parse`], [`format`]), the API server's
//! check of it ([`validate`]) and its admission rule ([`forget_removed`]:
//! a removed taint takes its expiry with it, so a taint added again later
//! does not inherit a stale time), and the removal itself ([`expire`]),
//! which the controller and every tool share.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Taint};

use crate::node::taints;
use crate::taint_spec::parse_taint;
use crate::validation::{ErrorList, FieldError, Path};

/// The node annotation.
pub const ANNOTATION: &str = "berth.dev/taint-expiry";

/// When one taint (by key and effect) expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiry {
    pub key: String,
    pub effect: String,
    pub at: Timestamp,
}

impl Expiry {
    /// Whether `taint` is the taint this entry names.
    pub fn names(&self, taint: &Taint) -> bool {
        taint.key == self.key && taint.effect == self.effect
    }

    fn same_taint(&self, other: &Expiry) -> bool {
        self.key == other.key && self.effect == other.effect
    }
}

/// `2026-07-01T12:00:00Z`: whole seconds, UTC, as Kubernetes writes times.
pub fn format_time(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// One entry that does not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {entry:?}: {problem}")]
pub struct ExpiryError {
    pub entry: String,
    pub problem: String,
}

/// The annotation's value, entry by entry (empty entries, from a trailing
/// comma, are skipped). A taint named twice is an error.
pub fn parse(value: &str) -> Result<Vec<Expiry>, ExpiryError> {
    let mut out: Vec<Expiry> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let problem = |problem: String| ExpiryError {
            entry: entry.to_string(),
            problem,
        };
        let Some((taint, time)) = entry.rsplit_once('=') else {
            return Err(problem(
                "want KEY:EFFECT=TIME (TIME in RFC 3339, e.g. 2026-07-01T12:00:00Z)".into(),
            ));
        };
        let taint = parse_taint(taint.trim()).map_err(|e| problem(e.to_string()))?;
        let at: Timestamp = time
            .trim()
            .parse()
            .map_err(|e| problem(format!("{:?} is not an RFC 3339 time: {e}", time.trim())))?;
        let expiry = Expiry {
            key: taint.key,
            effect: taint.effect,
            at,
        };
        if out.iter().any(|e| e.same_taint(&expiry)) {
            return Err(problem(format!(
                "{}:{} is named twice",
                expiry.key, expiry.effect
            )));
        }
        out.push(expiry);
    }
    Ok(out)
}

/// The annotation's value for `entries`.
pub fn format(entries: &[Expiry]) -> String {
    entries
        .iter()
        .map(|e| format!("{}:{}={}", e.key, e.effect, format_time(e.at)))
        .collect::<Vec<_>>()
        .join(",")
}

fn annotation(node: &Node) -> Option<&str> {
    node.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION))
        .map(String::as_str)
}

/// The node's expiries; an annotation that does not read counts as none
/// (the API server refuses to store one: [`validate`]).
pub fn of_node(node: &Node) -> Vec<Expiry> {
    annotation(node)
        .and_then(|value| parse(value).ok())
        .unwrap_or_default()
}

/// When the node's next taint expires.
pub fn next(node: &Node) -> Option<Timestamp> {
    of_node(node).iter().map(|e| e.at).min()
}

/// The API server's check of the annotation, at
/// `metadata.annotations[berth.dev/taint-expiry]`.
pub fn validate(node: &Node) -> ErrorList {
    let Some(value) = annotation(node) else {
        return ErrorList::new();
    };
    match parse(value) {
        Ok(_) => ErrorList::new(),
        Err(e) => vec![FieldError::invalid(
            &Path::new("metadata").child("annotations").key(ANNOTATION),
            value,
            e.to_string(),
        )],
    }
}

/// Sets the node's annotation to `entries` (removes it when empty).
fn store(node: &mut Node, entries: &[Expiry]) {
    let annotations = node.metadata.annotations.get_or_insert_default();
    if entries.is_empty() {
        annotations.remove(ANNOTATION);
    } else {
        annotations.insert(ANNOTATION.to_string(), format(entries));
    }
    if annotations.is_empty() {
        node.metadata.annotations = None;
    }
}

/// Makes `taint` (by key and effect) expire at `at`, replacing an earlier
/// time for it (`berth taint --for`, a scenario's `for:`). A node whose
/// annotation does not read has it replaced.
pub fn set(node: &mut Node, taint: &Taint, at: Timestamp) {
    let mut entries = of_node(node);
    entries.retain(|e| !e.names(taint));
    entries.push(Expiry {
        key: taint.key.clone(),
        effect: taint.effect.clone(),
        at,
    });
    store(node, &entries);
}

/// Admission on update: an entry whose taint the write removes goes with
/// it. (An entry for a taint not there before stays: a taint may be
/// annotated first and added next.)
pub fn forget_removed(node: &mut Node, old: &Node) {
    let Some(value) = annotation(node) else {
        return;
    };
    let Ok(mut entries) = parse(value) else {
        return;
    };
    let count = entries.len();
    entries.retain(|e| {
        let was = taints(old).iter().any(|t| e.names(t));
        let is = taints(node).iter().any(|t| e.names(t));
        is || !was
    });
    if entries.len() != count {
        store(node, &entries);
    }
}

/// A taint removed because it expired.
#[derive(Debug, Clone, PartialEq)]
pub struct Expired {
    pub taint: Taint,
    pub at: Timestamp,
}

/// Removes from `node` every taint whose time has come, with its entry
/// (entries whose taint is gone are dropped too). Returns the taints
/// removed, and `false` when nothing was due (the node is unchanged).
pub fn expire(node: &mut Node, now: Timestamp) -> (Vec<Expired>, bool) {
    let entries = of_node(node);
    let (due, keep): (Vec<Expiry>, Vec<Expiry>) = entries.into_iter().partition(|e| e.at <= now);
    if due.is_empty() {
        return (Vec::new(), false);
    }
    let mut removed = Vec::new();
    if let Some(list) = node.spec.as_mut().and_then(|s| s.taints.as_mut()) {
        list.retain(|taint| match due.iter().find(|e| e.names(taint)) {
            Some(expiry) => {
                removed.push(Expired {
                    taint: taint.clone(),
                    at: expiry.at,
                });
                false
            }
            None => true,
        });
        if list.is_empty()
            && let Some(spec) = node.spec.as_mut()
        {
            spec.taints = None;
        }
    }
    store(node, &keep);
    (removed, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{make_node, t, taint};
    use proptest::prelude::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn annotated(value: &str, taints: Vec<Taint>) -> Node {
        let mut node = make_node().name("n1").taints(taints).obj();
        node.metadata.annotations = Some([(ANNOTATION.to_string(), value.to_string())].into());
        node
    }

    #[test]
    fn the_annotation_reads_as_kubectl_taint_removals_with_times() {
        struct Case {
            name: &'static str,
            value: &'static str,
            want: Result<Vec<(&'static str, &'static str, &'static str)>, &'static str>,
        }
        let cases = [
            Case {
                name: "one entry",
                value: "dedicated:NoExecute=2026-07-01T12:00:00Z",
                want: Ok(vec![("dedicated", "NoExecute", "2026-07-01T12:00:00Z")]),
            },
            Case {
                name: "a key with a prefix, a value ignored, spaces, an offset",
                value: " example.com/maint=x:NoSchedule = 2026-07-01T14:00:00+02:00 , a:PreferNoSchedule=2026-07-01T00:00:00Z,",
                want: Ok(vec![
                    ("example.com/maint", "NoSchedule", "2026-07-01T12:00:00Z"),
                    ("a", "PreferNoSchedule", "2026-07-01T00:00:00Z"),
                ]),
            },
            Case {
                name: "empty",
                value: "",
                want: Ok(vec![]),
            },
            Case {
                name: "no time",
                value: "dedicated:NoExecute",
                want: Err(
                    r#"entry "dedicated:NoExecute": want KEY:EFFECT=TIME (TIME in RFC 3339, e.g. 2026-07-01T12:00:00Z)"#,
                ),
            },
            Case {
                name: "not a time",
                value: "dedicated:NoExecute=2h",
                want: Err("entry \"dedicated:NoExecute=2h\": \"2h\" is not an RFC 3339 time"),
            },
            Case {
                name: "no effect",
                value: "dedicated=2026-07-01T12:00:00Z",
                want: Err(
                    "entry \"dedicated=2026-07-01T12:00:00Z\": invalid taint spec: dedicated",
                ),
            },
            Case {
                name: "a bad effect",
                value: "dedicated:Sometimes=2026-07-01T12:00:00Z",
                want: Err("invalid taint effect: Sometimes"),
            },
            Case {
                name: "a taint twice",
                value: "a:NoExecute=2026-07-01T12:00:00Z,a:NoExecute=2026-07-02T12:00:00Z",
                want: Err("a:NoExecute is named twice"),
            },
        ];
        for case in cases {
            let got = parse(case.value);
            match (&got, &case.want) {
                (Ok(entries), Ok(want)) => {
                    let want: Vec<Expiry> = want
                        .iter()
                        .map(|(key, effect, time)| Expiry {
                            key: key.to_string(),
                            effect: effect.to_string(),
                            at: at(time),
                        })
                        .collect();
                    assert_eq!(entries, &want, "{}", case.name);
                }
                (Err(e), Err(want)) => {
                    assert!(e.to_string().contains(want), "{}: {e}", case.name)
                }
                _ => panic!("{}: got {got:?}, want {:?}", case.name, case.want),
            }
        }
    }

    #[test]
    fn the_api_server_refuses_an_annotation_that_does_not_read() {
        let errors = validate(&annotated("gpu:NoExecute=tomorrow", vec![]));
        assert_eq!(errors.len(), 1);
        let text = errors[0].to_string();
        assert!(
            text.starts_with("metadata.annotations[berth.dev/taint-expiry]: Invalid value:"),
            "{text}"
        );
        assert!(validate(&annotated("gpu:NoExecute=2026-01-01T00:00:00Z", vec![])).is_empty());
        assert!(validate(&make_node().obj()).is_empty());
    }

    #[test]
    fn expire_removes_due_taints_and_their_entries_only() {
        let value = "a:NoExecute=2026-01-01T00:01:00Z,b:NoSchedule=2026-01-01T00:05:00Z,gone:NoExecute=2026-01-01T00:00:30Z";
        let mut node = annotated(
            value,
            vec![
                taint("a", "1", "NoExecute"),
                taint("a", "1", "NoSchedule"),
                taint("b", "", "NoSchedule"),
            ],
        );
        let (removed, changed) = expire(&mut node.clone(), at("2026-01-01T00:00:59Z"));
        assert_eq!((removed.len(), changed), (0, true), "only the stale entry");
        let (removed, changed) = expire(&mut node, at("2026-01-01T00:01:00Z"));
        assert!(changed);
        assert_eq!(
            removed,
            [Expired {
                taint: taint("a", "1", "NoExecute"),
                at: at("2026-01-01T00:01:00Z")
            }]
        );
        assert_eq!(
            taints(&node),
            [taint("a", "1", "NoSchedule"), taint("b", "", "NoSchedule")]
        );
        assert_eq!(next(&node), Some(at("2026-01-01T00:05:00Z")));
        let (removed, _) = expire(&mut node, at("2026-01-01T01:00:00Z"));
        assert_eq!(removed.len(), 1);
        assert_eq!(
            node.metadata.annotations, None,
            "the last entry takes the annotation"
        );
        assert_eq!(
            expire(&mut node, at("2026-01-02T00:00:00Z")),
            (vec![], false)
        );
    }

    #[test]
    fn a_removed_taint_takes_its_expiry_with_it() {
        let value = "a:NoExecute=2026-01-01T00:01:00Z,later:NoExecute=2026-01-01T00:02:00Z";
        let old = annotated(value, vec![taint("a", "", "NoExecute")]);
        // `a` removed; `later` was never there (annotated first): kept.
        let mut new = annotated(value, vec![]);
        forget_removed(&mut new, &old);
        assert_eq!(
            of_node(&new),
            [Expiry {
                key: "later".into(),
                effect: "NoExecute".into(),
                at: at("2026-01-01T00:02:00Z")
            }]
        );
        // Kept while the taint stays (its value may change).
        let mut kept = annotated(value, vec![taint("a", "other", "NoExecute")]);
        forget_removed(&mut kept, &old);
        assert_eq!(of_node(&kept).len(), 2);
    }

    #[test]
    fn set_replaces_the_time_of_the_same_taint() {
        let mut node = make_node().name("n1").obj();
        set(&mut node, &taint("a", "v", "NoExecute"), t(10));
        set(&mut node, &taint("b", "", "NoSchedule"), t(20));
        set(&mut node, &taint("a", "w", "NoExecute"), t(30));
        let entries = of_node(&node);
        assert_eq!(entries.len(), 2);
        assert_eq!(next(&node), Some(t(20)));
        assert!(entries.iter().any(|e| e.key == "a" && e.at == t(30)));
    }

    proptest! {
        /// Formatting then parsing gives the entries back (whole seconds).
        #[test]
        fn format_then_parse_is_the_identity(
            keys in proptest::collection::btree_set("[a-z]{1,8}(\\.[a-z]{1,5}/[a-z0-9]{1,8})?", 0..5),
            seconds in 0i64..4_000_000_000,
        ) {
            let entries: Vec<Expiry> = keys
                .iter()
                .enumerate()
                .map(|(i, key)| Expiry {
                    key: key.clone(),
                    effect: ["NoSchedule", "PreferNoSchedule", "NoExecute"][i % 3].into(),
                    at: Timestamp::from_second(seconds + i as i64).unwrap_or(Timestamp::UNIX_EPOCH),
                })
                .collect();
            prop_assert_eq!(parse(&format(&entries)), Ok(entries));
        }
    }
}
