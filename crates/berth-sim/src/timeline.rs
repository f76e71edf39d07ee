//! The timeline: what happened, one entry per change, in virtual time.
//!
//! Entries are derived from the API objects as a watcher sees them change
//! ([`node_entries`], [`pod_entries`], [`replica_set_entries`],
//! [`event_entries`]): plain functions
//! of the old and new object, tested without a server (an eviction's due
//! time is berth-core's rule, [`berth_core::eviction`]). Written as JSON
//! lines, `t` in seconds since the start of the run:
//!
//! ```json
//! {"t":55.0,"event":"NodeStatusUnknown","node":"node1"}
//! {"t":60.0,"event":"ReplicaSetScaled","replicaset":"default/web-6f7c9d","owner":"Deployment/web","replicas":6}
//! {"t":60.0,"event":"PodCreated","pod":"default/web-6f7c9d-x2b9q","owner":"ReplicaSet/web-6f7c9d"}
//! ```
//!
//! Order is total and stable, and keeps causes before effects within one
//! instant: by time; then by [`EventKind`] in its declared order (a node's
//! state, its zone's, its taints, a ReplicaSet's size, then pods ending
//! before pods starting, see [`EventKind`]); then
//! by the subject (node, pod, zone, taint, condition, ReplicaSet, owner); and what happened to one subject
//! in one instant keeps the order it happened in, the recorder's sequence
//! number ([`Entry::seq`]). Changes to different subjects in one instant
//! (two pods bound by concurrent requests) reach the recorder in either
//! order from run to run, so they are ordered by name, and the same
//! scenario and seed give the same bytes.

use std::collections::BTreeSet;
use std::io::Write;

use berth_core::pod::PodKey;
use berth_core::taint_spec::format_taint;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Virtual time since the start of the run, in milliseconds.
pub type Millis = u64;

