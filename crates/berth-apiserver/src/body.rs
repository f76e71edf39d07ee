//! Request bodies: JSON and YAML decoded into a JSON value in bounded time,
//! with the duplicate fields upstream's strict decoding reports.
//!
//! Two things keep a hostile body from starving the server:
//!
//! - **Depth is checked while parsing.** YAML goes through serde-saphyr,
//!   whose parser counts nesting event by event and stops at the budget
//!   (`max_depth`, and the same cap on flow collections), so a body nested
//!   100,000 deep is refused after reading its first [`BodyLimits::max_depth`]
//!   levels, in microseconds. (serde_yaml, used before, scanned the whole
//!   event stream first, in time quadratic in the nesting, and only then
//!   checked its recursion limit: a 200 KB body took minutes.) JSON gets
//!   the same check as its values are built.
//! - **Big bodies are decoded off the runtime's workers**
//!   ([`decode_off_worker`]): a body over [`INLINE_DECODE_BYTES`] is decoded
//!   on tokio's blocking pool, at most [`CONCURRENT_BIG_DECODES`] at a time,
//!   so that a few clients sending 3 MiB bodies delay each other, not every
//!   other request. Small bodies (a Lease renewal, a pod) decode in place:
//!   a blocking-pool hop would cost them more than the decode.
//!
//! Duplicate keys are kept last-wins, as Go's decoders do, and reported as
//! upstream's strict decoding names them: `duplicate field "metadata.name"`
//! for JSON (sigs.k8s.io/json), `line 3: key "name" already set in map` for
//! YAML (go-yaml through sigs.k8s.io/yaml). YAML is read as upstream's
//! go-yaml v2 reads it (YAML 1.1 scalars: `yes` and `on` are booleans,
//! `012` is octal, `<<` merges), not as YAML 1.2.

use std::collections::BTreeSet;
use std::fmt;

use axum::body::Bytes;
use berth_core::validation::field::go_quote;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Nesting deeper than this is refused, as serde_json's own recursion
/// limit refuses JSON (the largest `--max-body-depth` may be).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Bodies up to this size are decoded on the calling task (a 16 KiB YAML
/// body decodes in about 2 ms, JSON in well under 1 ms).
pub const INLINE_DECODE_BYTES: usize = 16 * 1024;

/// Big bodies decoded at once on the blocking pool; more wait their turn.
pub const CONCURRENT_BIG_DECODES: usize = 2;

/// The parsers recurse once per level, and serde-saphyr's frames are large
/// (tens of KiB a level in a debug build): past 128 levels that outgrows a
/// tokio worker's 2 MiB stack. Each level checks the room left and, below
/// this, continues on a fresh segment.
const STACK_RED_ZONE: usize = 256 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// Upstream keeps at most this many strict decoding errors per body.
const MAX_STRICT_ERRORS: usize = 100;

/// The limits a body is decoded under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Deepest nesting of objects and lists accepted (1..=128).
    pub max_depth: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// A body's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    /// The format of a media type (parameters already cut off); `None` for
    /// one the API does not read.
    pub fn of_media_type(media: &str) -> Option<Format> {
        match media {
            "application/json" | "" | "*/*" => Some(Format::Json),
            "application/yaml" | "application/x-yaml" | "text/yaml" => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// A problem upstream's strict decoding reports (refused with
/// `fieldValidation=Strict`, a warning with `Warn`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum StrictProblem {
    /// A JSON object key given twice (`duplicate field "metadata.name"`).
    DuplicateField { path: String },
    /// A YAML mapping key given twice, at a 1-based line.
    DuplicateYamlKey { line: usize, key: String },
    /// A field the type does not have (`unknown field "spec.foo"`).
    UnknownField { path: String },
    /// A JSON patch operation's key given twice (upstream prefixes these
    /// with `json patch`).
    JsonPatchDuplicateField { path: String },
}

impl StrictProblem {
    /// The text of one warning, as upstream's `addStrictDecodingWarnings`
    /// writes it.
    pub fn warning(&self) -> String {
        match self {
            StrictProblem::DuplicateField { path } => format!("duplicate field {}", go_quote(path)),
            StrictProblem::DuplicateYamlKey { line, key } => {
                format!("line {line}: key {} already set in map", go_quote(key))
            }
            StrictProblem::UnknownField { path } => format!("unknown field {}", go_quote(path)),
            StrictProblem::JsonPatchDuplicateField { path } => {
                format!("json patch duplicate field {}", go_quote(path))
            }
        }
    }
}

/// The strict decoding error upstream prints for `problems`: go-yaml's
/// duplicate keys as one `yaml: unmarshal errors:` error, then the JSON
/// decoder's, joined with ", " (`runtime.NewStrictDecodingError`).
pub fn strict_decoding_error(problems: &[StrictProblem]) -> String {
    let yaml: Vec<String> = problems
        .iter()
        .filter(|p| matches!(p, StrictProblem::DuplicateYamlKey { .. }))
        .map(|p| format!("\n  {}", p.warning()))
        .collect();
    let mut errors = Vec::new();
    if !yaml.is_empty() {
        errors.push(format!("yaml: unmarshal errors:{}", yaml.concat()));
    }
    errors.extend(
        problems
            .iter()
            .filter(|p| !matches!(p, StrictProblem::DuplicateYamlKey { .. }))
            .map(StrictProblem::warning),
    );
    format!("strict decoding error: {}", errors.join(", "))
}

/// A decoded body.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub value: Value,
    /// Duplicate keys, in the order met (at most 100, each once).
    pub duplicates: Vec<StrictProblem>,
}

