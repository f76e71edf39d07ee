//! What a delete does to the object it deletes, decided on the object
//! alone: upstream's `rest.BeforeDelete` (graceful deletion, a pending one
//! only shortened), then the generic registry store's finalizer handling
//! (`deletionFinalizersForGarbageCollection`, `markAsDeleting`): an object
//! left with finalizers is marked deleting (`deletionTimestamp`,
//! `deletionGracePeriodSeconds: 0`) and stays until they are gone; and the
//! update that takes the last one off deletes it
//! ([`should_delete_during_update`], upstream `ShouldDeleteDuringUpdate`).
//!
//! `api/delete.rs` and `api/update.rs` carry these decisions to the store.

use berth_core::deletion::{DefaultPolicy, DependentsOption, deletion_finalizers};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::objects::{format_time, meta_str, metadata_mut};

/// What a deletion asks, about the object at hand.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The client's grace period (a negative one counts as 1 second, as
    /// upstream's `BeforeDelete` has it).
    pub grace: Option<i64>,
    pub dependents: DependentsOption,
    /// The type's default for the dependents.
    pub default_policy: DefaultPolicy,
    pub now: Timestamp,
}

/// The outcome of a deletion for the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Planned {
    /// Remove it from the store now.
    DeleteNow,
    /// Write the object as changed (marked deleting, finalizers set): it
    /// goes later, when its grace period ends or its finalizers are gone.
    Mark,
    /// A graceful deletion is already under way and this one does not
    /// shorten it: nothing changes (finalizers included).
    AlreadyPending,
}

/// Upstream `BeforeDelete` and the store's finalizer handling on `object`
/// (changed in place when the outcome is [`Planned::Mark`]). `graceful` is
/// the type's `CheckGracefulDelete`: the grace period when the object is
/// deleted gracefully.
pub fn plan(
    object: &mut Value,
    request: Request,
    graceful: impl FnOnce(&Value, Option<i64>) -> Option<i64>,
) -> Planned {
    let requested = request.grace.map(|g| if g < 0 { 1 } else { g });
    let marked_gracefully = match deleting_since(object) {
        Some(since) => match (grace_of(object), requested) {
            // Marked deleting without a grace period (finalizers pending):
            // this deletion proceeds as if it were the first.
            (None | Some(0), _) => false,
            // Only a shorter grace period may be asked for.
            (Some(existing), Some(wanted)) if wanted < existing => {
                let deadline =
                    since - SignedDuration::from_secs(existing) + SignedDuration::from_secs(wanted);
                set_deleting(object, deadline, wanted);
                true
            }
            _ => return Planned::AlreadyPending,
        },
        None => match graceful(object, requested) {
            Some(grace) => {
                bump_generation(object);
                set_deleting(
                    object,
                    request.now + SignedDuration::from_secs(grace),
                    grace,
                );
                true
            }
            None => false,
        },
    };
    let finalizers = finalizers_of(object);
    if let Some(wanted) =
        deletion_finalizers(request.default_policy, &finalizers, request.dependents)
        && let Some(meta) = metadata_mut(object)
    {
        meta.insert("finalizers".into(), json!(wanted));
    }
    let pending_finalizers = !finalizers_of(object).is_empty();
    if marked_gracefully {
        if grace_of(object) == Some(0) && !pending_finalizers {
            return Planned::DeleteNow;
        }
        return Planned::Mark;
    }
    if !pending_finalizers {
        return Planned::DeleteNow;
    }
    mark_as_deleting(object, request.now);
    Planned::Mark
}

/// Upstream `markAsDeleting`: deleting from now (or the earlier deadline
/// already set), with no grace period: only the finalizers hold it.
fn mark_as_deleting(object: &mut Value, now: Timestamp) {
    let since = deleting_since(object);
    if since.is_none() {
        bump_generation(object);
    }
    let at = match since {
        Some(since) if since <= now => since,
        _ => now,
    };
    set_deleting(object, at, 0);
}

/// Upstream `ShouldDeleteDuringUpdate`: an update that leaves no
/// finalizers on an object marked deleting without a grace period
/// (`deletionGracePeriodSeconds` unset or 0) deletes it.
pub fn should_delete_during_update(new: &Value, old: &Value) -> bool {
    finalizers_of(new).is_empty()
        && deleting_since(old).is_some()
        && matches!(grace_of(old), None | Some(0))
}

