//! Field-level validation errors and field paths: a port of apimachinery's
//! `pkg/util/validation/field` (`errors.go`, `path.go`).
//!
//! This module owns the error vocabulary every validator in berth returns:
//! [`ErrorType`] (with the `reason` string the API server puts in a 422
//! `Status.details.causes[].reason`), [`FieldError`] (whose `Display` is
//! upstream's `Error()` string byte for byte for scalar bad values) and
//! [`Path`] (which renders `spec.tolerations[0].key` and
//! `metadata.labels[foo]` the way upstream does).

use std::fmt;

use serde_json::Value;

/// Why a field is invalid. Mirrors upstream's `field.ErrorType`; the
/// machine-readable form is [`ErrorType::reason`] and the human form is the
/// `Display` impl (upstream's `String()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// A requested value could not be found (e.g. looking up an ID).
    NotFound,
    /// A required value was not provided (empty string, null, empty list).
    Required,
    /// A value that must be unique collides with another.
    Duplicate,
    /// A malformed value (failed format check, out of bounds).
    Invalid,
    /// A value outside an enumerated set.
    NotSupported,
    /// A well-formed value that current conditions (policy, update rules)
    /// do not permit.
    Forbidden,
    /// A value that is too long; its value is not echoed back.
    TooLong,
    /// A list with too many items.
    TooMany,
    /// An error not caused by user input.
    Internal,
    /// A value that did not match the schema type of the field.
    TypeInvalid,
}

impl ErrorType {
    /// The `reason` string of the matching `metav1.CauseType`, used for the
    /// `causes` of a 422 `Status` (e.g. `"FieldValueRequired"`).
    pub fn reason(&self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The canonical human-readable message (upstream `ErrorType.String()`).
    pub fn message(&self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
            ErrorType::TypeInvalid => "Invalid value",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// One field-level validation error (upstream `field.Error`).
///
/// `bad_value` is `None` where upstream either does not report a value
/// (Required, Forbidden) or deliberately omits it (`TooMany` with an unknown
/// count); `Some(Value::Null)` is upstream's `nil` and renders as `"null"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub error_type: ErrorType,
    pub field: String,
    pub bad_value: Option<Value>,
    pub detail: String,
}

/// A list of field errors, in the order the validators found them.
pub type ErrorList = Vec<FieldError>;

impl FieldError {
    /// `field.Required`: a value is required but missing.
    pub fn required(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, path, None, detail)
    }

    /// `field.Invalid`: a malformed value.
    pub fn invalid(path: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, path, Some(value.into()), detail)
    }

    /// `field.NotSupported`: a value outside `valid_values`; the detail lists
    /// them quoted, in the given order.
    pub fn not_supported(path: &Path, value: impl Into<Value>, valid_values: &[&str]) -> Self {
        let detail = if valid_values.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid_values.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, path, Some(value.into()), detail)
    }

    /// `field.Duplicate`: a value that must be unique is not.
    pub fn duplicate(path: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::Duplicate, path, Some(value.into()), "")
    }

    /// `field.NotFound`.
    pub fn not_found(path: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::NotFound, path, Some(value.into()), "")
    }

    /// `field.Forbidden`: valid, but not permitted here.
    pub fn forbidden(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, path, None, detail)
    }

    /// `field.TooLong`: the value is not echoed in the message.
    pub fn too_long(path: &Path, value: impl Into<Value>, max_length: usize) -> Self {
        Self::new(
            ErrorType::TooLong,
            path,
            Some(value.into()),
            format!("may not be more than {max_length} bytes"),
        )
    }

    /// `field.TooMany`: `actual` is omitted from the message when unknown.
    pub fn too_many(path: &Path, actual: Option<usize>, max: Option<usize>) -> Self {
        let detail = match max {
            Some(max) => format!("must have at most {max} items"),
            None => "has too many items".to_string(),
        };
        Self::new(ErrorType::TooMany, path, actual.map(Value::from), detail)
    }

    /// `field.InternalError`.
    pub fn internal(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, path, Some(Value::Null), detail)
    }

    fn new(
        error_type: ErrorType,
        path: &Path,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            error_type,
            field: path.to_string(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// The message without the field name (upstream `ErrorBody()`), e.g.
    /// `Unsupported value: "Foo": supported values: "NoExecute", ...`.
    pub fn error_body(&self) -> String {
        let mut s = match (self.error_type, &self.bad_value) {
            // Upstream never echoes the value for these types.
            (
                ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::TooLong
                | ErrorType::Internal,
                _,
            )
            | (_, None) => self.error_type.message().to_string(),
            (t, Some(v)) => format!("{}: {}", t, render_value(v)),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error_body())
    }
}

impl std::error::Error for FieldError {}

/// Renders a bad value the way upstream's `%v`/`%q` does for the scalar
/// types validators report: strings quoted Go-style, numbers and booleans
/// bare, nil as the quoted string `"null"`. Upstream prints structs with
/// `%#v` (Go syntax); berth has no Go syntax to print, so compound values
/// are rendered as compact JSON instead.
fn render_value(v: &Value) -> String {
    match v {
        Value::Null => go_quote("null"),
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) | Value::Object(_) => v.to_string(),
    }
}

