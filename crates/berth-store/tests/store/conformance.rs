//! The conformance suite: one async function per clause of the store contract, generic over
//! any `Store`, run against every backend by the `conformance!` macro in `main.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_store::{
    EventKind, KeyValue, ListOptions, MAX_VALUE_BYTES, Revision, Store, StoreError, WatchEvent,
    WatchStream,
};

const P: &str = "/registry/widgets/";

fn key(name: &str) -> String {
    format!("{P}default/{name}")
}

/// The next watch event, failing the test if none comes within a generous bound.
pub async fn next(w: &mut WatchStream) -> WatchEvent {
    match tokio::time::timeout(Duration::from_secs(10), w.next_event()).await {
        Ok(Some(Ok(e))) => e,
        Ok(Some(Err(e))) => panic!("watch failed: {e}"),
        Ok(None) => panic!("watch ended"),
        Err(_) => panic!("no watch event within 10 s"),
    }
}

pub async fn get_of_missing_key_is_none<S: Store + Clone>(s: &S) {
    assert_eq!(s.get(&key("nope")).await.unwrap(), None);
}

pub async fn create_then_get_returns_value_and_revisions<S: Store + Clone>(s: &S) {
    let rev = s.create(&key("a"), b"{\"v\":1}".to_vec()).await.unwrap();
    let got = s.get(&key("a")).await.unwrap().unwrap();
    assert_eq!(
        got,
        KeyValue {
            key: key("a"),
            value: b"{\"v\":1}".to_vec(),
            create_revision: rev,
            mod_revision: rev,
        }
    );
    assert_eq!(s.current_revision().await.unwrap(), rev);
}

pub async fn create_of_existing_key_fails_with_already_exists<S: Store + Clone>(s: &S) {
    s.create(&key("a"), b"1".to_vec()).await.unwrap();
    let err = s.create(&key("a"), b"2".to_vec()).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err}");
    assert_eq!(s.get(&key("a")).await.unwrap().unwrap().value, b"1");
}

pub async fn update_with_current_revision_replaces_value<S: Store + Clone>(s: &S) {
    let r1 = s.create(&key("a"), b"1".to_vec()).await.unwrap();
    let r2 = s.update(&key("a"), b"2".to_vec(), r1).await.unwrap();
    assert!(r2 > r1);
    let got = s.get(&key("a")).await.unwrap().unwrap();
    assert_eq!(
        (got.value.as_slice(), got.create_revision, got.mod_revision),
        (&b"2"[..], r1, r2)
    );
}

pub async fn stale_revision_conflicts_and_missing_key_is_not_found<S: Store + Clone>(s: &S) {
    let r1 = s.create(&key("a"), b"1".to_vec()).await.unwrap();
    let r2 = s.update(&key("a"), b"2".to_vec(), r1).await.unwrap();
    // (operation, key, expected revision, what must come back)
    let cases: [(&str, String, Revision, &str); 4] = [
        ("update", key("a"), r1, "conflict"),
        ("delete", key("a"), r1, "conflict"),
        ("update", key("missing"), r2, "not found"),
        ("delete", key("missing"), r2, "not found"),
    ];
    for (op, k, expected, want) in cases {
        let err = match op {
            "update" => s.update(&k, b"x".to_vec(), expected).await.unwrap_err(),
            _ => s.delete(&k, expected).await.unwrap_err(),
        };
        let ok = match want {
            "conflict" => {
                matches!(err, StoreError::Conflict { actual, expected: e, .. } if actual == r2 && e == r1)
            }
            _ => matches!(err, StoreError::NotFound { .. }),
        };
        assert!(ok, "{op} {k} @{expected}: expected {want}, got {err}");
    }
    assert_eq!(s.get(&key("a")).await.unwrap().unwrap().mod_revision, r2);
}

pub async fn delete_with_current_revision_removes_the_key<S: Store + Clone>(s: &S) {
    let r1 = s.create(&key("a"), b"1".to_vec()).await.unwrap();
    let r2 = s.delete(&key("a"), r1).await.unwrap();
    assert!(r2 > r1);
    assert_eq!(s.get(&key("a")).await.unwrap(), None);
    assert_eq!(s.current_revision().await.unwrap(), r2);
    // The key can be created again, with a fresh create revision.
    let r3 = s.create(&key("a"), b"again".to_vec()).await.unwrap();
    assert_eq!(s.get(&key("a")).await.unwrap().unwrap().create_revision, r3);
}

