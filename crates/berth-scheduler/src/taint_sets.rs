//! Interned node taint lists.
//!
//! Clusters have thousands of nodes but few distinct taint lists (most
//! nodes have none; tainted ones come in pools). The snapshot gives every
//! node the [`TaintSetId`] of its list, so TaintToleration decides a pod
//! against each distinct list once per scheduling cycle and answers every
//! node with a table lookup instead of comparing strings per node.
//!
//! Lists are compared by each taint's key, value and effect, in order:
//! exactly what the scheduler's matching reads (`timeAdded` only matters to
//! eviction, which does not use this table). Interned lists are kept for
//! the life of the table; a rebuild drops lists no node uses any more.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Taint;

/// The id of an interned taint list. [`TaintSetId::UNTAINTED`] is the
/// empty list; [`TaintSetId::UNKNOWN`] marks a node built without a table,
/// which plugins then judge from the node's own taints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaintSetId(pub u32);

impl TaintSetId {
    pub const UNTAINTED: TaintSetId = TaintSetId(0);
    pub const UNKNOWN: TaintSetId = TaintSetId(u32::MAX);

    /// The table index, unless the id is `UNKNOWN`.
    pub fn index(self) -> Option<usize> {
        (self != TaintSetId::UNKNOWN).then_some(self.0 as usize)
    }
}

/// What identifies a taint for scheduling.
type TaintIdentity = (String, Option<String>, String);

fn identity(taints: &[Taint]) -> Vec<TaintIdentity> {
    taints
        .iter()
        .map(|t| (t.key.clone(), t.value.clone(), t.effect.clone()))
        .collect()
}

/// The interning table.
#[derive(Debug, Clone)]
pub struct TaintSets {
    ids: HashMap<Vec<TaintIdentity>, TaintSetId>,
    lists: Vec<Arc<[Taint]>>,
}

impl Default for TaintSets {
    fn default() -> Self {
        let mut ids = HashMap::new();
        ids.insert(Vec::new(), TaintSetId::UNTAINTED);
        TaintSets {
            ids,
            lists: vec![Arc::from(Vec::new())],
        }
    }
}

impl TaintSets {
    pub fn new() -> Self {
        TaintSets::default()
    }

    /// The id of `taints`, adding the list if it is new. Fails over to
    /// `UNKNOWN` only if the table would outgrow the id space.
    pub fn intern(&mut self, taints: &[Taint]) -> TaintSetId {
        if taints.is_empty() {
            return TaintSetId::UNTAINTED;
        }
        let key = identity(taints);
        if let Some(id) = self.ids.get(&key) {
            return *id;
        }
        let Ok(next) = u32::try_from(self.lists.len()) else {
            return TaintSetId::UNKNOWN;
        };
        if next == TaintSetId::UNKNOWN.0 {
            return TaintSetId::UNKNOWN;
        }
        let id = TaintSetId(next);
        self.lists.push(Arc::from(taints.to_vec()));
        self.ids.insert(key, id);
        id
    }

    /// The list behind an id.
    pub fn get(&self, id: TaintSetId) -> Option<&[Taint]> {
        id.index().and_then(|i| self.lists.get(i)).map(|l| &l[..])
    }

    /// How many distinct lists there are, the empty one included.
    pub fn len(&self) -> usize {
        self.lists.len()
    }

    /// Always false: the empty list is always present.
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::taint;

    #[test]
    fn equal_lists_share_an_id_and_different_ones_do_not() {
        let mut sets = TaintSets::new();
        let a = [taint("dedicated", "a", "NoSchedule")];
        let a_again = [Taint {
            time_added: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            )),
            ..taint("dedicated", "a", "NoSchedule")
        }];
        let b = [taint("dedicated", "b", "NoSchedule")];
        let ab = [
            taint("dedicated", "a", "NoSchedule"),
            taint("dedicated", "b", "NoSchedule"),
        ];
        let ba = [
            taint("dedicated", "b", "NoSchedule"),
            taint("dedicated", "a", "NoSchedule"),
        ];
        let cases: &[(&str, &[Taint], TaintSetId)] = &[
            ("the empty list is always id 0", &[], TaintSetId::UNTAINTED),
            ("a first list gets the next id", &a, TaintSetId(1)),
            ("timeAdded does not count", &a_again, TaintSetId(1)),
            ("a different value is a different list", &b, TaintSetId(2)),
            ("two taints", &ab, TaintSetId(3)),
            (
                "order counts: the upstream filter reports the first untolerated",
                &ba,
                TaintSetId(4),
            ),
            ("seen before", &b, TaintSetId(2)),
        ];
        for (name, taints, want) in cases {
            assert_eq!(sets.intern(taints), *want, "{name}");
        }
        assert_eq!(sets.len(), 5);
        assert_eq!(
            sets.get(TaintSetId(2)).map(|l| l[0].value.clone()),
            Some(Some("b".into()))
        );
        assert_eq!(sets.get(TaintSetId::UNKNOWN), None);
    }
}
