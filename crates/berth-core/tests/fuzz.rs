//! The fuzzing harness of berth-core's parsers of outside input (issue
//! 18): resource quantities, `kubectl taint` specs and
//! `--register-with-taints`, and Go durations (scenario files, agent
//! config, every duration flag). Each target: no panic, bounded time per
//! input, and bad input refused with a typed error whose message is not
//! empty. The shared contract and strategies are [`berth_core::fuzz`];
//! the API server's targets are in `berth-apiserver/tests/fuzz.rs`.

use berth_core::duration::parse_duration;
use berth_core::fuzz::{PER_INPUT, config, mutated, seeds, text_over};
use berth_core::quantity::Quantity;
use berth_core::taint_spec::{parse_register_with_taints, parse_taint, parse_taint_specs};
use proptest::prelude::*;

const CASES: u32 = 3_000;

fn refused_clearly<T, E: std::fmt::Display>(result: Result<T, E>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        prop_assert!(!e.to_string().is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn quantities_parse_or_are_refused(
        input in prop_oneof![
            mutated(seeds(&["100m", "1.5Gi", "-2e3", "+0.000001", "12345678901234567890123Ei", "1e-20", ".5k"]), "0123456789.+-eEinumkKMGTP "),
            text_over("0123456789.+-eEinumkKMGTP", 40),
            "[0-9]{1,400}(Ki|e[0-9]{1,5})?",
        ],
    ) {
        let started = std::time::Instant::now();
        let parsed = Quantity::parse(&input);
        if let Ok(q) = &parsed {
            // What parses prints, and what it prints parses to the same.
            let again = Quantity::parse(&q.to_string());
            prop_assert_eq!(again.as_ref().ok(), Some(q), "{}", input);
        }
        refused_clearly(parsed)?;
        prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
    }

    #[test]
    fn taint_specs_parse_or_are_refused(
        input in prop_oneof![
            mutated(seeds(&["key1=value1:NoSchedule", "dedicated:NoExecute-", "example.com/k=v:PreferNoSchedule", "k-", "a=b:NoSchedule,c:NoExecute"]), "=:-,./_aZ09 NoSchedulExcutPrf"),
            text_over("=:-,./_a9N ", 60),
        ],
    ) {
        let started = std::time::Instant::now();
        refused_clearly(parse_taint(&input))?;
        refused_clearly(parse_taint_specs(&input.split(' ').collect::<Vec<_>>()))?;
        refused_clearly(parse_register_with_taints(&input))?;
        prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
    }

    #[test]
    fn durations_parse_or_are_refused(
        input in prop_oneof![
            mutated(seeds(&["5m30s", "1h", "300ms", "-0", "1.5h", "2562047h47m16.854775807s", "9223372036854775807ns"]), "0123456789.+-nsuµmh "),
            text_over("0123456789.+-nsuµmh", 40),
        ],
    ) {
        let started = std::time::Instant::now();
        refused_clearly(parse_duration(&input))?;
        prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
    }
}
