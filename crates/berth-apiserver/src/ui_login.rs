//! The live page's login links: one-time codes `berth server` prints at
//! start (`/ui/#login=CODE`), each exchanged once, within a few minutes,
//! for a session token of the admin. The link in a log line is then worth
//! nothing once used or stale, unlike the admin token, which the server
//! never prints.
//!
//! Time is the server's [`Clock`], so tests run it virtually.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use berth_core::clock::Clock;
use jiff::Timestamp;

/// How long a printed link stays good.
pub const LOGIN_CODE_TTL: Duration = Duration::from_secs(5 * 60);

/// Why a code was not exchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Never issued, or already exchanged.
    Unknown,
    /// Issued, but its time is up.
    Expired,
}

impl Refused {
    pub fn message(self) -> &'static str {
        match self {
            Refused::Unknown => {
                "this login link is unknown or was already used: ask `berth server` for a new one (restart it) or paste the admin token"
            }
            Refused::Expired => {
                "this login link has expired: restart `berth server` for a new one, or paste the admin token"
            }
        }
    }
}

/// The codes not yet exchanged and when each expires.
#[derive(Debug)]
pub struct LoginCodes {
    clock: Clock,
    ttl: Duration,
    codes: Mutex<HashMap<String, Timestamp>>,
}

impl LoginCodes {
    pub fn new(clock: Clock, ttl: Duration) -> LoginCodes {
        LoginCodes {
            clock,
            ttl,
            codes: Mutex::new(HashMap::new()),
        }
    }

    /// A new code, good for the TTL from now.
    pub fn issue(&self) -> Result<String, getrandom::Error> {
        let code = random_hex()?;
        let expires = add(self.clock.now(), self.ttl);
        if let Ok(mut codes) = self.codes.lock() {
            // Stale codes go as new ones come: the map stays small.
            let now = self.clock.now();
            codes.retain(|_, at| *at > now);
            codes.insert(code.clone(), expires);
        }
        Ok(code)
    }

    /// Takes `code` (it works once): Ok if it was issued and is still good.
    pub fn redeem(&self, code: &str) -> Result<(), Refused> {
        let expires = self
            .codes
            .lock()
            .ok()
            .and_then(|mut codes| codes.remove(code))
            .ok_or(Refused::Unknown)?;
        if self.clock.now() >= expires {
            return Err(Refused::Expired);
        }
        Ok(())
    }
}

fn add(at: Timestamp, d: Duration) -> Timestamp {
    at.checked_add(jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

/// 24 random bytes as hex: a code, or the session token it buys.
pub fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A code works once, and only within its TTL, on the server's clock.
    #[tokio::test(start_paused = true)]
    async fn a_login_code_works_once_and_only_before_it_expires() {
        struct Case {
            name: &'static str,
            /// Virtual time between issuing and each exchange.
            waits: Vec<Duration>,
            want: Vec<Result<(), Refused>>,
        }
        let cases = vec![
            Case {
                name: "used at once",
                waits: vec![Duration::ZERO],
                want: vec![Ok(())],
            },
            Case {
                name: "a second use is refused",
                waits: vec![Duration::from_secs(1), Duration::from_secs(1)],
                want: vec![Ok(()), Err(Refused::Unknown)],
            },
            Case {
                name: "just before the TTL still works",
                waits: vec![LOGIN_CODE_TTL - Duration::from_millis(1)],
                want: vec![Ok(())],
            },
            Case {
                name: "at the TTL it has expired, and is gone after",
                waits: vec![LOGIN_CODE_TTL, Duration::ZERO],
                want: vec![Err(Refused::Expired), Err(Refused::Unknown)],
            },
        ];
        for Case { name, waits, want } in cases {
            let codes = LoginCodes::new(Clock::virtual_from(Timestamp::UNIX_EPOCH), LOGIN_CODE_TTL);
            let code = codes.issue().expect("random");
            let mut got = Vec::new();
            for wait in waits {
                tokio::time::advance(wait).await;
                got.push(codes.redeem(&code));
            }
            assert_eq!(got, want, "{name}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn codes_are_distinct_and_an_unissued_one_is_refused() {
        let codes = LoginCodes::new(Clock::virtual_from(Timestamp::UNIX_EPOCH), LOGIN_CODE_TTL);
        let (a, b) = (
            codes.issue().expect("random"),
            codes.issue().expect("random"),
        );
        assert_ne!(a, b);
        assert_eq!(a.len(), 48);
        assert_eq!(codes.redeem("not-a-code"), Err(Refused::Unknown));
        assert_eq!(codes.redeem(&b), Ok(()));
        assert_eq!(codes.redeem(&a), Ok(()));
    }
}
