//! `berth sim scenario`: rehearse a failure. Runs a scenario file on a
//! virtual clock and writes the timeline (JSON lines) and an HTML report.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use berth_sim::report::{ReportMeta, render};
use berth_sim::{components, run, scenario, timeline};
use clap::Args;

use crate::input::InputError;

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// The scenario file (YAML).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub outputs: ScenarioOutputs,
}

/// What a run writes, and its seed.
#[derive(Debug, Args)]
pub struct ScenarioOutputs {
    /// Where to write the timeline, one JSON object per line; `-` (the
    /// default without --report) is standard output.
    #[arg(long, value_name = "OUT.jsonl")]
    timeline: Option<PathBuf>,
    /// Where to write the HTML report.
    #[arg(long, value_name = "OUT.html")]
    report: Option<PathBuf>,
    /// Seed for every random choice; the same file and seed give the same
    /// timeline, byte for byte.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,
}

pub fn run(args: &ScenarioArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file).map_err(|e| InputError::new(&args.file, e))?;
    let name = args.file.display().to_string();
    let args = &args.outputs;
    let scenario = scenario::parse(&name, &text)?;
    let components = components::default_components();
    let recording = run::run_blocking(&scenario, &components, args.seed)?;

    let mut jsonl = Vec::new();
    timeline::write_jsonl(&recording.entries, &mut jsonl)?;
    let mut written = Vec::new();
    match (&args.timeline, &args.report) {
        (Some(path), _) if path.as_os_str() != "-" => {
            std::fs::write(path, &jsonl)
                .with_context(|| format!("writing the timeline to {}", path.display()))?;
            written.push(format!("timeline {}", path.display()));
        }
        (Some(_), _) | (None, None) => {
            std::io::stdout().write_all(&jsonl)?;
            written.push("timeline on standard output".to_string());
        }
        (None, Some(_)) => {}
    }
    if let Some(path) = &args.report {
        let html = render(
            &recording,
            &ReportMeta {
                title: name.clone(),
                seed: args.seed,
                description: scenario.description.clone(),
                settings: scenario.config.effective(),
            },
        );
        std::fs::write(path, html)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        written.push(format!("report {}", path.display()));
    }
    // On stderr, so that a timeline on stdout stays JSON lines only.
    eprintln!("{}", summary(&name, args.seed, &recording, &written));
    Ok(())
}

/// What a run did, in one line: the virtual time it ran, its nodes, the
/// pods evicted, and where its outputs went.
fn summary(name: &str, seed: u64, recording: &run::Recording, written: &[String]) -> String {
    let evictions = recording
        .entries
        .iter()
        .filter(|e| e.event == timeline::EventKind::PodEvicted)
        .count();
    format!(
        "berth sim: {name} (seed {seed}): {} of virtual time, {} node(s), {evictions} pod(s) evicted; {}",
        berth_core::duration::format_duration(std::time::Duration::from_millis(recording.run)),
        recording.nodes.len(),
        written.join(", ")
    )
}

/// Whether `err` is the scenario's fault (exit 2).
pub fn is_scenario_error(err: &anyhow::Error) -> bool {
    err.downcast_ref::<scenario::ScenarioError>().is_some()
        || err
            .downcast_ref::<run::SimError>()
            .is_some_and(run::SimError::is_scenario_error)
}
