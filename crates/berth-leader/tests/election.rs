//! Elections between in-process candidates on the in-memory store, on a paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_leader::{Config, Standing, Timing, run_while_leading, spawn};
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
    b_leading
        .wait_for(Standing::is_leader)
        .await
        .expect("b leads");
    let waited = crashed_at.elapsed();
    // b wakes when the lease it last saw change expires: at most a lease duration after
    // a's last renewal reached it, which is at most one jittered retry (2.2 x 2 s) late.
    assert!(
        waited >= Duration::from_secs(13) && waited <= Duration::from_millis(15_000 + 4_400),
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
    b.subscribe()
        .wait_for(Standing::is_leader)
        .await
        .expect("b leads");
    // Released with a one-second duration: b needs at most a retry or two.
    assert!(stopped_at.elapsed() <= Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn work_stops_the_moment_leadership_is_lost_and_restarts_when_regained() {
    let (tx, rx) = tokio::sync::watch::channel(Standing::Follower);
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
    tx.send_replace(Standing::leader_indefinitely());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(running.load(Ordering::SeqCst), 1);
    tx.send_replace(Standing::Follower);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(running.load(Ordering::SeqCst), 0, "work dropped when lost");
    tx.send_replace(Standing::leader_indefinitely());
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
    leading
        .wait_for(Standing::is_leader)
        .await
        .expect("a leads");
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
        lost = leading.wait_for(|s| !s.is_leader()) => { lost.expect("a steps down"); }
    }
    let after = took_over.elapsed();
    assert!(
        after <= Duration::from_secs(12),
        "stepped down after {after:?}"
    );
}

/// The work the election guards, by hand: it records each time it acts, on a timer.
fn acting_work(
    acted: Arc<AtomicUsize>,
    every: Duration,
) -> impl FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    move || {
        let acted = acted.clone();
        Box::pin(async move {
            loop {
                tokio::time::sleep(every).await;
                acted.fetch_add(1, Ordering::SeqCst);
            }
        })
    }
}

/// A leader whose renewals stop (its election task has not run, as after the process was
/// stopped) stops its work when the renew deadline passes, by itself.
#[tokio::test(start_paused = true)]
async fn work_stops_when_the_last_renewal_is_older_than_the_renew_deadline() {
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    let (tx, rx) = tokio::sync::watch::channel(Standing::Leader { until });
    let acted = Arc::new(AtomicUsize::new(0));
    let guarded = tokio::spawn(run_while_leading(
        rx,
        acting_work(acted.clone(), Duration::from_secs(1)),
    ));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(acted.load(Ordering::SeqCst), 2, "acted at 1 s and 2 s only");
    // A renewal (late, but the election says so) lets it work again.
    let until = tokio::time::Instant::now() + Duration::from_millis(1500);
    tx.send_replace(Standing::Leader { until });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        acted.load(Ordering::SeqCst),
        3,
        "acted once more within the renewal"
    );
    drop(tx);
    guarded.await.expect("ends with the election");
}

/// After a stall of the whole process every timer fires at once: the work's and the lease's.
/// The work must not act on its timer then, whichever wakes first.
#[tokio::test(start_paused = true)]
async fn after_a_stall_past_the_renew_deadline_the_work_does_not_act_again() {
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    let (tx, rx) = tokio::sync::watch::channel(Standing::Leader { until });
    let acted = Arc::new(AtomicUsize::new(0));
    let guarded = tokio::spawn(run_while_leading(
        rx,
        acting_work(acted.clone(), Duration::from_millis(2500)),
    ));
    tokio::task::yield_now().await;
    // The process "stops" for 10 s: the work's timer (2.5 s) and the lease's (3 s) both
    // lie in the past when it resumes.
    tokio::time::advance(Duration::from_secs(10)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        acted.load(Ordering::SeqCst),
        0,
        "acted after the lease lapsed"
    );
    drop(tx);
    guarded.await.expect("ends with the election");
}

/// Timing from flags reaches the Lease and the election, and a successor wakes when the
/// lease it watches expires: it takes over at most a lease duration plus one jittered retry
/// (in which it saw the last renewal) after the leader died, whatever its jitter (without
/// the wake-up, up to two jittered retries later).
#[tokio::test(start_paused = true)]
async fn a_successor_takes_over_within_the_lease_duration_and_one_retry() {
    let timing = Timing {
        lease_duration: Duration::from_secs(4),
        renew_deadline: Duration::from_secs(3),
        retry_period: Duration::from_millis(500),
    };
    timing.validate().expect("consistent timing");
    let config = |id: &str| Config::new("kube-scheduler", id).with_timing(timing);
    let mut slowest = Duration::ZERO;
    for run in 0..8 {
        let (api, clock) = cluster().await;
        let a = spawn(client(&api), clock.clone(), config("a"));
        a.subscribe()
            .wait_for(Standing::is_leader)
            .await
            .expect("a leads");
        let b = spawn(client(&api), clock.clone(), config(&format!("b{run}")));
        // Crash at a different point of a's renewal cycle each run.
        tokio::time::sleep(Duration::from_millis(10_000 + 61 * run)).await;
        assert!(a.is_leader() && !b.is_leader());
        let crashed_at = tokio::time::Instant::now();
        drop(a);
        b.subscribe()
            .wait_for(Standing::is_leader)
            .await
            .expect("b leads");
        slowest = slowest.max(crashed_at.elapsed());
        let leases: Api<Lease> = Api::namespaced(client(&api), "kube-system");
        let spec = leases.get("kube-scheduler").await.expect("lease").spec;
        assert_eq!(spec.and_then(|s| s.lease_duration_seconds), Some(4));
    }
    assert!(
        slowest <= Duration::from_millis(4_000 + 1_100),
        "slowest takeover {slowest:?}"
    );
}
