//! The taint-spec syntax of `kubectl taint` and of the kubelet's
//! `--register-with-taints` flag.
//!
//! This module owns:
//! - parsing the textual forms `key=value:Effect`, `key:Effect`, and (for
//!   removal only) `key`, with the `-` suffix meaning "remove";
//! - kubectl's argument checks (resources before taint changes, at least one
//!   taint change, no add and remove of the same taint in one command);
//! - applying a parsed command to a node's current taints, including the
//!   `--overwrite` refusal and the operation word kubectl prints;
//! - `Taint.ToString()` from `k8s.io/api/core/v1`.
//!
//! It is a port of upstream's `kubectl/pkg/cmd/taint/{taint,utils}.go`,
//! `pkg/util/taints/taints.go` and `pkg/util/flag` (`RegisterWithTaintsVar`).
//! Every error's `Display` is the exact text kubectl or the kubelet prints, so
//! users see the messages they already know. The key and value checks
//! (apimachinery's `IsQualifiedName` / `IsValidLabelValue`) and Go's `%q`
//! quoting are the shared ones from [`crate::validation`].

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::validation::field::go_quote;
use crate::validation::names::{is_qualified_name, is_valid_label_value};

/// The three effects the API accepts; anything else is rejected by
/// `validateTaintEffect` upstream.
const EFFECT_NO_SCHEDULE: &str = "NoSchedule";
const EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
const EFFECT_NO_EXECUTE: &str = "NoExecute";

/// kubectl's operation words (upstream constants `TAINTED`, `UNTAINTED`,
/// `MODIFIED`), printed as `node/<name> tainted`.
const TAINTED: &str = "tainted";
const UNTAINTED: &str = "untainted";
const MODIFIED: &str = "modified";

/// A parsed `kubectl taint` command: the taints to add or update and the
/// taints to remove.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaintSpec {
    /// Taints to add, or whose value to update when `--overwrite` is given.
    /// Each has a key and a valid effect; the value is `None` when empty.
    pub to_add: Vec<Taint>,
    /// Taints to remove. Only `key` and `effect` are set; an empty `effect`
    /// means "every taint with this key, whatever its effect" (`key-`).
    pub to_remove: Vec<Taint>,
}

/// Why a taint spec or a taint command was rejected. `Display` is the exact
/// message upstream kubectl (or the kubelet, for the flag) prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaintSpecError {
    /// A malformed spec, or a key or value that fails validation. `reasons`
    /// are the apimachinery validation messages (joined with `; `), empty for
    /// purely syntactic errors.
    #[error("invalid taint spec: {spec}{}", join_reasons(reasons))]
    InvalidSpec { spec: String, reasons: Vec<String> },

    /// The effect after `:` is not NoSchedule, PreferNoSchedule or NoExecute.
    #[error("invalid taint effect: {effect}, unsupported taint effect")]
    InvalidEffect { effect: String },

    /// Two taints to add share key and effect. Upstream formats the taint
    /// with Go's `%v`, which renders the struct as `{key value effect <nil>}`.
    #[error("duplicated taints with the same key and effect: {{{key} {value} {effect} <nil>}}")]
    Duplicated {
        key: String,
        value: String,
        effect: String,
    },

    /// The same taint is both added and removed; each entry is the removal's
    /// `(key, effect)`, the effect possibly empty.
    #[error(
        "can not both modify and remove the following taint(s) in the same command: {}",
        format_conflicts(conflicts)
    )]
    Conflict { conflicts: Vec<(String, String)> },

    /// The command named no taint change at all.
    #[error("at least one taint update is required")]
    NoTaintUpdate,

    /// The command named no resource before its taint changes.
    #[error("one or more resources must be specified as <resource> <name>")]
    NoResource,

    /// A resource argument came after a taint change.
    #[error("all resources must be specified before taint changes: {arg}")]
    ResourceAfterTaint { arg: String },

    /// A taint to add already exists (same key and effect) and `--overwrite`
    /// was not given. `keys` are the clashing keys joined with `,`.
    /// [`apply_taint_spec`] does not know the node's name and leaves `node`
    /// empty; fill it with [`TaintSpecError::with_node_name`].
    #[error("node {node} already has {keys} taint(s) with same effect(s) and --overwrite is false")]
    AlreadyExists { node: String, keys: String },

    /// Taints to remove that the node does not have, as `ToString()` forms.
    /// Displayed like Go's `utilerrors.NewAggregate` of `taint %q not found`.
    #[error("{}", format_not_found(taints))]
    NotFound { taints: Vec<String> },
}

impl TaintSpecError {
    /// Names the node in an [`TaintSpecError::AlreadyExists`] error, which
    /// upstream reports per node; other errors are returned unchanged.
    #[must_use]
    pub fn with_node_name(self, name: &str) -> Self {
        match self {
            Self::AlreadyExists { keys, .. } => Self::AlreadyExists {
                node: name.to_owned(),
                keys,
            },
            other => other,
        }
    }
}

fn join_reasons(reasons: &[String]) -> String {
    if reasons.is_empty() {
        String::new()
    } else {
        format!(", {}", reasons.join("; "))
    }
}

