//! Node-selector matching, the one port the scheduler's NodeAffinity
//! plugin, `berth check` and the node agent's admission call, from
//! component-helpers
//! `scheduling/corev1/nodeaffinity/nodeaffinity.go`: `NodeSelector`,
//! `LazyErrorNodeSelector`, `PreferredSchedulingTerms` and
//! `RequiredNodeAffinity` (a pod's `nodeSelector` AND its required node
//! affinity).
//!
//! Semantics kept from upstream:
//! - terms are ORed, the requirements inside a term ANDed;
//! - a term with neither matchExpressions nor matchFields matches nothing
//!   (and is dropped at parse time);
//! - matchFields supports only `In`/`NotIn` with exactly one value, against
//!   the node's fields, of which only `metadata.name` exists; a node with no
//!   name has no fields, and then matchFields are not checked at all;
//! - a term that fails to parse never matches; `LazyErrorNodeSelector`
//!   reports its errors only when no other term matched.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector as V1NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PreferredSchedulingTerm,
};

use serde_json::Value;

use crate::labels::{
    self, FieldErrors, LabelSelector, Operator, Requirement, invalid_at, path_child, path_index,
};
use crate::validation::field::go_quote;
use crate::validation::{ErrorType, FieldError};

/// `metav1.ObjectNameField`: the one node field selectors may use.
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

pub const OP_IN: &str = "In";
pub const OP_NOT_IN: &str = "NotIn";
pub const OP_EXISTS: &str = "Exists";
pub const OP_DOES_NOT_EXIST: &str = "DoesNotExist";
pub const OP_GT: &str = "Gt";
pub const OP_LT: &str = "Lt";

/// One field requirement: `fields.OneTermEqualSelector` (In) or
/// `OneTermNotEqualSelector` (NotIn).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    key: String,
    value: String,
    equal: bool,
}

/// The node's fields as upstream's `extractNodeFields` sees them: only
/// `metadata.name`, and only when set. Borrowed, so matching is free.
#[derive(Clone, Copy)]
struct NodeFields<'a> {
    name: &'a str,
}

impl<'a> NodeFields<'a> {
    fn of(node: &'a Node) -> Self {
        NodeFields {
            name: node.metadata.name.as_deref().unwrap_or(""),
        }
    }

    fn is_empty(&self) -> bool {
        self.name.is_empty()
    }

    /// `fields.Set.Get`: a missing field reads as "".
    fn get(&self, key: &str) -> &'a str {
        if key == OBJECT_NAME_FIELD {
            self.name
        } else {
            ""
        }
    }
}

/// One parsed `NodeSelectorTerm`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    /// `None` when the term has no matchExpressions.
    match_labels: Option<LabelSelector>,
    /// `None` when the term has no matchFields.
    match_fields: Option<Vec<FieldTerm>>,
    parse_errs: Vec<FieldError>,
}

impl Term {
    fn parse(term: &NodeSelectorTerm, path: &str) -> Term {
        let mut parsed = Term {
            match_labels: None,
            match_fields: None,
            parse_errs: Vec::new(),
        };
        let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
        if !exprs.is_empty() {
            match requirements_as_selector(exprs, &path_child(path, "matchExpressions")) {
                Ok(sel) => parsed.match_labels = Some(sel),
                Err(errs) => parsed.parse_errs.extend(errs),
            }
        }
        let fields = term.match_fields.as_deref().unwrap_or(&[]);
        if !fields.is_empty() {
            match requirements_as_field_selector(fields, &path_child(path, "matchFields")) {
                Ok(f) => parsed.match_fields = Some(f),
                Err(errs) => parsed.parse_errs.extend(errs),
            }
        }
        parsed
    }

    /// `nodeSelectorTerm.match`, without allocating: `None` when the term
    /// failed to parse.
    fn matches(
        &self,
        labels: Option<&BTreeMap<String, String>>,
        fields: NodeFields<'_>,
    ) -> Option<bool> {
        if !self.parse_errs.is_empty() {
            return None;
        }
        if let Some(sel) = &self.match_labels
            && !sel.matches(labels)
        {
            return Some(false);
        }
        if let Some(terms) = &self.match_fields
            && !fields.is_empty()
            && !terms
                .iter()
                .all(|t| (fields.get(&t.key) == t.value) == t.equal)
        {
            return Some(false);
        }
        Some(true)
    }
}

