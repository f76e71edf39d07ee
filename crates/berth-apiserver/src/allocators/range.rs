//! The ranges Services are given addresses and node ports from, and the
//! order free ones are handed out in (pure; the store is the callers').
//!
//! `--service-cluster-ip-range` ([`ServiceCidr`]) gives every address of
//! the CIDR but its first (the network address) and, for IPv4, its last
//! (the broadcast address); `--service-node-port-range` ([`PortRange`])
//! gives every port in it. As upstream's allocators do, automatic picks
//! start at a random place in the upper part of the range and only fall
//! back to its lower part (the first `min(max(16, size/16), 256)`
//! addresses, `min(max(16, size/32), 128)` ports) once the upper part is
//! full, so that addresses and ports users ask for by number (a DNS
//! Service's 10.96.0.10) are rarely taken by an automatic pick.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use berth_core::service::IpFamily;

/// `--service-cluster-ip-range`: one CIDR of one IP family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceCidr {
    /// The network address (host bits cleared).
    network: IpAddr,
    prefix: u8,
}

/// A bad `--service-cluster-ip-range` or `--service-node-port-range`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("{0:?} is not a CIDR (an address, '/', a prefix length: 10.96.0.0/12)")]
    NotCidr(String),
    #[error("{0:?}: berth gives Services addresses of one IP family; name one CIDR")]
    DualStack(String),
    #[error("{0:?} has no addresses to give (its prefix is too long)")]
    TooSmall(String),
    #[error("{0:?} is not a port range (30000-32767, 30000+2767 or one port)")]
    NotPortRange(String),
}

impl ServiceCidr {
    /// The family of its addresses.
    pub fn family(&self) -> IpFamily {
        match self.network {
            IpAddr::V4(_) => IpFamily::V4,
            IpAddr::V6(_) => IpFamily::V6,
        }
    }

    fn bits(&self) -> u32 {
        match self.network {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    fn host_bits(&self) -> u32 {
        self.bits() - u32::from(self.prefix)
    }

    fn network_number(&self) -> u128 {
        match self.network {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }

    /// Every address of the CIDR, the network and broadcast ones
    /// included (upstream's `RangeSize`), saturated at `u64::MAX`.
    fn cidr_size(&self) -> u64 {
        1u128
            .checked_shl(self.host_bits())
            .map_or(u64::MAX, |size| u64::try_from(size).unwrap_or(u64::MAX))
    }

    /// How many addresses it gives.
    pub fn size(&self) -> u64 {
        let reserved = match self.network {
            IpAddr::V4(_) => 2,
            IpAddr::V6(_) => 1,
        };
        self.cidr_size().saturating_sub(reserved)
    }

    /// The `index`th address it gives (the network address + 1 + index).
    pub fn address(&self, index: u64) -> IpAddr {
        let number = self.network_number() + 1 + u128::from(index);
        match self.network {
            IpAddr::V4(_) => IpAddr::V4(u32::try_from(number).unwrap_or(u32::MAX).into()),
            IpAddr::V6(_) => IpAddr::V6(number.into()),
        }
    }

    /// The index of `ip` among the addresses it gives, if it gives it.
    pub fn index_of(&self, ip: IpAddr) -> Option<u64> {
        let number = match (ip, self.network) {
            (IpAddr::V4(v4), IpAddr::V4(_)) => u128::from(u32::from(v4)),
            (IpAddr::V6(v6), IpAddr::V6(_)) => u128::from(v6),
            _ => return None,
        };
        let offset = number.checked_sub(self.network_number())?;
        let index = u64::try_from(offset.checked_sub(1)?).ok()?;
        (index < self.size()).then_some(index)
    }

    /// The lower part kept for addresses asked for by number.
    pub fn static_band(&self) -> u64 {
        static_band(self.cidr_size(), 16, 16, 256)
    }
}

impl FromStr for ServiceCidr {
    type Err = RangeError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let value = value.trim();
        if value.contains(',') {
            return Err(RangeError::DualStack(value.into()));
        }
        let not_cidr = || RangeError::NotCidr(value.into());
        let (ip, prefix) = value.split_once('/').ok_or_else(not_cidr)?;
        let ip: IpAddr = ip.parse().map_err(|_| not_cidr())?;
        let prefix: u8 = prefix.parse().map_err(|_| not_cidr())?;
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        if u32::from(prefix) > bits {
            return Err(not_cidr());
        }
        // Host bits are cleared, as Go's net.ParseCIDR does.
        let host_bits = bits - u32::from(prefix);
        let mask =
            |number: u128| number & !(1u128.checked_shl(host_bits).map_or(u128::MAX, |m| m - 1));
        let network = match ip {
            IpAddr::V4(v4) => IpAddr::V4(
                u32::try_from(mask(u128::from(u32::from(v4))))
                    .map_err(|_| not_cidr())?
                    .into(),
            ),
            IpAddr::V6(v6) => IpAddr::V6(mask(u128::from(v6)).into()),
        };
        let cidr = ServiceCidr { network, prefix };
        if cidr.size() == 0 {
            return Err(RangeError::TooSmall(value.into()));
        }
        Ok(cidr)
    }
}

impl fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl Default for ServiceCidr {
    /// 10.96.0.0/12, kubeadm's and k3s's default.
    fn default() -> Self {
        ServiceCidr {
            network: IpAddr::V4([10, 96, 0, 0].into()),
            prefix: 12,
        }
    }
}

/// `--service-node-port-range`: ports `base` to `base + size - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub base: u16,
    pub size: u16,
}

impl PortRange {
    /// Whether `port` is in the range.
    pub fn contains(&self, port: i32) -> bool {
        let port = i64::from(port);
        let base = i64::from(self.base);
        port >= base && port < base + i64::from(self.size)
    }

