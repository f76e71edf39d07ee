//! `watch`: from the watch cache, after a consistent read or from a
//! `resourceVersion` (replayed from the cache's history), filtered by the
//! namespace and the selectors; bookmarks, `sendInitialEvents`, the
//! timeout, and events rendered as objects or one-row Tables.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use berth_core::clock::Clock;
use futures::StreamExt;
use serde_json::{Value, json};

use super::list::Filter;
use super::scope::Scope;
use super::server::ApiServer;
use crate::cache::{Change, ChangeType};
use crate::objects::resource_version_of;
use crate::resources::ResourceType;
use crate::status::ApiError;

impl ApiServer {
    pub(super) async fn watch(&self, scope: &Scope<'_>) -> Result<Response, ApiError> {
        let (rt, ns, query) = (scope.rt, scope.namespace, &scope.query);
        query.list_params(true).validate()?;
        let permit = self.watches.admit(&scope.user.name)?;
        let filter = Arc::new(Filter::new(rt, ns, query)?);
        let table = scope.table()?;
        let cache = self.registry.cache(rt)?.clone();
        let send_initial = query.flag("sendInitialEvents");
        let requested: Option<i64> =
            match query.get("resourceVersion") {
                None => None,
                Some(rv) => Some(rv.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {rv}"))
                })?),
            };
        match requested {
            // "0": any state will do, as upstream serves it from its cache.
            Some(0) if !send_initial => {}
            Some(rv) if !send_initial => cache.wait_for(rv).await?,
            // Unset (or streaming the initial list): the most recent state,
            // as a consistent read.
            _ => {
                self.registry.wait_current(rt).await?;
            }
        }
        let from = if send_initial { None } else { requested };
        let (initial, receiver, start_rv) = cache.watch_from(from).await?;
        let revisions = cache.revisions();
        let bookmarks = query.flag("allowWatchBookmarks");
        let timeout = query
            .int("timeoutSeconds")?
            .map(|s| Duration::from_secs(s.max(0) as u64))
            .unwrap_or(Duration::from_secs(1800));
        let render = EventRenderer {
            rt: scope.external.unwrap_or(rt),
            converts: scope.external.is_some(),
            table,
            clock: self.clock.clone(),
            headers_sent: std::sync::atomic::AtomicBool::new(false),
        };
        let stream = watch_stream(
            rt,
            filter,
            Arc::new(render),
            WatchFeed {
                initial,
                receiver,
                revisions,
                start_rv,
            },
            send_initial,
            bookmarks,
            timeout,
        )
        // Ended when the server shuts down; the watch holds its place until
        // its response ends.
        .take_until(permit.closed())
        .inspect(move |_| {
            let _ = &permit;
        });
        let mut response = Response::new(Body::from_stream(stream));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response.headers_mut().insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        Ok(response)
    }
}

/// Writes watch events: the object as stored, or (for `kubectl get -w`) a
/// one-row Table, with the column definitions in the first event only.
struct EventRenderer {
    rt: &'static ResourceType,
    /// The watch is of another version of the stored type (events.k8s.io).
    converts: bool,
    table: Option<crate::table_output::Include>,
    clock: Clock,
    headers_sent: std::sync::atomic::AtomicBool,
}

impl EventRenderer {
    fn line(&self, kind: &str, object: &str) -> Bytes {
        if self.table.is_none() && !self.converts {
            return event_line(kind, object);
        }
        let Ok(mut value) = serde_json::from_str::<Value>(object) else {
            return event_line(kind, object);
        };
        if self.converts {
            value = crate::conversion::event_to_v1(&value);
        }
        let Some(include) = self.table else {
            return event_line(kind, &value.to_string());
        };
        let no_headers = self
            .headers_sent
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        let options = crate::table::TableOptions {
            version: include.version,
            include_object: include.include_object,
            no_headers,
            list_meta: crate::table::ListMeta {
                resource_version: Some(resource_version_of(&value).to_string()),
                ..crate::table::ListMeta::default()
            },
        };
        let table =
            crate::table::to_table_with_options(self.rt.kind, &[value], &options, self.clock.now());
        event_line(kind, &table.to_string())
    }
}

fn event_line(kind: &str, object: &str) -> Bytes {
    Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n"))
}

fn bookmark_line(rt: &ResourceType, rv: i64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let object = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta});
    event_line("BOOKMARK", &object.to_string())
}

