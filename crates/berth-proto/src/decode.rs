//! Protobuf → JSON, driven by the schema.
//!
//! What is on the wire is in the JSON: a field present with a zero value reads back as that
//! zero (`0`, `""`, `false`), an absent field stays absent. Unknown field numbers are
//! skipped, as protobuf readers do. Bad bytes are an error, never a panic; nesting is
//! bounded (an object embedded in an object's RawExtension counts too).

use serde_json::{Map, Value};

use crate::schema::{Field, Message, MessageId, Special, Ty};
use crate::wire::{Reader, WireType};
use crate::{Error, Zeros, envelope, special};

/// How deep messages may nest: the schema's deepest path is far shallower, so only crafted
/// input (envelopes inside RawExtensions inside envelopes...) reaches it.
pub(crate) const MAX_DEPTH: u32 = 64;

/// The JSON value of `bytes` read as `message`. A special message whose Go zero value has no
/// JSON form (an empty Time) reads as `null`.
pub(crate) fn decode_message(
    bytes: &[u8],
    message: MessageId,
    depth: u32,
    zeros: Zeros,
) -> Result<Value, Error> {
    Ok(message_value(bytes, message.get(), depth, zeros)?.unwrap_or(Value::Null))
}

fn message_value(
    bytes: &[u8],
    message: &'static Message,
    depth: u32,
    zeros: Zeros,
) -> Result<Option<Value>, Error> {
    if depth >= MAX_DEPTH {
        return Err(Error::malformed("messages nested too deeply"));
    }
    if message.special == Special::EmbeddedJson {
        let raw = special::embedded_raw(bytes)?;
        if raw.starts_with(&envelope::MAGIC) {
            // An object a protobuf client embedded in its own encoding.
            return decode_object_at_depth(raw, depth + 1, zeros).map(Some);
        }
    }
    if message.special != Special::None {
        return special::decode(message.special, bytes);
    }
    let mut object = Map::new();
    object_fields(bytes, message, &mut object, depth, zeros)?;
    Ok(Some(Value::Object(object)))
}

fn object_fields(
    bytes: &[u8],
    message: &'static Message,
    object: &mut Map<String, Value>,
    depth: u32,
    zeros: Zeros,
) -> Result<(), Error> {
    let mut reader = Reader::new(bytes);
    while !reader.is_empty() {
        let (tag, wire_type) = reader.key()?;
        let Some(field) = message.field_by_tag(tag) else {
            reader.skip(wire_type)?;
            continue;
        };
        field_value(&mut reader, wire_type, field, object, depth, zeros).map_err(|error| {
            // An embedded struct's properties are this object's own: no name in the path.
            if field.inline {
                error
            } else {
                error.within(field.json)
            }
        })?;
    }
    Ok(())
}

fn field_value(
    reader: &mut Reader<'_>,
    wire_type: WireType,
    field: &'static Field,
    object: &mut Map<String, Value>,
    depth: u32,
    zeros: Zeros,
) -> Result<(), Error> {
    if field.inline {
        // An embedded Go struct: its fields become this object's properties.
        let Ty::Message(inner) = field.ty else {
            return Err(Error::malformed("an embedded field must be a message"));
        };
        let bytes = expect_len(reader, wire_type)?;
        if depth + 1 >= MAX_DEPTH {
            return Err(Error::malformed("messages nested too deeply"));
        }
        return object_fields(bytes, MessageId(inner).get(), object, depth + 1, zeros);
    }
    match field.ty {
        Ty::MapString | Ty::MapBytes | Ty::MapMessage(_) => {
            let entry = expect_len(reader, wire_type)?;
            let (key, value) = map_entry(entry, field.ty, depth, zeros)?;
            let map = slot(object, field.json, || Value::Object(Map::new()));
            if let (Value::Object(map), Some(value)) = (map, value) {
                map.insert(key, value);
            }
        }
        ty if field.repeated => {
            let Value::Array(items) = slot(object, field.json, || Value::Array(Vec::new())) else {
                return Err(Error::malformed("a list field read as a single value"));
            };
            if wire_type == WireType::Len && is_packable(ty) {
                // A packed run of numbers: accepted as protobuf readers must, though
                // Kubernetes writes them unpacked.
                let mut packed = Reader::new(reader.len_delimited()?);
                while !packed.is_empty() {
                    items.push(scalar(&mut packed, packed_wire_type(ty), ty)?);
                }
            } else if let Some(value) = single(reader, wire_type, ty, depth, zeros)? {
                items.push(value);
            }
        }
        ty => match single(reader, wire_type, ty, depth, zeros)? {
            // Go clients write every non-pointer field; Go's JSON has no zero of these.
            Some(value) if zeros == Zeros::AsGoJson && field.omits_zero && is_zero(&value) => {}
            Some(value) => {
                object.insert(field.json.to_owned(), value);
            }
            None => {}
        },
    }
    Ok(())
}

