//! [`AnyStore`]: whichever backend the server was configured with, as one [`Store`].

use crate::error::Result;
use crate::etcd_backend::EtcdStore;
use crate::list::{ListOptions, ListResult};
use crate::mem_backend::MemStore;
use crate::redb::RedbStore;
use crate::store::Store;
use crate::types::{KeyValue, Revision, StoreHealth};
use crate::watch::WatchStream;

/// Either backend, chosen at run time (from the server's configuration).
// A server holds one of these; the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub enum AnyStore {
    Redb(RedbStore),
    Etcd(EtcdStore),
    /// Not durable: for runs on a virtual clock.
    Memory(MemStore),
}

/// Forwards one trait method to whichever backend is inside.
macro_rules! forward {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            AnyStore::Redb($s) => $call.await,
            AnyStore::Etcd($s) => $call.await,
            AnyStore::Memory($s) => $call.await,
        }
    };
}

impl AnyStore {
    /// The store's health: the embedded store's own; etcd's is etcd's to report (a failing
    /// etcd shows as failing requests).
    pub fn health(&self) -> StoreHealth {
        match self {
            AnyStore::Redb(store) => store.health(),
            AnyStore::Etcd(_) | AnyStore::Memory(_) => StoreHealth::Healthy,
        }
    }
}

impl Store for AnyStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        forward!(self, s => s.get(key))
    }
    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        forward!(self, s => s.list(prefix, options))
    }
    async fn create(&self, key: &str, value: Vec<u8>) -> Result<Revision> {
        forward!(self, s => s.create(key, value))
    }
    async fn update(&self, key: &str, value: Vec<u8>, expected: Revision) -> Result<Revision> {
        forward!(self, s => s.update(key, value, expected))
    }
    async fn delete(&self, key: &str, expected: Revision) -> Result<Revision> {
        forward!(self, s => s.delete(key, expected))
    }
    async fn current_revision(&self) -> Result<Revision> {
        forward!(self, s => s.current_revision())
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        forward!(self, s => s.watch(prefix, after))
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        forward!(self, s => s.compact(revision))
    }
}
