//! `get`: one object, read from the store, as JSON or a Table.

use std::sync::Arc;

use axum::response::Response;

use super::response::json_response;
use super::scope::Scope;
use super::server::ApiServer;
use crate::status::ApiError;

impl ApiServer {
    pub(super) async fn get(&self, scope: &Scope<'_>) -> Result<Response, ApiError> {
        let (object, revision) = self
            .registry
            .read(scope.rt, scope.namespace, scope.name)
            .await?;
        if let Some(include) = scope.table()? {
            let item: Arc<str> = Arc::from(object.to_string());
            return crate::table_output::respond(
                scope.rt,
                &[item],
                revision,
                None,
                include,
                self.now(),
            );
        }
        Ok(json_response(200, &object))
    }
}
