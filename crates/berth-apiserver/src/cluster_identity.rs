//! Which cluster a data dir and a store belong to.
//!
//! The data dir holds a cluster's CA, tokens and node credentials; the
//! store holds its objects. If the store is lost (the embedded store's file
//! truncated or deleted, `--etcd` pointed at an empty etcd) while the data
//! dir survives, starting anyway would serve an empty cluster under the old
//! credentials: every node and pod silently gone. So the first start gives
//! the cluster an id, kept in both places (`cluster-id` in the data dir,
//! [`CLUSTER_ID_KEY`] in the store), and every start checks them: a data
//! dir that belongs to a cluster (it has an id, or a CA from before ids)
//! with a store that holds nothing is refused, with how to recover, as is
//! a store of another cluster.

use std::path::{Path, PathBuf};

use berth_store::{AnyStore, ListOptions, Store, StoreError};

/// The cluster id's file in the data dir.
pub const CLUSTER_ID_FILE: &str = "cluster-id";

/// The cluster id's key in the store (no served resource lives there).
pub const CLUSTER_ID_KEY: &str = "/registry/berth/cluster-id";

/// Why the data dir and the store do not go together.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(
        "the data dir {} belongs to {} (its CA, tokens and node credentials are there), but the \
         store ({store}) holds no objects: it is empty, missing or truncated. Refusing to start \
         an empty cluster with this data dir's credentials. To recover, restore the store from a \
         backup (or point --etcd at this cluster's etcd); to start a new, empty cluster on \
         purpose, move the data dir aside and start with an empty one",
        data_dir.display(),
        cluster.as_deref().map_or("a cluster".to_string(), |id| format!("cluster {id}"))
    )]
    EmptyStore {
        data_dir: PathBuf,
        cluster: Option<String>,
        store: String,
    },
    #[error(
        "the data dir {} belongs to cluster {data_dir_cluster}, but the store ({store}) to \
         cluster {store_cluster}: refusing to mix them. Start with the data dir of cluster \
         {store_cluster}, or with this one's store",
        data_dir.display()
    )]
    Mismatch {
        data_dir: PathBuf,
        data_dir_cluster: String,
        store: String,
        store_cluster: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading the cluster id from the store: {0}")]
    Store(#[from] StoreError),
}

/// Checks that `data_dir` and `store` (described as `store_name` in
/// errors) belong to one cluster, giving a new cluster its id; returns the
/// id. Call before anything writes to the store.
pub async fn ensure(
    data_dir: &Path,
    store: &AnyStore,
    store_name: &str,
) -> Result<String, IdentityError> {
    let marker = data_dir.join(CLUSTER_ID_FILE);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| IdentityError::Io { path, source }
    };
    let dir_id = match std::fs::read_to_string(&marker) {
        Ok(id) => Some(id.trim().to_string()).filter(|id| !id.is_empty()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(&marker)(e)),
    };
    let store_id = store
        .get(CLUSTER_ID_KEY)
        .await?
        .map(|kv| String::from_utf8_lossy(&kv.value).trim().to_string());
    match (dir_id, store_id) {
        (Some(dir_id), Some(store_id)) if dir_id == store_id => Ok(dir_id),
        (Some(dir_id), Some(store_id)) => Err(IdentityError::Mismatch {
            data_dir: data_dir.to_path_buf(),
            data_dir_cluster: dir_id,
            store: store_name.to_string(),
            store_cluster: store_id,
        }),
        (None, Some(store_id)) => {
            write_marker(data_dir, &marker, &store_id).map_err(io(&marker))?;
            Ok(store_id)
        }
        (dir_id, None) => {
            // A cluster from before ids has a CA but no id.
            let initialised = dir_id.is_some() || data_dir.join("ca.crt").exists();
            let empty = store
                .list(
                    "/registry/",
                    ListOptions {
                        limit: 1,
                        ..ListOptions::default()
                    },
                )
                .await?
                .items
                .is_empty();
            if initialised && empty {
                return Err(IdentityError::EmptyStore {
                    data_dir: data_dir.to_path_buf(),
                    cluster: dir_id,
                    store: store_name.to_string(),
                });
            }
            let id = dir_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            match store.create(CLUSTER_ID_KEY, id.clone().into_bytes()).await {
                Ok(_) => {}
                // Another server of the cluster (on the same etcd) was first.
                Err(StoreError::AlreadyExists { .. }) => {
                    return Box::pin(ensure(data_dir, store, store_name)).await;
                }
                Err(e) => return Err(e.into()),
            }
            write_marker(data_dir, &marker, &id).map_err(io(&marker))?;
            tracing::info!(cluster = %id, "cluster id recorded in the data dir and the store");
            Ok(id)
        }
    }
}