pub async fn revisions_strictly_increase_and_refusals_consume_none<S: Store + Clone>(s: &S) {
    let mut last = s.current_revision().await.unwrap();
    for i in 0..5 {
        let r = s.create(&key(&format!("k{i}")), vec![i]).await.unwrap();
        assert!(r > last, "revision {r} after {last}");
        last = r;
        let _ = s.create(&key(&format!("k{i}")), vec![i]).await.unwrap_err();
        let _ = s
            .update(&key(&format!("k{i}")), vec![i], r - 1)
            .await
            .unwrap_err();
        assert_eq!(
            s.current_revision().await.unwrap(),
            r,
            "a refused write moved the revision"
        );
    }
}

pub async fn list_returns_only_the_prefix_in_key_order<S: Store + Clone>(s: &S) {
    for k in [
        "/registry/widgets/ns1/b",
        "/registry/widgets/ns1/a",
        "/registry/widgets/ns10/a",
        "/registry/widgets/ns2/a",
        "/registry/gadgets/ns1/a",
    ] {
        s.create(k, k.as_bytes().to_vec()).await.unwrap();
    }
    let cases: [(&str, Vec<&str>); 3] = [
        (
            "/registry/widgets/ns1/",
            vec!["/registry/widgets/ns1/a", "/registry/widgets/ns1/b"],
        ),
        (
            "/registry/widgets/",
            vec![
                "/registry/widgets/ns1/a",
                "/registry/widgets/ns1/b",
                "/registry/widgets/ns10/a",
                "/registry/widgets/ns2/a",
            ],
        ),
        ("/registry/nothing/", vec![]),
    ];
    let current = s.current_revision().await.unwrap();
    for (prefix, want) in cases {
        let page = s.list(prefix, ListOptions::default()).await.unwrap();
        let keys: Vec<&str> = page.items.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, want, "list {prefix}");
        assert_eq!(page.revision, current);
        assert_eq!(page.next, None);
        for kv in &page.items {
            assert_eq!(kv.value, kv.key.as_bytes());
        }
    }
}

