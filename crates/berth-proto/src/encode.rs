//! JSON → protobuf, driven by the schema.
//!
//! Fields are written in tag order, as Go and prost write them. JSON `null` is an absent
//! field (Go's JSON decoder leaves the zero value); a present zero (`0`, `""`, `false`) is
//! written, so it reads back present. JSON properties the message has no field for are
//! dropped: kube-apiserver encodes typed Go values, which cannot hold them, and berth's JSON
//! is validated before it is encoded.

use serde_json::{Map, Value};

use crate::schema::{Field, Message, MessageId, Special, Ty};
use crate::wire::{self, WireType};
use crate::{Error, special};

/// Appends the protobuf encoding of `json` as `message` to `buf`.
pub(crate) fn encode_into(
    buf: &mut Vec<u8>,
    json: &Value,
    message: MessageId,
) -> Result<(), Error> {
    message_body(buf, json, message.get())
}

fn message_body(buf: &mut Vec<u8>, json: &Value, message: &'static Message) -> Result<(), Error> {
    if message.special != Special::None {
        return special::encode(buf, message.special, json);
    }
    let object = json
        .as_object()
        .ok_or_else(|| Error::json(format!("expected an object, not {}", json_type(json))))?;
    object_fields(buf, object, message)
}

fn object_fields(
    buf: &mut Vec<u8>,
    object: &Map<String, Value>,
    message: &'static Message,
) -> Result<(), Error> {
    for field in message.fields {
        if field.inline {
            // An embedded Go struct: its fields are this object's properties.
            let Ty::Message(inner) = field.ty else {
                continue;
            };
            let inner = MessageId(inner).get();
            if inner
                .fields
                .iter()
                .any(|inner_field| object.contains_key(inner_field.json))
            {
                // The embedded struct's properties are this object's own: its errors name
                // them without the embedded field's name.
                wire::put_nested(buf, field.tag, |buf| object_fields(buf, object, inner))?;
            }
            continue;
        }
        match object.get(field.json) {
            None | Some(Value::Null) => {}
            Some(value) => {
                field_value(buf, field, value).map_err(|error| error.within(field.json))?
            }
        }
    }
    Ok(())
}

fn field_value(buf: &mut Vec<u8>, field: &Field, value: &Value) -> Result<(), Error> {
    if field.repeated {
        let items = value
            .as_array()
            .ok_or_else(|| Error::json(format!("expected a list, not {}", json_type(value))))?;
        // Repeated scalars unpacked, as proto2 and Kubernetes' generated code write them.
        for (index, item) in items.iter().enumerate() {
            single(buf, field.tag, field.ty, item).map_err(|error| error.within_item(index))?;
        }
        return Ok(());
    }
    match field.ty {
        Ty::MapString | Ty::MapBytes | Ty::MapMessage(_) => {
            let entries = value.as_object().ok_or_else(|| {
                Error::json(format!("expected an object, not {}", json_type(value)))
            })?;
            let value_ty = match field.ty {
                Ty::MapString => Ty::String,
                Ty::MapBytes => Ty::Bytes,
                Ty::MapMessage(inner) => Ty::Message(inner),
                other => other,
            };
            for (key, entry) in entries {
                wire::put_nested(buf, field.tag, |buf| {
                    wire::put_bytes(buf, 1, key.as_bytes());
                    single(buf, 2, value_ty, entry)
                })
                .map_err(|error| error.within(key))?;
            }
            Ok(())
        }
        ty => single(buf, field.tag, ty, value),
    }
}

/// One value of a non-map type as field `tag`.
fn single(buf: &mut Vec<u8>, tag: u32, ty: Ty, value: &Value) -> Result<(), Error> {
    let mismatch = |want: &str| Error::json(format!("expected {want}, not {}", json_type(value)));
    match ty {
        Ty::Bool => {
            let flag = value.as_bool().ok_or_else(|| mismatch("a boolean"))?;
            wire::put_key(buf, tag, WireType::Varint);
            wire::put_varint(buf, u64::from(flag));
        }
        Ty::Int32 => {
            let number = value.as_i64().ok_or_else(|| mismatch("an integer"))?;
            let number = i32::try_from(number)
                .map_err(|_| Error::json(format!("{number} does not fit in 32 bits")))?;
            wire::put_key(buf, tag, WireType::Varint);
            wire::put_varint(buf, i64::from(number) as u64);
        }
        Ty::Int64 => {
            let number = value.as_i64().ok_or_else(|| mismatch("an integer"))?;
            wire::put_key(buf, tag, WireType::Varint);
            wire::put_varint(buf, number as u64);
        }
        Ty::Double => {
            let number = value.as_f64().ok_or_else(|| mismatch("a number"))?;
            wire::put_key(buf, tag, WireType::Fixed64);
            buf.extend_from_slice(&number.to_bits().to_le_bytes());
        }
        Ty::String => {
            let text = value.as_str().ok_or_else(|| mismatch("a string"))?;
            wire::put_bytes(buf, tag, text.as_bytes());
        }
        Ty::Bytes => {
            let text = value.as_str().ok_or_else(|| mismatch("a base64 string"))?;
            wire::put_bytes(buf, tag, &special::base64_bytes(text)?);
        }
        Ty::Message(inner) => {
            wire::put_nested(buf, tag, |buf| {
                message_body(buf, value, MessageId(inner).get())
            })?;
        }
        Ty::MapString | Ty::MapBytes | Ty::MapMessage(_) => {
            return Err(Error::json("a map cannot be an item of a list"));
        }
    }
    Ok(())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
