//! The report: one self-contained HTML page (inline CSS, SVG and a few
//! lines of script; nothing fetched) that shows a run at a glance.
//!
//! - per node, a lane over time: its Ready state, cordon, taints and
//!   conditions as bars, and its pods as bars that end where they were
//!   evicted (then hatched until the deletion completed);
//! - zone states, one row per zone;
//! - per workload (a Deployment, ReplicaSet, DaemonSet or StatefulSet),
//!   its replicas in each zone (in each node when no node has a zone) over
//!   time, so an outage shows replicas moving to the surviving zones;
//! - the steps as vertical lines;
//! - a table of evictions with their due and actual times, and the whole
//!   timeline below.
//!
//! The SVG is drawn here, so the page shows without script; the script
//! only counts the lanes into `body[data-rendered]` and the title, a
//! marker tests read from the rendered DOM.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::run::Recording;
use crate::timeline::{Entry, EventKind, Millis};

/// What the page says about the run besides the recording.
#[derive(Debug, Clone)]
pub struct ReportMeta {
    /// The scenario file's name.
    pub title: String,
    pub seed: u64,
}

const LABEL_W: f64 = 190.0;
const PLOT_W: f64 = 1000.0;
const ROW_H: f64 = 14.0;
const PAD: f64 = 6.0;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `1h30m5.5s` style, as the scenario writes durations.
pub fn format_t(t: Millis) -> String {
    if t == 0 {
        return "0s".into();
    }
    let (h, rest) = (t / 3_600_000, t % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 || (h > 0 && rest > 0) {
        let _ = write!(out, "{m}m");
    }
    if rest > 0 {
        if rest % 1000 == 0 {
            let _ = write!(out, "{}s", rest / 1000);
        } else {
            let _ = write!(out, "{}s", rest as f64 / 1000.0);
        }
    }
    out
}

/// A bar from `from` to `to` (`None`: until the end of the run).
#[derive(Debug, Clone)]
struct Span {
    from: Millis,
    to: Option<Millis>,
    label: String,
    class: &'static str,
}

#[derive(Debug, Default)]
struct PodBar {
    pod: String,
    from: Millis,
    evicted: Option<Millis>,
    due: Option<Millis>,
    ended: Option<Millis>,
    failed: Option<String>,
    /// Evictions scheduled and called off.
    cancelled: Vec<Millis>,
}

#[derive(Debug, Default)]
struct Lane {
    zone: Option<String>,
    ready: Vec<Span>,
    /// Taint and condition rows, by their label.
    rows: BTreeMap<String, Vec<Span>>,
    pods: Vec<PodBar>,
}

fn close(spans: &mut [Span], at: Millis) {
    if let Some(open) = spans.iter_mut().rev().find(|s| s.to.is_none()) {
        open.to = Some(at);
    }
}

fn taint_class(taint: &str) -> &'static str {
    if taint.ends_with(":NoExecute") {
        "t-noexec"
    } else if taint.ends_with(":PreferNoSchedule") {
        "t-prefer"
    } else {
        "t-nosched"
    }
}

