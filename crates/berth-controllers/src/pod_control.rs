//! Creating and deleting a controller's pods, with the Events upstream's
//! `RealPodControl` records on the controller: `SuccessfulCreate`
//! ("Created pod: NAME"), `FailedCreate` ("Error creating: ..."),
//! `SuccessfulDelete` ("Deleted pod: NAME"), `FailedDelete` ("Error
//! deleting: ..."). The pod itself is berth-core's
//! [`pod_from_template`].

use k8s_openapi::api::core::v1::{ObjectReference, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, PostParams};
use kube::core::Request;
use serde::Deserialize;

use berth_core::workloads::pod_control::pod_from_template;

use crate::events::{EventRecorder, TYPE_NORMAL, TYPE_WARNING, error_message};
use crate::sync_error::is_status;

pub const REASON_SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";

/// Why a pod was not created; displayed as upstream's error (an API
/// error as its `Status` message), which the `ReplicaFailure` condition
/// quotes.
#[derive(Debug)]
pub enum CreateError {
    NoLabels,
    Api(kube::Error),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::NoLabels => f.write_str("unable to create pods, no labels"),
            CreateError::Api(err) => f.write_str(&error_message(err)),
        }
    }
}

impl std::error::Error for CreateError {}

impl From<kube::Error> for CreateError {
    fn from(err: kube::Error) -> Self {
        CreateError::Api(err)
    }
}

impl CreateError {
    /// See [`namespace_terminating`].
    pub fn namespace_terminating(&self) -> bool {
        matches!(self, CreateError::Api(err) if namespace_terminating(err))
    }
}

/// upstream's `HasStatusCause(err, NamespaceTerminatingCause)`: every
/// create in the namespace would fail; nothing to retry.
pub fn namespace_terminating(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status)
        if status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// What is read back of a created pod: its name (generated).
#[derive(Deserialize)]
struct Created {
    metadata: ObjectMeta,
}

/// A controller's pod writes and their Events.
#[derive(Clone)]
pub struct PodControl {
    client: kube::Client,
    recorder: EventRecorder,
}

impl PodControl {
    pub fn new(client: kube::Client, recorder: EventRecorder) -> PodControl {
        PodControl { client, recorder }
    }

    /// `CreatePods`: one pod from `template` in `namespace`, named after
    /// `controller_name`, owned through `controller_ref`; the Event goes to
    /// `controller`. Returns the created pod's name.
    pub async fn create(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        controller: &ObjectReference,
        controller_ref: OwnerReference,
    ) -> Result<String, CreateError> {
        let controller_name = controller.name.as_deref().unwrap_or_default();
        let mut pod = pod_from_template(template, controller_name, Some(controller_ref));
        if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            return Err(CreateError::NoLabels);
        }
        pod.metadata.namespace = Some(namespace.into());
        let request = Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
            .create(
                &PostParams::default(),
                serde_json::to_vec(&pod).unwrap_or_default(),
            )
            .map_err(kube::Error::BuildRequest)?;
        match self.client.request::<Created>(request).await {
            Ok(created) => {
                let name = created.metadata.name.unwrap_or_default();
                tracing::debug!(controller = %controller_name, pod = %name, namespace, "created pod");
                self.recorder.record(
                    controller.clone(),
                    TYPE_NORMAL,
                    REASON_SUCCESSFUL_CREATE,
                    format!("Created pod: {name}"),
                );
                Ok(name)
            }
            Err(err) => {
                let err = CreateError::Api(err);
                // A terminating namespace fails every create; upstream
                // records nothing for it.
                if !err.namespace_terminating() {
                    self.recorder.record(
                        controller.clone(),
                        TYPE_WARNING,
                        REASON_FAILED_CREATE,
                        format!("Error creating: {err}"),
                    );
                }
                Err(err)
            }
        }
    }

    /// `DeletePod`: the pod `namespace/name` deleted (gracefully, as its
    /// spec says). A pod already gone is an error without an Event, as
    /// upstream (the caller decides what a 404 means).
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        controller: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let request = Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
            .delete(name, &DeleteParams::default())
            .map_err(kube::Error::BuildRequest)?;
        match self.client.request_text(request).await {
            Ok(_) => {
                tracing::debug!(controller = ?controller.name, pod = %name, namespace, "deleted pod");
                self.recorder.record(
                    controller.clone(),
                    TYPE_NORMAL,
                    REASON_SUCCESSFUL_DELETE,
                    format!("Deleted pod: {name}"),
                );
                Ok(())
            }
            Err(err) if is_status(&err, 404) => Err(err),
            Err(err) => {
                self.recorder.record(
                    controller.clone(),
                    TYPE_WARNING,
                    REASON_FAILED_DELETE,
                    format!("Error deleting: {}", error_message(&err)),
                );
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminating_namespace_is_recognised_by_its_cause() {
        let status = |cause: &str| {
            let status: kube::core::Status = serde_json::from_value(serde_json::json!({
                "code": 403,
                "details": {"causes": [{"reason": cause}]},
            }))
            .expect("a Status");
            CreateError::Api(kube::Error::Api(Box::new(status)))
        };
        assert!(status("NamespaceTerminating").namespace_terminating());
        assert!(!status("FieldValueInvalid").namespace_terminating());
        assert!(!CreateError::NoLabels.namespace_terminating());
    }
}