fn write_marker(data_dir: &Path, marker: &Path, id: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir)?;
    let partial = marker.with_extension("partial");
    std::fs::write(&partial, format!("{id}\n"))?;
    std::fs::File::open(&partial)?.sync_all()?;
    std::fs::rename(&partial, marker)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_store::MemStore;

    #[derive(Clone, Copy, Debug)]
    enum Dir {
        Empty,
        WithId(&'static str),
        /// Made before cluster ids: a CA, no id.
        Legacy,
    }

    #[derive(Clone, Copy, Debug)]
    enum Held {
        Nothing,
        Objects,
        Id(&'static str),
    }

    #[tokio::test]
    async fn a_data_dir_and_a_store_must_belong_to_one_cluster() {
        struct Case {
            name: &'static str,
            dir: Dir,
            store: Held,
            /// `Ok(Some(id))`: that id; `Ok(None)`: a new one; `Err(text)`.
            want: Result<Option<&'static str>, &'static str>,
        }
        let cases = [
            Case {
                name: "first start",
                dir: Dir::Empty,
                store: Held::Nothing,
                want: Ok(None),
            },
            Case {
                name: "restart",
                dir: Dir::WithId("c1"),
                store: Held::Id("c1"),
                want: Ok(Some("c1")),
            },
            Case {
                name: "truncated store",
                dir: Dir::WithId("c1"),
                store: Held::Nothing,
                want: Err("holds no objects"),
            },
            Case {
                name: "truncated store of a cluster from before ids",
                dir: Dir::Legacy,
                store: Held::Nothing,
                want: Err("restore the store from a backup"),
            },
            Case {
                name: "a cluster from before ids gets one",
                dir: Dir::Legacy,
                store: Held::Objects,
                want: Ok(None),
            },
            Case {
                name: "the data dir lost its id file",
                dir: Dir::Empty,
                store: Held::Id("c1"),
                want: Ok(Some("c1")),
            },
            Case {
                name: "another cluster's store",
                dir: Dir::WithId("c1"),
                store: Held::Id("c2"),
                want: Err("refusing to mix them"),
            },
        ];
        for case in cases {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let store = AnyStore::Memory(MemStore::new());
            match case.dir {
                Dir::Empty => {}
                Dir::WithId(id) => std::fs::write(dir.path().join(CLUSTER_ID_FILE), id)
                    .unwrap_or_else(|e| panic!("{e}")),
                Dir::Legacy => std::fs::write(dir.path().join("ca.crt"), "pem")
                    .unwrap_or_else(|e| panic!("{e}")),
            }
            let seeded = match case.store {
                Held::Nothing => Ok(0),
                Held::Objects => store.create("/registry/pods/ns/a", b"{}".to_vec()).await,
                Held::Id(id) => store.create(CLUSTER_ID_KEY, id.into()).await,
            };
            seeded.unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let got = ensure(dir.path(), &store, "the test store").await;
            match (case.want, got) {
                (Ok(want), Ok(id)) => {
                    if let Some(want) = want {
                        assert_eq!(id, want, "{}", case.name);
                    }
                    let marker = std::fs::read_to_string(dir.path().join(CLUSTER_ID_FILE))
                        .unwrap_or_default();
                    assert_eq!(marker.trim(), id, "{}: the data dir's id", case.name);
                    let stored = store.get(CLUSTER_ID_KEY).await.ok().flatten();
                    assert_eq!(
                        stored.map(|kv| kv.value),
                        Some(id.clone().into_bytes()),
                        "{}: the store's id",
                        case.name
                    );
                    // And the next start agrees.
                    let again = ensure(dir.path(), &store, "the test store").await;
                    assert_eq!(again.ok(), Some(id), "{}: restart", case.name);
                }
                (Err(want), Err(e)) => {
                    assert!(e.to_string().contains(want), "{}: {e}", case.name);
                    assert!(
                        store.get(CLUSTER_ID_KEY).await.ok().flatten().is_none()
                            || matches!(case.store, Held::Id(_)),
                        "{}: a refused start writes nothing",
                        case.name
                    );
                }
                (want, got) => panic!("{}: want {want:?}, got {got:?}", case.name),
            }
        }
    }
}