pub async fn list_pages_are_consistent_at_the_first_revision<S: Store + Clone>(s: &S) {
    let mut revs = BTreeMap::new();
    for i in 0..10 {
        let k = key(&format!("k{i:02}"));
        revs.insert(
            k.clone(),
            s.create(&k, format!("v{i}").into_bytes()).await.unwrap(),
        );
    }
    let snapshot = s.list(P, ListOptions::default()).await.unwrap();
    let mut items = Vec::new();
    let mut options = ListOptions {
        limit: 3,
        ..ListOptions::default()
    };
    let mut pages = 0;
    loop {
        let page = s.list(P, options.clone()).await.unwrap();
        assert!(page.items.len() <= 3);
        assert_eq!(page.revision, snapshot.revision);
        items.extend(page.items);
        pages += 1;
        // Change the store between pages: none of it may show in later pages.
        let k0 = key(&format!("k{:02}", pages * 3));
        if let Some(&r) = revs.get(&k0) {
            s.update(&k0, b"changed".to_vec(), r).await.unwrap();
        }
        let k1 = key(&format!("k{:02}", pages * 3 + 1));
        if let Some(&r) = revs.get(&k1) {
            s.delete(&k1, r).await.unwrap();
        }
        s.create(&key(&format!("k{:02}x", pages * 3)), b"new".to_vec())
            .await
            .unwrap();
        match page.next {
            Some(next) => {
                options.continue_from = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(pages, 4);
    assert_eq!(items, snapshot.items);
    // Listing at an explicit old revision sees the same snapshot.
    let old = s
        .list(
            P,
            ListOptions {
                revision: Some(snapshot.revision),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(old.items, snapshot.items);
    // A future revision is refused.
    let future = s.current_revision().await.unwrap() + 100;
    let err = s
        .list(
            P,
            ListOptions {
                revision: Some(future),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidArgument(_)), "{err}");
    // A continuation outside the listed prefix is refused by every backend
    // alike (one check, `ListOptions::start_in`).
    let err = s
        .list(
            P,
            ListOptions {
                limit: 2,
                continue_from: Some(berth_store::Continue {
                    revision: snapshot.revision,
                    start_key: "/registry/secrets/".into(),
                }),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidContinue(_)), "{err}");
}

pub async fn invalid_keys_and_prefixes_are_refused<S: Store + Clone>(s: &S) {
    let before = s.current_revision().await.unwrap();
    let long = format!("/registry/widgets/ns/{}", "x".repeat(2000));
    for bad in [
        "",
        "/widgets/a",
        "/registry/widgets//a",
        "/registry/widgets/../a",
        long.as_str(),
    ] {
        let errs = [
            s.get(bad).await.unwrap_err(),
            s.create(bad, b"v".to_vec()).await.unwrap_err(),
            s.update(bad, b"v".to_vec(), 1).await.unwrap_err(),
            s.delete(bad, 1).await.unwrap_err(),
        ];
        for err in errs {
            assert!(
                matches!(err, StoreError::InvalidKey { .. }),
                "{bad:?}: {err}"
            );
        }
    }
    for bad in ["", "/registry/widgets", "/registry//", "/x/"] {
        let e1 = s.list(bad, ListOptions::default()).await.unwrap_err();
        let e2 = s.watch(bad, 0).await.err().unwrap();
        for err in [e1, e2] {
            assert!(
                matches!(err, StoreError::InvalidKey { .. }),
                "{bad:?}: {err}"
            );
        }
    }
    assert_eq!(
        s.current_revision().await.unwrap(),
        before,
        "a refused call wrote"
    );
}

pub async fn oversized_values_are_refused<S: Store + Clone>(s: &S) {
    let err = s
        .create(&key("big"), vec![b'x'; MAX_VALUE_BYTES + 1])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { .. }), "{err}");
    assert!(err.to_string().contains("limit"), "{err}");
    // Exactly the limit is accepted, and so is updating to it.
    let r = s
        .create(&key("big"), vec![b'x'; MAX_VALUE_BYTES])
        .await
        .unwrap();
    let err = s
        .update(&key("big"), vec![b'y'; MAX_VALUE_BYTES + 1], r)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { .. }), "{err}");
    assert_eq!(
        s.get(&key("big")).await.unwrap().unwrap().value.len(),
        MAX_VALUE_BYTES
    );
}

pub async fn concurrent_cas_has_exactly_one_winner<S: Store + Clone>(s: &S) {
    const RACERS: usize = 16;
    let race = key("race");
    let race = race.as_str();
    let creates =
        futures::future::join_all((0..RACERS).map(|i| s.create(race, vec![i as u8]))).await;
    let wins: Vec<Revision> = creates
        .iter()
        .filter_map(|r| r.as_ref().ok().copied())
        .collect();
    assert_eq!(wins.len(), 1, "creates: {creates:?}");
    let rev = wins[0];
    let updates =
        futures::future::join_all((0..RACERS).map(|i| s.update(race, vec![i as u8 + 100], rev)))
            .await;
    let winners: Vec<usize> = (0..RACERS).filter(|&i| updates[i].is_ok()).collect();
    assert_eq!(winners.len(), 1, "updates: {updates:?}");
    for r in updates.iter().filter(|r| r.is_err()) {
        assert!(r.as_ref().unwrap_err().is_conflict(), "{r:?}");
    }
    let rev = *updates[winners[0]].as_ref().unwrap();
    assert_eq!(
        s.get(&key("race")).await.unwrap().unwrap().value,
        vec![winners[0] as u8 + 100]
    );
    let deletes = futures::future::join_all((0..RACERS).map(|_| s.delete(race, rev))).await;
    assert_eq!(
        deletes.iter().filter(|r| r.is_ok()).count(),
        1,
        "{deletes:?}"
    );
}

pub async fn watch_delivers_every_change_in_order_with_previous_values<S: Store + Clone>(s: &S) {
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch(P, start).await.unwrap();
    let r1 = s.create(&key("a"), b"1".to_vec()).await.unwrap();
    let r2 = s.update(&key("a"), b"2".to_vec(), r1).await.unwrap();
    let r3 = s.delete(&key("a"), r2).await.unwrap();
    let e1 = next(&mut w).await;
    assert_eq!(
        (e1.kind, e1.revision, e1.kv.value.as_slice()),
        (EventKind::Created, r1, &b"1"[..])
    );
    assert_eq!(e1.prev_kv, None);
    let e2 = next(&mut w).await;
    assert_eq!(
        (e2.kind, e2.revision, e2.kv.value.as_slice()),
        (EventKind::Updated, r2, &b"2"[..])
    );
    assert_eq!((e2.kv.create_revision, e2.kv.mod_revision), (r1, r2));
    let prev = e2.prev_kv.expect("update carries the previous value");
    assert_eq!((prev.value.as_slice(), prev.mod_revision), (&b"1"[..], r1));
    let e3 = next(&mut w).await;
    assert_eq!(
        (e3.kind, e3.revision, e3.kv.key.as_str()),
        (EventKind::Deleted, r3, key("a").as_str())
    );
    assert_eq!(e3.kv.mod_revision, r3);
    let prev = e3.prev_kv.expect("delete carries the previous value");
    assert_eq!(
        (
            prev.value.as_slice(),
            prev.mod_revision,
            prev.create_revision
        ),
        (&b"2"[..], r2, r1)
    );
}

pub async fn watch_from_the_past_replays_history<S: Store + Clone>(s: &S) {
    let start = s.current_revision().await.unwrap();
    let r1 = s.create(&key("a"), b"1".to_vec()).await.unwrap();
    let r2 = s.create(&key("b"), b"2".to_vec()).await.unwrap();
    let r3 = s.delete(&key("a"), r1).await.unwrap();
    let mut all = vec![r1, r2, r3];
    // Every starting point gets exactly the events after it, then live ones.
    for after in [start, r1, r3] {
        let want: Vec<Revision> = all.iter().copied().filter(|r| *r > after).collect();
        let mut w = s.watch(P, after).await.unwrap();
        let mut got = Vec::new();
        for _ in 0..want.len() {
            got.push(next(&mut w).await.revision);
        }
        assert_eq!(got, want, "watch after {after}");
        let r = s
            .create(&key(&format!("live{after}")), vec![])
            .await
            .unwrap();
        assert_eq!(
            next(&mut w).await.revision,
            r,
            "live event after replay from {after}"
        );
        all.push(r);
    }
}

pub async fn watch_sees_only_its_prefix<S: Store + Clone>(s: &S) {
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch("/registry/widgets/ns1/", start).await.unwrap();
    s.create("/registry/widgets/ns10/a", vec![]).await.unwrap();
    s.create("/registry/gadgets/ns1/a", vec![]).await.unwrap();
    let r = s.create("/registry/widgets/ns1/a", vec![]).await.unwrap();
    let e = next(&mut w).await;
    assert_eq!(
        (e.revision, e.kv.key.as_str()),
        (r, "/registry/widgets/ns1/a")
    );
}

pub async fn watch_orders_events_from_concurrent_writers<S: Store + Clone>(s: &S) {
    const WRITERS: usize = 8;
    const EACH: usize = 25;
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch(P, start).await.unwrap();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                let mut acks = Vec::new();
                for j in 0..EACH {
                    let k = key(&format!("w{i}-{j}"));
                    acks.push((s.create(&k, k.clone().into_bytes()).await.unwrap(), k));
                }
                acks
            })
        })
        .collect();
    let mut acked = BTreeMap::new();
    for t in tasks {
        acked.extend(t.await.unwrap());
    }
    let mut last = start;
    for _ in 0..WRITERS * EACH {
        let e = next(&mut w).await;
        assert!(e.revision > last, "event {} after {last}", e.revision);
        last = e.revision;
        assert_eq!(
            acked.remove(&e.revision).as_deref(),
            Some(e.kv.key.as_str())
        );
    }
    assert!(acked.is_empty(), "never delivered: {acked:?}");
}