/// Folds the timeline into lanes.
fn lanes(rec: &Recording) -> BTreeMap<String, Lane> {
    let mut lanes: BTreeMap<String, Lane> = rec
        .nodes
        .iter()
        .map(|(name, zone)| {
            (
                name.clone(),
                Lane {
                    zone: zone.clone(),
                    ..Lane::default()
                },
            )
        })
        .collect();
    // Which lane a pod's bar is in.
    let mut pod_node: BTreeMap<String, String> = BTreeMap::new();
    for e in &rec.entries {
        let node = e.node.clone().unwrap_or_default();
        match e.event {
            EventKind::NodeReady | EventKind::NodeNotReady | EventKind::NodeStatusUnknown => {
                let lane = lanes.entry(node).or_default();
                close(&mut lane.ready, e.t);
                let (label, class) = match e.event {
                    EventKind::NodeReady => ("Ready", "s-ready"),
                    EventKind::NodeNotReady => ("NotReady", "s-notready"),
                    _ => ("Unknown", "s-unknown"),
                };
                lane.ready.push(Span {
                    from: e.t,
                    to: None,
                    label: label.into(),
                    class,
                });
            }
            EventKind::NodeCordoned | EventKind::NodeUncordoned => {
                let row = lanes
                    .entry(node)
                    .or_default()
                    .rows
                    .entry("cordoned (spec.unschedulable)".into())
                    .or_default();
                if e.event == EventKind::NodeCordoned {
                    row.push(Span {
                        from: e.t,
                        to: None,
                        label: "cordoned".into(),
                        class: "c-cordon",
                    });
                } else {
                    close(row, e.t);
                }
            }
            EventKind::TaintAdded | EventKind::TaintRemoved => {
                let taint = e.taint.clone().unwrap_or_default();
                let row = lanes
                    .entry(node)
                    .or_default()
                    .rows
                    .entry(format!("taint {taint}"))
                    .or_default();
                if e.event == EventKind::TaintAdded {
                    row.push(Span {
                        from: e.t,
                        to: None,
                        label: taint.clone(),
                        class: taint_class(&taint),
                    });
                } else {
                    close(row, e.t);
                }
            }
            EventKind::NodeCondition => {
                let condition = e.condition.clone().unwrap_or_default();
                let row = lanes
                    .entry(node)
                    .or_default()
                    .rows
                    .entry(format!("condition {condition}"))
                    .or_default();
                close(row, e.t);
                if e.status.as_deref() != Some("False") {
                    let status = e.status.clone().unwrap_or_default();
                    row.push(Span {
                        from: e.t,
                        to: None,
                        label: format!("{condition}={status}"),
                        class: "c-pressure",
                    });
                }
            }
            EventKind::PodScheduled => {
                let pod = e.pod.clone().unwrap_or_default();
                pod_node.insert(pod.clone(), node.clone());
                lanes.entry(node).or_default().pods.push(PodBar {
                    pod,
                    from: e.t,
                    ..PodBar::default()
                });
            }
            EventKind::PodEvicted
            | EventKind::EvictionCancelled
            | EventKind::PodDeleted
            | EventKind::PodFailed => {
                let pod = e.pod.clone().unwrap_or_default();
                let Some(node) = pod_node.get(&pod) else {
                    continue;
                };
                let Some(bar) = lanes.get_mut(node).and_then(|l| {
                    l.pods
                        .iter_mut()
                        .rev()
                        .find(|b| b.pod == pod && b.ended.is_none())
                }) else {
                    continue;
                };
                match e.event {
                    EventKind::PodEvicted => {
                        bar.evicted.get_or_insert(e.t);
                        bar.due = e.due;
                    }
                    EventKind::EvictionCancelled => bar.cancelled.push(e.t),
                    EventKind::PodFailed => {
                        bar.failed = Some(e.reason.clone().unwrap_or_default());
                        bar.ended = Some(e.t);
                    }
                    _ => bar.ended = Some(e.t),
                }
            }
            _ => {}
        }
    }
    // A taint that came and went within one instant (admission's
    // not-ready taint at registration) is not worth a row.
    for lane in lanes.values_mut() {
        lane.rows
            .retain(|_, spans| spans.iter().any(|s| s.to != Some(s.from)));
    }
    lanes
}

/// Replicas of one workload in one row (zone or node) over time: a
/// span per count, none while it is 0.
type ReplicaRows = BTreeMap<String, Vec<Span>>;

/// The workload (`Kind/name`, namespace `ns/` first unless `default`) a
/// controller owner stands for: a ReplicaSet stands for its Deployment.
fn workload_of(
    namespace: &str,
    owner: &str,
    replica_set_owners: &BTreeMap<String, String>,
) -> String {
    let top = owner
        .strip_prefix("ReplicaSet/")
        .and_then(|rs| replica_set_owners.get(&format!("{namespace}/{rs}")))
        .map_or(owner, String::as_str);
    if namespace == "default" {
        top.to_owned()
    } else {
        format!("{namespace}/{top}")
    }
}

/// From `t`, `workload` has `n` replicas in `row`.
fn set_count(
    out: &mut BTreeMap<String, ReplicaRows>,
    workload: &str,
    row: &str,
    n: u32,
    t: Millis,
) {
    let spans = out
        .entry(workload.to_owned())
        .or_default()
        .entry(row.to_owned())
        .or_default();
    close(spans, t);
    if n > 0 {
        spans.push(Span {
            from: t,
            to: None,
            label: n.to_string(),
            class: "w-replicas",
        });
    }
}

