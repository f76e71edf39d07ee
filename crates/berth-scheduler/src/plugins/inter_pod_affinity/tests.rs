//! Upstream's tables (interpodaffinity): `TestRequiredAffinitySingleNode`,
//! `TestRequiredAffinityMultipleNodes` and `TestPreFilterDisabled`
//! (filtering_test.go), cases of `TestPreferredAffinity` and
//! `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`
//! (scoring_test.go), with namespace selectors, and
//! `Test_isSchedulableAfterPodChange` / `Test_isSchedulableAfterNodeChange`
//! (plugin_test.go).
//!
//! Not ported: `TestPreFilterStateAddRemovePod`, `TestPreFilterStateClone`
//! and `TestGetTPMapMatchingIncomingAffinityAntiAffinity`
//! (filtering_test.go) assert upstream's `preFilterState` maps and its
//! AddPod/RemovePod extensions; berth keeps the counts in the cycle
//! memory (`counts`), brought forward over the snapshot's pod log, and its
//! framework has no PreFilter extensions (upstream's AddPod/RemovePod,
//! which only preemption calls). What those counts decide
//! is checked through Filter by the two required-affinity tables.

use std::collections::BTreeMap;

use super::*;
use crate::framework::{
    Code, CycleState, FilterPlugin, NodeInfo, NodeScore, PodInfo, PreFilterPlugin, PreScorePlugin,
    ScorePlugin, Snapshot, Status,
};
use crate::plugins::testing::node_infos;
use berth_core::test_util::{PodWrapper, make_node, make_pod, make_selector};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

fn exists(key: &str) -> LabelSelector {
    make_selector().exists(key).obj()
}

fn is_in(key: &str, values: Vec<&str>) -> LabelSelector {
    make_selector().r#in(key, values).obj()
}

const CHINA: &[(&str, &str)] = &[("region", "China")];
const CHINA_AZ1: &[(&str, &str)] = &[("region", "China"), ("az", "az1")];
const INDIA: &[(&str, &str)] = &[("region", "India")];

fn abc(name: &str, zone: &str) -> Node {
    make_node()
        .name(name)
        .labels(&[("region", "r1"), ("zone", zone), ("hostname", name)])
        .obj()
}

fn unschedulable(reason: &'static str) -> Status {
    Status::new(Code::Unschedulable, reason).with_plugin(NAME)
}

fn unresolvable(reason: &'static str) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, reason).with_plugin(NAME)
}

struct FilterCase {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    namespaces: &'static [(&'static str, &'static [(&'static str, &'static str)])],
    /// `None`: PreFilter skips.
    want: Option<Vec<Status>>,
}

