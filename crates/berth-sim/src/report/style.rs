//! The report's look: one colour per meaning, a pattern as a second
//! channel for readers who cannot tell the colours apart, and the legend
//! of the keys a page uses.
//!
//! Each key (a CSS class) is one meaning; no two share a colour. Patterns
//! repeat across keys of different rows (a node's NotReady and a pod's
//! failure are both hatched) because the row already says which it is.

/// A key's legend text and its pattern (`None`: solid).
pub struct Key {
    pub class: &'static str,
    pub text: &'static str,
    pub pattern: Option<&'static str>,
}

/// Every key, in legend order.
pub const KEYS: &[Key] = &[
    Key {
        class: "s-ready",
        text: "node Ready",
        pattern: None,
    },
    Key {
        class: "s-notready",
        text: "node NotReady",
        pattern: Some("hatch"),
    },
    Key {
        class: "s-unknown",
        text: "node Unknown (no heartbeat)",
        pattern: Some("dots"),
    },
    Key {
        class: "c-cordon",
        text: "cordoned",
        pattern: None,
    },
    Key {
        class: "t-noexec",
        text: "NoExecute taint",
        pattern: Some("cross"),
    },
    Key {
        class: "t-nosched",
        text: "NoSchedule taint",
        pattern: Some("hstripe"),
    },
    Key {
        class: "t-prefer",
        text: "PreferNoSchedule taint",
        pattern: Some("dots"),
    },
    Key {
        class: "c-pressure",
        text: "node condition (not False)",
        pattern: Some("vstripe"),
    },
    Key {
        class: "p-run",
        text: "pod on the node",
        pattern: None,
    },
    Key {
        class: "p-failed",
        text: "pod failed",
        pattern: Some("hatch"),
    },
    Key {
        class: "p-terminating",
        text: "pod terminating after its eviction",
        pattern: Some("hatch"),
    },
    Key {
        class: "evicted",
        text: "evicted (✕)",
        pattern: None,
    },
    Key {
        class: "due",
        text: "eviction due by the rule",
        pattern: None,
    },
    Key {
        class: "cancelled",
        text: "eviction called off (○)",
        pattern: None,
    },
    Key {
        class: "z-initial",
        text: "zone Initial",
        pattern: None,
    },
    Key {
        class: "z-normal",
        text: "zone Normal",
        pattern: None,
    },
    Key {
        class: "z-partial",
        text: "zone PartialDisruption",
        pattern: Some("hstripe"),
    },
    Key {
        class: "z-full",
        text: "zone FullDisruption",
        pattern: Some("cross"),
    },
    Key {
        class: "w-replicas",
        text: "replicas (count in the bar)",
        pattern: None,
    },
    Key {
        class: "step",
        text: "scenario step (numbered)",
        pattern: None,
    },
    Key {
        class: "break",
        text: "axis break: a quiet stretch drawn shorter (≈)",
        pattern: None,
    },
];

pub fn pattern_of(class: &str) -> Option<&'static str> {
    KEYS.iter()
        .find(|k| k.class == class)
        .and_then(|k| k.pattern)
}

/// The SVG patterns, white lines over a bar's colour.
pub const PATTERNS: &str = r##"<defs>
<pattern id="p-hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="5" stroke="#fff" stroke-width="1.6" stroke-opacity=".7"/></pattern>
<pattern id="p-cross" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><path d="M0,0V5M0,0H5" stroke="#fff" stroke-width="1.4" stroke-opacity=".7"/></pattern>
<pattern id="p-dots" width="4" height="4" patternUnits="userSpaceOnUse"><circle cx="2" cy="2" r="1" fill="#fff" fill-opacity=".8"/></pattern>
<pattern id="p-hstripe" width="4" height="4" patternUnits="userSpaceOnUse"><line x1="0" y1="1" x2="4" y2="1" stroke="#fff" stroke-width="1.2" stroke-opacity=".75"/></pattern>
<pattern id="p-vstripe" width="4" height="4" patternUnits="userSpaceOnUse"><line x1="1" y1="0" x2="1" y2="4" stroke="#fff" stroke-width="1.2" stroke-opacity=".75"/></pattern>
</defs>"##;

