//! The dependency graph (upstream's `GraphBuilder` and `uidToNode`): every
//! object of every followed type by UID, with its ownerReferences, and for
//! every owner UID the objects that name it, whether or not the owner is
//! known. Each change of an object updates the graph and says which
//! objects the garbage collector should look at ([`Work`]):
//!
//! - an object whose deletion starts with the `orphan` finalizer is to have
//!   its dependents orphaned; with `foregroundDeletion`, its dependents and
//!   itself are to be looked at (deleted, then its finalizer removed);
//! - a deleted object's dependents are to be looked at (their owner may be
//!   gone), and so is each of its owners waiting for its dependents;
//! - an owner whose blocking reference a dependent dropped (or stopped
//!   blocking with) is to be looked at;
//! - once every type is listed, and for every later change, an object
//!   naming an owner the graph lacks, or one whose coordinates (kind,
//!   apiVersion, name, namespace) disagree with the reference, is to be
//!   looked at: the API decides whether the owner exists.
//!
//! Upstream keeps "virtual" nodes for owners not yet seen; here the owner
//! index does that job (an owner seen later finds its dependents there),
//! and the check at the API is made for the dependent, once the lists are
//! complete, instead of for a virtual owner.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use berth_core::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// An object's coordinates (upstream's `objectReference`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    /// "" for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

impl Identity {
    /// The owner a reference names, looked for in `namespace` (the
    /// dependent's; owners of a namespaced dependent live beside it, or
    /// are cluster-scoped).
    pub fn of_reference(reference: &OwnerReference, namespace: &str) -> Identity {
        Identity {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            namespace: namespace.to_string(),
            name: reference.name.clone(),
            uid: reference.uid.clone(),
        }
    }

    /// Whether `reference`, made by an object in `namespace`, names this
    /// object: same UID, name, kind and apiVersion (upstream's
    /// `ownerReferenceMatchesCoordinates`), and a namespaced owner in the
    /// dependent's namespace.
    fn is_named_by(&self, reference: &OwnerReference, namespace: &str) -> bool {
        self.uid == reference.uid
            && self.name == reference.name
            && self.kind == reference.kind
            && self.api_version == reference.api_version
            && (self.namespace.is_empty() || self.namespace == namespace)
    }
}

/// What the garbage collector should do about an object (by UID).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Work {
    /// Look at it: delete it if its owners are gone, finish its foreground
    /// deletion, drop references to owners that are gone.
    AttemptToDelete(String),
    /// Orphan its dependents, then remove its `orphan` finalizer.
    AttemptToOrphan(String),
}

/// An object as a watch shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    /// It has a deletion timestamp.
    pub being_deleted: bool,
    pub finalizers: Vec<String>,
}

impl Observed {
    fn has_finalizer(&self, name: &str) -> bool {
        self.finalizers.iter().any(|f| f == name)
    }
}

/// One object of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    /// Seen with a deletion timestamp.
    pub being_deleted: bool,
    /// Its foreground deletion started: it waits for its blocking
    /// dependents.
    pub deleting_dependents: bool,
    /// As last seen: being deleted with the `orphan` finalizer.
    orphaning: bool,
    /// As last seen: being deleted with the `foregroundDeletion` finalizer.
    foreground: bool,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, GraphNode>,
    /// Owner UID → the UIDs of the objects naming it.
    dependents: HashMap<String, BTreeSet<String>>,
    /// Every followed type has been listed once.
    synced: bool,
}

