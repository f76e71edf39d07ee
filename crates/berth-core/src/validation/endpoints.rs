//! Endpoints and EndpointSlices, stored as sent but checked as upstream
//! checks them: `validateEndpointSubsets` (an address or a not-ready
//! address in every subset, each a valid IP that is not special, named
//! ports when there are several) and the EndpointSlice's address type and
//! addresses (`pkg/apis/discovery/validation`, the address rules).

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, Endpoints};
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::ip::{is_valid_ip, parse_ip_sloppy, validate_non_special_ip};
use super::names::{is_dns1123_label, is_dns1123_subdomain};
use super::ports::validate_named_port;
use super::{ErrorList, FieldError, Path};

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
/// `maxAddresses` of an EndpointSlice endpoint.
const MAX_ADDRESSES: usize = 100;

/// `ValidateEndpoints` without the metadata.
pub fn validate_endpoints(endpoints: &Endpoints) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("subsets");
    for (i, subset) in endpoints.subsets.iter().flatten().enumerate() {
        let path = path.index(i);
        let ready = subset.addresses.as_deref().unwrap_or_default();
        let not_ready = subset.not_ready_addresses.as_deref().unwrap_or_default();
        if ready.is_empty() && not_ready.is_empty() {
            errs.push(FieldError::required(
                &path,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (field, addresses) in [("addresses", ready), ("notReadyAddresses", not_ready)] {
            for (j, address) in addresses.iter().enumerate() {
                errs.extend(validate_address(address, &path.child(field).index(j)));
            }
        }
        let ports = subset.ports.as_deref().unwrap_or_default();
        for (j, port) in ports.iter().enumerate() {
            errs.extend(validate_port(
                port,
                ports.len() > 1,
                &path.child("ports").index(j),
            ));
        }
    }
    errs
}

fn validate_address(address: &EndpointAddress, path: &Path) -> ErrorList {
    let ip_path = path.child("ip");
    let mut errs = is_valid_ip(&ip_path, &address.ip);
    if let Some(hostname) = address.hostname.as_deref().filter(|h| !h.is_empty()) {
        for problem in is_dns1123_label(hostname) {
            errs.push(FieldError::invalid(
                &path.child("hostname"),
                hostname,
                problem,
            ));
        }
    }
    if let Some(node) = &address.node_name {
        for problem in is_dns1123_subdomain(node) {
            errs.push(FieldError::invalid(
                &path.child("nodeName"),
                node.as_str(),
                problem,
            ));
        }
    }
    errs.extend(validate_non_special_ip(&ip_path, &address.ip));
    errs
}

fn validate_port(port: &EndpointPort, require_name: bool, path: &Path) -> ErrorList {
    let (name, protocol) = (port.name.as_deref(), port.protocol.as_deref());
    validate_named_port(name, require_name, port.port, protocol, None, path)
}

/// An EndpointSlice's address type, and each endpoint's addresses (one to
/// a hundred, of that type).
pub fn validate_endpoint_slice(slice: &EndpointSlice) -> ErrorList {
    let mut errs = ErrorList::new();
    let address_type = slice.address_type.as_str();
    if !ADDRESS_TYPES.contains(&address_type) {
        errs.push(FieldError::not_supported(
            &Path::new("addressType"),
            address_type,
            ADDRESS_TYPES,
        ));
    }
    for (i, endpoint) in slice.endpoints.iter().flatten().enumerate() {
        let path = Path::new("endpoints").index(i).child("addresses");
        match endpoint.addresses.len() {
            0 => errs.push(FieldError::required(
                &path,
                "must contain at least 1 address",
            )),
            n if n > MAX_ADDRESSES => {
                errs.push(FieldError::too_many(&path, Some(n), Some(MAX_ADDRESSES)));
            }
            _ => {}
        }
        for (j, address) in endpoint.addresses.iter().enumerate() {
            let path = path.index(j);
            let ip = parse_ip_sloppy(address);
            match address_type {
                "IPv4" if !ip.is_some_and(|ip| ip.is_ipv4()) => {
                    errs.push(FieldError::invalid(
                        &path,
                        address.as_str(),
                        "must be a valid IPv4 address",
                    ));
                }
                "IPv6" if !ip.is_some_and(|ip| ip.is_ipv6()) => {
                    errs.push(FieldError::invalid(
                        &path,
                        address.as_str(),
                        "must be a valid IPv6 address",
                    ));
                }
                "FQDN" => {
                    for problem in is_dns1123_subdomain(address) {
                        errs.push(FieldError::invalid(&path, address.as_str(), problem));
                    }
                }
                _ => {}
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::EndpointSubset;
    use k8s_openapi::api::discovery::v1::Endpoint;

    fn address(ip: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            ..EndpointAddress::default()
        }
    }

    fn port(name: &str, number: i32) -> EndpointPort {
        EndpointPort {
            name: Some(name.to_string()).filter(|n| !n.is_empty()),
            port: number,
            protocol: Some("TCP".into()),
            ..EndpointPort::default()
        }
    }

    /// Upstream's `TestValidateEndpointsCreate`, the subset rows.
    #[test]
    fn endpoint_subsets_as_upstream() {
        struct Case {
            name: &'static str,
            subset: EndpointSubset,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "valid",
                subset: EndpointSubset {
                    addresses: Some(vec![address("10.10.1.1")]),
                    ports: Some(vec![port("a", 8675), port("b", 309)]),
                    ..EndpointSubset::default()
                },
                want: &[],
            },
            Case {
                name: "no addresses",
                subset: EndpointSubset {
                    ports: Some(vec![port("", 80)]),
                    ..EndpointSubset::default()
                },
                want: &[
                    "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
                ],
            },
            Case {
                name: "loopback address",
                subset: EndpointSubset {
                    addresses: Some(vec![address("127.0.0.1")]),
                    ..EndpointSubset::default()
                },
                want: &[
                    "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                ],
            },
            Case {
                name: "bad address",
                subset: EndpointSubset {
                    not_ready_addresses: Some(vec![address("[2001:db8::1]")]),
                    ..EndpointSubset::default()
                },
                want: &[
                    "subsets[0].notReadyAddresses[0].ip: Invalid value: \"[2001:db8::1]\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    "subsets[0].notReadyAddresses[0].ip: Invalid value: \"[2001:db8::1]\": must be a valid IP address",
                ],
            },
            Case {
                name: "unnamed port among several",
                subset: EndpointSubset {
                    addresses: Some(vec![address("10.10.1.1")]),
                    ports: Some(vec![port("", 80), port("b", 81)]),
                    ..EndpointSubset::default()
                },
                want: &["subsets[0].ports[0].name: Required value"],
            },
            Case {
                name: "bad port",
                subset: EndpointSubset {
                    addresses: Some(vec![address("10.10.1.1")]),
                    ports: Some(vec![EndpointPort {
                        protocol: Some("BAD".into()),
                        ..port("a", 0)
                    }]),
                    ..EndpointSubset::default()
                },
                want: &[
                    "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                    "subsets[0].ports[0].protocol: Unsupported value: \"BAD\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ],
            },
        ];
        for case in cases {
            let endpoints = Endpoints {
                subsets: Some(vec![case.subset]),
                ..Endpoints::default()
            };
            let got: Vec<String> = validate_endpoints(&endpoints)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn endpoint_slices_check_their_address_type() {
        let slice = |address_type: &str, addresses: &[&str]| EndpointSlice {
            address_type: address_type.into(),
            endpoints: Some(vec![Endpoint {
                addresses: addresses.iter().map(ToString::to_string).collect(),
                ..Endpoint::default()
            }]),
            ..EndpointSlice::default()
        };
        let got = |s: EndpointSlice| -> Vec<String> {
            validate_endpoint_slice(&s)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert!(got(slice("IPv4", &["10.0.0.1"])).is_empty());
        assert!(got(slice("FQDN", &["db.example.com"])).is_empty());
        assert_eq!(
            got(slice("IPv6", &["10.0.0.1"])),
            [
                "endpoints[0].addresses[0]: Invalid value: \"10.0.0.1\": must be a valid IPv6 address"
            ]
        );
        assert_eq!(
            got(slice("IPv5", &[])),
            [
                "addressType: Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"",
                "endpoints[0].addresses: Required value: must contain at least 1 address",
            ]
        );
    }
}
