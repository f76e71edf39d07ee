//! Container logs in the CRI format, as container runtimes write them for
//! the kubelet: one record a line,
//! `2016-10-06T00:17:09.669794202Z stdout F the line`, where `F` ends a
//! line and `P` is part of a longer one (upstream
//! `pkg/kubelet/kuberuntime/logs`). The process runtime writes them; the
//! log server reads them (timestamps, since, streams).

use std::io::Write;

use berth_core::clock::Clock;
use jiff::Timestamp;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// Lines longer than this are split into partial records (upstream's
/// containerd writes 16 KiB).
pub const MAX_RECORD: usize = 16 * 1024;

/// Which output a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One record of a log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    pub time: Timestamp,
    pub stream: Stream,
    /// Part of a line continued by the next record.
    pub partial: bool,
    /// The output, without the line's newline.
    pub content: &'a [u8],
}

/// The timestamp as the CRI log and the kubelet write it (RFC 3339 with
/// nine fractional digits, UTC).
pub fn format_time(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%S.%9fZ").to_string()
}

/// One record, with its newline.
pub fn encode(time: Timestamp, stream: Stream, partial: bool, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 48);
    out.extend_from_slice(format_time(time).as_bytes());
    out.push(b' ');
    out.extend_from_slice(stream.as_str().as_bytes());
    out.extend_from_slice(if partial { b" P " } else { b" F " });
    out.extend_from_slice(content);
    out.push(b'\n');
    out
}

/// Parses one record (without its newline); `None` for a line that is
/// not one.
pub fn parse(line: &[u8]) -> Option<Record<'_>> {
    let mut fields = line.splitn(4, |b| *b == b' ');
    let time = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let stream = match fields.next()? {
        b"stdout" => Stream::Stdout,
        b"stderr" => Stream::Stderr,
        _ => return None,
    };
    let partial = match fields.next()? {
        b"P" => true,
        b"F" => false,
        _ => return None,
    };
    Some(Record {
        time,
        stream,
        partial,
        content: fields.next().unwrap_or_default(),
    })
}

/// Copies a process's output into `file` as records stamped by `clock`,
/// until the output closes. A write failure ends the copy (the output is
/// still drained, so the process never blocks on a full pipe).
pub async fn copy(
    output: impl AsyncRead + Unpin,
    mut file: std::fs::File,
    stream: Stream,
    clock: Clock,
) {
    let mut reader = BufReader::with_capacity(MAX_RECORD, output);
    let mut line = Vec::with_capacity(1024);
    let mut writable = true;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(u64::try_from(MAX_RECORD).unwrap_or(u64::MAX))
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let partial = line.last() != Some(&b'\n');
        let content = line.strip_suffix(b"\n").unwrap_or(&line);
        if writable && let Err(e) = file.write_all(&encode(clock.now(), stream, partial, content)) {
            tracing::warn!(error = %e, "writing a container log; later output is dropped");
            writable = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn records_encode_and_parse_back() {
        let time = at("2016-10-06T00:17:09.669794202Z");
        let line = encode(time, Stream::Stderr, false, b"log content 1");
        assert_eq!(
            line,
            b"2016-10-06T00:17:09.669794202Z stderr F log content 1\n"
        );
        let parsed = parse(line.strip_suffix(b"\n").unwrap_or(&line));
        assert_eq!(
            parsed,
            Some(Record {
                time,
                stream: Stream::Stderr,
                partial: false,
                content: b"log content 1",
            })
        );
    }

    #[test]
    fn parse_follows_the_cri_format() {
        let time = at("2016-10-06T00:17:09.669794202Z");
        type Case = (&'static [u8], Option<(Stream, bool, &'static [u8])>);
        let cases: [Case; 6] = [
            (
                b"2016-10-06T00:17:09.669794202Z stdout P log content 1",
                Some((Stream::Stdout, true, b"log content 1")),
            ),
            (
                b"2016-10-06T00:17:09.669794202Z stdout F ",
                Some((Stream::Stdout, false, b"")),
            ),
            (
                b"2016-10-06T00:17:09.669794202Z stdout F a  b",
                Some((Stream::Stdout, false, b"a  b")),
            ),
            (b"2016-10-06T00:17:09.669794202Z stdin F x", None),
            (b"2016-10-06T00:17:09.669794202Z stdout X x", None),
            (b"not a record", None),
        ];
        for (line, want) in cases {
            let got = parse(line).map(|r| (r.stream, r.partial, r.content));
            assert_eq!(got, want, "{}", String::from_utf8_lossy(line));
            if let Some(r) = parse(line) {
                assert_eq!(r.time, time);
            }
        }
    }

    #[test]
    fn times_have_nine_fractional_digits() {
        assert_eq!(
            format_time(at("2026-01-01T00:00:01Z")),
            "2026-01-01T00:00:01.000000000Z"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn output_is_copied_as_records_and_long_lines_are_split() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("0.log");
        let file = std::fs::File::create(&path)?;
        let long = vec![b'x'; MAX_RECORD + 10];
        let mut output = b"one\n".to_vec();
        output.extend_from_slice(&long);
        output.extend_from_slice(b"\nlast without newline");
        let clock = Clock::virtual_from(at("2026-01-01T00:00:00Z"));
        copy(&output[..], file, Stream::Stdout, clock).await;
        let text = std::fs::read(&path)?;
        let records: Vec<(bool, usize)> = text
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(parse)
            .map(|r| (r.partial, r.content.len()))
            .collect();
        assert_eq!(
            records,
            [(false, 3), (true, MAX_RECORD), (false, 10), (true, 20)]
        );
        Ok(())
    }
}
