//! Toleration list helpers the admission plugins share: upstream's
//! `AddOrUpdateTolerationInPodSpec` (`pkg/apis/core/helper`) and
//! `pkg/util/tolerations` (`MergeTolerations`, `VerifyAgainstWhitelist`,
//! `IsConflict`, `isSuperset`).
//!
//! Two ways of adding a toleration exist upstream and they differ on
//! purpose: [`add_or_update_toleration`] appends unless an identical
//! toleration is present (so a wildcard toleration does not stop it), while
//! [`merge_tolerations`] drops every toleration another one already covers.
//! Each plugin uses the one its upstream counterpart uses.

use std::collections::HashMap;

use berth_core::toleration::{EFFECT_NO_EXECUTE, OP_EQUAL, OP_EXISTS};
use k8s_openapi::api::core::v1::Toleration;

fn s(o: &Option<String>) -> &str {
    o.as_deref().unwrap_or("")
}

/// Field-by-field equality with upstream's internal-type view: an unset
/// string is the empty string (the Go internal type cannot tell them apart,
/// and `Semantic.DeepEqual` compares those types).
pub(crate) fn tolerations_equal(a: &Toleration, b: &Toleration) -> bool {
    s(&a.key) == s(&b.key)
        && s(&a.operator) == s(&b.operator)
        && s(&a.value) == s(&b.value)
        && s(&a.effect) == s(&b.effect)
        && a.toleration_seconds == b.toleration_seconds
}

/// Upstream `AddOrUpdateTolerationInPodSpec`, berth-core's one port.
pub use berth_core::toleration::add_or_update_toleration;

/// Upstream `isSuperset`: whether `ss` tolerates every taint `t` tolerates,
/// for at least as long.
pub fn is_superset(ss: &Toleration, t: &Toleration) -> bool {
    if tolerations_equal(ss, t) {
        return true;
    }
    // An empty key with Exists matches all keys and values.
    if s(&t.key) != s(&ss.key) && (!s(&ss.key).is_empty() || s(&ss.operator) != OP_EXISTS) {
        return false;
    }
    // An empty effect matches all effects.
    if s(&t.effect) != s(&ss.effect) && !s(&ss.effect).is_empty() {
        return false;
    }
    if s(&ss.effect) == EFFECT_NO_EXECUTE
        && let Some(ss_seconds) = ss.toleration_seconds
    {
        match t.toleration_seconds {
            Some(t_seconds) if t_seconds <= ss_seconds => {}
            _ => return false,
        }
    }
    match s(&ss.operator) {
        // An empty operator means Equal.
        OP_EQUAL | "" => s(&t.operator) != OP_EXISTS && s(&t.value) == s(&ss.value),
        OP_EXISTS => true,
        // Upstream logs unknown operators (Lt/Gt included) and answers no:
        // only an identical toleration, handled above, covers them.
        _ => false,
    }
}

/// Upstream `MergeTolerations`: `first` then `second`, keeping each
/// toleration only if no other one in the result (or later in the input)
/// is a strict superset of it; of two identical tolerations the first wins.
pub fn merge_tolerations(first: &[Toleration], second: &[Toleration]) -> Vec<Toleration> {
    let all: Vec<&Toleration> = first.iter().chain(second).collect();
    let mut merged: Vec<Toleration> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        if merged.iter().any(|m| is_superset(m, t)) {
            continue;
        }
        let covered_later = all[i + 1..]
            .iter()
            .any(|later| !tolerations_equal(t, later) && is_superset(later, t));
        if covered_later {
            continue;
        }
        merged.push((*t).clone());
    }
    merged
}

/// Upstream `VerifyAgainstWhitelist`: every toleration is covered by some
/// whitelist entry. An empty whitelist (or no tolerations) allows all.
pub fn verify_against_whitelist(tolerations: &[Toleration], whitelist: &[Toleration]) -> bool {
    if whitelist.is_empty() || tolerations.is_empty() {
        return true;
    }
    tolerations
        .iter()
        .all(|t| whitelist.iter().any(|w| is_superset(w, t)))
}

