//! Owners known not to exist (upstream's `ReferenceCache`, an LRU of 500):
//! one API lookup tells the garbage collector that an owner is gone, and
//! its other dependents are deleted without asking again.

use std::collections::{BTreeMap, HashMap};

use super::graph::Identity;

/// Upstream's size of the absent owner cache.
pub const CAPACITY: usize = 500;

/// A least-recently-used set of owner identities.
#[derive(Debug)]
pub struct AbsentOwners {
    capacity: usize,
    /// Identity → when it was last added or found.
    used: HashMap<Identity, u64>,
    /// When → identity, oldest first.
    order: BTreeMap<u64, Identity>,
    tick: u64,
}

impl Default for AbsentOwners {
    fn default() -> Self {
        AbsentOwners::new(CAPACITY)
    }
}

impl AbsentOwners {
    pub fn new(capacity: usize) -> AbsentOwners {
        AbsentOwners {
            capacity: capacity.max(1),
            used: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    /// Remembers `owner` as absent (the least recently used goes when
    /// full).
    pub fn add(&mut self, owner: Identity) {
        self.touch(owner);
        while self.used.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.used.remove(&oldest);
        }
    }

    /// Whether `owner` is known absent (which makes it the most recently
    /// used).
    pub fn has(&mut self, owner: &Identity) -> bool {
        if !self.used.contains_key(owner) {
            return false;
        }
        self.touch(owner.clone());
        true
    }

    fn touch(&mut self, owner: Identity) {
        self.tick += 1;
        if let Some(previous) = self.used.insert(owner.clone(), self.tick) {
            self.order.remove(&previous);
        }
        self.order.insert(self.tick, owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(n: &str) -> Identity {
        Identity {
            api_version: "v1".into(),
            kind: "ReplicationController".into(),
            namespace: "ns1".into(),
            name: format!("rc{n}"),
            uid: n.into(),
        }
    }

    #[test]
    fn the_least_recently_used_owner_goes_first() {
        let mut cache = AbsentOwners::new(2);
        cache.add(rc("1"));
        cache.add(rc("2"));
        assert!(cache.has(&rc("1")), "found: now the most recently used");
        cache.add(rc("3"));
        assert!(cache.has(&rc("1")));
        assert!(!cache.has(&rc("2")), "evicted");
        assert!(cache.has(&rc("3")));
    }
}
