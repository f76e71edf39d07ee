//! `berth sim`: two commands. `berth sim fleet` joins many simulated
//! nodes to a running cluster ([`crate::fleet_cmd`]); `berth sim scenario
//! FILE` rehearses a failure on a virtual clock ([`crate::scenario_cmd`]).
//!
//! The spellings from before the subcommands still work, parsed by clap
//! like the new ones: `berth sim --scenario FILE [--timeline ...]` is
//! `berth sim scenario FILE ...`, and `berth sim --server URL ... --nodes
//! N` (any other flags) is `berth sim fleet ...`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::fleet_cmd::FleetArgs;
use crate::scenario_cmd::{ScenarioArgs, ScenarioOutputs};

/// `berth sim`'s arguments: a subcommand, or an old spelling (hidden from
/// the help).
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    mut_args = |arg| arg.hide(true),
)]
pub struct SimArgs {
    #[command(subcommand)]
    command: Option<SimCommand>,
    /// The old spelling of `berth sim scenario FILE`.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    #[command(flatten)]
    outputs: ScenarioOutputs,
    /// The old spelling of `berth sim fleet ...`: its flags, parsed as the
    /// fleet's.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "FLEET FLAGS",
        conflicts_with_all = ["scenario", "timeline", "report", "seed"],
    )]
    fleet: Vec<OsString>,
}

/// What `berth sim` runs.
#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Joins N simulated nodes to a running cluster (any Kubernetes
    /// cluster through an admin's --kubeconfig alone, or berth's with its
    /// join token), each with its own Lease and status, until interrupted.
    Fleet(FleetArgs),
    /// Rehearses a failure: runs a scenario file on a virtual clock and
    /// writes its timeline and an HTML report.
    Scenario(ScenarioArgs),
}

/// The old fleet spelling's flags, parsed as `berth sim fleet`'s.
#[derive(Debug, Parser)]
#[command(name = "berth sim")]
struct OldFleetSpelling {
    #[command(flatten)]
    args: FleetArgs,
}