/// Each workload's replicas per zone (or per node) over time. A replica
/// counts from when its pod is scheduled until its deletion begins (or it
/// fails): a pod left Terminating on a dead node is no longer a replica,
/// as its controller sees it.
fn replicas(rec: &Recording) -> BTreeMap<String, ReplicaRows> {
    let zoned = rec.nodes.iter().any(|(_, zone)| zone.is_some());
    let row_of: BTreeMap<&str, String> = rec
        .nodes
        .iter()
        .map(|(name, zone)| {
            let row = match (zoned, zone) {
                (false, _) => name.clone(),
                (true, Some(zone)) => format!("zone {zone}"),
                (true, None) => "(no zone label)".to_owned(),
            };
            (name.as_str(), row)
        })
        .collect();
    let mut replica_set_owners: BTreeMap<String, String> = BTreeMap::new();
    let mut pod_workload: BTreeMap<String, String> = BTreeMap::new();
    // Pods counted now: workload and row.
    let mut counted: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut counts: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut out: BTreeMap<String, ReplicaRows> = BTreeMap::new();
    for e in &rec.entries {
        let pod = e.pod.clone().unwrap_or_default();
        match e.event {
            EventKind::ReplicaSetScaled => {
                if let (Some(rs), Some(owner)) = (&e.replicaset, &e.owner) {
                    replica_set_owners.insert(rs.clone(), owner.clone());
                }
            }
            EventKind::PodCreated => {
                if let Some(owner) = &e.owner {
                    let namespace = pod.split('/').next().unwrap_or("");
                    pod_workload.insert(
                        pod.clone(),
                        workload_of(namespace, owner, &replica_set_owners),
                    );
                }
            }
            EventKind::PodScheduled => {
                let (Some(workload), Some(row)) = (
                    pod_workload.get(&pod),
                    e.node.as_deref().and_then(|n| row_of.get(n)),
                ) else {
                    continue;
                };
                let n = counts.entry((workload.clone(), row.clone())).or_default();
                *n += 1;
                set_count(&mut out, workload, row, *n, e.t);
                counted.insert(pod, (workload.clone(), row.clone()));
            }
            EventKind::PodTerminating | EventKind::PodFailed | EventKind::PodDeleted => {
                let Some((workload, row)) = counted.remove(&pod) else {
                    continue;
                };
                let n = counts.entry((workload.clone(), row.clone())).or_default();
                *n = n.saturating_sub(1);
                set_count(&mut out, &workload, &row, *n, e.t);
            }
            _ => {}
        }
    }
    out
}

/// Time of each tick: about ten over the run, at a round interval.
fn ticks(run: Millis) -> Vec<Millis> {
    const STEPS_S: &[u64] = &[
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
    ];
    let step = STEPS_S
        .iter()
        .map(|s| s * 1000)
        .find(|s| run / s <= 12)
        .unwrap_or(run.max(1));
    (0..=run / step).map(|i| i * step).collect()
}

struct Plot {
    run: Millis,
}

impl Plot {
    fn x(&self, t: Millis) -> f64 {
        LABEL_W + PLOT_W * (t.min(self.run) as f64) / (self.run.max(1) as f64)
    }

    /// A bar with its label (clipped to the bar) and a tooltip.
    fn bar(&self, svg: &mut String, y: f64, span: &Span, tooltip: &str) {
        let x0 = self.x(span.from);
        let x1 = self.x(span.to.unwrap_or(self.run)).max(x0 + 1.5);
        let _ = write!(
            svg,
            r#"<g class="bar {class}"><title>{tip}</title><rect x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="2"/>"#,
            class = span.class,
            tip = esc(tooltip),
            w = x1 - x0,
            h = ROW_H - 3.0,
        );
        if x1 - x0 > 30.0 {
            let _ = write!(
                svg,
                r#"<svg x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"><text x="3" y="{ty:.1}">{label}</text></svg>"#,
                w = x1 - x0,
                h = ROW_H - 3.0,
                ty = ROW_H - 6.0,
                label = esc(&span.label),
            );
        }
        svg.push_str("</g>");
    }
}

impl Plot {
    /// A row of bars under a label, in a `<g {group}>`; `what` names a
    /// span in its tooltip.
    fn labelled_row(
        &self,
        svg: &mut String,
        y: f64,
        group: &str,
        label: &str,
        spans: &[Span],
        what: &dyn Fn(&Span) -> String,
    ) {
        let _ = write!(
            svg,
            r#"<g {group}><text class="label" x="12" y="{:.1}">{}</text>"#,
            y + ROW_H - 5.0,
            esc(label)
        );
        for span in spans {
            self.bar(svg, y, span, &span_tooltip(&what(span), span));
        }
        svg.push_str("</g>");
    }
}

