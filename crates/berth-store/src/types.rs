//! The store's data: revisions, stored objects, watch events, health.
//! Every other file of the crate builds on these; they build on nothing.

/// A store revision: one global counter, strictly increasing with every successful write
/// (etcd's revision on the etcd backend).
pub type Revision = i64;

/// One stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    /// Opaque bytes (the API server stores JSON).
    pub value: Vec<u8>,
    /// Revision of the write that created the object.
    pub create_revision: Revision,
    /// Revision of the write that produced this value; the expected revision for CAS.
    pub mod_revision: Revision,
}

/// What a watch event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Created,
    Updated,
    Deleted,
}

/// One change delivered by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    pub kind: EventKind,
    /// The revision of this change.
    pub revision: Revision,
    /// The object after the change. For a delete: the key, an empty value,
    /// `mod_revision` = the delete's revision, `create_revision` of the deleted object.
    pub kv: KeyValue,
    /// The object before the change, for updates and deletes.
    pub prev_kv: Option<KeyValue>,
}

/// Whether a store can serve, for the API server's `/readyz` and `/livez`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StoreHealth {
    #[default]
    Healthy,
    /// A write failed for a storage reason (a full disk, an I/O error); the store reopened its
    /// file and serves reads, and retries writes now and then: not ready, but alive.
    Degraded(String),
    /// The store's file could not be reopened after a storage failure: neither reads nor
    /// writes work until it can (the store keeps trying); a supervisor should restart it.
    Failed(String),
}
