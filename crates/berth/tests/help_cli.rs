//! What `berth --help` and the subcommands' `--help` promise, run as a user
//! runs them: only commands and flags that exist.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .arg("--help")
        .output()
        .expect("the berth binary runs");
    assert!(out.status.success(), "berth {args:?} --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `berth --help` names no `ctl` (there is none), and every command it
/// names answers `--help`.
#[test]
fn help_names_only_commands_that_exist() {
    let top = help(&[]);
    assert!(
        !top.split(|c: char| !c.is_alphanumeric())
            .any(|w| w == "ctl"),
        "{top}"
    );
    for command in ["check", "server", "agent", "sim", "taint"] {
        assert!(
            top.lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "{command}: {top}"
        );
        help(&[command]);
    }
}

/// The agent's log server address is a flag, as the kubelet's `--address`
/// (the process e2e test binds it to loopback).
#[test]
fn the_agent_takes_the_log_servers_address() {
    let agent = help(&["agent"]);
    assert!(agent.contains("--address <IP>"), "{agent}");
    assert!(agent.contains("[default: 0.0.0.0]"), "{agent}");
}

/// The README's commands as a newcomer pastes them: the join token goes by
/// `BERTH_JOIN_TOKEN` (which the agent and the fleet read), never on a
/// command line, and the second simulation names its nodes apart from the
/// server's own `sim-` nodes with a prefix the fleet takes.
#[test]
fn the_readme_keeps_the_token_off_argv_and_the_fleet_apart() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    assert!(!readme.contains("--token \"$("), "a join token on argv");
    assert!(
        !readme.contains("--token JOIN_TOKEN"),
        "a join token on argv"
    );
    let fleet = readme
        .split("berth sim fleet --server")
        .nth(1)
        .expect("the README's fleet command");
    let command = &fleet[..fleet.find('`').unwrap_or(fleet.len())];
    assert!(command.contains("--name-prefix fleet-"), "{command}");
    for args in [&["agent"][..], &["sim", "fleet"][..]] {
        let text = help(args);
        assert!(text.contains("BERTH_JOIN_TOKEN"), "{args:?}: {text}");
    }
    assert!(help(&["sim", "fleet"]).contains("--name-prefix"));
}
