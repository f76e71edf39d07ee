//! Kubernetes' protobuf object envelope, as `application/vnd.kubernetes.protobuf` bodies
//! carry every object: the magic `k8s\x00`, then a runtime.Unknown whose typeMeta names the
//! object's apiVersion and kind and whose raw bytes are the object's message
//! (apimachinery's runtime/serializer/protobuf Serializer).

use serde_json::Value;

use crate::schema::{self, MessageId};
use crate::special;
use crate::wire::{self, Reader, WireType};
use crate::{Error, encode};

/// The four bytes every Kubernetes protobuf object starts with.
pub const MAGIC: [u8; 4] = *b"k8s\x00";

/// The media type of protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

// runtime.Unknown's fields, and TypeMeta's.
const UNKNOWN_TYPE_META: u32 = 1;
const UNKNOWN_RAW: u32 = 2;
const UNKNOWN_CONTENT_ENCODING: u32 = 3;
const UNKNOWN_CONTENT_TYPE: u32 = 4;
const TYPE_META_API_VERSION: u32 = 1;
const TYPE_META_KIND: u32 = 2;

/// An envelope read from bytes: the object's type and its undecoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub api_version: String,
    pub kind: String,
    pub raw: &'a [u8],
}

/// The protobuf body of a JSON object, which names its own `apiVersion` and `kind`.
pub fn encode_object(object: &Value) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    encode_object_into(&mut buf, object)?;
    Ok(buf)
}

/// [`encode_object`], appending to `buf`.
pub fn encode_object_into(buf: &mut Vec<u8>, object: &Value) -> Result<(), Error> {
    let type_meta = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::json(format!("the object has no {name}")))
    };
    encode_object_as_into(buf, object, type_meta("apiVersion")?, type_meta("kind")?)
}

/// The protobuf body of a JSON object of the given apiVersion and kind (its own
/// `apiVersion` and `kind` properties, if any, are not read).
pub fn encode_object_as_into(
    buf: &mut Vec<u8>,
    object: &Value,
    api_version: &str,
    kind: &str,
) -> Result<(), Error> {
    let message =
        schema::message_for_kind(api_version, kind).ok_or_else(|| Error::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })?;
    buf.extend_from_slice(&MAGIC);
    // Go writes every field of Unknown, the empty content encoding and type too.
    wire::put_nested::<Error>(buf, UNKNOWN_TYPE_META, |buf| {
        wire::put_bytes(buf, TYPE_META_API_VERSION, api_version.as_bytes());
        wire::put_bytes(buf, TYPE_META_KIND, kind.as_bytes());
        Ok(())
    })?;
    wire::put_nested(buf, UNKNOWN_RAW, |buf| {
        encode::encode_into(buf, object, message)
    })?;
    wire::put_bytes(buf, UNKNOWN_CONTENT_ENCODING, b"");
    wire::put_bytes(buf, UNKNOWN_CONTENT_TYPE, b"");
    Ok(())
}

/// Reads the envelope of a protobuf body, without decoding the object.
pub fn unwrap(bytes: &[u8]) -> Result<Envelope<'_>, Error> {
    let body = bytes
        .strip_prefix(&MAGIC)
        .ok_or_else(|| Error::Envelope("missing the k8s\\x00 prefix".to_owned()))?;
    let mut envelope = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
    };
    let mut reader = Reader::new(body);
    while !reader.is_empty() {
        match reader.key()? {
            (UNKNOWN_TYPE_META, WireType::Len) => {
                let mut type_meta = Reader::new(reader.len_delimited()?);
                while !type_meta.is_empty() {
                    match type_meta.key()? {
                        (TYPE_META_API_VERSION, WireType::Len) => {
                            envelope.api_version = special::string(type_meta.len_delimited()?);
                        }
                        (TYPE_META_KIND, WireType::Len) => {
                            envelope.kind = special::string(type_meta.len_delimited()?);
                        }
                        (_, wire_type) => type_meta.skip(wire_type)?,
                    }
                }
            }
            (UNKNOWN_RAW, WireType::Len) => envelope.raw = reader.len_delimited()?,
            (UNKNOWN_CONTENT_ENCODING, WireType::Len) => {
                let encoding = reader.len_delimited()?;
                if !encoding.is_empty() {
                    return Err(Error::Envelope(format!(
                        "content encoding {:?} is not supported",
                        special::string(encoding)
                    )));
                }
            }
            (UNKNOWN_CONTENT_TYPE, WireType::Len) => {
                let content_type = reader.len_delimited()?;
                if !content_type.is_empty() && content_type != CONTENT_TYPE.as_bytes() {
                    return Err(Error::Envelope(format!(
                        "content type {:?} is not protobuf",
                        special::string(content_type)
                    )));
                }
            }
            (_, wire_type) => reader.skip(wire_type)?,
        }
    }
    Ok(envelope)
}

impl Envelope<'_> {
    /// The message the envelope's apiVersion and kind name.
    pub fn message(&self) -> Result<MessageId, Error> {
        schema::message_for_kind(&self.api_version, &self.kind).ok_or_else(|| Error::UnknownKind {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
        })
    }
}
