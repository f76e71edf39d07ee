//! The schema of every protobuf message berth speaks: for each message its fields (JSON
//! name, protobuf tag, wire type), and which (apiVersion, kind) is which message. The
//! tables themselves are generated from k8s-pb's prost bindings into `schema_table.rs`
//! (`cargo run -p berth-proto --bin generate-schema`); this file holds their types and the
//! lookups, all over static sorted arrays: nothing is built at run time.

/// A message of the schema: an index into the generated table, cheap to copy and to look
/// fields up from. Get one with [`message`] or [`message_for_kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageId(pub(crate) u16);

/// One protobuf message: its full name, its fields by tag, and how its JSON form differs
/// from a plain object of its fields, if it does.
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) name: &'static str,
    pub(crate) special: Special,
    /// Sorted by tag.
    pub(crate) fields: &'static [Field],
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) json: &'static str,
    pub(crate) tag: u32,
    pub(crate) ty: Ty,
    /// `repeated` (a JSON array); maps are not repeated, their type says map.
    pub(crate) repeated: bool,
    /// A Go embedded struct (`json:",inline"`, e.g. Volume's VolumeSource): a message field
    /// on the wire whose fields are the parent's own in JSON.
    pub(crate) inline: bool,
    /// Go's JSON leaves the field out when it is zero (a non-pointer scalar with
    /// `omitempty`); Go writes it to protobuf all the same.
    pub(crate) omits_zero: bool,
}

/// A field's type on the wire and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Bool,
    Int32,
    Int64,
    Double,
    String,
    /// Base64 in JSON, as Go's `[]byte`.
    Bytes,
    Message(u16),
    /// `map<string, string>`.
    MapString,
    /// `map<string, bytes>`: base64 values in JSON.
    MapBytes,
    /// `map<string, Message>`.
    MapMessage(u16),
}

/// Messages whose JSON form is not an object of their fields: the types with hand-written
/// JSON and protobuf marshalers in apimachinery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// metav1.Time: `{seconds, nanos}` on the wire, RFC 3339 at second precision in JSON.
    Time,
    /// metav1.MicroTime: as Time, with microseconds.
    MicroTime,
    /// metav1.Duration: `{duration}` nanoseconds on the wire, Go's duration string in JSON.
    Duration,
    /// resource.Quantity: `{string}` on the wire, a string in JSON.
    Quantity,
    /// intstr.IntOrString: `{type, intVal, strVal}` on the wire, a number or a string in JSON.
    IntOrString,
    /// runtime.RawExtension and metav1.FieldsV1: `{raw bytes}` on the wire holding JSON (or
    /// a protobuf envelope), the embedded JSON value itself in JSON.
    EmbeddedJson,
    /// Named string slices (metav1.Verbs, ExtraValue): `{repeated string items}` on the
    /// wire, a JSON array of strings.
    StringList,
}

/// A kind every group version serves: apimachinery's meta types (Status, DeleteOptions,
/// WatchEvent, discovery documents...), which clients send and receive under whatever
/// apiVersion the request is for.
pub(crate) struct MetaKind {
    pub(crate) kind: &'static str,
    pub(crate) message: u16,
}

/// A kind of a served group version.
pub(crate) struct Kind {
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) message: u16,
}

#[rustfmt::skip]
#[path = "schema_table.rs"]
mod table;

impl MessageId {
    pub(crate) fn get(self) -> &'static Message {
        &table::MESSAGES[usize::from(self.0)]
    }

    /// The message's full protobuf name as k8s-pb spells it (package + prost's type name:
    /// `k8s.io.api.core.v1.Pod`, `k8s.io.api.core.v1.HttpGetAction`).
    pub fn name(self) -> &'static str {
        self.get().name
    }
}

impl Message {
    /// The field with this tag, if the message has one.
    pub(crate) fn field_by_tag(&self, tag: u32) -> Option<&'static Field> {
        // Tags are dense from 1 in nearly every message: try the direct index first.
        let guess = usize::try_from(tag).ok()?.checked_sub(1)?;
        match self.fields.get(guess) {
            Some(field) if field.tag == tag => Some(field),
            _ => self
                .fields
                .binary_search_by_key(&tag, |field| field.tag)
                .ok()
                .map(|index| &self.fields[index]),
        }
    }
}

/// The message with this full name (`k8s.io.api.core.v1.Pod`).
pub fn message(name: &str) -> Option<MessageId> {
    table::MESSAGES
        .binary_search_by(|message| message.name.cmp(name))
        .ok()
        .and_then(|index| u16::try_from(index).ok())
        .map(MessageId)
}

/// The message of an object of this apiVersion and kind: a kind of a served group version
/// (`apps/v1` `Deployment`, `v1` `PodList`), or one of apimachinery's meta kinds, which
/// every group version serves (`Status`, `DeleteOptions`, `WatchEvent`, ...).
pub fn message_for_kind(api_version: &str, kind: &str) -> Option<MessageId> {
    let served = table::KINDS
        .binary_search_by(|entry| (entry.api_version, entry.kind).cmp(&(api_version, kind)))
        .ok()
        .map(|index| table::KINDS[index].message);
    served
        .or_else(|| {
            table::META_KINDS
                .binary_search_by(|entry| entry.kind.cmp(kind))
                .ok()
                .map(|index| table::META_KINDS[index].message)
        })
        .map(MessageId)
}

/// Every (apiVersion, kind) of the served group versions with its message, in order.
pub fn kinds() -> impl Iterator<Item = (&'static str, &'static str, MessageId)> {
    table::KINDS
        .iter()
        .map(|entry| (entry.api_version, entry.kind, MessageId(entry.message)))
}

/// Every message of the schema, in name order.
pub fn messages() -> impl Iterator<Item = MessageId> {
    (0..table::MESSAGES.len()).filter_map(|index| u16::try_from(index).ok().map(MessageId))
}

/// The JSON property names of a message's JSON form: its fields', with an embedded
/// (inline) field's message's names in its place. For tests and tools that compare schemas.
pub fn json_field_names(message: MessageId) -> Vec<&'static str> {
    let mut names = Vec::new();
    for field in message.get().fields {
        match field.ty {
            Ty::Message(inner) if field.inline => {
                names.extend(json_field_names(MessageId(inner)));
            }
            _ => names.push(field.json),
        }
    }
    names
}
