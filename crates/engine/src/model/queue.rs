//! A queue (spec/framework.md §5.7). A Queue without `status.state` counts as Open
//! (standalone use without Volcano's queue controller).

use std::sync::Arc;

use apis::Queue;
use k8s_openapi::jiff::Timestamp;

use super::resource::Resource;

/// Parsed, immutable facts about a Queue object.
#[derive(Debug)]
pub struct QueueSpec {
    pub name: String,
    pub weight: i32,
    pub capability: Option<Resource>,
    pub deserved: Option<Resource>,
    pub guarantee: Option<Resource>,
    pub reclaimable: bool,
    pub parent: String,
    pub priority: i32,
    /// Effective state: `status.state`, or `Open` when unset.
    pub state: String,
    pub hierarchy: String,
    pub hierarchy_weights: String,
    pub creation: Option<Timestamp>,
    /// `status.allocated` as last written (to skip unchanged writes).
    pub status_allocated: Option<Resource>,
    pub queue: Arc<Queue>,
}

impl QueueSpec {
    pub fn from_queue(queue: Arc<Queue>) -> QueueSpec {
        let q = &queue;
        let annotation = |k: &str| {
            q.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(k))
                .cloned()
                .unwrap_or_default()
        };
        let spec = &q.spec;
        let state = q
            .status
            .as_ref()
            .map(|s| s.state.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| apis::queue_state::OPEN.to_string());
        let non_empty = |l: &apis::ResourceList| (!l.is_empty()).then(|| Resource::from_list(l));
        QueueSpec {
            name: q.metadata.name.clone().unwrap_or_default(),
            // The CRD defaults and validates weight ≥ 1; an object that skipped the API server
            // (simulator input without `weight`) gets the same default.
            weight: if spec.weight <= 0 { 1 } else { spec.weight },
            capability: non_empty(&spec.capability),
            deserved: non_empty(&spec.deserved),
            guarantee: non_empty(&spec.guarantee.resource),
            reclaimable: q.reclaimable(),
            parent: spec.parent.clone(),
            priority: spec.priority,
            state,
            hierarchy: annotation(apis::keys::HIERARCHY),
            hierarchy_weights: annotation(apis::keys::HIERARCHY_WEIGHTS),
            creation: q.metadata.creation_timestamp.as_ref().map(|t| t.0),
            status_allocated: q.status.as_ref().map(|s| Resource::from_list(&s.allocated)),
            queue: queue.clone(),
        }
    }

    pub fn is_open(&self) -> bool {
        self.state == apis::queue_state::OPEN
    }
}

/// The session's view of one queue.
#[derive(Clone, Debug)]
pub struct QueueInfo {
    pub spec: Arc<QueueSpec>,
}

impl QueueInfo {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}
