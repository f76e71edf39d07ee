//! The live cluster page at `/ui/` in headless Chromium (Debian's
//! `chromium`, driven by playwright-core; `tests/browser/ui-check.js`)
//! against a real `berth server`: it follows a node going NotReady, its
//! NoExecute taint appearing, a pod's countdown reaching zero and the pod
//! disappearing, each within a second of the API event, and shows the
//! scheduler's reason for a pending pod. Screenshots at 1,400 and 800 px
//! go to target/browser-artefacts/ui/. The page opens from the login
//! link the server prints (which then works no more), shows each zone's
//! state and the rate the controller taints it at (the server's
//! `--node-eviction-rate`), and zoomed out, one row of counts per zone.
//!
//! The node lifecycle controller is off: the test writes the node's
//! NotReady status and the not-ready taint itself (as the controller
//! would), so each API event's time is the write's; the taint eviction
//! controller and the scheduler run as usual.

mod common;

#[path = "browser/driver.rs"]
mod driver;

use std::path::Path;

use common::{Backend, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_page_follows_a_node_failure_and_counts_an_eviction_down() {
    let server = Server::start(
        "ui",
        Backend::Embedded,
        &[
            "--controllers",
            "*,-node-lifecycle-controller",
            "--node-eviction-rate",
            "0.25",
        ],
    )
    .await;
    let log = server.log();
    let link = log
        .lines()
        .find_map(|l| l.strip_prefix("live cluster page: "))
        .and_then(|l| l.split_whitespace().next())
        .filter(|l| l.contains("/ui/#login="))
        .unwrap_or_else(|| panic!("no login link printed:\n{log}"))
        .to_owned();
    let token = std::fs::read_to_string(server.data_dir.join("admin-token")).expect("admin token");
    let url = server.url();
    let out = driver::artefacts("ui");
    let result = tokio::task::block_in_place(|| {
        driver::run(
            "ui-check.js",
            &[
                Path::new(&url),
                Path::new(token.trim()),
                &out,
                Path::new(&link),
            ],
        )
    });
    println!("{result:#}");
    for step in ["notReady", "taint", "podGone"] {
        let ms = result["latencyMs"][step]
            .as_u64()
            .unwrap_or_else(|| panic!("no latency for {step}: {result}"));
        assert!(ms < 1000, "{step} shown {ms} ms after the API event");
    }
    let row = result["seen"]["evictionRow"].as_str().unwrap_or("");
    assert!(
        row.contains("node.kubernetes.io/not-ready:NoExecute")
            && row.contains("for 3s")
            && row.contains("ui-node1"),
        "{row}"
    );
    let countdowns: Vec<&str> = result["seen"]["countdowns"]
        .as_array()
        .expect("countdowns")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(countdowns.contains(&"0.0s"), "{countdowns:?}");
    assert!(countdowns.len() > 5, "the countdown ran: {countdowns:?}");
    let reason = result["seen"]["pendingReason"].as_str().unwrap_or("");
    assert!(reason.contains("Unschedulable"), "{reason}");
    let kinds = result["seen"]["timelineEvents"].to_string();
    for kind in ["notready", "taint", "evicted"] {
        assert!(kinds.contains(kind), "no {kind} in the timeline: {kinds}");
    }
    assert_eq!(result["seen"]["loginLinkHashCleared"], true);
    let again = result["seen"]["loginLinkAgain"].as_str().unwrap_or("");
    assert!(again.contains("already used"), "{again}");
    for (seen, want) in [
        ("zoneBefore", "Normal"),
        ("zoneAfter", "FullDisruption"),
        ("zoneOther", "Normal"),
    ] {
        let text = result["seen"][seen].as_str().unwrap_or("");
        assert!(
            text.contains(want) && text.contains("0.25 nodes/s"),
            "{seen}: {text}"
        );
    }
    let zones = &result["seen"]["zoomedOut"];
    assert_eq!(zones[0]["zone"], "a", "{zones}");
    assert_eq!(zones[1]["zone"], "b", "{zones}");
    for (zone, count, want) in [
        (0, "nodes", "1 nodes"),
        (0, "notReady", "1 not Ready"),
        (0, "tainted", "1 tainted"),
        (0, "pods", "0 pods"),
        (1, "ready", "1 Ready"),
        (1, "notReady", "0 not Ready"),
    ] {
        assert_eq!(zones[zone]["counts"][count], want, "{zones}");
    }
    for width in ["1400", "800"] {
        assert_eq!(
            result["horizontalScroll"][width], false,
            "sideways scroll at {width} px"
        );
        assert!(out.join(format!("live-after-{width}.png")).is_file());
    }
}
