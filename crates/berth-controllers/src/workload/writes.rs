//! What a workload controller writes, behind one trait: upstream's
//! `PodControlInterface`, `ControllerRevisionControlInterface` and event
//! recorder, so a sync runs the same against the API server
//! ([`KubeWrites`]) and against a recording fake in tests (upstream's
//! `FakePodControl`), where the decisions are checked call by call.

use std::fmt::Debug;
use std::future::Future;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::events::EventRecorder;

/// A namespaced API object a workload controller writes.
pub trait Object:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// The writes (and the few fresh reads) of a workload controller.
pub trait Writes: Send + Sync + 'static {
    /// Creates `object` in its namespace; the created object (its name
    /// filled in from `generateName`).
    fn create<K: Object>(&self, object: &K) -> impl Future<Output = Result<K, kube::Error>> + Send;
    /// Replaces `object` (an update with its resourceVersion).
    fn replace<K: Object>(
        &self,
        object: &K,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
    /// Replaces `object`'s status.
    fn replace_status<K: Object>(
        &self,
        object: &K,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
    /// A strategic merge patch; the object as patched, when the writer
    /// has it (the API server's answer).
    fn patch<K: Object>(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> impl Future<Output = Result<Option<K>, kube::Error>> + Send;
    /// Deletes the object, gracefully as its type says.
    fn delete<K: Object>(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
    /// A quorum read (upstream's uncached `Get`).
    fn get<K: Object>(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<K, kube::Error>> + Send;
    /// Records an Event about `object`.
    fn event(&self, object: ObjectReference, type_: &str, reason: &str, message: String);
}

/// [`Writes`] through the API.
#[derive(Clone)]
pub struct KubeWrites {
    client: kube::Client,
    recorder: EventRecorder,
}

impl std::fmt::Debug for KubeWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeWrites").finish_non_exhaustive()
    }
}

impl KubeWrites {
    pub fn new(client: kube::Client, recorder: EventRecorder) -> KubeWrites {
        KubeWrites { client, recorder }
    }

    /// The client the writes go through (the controller watches with it).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    fn api<K: Object>(&self, namespace: &str) -> Api<K> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

fn namespace_of<K: Object>(object: &K) -> String {
    object.meta().namespace.clone().unwrap_or_default()
}

fn name_of<K: Object>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

impl Writes for KubeWrites {
    async fn create<K: Object>(&self, object: &K) -> Result<K, kube::Error> {
        self.api(&namespace_of(object))
            .create(&PostParams::default(), object)
            .await
    }

    async fn replace<K: Object>(&self, object: &K) -> Result<(), kube::Error> {
        self.api::<K>(&namespace_of(object))
            .replace(&name_of(object), &PostParams::default(), object)
            .await
            .map(drop)
    }

    async fn replace_status<K: Object>(&self, object: &K) -> Result<(), kube::Error> {
        self.api::<K>(&namespace_of(object))
            .replace_status(&name_of(object), &PostParams::default(), object)
            .await
            .map(drop)
    }

    async fn patch<K: Object>(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Result<Option<K>, kube::Error> {
        self.api::<K>(namespace)
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map(Some)
    }

    async fn delete<K: Object>(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        self.api::<K>(namespace)
            .delete(name, &DeleteParams::default())
            .await
            .map(drop)
    }

    async fn get<K: Object>(&self, namespace: &str, name: &str) -> Result<K, kube::Error> {
        self.api(namespace).get(name).await
    }

    fn event(&self, object: ObjectReference, type_: &str, reason: &str, message: String) {
        self.recorder.record(object, type_, reason, message);
    }
}

/// Deletes the named objects of `K` (ControllerRevisions a history
/// cleanup names); one already gone is fine.
pub async fn delete_all<K: Object, W: Writes>(
    writes: &W,
    namespace: &str,
    names: impl IntoIterator<Item = String>,
) -> Result<(), kube::Error> {
    for name in names {
        match writes.delete::<K>(namespace, &name).await {
            Ok(()) => {}
            Err(err) if is_not_found(&err) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// A reference to a namespaced object, for its Events.
pub fn object_ref<K: Object>(object: &K) -> ObjectReference {
    crate::events::object_ref(&K::api_version(&()), &K::kind(&()), object.meta())
}

/// An API error with `code` and `reason`, as the server sends them.
pub fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, reason)
            .with_code(code)
            .boxed(),
    )
}

/// Whether the error is the API's 404.
pub fn is_not_found(err: &kube::Error) -> bool {
    crate::sync_error::is_status(err, 404)
}

/// Whether the error is the API's 409 AlreadyExists.
pub fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.is_already_exists())
}

/// Whether the error is a 409 Conflict (a stale resourceVersion).
pub fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.is_conflict())
}

