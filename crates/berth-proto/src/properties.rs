//! Laws of the codec over random input (proptest). Random JSON is drawn from the schema
//! itself, so every message of every served package is covered: a value of any message
//! round trips, and no bytes make a decoder panic.
//!
//! The JSON generator is a seeded walk of the schema (proptest draws the seed): proptest
//! shrinks the seed, not the JSON, which is the price of covering all 549 messages without
//! building a strategy tree per message.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::schema::{self, Message, MessageId, Special, Ty};
use crate::{decode_message, decode_object, encode_message, encode_object, watch};

/// splitmix64: a small deterministic generator for the schema walk.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn string(&mut self) -> String {
        const WORDS: &[&str] = &[
            "",
            "a",
            "web",
            "kube-system",
            "ä",
            "日本",
            "🚀",
            "x y",
            "\"q\"",
            "\u{0}",
        ];
        (0..self.below(3))
            .map(|_| WORDS[self.below(WORDS.len() as u64) as usize])
            .collect()
    }

    fn int64(&mut self) -> i64 {
        match self.below(6) {
            0 => 0,
            1 => -1,
            2 => i64::MAX,
            3 => i64::MIN,
            _ => self.next() as i64 >> self.below(63),
        }
    }
}

/// A random JSON value of `message`, canonical in the form decode writes (times at their
/// precision, no empty lists or maps, which protobuf cannot carry).
fn random_message(rng: &mut Rng, message: &'static Message, depth: u32) -> Value {
    match message.special {
        Special::None => {
            let mut object = Map::new();
            random_fields(rng, message, depth, &mut object);
            Value::Object(object)
        }
        Special::Time => json!(format_time(rng, "%Y-%m-%dT%H:%M:%SZ")),
        Special::MicroTime => json!(format_time(rng, "%Y-%m-%dT%H:%M:%S%.6fZ")),
        Special::Duration => {
            let nanos = rng.below(i64::MAX as u64);
            json!(berth_core::duration::format_duration(
                std::time::Duration::from_nanos(nanos)
            ))
        }
        Special::Quantity => json!(["0", "100m", "1.5Gi", "12e3", "-1"][rng.below(5) as usize]),
        Special::IntOrString => {
            if rng.chance(50) {
                json!(rng.next() as i32)
            } else {
                json!(rng.string())
            }
        }
        Special::EmbeddedJson => {
            let choices = json!([{"a": 1}, {"f:spec": {".": {}}}, "text", 1.5, [1, "x", null], {}]);
            choices[rng.below(6) as usize].clone()
        }
        Special::StringList => {
            Value::Array((0..rng.below(3)).map(|_| json!(rng.string())).collect())
        }
    }
}

fn format_time(rng: &mut Rng, format: &str) -> String {
    // Years 1 to 9999, as Go formats them.
    let seconds = rng.below(315_537_897_599 - 62_135_596_800) as i64 - 62_135_596_800 + 86_400;
    let nanos = (rng.below(1_000_000) * 1_000) as i32;
    let time = jiff::Timestamp::new(seconds, nanos).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    time.strftime(format).to_string()
}

fn random_fields(
    rng: &mut Rng,
    message: &'static Message,
    depth: u32,
    object: &mut Map<String, Value>,
) {
    for field in message.fields {
        // Fewer fields deeper down, so values stay small.
        if depth > 6 || !rng.chance(60 - u64::from(depth) * 8) {
            continue;
        }
        if field.inline {
            if let Ty::Message(inner) = field.ty {
                random_fields(rng, MessageId(inner).get(), depth + 1, object);
            }
            continue;
        }
        let value = if field.repeated {
            let items: Vec<Value> = (0..1 + rng.below(3))
                .map(|_| random_single(rng, field.ty, depth))
                .collect();
            Value::Array(items)
        } else {
            match field.ty {
                Ty::MapString | Ty::MapBytes | Ty::MapMessage(_) => {
                    let value_ty = match field.ty {
                        Ty::MapString => Ty::String,
                        Ty::MapBytes => Ty::Bytes,
                        Ty::MapMessage(inner) => Ty::Message(inner),
                        other => other,
                    };
                    let entries: Map<String, Value> = (0..1 + rng.below(3))
                        .map(|_| (rng.string(), random_single(rng, value_ty, depth)))
                        .collect();
                    Value::Object(entries)
                }
                ty => random_single(rng, ty, depth),
            }
        };
        object.insert(field.json.to_owned(), value);
    }
}

