//! Server-side printing: the `Table` (meta.k8s.io/v1 or v1beta1) that
//! kube-apiserver returns when a client such as `kubectl get` sends
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json`.
//!
//! The server always prints the wide columns (upstream's table convertor
//! passes `Wide: true`); columns with `priority` 1 are the ones kubectl
//! shows only with `-o wide`. Rows carry the object as requested by
//! `includeObject`: nothing, a `PartialObjectMetadata` (the default) or the
//! whole object. Kinds without a printer get upstream's default convertor
//! (NAME, CREATED AT).
//!
//! Everything here is a pure function of its inputs; "now" is a parameter
//! so ages are deterministic in tests.

pub mod core_printers;
pub mod duration;
pub mod policy_printers;
pub mod printers;
pub mod scheduling_printers;
pub mod workload_printers;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use printers::PrintedRow;

/// `includeObject` (`metav1.IncludeObjectPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// `None`: rows carry `"object": null`.
    None,
    /// `Metadata` (the default): a `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// `Object`: the full object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; "" is the default. The
    /// error is upstream's 400 message.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!(
                "unrecognized includeObject value: {}",
                crate::selectors::fields::go_quote(other)
            )),
        }
    }
}

/// The meta.k8s.io version the client asked the Table in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableVersion {
    /// `meta.k8s.io/v1`.
    #[default]
    V1,
    /// `meta.k8s.io/v1beta1` (older clients).
    V1Beta1,
}

impl TableVersion {
    /// The `apiVersion` of the Table and of its `PartialObjectMetadata`s.
    pub fn api_version(self) -> &'static str {
        match self {
            TableVersion::V1 => "meta.k8s.io/v1",
            TableVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// List metadata the caller copies into the Table (`metadata`): for a list,
/// the list's; for a single object, its `resourceVersion`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListMeta {
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `remainingItemCount`.
    pub remaining_item_count: Option<i64>,
}

/// How to build the Table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// The Table's meta.k8s.io version.
    pub version: TableVersion,
    /// What each row carries as `object`.
    pub include_object: IncludeObject,
    /// `noHeaders`: leave `columnDefinitions` null (kubectl asks for this
    /// when it already has them, e.g. on watch events after the first).
    pub no_headers: bool,
    /// The Table's list metadata.
    pub list_meta: ListMeta,
}

/// One column (`metav1.TableColumnDefinition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Header text; kubectl upper-cases it.
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `date`...
    pub type_: &'static str,
    /// OpenAPI format; `name` marks the column holding the object name.
    pub format: &'static str,
    /// Human description (upstream uses the field's API documentation).
    pub description: &'static str,
    /// 0 = always shown; 1 = only with `-o wide`.
    pub priority: i32,
}

impl Column {
    fn to_json(self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

const fn col(name: &'static str, type_: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_,
        format: "",
        description,
        priority: 0,
    }
}

const fn wide(column: Column) -> Column {
    Column {
        priority: 1,
        ..column
    }
}

const fn name_col(description: &'static str) -> Column {
    Column {
        format: "name",
        ..col("Name", "string", description)
    }
}

// The API documentation strings upstream takes from `SwaggerDoc()`.
const DOC_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const DOC_CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const DOC_POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
const DOC_NODE_NAME: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
const DOC_NOMINATED_NODE_NAME: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
const DOC_READINESS_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
const DOC_KUBELET_VERSION: &str = "Kubelet Version reported by the node.";
const DOC_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
const DOC_OS_IMAGE: &str =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
const DOC_KERNEL_VERSION: &str =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
const DOC_CONTAINER_RUNTIME_VERSION: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
const DOC_EVENT_LAST_TIMESTAMP: &str =
    "The time at which the most recent occurrence of this event was recorded.";
const DOC_EVENT_TYPE: &str =
    "Type of this event (Normal, Warning), new types could be added in the future";
const DOC_EVENT_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
const DOC_EVENT_INVOLVED_OBJECT: &str = "The object that this event is about.";
const DOC_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
const DOC_EVENT_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";
const DOC_EVENT_MESSAGE: &str = "A human-readable description of the status of this operation.";
const DOC_EVENT_FIRST_TIMESTAMP: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
const DOC_EVENT_COUNT: &str = "The number of times this event has occurred.";
const DOC_HOLDER_IDENTITY: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";

/// `kubectl get pods`: NAME READY STATUS RESTARTS AGE, wide IP NODE
/// NOMINATED NODE READINESS GATES.
pub const POD_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    wide(col("IP", "string", DOC_POD_IP)),
    wide(col("Node", "string", DOC_NODE_NAME)),
    wide(col("Nominated Node", "string", DOC_NOMINATED_NODE_NAME)),
    wide(col("Readiness Gates", "string", DOC_READINESS_GATES)),
];

