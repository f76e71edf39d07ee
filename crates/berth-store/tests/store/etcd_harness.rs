//! Starts a real, private etcd for one test through [`berth_store::testing`] (loopback only,
//! free ports, a temporary data directory, killed when dropped). A missing etcd binary fails
//! the test loudly: CI installs it, so its absence is a broken environment, not a reason to
//! skip.

use berth_store::EtcdStore;

pub struct EtcdServer {
    inner: berth_store::testing::EtcdServer,
    pub endpoint: String,
}

impl EtcdServer {
    pub async fn start() -> Self {
        Self::start_cluster(1).await
    }

    /// A cluster of `members` etcd processes; `endpoint` is the first member's.
    pub async fn start_cluster(members: usize) -> Self {
        let inner = berth_store::testing::EtcdServer::start_cluster(members)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let endpoint = inner.endpoint().to_owned();
        EtcdServer { inner, endpoint }
    }

    /// A client of member `i` alone.
    pub async fn store_at(&self, i: usize) -> EtcdStore {
        EtcdStore::connect(&[&self.inner.endpoints()[i]])
            .await
            .expect("connect to one member of the test etcd")
    }

    pub async fn store(&self) -> EtcdStore {
        self.inner.store().await.expect("connect to test etcd")
    }
}