/// The legend of the keys in `used`, in [`KEYS`] order.
pub fn legend(used: &std::collections::BTreeSet<&'static str>) -> String {
    let mut out = String::new();
    for key in KEYS.iter().filter(|k| used.contains(k.class)) {
        let swatch = match key.class {
            "evicted" => r#"<span class="mark evicted">✕</span>"#.to_owned(),
            "cancelled" => r#"<span class="mark cancelled">○</span>"#.to_owned(),
            "break" => r#"<span class="key break">≈</span>"#.to_owned(),
            class => format!(r#"<span class="key {class}"></span>"#),
        };
        out.push_str(&format!(
            r#"<span class="legend-item" data-key="{}">{swatch}{}</span>"#,
            key.class, key.text
        ));
    }
    out
}

/// Colours: each used once. The legend swatches draw the patterns with
/// CSS gradients.
pub const CSS: &str = r#"
body { font: 13px/1.4 system-ui, sans-serif; margin: 12px; color: #1d2330; background: #fff; }
h1 { font-size: 18px; margin: 0 0 4px; overflow-wrap: anywhere; } h2 { font-size: 15px; margin: 18px 0 6px; }
.summary { color: #555; margin: 0 0 8px; }
.description { max-width: 80em; margin: 0 0 8px; } .description p { margin: 0 0 6px; overflow-wrap: anywhere; }

.legend { margin: 6px 0 8px; color: #333; display: flex; flex-wrap: wrap; gap: 2px 14px; }
.legend .key { display: inline-block; width: 16px; height: 11px; margin-right: 4px; border-radius: 2px; vertical-align: middle; }
.legend .mark { font-weight: bold; margin-right: 4px; }
.chart { display: flex; align-items: flex-start; width: 100%; }
#labels { flex: none; } #plot { flex: 1 1 auto; min-width: 0; }
svg text { font: 10px system-ui, sans-serif; fill: #1d2330; }
.section { font-weight: bold; font-size: 11px; fill: #555; }
.node-name { font-weight: bold; font-size: 11px; }
.label { fill: #444; }
.lane-bg.even { fill: #f4f6f9; } .lane-bg.odd { fill: #ffffff; }
.tick { stroke: #dde2ea; stroke-width: 1; } .tick-label { fill: #666; }
.step line { stroke: #000; stroke-dasharray: 3 3; opacity: .55; } .step circle { fill: #000; } .step text { fill: #000; font-weight: bold; }
.legend .step { background: repeating-linear-gradient(90deg, #000 0 3px, transparent 3px 6px); height: 2px; }
rect.break { fill: #eceff3; } .break-mark { fill: #666; font-size: 12px; font-weight: bold; }
.legend .break { background: #eceff3; color: #666; text-align: center; font-size: 11px; line-height: 11px; font-weight: bold; }
.bar-label { fill: #fff; font-size: 9px; pointer-events: none; }
.s-ready rect.fill, .legend .s-ready { fill: #1a9850; background: #1a9850; }
.s-notready rect.fill, .legend .s-notready { fill: #d73027; background: #d73027; }
.s-unknown rect.fill, .legend .s-unknown { fill: #878787; background: #878787; }
.c-cordon rect.fill, .legend .c-cordon { fill: #3b3b3b; background: #3b3b3b; }
.t-noexec rect.fill, .legend .t-noexec { fill: #7b3294; background: #7b3294; }
.t-nosched rect.fill, .legend .t-nosched { fill: #b07cc6; background: #b07cc6; }
.t-prefer rect.fill, .legend .t-prefer { fill: #d9b8e3; background: #d9b8e3; }
.t-prefer .bar-label { fill: #1d2330; }
.c-pressure rect.fill, .legend .c-pressure { fill: #a6611a; background: #a6611a; }
.p-run rect.fill, .legend .p-run { fill: #2166ac; background: #2166ac; }
.p-failed rect.fill, .legend .p-failed { fill: #5a3d1e; background: #5a3d1e; }
.p-terminating rect.fill, .legend .p-terminating { fill: #6baed6; background: #6baed6; }
.z-initial rect.fill, .legend .z-initial { fill: #f7f7f7; background: #f7f7f7; stroke: #999; outline: 1px solid #999; }
.z-initial .bar-label { fill: #1d2330; }
.z-normal rect.fill, .legend .z-normal { fill: #7fbf7b; background: #7fbf7b; }
.z-partial rect.fill, .legend .z-partial { fill: #f1a340; background: #f1a340; }
.z-full rect.fill, .legend .z-full { fill: #67001f; background: #67001f; }
.w-replicas rect.fill, .legend .w-replicas { fill: #35978f; background: #35978f; }
.legend .s-notready, .legend .p-failed, .legend .p-terminating { background-image: repeating-linear-gradient(45deg, transparent 0 2px, rgba(255,255,255,.7) 2px 3.5px); }
.legend .t-noexec, .legend .z-full { background-image: repeating-linear-gradient(45deg, transparent 0 2.5px, rgba(255,255,255,.7) 2.5px 3.5px), repeating-linear-gradient(-45deg, transparent 0 2.5px, rgba(255,255,255,.7) 2.5px 3.5px); }
.legend .s-unknown, .legend .t-prefer { background-image: radial-gradient(rgba(255,255,255,.8) 1px, transparent 1.2px); background-size: 4px 4px; }
.legend .t-nosched, .legend .z-partial { background-image: repeating-linear-gradient(0deg, transparent 0 2.5px, rgba(255,255,255,.75) 2.5px 3.7px); }
.legend .c-pressure { background-image: repeating-linear-gradient(90deg, transparent 0 2.5px, rgba(255,255,255,.75) 2.5px 3.7px); }
.evicted, .legend .evicted { fill: #e66101; color: #e66101; font-weight: bold; }
text.evicted { font-size: 13px; }
.cancelled { fill: #fff; stroke: #01665e; stroke-width: 2; } .legend .cancelled { color: #01665e; }
line.due { stroke: #c51b7d; stroke-width: 2; stroke-dasharray: 2 1; }
.legend .due { background: #c51b7d; width: 3px; }
table { border-collapse: collapse; max-width: 100%; } th, td { border: 1px solid #dde2ea; padding: 2px 8px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f0f3f8; } td.t { font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.changed td { font-weight: bold; }
details { margin-top: 14px; }
"#;
