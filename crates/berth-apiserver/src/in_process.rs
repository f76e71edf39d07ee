//! A `kube::Client` whose requests go straight into the API server's
//! router, with no TCP and no TLS: how `berth server` runs its own
//! scheduler, controllers and simulated nodes. They stay ordinary
//! Kubernetes clients, so each also works against a remote API server
//! with a normal HTTPS client.
//!
//! The client acts as `user` (for example the admin, or `system:node:<n>`
//! for a simulated node): the server registers a fresh random token for it
//! and the transport adds it to every request, so authentication and
//! authorization run exactly as for remote clients.

use std::sync::Arc;

use axum::http::{HeaderValue, Request, header};

use crate::api::ApiServer;
use crate::auth::User;
use crate::server::router;

/// A client of `api` acting as `user`, with `default_namespace` for
/// namespaced calls that do not name one.
pub fn client(
    api: &Arc<ApiServer>,
    user: User,
    default_namespace: &str,
) -> Result<kube::Client, getrandom::Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    api.auth.add_token(token.clone(), user);
    let bearer =
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap_or(HeaderValue::from_static(""));
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut request: Request<kube::client::Body>| {
            request
                .headers_mut()
                .insert(header::AUTHORIZATION, bearer.clone());
            request
        })
        .service(router(api.clone()));
    Ok(kube::Client::new(service, default_namespace))
}
