//! The types the garbage collector follows, read from the API server's
//! discovery (upstream's `GetDeletableResources`: the preferred version of
//! every resource that can be deleted, listed and watched, less the
//! ignored ones, Events), and the REST mapping of an owner reference's
//! apiVersion and kind to a served resource (any served version).
//!
//! Nothing here names a type: every type the API server serves (the
//! workload types included, once served) is followed.

use kube::discovery::{ApiResource, Discovery, Scope, verbs};

/// Resources the garbage collector never follows (upstream's default
/// `ignoredResources`): group and plural.
pub const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];

/// One served resource (a version of it).
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub resource: ApiResource,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    /// Its version is the group's preferred one.
    pub preferred: bool,
}

impl Served {
    /// Whether the garbage collector follows it: preferred, deletable,
    /// listable and watchable, and not ignored.
    fn is_followed(&self) -> bool {
        let can = |verb: &str| self.verbs.iter().any(|v| v == verb);
        self.preferred
            && can(verbs::DELETE)
            && can(verbs::LIST)
            && can(verbs::WATCH)
            && !IGNORED.contains(&(self.resource.group.as_str(), self.resource.plural.as_str()))
    }
}

/// Every served resource, from one discovery.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    all: Vec<Served>,
}

impl Resources {
    pub fn new(all: Vec<Served>) -> Resources {
        Resources { all }
    }

    /// Reads the API server's discovery.
    pub async fn discover(client: kube::Client) -> Result<Resources, kube::Error> {
        let discovery = Discovery::new(client).run().await?;
        let mut all = Vec::new();
        for group in discovery.groups() {
            let preferred = group.preferred_version_or_latest().to_string();
            for version in group.versions() {
                for (resource, capabilities) in group.versioned_resources(version) {
                    all.push(Served {
                        resource,
                        namespaced: capabilities.scope == Scope::Namespaced,
                        verbs: capabilities.operations.clone(),
                        preferred: version == preferred,
                    });
                }
            }
        }
        Ok(Resources::new(all))
    }

    /// The resources to follow.
    pub fn followed(&self) -> Vec<&Served> {
        self.all.iter().filter(|s| s.is_followed()).collect()
    }

    /// The served resource of objects of `kind` in `api_version`, if served.
    pub fn resolve(&self, api_version: &str, kind: &str) -> Option<&Served> {
        self.all
            .iter()
            .find(|s| s.resource.api_version == api_version && s.resource.kind == kind)
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A served resource for tests: `group/version`, kind, plural, scope,
    /// verbs.
    pub fn served(
        api_version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        verbs: &[&str],
    ) -> Served {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Served {
            resource: ApiResource {
                group: group.into(),
                version: version.into(),
                api_version: api_version.into(),
                kind: kind.into(),
                plural: plural.into(),
            },
            namespaced,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            preferred: true,
        }
    }

    const ALL: &[&str] = &["delete", "list", "watch"];

    /// Upstream `TestGetDeletableResources`: only what can be deleted,
    /// listed and watched, in its preferred version, less Events.
    #[test]
    fn followed_resources_are_deletable_listable_and_watchable() {
        let mut old_version = served("apps/v1beta1", "Deployment", "deployments", true, ALL);
        old_version.preferred = false;
        let resources = Resources::new(vec![
            served("apps/v1", "Pod", "pods", true, ALL),
            served("apps/v1", "Service", "services", true, &[]),
            served("acme/v1", "Widget", "widgets", true, &["delete"]),
            served("v1", "Event", "events", true, ALL),
            served("events.k8s.io/v1", "Event", "events", true, ALL),
            served(
                "v1",
                "Node",
                "nodes",
                false,
                &["create", "delete", "get", "list", "patch", "watch"],
            ),
            old_version,
        ]);
        let followed: Vec<(&str, &str)> = resources
            .followed()
            .iter()
            .map(|s| (s.resource.api_version.as_str(), s.resource.plural.as_str()))
            .collect();
        assert_eq!(followed, vec![("apps/v1", "pods"), ("v1", "nodes")]);
        assert!(
            resources.resolve("apps/v1beta1", "Deployment").is_some(),
            "any served version resolves"
        );
        assert!(
            resources
                .resolve("extensions/v1beta1", "Deployment")
                .is_none()
        );
        assert!(Resources::default().followed().is_empty());
    }
}
