//! `create`: the object decoded and checked against the URL, its
//! namespace checked, server-owned metadata set, the type's strategy
//! (defaults, admission, validation), then a create in the store (with
//! `dryRun=All`: the object as it would be, an existing one refused as the
//! create would refuse it, nothing stored).

use axum::body::Bytes;
use axum::response::Response;
use serde_json::Value;

use super::request_body::{check_kind, parse_body, validate_fields};
use super::response::{bytes_response, json_response};
use super::scope::Scope;
use super::server::ApiServer;
use crate::admission::Operation;
use crate::objects::{self, name_of, prepare_for_create};
use crate::registry::store_error;
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::strategy;

impl ApiServer {
    pub(super) async fn create(
        &self,
        scope: &Scope<'_>,
        body: &Bytes,
    ) -> Result<Response, ApiError> {
        let rt = scope.rt;
        let ns = scope.namespace;
        let dry_run = scope.query.dry_run("CreateOptions")?;
        let decoded = parse_body(scope.headers, body, self.config.body).await?;
        check_kind(&decoded.value, rt)?;
        validate_fields(scope.query.field_validation()?, rt, &decoded)?;
        let mut object = decoded.value;
        let body_ns = objects::meta_str(&object, "namespace");
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if rt.namespaced {
            self.registry.ensure_namespace(ns).await?;
        }
        self.prepare_new(rt, &mut object, ns);
        let name = name_of(&object).to_string();
        let ctx = self
            .strategy_context(scope.user, rt, Operation::Create)
            .await?;
        let metadata_errors = strategy::validate_metadata(rt, &object);
        rt.strategy.create(rt, &mut object, &ctx, metadata_errors)?;
        let key = rt.key(ns, &name);
        if dry_run {
            // Upstream's dry-run storage answers a create of an existing
            // key as the real one would.
            if self.registry.read(rt, ns, &name).await.is_ok() {
                return Err(ApiError::already_exists(rt.group, rt.plural, &name));
            }
            return Ok(json_response(201, &object));
        }
        let (_, json) = self
            .registry
            .write(rt, &key, &object, None)
            .await
            .map_err(|e| store_error(rt, &name, e))?;
        Ok(bytes_response(201, json.as_bytes().to_vec()))
    }

    /// The metadata the server owns on a new object: a generated name when
    /// one was asked for, uid, creation time, namespace.
    pub(super) fn prepare_new(&self, rt: &ResourceType, object: &mut Value, ns: &str) {
        if name_of(object).is_empty() {
            let generate = objects::meta_str(object, "generateName").to_string();
            if !generate.is_empty() {
                let name = objects::generate_name(&generate, random_u32);
                if let Some(meta) = objects::metadata_mut(object) {
                    meta.insert("name".into(), Value::String(name));
                }
            }
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let namespace = rt.namespaced.then_some(ns);
        prepare_for_create(
            object,
            (rt.kind, rt.api_version()),
            namespace,
            uid,
            self.now(),
        );
    }
}

fn random_u32() -> u32 {
    let mut buf = [0u8; 4];
    // The OS random source failing is not worth failing a request over: a
    // generated name then only risks a collision, which create reports.
    let _ = getrandom::fill(&mut buf);
    u32::from_le_bytes(buf)
}