fn span_tooltip(what: &str, span: &Span) -> String {
    match span.to {
        Some(to) => format!("{what}: {} → {}", format_t(span.from), format_t(to)),
        None => format!("{what}: from {}", format_t(span.from)),
    }
}

/// The whole page.
pub fn render(rec: &Recording, meta: &ReportMeta) -> String {
    let lanes = lanes(rec);
    let plot = Plot { run: rec.run };

    // Zone rows from the zone entries.
    let mut zones: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for e in rec
        .entries
        .iter()
        .filter(|e| e.event == EventKind::ZoneStateChanged)
    {
        let row = zones.entry(e.zone.clone().unwrap_or_default()).or_default();
        close(row, e.t);
        let state = e.state.clone().unwrap_or_default();
        let class = match state.as_str() {
            "Normal" => "z-normal",
            "PartialDisruption" => "z-partial",
            "FullDisruption" => "z-full",
            _ => "z-initial",
        };
        row.push(Span {
            from: e.t,
            to: None,
            label: state,
            class,
        });
    }

    let mut svg = String::new();
    let mut y = 34.0;
    // Zones.
    if !zones.is_empty() {
        let _ = write!(
            svg,
            r#"<text class="section" x="4" y="{:.1}">zones</text>"#,
            y + 10.0
        );
        y += 16.0;
        for (zone, spans) in &zones {
            let label = if zone.is_empty() {
                "(no zone label)".to_owned()
            } else {
                format!("zone {zone}")
            };
            plot.labelled_row(&mut svg, y, r#"class="zone-row""#, &label, spans, &|span| {
                format!("zone {zone} {}", span.label)
            });
            y += ROW_H;
        }
        y += PAD;
    }
    // Workloads: replicas per zone (or node).
    let workloads = replicas(rec);
    if !workloads.is_empty() {
        let _ = write!(
            svg,
            r#"<text class="section" x="4" y="{:.1}">workloads (replicas per {})</text>"#,
            y + 10.0,
            if rec.nodes.iter().any(|(_, z)| z.is_some()) {
                "zone"
            } else {
                "node"
            }
        );
        y += 16.0;
        for (workload, rows) in &workloads {
            let _ = write!(
                svg,
                r#"<g class="workload" data-workload="{w}"><text class="node-name" x="4" y="{:.1}">{w}</text>"#,
                y + ROW_H - 4.0,
                w = esc(workload),
            );
            y += ROW_H;
            for (row, spans) in rows {
                let group = format!(r#"class="replica-row" data-row="{}""#, esc(row));
                plot.labelled_row(&mut svg, y, &group, row, spans, &|span| {
                    format!("{workload}: {} in {row}", span.label)
                });
                y += ROW_H;
            }
            svg.push_str("</g>");
        }
        y += PAD;
    }
    // Node lanes, in scenario order.
    let _ = write!(
        svg,
        r#"<text class="section" x="4" y="{:.1}">nodes</text>"#,
        y + 10.0
    );
    y += 16.0;
    for (index, (name, _)) in rec.nodes.iter().enumerate() {
        let Some(lane) = lanes.get(name) else {
            continue;
        };
        let rows = 1 + lane.rows.len() + lane.pods.len();
        let height = rows as f64 * ROW_H + PAD;
        let _ = write!(
            svg,
            r#"<g class="lane" data-node="{n}"><rect class="lane-bg {alt}" x="0" y="{y:.1}" width="{w:.1}" height="{height:.1}"/>"#,
            n = esc(name),
            alt = if index % 2 == 0 { "even" } else { "odd" },
            w = LABEL_W + PLOT_W + 10.0,
        );
        let zone = lane
            .zone
            .as_ref()
            .map(|z| format!(" ({z})"))
            .unwrap_or_default();
        let mut row_y = y + PAD / 2.0;
        let _ = write!(
            svg,
            r#"<text class="node-name" x="4" y="{:.1}">{}{}</text>"#,
            row_y + ROW_H - 4.0,
            esc(name),
            esc(&zone)
        );
        for span in &lane.ready {
            plot.bar(
                &mut svg,
                row_y,
                span,
                &span_tooltip(&format!("{name} {}", span.label), span),
            );
        }
        row_y += ROW_H;
        for (label, spans) in &lane.rows {
            let _ = write!(
                svg,
                r#"<text class="label" x="12" y="{:.1}">{}</text>"#,
                row_y + ROW_H - 5.0,
                esc(&shorten(label, 30))
            );
            for span in spans {
                plot.bar(&mut svg, row_y, span, &span_tooltip(label, span));
            }
            row_y += ROW_H;
        }
        for bar in &lane.pods {
            pod_bar(&plot, &mut svg, row_y, bar);
            row_y += ROW_H;
        }
        svg.push_str("</g>");
        y += height;
    }
    let plot_bottom = y;
    // Axis and steps on top of everything.
    let mut axis = String::new();
    for t in ticks(rec.run) {
        let x = plot.x(t);
        let _ = write!(
            axis,
            r#"<line class="tick" x1="{x:.1}" y1="24" x2="{x:.1}" y2="{plot_bottom:.1}"/><text class="tick-label" x="{x:.1}" y="20">{}</text>"#,
            format_t(t)
        );
    }
    let mut steps = String::new();
    for (i, (t, text)) in rec.steps.iter().enumerate() {
        let x = plot.x(*t);
        let _ = write!(
            steps,
            r#"<g class="step"><title>{tip}</title><line x1="{x:.1}" y1="26" x2="{x:.1}" y2="{plot_bottom:.1}"/><circle cx="{x:.1}" cy="29" r="4"/><text x="{tx:.1}" y="32">{n}</text></g>"#,
            tip = esc(&format!("step {} at {}: {text}", i + 1, format_t(*t))),
            tx = x + 5.0,
            n = i + 1,
        );
    }
    let height = plot_bottom + 10.0;
    let width = LABEL_W + PLOT_W + 20.0;

    let mut html = String::new();
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>berth sim: {title}</title>
<style>{CSS}</style></head>
<body data-rendered="no">
<h1>berth sim: {title}</h1>
<p class="summary">{run} of virtual time, seed {seed}, {nodes} nodes, {entries} timeline entries. Components: {components}.</p>
<div class="legend">{LEGEND}</div>
<svg id="plot" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">{axis}{svg}{steps}</svg>
"#,
        title = esc(&meta.title),
        run = format_t(rec.run),
        seed = meta.seed,
        nodes = rec.nodes.len(),
        entries = rec.entries.len(),
        components = if rec.components.is_empty() {
            "none (simulated nodes only: no scheduling, no lifecycle taints, no evictions)"
                .to_owned()
        } else {
            esc(&rec.components.join(", "))
        },
    );
    steps_table(&mut html, rec);
    evictions_table(&mut html, rec, &lanes);
    timeline_table(&mut html, &rec.entries);
    html.push_str(SCRIPT);
    html.push_str("</body></html>\n");
    html
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

