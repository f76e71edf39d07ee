//! Upstream's `TestEventCorrelator` and `TestEventSpamFilter`
//! (client-go `tools/record/events_cache_test.go`), and what a controller
//! creating thousands of pods ends up writing.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;

fn object_reference(kind: &str, name: &str, namespace: &str) -> ObjectReference {
    ObjectReference {
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        uid: Some("C934D34AFB20242".into()),
        api_version: Some("version".into()),
        ..ObjectReference::default()
    }
}

fn make_event(reason: &str, message: &str, involved: ObjectReference) -> Event {
    Event {
        reason: Some(reason.into()),
        message: Some(message.into()),
        involved_object: involved,
        source: Some(EventSource {
            component: Some("kubelet".into()),
            host: Some("kublet.node1".into()),
        }),
        count: Some(1),
        type_: Some("Normal".into()),
        ..Event::default()
    }
}

/// An Event about the pod all of upstream's cases use.
fn on_my_pod(reason: &str, message: &str) -> Event {
    make_event(reason, message, object_reference("Pod", "my-pod", "my-ns"))
}

fn make_events(n: usize, template: &Event) -> Vec<Event> {
    vec![template.clone(); n]
}

/// `makeUniqueEvents`: each of its own object, reason and message.
fn make_unique_events(n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| {
            make_event(
                &format!("reason-{i}"),
                &format!("message-{i}"),
                object_reference("Pod", &format!("pod-{i}"), &format!("ns-{i}")),
            )
        })
        .collect()
}

/// `makeSimilarEvents`: the template with a different message each.
fn make_similar_events(n: usize, template: &Event) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let mut event = template.clone();
            let message = event.message.clone().unwrap_or_default();
            event.message = Some(format!("{message}-{i}-{message}"));
            event
        })
        .collect()
}

fn with_count(mut event: Event, count: i32) -> Event {
    event.count = Some(count);
    event
}

