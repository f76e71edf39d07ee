//! The storage types kube-scheduler's and kube-controller-manager's
//! informers list (the volume plugins' filters, the attach/detach and PV
//! controllers), stored and served as sent, with nothing of berth acting
//! on them: core/v1 PersistentVolumes and PersistentVolumeClaims (with
//! `/status`), storage.k8s.io/v1 StorageClasses, CSINodes, CSIDrivers,
//! CSIStorageCapacities and VolumeAttachments (with `/status`). Their
//! metadata is validated and their fields checked strictly against the
//! k8s-openapi types; upstream's deeper rules (access modes, immutable
//! fields) are not ported: no berth component reads these objects.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};

use super::{ObjectType, Strategy};

/// A stored-only strategy for one k8s-openapi type, with or without a
/// `/status` subresource.
macro_rules! stored_type {
    ($(#[$doc:meta])* $name:ident, $type:ty, status: $status:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Strategy for $name {
            fn object_type(&self) -> ObjectType {
                ObjectType::of::<$type>()
            }

            fn has_status(&self) -> bool {
                $status
            }
        }
    };
}
pub(crate) use stored_type;

stored_type!(
    /// The strategy of core/v1 PersistentVolumes.
    PersistentVolumes, PersistentVolume, status: true
);
stored_type!(
    /// The strategy of core/v1 PersistentVolumeClaims.
    PersistentVolumeClaims, PersistentVolumeClaim, status: true
);
stored_type!(
    /// The strategy of storage.k8s.io/v1 StorageClasses.
    StorageClasses, StorageClass, status: false
);
stored_type!(
    /// The strategy of storage.k8s.io/v1 CSINodes.
    CsiNodes, CSINode, status: false
);
stored_type!(
    /// The strategy of storage.k8s.io/v1 CSIDrivers.
    CsiDrivers, CSIDriver, status: false
);
stored_type!(
    /// The strategy of storage.k8s.io/v1 CSIStorageCapacities.
    CsiStorageCapacities, CSIStorageCapacity, status: false
);
stored_type!(
    /// The strategy of storage.k8s.io/v1 VolumeAttachments.
    VolumeAttachments, VolumeAttachment, status: true
);
