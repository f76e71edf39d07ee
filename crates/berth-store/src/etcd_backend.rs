//! The etcd backend: the same [`Store`] contract on etcd's own revisions.
//!
//! Creates are transactions comparing `create_revision == 0`; updates and deletes compare
//! `mod_revision` with the caller's expected revision and, when that fails, read the key in the
//! same transaction to tell a conflict from a missing key. Watches start at `after + 1` with
//! `prev_kv`, and etcd's "required revision has been compacted" maps to
//! [`StoreError::Gone`]. Several berth servers on one etcd share its single history.

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, KvClient, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};
use tokio::sync::mpsc;

use crate::error::{Result, StoreError};
use crate::keys::{KEY_ROOT, prefix_end, validate_key, validate_prefix, validate_value};
use crate::list::{ListOptions, ListResult};
use crate::store::Store;
use crate::types::{EventKind, KeyValue, Revision, WatchEvent};
use crate::watch::{WATCH_BUFFER, WatchStream, deliver, fail};

/// Responses can carry a page of values of up to 1.5 MiB each; tonic's 4 MiB default would
/// refuse a page of three.
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// A store on an etcd cluster. Cheap to clone (clones share the gRPC channel).
#[derive(Clone)]
pub struct EtcdStore {
    client: Client,
}

impl EtcdStore {
    /// Connects to etcd at `endpoints` (such as `http://127.0.0.1:2379`).
    pub async fn connect<E: AsRef<str>>(endpoints: &[E]) -> Result<Self> {
        let client = Client::connect(endpoints, None)
            .await
            .map_err(StoreError::backend)?;
        Ok(EtcdStore { client })
    }

    /// Wraps an already configured client (TLS, auth, ...).
    pub fn from_client(client: Client) -> Self {
        EtcdStore { client }
    }

    fn kv(&self) -> KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }
}

/// Maps an etcd error, recognising compaction and future revisions by etcd's messages (etcd
/// reports both as plain gRPC statuses).
fn map_err(e: etcd_client::Error, requested: Revision) -> StoreError {
    if let etcd_client::Error::GRpcStatus(status) = &e {
        let message = status.message();
        if message.contains("required revision has been compacted") {
            return StoreError::Gone {
                requested,
                compacted: None,
            };
        }
        if message.contains("required revision is a future revision") {
            return StoreError::InvalidArgument(format!("revision {requested} is in the future"));
        }
    }
    StoreError::backend(e)
}

