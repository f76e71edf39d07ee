//! apimachinery's label requirements and selectors (`pkg/labels`): the one
//! port the API server's `labelSelector=` and the node-selector matching
//! ([`crate::node_affinity`]) of the scheduler and the node agent use.
//!
//! - [`Requirement`]: `labels.NewRequirement` (validated, with upstream's
//!   field errors, at a field path when a node selector names one) and
//!   `Requirement.Matches`;
//! - [`LabelSelector`]: the string syntax of `labels.Parse`
//!   (`pkg/labels/selector.go`): `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//!   `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, joined by `,` (AND);
//! - [`set_matches`]: `labels.SelectorFromSet`, as a pod's `nodeSelector`
//!   uses it.
//!
//! The lexer and the recursive-descent parser follow upstream step by step,
//! including its quirks (a NUL byte ends the input, `in`/`notin` are plain
//! identifiers inside value lists, `x in ()` means `x in ("")`), so that
//! every accepted string, every rejected string and every error message is
//! the one kube-apiserver gives. The API server answers a parse error with
//! HTTP 400 and the message of [`LabelSelectorError`].
//!
//! Parsing (and validating) happens once per selector; matching only
//! borrows (a `Gt`/`Lt` bound is parsed once, with the requirement), so the
//! scheduler's Filter can call it once per node without allocating.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::validation::names::{is_qualified_name, is_valid_label_value};
use crate::validation::{ErrorType, FieldError};

/// A label selector parse or validation error. `Display` is upstream's
/// message byte for byte (e.g. `unable to parse requirement: ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LabelSelectorError(pub String);

/// Requirement operators (`selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `=`
    Equals,
    /// `==`
    DoubleEquals,
    /// `!=`
    NotEquals,
    /// `in`
    In,
    /// `notin`
    NotIn,
    /// A bare key.
    Exists,
    /// `!key`
    DoesNotExist,
    /// `>`; both sides compared as 64-bit integers.
    GreaterThan,
    /// `<`; both sides compared as 64-bit integers.
    LessThan,
}

impl Operator {
    /// Upstream's string value of the operator (`selection.Operator`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// Upstream's `binaryOperators`, in its order, as quoted in the
/// "expected:" error message.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// One `key op values` term of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and de-duplicated, as upstream's `sets.String.List()` leaves
    /// them after parsing.
    values: Vec<String>,
    /// For `gt`/`lt`: the one value, parsed once here rather than on every
    /// match (validation guarantees it parses).
    bound: Option<i64>,
}

/// A flattened list of field errors; displays like apimachinery's
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

/// `field.Path.Child` on a path written out (`""` is upstream's nil path,
/// which a node selector's requirements start from).
pub(crate) fn path_child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `field.Path.Index` on a path written out.
pub(crate) fn path_index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `field.Invalid` at a path written out.
pub(crate) fn invalid_at(
    field: String,
    value: impl Into<Value>,
    detail: impl Into<String>,
) -> FieldError {
    FieldError {
        error_type: ErrorType::Invalid,
        field,
        bad_value: Some(value.into()),
        detail: detail.into(),
    }
}

impl Requirement {
    /// `labels.NewRequirement`: checks the key, the number of values for the
    /// operator, integer values for `gt`/`lt`, and each value's syntax.
    /// Values are kept in the order given (the parser hands them sorted).
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, LabelSelectorError> {
        Requirement::at(key, operator, values, "").map_err(|e| LabelSelectorError(e.to_string()))
    }

