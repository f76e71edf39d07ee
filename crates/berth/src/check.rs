//! `berth check --pod POD.yaml --node NODE.yaml ...`: reads and validates
//! the manifests, asks `berth_scheduler::check` about every pod, prints a
//! table or JSON, and exits 1 ([`FitsNowhere`]) when a pod fits none of the
//! nodes, so that scripts can test the answer.

use std::path::{Path, PathBuf};

use anyhow::Context;
use berth_core::FeatureGates;
use berth_core::manifest::Document;
use berth_core::taint_spec::format_taint;
use berth_core::validation::{ErrorList, validate_node, validate_pod};
use berth_scheduler::check::{CheckReport, IfRunning, NodeVerdict, check_pod};
use clap::{Args, ValueEnum};
use k8s_openapi::api::core::v1::{Node, Pod};

use crate::input::{InputError, read_objects};

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 when every pod fits at least one node, 1 when a pod fits none (the report is printed either way), 2 for bad input."
)]
pub struct CheckArgs {
    /// The pod manifest (YAML or JSON; several documents or a List check each pod).
    #[arg(long, value_name = "POD.yaml")]
    pod: PathBuf,
    /// A node manifest; repeat for more nodes (a file may hold several).
    #[arg(long = "node", value_name = "NODE.yaml", required = true)]
    nodes: Vec<PathBuf>,
    /// Feature gates, e.g. `TaintTolerationComparisonOperators=false`.
    #[arg(long = "feature-gates", value_name = "NAME=BOOL,...", default_value = "", value_parser = parse_gates)]
    feature_gates: FeatureGates,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Text,
    Json,
}

pub fn parse_gates(spec: &str) -> Result<FeatureGates, String> {
    spec.parse()
        .map_err(|e: berth_core::feature_gates::FeatureGateError| e.to_string())
}

pub fn run(args: &CheckArgs) -> anyhow::Result<()> {
    let gates = args.feature_gates;
    let pods = read_pods(&args.pod)?;
    let mut nodes = Vec::new();
    for path in &args.nodes {
        nodes.extend(read_nodes(path)?);
    }
    let reports: Vec<CheckReport> = pods
        .iter()
        .map(|pod| check_pod(pod, &nodes, gates))
        .collect();
    let out = match args.output {
        Output::Json => {
            let json = match reports.as_slice() {
                [one] => serde_json::to_string_pretty(one),
                many => serde_json::to_string_pretty(many),
            };
            json.context("encoding the report")? + "\n"
        }
        Output::Text => reports
            .iter()
            .map(render_text)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    print!("{out}");
    let nowhere: Vec<String> = reports
        .iter()
        .filter(|report| !report.nodes.iter().any(|node| node.schedulable))
        .map(|report| report.pod.clone())
        .collect();
    if nowhere.is_empty() {
        Ok(())
    } else {
        Err(FitsNowhere { pods: nowhere }.into())
    }
}

/// The answer of a check in which some pod fits none of the nodes: not a
/// failure of berth's, but exit status 1 for scripts.
#[derive(Debug)]
pub struct FitsNowhere {
    pods: Vec<String>,
}

impl std::fmt::Display for FitsNowhere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fits no node: {}", self.pods.join(", "))
    }
}

impl std::error::Error for FitsNowhere {}

fn read_pods(path: &Path) -> Result<Vec<Pod>, InputError> {
    // The pod is validated as if the gate were on: upstream keeps accepting
    // Gt/Lt on pods that already use them when the gate is turned off, and
    // it is the matching that honours the gate (so `check` can show what
    // turning it off would do).
    let gates = FeatureGates {
        taint_toleration_comparison_operators: true,
        max_unavailable_stateful_set: true,
    };
    read_objects::<Pod>(path)?
        .into_iter()
        .map(|(doc, pod)| {
            let errors = validate_pod(&pod, None, gates);
            reject_invalid(path, &doc, "Pod", pod.metadata.name.as_deref(), errors)?;
            Ok(pod)
        })
        .collect()
}

fn read_nodes(path: &Path) -> Result<Vec<Node>, InputError> {
    read_objects::<Node>(path)?
        .into_iter()
        .map(|(doc, node)| {
            let errors = validate_node(&node);
            reject_invalid(path, &doc, "Node", node.metadata.name.as_deref(), errors)?;
            Ok(node)
        })
        .collect()
}

fn reject_invalid(
    path: &Path,
    doc: &Document,
    kind: &str,
    name: Option<&str>,
    errors: ErrorList,
) -> Result<(), InputError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(InputError::invalid(
            path,
            doc,
            kind,
            name.unwrap_or(""),
            &errors,
        ))
    }
}

/// Rows as kubectl prints tables: columns padded to the widest cell, three
/// spaces apart, no trailing blanks.
pub fn padded_table<R: AsRef<[String]>>(rows: &[R]) -> String {
    let columns = rows.first().map_or(0, |r| r.as_ref().len());
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.as_ref().get(c).map_or(0, |cell| cell.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .as_ref()
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// A kubectl-style table: one row per node, columns padded to the widest cell.
fn render_text(report: &CheckReport) -> String {
    let schedulable = report.nodes.iter().filter(|n| n.schedulable).count();
    let mut rows = vec![
        [
            "NODE",
            "SCHEDULABLE",
            "SCORE",
            "IF-RUNNING",
            "ADMIT-IF-BOUND",
            "UNTOLERATED-TAINTS",
            "REASONS",
        ]
        .map(String::from),
    ];
    rows.extend(report.nodes.iter().map(text_row));
    let mut out = format!(
        "Pod {}: schedulable on {schedulable} of {} node(s)\n",
        report.pod,
        report.nodes.len()
    );
    out.push_str(&padded_table(&rows));
    out
}

fn text_row(node: &NodeVerdict) -> [String; 7] {
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let if_running = match node.if_running {
        IfRunning::Now => "evicted now".to_string(),
        IfRunning::Never => "stays".to_string(),
        IfRunning::After { seconds } => format!("evicted after {seconds}s"),
    };
    let taints = if node.untolerated_taints.is_empty() {
        "<none>".to_string()
    } else {
        node.untolerated_taints
            .iter()
            .map(format_taint)
            .collect::<Vec<_>>()
            .join(",")
    };
    let reasons = if node.reasons.is_empty() {
        "<none>".to_string()
    } else {
        node.reasons.join("; ")
    };
    [
        node.name.clone(),
        yes_no(node.schedulable),
        node.taint_toleration_score.to_string(),
        if_running,
        yes_no(node.admit_if_bound),
        taints,
        reasons,
    ]
}
