//! The query parameters the API reads.

use std::collections::BTreeMap;

use crate::field_validation::Directive;
use crate::list_options::ListParams;
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// A request's query, decoded once.
#[derive(Debug, Default, Clone)]
pub(super) struct Query {
    params: BTreeMap<String, String>,
}

impl Query {
    pub(super) fn parse(raw: &str) -> Query {
        Query {
            params: form_urlencoded::parse(raw.as_bytes())
                .into_owned()
                .collect(),
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

    pub(super) fn dry_run(&self) -> ApiResult<bool> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid dry run value: {other}. The only accepted value is \"All\""
            ))),
        }
    }
}
