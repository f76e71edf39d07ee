//! The `kubernetes` Service in `default`, as upstream's API server keeps
//! it: the first address of the cluster-IP range, port 443 (`https`) to
//! the server's own port, and, when the server listens on an address a
//! Service may name (not loopback, not unspecified), its Endpoints and
//! EndpointSlice pointing at the server. Each server on a shared etcd adds
//! its address; what is there already stays.

use std::net::SocketAddr;

use serde_json::{Value, json};

use super::server::ApiServer;
use crate::auth::User;
use crate::resources::{ENDPOINT_SLICES, ENDPOINTS, ResourceType, SERVICES};

const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";

impl ApiServer {
    /// Creates the `kubernetes` Service if there is none, and points its
    /// endpoints at `address` (the server's listening address).
    pub async fn publish_kubernetes_service(&self, address: SocketAddr) {
        let first = self.allocators.cluster_ips.cidr().address(0).to_string();
        let mut service = json!({
            "metadata": {"name": NAME, "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": first,
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": address.port()}],
                "sessionAffinity": "None",
            },
        });
        self.create_if_absent(&SERVICES, &mut service).await;
        let ip = address.ip();
        if ip.is_unspecified() || ip.is_loopback() {
            tracing::debug!(%address, "the kubernetes Service gets no endpoints: the server's address is not one a Service may name");
            return;
        }
        let port = json!({"name": "https", "port": address.port(), "protocol": "TCP"});
        let mut endpoints = json!({
            "metadata": {"name": NAME, "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": [port]}],
        });
        self.create_if_absent(&ENDPOINTS, &mut endpoints).await;
        let mut slice = json!({
            "metadata": {"name": NAME, "labels": {"kubernetes.io/service-name": NAME}},
            "addressType": if ip.is_ipv4() { "IPv4" } else { "IPv6" },
            "endpoints": [{"addresses": [ip.to_string()], "conditions": {"ready": true}}],
            "ports": [port],
        });
        self.create_if_absent(&ENDPOINT_SLICES, &mut slice).await;
    }

    async fn create_if_absent(&self, rt: &'static ResourceType, object: &mut Value) {
        let created = self
            .create_object(rt, NAMESPACE, object, &User::admin(), false)
            .await;
        match created {
            Ok(_) => tracing::info!(resource = rt.plural, "created default/kubernetes"),
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(resource = rt.plural, error = %e, "default/kubernetes not created")
            }
        }
    }
}