    /// The lower part kept for ports asked for by number.
    pub fn static_band(&self) -> u64 {
        static_band(u64::from(self.size), 16, 32, 128)
    }
}

impl FromStr for PortRange {
    type Err = RangeError;

    /// `a-b`, `a+n` (a and the n ports after it) or `a`, as Go's
    /// `net.ParsePortRange`.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let value = value.trim();
        let bad = || RangeError::NotPortRange(value.into());
        let port = |s: &str| s.trim().parse::<u16>().ok().filter(|p| *p > 0);
        let (base, last) = if let Some((a, b)) = value.split_once('-') {
            (port(a).ok_or_else(bad)?, port(b).ok_or_else(bad)?)
        } else if let Some((a, n)) = value.split_once('+') {
            let base = port(a).ok_or_else(bad)?;
            let extra: u16 = n.trim().parse().map_err(|_| bad())?;
            (base, base.checked_add(extra).ok_or_else(bad)?)
        } else {
            let p = port(value).ok_or_else(bad)?;
            (p, p)
        };
        if last < base {
            return Err(bad());
        }
        Ok(PortRange {
            base,
            size: last - base + 1,
        })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = u32::from(self.base) + u32::from(self.size) - 1;
        write!(f, "{}-{last}", self.base)
    }
}

impl Default for PortRange {
    /// 30000-32767, upstream's default.
    fn default() -> Self {
        PortRange {
            base: 30000,
            size: 2768,
        }
    }
}

/// `calculateRangeOffset`: `min(max(min, size/step), max)`, or nothing
/// for a range of at most `min`.
fn static_band(size: u64, min: u64, step: u64, max: u64) -> u64 {
    if size <= min {
        0
    } else {
        (size / step).clamp(min, max)
    }
}

