//! A pod's QoS class, ported from upstream `pkg/apis/core/v1/helper/qos`
//! (`ComputePodQOS`, `collectPodLevelResources`,
//! `collectContainerLevelResources`).
//!
//! Only CPU and memory count. A pod is BestEffort when no container (init
//! containers included; ephemeral containers never) requests or limits
//! either; Guaranteed when every container limits both and the summed
//! requests equal the summed limits; Burstable otherwise. With pod-level
//! `spec.resources` set, those decide instead of the containers' (upstream
//! gates this on `PodLevelResources`, beta and on by default; berth always
//! honours the field).
//!
//! Quantities are compared as upstream's `resource.Quantity` does, through
//! berth-core's parser. A quantity that does not parse is skipped here:
//! mutating admission runs before validation, which rejects it.

use std::collections::{BTreeMap, BTreeSet};

use berth_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

/// Upstream `PodQOSClass` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    /// The `status.qosClass` string.
    pub fn as_str(&self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

type Sums = BTreeMap<String, Quantity>;

fn is_supported(name: &str) -> bool {
    name == "cpu" || name == "memory"
}

/// Adds each positive CPU/memory quantity of `list` into `sums`; returns
/// the names found.
fn add_positive(list: Option<&BTreeMap<String, K8sQuantity>>, sums: &mut Sums) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (name, q) in list.into_iter().flatten() {
        if !is_supported(name) {
            continue;
        }
        let Ok(q) = Quantity::from_k8s(q) else {
            continue;
        };
        if q > Quantity::zero() {
            found.insert(name.clone());
            sums.entry(name.clone())
                .and_modify(|sum| sum.add(&q))
                .or_insert(q);
        }
    }
    found
}

fn limits_cpu_and_memory(found: &BTreeSet<String>) -> bool {
    found.contains("cpu") && found.contains("memory")
}

/// Upstream `collectPodLevelResources`: the pod-level requests and limits
/// and whether the limits cover both CPU and memory.
fn collect_pod_level(resources: &ResourceRequirements) -> (Sums, Sums, bool) {
    let mut requests = Sums::new();
    let mut limits = Sums::new();
    add_positive(resources.requests.as_ref(), &mut requests);
    let found = add_positive(resources.limits.as_ref(), &mut limits);
    (requests, limits, limits_cpu_and_memory(&found))
}

/// Upstream `collectContainerLevelResources`: sums over containers and init
/// containers, and whether every one of them limits CPU and memory.
fn collect_container_level(pod: &Pod) -> (Sums, Sums, bool) {
    let mut requests = Sums::new();
    let mut limits = Sums::new();
    let mut guaranteed = true;
    let spec = pod.spec.as_ref();
    let containers = spec
        .map(|s| s.containers.as_slice())
        .unwrap_or_default()
        .iter()
        .chain(
            spec.and_then(|s| s.init_containers.as_deref())
                .unwrap_or_default(),
        );
    for c in containers {
        let res = c.resources.as_ref();
        add_positive(res.and_then(|r| r.requests.as_ref()), &mut requests);
        let found = add_positive(res.and_then(|r| r.limits.as_ref()), &mut limits);
        if !limits_cpu_and_memory(&found) {
            guaranteed = false;
        }
    }
    (requests, limits, guaranteed)
}

