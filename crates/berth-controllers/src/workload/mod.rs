//! What the DaemonSet and StatefulSet controllers share beyond berth-core's
//! decisions and the crate's [`crate::cache`] and [`crate::work_queue`]:
//! their writes behind one trait with a recording fake, so their syncs
//! are tested call by call ([`writes`]; adoption and release,
//! [`crate::controller_refs`], go through it); which controller an
//! object's change wakes, for any owner kind ([`owners`]).
//!
//! Each controller has the shape of upstream's: one task reads its
//! watches (berth-client's `changes_of`) into [`crate::cache::ObjectCache`]s
//! and queues the keys of the objects to sync; `--concurrent-*-syncs`
//! workers sync one key at a time each, reading the caches at the start
//! of the sync and writing through [`writes::Writes`].

pub mod owners;
pub mod writes;