fn random_single(rng: &mut Rng, ty: Ty, depth: u32) -> Value {
    match ty {
        Ty::Bool => json!(rng.chance(50)),
        Ty::Int32 => json!(rng.int64() as i32),
        Ty::Int64 => json!(rng.int64()),
        Ty::Double => json!(f64::from(rng.next() as i32) / 8.0),
        Ty::String => json!(rng.string()),
        Ty::Bytes => {
            let bytes: Vec<u8> = (0..rng.below(6)).map(|_| rng.next() as u8).collect();
            json!(crate::special::base64_text(&bytes))
        }
        Ty::Message(inner) => random_message(rng, MessageId(inner).get(), depth + 1),
        Ty::MapString | Ty::MapBytes | Ty::MapMessage(_) => Value::Null,
    }
}

fn every_message() -> Vec<MessageId> {
    schema::messages().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_message_round_trips(seed in any::<u64>(), index in any::<prop::sample::Index>()) {
        let messages = every_message();
        let message = messages[index.index(messages.len())];
        let json = random_message(&mut Rng(seed), message.get(), 0);
        let bytes = encode_message(&json, message).map_err(|error| TestCaseError::fail(format!("{}: {error}", message.name())))?;
        let back = decode_message(&bytes, message).map_err(|error| TestCaseError::fail(format!("{}: {error}", message.name())))?;
        prop_assert_eq!(back, json, "{}", message.name());
    }

    #[test]
    fn pods_round_trip(seed in any::<u64>()) {
        let pod = schema::message("k8s.io.api.core.v1.Pod").ok_or_else(|| TestCaseError::fail("no Pod"))?;
        let mut object = random_message(&mut Rng(seed), pod.get(), 0);
        object["apiVersion"] = json!("v1");
        object["kind"] = json!("Pod");
        let bytes = encode_object(&object).map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(decode_object(&bytes).map_err(|error| TestCaseError::fail(error.to_string()))?, object);
    }

    /// Arbitrary bytes, as any message, as an envelope, as a watch frame: an error or a
    /// value, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), index in any::<prop::sample::Index>()) {
        let messages = every_message();
        let _ = decode_message(&bytes, messages[index.index(messages.len())]);
        let mut enveloped = b"k8s\x00".to_vec();
        enveloped.extend(&bytes);
        let _ = decode_object(&enveloped);
        let _ = watch::decode_event(&bytes);
        let _ = watch::split_frame(&bytes, 1 << 16);
    }

    /// A real Pod with bytes flipped, cut short or spliced: an error or a value, never a
    /// panic.
    #[test]
    fn corrupted_pods_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let pod: Value = serde_json::from_str(include_str!("../tests/data/pod.json")).map_err(|error| TestCaseError::fail(error.to_string()))?;
        let mut bytes = encode_object(&pod).map_err(|error| TestCaseError::fail(error.to_string()))?;
        for (at, byte) in flips {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        let _ = decode_object(&bytes);
        let _ = decode_object(&bytes[..cut.index(bytes.len())]);
    }
}

/// Envelopes nested in RawExtensions nested in envelopes stop at the depth limit with an
/// error, however deep the input claims to go.
#[test]
fn nesting_is_bounded() {
    let revision =
        |data: Value| json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "data": data});
    let mut bytes = encode_object(&revision(json!({}))).unwrap_or_default();
    for _ in 0..100 {
        // A ControllerRevision whose data is the previous one's protobuf envelope.
        let mut outer = b"k8s\x00".to_vec();
        let mut unknown = Vec::new();
        crate::wire::put_nested::<()>(&mut unknown, 1, |buf| {
            crate::wire::put_bytes(buf, 1, b"apps/v1");
            crate::wire::put_bytes(buf, 2, b"ControllerRevision");
            Ok(())
        })
        .ok();
        crate::wire::put_nested::<()>(&mut unknown, 2, |buf| {
            crate::wire::put_nested::<()>(buf, 2, |buf| {
                crate::wire::put_bytes(buf, 1, &bytes);
                Ok(())
            })
        })
        .ok();
        outer.extend(unknown);
        bytes = outer;
    }
    let error = decode_object(&bytes).err().map(|error| error.to_string());
    assert!(error.is_some_and(|error| error.contains("nested too deeply")));
}