/// Why a body did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Nested deeper than the limit.
    #[error("exceeded max depth of {max_depth}{at}")]
    TooDeep { max_depth: usize, at: String },
    /// Not JSON or YAML, or not one document.
    #[error("{0}")]
    Syntax(String),
}

/// Decodes `bytes` in the calling thread. Never panics, whatever the bytes.
pub fn decode(format: Format, bytes: &[u8], limits: BodyLimits) -> Result<Decoded, DecodeError> {
    let max_depth = limits.max_depth.clamp(1, DEFAULT_MAX_DEPTH);
    let mut walk = Walk {
        depth: 0,
        max_depth,
        yaml: format == Format::Yaml,
        path: Vec::new(),
        duplicates: Vec::new(),
        seen: BTreeSet::new(),
        too_deep: None,
    };
    let value = match format {
        Format::Json => decode_json(bytes, &mut walk)?,
        // JSON is YAML, and most YAML-typed bodies (kubectl's apply
        // patches) are JSON: serde_json reads them several times faster and
        // to the same value. Anything it refuses, or whose duplicate keys
        // need YAML's line numbers, is read as YAML.
        Format::Yaml if looks_like_json(bytes) => {
            walk.yaml = false;
            let value = decode_json(bytes, &mut walk);
            walk.yaml = true;
            match value {
                Ok(value) if walk.duplicates.is_empty() => value,
                _ => decode_yaml(bytes, walk.restart())?,
            }
        }
        Format::Yaml => decode_yaml(bytes, &mut walk)?,
    };
    Ok(Decoded {
        value,
        duplicates: walk.duplicates,
    })
}

/// Decodes `body` with `decode_body`, on the blocking pool when it is
/// bigger than [`INLINE_DECODE_BYTES`] (see the module doc).
pub async fn decode_off_worker<T, F>(body: Bytes, decode_body: F) -> T
where
    T: Send + 'static,
    F: FnOnce(&[u8]) -> T + Send + 'static,
{
    static BIG_DECODES: tokio::sync::Semaphore =
        tokio::sync::Semaphore::const_new(CONCURRENT_BIG_DECODES);
    if body.len() <= INLINE_DECODE_BYTES {
        return decode_body(&body);
    }
    // The semaphore is never closed, so acquiring only waits.
    let _permit = BIG_DECODES.acquire().await;
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let task = tokio::task::spawn_blocking(move || {
        let _ = sender.send(decode_body(&body));
    });
    match receiver.await {
        Ok(decoded) => decoded,
        // The decode panicked (it does not: it is fuzzed); re-raise it here
        // rather than invent a value.
        Err(_) => match task.await {
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            _ => unreachable_decode(),
        },
    }
}

#[cold]
fn unreachable_decode() -> ! {
    panic!("a body decode on the blocking pool ended without an answer")
}

fn looks_like_json(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
}

fn decode_json(bytes: &[u8], walk: &mut Walk) -> Result<Value, DecodeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    // The depth check is this module's (and the stack is grown as needed):
    // serde_json's own limit (127 levels) would cut below the configured one.
    deserializer.disable_recursion_limit();
    let value = ValueSeed { walk: &mut *walk }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    value.map_err(|e| match walk.too_deep.take() {
        Some(_) => DecodeError::TooDeep {
            max_depth: walk.max_depth,
            at: format!(" at line {} column {}", e.line(), e.column()),
        },
        None => DecodeError::Syntax(e.to_string()),
    })
}

