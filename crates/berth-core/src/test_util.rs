//! Builders for taints and tolerations in tests, written the way upstream's
//! tests write them: an empty string means "not set".
//!
//! Compiled for berth-core's own tests and, through the `test-util`
//! feature, for other crates' tests (berth-scheduler enables it as a
//! dev-dependency feature only).

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// A taint; `""` value means no value.
pub fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

/// A toleration without `tolerationSeconds`; each `""` field is left unset.
pub fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: some(key),
        operator: some(op),
        value: some(value),
        effect: some(effect),
        toleration_seconds: None,
    }
}

/// [`tol`] with `tolerationSeconds` set.
pub fn tol_secs(key: &str, op: &str, value: &str, effect: &str, s: i64) -> Toleration {
    Toleration {
        toleration_seconds: Some(s),
        ..tol(key, op, value, effect)
    }
}

/// `s` seconds after a fixed instant (the taint eviction tests' clock).
pub fn t(s: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_800_000_000 + s).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// Upstream's `createNoExecuteTaint(index)`:
/// `testTaint<index>=test<index>:NoExecute`, added at `t(added)`.
pub fn taint_n(index: u32, added: i64) -> Taint {
    Taint {
        time_added: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(
            added,
        ))),
        ..taint(
            &format!("testTaint{index}"),
            &format!("test{index}"),
            crate::toleration::EFFECT_NO_EXECUTE,
        )
    }
}

/// Upstream's `addToleration(pod, index, duration)`: a toleration of
/// `taint_n(index, _)` for `seconds` (negative: forever).
pub fn tol_n(index: u32, seconds: i64) -> Toleration {
    let (key, value) = (format!("testTaint{index}"), format!("test{index}"));
    let (op, effect) = (
        crate::toleration::OP_EQUAL,
        crate::toleration::EFFECT_NO_EXECUTE,
    );
    if seconds < 0 {
        tol(&key, op, &value, effect)
    } else {
        tol_secs(&key, op, &value, effect, seconds)
    }
}
