//! The row printer of policy/v1 PodDisruptionBudgets: a port of
//! `printPodDisruptionBudget` (`pkg/printers/internalversion/printers.go`)
//! over v1 JSON; absent fields read as Go zero values.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::printers::{PrintedRow, age};
use crate::json_path::{i64_at, str_at};

/// An int-or-string as `IntOrString.String()` prints it, or "N/A" unset.
fn int_or_string(value: Option<&Value>) -> String {
    match value {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

/// `printPodDisruptionBudget`: NAME MIN AVAILABLE MAX UNAVAILABLE
/// ALLOWED DISRUPTIONS AGE.
pub fn print_pod_disruption_budget(pdb: &Value, now: Timestamp) -> PrintedRow {
    let spec = pdb.get("spec");
    PrintedRow::new(vec![
        json!(str_at(pdb, &["metadata", "name"])),
        json!(int_or_string(spec.and_then(|s| s.get("minAvailable")))),
        json!(int_or_string(spec.and_then(|s| s.get("maxUnavailable")))),
        json!(i64_at(pdb, &["status", "disruptionsAllowed"])),
        json!(age(pdb, now)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_now as now;

    /// Upstream `TestPrintPodDisruptionBudget`, as cells.
    #[test]
    fn pod_disruption_budgets_print_upstreams_cells() {
        struct Case {
            name: &'static str,
            pdb: Value,
            want: Value,
        }
        let cases = [
            Case {
                name: "minAvailable as an integer",
                pdb: json!({"metadata": {"name": "pdb1", "namespace": "ns1",
                                         "creationTimestamp": "2024-05-31T12:00:00Z"},
                            "spec": {"minAvailable": 22},
                            "status": {"disruptionsAllowed": 5}}),
                want: json!(["pdb1", "22", "N/A", 5, "24h"]),
            },
            Case {
                name: "maxUnavailable as a percentage",
                pdb: json!({"metadata": {"name": "pdb2", "namespace": "ns2",
                                         "creationTimestamp": "2024-05-31T12:00:00Z"},
                            "spec": {"maxUnavailable": "11%"},
                            "status": {"disruptionsAllowed": 5}}),
                want: json!(["pdb2", "N/A", "11%", 5, "24h"]),
            },
            Case {
                name: "no status yet",
                pdb: json!({"metadata": {"name": "pdb3"}, "spec": {}}),
                want: json!(["pdb3", "N/A", "N/A", 0, "<unknown>"]),
            },
        ];
        for Case { name, pdb, want } in cases {
            let row = print_pod_disruption_budget(&pdb, now());
            assert_eq!(json!(row.cells), want, "{name}");
        }
    }
}