#[cfg(test)]
pub mod fake {
    //! The recording fake: every call is kept, objects created or given
    //! are kept for `get`, and calls can be made to fail.

    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use berth_client::ObjectKey;

    use super::*;

    /// One call, as the fake saw it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Call {
        /// Whether it succeeded.
        pub ok: bool,
        pub verb: &'static str,
        pub kind: String,
        pub namespace: String,
        pub name: String,
        pub body: Value,
    }

    /// One Event.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RecordedEvent {
        pub type_: String,
        pub reason: String,
        pub message: String,
    }

    /// A failure rule: calls of `verb` on `kind` fail with `code` after
    /// `after` of them succeeded.
    #[derive(Debug, Clone)]
    struct Failure {
        verb: &'static str,
        kind: String,
        after: usize,
        code: u16,
        reason: &'static str,
    }

    #[derive(Debug, Default)]
    pub struct FakeWrites {
        pub calls: Mutex<Vec<Call>>,
        pub events: Mutex<Vec<RecordedEvent>>,
        objects: Mutex<BTreeMap<(String, ObjectKey), Value>>,
        failures: Mutex<Vec<Failure>>,
        next: Mutex<u64>,
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    impl FakeWrites {
        /// An object `get` finds.
        pub fn put<K: Object>(&self, object: &K) {
            let key = (K::kind(&()).into_owned(), ObjectKey::of_meta(object.meta()));
            let value = serde_json::to_value(object).unwrap_or(Value::Null);
            lock(&self.objects).insert(key, value);
        }

        /// Calls of `verb` on `kind` fail with `code` once `after` have
        /// succeeded.
        pub fn fail(&self, verb: &'static str, kind: &str, after: usize, code: u16) {
            let reason = match code {
                404 => "NotFound",
                409 => "AlreadyExists",
                _ => "InternalError",
            };
            lock(&self.failures).push(Failure {
                verb,
                kind: kind.into(),
                after,
                code,
                reason,
            });
        }

        pub fn calls(&self) -> Vec<Call> {
            lock(&self.calls).clone()
        }

        /// The names of `kind` objects `verb` was called on, in order.
        pub fn names(&self, verb: &str, kind: &str) -> Vec<String> {
            self.calls()
                .into_iter()
                .filter(|c| c.verb == verb && c.kind == kind)
                .map(|c| c.name)
                .collect()
        }

        /// How many calls of `verb` on `kind` there were.
        pub fn count(&self, verb: &str, kind: &str) -> usize {
            self.names(verb, kind).len()
        }

        pub fn events(&self) -> Vec<RecordedEvent> {
            lock(&self.events).clone()
        }

        pub fn reasons(&self) -> Vec<String> {
            self.events().into_iter().map(|e| e.reason).collect()
        }

        pub fn clear(&self) {
            lock(&self.calls).clear();
            lock(&self.events).clear();
        }

        /// The successful writes of `K` from call number `from` on, as a
        /// watch delivers them: creates and updates as upserts of what was
        /// written, deletes as deletions.
        pub fn changes_since<K: Object>(&self, from: usize) -> Vec<berth_client::Change<K>> {
            let kind = K::kind(&());
            self.calls()
                .into_iter()
                .skip(from)
                .filter(|c| c.ok && c.kind == kind)
                .filter_map(|c| match c.verb {
                    "create" | "update" | "update-status" => serde_json::from_value(c.body)
                        .ok()
                        .map(berth_client::Change::Upsert),
                    "delete" => Some(berth_client::Change::Delete(berth_client::Gone {
                        key: ObjectKey::new(c.namespace, c.name),
                        uid: None,
                        last: None,
                    })),
                    _ => None,
                })
                .collect()
        }

        /// Records the call; its failure if a rule says so.
        fn call<K: Object>(
            &self,
            verb: &'static str,
            namespace: &str,
            name: &str,
            body: Value,
        ) -> Result<(), kube::Error> {
            let kind = K::kind(&()).into_owned();
            let before = lock(&self.calls)
                .iter()
                .filter(|c| c.verb == verb && c.kind == kind)
                .count();
            let failures = lock(&self.failures);
            let failure = failures
                .iter()
                .find(|f| f.verb == verb && f.kind == kind && before >= f.after)
                .cloned();
            drop(failures);
            lock(&self.calls).push(Call {
                ok: failure.is_none(),
                verb,
                kind: kind.clone(),
                namespace: namespace.into(),
                name: name.into(),
                body,
            });
            match failure {
                Some(f) => Err(api_error(f.code, f.reason, "injected failure")),
                None => Ok(()),
            }
        }
    }

    impl Writes for FakeWrites {
        async fn create<K: Object>(&self, object: &K) -> Result<K, kube::Error> {
            let mut created = object.clone();
            let meta = created.meta_mut();
            if meta.name.as_deref().unwrap_or("").is_empty() {
                let n = {
                    let mut next = lock(&self.next);
                    *next += 1;
                    *next
                };
                meta.name = Some(format!(
                    "{}{n}",
                    meta.generate_name.as_deref().unwrap_or("")
                ));
            }
            meta.uid
                .get_or_insert_with(|| format!("uid-{}", meta.name.as_deref().unwrap_or("")));
            let body = serde_json::to_value(&created).unwrap_or(Value::Null);
            self.call::<K>(
                "create",
                &namespace_of(&created),
                &name_of(&created),
                body.clone(),
            )?;
            self.put(&created);
            Ok(created)
        }

        async fn replace<K: Object>(&self, object: &K) -> Result<(), kube::Error> {
            let body = serde_json::to_value(object).unwrap_or(Value::Null);
            self.call::<K>("update", &namespace_of(object), &name_of(object), body)?;
            self.put(object);
            Ok(())
        }

        async fn replace_status<K: Object>(&self, object: &K) -> Result<(), kube::Error> {
            let body = serde_json::to_value(object).unwrap_or(Value::Null);
            self.call::<K>(
                "update-status",
                &namespace_of(object),
                &name_of(object),
                body,
            )?;
            self.put(object);
            Ok(())
        }

        async fn patch<K: Object>(
            &self,
            namespace: &str,
            name: &str,
            patch: Value,
        ) -> Result<Option<K>, kube::Error> {
            self.call::<K>("patch", namespace, name, patch)
                .map(|()| None)
        }

        async fn delete<K: Object>(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
            self.call::<K>("delete", namespace, name, Value::Null)?;
            let key = (K::kind(&()).into_owned(), ObjectKey::new(namespace, name));
            lock(&self.objects).remove(&key);
            Ok(())
        }

        async fn get<K: Object>(&self, namespace: &str, name: &str) -> Result<K, kube::Error> {
            self.call::<K>("get", namespace, name, Value::Null)?;
            let key = (K::kind(&()).into_owned(), ObjectKey::new(namespace, name));
            let value = lock(&self.objects).get(&key).cloned();
            value
                .and_then(|v| serde_json::from_value(v).ok())
                .ok_or_else(|| api_error(404, "NotFound", "not found"))
        }

        fn event(&self, _object: ObjectReference, type_: &str, reason: &str, message: String) {
            lock(&self.events).push(RecordedEvent {
                type_: type_.into(),
                reason: reason.into(),
                message,
            });
        }
    }
}
