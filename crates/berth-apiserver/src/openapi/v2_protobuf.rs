//! `/openapi/v2` as protobuf: gnostic's `openapi_v2.Document`
//! (`github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`), which
//! client-go's `OpenAPISchema()` asks for and parses. kubectl uses it to
//! validate objects client-side when the server does not validate them
//! (a `kind: List` manifest, a kind the server does not serve) and to
//! compute `apply` patches when the v3 documents cannot.
//!
//! The encoder covers the part of the Swagger 2.0 object model that the
//! documents use (see `paths.rs` and `definitions.rs`): the field numbers
//! are gnostic's. Vendor extensions go in as `NamedAny` with the value's
//! text in `Any.yaml`; JSON is YAML, and that is how client-go reads them
//! back (`yaml.Unmarshal`). Keys the model does not have are left out, as
//! gnostic's compiler would refuse them.

use serde_json::{Map, Value};

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LENGTH_DELIMITED: u8 = 2;

impl Message {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.key(field, LENGTH_DELIMITED);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    /// A string field (proto3: an empty string is not written).
    fn string(&mut self, field: u32, value: Option<&Value>) {
        if let Some(s) = value.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.bytes(field, s.as_bytes());
        }
    }

    fn strings(&mut self, field: u32, value: Option<&Value>) {
        for s in value.and_then(Value::as_array).into_iter().flatten() {
            self.string(field, Some(s));
        }
    }

    fn boolean(&mut self, field: u32, value: Option<&Value>) {
        if value.and_then(Value::as_bool) == Some(true) {
            self.key(field, VARINT);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, value: Option<&Value>) {
        if let Some(n) = value.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.key(field, VARINT);
            self.varint(n as u64);
        }
    }

    fn double(&mut self, field: u32, value: Option<&Value>) {
        if let Some(n) = value.and_then(Value::as_f64).filter(|n| *n != 0.0) {
            self.key(field, FIXED64);
            self.0.extend_from_slice(&n.to_le_bytes());
        }
    }

    fn message(&mut self, field: u32, message: Message) {
        self.bytes(field, &message.0);
    }

    /// A sub-message built by `build` from `value`, when `value` is set.
    fn nested(&mut self, field: u32, value: Option<&Value>, build: fn(&Value) -> Message) {
        if let Some(value) = value.filter(|v| !v.is_null()) {
            self.message(field, build(value));
        }
    }

    /// `Any`, with the value's text as YAML.
    fn any(&mut self, field: u32, value: Option<&Value>) {
        if let Some(value) = value {
            self.message(field, any(value));
        }
    }

    /// The `x-...` keys of `object` as `repeated NamedAny`.
    fn extensions(&mut self, field: u32, object: &Map<String, Value>) {
        for (name, value) in object.iter().filter(|(k, _)| k.starts_with("x-")) {
            let mut named = Message::default();
            named.bytes(1, name.as_bytes());
            named.message(2, any(value));
            self.message(field, named);
        }
    }

    /// Entries of a JSON object as `repeated Named<T>` (`name` = 1,
    /// `value` = 2).
    fn named<'a>(
        &mut self,
        field: u32,
        entries: impl IntoIterator<Item = (&'a String, &'a Value)>,
        build: fn(&Value) -> Message,
    ) {
        for (name, value) in entries {
            let mut named = Message::default();
            named.bytes(1, name.as_bytes());
            named.message(2, build(value));
            self.message(field, named);
        }
    }
}

fn any(value: &Value) -> Message {
    let mut message = Message::default();
    message.bytes(2, value.to_string().as_bytes());
    message
}

