//! A queue (spec/framework.md §5.7). A Queue without `status.state` counts as Open
//! (standalone use without Volcano's queue controller).
//!
//! Values that cannot mean anything are not used as they are (Volcano uses them), and
//! [`value_problems`] says so, once per object version, for the watch and the simulator to
//! report: a weight below 1 counts as 1, and a negative quantity in `spec.capability`,
//! `spec.deserved` or `spec.guarantee.resource` counts as not set (for capability cpu and memory
//! that is Volcano's reading too: no limit, or the parent's in hierarchical capacity).

use std::borrow::Cow;
use std::sync::Arc;

use apis::{Queue, ResourceList};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use super::quantity;
use super::resource::Resource;
use crate::conf::quoted;

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
        let non_empty = |l: &ResourceList| {
            let l = without_negatives(l);
            (!l.is_empty()).then(|| Resource::from_list(&l))
        };
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

/// Whether a quantity is below zero (a malformed one is not: it is reported where it is read).
fn is_negative(q: &Quantity) -> bool {
    quantity::parse_nano(&q.0).is_ok_and(|v| v < 0)
}

/// The list without its negative quantities.
fn without_negatives(list: &ResourceList) -> Cow<'_, ResourceList> {
    if !list.values().any(is_negative) {
        return Cow::Borrowed(list);
    }
    Cow::Owned(
        list.iter()
            .filter(|(_, q)| !is_negative(q))
            .map(|(k, q)| (k.clone(), q.clone()))
            .collect(),
    )
}

/// The HDRF weight of level `i` of a queue's `volcano.sh/hierarchy` path (plugins-core §3.8):
/// element `i` of `volcano.sh/hierarchy-weights` as a float, with anything below 1 (an
/// unparsable element counts as 0) raised to 1 so that `share / weight` never divides by zero.
/// A missing element crashes Volcano; it counts as 1 here. NaN and infinity are kept, as in
/// Volcano. The second value says what is wrong with the element, if anything.
pub fn hierarchy_weight(weights: &str, i: usize) -> (f64, Option<String>) {
    let Some(text) = weights.split('/').nth(i) else {
        return (
            1.0,
            Some(format!("has no weight for path level {i}; 1 is used")),
        );
    };
    // Go's ParseFloat and Rust's parser agree on decimal, exponent, "inf" and "nan" forms.
    match text.parse::<f64>() {
        Err(_) => (
            1.0,
            Some(format!(
                "weight {} at path level {i} is not a number; 1 is used",
                quoted(text)
            )),
        ),
        Ok(w) if w.is_nan() => (
            w,
            Some(format!(
                "weight NaN at path level {i}: that level then never orders its queues"
            )),
        ),
        Ok(w) if w < 1.0 => (
            1.0,
            Some(format!(
                "weight {} at path level {i} is below 1; 1 is used",
                quoted(text)
            )),
        ),
        Ok(w) if w.is_infinite() => (
            w,
            Some(format!(
                "weight {} at path level {i} is infinite: the queues below it always come first",
                quoted(text)
            )),
        ),
        Ok(w) => (w, None),
    }
}