/// Go's `strconv.Quote`, which upstream uses (through `%q`) for string bad
/// values and supported-value lists, so messages match byte for byte.
///
/// Go escapes runes that `unicode.IsPrint` rejects. Rust has no `IsPrint`;
/// controls, non-space whitespace and the common invisible format characters
/// are treated as non-printable here, which agrees with Go for everything
/// validators see in practice (ASCII and ordinary letters).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7F}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if go_is_print(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn go_is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    // Format characters (Cf) Go refuses to print; the usual invisible ones.
    !matches!(
        c,
        '\u{AD}'
            | '\u{600}'..='\u{605}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
    )
}

/// One step of a [`Path`]: a named field, or a subscript of the previous
/// step (an index or a map key, both rendered as `[..]`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Element {
    Name(String),
    Subscript(String),
}

/// The path from a root to a field (upstream `field.Path`). Cheap to clone;
/// `child`, `index` and `key` return new paths and leave `self` untouched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    elements: Vec<Element>,
}

impl Path {
    /// A root path (`field.NewPath`).
    pub fn new(root: impl Into<String>) -> Self {
        Path {
            elements: vec![Element::Name(root.into())],
        }
    }

    /// A named child of this path: `spec` -> `spec.tolerations`.
    pub fn child(&self, name: impl Into<String>) -> Self {
        self.with(Element::Name(name.into()))
    }

    /// A list index of this path: `spec.tolerations` -> `spec.tolerations[0]`.
    pub fn index(&self, index: usize) -> Self {
        self.with(Element::Subscript(index.to_string()))
    }