fn is_empty_term(term: &NodeSelectorTerm) -> bool {
    term.match_expressions.as_deref().unwrap_or(&[]).is_empty()
        && term.match_fields.as_deref().unwrap_or(&[]).is_empty()
}

fn not_supported(path: &str, op: &str, valid: &[&str]) -> FieldError {
    let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
    FieldError {
        error_type: ErrorType::NotSupported,
        field: path_child(path, "operator"),
        bad_value: Some(Value::from(op)),
        detail: format!("supported values: {}", quoted.join(", ")),
    }
}

/// `nodeSelectorRequirementsAsSelector`.
fn requirements_as_selector(
    reqs: &[NodeSelectorRequirement],
    path: &str,
) -> Result<LabelSelector, Vec<FieldError>> {
    let mut errs = Vec::new();
    let mut out = Vec::with_capacity(reqs.len());
    for (i, expr) in reqs.iter().enumerate() {
        let p = path_index(path, i);
        let op = match expr.operator.as_str() {
            OP_IN => Operator::In,
            OP_NOT_IN => Operator::NotIn,
            OP_EXISTS => Operator::Exists,
            OP_DOES_NOT_EXIST => Operator::DoesNotExist,
            OP_GT => Operator::GreaterThan,
            OP_LT => Operator::LessThan,
            other => {
                errs.push(not_supported(
                    &p,
                    other,
                    &[OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT],
                ));
                continue;
            }
        };
        let values = expr.values.clone().unwrap_or_default();
        match Requirement::at(&expr.key, op, values, &p) {
            Ok(r) => out.push(r),
            Err(e) => errs.extend(e.0),
        }
    }
    if errs.is_empty() {
        Ok(LabelSelector::from_requirements(out))
    } else {
        Err(errs)
    }
}

/// `nodeSelectorRequirementsAsFieldSelector`.
fn requirements_as_field_selector(
    reqs: &[NodeSelectorRequirement],
    path: &str,
) -> Result<Vec<FieldTerm>, Vec<FieldError>> {
    let mut errs = Vec::new();
    let mut out = Vec::with_capacity(reqs.len());
    for (i, expr) in reqs.iter().enumerate() {
        let p = path_index(path, i);
        let equal = match expr.operator.as_str() {
            OP_IN => true,
            OP_NOT_IN => false,
            other => {
                errs.push(not_supported(&p, other, &[OP_IN, OP_NOT_IN]));
                continue;
            }
        };
        match expr.values.as_deref().unwrap_or(&[]) {
            [value] => out.push(FieldTerm {
                key: expr.key.clone(),
                value: value.clone(),
                equal,
            }),
            values => errs.push(invalid_at(
                path_child(&p, "values"),
                serde_json::json!(values),
                "must have one element",
            )),
        }
    }
    if errs.is_empty() { Ok(out) } else { Err(errs) }
}

/// A node selector whose parse errors surface only when nothing matched
/// (`LazyErrorNodeSelector`), for backwards compatibility with pods that
/// carry a broken term next to a good one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LazyErrorNodeSelector {
    terms: Vec<Term>,
}

impl LazyErrorNodeSelector {
    /// `NewLazyErrorNodeSelector`; `path` prefixes error field paths
    /// ("" for none).
    pub fn new(ns: &V1NodeSelector, path: &str) -> Self {
        let terms_path = path_child(path, "nodeSelectorTerms");
        let terms = ns
            .node_selector_terms
            .iter()
            .enumerate()
            .filter(|(_, t)| !is_empty_term(t))
            .map(|(i, t)| Term::parse(t, &path_index(&terms_path, i)))
            .collect();
        LazyErrorNodeSelector { terms }
    }

    /// Whether some term matches the node, ignoring terms that failed to
    /// parse. Never allocates: this is the Filter hot path.
    pub fn matches(&self, node: &Node) -> bool {
        let labels = node.metadata.labels.as_ref();
        let fields = NodeFields::of(node);
        self.terms
            .iter()
            .any(|t| t.matches(labels, fields) == Some(true))
    }