/// `kubectl get nodes`: NAME STATUS ROLES AGE VERSION, wide INTERNAL-IP
/// EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
pub const NODE_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    col("Version", "string", DOC_KUBELET_VERSION),
    wide(col("Internal-IP", "string", DOC_ADDRESSES)),
    wide(col("External-IP", "string", DOC_ADDRESSES)),
    wide(col("OS-Image", "string", DOC_OS_IMAGE)),
    wide(col("Kernel-Version", "string", DOC_KERNEL_VERSION)),
    wide(col(
        "Container-Runtime",
        "string",
        DOC_CONTAINER_RUNTIME_VERSION,
    )),
];

/// `kubectl get events`: LAST SEEN TYPE REASON OBJECT MESSAGE, wide adds
/// SUBOBJECT and SOURCE (before MESSAGE) and FIRST SEEN COUNT NAME.
pub const EVENT_COLUMNS: &[Column] = &[
    col("Last Seen", "string", DOC_EVENT_LAST_TIMESTAMP),
    col("Type", "string", DOC_EVENT_TYPE),
    col("Reason", "string", DOC_EVENT_REASON),
    col("Object", "string", DOC_EVENT_INVOLVED_OBJECT),
    wide(col("Subobject", "string", DOC_FIELD_PATH)),
    wide(col("Source", "string", DOC_EVENT_SOURCE)),
    col("Message", "string", DOC_EVENT_MESSAGE),
    wide(col("First Seen", "string", DOC_EVENT_FIRST_TIMESTAMP)),
    wide(col("Count", "string", DOC_EVENT_COUNT)),
    wide(name_col(DOC_NAME)),
];

/// `kubectl get namespaces`: NAME STATUS AGE.
pub const NAMESPACE_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Status", "string", "The status of the namespace"),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// `kubectl get leases`: NAME HOLDER AGE.
pub const LEASE_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Holder", "string", DOC_HOLDER_IDENTITY),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

const DOC_READY_PODS: &str = "Number of the pod with ready state";
const DOC_CONTAINERS: &str = "Names of each container in the template.";
const DOC_IMAGES: &str = "Images referenced by each container in the template.";
// extensions/v1beta1's API documentation, which upstream's printers quote.
const DOC_DEPLOYMENT_UPDATED: &str = "Total number of non-terminated pods targeted by this deployment that have the desired template spec.";
const DOC_DEPLOYMENT_AVAILABLE: &str = "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.";
const DOC_DEPLOYMENT_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";
const DOC_REPLICA_SET_DESIRED: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
const DOC_REPLICA_SET_CURRENT: &str = "Replicas is the most recently oberved number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
const DOC_REPLICA_SET_READY: &str = "The number of ready replicas for this replica set.";
const DOC_REPLICA_SET_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const DOC_DAEMON_SET_DESIRED: &str = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
const DOC_DAEMON_SET_CURRENT: &str = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
const DOC_DAEMON_SET_READY: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.";
const DOC_DAEMON_SET_UPDATED: &str =
    "The total number of nodes that are running updated daemon pod";
const DOC_DAEMON_SET_AVAILABLE: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";
const DOC_DAEMON_SET_SELECTOR: &str = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const DOC_NODE_SELECTOR: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
const DOC_REVISION: &str = "Revision indicates the revision of the state represented by Data.";

