//! Label requirements as apimachinery defines them
//! (`k8s.io/apimachinery/pkg/labels` `Requirement`, `NewRequirement`,
//! `Matches`), limited to the operators node selectors use, plus the
//! `field.Error` shape their messages take. The validation they run
//! (`util/validation` `IsQualifiedName`, `IsValidLabelValue`,
//! `IsDNS1123Subdomain`) is berth-core's [`berth_core::validation::names`],
//! re-exported here.
//!
//! Parsing (and validating) happens once per pod; matching happens once per
//! node and only borrows, so it never allocates.

use std::collections::BTreeMap;
use std::fmt;

/// The label-selector operators a `NodeSelectorRequirement` maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// Which kind of `field.Error` this is; decides the message prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `field.Invalid`: "Invalid value".
    Invalid,
    /// `field.NotSupported`: "Unsupported value".
    NotSupported,
}

/// One validation error, shaped like apimachinery's `field.Error` so the
/// messages match upstream's word for word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    /// The path, e.g. `nodeSelectorTerms[2].matchExpressions[0].key`.
    pub field: String,
    /// The offending value, already formatted as Go would print it.
    pub bad_value: String,
    pub detail: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
        };
        write!(f, "{}: {kind}: {}", self.field, self.bad_value)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// A flattened list of validation errors; displays like apimachinery's
/// `utilerrors.Aggregate` (one message alone, several in brackets,
/// duplicates dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut seen: Vec<String> = Vec::new();
        for e in &self.0 {
            let msg = e.to_string();
            if !seen.contains(&msg) {
                seen.push(msg);
            }
        }
        match seen.as_slice() {
            [] => Ok(()),
            [one] => f.write_str(one),
            many => write!(f, "[{}]", many.join(", ")),
        }
    }
}

impl std::error::Error for FieldErrors {}

/// Go's `%q` (`strconv.Quote`), shared with berth-core's field errors.
pub(crate) use berth_core::validation::field::go_quote;