    /// `LazyErrorNodeSelector.Match`: whether some term matches; when none
    /// does, also the parse errors of the terms that could not be evaluated.
    pub fn match_node(&self, node: &Node) -> Result<bool, FieldErrors> {
        if self.matches(node) {
            return Ok(true);
        }
        let errs: Vec<FieldError> = self
            .terms
            .iter()
            .flat_map(|t| t.parse_errs.iter().cloned())
            .collect();
        if errs.is_empty() {
            Ok(false)
        } else {
            Err(FieldErrors(errs))
        }
    }

    fn parse_errors(&self) -> Vec<FieldError> {
        self.terms
            .iter()
            .flat_map(|t| t.parse_errs.iter().cloned())
            .collect()
    }
}

/// A node selector that parsed cleanly (`NodeSelector`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelector {
    lazy: LazyErrorNodeSelector,
}

impl NodeSelector {
    /// `NewNodeSelector`: every parse error, or a selector.
    pub fn new(ns: &V1NodeSelector, path: &str) -> Result<Self, FieldErrors> {
        let lazy = LazyErrorNodeSelector::new(ns, path);
        let errs = lazy.parse_errors();
        if errs.is_empty() {
            Ok(NodeSelector { lazy })
        } else {
            Err(FieldErrors(errs))
        }
    }

    pub fn matches(&self, node: &Node) -> bool {
        self.lazy.matches(node)
    }
}

/// Weighted preferences (`PreferredSchedulingTerms`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreferredSchedulingTerms {
    terms: Vec<(Term, i64)>,
}

impl PreferredSchedulingTerms {
    /// `NewPreferredSchedulingTerms`: terms with weight 0 or no requirements
    /// are skipped without being parsed; any parse error fails the whole.
    pub fn new(terms: &[PreferredSchedulingTerm], path: &str) -> Result<Self, FieldErrors> {
        let mut errs = Vec::new();
        let mut parsed = Vec::with_capacity(terms.len());
        for (i, term) in terms.iter().enumerate() {
            if term.weight == 0 || is_empty_term(&term.preference) {
                continue;
            }
            let t = Term::parse(&term.preference, &path_index(path, i));
            if t.parse_errs.is_empty() {
                parsed.push((t, i64::from(term.weight)));
            } else {
                errs.extend(t.parse_errs);
            }
        }
        if errs.is_empty() {
            Ok(PreferredSchedulingTerms { terms: parsed })
        } else {
            Err(FieldErrors(errs))
        }
    }

    /// The sum of the weights of the terms that match the node.
    pub fn score(&self, node: &Node) -> i64 {
        let labels = node.metadata.labels.as_ref();
        let fields = NodeFields::of(node);
        self.terms
            .iter()
            .filter(|(t, _)| t.matches(labels, fields) == Some(true))
            .map(|(_, w)| *w)
            .fold(0_i64, i64::saturating_add)
    }
}

/// A pod's hard node constraints: `spec.nodeSelector` AND
/// `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    /// `None` when the pod's nodeSelector is unset or empty.
    label_selector: Option<BTreeMap<String, String>>,
    node_selector: Option<LazyErrorNodeSelector>,
}