fn pod_bar(plot: &Plot, svg: &mut String, y: f64, bar: &PodBar) {
    let end_solid = bar.evicted.or(bar.ended);
    let span = Span {
        from: bar.from,
        to: end_solid,
        label: bar.pod.clone(),
        class: if bar.failed.is_some() {
            "p-failed"
        } else {
            "p-run"
        },
    };
    let mut tip = format!("pod {} from {}", bar.pod, format_t(bar.from));
    if let Some(t) = bar.evicted {
        let _ = write!(tip, ", evicted at {}", format_t(t));
        if let Some(due) = bar.due {
            let _ = write!(tip, " (due {})", format_t(due));
        }
    }
    if let Some(reason) = &bar.failed {
        let _ = write!(tip, ", failed ({reason})");
    }
    match bar.ended {
        Some(t) => {
            let _ = write!(tip, ", gone at {}", format_t(t));
        }
        None => tip.push_str(", still there at the end"),
    }
    plot.bar(svg, y, &span, &tip);
    for t in &bar.cancelled {
        let _ = write!(
            svg,
            r#"<circle class="cancelled" cx="{:.1}" cy="{:.1}" r="4"><title>{}</title></circle>"#,
            plot.x(*t),
            y + (ROW_H - 3.0) / 2.0,
            esc(&format!(
                "eviction of {} called off at {}",
                bar.pod,
                format_t(*t)
            )),
        );
    }
    if let Some(evicted) = bar.evicted {
        // Terminating: from the eviction until the deletion completed.
        let x0 = plot.x(evicted);
        let x1 = plot.x(bar.ended.unwrap_or(plot.run));
        if x1 > x0 {
            let _ = write!(
                svg,
                r#"<rect class="p-terminating" x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"><title>{tip}</title></rect>"#,
                w = x1 - x0,
                h = ROW_H - 3.0,
                tip = esc(&format!("pod {} terminating", bar.pod)),
            );
        }
        let _ = write!(
            svg,
            r#"<path class="evicted" d="M{a:.1},{b:.1} l8,8 m0,-8 l-8,8"><title>{tip}</title></path>"#,
            a = x0 - 4.0,
            b = y + 1.5,
            tip = esc(&tip),
        );
        if let Some(due) = bar.due {
            let xd = plot.x(due);
            let _ = write!(
                svg,
                r#"<line class="due" x1="{xd:.1}" y1="{y0:.1}" x2="{xd:.1}" y2="{y1:.1}"><title>due {}</title></line>"#,
                format_t(due),
                y0 = y - 1.0,
                y1 = y + ROW_H - 1.0,
            );
        }
    }
}