/// What one change means to a watcher with `filter`: upstream sends
/// DELETED when an object stops matching and ADDED when it starts to.
fn filtered(filter: &Filter, change: &Change) -> Option<(&'static str, Arc<str>)> {
    let now = filter.matches(&change.object);
    let before = change.previous.as_ref().is_some_and(|p| filter.matches(p));
    let kind = match (change.kind, before, now) {
        (ChangeType::Deleted, _, true) => "DELETED",
        (ChangeType::Deleted, _, false) => return None,
        (_, false, true) => "ADDED",
        (_, true, true) => "MODIFIED",
        (_, true, false) => "DELETED",
        (_, false, false) => return None,
    };
    let kind = if change.kind == ChangeType::Added && now {
        "ADDED"
    } else {
        kind
    };
    Some((kind, change.object.json.clone()))
}

/// What a watch is fed from: the changes it replays, the live ones, and
/// the cache's revision (for bookmarks).
struct WatchFeed {
    initial: Vec<Change>,
    receiver: crate::cache::WatchReceiver,
    revisions: tokio::sync::watch::Receiver<i64>,
    start_rv: i64,
}

/// How long a watch waits without an event before it sends a bookmark.
const BOOKMARK_AFTER: Duration = Duration::from_secs(60);

/// The watch's lines: the replayed changes (rendered as they are sent, so
/// a watch resumed far back costs no copy of the history), the
/// initial-events-end bookmark when asked, then live changes until
/// `timeout`, which ends the watch whether or not changes keep coming, as
/// upstream's does. A bookmark after a quiet minute carries the cache's
/// revision, which moves with every type's writes: a client resuming from
/// it after a long quiet spell of its own type is not sent away with 410
/// because other types' writes moved on (upstream's bookmarks carry etcd's
/// progress the same way). A watcher the cache closed for falling too far
/// behind ends without an error, as upstream's does: its client resumes
/// from the last change it read.
fn watch_stream(
    rt: &'static ResourceType,
    filter: Arc<Filter>,
    render: Arc<EventRenderer>,
    feed: WatchFeed,
    send_initial: bool,
    bookmarks: bool,
    timeout: Duration,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    use crate::cache::Missed;
    let WatchFeed {
        initial,
        receiver,
        revisions,
        start_rv,
    } = feed;
    let last_rv = initial.iter().map(|c| c.object.rv).fold(start_rv, i64::max);
    let replay = {
        let filter = filter.clone();
        let render = render.clone();
        futures::stream::iter(initial).filter_map(move |change| {
            let line = filtered(&filter, &change).map(|(kind, json)| Ok(render.line(kind, &json)));
            std::future::ready(line)
        })
    };
    let initial_end =
        futures::stream::iter(send_initial.then(|| Ok(bookmark_line(rt, last_rv, true))));
    let deadline = tokio::time::Instant::now() + timeout;
    let live = futures::stream::unfold(
        (receiver, last_rv, false),
        move |(mut rx, mut last_rv, done)| {
            let filter = filter.clone();
            let render = render.clone();
            let revisions = revisions.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    let now = tokio::time::Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    let next =
                        tokio::time::timeout_at(deadline.min(now + BOOKMARK_AFTER), rx.recv())
                            .await;
                    let next = match next {
                        Err(_) if tokio::time::Instant::now() >= deadline => return None,
                        Err(_) if !bookmarks => continue,
                        Err(_) => {
                            // The revision first, then the queue: a change
                            // is queued before its revision is published, so
                            // an empty queue means every change up to it
                            // was delivered.
                            let current = *revisions.borrow();
                            match rx.try_recv().await {
                                Ok(None) => {
                                    last_rv = last_rv.max(current);
                                    return Some((
                                        Ok(bookmark_line(rt, last_rv, false)),
                                        (rx, last_rv, false),
                                    ));
                                }
                                Ok(Some(change)) => Ok(change),
                                Err(missed) => Err(missed),
                            }
                        }
                        Ok(next) => next,
                    };
                    match next {
                        Ok(change) => {
                            if change.object.rv <= last_rv {
                                continue;
                            }
                            last_rv = change.object.rv;
                            if let Some((kind, json)) = filtered(&filter, &change) {
                                return Some((Ok(render.line(kind, &json)), (rx, last_rv, false)));
                            }
                        }
                        Err(Missed::Lagged) => {
                            // Too far behind to deliver every change: end the
                            // watch with 410 so the client re-lists.
                            let status = ApiError::expired(last_rv, last_rv).to_status();
                            return Some((
                                Ok(event_line("ERROR", &status.to_string())),
                                (rx, last_rv, true),
                            ));
                        }
                        Err(Missed::TooSlow | Missed::Closed) => return None,
                    }
                }
            }
        },
    );
    replay.chain(initial_end).chain(live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cached;
    use crate::resources::NODES;
    use futures::StreamExt;
    use std::collections::BTreeMap;

    fn node_change(rv: i64) -> Change {
        let object = Arc::new(Cached {
            namespace: String::new(),
            name: "n1".into(),
            rv,
            json: Arc::from(format!(
                r#"{{"kind":"Node","apiVersion":"v1","metadata":{{"name":"n1","resourceVersion":"{rv}"}}}}"#
            )),
            labels: BTreeMap::new(),
            fields: BTreeMap::new(),
        });
        Change {
            kind: ChangeType::Modified,
            previous: Some(object.clone()),
            object,
        }
    }

    fn stream_for(
        start_rv: i64,
        receiver: tokio::sync::broadcast::Receiver<Change>,
        revisions: tokio::sync::watch::Receiver<i64>,
        timeout: Duration,
    ) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
        let filter = Filter {
            namespace: String::new(),
            labels: None,
            fields: None,
        };
        let render = EventRenderer {
            rt: &NODES,
            converts: false,
            table: None,
            clock: Clock::real(),
            headers_sent: std::sync::atomic::AtomicBool::new(false),
        };
        watch_stream(
            &NODES,
            Arc::new(filter),
            Arc::new(render),
            WatchFeed {
                initial: Vec::new(),
                receiver: crate::cache::WatchReceiver::unmanaged(receiver),
                revisions,
                start_rv,
            },
            false,
            true,
            timeout,
        )
    }

    fn line_of(item: Option<Result<Bytes, std::io::Error>>) -> Value {
        let bytes = item.and_then(Result::ok).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_ends_at_its_timeout_while_changes_keep_coming() {
        let (tx, rx) = tokio::sync::broadcast::channel(1024);
        let (_rv_tx, rv_rx) = tokio::sync::watch::channel(10);
        let producer = tokio::spawn(async move {
            for rv in 11..1_000 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let _ = tx.send(node_change(rv));
            }
        });
        let started = tokio::time::Instant::now();
        let mut stream = std::pin::pin!(stream_for(10, rx, rv_rx, Duration::from_secs(10)));
        let mut events = 0;
        while let Some(item) = stream.next().await {
            assert!(item.is_ok());
            events += 1;
        }
        let lasted = started.elapsed();
        producer.abort();
        assert!(
            lasted >= Duration::from_secs(10) && lasted < Duration::from_secs(11),
            "the watch lasted {lasted:?}"
        );
        assert!((18..=20).contains(&events), "{events} events");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_watch_bookmarks_the_caches_revision() {
        let (tx, rx) = tokio::sync::broadcast::channel(16);
        let (rv_tx, rv_rx) = tokio::sync::watch::channel(10);
        let mut stream = std::pin::pin!(stream_for(10, rx, rv_rx, Duration::from_secs(600)));
        let _ = tx.send(node_change(11));
        let event = line_of(stream.next().await);
        assert_eq!(event["type"], "MODIFIED");
        assert_eq!(event["object"]["metadata"]["resourceVersion"], "11");
        // Other types' writes move the cache on; this type stays quiet.
        rv_tx.send_replace(5_000);
        let bookmark = line_of(stream.next().await);
        assert_eq!(bookmark["type"], "BOOKMARK");
        assert_eq!(bookmark["object"]["metadata"]["resourceVersion"], "5000");
        // A change the bookmark already covers is not sent again; later ones are.
        let _ = tx.send(node_change(4_999));
        let _ = tx.send(node_change(5_001));
        let event = line_of(stream.next().await);
        assert_eq!(event["object"]["metadata"]["resourceVersion"], "5001");
    }

    #[tokio::test(start_paused = true)]
    async fn a_bookmark_waits_for_changes_already_queued() {
        let (tx, rx) = tokio::sync::broadcast::channel(16);
        let (rv_tx, rv_rx) = tokio::sync::watch::channel(10);
        let stream = stream_for(10, rx, rv_rx, Duration::from_secs(600));
        let mut stream = std::pin::pin!(stream);
        // Nothing for 59 s, then a change queued with its revision published
        // just as the quiet minute ends: the change goes out, not a
        // bookmark past it.
        tokio::time::sleep(Duration::from_secs(59)).await;
        let _ = tx.send(node_change(12));
        rv_tx.send_replace(12);
        let event = line_of(stream.next().await);
        assert_eq!(event["type"], "MODIFIED");
        assert_eq!(event["object"]["metadata"]["resourceVersion"], "12");
    }
}
