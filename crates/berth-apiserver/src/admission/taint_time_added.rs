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
    use berth_core::test_util::taint;
    use k8s_openapi::api::core::v1::NodeSpec;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn at(mut t: Taint, when: &str) -> Taint {
        t.time_added = Some(Time(ts(when)));
        t
    }

    fn node(taints: Vec<Taint>) -> Node {
        Node {
            spec: Some(NodeSpec {
                taints: Some(taints),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    const NOW: &str = "2026-01-01T00:10:00.750Z";
    const NOW_S: &str = "2026-01-01T00:10:00Z";
    const THEN: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn time_added_is_stamped_or_carried_over() {
        let ne = || taint("k", "v", "NoExecute");
        // (name, taints sent, stored taints, taints admitted)
        type Case = (&'static str, Vec<Taint>, Option<Vec<Taint>>, Vec<Taint>);
        let cases: Vec<Case> = vec![
            (
                "create: a NoExecute taint gets now, in whole seconds",
                vec![ne()],
                None,
                vec![at(ne(), NOW_S)],
            ),
            (
                "create: NoSchedule and PreferNoSchedule taints are left alone",
                vec![
                    taint("a", "", "NoSchedule"),
                    taint("b", "", "PreferNoSchedule"),
                ],
                None,
                vec![
                    taint("a", "", "NoSchedule"),
                    taint("b", "", "PreferNoSchedule"),
                ],
            ),
            (
                "create: a timeAdded the client sent is kept",
                vec![at(ne(), THEN)],
                None,
                vec![at(ne(), THEN)],
            ),
            (
                "update: the same taint sent without timeAdded keeps the stored one",
                vec![ne()],
                Some(vec![at(ne(), THEN)]),
                vec![at(ne(), THEN)],
            ),
            (
                "update: a changed value is a new taint",
                vec![taint("k", "w", "NoExecute")],
                Some(vec![at(ne(), THEN)]),
                vec![at(taint("k", "w", "NoExecute"), NOW_S)],
            ),
            (
                "update: a taint new to the node gets now, the others keep theirs",
                vec![ne(), taint("n", "", "NoExecute")],
                Some(vec![at(ne(), THEN)]),
                vec![at(ne(), THEN), at(taint("n", "", "NoExecute"), NOW_S)],
            ),
            (
                "update: a stored taint without timeAdded gets now",
                vec![ne()],
                Some(vec![ne()]),
                vec![at(ne(), NOW_S)],
            ),
            (
                "update: re-adding a removed taint restarts its clock",
                vec![ne()],
                Some(vec![]),
                vec![at(ne(), NOW_S)],
            ),
        ];
        for (name, taints, old, want) in cases {
            let mut n = node(taints);
            let old = old.map(node);
            stamp(&mut n, old.as_ref(), ts(NOW));
            assert_eq!(
                n.spec.and_then(|s| s.taints).unwrap_or_default(),
                want,
                "{name}"
            );
        }
    }
}