fn steps_table(html: &mut String, rec: &Recording) {
    if rec.steps.is_empty() {
        return;
    }
    html.push_str(
        "<h2>Steps</h2><table class=\"steps\"><tr><th>#</th><th>at</th><th>step</th></tr>",
    );
    for (i, (t, text)) in rec.steps.iter().enumerate() {
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            format_t(*t),
            esc(text)
        );
    }
    html.push_str("</table>\n");
}

fn evictions_table(html: &mut String, rec: &Recording, lanes: &BTreeMap<String, Lane>) {
    html.push_str("<h2>Evictions</h2>");
    let evictions: Vec<&Entry> = rec
        .entries
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                EventKind::PodEvicted | EventKind::EvictionCancelled
            )
        })
        .collect();
    if evictions.is_empty() {
        html.push_str("<p>No pod was evicted.</p>\n");
        return;
    }
    html.push_str("<table class=\"evictions\"><tr><th>pod</th><th>node</th><th>what</th><th>due</th><th>actual</th><th>late by</th><th>deleted</th></tr>");
    for e in evictions {
        let pod = e.pod.clone().unwrap_or_default();
        let node = e.node.clone().unwrap_or_default();
        let deleted = lanes
            .get(&node)
            .and_then(|l| {
                l.pods
                    .iter()
                    .find(|b| b.pod == pod && b.evicted == Some(e.t))
            })
            .and_then(|b| b.ended)
            .map_or("-".to_owned(), format_t);
        let (what, due, late) = match e.event {
            EventKind::PodEvicted => (
                "evicted",
                e.due.map_or("-".to_owned(), format_t),
                e.due.map_or("-".to_owned(), |d| {
                    if e.t >= d {
                        format_t(e.t - d)
                    } else {
                        format!("-{}", format_t(d - e.t))
                    }
                }),
            ),
            _ => ("cancelled", "-".to_owned(), "-".to_owned()),
        };
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{what}</td><td>{due}</td><td>{}</td><td>{late}</td><td>{deleted}</td></tr>",
            esc(&pod),
            esc(&node),
            format_t(e.t),
        );
    }
    html.push_str("</table>\n");
}

fn timeline_table(html: &mut String, entries: &[Entry]) {
    let _ = write!(
        html,
        "<details><summary>Timeline ({} entries)</summary><table class=\"timeline\"><tr><th>t</th><th>event</th><th>subject</th><th>detail</th></tr>",
        entries.len()
    );
    for e in entries {
        let subject = [&e.pod, &e.replicaset, &e.node, &e.zone]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join(" on ");
        let detail = [
            &e.taint,
            &e.condition,
            &e.status,
            &e.state,
            &e.reason,
            &e.message,
            &e.owner.as_ref().map(|o| format!("owner {o}")),
            &e.replicas.map(|r| format!("replicas {r}")),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{:?}</td><td>{}</td><td>{}</td></tr>",
            format_t(e.t),
            e.event,
            esc(&subject),
            esc(&detail)
        );
    }
    html.push_str("</table></details>\n");
}

const LEGEND: &str = r#"<span class="key s-ready"></span>Ready <span class="key s-notready"></span>NotReady <span class="key s-unknown"></span>Unknown <span class="key t-noexec"></span>NoExecute taint <span class="key t-nosched"></span>NoSchedule taint <span class="key t-prefer"></span>PreferNoSchedule taint <span class="key c-pressure"></span>condition <span class="key c-cordon"></span>cordoned <span class="key p-run"></span>pod <span class="key p-terminating"></span>terminating <span class="x">✕</span>evicted <span class="o">○</span>eviction called off <span class="key due"></span>eviction due <span class="key z-normal"></span>zone Normal <span class="key z-partial"></span>PartialDisruption <span class="key z-full"></span>FullDisruption <span class="key w-replicas"></span>replicas (count)"#;

