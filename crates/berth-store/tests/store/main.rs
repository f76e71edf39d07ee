//! Integration tests of berth-store: the conformance suite on both backends, backend-specific
//! behaviour, and crash tests. One test binary, so it links once.

// A failed unwrap is a failed test, with the error in the message: what tests want.
#![allow(clippy::unwrap_used)]

mod conformance;
mod crash;
mod etcd_harness;
mod redb_only;

use berth_store::RedbStore;

/// A fresh redb store in a temporary directory.
pub async fn redb_store() -> (tempfile::TempDir, RedbStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = RedbStore::open(dir.path()).expect("open redb store");
    (dir, store)
}

/// Runs each named suite function against a fresh redb store and a fresh etcd.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod redb_conformance {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (_dir, store) = crate::redb_store().await;
                    crate::conformance::$name(&store).await;
                    // Whatever the test did, the file's invariants hold.
                    store.verify().await.expect("store invariants");
                    store.close().await.expect("close");
                }
            )*
        }
        mod mem_conformance {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::conformance::$name(&berth_store::MemStore::new()).await;
                }
            )*
        }
        mod etcd_conformance {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let etcd = crate::etcd_harness::EtcdServer::start().await;
                    let store = etcd.store().await;
                    crate::conformance::$name(&store).await;
                }
            )*
        }
    };
}

conformance!(
    get_of_missing_key_is_none,
    create_then_get_returns_value_and_revisions,
    create_of_existing_key_fails_with_already_exists,
    update_with_current_revision_replaces_value,
    stale_revision_conflicts_and_missing_key_is_not_found,
    delete_with_current_revision_removes_the_key,
    revisions_strictly_increase_and_refusals_consume_none,
    list_returns_only_the_prefix_in_key_order,
    list_pages_are_consistent_at_the_first_revision,
    invalid_keys_and_prefixes_are_refused,
    oversized_values_are_refused,
    concurrent_cas_has_exactly_one_winner,
    watch_delivers_every_change_in_order_with_previous_values,
    watch_from_the_past_replays_history,
    watch_sees_only_its_prefix,
    watch_orders_events_from_concurrent_writers,
    watch_resumes_after_reconnect_without_loss_or_duplicates,
    compaction_makes_older_revisions_gone,
    compact_keeping_retains_the_window,
    workload_keys_are_kept_per_resource_and_namespace,
    upstream_key_layout_keeps_each_type_apart,
    priority_class_keys_are_cluster_scoped,
    pod_disruption_budget_keys_are_namespaced_and_cas,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_two_servers_share_one_history() {
    let etcd = etcd_harness::EtcdServer::start().await;
    let (a, b) = (etcd.store().await, etcd.store().await);
    conformance::two_handles_share_one_history(&a, &b).await;
}

/// The three-member private etcd the failover tests run on is one cluster: what is written
/// through one member is read and watched, at the same revisions, through another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_members_share_one_history() {
    let etcd = etcd_harness::EtcdServer::start_cluster(3).await;
    let (a, b) = (etcd.store_at(0).await, etcd.store_at(2).await);
    conformance::two_handles_share_one_history(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_clones_share_one_history() {
    let (_dir, a) = redb_store().await;
    let b = a.clone();
    conformance::two_handles_share_one_history(&a, &b).await;
    a.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_store_forwards_to_its_backend() {
    let (_dir, store) = redb_store().await;
    let any = berth_store::AnyStore::Redb(store.clone());
    conformance::create_then_get_returns_value_and_revisions(&any).await;
    store.close().await.expect("close");
}
