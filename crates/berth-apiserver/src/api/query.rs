//! The query parameters the API reads.

use std::collections::BTreeMap;

use crate::field_validation::Directive;
use crate::list_options::ListParams;
use berth_core::validation::field::go_quote;
use berth_core::validation::{ErrorType, FieldError};

use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// A request's query, decoded once.
#[derive(Debug, Default, Clone)]
pub(super) struct Query {
    params: BTreeMap<String, String>,
    /// Every `dryRun` value, in order (a list in upstream's options).
    dry_run: Vec<String>,
}

impl Query {
    pub(super) fn parse(raw: &str) -> Query {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.as_bytes())
            .into_owned()
            .collect();
        let dry_run = pairs
            .iter()
            .filter(|(name, _)| name == "dryRun")
            .map(|(_, value)| value.clone())
            .collect();
        Query {
            params: pairs.into_iter().collect(),
            dry_run,
        }
    }

    /// The parameter's value; an empty one counts as absent.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// A boolean parameter, spelled as Go's `strconv.ParseBool` accepts `true`.
    pub(super) fn flag(&self, name: &str) -> bool {
        matches!(
            self.get(name),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }

    pub(super) fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!("invalid value {v:?} for query parameter {name}"))
            }),
        }
    }

    /// The parameters that choose what a list or watch reads.
    pub(super) fn list_params(&self, watch: bool) -> ListParams<'_> {
        ListParams {
            watch,
            resource_version: self.get("resourceVersion"),
            resource_version_match: self.get("resourceVersionMatch"),
            continue_token: self.get("continue"),
            send_initial_events: self.get("sendInitialEvents"),
        }
    }

    /// `fieldValidation` (see [`Directive`]).
    pub(super) fn field_validation(&self) -> ApiResult<Directive> {
        Directive::parse(self.get("fieldValidation"))
    }

    /// `dryRun` as the verb's options (`CreateOptions`, `UpdateOptions`,
    /// `PatchOptions`, `DeleteOptions`) carry it: true for `All`, false when
    /// absent, anything else refused as upstream's `ValidateDryRun` does.
    pub(super) fn dry_run(&self, options_kind: &str) -> ApiResult<bool> {
        dry_run_of(options_kind, &self.dry_run)
    }

    /// The `dryRun` values as sent.
    pub(super) fn dry_run_values(&self) -> &[String] {
        &self.dry_run
    }
}

/// Upstream's `ValidateDryRun` of an options object's `dryRun` list: empty
/// is a real write, `All` (any number of times) a dry run, and any other
/// value the 422 kube-apiserver answers (`CreateOptions.meta.k8s.io ""
/// is invalid: dryRun: Unsupported value: []string{"foo"}: supported
/// values: "All"`).
pub(super) fn dry_run_of(options_kind: &str, values: &[String]) -> ApiResult<bool> {
    if values.iter().all(|v| v == "All") {
        return Ok(!values.is_empty());
    }
    let listed: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    let error = FieldError {
        error_type: ErrorType::NotSupported,
        field: "dryRun".into(),
        // Go's `%#v` of the list, which berth's JSON rendering of a list
        // value would not reproduce.
        bad_value: None,
        detail: format!(
            "[]string{{{}}}: supported values: {}",
            listed.join(", "),
            go_quote("All")
        ),
    };
    let mut err = ApiError::invalid("meta.k8s.io", options_kind, "", &vec![error]);
    err.message = format!(
        "{options_kind}.meta.k8s.io \"\" is invalid: {}",
        err.message
            .split_once(" is invalid: ")
            .map_or("", |(_, why)| why)
    );
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_is_all_or_absent_as_upstream_validates_it() {
        struct Case {
            query: &'static str,
            want: Result<bool, &'static str>,
        }
        let cases = [
            Case {
                query: "",
                want: Ok(false),
            },
            Case {
                query: "dryRun=All",
                want: Ok(true),
            },
            Case {
                query: "dryRun=All&dryRun=All",
                want: Ok(true),
            },
            Case {
                query: "dryRun=foo",
                want: Err(
                    r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"foo"}: supported values: "All""#,
                ),
            },
            Case {
                query: "dryRun=All&dryRun=server",
                want: Err(
                    r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"All", "server"}: supported values: "All""#,
                ),
            },
            Case {
                query: "dryRun=",
                want: Err(
                    r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{""}: supported values: "All""#,
                ),
            },
        ];
        for case in cases {
            let got = Query::parse(case.query).dry_run("CreateOptions");
            match (got, case.want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", case.query),
                (Err(err), Err(want)) => {
                    assert_eq!(err.code, 422, "{}", case.query);
                    assert_eq!(err.message, want, "{}", case.query);
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.query),
            }
        }
    }
}