/// The object's property `json`, made with `empty` if absent (looked up before inserting,
/// so a list's items do not allocate its name again each).
fn slot<'o>(
    object: &'o mut Map<String, Value>,
    json: &str,
    empty: impl FnOnce() -> Value,
) -> &'o mut Value {
    if !object.contains_key(json) {
        object.insert(json.to_owned(), empty());
    }
    // Inserted above if it was missing.
    object.get_mut(json).unwrap_or_else(|| unreachable!())
}

fn single(
    reader: &mut Reader<'_>,
    wire_type: WireType,
    ty: Ty,
    depth: u32,
    zeros: Zeros,
) -> Result<Option<Value>, Error> {
    match ty {
        Ty::Message(inner) => {
            let bytes = expect_len(reader, wire_type)?;
            message_value(bytes, MessageId(inner).get(), depth + 1, zeros)
        }
        _ => scalar(reader, wire_type, ty).map(Some),
    }
}

fn scalar(reader: &mut Reader<'_>, wire_type: WireType, ty: Ty) -> Result<Value, Error> {
    let expected = match ty {
        Ty::Bool | Ty::Int32 | Ty::Int64 => WireType::Varint,
        Ty::Double => WireType::Fixed64,
        _ => WireType::Len,
    };
    if wire_type != expected {
        return Err(Error::malformed(format!(
            "wire type {wire_type:?} for a {ty:?} field"
        )));
    }
    Ok(match ty {
        Ty::Bool => Value::Bool(reader.varint()? != 0),
        // int32 keeps the low 32 bits of the varint, as every protobuf reader does.
        Ty::Int32 => Value::from(reader.varint()? as i32),
        Ty::Int64 => Value::from(reader.varint()? as i64),
        Ty::Double => {
            let number = f64::from_bits(reader.fixed64()?);
            serde_json::Number::from_f64(number)
                .map(Value::Number)
                .ok_or_else(|| Error::malformed(format!("{number} has no JSON form")))?
        }
        Ty::String => Value::String(special::string(reader.len_delimited()?)),
        Ty::Bytes => Value::String(special::base64_text(reader.len_delimited()?)),
        Ty::Message(_) | Ty::MapString | Ty::MapBytes | Ty::MapMessage(_) => {
            return Err(Error::malformed("not a scalar field"));
        }
    })
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Bool(flag) => !flag,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

fn is_packable(ty: Ty) -> bool {
    matches!(ty, Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Double)
}

fn packed_wire_type(ty: Ty) -> WireType {
    if ty == Ty::Double {
        WireType::Fixed64
    } else {
        WireType::Varint
    }
}

/// A map entry: key (field 1) and value (field 2), either of which may be absent (then the
/// zero value). A message value whose JSON is absent (an empty Time) leaves the key out.
fn map_entry(
    bytes: &[u8],
    ty: Ty,
    depth: u32,
    zeros: Zeros,
) -> Result<(String, Option<Value>), Error> {
    let value_ty = match ty {
        Ty::MapString => Ty::String,
        Ty::MapBytes => Ty::Bytes,
        Ty::MapMessage(inner) => Ty::Message(inner),
        other => other,
    };
    let mut key = String::new();
    let mut value = None;
    let mut reader = Reader::new(bytes);
    while !reader.is_empty() {
        match reader.key()? {
            (1, WireType::Len) => key = special::string(reader.len_delimited()?),
            (2, wire_type) => value = Some(single(&mut reader, wire_type, value_ty, depth, zeros)?),
            (_, wire_type) => reader.skip(wire_type)?,
        }
    }
    let value = match value {
        Some(value) => value,
        None => match value_ty {
            Ty::String | Ty::Bytes => Some(Value::String(String::new())),
            Ty::Message(inner) => message_value(&[], MessageId(inner).get(), depth + 1, zeros)?,
            _ => None,
        },
    };
    Ok((key, value))
}

fn expect_len<'a>(reader: &mut Reader<'a>, wire_type: WireType) -> Result<&'a [u8], Error> {
    if wire_type != WireType::Len {
        return Err(Error::malformed(format!(
            "wire type {wire_type:?} for a message field"
        )));
    }
    reader.len_delimited()
}

/// The JSON object of a protobuf body, with its `apiVersion` and `kind` from the envelope.
pub fn decode_object(bytes: &[u8]) -> Result<Value, Error> {
    decode_object_at_depth(bytes, 0, Zeros::Kept)
}

/// [`decode_object`], with zero values kept or left out as `zeros` says.
pub fn decode_object_with(bytes: &[u8], zeros: Zeros) -> Result<Value, Error> {
    decode_object_at_depth(bytes, 0, zeros)
}

pub(crate) fn decode_object_at_depth(
    bytes: &[u8],
    depth: u32,
    zeros: Zeros,
) -> Result<Value, Error> {
    if depth >= MAX_DEPTH {
        return Err(Error::malformed("objects nested too deeply"));
    }
    let envelope = envelope::unwrap(bytes)?;
    let message = envelope.message()?;
    let mut object = decode_message(envelope.raw, message, depth + 1, zeros)?;
    if let Value::Object(fields) = &mut object {
        fields.insert("apiVersion".to_owned(), Value::String(envelope.api_version));
        fields.insert("kind".to_owned(), Value::String(envelope.kind));
    }
    Ok(object)
}
