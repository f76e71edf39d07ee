//! The scenario file: what the cluster looks like at t=0 and what happens
//! to it later, parsed and checked before anything runs.
//!
//! ```yaml
//! config: {node-monitor-grace-period: 50s}
//! nodes:
//!   - {name: node1, zone: a, taints: ["dedicated=groupName:NoSchedule"]}
//!   - {generate: 3, prefix: worker-, zone: b}
//! objects:
//!   - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, image: i}]}}
//! steps:
//!   - {at: 10s, taint: "node1 key1=value1:NoExecute"}
//!   - {at: 20s, taint: "node1 maintenance:NoSchedule", for: 30m}
//!   - {at: 30s, heartbeat: {zone: b, stop: true}}
//!   - {at: 40s, scale: deployment/web, replicas: 6}
//! run: 1h
//! ```
//!
//! A `taint` step with `for:` adds taints that expire (berth's
//! `berth.dev/taint-expiry` annotation): the node lifecycle controller
//! removes them that long after the step.
//!
//! Every problem, syntactic or not, is reported with the file's line: YAML
//! and type errors at the location the parser gives, semantic ones (an
//! unknown node, a bad taint, a bad duration) at the step or entry that
//! holds them, found through [`serde_saphyr::Spanned`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use berth_apiserver::resources::{RESOURCES, ResourceType};
use berth_core::quantity::Quantity;
use berth_core::taint_spec::{TaintSpec, parse_register_with_taints, parse_taint_specs};
use berth_core::validation::names::{
    is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};
use k8s_openapi::api::core::v1::Taint;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::{Location, Spanned};

use crate::config::SimConfig;
use crate::duration::parse_duration;

/// The label that places a node in a zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// A scenario file that cannot run: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ScenarioError {
    pub file: String,
    /// 1-based; 0 when the problem has no place in the file.
    pub line: u64,
    pub column: u64,
    pub message: String,
}

/// A checked scenario, ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file's name, as errors give it.
    pub file: String,
    pub config: SimConfig,
    /// In file order; generated nodes in their generated order.
    pub nodes: Vec<NodeSpec>,
    /// Applied at t=0, in file order.
    pub objects: Vec<Manifest>,
    /// In time order; steps at the same time in file order.
    pub steps: Vec<Step>,
    /// Total virtual time.
    pub run: Duration,
    /// The file's leading comment ([`leading_comment`]): what the
    /// scenario shows and why, for the report's header.
    pub description: String,
}

/// A simulated node registered at t=0.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub zone: Option<String>,
    /// Including the zone label when `zone` is set.
    pub labels: BTreeMap<String, String>,
    /// Registered with these taints (`--register-with-taints`).
    pub taints: Vec<Taint>,
    /// Capacity (and allocatable): resource name → quantity.
    pub capacity: BTreeMap<String, String>,
}

/// An object to apply, with its resource type resolved.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub resource: &'static ResourceType,
    /// `None` for cluster-scoped objects; `default` when a namespaced one
    /// names none.
    pub namespace: Option<String>,
    pub name: String,
    pub object: Value,
    pub line: u64,
}

/// One step at its virtual time.
#[derive(Debug, Clone)]
pub struct Step {
    pub at: Duration,
    pub line: u64,
    pub action: Action,
    /// The step as the file wrote it, for logs and the report.
    pub text: String,
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// `kubectl taint nodes <nodes> <specs>`: adds and removes; the added
    /// taints expire this long after the step (`for:`).
    Taint {
        nodes: Vec<String>,
        spec: TaintSpec,
        expires_after: Option<Duration>,
    },
    /// Stops or resumes the heartbeats (Lease and status) of these nodes.
    Heartbeat {
        nodes: Vec<String>,
        stop: bool,
    },
    /// The node starts reporting this condition.
    Condition {
        node: String,
        condition: String,
        status: String,
        reason: Option<String>,
        message: Option<String>,
    },
    /// Creates the object or, if it exists, updates it (server-side apply).
    Apply(Manifest),
    Delete(Target),
    /// `kubectl scale --replicas`: through the `/scale` subresource.
    Scale {
        target: Target,
        replicas: i32,
    },
    /// `kubectl cordon` (true) / `uncordon` (false).
    Cordon {
        node: String,
        unschedulable: bool,
    },
    /// Stops a component and starts it again.
    Restart {
        component: String,
    },
}