fn to_kv(kv: &etcd_client::KeyValue) -> Result<KeyValue> {
    let key = kv
        .key_str()
        .map_err(|_| StoreError::Corrupt("etcd returned a key that is not UTF-8".into()))?;
    Ok(KeyValue {
        key: key.to_owned(),
        value: kv.value().to_vec(),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<Revision> {
    header
        .map(|h| h.revision())
        .ok_or_else(|| StoreError::Corrupt("etcd response without a header".into()))
}

fn to_event(event: &etcd_client::Event) -> Result<WatchEvent> {
    let kv = event
        .kv()
        .ok_or_else(|| StoreError::Corrupt("etcd watch event without a key-value".into()))?;
    let prev_kv = event.prev_kv().map(to_kv).transpose()?;
    let revision = kv.mod_revision();
    Ok(match event.event_type() {
        EventType::Put => WatchEvent {
            // etcd gives a freshly created key create_revision == mod_revision.
            kind: if kv.create_revision() == revision {
                EventKind::Created
            } else {
                EventKind::Updated
            },
            revision,
            kv: to_kv(kv)?,
            prev_kv,
        },
        EventType::Delete => WatchEvent {
            kind: EventKind::Deleted,
            revision,
            kv: KeyValue {
                key: to_kv(kv)?.key,
                value: Vec::new(),
                // etcd leaves it 0 in delete events; report the deleted object's, like redb.
                create_revision: prev_kv.as_ref().map_or(0, |p| p.create_revision),
                mod_revision: revision,
            },
            prev_kv,
        },
    })
}

/// A compare-and-swap write (`value` = `Some`: update, `None`: delete).
async fn guarded(
    mut kv: KvClient,
    key: &str,
    value: Option<Vec<u8>>,
    expected: Revision,
) -> Result<Revision> {
    let op = match value {
        Some(v) => TxnOp::put(key, v, None),
        None => TxnOp::delete(key, None),
    };
    let txn = Txn::new()
        .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
        .and_then([op])
        .or_else([TxnOp::get(key, None)]);
    let resp = kv.txn(txn).await.map_err(StoreError::backend)?;
    if resp.succeeded() {
        return header_revision(resp.header());
    }
    let actual = resp.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(get) => Some(get.kvs().first().map(|kv| kv.mod_revision())),
        _ => None,
    });
    match actual {
        Some(Some(actual)) => Err(StoreError::Conflict {
            key: key.to_owned(),
            expected,
            actual,
        }),
        Some(None) => Err(StoreError::NotFound {
            key: key.to_owned(),
        }),
        None => Err(StoreError::Corrupt(
            "etcd transaction failure without the read of the key".into(),
        )),
    }
}

fn validate_expected(expected: Revision) -> Result<()> {
    if expected <= 0 {
        return Err(StoreError::InvalidArgument(format!(
            "expected revision must be positive, got {expected}"
        )));
    }
    Ok(())
}

/// Forwards one etcd watch to the consumer.
async fn run_watch(
    mut stream: etcd_client::WatchStream,
    mut last: Revision,
    tx: mpsc::Sender<Result<WatchEvent>>,
) {
    loop {
        let message = tokio::select! {
            _ = tx.closed() => return,
            m = stream.message() => m,
        };
        match message {
            Ok(Some(resp)) => {
                if resp.compact_revision() > 0 {
                    fail(
                        &tx,
                        StoreError::Gone {
                            requested: last,
                            compacted: Some(resp.compact_revision()),
                        },
                    )
                    .await;
                    return;
                }
                if resp.canceled() {
                    let reason = format!("etcd cancelled the watch: {}", resp.cancel_reason());
                    fail(&tx, StoreError::backend(std::io::Error::other(reason))).await;
                    return;
                }
                for event in resp.events() {
                    let event = match to_event(event) {
                        Ok(e) => e,
                        Err(e) => {
                            fail(&tx, e).await;
                            return;
                        }
                    };
                    // etcd does not repeat events, but a duplicate must never reach the API
                    // server's watch cache.
                    if event.revision <= last {
                        continue;
                    }
                    last = event.revision;
                    if !deliver(&tx, Ok(event)).await {
                        return;
                    }
                }
            }
            Ok(None) => {
                let e = std::io::Error::other("etcd closed the watch stream");
                fail(&tx, StoreError::backend(e)).await;
                return;
            }
            Err(e) => {
                fail(&tx, map_err(e, last)).await;
                return;
            }
        }
    }
}

impl Store for EtcdStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        validate_key(key)?;
        let resp = self
            .kv()
            .get(key, None)
            .await
            .map_err(StoreError::backend)?;
        resp.kvs().first().map(to_kv).transpose()
    }

    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        validate_prefix(prefix)?;
        // Revision 0 is etcd's "latest".
        let (at, start) = options.start_in(prefix)?;
        let at = at.unwrap_or(0);
        if at < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {at}"
            )));
        }
        let limit = i64::try_from(options.limit).unwrap_or(i64::MAX);
        let mut get = GetOptions::new()
            .with_range(prefix_end(prefix))
            .with_limit(limit);
        // Revision 0 is etcd's "latest".
        if at > 0 {
            get = get.with_revision(at);
        }
        let resp = self
            .kv()
            .get(start, Some(get))
            .await
            .map_err(|e| map_err(e, at))?;
        let revision = if at > 0 {
            at
        } else {
            header_revision(resp.header())?
        };
        let items = resp.kvs().iter().map(to_kv).collect::<Result<Vec<_>>>()?;
        Ok(ListResult::page(items, revision, resp.more()))
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<Revision> {
        validate_key(key)?;
        validate_value(key, &value)?;
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value, None)]);
        let resp = self.kv().txn(txn).await.map_err(StoreError::backend)?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists {
                key: key.to_owned(),
            });
        }
        header_revision(resp.header())
    }

    async fn update(&self, key: &str, value: Vec<u8>, expected: Revision) -> Result<Revision> {
        validate_key(key)?;
        validate_value(key, &value)?;
        validate_expected(expected)?;
        guarded(self.kv(), key, Some(value), expected).await
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<Revision> {
        validate_key(key)?;
        validate_expected(expected)?;
        guarded(self.kv(), key, None, expected).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        // Any read returns the store revision in its header; a count of one key is the
        // cheapest read there is.
        let resp = self
            .kv()
            .get(KEY_ROOT, Some(GetOptions::new().with_count_only()))
            .await
            .map_err(StoreError::backend)?;
        header_revision(resp.header())
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        validate_prefix(prefix)?;
        if after < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {after}"
            )));
        }
        // etcd's compaction at C also drops the tombstones of deletes at C, so the events at C
        // are not reliably there: like the redb backend, a watch must start after C. etcd
        // would accept a start at C and report other compactions only asynchronously on the
        // stream, so read at `after` first (it fails iff `after` < C), and the caller gets
        // `Gone` from `watch` itself. Revision 0 is etcd's "latest", and revision 1 is its
        // empty initial state, so `after` = 0 is checked at 1.
        let start = after + 1;
        if after <= self.current_revision().await? {
            self.kv()
                .get(
                    KEY_ROOT,
                    Some(
                        GetOptions::new()
                            .with_revision(after.max(1))
                            .with_count_only(),
                    ),
                )
                .await
                .map_err(|e| map_err(e, after))?;
        }
        let options = WatchOptions::new()
            .with_range(prefix_end(prefix))
            .with_start_revision(start)
            .with_prev_key();
        let stream = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .watch(prefix, Some(options))
            .await
            .map_err(|e| map_err(e, after))?;
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let task = tokio::spawn(run_watch(stream, after, tx));
        Ok(WatchStream::new(rx, task.abort_handle()))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        if revision < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {revision}"
            )));
        }
        if revision == 0 {
            return Ok(());
        }
        match self.kv().compact(revision, None).await {
            Ok(_) => Ok(()),
            // Already compacted at or past `revision`: nothing to do, as on redb.
            Err(e) => match map_err(e, revision) {
                StoreError::Gone { .. } => Ok(()),
                other => Err(other),
            },
        }
    }
}
