//! `/ui/api/zones`: each zone's disruption state and the rate the node
//! lifecycle controller taints its nodes at, computed by berth-core's
//! zone rule (`zones_now`, the controller's `ComputeZoneState` and rate
//! choice) with the controller's own rates (`--node-eviction-rate` ...,
//! which `berth server` passes in `ApiConfig::zone_rates`). The page asks
//! again when a node's Ready condition or zone changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::response::Response;
use berth_core::zone::{
    ZoneRates, excluded_from_disruption, ready_status, zone_display, zone_key, zones_now,
};
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use super::super::response::json_response;
use super::super::server::ApiServer;
use crate::auth::User;
use crate::cache::Cached;
use crate::resources::NODES;
use crate::status::ApiError;

impl ApiServer {
    pub(super) async fn ui_zones(&self, user: &User) -> Result<Response, ApiError> {
        super::admins_only(user, super::ZONES_PATH)?;
        let nodes = self.registry.wait_current(&NODES).await?;
        let (all, _) = nodes.list("", |_| true).await;
        let rates = self.config.zone_rates;
        let body = tokio::task::spawn_blocking(move || zones(&all, &rates))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(json_response(200, &body))
    }
}

/// The zones of `nodes` (those excluded from disruption checks left out,
/// as the controller leaves them out) and the rates they were judged by.
fn zones(nodes: &[Arc<Cached>], rates: &ZoneRates) -> Value {
    let mut ready: BTreeMap<String, Vec<Option<bool>>> = BTreeMap::new();
    for cached in nodes {
        let Ok(node) = serde_json::from_str::<Node>(&cached.json) else {
            continue;
        };
        if excluded_from_disruption(&node) {
            continue;
        }
        let status = ready_status(&node);
        ready.entry(zone_key(&node)).or_default().push(status);
    }
    let zones: Vec<Value> = zones_now(ready.iter().map(|(z, r)| (z.as_str(), r.as_slice())), rates)
        .into_iter()
        .map(|z| {
            json!({
                "zone": zone_display(&z.zone),
                "nodes": z.size,
                "notReady": z.not_ready,
                "state": z.state.as_str(),
                "evictionQps": decimal(z.qps),
            })
        })
        .collect();
    json!({
        "zones": zones,
        "rates": {
            "nodeEvictionRate": decimal(rates.eviction_qps),
            "secondaryNodeEvictionRate": decimal(rates.secondary_eviction_qps),
            "largeClusterSizeThreshold": rates.large_cluster_threshold,
            "unhealthyZoneThreshold": decimal(rates.unhealthy_zone_threshold),
        },
    })
}

/// A flag's f32 as the decimal it was given as (0.1, not the f64
/// 0.10000000149011612 a plain widening gives).
fn decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap as Map;

    fn node(name: &str, zone: &str, ready: Option<&str>, excluded: bool) -> Arc<Cached> {
        let mut labels = json!({"topology.kubernetes.io/zone": zone});
        if excluded {
            labels["node.kubernetes.io/exclude-disruption"] = json!("");
        }
        let conditions: Vec<Value> = ready
            .map(|s| json!({"type": "Ready", "status": s}))
            .into_iter()
            .collect();
        let json = json!({"metadata": {"name": name, "labels": labels}, "status": {"conditions": conditions}});
        Arc::new(Cached {
            namespace: String::new(),
            name: name.into(),
            rv: 1,
            json: json.to_string().into(),
            labels: Map::new(),
            fields: Map::new(),
        })
    }

    /// The page's zones as the controller judges them: excluded nodes not
    /// counted, a node with no Ready condition counted as not Ready.
    #[test]
    fn zones_show_each_state_and_its_tainting_rate() {
        let nodes = vec![
            node("a1", "a", Some("True"), false),
            node("a2", "a", Some("False"), false),
            node("b1", "b", Some("False"), false),
            node("b2", "b", None, false),
            node("b3", "b", Some("True"), true),
        ];
        let got = zones(&nodes, &ZoneRates::default());
        let rows: Vec<(String, u64, u64, String, f64)> = got["zones"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|z| {
                (
                    z["zone"].as_str().unwrap_or("").to_owned(),
                    z["nodes"].as_u64().unwrap_or(0),
                    z["notReady"].as_u64().unwrap_or(0),
                    z["state"].as_str().unwrap_or("").to_owned(),
                    z["evictionQps"].as_f64().unwrap_or(-1.0),
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                ("a".into(), 2, 1, "Normal".into(), 0.1),
                ("b".into(), 2, 2, "FullDisruption".into(), 0.1),
            ]
        );
        assert_eq!(got["rates"]["largeClusterSizeThreshold"], 50);
    }
}
