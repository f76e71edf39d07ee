//! Preemption where what keeps the pod off a node is a PodTopologySpread
//! or InterPodAffinity constraint, through the state machine: the dry run
//! takes each victim out of the counts those PreFilters made
//! (upstream's `RemovePod`) and puts the reprieved ones back (`AddPod`),
//! so evicting lower-priority pods cures the constraint, with no more
//! victims than it needs, and the counts serve the next cycles unchanged.

use berth_core::test_util::{make_node, make_pod, make_selector};
use k8s_openapi::api::core::v1::Pod;

use super::preemption_tests::{names, refusal, running, scheduler};
use super::*;
use crate::cycle::tests::allocatable;

const HOSTNAME: &str = "kubernetes.io/hostname";
const LOW: i32 = 0;
const PREEMPTOR: i32 = 100;
const HIGH: i32 = 1000;

fn labelled_node(s: &mut Scheduler, name: &str, cpu: &str, now: Instant) {
    s.upsert_node(
        make_node()
            .name(name)
            .label(HOSTNAME, name)
            .allocatable(&allocatable(cpu))
            .taints(vec![])
            .obj(),
        now,
    );
}

fn app(mut pod: Pod, app: &str) -> Pod {
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert("app".into(), app.into());
    pod
}

/// An `app=web` preemptor of 1 core spread by hostname (maxSkew 1,
/// DoNotSchedule).
fn spread_web(name: &str) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .label("app", "web")
        .req(&[("cpu", "1")])
        .priority(PREEMPTOR)
        .tolerations(vec![])
        .spread_constraint(
            1,
            HOSTNAME,
            "DoNotSchedule",
            Some(make_selector().label("app", "web").obj()),
            None,
            None,
            None,
            None,
        )
        .obj()
}

/// A preemptor of 1 core that must not share a host with `app=db`.
fn avoiding_db(name: &str) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .req(&[("cpu", "1")])
        .priority(PREEMPTOR)
        .tolerations(vec![])
        .pod_anti_affinity(
            HOSTNAME,
            make_selector().label("app", "db").obj(),
            vec![],
            None,
        )
        .obj()
}

/// A low-priority `app=db` pod on `node` that will not share a host with
/// `app=web` (the existing pod's anti-affinity, checked against the
/// incoming pod).
fn db_avoiding_web(name: &str, node: &str) -> Pod {
    let mut pod = app(running(name, node, "1", LOW), "db");
    let terms = make_pod()
        .pod_anti_affinity(
            HOSTNAME,
            make_selector().label("app", "web").obj(),
            vec![],
            None,
        )
        .obj();
    pod.spec.get_or_insert_default().affinity = terms.spec.and_then(|s| s.affinity);
    pod
}

/// Node `a` (8 cores: cpu is never its problem) carries what the
/// constraint counts; node `b` is full with a pod of higher priority than
/// the preemptor (no victim there). Each case's preemptor fits nowhere
/// because of the constraint on `a`, and evicting some of `a`'s
/// lower-priority pods cures it.
#[tokio::test(start_paused = true)]
async fn victims_are_taken_out_of_spread_and_affinity_counts_in_the_dry_run() {
    struct Case {
        name: &'static str,
        /// Pods on `a`, all of priority 0.
        on_a: Vec<Pod>,
        /// The pod filling `b` (priority 1000).
        on_b: Pod,
        preemptor: Pod,
        want_victims: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "a spread constraint: a holds 2 web pods, b 1; evicting one makes the skew 1",
            on_a: vec![
                app(running("web-1", "a", "1", LOW), "web"),
                app(running("web-2", "a", "1", LOW), "web"),
                running("other", "a", "1", LOW),
            ],
            on_b: app(running("web-b", "b", "4", HIGH), "web"),
            preemptor: spread_web("new-web"),
            want_victims: &["web-2"],
        },
        Case {
            name: "the incoming pod's anti-affinity: the db pod on a goes, the other pod stays",
            on_a: vec![
                app(running("db", "a", "1", LOW), "db"),
                running("other", "a", "1", LOW),
            ],
            on_b: running("full", "b", "4", HIGH),
            preemptor: avoiding_db("new"),
            want_victims: &["db"],
        },
        Case {
            name: "an existing pod's anti-affinity against the incoming pod",
            on_a: vec![db_avoiding_web("db", "a"), running("other", "a", "1", LOW)],
            on_b: running("full", "b", "4", HIGH),
            preemptor: app(
                make_pod()
                    .name("new-web")
                    .namespace("default")
                    .uid("new-web")
                    .req(&[("cpu", "1")])
                    .priority(PREEMPTOR)
                    .tolerations(vec![])
                    .obj(),
                "web",
            ),
            want_victims: &["db"],
        },
    ];
    for case in cases {
        let mut s = scheduler();
        let now = Instant::now();
        labelled_node(&mut s, "a", "8", now);
        labelled_node(&mut s, "b", "4", now);
        for pod in case.on_a {
            s.upsert_pod(pod, now);
        }
        s.upsert_pod(case.on_b, now);
        s.upsert_pod(case.preemptor.clone(), now);
        let r = refusal(s.schedule_one(now));
        let preemption = r
            .preemption
            .unwrap_or_else(|| panic!("{}: no preemption: {}", case.name, r.error));
        assert_eq!(preemption.node, "a", "{}", case.name);
        assert_eq!(
            names(&preemption.victims),
            case.want_victims,
            "{}",
            case.name
        );

        // The dry run put every victim back in the counts: the same pod
        // asked again (its nomination dropped) preempts the same way, and
        // once the victims are gone it lands on a.
        let key = format!(
            "default/{}",
            case.preemptor.metadata.name.clone().unwrap_or_default()
        );
        s.delete_pod(&key, now);
        s.upsert_pod(case.preemptor.clone(), now);
        let again = refusal(s.schedule_one(now));
        assert_eq!(
            again.preemption.map(|p| names(&p.victims)),
            Some(case.want_victims.iter().map(|v| v.to_string()).collect()),
            "{}: the counts were restored",
            case.name
        );
        // Past the pod's backoff (10 s at most).
        let later = now + std::time::Duration::from_secs(11);
        for victim in case.want_victims {
            s.delete_pod(&format!("default/{victim}"), later);
        }
        match s.schedule_one(later) {
            Some(Decision::Bind(b)) => assert_eq!(b.result.node, "a", "{}", case.name),
            other => panic!("{}: expected a binding, got {other:?}", case.name),
        }
    }
}