/// Upstream `IsConflict`: some key/effect pair appears in both lists with
/// different operator, value or seconds. As upstream, the last toleration
/// for a key/effect pair in each list is the one compared.
pub fn is_conflict(first: &[Toleration], second: &[Toleration]) -> bool {
    fn by_key(list: &[Toleration]) -> HashMap<(&str, &str), &Toleration> {
        list.iter()
            .map(|t| ((s(&t.key), s(&t.effect)), t))
            .collect()
    }
    let second = by_key(second);
    by_key(first)
        .into_iter()
        .any(|(k, a)| second.get(&k).is_some_and(|b| !tolerations_equal(a, b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{tol, tol_secs};

    /// Upstream's named tolerations (`tolerations_test.go`).
    fn named(name: &str) -> Toleration {
        match name {
            "all" => tol("", "Exists", "", ""),
            "all-nosched" => tol("", "Exists", "", "NoSchedule"),
            "all-noexec" => tol("", "Exists", "", "NoExecute"),
            "foo" => tol("foo", "Exists", "", ""),
            "foo-bar" => tol("foo", "Equal", "bar", ""),
            "foo-nosched" => tol("foo", "Exists", "", "NoSchedule"),
            "foo-bar-nosched" => tol("foo", "Equal", "bar", "NoSchedule"),
            "foo-baz-nosched" => tol("foo", "Equal", "baz", "NoSchedule"),
            "faz-nosched" => tol("faz", "Exists", "", "NoSchedule"),
            "faz-baz-nosched" => tol("faz", "Equal", "baz", "NoSchedule"),
            "foo-prefnosched" => tol("foo", "Exists", "", "PreferNoSchedule"),
            "foo-noexec" => tol("foo", "Exists", "", "NoExecute"),
            "foo-bar-noexec" => tol("foo", "Equal", "bar", "NoExecute"),
            "foo-noexec-10" => tol_secs("foo", "Exists", "", "NoExecute", 10),
            "foo-noexec-0" => tol_secs("foo", "Exists", "", "NoExecute", 0),
            "foo-bar-noexec-10" => tol_secs("foo", "Equal", "bar", "NoExecute", 10),
            // Upstream's table has a typo'd row ("foo-prenosched") that looks
            // up a missing entry, i.e. Go's zero toleration.
            _ => Toleration::default(),
        }
    }

    const NAMES: &[&str] = &[
        "all",
        "all-nosched",
        "all-noexec",
        "foo",
        "foo-bar",
        "foo-nosched",
        "foo-bar-nosched",
        "foo-baz-nosched",
        "faz-nosched",
        "faz-baz-nosched",
        "foo-prefnosched",
        "foo-noexec",
        "foo-bar-noexec",
        "foo-noexec-10",
        "foo-noexec-0",
        "foo-bar-noexec-10",
    ];

    fn list(names: &[&str]) -> Vec<Toleration> {
        names.iter().map(|n| named(n)).collect()
    }

    #[test]
    fn is_superset_matches_upstream_table() {
        // Upstream TestIsSuperset: each toleration is a superset of itself
        // and of exactly the listed others.
        let cases: &[(&str, &[&str])] = &[
            (
                "all",
                &[
                    "all-nosched",
                    "all-noexec",
                    "foo",
                    "foo-bar",
                    "foo-nosched",
                    "foo-bar-nosched",
                    "foo-baz-nosched",
                    "faz-nosched",
                    "faz-baz-nosched",
                    "foo-prefnosched",
                    "foo-noexec",
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                ],
            ),
            (
                "all-nosched",
                &[
                    "foo-nosched",
                    "foo-bar-nosched",
                    "foo-baz-nosched",
                    "faz-nosched",
                    "faz-baz-nosched",
                ],
            ),
            (
                "all-noexec",
                &[
                    "foo-noexec",
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                ],
            ),
            (
                "foo",
                &[
                    "foo-bar",
                    "foo-nosched",
                    "foo-bar-nosched",
                    "foo-baz-nosched",
                    "foo-prefnosched",
                    "foo-noexec",
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                ],
            ),
            (
                "foo-bar",
                &["foo-bar-nosched", "foo-bar-noexec", "foo-bar-noexec-10"],
            ),
            ("foo-nosched", &["foo-bar-nosched", "foo-baz-nosched"]),
            ("foo-bar-nosched", &[]),
            ("faz-nosched", &["faz-baz-nosched"]),
            ("faz-baz-nosched", &[]),
            ("foo-prenosched", &[]),
            (
                "foo-noexec",
                &[
                    "foo-noexec",
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                ],
            ),
            ("foo-bar-noexec", &["foo-bar-noexec-10"]),
            ("foo-noexec-10", &["foo-noexec-0", "foo-bar-noexec-10"]),
            ("foo-noexec-0", &[]),
            ("foo-bar-noexec-10", &[]),
        ];
        for (sup, subs) in cases {
            for name in NAMES {
                let want = name == sup || subs.contains(name);
                assert_eq!(
                    is_superset(&named(sup), &named(name)),
                    want,
                    "{sup} superset of {name}"
                );
            }
        }
    }

    #[test]
    fn verify_against_whitelist_matches_upstream_table() {
        // Upstream TestVerifyAgainstWhitelist.
        let cases: &[(&str, &[&str], &[&str], bool)] = &[
            (
                "equal input and whitelist",
                &["foo-bar-nosched", "foo-baz-nosched"],
                &["foo-bar-nosched", "foo-baz-nosched"],
                true,
            ),
            (
                "duplicate input allowed",
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["foo-bar-nosched", "foo-baz-nosched"],
                true,
            ),
            (
                "allow all",
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["all"],
                true,
            ),
            (
                "duplicate input forbidden",
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["foo-baz-nosched"],
                false,
            ),
            (
                "value mismatch",
                &["foo-bar-nosched", "foo-baz-nosched"],
                &["foo-baz-nosched"],
                false,
            ),
            (
                "input does not exist in whitelist",
                &["foo-bar-nosched"],
                &["foo-baz-nosched"],
                false,
            ),
            ("disjoint sets", &["foo-bar"], &["foo-nosched"], false),
            ("empty whitelist", &["foo-bar"], &[], true),
            ("empty input", &[], &["foo-bar"], true),
        ];
        for (name, input, whitelist, want) in cases {
            assert_eq!(
                verify_against_whitelist(&list(input), &list(whitelist)),
                *want,
                "{name}"
            );
        }
    }

    #[test]
    fn merge_tolerations_matches_upstream_table() {
        // Upstream TestMergeTolerations.
        type Case = (
            &'static str,
            &'static [&'static str],
            &'static [&'static str],
            &'static [&'static str],
        );
        let cases: &[Case] = &[
            (
                "disjoint",
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &["foo-prefnosched", "foo-baz-nosched"],
                &[
                    "foo-bar-nosched",
                    "faz-baz-nosched",
                    "foo-noexec-10",
                    "foo-prefnosched",
                    "foo-baz-nosched",
                ],
            ),
            (
                "duplicate",
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
            ),
            (
                "merge redundant",
                &["foo-bar-nosched", "foo-baz-nosched"],
                &["foo-nosched", "faz-baz-nosched"],
                &["foo-nosched", "faz-baz-nosched"],
            ),
            (
                "merge all",
                &["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"],
                &["all"],
                &["all"],
            ),
            (
                "merge into all",
                &["all"],
                &["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"],
                &["all"],
            ),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(merge_tolerations(&list(a), &list(b)), list(want), "{name}");
        }
    }

    /// A small deterministic generator (upstream TestFuzzed uses a seeded
    /// `math/rand`; the exact sequence does not matter, the properties do).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
        fn toleration(&mut self) -> Toleration {
            let effect = ["", "NoExecute", "NoSchedule", "PreferNoSchedule"][self.next(4) as usize];
            if self.next(100) == 0 {
                return named("all");
            }
            let key = "a".repeat(self.next(6) as usize + 1);
            let mut t = if self.next(10) < 3 {
                tol(&key, "Exists", "", effect)
            } else {
                tol(
                    &key,
                    "Equal",
                    &"b".repeat(self.next(6) as usize + 1),
                    effect,
                )
            };
            if effect == "NoExecute" && self.next(2) == 0 {
                t.toleration_seconds = Some(self.next(10) as i64);
            }
            t
        }
        fn tolerations(&mut self) -> Vec<Toleration> {
            let n = self.next(10);
            (0..n).map(|_| self.toleration()).collect()
        }
    }

    fn contained(t: &Toleration, set: &[Toleration]) -> bool {
        set.iter().any(|s| is_superset(s, t))
    }

    #[test]
    fn fuzzed_whitelist_and_merge_keep_their_contracts() {
        // Upstream TestFuzzed.
        let mut r = Lcg(1234);
        for _ in 0..1000 {
            let input = r.tolerations();
            let mut whitelist = r.tolerations();
            whitelist.push(r.toleration());
            let all_contained = input.iter().all(|t| contained(t, &whitelist));
            assert_eq!(verify_against_whitelist(&input, &whitelist), all_contained);
        }
        for _ in 0..1000 {
            let a = r.tolerations();
            let b = r.tolerations();
            let merged = merge_tolerations(&a, &b);
            for t in a.iter().chain(&b) {
                assert!(contained(t, &merged), "{t:?} lost merging {a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn is_conflict_compares_same_key_and_effect() {
        let a = list(&["foo-bar-nosched"]);
        assert!(is_conflict(&a, &list(&["foo-baz-nosched"])));
        assert!(!is_conflict(&a, &list(&["foo-bar-nosched"])));
        assert!(!is_conflict(&a, &list(&["foo-bar-noexec"])));
    }

    #[test]
    fn add_or_update_appends_replaces_or_leaves_alone() {
        let mut ts = vec![tol_secs("foo", "Exists", "", "NoExecute", 10)];
        // Identical: unchanged.
        assert!(!add_or_update_toleration(
            &mut ts,
            &tol_secs("foo", "Exists", "", "NoExecute", 10)
        ));
        // Same identity, new seconds: replaced in place.
        assert!(add_or_update_toleration(
            &mut ts,
            &tol_secs("foo", "Exists", "", "NoExecute", 20)
        ));
        assert_eq!(ts, vec![tol_secs("foo", "Exists", "", "NoExecute", 20)]);
        // A wildcard does not stop an append.
        let mut ts = vec![tol("", "Exists", "", "")];
        assert!(add_or_update_toleration(
            &mut ts,
            &tol("bar", "Exists", "", "NoSchedule")
        ));
        assert_eq!(ts.len(), 2);
    }
}