/// `kubectl get deployments`: NAME READY UP-TO-DATE AVAILABLE AGE, wide
/// CONTAINERS IMAGES SELECTOR.
pub const DEPLOYMENT_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Ready", "string", DOC_READY_PODS),
    col("Up-to-date", "string", DOC_DEPLOYMENT_UPDATED),
    col("Available", "string", DOC_DEPLOYMENT_AVAILABLE),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    wide(col("Containers", "string", DOC_CONTAINERS)),
    wide(col("Images", "string", DOC_IMAGES)),
    wide(col("Selector", "string", DOC_DEPLOYMENT_SELECTOR)),
];

/// `kubectl get replicasets`: NAME DESIRED CURRENT READY AGE, wide
/// CONTAINERS IMAGES SELECTOR.
pub const REPLICA_SET_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Desired", "integer", DOC_REPLICA_SET_DESIRED),
    col("Current", "integer", DOC_REPLICA_SET_CURRENT),
    col("Ready", "integer", DOC_REPLICA_SET_READY),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    wide(col("Containers", "string", DOC_CONTAINERS)),
    wide(col("Images", "string", DOC_IMAGES)),
    wide(col("Selector", "string", DOC_REPLICA_SET_SELECTOR)),
];

/// `kubectl get daemonsets`: NAME DESIRED CURRENT READY UP-TO-DATE
/// AVAILABLE NODE SELECTOR AGE, wide CONTAINERS IMAGES SELECTOR.
pub const DAEMON_SET_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Desired", "integer", DOC_DAEMON_SET_DESIRED),
    col("Current", "integer", DOC_DAEMON_SET_CURRENT),
    col("Ready", "integer", DOC_DAEMON_SET_READY),
    col("Up-to-date", "integer", DOC_DAEMON_SET_UPDATED),
    col("Available", "integer", DOC_DAEMON_SET_AVAILABLE),
    col("Node Selector", "string", DOC_NODE_SELECTOR),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    wide(col("Containers", "string", DOC_CONTAINERS)),
    wide(col("Images", "string", DOC_IMAGES)),
    wide(col("Selector", "string", DOC_DAEMON_SET_SELECTOR)),
];

/// `kubectl get statefulsets`: NAME READY AGE, wide CONTAINERS IMAGES.
pub const STATEFUL_SET_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Ready", "string", DOC_READY_PODS),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    wide(col("Containers", "string", DOC_CONTAINERS)),
    wide(col("Images", "string", DOC_IMAGES)),
];

/// `kubectl get controllerrevisions`: NAME CONTROLLER REVISION AGE.
pub const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Controller", "string", "Controller of the object"),
    col("Revision", "string", DOC_REVISION),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

// The common core types' columns (upstream's `AddHandlers`).
const DOC_CONFIG_MAP_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
const DOC_SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
const DOC_SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
const DOC_SERVICE_ACCOUNT_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
const DOC_SERVICE_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
const DOC_SERVICE_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const DOC_SERVICE_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
const DOC_SERVICE_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const DOC_SERVICE_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
const DOC_ENDPOINTS_SUBSETS: &str = "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.";
const DOC_ENDPOINT_SLICE_ADDRESS_TYPE: &str = "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.";
const DOC_ENDPOINT_SLICE_PORTS: &str = "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.";
const DOC_ENDPOINT_SLICE_ENDPOINTS: &str = "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.";

/// `kubectl get configmaps`: NAME DATA AGE.
pub const CONFIG_MAP_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Data", "string", DOC_CONFIG_MAP_DATA),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// `kubectl get secrets`: NAME TYPE DATA AGE.
pub const SECRET_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Type", "string", DOC_SECRET_TYPE),
    col("Data", "string", DOC_SECRET_DATA),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// `kubectl get serviceaccounts`: NAME SECRETS AGE.
pub const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Secrets", "string", DOC_SERVICE_ACCOUNT_SECRETS),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// `kubectl get services`: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE,
/// wide SELECTOR.
pub const SERVICE_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Type", "string", DOC_SERVICE_TYPE),
    col("Cluster-IP", "string", DOC_SERVICE_CLUSTER_IP),
    col("External-IP", "string", DOC_SERVICE_EXTERNAL_IPS),
    col("Port(s)", "string", DOC_SERVICE_PORTS),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    wide(col("Selector", "string", DOC_SERVICE_SELECTOR)),
];

