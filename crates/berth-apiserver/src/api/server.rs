//! The API server's state, its settings, and its start: the watch caches
//! spawned, the system namespaces and system PriorityClasses created.

use std::sync::Arc;

use berth_core::clock::Clock;
use berth_core::priority::SYSTEM_PRIORITY_CLASSES;
use berth_store::{AnyStore, Store, StoreError};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Value, json};

use crate::admission::Operation;
use crate::allocators::Allocators;
use crate::allocators::range::{PortRange, ServiceCidr};
use crate::auth::{Authenticator, User};
use crate::body::BodyLimits;
use crate::cache::{CacheLimits, HistoryBudget, ResourceCache};
use crate::objects::for_storage;
use crate::objects::name_of;
use crate::registry::Registry;
use crate::resources::{NAMESPACES, PRIORITY_CLASSES, RESOURCES, ResourceType};
use crate::status::ApiError;
use crate::strategy;
use crate::watch_limits::{WatchCounter, WatchLimits};

/// Bodies above this are refused with 413, as kube-apiserver's
/// `MaxRequestBodyBytes` (3 MiB) refuses them (the default of
/// `--max-request-body-bytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

pub use crate::auth::NODE_CREDENTIAL_PATH;

pub use crate::strategy::namespace::SYSTEM_NAMESPACES;

/// Server settings that change API behaviour.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub strategy: strategy::StrategyConfig,
    /// The watch caches' history and slow-watcher limits.
    pub watch_cache: CacheLimits,
    /// Concurrent watches per client and in total.
    pub watches: WatchLimits,
    pub version: VersionInfo,
    /// Largest request body read (413 past it).
    pub max_request_body_bytes: usize,
    /// How request bodies are decoded (nesting depth).
    pub body: BodyLimits,
    /// API Priority and Fairness: the server's seats and queue wait.
    pub flow_control: crate::flow_control::FlowControlLimits,
    /// When set, the random suffixes of generated names (`generateName`)
    /// come from a generator with this seed, so a simulation given the
    /// same seed names its objects the same; else from the OS.
    pub name_seed: Option<u64>,
    /// `--service-cluster-ip-range`: where Services' cluster IPs come from.
    pub service_cluster_ip_range: ServiceCidr,
    /// `--service-node-port-range`: where their node ports come from.
    pub service_node_port_range: PortRange,
    /// What answers `pods/{name}/scheduling` (the `berth` binary wires
    /// berth-scheduler's framework; none: a 503).
    pub explainer: super::explainer::Explainer,
    /// The node lifecycle controller's rates and thresholds, which the
    /// live page's zone states (`/ui/api/zones`) are computed with.
    pub zone_rates: berth_core::zone::ZoneRates,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            strategy: strategy::StrategyConfig::default(),
            watch_cache: CacheLimits::default(),
            watches: WatchLimits::default(),
            version: VersionInfo::default(),
            max_request_body_bytes: MAX_BODY_BYTES,
            body: BodyLimits::default(),
            flow_control: crate::flow_control::FlowControlLimits::default(),
            name_seed: None,
            service_cluster_ip_range: ServiceCidr::default(),
            service_node_port_range: PortRange::default(),
            explainer: super::explainer::Explainer::default(),
            zone_rates: berth_core::zone::ZoneRates::default(),
        }
    }
}

/// What `/version` reports.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    pub major: String,
    pub minor: String,
    pub git_version: String,
}