/// What is wrong with the values of a Queue and what is used instead, one line each starting
/// with the field, e.g. `spec.capability.cpu: "-4" is negative; …`. Empty for a sound Queue.
pub fn value_problems(queue: &Queue) -> Vec<String> {
    let spec = &queue.spec;
    let mut problems = Vec::new();
    if spec.weight <= 0 {
        problems.push(format!(
            "spec.weight: {} is below 1 (the CRD allows 1 to 65535); 1 is used",
            spec.weight
        ));
    }
    for (field, list, meaning) in [
        ("spec.capability", &spec.capability, "no limit of its own"),
        ("spec.deserved", &spec.deserved, "nothing deserved"),
        (
            "spec.guarantee.resource",
            &spec.guarantee.resource,
            "nothing guaranteed",
        ),
    ] {
        for (name, q) in list.iter().filter(|(_, q)| is_negative(q)) {
            problems.push(format!(
                "{field}.{name}: {} is negative; ignored, as if {name} were not set ({meaning})",
                quoted(&q.0)
            ));
        }
    }
    let annotation = |k: &str| queue.metadata.annotations.as_ref()?.get(k);
    if let Some(path) = annotation(apis::keys::HIERARCHY).filter(|p| !p.is_empty()) {
        let weights = annotation(apis::keys::HIERARCHY_WEIGHTS).map_or("", String::as_str);
        for i in 1..path.split('/').count() {
            if let (_, Some(problem)) = hierarchy_weight(weights, i) {
                problems.push(format!(
                    "metadata.annotations[{}]: {} {problem} (hierarchy {})",
                    apis::keys::HIERARCHY_WEIGHTS,
                    quoted(weights),
                    quoted(path)
                ));
            }
        }
    }
    problems
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

/// Why a job of a queue that is not Open waits (closed, closing, unknown state).
pub fn not_open_message(queue: &str, state: &str) -> String {
    format!("queue {queue} is {state}, not Open: it admits no new jobs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(v: serde_json::Value) -> Queue {
        serde_json::from_value(v).expect("a Queue")
    }

    #[test]
    fn negative_quantities_count_as_not_set() {
        let q = queue(serde_json::json!({
            "metadata": {"name": "q1"},
            "spec": {
                "weight": 2,
                "capability": {"cpu": "-4", "memory": "2Gi", "nvidia.com/gpu": "-1"},
                "deserved": {"cpu": "-1"},
                "guarantee": {"resource": {"cpu": "1", "memory": "-1Mi"}}
            }
        }));
        let problems = value_problems(&q);
        let fields: Vec<&str> = problems
            .iter()
            .filter_map(|p| p.split_once(':').map(|(f, _)| f))
            .collect();
        assert_eq!(
            fields,
            [
                "spec.capability.cpu",
                "spec.capability.nvidia.com/gpu",
                "spec.deserved.cpu",
                "spec.guarantee.resource.memory"
            ]
        );
        let spec = QueueSpec::from_queue(Arc::new(q));
        let cap = spec
            .capability
            .as_ref()
            .expect("memory is still a capability");
        assert_eq!(
            (cap.milli_cpu, cap.memory),
            (0.0, 2.0 * 1024.0 * 1024.0 * 1024.0)
        );
        assert!(cap.scalars.is_empty(), "{cap:?}");
        assert_eq!(spec.deserved, None);
        let guarantee = spec.guarantee.as_ref().expect("cpu is still guaranteed");
        assert_eq!((guarantee.milli_cpu, guarantee.memory), (1000.0, 0.0));
    }

    #[test]
    fn weight_below_one_is_reported_and_counts_as_one() {
        let q = queue(serde_json::json!({"metadata": {"name": "q"}, "spec": {"weight": -3}}));
        assert_eq!(
            value_problems(&q),
            ["spec.weight: -3 is below 1 (the CRD allows 1 to 65535); 1 is used"]
        );
        assert_eq!(QueueSpec::from_queue(Arc::new(q)).weight, 1);
        let sound = queue(serde_json::json!({
            "metadata": {"name": "q", "annotations": {
                "volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/3"
            }},
            "spec": {"weight": 1, "capability": {"cpu": "0"}}
        }));
        assert!(value_problems(&sound).is_empty());
    }

    /// Each unusable HDRF weight is one problem of the Queue, found where the Queue is read (so
    /// reported once per Queue version), with the weight drf then uses.
    #[test]
    fn hierarchy_weights_problems_once_per_level() {
        let q = queue(serde_json::json!({
            "metadata": {"name": "q", "annotations": {
                "volcano.sh/hierarchy": "root/a/b/c/d",
                "volcano.sh/hierarchy-weights": "1/x/0.5/-inf"
            }},
            "spec": {"weight": 1}
        }));
        let problems = value_problems(&q);
        assert_eq!(problems.len(), 4, "{problems:#?}");
        for (problem, level) in problems.iter().zip(1..) {
            assert!(
                problem.contains(&format!("path level {level}")),
                "{problem}"
            );
            assert!(
                problem.ends_with("(hierarchy \"root/a/b/c/d\")"),
                "{problem}"
            );
        }
        let weights = "1/x/0.5/-inf";
        let used: Vec<f64> = (1..5).map(|i| hierarchy_weight(weights, i).0).collect();
        assert_eq!(used, [1.0, 1.0, 1.0, 1.0]);
        assert_eq!(hierarchy_weight("1/4", 1), (4.0, None));
        let (inf, problem) = hierarchy_weight("1/inf", 1);
        assert!(inf.is_infinite() && problem.is_some());
        // Without a hierarchy path the weights are not used: nothing to report.
        let flat = queue(serde_json::json!({
            "metadata": {"name": "q", "annotations": {"volcano.sh/hierarchy-weights": "x"}},
            "spec": {"weight": 1}
        }));
        assert!(value_problems(&flat).is_empty());
    }
}