/// Go's `%#v` of a `[]string`.
pub(crate) fn go_string_slice(values: &[String]) -> String {
    let inner: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

/// `field.Path.Child`.
pub(crate) fn path_child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `field.Path.Index`.
pub(crate) fn path_index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// The key and value checks `labels.NewRequirement` runs
/// (`validation.IsQualifiedName`, `validation.IsValidLabelValue`, which
/// upstream forwards to `content.IsLabelKey` / `content.IsLabelValue`), and
/// `validation.IsDNS1123Subdomain`: the shared ports in berth-core, so the
/// messages are upstream's.
pub use berth_core::validation::names::{
    is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign, decimal digits,
/// leading zeros allowed ("0206" is 206), no spaces or underscores, and
/// out-of-range values rejected. Rust's `i64::from_str` accepts exactly
/// this language.
pub fn parse_int64(s: &str) -> Option<i64> {
    s.parse().ok()
}

/// One parsed, validated label requirement (`labels.Requirement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    op: Operator,
    values: Vec<String>,
    /// For `Gt`/`Lt`: the single value, parsed once here rather than on
    /// every node (validation guarantees it parses).
    bound: i64,
}

impl Requirement {
    /// `labels.NewRequirement` with `field.WithPath(path)`: validates the key,
    /// the value count for the operator, Gt/Lt integers, and every value as
    /// a label value, reporting all problems found.
    pub fn new(
        key: &str,
        op: Operator,
        values: &[String],
        path: &str,
    ) -> Result<Requirement, Vec<FieldError>> {
        let mut errs = Vec::new();
        let invalid = |field: String, bad_value: String, detail: String| FieldError {
            kind: FieldErrorKind::Invalid,
            field,
            bad_value,
            detail,
        };
        let key_errs = is_qualified_name(key);
        if !key_errs.is_empty() {
            errs.push(invalid(
                path_child(path, "key"),
                go_quote(key),
                key_errs.join("; "),
            ));
        }
        let values_path = path_child(path, "values");
        let mut bound = 0;
        match op {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(invalid(
                        values_path.clone(),
                        go_string_slice(values),
                        "for 'in', 'notin' operators, values set can't be empty".into(),
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(invalid(
                        values_path.clone(),
                        go_string_slice(values),
                        "values set must be empty for exists and does not exist".into(),
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(invalid(
                        values_path.clone(),
                        go_string_slice(values),
                        "for 'Gt', 'Lt' operators, exactly one value is required".into(),
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    match parse_int64(v) {
                        Some(n) => bound = n,
                        None => errs.push(invalid(
                            path_index(&values_path, i),
                            go_quote(v),
                            "for 'Gt', 'Lt' operators, the value must be an integer".into(),
                        )),
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = is_valid_label_value(v);
            if !value_errs.is_empty() {
                errs.push(invalid(
                    path_index(&values_path, i),
                    go_quote(v),
                    value_errs.join("; "),
                ));
            }
        }
        if errs.is_empty() {
            Ok(Requirement {
                key: key.to_string(),
                op,
                values: values.to_vec(),
                bound,
            })
        } else {
            Err(errs)
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.op
    }

    /// `Requirement.Matches`: whether a label set satisfies this requirement.
    /// A missing label fails `In`, `Exists`, `Gt` and `Lt` and passes
    /// `NotIn` and `DoesNotExist`; a label value that is not an integer
    /// fails `Gt` and `Lt`.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key));
        match self.op {
            Operator::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::NotIn => !value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(n) = value.and_then(|v| parse_int64(v)) else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    n > self.bound
                } else {
                    n < self.bound
                }
            }
        }
    }
}

/// A conjunction of requirements (`labels.Selector` built with `Add`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    pub fn new(requirements: Vec<Requirement>) -> Self {
        Selector { requirements }
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// All requirements hold (an empty selector matches everything).
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// `labels.SelectorFromSet` as a pod's `nodeSelector` uses it: every key
/// must be present with exactly that value. Upstream no longer validates
/// the set here, so neither does berth.
pub fn set_matches(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

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

    fn vals(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        match Requirement::new(key, op, &vals(values), "") {
            Ok(r) => r,
            Err(e) => panic!("requirement {key} {op:?} {values:?} should parse: {e:?}"),
        }
    }

    /// The matching half of apimachinery's `TestRequirementMatches` /
    /// `TestSelectorMatches`, for the node-selector operators.
    #[test]
    fn requirement_matches_as_apimachinery() {
        use Operator::*;
        let labels = set(&[
            ("x", "y"),
            ("n", "5"),
            ("z", "-2"),
            ("s", "abc"),
            ("lz", "0206"),
        ]);
        let cases: &[(&str, Requirement, bool)] = &[
            (
                "In with present matching value",
                req("x", In, &["y", "w"]),
                true,
            ),
            ("In with present other value", req("x", In, &["w"]), false),
            ("In with missing key", req("missing", In, &["y"]), false),
            (
                "NotIn with present other value",
                req("x", NotIn, &["w"]),
                true,
            ),
            (
                "NotIn with present listed value",
                req("x", NotIn, &["y"]),
                false,
            ),
            (
                "NotIn with missing key",
                req("missing", NotIn, &["y"]),
                true,
            ),
            ("Exists with present key", req("x", Exists, &[]), true),
            (
                "Exists with missing key",
                req("missing", Exists, &[]),
                false,
            ),
            (
                "DoesNotExist with present key",
                req("x", DoesNotExist, &[]),
                false,
            ),
            (
                "DoesNotExist with missing key",
                req("missing", DoesNotExist, &[]),
                true,
            ),
            ("Gt below label", req("n", GreaterThan, &["4"]), true),
            ("Gt equal to label", req("n", GreaterThan, &["5"]), false),
            (
                "Lt with a negative label value",
                req("z", LessThan, &["1"]),
                true,
            ),
            ("Gt non-numeric label", req("s", GreaterThan, &["1"]), false),
            ("Gt missing key", req("missing", GreaterThan, &["1"]), false),
            (
                "Gt leading zeros parse like Go",
                req("lz", GreaterThan, &["0204"]),
                true,
            ),
            ("Lt above label", req("n", LessThan, &["6"]), true),
            ("Lt equal to label", req("n", LessThan, &["5"]), false),
            ("Lt non-numeric label", req("s", LessThan, &["100"]), false),
            ("Lt missing key", req("missing", LessThan, &["100"]), false),
        ];
        for (name, r, want) in cases {
            assert_eq!(r.matches(Some(&labels)), *want, "{name}");
        }
        assert!(req("x", NotIn, &["y"]).matches(None), "no labels at all");
        assert!(!req("x", Exists, &[]).matches(None), "no labels at all");
    }

    /// The validation half of apimachinery's `TestRequirementConstructor`,
    /// for the node-selector operators, with the field paths and details.
    #[test]
    fn requirement_constructor_validates_as_apimachinery() {
        use Operator::*;
        let long = "a".repeat(64);
        type Case<'a> = (
            &'a str,
            &'a str,
            Operator,
            Vec<String>,
            Vec<(&'a str, &'a str)>,
        );
        let cases: Vec<Case> = vec![
            (
                "In without values",
                "x1",
                In,
                vec![],
                vec![(
                    "values",
                    "for 'in', 'notin' operators, values set can't be empty",
                )],
            ),
            (
                "NotIn without values",
                "x2",
                NotIn,
                vec![],
                vec![(
                    "values",
                    "for 'in', 'notin' operators, values set can't be empty",
                )],
            ),
            ("In with values", "x3", In, vals(&["foo"]), vec![]),
            ("NotIn with values", "x4", NotIn, vals(&["foo"]), vec![]),
            ("Exists without values", "x5", Exists, vec![], vec![]),
            (
                "Exists with values",
                "x6",
                Exists,
                vals(&["foo"]),
                vec![(
                    "values",
                    "values set must be empty for exists and does not exist",
                )],
            ),
            (
                "DoesNotExist without values",
                "x7",
                DoesNotExist,
                vec![],
                vec![],
            ),
            (
                "Gt with one integer",
                "x8",
                GreaterThan,
                vals(&["1"]),
                vec![],
            ),
            (
                "Gt with a non-integer",
                "x9",
                GreaterThan,
                vals(&["bar"]),
                vec![(
                    "values[0]",
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                )],
            ),
            (
                "Lt with two values",
                "x10",
                LessThan,
                vals(&["1", "2"]),
                vec![(
                    "values",
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )],
            ),
            (
                // The value must also be a valid label value, which cannot
                // start with '-': upstream rejects negative bounds too.
                "Lt with a negative integer",
                "x11",
                LessThan,
                vals(&["-1"]),
                vec![(
                    "values[0]",
                    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )],
            ),
            (
                "key with a slash-only prefix",
                "/x12",
                In,
                vals(&["a"]),
                vec![("key", "prefix part must be non-empty")],
            ),
            (
                "key with a DNS prefix",
                "example.com/x13",
                In,
                vals(&["a"]),
                vec![],
            ),
            (
                "key of 64 characters",
                long.as_str(),
                Exists,
                vec![],
                vec![("key", "name part must be no more than 63 bytes")],
            ),
            (
                "value of 64 characters",
                "x14",
                In,
                vec![long.clone()],
                vec![("values[0]", "must be no more than 63 bytes")],
            ),
            (
                "empty value is a valid label value",
                "x15",
                In,
                vals(&[""]),
                vec![],
            ),
        ];
        for (name, key, op, values, want) in cases {
            let got = match Requirement::new(key, op, &values, "") {
                Ok(_) => vec![],
                Err(errs) => errs,
            };
            let got: Vec<(String, String)> = got.into_iter().map(|e| (e.field, e.detail)).collect();
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(f, d)| (f.to_string(), d.to_string()))
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn invalid_key_message_matches_upstream() {
        let errs = match Requirement::new(
            "invalid key",
            Operator::In,
            &vals(&["bar"]),
            "[0].matchExpressions[0]",
        ) {
            Ok(_) => vec![],
            Err(e) => e,
        };
        assert_eq!(
            FieldErrors(errs).to_string(),
            "[0].matchExpressions[0].key: Invalid value: \"invalid key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
    }

    #[test]
    fn bad_prefix_reports_the_subdomain_rule() {
        assert_eq!(
            is_qualified_name("Example.com/x"),
            vec![
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()
            ]
        );
        assert!(is_qualified_name("a/b/c").len() == 1);
        assert_eq!(
            is_qualified_name("").len(),
            2,
            "empty name: non-empty and regex"
        );
    }

    #[test]
    fn node_selector_set_needs_every_pair() {
        let labels = set(&[("foo", "bar"), ("baz", "blah")]);
        assert!(set_matches(&set(&[("foo", "bar")]), Some(&labels)));
        assert!(!set_matches(
            &set(&[("foo", "bar"), ("x", "y")]),
            Some(&labels)
        ));
        assert!(!set_matches(&set(&[("foo", "barrr")]), Some(&labels)));
        assert!(set_matches(&set(&[]), None));
        assert!(!set_matches(&set(&[("foo", "bar")]), None));
    }

    proptest! {
        #[test]
        fn validation_and_matching_never_panic(key in "\\PC{0,80}", v in "\\PC{0,80}", label in "\\PC{0,30}") {
            let _ = is_qualified_name(&key);
            let _ = is_valid_label_value(&v);
            for op in [Operator::In, Operator::NotIn, Operator::Exists, Operator::DoesNotExist, Operator::GreaterThan, Operator::LessThan] {
                if let Ok(r) = Requirement::new(&key, op, std::slice::from_ref(&v), "") {
                    let labels = set(&[(key.as_str(), label.as_str())]);
                    let _ = r.matches(Some(&labels));
                }
            }
        }

        #[test]
        fn go_parse_int_agrees_with_decimal_round_trip(n in any::<i64>()) {
            prop_assert_eq!(parse_int64(&n.to_string()), Some(n));
            prop_assert_eq!(parse_int64(&format!("+{n}").replace("+-", "-")), Some(n));
        }
    }
}