fn object(value: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    value
        .as_object()
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// Encodes a Swagger 2.0 document (as `/openapi/v2` serves it in JSON).
pub(super) fn encode(document: &Value) -> Vec<u8> {
    let doc = object(document);
    let mut message = Message::default();
    message.string(1, doc.get("swagger"));
    message.nested(2, doc.get("info"), info);
    message.strings(5, doc.get("schemes"));
    message.strings(6, doc.get("consumes"));
    message.strings(7, doc.get("produces"));
    message.nested(8, doc.get("paths"), paths);
    message.nested(9, doc.get("definitions"), |v| {
        let mut definitions = Message::default();
        definitions.named(1, object(v), schema);
        definitions
    });
    message.extensions(16, doc);
    message.0
}

fn info(value: &Value) -> Message {
    let info = object(value);
    let mut message = Message::default();
    message.string(1, info.get("title"));
    message.string(2, info.get("version"));
    message.string(3, info.get("description"));
    message.extensions(7, info);
    message
}

fn paths(value: &Value) -> Message {
    let paths = object(value);
    let mut message = Message::default();
    message.extensions(1, paths);
    let items = paths.iter().filter(|(k, _)| !k.starts_with("x-"));
    message.named(2, items, path_item);
    message
}

fn path_item(value: &Value) -> Message {
    let item = object(value);
    let mut message = Message::default();
    message.string(1, item.get("$ref"));
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        message.nested(field, item.get(method), operation);
    }
    parameters(&mut message, 9, item.get("parameters"));
    message.extensions(10, item);
    message
}

fn operation(value: &Value) -> Message {
    let op = object(value);
    let mut message = Message::default();
    message.strings(1, op.get("tags"));
    message.string(2, op.get("summary"));
    message.string(3, op.get("description"));
    message.string(5, op.get("operationId"));
    message.strings(6, op.get("produces"));
    message.strings(7, op.get("consumes"));
    parameters(&mut message, 8, op.get("parameters"));
    message.nested(9, op.get("responses"), responses);
    message.strings(10, op.get("schemes"));
    message.boolean(11, op.get("deprecated"));
    message.extensions(13, op);
    message
}

/// `repeated ParametersItem`: a parameter or a reference to one.
fn parameters(message: &mut Message, field: u32, value: Option<&Value>) {
    for param in value.and_then(Value::as_array).into_iter().flatten() {
        let p = object(param);
        let mut item = Message::default();
        if p.contains_key("$ref") {
            let mut reference = Message::default();
            reference.string(1, p.get("$ref"));
            reference.string(2, p.get("description"));
            item.message(2, reference);
        } else {
            item.message(1, parameter(p));
        }
        message.message(field, item);
    }
}

/// `Parameter`: a body parameter, or a query or path parameter.
fn parameter(p: &Map<String, Value>) -> Message {
    let mut parameter = Message::default();
    match p.get("in").and_then(Value::as_str) {
        Some("body") => {
            let mut body = Message::default();
            body.string(1, p.get("description"));
            body.string(2, p.get("name"));
            body.string(3, p.get("in"));
            body.boolean(4, p.get("required"));
            body.nested(5, p.get("schema"), schema);
            body.extensions(6, p);
            parameter.message(1, body);
        }
        location => {
            // QueryParameterSubSchema and PathParameterSubSchema: the same
            // fields, path parameters without `allowEmptyValue` (5).
            let (sub_schema, shift) = match location {
                Some("path") => (4, 1),
                _ => (3, 0),
            };
            let mut sub = Message::default();
            sub.boolean(1, p.get("required"));
            sub.string(2, p.get("in"));
            sub.string(3, p.get("description"));
            sub.string(4, p.get("name"));
            if shift == 0 {
                sub.boolean(5, p.get("allowEmptyValue"));
            }
            sub.string(6 - shift, p.get("type"));
            sub.string(7 - shift, p.get("format"));
            sub.boolean(20 - shift, p.get("uniqueItems"));
            sub.extensions(23 - shift, p);
            let mut non_body = Message::default();
            non_body.message(sub_schema, sub);
            parameter.message(2, non_body);
        }
    }
    parameter
}

fn responses(value: &Value) -> Message {
    let codes = object(value);
    let mut message = Message::default();
    for (code, answer) in codes.iter().filter(|(k, _)| !k.starts_with("x-")) {
        let a = object(answer);
        let mut response = Message::default();
        response.string(1, a.get("description"));
        response.nested(2, a.get("schema"), |s| {
            let mut item = Message::default();
            item.message(1, schema(s));
            item
        });
        response.extensions(5, a);
        let mut response_value = Message::default();
        response_value.message(1, response);
        let mut named = Message::default();
        named.bytes(1, code.as_bytes());
        named.message(2, response_value);
        message.message(1, named);
    }
    message.extensions(2, codes);
    message
}