/// The object a `delete` or `scale` step names.
#[derive(Debug, Clone)]
pub struct Target {
    pub resource: &'static ResourceType,
    pub namespace: Option<String>,
    pub name: String,
}

/// Components a `restart` step may name.
pub const RESTARTABLE: &[&str] = &["controllers", "scheduler"];

/// Node conditions a `condition` step may set.
const CONDITION_TYPES: &[&str] = &[
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
];

// ---- the file as written ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    config: BTreeMap<String, Spanned<Value>>,
    #[serde(default)]
    nodes: Vec<Spanned<NodeEntry>>,
    #[serde(default)]
    objects: Vec<Spanned<Value>>,
    #[serde(default)]
    steps: Vec<Spanned<StepEntry>>,
    run: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEntry {
    name: Option<String>,
    generate: Option<u32>,
    prefix: Option<String>,
    zone: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    taints: Vec<String>,
    #[serde(default)]
    capacity: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepEntry {
    at: Spanned<String>,
    taint: Option<String>,
    /// With `taint`: the added taints expire after this long.
    #[serde(rename = "for")]
    expires_after: Option<Spanned<String>>,
    untaint: Option<String>,
    heartbeat: Option<HeartbeatEntry>,
    condition: Option<ConditionEntry>,
    apply: Option<Value>,
    delete: Option<String>,
    scale: Option<String>,
    replicas: Option<Spanned<i64>>,
    cordon: Option<String>,
    uncordon: Option<String>,
    restart: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeartbeatEntry {
    node: Option<String>,
    zone: Option<String>,
    stop: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConditionEntry {
    node: String,
    #[serde(rename = "type")]
    condition: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
}

/// The capacity a node gets when its entry names none.
fn default_capacity() -> BTreeMap<String, String> {
    [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

struct Checker<'a> {
    file: &'a str,
}

impl Checker<'_> {
    fn at(&self, location: Location, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_owned(),
            line: location.line(),
            column: location.column(),
            message: message.into(),
        }
    }
}

/// Parses and checks a scenario; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let raw: File = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        ScenarioError {
            file: file.to_owned(),
            line,
            column,
            message: yaml_message(&e),
        }
    })?;
    let check = Checker { file };

    let mut config = SimConfig::default();
    for (name, value) in &raw.config {
        let text = match &value.value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(check.at(
                    value.referenced,
                    format!("config {name}: expected a scalar value"),
                ));
            }
        };
        config
            .set(name, &text)
            .map_err(|e| check.at(value.referenced, format!("config {name}: {e}")))?;
    }

    let nodes = check_nodes(&check, &raw.nodes)?;
    let names: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let mut zones: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for node in &nodes {
        if let Some(zone) = &node.zone {
            zones.entry(zone).or_default().push(node.name.clone());
        }
    }

    let mut objects = Vec::new();
    for entry in &raw.objects {
        objects.push(check_manifest(&check, entry.referenced, &entry.value)?);
    }

    let run = parse_duration(&raw.run.value)
        .map_err(|e| check.at(raw.run.referenced, format!("run: {e}")))?;

    let mut steps = Vec::new();
    for entry in &raw.steps {
        let step = &entry.value;
        let line = entry.referenced;
        let at = parse_duration(&step.at.value)
            .map_err(|e| check.at(step.at.referenced, format!("at: {e}")))?;
        if at > run {
            return Err(check.at(
                step.at.referenced,
                format!(
                    "step at {} is after the end of the run ({})",
                    step.at.value, raw.run.value
                ),
            ));
        }
        let known_node = |name: &str| -> Result<String, ScenarioError> {
            if names.contains(name) {
                Ok(name.to_owned())
            } else {
                Err(check.at(line, format!("unknown node {name:?}")))
            }
        };
        let mut actions: Vec<(Action, String)> = Vec::new();
        let expires_after = match (&step.expires_after, &step.taint) {
            (None, _) => None,
            (Some(for_), None) => {
                return Err(check.at(for_.referenced, "for: only a taint step expires"));
            }
            (Some(for_), Some(_)) => Some(
                parse_duration(&for_.value)
                    .map_err(|e| check.at(for_.referenced, format!("for: {e}")))?,
            ),
        };
        if let Some(text) = &step.taint {
            let mut action = check_taint(&check, line, text, false, &known_node)?;
            let mut described = format!("taint {text}");
            if let (
                Action::Taint {
                    expires_after: expiry,
                    spec,
                    ..
                },
                Some(after),
            ) = (&mut action, expires_after)
            {
                if spec.to_add.is_empty() {
                    return Err(check.at(line, "for: the step adds no taint to expire"));
                }
                *expiry = Some(after);
                if let Some(for_) = &step.expires_after {
                    described.push_str(&format!(" for {}", for_.value));
                }
            }
            actions.push((action, described));
        }
        if let Some(text) = &step.untaint {
            actions.push((
                check_taint(&check, line, text, true, &known_node)?,
                format!("untaint {text}"),
            ));
        }
        if let Some(hb) = &step.heartbeat {
            let (targets, what) = match (&hb.node, &hb.zone) {
                (Some(node), None) => (vec![known_node(node)?], format!("node {node}")),
                (None, Some(zone)) => match zones.get(zone.as_str()) {
                    Some(members) => (members.clone(), format!("zone {zone}")),
                    None => return Err(check.at(line, format!("unknown zone {zone:?}"))),
                },
                _ => {
                    return Err(check.at(line, "heartbeat: name exactly one of node and zone"));
                }
            };
            let verb = if hb.stop { "stop" } else { "resume" };
            actions.push((
                Action::Heartbeat {
                    nodes: targets,
                    stop: hb.stop,
                },
                format!("heartbeat {verb} {what}"),
            ));
        }
        if let Some(c) = &step.condition {
            if !CONDITION_TYPES.contains(&c.condition.as_str()) {
                return Err(check.at(
                    line,
                    format!(
                        "condition: unknown type {:?} (one of {})",
                        c.condition,
                        CONDITION_TYPES.join(", ")
                    ),
                ));
            }
            if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
                return Err(check.at(
                    line,
                    format!(
                        "condition: status {:?} is not one of True, False, Unknown",
                        c.status
                    ),
                ));
            }
            actions.push((
                Action::Condition {
                    node: known_node(&c.node)?,
                    condition: c.condition.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                },
                format!("condition {} {}={}", c.node, c.condition, c.status),
            ));
        }
        if let Some(object) = &step.apply {
            let manifest = check_manifest(&check, line, object)?;
            let text = format!("apply {}/{}", manifest.resource.plural, manifest.name);
            actions.push((Action::Apply(manifest), text));
        }
        if let Some(target) = &step.delete {
            actions.push((
                Action::Delete(check_target(&check, line, "delete", target)?),
                format!("delete {target}"),
            ));
        }
        match (&step.scale, &step.replicas) {
            (Some(target), Some(replicas)) => {
                actions.push((
                    check_scale(&check, line, target, replicas)?,
                    format!("scale {target} --replicas={}", replicas.value),
                ));
            }
            (Some(_), None) => {
                return Err(check.at(line, "scale: replicas is required"));
            }
            (None, Some(replicas)) => {
                return Err(check.at(replicas.referenced, "replicas goes with scale"));
            }
            (None, None) => {}
        }
        for (value, unschedulable, verb) in [
            (&step.cordon, true, "cordon"),
            (&step.uncordon, false, "uncordon"),
        ] {
            if let Some(node) = value {
                actions.push((
                    Action::Cordon {
                        node: known_node(node)?,
                        unschedulable,
                    },
                    format!("{verb} {node}"),
                ));
            }
        }
        if let Some(component) = &step.restart {
            if !RESTARTABLE.contains(&component.as_str()) {
                return Err(check.at(
                    line,
                    format!(
                        "restart: unknown component {component:?} (one of {})",
                        RESTARTABLE.join(", ")
                    ),
                ));
            }
            actions.push((
                Action::Restart {
                    component: component.clone(),
                },
                format!("restart {component}"),
            ));
        }
        let mut actions = actions.into_iter();
        let (action, text) = match (actions.next(), actions.next()) {
            (Some(one), None) => one,
            (None, _) => {
                return Err(check.at(
                    line,
                    "a step needs one action: taint, untaint, heartbeat, condition, apply, delete, scale, cordon, uncordon or restart",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(check.at(line, "a step has exactly one action; split it in two"));
            }
        };
        steps.push(Step {
            at,
            line: line.line(),
            action,
            text,
        });
    }
    // Stable: steps at the same time keep file order.
    steps.sort_by_key(|s| s.at);

    Ok(Scenario {
        file: file.to_owned(),
        config,
        nodes,
        objects,
        steps,
        run,
        description: leading_comment(text),
    })
}

