//! Field selectors in the syntax of apimachinery's `fields.ParseSelector`
//! (`pkg/fields/selector.go`): `k=v`, `k==v`, `k!=v`, joined by `,` (AND),
//! with `\` escaping `\`, `,` and `=` inside values.
//!
//! Which fields a selector may name, and what their values are for a given
//! object, is per kind: see [`super::SelectableKind`]. Upstream checks the
//! names when the request is decoded (the scheme's field label conversion)
//! and evaluates the selector against the set the registry strategy builds
//! (`ToSelectableFields`); [`FieldSelector::for_kind`] and
//! [`super::selectable_fields`] are those two steps.

use std::collections::BTreeMap;
use std::fmt;

/// A field selector error. `Display` is upstream's message byte for byte;
/// the API server answers every one of them with HTTP 400.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term with no `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidSelector {
        /// The whole selector as given.
        selector: String,
        /// The offending term, escapes included.
        term: String,
    },
    /// A `\` not followed by `\`, `,` or `=` (or ending the value).
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscapeSequence(String),
    /// An unescaped `,` or `=` inside a value. Upstream formats the rune with
    /// `%v`, which prints its code point as a decimal number.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedRune(char),
    /// A field the kind's conversion function does not accept.
    #[error("field label not supported: {0}")]
    UnsupportedLabel(String),
    /// A field outside `metadata.name`/`metadata.namespace` for a kind with
    /// no conversion function of its own (upstream's default conversion).
    #[error(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        go_quote(.0)
    )]
    UnknownDefaultLabel(String),
    /// A kind berth has no field table for.
    #[error("field selectors are not supported for kind {}", go_quote(.0))]
    UnsupportedKind(String),
}

/// `=`/`==` (both mean equality) or `!=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOperator {
    /// `=` or `==`.
    Equals,
    /// `!=`.
    NotEquals,
}

/// One `field op value` term, value unescaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field path, e.g. `spec.nodeName` (never escaped upstream).
    pub field: String,
    /// The operator.
    pub operator: FieldOperator,
    /// The literal value, escapes removed.
    pub value: String,
}

impl FieldTerm {
    fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        // `fields.Set.Get`: an absent field reads as "".
        let actual = fields.get(&self.field).map(String::as_str).unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

/// A parsed field selector: the AND of its terms. The empty selector
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// `fields.ParseSelector`. Terms come out sorted by their raw text, as
    /// upstream sorts them before parsing.
    pub fn parse(selector: &str) -> Result<Self, FieldSelectorError> {
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(FieldSelectorError::InvalidSelector {
                    selector: selector.to_string(),
                    term: part.to_string(),
                });
            };
            let value = unescape_value(rhs)?;
            let operator = if op == "!=" {
                FieldOperator::NotEquals
            } else {
                FieldOperator::Equals
            };
            terms.push(FieldTerm {
                field: lhs.to_string(),
                operator,
                value,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The terms, in parse order.
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether every term holds for `fields` (absent fields read as "").
    pub fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        self.terms.iter().all(|t| t.matches(fields))
    }

    /// `RequiresExactMatch`: the value an `=` term demands of `field`, if
    /// any (first such term wins, as upstream). Lets a caller use an index.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.operator == FieldOperator::Equals)
            .map(|t| t.value.as_str())
    }

    /// Checks every field against `kind`'s supported labels and applies the
    /// kind's renames (a pod's legacy `spec.host` is `spec.nodeName`), as
    /// the API server does before listing. The first unsupported field is
    /// the error, in term order.
    pub fn for_kind(&self, kind: super::SelectableKind) -> Result<Self, FieldSelectorError> {
        let terms = self
            .terms
            .iter()
            .map(|t| {
                kind.convert_field_label(&t.field).map(|field| FieldTerm {
                    field: field.to_string(),
                    operator: t.operator,
                    value: t.value.clone(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    /// Upstream's `String()`: `field=value` / `field!=value`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match t.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{}{}", t.field, op, escape_value(&t.value))?;
        }
        Ok(())
    }
}

/// `fields.EscapeValue`: prefixes `\`, `,` and `=` with a backslash.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `fields.UnescapeValue`: undoes [`escape_value`], rejecting unknown
/// escapes, a trailing `\`, and bare `,` or `=`.
pub fn unescape_value(s: &str) -> Result<String, FieldSelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(FieldSelectorError::InvalidEscapeSequence(format!("\\{c}")));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(FieldSelectorError::UnescapedRune(c)),
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(FieldSelectorError::InvalidEscapeSequence("\\".to_string()));
    }
    Ok(out)
}

/// `splitTerms`: splits on commas not escaped by a backslash; escapes stay
/// in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(selector.get(start..i).unwrap_or(""));
            start = i + 1;
        }
    }
    terms.push(selector.get(start..).unwrap_or(""));
    terms
}

