//! How many watches the server serves at once, per client and in total.
//!
//! A watch holds a connection stream, a task's worth of state and a place
//! in its type's broadcast for as long as it lasts (30 minutes by default),
//! so an unbounded number of them is memory and file descriptors without a
//! bound. Over either limit a new watch is refused as upstream's
//! max-in-flight filter refuses requests: 429 `TooManyRequests` with
//! `Retry-After: 1`. A client is the authenticated user: each node agent
//! has a credential of its own, so one node cannot use up another's share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::status::ApiError;

/// The limits (see the README's resource limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchLimits {
    /// Concurrent watches of one user.
    pub per_client: usize,
    /// Concurrent watches of all users together.
    pub total: usize,
}

impl Default for WatchLimits {
    fn default() -> Self {
        WatchLimits {
            per_client: 1_000,
            total: 50_000,
        }
    }
}

/// The watches open now, per user and in total.
#[derive(Debug)]
pub struct WatchCounter {
    limits: WatchLimits,
    open: Mutex<Open>,
    /// Set when the server shuts down: every watch ends.
    closing: tokio::sync::watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    per_client: HashMap<String, usize>,
}

/// One admitted watch; dropping it (when the watch ends) frees its place.
#[derive(Debug)]
pub struct WatchPermit {
    counter: Arc<WatchCounter>,
    client: String,
}

/// What upstream's max-in-flight filter tells a client to wait, in seconds.
const RETRY_AFTER_SECONDS: u64 = 1;

impl WatchCounter {
    pub fn new(limits: WatchLimits) -> Arc<WatchCounter> {
        Arc::new(WatchCounter {
            limits,
            open: Mutex::new(Open::default()),
            closing: tokio::sync::watch::Sender::new(false),
        })
    }

    /// A place for one more watch of `client`, or 429 when either limit is
    /// reached.
    pub fn admit(self: &Arc<Self>, client: &str) -> Result<WatchPermit, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let of_client = open.per_client.get(client).copied().unwrap_or(0);
        let refusal = if of_client >= self.limits.per_client {
            Some(format!(
                "{client:?} has {of_client} watches open, the most one client may have \
                 (--max-watches-per-client)"
            ))
        } else if open.total >= self.limits.total {
            Some(format!(
                "the server has {} watches open, the most it serves (--max-watches)",
                open.total
            ))
        } else {
            None
        };
        if *self.closing.borrow() {
            return Err(ApiError::new(
                503,
                "ServiceUnavailable",
                "the server is shutting down",
            ));
        }
        if let Some(why) = refusal {
            return Err(ApiError::too_many_requests(
                format!("Too many requests, please try again later: {why}"),
                RETRY_AFTER_SECONDS,
            ));
        }
        open.total += 1;
        *open.per_client.entry(client.to_string()).or_default() += 1;
        Ok(WatchPermit {
            counter: self.clone(),
            client: client.to_string(),
        })
    }

    /// Ends every watch (their streams end as if timed out) and refuses new
    /// ones: the server is shutting down.
    pub fn close_all(&self) {
        self.closing.send_replace(true);
    }

    /// Watches open now: in total, and of `client`.
    pub fn open(&self, client: &str) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        (
            open.total,
            open.per_client.get(client).copied().unwrap_or(0),
        )
    }
}

impl WatchPermit {
    /// Completes when the server closes every watch.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut closing = self.counter.closing.subscribe();
        async move {
            let _ = closing.wait_for(|closing| *closing).await;
        }
    }
}

impl Drop for WatchPermit {
    fn drop(&mut self) {
        let mut open = self.counter.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.per_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.per_client.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_refuses_with_429_and_a_closed_watch_frees_its_place() {
        struct Case {
            name: &'static str,
            limits: WatchLimits,
            /// Watches opened first, by client.
            open: &'static [&'static str],
            client: &'static str,
            want_admitted: bool,
        }
        let cases = [
            Case {
                name: "under both limits",
                limits: WatchLimits {
                    per_client: 2,
                    total: 3,
                },
                open: &["a", "b"],
                client: "a",
                want_admitted: true,
            },
            Case {
                name: "the client's limit",
                limits: WatchLimits {
                    per_client: 2,
                    total: 10,
                },
                open: &["a", "a", "b"],
                client: "a",
                want_admitted: false,
            },
            Case {
                name: "another client is not held to this one's limit",
                limits: WatchLimits {
                    per_client: 2,
                    total: 10,
                },
                open: &["a", "a"],
                client: "b",
                want_admitted: true,
            },
            Case {
                name: "the total",
                limits: WatchLimits {
                    per_client: 5,
                    total: 3,
                },
                open: &["a", "b", "c"],
                client: "d",
                want_admitted: false,
            },
        ];
        for case in cases {
            let counter = WatchCounter::new(case.limits);
            let permits: Vec<WatchPermit> = case
                .open
                .iter()
                .map(|c| {
                    counter
                        .admit(c)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
                })
                .collect();
            match counter.admit(case.client) {
                Ok(_) => assert!(case.want_admitted, "{}: admitted", case.name),
                Err(e) => {
                    assert!(!case.want_admitted, "{}: refused: {e}", case.name);
                    assert_eq!(
                        (e.code, e.reason),
                        (429, "TooManyRequests"),
                        "{}",
                        case.name
                    );
                    let status = e.to_status();
                    assert_eq!(status["details"]["retryAfterSeconds"], 1, "{}", case.name);
                }
            }
            drop(permits);
            assert_eq!(counter.open(case.client), (0, 0), "{}", case.name);
            assert!(counter.admit(case.client).is_ok(), "{}", case.name);
        }
    }
}