/// Runs `previous` then `new` through one correlator, `interval` apart
/// three times per Event (upstream's interval clock moves at each of its
/// three reads: the test's stamp, the aggregator's and the rate limiter's).
fn correlate_after(previous: &[Event], new: &Event, interval: SignedDuration) -> Correlated {
    let start = Timestamp::from_second(1_700_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let mut correlator = EventCorrelator::new();
    let mut stamp = 0;
    let mut result = Correlated::Skip;
    for (i, event) in previous.iter().chain(std::iter::once(new)).enumerate() {
        let now = start + interval * (3 * i32::try_from(i).unwrap_or(i32::MAX));
        let mut event = event.clone();
        event.first_timestamp = Some(Time(now));
        event.last_timestamp = Some(Time(now));
        result = correlator.correlate(event, now, || {
            stamp += 1;
            stamp
        });
    }
    result
}

/// The written Event with what upstream's `validateEvent` leaves out of the
/// comparison (the timestamps and the name) cleared, and whether its
/// timestamps say it happened once.
fn comparable(event: &Event) -> (Event, bool) {
    let once = event.first_timestamp == event.last_timestamp;
    let mut event = event.clone();
    event.first_timestamp = None;
    event.last_timestamp = None;
    event.metadata.name = None;
    (event, once)
}

#[test]
fn correlator_counts_aggregates_and_filters_as_client_go() {
    let first = on_my_pod("first", "i am first");
    let duplicate = on_my_pod("duplicate", "me again");
    let unique = on_my_pod("unique", "snowflake");
    let mut similar = on_my_pod("similar", "similar message");
    similar.involved_object.field_path = Some("spec.containers{container1}".into());
    let aggregate = make_event(
        "similar",
        "(combined from similar events): similar message",
        similar.involved_object.clone(),
    );
    let mut similar_other_container = similar.clone();
    similar_other_container.involved_object.field_path = Some("spec.containers{container2}".into());

    struct Case {
        name: &'static str,
        previous: Vec<Event>,
        new: Event,
        interval_seconds: i64,
        /// `None`: skipped as spam.
        expected: Option<Event>,
        patched: bool,
    }
    let cases = [
        Case {
            name: "create-a-single-event",
            previous: vec![],
            new: first.clone(),
            interval_seconds: 5,
            expected: Some(with_count(first.clone(), 1)),
            patched: false,
        },
        Case {
            name: "the-same-event-should-just-count",
            previous: make_events(1, &duplicate),
            new: duplicate.clone(),
            interval_seconds: 5,
            expected: Some(with_count(duplicate.clone(), 2)),
            patched: true,
        },
        Case {
            name: "the-same-event-should-just-count-even-if-more-than-aggregate",
            previous: make_events(AGGREGATE_MAX_EVENTS, &duplicate),
            new: duplicate.clone(),
            interval_seconds: 30,
            expected: Some(with_count(duplicate.clone(), 11)),
            patched: true,
        },
        Case {
            name: "the-same-event-is-spam-if-happens-too-frequently",
            previous: make_events(26, &duplicate),
            new: duplicate.clone(),
            interval_seconds: 1,
            expected: None,
            patched: false,
        },
        Case {
            name: "create-many-unique-events",
            previous: make_unique_events(30),
            new: unique.clone(),
            interval_seconds: 5,
            expected: Some(with_count(unique.clone(), 1)),
            patched: false,
        },
        Case {
            name: "similar-events-should-aggregate-event",
            previous: make_similar_events(AGGREGATE_MAX_EVENTS - 1, &similar),
            new: similar.clone(),
            interval_seconds: 5,
            expected: Some(with_count(aggregate.clone(), 1)),
            patched: false,
        },
        Case {
            name: "similar-events-many-times-should-count-the-aggregate",
            previous: make_similar_events(AGGREGATE_MAX_EVENTS, &similar),
            new: similar.clone(),
            interval_seconds: 5,
            expected: Some(with_count(aggregate.clone(), 2)),
            patched: true,
        },
        Case {
            name: "events-from-different-containers-do-not-aggregate",
            previous: make_events(1, &similar_other_container),
            new: similar.clone(),
            interval_seconds: 5,
            expected: Some(with_count(similar.clone(), 1)),
            patched: false,
        },
        Case {
            name: "similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate",
            previous: make_similar_events(AGGREGATE_MAX_EVENTS - 1, &similar),
            new: similar.clone(),
            interval_seconds: 600,
            expected: Some(with_count(similar.clone(), 1)),
            patched: false,
        },
    ];
    for case in cases {
        let interval = SignedDuration::from_secs(case.interval_seconds);
        let result = correlate_after(&case.previous, &case.new, interval);
        let (event, patched) = match (result, &case.expected) {
            (Correlated::Skip, None) => continue,
            (Correlated::Create(event), Some(_)) => (event, false),
            (Correlated::Patch { event, .. }, Some(_)) => (event, true),
            (other, expected) => panic!("{}: {other:?}, expected {expected:?}", case.name),
        };
        let expected = case.expected.unwrap_or_default();
        let (event, once) = comparable(&event);
        let (expected, _) = comparable(&expected);
        assert_eq!(event, expected, "{}", case.name);
        assert_eq!(patched, case.patched, "{}", case.name);
        // Upstream's check: the timestamps differ exactly when counted.
        assert_eq!(once, expected.count == Some(1), "{}", case.name);
    }
}

#[test]
fn an_object_reference_is_spam_after_its_burst_whatever_the_reason() {
    let original = on_my_pod("original", "i am first");
    let different_reason = on_my_pod("duplicate", "me again");
    let other_object = make_event(
        "duplicate",
        "me again",
        object_reference("Pod", "other", "my-ns"),
    );
    let burst = make_events(25, &original);
    let interval = SignedDuration::from_secs(1);
    assert_eq!(
        correlate_after(&burst, &different_reason, interval),
        Correlated::Skip
    );
    assert!(matches!(
        correlate_after(&burst, &other_object, interval),
        Correlated::Create(_)
    ));
}

/// A patch carries exactly what changed from the first occurrence: the
/// count, the last timestamp and the message, as client-go's two-way merge
/// patch of the Event against one without them.
#[test]
fn a_repeated_event_is_a_patch_of_count_last_timestamp_and_message() {
    let event = make_event("Reason", "again", object_reference("Pod", "p", "ns"));
    let mut correlator = EventCorrelator::new();
    let first_at = Timestamp::from_second(1_700_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let later = first_at + SignedDuration::from_secs(7);
    let mut first = event.clone();
    first.metadata.name = Some("p.1".into());
    first.first_timestamp = Some(Time(first_at));
    first.last_timestamp = Some(Time(first_at));
    assert!(matches!(
        correlator.correlate(first, first_at, || 0),
        Correlated::Create(_)
    ));
    let mut second = event;
    second.metadata.name = Some("p.2".into());
    second.first_timestamp = Some(Time(later));
    second.last_timestamp = Some(Time(later));
    let Correlated::Patch { event, patch } = correlator.correlate(second, later, || 0) else {
        panic!("the second occurrence is not a patch");
    };
    assert_eq!(event.metadata.name.as_deref(), Some("p.1"));
    assert_eq!(event.first_timestamp, Some(Time(first_at)));
    assert_eq!(event.count, Some(2));
    assert_eq!(
        patch,
        serde_json::json!({
            "count": 2,
            "lastTimestamp": Time(later),
            "message": "again",
        })
    );
}

/// What a ReplicaSet creating 10,000 pods at once writes about itself: 9
/// Events, the combined one, 15 counts of it, then nothing until the
/// bucket refills (one more 5 minutes later).
#[test]
fn a_burst_of_creates_writes_twenty_five_events_about_the_owner() {
    let owner = object_reference("ReplicaSet", "web-abc", "default");
    let mut correlator = EventCorrelator::new();
    let start = Timestamp::from_second(1_700_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let mut created = Vec::new();
    let mut patched_counts = Vec::new();
    let mut skipped = 0;
    for i in 0..10_000 {
        let event = make_event(
            "SuccessfulCreate",
            &format!("Created pod: web-abc-{i}"),
            owner.clone(),
        );
        match correlator.correlate(event, start, || i) {
            Correlated::Skip => skipped += 1,
            Correlated::Create(event) => created.push(event.message.unwrap_or_default()),
            Correlated::Patch { event, .. } => patched_counts.push(event.count.unwrap_or(0)),
        }
    }
    assert_eq!(created.len(), 10);
    assert_eq!(created[8], "Created pod: web-abc-8");
    assert_eq!(
        created[9],
        "(combined from similar events): Created pod: web-abc-9"
    );
    assert_eq!(patched_counts, (2..=16).collect::<Vec<i32>>());
    assert_eq!(skipped, 10_000 - 25);
    let later = start + SignedDuration::from_secs(300);
    let event = make_event("SuccessfulCreate", "Created pod: web-abc-x", owner.clone());
    assert!(matches!(
        correlator.correlate(event.clone(), later, || 0),
        Correlated::Patch { .. }
    ));
    assert_eq!(correlator.correlate(event, later, || 0), Correlated::Skip);
}