/// The comment lines before the first other line, without their `#`;
/// an empty comment line separates paragraphs (kept as a blank line).
pub fn leading_comment(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .take_while(|l| l.starts_with('#') || l.is_empty())
        .map(|l| {
            let body = l.strip_prefix('#').unwrap_or(l);
            body.strip_prefix(' ').unwrap_or(body)
        })
        .collect();
    lines.join("\n").trim().to_owned()
}

/// The parser's message without the location it also reports (the caller
/// prints `file:line:column:` itself).
fn yaml_message(err: &serde_saphyr::Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // serde-saphyr writes `line L column C: message`.
    match first
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((place, message)) if place.contains(" column ") => message.to_owned(),
        _ => first.to_owned(),
    }
}

fn check_nodes(
    check: &Checker<'_>,
    entries: &[Spanned<NodeEntry>],
) -> Result<Vec<NodeSpec>, ScenarioError> {
    let mut nodes = Vec::new();
    let mut seen = BTreeSet::new();
    for entry in entries {
        let line = entry.referenced;
        let e = &entry.value;
        let names: Vec<String> = match (&e.name, e.generate) {
            (Some(name), None) => {
                if e.prefix.is_some() {
                    return Err(check.at(line, "prefix goes with generate, not with name"));
                }
                vec![name.clone()]
            }
            (None, Some(count)) => {
                let prefix = e.prefix.as_deref().unwrap_or("node-");
                (1..=count).map(|i| format!("{prefix}{i}")).collect()
            }
            _ => {
                return Err(check.at(line, "a node has either name or generate (with prefix)"));
            }
        };
        let mut labels = e.labels.clone();
        for (key, value) in &labels {
            let mut errs = is_qualified_name(key);
            errs.extend(is_valid_label_value(value));
            if !errs.is_empty() {
                return Err(check.at(line, format!("label {key}={value}: {}", errs.join("; "))));
            }
        }
        if let Some(zone) = &e.zone {
            let errs = is_valid_label_value(zone);
            if !errs.is_empty() {
                return Err(check.at(line, format!("zone {zone:?}: {}", errs.join("; "))));
            }
            labels.insert(ZONE_LABEL.to_owned(), zone.clone());
        }
        let taints = parse_register_with_taints(&e.taints.join(","))
            .map_err(|err| check.at(line, err.to_string()))?;
        let capacity = if e.capacity.is_empty() {
            default_capacity()
        } else {
            e.capacity.clone()
        };
        for (resource, quantity) in &capacity {
            Quantity::parse(quantity).map_err(|err| {
                check.at(line, format!("capacity {resource}: {quantity:?}: {err}"))
            })?;
        }
        for name in names {
            let errs = is_dns1123_subdomain(&name);
            if !errs.is_empty() {
                return Err(check.at(line, format!("node name {name:?}: {}", errs.join("; "))));
            }
            if !seen.insert(name.clone()) {
                return Err(check.at(line, format!("node {name:?} is defined twice")));
            }
            nodes.push(NodeSpec {
                name,
                zone: e.zone.clone(),
                labels: labels.clone(),
                taints: taints.clone(),
                capacity: capacity.clone(),
            });
        }
    }
    Ok(nodes)
}