/// `1h30m5.5s` style, as the scenario writes durations.
pub fn format_t(t: Millis) -> String {
    use std::fmt::Write as _;
    if t == 0 {
        return "0s".into();
    }
    let (h, rest) = (t / 3_600_000, t % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 || (h > 0 && rest > 0) {
        let _ = write!(out, "{m}m");
    }
    if rest > 0 {
        if rest % 1000 == 0 {
            let _ = write!(out, "{}s", rest / 1000);
        } else {
            let _ = write!(out, "{}s", rest as f64 / 1000.0);
        }
    }
    out
}

/// What happened. The declaration order is the order of entries at the
/// same instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventKind {
    NodeReady,
    NodeNotReady,
    NodeStatusUnknown,
    /// A condition other than Ready turned True, or stopped being True
    /// (`condition`, `status`).
    NodeCondition,
    ZoneStateChanged,
    NodeCordoned,
    NodeUncordoned,
    TaintAdded,
    TaintRemoved,
    /// A ReplicaSet's `spec.replicas` changed (`replicaset`, its `owner`,
    /// the new `replicas`); a new one counts from 0. Before the pods it
    /// makes or deletes.
    ReplicaSetScaled,
    // A pod's end comes before any pod's start: a replacement follows the
    // pod it replaces (an evicted replica, a StatefulSet pod deleted and
    // made again under its name). Only a pod made and ended within one
    // instant reads out of order.
    EvictionCancelled,
    PodEvicted,
    /// The pod's deletion began (`deletionTimestamp` set); it is gone at
    /// `PodDeleted`, which a dead node's pod waits for.
    PodTerminating,
    PodFailed,
    PodDeleted,
    /// A pod was created (`owner`: its controller, `Kind/name`).
    PodCreated,
    PodScheduled,
    FailedScheduling,
}

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(with = "seconds")]
    pub t: Millis,
    pub event: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `namespace/name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// `key=value:Effect`, as `kubectl` writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `namespace/name` of a ReplicaSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicaset: Option<String>,
    /// The controller (`Kind/name`, same namespace) of the pod or
    /// ReplicaSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// For `PodEvicted`: when the eviction was due by the objects (the
    /// NoExecute taints' `timeAdded` and the tolerations' seconds).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_seconds")]
    pub due: Option<Millis>,
    /// For `PodEvicted`: the pod's toleration of `taint` (the taint whose
    /// eviction came first) that set `due`; `"none"` when nothing
    /// tolerated it (berth-core's `due_with_cause`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration: Option<String>,
    /// The order the recorder saw this entry's change in, among the
    /// entries of its instant about the same subject. Not written: the
    /// JSON lines are in this order.
    #[serde(skip)]
    pub seq: u64,
}

impl Entry {
    pub fn new(t: Millis, event: EventKind) -> Entry {
        Entry {
            t,
            event,
            node: None,
            pod: None,
            taint: None,
            condition: None,
            status: None,
            zone: None,
            state: None,
            reason: None,
            message: None,
            replicaset: None,
            owner: None,
            replicas: None,
            due: None,
            toleration: None,
            seq: 0,
        }
    }

    fn with_node(mut self, node: &str) -> Entry {
        self.node = Some(node.to_owned());
        self
    }

    fn with_pod(mut self, pod: String) -> Entry {
        self.pod = Some(pod);
        self
    }

    /// The zone state entry.
    pub fn zone_state(t: Millis, zone: &str, state: &str) -> Entry {
        let mut e = Entry::new(t, EventKind::ZoneStateChanged);
        e.zone = Some(zone.to_owned());
        e.state = Some(state.to_owned());
        e
    }

    /// The total order of the timeline.
    fn sort_key(&self) -> impl Ord + '_ {
        (
            self.t,
            self.event,
            (
                &self.node,
                &self.pod,
                &self.zone,
                &self.taint,
                &self.condition,
                &self.replicaset,
                &self.owner,
            ),
            self.seq,
            (
                &self.status,
                &self.state,
                &self.reason,
                &self.message,
                self.replicas,
                self.due,
                &self.toleration,
            ),
        )
    }
}

/// Sorts entries into timeline order.
pub fn sort(entries: &mut [Entry]) {
    entries.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}

/// Writes entries as JSON lines.
pub fn write_jsonl(entries: &[Entry], out: &mut impl Write) -> std::io::Result<()> {
    for entry in entries {
        serde_json::to_writer(&mut *out, entry)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads a timeline written by [`write_jsonl`].
pub fn read_jsonl(text: &str) -> Result<Vec<Entry>, serde_json::Error> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

mod seconds {
    use super::Millis;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Millis, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*t as f64 / 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Millis, D::Error> {
        let seconds = f64::deserialize(d)?;
        Ok((seconds * 1000.0).round().max(0.0) as Millis)
    }
}

mod opt_seconds {
    use super::Millis;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<Millis>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_f64(*t as f64 / 1000.0),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Millis>, D::Error> {
        let seconds = Option::<f64>::deserialize(d)?;
        Ok(seconds.map(|s| (s * 1000.0).round().max(0.0) as Millis))
    }
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

fn node_taints(node: Option<&Node>) -> BTreeSet<String> {
    node.and_then(|n| n.spec.as_ref())
        .and_then(|s| s.taints.as_ref())
        .map(|ts| ts.iter().map(format_taint).collect())
        .unwrap_or_default()
}

fn node_condition(node: Option<&Node>, kind: &str) -> Option<String> {
    node?
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

fn unschedulable(node: Option<&Node>) -> bool {
    node.and_then(|n| n.spec.as_ref())
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// Conditions other than Ready whose changes the timeline shows.
const OTHER_CONDITIONS: &[&str] = &[
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
];

/// What changed on a node between two observations (`old` is `None` the
/// first time the node is seen).
pub fn node_entries(t: Millis, old: Option<&Node>, new: &Node) -> Vec<Entry> {
    let name = node_name(new);
    let mut out = Vec::new();
    let (was, is) = (
        node_condition(old, "Ready"),
        node_condition(Some(new), "Ready"),
    );
    if was != is {
        let kind = match is.as_deref() {
            Some("True") => Some(EventKind::NodeReady),
            Some("False") => Some(EventKind::NodeNotReady),
            Some("Unknown") => Some(EventKind::NodeStatusUnknown),
            _ => None,
        };
        if let Some(kind) = kind {
            out.push(Entry::new(t, kind).with_node(name));
        }
    }
    for kind in OTHER_CONDITIONS {
        let (was, is) = (node_condition(old, kind), node_condition(Some(new), kind));
        // News is a condition turning True or ending being True; its
        // going Unknown with the node's Ready is told by NodeStatusUnknown.
        let news = was != is
            && is.is_some()
            && (is.as_deref() == Some("True") || was.as_deref() == Some("True"));
        if news {
            let mut e = Entry::new(t, EventKind::NodeCondition).with_node(name);
            e.condition = Some((*kind).to_owned());
            e.status = is;
            out.push(e);
        }
    }
    match (unschedulable(old), unschedulable(Some(new))) {
        (false, true) => out.push(Entry::new(t, EventKind::NodeCordoned).with_node(name)),
        (true, false) => out.push(Entry::new(t, EventKind::NodeUncordoned).with_node(name)),
        _ => {}
    }
    let (before, after) = (node_taints(old), node_taints(Some(new)));
    for taint in after.difference(&before) {
        let mut e = Entry::new(t, EventKind::TaintAdded).with_node(name);
        e.taint = Some(taint.clone());
        out.push(e);
    }
    for taint in before.difference(&after) {
        let mut e = Entry::new(t, EventKind::TaintRemoved).with_node(name);
        e.taint = Some(taint.clone());
        out.push(e);
    }
    out
}

/// `namespace/name` of a pod.
pub fn pod_key(pod: &Pod) -> String {
    pod_subject(&berth_core::pod::pod_key(pod))
}

/// `namespace/name` of the pod with this key: the timeline's name of it.
pub fn pod_subject(key: &PodKey) -> String {
    format!("{}/{}", key.namespace, key.name)
}

fn pod_node(pod: Option<&Pod>) -> Option<&str> {
    pod?.spec
        .as_ref()?
        .node_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

fn pod_phase(pod: Option<&Pod>) -> Option<&str> {
    pod?.status.as_ref()?.phase.as_deref()
}

/// `Kind/name` of an object's controller (the owner reference with
/// `controller: true`).
pub fn controller_of(meta: &ObjectMeta) -> Option<String> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| format!("{}/{}", r.kind, r.name))
}

fn terminating(pod: Option<&Pod>) -> bool {
    pod.is_some_and(|p| p.metadata.deletion_timestamp.is_some())
}

/// What changed on a pod; `old` is `None` when it is new, `new` is `None`
/// when it was deleted.
pub fn pod_entries(t: Millis, old: Option<&Pod>, new: Option<&Pod>) -> Vec<Entry> {
    let mut out = Vec::new();
    let Some(pod) = new.or(old) else {
        return out;
    };
    let key = pod_key(pod);
    let Some(new) = new else {
        let mut e = Entry::new(t, EventKind::PodDeleted).with_pod(key);
        e.node = pod_node(old).map(str::to_owned);
        out.push(e);
        return out;
    };
    if old.is_none() {
        let mut e = Entry::new(t, EventKind::PodCreated).with_pod(key.clone());
        e.owner = controller_of(&new.metadata);
        out.push(e);
    }
    if terminating(Some(new)) && !terminating(old) {
        let mut e = Entry::new(t, EventKind::PodTerminating).with_pod(key.clone());
        e.node = pod_node(Some(new)).map(str::to_owned);
        out.push(e);
    }
    if let (None, Some(node)) = (pod_node(old), pod_node(Some(new))) {
        out.push(
            Entry::new(t, EventKind::PodScheduled)
                .with_pod(key.clone())
                .with_node(node),
        );
    }
    if pod_phase(Some(new)) == Some("Failed") && pod_phase(old) != Some("Failed") {
        let mut e = Entry::new(t, EventKind::PodFailed).with_pod(key);
        e.node = pod_node(Some(new)).map(str::to_owned);
        e.reason = new.status.as_ref().and_then(|s| s.reason.clone());
        out.push(e);
    }
    out
}

/// What changed on a ReplicaSet: its size (`spec.replicas`, 1 when
/// unset); a new ReplicaSet counts from 0, so one created empty is no news.
pub fn replica_set_entries(t: Millis, old: Option<&ReplicaSet>, new: &ReplicaSet) -> Vec<Entry> {
    let size = |rs: &ReplicaSet| rs.spec.replicas.unwrap_or(1);
    let before = old.map_or(0, size);
    let after = size(new);
    if before == after {
        return Vec::new();
    }
    let mut e = Entry::new(t, EventKind::ReplicaSetScaled);
    e.replicaset = Some(format!(
        "{}/{}",
        new.metadata.namespace.as_deref().unwrap_or(""),
        new.metadata.name.as_deref().unwrap_or("")
    ));
    e.owner = controller_of(&new.metadata);
    e.replicas = Some(after);
    vec![e]
}

/// How many times an Event has happened (its own count plus a series').
fn occurrences(event: &Event) -> i32 {
    event.count.unwrap_or(1).max(1) + event.series.as_ref().and_then(|s| s.count).unwrap_or(0)
}

/// What an Event (core/v1, which also holds events.k8s.io ones) tells
/// the timeline: a new Event, or one whose count went up, is an entry.
pub fn event_entries(t: Millis, old: Option<&Event>, new: &Event) -> Vec<Entry> {
    if old.is_some_and(|o| occurrences(o) >= occurrences(new)) {
        return Vec::new();
    }
    let object = &new.involved_object;
    if object.kind.as_deref().is_some_and(|k| k != "Pod") {
        return Vec::new();
    }
    let pod = format!(
        "{}/{}",
        object.namespace.as_deref().unwrap_or(""),
        object.name.as_deref().unwrap_or("")
    );
    let message = new.message.clone().unwrap_or_default();
    let kind = match new.reason.as_deref() {
        Some("FailedScheduling") => EventKind::FailedScheduling,
        Some("TaintManagerEviction") if message.starts_with("Marking for deletion") => {
            EventKind::PodEvicted
        }
        Some("TaintManagerEviction") if message.starts_with("Cancelling deletion") => {
            EventKind::EvictionCancelled
        }
        _ => return Vec::new(),
    };
    let mut e = Entry::new(t, kind).with_pod(pod);
    if kind == EventKind::FailedScheduling {
        e.message = Some(message);
    }
    vec![e]
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_node, make_pod, taint};
    use serde_json::json;

    /// A case: what changed (old, new) and the entries wanted.
    struct Case<'a, Old, New> {
        name: &'a str,
        old: Old,
        new: New,
        /// Each entry's kind and its details (taint, condition, status,
        /// reason).
        want: Vec<(EventKind, &'a str)>,
    }

    fn owned(want: Vec<(EventKind, &str)>) -> Vec<(EventKind, String)> {
        want.into_iter().map(|(k, d)| (k, d.to_owned())).collect()
    }

    fn events(entries: &[Entry]) -> Vec<(EventKind, String)> {
        entries
            .iter()
            .map(|e| {
                let detail = [&e.taint, &e.condition, &e.status, &e.reason]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ");
                (e.event, detail)
            })
            .collect()
    }

    #[test]
    fn node_changes_become_entries() {
        let ready = |status: &str, taints: Vec<k8s_openapi::api::core::v1::Taint>| {
            make_node()
                .name("n1")
                .taints(taints)
                .condition("Ready", status)
                .condition("MemoryPressure", "False")
                .obj()
        };
        let registered = ready("True", vec![]);
        let unknown = ready(
            "Unknown",
            vec![taint("node.kubernetes.io/unreachable", "", "NoExecute")],
        );
        let mut pressure = registered.clone();
        if let Some(cs) = pressure.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            cs[1].status = "True".into();
        }
        // The controller sets every condition Unknown together.
        let mut all_unknown = unknown.clone();
        if let Some(cs) = all_unknown
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
        {
            cs[1].status = "Unknown".into();
        }
        let mut cordoned = registered.clone();
        if let Some(spec) = cordoned.spec.as_mut() {
            spec.unschedulable = Some(true);
        }
        let cases: Vec<Case<'_, Option<&Node>, &Node>> = vec![
            Case {
                name: "first sight: Ready; healthy conditions are no news",
                old: None,
                new: &registered,
                want: vec![(EventKind::NodeReady, "")],
            },
            Case {
                name: "no change",
                old: Some(&registered),
                new: &registered,
                want: vec![],
            },
            Case {
                name: "heartbeats stop",
                old: Some(&registered),
                new: &unknown,
                want: vec![
                    (EventKind::NodeStatusUnknown, ""),
                    (
                        EventKind::TaintAdded,
                        "node.kubernetes.io/unreachable:NoExecute",
                    ),
                ],
            },
            Case {
                name: "pressure going Unknown with Ready is told once",
                old: Some(&registered),
                new: &all_unknown,
                want: vec![
                    (EventKind::NodeStatusUnknown, ""),
                    (
                        EventKind::TaintAdded,
                        "node.kubernetes.io/unreachable:NoExecute",
                    ),
                ],
            },
            Case {
                name: "back",
                old: Some(&unknown),
                new: &registered,
                want: vec![
                    (EventKind::NodeReady, ""),
                    (
                        EventKind::TaintRemoved,
                        "node.kubernetes.io/unreachable:NoExecute",
                    ),
                ],
            },
            Case {
                name: "memory pressure",
                old: Some(&registered),
                new: &pressure,
                want: vec![(EventKind::NodeCondition, "MemoryPressure True")],
            },
            Case {
                name: "cordon",
                old: Some(&registered),
                new: &cordoned,
                want: vec![(EventKind::NodeCordoned, "")],
            },
        ];
        for case in cases {
            let got = node_entries(7_000, case.old, case.new);
            assert_eq!(events(&got), owned(case.want), "{}", case.name);
            assert!(
                got.iter()
                    .all(|e| e.t == 7_000 && e.node.as_deref() == Some("n1"))
            );
        }
    }

    #[test]
    fn pod_changes_become_entries() {
        let web = || make_pod().name("web").namespace("default");
        let pending = web().obj();
        let bound = web().node("n1").obj();
        let mut failed = web().node("n1").phase("Failed").obj();
        if let Some(status) = failed.status.as_mut() {
            status.reason = Some("Shutdown".into());
        }
        let mut terminating = bound.clone();
        terminating.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let cases: Vec<Case<'_, Option<&Pod>, Option<&Pod>>> = vec![
            Case {
                name: "created pending",
                old: None,
                new: Some(&pending),
                want: vec![(EventKind::PodCreated, "")],
            },
            Case {
                name: "deletion begins on its node",
                old: Some(&bound),
                new: Some(&terminating),
                want: vec![(EventKind::PodTerminating, "")],
            },
            Case {
                name: "still terminating",
                old: Some(&terminating),
                new: Some(&terminating),
                want: vec![],
            },
            Case {
                name: "scheduled",
                old: Some(&pending),
                new: Some(&bound),
                want: vec![(EventKind::PodScheduled, "")],
            },
            Case {
                name: "created bound",
                old: None,
                new: Some(&bound),
                want: vec![(EventKind::PodCreated, ""), (EventKind::PodScheduled, "")],
            },
            Case {
                name: "failed",
                old: Some(&bound),
                new: Some(&failed),
                want: vec![(EventKind::PodFailed, "Shutdown")],
            },
            Case {
                name: "deleted",
                old: Some(&bound),
                new: None,
                want: vec![(EventKind::PodDeleted, "")],
            },
        ];
        for case in cases {
            let got = pod_entries(1, case.old, case.new);
            assert_eq!(events(&got), owned(case.want), "{}", case.name);
            assert!(
                got.iter().all(|e| e.pod.as_deref() == Some("default/web")),
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn a_pod_created_by_a_controller_names_its_owner() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-6f7c9d-x2b9q", "namespace": "default", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-a-controller", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-6f7c9d", "uid": "2", "controller": true},
            ]},
        }))
        .unwrap_or_default();
        let got = pod_entries(5, None, Some(&pod));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event, EventKind::PodCreated);
        assert_eq!(got[0].owner.as_deref(), Some("ReplicaSet/web-6f7c9d"));
        assert_eq!(
            pod_entries(5, None, Some(&make_pod().name("bare").obj()))[0].owner,
            None
        );
    }

    #[test]
    fn a_replica_set_changing_size_is_scaled() {
        let rs = |replicas: Option<i32>| -> ReplicaSet {
            serde_json::from_value(json!({
                "metadata": {"name": "web-6f7c9d", "namespace": "default", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1", "controller": true},
                ]},
                "spec": {"replicas": replicas, "selector": {}},
            }))
            .unwrap_or_default()
        };
        struct Case<'a> {
            name: &'a str,
            old: Option<ReplicaSet>,
            new: ReplicaSet,
            want: Option<i32>,
        }
        let cases = [
            Case {
                name: "created with replicas",
                old: None,
                new: rs(Some(3)),
                want: Some(3),
            },
            Case {
                name: "created empty: no news",
                old: None,
                new: rs(Some(0)),
                want: None,
            },
            Case {
                name: "unset means 1",
                old: None,
                new: rs(None),
                want: Some(1),
            },
            Case {
                name: "scaled up",
                old: Some(rs(Some(3))),
                new: rs(Some(6)),
                want: Some(6),
            },
            Case {
                name: "scaled to zero",
                old: Some(rs(Some(3))),
                new: rs(Some(0)),
                want: Some(0),
            },
            Case {
                name: "status change only",
                old: Some(rs(Some(3))),
                new: rs(Some(3)),
                want: None,
            },
        ];
        for case in cases {
            let got = replica_set_entries(9, case.old.as_ref(), &case.new);
            assert_eq!(
                got.first().and_then(|e| e.replicas),
                case.want,
                "{}",
                case.name
            );
            for e in got {
                assert_eq!(e.event, EventKind::ReplicaSetScaled);
                assert_eq!(e.replicaset.as_deref(), Some("default/web-6f7c9d"));
                assert_eq!(e.owner.as_deref(), Some("Deployment/web"));
            }
        }
    }

    #[test]
    fn events_become_entries_once_per_occurrence() {
        let event = |reason: &str, message: &str, count: i32| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": "e", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
                "reason": reason, "message": message, "count": count,
            }))
            .unwrap_or_default()
        };
        let failed = event("FailedScheduling", "0/3 nodes are available", 1);
        let again = event("FailedScheduling", "0/3 nodes are available", 2);
        let marking = event(
            "TaintManagerEviction",
            "Marking for deletion Pod default/web",
            1,
        );
        let cancel = event(
            "TaintManagerEviction",
            "Cancelling deletion of Pod default/web",
            1,
        );
        let other = event("Scheduled", "Successfully assigned", 1);
        struct Seen<'a> {
            name: &'a str,
            old: Option<&'a Event>,
            new: &'a Event,
            want: Vec<EventKind>,
        }
        let cases = vec![
            Seen {
                name: "failed scheduling",
                old: None,
                new: &failed,
                want: vec![EventKind::FailedScheduling],
            },
            Seen {
                name: "counted again",
                old: Some(&failed),
                new: &again,
                want: vec![EventKind::FailedScheduling],
            },
            Seen {
                name: "unchanged",
                old: Some(&again),
                new: &again,
                want: vec![],
            },
            Seen {
                name: "marking",
                old: None,
                new: &marking,
                want: vec![EventKind::PodEvicted],
            },
            Seen {
                name: "cancelling",
                old: None,
                new: &cancel,
                want: vec![EventKind::EvictionCancelled],
            },
            Seen {
                name: "other reasons",
                old: None,
                new: &other,
                want: vec![],
            },
        ];
        for case in cases {
            let got: Vec<EventKind> = event_entries(1, case.old, case.new)
                .iter()
                .map(|e| e.event)
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
        let e = &event_entries(1, None, &failed)[0];
        assert_eq!(e.message.as_deref(), Some("0/3 nodes are available"));
        assert_eq!(e.pod.as_deref(), Some("default/web"));
    }

    /// Within an instant, what happened to one subject keeps the order the
    /// recorder saw it in (its sequence number), while different subjects
    /// are ordered by name whatever order they arrived in.
    #[test]
    fn one_subject_keeps_its_order_within_an_instant() {
        struct Case {
            name: &'static str,
            /// In the order the recorder saw them.
            seen: Vec<Entry>,
            /// Their order in the timeline, as indexes into `seen`.
            want: Vec<usize>,
        }
        let numbered = |seen: Vec<Entry>| -> Vec<Entry> {
            seen.into_iter()
                .enumerate()
                .map(|(seq, e)| Entry {
                    seq: seq as u64,
                    ..e
                })
                .collect()
        };
        let failed = |pod: &str, message: &str| {
            let mut e = Entry::new(5_000, EventKind::FailedScheduling).with_pod(pod.into());
            e.message = Some(message.into());
            e
        };
        let condition = |status: &str| {
            let mut e = Entry::new(5_000, EventKind::NodeCondition).with_node("n1");
            e.condition = Some("MemoryPressure".into());
            e.status = Some(status.into());
            e
        };
        let cases = [
            Case {
                name: "a zone passing through a state",
                seen: vec![
                    Entry::zone_state(5_000, "a", "PartialDisruption"),
                    Entry::zone_state(5_000, "a", "FullDisruption"),
                ],
                want: vec![0, 1],
            },
            Case {
                name: "a pod failing twice",
                seen: vec![failed("default/p", "z"), failed("default/p", "a")],
                want: vec![0, 1],
            },
            Case {
                name: "a condition turning True and back",
                seen: vec![condition("True"), condition("False")],
                want: vec![0, 1],
            },
            Case {
                name: "two pods: by name, whichever came first",
                seen: vec![
                    Entry::new(5_000, EventKind::PodScheduled).with_pod("default/b".into()),
                    Entry::new(5_000, EventKind::PodScheduled).with_pod("default/a".into()),
                ],
                want: vec![1, 0],
            },
            Case {
                name: "causes before effects: the node's state before its taint",
                seen: vec![
                    Entry::new(5_000, EventKind::TaintAdded).with_node("n1"),
                    Entry::new(5_000, EventKind::NodeStatusUnknown).with_node("n1"),
                ],
                want: vec![1, 0],
            },
        ];
        for case in cases {
            let seen = numbered(case.seen);
            let mut sorted = seen.clone();
            sort(&mut sorted);
            let want: Vec<Entry> = case.want.iter().map(|&i| seen[i].clone()).collect();
            assert_eq!(sorted, want, "{}", case.name);
        }
    }

    #[test]
    fn the_order_is_time_then_kind_then_fields_and_json_round_trips() {
        let mut entries = vec![
            Entry::new(2_000, EventKind::PodEvicted).with_pod("default/b".into()),
            Entry::new(2_000, EventKind::PodEvicted).with_pod("default/a".into()),
            Entry::new(2_000, EventKind::TaintAdded).with_node("n1"),
            Entry::new(1_500, EventKind::PodDeleted).with_pod("default/c".into()),
        ];
        sort(&mut entries);
        let mut out = Vec::new();
        let written = write_jsonl(&entries, &mut out);
        assert!(written.is_ok());
        let text = String::from_utf8(out).unwrap_or_default();
        assert_eq!(
            text,
            concat!(
                "{\"t\":1.5,\"event\":\"PodDeleted\",\"pod\":\"default/c\"}\n",
                "{\"t\":2.0,\"event\":\"TaintAdded\",\"node\":\"n1\"}\n",
                "{\"t\":2.0,\"event\":\"PodEvicted\",\"pod\":\"default/a\"}\n",
                "{\"t\":2.0,\"event\":\"PodEvicted\",\"pod\":\"default/b\"}\n",
            )
        );
        assert_eq!(read_jsonl(&text).ok(), Some(entries));
    }
}