    /// `labels.NewRequirement` with `field.WithPath(path)` (`""`: none, as
    /// [`Requirement::new`]), reporting every problem as a field error.
    pub fn at(
        key: &str,
        operator: Operator,
        values: Vec<String>,
        path: &str,
    ) -> Result<Self, FieldErrors> {
        let mut errs: Vec<FieldError> = Vec::new();
        let key_problems = is_qualified_name(key);
        if !key_problems.is_empty() {
            errs.push(invalid_at(
                path_child(path, "key"),
                key,
                key_problems.join("; "),
            ));
        }
        let value_path = path_child(path, "values");
        let mut bound = None;
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(invalid_at(
                        value_path.clone(),
                        serde_json::json!(values),
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(invalid_at(
                        value_path.clone(),
                        serde_json::json!(values),
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(invalid_at(
                        value_path.clone(),
                        serde_json::json!(values),
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(invalid_at(
                        value_path.clone(),
                        serde_json::json!(values),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    match parse_int64(v) {
                        Some(n) => bound = Some(n),
                        None => errs.push(invalid_at(
                            path_index(&value_path, i),
                            v.as_str(),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )),
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let problems = is_valid_label_value(v);
            if !problems.is_empty() {
                // Upstream's `validateLabelValue` reports at `path.Key(key)`.
                errs.push(invalid_at(
                    format!("{}[{key}]", path_index(&value_path, i)),
                    v.as_str(),
                    problems.join("; "),
                ));
            }
        }
        if errs.is_empty() {
            Ok(Requirement {
                key: key.to_string(),
                operator,
                values,
                bound,
            })
        } else {
            Err(FieldErrors(errs))
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values (sorted and unique when parsed).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// `Requirement.Matches`: whether a label set (`None`: no labels)
    /// satisfies this requirement. A missing label fails `In`, `=`,
    /// `Exists`, `gt` and `lt` and passes `NotIn`, `!=` and
    /// `DoesNotExist`; a label value that is not an integer fails `gt` and
    /// `lt`. Never allocates.
    pub fn matches<'a>(&self, labels: impl Into<Option<&'a BTreeMap<String, String>>>) -> bool {
        let value = labels.into().and_then(|l| l.get(&self.key));
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                // Upstream insists on exactly one integer value; anything
                // else never matches (validation rejects it anyway).
                let (Some(label), Some(bound)) = (value.and_then(|v| parse_int64(v)), self.bound)
                else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    label > bound
                } else {
                    label < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// `Requirement.String`: values sorted, `in`/`notin` in parentheses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let parens = matches!(self.operator, Operator::In | Operator::NotIn);
        if parens {
            f.write_str("(")?;
        }
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        if parens {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements, sorted by key.
/// The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// `labels.Parse`.
    pub fn parse(selector: &str) -> Result<Self, LabelSelectorError> {
        let mut parser = Parser::new(selector);
        let mut requirements = parser.parse()?;
        // Upstream sorts by key "to grant deterministic parsing"; a stable
        // sort keeps same-key requirements in input order (Go's sort of so
        // few elements is an insertion sort, stable too).
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// The AND of `requirements` (`labels.NewSelector().Add(...)`, which
    /// sorts them by key).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements }
    }

    /// `metav1.LabelSelectorAsSelector`: `matchLabels` as `=` requirements
    /// and `matchExpressions` (`In`, `NotIn`, `Exists`, `DoesNotExist`), all
    /// ANDed; an empty selector selects everything. Each requirement is
    /// validated as `labels.NewRequirement` does.
    pub fn from_label_selector(
        selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    ) -> Result<Self, LabelSelectorError> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(
                key,
                Operator::Equals,
                vec![value.clone()],
            )?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(LabelSelectorError(format!(
                        "{other:?} is not a valid label selector operator"
                    )));
                }
            };
            let values = expr.values.clone().unwrap_or_default();
            requirements.push(Requirement::new(&expr.key, operator, values)?);
        }
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// Whether every requirement matches `labels` (`None`: no labels).
    pub fn matches<'a>(&self, labels: impl Into<Option<&'a BTreeMap<String, String>>>) -> bool {
        let labels = labels.into();
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector restricts nothing (`Empty()`).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl LabelSelector {
    /// `labels.SelectorFromSet(set)`: one `key=value` requirement per entry
    /// (not validated, as upstream's pre-validated form).
    pub fn from_set<'a>(set: impl IntoIterator<Item = (&'a String, &'a String)>) -> Self {
        LabelSelector::from_requirements(
            set.into_iter()
                .map(|(k, v)| Requirement::unvalidated(k, Operator::Equals, vec![v.clone()]))
                .collect(),
        )
    }

    /// `Selector.Add`: this selector ANDed with `requirements`.
    pub fn with_requirements(
        mut self,
        requirements: impl IntoIterator<Item = Requirement>,
    ) -> Self {
        self.requirements.extend(requirements);
        LabelSelector::from_requirements(self.requirements)
    }
}

impl Requirement {
    /// A requirement built from parts an API object already validated
    /// (`AsSelectorPreValidated`).
    fn unvalidated(key: &str, operator: Operator, values: Vec<String>) -> Requirement {
        let bound = match operator {
            Operator::GreaterThan | Operator::LessThan => {
                values.first().and_then(|v| parse_int64(v))
            }
            _ => None,
        };
        Requirement {
            key: key.to_string(),
            operator,
            values,
            bound,
        }
    }
}

/// `metav1.LabelSelectorAsSelector`: a Kubernetes `LabelSelector` as a
/// parsed selector. `None` (upstream's nil selector) selects nothing and
/// comes back as `Ok(None)`; an empty selector selects everything.
/// `matchLabels` become `key=value` requirements, `matchExpressions` keep
/// their operator (`In`, `NotIn`, `Exists`, `DoesNotExist`); anything else
/// is an error with upstream's message.
pub fn label_selector_as_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> Result<Option<LabelSelector>, LabelSelectorError> {
    let Some(selector) = selector else {
        return Ok(None);
    };
    let mut requirements = Vec::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        requirements.push(Requirement::new(k, Operator::Equals, vec![v.clone()])?);
    }
    for expr in selector.match_expressions.iter().flatten() {
        let operator = match expr.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(LabelSelectorError(format!(
                    "{other:?} is not a valid label selector operator"
                )));
            }
        };
        let values = expr.values.clone().unwrap_or_default();
        requirements.push(Requirement::new(&expr.key, operator, values)?);
    }
    Ok(Some(LabelSelector::from_requirements(requirements)))
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

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign, decimal digits,
/// leading zeros allowed ("0206" is 206), no spaces or underscores, and
/// out-of-range values rejected. Rust's `i64::from_str` accepts exactly
/// this language.
pub fn parse_int64(s: &str) -> Option<i64> {
    s.parse().ok()
}

/// `validateLabelKey` as the parser calls it: at upstream's nil path.
fn validate_label_key(key: &str) -> Option<String> {
    let problems = is_qualified_name(key);
    if problems.is_empty() {
        None
    } else {
        Some(invalid_at("<nil>".to_string(), key, problems.join("; ")).to_string())
    }
}

/// Lexer tokens (upstream `Token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// `string2token`.
fn string_to_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Upstream's byte-wise `Lexer`. Identifiers end only at ASCII bytes, so
/// every literal is a valid UTF-8 slice of the input.
pub(crate) struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Lexer { s, pos: 0 }
    }

    /// Returns the next byte, or 0 at the end. Like upstream, a NUL byte in
    /// the input reads as 0 too (and so ends the token or the input).
    fn read(&mut self) -> u8 {
        match self.s.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// The input between two byte offsets. Offsets always sit next to ASCII
    /// bytes, so this never splits a character; `get` keeps it panic-free
    /// regardless.
    fn slice(&self, start: usize, end: usize) -> &'a str {
        self.s.get(start..end).unwrap_or("")
    }

    fn scan_id_or_keyword(&mut self) -> (Token, &'a str) {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let lit = self.slice(start, end);
        match string_to_token(lit.as_bytes()) {
            Some(tok) => (tok, lit),
            None => (Token::Identifier, lit),
        }
    }

    fn scan_special_symbol(&mut self) -> (Token, &'a str) {
        let start = self.pos;
        let mut last: Option<(Token, &'a str)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) {
                let buf = self.slice(start, self.pos);
                if let Some(tok) = string_to_token(buf.as_bytes()) {
                    last = Some((tok, buf));
                } else if last.is_some() {
                    self.unread();
                    break;
                }
            } else {
                self.unread();
                break;
            }
        }
        match last {
            Some(item) => item,
            // Unreachable in practice (every special symbol is a token on its
            // own) but kept as upstream has it.
            None => (Token::Error, "error expected: keyword found"),
        }
    }

    fn skip_white_spaces(&mut self, mut ch: u8) -> u8 {
        while is_whitespace(ch) {
            ch = self.read();
        }
        ch
    }

    /// `Lex`: the next token and its literal.
    pub(crate) fn lex(&mut self) -> (Token, &'a str) {
        let first = self.read();
        let ch = self.skip_white_spaces(first);
        if ch == 0 {
            (Token::EndOfString, "")
        } else if is_special_symbol(ch) {
            self.unread();
            self.scan_special_symbol()
        } else {
            self.unread();
            self.scan_id_or_keyword()
        }
    }
}

/// Whether `in`/`notin` are operators (key-and-operator position) or plain
/// identifiers (value position).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    KeyAndOperator,
    Values,
}

pub(crate) struct Parser<'a> {
    lexer: Lexer<'a>,
    items: Vec<(Token, &'a str)>,
    position: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Parser {
            lexer: Lexer::new(s),
            items: Vec::new(),
            position: 0,
        }
    }

    /// Tokenizes the whole input up to and including the end token.
    pub(crate) fn scan(&mut self) {
        loop {
            let item = self.lexer.lex();
            self.items.push(item);
            if item.0 == Token::EndOfString {
                break;
            }
        }
    }

    fn item_at(&self, index: usize, context: Context) -> (Token, &'a str) {
        // Past the end reads as the end token; upstream never gets there, and
        // this keeps the parser panic-free.
        let (tok, lit) = self
            .items
            .get(index)
            .copied()
            .unwrap_or((Token::EndOfString, ""));
        if context == Context::Values && matches!(tok, Token::In | Token::NotIn) {
            (Token::Identifier, lit)
        } else {
            (tok, lit)
        }
    }

    pub(crate) fn lookahead(&self, context: Context) -> (Token, &'a str) {
        self.item_at(self.position, context)
    }

    pub(crate) fn consume(&mut self, context: Context) -> (Token, &'a str) {
        let item = self.item_at(self.position, context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, LabelSelectorError> {
        self.scan();
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| {
                        LabelSelectorError(format!("unable to parse requirement: {e}"))
                    })?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(LabelSelectorError(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(LabelSelectorError(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(LabelSelectorError(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, LabelSelectorError> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(key, operator, values)
    }

    /// Reads `[!]key`; infers `Exists`/`DoesNotExist` when the key ends the
    /// requirement, and returns `None` when an operator must follow. A `!`
    /// followed by more than a key still yields `DoesNotExist`, as upstream
    /// does; the stray tokens then fail in the caller.
    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(&'a str, Option<Operator>), LabelSelectorError> {
        let mut operator = None;
        let (mut tok, mut literal) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (tok, literal) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(LabelSelectorError(format!(
                "found '{literal}', expected: identifier"
            )));
        }
        // Upstream validates with the parser's (nil) path, printed `<nil>`.
        if let Some(e) = validate_label_key(literal) {
            return Err(LabelSelectorError(e));
        }
        let (t, _) = self.lookahead(Context::Values);
        if matches!(t, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, LabelSelectorError> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(LabelSelectorError(format!(
                    "found '{lit}', expected: {BINARY_OPERATORS}"
                )));
            }
        })
    }

    /// `(x,y,z)`; the values come back sorted and unique like a `sets.String`.
    fn parse_values(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(LabelSelectorError(format!("found '{lit}' expected: '('")));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    // Upstream reports the token after `(`, not the offending
                    // one; kept for identical messages.
                    return Err(LabelSelectorError(format!("found '{lit}', expected: ')'")));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(LabelSelectorError(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        let mut set: Vec<String> = Vec::new();
        let insert = |set: &mut Vec<String>, v: &str| {
            if let Err(pos) = set.binary_search_by(|probe| probe.as_str().cmp(v)) {
                set.insert(pos, v.to_string());
            }
        };
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    insert(&mut set, lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(LabelSelectorError(format!(
                                "found '{lit2}', expected: ',' or ')'"
                            )));
                        }
                    }
                }
                Token::Comma => {
                    // `(,`, `,)` and `,,` each stand for an empty value.
                    if set.is_empty() {
                        insert(&mut set, "");
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        insert(&mut set, "");
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        insert(&mut set, "");
                    }
                }
                _ => {
                    return Err(LabelSelectorError(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )));
                }
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(vec![lit.to_string()])
        } else {
            Err(LabelSelectorError(format!(
                "found '{lit}', expected: identifier"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Pairs<'a> = &'a [(&'a str, &'a str)];

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(key: &str, op: Operator, vals: &[&str]) -> Requirement {
        let mut values: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
        values.sort();
        values.dedup();
        match Requirement::new(key, op, values) {
            Ok(r) => r,
            Err(e) => panic!("requirement {key} {op:?} {vals:?}: {e}"),
        }
    }

    #[test]
    fn parse_accepts_upstream_good_strings_and_restrings_them() {
        // Upstream TestSelectorParse.
        let good = [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ];
        for s in good {
            let sel = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.to_string(), s.replace(' ', ""), "restring of {s:?}");
        }
        for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(LabelSelector::parse(s).is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn parse_is_deterministic_whatever_the_term_order() {
        // Upstream TestDeterministicParse.
        let a = LabelSelector::parse("x=a,a=x").map(|s| s.to_string());
        let b = LabelSelector::parse("a=x,x=a").map(|s| s.to_string());
        assert_eq!(a, b);
    }

    #[test]
    fn selector_matches_upstream_table() {
        // Upstream TestSelectorMatches.
        let cases: &[(&str, Pairs, bool)] = &[
            ("", &[("x", "y")], true),
            ("x=y", &[("x", "y")], true),
            ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
            ("notin=in", &[("notin", "in")], true),
            ("x", &[("x", "z")], true),
            ("!x", &[("y", "z")], true),
            ("x>1", &[("x", "2")], true),
            ("x<1", &[("x", "0")], true),
            ("x=z", &[], false),
            ("x=y", &[("x", "z")], false),
            ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
            ("x", &[("y", "z")], false),
            ("!x", &[("x", "z")], false),
            ("x>1", &[("x", "0")], false),
            ("x<1", &[("x", "2")], false),
            ("foo=bar", &[("foo", "bar"), ("baz", "blah")], true),
            ("baz=blah", &[("foo", "bar"), ("baz", "blah")], true),
            ("foo=bar,baz=blah", &[("foo", "bar"), ("baz", "blah")], true),
            ("foo=blah", &[("foo", "bar"), ("baz", "blah")], false),
            ("baz=bar", &[("foo", "bar"), ("baz", "blah")], false),
            (
                "foo=bar,foobar=bar,baz=blah",
                &[("foo", "bar"), ("baz", "blah")],
                false,
            ),
        ];
        for (sel, labels, want) in cases {
            let parsed = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(parsed.matches(&set(labels)), *want, "{sel:?} vs {labels:?}");
        }
    }

    #[test]
    fn lexer_returns_the_longest_token() {
        // Upstream TestLexer.
        let cases = [
            ("", Token::EndOfString),
            (",", Token::Comma),
            ("notin", Token::NotIn),
            ("in", Token::In),
            ("=", Token::Equals),
            ("==", Token::DoubleEquals),
            (">", Token::GreaterThan),
            ("<", Token::LessThan),
            ("!", Token::DoesNotExist),
            ("!=", Token::NotEquals),
            ("(", Token::OpenPar),
            (")", Token::ClosedPar),
            ("~", Token::Identifier),
            ("||", Token::Identifier),
        ];
        for (s, want) in cases {
            let (tok, lit) = Lexer::new(s).lex();
            assert_eq!(tok, want, "{s:?}");
            assert_eq!(lit, s, "{s:?}");
        }
    }

    fn lex_all(s: &str) -> Vec<Token> {
        let mut l = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let (tok, _) = l.lex();
            if tok == Token::EndOfString {
                return out;
            }
            out.push(tok);
        }
    }

    #[test]
    fn lexer_sequences_match_upstream() {
        // Upstream TestLexerSequence.
        use Token::*;
        let cases: &[(&str, &[Token])] = &[
            (
                "key in ( value )",
                &[Identifier, In, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key notin ( value )",
                &[Identifier, NotIn, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key in ( value1, value2 )",
                &[
                    Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
                ],
            ),
            ("key", &[Identifier]),
            ("!key", &[DoesNotExist, Identifier]),
            ("()", &[OpenPar, ClosedPar]),
            (
                "x in (),y",
                &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
            ),
            (
                "== != (), = notin",
                &[
                    DoubleEquals,
                    NotEquals,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Equals,
                    NotIn,
                ],
            ),
            ("key>2", &[Identifier, GreaterThan, Identifier]),
            ("key<1", &[Identifier, LessThan, Identifier]),
        ];
        for (s, want) in cases {
            assert_eq!(lex_all(s), *want, "{s:?}");
        }
    }

    #[test]
    fn parser_lookahead_agrees_with_consume() {
        // Upstream TestParserLookahead: scan then walk with lookahead/consume.
        let cases: &[(&str, usize)] = &[
            ("key in ( value )", 6),
            ("key notin ( value )", 6),
            ("key in ( value1, value2 )", 8),
            ("key", 2),
            ("!key", 3),
            ("()", 3),
            ("", 1),
            ("x in (),y", 7),
            ("== != (), = notin", 8),
            ("key>2", 4),
            ("key<1", 4),
        ];
        for (s, n) in cases {
            let mut p = Parser::new(s);
            p.scan();
            assert_eq!(p.items.len(), *n, "{s:?}");
            loop {
                let a = p.lookahead(Context::KeyAndOperator);
                let b = p.consume(Context::KeyAndOperator);
                if a.0 == Token::EndOfString {
                    break;
                }
                assert_eq!(a, b, "{s:?}");
            }
        }
    }

    #[test]
    fn requirement_constructor_checks_values_per_operator() {
        // Upstream TestRequirementConstructor.
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        struct Case {
            key: String,
            op: Operator,
            vals: Vec<String>,
            ok: bool,
        }
        let cases = vec![
            Case {
                key: "x".into(),
                op: Operator::In,
                vals: v(&[]),
                ok: false,
            },
            Case {
                key: "x".into(),
                op: Operator::NotIn,
                vals: v(&[]),
                ok: false,
            },
            Case {
                key: "x".into(),
                op: Operator::In,
                vals: v(&["foo"]),
                ok: true,
            },
            Case {
                key: "x".into(),
                op: Operator::NotIn,
                vals: v(&["foo"]),
                ok: true,
            },
            Case {
                key: "x".into(),
                op: Operator::Exists,
                vals: v(&[]),
                ok: true,
            },
            Case {
                key: "x".into(),
                op: Operator::DoesNotExist,
                vals: v(&[]),
                ok: true,
            },
            Case {
                key: "1foo".into(),
                op: Operator::In,
                vals: v(&["bar"]),
                ok: true,
            },
            Case {
                key: "1234".into(),
                op: Operator::In,
                vals: v(&["bar"]),
                ok: true,
            },
            Case {
                key: "y".into(),
                op: Operator::GreaterThan,
                vals: v(&["1"]),
                ok: true,
            },
            Case {
                key: "z".into(),
                op: Operator::LessThan,
                vals: v(&["6"]),
                ok: true,
            },
            Case {
                key: "foo".into(),
                op: Operator::GreaterThan,
                vals: v(&["bar"]),
                ok: false,
            },
            Case {
                key: "barz".into(),
                op: Operator::LessThan,
                vals: v(&["blah"]),
                ok: false,
            },
            Case {
                key: "a".repeat(254),
                op: Operator::Exists,
                vals: v(&[]),
                ok: false,
            },
        ];
        for Case { key, op, vals, ok } in cases {
            let got = Requirement::new(&key, op, vals.clone());
            assert_eq!(got.is_ok(), ok, "{key} {op:?} {vals:?}: {got:?}");
        }
    }

    #[test]
    fn requirements_print_as_upstream() {
        // Upstream TestToString (the valid cases).
        let cases: Vec<(Vec<Requirement>, &str)> = vec![
            (
                vec![
                    req("x", Operator::In, &["abc", "def"]),
                    req("y", Operator::NotIn, &["jkl"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x in (abc,def),y notin (jkl),z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc", "def"]),
                    req("y", Operator::NotEquals, &["jkl"]),
                    req("z", Operator::DoesNotExist, &[]),
                ],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc"]),
                    req("y", Operator::In, &["jkl", "mno"]),
                    req("z", Operator::NotIn, &[""]),
                ],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                vec![
                    req("x", Operator::Equals, &["abc"]),
                    req("y", Operator::DoubleEquals, &["jkl"]),
                    req("z", Operator::NotEquals, &["a"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x=abc,y==jkl,z!=a,z",
            ),
            (
                vec![
                    req("x", Operator::GreaterThan, &["2"]),
                    req("y", Operator::LessThan, &["8"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x>2,y<8,z",
            ),
        ];
        for (reqs, want) in cases {
            let sel = LabelSelector { requirements: reqs };
            assert_eq!(sel.to_string(), want);
        }
    }

    #[test]
    fn requirement_selectors_match_upstream_table() {
        // Upstream TestRequirementSelectorMatching (minus the zero-value
        // Requirement, which cannot be built here).
        let cases: Vec<(Pairs, Vec<Requirement>, bool)> = vec![
            (
                &[("x", "foo"), ("y", "baz")],
                vec![
                    req("x", Operator::In, &["foo"]),
                    req("y", Operator::NotIn, &["alpha"]),
                ],
                true,
            ),
            (
                &[("x", "foo"), ("y", "baz")],
                vec![
                    req("x", Operator::In, &["foo"]),
                    req("y", Operator::In, &["alpha"]),
                ],
                false,
            ),
            (
                &[("y", "")],
                vec![
                    req("x", Operator::NotIn, &[""]),
                    req("y", Operator::Exists, &[]),
                ],
                true,
            ),
            (
                &[("y", "")],
                vec![
                    req("x", Operator::DoesNotExist, &[]),
                    req("y", Operator::Exists, &[]),
                ],
                true,
            ),
            (
                &[("y", "")],
                vec![
                    req("x", Operator::NotIn, &[""]),
                    req("y", Operator::DoesNotExist, &[]),
                ],
                false,
            ),
            (&[("y", "baz")], vec![req("x", Operator::In, &[""])], false),
            (
                &[("z", "2")],
                vec![req("z", Operator::GreaterThan, &["1"])],
                true,
            ),
            (
                &[("z", "v2")],
                vec![req("z", Operator::GreaterThan, &["1"])],
                false,
            ),
        ];
        for (labels, reqs, want) in cases {
            let sel = LabelSelector { requirements: reqs };
            assert_eq!(sel.matches(&set(labels)), want, "{sel} vs {labels:?}");
        }
    }

    #[test]
    fn set_selector_parser_matches_upstream_table() {
        // Upstream TestSetSelectorParser: input, expected requirements (None
        // when not compared), valid.
        type Case = (&'static str, Option<Vec<Requirement>>, bool);
        let cases: Vec<Case> = vec![
            ("", Some(vec![]), true),
            ("\rx", Some(vec![req("x", Operator::Exists, &[])]), true),
            (
                "this-is-a-dns.domain.com/key-with-dash",
                Some(vec![req(
                    "this-is-a-dns.domain.com/key-with-dash",
                    Operator::Exists,
                    &[],
                )]),
                true,
            ),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                Some(vec![req(
                    "this-is-another-dns.domain.com/key-with-dash",
                    Operator::In,
                    &["so", "what"],
                )]),
                true,
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                Some(vec![req(
                    "0.1.2.domain/99",
                    Operator::NotIn,
                    &["10.10.100.1", "tick.tack.clock"],
                )]),
                true,
            ),
            (
                "foo  in\t (abc)",
                Some(vec![req("foo", Operator::In, &["abc"])]),
                true,
            ),
            (
                "x notin\n (abc)",
                Some(vec![req("x", Operator::NotIn, &["abc"])]),
                true,
            ),
            (
                "x  notin\t\t\t(abc,def)",
                Some(vec![req("x", Operator::NotIn, &["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,def)",
                Some(vec![req("x", Operator::In, &["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,)",
                Some(vec![req("x", Operator::In, &["abc", ""])]),
                true,
            ),
            ("x in ()", Some(vec![req("x", Operator::In, &[""])]), true),
            (
                "x notin (abc,,def),bar,z in (),w",
                Some(vec![
                    req("bar", Operator::Exists, &[]),
                    req("w", Operator::Exists, &[]),
                    req("x", Operator::NotIn, &["abc", "", "def"]),
                    req("z", Operator::In, &[""]),
                ]),
                true,
            ),
            ("x,y in (a)", None, true),
            ("x=a", Some(vec![req("x", Operator::Equals, &["a"])]), true),
            (
                "x>1",
                Some(vec![req("x", Operator::GreaterThan, &["1"])]),
                true,
            ),
            (
                "x<7",
                Some(vec![req("x", Operator::LessThan, &["7"])]),
                true,
            ),
            (
                "x=a,y!=b",
                Some(vec![
                    req("x", Operator::Equals, &["a"]),
                    req("y", Operator::NotEquals, &["b"]),
                ]),
                true,
            ),
            (
                "x=a,y!=b,z in (h,i,j)",
                Some(vec![
                    req("x", Operator::Equals, &["a"]),
                    req("y", Operator::NotEquals, &["b"]),
                    req("z", Operator::In, &["h", "i", "j"]),
                ]),
                true,
            ),
            ("x=a||y=b", None, false),
            ("x,y", None, true),
            (",x,y", None, false),
            ("x nott in (y)", None, false),
            (
                "x notin ( )",
                Some(vec![req("x", Operator::NotIn, &[""])]),
                true,
            ),
            (
                "x notin (, a)",
                Some(vec![req("x", Operator::NotIn, &["", "a"])]),
                true,
            ),
            ("a in (xyz),", None, false),
            ("a in (xyz)b notin ()", None, false),
            ("a ", Some(vec![req("a", Operator::Exists, &[])]), true),
            (
                "a in (x,y,notin, z,in)",
                Some(vec![req(
                    "a",
                    Operator::In,
                    &["in", "notin", "x", "y", "z"],
                )]),
                true,
            ),
            ("a in (xyz abc)", None, false),
            ("a notin(", None, false),
            ("a (", None, false),
            ("(", None, false),
        ];
        for (input, want, valid) in cases {
            let got = LabelSelector::parse(input);
            assert_eq!(got.is_ok(), valid, "{input:?}: {got:?}");
            if let (Ok(sel), Some(want)) = (got, want) {
                assert_eq!(sel.requirements, want, "{input:?}");
            }
        }
    }

    #[test]
    fn parse_errors_carry_upstream_messages() {
        let cases = [
            ("x=a,,", "found ',', expected: identifier after ','"),
            (
                ",x",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            ("x,", "found '', expected: identifier after ','"),
            ("x,=", "found '=', expected: identifier after ','"),
            (
                "x nott in (y)",
                "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "x in y",
                "unable to parse requirement: found 'y' expected: '('",
            ),
            (
                "a notin(",
                "unable to parse requirement: found '', expected: ',', ')' or identifier",
            ),
            (
                "a in (xyz abc)",
                "unable to parse requirement: found 'abc', expected: ',' or ')'",
            ),
            (
                "x in (a,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            ("x==a==b", "found '==', expected: ',' or 'end of string'"),
            (
                "x=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "! =",
                "unable to parse requirement: found '=', expected: identifier",
            ),
            (
                "!=",
                "found '!=', expected: !, identifier, or 'end of string'",
            ),
            (
                "x<a",
                "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "a/b/c",
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ),
            (
                "x=a$",
                "unable to parse requirement: values[0][x]: Invalid value: \"a$\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "x>a$",
                "unable to parse requirement: [values[0]: Invalid value: \"a$\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"a$\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
            ),
        ];
        for (input, want) in cases {
            match LabelSelector::parse(input) {
                Ok(sel) => panic!("{input:?} parsed as {sel}"),
                Err(e) => assert_eq!(e.to_string(), want, "{input:?}"),
            }
        }
    }

    #[test]
    fn nul_byte_ends_the_input_as_upstream() {
        // Upstream's lexer reads 0 for a NUL byte: between tokens it ends the
        // input (the rest is ignored); inside an identifier it ends the token.
        let sel = LabelSelector::parse("a=b \0 !!!").map(|s| s.to_string());
        assert_eq!(sel, Ok("a=b".to_string()));
        let sel = LabelSelector::parse("a=b\0c")
            .map(|s| s.to_string())
            .map_err(|e| e.to_string());
        assert_eq!(
            sel,
            Err("found 'c', expected: ',' or 'end of string'".to_string())
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = LabelSelector::parse(&s).map(|sel| sel.matches(&BTreeMap::new()));
        }

        #[test]
        fn parse_never_panics_on_selector_alphabet(s in "[a-z0-9=!(),<> \t\r\n/._-]{0,40}") {
            if let Ok(sel) = LabelSelector::parse(&s) {
                // What parses prints back to something that parses the same.
                let again = LabelSelector::parse(&sel.to_string());
                prop_assert_eq!(again, Ok(sel));
            }
        }
    }
}

/// The node-selector side (scheduler and node agent): requirements built
/// from `NodeSelectorRequirement`s at a field path, matched against a
/// node's labels.
#[cfg(test)]
mod label_selector_as_selector_tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector as K8sSelector, LabelSelectorRequirement,
    };

    fn labels(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    /// After upstream `TestLabelSelectorAsSelector` (apimachinery meta/v1).
    #[test]
    fn label_selector_as_selector_as_upstream() {
        struct Case {
            name: &'static str,
            selector: Option<K8sSelector>,
            want: Result<Option<&'static str>, &'static str>,
        }
        let cases = [
            Case {
                name: "nil selects nothing",
                selector: None,
                want: Ok(None),
            },
            Case {
                name: "empty selects everything",
                selector: Some(K8sSelector::default()),
                want: Ok(Some("")),
            },
            Case {
                name: "matchLabels and expressions, sorted by key",
                selector: Some(K8sSelector {
                    match_labels: Some(labels(&[("foo", "bar")])),
                    match_expressions: Some(vec![
                        expr("baz", "In", &["qux", "norf"]),
                        expr("a", "Exists", &[]),
                    ]),
                }),
                want: Ok(Some("a,baz in (norf,qux),foo=bar")),
            },
            Case {
                name: "unknown operator",
                selector: Some(K8sSelector {
                    match_expressions: Some(vec![expr("baz", "Gt", &["1"])]),
                    ..K8sSelector::default()
                }),
                want: Err("\"Gt\" is not a valid label selector operator"),
            },
            Case {
                name: "In without values",
                selector: Some(K8sSelector {
                    match_expressions: Some(vec![expr("baz", "In", &[])]),
                    ..K8sSelector::default()
                }),
                want: Err(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
                ),
            },
        ];
        for case in cases {
            let got = label_selector_as_selector(case.selector.as_ref())
                .map(|s| s.map(|s| s.to_string()))
                .map_err(|e| e.to_string());
            let want = case
                .want
                .map(|s| s.map(str::to_string))
                .map_err(str::to_string);
            assert_eq!(got, want, "{}", case.name);
        }
    }

    #[test]
    fn from_set_and_add_merge_requirements() {
        let set = labels(&[("app", "web"), ("tier", "front")]);
        let merged = LabelSelector::from_set(&set).with_requirements(
            LabelSelector::parse("env in (prod)")
                .unwrap_or_default()
                .requirements()
                .to_vec(),
        );
        assert!(merged.matches(&labels(&[
            ("app", "web"),
            ("tier", "front"),
            ("env", "prod")
        ])));
        assert!(!merged.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert_eq!(merged.to_string(), "app=web,env in (prod),tier=front");
    }
}

#[cfg(test)]
mod node_selector_tests {
    use super::*;
    use crate::validation::names::{is_qualified_name, is_valid_label_value};
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
        match Requirement::at(key, op, vals(values), "") {
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
        struct Case<'a> {
            name: &'a str,
            key: &'a str,
            op: Operator,
            values: Vec<String>,
            want: Vec<(&'a str, &'a str)>,
        }
        let cases = vec![
            Case {
                name: "In without values",
                key: "x1",
                op: In,
                values: vec![],
                want: vec![(
                    "values",
                    "for 'in', 'notin' operators, values set can't be empty",
                )],
            },
            Case {
                name: "NotIn without values",
                key: "x2",
                op: NotIn,
                values: vec![],
                want: vec![(
                    "values",
                    "for 'in', 'notin' operators, values set can't be empty",
                )],
            },
            Case {
                name: "In with values",
                key: "x3",
                op: In,
                values: vals(&["foo"]),
                want: vec![],
            },
            Case {
                name: "NotIn with values",
                key: "x4",
                op: NotIn,
                values: vals(&["foo"]),
                want: vec![],
            },
            Case {
                name: "Exists without values",
                key: "x5",
                op: Exists,
                values: vec![],
                want: vec![],
            },
            Case {
                name: "Exists with values",
                key: "x6",
                op: Exists,
                values: vals(&["foo"]),
                want: vec![(
                    "values",
                    "values set must be empty for exists and does not exist",
                )],
            },
            Case {
                name: "DoesNotExist without values",
                key: "x7",
                op: DoesNotExist,
                values: vec![],
                want: vec![],
            },
            Case {
                name: "Gt with one integer",
                key: "x8",
                op: GreaterThan,
                values: vals(&["1"]),
                want: vec![],
            },
            Case {
                name: "Gt with a non-integer",
                key: "x9",
                op: GreaterThan,
                values: vals(&["bar"]),
                want: vec![(
                    "values[0]",
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                )],
            },
            Case {
                name: "Lt with two values",
                key: "x10",
                op: LessThan,
                values: vals(&["1", "2"]),
                want: vec![(
                    "values",
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )],
            },
            Case {
                name: // The value must also be a valid label value, which cannot
                // start with '-': upstream rejects negative bounds too.
                "Lt with a negative integer",
                key: "x11",
                op: LessThan,
                values: vals(&["-1"]),
                want: vec![(
                    "values[0][x11]",
                    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )],
            },
            Case {
                name: "key with a slash-only prefix",
                key: "/x12",
                op: In,
                values: vals(&["a"]),
                want: vec![("key", "prefix part must be non-empty")],
            },
            Case {
                name: "key with a DNS prefix",
                key: "example.com/x13",
                op: In,
                values: vals(&["a"]),
                want: vec![],
            },
            Case {
                name: "key of 64 characters",
                key: long.as_str(),
                op: Exists,
                values: vec![],
                want: vec![("key", "name part must be no more than 63 bytes")],
            },
            Case {
                name: "value of 64 characters",
                key: "x14",
                op: In,
                values: vec![long.clone()],
                want: vec![("values[0][x14]", "must be no more than 63 bytes")],
            },
            Case {
                name: "empty value is a valid label value",
                key: "x15",
                op: In,
                values: vals(&[""]),
                want: vec![],
            },
        ];
        for Case {
            name,
            key,
            op,
            values,
            want,
        } in cases
        {
            let got = match Requirement::at(key, op, values.clone(), "") {
                Ok(_) => vec![],
                Err(errs) => errs.0,
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
        let errs = match Requirement::at(
            "invalid key",
            Operator::In,
            vals(&["bar"]),
            "[0].matchExpressions[0]",
        ) {
            Ok(_) => vec![],
            Err(e) => e.0,
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

    /// Upstream `TestLabelSelectorAsSelector` (apimachinery
    /// `meta/v1/helpers_test.go`), written as the strings the selectors
    /// print and the labels they match.
    #[test]
    fn label_selector_as_selector() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
            LabelSelector as MetaSelector, LabelSelectorRequirement,
        };
        let expr = |key: &str, op: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| vals(values)),
        };
        struct Case {
            name: &'static str,
            selector: MetaSelector,
            want: Result<&'static str, &'static str>,
        }
        for case in [
            Case {
                name: "empty selects everything",
                selector: MetaSelector::default(),
                want: Ok(""),
            },
            Case {
                name: "matchLabels and matchExpressions",
                selector: MetaSelector {
                    match_labels: Some(set(&[("foo", "foo"), ("bar", "bar")])),
                    match_expressions: Some(vec![expr("baz", "In", &["qux", "norf"])]),
                },
                want: Ok("bar=bar,baz in (norf,qux),foo=foo"),
            },
            Case {
                name: "exists and does not exist",
                selector: MetaSelector {
                    match_labels: None,
                    match_expressions: Some(vec![
                        expr("a", "Exists", &[]),
                        expr("b", "DoesNotExist", &[]),
                    ]),
                },
                want: Ok("a,!b"),
            },
            Case {
                name: "exists with values is invalid",
                selector: MetaSelector {
                    match_labels: Some(set(&[("foo", "foo")])),
                    match_expressions: Some(vec![
                        expr("baz", "Exists", &["qux", "norf"]),
                        expr("x", "Gt", &["1"]),
                    ]),
                },
                want: Err("values set must be empty for exists and does not exist"),
            },
            Case {
                name: "an operator upstream does not know",
                selector: MetaSelector {
                    match_labels: None,
                    match_expressions: Some(vec![expr("x", "Gt", &["1"])]),
                },
                want: Err("\"Gt\" is not a valid label selector operator"),
            },
        ] {
            match (
                LabelSelector::from_label_selector(&case.selector),
                case.want,
            ) {
                (Ok(got), Ok(want)) => assert_eq!(got.to_string(), want, "{}", case.name),
                (Err(got), Err(want)) => assert!(got.0.contains(want), "{}: {got}", case.name),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
        let selector = MetaSelector {
            match_labels: Some(set(&[("app", "web")])),
            match_expressions: Some(vec![expr("tier", "NotIn", &["db"])]),
        };
        let parsed = LabelSelector::from_label_selector(&selector).unwrap_or_default();
        assert!(parsed.matches(&set(&[("app", "web"), ("tier", "front")])));
        assert!(!parsed.matches(&set(&[("app", "web"), ("tier", "db")])));
        assert!(!parsed.matches(&set(&[("tier", "front")])));
    }

    proptest! {
        #[test]
        fn validation_and_matching_never_panic(key in "\\PC{0,80}", v in "\\PC{0,80}", label in "\\PC{0,30}") {
            let _ = is_qualified_name(&key);
            let _ = is_valid_label_value(&v);
            for op in [Operator::In, Operator::NotIn, Operator::Exists, Operator::DoesNotExist, Operator::GreaterThan, Operator::LessThan] {
                if let Ok(r) = Requirement::at(&key, op, vec![v.clone()], "") {
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
