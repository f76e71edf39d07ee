//! Writes whose answer the writer does not read.
//!
//! kube-rs's `Api::create` decodes the object the server sends back. An
//! Event recorder never looks at it, and decoding it was most of a
//! recorder's cost (one Event per created and per scheduled pod), so the
//! recorders create through [`create_unread`], which checks the answer's
//! status (a `Status` error comes back as upstream's error) and drops the
//! body unparsed; a recorder counting a repeated Event patches it through
//! [`patch_unread`] the same way.

use kube::Resource;
use kube::api::{Patch, PatchParams, PostParams};
use serde::Serialize;

/// Creates `object` (in `namespace` for a namespaced type) and reads only
/// whether the server took it.
pub async fn create_unread<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    object: &K,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
    let request = kube::core::Request::new(K::url_path(&(), namespace))
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    client.request_text(request).await.map(drop)
}

/// Applies the strategic merge patch `patch` to `name` (in `namespace`
/// for a namespaced type) and reads only whether the server took it.
pub async fn patch_unread<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    name: &str,
    patch: &serde_json::Value,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()>,
{
    let request = kube::core::Request::new(K::url_path(&(), namespace))
        .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .map_err(kube::Error::BuildRequest)?;
    client.request_text(request).await.map(drop)
}