fn schema(value: &Value) -> Message {
    let s = object(value);
    let mut message = Message::default();
    message.string(1, s.get("$ref"));
    message.string(2, s.get("format"));
    message.string(3, s.get("title"));
    message.string(4, s.get("description"));
    message.any(5, s.get("default"));
    message.double(6, s.get("multipleOf"));
    message.double(7, s.get("maximum"));
    message.boolean(8, s.get("exclusiveMaximum"));
    message.double(9, s.get("minimum"));
    message.boolean(10, s.get("exclusiveMinimum"));
    message.int64(11, s.get("maxLength"));
    message.int64(12, s.get("minLength"));
    message.string(13, s.get("pattern"));
    message.int64(14, s.get("maxItems"));
    message.int64(15, s.get("minItems"));
    message.boolean(16, s.get("uniqueItems"));
    message.int64(17, s.get("maxProperties"));
    message.int64(18, s.get("minProperties"));
    message.strings(19, s.get("required"));
    for value in s
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.any(20, Some(value));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            let mut item = Message::default();
            item.key(2, VARINT);
            item.varint(u64::from(*allowed));
            message.message(21, item);
        }
        Some(additional @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(additional));
            message.message(21, item);
        }
        _ => {}
    }
    match s.get("type") {
        Some(ty @ Value::String(_)) => {
            let mut item = Message::default();
            item.string(1, Some(ty));
            message.message(22, item);
        }
        Some(types @ Value::Array(_)) => {
            let mut item = Message::default();
            item.strings(1, Some(types));
            message.message(22, item);
        }
        _ => {}
    }
    match s.get("items") {
        Some(items @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(items));
            message.message(23, item);
        }
        Some(Value::Array(items)) => {
            let mut item = Message::default();
            for items in items {
                item.message(1, schema(items));
            }
            message.message(23, item);
        }
        _ => {}
    }
    for all_of in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.message(24, schema(all_of));
    }
    message.nested(25, s.get("properties"), |properties| {
        let mut message = Message::default();
        message.named(1, object(properties), schema);
        message
    });
    message.string(26, s.get("discriminator"));
    message.boolean(27, s.get("readOnly"));
    message.any(30, s.get("example"));
    message.extensions(31, s);
    message
}

#[cfg(test)]
pub(super) mod wire {
    //! A reader of protobuf wire format, for the tests: the fields of one
    //! message, length-delimited ones as bytes.

    pub(crate) enum Field<'a> {
        Varint,
        Bytes(&'a [u8]),
        Fixed64,
    }

    fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *bytes.get(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }

    /// The fields of a message, in order; `None` if it is malformed.
    pub(crate) fn fields(bytes: &[u8]) -> Option<Vec<(u32, Field<'_>)>> {
        let mut at = 0;
        let mut fields = Vec::new();
        while at < bytes.len() {
            let key = varint(bytes, &mut at)?;
            let number = u32::try_from(key >> 3).ok()?;
            let field = match key & 7 {
                0 => {
                    varint(bytes, &mut at)?;
                    Field::Varint
                }
                1 => {
                    at += 8;
                    Field::Fixed64
                }
                2 => {
                    let len = usize::try_from(varint(bytes, &mut at)?).ok()?;
                    let field = Field::Bytes(bytes.get(at..at + len)?);
                    at += len;
                    field
                }
                _ => return None,
            };
            fields.push((number, field));
        }
        (at == bytes.len()).then_some(fields)
    }

    /// The length-delimited fields numbered `number`.
    pub(crate) fn messages(bytes: &[u8], number: u32) -> Vec<&[u8]> {
        fields(bytes)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(n, f)| match f {
                Field::Bytes(b) if n == number => Some(b),
                _ => None,
            })
            .collect()
    }
}