fn namespaces(entries: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, BTreeMap<String, String>> {
    entries
        .iter()
        .map(|(n, l)| {
            (
                n.to_string(),
                l.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        })
        .collect()
}

/// PreFilter's status and, when it succeeds, Filter's on each node.
fn pre_filter_then_filter(
    pod: Pod,
    pods: &[Pod],
    nodes: &[Node],
    namespace_labels: &[(&str, &[(&str, &str)])],
) -> (Status, Vec<Status>) {
    let infos = node_infos(nodes, pods);
    let ns = namespaces(namespace_labels);
    let snapshot = Snapshot {
        namespaces: &ns,
        ..Snapshot::of_nodes(&infos)
    };
    let pod = PodInfo::from(pod);
    let pl = InterPodAffinity::default();
    let mut state = CycleState::new();
    let (_, status) = pl.pre_filter(&mut state, &pod, &snapshot);
    if !status.is_success() {
        return (status, Vec::new());
    }
    let filtered = infos.iter().map(|n| pl.filter(&state, &pod, n)).collect();
    (status, filtered)
}

fn run_filter_case(case: FilterCase) {
    let (status, got) = pre_filter_then_filter(case.pod, &case.pods, &case.nodes, case.namespaces);
    let Some(want) = case.want else {
        assert!(status.is_skip(), "{}: {status}", case.name);
        return;
    };
    assert!(status.is_success(), "{}: {status}", case.name);
    assert_eq!(got, want, "{}", case.name);
}

/// The namespaces upstream's interpodaffinity tests register
/// (`namespaces` in scoring_test.go).
const TEAM_NAMESPACES: &[(&str, &[(&str, &str)])] = &[
    ("subteam1.team1", &[("team", "team1")]),
    ("subteam2.team1", &[("team", "team1")]),
    ("subteam1.team2", &[("team", "team2")]),
    ("subteam2.team2", &[("team", "team2")]),
];

/// Upstream `TestRequiredAffinitySingleNode` (filtering_test.go): one node
/// (`region: r1, zone: z11`), PreFilter's status, then Filter's when
/// PreFilter succeeds.
#[test]
fn required_affinity_single_node_as_upstream() {
    struct Case {
        name: &'static str,
        pod: Pod,
        pods: Vec<Pod>,
        want_pre_filter: Status,
        want_filter: Status,
    }
    const SERVICE: &[(&str, &str)] = &[("service", "securityscan")];
    const SECURITY: &[(&str, &str)] = &[("security", "S1")];
    let service_in = |values: Vec<&str>| make_selector().r#in("service", values).obj();
    let service_not_in = |values: Vec<&str>| make_selector().not_in("service", values).obj();
    let security_scan = || service_in(vec!["securityscan", "value2"]);
    let antivirus_scan = || service_in(vec!["antivirusscan", "value2"]);
    let team1 = || Some(make_selector().r#in("team", vec!["team1"]).obj());
    // `st.MakePod().Labels(podLabel).Node("node1")`.
    let scanner = || make_pod().labels(SERVICE).node("node1");
    // A pod labelled `labels` with a required affinity term over `region`.
    let region_affinity = |labels: &[(&str, &str)], selector: LabelSelector| {
        make_pod()
            .labels(labels)
            .pod_affinity("region", selector, vec![], None)
    };
    // Two affinity terms: `service` exists and `wrongkey` does not; and
    // `service` in [`value`] and not in [WrongValue].
    let two_terms = |value: &str| {
        region_affinity(
            SECURITY,
            make_selector()
                .exists("service")
                .not_exist("wrongkey")
                .obj(),
        )
        .pod_affinity(
            "region",
            make_selector()
                .r#in("service", vec![value])
                .not_in("service", vec!["WrongValue"])
                .obj(),
            vec![],
            None,
        )
        .obj()
    };
    // Affinity to security scanners by region, anti-affinity to antivirus
    // scanners by node.
    let scan_not_antivirus = |labels: &[(&str, &str)]| {
        region_affinity(labels, security_scan()).pod_anti_affinity(
            "node",
            antivirus_scan(),
            vec![],
            None,
        )
    };
    // One required anti-affinity term over `topology` per key, each
    // selecting pods that have the key.
    let anti_to = |pod: PodWrapper, topology: &str, keys: &[&str]| {
        keys.iter().fold(pod, |pod, key| {
            pod.pod_anti_affinity(topology, exists(key), vec![], None)
        })
    };
    let team1_affinity = || {
        make_pod()
            .labels(SECURITY)
            .pod_affinity("region", security_scan(), vec![], team1())
            .obj()
    };
    let team_anti = |namespace_selector: Option<LabelSelector>| {
        make_pod()
            .namespace("subteam1.team1")
            .labels(SECURITY)
            .pod_anti_affinity("zone", security_scan(), vec![], namespace_selector)
            .obj()
    };
    let ok = Status::success;
    let skip = Status::skip;
    let affinity = || unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    let anti = || unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    let existing = || unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    let bad_value = || {
        Status::new(
            Code::UnschedulableAndUnresolvable,
            "parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        )
        .with_plugin(NAME)
    };
    let cases = vec![
        Case {
            name: "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
            pod: make_pod().obj(),
            pods: vec![],
            want_pre_filter: skip(),
            want_filter: ok(),
        },
        Case {
            name: "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
            pod: region_affinity(SECURITY, security_scan()).obj(),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
        Case {
            name: "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
            pod: region_affinity(SECURITY, service_not_in(vec!["securityscan3", "value3"])).obj(),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
        Case {
            name: "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
            pod: make_pod()
                .labels(SECURITY)
                .pod_affinity("", security_scan(), vec!["DiffNameSpace"], None)
                .obj(),
            pods: vec![scanner().namespace("ns").obj()],
            want_pre_filter: ok(),
            want_filter: affinity(),
        },
        Case {
            name: "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
            pod: make_pod()
                .labels(SERVICE)
                .pod_affinity("", antivirus_scan(), vec![], None)
                .obj(),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: affinity(),
        },
        Case {
            name: "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
            pod: two_terms("securityscan"),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
        Case {
            name: "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
            pod: two_terms("securityscan2"),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: affinity(),
        },
        Case {
            name: "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
            pod: scan_not_antivirus(SECURITY).obj(),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
        Case {
            name: "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
            pod: scan_not_antivirus(SECURITY).obj(),
            pods: vec![
                scanner()
                    .pod_anti_affinity("node", antivirus_scan(), vec![], None)
                    .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
        Case {
            name: "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
            pod: region_affinity(SECURITY, security_scan())
                .pod_anti_affinity("zone", security_scan(), vec![], None)
                .obj(),
            pods: vec![scanner().obj()],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod: scan_not_antivirus(SERVICE).obj(),
            pods: vec![
                scanner()
                    .pod_anti_affinity("zone", security_scan(), vec![], None)
                    .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: existing(),
        },
        Case {
            name: "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
            pod: region_affinity(SERVICE, service_not_in(vec!["securityscan", "value2"])).obj(),
            pods: vec![make_pod().labels(SERVICE).node("node2").obj()],
            want_pre_filter: ok(),
            want_filter: affinity(),
        },
        Case {
            name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod: make_pod().labels(SERVICE).obj(),
            pods: vec![
                scanner()
                    .pod_anti_affinity("zone", security_scan(), vec![], None)
                    .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: existing(),
        },
        Case {
            name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
            pod: make_pod().labels(SERVICE).obj(),
            pods: vec![
                scanner()
                    .pod_anti_affinity(
                        "zone",
                        service_not_in(vec!["securityscan", "value2"]),
                        vec![],
                        None,
                    )
                    .obj(),
            ],
            want_pre_filter: skip(),
            want_filter: ok(),
        },
        Case {
            name: "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
            pod: anti_to(
                make_pod().labels(SERVICE),
                "region",
                &["service", "security"],
            )
            .obj(),
            pods: vec![
                anti_to(
                    make_pod().node("node1").labels(SECURITY),
                    "zone",
                    &["security"],
                )
                .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: anti_to(make_pod().labels(SERVICE), "zone", &["service", "security"]).obj(),
            pods: vec![
                anti_to(
                    make_pod().node("node1").labels(SECURITY),
                    "zone",
                    &["security"],
                )
                .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: anti_to(make_pod().labels(SECURITY), "zone", &["security"]).obj(),
            pods: vec![anti_to(scanner(), "zone", &["service", "security"]).obj()],
            want_pre_filter: ok(),
            want_filter: existing(),
        },
        Case {
            name: "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: anti_to(
                make_pod().labels(&[("abc", ""), ("xyz", "")]),
                "zone",
                &["abc", "def"],
            )
            .obj(),
            pods: vec![
                anti_to(
                    make_pod().node("node1").labels(&[("def", ""), ("xyz", "")]),
                    "zone",
                    &["abc", "def"],
                )
                .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: anti_to(
                make_pod().labels(&[("def", ""), ("xyz", "")]),
                "zone",
                &["abc", "def"],
            )
            .obj(),
            pods: vec![
                anti_to(
                    make_pod().node("node1").labels(&[("abc", ""), ("xyz", "")]),
                    "zone",
                    &["abc", "def"],
                )
                .obj(),
            ],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "PodAffinity fails PreFilter with an invalid affinity label syntax",
            pod: region_affinity(SERVICE, service_in(vec!["{{.bad-value.}}"]))
                .pod_affinity("node", antivirus_scan(), vec![], None)
                .obj(),
            pods: vec![],
            want_pre_filter: bad_value(),
            want_filter: ok(),
        },
        Case {
            name: "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
            pod: region_affinity(SERVICE, service_in(vec!["foo"]))
                .pod_affinity("node", service_in(vec!["{{.bad-value.}}"]), vec![], None)
                .obj(),
            pods: vec![],
            want_pre_filter: bad_value(),
            want_filter: ok(),
        },
        Case {
            name: "affinity with NamespaceSelector",
            pod: team1_affinity(),
            pods: vec![scanner().namespace("subteam1.team1").obj()],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
        Case {
            name: "affinity with non-matching NamespaceSelector",
            pod: team1_affinity(),
            pods: vec![scanner().namespace("subteam1.team2").obj()],
            want_pre_filter: ok(),
            want_filter: affinity(),
        },
        Case {
            name: "anti-affinity with matching NamespaceSelector",
            pod: team_anti(team1()),
            pods: vec![scanner().namespace("subteam2.team1").obj()],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "anti-affinity with matching all NamespaceSelector",
            pod: team_anti(Some(make_selector().obj())),
            pods: vec![scanner().namespace("subteam2.team1").obj()],
            want_pre_filter: ok(),
            want_filter: anti(),
        },
        Case {
            name: "anti-affinity with non-matching NamespaceSelector",
            pod: team_anti(team1()),
            pods: vec![scanner().namespace("subteam1.team2").obj()],
            want_pre_filter: ok(),
            want_filter: ok(),
        },
    ];
    let node = make_node()
        .name("node1")
        .labels(&[("region", "r1"), ("zone", "z11")])
        .obj();
    let mut failures = Vec::new();
    for case in cases {
        let (pre_filter, filtered) = pre_filter_then_filter(
            case.pod,
            &case.pods,
            std::slice::from_ref(&node),
            TEAM_NAMESPACES,
        );
        if pre_filter != case.want_pre_filter {
            failures.push(format!(
                "{}: PreFilter {pre_filter:?}, want {:?}",
                case.name, case.want_pre_filter
            ));
        } else if pre_filter.is_success() && filtered != [case.want_filter.clone()] {
            failures.push(format!(
                "{}: Filter {filtered:?}, want {:?}",
                case.name, case.want_filter
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Upstream `TestPreFilterDisabled` (filtering_test.go): Filter without
/// PreFilter's state is an error.
#[test]
fn pre_filter_disabled_as_upstream() {
    let infos = node_infos(&[Node::default()], &[]);
    let got = InterPodAffinity::default().filter(
        &CycleState::new(),
        &PodInfo::from(Pod::default()),
        &infos[0],
    );
    let want =
        Status::error("error reading \"PreFilterInterPodAffinity\" from cycleState: not found")
            .with_plugin(NAME);
    assert_eq!(got, want);
}

#[test]
fn required_affinity_multiple_nodes_as_upstream() {
    let ok = Status::success;
    let anti = || unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    let existing = || unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    let affinity = || unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    let cases = vec![
        FilterCase {
            name: "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
            pod: make_pod()
                .pod_affinity("region", is_in("foo", vec!["bar"]), vec![], None)
                .obj(),
            pods: vec![
                make_pod()
                    .name("p1")
                    .node("node1")
                    .label("foo", "bar")
                    .obj(),
            ],
            nodes: vec![
                make_node().name("node1").labels(CHINA).obj(),
                make_node().name("node2").labels(CHINA_AZ1).obj(),
                make_node().name("node3").labels(INDIA).obj(),
            ],
            namespaces: &[],
            want: Some(vec![ok(), ok(), affinity()]),
        },
        FilterCase {
            name: "The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere",
            pod: make_pod()
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .pod_affinity("zone", is_in("foo", vec!["bar"]), vec![], None)
                .pod_affinity("zone", is_in("service", vec!["securityscan"]), vec![], None)
                .obj(),
            pods: vec![
                make_pod()
                    .name("p1")
                    .node("nodeA")
                    .label("foo", "bar")
                    .obj(),
            ],
            nodes: vec![
                make_node()
                    .name("nodeA")
                    .labels(&[("zone", "az1"), ("hostname", "h1")])
                    .obj(),
                make_node()
                    .name("nodeB")
                    .labels(&[("zone", "az2"), ("hostname", "h2")])
                    .obj(),
            ],
            namespaces: &[],
            want: Some(vec![ok(), ok()]),
        },
        FilterCase {
            name: "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
            pod: make_pod()
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .pod_affinity("zone", is_in("foo", vec!["bar"]), vec![], None)
                .pod_affinity("zone", is_in("service", vec!["securityscan"]), vec![], None)
                .obj(),
            pods: vec![
                make_pod()
                    .name("p1")
                    .node("nodeA")
                    .label("foo", "bar")
                    .obj(),
            ],
            nodes: vec![
                make_node()
                    .name("nodeA")
                    .labels(&[("zoneLabel", "az1"), ("hostname", "h1")])
                    .obj(),
                make_node()
                    .name("nodeB")
                    .labels(&[("zoneLabel", "az2"), ("hostname", "h2")])
                    .obj(),
            ],
            namespaces: &[],
            want: Some(vec![affinity(), affinity()]),
        },
        FilterCase {
            name: "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
            pod: make_pod()
                .pod_anti_affinity("region", is_in("foo", vec!["abc"]), vec![], None)
                .obj(),
            pods: vec![make_pod().name("e").node("nodeA").label("foo", "abc").obj()],
            nodes: vec![
                make_node()
                    .name("nodeA")
                    .labels(&[("region", "r1"), ("hostname", "nodeA")])
                    .obj(),
                make_node()
                    .name("nodeB")
                    .labels(&[("region", "r1"), ("hostname", "nodeB")])
                    .obj(),
            ],
            namespaces: &[],
            want: Some(vec![anti(), anti()]),
        },
        FilterCase {
            name: "The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
            pod: make_pod()
                .namespace("NS1")
                .label("foo", "123")
                .pod_anti_affinity("region", is_in("foo", vec!["bar"]), vec![], None)
                .obj(),
            pods: vec![
                make_pod()
                    .name("e1")
                    .node("nodeA")
                    .namespace("NS1")
                    .label("foo", "bar")
                    .obj(),
                make_pod()
                    .name("e2")
                    .node("nodeC")
                    .namespace("NS2")
                    .pod_anti_affinity("region", is_in("foo", vec!["123"]), vec![], None)
                    .obj(),
            ],
            nodes: vec![
                make_node().name("nodeA").labels(CHINA).obj(),
                make_node().name("nodeB").labels(CHINA_AZ1).obj(),
                make_node().name("nodeC").labels(INDIA).obj(),
            ],
            namespaces: &[("NS1", &[])],
            want: Some(vec![anti(), anti(), ok()]),
        },
        FilterCase {
            name: "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
            pod: make_pod().label("foo", "").obj(),
            pods: vec![
                make_pod()
                    .name("e")
                    .node("nodeA")
                    .pod_anti_affinity("invalid-node-label", exists("foo"), vec![], None)
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z1")],
            namespaces: &[],
            want: None,
        },
        FilterCase {
            name: "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
            pod: make_pod().label("foo", "").label("bar", "").obj(),
            pods: vec![
                make_pod()
                    .name("e1")
                    .node("nodeA")
                    .pod_anti_affinity("zone", exists("foo"), vec![], None)
                    .obj(),
                make_pod()
                    .name("e2")
                    .node("nodeA")
                    .pod_anti_affinity("region", exists("bar"), vec![], None)
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z2")],
            namespaces: &[],
            want: Some(vec![existing(), existing()]),
        },
        FilterCase {
            name: "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
            pod: make_pod()
                .pod_anti_affinity("zone", exists("foo"), vec![], None)
                .pod_anti_affinity("region", exists("bar"), vec![], None)
                .obj(),
            pods: vec![
                make_pod().name("e1").node("nodeA").label("foo", "").obj(),
                make_pod().name("e2").node("nodeB").label("bar", "").obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z2")],
            namespaces: &[],
            want: Some(vec![anti(), anti()]),
        },
        FilterCase {
            name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
            pod: make_pod().label("foo", "").label("bar", "").obj(),
            pods: vec![
                make_pod()
                    .name("e")
                    .node("nodeA")
                    .pod_anti_affinity("invalid-node-label", exists("foo"), vec![], None)
                    .pod_anti_affinity("zone", exists("bar"), vec![], None)
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z2")],
            namespaces: &[],
            want: Some(vec![existing(), ok()]),
        },
        FilterCase {
            name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
            pod: make_pod()
                .pod_anti_affinity("invalid-node-label", exists("foo"), vec![], None)
                .pod_anti_affinity("zone", exists("bar"), vec![], None)
                .obj(),
            pods: vec![
                make_pod()
                    .name("podA")
                    .node("nodeA")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z2")],
            namespaces: &[],
            want: Some(vec![anti(), ok()]),
        },
        FilterCase {
            name: "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
            pod: make_pod().label("foo", "").label("bar", "").obj(),
            pods: vec![
                make_pod()
                    .name("e1")
                    .node("nodeA")
                    .pod_anti_affinity("zone", exists("foo"), vec![], None)
                    .pod_anti_affinity("zone", exists("labelA"), vec![], None)
                    .obj(),
                make_pod()
                    .name("e2")
                    .node("nodeB")
                    .pod_anti_affinity("zone", exists("bar"), vec![], None)
                    .pod_anti_affinity("zone", exists("labelB"), vec![], None)
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z2"), abc("nodeC", "z3")],
            namespaces: &[],
            want: Some(vec![existing(), existing(), ok()]),
        },
        FilterCase {
            name: "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
            pod: make_pod()
                .pod_affinity("region", exists("foo"), vec![], None)
                .pod_affinity("zone", exists("bar"), vec![], None)
                .obj(),
            pods: vec![
                make_pod()
                    .name("pod1")
                    .node("nodeA")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z1")],
            namespaces: &[],
            want: Some(vec![ok(), ok()]),
        },
        FilterCase {
            name: "Test incoming pod's affinity: the match logic should be satisfied on the same pod",
            pod: make_pod()
                .pod_affinity("region", exists("foo"), vec![], None)
                .pod_affinity("zone", exists("bar"), vec![], None)
                .obj(),
            pods: vec![
                make_pod().name("pod1").node("nodeA").label("foo", "").obj(),
                make_pod().name("pod2").node("nodeB").label("bar", "").obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z2")],
            namespaces: &[],
            want: Some(vec![affinity(), affinity()]),
        },
        FilterCase {
            name: "berth: a namespace selector picks namespaces by label (team=a selects ns-a, not ns-b)",
            pod: make_pod()
                .namespace("ns-c")
                .pod_anti_affinity(
                    "hostname",
                    exists("foo"),
                    vec![],
                    Some(make_selector().label("team", "a").obj()),
                )
                .obj(),
            pods: vec![
                make_pod()
                    .name("a")
                    .namespace("ns-a")
                    .node("nodeA")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("b")
                    .namespace("ns-b")
                    .node("nodeB")
                    .label("foo", "")
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z1")],
            namespaces: &[
                ("ns-a", &[("team", "a")]),
                ("ns-b", &[("team", "b")]),
                ("ns-c", &[]),
            ],
            want: Some(vec![anti(), ok()]),
        },
        FilterCase {
            name: "berth: an existing pod's namespace selector reads the incoming pod's namespace labels",
            pod: make_pod().namespace("ns-a").label("foo", "").obj(),
            pods: vec![
                make_pod()
                    .name("e")
                    .namespace("ns-z")
                    .node("nodeA")
                    .pod_anti_affinity(
                        "zone",
                        exists("foo"),
                        vec![],
                        Some(make_selector().label("team", "a").obj()),
                    )
                    .obj(),
            ],
            nodes: vec![abc("nodeA", "z1"), abc("nodeB", "z1"), abc("nodeC", "z2")],
            namespaces: &[("ns-a", &[("team", "a")])],
            want: Some(vec![existing(), existing(), ok()]),
        },
    ];
    for case in cases {
        run_filter_case(case);
    }
}

fn run_score(pod: Pod, pods: Vec<Pod>, nodes: Vec<Node>, pl: InterPodAffinity) -> Option<Vec<i64>> {
    let infos = node_infos(&nodes, &pods);
    let snapshot = Snapshot::of_nodes(&infos);
    let feasible: Vec<&NodeInfo> = infos.iter().collect();
    let pod = PodInfo::from(pod);
    let mut state = CycleState::new();
    let status = pl.pre_score(&mut state, &pod, &snapshot, &feasible);
    if status.is_skip() {
        return None;
    }
    assert!(status.is_success(), "{status}");
    let mut scores: Vec<NodeScore> = infos
        .iter()
        .map(|n| NodeScore {
            name: n.name().to_string(),
            score: pl.score(&state, &pod, n).unwrap_or(i64::MIN),
        })
        .collect();
    assert!(pl.normalize_score(&state, &pod, &mut scores).is_success());
    Some(scores.into_iter().map(|s| s.score).collect())
}

#[test]
fn preferred_affinity_as_upstream() {
    let region_china = || {
        make_node()
            .name("node1")
            .labels(&[("region", "China")])
            .obj()
    };
    let region_india = || {
        make_node()
            .name("node2")
            .labels(&[("region", "India")])
            .obj()
    };
    let az1 = || make_node().name("node3").labels(&[("az", "az1")]).obj();
    let s1 = [("security", "S1")];
    let s2 = [("security", "S2")];
    struct Case {
        name: &'static str,
        pod: Pod,
        pods: Vec<Pod>,
        nodes: Vec<Node>,
        want: Option<&'static [i64]>,
    }
    let affinity_s1 = |w| {
        make_pod().labels(&s1).preferred_pod_affinity(
            w,
            "region",
            is_in("security", vec!["S1"]),
            vec![],
        )
    };
    let cases = vec![
        Case {
            name: "all nodes are same priority as Affinity is nil",
            pod: make_pod().labels(&s1).obj(),
            pods: vec![],
            nodes: vec![region_china(), region_india(), az1()],
            want: None,
        },
        Case {
            name: "the node(node1) that have the label {\"region\": \"China\"} (match the topology key) and that have existing pods that match the labelSelector get high score",
            pod: affinity_s1(5).obj(),
            pods: vec![
                make_pod().name("a").node("node1").labels(&s1).obj(),
                make_pod().name("b").node("node2").labels(&s2).obj(),
                make_pod().name("c").node("node3").labels(&s1).obj(),
            ],
            nodes: vec![region_china(), region_india(), az1()],
            want: Some(&[100, 0, 0]),
        },
        Case {
            name: "Anti Affinity: pod that does not match existing pods in node will get high score",
            pod: make_pod()
                .labels(&s1)
                .preferred_pod_anti_affinity(5, "region", is_in("security", vec!["S1"]), vec![])
                .obj(),
            pods: vec![
                make_pod().name("a").node("node1").labels(&s1).obj(),
                make_pod().name("b").node("node2").labels(&s2).obj(),
            ],
            nodes: vec![region_china(), region_india()],
            want: Some(&[0, 100]),
        },
        Case {
            name: "existing pods' preferred affinity counts for the incoming pod (symmetry)",
            pod: make_pod().labels(&s1).obj(),
            pods: vec![
                make_pod()
                    .name("a")
                    .node("node1")
                    .preferred_pod_affinity(5, "region", is_in("security", vec!["S1"]), vec![])
                    .obj(),
                make_pod().name("b").node("node2").labels(&s2).obj(),
            ],
            nodes: vec![region_china(), region_india()],
            want: Some(&[100, 0]),
        },
        Case {
            name: "existing pods with only required anti-affinity change no score",
            pod: make_pod().labels(&s1).obj(),
            pods: vec![
                make_pod()
                    .name("a")
                    .node("node1")
                    .pod_anti_affinity("region", is_in("security", vec!["S1"]), vec![], None)
                    .obj(),
            ],
            nodes: vec![region_china(), region_india()],
            want: None,
        },
    ];
    for case in cases {
        let got = run_score(case.pod, case.pods, case.nodes, InterPodAffinity::default());
        assert_eq!(got.as_deref(), case.want, "{}", case.name);
    }
}

/// Upstream `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`.
#[test]
fn hard_pod_affinity_weight_as_upstream() {
    let s1 = [("security", "S1")];
    let nodes = || {
        vec![
            make_node()
                .name("node1")
                .labels(&[("region", "China")])
                .obj(),
            make_node()
                .name("node2")
                .labels(&[("region", "India")])
                .obj(),
            make_node().name("node3").labels(&[("az", "az1")]).obj(),
        ]
    };
    let existing = || {
        vec![
            make_pod()
                .name("a")
                .node("node1")
                .pod_affinity("region", is_in("security", vec!["S1"]), vec![], None)
                .obj(),
            make_pod()
                .name("b")
                .node("node2")
                .pod_affinity("region", is_in("security", vec!["S1"]), vec![], None)
                .obj(),
        ]
    };
    struct Case {
        name: &'static str,
        weight: i32,
        want: Option<&'static [i64]>,
    }
    for case in [
        Case {
            name: "with hardPodAffinityWeight 1, the pods with the required affinity of the incoming pod make their nodes score high",
            weight: 1,
            want: Some(&[100, 100, 0]),
        },
        Case {
            name: "with hardPodAffinityWeight 0, required affinity of existing pods is ignored",
            weight: 0,
            want: None,
        },
    ] {
        let pl = InterPodAffinity {
            hard_pod_affinity_weight: case.weight,
            ..InterPodAffinity::default()
        };
        let got = run_score(make_pod().labels(&s1).obj(), existing(), nodes(), pl);
        assert_eq!(got.as_deref(), case.want, "{}", case.name);
    }
}

/// Upstream `Test_isSchedulableAfterPodChange`, with berth's namespace
/// event.
#[test]
fn is_schedulable_after_pod_change_as_upstream() {
    let pl = InterPodAffinity::default();
    let with_affinity = make_pod()
        .name("p")
        .pod_affinity(
            "region",
            is_in("service", vec!["securityscan"]),
            vec![],
            None,
        )
        .obj();
    let with_anti = make_pod()
        .name("p")
        .pod_anti_affinity(
            "region",
            is_in("service", vec!["securityscan"]),
            vec![],
            None,
        )
        .obj();
    let matching = make_pod()
        .name("m")
        .node("n1")
        .label("service", "securityscan")
        .obj();
    let other = make_pod().name("m").node("n1").label("aaa", "a").obj();
    let unbound = make_pod().name("u").label("service", "securityscan").obj();
    struct Case {
        name: &'static str,
        waiting: Pod,
        old: Option<Pod>,
        new: Option<Pod>,
        want: bool,
    }
    for case in [
        Case {
            name: "add a pod which matches the pod affinity",
            waiting: with_affinity.clone(),
            old: None,
            new: Some(matching.clone()),
            want: true,
        },
        Case {
            name: "add an un-scheduled pod",
            waiting: with_affinity.clone(),
            old: None,
            new: Some(unbound.clone()),
            want: false,
        },
        Case {
            name: "add a pod which doesn't match the pod affinity",
            waiting: with_affinity.clone(),
            old: None,
            new: Some(other.clone()),
            want: false,
        },
        Case {
            name: "update a pod from non-match to match pod affinity",
            waiting: with_affinity.clone(),
            old: Some(other.clone()),
            new: Some(matching.clone()),
            want: true,
        },
        Case {
            name: "the updating pod matches target pod's affinity both before and after label updating",
            waiting: with_affinity.clone(),
            old: Some(matching.clone()),
            new: Some(matching.clone()),
            want: false,
        },
        Case {
            name: "update a pod from match to non-match the pod anti-affinity",
            waiting: with_anti.clone(),
            old: Some(matching.clone()),
            new: Some(other.clone()),
            want: true,
        },
        Case {
            name: "delete a pod which doesn't match pod's anti-affinity",
            waiting: with_anti.clone(),
            old: Some(other.clone()),
            new: None,
            want: false,
        },
        Case {
            name: "delete a pod which matches pod's anti-affinity",
            waiting: with_anti.clone(),
            old: Some(matching.clone()),
            new: None,
            want: true,
        },
    ] {
        let got =
            pl.is_schedulable_after_pod_change(&case.waiting, case.old.as_ref(), case.new.as_ref());
        assert_eq!(got, case.want, "{}", case.name);
    }
}

/// Upstream `Test_isSchedulableAfterNodeChange`.
#[test]
fn is_schedulable_after_node_change_as_upstream() {
    let pl = InterPodAffinity::default();
    let affinity = make_pod()
        .pod_affinity("zone", is_in("service", vec!["securityscan"]), vec![], None)
        .obj();
    let anti = make_pod()
        .pod_anti_affinity("zone", is_in("service", vec!["securityscan"]), vec![], None)
        .obj();
    let zone1 = make_node().name("n").labels(&[("zone", "zone1")]).obj();
    let zone2 = make_node().name("n").labels(&[("zone", "zone2")]).obj();
    let none = make_node().name("n").labels(&[("aaa", "a")]).obj();
    struct Case {
        name: &'static str,
        waiting: Pod,
        old: Option<Node>,
        new: Node,
        want: bool,
    }
    for case in [
        Case {
            name: "add a new node with matched pod affinity topologyKey",
            waiting: affinity.clone(),
            old: None,
            new: zone1.clone(),
            want: true,
        },
        Case {
            name: "add a new node without matched topologyKey",
            waiting: affinity.clone(),
            old: None,
            new: none.clone(),
            want: false,
        },
        Case {
            name: "update node topologyKey",
            waiting: affinity.clone(),
            old: Some(zone1.clone()),
            new: zone2.clone(),
            want: true,
        },
        Case {
            name: "update node label but not topologyKey",
            waiting: affinity.clone(),
            old: Some(none.clone()),
            new: make_node().name("n").labels(&[("aaa", "b")]).obj(),
            want: false,
        },
        Case {
            name: "add a new node for anti-affinity",
            waiting: anti.clone(),
            old: None,
            new: zone1.clone(),
            want: true,
        },
        Case {
            name: "anti-affinity: the node loses its topologyKey",
            waiting: anti.clone(),
            old: Some(zone1.clone()),
            new: none.clone(),
            want: true,
        },
        Case {
            name: "anti-affinity: the node gains the topologyKey",
            waiting: anti.clone(),
            old: Some(none.clone()),
            new: zone1.clone(),
            want: false,
        },
    ] {
        let got = pl.is_schedulable_after_node_change(&case.waiting, case.old.as_ref(), &case.new);
        assert_eq!(got, case.want, "{}", case.name);
    }
}

#[test]
fn namespace_label_changes_move_pods_whose_selectors_they_touch() {
    let pl = InterPodAffinity::default();
    let waiting = make_pod()
        .namespace("ns-w")
        .pod_affinity(
            "zone",
            exists("app"),
            vec![],
            Some(make_selector().label("team", "a").obj()),
        )
        .obj();
    let ns = |name: &str, labels: &[(&str, &str)]| {
        let mut n = Namespace::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        n
    };
    let plain = ns("ns-x", &[]);
    let team_a = ns("ns-x", &[("team", "a")]);
    assert!(pl.is_schedulable_after_namespace_change(&waiting, Some(&plain), Some(&team_a)));
    assert!(!pl.is_schedulable_after_namespace_change(&waiting, Some(&team_a), Some(&plain)));
    assert!(!pl.is_schedulable_after_namespace_change(&waiting, Some(&plain), Some(&plain)));
    let own = ns("ns-w", &[("x", "y")]);
    assert!(pl.is_schedulable_after_namespace_change(&waiting, Some(&ns("ns-w", &[])), Some(&own)));
}