/// The served resource type for a `kind` (and its `apiVersion`).
fn resource_for_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .copied()
        .filter(|r| r.stored_as.is_none() || r.group.is_empty())
        .find(|r| r.kind == kind && r.api_version() == api_version)
}

/// The resource type a `delete` names: plural, singular or short name.
fn resource_for_name(name: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .copied()
        .find(|r| r.plural == name || r.singular == name || r.short_names.contains(&name))
}

fn check_manifest(
    check: &Checker<'_>,
    line: Location,
    object: &Value,
) -> Result<Manifest, ScenarioError> {
    let str_at = |path: &[&str]| -> Option<&str> {
        let mut v = object;
        for key in path {
            v = v.get(key)?;
        }
        v.as_str()
    };
    if !object.is_object() {
        return Err(check.at(line, "an object must be a mapping"));
    }
    let api_version =
        str_at(&["apiVersion"]).ok_or_else(|| check.at(line, "object has no apiVersion"))?;
    let kind = str_at(&["kind"]).ok_or_else(|| check.at(line, "object has no kind"))?;
    let resource = resource_for_kind(api_version, kind).ok_or_else(|| {
        check.at(
            line,
            format!("no resource of kind {kind:?} in {api_version:?} is served"),
        )
    })?;
    let name = str_at(&["metadata", "name"])
        .ok_or_else(|| check.at(line, format!("{kind} has no metadata.name")))?;
    let namespace = resource.namespaced.then(|| {
        str_at(&["metadata", "namespace"])
            .unwrap_or("default")
            .to_owned()
    });
    let mut object = object.clone();
    if let (Some(ns), Some(meta)) = (
        &namespace,
        object.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("namespace".into(), Value::String(ns.clone()));
    }
    Ok(Manifest {
        resource,
        namespace,
        name: name.to_owned(),
        object,
        line: line.line(),
    })
}

