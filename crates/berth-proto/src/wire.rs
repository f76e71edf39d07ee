//! The protobuf wire format: varints, field keys, length-delimited values. Writing appends
//! to a `Vec<u8>`; reading walks a borrowed slice and fails (never panics) on bad input.

use crate::Error;

/// A field's wire type, the low three bits of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

impl WireType {
    fn from_bits(bits: u64) -> Result<Self, Error> {
        match bits {
            0 => Ok(Self::Varint),
            1 => Ok(Self::Fixed64),
            2 => Ok(Self::Len),
            5 => Ok(Self::Fixed32),
            // 3 and 4 are proto2 groups, which no Kubernetes message uses.
            other => Err(Error::malformed(format!("unsupported wire type {other}"))),
        }
    }

    fn bits(self) -> u32 {
        match self {
            Self::Varint => 0,
            Self::Fixed64 => 1,
            Self::Len => 2,
            Self::Fixed32 => 5,
        }
    }
}

pub(crate) fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

pub(crate) fn varint_len(value: u64) -> usize {
    // One byte per started group of seven bits; zero takes one byte.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

pub(crate) fn put_key(buf: &mut Vec<u8>, tag: u32, wire_type: WireType) {
    put_varint(buf, (u64::from(tag) << 3) | u64::from(wire_type.bits()));
}

pub(crate) fn put_bytes(buf: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(buf, tag, WireType::Len);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Writes a length-delimited field whose body `write` appends. The body is written in place
/// after a one-byte length; a longer length moves the body up once it is known, so no body
/// is ever built in a buffer of its own.
pub(crate) fn put_nested<E>(
    buf: &mut Vec<u8>,
    tag: u32,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    put_key(buf, tag, WireType::Len);
    let length_at = buf.len();
    buf.push(0);
    let start = buf.len();
    write(buf)?;
    let length = buf.len() - start;
    let length_len = varint_len(length as u64);
    if length_len > 1 {
        buf.resize(buf.len() + length_len - 1, 0);
        buf.copy_within(start..start + length, start + length_len - 1);
    }
    let mut value = length as u64;
    let mut at = length_at;
    while value >= 0x80 {
        buf[at] = (value as u8) | 0x80;
        value >>= 7;
        at += 1;
    }
    buf[at] = value as u8;
    Ok(())
}

/// A reader over one message's bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, Error> {
        let mut value: u64 = 0;
        for (index, &byte) in self.bytes.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte < 0x80 {
                self.bytes = &self.bytes[index + 1..];
                return Ok(value);
            }
        }
        Err(Error::malformed(if self.bytes.len() < 10 {
            "truncated varint"
        } else {
            "varint longer than ten bytes"
        }))
    }

    /// The next field's tag and wire type.
    pub(crate) fn key(&mut self) -> Result<(u32, WireType), Error> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3)
            .ok()
            .filter(|tag| *tag != 0)
            .ok_or_else(|| Error::malformed(format!("invalid field number {}", key >> 3)))?;
        Ok((tag, WireType::from_bits(key & 7)?))
    }

    pub(crate) fn len_delimited(&mut self) -> Result<&'a [u8], Error> {
        let length = self.varint()?;
        let length = usize::try_from(length)
            .ok()
            .filter(|length| *length <= self.bytes.len())
            .ok_or_else(|| Error::malformed("length past the end of the message"))?;
        let (value, rest) = self.bytes.split_at(length);
        self.bytes = rest;
        Ok(value)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, Error> {
        let (value, rest) = self
            .bytes
            .split_first_chunk::<8>()
            .ok_or_else(|| Error::malformed("truncated fixed64"))?;
        self.bytes = rest;
        Ok(u64::from_le_bytes(*value))
    }

    fn fixed32(&mut self) -> Result<u32, Error> {
        let (value, rest) = self
            .bytes
            .split_first_chunk::<4>()
            .ok_or_else(|| Error::malformed("truncated fixed32"))?;
        self.bytes = rest;
        Ok(u32::from_le_bytes(*value))
    }

    /// Skips a value of a field this reader does not know.
    pub(crate) fn skip(&mut self, wire_type: WireType) -> Result<(), Error> {
        match wire_type {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.fixed64().map(drop),
            WireType::Len => self.len_delimited().map(drop),
            WireType::Fixed32 => self.fixed32().map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_len_counts_seven_bit_groups() {
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint(&mut buf, value);
            assert_eq!(varint_len(value), buf.len(), "{value}");
            assert_eq!(Reader::new(&buf).varint().ok(), Some(value));
        }
    }

    #[test]
    fn nested_lengths_of_every_width_are_written_in_place() {
        for length in [0usize, 1, 127, 128, 300, 16_384, 70_000] {
            let mut buf = vec![0xAA];
            put_nested::<()>(&mut buf, 3, |buf| {
                buf.extend(std::iter::repeat_n(7u8, length));
                Ok(())
            })
            .ok();
            let mut reader = Reader::new(&buf[1..]);
            assert_eq!(reader.key().ok(), Some((3, WireType::Len)));
            let body = reader.len_delimited().ok();
            assert_eq!(body.map(<[u8]>::len), Some(length));
            assert!(body.is_some_and(|body| body.iter().all(|byte| *byte == 7)));
            assert!(reader.is_empty());
        }
    }
}