const CSS: &str = r#"
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1d2330; background: #fff; }
h1 { font-size: 18px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 18px 0 6px; }
.summary { color: #555; margin: 0 0 8px; }
.legend { margin: 0 0 8px; color: #444; } .legend .key { display: inline-block; width: 14px; height: 10px; margin: 0 4px 0 10px; border-radius: 2px; vertical-align: middle; }
.legend .x { color: #c0392b; margin: 0 4px 0 10px; font-weight: bold; }
svg text { font: 10px system-ui, sans-serif; fill: #1d2330; }
.section { font-weight: bold; font-size: 11px; fill: #555; }
.node-name { font-weight: bold; font-size: 11px; }
.label { fill: #555; }
.lane-bg.even { fill: #f6f8fb; } .lane-bg.odd { fill: #ffffff; }
.tick { stroke: #dde2ea; stroke-width: 1; } .tick-label { fill: #777; text-anchor: middle; }
.step line { stroke: #6c5ce7; stroke-dasharray: 3 3; opacity: .7; } .step circle { fill: #6c5ce7; } .step text { fill: #6c5ce7; font-weight: bold; }
.bar text { fill: #fff; font-size: 9px; }
.s-ready rect, .legend .s-ready { fill: #2e9e5b; background: #2e9e5b; }
.s-notready rect, .legend .s-notready { fill: #d35400; background: #d35400; }
.s-unknown rect, .legend .s-unknown { fill: #8e96a3; background: #8e96a3; }
.t-noexec rect, .legend .t-noexec { fill: #c0392b; background: #c0392b; }
.t-nosched rect, .legend .t-nosched { fill: #e67e22; background: #e67e22; }
.t-prefer rect, .legend .t-prefer { fill: #d4ac0d; background: #d4ac0d; }
.c-pressure rect, .legend .c-pressure { fill: #8e44ad; background: #8e44ad; }
.c-cordon rect, .legend .c-cordon { fill: #34495e; background: #34495e; }
.p-run rect, .legend .p-run { fill: #2d7dd2; background: #2d7dd2; }
.p-failed rect { fill: #7f8c8d; }
.p-terminating, .legend .p-terminating { fill: #a9c7ee; background: #a9c7ee; opacity: .8; }
.cancelled { fill: #fff; stroke: #2e9e5b; stroke-width: 2; }
.legend .o { color: #2e9e5b; margin: 0 4px 0 10px; font-weight: bold; }
.evicted { stroke: #c0392b; stroke-width: 2.2; fill: none; }
.due, .legend .due { stroke: #111; stroke-width: 1.5; stroke-dasharray: 2 1; background: #111; }
.legend .due { width: 2px; }
.z-normal rect, .legend .z-normal { fill: #2e9e5b; background: #2e9e5b; }
.z-partial rect, .legend .z-partial { fill: #e67e22; background: #e67e22; }
.z-full rect, .legend .z-full { fill: #c0392b; background: #c0392b; }
.z-initial rect { fill: #8e96a3; }
.w-replicas rect, .legend .w-replicas { fill: #16a085; background: #16a085; }
table { border-collapse: collapse; } th, td { border: 1px solid #dde2ea; padding: 2px 8px; text-align: left; }
th { background: #f0f3f8; } td:nth-child(n+4) { font-variant-numeric: tabular-nums; }
details { margin-top: 14px; }
"#;

const SCRIPT: &str = r#"<script>
(function () {
  var lanes = document.querySelectorAll('#plot .lane').length;
  document.body.setAttribute('data-rendered', 'lanes:' + lanes);
  document.title = document.title + ' (' + lanes + ' lanes)';
})();
</script>
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Entry;

    fn entry(t: Millis, event: EventKind, f: impl FnOnce(&mut Entry)) -> Entry {
        let mut e = Entry::new(t, event);
        f(&mut e);
        e
    }

    fn recording() -> Recording {
        let on = |n: &str| Some(n.to_owned());
        Recording {
            entries: vec![
                entry(0, EventKind::NodeReady, |e| e.node = on("n1")),
                entry(0, EventKind::PodScheduled, |e| {
                    e.node = on("n1");
                    e.pod = on("default/web");
                }),
                entry(10_000, EventKind::TaintAdded, |e| {
                    e.node = on("n1");
                    e.taint = on("key1=value1:NoExecute");
                }),
                entry(3_610_000, EventKind::PodEvicted, |e| {
                    e.node = on("n1");
                    e.pod = on("default/web");
                    e.due = Some(3_610_000);
                }),
                entry(3_610_000, EventKind::PodDeleted, |e| {
                    e.node = on("n1");
                    e.pod = on("default/web");
                }),
            ],
            nodes: vec![("n1".into(), Some("a".into())), ("n2<x>".into(), None)],
            steps: vec![(10_000, "taint n1 key1=value1:NoExecute".into())],
            run: 7_200_000,
            components: vec!["controllers".into()],
        }
    }

    #[test]
    fn the_page_has_a_lane_per_node_bars_and_the_eviction_table() {
        let html = render(
            &recording(),
            &ReportMeta {
                title: "t.yaml".into(),
                seed: 7,
            },
        );
        assert_eq!(html.matches(r#"<g class="lane""#).count(), 2);
        assert!(html.contains("key1=value1:NoExecute"));
        assert!(html.contains(r#"class="evicted""#));
        assert!(html.contains("<td>default/web</td><td>n1</td><td>evicted</td><td>1h0m10s</td><td>1h0m10s</td><td>0s</td><td>1h0m10s</td>"), "{html}");
        // Names are escaped; nothing is fetched.
        assert!(html.contains("n2&lt;x&gt;"));
        assert!(!html.contains("http://") || html.matches("http://").count() == 1);
        assert!(!html.contains("https://"));
    }

    /// A Deployment's pods (through its ReplicaSet) counted per zone: the
    /// pod whose deletion began on a dead zone's node stops counting
    /// there, and its replacement counts in the zone it landed in.
    #[test]
    fn replicas_per_zone_follow_a_moved_pod() {
        let on = |n: &str| Some(n.to_owned());
        let created = |t, pod: &str| {
            entry(t, EventKind::PodCreated, |e| {
                e.pod = on(pod);
                e.owner = on("ReplicaSet/web-1");
            })
        };
        let scheduled = |t, pod: &str, node: &str| {
            entry(t, EventKind::PodScheduled, |e| {
                e.pod = on(pod);
                e.node = on(node);
            })
        };
        let rec = Recording {
            entries: vec![
                entry(0, EventKind::ReplicaSetScaled, |e| {
                    e.replicaset = on("default/web-1");
                    e.owner = on("Deployment/web");
                    e.replicas = Some(2);
                }),
                created(0, "default/web-1-a"),
                created(0, "default/web-1-b"),
                scheduled(0, "default/web-1-a", "a1"),
                scheduled(0, "default/web-1-b", "b1"),
                entry(60_000, EventKind::PodTerminating, |e| {
                    e.pod = on("default/web-1-b");
                    e.node = on("b1");
                }),
                created(60_000, "default/web-1-c"),
                scheduled(60_000, "default/web-1-c", "a1"),
            ],
            nodes: vec![
                ("a1".into(), Some("a".into())),
                ("b1".into(), Some("b".into())),
            ],
            steps: vec![],
            run: 120_000,
            components: vec![],
        };
        let got: BTreeMap<String, Vec<(Millis, Option<Millis>, String)>> = replicas(&rec)
            .remove("Deployment/web")
            .unwrap_or_default()
            .into_iter()
            .map(|(row, spans)| {
                (
                    row,
                    spans.into_iter().map(|s| (s.from, s.to, s.label)).collect(),
                )
            })
            .collect();
        let want: BTreeMap<String, Vec<(Millis, Option<Millis>, String)>> = [
            (
                "zone a".to_owned(),
                vec![
                    (0, Some(60_000), "1".to_owned()),
                    (60_000, None, "2".to_owned()),
                ],
            ),
            ("zone b".to_owned(), vec![(0, Some(60_000), "1".to_owned())]),
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want);
        let html = render(
            &rec,
            &ReportMeta {
                title: "w.yaml".into(),
                seed: 0,
            },
        );
        assert!(html.contains(r#"<g class="workload" data-workload="Deployment/web">"#));
        assert!(html.contains(r#"data-row="zone a""#));
    }

    #[test]
    fn times_read_as_durations() {
        assert_eq!(format_t(0), "0s");
        assert_eq!(format_t(55_000), "55s");
        assert_eq!(format_t(3_655_500), "1h0m55.5s");
        assert_eq!(format_t(5_400_000), "1h30m");
    }

    #[test]
    fn about_ten_ticks_at_round_intervals() {
        assert_eq!(ticks(7_200_000)[1], 600_000);
        assert_eq!(ticks(7_200_000).len(), 13);
        assert_eq!(ticks(60_000)[1], 5_000);
    }
}
