//! Server-side `Table` responses (`kubectl get`): placeholder until the
//! table module lands; asks for plain lists.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;

use crate::resources::ResourceType;
use crate::status::ApiError;

#[derive(Debug, Clone, Copy)]
pub enum Include {
    None,
    Metadata,
    Object,
}

pub fn wants_table(_headers: &HeaderMap) -> Option<Include> {
    None
}

pub fn respond(_rt: &ResourceType, _items: &[Arc<str>], _rv: i64, _next: Option<&str>, _include: Include, _now: jiff::Timestamp) -> Result<Response, ApiError> {
    Err(ApiError::not_acceptable("as=Table"))
}
