//! `KubeSchedulerConfiguration` files (`kubescheduler.config.k8s.io/v1`),
//! as `berth server --config` reads them: profiles with their
//! `schedulerName`, plugins enabled and disabled per extension point (and
//! `multiPoint`), `pluginConfig` args of the plugins berth has, and
//! `percentageOfNodesToScore` (global and per profile), merged onto
//! upstream's default plugins the way upstream's v1 defaulting does.
//!
//! Every problem is reported with the field's path (`profiles[0].plugins.
//! score.enabled[1].weight: ...`), as upstream's validation does. Fields of
//! upstream's file that concern a separate kube-scheduler process
//! (`leaderElection`, `clientConnection`, bind addresses, profiling,
//! `parallelism`) are accepted and ignored: `berth server` has its own.

use std::collections::BTreeSet;
use std::fmt;

use berth_core::FeatureGates;
use k8s_openapi::api::core::v1::{NodeAffinity as V1NodeAffinity, TopologySpreadConstraint};
use serde::Deserialize;

use crate::plugins::node_affinity::NodeAffinityArgs;
use crate::plugins::node_resources_fit::{MAX_RESOURCE_WEIGHT, ResourceSpec};
use crate::plugins::pod_topology_spread::{DefaultingType, SCHEDULE_ANYWAY};
use crate::plugins::{
    InterPodAffinity, NodeAffinity, NodeResourcesFit, PodTopologySpread, image_locality,
    inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_balanced_allocation,
    node_resources_fit, node_unschedulable, pod_topology_spread, taint_toleration,
};
use crate::profile::{DEFAULT_PLUGINS, DEFAULT_SCHEDULER_NAME, Profile};
use crate::queue::QueueConfig;

pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const KIND: &str = "KubeSchedulerConfiguration";

/// Upstream's plugins that berth runs implicitly (queue sort, binding,
/// gates, preemption) or that have nothing to do without volumes: named
/// in a file, they are accepted and change nothing.
const IMPLICIT_PLUGINS: &[&str] = &[
    "PrioritySort",
    "SchedulingGates",
    "DefaultBinder",
    "DefaultPreemption",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
];

/// One problem in the file: the field's path and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// Every problem found, one per line when displayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&lines.join("\n"))
    }
}

impl std::error::Error for ConfigErrors {}

fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        message: message.into(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    percentage_of_nodes_to_score: Option<i64>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    #[serde(default)]
    profiles: Vec<FileProfile>,
    #[serde(default)]
    extenders: Vec<serde_json::Value>,
    // A separate kube-scheduler's process settings: accepted, not used.
    #[serde(default)]
    parallelism: Option<serde_json::Value>,
    #[serde(default)]
    leader_election: Option<serde_json::Value>,
    #[serde(default)]
    client_connection: Option<serde_json::Value>,
    #[serde(default, rename = "healthzBindAddress")]
    health_z_bind_address: Option<serde_json::Value>,
    #[serde(default)]
    metrics_bind_address: Option<serde_json::Value>,
    #[serde(default)]
    enable_profiling: Option<serde_json::Value>,
    #[serde(default)]
    enable_contention_profiling: Option<serde_json::Value>,
    #[serde(default)]
    delay_cache_until_active: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileProfile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i64>,
    #[serde(default)]
    plugins: Option<FilePlugins>,
    #[serde(default)]
    plugin_config: Vec<FilePluginConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FilePlugins {
    pre_enqueue: Option<PluginSet>,
    queue_sort: Option<PluginSet>,
    pre_filter: Option<PluginSet>,
    filter: Option<PluginSet>,
    post_filter: Option<PluginSet>,
    pre_score: Option<PluginSet>,
    score: Option<PluginSet>,
    reserve: Option<PluginSet>,
    permit: Option<PluginSet>,
    pre_bind: Option<PluginSet>,
    bind: Option<PluginSet>,
    post_bind: Option<PluginSet>,
    multi_point: Option<PluginSet>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginSet {
    #[serde(default)]
    enabled: Vec<FilePlugin>,
    #[serde(default)]
    disabled: Vec<FilePlugin>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePlugin {
    name: String,
    weight: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePluginConfig {
    name: String,
    #[serde(default)]
    args: serde_json::Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FitArgs {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    ignored_resources: Vec<String>,
    #[serde(default)]
    ignored_resource_groups: Vec<String>,
    scoring_strategy: Option<ScoringStrategy>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScoringStrategy {
    #[serde(rename = "type")]
    type_: Option<String>,
    resources: Option<Vec<FileResource>>,
    requested_to_capacity_ratio: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileResource {
    name: String,
    weight: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BalancedArgs {
    api_version: Option<String>,
    kind: Option<String>,
    resources: Option<Vec<FileResource>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SpreadArgs {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    default_constraints: Vec<TopologySpreadConstraint>,
    defaulting_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AffinityArgs {
    api_version: Option<String>,
    kind: Option<String>,
    hard_pod_affinity_weight: Option<i64>,
    ignore_preferred_terms_of_existing_pods: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeAffinityFileArgs {
    api_version: Option<String>,
    kind: Option<String>,
    added_affinity: Option<V1NodeAffinity>,
}

/// What a file configures.
#[derive(Debug, Clone)]
pub struct SchedulerFileConfig {
    pub profiles: Vec<Profile>,
    pub queue: QueueConfig,
}

/// Deserialises `value` as `T`, errors at `path` + serde's inner path.
fn typed<T: for<'de> Deserialize<'de>>(
    value: &serde_json::Value,
    path: &str,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let field = match (path.is_empty(), inner.as_str()) {
            (_, ".") => path.to_string(),
            (true, _) => inner,
            (false, _) => format!("{path}.{inner}"),
        };
        err(field, e.into_inner().to_string())
    })
}

/// Reads a `KubeSchedulerConfiguration` from YAML (or JSON) text.
pub fn parse(text: &str, gates: FeatureGates) -> Result<SchedulerFileConfig, ConfigErrors> {
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|e| ConfigErrors(vec![err("", e.to_string())]))?;
    let json =
        serde_json::to_value(&yaml).map_err(|e| ConfigErrors(vec![err("", e.to_string())]))?;
    let file: File = typed(&json, "").map_err(|e| ConfigErrors(vec![e]))?;
    let mut errors = Vec::new();
    if file.api_version.as_deref() != Some(API_VERSION) {
        errors.push(err(
            "apiVersion",
            format!(
                "Unsupported value: {:?}: supported values: {API_VERSION:?}",
                file.api_version.unwrap_or_default()
            ),
        ));
    }
    if file.kind.as_deref() != Some(KIND) {
        errors.push(err(
            "kind",
            format!(
                "Unsupported value: {:?}: supported values: {KIND:?}",
                file.kind.unwrap_or_default()
            ),
        ));
    }
    let process_settings = [
        ("parallelism", &file.parallelism),
        ("leaderElection", &file.leader_election),
        ("clientConnection", &file.client_connection),
        ("healthzBindAddress", &file.health_z_bind_address),
        ("metricsBindAddress", &file.metrics_bind_address),
        ("enableProfiling", &file.enable_profiling),
        (
            "enableContentionProfiling",
            &file.enable_contention_profiling,
        ),
        ("delayCacheUntilActive", &file.delay_cache_until_active),
    ];
    for (field, value) in process_settings {
        if value.is_some() {
            tracing::info!(
                field,
                "scheduler configuration: ignoring a separate kube-scheduler's setting (berth server has its own)"
            );
        }
    }
    if !file.extenders.is_empty() {
        errors.push(err(
            "extenders",
            "Forbidden: berth has no scheduler extenders",
        ));
    }
    let global = percentage(
        "percentageOfNodesToScore",
        file.percentage_of_nodes_to_score,
        &mut errors,
    );
    let mut queue = QueueConfig::default();
    if let Some(s) = file.pod_initial_backoff_seconds {
        match u64::try_from(s) {
            Ok(s) if s > 0 => queue.pod_initial_backoff = std::time::Duration::from_secs(s),
            _ => errors.push(err(
                "podInitialBackoffSeconds",
                format!("Invalid value: {s}: must be greater than 0"),
            )),
        }
    }
    if let Some(s) = file.pod_max_backoff_seconds {
        match u64::try_from(s) {
            Ok(s) if s > 0 => queue.pod_max_backoff = std::time::Duration::from_secs(s),
            _ => errors.push(err(
                "podMaxBackoffSeconds",
                format!("Invalid value: {s}: must be greater than 0"),
            )),
        }
    }
    if queue.pod_max_backoff < queue.pod_initial_backoff {
        errors.push(err(
            "podMaxBackoffSeconds",
            "Invalid value: must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    let file_profiles = if file.profiles.is_empty() {
        vec![FileProfile {
            scheduler_name: None,
            percentage_of_nodes_to_score: None,
            plugins: None,
            plugin_config: Vec::new(),
        }]
    } else {
        file.profiles
    };
    let mut names = BTreeSet::new();
    let mut profiles = Vec::new();
    for (i, fp) in file_profiles.into_iter().enumerate() {
        let path = format!("profiles[{i}]");
        let name = fp
            .scheduler_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.into());
        if name.is_empty() {
            errors.push(err(format!("{path}.schedulerName"), "Required value"));
        } else if !names.insert(name.clone()) {
            errors.push(err(
                format!("{path}.schedulerName"),
                format!("Duplicate value: {name:?}"),
            ));
        }
        let mut profile = Profile::new(name, gates);
        profile.percentage_of_nodes_to_score = percentage(
            &format!("{path}.percentageOfNodesToScore"),
            fp.percentage_of_nodes_to_score,
            &mut errors,
        )
        .or(global)
        .unwrap_or(0);
        if let Some(plugins) = &fp.plugins {
            apply_plugins(
                &mut profile,
                plugins,
                &format!("{path}.plugins"),
                &mut errors,
            );
        }
        apply_plugin_config(
            &mut profile,
            &fp.plugin_config,
            &format!("{path}.pluginConfig"),
            gates,
            &mut errors,
        );
        profiles.push(profile);
    }
    if errors.is_empty() {
        Ok(SchedulerFileConfig { profiles, queue })
    } else {
        Err(ConfigErrors(errors))
    }
}

fn percentage(field: &str, value: Option<i64>, errors: &mut Vec<ConfigError>) -> Option<u32> {
    let v = value?;
    match u32::try_from(v) {
        Ok(p) if p <= 100 => Some(p),
        _ => {
            errors.push(err(
                field,
                format!("Invalid value: {v}: not in valid range [0-100]"),
            ));
            None
        }
    }
}

fn known(name: &str) -> bool {
    DEFAULT_PLUGINS.iter().any(|(n, _)| *n == name)
}

/// The `&'static str` of a plugin name berth has.
fn static_name(name: &str) -> Option<&'static str> {
    DEFAULT_PLUGINS.iter().map(|(n, _)| *n).find(|n| *n == name)
}

/// Upstream's v1 merge: each extension point starts from the default
/// plugins, drops the disabled ones (`*` drops them all) and appends the
/// enabled ones (an enabled default plugin moves to its new place with its
/// new weight); `multiPoint` does this for every extension point a plugin
/// has.
fn apply_plugins(
    profile: &mut Profile,
    plugins: &FilePlugins,
    path: &str,
    errors: &mut Vec<ConfigError>,
) {
    let ignored_points = [
        ("preEnqueue", &plugins.pre_enqueue),
        ("queueSort", &plugins.queue_sort),
        ("postFilter", &plugins.post_filter),
        ("reserve", &plugins.reserve),
        ("permit", &plugins.permit),
        ("preBind", &plugins.pre_bind),
        ("bind", &plugins.bind),
        ("postBind", &plugins.post_bind),
    ];
    for (point, set) in ignored_points {
        let Some(set) = set else { continue };
        for (j, p) in set.enabled.iter().enumerate() {
            if !IMPLICIT_PLUGINS.contains(&p.name.as_str()) {
                errors.push(err(
                    format!("{path}.{point}.enabled[{j}].name"),
                    format!(
                        "Invalid value: {:?}: berth runs no {point} plugin but the built-in ones",
                        p.name
                    ),
                ));
            }
        }
    }
    let check = |point: &str, set: &PluginSet, errors: &mut Vec<ConfigError>| {
        for (list, entries) in [("enabled", &set.enabled), ("disabled", &set.disabled)] {
            for (j, p) in entries.iter().enumerate() {
                if p.name != "*" && !known(&p.name) && !IMPLICIT_PLUGINS.contains(&p.name.as_str())
                {
                    errors.push(err(
                        format!("{path}.{point}.{list}[{j}].name"),
                        format!("Invalid value: {:?}: plugin does not exist", p.name),
                    ));
                }
            }
        }
    };
    if let Some(mp) = &plugins.multi_point {
        check("multiPoint", mp, errors);
        let disable_all = mp.disabled.iter().any(|p| p.name == "*");
        let off: BTreeSet<&str> = mp.disabled.iter().map(|p| p.name.as_str()).collect();
        let keep = |n: &&str| !disable_all && !off.contains(*n);
        profile.pre_filters.retain(keep);
        profile.filters.retain(keep);
        profile.pre_scores.retain(keep);
        profile.scores.retain(|(n, _)| keep(n));
        for (j, p) in mp.enabled.iter().enumerate() {
            let Some(name) = static_name(&p.name) else {
                continue;
            };
            for list in [
                &mut profile.pre_filters,
                &mut profile.filters,
                &mut profile.pre_scores,
            ] {
                list.retain(|n| *n != name);
            }
            if profile.plugins.pre_filter(name).is_some() {
                profile.pre_filters.push(name);
            }
            if profile.plugins.filter(name).is_some() {
                profile.filters.push(name);
            }
            if profile.plugins.score(name).is_some() {
                profile.pre_scores.push(name);
                let Some(weight) = score_weight(
                    name,
                    p.weight,
                    &format!("{path}.multiPoint.enabled[{j}].weight"),
                    errors,
                ) else {
                    continue;
                };
                profile.scores.retain(|(n, _)| *n != name);
                profile.scores.push((name, weight));
            }
        }
    }
    /// Whether the profile's plugin of that name has the extension point.
    type Has = fn(&Profile, &str) -> bool;
    let points: [(&str, &Option<PluginSet>, Has); 4] = [
        ("preFilter", &plugins.pre_filter, |p, n| {
            p.plugins.pre_filter(n).is_some()
        }),
        ("filter", &plugins.filter, |p, n| {
            p.plugins.filter(n).is_some()
        }),
        ("preScore", &plugins.pre_score, |p, n| {
            p.plugins.score(n).is_some()
        }),
        ("score", &plugins.score, |p, n| p.plugins.score(n).is_some()),
    ];
    for (point, set, has) in points {
        let Some(set) = set else { continue };
        check(point, set, errors);
        let disable_all = set.disabled.iter().any(|p| p.name == "*");
        let off: BTreeSet<&str> = set.disabled.iter().map(|p| p.name.as_str()).collect();
        let keep = |n: &str| !disable_all && !off.contains(n);
        match point {
            "preFilter" => profile.pre_filters.retain(|n| keep(n)),
            "filter" => profile.filters.retain(|n| keep(n)),
            "preScore" => profile.pre_scores.retain(|n| keep(n)),
            _ => profile.scores.retain(|(n, _)| keep(n)),
        }
        for (j, p) in set.enabled.iter().enumerate() {
            let Some(name) = static_name(&p.name) else {
                continue;
            };
            if !has(profile, name) {
                errors.push(err(
                    format!("{path}.{point}.enabled[{j}].name"),
                    format!(
                        "Invalid value: {:?}: plugin {name} does not extend {point}",
                        p.name
                    ),
                ));
                continue;
            }
            match point {
                "preFilter" => {
                    profile.pre_filters.retain(|n| *n != name);
                    profile.pre_filters.push(name);
                }
                "filter" => {
                    profile.filters.retain(|n| *n != name);
                    profile.filters.push(name);
                }
                "preScore" => {
                    profile.pre_scores.retain(|n| *n != name);
                    profile.pre_scores.push(name);
                }
                _ => {
                    let field = format!("{path}.{point}.enabled[{j}].weight");
                    if let Some(weight) = score_weight(name, p.weight, &field, errors) {
                        profile.scores.retain(|(n, _)| *n != name);
                        profile.scores.push((name, weight));
                    }
                }
            }
        }
    }
}

/// A score weight: the file's, else the default profile's, else 1; it
/// must be in 1..=100 (upstream's `ValidateKubeSchedulerConfiguration`).
fn score_weight(
    name: &str,
    weight: Option<i64>,
    field: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<i64> {
    match weight {
        None | Some(0) => Some(
            DEFAULT_PLUGINS
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, w)| *w)
                .unwrap_or(1),
        ),
        Some(w) if (1..=100).contains(&w) => Some(w),
        Some(w) => {
            errors.push(err(
                field,
                format!("Invalid value: {w}: must be in the range [1, 100]"),
            ));
            None
        }
    }
}

fn resource_specs(
    resources: &[FileResource],
    path: &str,
    errors: &mut Vec<ConfigError>,
) -> Vec<ResourceSpec> {
    let mut out = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        if r.weight <= 0 || r.weight > MAX_RESOURCE_WEIGHT {
            errors.push(err(
                format!("{path}[{i}].weight"),
                format!(
                    "Invalid value: {}: resource weight of {} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
                    r.weight, r.name
                ),
            ));
        }
        out.push(ResourceSpec::new(r.name.clone(), r.weight));
    }
    out
}

fn apply_plugin_config(
    profile: &mut Profile,
    configs: &[FilePluginConfig],
    path: &str,
    gates: FeatureGates,
    errors: &mut Vec<ConfigError>,
) {
    let mut seen = BTreeSet::new();
    for (i, c) in configs.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if !seen.insert(c.name.as_str()) {
            errors.push(err(
                format!("{at}.name"),
                format!("Duplicate value: {:?}", c.name),
            ));
            continue;
        }
        let args_at = format!("{at}.args");
        let args = if c.args.is_null() {
            serde_json::json!({})
        } else {
            c.args.clone()
        };
        let plugins = &mut profile.plugins;
        match c.name.as_str() {
            node_resources_fit::NAME => {
                let Ok(a) = typed::<FitArgs>(&args, &args_at).map_err(|e| errors.push(e)) else {
                    continue;
                };
                let _ = (a.api_version, a.kind);
                let mut fit = NodeResourcesFit::default();
                if let Some(s) = a.scoring_strategy {
                    let strategy = s.type_.unwrap_or_else(|| "LeastAllocated".into());
                    if strategy != "LeastAllocated" || s.requested_to_capacity_ratio.is_some() {
                        errors.push(err(
                            format!("{args_at}.scoringStrategy.type"),
                            format!("Unsupported value: {strategy:?}: supported values: \"LeastAllocated\""),
                        ));
                    }
                    if let Some(r) = s.resources {
                        let specs = resource_specs(
                            &r,
                            &format!("{args_at}.scoringStrategy.resources"),
                            errors,
                        );
                        if let Ok(f) = NodeResourcesFit::new(specs) {
                            fit = f;
                        }
                    }
                }
                plugins.node_resources_fit = fit
                    .with_ignored_resources(a.ignored_resources)
                    .with_ignored_resource_groups(a.ignored_resource_groups);
            }
            node_resources_balanced_allocation::NAME => {
                let Ok(a) = typed::<BalancedArgs>(&args, &args_at).map_err(|e| errors.push(e))
                else {
                    continue;
                };
                let _ = (a.api_version, a.kind);
                if let Some(r) = a.resources {
                    plugins.balanced_allocation.resources =
                        resource_specs(&r, &format!("{args_at}.resources"), errors);
                }
            }
            pod_topology_spread::NAME => {
                let Ok(a) = typed::<SpreadArgs>(&args, &args_at).map_err(|e| errors.push(e)) else {
                    continue;
                };
                let _ = (a.api_version, a.kind);
                let defaulting = match a.defaulting_type.as_deref() {
                    None | Some("System") => DefaultingType::System,
                    Some("List") => DefaultingType::List,
                    Some(other) => {
                        errors.push(err(
                            format!("{args_at}.defaultingType"),
                            format!("Unsupported value: {other:?}: supported values: \"List\", \"System\""),
                        ));
                        continue;
                    }
                };
                if defaulting == DefaultingType::System && !a.default_constraints.is_empty() {
                    errors.push(err(
                        format!("{args_at}.defaultConstraints"),
                        "Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty",
                    ));
                }
                for (j, c) in a.default_constraints.iter().enumerate() {
                    let at = format!("{args_at}.defaultConstraints[{j}]");
                    if c.max_skew <= 0 {
                        errors.push(err(
                            format!("{at}.maxSkew"),
                            format!("Invalid value: {}: must be greater than zero", c.max_skew),
                        ));
                    }
                    if c.topology_key.is_empty() {
                        errors.push(err(
                            format!("{at}.topologyKey"),
                            "Required value: can not be empty",
                        ));
                    }
                    if c.when_unsatisfiable != SCHEDULE_ANYWAY
                        && c.when_unsatisfiable != "DoNotSchedule"
                    {
                        errors.push(err(
                            format!("{at}.whenUnsatisfiable"),
                            format!("Unsupported value: {:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"", c.when_unsatisfiable),
                        ));
                    }
                    if c.label_selector.is_some() {
                        errors.push(err(format!("{at}.labelSelector"), "Forbidden: constraint must not define a selector, as they deduced for each pod"));
                    }
                }
                plugins.pod_topology_spread =
                    PodTopologySpread::new(defaulting, a.default_constraints, gates);
            }
            inter_pod_affinity::NAME => {
                let Ok(a) = typed::<AffinityArgs>(&args, &args_at).map_err(|e| errors.push(e))
                else {
                    continue;
                };
                let _ = (a.api_version, a.kind);
                let mut pl = InterPodAffinity::default();
                if let Some(w) = a.hard_pod_affinity_weight {
                    match i32::try_from(w) {
                        Ok(w) if (0..=100).contains(&w) => pl.hard_pod_affinity_weight = w,
                        _ => errors.push(err(
                            format!("{args_at}.hardPodAffinityWeight"),
                            format!("Invalid value: {w}: not in valid range [0-100]"),
                        )),
                    }
                }
                pl.ignore_preferred_terms_of_existing_pods =
                    a.ignore_preferred_terms_of_existing_pods.unwrap_or(false);
                plugins.inter_pod_affinity = pl;
            }
            node_affinity::NAME => {
                let Ok(a) =
                    typed::<NodeAffinityFileArgs>(&args, &args_at).map_err(|e| errors.push(e))
                else {
                    continue;
                };
                let _ = (a.api_version, a.kind);
                match NodeAffinity::new(&NodeAffinityArgs {
                    added_affinity: a.added_affinity,
                }) {
                    Ok(pl) => plugins.node_affinity = pl,
                    Err(e) => errors.push(err(
                        format!("{args_at}.addedAffinity"),
                        format!("Invalid value: {e}"),
                    )),
                }
            }
            taint_toleration::NAME
            | node_name::NAME
            | node_unschedulable::NAME
            | node_ports::NAME
            | image_locality::NAME => {
                if args
                    .as_object()
                    .is_some_and(|o| o.keys().any(|k| k != "apiVersion" && k != "kind"))
                {
                    errors.push(err(
                        args_at,
                        format!("Invalid value: plugin {} takes no args", c.name),
                    ));
                }
            }
            other if IMPLICIT_PLUGINS.contains(&other) => {}
            other => errors.push(err(
                format!("{at}.name"),
                format!("Invalid value: {other:?}: plugin does not exist"),
            )),
        }
    }
}

#[cfg(test)]
mod tests;
