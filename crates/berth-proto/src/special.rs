//! The messages whose JSON is not an object of their fields, both ways: apimachinery's
//! hand-written marshalers (metav1.Time, MicroTime, Duration, resource.Quantity,
//! intstr.IntOrString, runtime.RawExtension, metav1.FieldsV1) and Go's named string slices
//! (metav1.Verbs, ExtraValue).

use base64::Engine as _;
use serde_json::Value;

use crate::Error;
use crate::schema::Special;
use crate::wire::{self, Reader, WireType};

const NANOS_PER_MICRO: i32 = 1_000;

/// Writes the body of a special message from its JSON value.
pub(crate) fn encode(buf: &mut Vec<u8>, special: Special, value: &Value) -> Result<(), Error> {
    match special {
        Special::None => Err(Error::json("not a special message")),
        Special::Time | Special::MicroTime => {
            let text = value
                .as_str()
                .ok_or_else(|| Error::json("expected an RFC 3339 time"))?;
            let time: jiff::Timestamp = text
                .parse()
                .map_err(|error| Error::json(format!("invalid time {text:?}: {error}")))?;
            // Go's Unix(): whole seconds rounded down, nanoseconds counting forward.
            let (mut seconds, mut nanos) = (time.as_second(), time.subsec_nanosecond());
            if nanos < 0 {
                seconds -= 1;
                nanos += 1_000_000_000;
            }
            // metav1.Time carries whole seconds only (its JSON has no more); MicroTime keeps
            // microseconds.
            let nanos = match special {
                Special::MicroTime => nanos - nanos % NANOS_PER_MICRO,
                _ => 0,
            };
            put_int(buf, 1, seconds);
            put_int(buf, 2, i64::from(nanos));
            Ok(())
        }
        Special::Duration => {
            let text = value
                .as_str()
                .ok_or_else(|| Error::json("expected a duration string"))?;
            let duration = berth_core::duration::parse_duration(text)
                .map_err(|error| Error::json(error.to_string()))?;
            let nanos = i64::try_from(duration.as_nanos())
                .map_err(|_| Error::json(format!("duration {text:?} out of range")))?;
            put_int(buf, 1, nanos);
            Ok(())
        }
        Special::Quantity => {
            let text = match value {
                Value::String(text) => text.clone(),
                // Go's Quantity reads a bare JSON number as its decimal text.
                Value::Number(number) => number.to_string(),
                _ => return Err(Error::json("expected a quantity string")),
            };
            wire::put_bytes(buf, 1, text.as_bytes());
            Ok(())
        }
        Special::IntOrString => {
            // Go writes all three fields: type (0 int, 1 string), intVal, strVal.
            let (kind, int_value, string_value) = match value {
                Value::String(text) => (1, 0, text.as_str()),
                Value::Number(number) => {
                    let int = number
                        .as_i64()
                        .and_then(|int| i32::try_from(int).ok())
                        .ok_or_else(|| Error::json(format!("{number} is not a 32-bit integer")))?;
                    (0, int, "")
                }
                _ => return Err(Error::json("expected an integer or a string")),
            };
            put_int(buf, 1, kind);
            put_int(buf, 2, i64::from(int_value));
            wire::put_bytes(buf, 3, string_value.as_bytes());
            Ok(())
        }
        Special::EmbeddedJson => {
            let raw = serde_json::to_vec(value).map_err(|error| Error::json(error.to_string()))?;
            wire::put_bytes(buf, 1, &raw);
            Ok(())
        }
        Special::StringList => {
            let items = value
                .as_array()
                .ok_or_else(|| Error::json("expected a list of strings"))?;
            for (index, item) in items.iter().enumerate() {
                let text = item
                    .as_str()
                    .ok_or_else(|| Error::json("expected a string").within_item(index))?;
                wire::put_bytes(buf, 1, text.as_bytes());
            }
            Ok(())
        }
    }
}

/// A varint field holding a signed integer (int32 and int64 alike: negative values take
/// ten bytes, as Go and prost write them).
fn put_int(buf: &mut Vec<u8>, tag: u32, value: i64) {
    wire::put_key(buf, tag, WireType::Varint);
    wire::put_varint(buf, value as u64);
}

