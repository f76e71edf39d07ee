//! The one source of time for berth.
//!
//! Everything that timestamps or waits (lease renewals, grace periods,
//! `tolerationSeconds`, rate limiters, backoff) reads a [`Clock`] instead of
//! the system clock, so a whole cluster can run on virtual time: under
//! `tokio::time::pause()` a virtual clock moves only when the runtime
//! advances it, and an hour of cluster life passes in milliseconds, the
//! same way every run.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use berth_core::clock::Clock;
//! use std::time::Duration;
//!
//! let start = "2026-01-01T00:00:00Z".parse().unwrap();
//! let clock = Clock::virtual_from(start);
//! clock.sleep(Duration::from_secs(3600)).await; // returns at once, paused
//! assert_eq!(clock.now().to_string(), "2026-01-01T01:00:00Z");
//! # }
//! ```

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// Wall time plus the ability to wait for it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Clock {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// The system clock; waits use tokio timers.
    Real,
    /// Wall time derived from tokio's (pausable) monotonic clock.
    Virtual {
        start_wall: Timestamp,
        start_instant: tokio::time::Instant,
    },
}

impl Clock {
    /// The machine's clock.
    pub fn real() -> Clock {
        Clock { kind: Kind::Real }
    }

    /// A clock that reads `start` now and then follows tokio's clock, which
    /// tests pause and advance.
    pub fn virtual_from(start: Timestamp) -> Clock {
        Clock {
            kind: Kind::Virtual {
                start_wall: start,
                start_instant: tokio::time::Instant::now(),
            },
        }
    }

    /// Whether this clock is virtual.
    pub fn is_virtual(&self) -> bool {
        matches!(self.kind, Kind::Virtual { .. })
    }

    /// The current wall time.
    pub fn now(&self) -> Timestamp {
        match &self.kind {
            Kind::Real => Timestamp::now(),
            Kind::Virtual {
                start_wall,
                start_instant,
            } => add(*start_wall, start_instant.elapsed()),
        }
    }

    /// A monotonic instant, for measuring durations.
    pub fn instant(&self) -> tokio::time::Instant {
        tokio::time::Instant::now()
    }

    /// Waits for `duration` of this clock's time.
    pub async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await
    }

    /// Waits until this clock reads `deadline` (at once if it already has).
    pub async fn sleep_until(&self, deadline: Timestamp) {
        let remaining = deadline.duration_since(self.now());
        if remaining.is_positive() {
            tokio::time::sleep(remaining.unsigned_abs()).await
        }
    }

    /// [`Clock::sleep_until`] `deadline`, or for ever without one: the timer
    /// branch of a `select!` that may have nothing to wait for. The future
    /// owns a copy of the clock, so it borrows nothing.
    pub fn sleep_until_some(
        &self,
        deadline: Option<Timestamp>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let clock = self.clone();
        async move {
            match deadline {
                Some(at) => clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        }
    }
}

/// `t + d`, saturating at the largest timestamp jiff can hold rather than
/// panicking: a deadline that far away is as good as never.
fn add(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[tokio::test(start_paused = true)]
    async fn virtual_clock_moves_only_when_tokio_time_advances() {
        let clock = Clock::virtual_from(start());
        assert_eq!(clock.now(), start());
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(
            clock.now().duration_since(start()),
            SignedDuration::from_millis(1500)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_until_wakes_exactly_at_the_deadline() {
        let clock = Clock::virtual_from(start());
        let deadline = start() + SignedDuration::from_secs(300);
        clock.sleep_until(deadline).await;
        assert_eq!(clock.now(), deadline);
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_until_the_past_returns_at_once() {
        let clock = Clock::virtual_from(start());
        clock.sleep(Duration::from_secs(10)).await;
        clock.sleep_until(start()).await;
        assert_eq!(clock.now(), start() + SignedDuration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_hour_of_virtual_time_passes_without_waiting() {
        let clock = Clock::virtual_from(start());
        let real = std::time::Instant::now();
        for _ in 0..360 {
            clock.sleep(Duration::from_secs(10)).await;
        }
        assert_eq!(clock.now(), start() + SignedDuration::from_hours(1));
        assert!(real.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn real_clock_reads_the_system_clock() {
        let before = Timestamp::now();
        let now = Clock::real().now();
        assert!(now >= before);
        assert!(!Clock::real().is_virtual());
    }
}
