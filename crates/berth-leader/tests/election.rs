//! Elections between in-process candidates on the in-memory store, on a paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_leader::{Config, run_while_leading, spawn};
use berth_store::{AnyStore, MemStore};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

async fn cluster() -> (Arc<ApiServer>, Clock) {
    let start = "2026-01-01T00:00:00Z".parse().expect("timestamp");
    let clock = Clock::virtual_from(start);
    let api = ApiServer::new(
        AnyStore::Memory(MemStore::new()),
        clock.clone(),
        ApiConfig::default(),
    )
    .await
    .expect("api server");
    (api, clock)
}

fn client(api: &Arc<ApiServer>) -> kube::Client {
    in_process::client(api, User::admin(), "default").expect("client")
}

async fn holder(api: &Arc<ApiServer>) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client(api), "kube-system");
    leases
        .get_opt("kube-scheduler")
        .await
        .expect("get lease")
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

#[tokio::test(start_paused = true)]
async fn exactly_one_candidate_leads_and_a_successor_takes_over_after_a_crash() {
    let (api, clock) = cluster().await;
    let a = spawn(
        client(&api),
        clock.clone(),
        Config::new("kube-scheduler", "a"),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let b = spawn(
        client(&api),
        clock.clone(),
        Config::new("kube-scheduler", "b"),
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(a.is_leader());
    assert!(!b.is_leader(), "b must wait while a renews");
    assert_eq!(holder(&api).await.as_deref(), Some("a"));

    // a dies without releasing: b takes over once the lease has not changed for 15 s.
    let crashed_at = tokio::time::Instant::now();
    drop(a);
    let mut b_leading = b.subscribe();
    b_leading.wait_for(|l| *l).await.expect("b leads");
    let waited = crashed_at.elapsed();
    assert!(
        waited >= Duration::from_secs(13) && waited <= Duration::from_secs(15 + 5),
        "took over after {waited:?}"
    );
    assert_eq!(holder(&api).await.as_deref(), Some("b"));
    let leases: Api<Lease> = Api::namespaced(client(&api), "kube-system");
    let spec = leases
        .get("kube-scheduler")
        .await
        .expect("lease")
        .spec
        .expect("spec");
    assert_eq!(spec.lease_transitions, Some(1));
    assert_eq!(spec.lease_duration_seconds, Some(15));
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_at_once() {
    let (api, clock) = cluster().await;
    let a = spawn(
        client(&api),
        clock.clone(),
        Config::new("kube-scheduler", "a"),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = spawn(
        client(&api),
        clock.clone(),
        Config::new("kube-scheduler", "b"),
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    a.stop().await;
    let stopped_at = tokio::time::Instant::now();
    b.subscribe().wait_for(|l| *l).await.expect("b leads");
    // Released with a one-second duration: b needs at most a retry or two.
    assert!(stopped_at.elapsed() <= Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn work_stops_the_moment_leadership_is_lost_and_restarts_when_regained() {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let starts = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let (s, r) = (starts.clone(), running.clone());
    let guarded = tokio::spawn(run_while_leading(rx, move || {
        let (s, r) = (s.clone(), r.clone());
        async move {
            s.fetch_add(1, Ordering::SeqCst);
            r.store(1, Ordering::SeqCst);
            // Runs until cancelled; the guard resets `running` when dropped.
            struct Guard(Arc<AtomicUsize>);
            impl Drop for Guard {
                fn drop(&mut self) {
                    self.0.store(0, Ordering::SeqCst);
                }
            }
            let _g = Guard(r);
            std::future::pending::<()>().await;
        }
    }));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(starts.load(Ordering::SeqCst), 0, "no work before leading");
    tx.send_replace(true);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(running.load(Ordering::SeqCst), 1);
    tx.send_replace(false);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(running.load(Ordering::SeqCst), 0, "work dropped when lost");
    tx.send_replace(true);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(starts.load(Ordering::SeqCst), 2);
    drop(tx);
    guarded.await.expect("ends with the election");
    assert_eq!(running.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_steps_down_within_the_renew_deadline() {
    let (api, clock) = cluster().await;
    let a = spawn(
        client(&api),
        clock.clone(),
        Config::new("kube-scheduler", "a"),
    );
    let mut leading = a.subscribe();
    leading.wait_for(|l| *l).await.expect("a leads");
    // A rival overwrites the lease by force (as an operator might): a's next
    // renewal sees a valid lease held by someone else and fails; after the
    // renew deadline a steps down.
    let leases: Api<Lease> = Api::namespaced(client(&api), "kube-system");
    let took_over = tokio::time::Instant::now();
    let rival = async {
        loop {
            let mut lease = leases.get("kube-scheduler").await.expect("lease");
            if let Some(spec) = lease.spec.as_mut() {
                spec.holder_identity = Some("rival".to_owned());
                spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                    clock.now(),
                ));
            }
            let _ = leases
                .replace("kube-scheduler", &Default::default(), &lease)
                .await;
            clock.sleep(Duration::from_secs(1)).await;
        }
    };
    tokio::select! {
        _ = rival => unreachable!("the rival loops forever"),
        lost = leading.wait_for(|l| !*l) => { lost.expect("a steps down"); }
    }
    let after = took_over.elapsed();
    assert!(
        after <= Duration::from_secs(12),
        "stepped down after {after:?}"
    );
}
