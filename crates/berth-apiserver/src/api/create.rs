//! `create`: the object decoded and checked against the URL, its
//! namespace checked, server-owned metadata set, what it holds allocated
//! (a Service's cluster IP and node ports), the type's strategy (defaults,
//! admission, validation), then a create in the store; what was allocated
//! is given back if the create does not happen. With `dryRun=All` the
//! answer is the object as it would be (an existing one refused as the
//! create would refuse it), nothing stored and nothing kept allocated. A
//! type that is not stored (the access reviews) is answered instead. A new
//! namespace gets its `default` ServiceAccount.

use axum::body::Bytes;
use axum::response::Response;
use berth_store::StoreError;
use serde_json::{Value, json};

use super::request_body::{check_kind, parse_body, validate_fields};
use super::response::{bytes_response, json_response};
use super::scope::Scope;
use super::server::ApiServer;
use crate::admission::Operation;
use crate::auth::User;
use crate::objects::{self, format_time, name_of, prepare_for_create};
use crate::registry::store_error;
use crate::resources::{NAMESPACES, ResourceType, SERVICE_ACCOUNTS};
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
        if !rt.strategy.is_stored() {
            let answer = rt
                .strategy
                .answer(rt, decoded.value, scope.user, &self.registry)
                .await?;
            return Ok(json_response(201, &answer));
        }
        let mut object = decoded.value;
        let body_ns = objects::meta_str(&object, "namespace");
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let json = self
            .create_object(rt, ns, &mut object, scope.user, dry_run)
            .await?;
        Ok(bytes_response(201, json.into_bytes()))
    }

    /// The create of `object` in `ns` by `user`, once decoded: its
    /// namespace checked, metadata set, allocations taken, the strategy,
    /// the store; the object as stored (with its resourceVersion).
    pub(crate) async fn create_object(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        object: &mut Value,
        user: &User,
        dry_run: bool,
    ) -> Result<String, ApiError> {
        if rt.namespaced {
            self.registry.ensure_namespace(ns).await?;
        }
        let mut generated = self.prepare_new(rt, object, ns);
        let mut name = name_of(object).to_string();
        let ctx = self.strategy_context(user, rt, Operation::Create).await?;
        let now = format_time(self.now());
        let taken = rt
            .strategy
            .allocate(rt, object, None, &self.allocators, &now)
            .await?;
        let metadata_errors = strategy::validate_metadata(rt, object);
        let written = match rt.strategy.create(rt, object, &ctx, metadata_errors) {
            Err(e) => Err(e),
            // Upstream's dry-run storage answers a create of an existing
            // key as the real one would.
            Ok(()) if dry_run => match self.registry.read(rt, ns, &name).await {
                Ok(_) => Err(ApiError::already_exists(rt.group, rt.plural, &name)),
                Err(_) => Ok(object.to_string()),
            },
            Ok(()) => loop {
                let key = rt.key(ns, &name);
                match self.registry.write(rt, &key, object, None).await {
                    Ok((_, json)) => break Ok(json.to_string()),
                    // Upstream's RetryGenerateName (GA in 1.32): a name the
                    // server made up that is taken is made up again, up to
                    // `maxNameGenerationCreateAttempts` in all.
                    Err(StoreError::AlreadyExists { .. })
                        if let Some(g) = generated.as_mut()
                            && g.attempts < MAX_NAME_GENERATION_ATTEMPTS =>
                    {
                        g.attempts += 1;
                        name = self.set_generated_name(object, &g.base);
                    }
                    Err(e) => break Err(store_error(rt, &name, e)),
                }
            },
        };
        if written.is_err() || dry_run {
            self.allocators.release(&taken, &now).await;
        }
        let json = written?;
        if std::ptr::eq(rt, &NAMESPACES) && !dry_run {
            self.ensure_default_service_account(&name).await;
        }
        Ok(json)
    }

    /// What upstream's serviceaccounts controller does for a new
    /// namespace, done at once: its `default` ServiceAccount.
    pub(crate) async fn ensure_default_service_account(&self, ns: &str) {
        let rt = &SERVICE_ACCOUNTS;
        let mut account = json!({"metadata": {"name": "default"}});
        // Boxed: a namespace's create ends here, and this is a create.
        let created = Box::pin(self.create_object(
            rt,
            ns,
            &mut account,
            &User::kube_controller_manager(),
            false,
        ))
        .await;
        match created {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(namespace = ns, error = %e, "default ServiceAccount not created")
            }
        }
    }

    /// The metadata the server owns on a new object: a generated name when
    /// one was asked for (returned, so a taken one can be made up again),
    /// uid, creation time, namespace.
    pub(super) fn prepare_new(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ns: &str,
    ) -> Option<GeneratedName> {
        let mut generated = None;
        if name_of(object).is_empty() {
            let generate = objects::meta_str(object, "generateName").to_string();
            if !generate.is_empty() {
                self.set_generated_name(object, &generate);
                generated = Some(GeneratedName {
                    base: generate,
                    attempts: 1,
                });
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
        generated
    }
}

/// Upstream's `maxNameGenerationCreateAttempts`.
const MAX_NAME_GENERATION_ATTEMPTS: u32 = 8;

/// A name made from `generateName`, and how many were tried.
pub(super) struct GeneratedName {
    base: String,
    attempts: u32,
}

impl ApiServer {
    /// Names `object` from `base` (its `generateName`) and a fresh suffix;
    /// the name given.
    fn set_generated_name(&self, object: &mut Value, base: &str) -> String {
        let name = objects::generate_name(base, || self.random_u32());
        if let Some(meta) = objects::metadata_mut(object) {
            meta.insert("name".into(), Value::String(name.clone()));
        }
        name
    }

    /// A generated name's randomness: seeded when the config says so.
    fn random_u32(&self) -> u32 {
        if let Some(names) = &self.seeded_names {
            let mut rng = names
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            return (rng.next_u64() >> 32) as u32;
        }
        os_random_u32()
    }
}

fn os_random_u32() -> u32 {
    let mut buf = [0u8; 4];
    // The OS random source failing is not worth failing a request over: a
    // generated name then only risks a collision, which create reports.
    let _ = getrandom::fill(&mut buf);
    u32::from_le_bytes(buf)
}
