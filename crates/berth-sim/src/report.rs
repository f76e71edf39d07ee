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
//! - the steps as vertical lines, numbered (staggered where close);
//! - a table of evictions with their due and actual times and what
//!   decided the due time (taint and toleration), and the whole timeline.
//!
//! At the top: the scenario's own description (its leading comment) and
//! the settings that decided the outcome. The time axis is broken where
//! nothing happens ([`axis`]); each colour means one thing, with a
//! pattern as a second channel, and the legend lists only what occurs
//! ([`style`]). Labels sit in their own column, as wide as the longest,
//! so none is cut; the plot's x positions are percentages, so it follows
//! the window's width.
//!
//! The SVG is drawn here, so the page shows without script; the script
//! fits the label column and bar labels to the fonts and window, and
//! counts the lanes into `body[data-rendered]` and the title, a marker
//! tests read from the rendered DOM.

mod axis;
mod style;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use self::axis::Axis;
use crate::config::Setting;
use crate::run::Recording;
use crate::timeline::{Entry, EventKind, Millis, format_t};

/// What the page says about the run besides the recording.
#[derive(Debug, Clone)]
pub struct ReportMeta {
    /// The scenario file's name.
    pub title: String,
    pub seed: u64,
    /// The scenario file's leading comment: what it shows and why.
    pub description: String,
    /// The flags' effective values ([`crate::config::SimConfig::effective`]).
    pub settings: Vec<Setting>,
}

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

/// The top of the plot: tick labels, then up to three rows of step
/// markers (staggered so close steps never overlap).
const TOP: f64 = 52.0;
const STEP_LEVELS: usize = 3;
/// Steps closer than this share of the axis go on different rows.
const STEP_GAP: f64 = 0.025;
/// Bar labels are drawn only where they fit at this plot width; the
/// page's script re-checks at the window's width.
const NOMINAL_PLOT_W: f64 = 1000.0;

/// The two columns being drawn: labels (never cut: the column is as wide
/// as the longest) and the plot, whose x positions are percentages so it
/// follows the window's width.
struct Page<'a> {
    axis: &'a Axis,
    labels: String,
    plot: String,
    y: f64,
    /// The widest label, estimated in pixels.
    label_w: f64,
    /// The legend's keys this page uses.
    used: BTreeSet<&'static str>,
}

/// A text's width in pixels at `size` px, estimated (system-ui averages
/// about 0.6 em a character; bold a little more).
fn text_w(text: &str, size: f64, bold: bool) -> f64 {
    text.chars().count() as f64 * size * if bold { 0.66 } else { 0.6 }
}

impl Page<'_> {
    fn pct(&self, t: Millis) -> f64 {
        100.0 * self.axis.x(t)
    }

    /// A label in the left column, at `indent`, whole, with its full text
    /// on hover too.
    fn label(&mut self, text: &str, class: &str, indent: f64) {
        let bold = class != "label";
        let size = if bold { 11.0 } else { 10.0 };
        self.label_w = self.label_w.max(indent + text_w(text, size, bold) + 8.0);
        let _ = write!(
            self.labels,
            r#"<text class="{class}" x="{indent:.0}" y="{:.1}"><title>{t}</title>{t}</text>"#,
            self.y + ROW_H - 4.0,
            t = esc(text),
        );
    }

    fn section(&mut self, title: &str) {
        self.y += 2.0;
        self.label(title, "section", 4.0);
        self.y += ROW_H + 2.0;
    }

    /// A bar on the current row, with its label inside when it fits, and
    /// its key's pattern over the colour.
    fn bar(&mut self, span: &Span, tooltip: &str) {
        self.used.insert(span.class);
        let x0 = self.pct(span.from);
        let x1 = self.pct(span.to.unwrap_or(self.axis.run)).max(x0 + 0.15);
        let (y, h) = (self.y, ROW_H - 3.0);
        let _ = write!(
            self.plot,
            r#"<g class="bar {class}"><title>{tip}</title><rect class="fill" x="{x0:.3}%" y="{y:.1}" width="{w:.3}%" height="{h:.1}" rx="2"/>"#,
            class = span.class,
            tip = esc(tooltip),
            w = x1 - x0,
        );
        if let Some(pattern) = style::pattern_of(span.class) {
            let _ = write!(
                self.plot,
                r#"<rect x="{x0:.3}%" y="{y:.1}" width="{w:.3}%" height="{h:.1}" rx="2" fill="url(#p-{pattern})"/>"#,
                w = x1 - x0,
            );
        }
        if text_w(&span.label, 9.0, false) + 6.0 < (x1 - x0) / 100.0 * NOMINAL_PLOT_W {
            let _ = write!(
                self.plot,
                r#"<text class="bar-label" x="{x0:.3}%" dx="3" y="{ty:.1}">{label}</text>"#,
                ty = y + ROW_H - 6.0,
                label = esc(&span.label),
            );
        }
        self.plot.push_str("</g>");
    }

    /// A labelled row of bars in `<g {group}>`; `what` names a span in
    /// its tooltip.
    fn row(&mut self, group: &str, label: &str, spans: &[Span], what: &dyn Fn(&Span) -> String) {
        let _ = write!(self.plot, "<g {group}>");
        self.label(label, "label", 12.0);
        for span in spans {
            self.bar(span, &span_tooltip(&what(span), span));
        }
        self.plot.push_str("</g>");
        self.y += ROW_H;
    }

    /// A band behind a group of rows, in both columns.
    fn band(&mut self, from_y: f64, index: usize) {
        let alt = if index.is_multiple_of(2) {
            "even"
        } else {
            "odd"
        };
        let band = format!(
            r#"<rect class="lane-bg {alt}" x="0" y="{from_y:.1}" width="100%" height="{:.1}"/>"#,
            self.y - from_y
        );
        self.labels.push_str(&band);
        self.plot.push_str(&band);
    }
}