/// `RESOURCE/NAMESPACE/NAME` or `RESOURCE/NAME` (namespace `default`),
/// the object a `verb` step acts on.
fn check_target(
    check: &Checker<'_>,
    line: Location,
    verb: &str,
    target: &str,
) -> Result<Target, ScenarioError> {
    let parts: Vec<&str> = target.split('/').collect();
    let bad = || {
        check.at(
            line,
            format!("{verb} {target:?}: expected RESOURCE/NAMESPACE/NAME or RESOURCE/NAME"),
        )
    };
    let resource = parts
        .first()
        .and_then(|r| resource_for_name(r))
        .ok_or_else(bad)?;
    let (namespace, name) = match (resource.namespaced, parts.as_slice()) {
        (true, [_, ns, name]) => (Some((*ns).to_owned()), *name),
        (true, [_, name]) => (Some("default".to_owned()), *name),
        (false, [_, name]) => (None, *name),
        _ => return Err(bad()),
    };
    if name.is_empty() {
        return Err(bad());
    }
    Ok(Target {
        resource,
        namespace,
        name: name.to_owned(),
    })
}

/// `scale: RESOURCE/NAME` with `replicas`: a type with a `/scale`
/// subresource and a count the API accepts (an int32, not negative).
fn check_scale(
    check: &Checker<'_>,
    line: Location,
    target: &str,
    replicas: &Spanned<i64>,
) -> Result<Action, ScenarioError> {
    let target = check_target(check, line, "scale", target)?;
    if !target
        .resource
        .subresources
        .iter()
        .any(|s| s.name == "scale")
    {
        return Err(check.at(
            line,
            format!(
                "scale: {} cannot be scaled (deployments, replicasets and statefulsets can)",
                target.resource.plural
            ),
        ));
    }
    let replicas = i32::try_from(replicas.value)
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            check.at(
                replicas.referenced,
                format!(
                    "replicas: {} is not a count of replicas (0 to {})",
                    replicas.value,
                    i32::MAX
                ),
            )
        })?;
    Ok(Action::Scale { target, replicas })
}

