//! Protobuf watch streams (`application/vnd.kubernetes.protobuf;stream=watch`), as
//! kube-apiserver writes them and client-go reads them: each frame is a four-byte big-endian
//! length, then a metav1.WatchEvent message with no envelope of its own (the stream
//! serializer is apimachinery's raw protobuf serializer, framed by its
//! LengthDelimitedFramer), whose `object` RawExtension holds the object encoded with the
//! envelope (`k8s\x00` + runtime.Unknown), as a protobuf body would carry it.

use serde_json::Value;

use crate::Error;
use crate::envelope;
use crate::special;
use crate::wire::{self, Reader, WireType};

/// The media type of a protobuf watch stream.
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

// metav1.WatchEvent's fields, and runtime.RawExtension's.
const WATCH_EVENT_TYPE: u32 = 1;
const WATCH_EVENT_OBJECT: u32 = 2;
const RAW_EXTENSION_RAW: u32 = 1;

const LENGTH_PREFIX: usize = 4;

/// One frame of a watch stream: `event_type` (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`,
/// `ERROR`) and the object, which names its own apiVersion and kind.
pub fn encode_event(event_type: &str, object: &Value) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    encode_event_into(&mut buf, event_type, object)?;
    Ok(buf)
}

/// [`encode_event`], appending to `buf` (which is left as it was on error).
pub fn encode_event_into(buf: &mut Vec<u8>, event_type: &str, object: &Value) -> Result<(), Error> {
    let start = buf.len();
    buf.extend_from_slice(&[0; LENGTH_PREFIX]);
    let written = write_event(buf, event_type, object);
    if let Err(error) = written {
        buf.truncate(start);
        return Err(error);
    }
    let length = u32::try_from(buf.len() - start - LENGTH_PREFIX).map_err(|_| {
        buf.truncate(start);
        Error::json("a watch event larger than 4 GiB")
    })?;
    buf[start..start + LENGTH_PREFIX].copy_from_slice(&length.to_be_bytes());
    Ok(())
}

fn write_event(buf: &mut Vec<u8>, event_type: &str, object: &Value) -> Result<(), Error> {
    wire::put_bytes(buf, WATCH_EVENT_TYPE, event_type.as_bytes());
    wire::put_nested(buf, WATCH_EVENT_OBJECT, |buf| {
        wire::put_nested(buf, RAW_EXTENSION_RAW, |buf| {
            envelope::encode_object_into(buf, object)
        })
    })
}

/// A frame split off the front of a stream, and the bytes after it.
pub type Split<'a> = (&'a [u8], &'a [u8]);

/// Splits the first frame off a stream's bytes: `Ok(None)` until the whole frame has
/// arrived; an error for a frame longer than `max_frame` bytes (the reader would otherwise
/// buffer whatever length a peer claims).
pub fn split_frame(bytes: &[u8], max_frame: usize) -> Result<Option<Split<'_>>, Error> {
    let Some((length, rest)) = bytes.split_first_chunk::<LENGTH_PREFIX>() else {
        return Ok(None);
    };
    let length = u32::from_be_bytes(*length) as usize;
    if length > max_frame {
        return Err(Error::malformed(format!(
            "watch frame of {length} bytes is larger than the limit of {max_frame}"
        )));
    }
    Ok((rest.len() >= length).then(|| rest.split_at(length)))
}

/// The event type and JSON object of one frame's message (without its length prefix).
pub fn decode_event(frame: &[u8]) -> Result<(String, Value), Error> {
    let mut event_type = String::new();
    let mut raw: &[u8] = &[];
    let mut reader = Reader::new(frame);
    while !reader.is_empty() {
        match reader.key()? {
            (WATCH_EVENT_TYPE, WireType::Len) => {
                event_type = special::string(reader.len_delimited()?)
            }
            (WATCH_EVENT_OBJECT, WireType::Len) => {
                let mut extension = Reader::new(reader.len_delimited()?);
                while !extension.is_empty() {
                    match extension.key()? {
                        (RAW_EXTENSION_RAW, WireType::Len) => raw = extension.len_delimited()?,
                        (_, wire_type) => extension.skip(wire_type)?,
                    }
                }
            }
            (_, wire_type) => reader.skip(wire_type)?,
        }
    }
    let object = crate::decode::decode_object(raw).map_err(|error| error.within("object"))?;
    Ok((event_type, object))
}
