//! Objects benchmarks load into the server, as JSON request bodies.

/// Node `node-<i>` of a typical size: labels, capacity, allocatable, a
/// Ready condition, addresses and nodeInfo as a kubelet registers them.
pub(crate) fn node_json(i: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"node-{i:05}","labels":{{"kubernetes.io/hostname":"node-{i:05}","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","topology.kubernetes.io/zone":"zone-{z}","node.kubernetes.io/instance-type":"m5.2xlarge"}}}},"spec":{{"podCIDR":"10.{a}.{b}.0/24"}},"status":{{"capacity":{{"cpu":"8","memory":"32Gi","pods":"110","ephemeral-storage":"100Gi"}},"allocatable":{{"cpu":"7910m","memory":"31Gi","pods":"110","ephemeral-storage":"95Gi"}},"conditions":[{{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}}],"addresses":[{{"type":"InternalIP","address":"10.0.{a}.{b}"}},{{"type":"Hostname","address":"node-{i:05}"}}],"nodeInfo":{{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"6.8.0","osImage":"Ubuntu 24.04","containerRuntimeVersion":"containerd://2.0.0","kubeletVersion":"v1.37.0","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}}}}}"#,
        z = i % 3,
        a = (i / 250) % 256,
        b = i % 250,
    )
}