/// The first free index of `0..size` in upstream's random-scan order: the
/// upper part (`band..size`) from `start % (size - band)` on, wrapping, then
/// the lower part (`0..band`) likewise. `taken` is consulted at most once per
/// taken index plus once, so a nearly empty huge range costs little.
pub fn first_free(size: u64, band: u64, start: u64, taken: impl Fn(u64) -> bool) -> Option<u64> {
    let band = band.min(size);
    let scan = |from: u64, len: u64| -> Option<u64> {
        if len == 0 {
            return None;
        }
        let first = start % len;
        (0..len)
            .map(|i| from + (first + i) % len)
            .find(|index| !taken(*index))
    };
    scan(band, size - band).or_else(|| scan(0, band))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_and_give_their_addresses() {
        struct Case {
            flag: &'static str,
            want: Result<(&'static str, u64, &'static str, u64), RangeError>,
        }
        let cases = [
            Case {
                flag: "10.96.0.0/12",
                want: Ok(("10.96.0.0/12", 1_048_574, "10.96.0.1", 256)),
            },
            Case {
                flag: "10.0.0.0/24",
                want: Ok(("10.0.0.0/24", 254, "10.0.0.1", 16)),
            },
            Case {
                flag: "10.0.0.7/29",
                want: Ok(("10.0.0.0/29", 6, "10.0.0.1", 0)),
            },
            Case {
                flag: "fd00:10:96::/112",
                want: Ok(("fd00:10:96::/112", 65535, "fd00:10:96::1", 256)),
            },
            Case {
                flag: "10.0.0.0/31",
                want: Err(RangeError::TooSmall("10.0.0.0/31".into())),
            },
            Case {
                flag: "10.96.0.0",
                want: Err(RangeError::NotCidr("10.96.0.0".into())),
            },
            Case {
                flag: "10.96.0.0/33",
                want: Err(RangeError::NotCidr("10.96.0.0/33".into())),
            },
            Case {
                flag: "10.96.0.0/12,fd00::/108",
                want: Err(RangeError::DualStack("10.96.0.0/12,fd00::/108".into())),
            },
        ];
        for case in cases {
            let got = case.flag.parse::<ServiceCidr>().map(|c| {
                (
                    c.to_string(),
                    c.size(),
                    c.address(0).to_string(),
                    c.static_band(),
                )
            });
            let want = case
                .want
                .map(|(s, n, first, band)| (s.to_string(), n, first.to_string(), band));
            assert_eq!(got, want, "{}", case.flag);
        }
        let cidr: ServiceCidr = "10.0.0.0/29".parse().expect("a CIDR");
        let index = |ip: &str| cidr.index_of(ip.parse().expect("an IP"));
        assert_eq!(index("10.0.0.1"), Some(0));
        assert_eq!(index("10.0.0.6"), Some(5));
        assert_eq!(index("10.0.0.0"), None, "the network address");
        assert_eq!(index("10.0.0.7"), None, "the broadcast address");
        assert_eq!(index("10.0.0.9"), None);
        assert_eq!(index("::1"), None);
        assert_eq!(ServiceCidr::default().to_string(), "10.96.0.0/12");
    }

    #[test]
    fn port_ranges_parse_as_go() {
        let cases = [
            ("30000-32767", Some((30000, 2768, "30000-32767", 86))),
            ("30000+2767", Some((30000, 2768, "30000-32767", 86))),
            ("8080", Some((8080, 1, "8080-8080", 0))),
            ("100-200", Some((100, 101, "100-200", 16))),
            ("200-100", None),
            ("0-10", None),
            ("a-b", None),
            ("1-70000", None),
        ];
        for (flag, want) in cases {
            let got = flag
                .parse::<PortRange>()
                .ok()
                .map(|r| (r.base, r.size, r.to_string(), r.static_band()));
            let want = want.map(|(b, s, d, band)| (b, s, d.to_string(), band));
            assert_eq!(got, want, "{flag}");
        }
        let range = PortRange::default();
        assert!(range.contains(30000) && range.contains(32767));
        assert!(!range.contains(29999) && !range.contains(32768));
    }

    #[test]
    fn free_indexes_come_from_the_upper_part_first_then_the_lower() {
        struct Case {
            name: &'static str,
            size: u64,
            band: u64,
            start: u64,
            taken: &'static [u64],
            want: Option<u64>,
        }
        let cases = [
            Case {
                name: "upper part, at the start",
                size: 10,
                band: 4,
                start: 0,
                taken: &[],
                want: Some(4),
            },
            Case {
                name: "upper part wraps",
                size: 10,
                band: 4,
                start: 5,
                taken: &[9],
                want: Some(4),
            },
            Case {
                name: "skips taken",
                size: 10,
                band: 4,
                start: 1,
                taken: &[5, 6],
                want: Some(7),
            },
            Case {
                name: "lower part once the upper is full",
                size: 6,
                band: 2,
                start: 0,
                taken: &[2, 3, 4, 5],
                want: Some(0),
            },
            Case {
                name: "full",
                size: 3,
                band: 1,
                start: 7,
                taken: &[0, 1, 2],
                want: None,
            },
            Case {
                name: "no band",
                size: 3,
                band: 0,
                start: 2,
                taken: &[],
                want: Some(2),
            },
            Case {
                name: "empty",
                size: 0,
                band: 0,
                start: 0,
                taken: &[],
                want: None,
            },
        ];
        for case in cases {
            let got = first_free(case.size, case.band, case.start, |i| {
                case.taken.contains(&i)
            });
            assert_eq!(got, case.want, "{}", case.name);
        }
    }
}
