//! Dynamic resource allocation's resource.k8s.io/v1 types, which
//! kube-scheduler's DynamicResources plugin lists and watches (v1 since
//! Kubernetes 1.34): ResourceClaims (with `/status`), ResourceSlices and
//! DeviceClasses, stored and served as sent. berth's scheduler allocates no
//! devices; the objects are there so upstream's scheduler (and kubectl)
//! find what they list.

use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};

use super::storage::stored_type;
use super::{ObjectType, Strategy};

stored_type!(
    /// The strategy of resource.k8s.io/v1 ResourceClaims.
    ResourceClaims, ResourceClaim, status: true
);
stored_type!(
    /// The strategy of resource.k8s.io/v1 ResourceSlices.
    ResourceSlices, ResourceSlice, status: false
);
stored_type!(
    /// The strategy of resource.k8s.io/v1 DeviceClasses.
    DeviceClasses, DeviceClass, status: false
);