impl RequiredNodeAffinity {
    /// `GetRequiredNodeAffinity`.
    pub fn of_pod(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let label_selector = spec
            .and_then(|s| s.node_selector.as_ref())
            .filter(|m| !m.is_empty())
            .cloned();
        let node_selector = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|ns| LazyErrorNodeSelector::new(ns, ""));
        RequiredNodeAffinity {
            label_selector,
            node_selector,
        }
    }

    /// Whether the node satisfies both constraints, ignoring unparsable
    /// terms (what the Filter does). Never allocates.
    pub fn matches(&self, node: &Node) -> bool {
        if let Some(sel) = &self.label_selector
            && !labels::set_matches(sel, node.metadata.labels.as_ref())
        {
            return false;
        }
        match &self.node_selector {
            Some(ns) => ns.matches(node),
            None => true,
        }
    }

    /// `RequiredNodeAffinity.Match`, with the lazy parse errors.
    pub fn match_node(&self, node: &Node) -> Result<bool, FieldErrors> {
        if let Some(sel) = &self.label_selector
            && !labels::set_matches(sel, node.metadata.labels.as_ref())
        {
            return Ok(false);
        }
        match &self.node_selector {
            Some(ns) => ns.match_node(node),
            None => Ok(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{expr, node, pod_with, selector, term};
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, PodSpec};

    const NAME_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    fn fields_of(errs: &FieldErrors) -> Vec<(String, String)> {
        errs.0
            .iter()
            .map(|e| (e.field.clone(), e.detail.clone()))
            .collect()
    }

    /// Upstream `TestNodeSelectorMatch` (component-helpers).
    #[test]
    fn node_selector_match_as_upstream() {
        let invalid_terms = vec![
            term(
                vec![],
                vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1", "host_2"])],
            ),
            term(
                vec![expr("label_1", OP_IN, &["label_1_val"])],
                vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1"])],
            ),
            term(vec![expr("invalid key", OP_IN, &["label_value"])], vec![]),
        ];
        let both = || {
            vec![term(
                vec![expr("label_1", OP_IN, &["label_1_val"])],
                vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1"])],
            )]
        };
        struct Case {
            name: &'static str,
            ns: V1NodeSelector,
            n: Node,
            want_err: Option<Vec<(&'static str, &'static str)>>,
            want_match: bool,
        }
        let cases = vec![
            Case {
                name: "invalid field selector and label selector",
                ns: selector(invalid_terms),
                n: node("", &[]),
                want_err: Some(vec![
                    (
                        "nodeSelectorTerms[0].matchFields[0].values",
                        "must have one element",
                    ),
                    ("nodeSelectorTerms[2].matchExpressions[0].key", NAME_ERR),
                ]),
                want_match: false,
            },
            Case {
                name: "node matches field selector, but not labels",
                ns: selector(both()),
                n: node("host_1", &[]),
                want_err: None,
                want_match: false,
            },
            Case {
                name: "node matches field selector and label selector",
                ns: selector(both()),
                n: node("host_1", &[("label_1", "label_1_val")]),
                want_err: None,
                want_match: true,
            },
            Case {
                name: "second term matches",
                ns: selector(vec![
                    term(vec![expr("label_1", OP_IN, &["label_1_val"])], vec![]),
                    term(vec![], vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1"])]),
                ]),
                n: node("host_1", &[]),
                want_err: None,
                want_match: true,
            },
        ];
        for Case {
            name,
            ns,
            n,
            want_err,
            want_match,
        } in cases
        {
            match (NodeSelector::new(&ns, ""), want_err) {
                (Err(errs), Some(want)) => {
                    let want: Vec<(String, String)> = want
                        .into_iter()
                        .map(|(f, d)| (f.to_string(), d.to_string()))
                        .collect();
                    assert_eq!(fields_of(&errs), want, "{name}");
                }
                (Ok(sel), None) => assert_eq!(sel.matches(&n), want_match, "{name}"),
                (got, want) => panic!("{name}: got {got:?}, want errors {want:?}"),
            }
        }
    }

    /// Upstream `TestPreferredSchedulingTermsScore` (component-helpers).
    #[test]
    fn preferred_scheduling_terms_score_as_upstream() {
        let pref = |weight: i32, t: NodeSelectorTerm| PreferredSchedulingTerm {
            preference: t,
            weight,
        };
        struct Case {
            name: &'static str,
            terms: Vec<PreferredSchedulingTerm>,
            n: Node,
            want_err: Option<Vec<(&'static str, &'static str)>>,
            want_score: i64,
        }
        let cases = vec![
            Case {
                name: "invalid field selector and label selector",
                terms: vec![
                    pref(
                        1,
                        term(
                            vec![],
                            vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1", "host_2"])],
                        ),
                    ),
                    pref(
                        1,
                        term(
                            vec![expr("label_1", OP_IN, &["label_1_val"])],
                            vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1"])],
                        ),
                    ),
                    pref(
                        1,
                        term(vec![expr("invalid key", OP_IN, &["label_value"])], vec![]),
                    ),
                ],
                n: node("", &[]),
                want_err: Some(vec![
                    ("[0].matchFields[0].values", "must have one element"),
                    ("[2].matchExpressions[0].key", NAME_ERR),
                ]),
                want_score: 0,
            },
            Case {
                name: "invalid field selector but no weight, error not reported",
                terms: vec![pref(
                    0,
                    term(
                        vec![],
                        vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1", "host_2"])],
                    ),
                )],
                n: node("host_1", &[]),
                want_err: None,
                want_score: 0,
            },
            Case {
                name: "first and third term match",
                terms: vec![
                    pref(
                        5,
                        term(vec![], vec![expr(OBJECT_NAME_FIELD, OP_IN, &["host_1"])]),
                    ),
                    pref(
                        7,
                        term(
                            vec![expr("unknown_label", OP_IN, &["unknown_label_val"])],
                            vec![],
                        ),
                    ),
                    pref(
                        11,
                        term(vec![expr("label_1", OP_IN, &["label_1_val"])], vec![]),
                    ),
                ],
                n: node("host_1", &[("label_1", "label_1_val")]),
                want_err: None,
                want_score: 16,
            },
        ];
        for Case {
            name,
            terms,
            n,
            want_err,
            want_score,
        } in cases
        {
            match (PreferredSchedulingTerms::new(&terms, ""), want_err) {
                (Err(errs), Some(want)) => {
                    let want: Vec<(String, String)> = want
                        .into_iter()
                        .map(|(f, d)| (f.to_string(), d.to_string()))
                        .collect();
                    assert_eq!(fields_of(&errs), want, "{name}");
                }
                (Ok(t), None) => assert_eq!(t.score(&n), want_score, "{name}"),
                (got, want) => panic!("{name}: got {got:?}, want errors {want:?}"),
            }
        }
    }

    /// Upstream `TestNodeSelectorRequirementsAsSelector` (component-helpers):
    /// the parse results, compared by what they match rather than by Go's
    /// internal selector structure.
    #[test]
    fn node_selector_requirements_as_selector_as_upstream() {
        let ok = |reqs: Vec<NodeSelectorRequirement>| match requirements_as_selector(&reqs, "root")
        {
            Ok(sel) => sel,
            Err(e) => panic!("{reqs:?} should parse: {e:?}"),
        };
        let in_sel = ok(vec![expr("foo", OP_IN, &["bar", "baz"])]);
        assert_eq!(in_sel.requirements().len(), 1);
        assert_eq!(in_sel.requirements()[0].operator(), Operator::In);
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(in_sel.matches(Some(&labels(&[("foo", "baz")]))));
        assert!(!in_sel.matches(Some(&labels(&[("foo", "qux")]))));

        let errs =
            match requirements_as_selector(&[expr("foo", OP_EXISTS, &["bar", "baz"])], "root") {
                Ok(s) => panic!("should fail, got {s:?}"),
                Err(e) => e,
            };
        assert_eq!(
            errs.iter()
                .map(|e| (e.field.as_str(), e.detail.as_str()))
                .collect::<Vec<_>>(),
            vec![(
                "root[0].values",
                "values set must be empty for exists and does not exist"
            )]
        );

        let gt = ok(vec![expr("foo", OP_GT, &["1"])]);
        assert!(gt.matches(Some(&labels(&[("foo", "2")]))));
        assert!(!gt.matches(Some(&labels(&[("foo", "1")]))));
        let lt = ok(vec![expr("bar", OP_LT, &["7"])]);
        assert!(lt.matches(Some(&labels(&[("bar", "6")]))));
        assert!(!lt.matches(Some(&labels(&[("bar", "7")]))));

        let errs = match requirements_as_selector(&[expr("foo", "Foo", &[])], "root") {
            Ok(s) => panic!("should fail, got {s:?}"),
            Err(e) => e,
        };
        assert_eq!(
            errs[0].to_string(),
            "root[0].operator: Unsupported value: \"Foo\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
        );
    }

    /// Upstream `TestPodMatchesNodeSelectorAndAffinityTerms` (component-helpers).
    #[test]
    fn pod_matches_node_selector_and_affinity_terms_as_upstream() {
        let req = |terms: Vec<NodeSelectorTerm>| Some(selector(terms));
        let e = |k: &str, op: &str, v: &[&str]| term(vec![expr(k, op, v)], vec![]);
        let name_in = |n: &str| expr(OBJECT_NAME_FIELD, OP_IN, &[n]);
        struct Case {
            name: &'static str,
            pod: Pod,
            labels: &'static [(&'static str, &'static str)],
            node_name: &'static str,
            want: bool,
        }
        let cases = vec![
            Case {
                name: "no selector",
                pod: Pod::default(),
                labels: &[],
                node_name: "",
                want: true,
            },
            Case {
                name: "missing labels",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                labels: &[],
                node_name: "",
                want: false,
            },
            Case {
                name: "same labels",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                labels: &[("foo", "bar")],
                node_name: "",
                want: true,
            },
            Case {
                name: "node labels are superset",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                labels: &[("foo", "bar"), ("baz", "blah")],
                node_name: "",
                want: true,
            },
            Case {
                name: "node labels are subset",
                pod: pod_with(Some(&[("foo", "bar"), ("baz", "blah")]), None),
                labels: &[("foo", "bar")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with matchExpressions using In operator that matches the existing node",
                pod: pod_with(None, req(vec![e("foo", OP_IN, &["bar", "value2"])])),
                labels: &[("foo", "bar")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with matchExpressions using Gt operator that matches the existing node",
                pod: pod_with(None, req(vec![e("kernel-version", OP_GT, &["0204"])])),
                labels: &[("kernel-version", "0206")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with matchExpressions using NotIn operator that matches the existing node",
                pod: pod_with(None, req(vec![e("mem-type", OP_NOT_IN, &["DDR", "DDR2"])])),
                labels: &[("mem-type", "DDR3")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with matchExpressions using Exists operator that matches the existing node",
                pod: pod_with(None, req(vec![e("GPU", OP_EXISTS, &[])])),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with affinity that don't match node's labels won't schedule onto the node",
                pod: pod_with(None, req(vec![e("foo", OP_IN, &["value1", "value2"])])),
                labels: &[("foo", "bar")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
                pod: pod_with(None, req(vec![])),
                labels: &[("foo", "bar")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
                pod: pod_with(None, req(Vec::new())),
                labels: &[("foo", "bar")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
                pod: pod_with(
                    None,
                    req(vec![NodeSelectorTerm {
                        match_expressions: Some(vec![]),
                        match_fields: None,
                    }]),
                ),
                labels: &[("foo", "bar")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with no Affinity will schedule onto a node",
                pod: Pod::default(),
                labels: &[("foo", "bar")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with Affinity but nil NodeSelector will schedule onto a node",
                pod: Pod {
                    spec: Some(PodSpec {
                        affinity: Some(Affinity {
                            node_affinity: Some(NodeAffinity::default()),
                            ..Affinity::default()
                        }),
                        ..PodSpec::default()
                    }),
                    ..Pod::default()
                },
                labels: &[("foo", "bar")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with multiple matchExpressions ANDed that matches the existing node",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![
                            expr("GPU", OP_EXISTS, &[]),
                            expr("GPU", OP_NOT_IN, &["AMD", "INTER"]),
                        ],
                        vec![],
                    )]),
                ),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![
                            expr("GPU", OP_EXISTS, &[]),
                            expr("GPU", OP_IN, &["AMD", "INTER"]),
                        ],
                        vec![],
                    )]),
                ),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
                pod: pod_with(
                    None,
                    req(vec![
                        e("foo", OP_IN, &["bar", "value2"]),
                        e("diffkey", OP_IN, &["wrong", "value2"]),
                    ]),
                ),
                labels: &[("foo", "bar")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
                pod: pod_with(Some(&[("foo", "bar")]), req(vec![e("foo", OP_EXISTS, &[])])),
                labels: &[("foo", "bar")],
                node_name: "",
                want: true,
            },
            Case {
                name: "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
                pod: pod_with(Some(&[("foo", "bar")]), req(vec![e("foo", OP_EXISTS, &[])])),
                labels: &[("foo", "barrrrrr")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with an invalid value in Affinity term won't be scheduled onto the node",
                pod: pod_with(
                    None,
                    req(vec![e("foo", OP_NOT_IN, &["invalid value: ___@#$%^"])]),
                ),
                labels: &[("foo", "bar")],
                node_name: "",
                want: false,
            },
            Case {
                name: "Pod with matchFields using In operator that matches the existing node",
                pod: pod_with(None, req(vec![term(vec![], vec![name_in("node_1")])])),
                labels: &[],
                node_name: "node_1",
                want: true,
            },
            Case {
                name: "Pod with matchFields using In operator that does not match the existing node",
                pod: pod_with(None, req(vec![term(vec![], vec![name_in("node_1")])])),
                labels: &[],
                node_name: "node_2",
                want: false,
            },
            Case {
                name: "Pod with two terms: matchFields does not match, but matchExpressions matches",
                pod: pod_with(
                    None,
                    req(vec![
                        term(vec![], vec![name_in("node_1")]),
                        e("foo", OP_IN, &["bar"]),
                    ]),
                ),
                labels: &[("foo", "bar")],
                node_name: "node_2",
                want: true,
            },
            Case {
                name: "Pod with one term: matchFields does not match, but matchExpressions matches",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![expr("foo", OP_IN, &["bar"])],
                        vec![name_in("node_1")],
                    )]),
                ),
                labels: &[("foo", "bar")],
                node_name: "node_2",
                want: false,
            },
            Case {
                name: "Pod with one term: both matchFields and matchExpressions match",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![expr("foo", OP_IN, &["bar"])],
                        vec![name_in("node_1")],
                    )]),
                ),
                labels: &[("foo", "bar")],
                node_name: "node_1",
                want: true,
            },
            Case {
                name: "Pod with two terms: both matchFields and matchExpressions do not match",
                pod: pod_with(
                    None,
                    req(vec![
                        term(vec![], vec![name_in("node_1")]),
                        e("foo", OP_IN, &["not-match-to-bar"]),
                    ]),
                ),
                labels: &[("foo", "bar")],
                node_name: "node_2",
                want: false,
            },
        ];
        for Case {
            name,
            pod,
            labels,
            node_name,
            want,
        } in cases
        {
            let n = node(node_name, labels);
            let required = RequiredNodeAffinity::of_pod(&pod);
            assert_eq!(required.matches(&n), want, "{name}");
            assert_eq!(required.match_node(&n).unwrap_or(false), want, "{name}");
        }
    }

    #[test]
    fn lazy_errors_surface_only_when_nothing_matched() {
        let ns = selector(vec![
            term(vec![expr("bad key", OP_IN, &["x"])], vec![]),
            term(vec![expr("foo", OP_IN, &["bar"])], vec![]),
        ]);
        let lazy = LazyErrorNodeSelector::new(&ns, "");
        assert_eq!(lazy.match_node(&node("n", &[("foo", "bar")])), Ok(true));
        let err = match lazy.match_node(&node("n", &[])) {
            Err(e) => e,
            Ok(m) => panic!("want parse errors, got {m}"),
        };
        assert_eq!(
            err.0[0].field,
            "nodeSelectorTerms[0].matchExpressions[0].key"
        );
    }

    #[test]
    fn match_fields_are_ignored_for_a_node_without_a_name() {
        // Upstream skips field selectors when the node has no fields.
        let ns = selector(vec![term(
            vec![],
            vec![expr(OBJECT_NAME_FIELD, OP_IN, &["x"])],
        )]);
        assert!(LazyErrorNodeSelector::new(&ns, "").matches(&node("", &[])));
        let not_in = selector(vec![term(
            vec![],
            vec![expr(OBJECT_NAME_FIELD, OP_NOT_IN, &["x"])],
        )]);
        assert!(LazyErrorNodeSelector::new(&not_in, "").matches(&node("y", &[])));
        assert!(!LazyErrorNodeSelector::new(&not_in, "").matches(&node("x", &[])));
        // An unknown field key reads as "", like fields.Set.Get.
        let other = selector(vec![term(
            vec![],
            vec![expr("spec.unschedulable", OP_IN, &[""])],
        )]);
        assert!(LazyErrorNodeSelector::new(&other, "").matches(&node("x", &[])));
    }

    #[test]
    fn field_selector_rejects_label_operators() {
        let ns = selector(vec![term(
            vec![],
            vec![expr(OBJECT_NAME_FIELD, OP_EXISTS, &[])],
        )]);
        let errs = match NodeSelector::new(&ns, "") {
            Err(e) => e,
            Ok(s) => panic!("should fail, got {s:?}"),
        };
        assert_eq!(
            errs.to_string(),
            "nodeSelectorTerms[0].matchFields[0].operator: Unsupported value: \"Exists\": supported values: \"In\", \"NotIn\""
        );
    }
}
