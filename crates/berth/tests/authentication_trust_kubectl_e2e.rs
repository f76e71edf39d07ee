//! `kube-system/extension-apiserver-authentication`, which upstream's
//! kube-scheduler and kube-controller-manager read at start (they log an
//! error every few seconds while it is missing): `berth server` publishes
//! its CA there as `client-ca-file`, as kube-apiserver's
//! ClusterAuthenticationTrust controller does, read here with the real
//! kubectl; a restart leaves it as it is.

mod common;

use common::Backend;
use common::kubectl::Cluster;
use serde_json::Value;

/// The base64 bodies of a PEM bundle's certificates, whitespace removed:
/// what two copies of one certificate share however they are wrapped.
fn certificate_bodies(pem: &str) -> Vec<String> {
    pem.split("-----BEGIN CERTIFICATE-----")
        .skip(1)
        .filter_map(|block| block.split("-----END CERTIFICATE-----").next())
        .map(|body| body.chars().filter(|c| !c.is_whitespace()).collect())
        .collect()
}

fn config_map(cluster: &Cluster) -> Value {
    let out = cluster.kubectl(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "json",
    ]);
    assert!(
        out.status.success(),
        "kubectl get: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("kubectl prints JSON")
}

#[test]
fn the_server_publishes_its_ca_as_the_client_ca_upstream_components_read() {
    let mut cluster = Cluster::start("authn-trust", Backend::Embedded);
    let ca = std::fs::read_to_string(cluster.server.data_dir.join("ca.crt")).expect("ca.crt");
    let published = config_map(&cluster);
    let data = published["data"].as_object().expect("data");
    // Only client-ca-file: berth has no front-proxy CA, and kube-apiserver
    // writes the requestheader-* keys only when it has one.
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        vec!["client-ca-file"],
        "{published}"
    );
    let bundle = data["client-ca-file"].as_str().expect("a string");
    assert_eq!(certificate_bodies(bundle), certificate_bodies(&ca));
    assert_eq!(certificate_bodies(&ca).len(), 1, "ca.crt holds one CA");

    // A restart finds it published and does not write it again.
    let rv = published["metadata"]["resourceVersion"].clone();
    cluster.restart(Backend::Embedded);
    let again = config_map(&cluster);
    assert_eq!(again["metadata"]["resourceVersion"], rv, "{again}");
    assert_eq!(again["data"], published["data"]);
}