/// `taint`/`untaint`: `NODE... SPEC...` in `kubectl taint` syntax. An
/// `untaint` spec without the trailing `-` gets it.
fn check_taint(
    check: &Checker<'_>,
    line: Location,
    text: &str,
    remove: bool,
    known_node: &dyn Fn(&str) -> Result<String, ScenarioError>,
) -> Result<Action, ScenarioError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (nodes, specs) = berth_core::taint_spec::split_taint_args(&words)
        .map_err(|e| check.at(line, e.to_string()))?;
    let specs: Vec<String> = specs
        .iter()
        .map(|s| {
            if remove && !s.ends_with('-') {
                format!("{s}-")
            } else {
                (*s).to_owned()
            }
        })
        .collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let spec = parse_taint_specs(&specs).map_err(|e| check.at(line, e.to_string()))?;
    let nodes = nodes
        .iter()
        .map(|n| known_node(n.strip_prefix("node/").unwrap_or(n)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Action::Taint {
        nodes,
        spec,
        expires_after: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE_EXAMPLE: &str = r#"config:
  node-monitor-grace-period: 50s
  feature-gates: TaintTolerationComparisonOperators=true
nodes:
  - name: node1
    zone: a
    labels: {dedicated: groupName}
    taints: ["dedicated=groupName:NoSchedule"]
    capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  - {name: node2, zone: a}
  - {name: node3, zone: a}
  - {generate: 3, prefix: worker-, zone: b}
objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, image: i}]}}
steps:
  - {at: 10s, taint: "node1 key1=value1:NoExecute"}
  - {at: 20s, untaint: "node1 key1:NoExecute-"}
  - {at: 25s, taint: "node1 maintenance=kernel:NoSchedule", for: 30m}
  - {at: 30s, heartbeat: {node: node1, stop: true}}
  - {at: 30s, heartbeat: {zone: b, stop: true}}
  - {at: 40s, condition: {node: node2, type: MemoryPressure, status: "True"}}
  - {at: 50s, apply: {apiVersion: v1, kind: Pod, metadata: {name: late, namespace: team}, spec: {}}}
  - {at: 60s, delete: pods/default/web}
  - {at: 70s, cordon: node3}
  - {at: 75s, uncordon: node3}
  - {at: 80s, restart: controllers}
  - {at: 85s, scale: deployment/web, replicas: 6}
  - {at: 90s, scale: statefulsets/team/db, replicas: 0}
