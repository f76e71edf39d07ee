//! `berth explain`: before you taint (issue 23).
//!
//! - `berth explain pod NAME [-n NS] [--taint NODE=key=value:Effect]...
//!   [-o table|json]`: the server's `pods/NAME/scheduling` (every node
//!   with each filter's verdict and reason, each score plugin's part, the
//!   total and rank, the taint that decided; computed by the scheduler's
//!   own framework), as a kubectl-style table or as the JSON; with
//!   `--taint`, on the cluster as the taints would leave it, with which
//!   pods the taints evict and when, and which pending pods become
//!   schedulable or unschedulable.
//! - `berth explain taint NODE SPEC...`: what the taints alone would do
//!   (the server's warnings on a `dryRun=All` write, nothing stored).

use std::path::PathBuf;

use berth_client::taint::{TaintCommand, TaintError, taint_node};
use berth_core::taint_spec::parse_taint_specs;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;

use crate::check::padded_table;
use crate::input::UsageError;
use crate::taint_cmd::client;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(subcommand)]
    command: ExplainCommand,
}

#[derive(Debug, Subcommand)]
enum ExplainCommand {
    /// Why a pod goes (or went, or cannot go) where it does, node by node.
    Pod(PodArgs),
    /// What taints would do to a node's pods and to pending pods, stored
    /// nowhere (the server's warnings on a dry run).
    Taint(TaintArgs),
}

#[derive(Debug, Args)]
struct PodArgs {
    /// The pod.
    #[arg(value_name = "NAME")]
    name: String,
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// What if NODE had this taint (`NODE=key=value:Effect`; `NODE=key:Effect-`
    /// removes one). Repeatable.
    #[arg(long = "taint", value_name = "NODE=SPEC")]
    taints: Vec<String>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: Output,
    /// The kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct TaintArgs {
    #[arg(value_name = "NODE")]
    node: String,
    /// Taints in `kubectl taint` syntax.
    #[arg(value_name = "SPEC", required = true)]
    specs: Vec<String>,
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
}

pub async fn run(args: &ExplainArgs) -> anyhow::Result<()> {
    match &args.command {
        ExplainCommand::Pod(args) => explain_pod(args).await,
        ExplainCommand::Taint(args) => explain_taint(args).await,
    }
}

/// The subresource's path and query.
fn scheduling_path(namespace: &str, name: &str, taints: &[String]) -> String {
    let mut path = format!("/api/v1/namespaces/{namespace}/pods/{name}/scheduling");
    if !taints.is_empty() {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(taints.iter().map(|t| ("taint", t.as_str())))
            .finish();
        path.push('?');
        path.push_str(&query);
    }
    path
}

async fn explain_pod(args: &PodArgs) -> anyhow::Result<()> {
    for taint in &args.taints {
        let spec = taint
            .split_once('=')
            .map(|(_, spec)| spec)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                UsageError::new("--taint", format!("{taint:?}: want NODE=key=value:Effect"))
            })?;
        parse_taint_specs(&[spec]).map_err(|e| UsageError::new("--taint", e))?;
    }
    let client = client(args.kubeconfig.as_ref()).await?;
    let request = http::Request::get(scheduling_path(&args.namespace, &args.name, &args.taints))
        .body(Vec::new())?;
    let text = match client.request_text(request).await {
        Ok(text) => text,
        // The pod or a node does not exist, a taint is malformed: the
        // user's to fix.
        Err(kube::Error::Api(status)) if (400..500).contains(&status.code) => {
            return Err(UsageError::new("NAME", status.message).into());
        }
        Err(kube::Error::Api(status)) => anyhow::bail!("{}", status.message),
        Err(err) => return Err(err.into()),
    };
    let answer: Value = serde_json::from_str(&text)?;
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
        Output::Table => print!("{}", render(&answer)),
    }
    Ok(())
}

