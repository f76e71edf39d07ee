//! The fuzzing harness's target for scenario files (issue 18): the example
//! scenarios with random edits, and random YAML, through
//! `scenario::parse`. No panic, bounded time per input, and a refusal is a
//! `file:line:column: problem` error. The shared contract and strategies
//! are [`berth_core::fuzz`].

use std::path::PathBuf;

use berth_core::fuzz::{PER_INPUT, config, mutated, text_over};
use berth_sim::scenario;
use proptest::prelude::*;

const CASES: u32 = 1_500;

/// The seed corpus: every example scenario.
fn examples() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let mut texts: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .collect();
    texts.sort();
    assert!(texts.len() >= 7, "example scenarios in {}", dir.display());
    texts
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn scenario_files_parse_or_are_refused_with_a_place(
        text in prop_oneof![
            mutated(examples(), " \n-:[]{},&*'\"#0123456789msh.abcNoExecute"),
            text_over(" \n-:[]{}&*abc019", 200),
        ],
    ) {
        let started = std::time::Instant::now();
        if let Err(e) = scenario::parse("fuzz.yaml", &text) {
            prop_assert_eq!(&e.file, "fuzz.yaml");
            prop_assert!(!e.message.is_empty());
            prop_assert!(e.to_string().starts_with("fuzz.yaml:"), "{}", e);
        }
        prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
    }
}
