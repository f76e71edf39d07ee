//! A client-side request rate limit, as client-go's (`--kube-api-qps`,
//! `--kube-api-burst`): a token bucket that fills at `qps` up to `burst`,
//! each request taking one token and waiting for it when there is none.
//! Waiters reserve their token (the bucket goes negative), so they go in
//! the order they came, as with Go's `rate.Limiter.Wait`.
//!
//! `berth sim fleet --kubeconfig` puts it in front of a cluster it does
//! not own, so that a fleet of thousands cannot flood it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// `qps` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub qps: f64,
    pub burst: u32,
}

/// A bad `--kube-api-qps` / `--kube-api-burst`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitError {
    #[error("--kube-api-qps must be a finite number above 0 (0 turns the limit off), not {0}")]
    Qps(String),
    #[error("--kube-api-burst must be at least 1 when --kube-api-qps is set")]
    Burst,
}

impl RateLimit {
    /// The limit of the flags: none for `qps == 0`, as client-go's
    /// negative QPS; an error for a QPS that is not a positive number or
    /// a burst of 0 (no request could ever go).
    pub fn from_flags(qps: f64, burst: u32) -> Result<Option<RateLimit>, RateLimitError> {
        if qps == 0.0 {
            return Ok(None);
        }
        if !qps.is_finite() || qps < 0.0 {
            return Err(RateLimitError::Qps(qps.to_string()));
        }
        if burst == 0 {
            return Err(RateLimitError::Burst);
        }
        Ok(Some(RateLimit { qps, burst }))
    }
}

/// The bucket's state.
#[derive(Debug)]
struct Bucket {
    /// Tokens at `at`; below zero when waiters have reserved tokens not
    /// yet made.
    tokens: f64,
    at: Instant,
}

/// A token bucket shared by every request of a client.
#[derive(Debug)]
pub struct TokenBucket {
    limit: RateLimit,
    bucket: Mutex<Bucket>,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn new(limit: RateLimit, now: Instant) -> TokenBucket {
        TokenBucket {
            limit,
            bucket: Mutex::new(Bucket {
                tokens: f64::from(limit.burst),
                at: now,
            }),
        }
    }

    /// Takes one token at `now`: how long the request must wait for it.
    pub fn reserve(&self, now: Instant) -> Duration {
        // A poisoned lock only means another request panicked mid-update
        // of two numbers: the numbers are still usable.
        let mut bucket = self
            .bucket
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.limit.qps).min(f64::from(self.limit.burst));
        bucket.at = now.max(bucket.at);
        bucket.tokens -= 1.0;
        if bucket.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-bucket.tokens / self.limit.qps)
        }
    }

    /// Waits for a token.
    pub async fn acquire(&self) {
        let wait = self.reserve(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// `base` with every request (watches included, as client-go) first
/// taking a token of `limit`.
pub fn rate_limited(base: kube::Client, limit: RateLimit) -> kube::Client {
    let bucket = Arc::new(TokenBucket::new(limit, Instant::now()));
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let base = base.clone();
        let bucket = bucket.clone();
        async move {
            bucket.acquire().await;
            base.send(request).await
        }
    });
    kube::Client::new(service, "default")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Case {
        name: &'static str,
        qps: f64,
        burst: u32,
        /// Requests, by ms after the bucket was made full.
        requests_at_ms: &'static [u64],
        /// Each one's wait, in ms.
        waits_ms: &'static [u64],
    }

    #[test]
    fn the_bucket_lets_a_burst_through_then_spaces_requests_at_the_qps() {
        let cases = [
            Case {
                name: "a burst of 3 goes at once, the 4th waits one token (100 ms at 10 qps)",
                qps: 10.0,
                burst: 3,
                requests_at_ms: &[0, 0, 0, 0],
                waits_ms: &[0, 0, 0, 100],
            },
            Case {
                name: "waiters queue: each reserves the next token",
                qps: 10.0,
                burst: 1,
                requests_at_ms: &[0, 0, 0],
                waits_ms: &[0, 100, 200],
            },
            Case {
                name: "an idle bucket refills, but never past the burst",
                qps: 10.0,
                burst: 2,
                requests_at_ms: &[0, 0, 10_000, 10_000, 10_000],
                waits_ms: &[0, 0, 0, 0, 100],
            },
            Case {
                name: "requests at the qps never wait",
                qps: 5.0,
                burst: 1,
                requests_at_ms: &[0, 200, 400, 600],
                waits_ms: &[0, 0, 0, 0],
            },
            Case {
                name: "a request halfway through a token's making waits the other half",
                qps: 2.0,
                burst: 1,
                requests_at_ms: &[0, 250],
                waits_ms: &[0, 250],
            },
        ];
        for case in cases {
            let start = Instant::now();
            let bucket = TokenBucket::new(
                RateLimit {
                    qps: case.qps,
                    burst: case.burst,
                },
                start,
            );
            let waits: Vec<u64> = case
                .requests_at_ms
                .iter()
                .map(|&at| {
                    let wait = bucket.reserve(start + Duration::from_millis(at));
                    u64::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(u64::MAX)
                })
                .collect();
            assert_eq!(waits, case.waits_ms, "{}", case.name);
        }
    }

    #[test]
    fn the_flags_turn_the_limit_off_at_zero_and_refuse_what_could_never_send() {
        struct Flags {
            name: &'static str,
            qps: f64,
            burst: u32,
            want: Result<Option<RateLimit>, RateLimitError>,
        }
        let cases = [
            Flags {
                name: "0 qps: no limit",
                qps: 0.0,
                burst: 0,
                want: Ok(None),
            },
            Flags {
                name: "a limit",
                qps: 50.0,
                burst: 100,
                want: Ok(Some(RateLimit {
                    qps: 50.0,
                    burst: 100,
                })),
            },
            Flags {
                name: "negative qps",
                qps: -1.0,
                burst: 10,
                want: Err(RateLimitError::Qps("-1".into())),
            },
            Flags {
                name: "infinite qps",
                qps: f64::INFINITY,
                burst: 10,
                want: Err(RateLimitError::Qps("inf".into())),
            },
            Flags {
                name: "burst 0 with a limit: nothing could go",
                qps: 5.0,
                burst: 0,
                want: Err(RateLimitError::Burst),
            },
        ];
        for case in cases {
            assert_eq!(
                RateLimit::from_flags(case.qps, case.burst),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn acquire_waits_out_the_reserved_time_on_the_virtual_clock() {
        let start = Instant::now();
        let bucket = TokenBucket::new(
            RateLimit {
                qps: 10.0,
                burst: 1,
            },
            start,
        );
        for _ in 0..3 {
            bucket.acquire().await;
        }
        // One token at once, then two more at 100 ms each.
        assert_eq!(start.elapsed(), Duration::from_millis(200));
    }
}