fn decode_yaml(bytes: &[u8], walk: &mut Walk) -> Result<Value, DecodeError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| DecodeError::Syntax(format!("invalid UTF-8 in YAML: {e}")))?;
    let mut options = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    // The parser stops at the first event past this depth: no more of the
    // body is read.
    budget.max_depth = walk.max_depth;
    budget.flow_nesting_limit = walk.max_depth;
    options.budget = Some(budget);
    options.with_snippet = false;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    options.legacy_octal_numbers = true;
    let max_depth = walk.max_depth;
    let result = serde_saphyr::with_deserializer_from_str_with_options(text, options, |d| {
        ValueSeed { walk: &mut *walk }.deserialize(d)
    });
    result.map_err(|e| yaml_error(&e, max_depth, walk.too_deep.take()))
}

fn yaml_error(
    e: &serde_saphyr::Error,
    max_depth: usize,
    seed_too_deep: Option<String>,
) -> DecodeError {
    let at = match e.location() {
        Some(l) if l.line() > 0 => format!(" at line {}, column {}", l.line(), l.column()),
        _ => String::new(),
    };
    let text = e.to_string();
    let too_deep = seed_too_deep.is_some()
        || matches!(
            e,
            serde_saphyr::Error::Budget {
                breach: serde_saphyr::budget::BudgetBreach::Depth { .. },
                ..
            }
        )
        || text.starts_with("recursion limit exceeded");
    if too_deep {
        return DecodeError::TooDeep { max_depth, at };
    }
    DecodeError::Syntax(text)
}

/// The state of one decode: where in the document the visitor is, and
/// the duplicates met so far.
struct Walk {
    depth: usize,
    max_depth: usize,
    yaml: bool,
    path: Vec<Segment>,
    duplicates: Vec<StrictProblem>,
    seen: BTreeSet<StrictProblem>,
    /// Set when this module's depth check refused the body (where).
    too_deep: Option<String>,
}

enum Segment {
    Key(String),
    Index(usize),
}

impl Walk {
    fn restart(&mut self) -> &mut Walk {
        self.depth = 0;
        self.path.clear();
        self.duplicates.clear();
        self.seen.clear();
        self.too_deep = None;
        self
    }

    /// sigs.k8s.io/json's path: `spec.containers[0].name`.
    fn path_to(&self, key: &str) -> String {
        let mut out = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
        out
    }

    fn duplicate(&mut self, problem: StrictProblem) {
        if self.duplicates.len() < MAX_STRICT_ERRORS && self.seen.insert(problem.clone()) {
            self.duplicates.push(problem);
        }
    }

    fn enter<E: de::Error>(&mut self) -> Result<(), E> {
        if self.depth >= self.max_depth {
            self.too_deep = Some(String::new());
            return Err(E::custom(format!(
                "exceeded max depth of {}",
                self.max_depth
            )));
        }
        self.depth += 1;
        Ok(())
    }
}