impl Graph {
    pub fn node(&self, uid: &str) -> Option<&GraphNode> {
        self.nodes.get(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The known objects naming `uid` as an owner.
    pub fn dependents(&self, uid: &str) -> impl Iterator<Item = &GraphNode> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d))
    }

    /// The dependents whose reference to `uid` blocks its deletion
    /// (upstream's `blockingDependents`).
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&GraphNode> {
        self.dependents(uid)
            .filter(|d| {
                d.owners
                    .iter()
                    .any(|o| o.uid == uid && o.block_owner_deletion == Some(true))
            })
            .collect()
    }

    /// An object was added or changed (upstream's `processGraphChanges` for
    /// add and update events).
    pub fn observe(&mut self, observed: Observed) -> Vec<Work> {
        let uid = observed.identity.uid.clone();
        let mut work = Vec::new();
        let previous = self.nodes.get(&uid).map(|n| (n.orphaning, n.foreground));
        match self.nodes.get_mut(&uid) {
            None => {
                for owner in &observed.owners {
                    self.dependents
                        .entry(owner.uid.clone())
                        .or_default()
                        .insert(uid.clone());
                }
                self.nodes.insert(
                    uid.clone(),
                    GraphNode {
                        identity: observed.identity.clone(),
                        owners: observed.owners.clone(),
                        being_deleted: observed.being_deleted,
                        deleting_dependents: observed.being_deleted
                            && observed.has_finalizer(FOREGROUND_FINALIZER),
                        orphaning: false,
                        foreground: false,
                    },
                );
                if self.synced && self.names_missing_owner(&uid) {
                    work.push(Work::AttemptToDelete(uid.clone()));
                }
            }
            Some(node) => {
                let old_owners = std::mem::replace(&mut node.owners, observed.owners.clone());
                node.being_deleted |= observed.being_deleted;
                let diff = references_diff(&old_owners, &observed.owners);
                for owner in diff.unblocked() {
                    if self.nodes.contains_key(owner) {
                        work.push(Work::AttemptToDelete(owner.to_string()));
                    }
                }
                for removed in &diff.removed {
                    if let Some(set) = self.dependents.get_mut(&removed.uid) {
                        set.remove(&uid);
                        if set.is_empty() {
                            self.dependents.remove(&removed.uid);
                        }
                    }
                }
                for added in &diff.added {
                    self.dependents
                        .entry(added.uid.clone())
                        .or_default()
                        .insert(uid.clone());
                }
                if self.synced && !diff.added.is_empty() && self.names_missing_owner(&uid) {
                    work.push(Work::AttemptToDelete(uid.clone()));
                }
            }
        }
        work.extend(self.transitions(&observed, previous.unwrap_or((false, false))));
        work
    }

    /// Upstream `processTransitions`: the start of an orphaning or a
    /// foreground deletion, against how the object was last seen.
    fn transitions(
        &mut self,
        observed: &Observed,
        (was_orphaning, was_foreground): (bool, bool),
    ) -> Vec<Work> {
        let uid = &observed.identity.uid;
        let orphaning = observed.being_deleted && observed.has_finalizer(ORPHAN_FINALIZER);
        let foreground = observed.being_deleted && observed.has_finalizer(FOREGROUND_FINALIZER);
        let Some(node) = self.nodes.get_mut(uid) else {
            return Vec::new();
        };
        node.orphaning = orphaning;
        node.foreground = foreground;
        if orphaning && !was_orphaning {
            return vec![Work::AttemptToOrphan(uid.clone())];
        }
        if foreground && !was_foreground {
            node.deleting_dependents = true;
            let mut work: Vec<Work> = self
                .dependents(uid)
                .map(|d| Work::AttemptToDelete(d.identity.uid.clone()))
                .collect();
            work.push(Work::AttemptToDelete(uid.clone()));
            return work;
        }
        Vec::new()
    }

    /// An object is gone (a delete event, or the API found it gone):
    /// upstream's `processGraphChanges` for delete events. Returns the
    /// work, and its identity when it had dependents (an owner now known
    /// to be absent).
    pub fn forget(&mut self, uid: &str) -> (Vec<Work>, Option<Identity>) {
        let Some(node) = self.nodes.remove(uid) else {
            return (Vec::new(), None);
        };
        for owner in &node.owners {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(uid);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
        let mut work: Vec<Work> = self
            .dependents(uid)
            .map(|d| Work::AttemptToDelete(d.identity.uid.clone()))
            .collect();
        let absent = (!work.is_empty()).then(|| node.identity.clone());
        for owner in &node.owners {
            if self
                .nodes
                .get(&owner.uid)
                .is_some_and(|o| o.deleting_dependents)
            {
                work.push(Work::AttemptToDelete(owner.uid.clone()));
            }
        }
        (work, absent)
    }

    /// Every followed type has been listed: from now on an owner the graph
    /// lacks is worth asking the API about. Returns the objects naming one.
    pub fn mark_synced(&mut self) -> Vec<Work> {
        if self.synced {
            return Vec::new();
        }
        self.synced = true;
        let mut uids: Vec<&String> = self.nodes.keys().collect();
        uids.sort();
        uids.into_iter()
            .filter(|uid| self.names_missing_owner(uid))
            .map(|uid| Work::AttemptToDelete(uid.clone()))
            .collect()
    }

    /// Whether object `uid` names an owner the graph lacks, or one whose
    /// coordinates disagree with the reference.
    fn names_missing_owner(&self, uid: &str) -> bool {
        let Some(node) = self.nodes.get(uid) else {
            return false;
        };
        node.owners
            .iter()
            .any(|reference| match self.nodes.get(&reference.uid) {
                None => true,
                Some(owner) => {
                    let named = owner
                        .identity
                        .is_named_by(reference, &node.identity.namespace);
                    if !named {
                        tracing::warn!(
                            object = %node.identity,
                            owner = %owner.identity,
                            reference = ?reference,
                            "ownerRef does not match the owner's coordinates"
                        );
                    }
                    !named
                }
            })
    }
}

/// Upstream `referencesDiffs`: references by UID added, removed, and kept
/// but changed.
struct ReferencesDiff<'a> {
    added: Vec<&'a OwnerReference>,
    removed: Vec<&'a OwnerReference>,
    changed: Vec<(&'a OwnerReference, &'a OwnerReference)>,
}

impl ReferencesDiff<'_> {
    /// Upstream `addUnblockedOwnersToDeleteQueue`: the owners a blocking
    /// reference to was removed, or changed to stop blocking.
    fn unblocked(&self) -> impl Iterator<Item = &str> {
        let blocks = |r: &OwnerReference| r.block_owner_deletion == Some(true);
        self.removed
            .iter()
            .filter(move |r| blocks(r))
            .map(|r| r.uid.as_str())
            .chain(
                self.changed
                    .iter()
                    .filter(move |(old, new)| blocks(old) && !blocks(new))
                    .map(|(_, new)| new.uid.as_str()),
            )
    }
}

fn references_diff<'a>(old: &'a [OwnerReference], new: &'a [OwnerReference]) -> ReferencesDiff<'a> {
    let old_by_uid: HashMap<&str, &OwnerReference> =
        old.iter().map(|r| (r.uid.as_str(), r)).collect();
    let new_uids: BTreeSet<&str> = new.iter().map(|r| r.uid.as_str()).collect();
    let mut diff = ReferencesDiff {
        added: Vec::new(),
        removed: old
            .iter()
            .filter(|r| !new_uids.contains(r.uid.as_str()))
            .collect(),
        changed: Vec::new(),
    };
    for reference in new {
        match old_by_uid.get(reference.uid.as_str()) {
            None => diff.added.push(reference),
            Some(old) if *old != reference => diff.changed.push((old, reference)),
            Some(_) => {}
        }
    }
    diff
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
