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
    use berth_core::test_util::make_pod;
    use k8s_openapi::api::core::v1::Container;

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

    #[test]
    fn compute_pod_qos_matches_upstream_table() {
        // Upstream TestComputePodQOS (names as upstream's pods).
        use QosClass::*;
        let e = || list("", "");
        struct Case {
            name: &'static str,
            pod: Pod,
            want: QosClass,
        }
        let cases = [
            Case {
                name: "guaranteed",
                pod: make_pod()
                    .containers(vec![container(
                        list("100m", "100Mi"),
                        list("100m", "100Mi"),
                    )])
                    .obj(),
                want: Guaranteed,
            },
            Case {
                name: "guaranteed-guaranteed",
                pod: make_pod()
                    .containers(vec![
                        container(list("100m", "100Mi"), list("100m", "100Mi")),
                        container(list("100m", "100Mi"), list("100m", "100Mi")),
                    ])
                    .obj(),
                want: Guaranteed,
            },
            Case {
                name: "best-effort-best-effort",
                pod: make_pod()
                    .containers(vec![container(e(), e()), container(e(), e())])
                    .obj(),
                want: BestEffort,
            },
            Case {
                name: "best-effort",
                pod: make_pod().containers(vec![container(e(), e())]).obj(),
                want: BestEffort,
            },
            Case {
                name: "best-effort-burstable",
                pod: make_pod()
                    .containers(vec![
                        container(e(), e()),
                        container(list("1", ""), list("2", "")),
                    ])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "best-effort-guaranteed",
                pod: make_pod()
                    .containers(vec![
                        container(e(), e()),
                        container(list("10m", "100Mi"), list("10m", "100Mi")),
                    ])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-cpu-guaranteed-memory",
                pod: make_pod()
                    .containers(vec![container(list("", "100Mi"), list("", "100Mi"))])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-no-limits",
                pod: make_pod()
                    .containers(vec![container(list("100m", "100Mi"), e())])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-guaranteed",
                pod: make_pod()
                    .containers(vec![
                        container(list("1", "100Mi"), list("2", "100Mi")),
                        container(list("100m", "100Mi"), list("100m", "100Mi")),
                    ])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-unbounded-but-requests-match-limits",
                pod: make_pod()
                    .containers(vec![
                        container(list("100m", "100Mi"), list("200m", "200Mi")),
                        container(list("100m", "100Mi"), e()),
                    ])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-1",
                pod: make_pod()
                    .containers(vec![container(list("10m", "100Mi"), list("100m", "200Mi"))])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-2",
                pod: make_pod()
                    .containers(vec![container(list("0", "0"), list("100m", "200Mi"))])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "best-effort-hugepages",
                pod: make_pod()
                    .containers(vec![container(
                        with(list("0", "0"), "hugepages-2Mi", "1Gi"),
                        with(list("0", "0"), "hugepages-2Mi", "1Gi"),
                    )])
                    .obj(),
                want: BestEffort,
            },
            Case {
                name: "init-container",
                pod: make_pod()
                    .containers(vec![container(e(), e())])
                    .init_containers(vec![container(list("10m", "100Mi"), list("100m", "200Mi"))])
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "guaranteed-with-pod-level-resources",
                pod: make_pod()
                    .containers(vec![container(e(), e())])
                    .resources(reqs(list("10m", "100Mi"), list("10m", "100Mi")))
                    .obj(),
                want: Guaranteed,
            },
            Case {
                name: "guaranteed-with-pod-and-container-level-resources",
                pod: make_pod()
                    .containers(vec![container(list("3m", "10Mi"), list("5m", "20Mi"))])
                    .resources(reqs(list("10m", "100Mi"), list("10m", "100Mi")))
                    .obj(),
                want: Guaranteed,
            },
            Case {
                name: "burstable-with-pod-level-resources",
                pod: make_pod()
                    .containers(vec![container(e(), e())])
                    .resources(reqs(list("10m", "10Mi"), list("20m", "50Mi")))
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-with-pod-and-container-level-resources",
                pod: make_pod()
                    .containers(vec![container(list("5m", "10Mi"), list("5m", "10Mi"))])
                    .resources(reqs(list("10m", "10Mi"), list("20m", "50Mi")))
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-with-pod-and-container-level-requests",
                pod: make_pod()
                    .containers(vec![container(list("5m", "10Mi"), e())])
                    .resources(reqs(list("10m", "10Mi"), e()))
                    .obj(),
                want: Burstable,
            },
            Case {
                name: "burstable-with-pod-and-container-level-resources-2",
                pod: make_pod()
                    .containers(vec![
                        container(list("5m", "10Mi"), e()),
                        container(list("5m", "10Mi"), list("5m", "10Mi")),
                    ])
                    .resources(reqs(list("10m", "10Mi"), list("5m", "")))
                    .obj(),
                want: Burstable,
            },
        ];
        for case in cases {
            assert_eq!(compute_pod_qos(&case.pod), case.want, "{}", case.name);
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
        struct Case {
            name: &'static str,
            requests: BTreeMap<String, K8sQuantity>,
            limits: BTreeMap<String, K8sQuantity>,
            want_guaranteed: bool,
        }
        let cases = [
            Case {
                name: "cpu+mem limits present -> Guaranteed",
                requests: list("100m", "128Mi"),
                limits: list("750m", "512Mi"),
                want_guaranteed: true,
            },
            Case {
                name: "only cpu limit -> not Guaranteed",
                requests: list("100m", "128Mi"),
                limits: list("750m", ""),
                want_guaranteed: false,
            },
            Case {
                name: "only memory limit -> not Guaranteed",
                requests: list("100m", "128Mi"),
                limits: list("", "512Mi"),
                want_guaranteed: false,
            },
            Case {
                name: "no limits -> not Guaranteed",
                requests: list("100m", "128Mi"),
                limits: list("", ""),
                want_guaranteed: false,
            },
        ];
        for case in cases {
            let (requests, limits) = (case.requests, case.limits);
            let (got_r, got_l, got) = collect_pod_level(&reqs(requests.clone(), limits.clone()));
            assert_eq!(got, case.want_guaranteed, "{}", case.name);
            assert_eq!(names(&got_r), names_of(requests), "{}", case.name);
            assert_eq!(names(&got_l), names_of(limits), "{}", case.name);
        }
    }

    #[test]
    fn collect_container_level_resources_matches_upstream_table() {
        // Upstream TestCollectContainerLevelResources (the ephemeral
        // container row: ephemeral containers are never looked at).
        struct Case {
            name: &'static str,
            pod: Pod,
            /// (cpu, memory)
            want_requests: (&'static str, &'static str),
            /// (cpu, memory)
            want_limits: (&'static str, &'static str),
            want_guaranteed: bool,
        }
        let cases = [
            Case {
                name: "single container: full CPU+Mem limits -> Guaranteed",
                pod: make_pod()
                    .containers(vec![container(
                        list("100m", "200Mi"),
                        list("200m", "400Mi"),
                    )])
                    .obj(),
                want_requests: ("100m", "200Mi"),
                want_limits: ("200m", "400Mi"),
                want_guaranteed: true,
            },
            Case {
                name: "two containers and init container with CPU+Mem limits -> Guaranteed",
                pod: make_pod()
                    .containers(vec![
                        container(list("100m", "100Mi"), list("200m", "200Mi")),
                        container(list("300m", "400Mi"), list("800m", "1000Mi")),
                    ])
                    .init_containers(vec![container(list("50m", "50Mi"), list("100m", "100Mi"))])
                    .obj(),
                want_requests: ("450m", "550Mi"),
                want_limits: ("1100m", "1300Mi"),
                want_guaranteed: true,
            },
            Case {
                name: "only CPU limit (Mem limit absent/zero) -> NotGuaranteed",
                pod: make_pod()
                    .containers(vec![container(list("0", "0"), list("100m", ""))])
                    .obj(),
                want_requests: ("", ""),
                want_limits: ("100m", ""),
                want_guaranteed: false,
            },
            Case {
                name: "two containers + init: one container missing CPU limit -> NotGuaranteed",
                pod: make_pod()
                    .containers(vec![
                        container(list("100m", "100Mi"), list("200m", "300Mi")),
                        container(list("300m", "100Mi"), list("50m", "300Mi")),
                    ])
                    .init_containers(vec![container(list("50m", "50Mi"), list("", "50Mi"))])
                    .obj(),
                want_requests: ("450m", "250Mi"),
                want_limits: ("250m", "650Mi"),
                want_guaranteed: false,
            },
        ];
        for case in cases {
            let name = case.name;
            let ((rc, rm), (lc, lm)) = (case.want_requests, case.want_limits);
            let (r, l, got) = collect_container_level(&case.pod);
            assert_eq!(got, case.want_guaranteed, "{name}");
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