fn format_conflicts(conflicts: &[(String, String)]) -> String {
    // Upstream builds each entry with fmt.Sprintf("{\"%s\":\"%s\"}") — no
    // escaping — and joins them with ", ".
    conflicts
        .iter()
        .map(|(key, effect)| format!("{{\"{key}\":\"{effect}\"}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Go's `utilerrors.NewAggregate(errs).Error()`: one message as is; several
/// de-duplicated, joined with ", " and wrapped in brackets.
fn format_not_found(taints: &[String]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for taint in taints {
        let msg = format!("taint {} not found", go_quote(taint));
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.concat(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// Upstream `Taint.ToString()`: `key=value:effect`, `key:effect`,
/// `key=value:` or `key`. An empty value is treated as no value, as in Go.
pub fn format_taint(t: &Taint) -> String {
    let value = t.value.as_deref().unwrap_or("");
    match (t.effect.is_empty(), value.is_empty()) {
        (true, true) => t.key.clone(),
        (true, false) => format!("{}={}:", t.key, value),
        (false, true) => format!("{}:{}", t.key, t.effect),
        (false, false) => format!("{}={}:{}", t.key, value, t.effect),
    }
}

/// A toleration as `key op value:effect for Ns` (`Exists` with no key:
/// every taint), as the scheduler's explanations and the simulator's
/// report show it.
pub fn format_toleration(toleration: &Toleration) -> String {
    let key = toleration.key.as_deref().unwrap_or("");
    let op = toleration.operator.as_deref().unwrap_or("Equal");
    let mut text = if key.is_empty() && op == "Exists" {
        "*".to_string()
    } else if op == "Exists" {
        format!("{key} Exists")
    } else {
        format!(
            "{key} {op} {}",
            toleration.value.as_deref().unwrap_or_default()
        )
    };
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty()) {
        text.push(':');
        text.push_str(effect);
    }
    if let Some(seconds) = toleration.toleration_seconds {
        text.push_str(&format!(" for {seconds}s"));
    }
    text
}

/// Upstream `Taint.MatchTaint`: taints are unique by key and effect, so two
/// taints with the same key and effect are "the same taint" whatever their
/// values.
fn match_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

fn validate_taint_effect(effect: &str) -> Result<(), TaintSpecError> {
    match effect {
        EFFECT_NO_SCHEDULE | EFFECT_PREFER_NO_SCHEDULE | EFFECT_NO_EXECUTE => Ok(()),
        _ => Err(TaintSpecError::InvalidEffect {
            effect: effect.to_owned(),
        }),
    }
}

fn invalid_spec(spec: &str, reasons: Vec<String>) -> TaintSpecError {
    TaintSpecError::InvalidSpec {
        spec: spec.to_owned(),
        reasons,
    }
}

/// Upstream's private `parseTaint`: accepts `key=value:effect`,
/// `key:effect` and the bare `key` (which yields an empty effect; only
/// removals may use it). The checks run in upstream's order, so the first
/// error reported is the one kubectl reports.
fn parse_taint_any(st: &str) -> Result<Taint, TaintSpecError> {
    let parts: Vec<&str> = st.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [key] => (*key, "", ""),
        [key_value, effect] => {
            validate_taint_effect(effect)?;
            let kv: Vec<&str> = key_value.split('=').collect();
            match kv.as_slice() {
                [key] => (*key, "", *effect),
                [key, value] => {
                    let errs = is_valid_label_value(value);
                    if !errs.is_empty() {
                        return Err(invalid_spec(st, errs));
                    }
                    (*key, *value, *effect)
                }
                _ => return Err(invalid_spec(st, Vec::new())),
            }
        }
        _ => return Err(invalid_spec(st, Vec::new())),
    };
    let errs = is_qualified_name(key);
    if !errs.is_empty() {
        return Err(invalid_spec(st, errs));
    }
    Ok(Taint {
        key: key.to_owned(),
        // Go has no "absent" value; an empty one is stored as absent here so
        // that it serializes like Go's `omitempty`.
        value: (!value.is_empty()).then(|| value.to_owned()),
        effect: effect.to_owned(),
        time_added: None,
    })
}

/// Parses one taint to add: `key=value:Effect` or `key:Effect` (also
/// `key=:Effect`, the same as `key:Effect`). The bare `key` form is only
/// meaningful for removal and is rejected here exactly as kubectl rejects it
/// as an addition: `invalid taint spec: key`.
pub fn parse_taint(spec: &str) -> Result<Taint, TaintSpecError> {
    let taint = parse_taint_any(spec)?;
    if taint.effect.is_empty() {
        return Err(invalid_spec(spec, Vec::new()));
    }
    Ok(taint)
}

/// Upstream `parseTaints` (kubectl's and `pkg/util/taints.ParseTaints`, which
/// are the same): specs ending in `-` are removals, the rest additions, which
/// must have an effect and be unique by key and effect.
fn parse_taints(specs: &[&str]) -> Result<TaintSpec, TaintSpecError> {
    let mut out = TaintSpec::default();
    for spec in specs {
        if let Some(trimmed) = spec.strip_suffix('-') {
            let taint = parse_taint_any(trimmed)?;
            // A removal only ever carries key and effect; a value given in
            // `key=value:Effect-` is accepted but ignored, as upstream does.
            out.to_remove.push(Taint {
                key: taint.key,
                value: None,
                effect: taint.effect,
                time_added: None,
            });
        } else {
            let taint = parse_taint_any(spec)?;
            if taint.effect.is_empty() {
                return Err(invalid_spec(spec, Vec::new()));
            }
            if out.to_add.iter().any(|t| match_taint(t, &taint)) {
                return Err(TaintSpecError::Duplicated {
                    key: taint.key,
                    value: taint.value.unwrap_or_default(),
                    effect: taint.effect,
                });
            }
            out.to_add.push(taint);
        }
    }
    Ok(out)
}

/// Parses the taint arguments of `kubectl taint` (everything after the
/// resources): `key=value:Effect` and `key:Effect` add or update, while
/// `key:Effect-` removes one taint and `key-` removes every taint with that
/// key. Also runs kubectl's command-level checks: at least one spec, and no
/// taint both added and removed.
pub fn parse_taint_specs(specs: &[&str]) -> Result<TaintSpec, TaintSpecError> {
    if specs.is_empty() {
        return Err(TaintSpecError::NoTaintUpdate);
    }
    let spec = parse_taints(specs)?;
    // kubectl's Validate: a removal without effect conflicts with every
    // addition of that key; one with an effect only with the same effect.
    let mut conflicts = Vec::new();
    for add in &spec.to_add {
        for remove in &spec.to_remove {
            if add.key == remove.key && (remove.effect.is_empty() || add.effect == remove.effect) {
                conflicts.push((remove.key.clone(), remove.effect.clone()));
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(TaintSpecError::Conflict { conflicts });
    }
    Ok(spec)
}

/// Splits `kubectl taint` positional arguments into resources (e.g. `node`,
/// `node-1`) and taint specs, as kubectl's `Complete` does: an argument is a
/// taint change when it contains `=` or `:` or ends with `-`, and every
/// resource must come before the first taint change.
pub fn split_taint_args<'a>(
    args: &[&'a str],
) -> Result<(Vec<&'a str>, Vec<&'a str>), TaintSpecError> {
    let mut resources = Vec::new();
    let mut taints = Vec::new();
    for arg in args {
        let is_taint = arg.contains('=') || arg.contains(':') || arg.ends_with('-');
        match (taints.is_empty(), is_taint) {
            (_, true) => taints.push(*arg),
            (true, false) => resources.push(*arg),
            (false, false) => {
                return Err(TaintSpecError::ResourceAfterTaint {
                    arg: (*arg).to_owned(),
                });
            }
        }
    }
    if resources.is_empty() {
        return Err(TaintSpecError::NoResource);
    }
    if taints.is_empty() {
        return Err(TaintSpecError::NoTaintUpdate);
    }
    Ok((resources, taints))
}

/// Parses the kubelet's `--register-with-taints` value: comma-separated
/// `key=value:Effect` / `key:Effect`. Empty means no taints. Like upstream's
/// `RegisterWithTaintsVar`, it goes through `ParseTaints`, so duplicates are
/// rejected and a removal spec such as `key-` is accepted and ignored.
pub fn parse_register_with_taints(flag: &str) -> Result<Vec<Taint>, TaintSpecError> {
    if flag.is_empty() {
        return Ok(Vec::new());
    }
    let specs: Vec<&str> = flag.split(',').collect();
    Ok(parse_taints(&specs)?.to_add)
}

/// Upstream `checkIfTaintsAlreadyExists`: the keys of taints to add that the
/// node already has with the same effect, joined with `,`.
fn check_if_taints_already_exist(old: &[Taint], to_add: &[Taint]) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for taint in to_add {
        for old_taint in old {
            if match_taint(taint, old_taint) {
                keys.push(&taint.key);
            }
        }
    }
    keys.join(",")
}

/// Upstream `deleteTaintsByKey`: drops every taint with `key`; reports
/// whether any was dropped.
fn delete_taints_by_key(taints: &[Taint], key: &str) -> (Vec<Taint>, bool) {
    let kept: Vec<Taint> = taints.iter().filter(|t| t.key != key).cloned().collect();
    let removed = kept.len() != taints.len();
    (kept, removed)
}

/// Upstream `deleteTaint`: drops every taint with the key and effect of
/// `to_delete`; reports whether any was dropped.
fn delete_taint(taints: &[Taint], to_delete: &Taint) -> (Vec<Taint>, bool) {
    let kept: Vec<Taint> = taints
        .iter()
        .filter(|t| !match_taint(to_delete, t))
        .cloned()
        .collect();
    let removed = kept.len() != taints.len();
    (kept, removed)
}

/// Upstream `addTaints`: appends each old taint not overridden by a new one
/// (same key and effect) and reports whether the list grew beyond the old
/// one. The check runs against the growing list, as upstream's does.
fn add_taints(old: &[Taint], new: &mut Vec<Taint>) -> bool {
    for old_taint in old {
        if !new.iter().any(|t| match_taint(t, old_taint)) {
            new.push(old_taint.clone());
        }
    }
    old.len() != new.len()
}

/// Upstream `deleteTaints`: removes each requested taint, collecting a
/// not-found entry for each that matched nothing. Like upstream, the flag
/// returned is whether the *last* removal matched.
fn delete_taints(to_remove: &[Taint], taints: &mut Vec<Taint>) -> (Vec<String>, bool) {
    let mut not_found = Vec::new();
    let mut removed = false;
    for taint in to_remove {
        let (kept, did_remove) = if taint.effect.is_empty() {
            delete_taints_by_key(taints, &taint.key)
        } else {
            delete_taint(taints, taint)
        };
        *taints = kept;
        removed = did_remove;
        if !removed {
            not_found.push(format_taint(taint));
        }
    }
    (not_found, removed)
}

/// Upstream `reorganizeTaints`: new taints first, then the old ones they do
/// not replace, minus the removals; plus the operation word.
fn reorganize_taints(
    old: &[Taint],
    overwrite: bool,
    to_add: &[Taint],
    to_remove: &[Taint],
) -> (&'static str, Vec<Taint>, Result<(), TaintSpecError>) {
    let mut taints = to_add.to_vec();
    let added = add_taints(old, &mut taints);
    let (not_found, deleted) = delete_taints(to_remove, &mut taints);
    let result = if not_found.is_empty() {
        Ok(())
    } else {
        Err(TaintSpecError::NotFound { taints: not_found })
    };
    let operation = if (added && deleted) || overwrite {
        MODIFIED
    } else if added {
        TAINTED
    } else {
        UNTAINTED
    };
    (operation, taints, result)
}

/// Applies a `kubectl taint` command to a node's current taints (upstream
/// `updateTaints`). Returns the node's new taints and the word kubectl
/// prints (`tainted`, `untainted` or `modified`).
///
/// Without `overwrite`, adding a taint whose key and effect the node already
/// has fails with [`TaintSpecError::AlreadyExists`] (node name left empty;
/// see [`TaintSpecError::with_node_name`]). Removing a taint the node does
/// not have fails with [`TaintSpecError::NotFound`]; as in kubectl, nothing
/// is applied then.
pub fn apply_taint_spec(
    current: &[Taint],
    spec: &TaintSpec,
    overwrite: bool,
) -> Result<(Vec<Taint>, &'static str), TaintSpecError> {
    if !overwrite {
        let keys = check_if_taints_already_exist(current, &spec.to_add);
        if !keys.is_empty() {
            return Err(TaintSpecError::AlreadyExists {
                node: String::new(),
                keys,
            });
        }
    }
    let (operation, taints, result) =
        reorganize_taints(current, overwrite, &spec.to_add, &spec.to_remove);
    result.map(|()| (taints, operation))
}

#[cfg(test)]
mod tests {
    //! Table-driven ports of upstream's tests. Each table names its upstream
    //! source; cases not in upstream are marked "berth:".

    use super::*;
    use crate::test_util::taint;
    use proptest::prelude::*;

    /// The qualified-name message for a bad key name, spelled out literally
    /// (not built with the helper under test).
    const KEY_NAME_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    /// The label-value message for a bad value, spelled out literally.
    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    // upstream: pkg/util/taints/taints_test.go TestParseTaints (all 19 cases,
    // a superset of kubectl's utils_test.go TestParseTaints), with the exact
    // error each failure produces.
    #[test]
    fn parse_taints_matches_upstream_table() {
        let long_key = "a".repeat(64);
        struct Case<'a> {
            name: &'a str,
            spec: Vec<&'a str>,
            to_add: Vec<Taint>,
            to_remove: Vec<Taint>,
            err: Option<String>,
        }
        let err = |s: String| Some(s);
        let cases =
            vec![
            Case {
                name: "invalid empty spec format",
                spec: vec![""],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: , name part must be non-empty; {KEY_NAME_REGEX}"
                )),
            },
            Case {
                name: "invalid spec format without effect",
                spec: vec!["foo=abc"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!("invalid taint spec: foo=abc, {KEY_NAME_REGEX}")),
            },
            Case {
                name: "invalid spec format with multiple '=' separators",
                spec: vec!["foo=abc=xyz:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err("invalid taint spec: foo=abc=xyz:NoSchedule".into()),
            },
            Case {
                name: "invalid spec format with multiple ':' separators",
                spec: vec!["foo=abc:xyz:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err("invalid taint spec: foo=abc:xyz:NoSchedule".into()),
            },
            Case {
                name: "invalid spec taint value without separator",
                spec: vec!["foo"],
                to_add: vec![],
                to_remove: vec![],
                err: err("invalid taint spec: foo".into()),
            },
            Case {
                name: "invalid spec taint value with special chars '%^@'",
                spec: vec!["foo=nospecialchars%^@:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=nospecialchars%^@:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec taint value with non-alphanumeric characters",
                spec: vec!["foo=Tama-nui-te-rā.is.Māori.sun:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=Tama-nui-te-rā.is.Māori.sun:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec taint value with special chars '\\'",
                spec: vec!["foo=\\backslashes\\are\\bad:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=\\backslashes\\are\\bad:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec taint value with start with an non-alphanumeric character '-'",
                spec: vec!["foo=-starts-with-dash:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=-starts-with-dash:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec taint value with end with an non-alphanumeric character '-'",
                spec: vec!["foo=ends-with-dash-:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=ends-with-dash-:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec taint value with start with an non-alphanumeric character '.'",
                spec: vec!["foo=.starts.with.dot:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=.starts.with.dot:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec taint value with end with an non-alphanumeric character '.'",
                spec: vec!["foo=ends.with.dot.:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: foo=ends.with.dot.:NoSchedule, {VALUE_REGEX}"
                )),
            },
            Case {
                name: "invalid spec effect for adding taint",
                spec: vec!["foo=abc:invalid_effect"],
                to_add: vec![],
                to_remove: vec![],
                err: err("invalid taint effect: invalid_effect, unsupported taint effect".into()),
            },
            Case {
                name: "invalid spec effect for deleting taint",
                spec: vec!["foo:invalid_effect-"],
                to_add: vec![],
                to_remove: vec![],
                err: err("invalid taint effect: invalid_effect, unsupported taint effect".into()),
            },
            Case {
                name: "duplicated taints with the same key and effect",
                spec: vec!["foo=abc:NoSchedule", "foo=abc:NoSchedule"],
                to_add: vec![],
                to_remove: vec![],
                err: err(
                    "duplicated taints with the same key and effect: {foo abc NoSchedule <nil>}"
                        .into(),
                ),
            },
            Case {
                name: "invalid spec taint value exceeding the limit",
                spec: vec![&long_key],
                to_add: vec![],
                to_remove: vec![],
                err: err(format!(
                    "invalid taint spec: {long_key}, name part must be no more than 63 bytes"
                )),
            },
            Case {
                name: "add new taints with no special chars",
                spec: vec![
                    "foo=abc:NoSchedule",
                    "bar=abc:NoSchedule",
                    "baz:NoSchedule",
                    "qux:NoSchedule",
                    "foobar=:NoSchedule",
                ],
                to_add: vec![
                    taint("foo", "abc", "NoSchedule"),
                    taint("bar", "abc", "NoSchedule"),
                    taint("baz", "", "NoSchedule"),
                    taint("qux", "", "NoSchedule"),
                    taint("foobar", "", "NoSchedule"),
                ],
                to_remove: vec![],
                err: None,
            },
            Case {
                name: "delete taints with no special chars",
                spec: vec!["foo:NoSchedule-", "bar:NoSchedule-", "qux=:NoSchedule-", "dedicated-"],
                to_add: vec![],
                to_remove: vec![
                    taint("foo", "", "NoSchedule"),
                    taint("bar", "", "NoSchedule"),
                    taint("qux", "", "NoSchedule"),
                    taint("dedicated", "", ""),
                ],
                err: None,
            },
            Case {
                name: "add taints and delete taints with no special chars",
                spec: vec![
                    "foo=abc:NoSchedule",
                    "bar=abc:NoSchedule",
                    "baz:NoSchedule",
                    "qux:NoSchedule",
                    "foobar=:NoSchedule",
                    "foo:NoSchedule-",
                    "bar:NoSchedule-",
                    "baz=:NoSchedule-",
                ],
                to_add: vec![
                    taint("foo", "abc", "NoSchedule"),
                    taint("bar", "abc", "NoSchedule"),
                    taint("baz", "", "NoSchedule"),
                    taint("qux", "", "NoSchedule"),
                    taint("foobar", "", "NoSchedule"),
                ],
                to_remove: vec![
                    taint("foo", "", "NoSchedule"),
                    taint("bar", "", "NoSchedule"),
                    taint("baz", "", "NoSchedule"),
                ],
                err: None,
            },
        ];
        assert_eq!(cases.len(), 19);
        for c in cases {
            match (parse_taints(&c.spec), c.err) {
                (Ok(got), None) => {
                    assert_eq!(got.to_add, c.to_add, "[{}] to_add", c.name);
                    assert_eq!(got.to_remove, c.to_remove, "[{}] to_remove", c.name);
                }
                (Err(e), Some(want)) => assert_eq!(e.to_string(), want, "[{}]", c.name),
                (got, want) => panic!("[{}] got {got:?}, want error {want:?}", c.name),
            }
        }
    }

    // berth: single-spec edge cases around the grammar and the key/value
    // checks, with the messages upstream's code produces for them.
    #[test]
    fn parse_taint_reports_upstream_messages_for_edge_cases() {
        let long_value = format!("foo={}:NoSchedule", "v".repeat(64));
        let cases: Vec<(&str, Result<Taint, String>)> = vec![
            ("foo=bar:NoSchedule", Ok(taint("foo", "bar", "NoSchedule"))),
            ("foo:PreferNoSchedule", Ok(taint("foo", "", "PreferNoSchedule"))),
            ("foo=:NoExecute", Ok(taint("foo", "", "NoExecute"))),
            (
                "example.com/my-app=x:NoSchedule",
                Ok(taint("example.com/my-app", "x", "NoSchedule")),
            ),
            ("foo", Err("invalid taint spec: foo".into())),
            (
                "foo:",
                Err("invalid taint effect: , unsupported taint effect".into()),
            ),
            (
                "foo=bar:noschedule",
                Err("invalid taint effect: noschedule, unsupported taint effect".into()),
            ),
            (
                &long_value,
                Err(format!("invalid taint spec: {long_value}, must be no more than 63 bytes")),
            ),
            (
                "/foo:NoSchedule",
                Err("invalid taint spec: /foo:NoSchedule, prefix part must be non-empty".into()),
            ),
            (
                "Example.com/foo:NoSchedule",
                Err("invalid taint spec: Example.com/foo:NoSchedule, prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()),
            ),
            (
                "example.com/:NoSchedule",
                Err(format!("invalid taint spec: example.com/:NoSchedule, name part must be non-empty; {KEY_NAME_REGEX}")),
            ),
            (
                "a/b/c:NoSchedule",
                Err("invalid taint spec: a/b/c:NoSchedule, a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()),
            ),
            (
                // The effect is checked before the key, as upstream does.
                "bad key!:Bogus",
                Err("invalid taint effect: Bogus, unsupported taint effect".into()),
            ),
        ];
        for (spec, want) in cases {
            let got = parse_taint(spec).map_err(|e| e.to_string());
            assert_eq!(got, want, "spec {spec:?}");
        }
    }

    // upstream: kubectl taint.go Complete + Validate (the argument checks);
    // upstream tests these only through TestTaint, so the cases are berth's.
    #[test]
    fn parse_taint_specs_applies_kubectl_command_checks() {
        let cases: Vec<(Vec<&str>, Result<TaintSpec, String>)> = vec![
            (vec![], Err("at least one taint update is required".into())),
            (
                vec!["foo=bar:NoSchedule", "foo:NoSchedule-"],
                Err("can not both modify and remove the following taint(s) in the same command: {\"foo\":\"NoSchedule\"}".into()),
            ),
            (
                vec!["foo=bar:NoSchedule", "foo-"],
                Err("can not both modify and remove the following taint(s) in the same command: {\"foo\":\"\"}".into()),
            ),
            (
                vec!["foo=bar:NoSchedule", "foo:NoExecute=bar", "foo-", "foo:NoSchedule-"],
                Err("invalid taint effect: NoExecute=bar, unsupported taint effect".into()),
            ),
            (
                vec!["foo=bar:NoSchedule", "foo=bar:NoExecute", "foo-", "foo:NoExecute-"],
                Err("can not both modify and remove the following taint(s) in the same command: {\"foo\":\"\"}, {\"foo\":\"\"}, {\"foo\":\"NoExecute\"}".into()),
            ),
            (
                vec!["foo=bar:NoSchedule", "foo:NoExecute-"],
                Ok(TaintSpec {
                    to_add: vec![taint("foo", "bar", "NoSchedule")],
                    to_remove: vec![taint("foo", "", "NoExecute")],
                }),
            ),
        ];
        for (specs, want) in cases {
            let got = parse_taint_specs(&specs).map_err(|e| e.to_string());
            assert_eq!(got, want, "specs {specs:?}");
        }
    }

    // upstream: kubectl taint.go Complete, the resource/taint split.
    #[test]
    fn split_taint_args_requires_resources_before_taints() {
        type Split<'a> = Result<(Vec<&'a str>, Vec<&'a str>), String>;
        let cases: Vec<(Vec<&str>, Split)> = vec![
            (
                vec!["node", "node-name", "foo=bar:NoSchedule"],
                Ok((vec!["node", "node-name"], vec!["foo=bar:NoSchedule"])),
            ),
            (
                vec!["nodes", "a", "b", "dedicated-", "bar:NoSchedule"],
                Ok((
                    vec!["nodes", "a", "b"],
                    vec!["dedicated-", "bar:NoSchedule"],
                )),
            ),
            (
                vec!["node", "foo=bar:NoSchedule", "node-name"],
                Err("all resources must be specified before taint changes: node-name".into()),
            ),
            (
                vec!["foo=bar:NoSchedule"],
                Err("one or more resources must be specified as <resource> <name>".into()),
            ),
            (
                vec!["node", "node-name"],
                Err("at least one taint update is required".into()),
            ),
            (
                vec![],
                Err("one or more resources must be specified as <resource> <name>".into()),
            ),
        ];
        for (args, want) in cases {
            let got = split_taint_args(&args).map_err(|e| e.to_string());
            assert_eq!(got, want, "args {args:?}");
        }
    }

    // upstream: kubectl taint_test.go TestTaint (all 12 cases, including the
    // "add and remove" case from earlier revisions), run through the same
    // path kubectl takes: split args, parse, apply to the node's taints.
    #[test]
    fn kubectl_taint_command_matches_upstream_table() {
        struct Case<'a> {
            description: &'a str,
            old: Vec<Taint>,
            args: Vec<&'a str>,
            overwrite: bool,
            want: Result<(Vec<Taint>, &'a str), String>,
        }
        let cases = vec![
            Case {
                description: "taints a node with effect NoSchedule",
                old: vec![],
                args: vec!["node", "node-name", "foo=bar:NoSchedule"],
                overwrite: false,
                want: Ok((vec![taint("foo", "bar", "NoSchedule")], "tainted")),
            },
            Case {
                description: "taints a node with effect PreferNoSchedule",
                old: vec![],
                args: vec!["node", "node-name", "foo=bar:PreferNoSchedule"],
                overwrite: false,
                want: Ok((vec![taint("foo", "bar", "PreferNoSchedule")], "tainted")),
            },
            Case {
                description: "update an existing taint on the node, change the value from bar to barz",
                old: vec![taint("foo", "bar", "NoSchedule")],
                args: vec!["node", "node-name", "foo=barz:NoSchedule"],
                overwrite: true,
                want: Ok((vec![taint("foo", "barz", "NoSchedule")], "modified")),
            },
            Case {
                description: "taints a node with two taints",
                old: vec![],
                args: vec![
                    "node",
                    "node-name",
                    "dedicated=namespaceA:NoSchedule",
                    "foo=bar:PreferNoSchedule",
                ],
                overwrite: false,
                want: Ok((
                    vec![
                        taint("dedicated", "namespaceA", "NoSchedule"),
                        taint("foo", "bar", "PreferNoSchedule"),
                    ],
                    "tainted",
                )),
            },
            Case {
                description: "node has two taints with the same key but different effect, remove one of them by indicating exact key and effect",
                old: vec![
                    taint("dedicated", "namespaceA", "NoSchedule"),
                    taint("dedicated", "namespaceA", "PreferNoSchedule"),
                ],
                args: vec!["node", "node-name", "dedicated:NoSchedule-"],
                overwrite: false,
                want: Ok((
                    vec![taint("dedicated", "namespaceA", "PreferNoSchedule")],
                    "untainted",
                )),
            },
            Case {
                description: "node has two taints with the same key but different effect, remove all of them with wildcard",
                old: vec![
                    taint("dedicated", "namespaceA", "NoSchedule"),
                    taint("dedicated", "namespaceA", "PreferNoSchedule"),
                ],
                args: vec!["node", "node-name", "dedicated-"],
                overwrite: false,
                want: Ok((vec![], "untainted")),
            },
            Case {
                description: "node has two taints, update one of them and remove the other",
                old: vec![
                    taint("dedicated", "namespaceA", "NoSchedule"),
                    taint("foo", "bar", "PreferNoSchedule"),
                ],
                args: vec![
                    "node",
                    "node-name",
                    "dedicated:NoSchedule-",
                    "foo=barz:PreferNoSchedule",
                ],
                overwrite: true,
                want: Ok((vec![taint("foo", "barz", "PreferNoSchedule")], "modified")),
            },
            Case {
                description: "invalid taint key",
                old: vec![],
                args: vec!["node", "node-name", "nospecialchars^@=banana:NoSchedule"],
                overwrite: false,
                want: Err(format!(
                    "invalid taint spec: nospecialchars^@=banana:NoSchedule, {KEY_NAME_REGEX}"
                )),
            },
            Case {
                description: "invalid taint effect",
                old: vec![],
                args: vec!["node", "node-name", "foo=bar:NoExcute"],
                overwrite: false,
                want: Err("invalid taint effect: NoExcute, unsupported taint effect".into()),
            },
            Case {
                // Upstream's spelling "NoExcute" makes this fail on the
                // effect before the duplicate check is reached.
                description: "duplicated taints with the same key and effect should be rejected",
                old: vec![],
                args: vec!["node", "node-name", "foo=bar:NoExcute", "foo=barz:NoExcute"],
                overwrite: false,
                want: Err("invalid taint effect: NoExcute, unsupported taint effect".into()),
            },
            Case {
                description: "add and remove taint with same key and effect should be rejected",
                old: vec![],
                args: vec!["node", "node-name", "foo=:NoExcute", "foo=:NoExcute-"],
                overwrite: false,
                want: Err("invalid taint effect: NoExcute, unsupported taint effect".into()),
            },
            Case {
                description: "can't update existing taint on the node, since 'overwrite' flag is not set",
                old: vec![taint("foo", "bar", "NoSchedule")],
                args: vec!["node", "node-name", "foo=bar:NoSchedule"],
                overwrite: false,
                want: Err("node node-name already has foo taint(s) with same effect(s) and --overwrite is false".into()),
            },
            // berth: the two upstream rejections above with valid effects,
            // so the duplicate and conflict checks themselves are exercised.
            Case {
                description: "berth: duplicated taints with a valid effect are rejected",
                old: vec![],
                args: vec!["node", "node-name", "foo=bar:NoExecute", "foo=barz:NoExecute"],
                overwrite: false,
                want: Err("duplicated taints with the same key and effect: {foo barz NoExecute <nil>}".into()),
            },
            Case {
                description: "berth: add and remove of the same taint with a valid effect is rejected",
                old: vec![],
                args: vec!["node", "node-name", "foo=:NoExecute", "foo=:NoExecute-"],
                overwrite: false,
                want: Err("can not both modify and remove the following taint(s) in the same command: {\"foo\":\"NoExecute\"}".into()),
            },
        ];
        for c in cases {
            let got = split_taint_args(&c.args)
                .and_then(|(_, specs)| parse_taint_specs(&specs))
                .and_then(|spec| apply_taint_spec(&c.old, &spec, c.overwrite))
                .map_err(|e| e.with_node_name("node-name").to_string());
            assert_eq!(got, c.want, "[{}]", c.description);
        }
    }

    // upstream: kubectl utils_test.go TestReorganizeTaints (all 7 cases).
    #[test]
    fn reorganize_taints_matches_upstream_table() {
        let node_taints = vec![taint("foo", "bar", "NoSchedule")];
        struct Case<'a> {
            name: &'a str,
            overwrite: bool,
            to_add: Vec<Taint>,
            to_delete: Vec<Taint>,
            expected: Vec<Taint>,
            operation: &'a str,
            err: Option<&'a str>,
        }
        let cases = vec![
            Case {
                name: "no changes with overwrite is true",
                overwrite: true,
                to_add: vec![],
                to_delete: vec![],
                expected: node_taints.clone(),
                operation: MODIFIED,
                err: None,
            },
            Case {
                name: "no changes with overwrite is false",
                overwrite: false,
                to_add: vec![],
                to_delete: vec![],
                expected: node_taints.clone(),
                operation: UNTAINTED,
                err: None,
            },
            Case {
                name: "add new taint",
                overwrite: false,
                to_add: vec![taint("foo_1", "", "NoExecute")],
                to_delete: vec![],
                expected: vec![
                    taint("foo_1", "", "NoExecute"),
                    taint("foo", "bar", "NoSchedule"),
                ],
                operation: TAINTED,
                err: None,
            },
            Case {
                name: "delete taint with effect",
                overwrite: false,
                to_add: vec![],
                to_delete: vec![taint("foo", "", "NoSchedule")],
                expected: vec![],
                operation: UNTAINTED,
                err: None,
            },
            Case {
                name: "delete taint with no effect",
                overwrite: false,
                to_add: vec![],
                to_delete: vec![taint("foo", "", "")],
                expected: vec![],
                operation: UNTAINTED,
                err: None,
            },
            Case {
                name: "delete non-exist taint",
                overwrite: false,
                to_add: vec![],
                to_delete: vec![taint("foo_1", "", "NoSchedule")],
                expected: node_taints.clone(),
                operation: UNTAINTED,
                err: Some("taint \"foo_1:NoSchedule\" not found"),
            },
            Case {
                name: "add new taint and delete old one",
                overwrite: false,
                to_add: vec![taint("foo_1", "", "NoSchedule")],
                to_delete: vec![taint("foo", "", "NoSchedule")],
                expected: vec![taint("foo_1", "", "NoSchedule")],
                operation: MODIFIED,
                err: None,
            },
        ];
        for c in cases {
            let (operation, taints, result) =
                reorganize_taints(&node_taints, c.overwrite, &c.to_add, &c.to_delete);
            assert_eq!(
                result.map_err(|e| e.to_string()),
                c.err.map_or(Ok(()), |e| Err(e.to_owned())),
                "[{}]",
                c.name
            );
            assert_eq!(taints, c.expected, "[{}]", c.name);
            assert_eq!(operation, c.operation, "[{}]", c.name);
        }
    }

    // berth: several missing removals aggregate like Go's NewAggregate.
    #[test]
    fn missing_removals_aggregate_like_go() {
        let current = vec![taint("foo", "bar", "NoSchedule")];
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (vec!["a:NoSchedule-"], "taint \"a:NoSchedule\" not found"),
            (
                vec!["a:NoSchedule-", "b-"],
                "[taint \"a:NoSchedule\" not found, taint \"b\" not found]",
            ),
            (vec!["b-", "b-"], "taint \"b\" not found"),
            (vec!["foo-", "foo-"], "taint \"foo\" not found"),
        ];
        for (specs, want) in cases {
            let got = parse_taint_specs(&specs)
                .and_then(|spec| apply_taint_spec(&current, &spec, false))
                .map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_owned()), "specs {specs:?}");
        }
    }

    // berth: the AlreadyExists check lists every clash and ignores values.
    #[test]
    fn existing_taints_without_overwrite_are_refused() {
        let current = vec![
            taint("a", "1", "NoSchedule"),
            taint("b", "", "NoExecute"),
            taint("c", "", "NoSchedule"),
        ];
        let spec = TaintSpec {
            to_add: vec![
                taint("a", "2", "NoSchedule"),
                taint("b", "x", "NoExecute"),
                taint("c", "", "NoExecute"),
            ],
            to_remove: vec![],
        };
        assert_eq!(
            apply_taint_spec(&current, &spec, false)
                .map_err(|e| e.with_node_name("n1").to_string()),
            Err(
                "node n1 already has a,b taint(s) with same effect(s) and --overwrite is false"
                    .to_owned()
            )
        );
        assert_eq!(
            apply_taint_spec(&current, &spec, true),
            Ok((
                vec![
                    taint("a", "2", "NoSchedule"),
                    taint("b", "x", "NoExecute"),
                    taint("c", "", "NoExecute"),
                    taint("c", "", "NoSchedule"),
                ],
                "modified"
            ))
        );
        // with_node_name leaves other errors alone.
        assert_eq!(
            TaintSpecError::NoTaintUpdate.with_node_name("n1"),
            TaintSpecError::NoTaintUpdate
        );
    }

    // upstream: kubectl utils_test.go / pkg/util/taints TestDeleteTaint (4).
    #[test]
    fn delete_taint_matches_upstream_table() {
        struct Case<'a> {
            name: &'a str,
            taints: Vec<Taint>,
            to_delete: Taint,
            expected: Vec<Taint>,
            removed: bool,
        }
        let cases = vec![
            Case {
                name: "delete taint with different name",
                taints: vec![taint("foo", "", "NoSchedule")],
                to_delete: taint("foo_1", "", "NoSchedule"),
                expected: vec![taint("foo", "", "NoSchedule")],
                removed: false,
            },
            Case {
                name: "delete taint with different effect",
                taints: vec![taint("foo", "", "NoSchedule")],
                to_delete: taint("foo", "", "NoExecute"),
                expected: vec![taint("foo", "", "NoSchedule")],
                removed: false,
            },
            Case {
                name: "delete taint successfully",
                taints: vec![taint("foo", "", "NoSchedule")],
                to_delete: taint("foo", "", "NoSchedule"),
                expected: vec![],
                removed: true,
            },
            Case {
                name: "delete taint from empty taint array",
                taints: vec![],
                to_delete: taint("foo", "", "NoSchedule"),
                expected: vec![],
                removed: false,
            },
        ];
        for Case {
            name,
            taints,
            to_delete,
            expected,
            removed,
        } in cases
        {
            assert_eq!(
                delete_taint(&taints, &to_delete),
                (expected, removed),
                "[{name}]"
            );
        }
    }

    // upstream: kubectl utils_test.go / pkg/util/taints TestDeleteTaintByKey (3).
    #[test]
    fn delete_taints_by_key_matches_upstream_table() {
        struct Case<'a> {
            name: &'a str,
            taints: Vec<Taint>,
            key: &'a str,
            expected: Vec<Taint>,
            removed: bool,
        }
        let cases = vec![
            Case {
                name: "delete taint unsuccessfully",
                taints: vec![taint("foo", "bar", "NoSchedule")],
                key: "foo_1",
                expected: vec![taint("foo", "bar", "NoSchedule")],
                removed: false,
            },
            Case {
                name: "delete taint successfully",
                taints: vec![taint("foo", "bar", "NoSchedule")],
                key: "foo",
                expected: vec![],
                removed: true,
            },
            Case {
                name: "delete taint from empty taint array",
                taints: vec![],
                key: "foo",
                expected: vec![],
                removed: false,
            },
        ];
        for Case {
            name,
            taints,
            key,
            expected,
            removed,
        } in cases
        {
            assert_eq!(
                delete_taints_by_key(&taints, key),
                (expected, removed),
                "[{name}]"
            );
        }
    }

    // upstream: kubectl utils_test.go / pkg/util/taints
    // TestCheckIfTaintsAlreadyExists (4).
    #[test]
    fn check_if_taints_already_exist_matches_upstream_table() {
        let old = vec![
            taint("foo_1", "bar", "NoSchedule"),
            taint("foo_2", "bar", "NoSchedule"),
            taint("foo_3", "bar", "NoSchedule"),
        ];
        let cases = vec![
            ("empty array", vec![], ""),
            ("no match", vec![taint("foo_1", "", "NoExecute")], ""),
            (
                "match one taint",
                vec![taint("foo_2", "", "NoSchedule")],
                "foo_2",
            ),
            (
                "match two taints",
                vec![
                    taint("foo_2", "", "NoSchedule"),
                    taint("foo_3", "", "NoSchedule"),
                ],
                "foo_2,foo_3",
            ),
        ];
        for (name, to_check, expected) in cases {
            assert_eq!(
                check_if_taints_already_exist(&old, &to_check),
                expected,
                "[{name}]"
            );
        }
    }

    // upstream: pkg/util/flag flags_test.go TestTaintsVar (all 5 cases).
    #[test]
    fn register_with_taints_matches_upstream_table() {
        let cases: Vec<(&str, Vec<Taint>)> = vec![
            ("", vec![]),
            (
                "foo=bar:NoSchedule",
                vec![taint("foo", "bar", "NoSchedule")],
            ),
            ("baz:NoSchedule", vec![taint("baz", "", "NoSchedule")]),
            (
                "foo=bar:NoSchedule,baz:NoSchedule,bing=bang:PreferNoSchedule,qux=:NoSchedule",
                vec![
                    taint("foo", "bar", "NoSchedule"),
                    taint("baz", "", "NoSchedule"),
                    taint("bing", "bang", "PreferNoSchedule"),
                    taint("qux", "", "NoSchedule"),
                ],
            ),
            (
                "dedicated-for=user1:NoExecute,baz:NoSchedule,foo-bar=:NoSchedule",
                vec![
                    taint("dedicated-for", "user1", "NoExecute"),
                    taint("baz", "", "NoSchedule"),
                    taint("foo-bar", "", "NoSchedule"),
                ],
            ),
        ];
        for (flag, expected) in cases {
            assert_eq!(
                parse_register_with_taints(flag),
                Ok(expected),
                "flag {flag:?}"
            );
        }
    }

    // berth: what RegisterWithTaintsVar.Set does with odd input, following
    // its use of ParseTaints.
    #[test]
    fn register_with_taints_follows_parse_taints_quirks() {
        let cases: Vec<(&str, Result<Vec<Taint>, String>)> = vec![
            // A removal spec is parsed and silently dropped.
            (
                "foo-,bar:NoSchedule",
                Ok(vec![taint("bar", "", "NoSchedule")]),
            ),
            ("foo", Err("invalid taint spec: foo".into())),
            (
                "a:NoSchedule,a=b:NoSchedule",
                Err(
                    "duplicated taints with the same key and effect: {a b NoSchedule <nil>}".into(),
                ),
            ),
            (
                "a:NoSchedule,",
                Err(format!(
                    "invalid taint spec: , name part must be non-empty; {KEY_NAME_REGEX}"
                )),
            ),
            (
                "a:NoSchedule, b:NoSchedule",
                Err(format!(
                    "invalid taint spec:  b:NoSchedule, {KEY_NAME_REGEX}"
                )),
            ),
        ];
        for (flag, want) in cases {
            let got = parse_register_with_taints(flag).map_err(|e| e.to_string());
            assert_eq!(got, want, "flag {flag:?}");
        }
    }

    // upstream: core/v1 taint_test.go TestTaintToString (4).
    #[test]
    fn format_taint_matches_upstream_to_string() {
        let cases = vec![
            (taint("foo", "bar", "NoSchedule"), "foo=bar:NoSchedule"),
            (taint("foo", "", "NoSchedule"), "foo:NoSchedule"),
            (taint("foo", "", ""), "foo"),
            (taint("foo", "bar", ""), "foo=bar:"),
            // berth: an explicit empty value is no value, as in Go.
            (
                Taint {
                    value: Some(String::new()),
                    ..taint("foo", "", "NoExecute")
                },
                "foo:NoExecute",
            ),
        ];
        for (t, want) in cases {
            assert_eq!(format_taint(&t), want);
        }
    }

    // upstream: core/v1 taint_test.go TestMatchTaint (4).
    #[test]
    fn match_taint_compares_key_and_effect_only() {
        let base = taint("foo", "bar", "NoSchedule");
        let cases = vec![
            (
                "same key,value,effect",
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "same key,effect, different value",
                taint("foo", "different-value", "NoSchedule"),
                true,
            ),
            (
                "different key",
                taint("different-key", "bar", "NoSchedule"),
                false,
            ),
            (
                "different effect",
                taint("foo", "bar", "PreferNoSchedule"),
                false,
            ),
        ];
        for (name, other, want) in cases {
            assert_eq!(match_taint(&base, &other), want, "[{name}]");
        }
    }

    // upstream: apimachinery content/kube_test.go TestIsLabelKey (17 + 10).
    #[test]
    fn qualified_name_check_matches_upstream_table() {
        let ok = [
            "simple".to_owned(),
            "now-with-dashes".into(),
            "1-starts-with-num".into(),
            "1234".into(),
            "simple/simple".into(),
            "now-with-dashes/simple".into(),
            "now-with-dashes/now-with-dashes".into(),
            "now.with.dots/simple".into(),
            "now-with.dashes-and.dots/simple".into(),
            "1-num.2-num/3-num".into(),
            "1234/5678".into(),
            "1.2.3.4/5678".into(),
            "Uppercase_Is_OK_123".into(),
            "example.com/Uppercase_Is_OK_123".into(),
            "requests.storage-foo".into(),
            "a".repeat(63),
            format!("{}/{}", "a".repeat(253), "b".repeat(63)),
        ];
        for s in &ok {
            assert_eq!(is_qualified_name(s), Vec::<String>::new(), "{s:?}");
        }
        let bad = [
            "nospecialchars%^=@".to_owned(),
            "cantendwithadash-".into(),
            "-cantstartwithadash-".into(),
            "only/one/slash".into(),
            "Example.com/abc".into(),
            "example_com/abc".into(),
            "example.com/".into(),
            "/simple".into(),
            "a".repeat(64),
            format!("{}/abc", "a".repeat(254)),
        ];
        for s in &bad {
            assert!(!is_qualified_name(s).is_empty(), "{s:?}");
        }
        assert_eq!(
            is_qualified_name(&format!("{}/abc", "a".repeat(254))),
            vec!["prefix part must be no more than 253 bytes".to_owned()]
        );
    }

    // upstream: apimachinery content/kube_test.go TestIsLabelValue (7 + 8).
    #[test]
    fn label_value_check_matches_upstream_table() {
        let ok = [
            "simple".to_owned(),
            "now-with-dashes".into(),
            "1-starts-with-num".into(),
            "end-with-num-1".into(),
            "1234".into(),
            "a".repeat(63),
            String::new(),
        ];
        for s in &ok {
            assert_eq!(is_valid_label_value(s), Vec::<String>::new(), "{s:?}");
        }
        let bad = [
            "nospecialchars%^=@".to_owned(),
            "Tama-nui-te-rā.is.Māori.sun".into(),
            "\\backslashes\\are\\bad".into(),
            "-starts-with-dash".into(),
            "ends-with-dash-".into(),
            ".starts.with.dot".into(),
            "ends.with.dot.".into(),
            "a".repeat(64),
        ];
        for s in &bad {
            assert!(!is_valid_label_value(s).is_empty(), "{s:?}");
        }
        assert_eq!(
            is_valid_label_value(&"-".repeat(64)),
            vec![
                "must be no more than 63 bytes".to_owned(),
                VALUE_REGEX.to_owned()
            ]
        );
    }

    // berth: Go's %q for the not-found message.
    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        let cases = [
            ("foo:NoSchedule", "\"foo:NoSchedule\""),
            ("a\"b\\c", "\"a\\\"b\\\\c\""),
            ("tab\there\n", "\"tab\\there\\n\""),
            ("\u{1}\u{7f}", "\"\\x01\\x7f\""),
            ("\u{85}", "\"\\u0085\""),
            ("Māori", "\"Māori\""),
        ];
        for (s, want) in cases {
            assert_eq!(go_quote(s), want);
        }
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        let label = "[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?";
        let prefix = proptest::collection::vec(label, 1..4).prop_map(|labels| labels.join("."));
        let name = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
        (proptest::option::of(prefix), name).prop_map(|(prefix, name)| match prefix {
            Some(prefix) => format!("{prefix}/{name}"),
            None => name,
        })
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
        ]
    }

    fn effect_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(EFFECT_NO_SCHEDULE.to_owned()),
            Just(EFFECT_PREFER_NO_SCHEDULE.to_owned()),
            Just(EFFECT_NO_EXECUTE.to_owned()),
        ]
    }

    /// Strings over the spec alphabet plus a few troublemakers, so the fuzz
    /// reaches past the first split more often than arbitrary Unicode does.
    fn spec_like_strategy() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9=:/._,\\- ā\\\\]{0,40}"
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(key in key_strategy(), value in value_strategy(), effect in effect_strategy()) {
            let t = taint(&key, &value, &effect);
            let spec = format_taint(&t);
            prop_assert_eq!(parse_taint(&spec), Ok(t.clone()));
            prop_assert_eq!(
                parse_taint_specs(&[spec.as_str()]),
                Ok(TaintSpec { to_add: vec![t.clone()], to_remove: vec![] })
            );
            prop_assert_eq!(parse_register_with_taints(&spec), Ok(vec![t]));
        }

        #[test]
        fn parse_then_format_gives_back_the_spec(key in key_strategy(), value in value_strategy(), effect in effect_strategy()) {
            let spec = if value.is_empty() {
                format!("{key}:{effect}")
            } else {
                format!("{key}={value}:{effect}")
            };
            let parsed = parse_taint(&spec);
            prop_assert!(parsed.is_ok(), "{:?} rejected: {:?}", spec, parsed);
            if let Ok(t) = parsed {
                prop_assert_eq!(format_taint(&t), spec.clone());
            }
            // The same spec with `-` removes by key and effect.
            let removal = format!("{spec}-");
            prop_assert_eq!(
                parse_taint_specs(&[removal.as_str()]),
                Ok(TaintSpec { to_add: vec![], to_remove: vec![taint(&key, "", &effect)] })
            );
        }

        #[test]
        fn parse_never_panics_on_arbitrary_strings(s in any::<String>()) {
            check_no_panic(&s);
        }

        #[test]
        fn parse_never_panics_on_spec_like_strings(s in spec_like_strategy(), t in spec_like_strategy()) {
            check_no_panic(&s);
            // Also drive apply_taint_spec with whatever parsed.
            let specs: Vec<&str> = s.split(' ').chain(t.split(' ')).collect();
            if let Ok(spec) = parse_taint_specs(&specs) {
                let current: Vec<Taint> = parse_register_with_taints(&t).unwrap_or_default();
                for overwrite in [false, true] {
                    let _ = apply_taint_spec(&current, &spec, overwrite).map_err(|e| e.to_string());
                }
            }
        }
    }

    /// Every entry point returns (and every error renders) without panicking;
    /// an accepted taint always has a valid key and effect.
    fn check_no_panic(s: &str) {
        if let Ok(t) = parse_taint(s) {
            assert!(is_qualified_name(&t.key).is_empty());
            assert!(validate_taint_effect(&t.effect).is_ok());
        }
        let _ = parse_taint(s).map_err(|e| e.to_string());
        let _ = parse_taint_specs(&[s]).map_err(|e| e.to_string());
        let _ = parse_register_with_taints(s).map_err(|e| e.to_string());
        let _ = split_taint_args(&[s]).map_err(|e| e.to_string());
    }
}
