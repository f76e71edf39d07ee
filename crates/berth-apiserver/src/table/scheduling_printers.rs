//! The row printer of scheduling.k8s.io PriorityClasses: a port of
//! `printPriorityClass` (`pkg/printers/internalversion/printers.go`) over
//! v1 JSON; absent fields read as Go zero values.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::printers::{PrintedRow, age};
use crate::json_path::{bool_at, i64_at, str_at};

/// `printPriorityClass`: NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY.
pub fn print_priority_class(class: &Value, now: Timestamp) -> PrintedRow {
    PrintedRow::new(vec![
        json!(str_at(class, &["metadata", "name"])),
        json!(i64_at(class, &["value"])),
        json!(bool_at(class, &["globalDefault"])),
        json!(age(class, now)),
        json!(str_at(class, &["preemptionPolicy"])),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_now as now;

    /// Upstream `TestPrintPriorityClass`, as cells.
    #[test]
    fn priority_classes_print_upstreams_cells() {
        struct Case {
            name: &'static str,
            class: Value,
            want: Value,
        }
        let cases = [
            Case {
                name: "a default class",
                class: json!({"metadata": {"name": "pc1",
                                           "creationTimestamp": "2024-05-31T12:00:00Z"},
                              "value": 1, "globalDefault": true,
                              "preemptionPolicy": "PreemptLowerPriority"}),
                want: json!(["pc1", 1, true, "24h", "PreemptLowerPriority"]),
            },
            Case {
                name: "absent fields print as zero values",
                class: json!({"metadata": {"name": "pc2"}, "value": 1_000_000_000}),
                want: json!(["pc2", 1_000_000_000, false, "<unknown>", ""]),
            },
        ];
        for Case { name, class, want } in cases {
            let row = print_priority_class(&class, now());
            assert_eq!(json!(row.cells), want, "{name}");
        }
    }
}