/// The JSON value of a special message's body; `None` where Go's JSON has the zero value as
/// absent (an empty Time, a RawExtension without bytes).
pub(crate) fn decode(special: Special, bytes: &[u8]) -> Result<Option<Value>, Error> {
    match special {
        Special::None => Err(Error::malformed("not a special message")),
        Special::Time | Special::MicroTime => {
            if bytes.is_empty() {
                // Go writes the zero Time as an empty message.
                return Ok(None);
            }
            let (mut seconds, mut nanos) = (0i64, 0i64);
            read_fields(bytes, |tag, reader, wire_type| match (tag, wire_type) {
                (1, WireType::Varint) => reader.varint().map(|value| seconds = value as i64),
                (2, WireType::Varint) => {
                    reader.varint().map(|value| nanos = i64::from(value as i32))
                }
                _ => reader.skip(wire_type),
            })?;
            let nanos = match special {
                Special::MicroTime => nanos - nanos.rem_euclid(i64::from(NANOS_PER_MICRO)),
                _ => 0,
            };
            let time = jiff::Timestamp::new(seconds, nanos as i32)
                .map_err(|error| Error::malformed(format!("time out of range: {error}")))?;
            let text = match special {
                Special::MicroTime => format!("{}", time.strftime("%Y-%m-%dT%H:%M:%S%.6fZ")),
                _ => format!("{}", time.strftime("%Y-%m-%dT%H:%M:%SZ")),
            };
            Ok(Some(Value::String(text)))
        }
        Special::Duration => {
            let mut nanos = 0i64;
            read_fields(bytes, |tag, reader, wire_type| match (tag, wire_type) {
                (1, WireType::Varint) => reader.varint().map(|value| nanos = value as i64),
                _ => reader.skip(wire_type),
            })?;
            let nanos = u64::try_from(nanos)
                .map_err(|_| Error::malformed(format!("negative duration {nanos}ns")))?;
            let text =
                berth_core::duration::format_duration(std::time::Duration::from_nanos(nanos));
            Ok(Some(Value::String(text)))
        }
        Special::Quantity => {
            let mut text = None;
            read_fields(bytes, |tag, reader, wire_type| match (tag, wire_type) {
                (1, WireType::Len) => reader
                    .len_delimited()
                    .map(|value| text = Some(string(value))),
                _ => reader.skip(wire_type),
            })?;
            // An empty Quantity is Go's zero quantity, "0" in JSON.
            Ok(Some(Value::String(text.unwrap_or_else(|| "0".to_owned()))))
        }
        Special::IntOrString => {
            let (mut kind, mut int_value, mut string_value) = (0u64, 0i32, String::new());
            read_fields(bytes, |tag, reader, wire_type| match (tag, wire_type) {
                (1, WireType::Varint) => reader.varint().map(|value| kind = value),
                (2, WireType::Varint) => reader.varint().map(|value| int_value = value as i32),
                (3, WireType::Len) => reader
                    .len_delimited()
                    .map(|value| string_value = string(value)),
                _ => reader.skip(wire_type),
            })?;
            Ok(Some(if kind == 1 {
                Value::String(string_value)
            } else {
                Value::from(int_value)
            }))
        }
        Special::EmbeddedJson => {
            // An envelope inside (a protobuf client's own encoding) is
            // decoded by decode.rs before it gets here.
            let raw = embedded_raw(bytes)?;
            if raw.is_empty() {
                return Ok(None);
            }
            serde_json::from_slice(raw)
                .map(Some)
                .map_err(|error| Error::malformed(format!("embedded object is not JSON: {error}")))
        }
        Special::StringList => {
            let mut items = Vec::new();
            read_fields(bytes, |tag, reader, wire_type| match (tag, wire_type) {
                (1, WireType::Len) => reader
                    .len_delimited()
                    .map(|value| items.push(Value::String(string(value)))),
                _ => reader.skip(wire_type),
            })?;
            Ok(Some(Value::Array(items)))
        }
    }
}

/// Calls `read` for every field of a message body; it reads or skips the value.
fn read_fields<'a>(
    bytes: &'a [u8],
    mut read: impl FnMut(u32, &mut Reader<'a>, WireType) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut reader = Reader::new(bytes);
    while !reader.is_empty() {
        let (tag, wire_type) = reader.key()?;
        read(tag, &mut reader, wire_type)?;
    }
    Ok(())
}

/// A protobuf string as JSON has it: invalid UTF-8 replaced, as Go's JSON encoder does.
/// The bytes a RawExtension (runtime.RawExtension, field 1) carries.
pub(crate) fn embedded_raw(bytes: &[u8]) -> Result<&[u8], Error> {
    let mut raw: &[u8] = &[];
    read_fields(bytes, |tag, reader, wire_type| match (tag, wire_type) {
        (1, WireType::Len) => reader.len_delimited().map(|value| raw = value),
        _ => reader.skip(wire_type),
    })?;
    Ok(raw)
}

pub(crate) fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Bytes as Go's JSON has them: standard base64 with padding.
pub(crate) fn base64_text(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn base64_bytes(text: &str) -> Result<Vec<u8>, Error> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| Error::json(format!("invalid base64: {error}")))
}