/// `metadata.finalizers`.
pub fn finalizers_of(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.deletionTimestamp`, when set (and readable).
pub fn deleting_since(object: &Value) -> Option<Timestamp> {
    let at = meta_str(object, "deletionTimestamp");
    (!at.is_empty()).then(|| at.parse().ok()).flatten()
}

fn grace_of(object: &Value) -> Option<i64> {
    object
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
}

fn set_deleting(object: &mut Value, at: Timestamp, grace: i64) {
    if let Some(meta) = metadata_mut(object) {
        meta.insert("deletionTimestamp".into(), json!(format_time(at)));
        meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    }
}

/// A deletion is a change of the object's desired state: its generation
/// moves (when it has one), as upstream's.
fn bump_generation(object: &mut Value) {
    if let Some(meta) = metadata_mut(object)
        && let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation > 0
    {
        meta.insert("generation".into(), json!(generation + 1));
    }
}

#[cfg(test)]
mod tests {
    use berth_core::deletion::Propagation;

    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:01:00Z"
            .parse()
            .unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn request(grace: Option<i64>, propagation: Option<Propagation>) -> Request {
        Request {
            grace,
            dependents: DependentsOption {
                orphan_dependents: None,
                propagation,
            },
            default_policy: DefaultPolicy::DeleteDependents,
            now: now(),
        }
    }

    /// A pod's `CheckGracefulDelete` in short: bound pods go gracefully
    /// (30 s by default), others at once.
    fn pod_grace(object: &Value, requested: Option<i64>) -> Option<i64> {
        let bound = object.pointer("/spec/nodeName").is_some();
        let grace = requested.unwrap_or(30);
        (bound && grace > 0).then_some(grace)
    }

    fn object(meta: Value, bound: bool) -> Value {
        let mut meta = meta;
        meta["name"] = json!("x");
        meta["generation"] = json!(1);
        let spec = if bound {
            json!({"nodeName": "n1"})
        } else {
            json!({})
        };
        json!({"metadata": meta, "spec": spec})
    }

    #[test]
    fn deletions_as_upstream() {
        struct Case {
            name: &'static str,
            meta: Value,
            bound: bool,
            grace: Option<i64>,
            propagation: Option<Propagation>,
            want: Planned,
            /// The object's metadata afterwards (generation, deletion
            /// timestamp, grace, finalizers), when marked.
            want_meta: Option<Value>,
        }
        let cases = [
            Case {
                name: "nothing holds it: deleted now",
                meta: json!({}),
                bound: false,
                grace: None,
                propagation: None,
                want: Planned::DeleteNow,
                want_meta: None,
            },
            Case {
                name: "background: deleted now",
                meta: json!({}),
                bound: false,
                grace: None,
                propagation: Some(Propagation::Background),
                want: Planned::DeleteNow,
                want_meta: None,
            },
            Case {
                name: "orphan: marked with the orphan finalizer, no grace period",
                meta: json!({}),
                bound: false,
                grace: None,
                propagation: Some(Propagation::Orphan),
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 2, "deletionTimestamp": "2026-01-01T00:01:00Z",
                    "deletionGracePeriodSeconds": 0, "finalizers": ["orphan"]}),
                ),
            },
            Case {
                name: "foreground: marked with the foreground finalizer",
                meta: json!({"finalizers": ["example.com/x"]}),
                bound: false,
                grace: None,
                propagation: Some(Propagation::Foreground),
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 2, "deletionTimestamp": "2026-01-01T00:01:00Z",
                    "deletionGracePeriodSeconds": 0,
                    "finalizers": ["example.com/x", "foregroundDeletion"]}),
                ),
            },
            Case {
                name: "another finalizer holds it",
                meta: json!({"finalizers": ["example.com/x"]}),
                bound: false,
                grace: None,
                propagation: None,
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 2, "deletionTimestamp": "2026-01-01T00:01:00Z",
                    "deletionGracePeriodSeconds": 0, "finalizers": ["example.com/x"]}),
                ),
            },
            Case {
                name: "graceful: the deadline is now plus the grace period",
                meta: json!({}),
                bound: true,
                grace: None,
                propagation: None,
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 2, "deletionTimestamp": "2026-01-01T00:01:30Z",
                    "deletionGracePeriodSeconds": 30}),
                ),
            },
            Case {
                name: "graceful and foreground",
                meta: json!({}),
                bound: true,
                grace: Some(10),
                propagation: Some(Propagation::Foreground),
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 2, "deletionTimestamp": "2026-01-01T00:01:10Z",
                    "deletionGracePeriodSeconds": 10, "finalizers": ["foregroundDeletion"]}),
                ),
            },
            Case {
                name: "a negative grace period is one second",
                meta: json!({}),
                bound: true,
                grace: Some(-5),
                propagation: None,
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 2, "deletionTimestamp": "2026-01-01T00:01:01Z",
                    "deletionGracePeriodSeconds": 1}),
                ),
            },
            Case {
                name: "a pending graceful deletion is not renewed",
                meta: json!({"deletionTimestamp": "2026-01-01T00:01:20Z", "deletionGracePeriodSeconds": 30}),
                bound: true,
                grace: None,
                propagation: Some(Propagation::Orphan),
                want: Planned::AlreadyPending,
                want_meta: None,
            },
            Case {
                name: "a pending graceful deletion is not lengthened",
                meta: json!({"deletionTimestamp": "2026-01-01T00:01:20Z", "deletionGracePeriodSeconds": 30}),
                bound: true,
                grace: Some(60),
                propagation: None,
                want: Planned::AlreadyPending,
                want_meta: None,
            },
            Case {
                name: "a pending graceful deletion is shortened",
                meta: json!({"deletionTimestamp": "2026-01-01T00:01:20Z", "deletionGracePeriodSeconds": 30}),
                bound: true,
                grace: Some(5),
                propagation: None,
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 1, "deletionTimestamp": "2026-01-01T00:00:55Z",
                    "deletionGracePeriodSeconds": 5}),
                ),
            },
            Case {
                name: "the node's final delete (grace 0) removes a pod nothing holds",
                meta: json!({"deletionTimestamp": "2026-01-01T00:01:20Z", "deletionGracePeriodSeconds": 30}),
                bound: true,
                grace: Some(0),
                propagation: None,
                want: Planned::DeleteNow,
                want_meta: None,
            },
            Case {
                name: "the node's final delete leaves a pod with finalizers marked with grace 0",
                meta: json!({"deletionTimestamp": "2026-01-01T00:01:20Z", "deletionGracePeriodSeconds": 30,
                    "finalizers": ["foregroundDeletion"]}),
                bound: true,
                grace: Some(0),
                propagation: None,
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 1, "deletionTimestamp": "2026-01-01T00:00:50Z",
                    "deletionGracePeriodSeconds": 0, "finalizers": ["foregroundDeletion"]}),
                ),
            },
            Case {
                name: "marked deleting with finalizers: a new policy replaces the finalizer",
                meta: json!({"deletionTimestamp": "2026-01-01T00:00:10Z", "deletionGracePeriodSeconds": 0,
                    "finalizers": ["orphan"]}),
                bound: false,
                grace: None,
                propagation: Some(Propagation::Foreground),
                want: Planned::Mark,
                want_meta: Some(
                    json!({"generation": 1, "deletionTimestamp": "2026-01-01T00:00:10Z",
                    "deletionGracePeriodSeconds": 0, "finalizers": ["foregroundDeletion"]}),
                ),
            },
            Case {
                name: "marked deleting with finalizers: background takes the orphan finalizer off and deletes",
                meta: json!({"deletionTimestamp": "2026-01-01T00:00:10Z", "deletionGracePeriodSeconds": 0,
                    "finalizers": ["orphan"]}),
                bound: false,
                grace: None,
                propagation: Some(Propagation::Background),
                want: Planned::DeleteNow,
                want_meta: None,
            },
        ];
        for case in cases {
            let mut obj = object(case.meta.clone(), case.bound);
            let before = obj.clone();
            let got = plan(&mut obj, request(case.grace, case.propagation), pod_grace);
            assert_eq!(got, case.want, "{}", case.name);
            match case.want_meta {
                Some(want) => {
                    for field in [
                        "generation",
                        "deletionTimestamp",
                        "deletionGracePeriodSeconds",
                        "finalizers",
                    ] {
                        assert_eq!(
                            obj["metadata"].get(field),
                            want.get(field),
                            "{}: {field}",
                            case.name
                        );
                    }
                }
                None if got == Planned::AlreadyPending => {
                    assert_eq!(obj, before, "{}: unchanged", case.name)
                }
                None => {}
            }
        }
    }

    #[test]
    fn an_update_taking_the_last_finalizer_off_deletes() {
        struct Case {
            name: &'static str,
            old: Value,
            new: Value,
            want: bool,
        }
        let deleting = |grace: Option<i64>, finalizers: &[&str]| {
            let mut meta =
                json!({"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": finalizers});
            if let Some(g) = grace {
                meta["deletionGracePeriodSeconds"] = json!(g);
            }
            json!({"metadata": meta})
        };
        let cases = [
            Case {
                name: "the last finalizer taken off",
                old: deleting(Some(0), &["orphan"]),
                new: deleting(Some(0), &[]),
                want: true,
            },
            Case {
                name: "no grace period recorded counts as none",
                old: deleting(None, &["orphan"]),
                new: deleting(None, &[]),
                want: true,
            },
            Case {
                name: "a finalizer left",
                old: deleting(Some(0), &["orphan", "a.io/b"]),
                new: deleting(Some(0), &["a.io/b"]),
                want: false,
            },
            Case {
                name: "a graceful deletion still running",
                old: deleting(Some(30), &["orphan"]),
                new: deleting(Some(30), &[]),
                want: false,
            },
            Case {
                name: "not being deleted",
                old: json!({"metadata": {"finalizers": ["a.io/b"]}}),
                new: json!({"metadata": {}}),
                want: false,
            },
        ];
        for case in cases {
            assert_eq!(
                should_delete_during_update(&case.new, &case.old),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