fn span_tooltip(what: &str, span: &Span) -> String {
    match span.to {
        Some(to) => format!("{what}: {} → {}", format_t(span.from), format_t(to)),
        None => format!("{what}: from {}", format_t(span.from)),
    }
}

/// Zone rows from the zone entries.
fn zone_rows(rec: &Recording) -> BTreeMap<String, Vec<Span>> {
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
    zones
}

/// The whole page.
pub fn render(rec: &Recording, meta: &ReportMeta) -> String {
    let lanes = lanes(rec);
    let axis = Axis::new(
        rec.run,
        rec.entries
            .iter()
            .map(|e| e.t)
            .chain(rec.steps.iter().map(|(t, _)| *t)),
    );
    let mut page = Page {
        axis: &axis,
        labels: String::new(),
        plot: String::new(),
        y: TOP,
        label_w: 120.0,
        used: BTreeSet::new(),
    };

    let zones = zone_rows(rec);
    if !zones.is_empty() {
        page.section("zones");
        for (zone, spans) in &zones {
            let label = if zone.is_empty() {
                "(no zone label)".to_owned()
            } else {
                format!("zone {zone}")
            };
            page.row(r#"class="zone-row""#, &label, spans, &|span| {
                format!("zone {zone} {}", span.label)
            });
        }
        page.y += PAD;
    }
    // Workloads: replicas per zone (or node).
    let workloads = replicas(rec);
    if !workloads.is_empty() {
        let per = if rec.nodes.iter().any(|(_, z)| z.is_some()) {
            "zone"
        } else {
            "node"
        };
        page.section(&format!("workloads (replicas per {per})"));
        for (workload, rows) in &workloads {
            let _ = write!(
                page.plot,
                r#"<g class="workload" data-workload="{}">"#,
                esc(workload)
            );
            page.label(workload, "node-name", 4.0);
            page.y += ROW_H;
            for (row, spans) in rows {
                let group = format!(r#"class="replica-row" data-row="{}""#, esc(row));
                page.row(&group, row, spans, &|span| {
                    format!("{workload}: {} in {row}", span.label)
                });
            }
            page.plot.push_str("</g>");
        }
        page.y += PAD;
    }
    // Node lanes, in scenario order.
    page.section("nodes");
    for (index, (name, _)) in rec.nodes.iter().enumerate() {
        let Some(lane) = lanes.get(name) else {
            continue;
        };
        let top = page.y;
        let rows = 1 + lane.rows.len() + lane.pods.len();
        page.y += rows as f64 * ROW_H + PAD;
        page.band(top, index);
        page.y = top + PAD / 2.0;
        let _ = write!(page.plot, r#"<g class="lane" data-node="{}">"#, esc(name));
        let zone = lane
            .zone
            .as_ref()
            .map(|z| format!(" (zone {z})"))
            .unwrap_or_default();
        page.label(&format!("{name}{zone}"), "node-name", 4.0);
        for span in &lane.ready {
            page.bar(span, &span_tooltip(&format!("{name} {}", span.label), span));
        }
        page.y += ROW_H;
        for (label, spans) in &lane.rows {
            page.label(label, "label", 12.0);
            for span in spans {
                page.bar(span, &span_tooltip(label, span));
            }
            page.y += ROW_H;
        }
        for bar in &lane.pods {
            page.label(&format!("pod {}", bar.pod), "label", 12.0);
            pod_bar(&mut page, bar);
            page.y += ROW_H;
        }
        page.plot.push_str("</g>");
        page.y = top + rows as f64 * ROW_H + PAD;
    }
    let bottom = page.y;
    let axis_svg = axis_and_steps(&mut page, rec, bottom);
    let height = bottom + 10.0;
    let Page {
        labels,
        plot,
        label_w,
        mut used,
        ..
    } = page;
    if !rec.steps.is_empty() {
        used.insert("step");
    }
    if axis.stretches.iter().any(|s| s.broken) {
        used.insert("break");
    }

    let mut html = String::new();
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>berth sim: {title}</title>
<style>{css}</style></head>
<body data-rendered="no">
<h1>berth sim: {title}</h1>
"#,
        title = esc(&meta.title),
        css = style::CSS,
    );
    description(&mut html, meta);
    let _ = writeln!(
        html,
        r#"<p class="summary">{run} of virtual time, seed {seed}, {nodes} nodes, {entries} timeline entries. Components: {components}. The time axis is broken where nothing happens (≈, shaded): durations read true within each stretch.</p>"#,
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
    settings_table(&mut html, meta);
    let _ = write!(
        html,
        r#"<div class="legend">{legend}</div>
<div class="chart"><svg id="labels" xmlns="http://www.w3.org/2000/svg" width="{label_w:.0}" height="{height:.0}">{labels}</svg><svg id="plot" xmlns="http://www.w3.org/2000/svg" width="100%" height="{height:.0}">{patterns}{axis_svg}{plot}</svg></div>
"#,
        legend = style::legend(&used),
        patterns = style::PATTERNS,
    );
    steps_table(&mut html, rec);
    evictions_table(&mut html, rec, &lanes);
    timeline_table(&mut html, &rec.entries);
    html.push_str(SCRIPT);
    html.push_str("</body></html>\n");
    html
}

/// Ticks, breaks and step markers: drawn first, under the rows; step
/// lines go on top (appended to the plot).
fn axis_and_steps(page: &mut Page, rec: &Recording, bottom: f64) -> String {
    let axis = page.axis;
    let mut out = String::new();
    for s in axis.stretches.iter().filter(|s| s.broken) {
        let (x0, x1) = (100.0 * s.x0, 100.0 * s.x1);
        let _ = write!(
            out,
            r#"<g class="axis-break"><title>{tip}</title><rect class="break" x="{x0:.3}%" y="{y0:.1}" width="{w:.3}%" height="{h:.1}"/><text class="break-mark" x="{xm:.3}%" y="{ym:.1}" text-anchor="middle">≈</text></g>"#,
            tip = esc(&format!(
                "{} of nothing happening ({} → {}), drawn shorter",
                format_t(s.to - s.from),
                format_t(s.from),
                format_t(s.to)
            )),
            y0 = 14.0,
            w = x1 - x0,
            h = bottom - 14.0,
            xm = (x0 + x1) / 2.0,
            ym = 24.0,
        );
    }
    let ticks = axis.ticks();
    for (i, t) in ticks.iter().enumerate() {
        let x = page.pct(*t);
        let anchor = match i {
            0 => "start",
            i if i + 1 == ticks.len() => "end",
            _ => "middle",
        };
        let _ = write!(
            out,
            r#"<line class="tick" x1="{x:.3}%" y1="14" x2="{x:.3}%" y2="{bottom:.1}"/><text class="tick-label" x="{x:.3}%" y="10" text-anchor="{anchor}">{}</text>"#,
            format_t(*t)
        );
    }
    let mut last_at_level = [f64::NEG_INFINITY; STEP_LEVELS];
    for (i, (t, text)) in rec.steps.iter().enumerate() {
        let f = axis.x(*t);
        let level = (0..STEP_LEVELS)
            .find(|l| f - last_at_level[*l] >= STEP_GAP)
            .unwrap_or(STEP_LEVELS - 1);
        last_at_level[level] = f;
        let x = 100.0 * f;
        let cy = 22.0 + 10.0 * level as f64;
        let _ = write!(
            page.plot,
            r#"<g class="step"><title>{tip}</title><line x1="{x:.3}%" y1="{cy:.1}" x2="{x:.3}%" y2="{bottom:.1}"/><circle cx="{x:.3}%" cy="{cy:.1}" r="3.5"/><text x="{x:.3}%" dx="5" y="{ty:.1}">{n}</text></g>"#,
            tip = esc(&format!("step {} at {}: {text}", i + 1, format_t(*t))),
            ty = cy + 3.5,
            n = i + 1,
        );
    }
    out
}

/// The scenario's own words, then what decided the outcome.
fn description(html: &mut String, meta: &ReportMeta) {
    if meta.description.is_empty() {
        return;
    }
    html.push_str(r#"<section class="description">"#);
    for paragraph in meta.description.split("\n\n") {
        let _ = write!(html, "<p>{}</p>", esc(paragraph.trim()));
    }
    html.push_str("</section>\n");
}

fn settings_table(html: &mut String, meta: &ReportMeta) {
    if meta.settings.is_empty() {
        return;
    }
    html.push_str(
        r#"<details class="settings-box" open><summary>Settings that decided the outcome (bold: set by the scenario; the rest are upstream's defaults)</summary><table class="settings"><tr><th>flag</th><th>value</th><th>what it decides</th></tr>"#,
    );
    for s in &meta.settings {
        let _ = write!(
            html,
            r#"<tr class="{}" data-flag="{flag}"><td>--{flag}</td><td class="t">{}</td><td>{}</td></tr>"#,
            if s.changed { "changed" } else { "default" },
            esc(&s.value),
            esc(s.meaning),
            flag = s.flag,
        );
    }
    html.push_str("</table></details>\n");
}

fn pod_bar(page: &mut Page, bar: &PodBar) {
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
    page.bar(&span, &tip);
    let y = page.y;
    if let Some(evicted) = bar.evicted {
        // Terminating: from the eviction until the deletion completed.
        if bar.ended.unwrap_or(page.axis.run) > evicted {
            page.bar(
                &Span {
                    from: evicted,
                    to: bar.ended,
                    label: "terminating".into(),
                    class: "p-terminating",
                },
                &format!("pod {} terminating", bar.pod),
            );
        }
        if let Some(due) = bar.due {
            page.used.insert("due");
            let xd = page.pct(due);
            let _ = write!(
                page.plot,
                r#"<line class="due" x1="{xd:.3}%" y1="{y0:.1}" x2="{xd:.3}%" y2="{y1:.1}"><title>due {}</title></line>"#,
                format_t(due),
                y0 = y - 1.0,
                y1 = y + ROW_H - 1.0,
            );
        }
        page.used.insert("evicted");
        let _ = write!(
            page.plot,
            r#"<text class="evicted" x="{x:.3}%" y="{ty:.1}" text-anchor="middle"><title>{tip}</title>✕</text>"#,
            x = page.pct(evicted),
            ty = y + ROW_H - 3.5,
            tip = esc(&tip),
        );
    }
    for t in &bar.cancelled {
        page.used.insert("cancelled");
        let _ = write!(
            page.plot,
            r#"<circle class="cancelled" cx="{:.3}%" cy="{:.1}" r="4"><title>{}</title></circle>"#,
            page.pct(*t),
            y + (ROW_H - 3.0) / 2.0,
            esc(&format!(
                "eviction of {} called off at {}",
                bar.pod,
                format_t(*t)
            )),
        );
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
            "<tr><td>{}</td><td class=\"t\">{}</td><td>{}</td></tr>",
            i + 1,
            format_t(*t),
            esc(text)
        );
    }
    html.push_str("</table>\n");
}

/// Each eviction with what decided its due time: the taint whose
/// eviction came first and the pod's toleration of it (the recorder asks
/// berth-core's rule), then the evictions called off.
fn evictions_table(html: &mut String, rec: &Recording, lanes: &BTreeMap<String, Lane>) {
    html.push_str("<h2>Evictions</h2>");
    let evicted: Vec<&Entry> = rec
        .entries
        .iter()
        .filter(|e| e.event == EventKind::PodEvicted)
        .collect();
    let cancelled: Vec<&Entry> = rec
        .entries
        .iter()
        .filter(|e| e.event == EventKind::EvictionCancelled)
        .collect();
    if evicted.is_empty() {
        html.push_str("<p>No pod was evicted.</p>\n");
    } else {
        html.push_str("<p>Due: the later of the taint's <code>timeAdded</code> and the pod's binding, plus the toleration's seconds (none: at once).</p><table class=\"evictions\"><tr><th>pod</th><th>node</th><th>taint</th><th>toleration</th><th>due</th><th>actual</th><th>late by</th><th>deleted</th></tr>");
        for e in evicted {
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
            let due = e.due.map_or("-".to_owned(), format_t);
            let late = e.due.map_or("-".to_owned(), |d| {
                if e.t >= d {
                    format_t(e.t - d)
                } else {
                    format!("-{}", format_t(d - e.t))
                }
            });
            let toleration = match e.toleration.as_deref() {
                Some("none") => "none: not tolerated".to_owned(),
                Some(t) => t.to_owned(),
                None => "-".to_owned(),
            };
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td class=\"taint\">{}</td><td class=\"toleration\">{}</td><td class=\"t\">{due}</td><td class=\"t\">{}</td><td class=\"t\">{late}</td><td class=\"t\">{deleted}</td></tr>",
                esc(&pod),
                esc(&node),
                esc(e.taint.as_deref().unwrap_or("-")),
                esc(&toleration),
                format_t(e.t),
            );
        }
        html.push_str("</table>\n");
    }
    if !cancelled.is_empty() {
        html.push_str("<h2>Evictions called off</h2><table class=\"cancellations\"><tr><th>pod</th><th>node</th><th>at</th></tr>");
        for e in cancelled {
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td class=\"t\">{}</td></tr>",
                esc(e.pod.as_deref().unwrap_or("")),
                esc(e.node.as_deref().unwrap_or("")),
                format_t(e.t),
            );
        }
        html.push_str("</table>\n");
    }
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
            &e.toleration.as_ref().map(|t| format!("toleration {t}")),
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
            "<tr><td class=\"t\">{}</td><td>{:?}</td><td>{}</td><td>{}</td></tr>",
            format_t(e.t),
            e.event,
            esc(&subject),
            esc(&detail)
        );
    }
    html.push_str("</table></details>\n");
}