/// Upstream `ComputePodQOS` (ignores `status.qosClass`).
pub fn compute_pod_qos(pod: &Pod) -> QosClass {
    let pod_level = pod.spec.as_ref().and_then(|s| s.resources.as_ref());
    let (requests, limits, mut guaranteed) = match pod_level {
        Some(res) => collect_pod_level(res),
        None => collect_container_level(pod),
    };
    if requests.is_empty() && limits.is_empty() {
        return QosClass::BestEffort;
    }
    if guaranteed {
        guaranteed = requests
            .iter()
            .all(|(name, req)| limits.get(name).is_some_and(|lim| lim == req));
    }
    if guaranteed && requests.len() == limits.len() {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    fn list(cpu: &str, memory: &str) -> BTreeMap<String, K8sQuantity> {
        let mut m = BTreeMap::new();
        if !cpu.is_empty() {
            m.insert("cpu".to_string(), K8sQuantity(cpu.to_string()));
        }
        if !memory.is_empty() {
            m.insert("memory".to_string(), K8sQuantity(memory.to_string()));
        }
        m
    }

    fn with(
        mut l: BTreeMap<String, K8sQuantity>,
        name: &str,
        v: &str,
    ) -> BTreeMap<String, K8sQuantity> {
        l.insert(name.to_string(), K8sQuantity(v.to_string()));
        l
    }

    fn reqs(
        requests: BTreeMap<String, K8sQuantity>,
        limits: BTreeMap<String, K8sQuantity>,
    ) -> ResourceRequirements {
        ResourceRequirements {
            requests: Some(requests),
            limits: Some(limits),
            ..Default::default()
        }
    }

    fn container(
        requests: BTreeMap<String, K8sQuantity>,
        limits: BTreeMap<String, K8sQuantity>,
    ) -> Container {
        Container {
            resources: Some(reqs(requests, limits)),
            ..Default::default()
        }
    }

    fn pod(
        containers: Vec<Container>,
        init: Vec<Container>,
        pod_level: Option<ResourceRequirements>,
    ) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers,
                init_containers: (!init.is_empty()).then_some(init),
                resources: pod_level,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn compute_pod_qos_matches_upstream_table() {
        // Upstream TestComputePodQOS (names as upstream's pods).
        use QosClass::*;
        let e = || list("", "");
        let cases: Vec<(&str, Pod, QosClass)> = vec![
            (
                "guaranteed",
                pod(
                    vec![container(list("100m", "100Mi"), list("100m", "100Mi"))],
                    vec![],
                    None,
                ),
                Guaranteed,
            ),
            (
                "guaranteed-guaranteed",
                pod(
                    vec![
                        container(list("100m", "100Mi"), list("100m", "100Mi")),
                        container(list("100m", "100Mi"), list("100m", "100Mi")),
                    ],
                    vec![],
                    None,
                ),
                Guaranteed,
            ),
            (
                "best-effort-best-effort",
                pod(vec![container(e(), e()), container(e(), e())], vec![], None),
                BestEffort,
            ),
            (
                "best-effort",
                pod(vec![container(e(), e())], vec![], None),
                BestEffort,
            ),
            (
                "best-effort-burstable",
                pod(
                    vec![container(e(), e()), container(list("1", ""), list("2", ""))],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "best-effort-guaranteed",
                pod(
                    vec![
                        container(e(), e()),
                        container(list("10m", "100Mi"), list("10m", "100Mi")),
                    ],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "burstable-cpu-guaranteed-memory",
                pod(
                    vec![container(list("", "100Mi"), list("", "100Mi"))],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "burstable-no-limits",
                pod(vec![container(list("100m", "100Mi"), e())], vec![], None),
                Burstable,
            ),
            (
                "burstable-guaranteed",
                pod(
                    vec![
                        container(list("1", "100Mi"), list("2", "100Mi")),
                        container(list("100m", "100Mi"), list("100m", "100Mi")),
                    ],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "burstable-unbounded-but-requests-match-limits",
                pod(
                    vec![
                        container(list("100m", "100Mi"), list("200m", "200Mi")),
                        container(list("100m", "100Mi"), e()),
                    ],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "burstable-1",
                pod(
                    vec![container(list("10m", "100Mi"), list("100m", "200Mi"))],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "burstable-2",
                pod(
                    vec![container(list("0", "0"), list("100m", "200Mi"))],
                    vec![],
                    None,
                ),
                Burstable,
            ),
            (
                "best-effort-hugepages",
                pod(
                    vec![container(
                        with(list("0", "0"), "hugepages-2Mi", "1Gi"),
                        with(list("0", "0"), "hugepages-2Mi", "1Gi"),
                    )],
                    vec![],
                    None,
                ),
                BestEffort,
            ),
            (
                "init-container",
                pod(
                    vec![container(e(), e())],
                    vec![container(list("10m", "100Mi"), list("100m", "200Mi"))],
                    None,
                ),
                Burstable,
            ),
            (
                "guaranteed-with-pod-level-resources",
                pod(
                    vec![container(e(), e())],
                    vec![],
                    Some(reqs(list("10m", "100Mi"), list("10m", "100Mi"))),
                ),
                Guaranteed,
            ),
            (
                "guaranteed-with-pod-and-container-level-resources",
                pod(
                    vec![container(list("3m", "10Mi"), list("5m", "20Mi"))],
                    vec![],
                    Some(reqs(list("10m", "100Mi"), list("10m", "100Mi"))),
                ),
                Guaranteed,
            ),
            (
                "burstable-with-pod-level-resources",
                pod(
                    vec![container(e(), e())],
                    vec![],
                    Some(reqs(list("10m", "10Mi"), list("20m", "50Mi"))),
                ),
                Burstable,
            ),
            (
                "burstable-with-pod-and-container-level-resources",
                pod(
                    vec![container(list("5m", "10Mi"), list("5m", "10Mi"))],
                    vec![],
                    Some(reqs(list("10m", "10Mi"), list("20m", "50Mi"))),
                ),
                Burstable,
            ),
            (
                "burstable-with-pod-and-container-level-requests",
                pod(
                    vec![container(list("5m", "10Mi"), e())],
                    vec![],
                    Some(reqs(list("10m", "10Mi"), e())),
                ),
                Burstable,
            ),
            (
                "burstable-with-pod-and-container-level-resources-2",
                pod(
                    vec![
                        container(list("5m", "10Mi"), e()),
                        container(list("5m", "10Mi"), list("5m", "10Mi")),
                    ],
                    vec![],
                    Some(reqs(list("10m", "10Mi"), list("5m", ""))),
                ),
                Burstable,
            ),
        ];
        for (name, pod, want) in cases {
            assert_eq!(compute_pod_qos(&pod), want, "{name}");
        }
    }

    fn names(s: &Sums) -> Vec<(String, String)> {
        s.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()
    }

    fn names_of(l: BTreeMap<String, K8sQuantity>) -> Vec<(String, String)> {
        let mut s = Sums::new();
        add_positive(Some(&l), &mut s);
        names(&s)
    }

    #[test]
    fn collect_pod_level_resources_matches_upstream_table() {
        // Upstream TestCollectPodLevelResources.
        let cases = [
            (
                "cpu+mem limits present -> Guaranteed",
                list("100m", "128Mi"),
                list("750m", "512Mi"),
                true,
            ),
            (
                "only cpu limit -> not Guaranteed",
                list("100m", "128Mi"),
                list("750m", ""),
                false,
            ),
            (
                "only memory limit -> not Guaranteed",
                list("100m", "128Mi"),
                list("", "512Mi"),
                false,
            ),
            (
                "no limits -> not Guaranteed",
                list("100m", "128Mi"),
                list("", ""),
                false,
            ),
        ];
        for (name, r, l, want) in cases {
            let (got_r, got_l, got) = collect_pod_level(&reqs(r.clone(), l.clone()));
            assert_eq!(got, want, "{name}");
            assert_eq!(names(&got_r), names_of(r), "{name}");
            assert_eq!(names(&got_l), names_of(l), "{name}");
        }
    }

    #[test]
    fn collect_container_level_resources_matches_upstream_table() {
        // Upstream TestCollectContainerLevelResources (the ephemeral
        // container row: ephemeral containers are never looked at).
        let cases = vec![
            (
                "single container: full CPU+Mem limits -> Guaranteed",
                pod(
                    vec![container(list("100m", "200Mi"), list("200m", "400Mi"))],
                    vec![],
                    None,
                ),
                ("100m", "200Mi"),
                ("200m", "400Mi"),
                true,
            ),
            (
                "two containers and init container with CPU+Mem limits -> Guaranteed",
                pod(
                    vec![
                        container(list("100m", "100Mi"), list("200m", "200Mi")),
                        container(list("300m", "400Mi"), list("800m", "1000Mi")),
                    ],
                    vec![container(list("50m", "50Mi"), list("100m", "100Mi"))],
                    None,
                ),
                ("450m", "550Mi"),
                ("1100m", "1300Mi"),
                true,
            ),
            (
                "only CPU limit (Mem limit absent/zero) -> NotGuaranteed",
                pod(
                    vec![container(list("0", "0"), list("100m", ""))],
                    vec![],
                    None,
                ),
                ("", ""),
                ("100m", ""),
                false,
            ),
            (
                "two containers + init: one container missing CPU limit -> NotGuaranteed",
                pod(
                    vec![
                        container(list("100m", "100Mi"), list("200m", "300Mi")),
                        container(list("300m", "100Mi"), list("50m", "300Mi")),
                    ],
                    vec![container(list("50m", "50Mi"), list("", "50Mi"))],
                    None,
                ),
                ("450m", "250Mi"),
                ("250m", "650Mi"),
                false,
            ),
        ];
        for (name, pod, (rc, rm), (lc, lm), want) in cases {
            let (r, l, got) = collect_container_level(&pod);
            assert_eq!(got, want, "{name}");
            // Compare as quantities (upstream uses Semantic.DeepEqual, which
            // compares quantities by value, not by spelling).
            let as_q = |m: BTreeMap<String, K8sQuantity>| -> Sums {
                let mut s = Sums::new();
                add_positive(Some(&m), &mut s);
                s
            };
            assert_eq!(r, as_q(list(rc, rm)), "{name}");
            assert_eq!(l, as_q(list(lc, lm)), "{name}");
        }
    }
}
