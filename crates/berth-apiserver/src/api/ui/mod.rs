//! The live cluster page at `/ui/`: its static files (embedded in the
//! binary, served without authentication: they hold no data), and the
//! small answers computed for it under `/ui/api/`: the upcoming evictions
//! it counts down to (`evictions`), every pod as a short row (`pods`), the
//! zones' disruption states and rates (`zones`), and the exchange of a
//! printed login link for a session (`login`).
//!
//! The rest of the page's data is the ordinary API (lists and watches of
//! nodes, a watch of pods) with the admin's token.

mod evictions;
mod login;
mod pods;
mod zones;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;

use super::server::ApiServer;
use crate::auth::User;
use crate::status::ApiError;

const INDEX: &str = include_str!("../../../ui/index.html");
const APP_JS: &str = include_str!("../../../ui/app.js");
const APP_CSS: &str = include_str!("../../../ui/app.css");

/// Where the page's computed answers live.
pub const API_PREFIX: &str = "/ui/api/";
pub const EVICTIONS_PATH: &str = "/ui/api/evictions";
pub const PODS_PATH: &str = "/ui/api/pods";
pub const ZONES_PATH: &str = "/ui/api/zones";
pub const LOGIN_PATH: &str = "/ui/api/login";

/// A static file of the page, or `None` when `path` is not one.
pub fn asset(path: &str) -> Option<Response> {
    let (body, content_type) = match path {
        "/ui" | "/ui/" | "/ui/index.html" => (INDEX, "text/html; charset=utf-8"),
        "/ui/app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "/ui/app.css" => (APP_CSS, "text/css; charset=utf-8"),
        _ => return None,
    };
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(response)
}

/// The page's answers are for cluster admins only, as `/metrics` is.
fn admins_only(user: &User, path: &str) -> Result<(), ApiError> {
    if user.in_group(crate::auth::GROUP_MASTERS) {
        return Ok(());
    }
    Err(ApiError::forbidden_raw(format!(
        "forbidden: User {:?} cannot get path \"{path}\"",
        user.name
    )))
}

impl ApiServer {
    /// An authenticated `/ui/api/` request.
    pub(in crate::api) async fn ui_api(
        &self,
        path: &str,
        user: &User,
    ) -> Result<Response, ApiError> {
        match path {
            EVICTIONS_PATH => self.ui_evictions(user).await,
            PODS_PATH => self.ui_pods(user).await,
            ZONES_PATH => self.ui_zones(user).await,
            _ => Err(ApiError::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource ({path})"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_files_are_served_and_nothing_else() {
        for (path, content_type) in [
            ("/ui/", "text/html; charset=utf-8"),
            ("/ui", "text/html; charset=utf-8"),
            ("/ui/app.js", "text/javascript; charset=utf-8"),
            ("/ui/app.css", "text/css; charset=utf-8"),
        ] {
            let response = asset(path).unwrap_or_else(|| panic!("{path} not served"));
            assert_eq!(
                response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .map(|v| v.as_bytes()),
                Some(content_type.as_bytes()),
                "{path}"
            );
        }
        for path in ["/ui/api/evictions", "/ui/../etc/passwd", "/ui/other.js"] {
            assert!(asset(path).is_none(), "{path}");
        }
    }
}
