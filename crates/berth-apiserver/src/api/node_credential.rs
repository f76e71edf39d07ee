//! `POST /berth/v1/node-credential`: a node agent trades the join token
//! for its node credential.

use axum::body::Body;
use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::response::json_response;
use super::server::ApiServer;
use crate::auth::User;
use crate::resources;
use crate::status::ApiError;

impl ApiServer {
    /// `POST /berth/v1/node-credential {"nodeName": "n1"}` with the join
    /// token: the bearer token of `system:node:n1`, issued once per name.
    pub(super) async fn issue_node_credential(
        &self,
        method: &Method,
        user: &User,
        body: Body,
    ) -> Result<Response, ApiError> {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(
                method.as_str(),
                "node-credential",
            ));
        }
        if !user.in_group(crate::auth::GROUP_BOOTSTRAPPERS)
            && !user.in_group(crate::auth::GROUP_MASTERS)
        {
            return Err(ApiError::forbidden_raw(format!(
                "forbidden: User {:?} cannot create node credentials",
                user.name
            )));
        }
        let limit = self.config.max_request_body_bytes;
        let body = axum::body::to_bytes(body, limit)
            .await
            .map_err(|_| ApiError::too_large(limit))?;
        let request: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
        let node = request
            .get("nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let problems = berth_core::validation::names::is_dns1123_subdomain(node);
        if !problems.is_empty() {
            let errors: Vec<berth_core::validation::FieldError> = problems
                .into_iter()
                .map(|p| {
                    berth_core::validation::FieldError::invalid(
                        &berth_core::validation::Path::new("nodeName"),
                        node,
                        p,
                    )
                })
                .collect();
            return Err(ApiError::invalid("", "NodeCredential", node, &errors));
        }
        let registered = if user.in_group(crate::auth::GROUP_BOOTSTRAPPERS) {
            self.registry
                .find(&resources::NODES, "", node)
                .await?
                .map(|(n, _)| n)
        } else {
            None
        };
        let token = self
            .auth
            .issue_node_token(node, registered.as_ref())
            .await?;
        Ok(json_response(
            201,
            &json!({"kind": "NodeCredential", "apiVersion": "berth/v1", "nodeName": node, "user": format!("system:node:{node}"), "token": token}),
        ))
    }
}