pub async fn watch_resumes_after_reconnect_without_loss_or_duplicates<S: Store + Clone>(s: &S) {
    let start = s.current_revision().await.unwrap();
    let mut acked = Vec::new();
    for i in 0..10 {
        acked.push(s.create(&key(&format!("a{i}")), vec![i]).await.unwrap());
    }
    let mut seen = Vec::new();
    let mut w = s.watch(P, start).await.unwrap();
    for _ in 0..4 {
        seen.push(next(&mut w).await.revision);
    }
    drop(w);
    // Writes while disconnected.
    for i in 0..5 {
        acked.push(s.create(&key(&format!("b{i}")), vec![i]).await.unwrap());
    }
    let mut w = s.watch(P, *seen.last().unwrap()).await.unwrap();
    for i in 0..3 {
        acked.push(s.create(&key(&format!("c{i}")), vec![i]).await.unwrap());
    }
    while seen.len() < acked.len() {
        seen.push(next(&mut w).await.revision);
    }
    assert_eq!(seen, acked);
}

pub async fn compaction_makes_older_revisions_gone<S: Store + Clone>(s: &S) {
    let r1 = s.create(&key("a"), b"a1".to_vec()).await.unwrap();
    let r2 = s.update(&key("a"), b"a2".to_vec(), r1).await.unwrap();
    let r3 = s.create(&key("b"), b"b1".to_vec()).await.unwrap();
    let r4 = s.delete(&key("b"), r3).await.unwrap();
    let r5 = s.update(&key("a"), b"a3".to_vec(), r2).await.unwrap();
    s.compact(r4).await.unwrap();

    // Watching from before the compacted revision needs compacted events.
    for after in [r1, r3] {
        let err = s
            .watch(P, after)
            .await
            .err()
            .expect("watch from before compaction must fail");
        assert!(err.is_gone(), "watch after {after}: {err}");
        assert!(err.to_string().contains("compacted"), "{err}");
    }
    let err = s
        .list(
            P,
            ListOptions {
                revision: Some(r3),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(err.is_gone(), "{err}");

    // Everything after the compacted revision is intact, previous values included.
    let mut w = s.watch(P, r4).await.unwrap();
    let e = next(&mut w).await;
    assert_eq!((e.kind, e.revision), (EventKind::Updated, r5));
    assert_eq!(
        e.prev_kv.map(|p| (p.value, p.mod_revision)),
        Some((b"a2".to_vec(), r2))
    );
    let at_r4 = s
        .list(
            P,
            ListOptions {
                revision: Some(r4),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    let state: Vec<_> = at_r4
        .items
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone()))
        .collect();
    assert_eq!(state, vec![(key("a"), b"a2".to_vec())]);
    assert_eq!(s.get(&key("a")).await.unwrap().unwrap().value, b"a3");

    // Compacting to an older revision again is a no-op; the future is refused.
    s.compact(r2).await.unwrap();
    let err = s.compact(r5 + 10).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidArgument(_)), "{err}");
    // The store keeps working after compaction.
    let r6 = s.create(&key("c"), b"c".to_vec()).await.unwrap();
    assert_eq!(next(&mut w).await.revision, r6);
}

