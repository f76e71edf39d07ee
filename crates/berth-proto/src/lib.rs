//! Kubernetes protobuf on the wire: JSON <-> protobuf for every built-in kind, the
//! `k8s\x00` runtime.Unknown envelope, watch event frames.
//!
//! berth keeps and handles every object as Kubernetes JSON (`serde_json::Value`); kubectl,
//! client-go programs and the Kubernetes components speak
//! `application/vnd.kubernetes.protobuf`. This crate converts between the two for any
//! message of the served API groups, generically: one table per message
//! ([`schema`], generated from the k8s-pb crate's prost bindings by `berth-proto-gen`,
//! with JSON names checked against k8s-openapi's) drives one encoder and one decoder that
//! read and write the protobuf wire format directly.
//!
//! - [`encode`] / [`decode`]: a JSON value ↔ the bytes of one message.
//! - [`envelope`]: whole objects as protobuf bodies carry them (`k8s\x00` +
//!   runtime.Unknown{typeMeta, raw}), chosen by the object's apiVersion and kind.
//! - [`watch`]: the frames of a protobuf watch stream.
//!
//! Kubernetes' JSON is not a plain projection of its protos, and the codec follows Go's
//! marshalers: metav1.Time is an RFC 3339 string at second precision (`{seconds, nanos}` on
//! the wire), MicroTime one with microseconds, metav1.Duration Go's duration string,
//! resource.Quantity a string, IntOrString a number or a string, RawExtension and FieldsV1
//! the embedded JSON (raw bytes on the wire), `bytes` fields base64, Go's named string
//! slices (Verbs, ExtraValue) arrays, and Go's embedded structs (Volume's VolumeSource,
//! Probe's handler, ...) a nested message on the wire whose fields are the parent's in JSON.
//!
//! Presence is kept both ways, as proto2 `optional` has it: a JSON `0`, `""` or `false`
//! is written and reads back present; an absent or `null` property is not written. Go
//! clients, though, write every non-pointer field, zero or not: decoding their bodies with
//! [`Zeros::AsGoJson`] leaves out the zeros that Go's JSON leaves out (non-pointer scalars
//! with `omitempty`, from the Kubernetes Go types: `"generateName": ""` goes,
//! `"tolerationSeconds": 0` stays), giving the JSON kube-apiserver would hold. JSON properties that
//! the message has no field for are dropped when encoding (kube-apiserver encodes typed Go
//! values, which cannot hold them); unknown field numbers are skipped when decoding.
//!
//! The schema is k8s-pb 0.9.0's, generated from Kubernetes 1.35's protos: the few fields
//! that 1.36 and 1.37 added (listed in the `json_names` test) are not carried in protobuf.

pub mod envelope;
mod error;
pub mod schema;
pub mod watch;

mod decode;
mod encode;
mod special;
mod wire;

#[cfg(test)]
mod properties;

use serde_json::Value;

pub use decode::{decode_object, decode_object_with};
pub use envelope::{CONTENT_TYPE, encode_object};
pub use error::Error;
pub use schema::MessageId;
pub use watch::WATCH_CONTENT_TYPE;

/// The protobuf encoding of `json` as the message named `message`
/// (`k8s.io.api.core.v1.Pod`).
pub fn encode(json: &Value, message: &str) -> Result<Vec<u8>, Error> {
    encode_message(json, named(message)?)
}

/// [`encode`] by message id (no name lookup).
pub fn encode_message(json: &Value, message: MessageId) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    encode::encode_into(&mut buf, json, message)?;
    Ok(buf)
}

/// The JSON value of `bytes` read as the message named `message`.
pub fn decode(bytes: &[u8], message: &str) -> Result<Value, Error> {
    decode_message(bytes, named(message)?)
}

/// [`decode`] by message id (no name lookup).
pub fn decode_message(bytes: &[u8], message: MessageId) -> Result<Value, Error> {
    decode::decode_message(bytes, message, 0, Zeros::Kept)
}

/// [`decode_message`], with zero values kept or left out as `zeros` says.
pub fn decode_message_with(bytes: &[u8], message: MessageId, zeros: Zeros) -> Result<Value, Error> {
    decode::decode_message(bytes, message, 0, zeros)
}

/// What decoding does with a scalar field present on the wire with its zero value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Zeros {
    /// Kept: the JSON has what the wire has (JSON → protobuf → JSON is the identity).
    #[default]
    Kept,
    /// Left out where Go's JSON leaves them out (non-pointer scalars with `omitempty`):
    /// for bodies Go clients wrote, which carry every non-pointer field.
    AsGoJson,
}

fn named(message: &str) -> Result<MessageId, Error> {
    schema::message(message).ok_or_else(|| Error::UnknownMessage(message.to_owned()))
}
