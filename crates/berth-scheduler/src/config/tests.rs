use super::*;

fn names(list: &[&'static str]) -> Vec<&'static str> {
    list.to_vec()
}

#[test]
fn a_file_without_profiles_is_the_default_profile() {
    let got = parse(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
        FeatureGates::default(),
    );
    let Ok(config) = got else {
        panic!("{got:?}");
    };
    assert_eq!(config.profiles.len(), 1);
    let p = &config.profiles[0];
    let default = Profile::default();
    assert_eq!(p.scheduler_name, DEFAULT_SCHEDULER_NAME);
    assert_eq!(p.filters, default.filters);
    assert_eq!(p.scores, default.scores);
    assert_eq!(
        p.scores,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]
    );
}

#[test]
fn profiles_change_plugins_weights_args_and_percentage() {
    let text = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: PodTopologySpread
        weight: 5
    multiPoint:
      disabled:
      - name: NodePorts
- schedulerName: packer
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
        weight: 7
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
        resources:
        - name: cpu
          weight: 3
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 0
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
"#;
    let got = parse(text, FeatureGates::default());
    let Ok(config) = got else {
        panic!("{got:?}");
    };
    assert_eq!(
        config.queue.pod_initial_backoff,
        std::time::Duration::from_secs(2)
    );
    let [first, second] = config.profiles.as_slice() else {
        panic!("two profiles");
    };
    assert_eq!(first.percentage_of_nodes_to_score, 30);
    assert!(!first.filters.contains(&"NodePorts"));
    assert_eq!(first.weight("PodTopologySpread"), Some(5));
    assert_eq!(first.weight("ImageLocality"), None);
    assert_eq!(second.scheduler_name, "packer");
    assert_eq!(second.percentage_of_nodes_to_score, 100);
    assert_eq!(second.filters, names(&["NodeResourcesFit"]));
    assert_eq!(second.scores, [("NodeResourcesFit", 7)]);
    assert_eq!(
        second.plugins.node_resources_fit.resources(),
        [ResourceSpec::new("cpu", 3)]
    );
    assert_eq!(
        second.plugins.inter_pod_affinity.hard_pod_affinity_weight,
        0
    );
    assert!(!second.plugins.pod_topology_spread.system_defaulted);
    assert_eq!(
        second.plugins.pod_topology_spread.default_constraints.len(),
        1
    );
}

#[test]
fn invalid_files_name_the_field() {
    struct Case {
        name: &'static str,
        text: &'static str,
        want: &'static [&'static str],
    }
    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
    let cases = [
        Case {
            name: "wrong apiVersion",
            text: "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            want: &[
                "apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/v1beta3\": supported values: \"kubescheduler.config.k8s.io/v1\"",
            ],
        },
        Case {
            name: "percentage out of range",
            text: "percentageOfNodesToScore: 120\n",
            want: &["percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]"],
        },
        Case {
            name: "unknown field",
            text: "profiles:\n- schedulerName: a\n  plugin: {}\n",
            want: &[
                "profiles[0].plugin: unknown field `plugin`, expected one of `schedulerName`, `percentageOfNodesToScore`, `plugins`, `pluginConfig`",
            ],
        },
        Case {
            name: "unknown plugin and bad weight",
            text: "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Nope\n      - name: ImageLocality\n        weight: 101\n",
            want: &[
                "profiles[0].plugins.score.enabled[0].name: Invalid value: \"Nope\": plugin does not exist",
                "profiles[0].plugins.score.enabled[1].weight: Invalid value: 101: must be in the range [1, 100]",
            ],
        },
        Case {
            name: "duplicate scheduler names",
            text: "profiles:\n- schedulerName: a\n- schedulerName: a\n",
            want: &["profiles[1].schedulerName: Duplicate value: \"a\""],
        },
        Case {
            name: "plugin args",
            text: "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 101\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - maxSkew: 0\n        topologyKey: zone\n        whenUnsatisfiable: ScheduleAnyway\n",
            want: &[
                "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]",
                "profiles[0].pluginConfig[1].args.defaultConstraints: Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty",
                "profiles[0].pluginConfig[1].args.defaultConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            ],
        },
        Case {
            name: "args of the wrong type",
            text: "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      ignoredResources: cpu\n",
            want: &[
                "profiles[0].pluginConfig[0].args.ignoredResources: invalid type: string \"cpu\", expected a sequence",
            ],
        },
    ];
    for case in cases {
        let text = if case.text.starts_with("apiVersion") {
            case.text.to_string()
        } else {
            format!("{HEAD}{}", case.text)
        };
        let got = parse(&text, FeatureGates::default())
            .map(|_| ())
            .map_err(|e| e.0.iter().map(ToString::to_string).collect::<Vec<_>>());
        let want: Vec<String> = case.want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, Err(want), "{}", case.name);
    }
}
