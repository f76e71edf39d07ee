//! `list`: from the watch cache after it caught up with the store (a
//! consistent read), or at a `resourceVersion`; paginated lists and lists
//! at exactly one revision from the store. [`Filter`]: the namespace and
//! the selectors, for lists, watches and deletecollection.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::response::Response;
use berth_store::{ListOptions, Store, StoreError};

use super::query::Query;
use super::response::list_response;
use super::scope::Scope;
use super::server::ApiServer;
use crate::cache::Cached;
use crate::list_options::Match;
use crate::objects;
use crate::registry::{decode, store_error};
use crate::resources::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::strategy;
use crate::table_output::Include;

type ApiResult<T> = Result<T, ApiError>;

impl ApiServer {
    pub(super) async fn list(&self, scope: &Scope<'_>) -> ApiResult<Response> {
        let (rt, ns, query) = (scope.rt, scope.namespace, &scope.query);
        let params = query.list_params(false);
        let matching = params.validate()?;
        let filter = Filter::new(rt, ns, query)?;
        let limit = query.int("limit")?.unwrap_or(0).max(0) as usize;
        let table = scope.table()?;
        // Paginated lists and lists at exactly one revision read the store.
        if limit > 0 || params.continue_token.is_some() || matching == Match::Exact {
            let prefix = rt.prefix(Some(ns));
            let (continue_from, revision) = params.paginated_start(matching, limit, &prefix)?;
            let options = ListOptions {
                limit,
                continue_from,
                revision,
            };
            return self.list_paged(rt, &prefix, &filter, options, table).await;
        }
        let cache = match params.resource_version {
            // "0": any cached state will do.
            Some("0") => self.registry.cache(rt)?,
            Some(rv) => {
                let cache = self.registry.cache(rt)?;
                let rv = crate::list_options::parse_resource_version(rv)?;
                cache.wait_for(rv).await?;
                cache
            }
            None => self.registry.wait_current(rt).await?,
        };
        let (items, rv) = cache.list(ns, |c| filter.matches(c)).await;
        let jsons: Vec<Arc<str>> = items.iter().map(|c| c.json.clone()).collect();
        if let Some(include) = table {
            return crate::table_output::respond(rt, &jsons, rv, None, include, self.now());
        }
        Ok(list_response(rt, &jsons, rv, None))
    }

    async fn list_paged(
        &self,
        rt: &ResourceType,
        prefix: &str,
        filter: &Filter,
        options: ListOptions,
        table: Option<Include>,
    ) -> ApiResult<Response> {
        let continues = options.continue_from.is_some();
        let page = self
            .store
            .list(prefix, options)
            .await
            .map_err(|e| match e {
                StoreError::Gone { .. } if continues => ApiError::continue_expired(),
                e => store_error(rt, "", e),
            })?;
        let mut jsons = Vec::new();
        for kv in &page.items {
            let (object, _) = decode(rt, "", kv)?;
            let cached_fields = strategy::selectable_fields(rt, &object);
            if filter.matches_parts(
                objects::meta_str(&object, "namespace"),
                &crate::selectors::object_labels(&object),
                &cached_fields,
            ) {
                jsons.push(Arc::<str>::from(object.to_string()));
            }
        }
        let token = page
            .next
            .as_ref()
            .map(|next| crate::list_options::encode_continue(next, prefix));
        if let Some(include) = table {
            return crate::table_output::respond(
                rt,
                &jsons,
                page.revision,
                token.as_deref(),
                include,
                self.now(),
            );
        }
        Ok(list_response(rt, &jsons, page.revision, token.as_deref()))
    }
}

/// Which objects a list or watch returns: the namespace and the selectors.
pub struct Filter {
    pub(super) namespace: String,
    pub(super) labels: Option<LabelSelector>,
    pub(super) fields: Option<FieldSelector>,
}

impl Filter {
    pub(super) fn new(rt: &ResourceType, ns: &str, query: &Query) -> ApiResult<Filter> {
        let labels = match query.get("labelSelector") {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match query.get("fieldSelector") {
            Some(s) => Some(strategy::field_selector(rt, s)?),
            None => None,
        };
        Ok(Filter {
            namespace: ns.to_string(),
            labels,
            fields,
        })
    }

    pub(super) fn matches(&self, object: &Cached) -> bool {
        self.matches_parts(&object.namespace, &object.labels, &object.fields)
    }

    fn matches_parts(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        fields: &BTreeMap<String, String>,
    ) -> bool {
        (self.namespace.is_empty() || self.namespace == namespace)
            && self.labels.as_ref().is_none_or(|s| s.matches(labels))
            && self.fields.as_ref().is_none_or(|s| s.matches(fields))
    }
}