/// `kubectl get endpoints`: NAME ENDPOINTS AGE.
pub const ENDPOINTS_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Endpoints", "string", DOC_ENDPOINTS_SUBSETS),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// `kubectl get endpointslices`: NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
pub const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("AddressType", "string", DOC_ENDPOINT_SLICE_ADDRESS_TYPE),
    col("Ports", "string", DOC_ENDPOINT_SLICE_PORTS),
    col("Endpoints", "string", DOC_ENDPOINT_SLICE_ENDPOINTS),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// `kubectl get resourcequotas`: NAME REQUEST LIMIT AGE.
pub const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

const DOC_PRIORITY_CLASS_VALUE: &str = "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.";
const DOC_PRIORITY_CLASS_GLOBAL_DEFAULT: &str = "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.";
const DOC_PRIORITY_CLASS_PREEMPTION_POLICY: &str = "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.";

/// `kubectl get priorityclasses`: NAME VALUE GLOBAL-DEFAULT AGE
/// PREEMPTIONPOLICY.
pub const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Value", "integer", DOC_PRIORITY_CLASS_VALUE),
    col(
        "Global-Default",
        "boolean",
        DOC_PRIORITY_CLASS_GLOBAL_DEFAULT,
    ),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
    col(
        "PreemptionPolicy",
        "string",
        DOC_PRIORITY_CLASS_PREEMPTION_POLICY,
    ),
];

/// `kubectl get poddisruptionbudgets`: NAME MIN AVAILABLE MAX UNAVAILABLE
/// ALLOWED DISRUPTIONS AGE.
pub const POD_DISRUPTION_BUDGET_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    col("Age", "string", DOC_CREATION_TIMESTAMP),
];

/// Upstream's default table convertor, for kinds without a printer.
pub const DEFAULT_COLUMNS: &[Column] = &[
    name_col(DOC_NAME),
    col("Created At", "date", DOC_CREATION_TIMESTAMP),
];

/// The printed kinds. Kind names (`Pod`) and resource names (`pods`) both
/// work; anything else is printed by the default convertor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Printer {
    Pod,
    Node,
    Event,
    Namespace,
    Lease,
    Deployment,
    ReplicaSet,
    DaemonSet,
    StatefulSet,
    ControllerRevision,
    ConfigMap,
    Secret,
    ServiceAccount,
    Service,
    Endpoints,
    EndpointSlice,
    ResourceQuota,
    PriorityClass,
    PodDisruptionBudget,
    Default,
}

impl Printer {
    fn for_kind(kind: &str) -> Self {
        match kind {
            "Pod" | "pods" => Printer::Pod,
            "Node" | "nodes" => Printer::Node,
            "Event" | "events" => Printer::Event,
            "Namespace" | "namespaces" => Printer::Namespace,
            "Lease" | "leases" => Printer::Lease,
            "Deployment" | "deployments" => Printer::Deployment,
            "ReplicaSet" | "replicasets" => Printer::ReplicaSet,
            "DaemonSet" | "daemonsets" => Printer::DaemonSet,
            "StatefulSet" | "statefulsets" => Printer::StatefulSet,
            "ControllerRevision" | "controllerrevisions" => Printer::ControllerRevision,
            "ConfigMap" | "configmaps" => Printer::ConfigMap,
            "Secret" | "secrets" => Printer::Secret,
            "ServiceAccount" | "serviceaccounts" => Printer::ServiceAccount,
            "Service" | "services" => Printer::Service,
            "Endpoints" | "endpoints" => Printer::Endpoints,
            "EndpointSlice" | "endpointslices" => Printer::EndpointSlice,
            "ResourceQuota" | "resourcequotas" => Printer::ResourceQuota,
            "PriorityClass" | "priorityclasses" => Printer::PriorityClass,
            "PodDisruptionBudget" | "poddisruptionbudgets" => Printer::PodDisruptionBudget,
            _ => Printer::Default,
        }
    }