pub async fn compact_keeping_retains_the_window<S: Store + Clone>(s: &S) {
    let mut revs = Vec::new();
    for i in 0..10 {
        revs.push(s.create(&key(&format!("k{i}")), vec![i]).await.unwrap());
    }
    s.compact_keeping(3).await.unwrap();
    // The last three revisions are still watchable, anything older is gone.
    let mut w = s.watch(P, revs[6]).await.unwrap();
    for want in &revs[7..] {
        assert_eq!(next(&mut w).await.revision, *want);
    }
    let err = s
        .watch(P, revs[2])
        .await
        .err()
        .expect("old watch must be gone");
    assert!(err.is_gone(), "{err}");
    assert_eq!(
        s.list(P, ListOptions::default()).await.unwrap().items.len(),
        10
    );
}

/// Two handles on one store (two berth servers on one etcd, two clones of a redb store) see
/// one history.
pub async fn two_handles_share_one_history<S: Store + Clone>(a: &S, b: &S) {
    let start = a.current_revision().await.unwrap();
    let mut wb = b.watch(P, start).await.unwrap();
    let r1 = a.create(&key("shared"), b"from a".to_vec()).await.unwrap();
    assert_eq!(
        b.get(&key("shared")).await.unwrap().unwrap().mod_revision,
        r1
    );
    let r2 = b
        .update(&key("shared"), b"from b".to_vec(), r1)
        .await
        .unwrap();
    assert!(
        a.update(&key("shared"), b"stale".to_vec(), r1)
            .await
            .unwrap_err()
            .is_conflict()
    );
    assert_eq!(
        b.current_revision().await.unwrap(),
        a.current_revision().await.unwrap()
    );
    assert_eq!(next(&mut wb).await.revision, r1);
    assert_eq!(next(&mut wb).await.revision, r2);
}