/// Builds a [`Value`] as serde_json's own visitor does, recording
/// duplicate keys and refusing depth past the limit.
struct ValueSeed<'a> {
    walk: &'a mut Walk,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        String::from_utf8(v.to_vec())
            .map(Value::String)
            .map_err(|_| E::custom("binary data that is not UTF-8"))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let walk = self.walk;
        walk.enter()?;
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, move || {
            let mut items = Vec::new();
            loop {
                walk.path.push(Segment::Index(items.len()));
                let item = seq.next_element_seed(ValueSeed { walk: &mut *walk });
                walk.path.pop();
                match item? {
                    Some(item) => items.push(item),
                    None => break,
                }
            }
            walk.depth -= 1;
            Ok(Value::Array(items))
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let walk = self.walk;
        walk.enter()?;
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, move || {
            let mut object = Map::new();
            loop {
                let (key, line) = if walk.yaml {
                    match map.next_key::<serde_saphyr::Spanned<String>>()? {
                        Some(key) => (key.value, key.referenced.line() as usize),
                        None => break,
                    }
                } else {
                    match map.next_key::<String>()? {
                        Some(key) => (key, 0),
                        None => break,
                    }
                };
                walk.path.push(Segment::Key(key));
                let value = map.next_value_seed(ValueSeed { walk: &mut *walk });
                let Some(Segment::Key(key)) = walk.path.pop() else {
                    unreachable_decode()
                };
                let value = value?;
                if object.contains_key(&key) {
                    let problem = if walk.yaml {
                        StrictProblem::DuplicateYamlKey {
                            line,
                            key: key.clone(),
                        }
                    } else {
                        StrictProblem::DuplicateField {
                            path: walk.path_to(&key),
                        }
                    };
                    walk.duplicate(problem);
                }
                object.insert(key, value);
            }
            walk.depth -= 1;
            Ok(Value::Object(object))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(text: &str) -> Result<Decoded, DecodeError> {
        decode(Format::Yaml, text.as_bytes(), BodyLimits::default())
    }

    fn json_body(text: &str) -> Result<Decoded, DecodeError> {
        decode(Format::Json, text.as_bytes(), BodyLimits::default())
    }

    #[test]
    fn yaml_scalars_are_read_as_upstreams_go_yaml_reads_them() {
        struct Case {
            yaml: &'static str,
            want: Value,
        }
        let cases = [
            Case {
                yaml: "a: yes",
                want: json!({"a": true}),
            },
            Case {
                yaml: "a: on",
                want: json!({"a": true}),
            },
            Case {
                yaml: "a: 012",
                want: json!({"a": 10}),
            },
            Case {
                yaml: "a: 0x10",
                want: json!({"a": 16}),
            },
            Case {
                yaml: "a: '3'",
                want: json!({"a": "3"}),
            },
            Case {
                yaml: "a: ~",
                want: json!({"a": null}),
            },
            Case {
                yaml: "a:",
                want: json!({"a": null}),
            },
            Case {
                yaml: "a: 2001-12-14",
                want: json!({"a": "2001-12-14"}),
            },
            Case {
                yaml: "a: &x {b: 1}\nc: *x",
                want: json!({"a": {"b": 1}, "c": {"b": 1}}),
            },
            Case {
                yaml: "c:\n  <<: {b: 2}\n  d: 1",
                want: json!({"c": {"b": 2, "d": 1}}),
            },
            Case {
                yaml: "",
                want: Value::Null,
            },
            Case {
                yaml: "{\"json\": [1, 2.5, true, null]}",
                want: json!({"json": [1, 2.5, true, null]}),
            },
        ];
        for case in cases {
            let got = yaml(case.yaml).map(|d| d.value);
            assert_eq!(got, Ok(case.want), "{:?}", case.yaml);
        }
    }

    #[test]
    fn duplicate_keys_are_kept_last_wins_and_reported_as_upstream_names_them() {
        struct Case {
            name: &'static str,
            format: Format,
            body: &'static str,
            want_value: Value,
            want: Vec<&'static str>,
        }
        let cases = [
            Case {
                name: "json top level and nested, each once",
                format: Format::Json,
                body: r#"{"a":1,"a":2,"a":3,"metadata":{"name":"x","name":"y"},"e":[{"f":1,"f":2}]}"#,
                want_value: json!({"a": 3, "metadata": {"name": "y"}, "e": [{"f": 2}]}),
                want: vec![
                    r#"duplicate field "a""#,
                    r#"duplicate field "metadata.name""#,
                    r#"duplicate field "e[0].f""#,
                ],
            },
            Case {
                name: "yaml with lines",
                format: Format::Yaml,
                body: "a: 1\nmetadata:\n  name: first\n  name: second\n",
                want_value: json!({"a": 1, "metadata": {"name": "second"}}),
                want: vec![r#"line 4: key "name" already set in map"#],
            },
            Case {
                name: "json sent as yaml has yaml's line numbers",
                format: Format::Yaml,
                body: "{\"metadata\":{\"name\":\"x\",\n\"name\":\"z\"}}",
                want_value: json!({"metadata": {"name": "z"}}),
                want: vec![r#"line 2: key "name" already set in map"#],
            },
            Case {
                name: "no duplicates",
                format: Format::Json,
                body: r#"{"a":{"a":{"a":1}}}"#,
                want_value: json!({"a": {"a": {"a": 1}}}),
                want: vec![],
            },
        ];
        for case in cases {
            let decoded = decode(case.format, case.body.as_bytes(), BodyLimits::default())
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(decoded.value, case.want_value, "{}", case.name);
            let got: Vec<String> = decoded
                .duplicates
                .iter()
                .map(StrictProblem::warning)
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn strict_decoding_errors_read_as_upstreams() {
        let problems = [
            StrictProblem::DuplicateYamlKey {
                line: 3,
                key: "a".into(),
            },
            StrictProblem::DuplicateYamlKey {
                line: 5,
                key: "b".into(),
            },
            StrictProblem::DuplicateField {
                path: "metadata.name".into(),
            },
            StrictProblem::UnknownField {
                path: "spec.foo".into(),
            },
        ];
        assert_eq!(
            strict_decoding_error(&problems),
            "strict decoding error: yaml: unmarshal errors:\n  line 3: key \"a\" already set in map\n  line 5: key \"b\" already set in map, duplicate field \"metadata.name\", unknown field \"spec.foo\""
        );
    }

    fn nested_yaml_flow(depth: usize) -> String {
        format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth))
    }

    fn nested_yaml_block(depth: usize) -> String {
        let mut out = String::new();
        for i in 0..depth {
            out.push_str(&" ".repeat(i));
            out.push_str("a:\n");
        }
        out
    }

    fn nested_json(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_is_refused_past_the_limit_and_named_in_the_error() {
        struct Case {
            name: &'static str,
            format: Format,
            body: String,
            max_depth: usize,
            refused: bool,
        }
        let cases = [
            Case {
                name: "yaml flow at the limit",
                format: Format::Yaml,
                body: nested_yaml_flow(127),
                max_depth: 128,
                refused: false,
            },
            Case {
                name: "yaml flow past the limit",
                format: Format::Yaml,
                body: nested_yaml_flow(128),
                max_depth: 128,
                refused: true,
            },
            Case {
                name: "yaml block at a lowered limit",
                format: Format::Yaml,
                body: nested_yaml_block(16),
                max_depth: 16,
                refused: false,
            },
            Case {
                name: "yaml block past a lowered limit",
                format: Format::Yaml,
                body: nested_yaml_block(17),
                max_depth: 16,
                refused: true,
            },
            Case {
                name: "yaml flow past a lowered limit",
                format: Format::Yaml,
                body: nested_yaml_flow(16),
                max_depth: 16,
                refused: true,
            },
            Case {
                name: "json at the limit",
                format: Format::Json,
                body: nested_json(128),
                max_depth: 128,
                refused: false,
            },
            Case {
                name: "json past the limit",
                format: Format::Json,
                body: nested_json(129),
                max_depth: 128,
                refused: true,
            },
            Case {
                name: "json past a lowered limit",
                format: Format::Json,
                body: nested_json(17),
                max_depth: 16,
                refused: true,
            },
            Case {
                name: "json as yaml past the limit",
                format: Format::Yaml,
                body: nested_json(129),
                max_depth: 128,
                refused: true,
            },
        ];
        for case in cases {
            let got = decode(
                case.format,
                case.body.as_bytes(),
                BodyLimits {
                    max_depth: case.max_depth,
                },
            );
            match (got, case.refused) {
                (Ok(_), false) => {}
                (Err(DecodeError::TooDeep { max_depth, .. }), true) => {
                    assert_eq!(max_depth, case.max_depth, "{}", case.name);
                }
                (other, _) => panic!("{}: {other:?}", case.name),
            }
        }
        let message = match yaml(&nested_yaml_flow(100_000)) {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        assert!(
            message.starts_with("exceeded max depth of 128 at line 1, column"),
            "{message}"
        );
    }

    #[test]
    fn a_deeply_nested_200_kb_yaml_body_is_refused_at_once() {
        // 100,000 levels: serde_yaml took minutes. Generous bound: the
        // parser reads 128 levels and stops.
        for body in [
            nested_yaml_flow(100_000),
            format!("a: {}1{}", "{a: ".repeat(50_000), "}".repeat(50_000)),
        ] {
            let started = std::time::Instant::now();
            let got = yaml(&body);
            assert!(
                matches!(got, Err(DecodeError::TooDeep { max_depth: 128, .. })),
                "{got:?}"
            );
            assert!(
                started.elapsed() < std::time::Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
        }
    }

    #[test]
    fn malformed_bodies_are_syntax_errors() {
        for (format, body) in [
            (Format::Json, "{"),
            (Format::Json, "{} {}"),
            (Format::Yaml, "a: [1"),
            (Format::Yaml, "---\na: 1\n---\nb: 2"),
            (Format::Yaml, "*x"),
            (Format::Yaml, "a: &a [*a]"),
            (Format::Yaml, "\u{0}"),
        ] {
            assert!(
                matches!(
                    decode(format, body.as_bytes(), BodyLimits::default()),
                    Err(DecodeError::Syntax(_))
                ),
                "{body:?}"
            );
        }
        assert!(matches!(
            decode(Format::Yaml, &[0xff, 0xfe, 0x00], BodyLimits::default()),
            Err(DecodeError::Syntax(_))
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn big_bodies_are_decoded_off_the_worker_with_the_same_result() {
        let big = Bytes::from(format!("{{\"a\":\"{}\"}}", "x".repeat(INLINE_DECODE_BYTES)));
        let small = Bytes::from_static(b"{\"a\":1}");
        for body in [big, small] {
            let want = json_body(std::str::from_utf8(&body).unwrap_or_default());
            let got =
                decode_off_worker(body, |b| decode(Format::Json, b, BodyLimits::default())).await;
            assert_eq!(got, want);
        }
    }
}