    /// A map key of this path: `metadata.labels` -> `metadata.labels[foo]`.
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.with(Element::Subscript(key.into()))
    }

    fn with(&self, element: Element) -> Self {
        let mut elements = self.elements.clone();
        elements.push(element);
        Path { elements }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, element) in self.elements.iter().enumerate() {
            match element {
                // Upstream stores names and subscripts in one struct and
                // treats an empty name as a subscript; keep that, so an empty
                // name renders as `[]` exactly as `field.NewPath("")` does.
                Element::Name(name) if !name.is_empty() => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(name)?;
                }
                Element::Name(_) => f.write_str("[]")?,
                Element::Subscript(sub) => write!(f, "[{sub}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors_set_the_error_type() {
        // Upstream TestMakeFuncs.
        let p = Path::new("f");
        let cases = [
            (FieldError::invalid(&p, "v", "d"), ErrorType::Invalid),
            (
                FieldError::not_supported(&p, "v", &[]),
                ErrorType::NotSupported,
            ),
            (FieldError::duplicate(&p, "v"), ErrorType::Duplicate),
            (FieldError::not_found(&p, "v"), ErrorType::NotFound),
            (FieldError::required(&p, "d"), ErrorType::Required),
            (FieldError::internal(&p, "e"), ErrorType::Internal),
            (FieldError::forbidden(&p, "d"), ErrorType::Forbidden),
            (FieldError::too_long(&p, "v", 3), ErrorType::TooLong),
            (
                FieldError::too_many(&p, Some(4), Some(3)),
                ErrorType::TooMany,
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.error_type, want, "{err}");
            assert_eq!(err.field, "f");
        }
    }

    #[test]
    fn reason_strings_match_metav1_cause_types() {
        let cases = [
            (ErrorType::NotFound, "FieldValueNotFound"),
            (ErrorType::Required, "FieldValueRequired"),
            (ErrorType::Duplicate, "FieldValueDuplicate"),
            (ErrorType::Invalid, "FieldValueInvalid"),
            (ErrorType::NotSupported, "FieldValueNotSupported"),
            (ErrorType::Forbidden, "FieldValueForbidden"),
            (ErrorType::TooLong, "FieldValueTooLong"),
            (ErrorType::TooMany, "FieldValueTooMany"),
            (ErrorType::Internal, "InternalError"),
            (ErrorType::TypeInvalid, "FieldValueTypeInvalid"),
        ];
        for (t, want) in cases {
            assert_eq!(t.reason(), want);
        }
    }

    #[test]
    fn error_message_contains_field_value_detail_and_type() {
        // Upstream TestErrorUsefulMessage (scalar part).
        let s = FieldError::invalid(&Path::new("foo"), "bar", "deet").to_string();
        for part in ["foo", "bar", "deet", "Invalid value"] {
            assert!(s.contains(part), "{s} lacks {part}");
        }
        let s = FieldError::invalid(&Path::new("foo"), Value::Null, "").to_string();
        assert!(s.contains("null"), "{s}");
    }

    #[test]
    fn not_supported_lists_quoted_values() {
        // Upstream TestNotSupported.
        let e = FieldError::not_supported(&Path::new("f"), "v", &["a", "b", "c"]);
        assert_eq!(
            e.error_body(),
            r#"Unsupported value: "v": supported values: "a", "b", "c""#
        );
    }

    #[test]
    fn error_body_renders_values_like_upstream() {
        // Upstream TestErrorBody, for the value kinds berth can hold.
        let p = Path::new("bla");
        let cases = [
            (
                FieldError::invalid(&p, 2, "details"),
                "Invalid value: 2: details",
            ),
            (
                FieldError::invalid(&p, Value::Null, "details"),
                r#"Invalid value: "null": details"#,
            ),
            (
                FieldError::invalid(&p, "x\"y\n", "details"),
                r#"Invalid value: "x\"y\n": details"#,
            ),
            (
                FieldError::invalid(&p, true, "details"),
                "Invalid value: true: details",
            ),
            (FieldError::required(&p, ""), "Required value"),
            (FieldError::required(&p, "d"), "Required value: d"),
            (FieldError::forbidden(&p, "nope"), "Forbidden: nope"),
            (
                FieldError::too_long(&p, "xxxx", 3),
                "Too long: may not be more than 3 bytes",
            ),
            (
                FieldError::too_many(&p, Some(5), Some(3)),
                "Too many: 5: must have at most 3 items",
            ),
            (
                FieldError::too_many(&p, None, None),
                "Too many: has too many items",
            ),
            (FieldError::duplicate(&p, "a"), r#"Duplicate value: "a""#),
            (
                FieldError::invalid(&p, json!({"k": 1}), "d"),
                r#"Invalid value: {"k":1}: d"#,
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.error_body(), want);
        }
    }

    #[test]
    fn display_is_field_colon_body() {
        let e = FieldError::not_supported(
            &Path::new("spec").child("taints").index(0).child("effect"),
            "Foo",
            &["NoExecute", "NoSchedule", "PreferNoSchedule"],
        );
        assert_eq!(
            e.to_string(),
            r#"spec.taints[0].effect: Unsupported value: "Foo": supported values: "NoExecute", "NoSchedule", "PreferNoSchedule""#
        );
    }

    #[test]
    fn path_renders_children_indexes_and_keys() {
        let cases = [
            (Path::new("root"), "root"),
            (Path::new("root").child("second"), "root.second"),
            (
                Path::new("spec").child("tolerations").index(0).child("key"),
                "spec.tolerations[0].key",
            ),
            (
                Path::new("metadata").child("labels").key("foo"),
                "metadata.labels[foo]",
            ),
            (
                Path::new("root").index(1).key("k").child("x"),
                "root[1][k].x",
            ),
            (
                Path::new("metadata")
                    .child("annotations")
                    .key("example.com/key"),
                "metadata.annotations[example.com/key]",
            ),
            (Path::new(""), "[]"),
        ];
        for (p, want) in cases {
            assert_eq!(p.to_string(), want);
        }
    }

    #[test]
    fn path_builders_do_not_mutate_the_parent() {
        let parent = Path::new("spec");
        let _child = parent.child("x");
        assert_eq!(parent.to_string(), "spec");
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        let cases = [
            ("abc", r#""abc""#),
            ("", r#""""#),
            ("a\"b", r#""a\"b""#),
            ("a\\b", r#""a\\b""#),
            ("\t\r\n\u{7}\u{8}\u{b}\u{c}", r#""\t\r\n\a\b\v\f""#),
            ("\u{0}\u{1f}\u{7f}", r#""\x00\x1f\x7f""#),
            ("Māori", r#""Māori""#),
            ("\u{a0}\u{feff}", r#""\u00a0\ufeff""#),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want);
        }
    }
}