run: 2h
"#;

    /// The leading comment is the description: its `#` and one space go,
    /// blank comment lines stay as paragraph breaks, and comments after
    /// the first key are not part of it.
    #[test]
    fn the_leading_comment_is_the_description() {
        struct Case {
            name: &'static str,
            text: &'static str,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "two paragraphs",
                text: "# One.\n# Two lines.\n#\n# Next.\nrun: 1m\n# not this\n",
                want: "One.\nTwo lines.\n\nNext.",
            },
            Case {
                name: "no comment",
                text: "run: 1m\n",
                want: "",
            },
            Case {
                name: "blank lines before the comment",
                text: "\n#A\nrun: 1m\n",
                want: "A",
            },
        ];
        for case in &cases {
            assert_eq!(leading_comment(case.text), case.want, "{}", case.name);
        }
    }

    #[test]
    fn the_issue_example_parses() {
        let s = parse("example.yaml", ISSUE_EXAMPLE).map_err(|e| e.to_string());
        let s = match s {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(s.run, Duration::from_secs(7200));
        assert_eq!(s.config.node_monitor_grace_period, Duration::from_secs(50));
        let names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "node1", "node2", "node3", "worker-1", "worker-2", "worker-3"
            ]
        );
        assert_eq!(s.nodes[0].labels[ZONE_LABEL], "a");
        assert_eq!(s.nodes[0].taints[0].key, "dedicated");
        assert_eq!(s.nodes[1].capacity["memory"], "8Gi");
        assert_eq!(s.objects[0].namespace.as_deref(), Some("default"));
        let texts: Vec<&str> = s.steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "taint node1 key1=value1:NoExecute",
                "untaint node1 key1:NoExecute-",
                "taint node1 maintenance=kernel:NoSchedule for 30m",
                "heartbeat stop node node1",
                "heartbeat stop zone b",
                "condition node2 MemoryPressure=True",
                "apply pods/late",
                "delete pods/default/web",
                "cordon node3",
                "uncordon node3",
                "restart controllers",
                "scale deployment/web --replicas=6",
                "scale statefulsets/team/db --replicas=0",
            ]
        );
        assert!(matches!(
            &s.steps[11].action,
            Action::Scale { target, replicas: 6 }
                if target.resource.kind == "Deployment"
                    && target.namespace.as_deref() == Some("default")
                    && target.name == "web"
        ));
        assert!(matches!(
            &s.steps[12].action,
            Action::Scale { target, replicas: 0 }
                if target.resource.kind == "StatefulSet" && target.namespace.as_deref() == Some("team")
        ));
        assert_eq!(s.steps[0].line, 16);
        assert!(matches!(
            &s.steps[2].action,
            Action::Taint { expires_after: Some(after), .. } if *after == Duration::from_secs(1800)
        ));
        assert!(matches!(
            &s.steps[4].action,
            Action::Heartbeat { nodes, stop: true } if nodes.len() == 3
        ));
    }

    #[test]
    fn steps_at_the_same_time_keep_file_order_and_later_ones_sort() {
        let text = "nodes: [{name: n1}]\nsteps:\n  - {at: 20s, cordon: n1}\n  - {at: 10s, uncordon: n1}\n  - {at: 10s, cordon: n1}\nrun: 1m\n";
        let s = parse("f", text).map_err(|e| e.to_string());
        let lines: Vec<u64> = s
            .map(|s| s.steps.iter().map(|s| s.line).collect())
            .unwrap_or_default();
        assert_eq!(lines, [4, 5, 3]);
    }

    /// Each bad file gives the line of its problem and the problem.
    #[test]
    fn bad_files_name_the_line_and_the_problem() {
        let head = "nodes:\n  - {name: n1, zone: a}\n";
        struct Case<'a> {
            name: &'a str,
            text: String,
            line: u64,
            want: &'a str,
        }
        let cases = &[
            Case {
                name: "unknown step kind",
                text: format!("{head}steps:\n  - {{at: 1s, explode: n1}}\nrun: 1m\n"),
                line: 4,
                want: "unknown field `explode`",
            },
            Case {
                name: "bad taint syntax",
                text: format!("{head}steps:\n  - at: 1s\n    taint: \"n1 k=v:Sometimes\"\nrun: 1m\n"),
                line: 4,
                want: "invalid taint effect: Sometimes",
            },
            Case {
                name: "for on a step that is not a taint",
                text: format!("{head}steps:\n  - at: 1s\n    untaint: \"n1 k:NoExecute\"\n    for: 1m\nrun: 1m\n"),
                line: 6,
                want: "for: only a taint step expires",
            },
            Case {
                name: "for with a bad duration",
                text: format!("{head}steps:\n  - at: 1s\n    taint: \"n1 k=v:NoExecute\"\n    for: soon\nrun: 1m\n"),
                line: 6,
                want: "for: time: invalid duration \"soon\"",
            },
            Case {
                name: "for on a taint step that only removes",
                text: format!("{head}steps:\n  - at: 1s\n    taint: \"n1 k:NoExecute-\"\n    for: 1m\nrun: 1m\n"),
                line: 4,
                want: "for: the step adds no taint to expire",
            },
            Case {
                name: "bad duration",
                text: format!("{head}steps:\n  - {{at: 10, cordon: n1}}\nrun: 1m\n"),
                line: 4,
                want: "missing unit in duration \"10\"",
            },
            Case {
                name: "unknown node",
                text: format!("{head}steps:\n  - {{at: 1s, cordon: n1}}\n  - {{at: 2s, cordon: n9}}\nrun: 1m\n"),
                line: 5,
                want: "unknown node \"n9\"",
            },
            Case {
                name: "unknown zone",
                text: format!("{head}steps:\n  - {{at: 1s, heartbeat: {{zone: z, stop: true}}}}\nrun: 1m\n"),
                line: 4,
                want: "unknown zone \"z\"",
            },
            Case {
                name: "two actions",
                text: format!("{head}steps:\n  - {{at: 1s, cordon: n1, uncordon: n1}}\nrun: 1m\n"),
                line: 4,
                want: "exactly one action",
            },
            Case {
                name: "no action",
                text: format!("{head}steps:\n  - {{at: 1s}}\nrun: 1m\n"),
                line: 4,
                want: "needs one action",
            },
            Case {
                name: "after the run",
                text: format!("{head}steps:\n  - {{at: 2m, cordon: n1}}\nrun: 1m\n"),
                line: 4,
                want: "after the end of the run",
            },
            Case {
                name: "bad run",
                text: format!("{head}run: forever\n"),
                line: 3,
                want: "run: time: invalid duration",
            },
            Case {
                name: "unknown flag",
                text: "config:\n  node-monitor-grace: 5s\nrun: 1m\n".into(),
                line: 2,
                want: "unknown flag",
            },
            Case {
                name: "bad node taint",
                text: "nodes:\n  - {name: n1}\n  - {name: n2, taints: [\"a=b\"]}\nrun: 1m\n".into(),
                line: 3,
                want: "invalid taint spec: a=b",
            },
            Case {
                name: "duplicate node",
                text: "nodes:\n  - {name: n1}\n  - {name: n1}\nrun: 1m\n".into(),
                line: 3,
                want: "defined twice",
            },
            Case {
                name: "unserved kind",
                text: "objects:\n  - {apiVersion: batch/v1, kind: Job, metadata: {name: d}}\nrun: 1m\n".into(),
                line: 2,
                want: "Job",
            },
            Case {
                name: "bad delete",
                text: format!("{head}steps:\n  - {{at: 1s, delete: widgets/x}}\nrun: 1m\n"),
                line: 4,
                want: "delete \"widgets/x\"",
            },
            Case {
                name: "scale without replicas",
                text: format!("{head}steps:\n  - {{at: 1s, scale: deployment/web}}\nrun: 1m\n"),
                line: 4,
                want: "scale: replicas is required",
            },
            Case {
                name: "replicas without scale",
                text: format!("{head}steps:\n  - at: 1s\n    cordon: n1\n    replicas: 3\nrun: 1m\n"),
                line: 6,
                want: "replicas goes with scale",
            },
            Case {
                name: "scale of a kind without /scale",
                text: format!("{head}steps:\n  - {{at: 1s, scale: daemonsets/agent, replicas: 2}}\nrun: 1m\n"),
                line: 4,
                want: "daemonsets cannot be scaled",
            },
            Case {
                name: "scale of an unknown resource",
                text: format!("{head}steps:\n  - {{at: 1s, scale: widgets/x, replicas: 2}}\nrun: 1m\n"),
                line: 4,
                want: "scale \"widgets/x\": expected RESOURCE/NAMESPACE/NAME",
            },
            Case {
                name: "negative replicas",
                text: format!("{head}steps:\n  - at: 1s\n    scale: deployment/web\n    replicas: -1\nrun: 1m\n"),
                line: 6,
                want: "replicas: -1 is not a count of replicas",
            },
            Case {
                name: "replicas past int32",
                text: format!("{head}steps:\n  - at: 1s\n    scale: deployment/web\n    replicas: 3000000000\nrun: 1m\n"),
                line: 6,
                want: "replicas: 3000000000 is not a count",
            },
            Case {
                name: "replicas not a number",
                text: format!("{head}steps:\n  - at: 1s\n    scale: deployment/web\n    replicas: many\nrun: 1m\n"),
                line: 6,
                want: "invalid",
            },
            Case {
                name: "bad condition",
                text: format!("{head}steps:\n  - {{at: 1s, condition: {{node: n1, type: Hungry, status: \"True\"}}}}\nrun: 1m\n"),
                line: 4,
                want: "unknown type \"Hungry\"",
            },
            Case {
                name: "syntax error",
                text: "nodes: [\nrun: 1m\n".into(),
                line: 0,
                want: "",
            },
            Case {
                name: "missing run",
                text: "nodes: []\n".into(),
                line: 0,
                want: "run",
            },
            Case {
                name: "wrong type",
                text: "nodes:\n  - {name: n1, generate: lots}\nrun: 1m\n".into(),
                line: 2,
                want: "invalid u32",
            },
        ];
        for Case {
            name,
            text,
            line,
            want,
        } in cases
        {
            let err = match parse("s.yaml", text) {
                Ok(_) => panic!("{name}: parsed"),
                Err(e) => e,
            };
            if *line != 0 {
                assert_eq!(err.line, *line, "{name}: {err}");
            } else {
                assert!(err.line > 0, "{name}: no line: {err}");
            }
            assert!(err.message.contains(want), "{name}: {err}");
            assert!(
                err.to_string()
                    .starts_with(&format!("s.yaml:{}:", err.line)),
                "{name}: {err}"
            );
            assert!(
                !err.message.starts_with("error") && !err.message.contains("column"),
                "{name}: {err}"
            );
        }
    }
}
