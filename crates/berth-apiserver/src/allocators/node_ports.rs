//! Node ports as upstream keeps them: one `RangeAllocation` at
//! `/registry/ranges/servicenodeports`, its `data` a bitmap of the ports
//! in use (the bytes of a big-endian integer whose bit `i` is the range's
//! `i`th port, as Go's `big.Int.Bytes`). Every change is a
//! compare-and-swap of that object, retried on a conflict, so ports stay
//! unique across servers sharing an etcd and survive a restart.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use berth_store::{AnyStore, Store, StoreError};
use serde_json::{Value, json};

use super::range::{PortRange, first_free};
use super::{AllocError, random_u64};

/// Where the node-port bitmap lives.
pub const NODE_PORTS_KEY: &str = "/registry/ranges/servicenodeports";

/// The ports in use, as one allocation works on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSet {
    range: PortRange,
    /// Offsets into the range.
    used: BTreeSet<u64>,
    start: u64,
}

impl PortSet {
    /// The ports of `range` in use per `data` (a RangeAllocation's bitmap).
    pub fn decode(range: PortRange, data: &[u8]) -> PortSet {
        let mut used = BTreeSet::new();
        for (from_end, byte) in data.iter().rev().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    used.insert(from_end as u64 * 8 + bit);
                }
            }
        }
        PortSet {
            range,
            used,
            start: random_u64(),
        }
    }

    /// The bitmap, as [`PortSet::decode`] reads it.
    pub fn encode(&self) -> Vec<u8> {
        let Some(&highest) = self.used.last() else {
            return Vec::new();
        };
        let len = usize::try_from(highest / 8 + 1).unwrap_or(0);
        let mut bytes = vec![0u8; len];
        for offset in &self.used {
            let index = len - 1 - usize::try_from(offset / 8).unwrap_or(0);
            bytes[index] |= 1 << (offset % 8);
        }
        bytes
    }

    fn offset(&self, port: i32) -> Option<u64> {
        self.range
            .contains(port)
            .then(|| u64::try_from(port - i32::from(self.range.base)).unwrap_or(0))
    }

    /// Takes `port`.
    pub fn allocate(&mut self, port: i32) -> Result<(), AllocError> {
        let offset = self.offset(port).ok_or(AllocError::NotInRange {
            what: "port",
            range: self.range.to_string(),
        })?;
        if self.used.insert(offset) {
            Ok(())
        } else {
            Err(AllocError::Allocated("port"))
        }
    }

    /// Takes a free port.
    pub fn allocate_next(&mut self) -> Result<i32, AllocError> {
        let size = u64::from(self.range.size);
        let offset = first_free(size, self.range.static_band(), self.start, |i| {
            self.used.contains(&i)
        })
        .ok_or(AllocError::Full)?;
        self.used.insert(offset);
        Ok(i32::from(self.range.base) + i32::try_from(offset).unwrap_or(0))
    }

    /// Gives `port` back.
    pub fn release(&mut self, port: i32) {
        if let Some(offset) = self.offset(port) {
            self.used.remove(&offset);
        }
    }

    /// Whether `port` is in use.
    pub fn contains(&self, port: i32) -> bool {
        self.offset(port).is_some_and(|o| self.used.contains(&o))
    }
}

/// The node ports of one `--service-node-port-range`.
#[derive(Clone)]
pub struct NodePorts {
    range: PortRange,
    store: AnyStore,
}

impl NodePorts {
    pub fn new(range: PortRange, store: AnyStore) -> NodePorts {
        NodePorts { range, store }
    }

    /// The range ports come from.
    pub fn range(&self) -> PortRange {
        self.range
    }

    /// Runs `change` on the ports in use and stores the result (a
    /// compare-and-swap, `change` run again on a conflict); nothing is
    /// written if `change` fails or changes nothing.
    pub async fn update<T, E: From<AllocError>>(
        &self,
        mut change: impl FnMut(&mut PortSet) -> Result<T, E>,
        now: &str,
    ) -> Result<T, E> {
        let store_error = |e: StoreError| E::from(AllocError::Store(e));
        loop {
            let stored = self.store.get(NODE_PORTS_KEY).await.map_err(store_error)?;
            let data = stored
                .as_ref()
                .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
                .and_then(|v| v.get("data").and_then(Value::as_str).map(str::to_string))
                .and_then(|d| BASE64.decode(d).ok())
                .unwrap_or_default();
            let before = PortSet::decode(self.range, &data);
            let mut ports = before.clone();
            let result = change(&mut ports)?;
            if ports.used == before.used {
                return Ok(result);
            }
            let object = json!({
                "apiVersion": "v1",
                "kind": "RangeAllocation",
                "metadata": {"creationTimestamp": now},
                "range": self.range.to_string(),
                "data": BASE64.encode(ports.encode()),
            })
            .to_string()
            .into_bytes();
            let written = match &stored {
                None => self.store.create(NODE_PORTS_KEY, object).await,
                Some(kv) => {
                    self.store
                        .update(NODE_PORTS_KEY, object, kv.mod_revision)
                        .await
                }
            };
            match written {
                Ok(_) => return Ok(result),
                Err(StoreError::Conflict { .. } | StoreError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(store_error(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bitmap_is_go_big_int_bytes() {
        struct Case {
            offsets: &'static [u64],
            bytes: &'static [u8],
        }
        let cases = [
            Case {
                offsets: &[],
                bytes: &[],
            },
            Case {
                offsets: &[0],
                bytes: &[0x01],
            },
            Case {
                offsets: &[7],
                bytes: &[0x80],
            },
            Case {
                offsets: &[8],
                bytes: &[0x01, 0x00],
            },
            Case {
                offsets: &[0, 9],
                bytes: &[0x02, 0x01],
            },
        ];
        let range = PortRange::default();
        for case in cases {
            let mut set = PortSet::decode(range, &[]);
            for offset in case.offsets {
                assert!(
                    set.allocate(30000 + i32::try_from(*offset).unwrap_or(0))
                        .is_ok()
                );
            }
            assert_eq!(set.encode(), case.bytes, "{:?}", case.offsets);
            let back = PortSet::decode(range, case.bytes);
            assert_eq!(back.used, set.used, "{:?}", case.offsets);
        }
    }

    #[test]
    fn ports_are_taken_once_and_only_from_the_range() {
        let range: PortRange = "30000-30003".parse().expect("a range");
        let mut set = PortSet::decode(range, &[]);
        assert!(set.allocate(30001).is_ok());
        assert!(matches!(
            set.allocate(30001),
            Err(AllocError::Allocated("port"))
        ));
        let out = set.allocate(8080).err().map(|e| e.to_string());
        assert_eq!(
            out.as_deref(),
            Some(
                "provided port is not in the valid range. The range of valid ports is 30000-30003"
            )
        );
        let mut all = BTreeSet::from([30001]);
        for _ in 0..3 {
            all.insert(set.allocate_next().unwrap_or(0));
        }
        assert_eq!(all, BTreeSet::from([30000, 30001, 30002, 30003]));
        assert_eq!(
            set.allocate_next().err().map(|e| e.to_string()).as_deref(),
            Some("range is full")
        );
        set.release(30002);
        assert!(!set.contains(30002));
        assert_eq!(set.allocate_next().ok(), Some(30002));
    }
}