/// The apps/v1 workloads' keys as upstream lays them out in etcd
/// (`/registry/<resource>/<namespace>/<name>`): each resource's objects
/// listed under its own prefix and namespace, watched per resource, and
/// written by revision as the controllers write them (a status update, a
/// deletion).
pub async fn workload_keys_are_kept_per_resource_and_namespace<S: Store + Clone>(s: &S) {
    const RESOURCES: [&str; 5] = [
        "deployments",
        "replicasets",
        "daemonsets",
        "statefulsets",
        "controllerrevisions",
    ];
    const OBJECTS: [&str; 3] = ["default/web", "kube-system/web", "default/web-2"];
    let start = s.current_revision().await.unwrap();
    let mut replica_sets = s.watch("/registry/replicasets/", start).await.unwrap();
    let mut revisions = BTreeMap::new();
    for resource in RESOURCES {
        for object in OBJECTS {
            let key = format!("/registry/{resource}/{object}");
            let revision = s.create(&key, key.as_bytes().to_vec()).await.unwrap();
            revisions.insert(key, revision);
        }
    }
    for resource in RESOURCES {
        let cases = [
            (
                format!("/registry/{resource}/"),
                vec!["default/web", "default/web-2", "kube-system/web"],
            ),
            (
                format!("/registry/{resource}/default/"),
                vec!["default/web", "default/web-2"],
            ),
        ];
        for (prefix, want) in cases {
            let page = s.list(&prefix, ListOptions::default()).await.unwrap();
            let keys: Vec<&str> = page.items.iter().map(|kv| kv.key.as_str()).collect();
            let want: Vec<String> = want
                .iter()
                .map(|object| format!("/registry/{resource}/{object}"))
                .collect();
            assert_eq!(keys, want, "list {prefix}");
        }
    }
    for object in OBJECTS {
        let event = next(&mut replica_sets).await;
        assert_eq!(
            (event.kind, event.kv.key.as_str()),
            (
                EventKind::Created,
                format!("/registry/replicasets/{object}").as_str()
            )
        );
    }
    let status_write = "/registry/replicasets/default/web";
    let updated = s
        .update(status_write, b"ready".to_vec(), revisions[status_write])
        .await
        .unwrap();
    let deleted = "/registry/replicasets/kube-system/web";
    s.delete(deleted, revisions[deleted]).await.unwrap();
    let event = next(&mut replica_sets).await;
    assert_eq!((event.kind, event.revision), (EventKind::Updated, updated));
    let event = next(&mut replica_sets).await;
    assert_eq!(
        (event.kind, event.kv.key.as_str()),
        (EventKind::Deleted, deleted)
    );
    let left = s
        .list("/registry/replicasets/", ListOptions::default())
        .await
        .unwrap();
    assert_eq!(left.items.len(), 2);
    assert_eq!(
        s.get("/registry/deployments/kube-system/web")
            .await
            .unwrap()
            .map(|kv| kv.value),
        Some(b"/registry/deployments/kube-system/web".to_vec())
    );
}

/// The keys the API server writes for the core types, as upstream's etcd
/// layout names them (Services and Endpoints under `services/`, cluster IPs
/// as IPAddress objects keyed by address, IPv6 included, the node-port
/// bitmap under `ranges/`): every type's prefix lists its own keys only, and
/// a watch of one type's prefix sees nothing of the others.
pub async fn upstream_key_layout_keeps_each_type_apart<S: Store + Clone>(s: &S) {
    let keys = [
        "/registry/configmaps/default/app",
        "/registry/secrets/default/db",
        "/registry/serviceaccounts/default/default",
        "/registry/services/specs/default/web",
        "/registry/services/endpoints/default/web",
        "/registry/endpointslices/default/web-x1",
        "/registry/resourcequotas/default/compute",
        "/registry/limitranges/default/defaults",
        "/registry/ipaddresses/10.96.0.1",
        "/registry/ipaddresses/fd00:10:96::a",
        "/registry/ranges/servicenodeports",
    ];
    let start = s.current_revision().await.unwrap();
    let mut services = s.watch("/registry/services/specs/", start).await.unwrap();
    for key in keys {
        s.create(key, key.as_bytes().to_vec()).await.unwrap();
    }
    let listed = |prefix: &'static str| async move {
        s.list(prefix, ListOptions::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|kv| kv.key)
            .collect::<Vec<_>>()
    };
    struct Case {
        prefix: &'static str,
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            prefix: "/registry/services/specs/",
            want: &["/registry/services/specs/default/web"],
        },
        Case {
            prefix: "/registry/services/endpoints/default/",
            want: &["/registry/services/endpoints/default/web"],
        },
        Case {
            prefix: "/registry/services/",
            want: &[
                "/registry/services/endpoints/default/web",
                "/registry/services/specs/default/web",
            ],
        },
        Case {
            prefix: "/registry/secrets/default/",
            want: &["/registry/secrets/default/db"],
        },
        Case {
            prefix: "/registry/ipaddresses/",
            want: &[
                "/registry/ipaddresses/10.96.0.1",
                "/registry/ipaddresses/fd00:10:96::a",
            ],
        },
        Case {
            prefix: "/registry/ranges/",
            want: &["/registry/ranges/servicenodeports"],
        },
    ];
    for case in cases {
        assert_eq!(listed(case.prefix).await, case.want, "{}", case.prefix);
    }
    let event = next(&mut services).await;
    assert_eq!(event.kv.key, "/registry/services/specs/default/web");
    let value = s
        .get("/registry/ipaddresses/fd00:10:96::a")
        .await
        .unwrap()
        .unwrap()
        .value;
    assert_eq!(value, b"/registry/ipaddresses/fd00:10:96::a");
}

