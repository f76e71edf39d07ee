//! ImageLocality: nodes that already have the pod's container images
//! score higher, by the images' sizes, damped when an image is on few of
//! the nodes (to avoid piling pods onto the one node that has it). Score
//! only. Ported from upstream `plugins/imagelocality/image_locality.go`;
//! image sizes come from the node's `status.images`.

use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status, score_each,
};

/// The plugin's registry name.
pub const NAME: &str = "ImageLocality";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 1;

pub const PRE_SCORE_STATE_KEY: &str = "PreScoreImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this sum a node scores 0.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: above this sum a node scores 100.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The ImageLocality plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImageLocality;

/// PreScore's per-pod data (berth's: upstream reads these per node): the
/// pod's normalised image names with how many nodes have each, and the
/// number of nodes and containers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreScoreState {
    pub images: Vec<(String, usize)>,
    pub total_nodes: usize,
    pub containers: usize,
}

/// `normalizedImageName`: a name without a tag gets `:latest`.
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':');
    let slash = name.rfind('/');
    if colon.map(|c| c as isize).unwrap_or(-1) <= slash.map(|s| s as isize).unwrap_or(-1) {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// `calculatePriority`: the sum clamped to the thresholds, scaled to 0..=100.
pub fn calculate_priority(sum_scores: i64, num_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD.saturating_mul(num_containers as i64);
    if max_threshold <= MIN_THRESHOLD {
        return 0;
    }
    let sum = sum_scores.clamp(MIN_THRESHOLD, max_threshold);
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

/// `scaledImageScore`: the image's size times the share of nodes having it.
pub fn scaled_image_score(size: i64, num_nodes: usize, total_nodes: usize) -> i64 {
    let spread = num_nodes as f64 / total_nodes.max(1) as f64;
    (size as f64 * spread) as i64
}

fn pod_images(pod: &PodInfo) -> (Vec<String>, usize) {
    let Some(spec) = pod.pod().spec.as_ref() else {
        return (Vec::new(), 0);
    };
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    let mut names: Vec<String> = containers
        .clone()
        .filter_map(|c| c.image.as_deref())
        .map(normalized_image_name)
        .collect();
    names.extend(
        spec.volumes
            .iter()
            .flatten()
            .filter_map(|v| v.image.as_ref())
            .filter_map(|i| i.reference.as_deref())
            .map(normalized_image_name),
    );
    (names, containers.count())
}

impl ImageLocality {
    fn state(pod: &PodInfo, snapshot: &Snapshot<'_>) -> PreScoreState {
        let (names, containers) = pod_images(pod);
        PreScoreState {
            images: names
                .into_iter()
                .map(|n| {
                    let on = snapshot.image_nodes.get(&n).copied().unwrap_or(0);
                    (n, on)
                })
                .collect(),
            total_nodes: snapshot.nodes.len(),
            containers,
        }
    }

    /// `sumImageScores` then `calculatePriority` for one node.
    pub fn node_score(state: &PreScoreState, node: &NodeInfo) -> i64 {
        if node.images.is_empty() {
            return 0;
        }
        let sum: i64 = state
            .images
            .iter()
            .filter_map(|(name, on)| {
                node.images
                    .get(name)
                    .map(|&size| scaled_image_score(size, *on, state.total_nodes))
            })
            .sum();
        calculate_priority(sum, state.containers)
    }
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreScorePlugin for ImageLocality {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let s = ImageLocality::state(pod, snapshot);
        if s.images.iter().all(|&(_, on)| on == 0) {
            // No node has any of the images: every node would score 0,
            // and a Skip adds the same nothing to every node's total.
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, s);
        Status::success()
    }
}

impl ScorePlugin for ImageLocality {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut scores = Vec::with_capacity(1);
        self.score_all(state, pod, &[node], &mut scores)?;
        Ok(scores.first().map_or(0, |s| s.score))
    }

    fn score_all(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut Vec<NodeScore>,
    ) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(Status::error(format!(
                "reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME));
        };
        score_each(nodes, scores, |node| Ok(ImageLocality::node_score(s, node)))
    }
}

#[cfg(test)]
mod tests;