impl Default for VersionInfo {
    fn default() -> Self {
        VersionInfo {
            major: "1".into(),
            minor: "37".into(),
            git_version: format!("v1.37.0-berth.{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// The API server's state.
pub struct ApiServer {
    pub store: AnyStore,
    /// The store and the watch caches, kept consistent.
    pub(crate) registry: Registry,
    pub clock: Clock,
    pub auth: Authenticator,
    pub config: ApiConfig,
    /// The watches open now (see [`crate::watch_limits`]).
    pub watches: Arc<WatchCounter>,
    /// API Priority and Fairness (see [`crate::flow_control`]).
    pub flow_control: Arc<crate::flow_control::FlowControl>,
    /// The watch caches' shared history budget.
    pub history_budget: Arc<HistoryBudget>,
    /// The seeded source of generated names' suffixes (`name_seed`).
    pub(crate) seeded_names: Option<std::sync::Mutex<berth_core::splitmix::SplitMix64>>,
    /// Services' cluster IPs and node ports.
    pub allocators: Allocators,
    /// The kubelet endpoints of simulated nodes in this process.
    pub kubelets: crate::kubelets::Kubelets,
    /// The PriorityClasses as Priority admission last read them.
    pub(crate) priority_classes: std::sync::Mutex<ParsedPriorityClasses>,
    /// The live page's one-time login codes (see [`crate::ui_login`]).
    pub ui_logins: crate::ui_login::LoginCodes,
}

/// The PriorityClasses parsed once per version of the whole set: every pod
/// create reads them for Priority admission, and they seldom change.
#[derive(Default)]
pub(crate) struct ParsedPriorityClasses {
    /// The revision of each class, in key order: revisions are unique per
    /// write, so the same list means the same objects.
    revisions: Vec<i64>,
    classes: Arc<[PriorityClass]>,
}

impl ApiServer {
    /// A server over `store`; spawns the watch caches and creates the
    /// system namespaces. Call from within a tokio runtime.
    pub async fn new(
        store: AnyStore,
        clock: Clock,
        config: ApiConfig,
    ) -> Result<Arc<ApiServer>, ApiError> {
        let budget = HistoryBudget::new(config.watch_cache.history_bytes);
        let caches = RESOURCES
            .iter()
            .filter(|rt| rt.stored_as.is_none() && rt.strategy.is_stored())
            .map(|rt| {
                ResourceCache::with_limits(
                    rt,
                    &config.watch_cache,
                    budget.clone(),
                    strategy::selectable_fields,
                )
            })
            .collect::<Vec<_>>();
        crate::cache::spawn(caches.clone(), store.clone());
        let allocators = Allocators::new(
            store.clone(),
            config.service_cluster_ip_range,
            config.service_node_port_range,
        );
        let server = Arc::new(ApiServer {
            registry: Registry::new(store.clone(), caches),
            store,
            clock: clock.clone(),
            auth: Authenticator::new(),
            watches: WatchCounter::new(config.watches),
            flow_control: crate::flow_control::FlowControl::new(config.flow_control),
            history_budget: budget,
            seeded_names: config
                .name_seed
                .map(|seed| std::sync::Mutex::new(berth_core::splitmix::SplitMix64::new(seed))),
            allocators,
            priority_classes: Default::default(),
            kubelets: crate::kubelets::Kubelets::default(),
            ui_logins: crate::ui_login::LoginCodes::new(
                clock.clone(),
                crate::ui_login::LOGIN_CODE_TTL,
            ),
            config,
        });
        for ns in SYSTEM_NAMESPACES {
            server
                .create_at_start(&NAMESPACES, json!({"metadata": {"name": ns}}))
                .await?;
            server.ensure_default_service_account(ns).await;
        }
        for class in SYSTEM_PRIORITY_CLASSES {
            let object = serde_json::to_value(class.object()).map_err(ApiError::internal)?;
            server.create_at_start(&PRIORITY_CLASSES, object).await?;
        }
        Ok(server)
    }

    /// Creates a cluster-scoped object every cluster has (a system
    /// namespace, a system PriorityClass) unless it exists: its strategy's
    /// create-time changes, no admission (the server's own objects).
    async fn create_at_start(&self, rt: &ResourceType, mut object: Value) -> Result<(), ApiError> {
        let key = rt.key("", name_of(&object));
        if self
            .store
            .get(&key)
            .await
            .map_err(ApiError::internal)?
            .is_some()
        {
            return Ok(());
        }
        self.prepare_new(rt, &mut object, "");
        rt.strategy.on_create(&mut object);
        match self.store.create(&key, for_storage(&object)).await {
            Ok(_) | Err(StoreError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(ApiError::internal(e)),
        }
    }

    /// Whether every watch cache has loaded.
    pub async fn is_ready(&self) -> bool {
        self.registry.is_ready().await
    }

    pub(crate) fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// Who is writing and when, for the strategies, and the objects the
    /// type's admission reads (the PriorityClasses, from the watch cache).
    pub(crate) async fn strategy_context<'a>(
        &'a self,
        user: &'a User,
        rt: &ResourceType,
        operation: Operation,
    ) -> Result<strategy::Context<'a>, ApiError> {
        let priority_classes = if rt.strategy.reads_priority_classes(operation) {
            self.priority_classes().await?
        } else {
            Arc::default()
        };
        Ok(strategy::Context {
            user,
            now: self.now(),
            config: &self.config.strategy,
            priority_classes,
        })
    }

    /// Every PriorityClass the watch cache holds (upstream's admission
    /// reads an informer, as current as the cache), parsed again only when
    /// one of them changed.
    async fn priority_classes(&self) -> Result<Arc<[PriorityClass]>, ApiError> {
        let (entries, _) = self
            .registry
            .cache(&PRIORITY_CLASSES)?
            .list("", |_| true)
            .await;
        let revisions: Vec<i64> = entries.iter().map(|entry| entry.rv).collect();
        {
            let parsed = self
                .priority_classes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if parsed.revisions == revisions {
                return Ok(parsed.classes.clone());
            }
        }
        let classes: Arc<[PriorityClass]> = entries
            .iter()
            .map(|entry| serde_json::from_str(&entry.json).map_err(ApiError::internal))
            .collect::<Result<Vec<_>, _>>()?
            .into();
        *self
            .priority_classes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = ParsedPriorityClasses {
            revisions,
            classes: classes.clone(),
        };
        Ok(classes)
    }
}
