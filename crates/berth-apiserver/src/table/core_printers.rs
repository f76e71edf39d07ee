//! The row printers of the common core types, ports of upstream's
//! `printConfigMap`, `printSecret`, `printServiceAccount`, `printService`,
//! `printEndpoints`, `printEndpointSlice` and `printResourceQuota`
//! (`pkg/printers/internalversion/printers.go`) over v1 JSON. Absent
//! fields read as Go zero values.

use std::collections::BTreeSet;

use berth_core::quantity::Quantity;
use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::printers::{PrintedRow, age};
use crate::json_path::{arr_at, at, i64_at, str_at};

/// `loadBalancerWidth`: a LoadBalancer's addresses are cut to this
/// outside `-o wide`.
const LOAD_BALANCER_WIDTH: usize = 16;

fn map_len(object: &Value, field: &str) -> i64 {
    at(object, &[field])
        .and_then(Value::as_object)
        .map_or(0, |m| i64::try_from(m.len()).unwrap_or(i64::MAX))
}

fn name(object: &Value) -> Value {
    json!(str_at(object, &["metadata", "name"]))
}

/// `printConfigMap`: NAME DATA AGE (data counts binaryData too).
pub fn print_config_map(config_map: &Value, now: Timestamp) -> PrintedRow {
    let data = map_len(config_map, "data") + map_len(config_map, "binaryData");
    PrintedRow::new(vec![
        name(config_map),
        json!(data),
        json!(age(config_map, now)),
    ])
}

/// `printSecret`: NAME TYPE DATA AGE.
pub fn print_secret(secret: &Value, now: Timestamp) -> PrintedRow {
    PrintedRow::new(vec![
        name(secret),
        json!(str_at(secret, &["type"])),
        json!(map_len(secret, "data")),
        json!(age(secret, now)),
    ])
}

/// `printServiceAccount`: NAME SECRETS AGE.
pub fn print_service_account(account: &Value, now: Timestamp) -> PrintedRow {
    let secrets = i64::try_from(arr_at(account, &["secrets"]).len()).unwrap_or(i64::MAX);
    PrintedRow::new(vec![
        name(account),
        json!(secrets),
        json!(age(account, now)),
    ])
}

