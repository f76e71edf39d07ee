//! Builders for the taint eviction tests: upstream's
//! `createNoExecuteTaint(index)` and `addToleration(pod, index, duration)`.

use berth_core::test_util::{tol, tol_secs};
use berth_core::toleration::{EFFECT_NO_EXECUTE, OP_EQUAL};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `s` seconds after a fixed instant.
pub fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// `testTaint<index>=test<index>:NoExecute`, added at `t(added)`.
pub fn taint_n(index: u32, added: i64) -> Taint {
    Taint {
        key: format!("testTaint{index}"),
        value: Some(format!("test{index}")),
        effect: EFFECT_NO_EXECUTE.into(),
        time_added: Some(Time(t(added))),
    }
}

/// A toleration of `taint_n(index, _)` for `seconds` (negative: forever).
pub fn tol_n(index: u32, seconds: i64) -> Toleration {
    let key = format!("testTaint{index}");
    let value = format!("test{index}");
    if seconds < 0 {
        tol(&key, OP_EQUAL, &value, EFFECT_NO_EXECUTE)
    } else {
        tol_secs(&key, OP_EQUAL, &value, EFFECT_NO_EXECUTE, seconds)
    }
}
