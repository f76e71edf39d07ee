//! Services: upstream's validation tables (`TestValidateServiceCreate`,
//! `TestValidateServiceUpdate`, `TestValidateServiceClusterIPsRelatedFields`,
//! the rows that test decisions, metadata excepted), `SetDefaults_Service`,
//! the strategy's cluster-IP normalisation and type-change cleanup, and the
//! IP-family initialisation of a single-stack cluster.

use std::collections::BTreeMap;

use berth_core::service::{
    IpFamily, drop_type_dependent_fields, held_cluster_ips, held_node_ports, init_ip_family_fields,
    normalize_cluster_ips, patch_allocated_values, set_defaults,
};
use berth_core::validation::{validate_service, validate_service_update};
use k8s_openapi::api::core::v1::{
    ClientIPConfig, Service, ServicePort, ServiceSpec, SessionAffinityConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn port(name: &str, protocol: &str, number: i32) -> ServicePort {
    ServicePort {
        name: Some(name.to_string()).filter(|n| !n.is_empty()),
        protocol: Some(protocol.to_string()),
        port: number,
        target_port: Some(IntOrString::Int(number)),
        ..ServicePort::default()
    }
}

/// Upstream's `makeValidService`: a defaulted ClusterIP Service.
fn valid() -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("valid".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            session_affinity: Some("None".into()),
            selector: Some(BTreeMap::from([("key".into(), "val".into())])),
            ports: Some(vec![port("p", "TCP", 8675)]),
            cluster_ip: Some("1.2.3.4".into()),
            cluster_ips: Some(vec!["1.2.3.4".into()]),
            ip_families: Some(vec!["IPv4".into()]),
            ip_family_policy: Some("SingleStack".into()),
            internal_traffic_policy: Some("Cluster".into()),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn with(change: impl FnOnce(&mut ServiceSpec)) -> Service {
    let mut service = valid();
    if let Some(spec) = service.spec.as_mut() {
        change(spec);
    }
    service
}

fn node_port(spec: &mut ServiceSpec) {
    spec.type_ = Some("NodePort".into());
    spec.external_traffic_policy = Some("Cluster".into());
}

fn headless(spec: &mut ServiceSpec) {
    spec.cluster_ip = Some("None".into());
    spec.cluster_ips = Some(vec!["None".into()]);
}

fn rendered(errs: Vec<berth_core::validation::FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

struct Case {
    name: &'static str,
    service: Service,
    want: &'static [&'static str],
}

#[test]
fn service_creates_are_validated_as_upstream() {
    let cases = vec![
        Case {
            name: "valid",
            service: valid(),
            want: &[],
        },
        Case {
            name: "missing ports",
            service: with(|s| s.ports = None),
            want: &["spec.ports: Required value"],
        },
        Case {
            name: "missing ports but headless",
            service: with(|s| {
                s.ports = None;
                headless(s);
            }),
            want: &[],
        },
        Case {
            name: "empty port[1] name",
            service: with(|s| s.ports = Some(vec![port("p", "TCP", 1), port("", "TCP", 2)])),
            want: &["spec.ports[1].name: Required value"],
        },
        Case {
            name: "invalid port name",
            service: with(|s| s.ports = Some(vec![port("INVALID", "TCP", 8675)])),
            want: &[
                "spec.ports[0].name: Invalid value: \"INVALID\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ],
        },
        Case {
            name: "duplicate port names",
            service: with(|s| s.ports = Some(vec![port("p", "TCP", 1), port("p", "TCP", 2)])),
            want: &["spec.ports[1].name: Duplicate value: \"p\""],
        },
        Case {
            name: "invalid port",
            service: with(|s| {
                s.ports = Some(vec![ServicePort {
                    target_port: Some(IntOrString::Int(1)),
                    ..port("p", "TCP", 65536)
                }])
            }),
            want: &[
                "spec.ports[0].port: Invalid value: 65536: must be between 1 and 65535, inclusive",
            ],
        },
        Case {
            name: "invalid protocol",
            service: with(|s| s.ports = Some(vec![port("p", "INVALID", 8675)])),
            want: &[
                "spec.ports[0].protocol: Unsupported value: \"INVALID\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ],
        },
        Case {
            name: "missing protocol",
            service: with(|s| {
                s.ports = Some(vec![ServicePort {
                    protocol: None,
                    ..port("p", "TCP", 8675)
                }])
            }),
            want: &["spec.ports[0].protocol: Required value"],
        },
        Case {
            name: "invalid targetPort int",
            service: with(|s| {
                s.ports = Some(vec![ServicePort {
                    target_port: Some(IntOrString::Int(65536)),
                    ..port("p", "TCP", 8675)
                }])
            }),
            want: &[
                "spec.ports[0].targetPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
            ],
        },
        Case {
            name: "invalid targetPort name",
            service: with(|s| {
                s.ports = Some(vec![ServicePort {
                    target_port: Some(IntOrString::String("-bad".into())),
                    ..port("p", "TCP", 8675)
                }])
            }),
            want: &[
                "spec.ports[0].targetPort: Invalid value: \"-bad\": must not begin or end with a hyphen",
            ],
        },
        Case {
            name: "valid named targetPort",
            service: with(|s| {
                s.ports = Some(vec![ServicePort {
                    target_port: Some(IntOrString::String("http".into())),
                    ..port("p", "TCP", 8675)
                }])
            }),
            want: &[],
        },
        Case {
            name: "duplicate ports of one protocol",
            service: with(|s| s.ports = Some(vec![port("a", "TCP", 80), port("b", "TCP", 80)])),
            want: &["spec.ports[1]: Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}"],
        },
        Case {
            name: "one port number, two protocols",
            service: with(|s| s.ports = Some(vec![port("a", "TCP", 53), port("b", "UDP", 53)])),
            want: &[],
        },
        Case {
            name: "invalid cluster IP",
            service: with(|s| {
                s.cluster_ip = Some("invalid".into());
                s.cluster_ips = Some(vec!["invalid".into()]);
            }),
            want: &[
                "spec.clusterIPs[0]: Invalid value: \"invalid\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ],
        },
        Case {
            name: "clusterIPs not matching clusterIP",
            service: with(|s| s.cluster_ips = Some(vec!["1.2.3.5".into()])),
            want: &[
                "spec.clusterIPs: Invalid value: [\"1.2.3.5\"]: first value must match `clusterIP`",
            ],
        },
        Case {
            name: "clusterIPs without clusterIP",
            service: with(|s| s.cluster_ip = None),
            want: &[
                "spec.clusterIPs: Invalid value: [\"1.2.3.4\"]: must be empty when `clusterIP` is not specified",
            ],
        },
        Case {
            name: "None not alone",
            service: with(|s| {
                s.cluster_ip = Some("None".into());
                s.cluster_ips = Some(vec!["None".into(), "2001::1".into()]);
            }),
            want: &[
                "spec.clusterIPs: Invalid value: [\"None\",\"2001::1\"]: 'None' must be the first and only value",
            ],
        },
        Case {
            name: "two IPs of one family",
            service: with(|s| {
                s.cluster_ips = Some(vec!["1.2.3.4".into(), "1.2.3.5".into()]);
                s.ip_family_policy = Some("RequireDualStack".into());
            }),
            want: &[
                "spec.clusterIPs: Invalid value: [\"1.2.3.4\",\"1.2.3.5\"]: may specify no more than one IP for each IP family",
            ],
        },
        Case {
            name: "IP not of its family",
            service: with(|s| s.ip_families = Some(vec!["IPv6".into()])),
            want: &[
                "spec.clusterIPs[0]: Invalid value: \"1.2.3.4\": expected an IPv6 value as indicated by `ipFamilies[0]`",
            ],
        },
        Case {
            name: "unknown family and policy",
            service: with(|s| {
                s.ip_families = Some(vec!["IPv5".into()]);
                s.ip_family_policy = Some("Mixed".into());
            }),
            want: &[
                "spec.ipFamilies[0]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"",
                "spec.ipFamilyPolicy: Unsupported value: \"Mixed\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
            ],
        },
        Case {
            name: "loopback external IP",
            service: with(|s| s.external_ips = Some(vec!["127.0.0.1".into()])),
            want: &[
                "spec.externalIPs[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "spec.externalTrafficPolicy: Required value",
            ],
        },
        Case {
            name: "invalid external IP",
            service: with(|s| {
                s.external_ips = Some(vec!["1.2.3".into()]);
                s.external_traffic_policy = Some("Cluster".into());
            }),
            want: &[
                "spec.externalIPs[0]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ],
        },
        Case {
            name: "missing type",
            service: with(|s| s.type_ = None),
            want: &["spec.type: Required value"],
        },
        Case {
            name: "invalid type",
            service: with(|s| s.type_ = Some("Bogus".into())),
            want: &[
                "spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            ],
        },
        Case {
            name: "node port on a ClusterIP service",
            service: with(|s| {
                s.ports = Some(vec![ServicePort {
                    node_port: Some(30001),
                    ..port("p", "TCP", 1)
                }])
            }),
            want: &[
                "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
            ],
        },
        Case {
            name: "valid NodePort",
            service: with(|s| {
                node_port(s);
                s.ports = Some(vec![ServicePort {
                    node_port: Some(30001),
                    ..port("p", "TCP", 1)
                }]);
            }),
            want: &[],
        },
        Case {
            name: "duplicate node ports",
            service: with(|s| {
                node_port(s);
                s.ports = Some(vec![
                    ServicePort {
                        node_port: Some(30001),
                        ..port("a", "TCP", 1)
                    },
                    ServicePort {
                        node_port: Some(30001),
                        ..port("b", "TCP", 2)
                    },
                ]);
            }),
            want: &["spec.ports[1].nodePort: Duplicate value: 30001"],
        },
        Case {
            name: "headless NodePort",
            service: with(|s| {
                node_port(s);
                headless(s);
            }),
            want: &[
                "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services",
            ],
        },
        Case {
            name: "NodePort without externalTrafficPolicy",
            service: with(|s| s.type_ = Some("NodePort".into())),
            want: &["spec.externalTrafficPolicy: Required value"],
        },
        Case {
            name: "externalTrafficPolicy on an internal service",
            service: with(|s| s.external_traffic_policy = Some("Local".into())),
            want: &[
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
            ],
        },
        Case {
            name: "healthCheckNodePort without LoadBalancer Local",
            service: with(|s| {
                node_port(s);
                s.health_check_node_port = Some(30002);
            }),
            want: &[
                "spec.healthCheckNodePort: Invalid value: 30002: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ],
        },
        Case {
            name: "LoadBalancer Local without healthCheckNodePort",
            service: with(|s| {
                s.type_ = Some("LoadBalancer".into());
                s.external_traffic_policy = Some("Local".into());
                s.allocate_load_balancer_node_ports = Some(true);
            }),
            want: &["spec.healthCheckNodePort: Required value"],
        },
        Case {
            name: "LoadBalancer without allocateLoadBalancerNodePorts",
            service: with(|s| {
                s.type_ = Some("LoadBalancer".into());
                s.external_traffic_policy = Some("Cluster".into());
            }),
            want: &["allocateLoadBalancerNodePorts: Required value"],
        },
        Case {
            name: "allocateLoadBalancerNodePorts on a ClusterIP service",
            service: with(|s| s.allocate_load_balancer_node_ports = Some(false)),
            want: &[
                "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
            ],
        },
        Case {
            name: "source ranges on a ClusterIP service",
            service: with(|s| s.load_balancer_source_ranges = Some(vec!["10.0.0.0/8".into()])),
            want: &[
                "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
            ],
        },
        Case {
            name: "loadBalancerClass on a ClusterIP service",
            service: with(|s| s.load_balancer_class = Some("example.com/lb".into())),
            want: &[
                "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
            ],
        },
        Case {
            name: "missing sessionAffinity",
            service: with(|s| s.session_affinity = None),
            want: &["spec.sessionAffinity: Required value"],
        },
        Case {
            name: "invalid sessionAffinity",
            service: with(|s| s.session_affinity = Some("Sticky".into())),
            want: &[
                "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\"",
            ],
        },
        Case {
            name: "ClientIP without config",
            service: with(|s| s.session_affinity = Some("ClientIP".into())),
            want: &[
                "spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP",
            ],
        },
        Case {
            name: "ClientIP timeout out of range",
            service: with(|s| {
                s.session_affinity = Some("ClientIP".into());
                s.session_affinity_config = Some(SessionAffinityConfig {
                    client_ip: Some(ClientIPConfig {
                        timeout_seconds: Some(86401),
                    }),
                });
            }),
            want: &[
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400",
            ],
        },
        Case {
            name: "config with affinity None",
            service: with(|s| {
                s.session_affinity_config = Some(SessionAffinityConfig {
                    client_ip: Some(ClientIPConfig {
                        timeout_seconds: Some(90),
                    }),
                });
            }),
            want: &[
                "spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None",
            ],
        },
        Case {
            name: "valid ExternalName",
            service: with(|s| {
                *s = ServiceSpec {
                    type_: Some("ExternalName".into()),
                    external_name: Some("foo.bar.example.com.".into()),
                    session_affinity: Some("None".into()),
                    ..ServiceSpec::default()
                };
            }),
            want: &[],
        },
        Case {
            name: "ExternalName with a cluster IP and no name",
            service: with(|s| {
                s.type_ = Some("ExternalName".into());
                s.ip_families = None;
                s.ip_family_policy = None;
                s.internal_traffic_policy = None;
            }),
            want: &[
                "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
                "spec.externalName: Required value",
            ],
        },
        Case {
            name: "invalid selector",
            service: with(|s| {
                s.selector = Some(BTreeMap::from([(
                    "NoUppercaseOrSpecialCharsLike=Equals".into(),
                    "b".into(),
                )]))
            }),
            want: &[
                "spec.selector: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ],
        },
        Case {
            name: "missing internalTrafficPolicy",
            service: with(|s| s.internal_traffic_policy = None),
            want: &["spec.internalTrafficPolicy: Required value"],
        },
        Case {
            name: "unknown trafficDistribution",
            service: with(|s| s.traffic_distribution = Some("Nearby".into())),
            want: &[
                "spec.trafficDistribution: Unsupported value: \"Nearby\": supported values: \"PreferClose\"",
            ],
        },
    ];
    for case in cases {
        assert_eq!(
            rendered(validate_service(&case.service)),
            case.want,
            "{}",
            case.name
        );
    }
}

struct Update {
    name: &'static str,
    old: Service,
    new: Service,
    want: &'static [&'static str],
}

#[test]
fn service_updates_keep_what_is_fixed() {
    let cases = vec![
        Update {
            name: "no change",
            old: valid(),
            new: valid(),
            want: &[],
        },
        Update {
            name: "cluster IP changed",
            old: valid(),
            new: with(|s| {
                s.cluster_ip = Some("1.2.3.5".into());
                s.cluster_ips = Some(vec!["1.2.3.5".into()]);
            }),
            want: &["spec.clusterIPs[0]: Invalid value: [\"1.2.3.5\"]: may not change once set"],
        },
        Update {
            name: "to ExternalName and back are free",
            old: valid(),
            new: with(|s| {
                *s = ServiceSpec {
                    type_: Some("ExternalName".into()),
                    external_name: Some("example.com".into()),
                    session_affinity: Some("None".into()),
                    ..ServiceSpec::default()
                };
            }),
            want: &[],
        },
        Update {
            name: "headless to headless",
            old: with(headless),
            new: with(|s| {
                headless(s);
                s.ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
                s.ip_family_policy = Some("RequireDualStack".into());
            }),
            want: &[],
        },
        Update {
            name: "family changed",
            old: valid(),
            new: with(|s| {
                s.cluster_ip = Some("2001::1".into());
                s.cluster_ips = Some(vec!["2001::1".into()]);
                s.ip_families = Some(vec!["IPv6".into()]);
            }),
            want: &[
                "spec.clusterIPs[0]: Invalid value: [\"2001::1\"]: may not change once set",
                "spec.ipFamilies[0]: Invalid value: [\"IPv6\"]: may not change once set",
            ],
        },
    ];
    for case in cases {
        assert_eq!(
            rendered(validate_service_update(&case.new, &case.old)),
            case.want,
            "{}",
            case.name
        );
    }
}

#[test]
fn defaults_are_upstreams() {
    let mut service = Service {
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 80,
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    set_defaults(&mut service);
    let spec = service.spec.clone().unwrap_or_default();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
    assert_eq!(spec.external_traffic_policy, None);
    let ports = spec.ports.unwrap_or_default();
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
    assert_eq!(ports[0].target_port, Some(IntOrString::Int(80)));

    struct Default {
        name: &'static str,
        spec: ServiceSpec,
        check: fn(&ServiceSpec) -> bool,
    }
    let cases = [
        Default {
            name: "ClientIP gets three hours",
            spec: ServiceSpec {
                session_affinity: Some("ClientIP".into()),
                ..ServiceSpec::default()
            },
            check: |s| {
                s.session_affinity_config
                    .as_ref()
                    .and_then(|c| c.client_ip.as_ref())
                    .and_then(|c| c.timeout_seconds)
                    == Some(10800)
            },
        },
        Default {
            name: "None drops the affinity config",
            spec: ServiceSpec {
                session_affinity_config: Some(SessionAffinityConfig::default()),
                ..ServiceSpec::default()
            },
            check: |s| s.session_affinity_config.is_none(),
        },
        Default {
            name: "NodePort is externally accessible",
            spec: ServiceSpec {
                type_: Some("NodePort".into()),
                ..ServiceSpec::default()
            },
            check: |s| s.external_traffic_policy.as_deref() == Some("Cluster"),
        },
        Default {
            name: "LoadBalancer allocates node ports",
            spec: ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ..ServiceSpec::default()
            },
            check: |s| s.allocate_load_balancer_node_ports == Some(true),
        },
        Default {
            name: "ExternalName has no traffic policy",
            spec: ServiceSpec {
                type_: Some("ExternalName".into()),
                ..ServiceSpec::default()
            },
            check: |s| s.internal_traffic_policy.is_none() && s.external_traffic_policy.is_none(),
        },
        Default {
            name: "a named target port stays",
            spec: ServiceSpec {
                ports: Some(vec![ServicePort {
                    port: 80,
                    target_port: Some(IntOrString::String("http".into())),
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            },
            check: |s| {
                s.ports
                    .as_ref()
                    .is_some_and(|p| p[0].target_port == Some(IntOrString::String("http".into())))
            },
        },
    ];
    for case in cases {
        let mut service = Service {
            spec: Some(case.spec),
            ..Service::default()
        };
        set_defaults(&mut service);
        assert!(
            (case.check)(&service.spec.unwrap_or_default()),
            "{}",
            case.name
        );
    }
}

#[test]
fn cluster_ips_follow_cluster_ip_and_allocated_values_are_kept() {
    // Create: the singular fills the plural.
    let mut created = with(|s| s.cluster_ips = None);
    normalize_cluster_ips(&mut created, None);
    assert_eq!(
        created.spec.as_ref().and_then(|s| s.cluster_ips.clone()),
        Some(vec!["1.2.3.4".to_string()])
    );

    // An old client's update without the plural keeps it.
    let mut update = with(|s| s.cluster_ips = None);
    normalize_cluster_ips(&mut update, Some(&valid()));
    assert_eq!(
        update.spec.as_ref().and_then(|s| s.cluster_ips.clone()),
        Some(vec!["1.2.3.4".to_string()])
    );

    // A replace without the allocated values (kubectl replace) keeps them.
    let stored = with(|s| {
        node_port(s);
        s.ports = Some(vec![ServicePort {
            node_port: Some(30100),
            ..port("p", "TCP", 80)
        }]);
    });
    let mut replaced = with(|s| {
        node_port(s);
        s.cluster_ip = None;
        s.cluster_ips = None;
        s.ports = Some(vec![port("p", "TCP", 80)]);
    });
    patch_allocated_values(&mut replaced, &stored);
    let spec = replaced.spec.clone().unwrap_or_default();
    assert_eq!(spec.cluster_ip.as_deref(), Some("1.2.3.4"));
    assert_eq!(spec.ports.unwrap_or_default()[0].node_port, Some(30100));

    // NodePort to ClusterIP drops the node ports it did not change.
    let mut to_cluster_ip = stored.clone();
    if let Some(spec) = to_cluster_ip.spec.as_mut() {
        spec.type_ = Some("ClusterIP".into());
    }
    drop_type_dependent_fields(&mut to_cluster_ip, &stored);
    assert_eq!(held_node_ports(&to_cluster_ip).len(), 0);
    assert_eq!(
        to_cluster_ip
            .spec
            .as_ref()
            .and_then(|s| s.external_traffic_policy.clone()),
        None
    );
    assert_eq!(
        held_node_ports(&stored).into_iter().collect::<Vec<_>>(),
        [30100]
    );

    // To ExternalName drops the cluster IPs and families.
    let mut to_external = valid();
    if let Some(spec) = to_external.spec.as_mut() {
        spec.type_ = Some("ExternalName".into());
    }
    drop_type_dependent_fields(&mut to_external, &valid());
    assert!(held_cluster_ips(&to_external).is_empty());
    assert_eq!(
        to_external
            .spec
            .as_ref()
            .and_then(|s| s.ip_families.clone()),
        None
    );
    assert_eq!(held_cluster_ips(&valid()), ["1.2.3.4"]);
    assert!(held_cluster_ips(&with(headless)).is_empty());
}

#[test]
fn ip_families_on_a_single_stack_cluster_as_upstream() {
    struct Family {
        name: &'static str,
        service: Service,
        old: Option<Service>,
        want: Result<(&'static str, &'static [&'static str]), &'static [&'static str]>,
    }
    let unset = |change: fn(&mut ServiceSpec)| {
        with(|s| {
            s.cluster_ip = None;
            s.cluster_ips = None;
            s.ip_families = None;
            s.ip_family_policy = None;
            change(s);
        })
    };
    let cases = [
        Family {
            name: "nothing set: single-stack, the cluster's family",
            service: unset(|_| {}),
            old: None,
            want: Ok(("SingleStack", &["IPv4"])),
        },
        Family {
            name: "PreferDualStack gets one family",
            service: unset(|s| s.ip_family_policy = Some("PreferDualStack".into())),
            old: None,
            want: Ok(("PreferDualStack", &["IPv4"])),
        },
        Family {
            name: "RequireDualStack is refused",
            service: unset(|s| s.ip_family_policy = Some("RequireDualStack".into())),
            old: None,
            want: Err(&[
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
            ]),
        },
        Family {
            name: "a family the cluster lacks",
            service: unset(|s| s.ip_families = Some(vec!["IPv6".into()])),
            old: None,
            want: Err(&[
                "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster",
            ]),
        },
        Family {
            name: "an IPv6 cluster IP",
            service: unset(|s| {
                s.cluster_ip = Some("2001::1".into());
                s.cluster_ips = Some(vec!["2001::1".into()]);
            }),
            old: None,
            want: Err(&[
                "spec.clusterIPs[0]: Invalid value: [\"2001::1\"]: IPv6 is not configured on this cluster",
            ]),
        },
        Family {
            name: "two families with SingleStack",
            service: unset(|s| {
                s.ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
                s.ip_family_policy = Some("SingleStack".into());
            }),
            old: None,
            want: Err(&[
                "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ]),
        },
        Family {
            name: "headless without selector: both families, even here",
            service: unset(|s| {
                headless(s);
                s.selector = None;
            }),
            old: None,
            want: Ok(("RequireDualStack", &["IPv4", "IPv6"])),
        },
        Family {
            name: "headless with a selector: single-stack",
            service: unset(headless),
            old: None,
            want: Ok(("SingleStack", &["IPv4"])),
        },
        Family {
            name: "an update keeps the stored policy",
            service: with(|s| s.ip_family_policy = None),
            old: Some(with(|s| {
                s.ip_family_policy = Some("PreferDualStack".into())
            })),
            want: Ok(("PreferDualStack", &["IPv4"])),
        },
        Family {
            name: "ExternalName has none",
            service: unset(|s| s.type_ = Some("ExternalName".into())),
            old: None,
            want: Ok(("", &[])),
        },
    ];
    for mut case in cases {
        let got = init_ip_family_fields(&mut case.service, case.old.as_ref(), IpFamily::V4);
        let spec = case.service.spec.clone().unwrap_or_default();
        match (got, case.want) {
            (Ok(()), Ok((policy, families))) => {
                assert_eq!(
                    spec.ip_family_policy.as_deref().unwrap_or(""),
                    policy,
                    "{}",
                    case.name
                );
                assert_eq!(
                    spec.ip_families.unwrap_or_default(),
                    families,
                    "{}",
                    case.name
                );
            }
            (Err(errs), Err(want)) => assert_eq!(rendered(errs), want, "{}", case.name),
            (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
        }
    }
}
