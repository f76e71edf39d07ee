//! IP addresses and CIDRs as the API validates them: apimachinery's
//! `IsValidIP` and `IsValidCIDR` (over `netutils.ParseIPSloppy`, which reads
//! IPv4 octets with leading zeros as decimal) and core validation's
//! `ValidateNonSpecialIP`, with upstream's messages.

use std::net::{IpAddr, Ipv4Addr};

use super::{ErrorList, FieldError, Path};

/// `netutils.ParseIPSloppy`: an IPv4 or IPv6 address; IPv4 octets may have
/// leading zeros, which read as decimal (Go's `net.ParseIP` before 1.17).
pub fn parse_ip_sloppy(value: &str) -> Option<IpAddr> {
    if value.contains(':') {
        return value.parse().ok();
    }
    let mut octets = [0u8; 4];
    let mut parts = value.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// `validation.IsValidIP`.
pub fn is_valid_ip(path: &Path, value: &str) -> ErrorList {
    match parse_ip_sloppy(value) {
        Some(_) => ErrorList::new(),
        None => vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )],
    }
}

/// `validation.IsValidCIDR`: an address, `/`, a prefix length that fits it.
pub fn is_valid_cidr(path: &Path, value: &str) -> ErrorList {
    let valid = value.split_once('/').is_some_and(|(ip, bits)| {
        let max = match parse_ip_sloppy(ip) {
            Some(IpAddr::V4(_)) => 32,
            Some(IpAddr::V6(_)) => 128,
            None => return false,
        };
        !bits.is_empty()
            && bits.bytes().all(|b| b.is_ascii_digit())
            && bits.parse::<u32>().is_ok_and(|b| b <= max)
    });
    if valid {
        ErrorList::new()
    } else {
        vec![FieldError::invalid(
            path,
            value,
            "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        )]
    }
}

/// `ValidateNonSpecialIP`: an address a Service or endpoint may name, not
/// unspecified, loopback or link-local (those mean something on every node).
pub fn validate_non_special_ip(path: &Path, value: &str) -> ErrorList {
    let Some(ip) = parse_ip_sloppy(value) else {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address",
        )];
    };
    // Go checks an IPv4-mapped IPv6 address as the IPv4 address it maps.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let (unspecified, loopback, link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            (
                v4.is_unspecified(),
                v4.is_loopback(),
                v4.is_link_local(),
                a == 224 && b == 0 && c == 0,
            )
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                first & 0xffc0 == 0xfe80,
                first & 0xff0f == 0xff02,
            )
        }
    };
    let mut errs = ErrorList::new();
    if unspecified {
        errs.push(FieldError::invalid(
            path,
            value,
            format!("may not be unspecified ({value})"),
        ));
    }
    if loopback {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    if link_local {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_multicast {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `TestIsValidIP` (sloppy parsing) and `TestIsValidCIDR`.
    #[test]
    fn ips_and_cidrs_as_upstream() {
        struct Case {
            value: &'static str,
            valid: bool,
        }
        let ips = [
            Case {
                value: "1.1.1.1",
                valid: true,
            },
            Case {
                value: "1.1.1.01",
                valid: true,
            },
            Case {
                value: "255.0.0.1",
                valid: true,
            },
            Case {
                value: "1.0.0.0",
                valid: true,
            },
            Case {
                value: "0.0.0.0",
                valid: true,
            },
            Case {
                value: "::",
                valid: true,
            },
            Case {
                value: "2001:4860:4860::8888",
                valid: true,
            },
            Case {
                value: "::fff:1.1.1.1",
                valid: true,
            },
            Case {
                value: "",
                valid: false,
            },
            Case {
                value: "1.2.3",
                valid: false,
            },
            Case {
                value: "1.2.3.4.5",
                valid: false,
            },
            Case {
                value: "256.1.1.1",
                valid: false,
            },
            Case {
                value: "1.1.1.1/24",
                valid: false,
            },
            Case {
                value: "a.b.c.d",
                valid: false,
            },
            Case {
                value: "1.1.1.1 ",
                valid: false,
            },
            Case {
                value: ":::",
                valid: false,
            },
        ];
        let path = Path::new("ip");
        for case in ips {
            assert_eq!(
                is_valid_ip(&path, case.value).is_empty(),
                case.valid,
                "{:?}",
                case.value
            );
        }
        let cidrs = [
            Case {
                value: "192.168.0.0/16",
                valid: true,
            },
            Case {
                value: "10.96.0.0/12",
                valid: true,
            },
            Case {
                value: "::1/128",
                valid: true,
            },
            Case {
                value: "2001:db8::/64",
                valid: true,
            },
            Case {
                value: "10.0.0.0/33",
                valid: false,
            },
            Case {
                value: "10.0.0.0",
                valid: false,
            },
            Case {
                value: "10.0.0.0/",
                valid: false,
            },
            Case {
                value: "2001:db8::/129",
                valid: false,
            },
        ];
        for case in cidrs {
            assert_eq!(
                is_valid_cidr(&path, case.value).is_empty(),
                case.valid,
                "{:?}",
                case.value
            );
        }
        assert_eq!(
            is_valid_ip(&path, "nope")[0].to_string(),
            "ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        );
    }

    /// Upstream's `TestValidateNonSpecialIP`.
    #[test]
    fn special_ips_are_refused_as_upstream() {
        struct Case {
            ip: &'static str,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                ip: "10.0.0.1",
                want: &[],
            },
            Case {
                ip: "2001:db8::1",
                want: &[],
            },
            Case {
                ip: "0.0.0.0",
                want: &["may not be unspecified (0.0.0.0)"],
            },
            Case {
                ip: "::",
                want: &["may not be unspecified (::)"],
            },
            Case {
                ip: "127.0.0.1",
                want: &["may not be in the loopback range (127.0.0.0/8, ::1/128)"],
            },
            Case {
                ip: "::1",
                want: &["may not be in the loopback range (127.0.0.0/8, ::1/128)"],
            },
            Case {
                ip: "169.254.169.254",
                want: &["may not be in the link-local range (169.254.0.0/16, fe80::/10)"],
            },
            Case {
                ip: "fe80::1",
                want: &["may not be in the link-local range (169.254.0.0/16, fe80::/10)"],
            },
            Case {
                ip: "224.0.0.1",
                want: &["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"],
            },
            Case {
                ip: "ff02::1",
                want: &["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"],
            },
            Case {
                ip: "::ffff:127.0.0.1",
                want: &["may not be in the loopback range (127.0.0.0/8, ::1/128)"],
            },
            Case {
                ip: "bogus",
                want: &["must be a valid IP address"],
            },
        ];
        for case in cases {
            let got: Vec<String> = validate_non_special_ip(&Path::new("ip"), case.ip)
                .into_iter()
                .map(|e| e.detail)
                .collect();
            assert_eq!(got, case.want, "{}", case.ip);
        }
    }
}