/// `splitTerm`: the first `!=`, `==` or `=` (tried in that order at each
/// position) splits the term; the left side has no escaping.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = term.get(i..).unwrap_or("");
        for op in ["!=", "==", "="] {
            if rest.starts_with(op) {
                let lhs = term.get(..i).unwrap_or("");
                let rhs = term.get(i + op.len()..).unwrap_or("");
                return Some((lhs, op, rhs));
            }
        }
    }
    None
}

/// Go's `%q` (`strconv.Quote`), shared with berth-core's field errors.
pub(crate) use berth_core::validation::field::go_quote;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn split_terms_keeps_escaped_commas() {
        // Upstream TestSplitTerms.
        let cases: &[(&str, &[&str])] = &[
            ("a", &["a"]),
            ("a=avalue", &["a=avalue"]),
            ("a=avalue,b=bvalue", &["a=avalue", "b=bvalue"]),
            (
                "a=avalue,b==bvalue,c!=cvalue",
                &["a=avalue", "b==bvalue", "c!=cvalue"],
            ),
            ("", &[]),
            ("a=a,", &["a=a", ""]),
            (",a=a", &["", "a=a"]),
            (r"k=\,,k2=v2", &[r"k=\,", "k2=v2"]),
            (r"k=\\,k2=v2", &[r"k=\\", "k2=v2"]),
            (r"k=\\\,,k2=v2", &[r"k=\\\,", "k2=v2"]),
            (r"k=\a\b\", &[r"k=\a\b\"]),
            (r"k=\", &[r"k=\"]),
            ("함=수,목=록", &["함=수", "목=록"]),
        ];
        for (input, want) in cases {
            assert_eq!(split_terms(input), *want, "{input:?}");
        }
    }

    #[test]
    fn split_term_uses_the_first_operator() {
        // Upstream TestSplitTerm.
        type Split<'a> = Option<(&'a str, &'a str, &'a str)>;
        let cases: &[(&str, Split)] = &[
            ("a=value", Some(("a", "=", "value"))),
            ("b==value", Some(("b", "==", "value"))),
            ("c!=value", Some(("c", "!=", "value"))),
            ("", None),
            ("a", None),
            (r"k=\,", Some(("k", "=", r"\,"))),
            (r"k=\=", Some(("k", "=", r"\="))),
            (r"k=\\\a\b\=\,\", Some(("k", "=", r"\\\a\b\=\,\"))),
            ("함=수", Some(("함", "=", "수"))),
        ];
        for (input, want) in cases {
            assert_eq!(split_term(input), *want, "{input:?}");
        }
    }

    #[test]
    fn escape_and_unescape_round_trip() {
        // Upstream TestEscapeValue.
        let cases = [
            ("", ""),
            ("a", "a"),
            ("=", r"\="),
            (",", r"\,"),
            (r"\", r"\\"),
            (r"\=\,\", r"\\\=\\\,\\"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(escape_value(raw), escaped);
            assert_eq!(unescape_value(escaped), Ok(raw.to_string()));
        }
        for bad in [r"\", r"\\\", r"\a"] {
            let err = unescape_value(bad).map_err(|e| e.to_string());
            assert!(
                matches!(&err, Err(m) if m.contains("invalid escape sequence")),
                "{bad:?}: {err:?}"
            );
        }
    }

    #[test]
    fn parse_accepts_upstream_good_strings_and_restrings_them() {
        // Upstream TestSelectorParse.
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
            let sel = FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.to_string(), s);
        }
        for s in [
            "x=a||y=b",
            "x==a==b",
            "x=a,b",
            "x in (a)",
            "x in (a,b,c)",
            "x",
        ] {
            assert!(FieldSelector::parse(s).is_err(), "{s:?}");
        }
    }

    #[test]
    fn parse_is_deterministic_whatever_the_term_order() {
        // Upstream TestDeterministicParse.
        let a = FieldSelector::parse("x=a,a=x").map(|s| s.to_string());
        let b = FieldSelector::parse("a=x,x=a").map(|s| s.to_string());
        assert_eq!(a, b);
    }

    #[test]
    fn selector_matches_upstream_table() {
        // Upstream TestSelectorMatches.
        let fieldset = set(&[("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")]);
        let cases: Vec<(&str, BTreeMap<String, String>, bool)> = vec![
            ("", set(&[("x", "y")]), true),
            ("x=y", set(&[("x", "y")]), true),
            ("x=y,z=w", set(&[("x", "y"), ("z", "w")]), true),
            ("x!=y,z!=w", set(&[("x", "z"), ("z", "a")]), true),
            ("notin=in", set(&[("notin", "in")]), true),
            ("x=y", set(&[("x", "z")]), false),
            ("x=y,z=w", set(&[("x", "w"), ("z", "w")]), false),
            ("x!=y,z!=w", set(&[("x", "z"), ("z", "w")]), false),
            ("foo=bar", fieldset.clone(), true),
            ("baz=blah", fieldset.clone(), true),
            ("foo=bar,baz=blah", fieldset.clone(), true),
            (
                r"foo=bar,baz=blah,complex=\=value\\\,\\",
                fieldset.clone(),
                true,
            ),
            ("foo=blah", fieldset.clone(), false),
            ("baz=bar", fieldset.clone(), false),
            ("foo=bar,foobar=bar,baz=blah", fieldset.clone(), false),
        ];
        for (sel, fields, want) in cases {
            let parsed = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(parsed.matches(&fields), want, "{sel:?}");
        }
    }

    #[test]
    fn requires_exact_match_follows_upstream() {
        // Upstream TestRequiresExactMatch, for the selectors a parse can give.
        let cases = [
            ("", "test", None),
            ("a=b", "test", None),
            ("test=b", "test", Some("b")),
            ("test=", "test", Some("")),
            ("test!=b", "test", None),
            ("a=,test=b", "test", Some("b")),
        ];
        for (sel, field, want) in cases {
            let parsed = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(parsed.requires_exact_match(field), want, "{sel:?}");
        }
    }

    #[test]
    fn parse_errors_carry_upstream_messages() {
        let cases = [
            ("x", "invalid selector: 'x'; can't understand 'x'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            (
                "x==a==b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "x=a,b=c,d",
                "invalid selector: 'x=a,b=c,d'; can't understand 'd'",
            ),
            (
                r"x=\a",
                r"invalid field selector: invalid escape sequence: \a",
            ),
            (
                r"x=a\",
                r"invalid field selector: invalid escape sequence: \",
            ),
        ];
        for (input, want) in cases {
            match FieldSelector::parse(input) {
                Ok(sel) => panic!("{input:?} parsed as {sel}"),
                Err(e) => assert_eq!(e.to_string(), want, "{input:?}"),
            }
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = FieldSelector::parse(&s).map(|sel| sel.matches(&BTreeMap::new()));
        }

        #[test]
        fn parsed_selectors_restring_to_the_same_selector(s in r"[a-z.=!,\\]{0,30}") {
            if let Ok(sel) = FieldSelector::parse(&s) {
                // Same terms; their order may differ, since upstream sorts the
                // raw text and printing normalizes `==` and escapes.
                let again = FieldSelector::parse(&sel.to_string());
                prop_assert!(again.is_ok());
                let key = |t: &FieldTerm| format!("{t:?}");
                let mut a = sel.terms().to_vec();
                let mut b = again.map(|s| s.terms().to_vec()).unwrap_or_default();
                a.sort_by_key(key);
                b.sort_by_key(key);
                prop_assert_eq!(a, b);
            }
        }
    }
}