impl SimArgs {
    /// The command these arguments ask for; an old spelling's flags that
    /// do not parse are a usage error, as a new spelling's are.
    pub fn command(self) -> Result<SimCommand, clap::Error> {
        match (self.command, self.scenario) {
            (Some(command), _) => Ok(command),
            (None, Some(file)) => Ok(SimCommand::Scenario(ScenarioArgs {
                file,
                outputs: self.outputs,
            })),
            (None, None) => {
                let argv = std::iter::once(OsString::from("berth sim")).chain(self.fleet);
                OldFleetSpelling::try_parse_from(argv).map(|old| SimCommand::Fleet(old.args))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::{Cli, Command};

    const FLEET: &[&str] = &[
        "--server",
        "https://10.0.0.1:6443",
        "--ca-file",
        "ca.crt",
        "--nodes",
        "3",
        "--kubeconfig",
        "admin.kubeconfig",
    ];

    /// What a command line comes to, in a few words (`fleet 3 nodes`,
    /// `scenario f.yaml seed 7`), or the usage error's kind.
    fn parsed(argv: &[&str]) -> Result<String, clap::error::ErrorKind> {
        let argv = ["berth", "sim"].iter().chain(argv);
        let Command::Sim(args) = Cli::try_parse_from(argv).map_err(|e| e.kind())?.command else {
            return Ok("not sim".into());
        };
        Ok(match args.command().map_err(|e| e.kind())? {
            SimCommand::Fleet(fleet) => format!("fleet {} nodes", fleet.nodes),
            SimCommand::Scenario(scenario) => format!(
                "scenario {} seed {}",
                scenario.file.display(),
                scenario.outputs.seed
            ),
        })
    }

    #[test]
    fn each_spelling_runs_its_command() {
        use clap::error::ErrorKind;
        struct Case {
            name: &'static str,
            argv: Vec<&'static str>,
            want: Result<&'static str, ErrorKind>,
        }
        let with_fleet = |head: &[&'static str]| [head, FLEET].concat();
        for case in [
            Case {
                name: "scenario subcommand",
                argv: vec!["scenario", "f.yaml", "--seed", "7", "--timeline", "-"],
                want: Ok("scenario f.yaml seed 7"),
            },
            Case {
                name: "old scenario spelling",
                argv: vec!["--scenario", "f.yaml", "--seed", "7"],
                want: Ok("scenario f.yaml seed 7"),
            },
            Case {
                name: "old scenario spelling, outputs first",
                argv: vec!["--report", "r.html", "--scenario", "f.yaml"],
                want: Ok("scenario f.yaml seed 0"),
            },
            Case {
                name: "fleet subcommand",
                argv: with_fleet(&["fleet"]),
                want: Ok("fleet 3 nodes"),
            },
            Case {
                name: "old fleet spelling",
                argv: with_fleet(&[]),
                want: Ok("fleet 3 nodes"),
            },
            Case {
                name: "old fleet spelling without --nodes",
                argv: vec![
                    "--server",
                    "https://x",
                    "--ca-file",
                    "c",
                    "--kubeconfig",
                    "k",
                ],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
            Case {
                name: "fleet subcommand without --nodes",
                argv: vec![
                    "fleet",
                    "--server",
                    "https://x",
                    "--ca-file",
                    "c",
                    "--kubeconfig",
                    "k",
                ],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
            Case {
                name: "fleet through a kubeconfig alone (any cluster)",
                argv: vec!["fleet", "--kubeconfig", "k", "--nodes", "3"],
                want: Ok("fleet 3 nodes"),
            },
            Case {
                name: "fleet with a rate limit",
                argv: vec![
                    "fleet",
                    "--kubeconfig",
                    "k",
                    "--nodes",
                    "3",
                    "--kube-api-qps",
                    "20",
                    "--kube-api-burst",
                    "40",
                ],
                want: Ok("fleet 3 nodes"),
            },
            Case {
                name: "kubelet endpoints need berth's join (--server)",
                argv: vec![
                    "fleet",
                    "--kubeconfig",
                    "k",
                    "--nodes",
                    "3",
                    "--kubelet-address",
                    "127.0.0.1:0",
                ],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
            Case {
                name: "--server without --ca-file",
                argv: vec![
                    "fleet",
                    "--kubeconfig",
                    "k",
                    "--nodes",
                    "3",
                    "--server",
                    "https://x",
                ],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
            Case {
                name: "fleet without --kubeconfig",
                argv: vec![
                    "fleet",
                    "--server",
                    "https://x",
                    "--ca-file",
                    "c",
                    "--nodes",
                    "3",
                ],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
            Case {
                name: "scenario subcommand without its file",
                argv: vec!["scenario", "--seed", "1"],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
            Case {
                name: "old scenario spelling with a fleet flag",
                argv: vec!["--scenario", "f.yaml", "--nodes", "3"],
                want: Err(ErrorKind::ArgumentConflict),
            },
            Case {
                name: "a subcommand and an old flag",
                argv: vec!["--scenario", "f.yaml", "scenario", "g.yaml"],
                want: Err(ErrorKind::ArgumentConflict),
            },
            Case {
                name: "nothing: the old fleet spelling's usage error",
                argv: vec![],
                want: Err(ErrorKind::MissingRequiredArgument),
            },
        ] {
            assert_eq!(
                parsed(&case.argv).as_deref().map_err(|e| *e),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// The help of `berth sim`, `berth sim fleet` and `berth sim scenario`.
    fn help(path: &[&str]) -> String {
        let mut command = Cli::command();
        let mut current = &mut command;
        for name in path {
            current = current
                .find_subcommand_mut(name)
                .unwrap_or_else(|| panic!("no subcommand {name}"));
        }
        current.render_long_help().to_string()
    }

    #[test]
    fn help_names_each_commands_flags() {
        struct Case {
            path: &'static [&'static str],
            want: &'static [&'static str],
            not: &'static [&'static str],
        }
        for case in [
            Case {
                path: &["sim"],
                want: &["fleet", "scenario"],
                not: &["--scenario", "--timeline", "--nodes"],
            },
            Case {
                path: &["sim", "fleet"],
                want: &[
                    "--server",
                    "--token",
                    "--ca-file",
                    "--nodes",
                    "--zones",
                    "--node-template",
                    "--name-prefix",
                    "--data-dir",
                    "--max-in-flight",
                    "--kubeconfig",
                ],
                not: &["--timeline"],
            },
            Case {
                path: &["sim", "scenario"],
                want: &["<FILE>", "--timeline", "--report", "--seed"],
                not: &["--nodes"],
            },
        ] {
            let text = help(case.path);
            for flag in case.want {
                assert!(
                    text.contains(flag),
                    "{:?} help lacks {flag}:\n{text}",
                    case.path
                );
            }
            for flag in case.not {
                assert!(
                    !text.contains(flag),
                    "{:?} help has {flag}:\n{text}",
                    case.path
                );
            }
        }
    }
}