async fn explain_taint(args: &TaintArgs) -> anyhow::Result<()> {
    let specs: Vec<&str> = args.specs.iter().map(String::as_str).collect();
    let spec = parse_taint_specs(&specs).map_err(|e| UsageError::new("SPEC", e))?;
    let client = client(args.kubeconfig.as_ref()).await?;
    let command = TaintCommand {
        spec: &spec,
        overwrite: true,
        expires_at: None,
        dry_run: true,
    };
    let previewed = match taint_node(&client, &args.node, command).await {
        Ok(previewed) => previewed,
        Err(TaintError::Api(kube::Error::Api(status))) if status.code == 404 => {
            return Err(UsageError::new("NODE", status.message).into());
        }
        Err(TaintError::Api(kube::Error::Api(status))) => anyhow::bail!("{}", status.message),
        Err(err) => return Err(err.into()),
    };
    if previewed.warnings.is_empty() {
        println!(
            "node/{}: no pod is evicted and no pending pod loses its last node",
            args.node
        );
    }
    for warning in &previewed.warnings {
        println!("{warning}");
    }
    Ok(())
}

/// The strings of a JSON array (none for anything else).
fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// The explanation as kubectl prints tables: a line per node, columns
/// padded to the widest cell.
pub fn render(answer: &Value) -> String {
    let mut out = String::new();
    let state = match answer["boundTo"].as_str() {
        Some(node) => format!("bound to {node}"),
        None => "pending".to_string(),
    };
    out.push_str(&format!(
        "Pod {} ({state}, scheduler {})\n",
        str_of(answer, "pod"),
        str_of(answer, "schedulerName")
    ));
    let nodes = answer["nodes"].as_array().cloned().unwrap_or_default();
    let mut plugins: Vec<String> = Vec::new();
    for node in &nodes {
        for score in node["scores"].as_array().into_iter().flatten() {
            let plugin = str_of(score, "plugin").to_string();
            if !plugins.contains(&plugin) {
                plugins.push(plugin);
            }
        }
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["NODE".to_string(), "FILTER".to_string()];
    header.extend(plugins.iter().map(|p| p.to_uppercase()));
    header.extend(["TOTAL".to_string(), "RANK".to_string()]);
    rows.push(header);
    for node in &nodes {
        let filter = if node["feasible"].as_bool().unwrap_or(false) {
            "passed".to_string()
        } else {
            let mut text = format!("{}: {}", str_of(node, "rejectedBy"), str_of(node, "reason"));
            let decided = node["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| t["decided"].as_bool().unwrap_or(false));
            if let Some(taint) = decided {
                text.push_str(&format!(" ({})", str_of(taint, "taint")));
            }
            text
        };
        let mut row = vec![str_of(node, "name").to_string(), filter];
        for plugin in &plugins {
            let score = node["scores"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| str_of(s, "plugin") == plugin);
            row.push(match score {
                // normalised × weight = weighted (raw)
                Some(s) => format!(
                    "{}x{}={} ({})",
                    s["normalized"], s["weight"], s["weighted"], s["raw"]
                ),
                None => "-".to_string(),
            });
        }
        let or_dash = |v: &Value| {
            if v.is_null() {
                "-".to_string()
            } else {
                v.to_string()
            }
        };
        row.push(or_dash(&node["total"]));
        row.push(or_dash(&node["rank"]));
        rows.push(row);
    }
    out.push_str(&padded_table(&rows));
    match answer["unschedulable"].as_str() {
        Some(message) => out.push_str(&format!("Unschedulable: {message}\n")),
        None => {
            out.push_str(&format!("Best: {}\n", strings(&answer["best"]).join(", ")));
        }
    }
    let what_if = &answer["whatIf"];
    if what_if.is_object() {
        let list = |key: &str| -> String {
            let names = strings(&what_if[key]);
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        out.push_str(&format!("What if {}:\n", list("taints")));
        out.push_str(&format!("  best before: {}\n", list("bestBefore")));
        for (node, lines) in what_if["impact"].as_object().into_iter().flatten() {
            for line in strings(lines) {
                out.push_str(&format!("  {node}: {line}\n"));
            }
        }
        out.push_str(&format!(
            "  pending pods that become schedulable: {}\n",
            list("becomeSchedulable")
        ));
        out.push_str(&format!(
            "  pending pods that become unschedulable: {}\n",
            list("becomeUnschedulable")
        ));
    }
    out
}