    fn columns(self) -> &'static [Column] {
        match self {
            Printer::Pod => POD_COLUMNS,
            Printer::Node => NODE_COLUMNS,
            Printer::Event => EVENT_COLUMNS,
            Printer::Namespace => NAMESPACE_COLUMNS,
            Printer::Lease => LEASE_COLUMNS,
            Printer::Deployment => DEPLOYMENT_COLUMNS,
            Printer::ReplicaSet => REPLICA_SET_COLUMNS,
            Printer::DaemonSet => DAEMON_SET_COLUMNS,
            Printer::StatefulSet => STATEFUL_SET_COLUMNS,
            Printer::ControllerRevision => CONTROLLER_REVISION_COLUMNS,
            Printer::ConfigMap => CONFIG_MAP_COLUMNS,
            Printer::Secret => SECRET_COLUMNS,
            Printer::ServiceAccount => SERVICE_ACCOUNT_COLUMNS,
            Printer::Service => SERVICE_COLUMNS,
            Printer::Endpoints => ENDPOINTS_COLUMNS,
            Printer::EndpointSlice => ENDPOINT_SLICE_COLUMNS,
            Printer::ResourceQuota => RESOURCE_QUOTA_COLUMNS,
            Printer::PriorityClass => PRIORITY_CLASS_COLUMNS,
            Printer::PodDisruptionBudget => POD_DISRUPTION_BUDGET_COLUMNS,
            Printer::Default => DEFAULT_COLUMNS,
        }
    }

    fn print(self, obj: &Value, now: Timestamp) -> PrintedRow {
        // The server always prints wide; kubectl hides priority-1 columns.
        match self {
            Printer::Pod => printers::print_pod(obj, true, now),
            Printer::Node => printers::print_node(obj, true, now),
            Printer::Event => printers::print_event(obj, true, now),
            Printer::Namespace => printers::print_namespace(obj, now),
            Printer::Lease => printers::print_lease(obj, now),
            Printer::Deployment => workload_printers::print_deployment(obj, now),
            Printer::ReplicaSet => workload_printers::print_replica_set(obj, now),
            Printer::DaemonSet => workload_printers::print_daemon_set(obj, now),
            Printer::StatefulSet => workload_printers::print_stateful_set(obj, now),
            Printer::ControllerRevision => workload_printers::print_controller_revision(obj, now),
            Printer::ConfigMap => core_printers::print_config_map(obj, now),
            Printer::Secret => core_printers::print_secret(obj, now),
            Printer::ServiceAccount => core_printers::print_service_account(obj, now),
            Printer::Service => core_printers::print_service(obj, true, now),
            Printer::Endpoints => core_printers::print_endpoints(obj, now),
            Printer::EndpointSlice => core_printers::print_endpoint_slice(obj, now),
            Printer::ResourceQuota => core_printers::print_resource_quota(obj, now),
            Printer::PriorityClass => scheduling_printers::print_priority_class(obj, now),
            Printer::PodDisruptionBudget => policy_printers::print_pod_disruption_budget(obj, now),
            Printer::Default => printers::print_default(obj),
        }
    }
}

/// The "now" of the printers' tests: ages are counted from it.
#[cfg(test)]
pub(crate) fn test_now() -> Timestamp {
    "2024-06-01T12:00:00Z"
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The column definitions the server sends for `kind`.
pub fn columns_for(kind: &str) -> &'static [Column] {
    Printer::for_kind(kind).columns()
}

/// The Table for `objects` of `kind` (v1, with headers), with the caller's
/// list metadata.
pub fn to_table(
    kind: &str,
    objects: &[Value],
    include_object: IncludeObject,
    list_meta: &ListMeta,
    now: Timestamp,
) -> Value {
    let options = TableOptions {
        include_object,
        list_meta: list_meta.clone(),
        ..TableOptions::default()
    };
    to_table_with_options(kind, objects, &options, now)
}

