//! `POST /ui/api/login` (`{"code": "..."}`): a printed login link's
//! one-time code exchanged for a session token of the admin (see
//! [`crate::ui_login`]). No authentication: the code is the credential.

use axum::body::Body;
use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::super::response::json_response;
use super::super::server::ApiServer;
use crate::auth::User;
use crate::status::ApiError;

/// Longest body read: a code is 48 characters.
const MAX_BODY: usize = 4096;

impl ApiServer {
    /// A login link for the page, good once within
    /// [`crate::ui_login::LOGIN_CODE_TTL`]: `URL/ui/#login=CODE`.
    pub fn ui_login_link(&self, url: &str) -> Result<String, getrandom::Error> {
        Ok(format!("{url}/ui/#login={}", self.ui_logins.issue()?))
    }

    pub(in crate::api) async fn ui_login(
        &self,
        method: &Method,
        body: Body,
    ) -> Result<Response, ApiError> {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(
                method.as_str(),
                "ui/api/login",
            ));
        }
        let body = axum::body::to_bytes(body, MAX_BODY)
            .await
            .map_err(|_| ApiError::too_large(MAX_BODY))?;
        let request: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
        let Some(code) = request.get("code").and_then(Value::as_str) else {
            return Err(ApiError::bad_request(
                "the body must be {\"code\": \"...\"}",
            ));
        };
        if let Err(refused) = self.ui_logins.redeem(code) {
            tracing::info!(reason = ?refused, "live page login code refused");
            return Err(ApiError::new(401, "Unauthorized", refused.message()));
        }
        let token = crate::ui_login::random_hex().map_err(ApiError::internal)?;
        self.auth.add_token(token.clone(), User::admin());
        tracing::info!("live page login code exchanged for a session");
        Ok(json_response(200, &json!({"token": token})))
    }
}