/// Counts the lanes into `body[data-rendered]` (what tests read), sizes
/// the label column to its widest label (so none is cut whatever the
/// font), and shows a bar's label only where it fits at the window's
/// width (its full text is on hover).
const SCRIPT: &str = r#"<script>
(function () {
  var lanes = document.querySelectorAll('#plot .lane').length;
  var labels = document.getElementById('labels');
  var widest = 0;
  labels.querySelectorAll('text').forEach(function (t) {
    widest = Math.max(widest, t.getBBox().x + t.getBBox().width);
  });
  labels.setAttribute('width', Math.ceil(widest + 8));
  function fit() {
    document.querySelectorAll('#plot .bar').forEach(function (g) {
      var t = g.querySelector('text.bar-label'), r = g.querySelector('rect');
      if (!t) return;
      t.style.display = '';
      if (t.getComputedTextLength() + 6 > r.getBBox().width) t.style.display = 'none';
    });
  }
  fit();
  window.addEventListener('resize', fit);
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
                    e.taint = on("key1=value1:NoExecute");
                    e.toleration = on("key1 Equal value1:NoExecute for 3600s");
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
                description: "Why.\n\nAnd how.".into(),
                settings: crate::config::SimConfig::default().effective(),
            },
        );
        assert_eq!(html.matches(r#"<g class="lane""#).count(), 2);
        assert!(html.contains("key1=value1:NoExecute"));
        assert!(html.contains(r#"class="evicted""#));
        assert!(html.contains(r#"<td>default/web</td><td>n1</td><td class="taint">key1=value1:NoExecute</td><td class="toleration">key1 Equal value1:NoExecute for 3600s</td><td class="t">1h0m10s</td><td class="t">1h0m10s</td><td class="t">0s</td><td class="t">1h0m10s</td>"#), "{html}");
        // The description's paragraphs and the settings are at the top.
        assert!(html.contains("<p>Why.</p><p>And how.</p>"));
        assert!(html.contains(r#"<tr class="default" data-flag="node-eviction-rate"><td>--node-eviction-rate</td><td class="t">0.1 nodes/s</td>"#));
        // The legend lists only what occurs: no zone states, no workloads.
        assert!(html.contains(r#"data-key="t-noexec""#));
        assert!(html.contains(r#"data-key="evicted""#));
        assert!(!html.contains(r#"data-key="z-full""#));
        assert!(!html.contains(r#"data-key="w-replicas""#));
        // Pod rows are labelled with the full name.
        assert!(html.contains("<title>pod default/web</title>pod default/web</text>"));
        assert!(!html.contains('…'));
        // Names are escaped; nothing is fetched.
        assert!(html.contains("n2&lt;x&gt;"));
        assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
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
                description: String::new(),
                settings: vec![],
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
}