/// `labels.FormatLabels`: `k=v` pairs in key order, or `<none>`.
fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// `loadBalancerStatusStringer`: the ingress IPs (or hostnames), sorted
/// and unique, cut to 16 characters outside `-o wide`.
fn load_balancer_addresses(service: &Value, wide: bool) -> String {
    let addresses: BTreeSet<&str> = arr_at(service, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|ingress| match str_at(ingress, &["ip"]) {
            "" => str_at(ingress, &["hostname"]),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    let joined = addresses.into_iter().collect::<Vec<_>>().join(",");
    if !wide && joined.len() > LOAD_BALANCER_WIDTH {
        format!("{}...", &joined[..LOAD_BALANCER_WIDTH - 3])
    } else {
        joined
    }
}

/// `getServiceExternalIP`.
fn external_ip(service: &Value, wide: bool) -> String {
    let external: Vec<&str> = arr_at(service, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match str_at(service, &["spec", "type"]) {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let balancer = load_balancer_addresses(service, wide);
            if !external.is_empty() {
                let mut all: Vec<&str> = balancer.split(',').filter(|a| !a.is_empty()).collect();
                all.extend(external);
                all.join(",")
            } else if !balancer.is_empty() {
                balancer
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => str_at(service, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".into(),
    }
}

/// `makePortString`: `port/protocol`, or `port:nodePort/protocol`.
fn ports(service: &Value) -> String {
    let ports: Vec<String> = arr_at(service, &["spec", "ports"])
        .iter()
        .map(|p| {
            let (port, node_port) = (i64_at(p, &["port"]), i64_at(p, &["nodePort"]));
            let protocol = str_at(p, &["protocol"]);
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    }
}

/// `printService`: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, wide
/// SELECTOR.
pub fn print_service(service: &Value, wide: bool, now: Timestamp) -> PrintedRow {
    let cluster_ip = arr_at(service, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let mut cells = vec![
        name(service),
        json!(str_at(service, &["spec", "type"])),
        json!(cluster_ip),
        json!(external_ip(service, wide)),
        json!(ports(service)),
        json!(age(service, now)),
    ];
    if wide {
        let selector = at(service, &["spec", "selector"]).and_then(Value::as_object);
        cells.push(json!(format_labels(selector)));
    }
    PrintedRow::new(cells)
}

/// At most three items, then `+ N more...`; `<unset>` for none
/// (`listWithMoreString`). `count` is every item, listed or not.
fn list_with_more(list: &[String], count: usize, empty: &str) -> String {
    const MAX: usize = 3;
    let shown = list.iter().take(MAX).cloned().collect::<Vec<_>>().join(",");
    if count > MAX {
        format!("{shown} + {} more...", count - MAX)
    } else if shown.is_empty() {
        empty.to_string()
    } else {
        shown
    }
}

/// `formatEndpoints` for all ports: `ip:port` per address and port (just
/// `ip` for a subset without ports).
fn endpoints(object: &Value) -> String {
    let subsets = arr_at(object, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".into();
    }
    let mut list = Vec::new();
    let mut count = 0;
    for subset in subsets {
        let addresses: Vec<&str> = arr_at(subset, &["addresses"])
            .iter()
            .map(|a| str_at(a, &["ip"]))
            .collect();
        let ports = arr_at(subset, &["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            list.extend(addresses.iter().map(ToString::to_string));
            continue;
        }
        for port in ports {
            count += addresses.len();
            let port = i64_at(port, &["port"]);
            list.extend(addresses.iter().map(|ip| match ip.contains(':') {
                true => format!("[{ip}]:{port}"),
                false => format!("{ip}:{port}"),
            }));
        }
    }
    list_with_more(&list, count, "")
}

/// `printEndpoints`: NAME ENDPOINTS AGE.
pub fn print_endpoints(object: &Value, now: Timestamp) -> PrintedRow {
    PrintedRow::new(vec![
        name(object),
        json!(endpoints(object)),
        json!(age(object, now)),
    ])
}

/// `printEndpointSlice`: NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
pub fn print_endpoint_slice(slice: &Value, now: Timestamp) -> PrintedRow {
    let ports: Vec<String> = arr_at(slice, &["ports"])
        .iter()
        .map(
            |p| match (at(p, &["port"]).and_then(Value::as_i64), at(p, &["name"])) {
                (Some(port), _) => port.to_string(),
                (None, Some(Value::String(name))) => name.clone(),
                _ => "*".into(),
            },
        )
        .collect();
    let addresses: Vec<String> = arr_at(slice, &["endpoints"])
        .iter()
        .flat_map(|e| arr_at(e, &["addresses"]))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    PrintedRow::new(vec![
        name(slice),
        json!(str_at(slice, &["addressType"])),
        json!(list_with_more(&ports, ports.len(), "<unset>")),
        json!(list_with_more(&addresses, addresses.len(), "<unset>")),
        json!(age(slice, now)),
    ])
}

/// A quantity as Go's `Quantity.String` prints it (as sent if it does not
/// parse; the API refuses those).
fn quantity(value: Option<&Value>) -> String {
    let text = value.and_then(Value::as_str).unwrap_or("0");
    Quantity::parse(text).map_or_else(|_| text.to_string(), |q| q.to_string())
}

/// `printResourceQuota`: NAME REQUEST LIMIT AGE; each hard limit of the
/// status as `name: used/hard`, `limits.*` under LIMIT, the rest under
/// REQUEST.
pub fn print_resource_quota(quota: &Value, now: Timestamp) -> PrintedRow {
    let hard = at(quota, &["status", "hard"]).and_then(Value::as_object);
    let used = at(quota, &["status", "used"]);
    let mut request = Vec::new();
    let mut limit = Vec::new();
    for (resource, hard_value) in hard.into_iter().flatten() {
        let used_value = used.and_then(|u| u.get(resource));
        let entry = format!(
            "{resource}: {}/{}",
            quantity(used_value),
            quantity(Some(hard_value))
        );
        let is_limit = resource
            .split_once('.')
            .is_some_and(|(first, _)| first == "limits");
        if is_limit {
            limit.push(entry)
        } else {
            request.push(entry)
        }
    }
    PrintedRow::new(vec![
        name(quota),
        json!(request.join(", ")),
        json!(limit.join(", ")),
        json!(age(quota, now)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::table::test_now as now;

    fn meta(name: &str) -> Value {
        json!({"name": name, "creationTimestamp": "2024-06-01T11:00:00Z"})
    }

    /// Upstream's `TestPrintService`, `TestPrintServiceLoadBalancer` and
    /// friends, by service type.
    #[test]
    fn services_print_as_upstream() {
        struct Case {
            name: &'static str,
            spec: Value,
            status: Value,
            wide: bool,
            want: Value,
        }
        let cases = [
            Case {
                name: "ClusterIP",
                spec: json!({"type": "ClusterIP", "clusterIPs": ["10.96.0.1"], "ports": [{"port": 443, "protocol": "TCP"}]}),
                status: json!({}),
                wide: false,
                want: json!(["svc", "ClusterIP", "10.96.0.1", "<none>", "443/TCP", "60m"]),
            },
            Case {
                name: "NodePort with two ports, wide",
                spec: json!({"type": "NodePort", "clusterIPs": ["10.9.8.7"], "selector": {"b": "2", "a": "1"},
                             "ports": [{"port": 8888, "nodePort": 30800, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}),
                status: json!({}),
                wide: true,
                want: json!([
                    "svc",
                    "NodePort",
                    "10.9.8.7",
                    "<none>",
                    "8888:30800/TCP,53/UDP",
                    "60m",
                    "a=1,b=2"
                ]),
            },
            Case {
                name: "headless, no ports",
                spec: json!({"type": "ClusterIP", "clusterIPs": ["None"]}),
                status: json!({}),
                wide: false,
                want: json!(["svc", "ClusterIP", "None", "<none>", "<none>", "60m"]),
            },
            Case {
                name: "ExternalName",
                spec: json!({"type": "ExternalName", "externalName": "db.example.com"}),
                status: json!({}),
                wide: false,
                want: json!([
                    "svc",
                    "ExternalName",
                    "<none>",
                    "db.example.com",
                    "<none>",
                    "60m"
                ]),
            },
            Case {
                name: "LoadBalancer pending",
                spec: json!({"type": "LoadBalancer", "clusterIPs": ["10.9.8.7"], "ports": [{"port": 80, "nodePort": 31000, "protocol": "TCP"}]}),
                status: json!({}),
                wide: false,
                want: json!([
                    "svc",
                    "LoadBalancer",
                    "10.9.8.7",
                    "<pending>",
                    "80:31000/TCP",
                    "60m"
                ]),
            },
            Case {
                name: "LoadBalancer with addresses, cut",
                spec: json!({"type": "LoadBalancer", "clusterIPs": ["10.9.8.7"], "externalIPs": ["80.11.12.11"]}),
                status: json!({"loadBalancer": {"ingress": [{"ip": "3.4.5.6"}, {"ip": "2.3.4.5"}, {"hostname": "lb.example.com"}]}}),
                wide: false,
                want: json!([
                    "svc",
                    "LoadBalancer",
                    "10.9.8.7",
                    "2.3.4.5,3.4.5...,80.11.12.11",
                    "<none>",
                    "60m"
                ]),
            },
            Case {
                name: "ClusterIP with external IPs",
                spec: json!({"type": "ClusterIP", "clusterIPs": ["10.9.8.7"], "externalIPs": ["1.2.3.4", "5.6.7.8"], "ports": [{"port": 80, "protocol": "TCP"}]}),
                status: json!({}),
                wide: false,
                want: json!([
                    "svc",
                    "ClusterIP",
                    "10.9.8.7",
                    "1.2.3.4,5.6.7.8",
                    "80/TCP",
                    "60m"
                ]),
            },
        ];
        for case in cases {
            let service =
                json!({"metadata": meta("svc"), "spec": case.spec, "status": case.status});
            assert_eq!(
                json!(print_service(&service, case.wide, now()).cells),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn config_and_accounts_print_their_counts() {
        let config_map = json!({"metadata": meta("cm"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(
            json!(print_config_map(&config_map, now()).cells),
            json!(["cm", 3, "60m"])
        );
        let secret = json!({"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            json!(print_secret(&secret, now()).cells),
            json!(["s", "kubernetes.io/tls", 2, "60m"])
        );
        let account = json!({"metadata": meta("default")});
        assert_eq!(
            json!(print_service_account(&account, now()).cells),
            json!(["default", 0, "60m"])
        );
    }

    /// Upstream's `TestPrintEndpoint` and `TestPrintEndpointSlice`.
    #[test]
    fn endpoints_print_at_most_three() {
        struct Case {
            name: &'static str,
            object: Value,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "none",
                object: json!({"subsets": []}),
                want: "<none>",
            },
            Case {
                name: "one address, one port",
                object: json!({"subsets": [{"addresses": [{"ip": "1.2.3.4"}], "ports": [{"port": 8001}]}]}),
                want: "1.2.3.4:8001",
            },
            Case {
                name: "headless without ports",
                object: json!({"subsets": [{"addresses": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8"}]}]}),
                want: "1.2.3.4,5.6.7.8",
            },
            Case {
                name: "more than three",
                object: json!({"subsets": [{"addresses": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8"}], "ports": [{"port": 8001}, {"port": 8002}]}]}),
                want: "1.2.3.4:8001,5.6.7.8:8001,1.2.3.4:8002 + 1 more...",
            },
            Case {
                name: "IPv6",
                object: json!({"subsets": [{"addresses": [{"ip": "2001:db8::1"}], "ports": [{"port": 443}]}]}),
                want: "[2001:db8::1]:443",
            },
        ];
        for case in cases {
            let mut object = case.object;
            object["metadata"] = meta("ep");
            assert_eq!(
                print_endpoints(&object, now()).cells[1],
                json!(case.want),
                "{}",
                case.name
            );
        }
        let slice = json!({"metadata": meta("web-x1"), "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "http"}, {}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]}]});
        assert_eq!(
            json!(print_endpoint_slice(&slice, now()).cells),
            json!([
                "web-x1",
                "IPv4",
                "80,http,*",
                "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
                "60m"
            ])
        );
        let empty = json!({"metadata": meta("e"), "addressType": "IPv6"});
        assert_eq!(
            print_endpoint_slice(&empty, now()).cells[2],
            json!("<unset>")
        );
    }

    #[test]
    fn quotas_print_used_over_hard_by_column() {
        let quota = json!({"metadata": meta("compute"),
            "status": {"hard": {"limits.cpu": "2", "pods": "10", "requests.memory": "1Gi"},
                       "used": {"limits.cpu": "500m", "pods": "3"}}});
        assert_eq!(
            json!(print_resource_quota(&quota, now()).cells),
            json!([
                "compute",
                "pods: 3/10, requests.memory: 0/1Gi",
                "limits.cpu: 500m/2",
                "60m"
            ])
        );
    }
}