/// The Table for `objects` of `kind`, with every option.
pub fn to_table_with_options(
    kind: &str,
    objects: &[Value],
    options: &TableOptions,
    now: Timestamp,
) -> Value {
    let printer = Printer::for_kind(kind);
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let printed = printer.print(obj, now);
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(printed.cells));
            if !printed.conditions.is_empty() {
                row.insert("conditions".into(), Value::Array(printed.conditions));
            }
            row.insert(
                "object".into(),
                row_object(obj, options.include_object, options.version),
            );
            Value::Object(row)
        })
        .collect();
    let columns = if options.no_headers {
        Value::Null
    } else {
        Value::Array(printer.columns().iter().map(|c| c.to_json()).collect())
    };
    let mut metadata = Map::new();
    let lm = &options.list_meta;
    if let Some(rv) = lm.resource_version.as_ref().filter(|s| !s.is_empty()) {
        metadata.insert("resourceVersion".into(), json!(rv));
    }
    if let Some(c) = lm.continue_token.as_ref().filter(|s| !s.is_empty()) {
        metadata.insert("continue".into(), json!(c));
    }
    if let Some(n) = lm.remaining_item_count {
        metadata.insert("remainingItemCount".into(), json!(n));
    }
    json!({
        "kind": "Table",
        "apiVersion": options.version.api_version(),
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// A row's `object` per `includeObject`.
fn row_object(obj: &Value, include: IncludeObject, version: TableVersion) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": version.api_version(),
            "metadata": obj.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

/// Whether an `Accept` header asks for a Table, and in which version.
///
/// Media ranges are tried by quality (`q`, stable for ties) as upstream's
/// negotiation does. Ranges berth cannot serve as JSON are skipped, as are
/// `as=Table` ranges for another group or version (upstream skips those
/// too). The first servable range decides: `Some` if it asks for a Table,
/// `None` if it asks for the plain object (or for another `as=` form such
/// as `PartialObjectMetadata`, which the caller handles). A malformed header
/// yields `None`.
pub fn table_version_from_accept(accept: &str) -> Option<TableVersion> {
    let mut ranges: Vec<(f64, MediaRange)> = accept
        .split(',')
        .filter_map(MediaRange::parse)
        .filter(|(q, _)| *q > 0.0)
        .collect();
    // Stable: equal qualities keep header order.
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, range) in ranges {
        if !range.is_json() {
            continue;
        }
        match range.param("as") {
            None => return None,
            Some("Table") => {
                if range.param("g") != Some("meta.k8s.io") {
                    continue;
                }
                match range.param("v") {
                    Some("v1") => return Some(TableVersion::V1),
                    Some("v1beta1") => return Some(TableVersion::V1Beta1),
                    _ => continue,
                }
            }
            Some(_) => return None,
        }
    }
    None
}

/// One media range of an `Accept` header.
struct MediaRange {
    media_type: String,
    params: Vec<(String, String)>,
}

impl MediaRange {
    /// The range and its quality; `None` when it has no `type/subtype`.
    fn parse(s: &str) -> Option<(f64, MediaRange)> {
        let mut parts = s.split(';');
        let media_type = parts.next()?.trim().to_ascii_lowercase();
        if !media_type.contains('/') {
            return None;
        }
        let mut q = 1.0;
        let mut params = Vec::new();
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim().trim_matches('"').to_string();
            if k == "q" {
                q = v.parse::<f64>().ok().filter(|q| q.is_finite())?;
            } else {
                params.push((k, v));
            }
        }
        Some((q, MediaRange { media_type, params }))
    }

    fn is_json(&self) -> bool {
        matches!(
            self.media_type.as_str(),
            "application/json" | "application/*" | "*/*"
        )
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_now as now;

    #[test]
    fn kubectl_accept_header_asks_for_a_v1_table() {
        let cases = [
            (
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
                Some(TableVersion::V1),
            ),
            (
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
                Some(TableVersion::V1Beta1),
            ),
            ("application/json", None),
            ("*/*", None),
            ("", None),
            ("garbage", None),
            (
                "application/json;as=Table;v=v2;g=meta.k8s.io, application/json ; as=Table ; v=v1 ; g=meta.k8s.io",
                Some(TableVersion::V1),
            ),
            (
                "application/json;as=Table;v=v1;g=example.com,application/json",
                None,
            ),
            (
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json",
                None,
            ),
            (
                "application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io",
                Some(TableVersion::V1),
            ),
            (
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json",
                None,
            ),
            ("application/json;as=Table;v=v1;g=meta.k8s.io;q=0", None),
            ("application/json;as=Table;v=v1;g=meta.k8s.io;q=x", None),
        ];
        for (accept, want) in cases {
            assert_eq!(table_version_from_accept(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn include_object_parses_the_query_parameter() {
        assert_eq!(IncludeObject::parse(""), Ok(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::parse("Metadata"),
            Ok(IncludeObject::Metadata)
        );
        assert_eq!(IncludeObject::parse("None"), Ok(IncludeObject::None));
        assert_eq!(IncludeObject::parse("Object"), Ok(IncludeObject::Object));
        assert_eq!(
            IncludeObject::parse("all"),
            Err("unrecognized includeObject value: \"all\"".to_string())
        );
    }

    #[test]
    fn wide_columns_have_priority_one_and_match_cells() {
        let headers = |cols: &[Column], prio: i32| -> Vec<&str> {
            cols.iter()
                .filter(|c| c.priority == prio)
                .map(|c| c.name)
                .collect()
        };
        assert_eq!(
            headers(POD_COLUMNS, 0),
            ["Name", "Ready", "Status", "Restarts", "Age"]
        );
        assert_eq!(
            headers(POD_COLUMNS, 1),
            ["IP", "Node", "Nominated Node", "Readiness Gates"]
        );
        assert_eq!(
            headers(NODE_COLUMNS, 0),
            ["Name", "Status", "Roles", "Age", "Version"]
        );
        assert_eq!(
            headers(NODE_COLUMNS, 1),
            [
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime"
            ]
        );
        assert_eq!(
            headers(EVENT_COLUMNS, 0),
            ["Last Seen", "Type", "Reason", "Object", "Message"]
        );
        assert_eq!(headers(NAMESPACE_COLUMNS, 0), ["Name", "Status", "Age"]);
        assert_eq!(headers(LEASE_COLUMNS, 0), ["Name", "Holder", "Age"]);
        assert_eq!(
            headers(DEPLOYMENT_COLUMNS, 0),
            ["Name", "Ready", "Up-to-date", "Available", "Age"]
        );
        assert_eq!(
            headers(DEPLOYMENT_COLUMNS, 1),
            ["Containers", "Images", "Selector"]
        );
        assert_eq!(
            headers(REPLICA_SET_COLUMNS, 0),
            ["Name", "Desired", "Current", "Ready", "Age"]
        );
        assert_eq!(
            headers(DAEMON_SET_COLUMNS, 0),
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age"
            ]
        );
        assert_eq!(headers(STATEFUL_SET_COLUMNS, 0), ["Name", "Ready", "Age"]);
        assert_eq!(headers(STATEFUL_SET_COLUMNS, 1), ["Containers", "Images"]);
        assert_eq!(
            headers(CONTROLLER_REVISION_COLUMNS, 0),
            ["Name", "Controller", "Revision", "Age"]
        );
        assert_eq!(
            headers(SERVICE_COLUMNS, 0),
            [
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age"
            ]
        );
        assert_eq!(headers(SERVICE_COLUMNS, 1), ["Selector"]);
        assert_eq!(headers(SECRET_COLUMNS, 0), ["Name", "Type", "Data", "Age"]);
        assert_eq!(
            headers(RESOURCE_QUOTA_COLUMNS, 0),
            ["Name", "Request", "Limit", "Age"]
        );
        assert_eq!(
            headers(PRIORITY_CLASS_COLUMNS, 0),
            ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
        );
        // Every printer fills exactly one cell per column.
        for kind in [
            "Pod",
            "Node",
            "Event",
            "Namespace",
            "Lease",
            "Deployment",
            "ReplicaSet",
            "DaemonSet",
            "StatefulSet",
            "ControllerRevision",
            "PriorityClass",
            "PodDisruptionBudget",
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "Service",
            "Endpoints",
            "EndpointSlice",
            "ResourceQuota",
            "LimitRange",
        ] {
            let table = to_table(
                kind,
                &[json!({})],
                IncludeObject::None,
                &ListMeta::default(),
                now(),
            );
            let cols = table["columnDefinitions"].as_array().map(Vec::len);
            let cells = table["rows"][0]["cells"].as_array().map(Vec::len);
            assert_eq!(cols, cells, "{kind}");
        }
    }

    #[test]
    fn node_table_is_what_kube_apiserver_returns() {
        let node = json!({
            "kind": "Node", "apiVersion": "v1",
            "metadata": {"name": "n1", "resourceVersion": "7", "creationTimestamp": "2024-06-01T11:00:00Z",
                         "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                       "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian", "kernelVersion": "6.1",
                                    "containerRuntimeVersion": "containerd://2.0"}}
        });
        let meta = ListMeta {
            resource_version: Some("42".into()),
            continue_token: Some("abc".into()),
            remaining_item_count: None,
        };
        let table = to_table(
            "nodes",
            std::slice::from_ref(&node),
            IncludeObject::Metadata,
            &meta,
            now(),
        );
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            table["metadata"],
            json!({"resourceVersion": "42", "continue": "abc"})
        );
        assert_eq!(
            table["columnDefinitions"][0],
            json!({"name": "Name", "type": "string", "format": "name", "description": DOC_NAME, "priority": 0})
        );
        assert_eq!(table["columnDefinitions"][5]["priority"], 1);
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "n1",
                "Ready,SchedulingDisabled",
                "control-plane",
                "60m",
                "v1.37.0",
                "10.0.0.1",
                "<none>",
                "Debian",
                "6.1",
                "containerd://2.0"
            ])
        );
        assert_eq!(
            table["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": node["metadata"]})
        );
        assert!(table["rows"][0].get("conditions").is_none());

        let full = to_table(
            "Node",
            std::slice::from_ref(&node),
            IncludeObject::Object,
            &ListMeta::default(),
            now(),
        );
        assert_eq!(full["rows"][0]["object"], node);
        assert_eq!(full["metadata"], json!({}));
        let none = to_table(
            "Node",
            std::slice::from_ref(&node),
            IncludeObject::None,
            &ListMeta::default(),
            now(),
        );
        assert_eq!(none["rows"][0]["object"], Value::Null);
    }

    #[test]
    fn table_options_cover_v1beta1_and_no_headers() {
        let pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Succeeded"}});
        let options = TableOptions {
            version: TableVersion::V1Beta1,
            no_headers: true,
            ..TableOptions::default()
        };
        let table = to_table_with_options("Pod", &[pod], &options, now());
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(table["columnDefinitions"], Value::Null);
        assert_eq!(
            table["rows"][0]["object"]["apiVersion"],
            "meta.k8s.io/v1beta1"
        );
        assert_eq!(table["rows"][0]["object"]["metadata"], json!({"name": "p"}));
        assert_eq!(table["rows"][0]["conditions"][0]["reason"], "Succeeded");
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "p",
                "0/0",
                "Succeeded",
                "0",
                "<unknown>",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ])
        );
        let empty = to_table(
            "Pod",
            &[],
            IncludeObject::Metadata,
            &ListMeta::default(),
            now(),
        );
        assert_eq!(empty["rows"], json!([]));
    }

    #[test]
    fn column_descriptions_match_the_api_documentation() {
        assert_eq!(columns_for("Lease")[1].description, DOC_HOLDER_IDENTITY);
        assert_eq!(columns_for("events")[4].description, DOC_FIELD_PATH);
        assert!(DOC_CREATION_TIMESTAMP.contains("UTC.\n\nPopulated by the system."));
        assert_eq!(columns_for("LimitRange"), DEFAULT_COLUMNS);
        assert_eq!(DEFAULT_COLUMNS[1].type_, "date");
    }
}