/// PriorityClasses are cluster-scoped, as upstream lays them out
/// (`/registry/priorityclasses/<name>`): a list of the prefix holds the
/// system classes and a user's class, in name order, and a watch sees a
/// class deleted.
pub async fn priority_class_keys_are_cluster_scoped<S: Store + Clone>(s: &S) {
    const PREFIX: &str = "/registry/priorityclasses/";
    let start = s.current_revision().await.unwrap();
    let mut watch = s.watch(PREFIX, start).await.unwrap();
    let mut revisions = BTreeMap::new();
    for name in ["system-node-critical", "system-cluster-critical", "batch"] {
        let key = format!("{PREFIX}{name}");
        let revision = s.create(&key, name.as_bytes().to_vec()).await.unwrap();
        revisions.insert(name, revision);
    }
    let page = s.list(PREFIX, ListOptions::default()).await.unwrap();
    let names: Vec<&str> = page
        .items
        .iter()
        .map(|kv| &kv.key[PREFIX.len()..])
        .collect();
    assert_eq!(
        names,
        ["batch", "system-cluster-critical", "system-node-critical"]
    );
    s.delete(&format!("{PREFIX}batch"), revisions["batch"])
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(next(&mut watch).await.kind, EventKind::Created);
    }
    let event = next(&mut watch).await;
    assert_eq!(
        (event.kind, event.kv.key.as_str()),
        (EventKind::Deleted, "/registry/priorityclasses/batch")
    );
}

/// PodDisruptionBudgets live per namespace, as upstream lays them out
/// (`/registry/poddisruptionbudgets/<namespace>/<name>`), and the eviction
/// handler's status write is a compare-and-swap: of concurrent writes at
/// the revision they read, exactly one spends the budget.
pub async fn pod_disruption_budget_keys_are_namespaced_and_cas<S: Store + Clone>(s: &S) {
    const PREFIX: &str = "/registry/poddisruptionbudgets/";
    let mut revisions = BTreeMap::new();
    for key in ["default/web", "default/db", "kube-system/dns"] {
        let revision = s
            .create(&format!("{PREFIX}{key}"), key.as_bytes().to_vec())
            .await
            .unwrap();
        revisions.insert(key, revision);
    }
    let page = s
        .list(&format!("{PREFIX}default/"), ListOptions::default())
        .await
        .unwrap();
    let names: Vec<&str> = page
        .items
        .iter()
        .map(|kv| &kv.key[PREFIX.len()..])
        .collect();
    assert_eq!(names, ["default/db", "default/web"]);
    let web = format!("{PREFIX}default/web");
    let writes = futures::future::join_all(
        (0..8u8).map(|i| s.update(&web, vec![i], revisions["default/web"])),
    )
    .await;
    assert_eq!(writes.iter().filter(|w| w.is_ok()).count(), 1, "{writes:?}");
    assert!(
        writes
            .iter()
            .filter_map(|w| w.as_ref().err())
            .all(|e| e.is_conflict())
    );
}
