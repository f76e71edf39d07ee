//! The shared parts of berth's fuzzing harness (proptest-driven fuzz tests
//! that run in CI, `tests/fuzz.rs` of each crate that parses outside
//! input): one configuration, one time bound, and the input strategies.
//!
//! Every target checks the same contract: no panic, at most
//! [`PER_INPUT`] per input, and for bad input a clear refusal (a typed
//! error, a 4xx at the API), never a crash or a 5xx.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// The time any one input may take (generous: a debug build on a shared
/// 2-core machine; real inputs take micro- to milliseconds).
pub const PER_INPUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `cases` cases from a fixed seed: CI runs the same inputs every time, so
/// a failure is reproducible from the test's name alone; change the seed
/// by hand to explore further.
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(18),
        failure_persistence: None,
        ..Config::default()
    }
}

/// One of `seeds` with up to 8 random edits: a character from `alphabet`
/// inserted or replacing one, or a character deleted.
pub fn mutated(seeds: Vec<String>, alphabet: &str) -> impl Strategy<Value = String> + use<> {
    let chars: Vec<char> = alphabet.chars().collect();
    (
        prop::sample::select(seeds),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                0..3u8,
                prop::sample::select(chars),
            ),
            0..8,
        ),
    )
        .prop_map(|(seed, edits)| {
            let mut text: Vec<char> = seed.chars().collect();
            for (at, op, c) in edits {
                let i = at.index(text.len() + 1);
                match op {
                    0 => text.insert(i, c),
                    1 if i < text.len() => {
                        text.remove(i);
                    }
                    _ if i < text.len() => text[i] = c,
                    _ => text.push(c),
                }
            }
            text.into_iter().collect()
        })
}

/// Text of up to `len` characters from `alphabet`.
pub fn text_over(alphabet: &str, len: usize) -> impl Strategy<Value = String> + use<> {
    let chars: Vec<char> = alphabet.chars().collect();
    prop::collection::vec(prop::sample::select(chars), 0..len).prop_map(|c| c.into_iter().collect())
}

/// Static seeds as owned strings, for [`mutated`].
pub fn seeds(seeds: &[&str]) -> Vec<String> {
    seeds.iter().map(|s| s.to_string()).collect()
}
