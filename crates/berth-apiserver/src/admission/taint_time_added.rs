//! `timeAdded` on NoExecute taints: berth's rule.
//!
//! Every NoExecute taint of a node being created or updated that lacks a
//! `timeAdded` gets one: the time the same taint (same key, value and
//! effect) had in the stored node if it was there already, else `now`.
//!
//! Why: taint-based eviction counts `tolerationSeconds` from when the
//! taint was added. Clients (`kubectl taint`, the kubelet's status
//! updates, a `kubectl apply`) send the whole taint list, often without
//! the timestamps; stamping `now` on every update would restart every
//! pod's eviction clock on each write, and keeping no timestamp would
//! leave the eviction controller guessing. A taint whose value changed is
//! a new taint and gets `now`. A `timeAdded` the client sent is kept.
//!
//! `now` comes from the caller's clock, truncated to whole seconds because
//! that is all the API stores (`metav1.Time` is RFC 3339 with seconds), so
//! the value admitted equals the value read back.

use berth_core::toleration::EFFECT_NO_EXECUTE;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn same_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key
        && a.effect == b.effect
        && a.value.as_deref().unwrap_or("") == b.value.as_deref().unwrap_or("")
}

/// `now` without its sub-second part.
pub fn whole_seconds(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Stamps `timeAdded` on the node's NoExecute taints that lack one.
pub fn stamp(node: &mut Node, old: Option<&Node>, now: Timestamp) {
    let old_taints = old
        .and_then(|n| n.spec.as_ref())
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    let Some(taints) = node.spec.as_mut().and_then(|s| s.taints.as_mut()) else {
        return;
    };
    for taint in taints
        .iter_mut()
        .filter(|t| t.effect == EFFECT_NO_EXECUTE && t.time_added.is_none())
    {
        let previous = old_taints
            .iter()
            .find(|o| same_taint(o, taint))
            .and_then(|o| o.time_added.clone());
        taint.time_added = Some(previous.unwrap_or(Time(whole_seconds(now))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_node, taint};

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn at(mut t: Taint, when: &str) -> Taint {
        t.time_added = Some(Time(ts(when)));
        t
    }

    const NOW: &str = "2026-01-01T00:10:00.750Z";
    const NOW_S: &str = "2026-01-01T00:10:00Z";
    const THEN: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn time_added_is_stamped_or_carried_over() {
        let ne = || taint("k", "v", "NoExecute");
        struct Case {
            name: &'static str,
            /// The taints the request sends.
            sent: Vec<Taint>,
            /// The stored node's taints (`None`: a create).
            stored: Option<Vec<Taint>>,
            /// The taints admission lets through.
            want: Vec<Taint>,
        }
        let cases = [
            Case {
                name: "create: a NoExecute taint gets now, in whole seconds",
                sent: vec![ne()],
                stored: None,
                want: vec![at(ne(), NOW_S)],
            },
            Case {
                name: "create: NoSchedule and PreferNoSchedule taints are left alone",
                sent: vec![
                    taint("a", "", "NoSchedule"),
                    taint("b", "", "PreferNoSchedule"),
                ],
                stored: None,
                want: vec![
                    taint("a", "", "NoSchedule"),
                    taint("b", "", "PreferNoSchedule"),
                ],
            },
            Case {
                name: "create: a timeAdded the client sent is kept",
                sent: vec![at(ne(), THEN)],
                stored: None,
                want: vec![at(ne(), THEN)],
            },
            Case {
                name: "update: the same taint sent without timeAdded keeps the stored one",
                sent: vec![ne()],
                stored: Some(vec![at(ne(), THEN)]),
                want: vec![at(ne(), THEN)],
            },
            Case {
                name: "update: a changed value is a new taint",
                sent: vec![taint("k", "w", "NoExecute")],
                stored: Some(vec![at(ne(), THEN)]),
                want: vec![at(taint("k", "w", "NoExecute"), NOW_S)],
            },
            Case {
                name: "update: a taint new to the node gets now, the others keep theirs",
                sent: vec![ne(), taint("n", "", "NoExecute")],
                stored: Some(vec![at(ne(), THEN)]),
                want: vec![at(ne(), THEN), at(taint("n", "", "NoExecute"), NOW_S)],
            },
            Case {
                name: "update: a stored taint without timeAdded gets now",
                sent: vec![ne()],
                stored: Some(vec![ne()]),
                want: vec![at(ne(), NOW_S)],
            },
            Case {
                name: "update: re-adding a removed taint restarts its clock",
                sent: vec![ne()],
                stored: Some(vec![]),
                want: vec![at(ne(), NOW_S)],
            },
        ];
        for case in cases {
            let mut n = make_node().taints(case.sent).obj();
            let old = case.stored.map(|taints| make_node().taints(taints).obj());
            stamp(&mut n, old.as_ref(), ts(NOW));
            assert_eq!(
                n.spec.and_then(|s| s.taints).unwrap_or_default(),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
