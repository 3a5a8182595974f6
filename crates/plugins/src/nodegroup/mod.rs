//! `nodegroup`: queue ↔ node-group affinity and per-group resource limits
//! (spec/plugins-more.md §3, checked against Volcano's `plugins/nodegroup/nodegroup.go`).
//!
//! Nodes belong to a group through the label `volcano.sh/nodegroup-name`. A Queue's
//! `spec.affinity` lists groups its pods must or should use (`nodeGroupAffinity`) and groups they
//! must or should avoid (`nodeGroupAntiAffinity`); a task follows the queue of its job. The
//! predicate keeps a task off nodes without the label (unless `strict: false` and the queue has
//! no rules), off labelled nodes when the queue has no rules, and off groups the rules do not
//! accept. The node score is 100 for a required group, plus 50 for a preferred one (or a share
//! of 50 by list position with `enablePreferredOrder`), and −1 for an anti-preferred group.
//!
//! The queue annotation `volcano.sh/nodegroup-resource-limits` (JSON: group → resource list)
//! caps what the queue may hold in each group; the amounts held are seeded from allocated tasks
//! at open and kept current by the allocate/deallocate event handlers. With the tier option
//! `enableHierarchy`, a queue without `spec.affinity` uses the affinity of its nearest ancestor
//! that has one (limits are never inherited).
//!
//! Every failure is an `UnschedulableAndUnresolvable` status carrying Volcano's reason text, so
//! the pod's `PodScheduled` message reads as Volcano's does.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use apis::keys;
use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::quantity;
use engine::model::resource::MIN_RESOURCE;
use engine::model::{FitError, FitStatus, NodeId, QueueId, Resource, StatusCode, TaskId};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

#[cfg(test)]
mod tests;

/// Registered plugin name.
pub const NAME: &str = "nodegroup";

/// Argument: whether nodes without the group label are refused even to queues without rules.
const STRICT_KEY: &str = "strict";
/// Argument: score preferred groups by their position in the list.
const PREFERRED_ORDER_KEY: &str = "enablePreferredOrder";

/// Score of a required group; a preferred group adds half of it.
const BASE_SCORE: f64 = 100.0;
/// Score of an anti-preferred group, whatever else applies.
const ANTI_PREFERRED_SCORE: f64 = -1.0;

// Reason texts of Volcano's `errors.go`, shown to users in the pod's PodScheduled message.
pub const ERR_AFFINITY_NOT_FOUND: &str = "node group affinity not specified";
pub const ERR_LABEL_NOT_FOUND: &str = "node group label not found";
pub const ERR_NODE_UNSATISFIED: &str = "node does not satisfy the node group affinity";
pub const ERR_LIMIT_INVALID: &str = "node group resource limit annotation invalid";
pub const ERR_LIMIT_EXCEEDED: &str = "node group resource limit exceeded";

/// Builds the plugin, reading `strict` (default true) and `enablePreferredOrder` (default false).
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    let read = |key: &str, default: bool| {
        let mut v = default;
        if let Err(e) = args.get_bool(key, &mut v) {
            tracing::warn!(plugin = NAME, key, error = %e, "argument ignored, default kept");
        }
        v
    };
    Box::new(NodeGroupPlugin {
        strict: read(STRICT_KEY, true),
        enable_preferred_order: read(PREFERRED_ORDER_KEY, false),
        attrs: Vec::new(),
    })
}

struct NodeGroupPlugin {
    strict: bool,
    enable_preferred_order: bool,
    /// One entry per session queue, indexed by `QueueId`.
    attrs: Vec<QueueAttr>,
}

/// A queue's node-group rules as sets.
#[derive(Debug, Default, PartialEq)]
struct GroupAffinity {
    required: HashSet<String>,
    preferred: HashSet<String>,
    anti_required: HashSet<String>,
    anti_preferred: HashSet<String>,
    /// Preferred group → position in the list; a repeated name keeps its last position.
    preferred_index: HashMap<String, usize>,
}

/// The cap of one group: the amounts, and the resource names the annotation listed (only those
/// are limited).
#[derive(Debug, PartialEq)]
struct GroupLimit {
    resource: Resource,
    names: Vec<String>,
}

#[derive(Debug, Default)]
struct QueueAttr {
    /// `None` when the queue (and, with hierarchy, every ancestor) has no `spec.affinity`.
    /// Shared with the descendants that inherit it.
    affinity: Option<Arc<GroupAffinity>>,
    /// Group → cap; empty when the annotation is absent or empty.
    limits: BTreeMap<String, GroupLimit>,
    /// Set when the annotation does not parse; every task of the queue is then refused.
    limit_err: Option<String>,
    /// Group → what the queue's allocated tasks hold there.
    allocated: HashMap<String, Resource>,
}

impl GroupAffinity {
    fn from_queue(affinity: &apis::Affinity) -> Self {
        let mut out = GroupAffinity::default();
        if let Some(a) = &affinity.node_group_affinity {
            let preferred = &a.preferred_during_scheduling_ignored_during_execution;
            out.required = a
                .required_during_scheduling_ignored_during_execution
                .iter()
                .cloned()
                .collect();
            out.preferred = preferred.iter().cloned().collect();
            for (i, group) in preferred.iter().enumerate() {
                out.preferred_index.insert(group.clone(), i);
            }
        }
        if let Some(a) = &affinity.node_group_anti_affinity {
            out.anti_required = a
                .required_during_scheduling_ignored_during_execution
                .iter()
                .cloned()
                .collect();
            out.anti_preferred = a
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .cloned()
                .collect();
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.required.is_empty()
            && self.preferred.is_empty()
            && self.anti_required.is_empty()
            && self.anti_preferred.is_empty()
    }

    /// Whether the rules accept `group`. Anti-required overrides the affinity lists, and
    /// anti-preferred (checked last) accepts the group again, as Volcano's code does.
    fn accepts(&self, group: &str) -> bool {
        let mut ok = self.required.contains(group) || self.preferred.contains(group);
        if self.anti_required.contains(group) {
            ok = false;
        }
        if self.anti_preferred.contains(group) {
            ok = true;
        }
        ok
    }

    fn score(&self, group: &str, preferred_order: bool) -> f64 {
        let mut score = 0.0;
        if self.required.contains(group) {
            score += BASE_SCORE;
        }
        if preferred_order {
            if let Some(&i) = self.preferred_index.get(group) {
                // Distinct names count, so a repeated name's last index can reach n (bonus ≤ 0).
                let n = self.preferred_index.len() as f64;
                score += 0.5 * BASE_SCORE * (n - i as f64) / n;
            }
        } else if self.preferred.contains(group) {
            score += 0.5 * BASE_SCORE;
        }
        if self.anti_preferred.contains(group) {
            score = ANTI_PREFERRED_SCORE;
        }
        score
    }
}

/// Reads the limits annotation. `Ok(empty)` when it is absent or empty; `Err` when it is not a
/// JSON object of resource lists, or a quantity does not parse (Volcano's JSON decoding of
/// `map[string]v1.ResourceList` fails in both cases).
fn parse_limits(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<BTreeMap<String, GroupLimit>, String> {
    let raw = annotations
        .and_then(|a| a.get(keys::NODE_GROUP_RESOURCE_LIMITS))
        .map(String::as_str)
        .unwrap_or("");
    if raw.is_empty() {
        return Ok(BTreeMap::new());
    }
    type RawLimits = Option<BTreeMap<String, Option<BTreeMap<String, serde_json::Value>>>>;
    let parsed: RawLimits = serde_json::from_str(raw)
        .map_err(|e| format!("parse annotation {}: {e}", keys::NODE_GROUP_RESOURCE_LIMITS))?;
    let mut limits = BTreeMap::new();
    // JSON `null` for the whole object or for a group decodes to an empty map in Go.
    for (group, list) in parsed.unwrap_or_default() {
        let mut quantities = BTreeMap::new();
        for (name, value) in list.unwrap_or_default() {
            let q = json_quantity(&value).map_err(|e| {
                format!(
                    "parse annotation {}: group {group}, {name}: {e}",
                    keys::NODE_GROUP_RESOURCE_LIMITS
                )
            })?;
            quantities.insert(name, q);
        }
        let limit = GroupLimit {
            resource: Resource::from_list(&quantities),
            names: quantities.keys().cloned().collect(),
        };
        limits.insert(group, limit);
    }
    Ok(limits)
}

/// A JSON value as Kubernetes' `Quantity` decodes it: a string or a bare number is parsed,
/// `null` is zero, anything else is an error.
fn json_quantity(value: &serde_json::Value) -> Result<Quantity, String> {
    let text = match value {
        serde_json::Value::Null => return Ok(Quantity("0".to_string())),
        serde_json::Value::String(s) => s.trim().to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        other => return Err(format!("invalid quantity {other}")),
    };
    quantity::parse_milli(&text).map_err(|e| e.to_string())?;
    Ok(Quantity(text))
}

/// Volcano's `greaterThanResourceLimit`: over the cap by at least the ε of §0.7.
fn exceeds(used: f64, limit: f64) -> bool {
    used > limit && used - limit >= MIN_RESOURCE
}

/// Names of the limited resources that `used` would exceed.
fn exceeded_names(used: &Resource, limit: &GroupLimit) -> Vec<String> {
    limit
        .names
        .iter()
        .filter(|name| exceeds(used.get(name), limit.resource.get(name)))
        .cloned()
        .collect()
}

/// The queue named `name`, if it is in the session.
fn queue_named(ssn: &SessionState, name: &str) -> Option<QueueId> {
    ssn.queue_id(name)
}

/// The affinity a queue without its own inherits: that of the nearest ancestor with one,
/// following `spec.parent` (empty means `root`; `root` has no parent). The walk stops at a
/// missing parent or, with a warning, when it comes back to a queue it has seen (a cycle).
fn inherited_affinity(
    ssn: &SessionState,
    own: &[Option<Arc<GroupAffinity>>],
    queue: QueueId,
) -> Option<Arc<GroupAffinity>> {
    let mut seen = HashSet::from([queue]);
    let mut current = queue;
    loop {
        let spec = &ssn.queue(current).spec;
        if spec.name == apis::ROOT_QUEUE {
            return None;
        }
        let parent_name = if spec.parent.is_empty() {
            apis::ROOT_QUEUE
        } else {
            spec.parent.as_str()
        };
        let Some(parent) = queue_named(ssn, parent_name) else {
            tracing::warn!(
                plugin = NAME,
                queue = %spec.name,
                parent = parent_name,
                "parent queue not found; hierarchy stops here"
            );
            return None;
        };
        if !seen.insert(parent) {
            tracing::warn!(
                plugin = NAME,
                queue = %ssn.queue(queue).spec.name,
                "cycle in the queue hierarchy; no affinity inherited beyond it"
            );
            return None;
        }
        if let Some(a) = &own[parent.index()] {
            return Some(a.clone());
        }
        current = parent;
    }
}

impl NodeGroupPlugin {
    /// Builds every queue's record, applies hierarchy inheritance when enabled, and seeds the
    /// allocated amounts from the tasks already placed.
    fn init(&mut self, ssn: &SessionState) {
        let own: Vec<Option<Arc<GroupAffinity>>> = ssn
            .queues()
            .iter()
            .map(|q| {
                q.spec
                    .queue
                    .spec
                    .affinity
                    .as_ref()
                    .map(|a| Arc::new(GroupAffinity::from_queue(a)))
            })
            .collect();
        let hierarchy = ssn.hierarchy_enabled(NAME);
        self.attrs = ssn
            .queue_ids()
            .map(|id| {
                let queue = ssn.queue(id);
                let affinity = match &own[id.index()] {
                    Some(a) => Some(a.clone()),
                    None if hierarchy => inherited_affinity(ssn, &own, id),
                    None => None,
                };
                let (limits, limit_err) =
                    match parse_limits(queue.spec.queue.metadata.annotations.as_ref()) {
                        Ok(limits) => (limits, None),
                        Err(e) => {
                            tracing::warn!(
                                plugin = NAME,
                                queue = queue.name(),
                                error = %e,
                                "invalid {} annotation; the queue's tasks are refused",
                                keys::NODE_GROUP_RESOURCE_LIMITS
                            );
                            (BTreeMap::new(), Some(e))
                        }
                    };
                QueueAttr {
                    affinity,
                    limits,
                    limit_err,
                    allocated: HashMap::new(),
                }
            })
            .collect();

        for job in ssn.jobs() {
            let Some(queue) = job.queue else { continue };
            for &task in &job.tasks {
                if ssn.task(task).status.is_allocated() {
                    self.add_allocated(ssn, queue, task);
                }
            }
        }
    }

    fn attr_of_task(&self, ssn: &SessionState, task: TaskId) -> Option<&QueueAttr> {
        self.attrs.get(ssn.queue_of_task(task)?.index())
    }

    /// The group of the node the task sits on, if that node carries the label.
    fn task_group(ssn: &SessionState, task: TaskId) -> Option<&str> {
        let node = ssn.task(task).node?;
        node_group(ssn, node)
    }

    fn add_allocated(&mut self, ssn: &SessionState, queue: QueueId, task: TaskId) {
        let Some(group) = Self::task_group(ssn, task) else {
            return;
        };
        if let Some(attr) = self.attrs.get_mut(queue.index()) {
            attr.allocated
                .entry(group.to_string())
                .or_default()
                .add(ssn.task(task).resreq());
        }
    }

    fn sub_allocated(&mut self, ssn: &SessionState, queue: QueueId, task: TaskId) {
        let Some(group) = Self::task_group(ssn, task) else {
            return;
        };
        if let Some(held) = self
            .attrs
            .get_mut(queue.index())
            .and_then(|a| a.allocated.get_mut(group))
        {
            held.sub(ssn.task(task).resreq());
        }
    }

    /// Whether placing `task` in `group` keeps the queue within that group's cap.
    fn within_limit(ssn: &SessionState, attr: &QueueAttr, task: TaskId, group: &str) -> bool {
        let Some(limit) = attr.limits.get(group) else {
            return true;
        };
        let mut future = attr.allocated.get(group).cloned().unwrap_or_default();
        future.add(ssn.task(task).resreq());
        let over = exceeded_names(&future, limit);
        if !over.is_empty() {
            tracing::debug!(
                plugin = NAME,
                task = ssn.task(task).key(),
                group,
                resources = ?over,
                "node group resource limit exceeded"
            );
        }
        over.is_empty()
    }
}

/// The node's group label, if any.
fn node_group(ssn: &SessionState, node: NodeId) -> Option<&str> {
    ssn.node(node)
        .spec
        .node
        .metadata
        .labels
        .as_ref()?
        .get(keys::NODE_GROUP_NAME)
        .map(String::as_str)
}

fn fail(reason: &'static str) -> FitError {
    FitError::new(FitStatus::new(
        StatusCode::UnschedulableAndUnresolvable,
        reason,
        NAME,
    ))
}

impl Plugin for NodeGroupPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.init(ssn);
    }

    fn on_session_close(&mut self, _ssn: &mut SessionState) {
        self.attrs.clear();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE | ExtensionPoints::NODE_ORDER | ExtensionPoints::EVENT_HANDLER
    }

    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        if ssn.job_of(task).is_none() {
            // Volcano returns a plain error here, not a fit error.
            return Err(FitError::error(
                format!("job of task {} not found in session", ssn.task(task).key()),
                NAME,
            ));
        }
        let attr = self.attr_of_task(ssn, task);
        if attr.is_some_and(|a| a.limit_err.is_some()) {
            return Err(fail(ERR_LIMIT_INVALID));
        }
        let rules = attr
            .and_then(|a| a.affinity.as_deref())
            .filter(|a| !a.is_empty());
        let Some(group) = node_group(ssn, node) else {
            if !self.strict && rules.is_none() {
                return Ok(());
            }
            return Err(fail(ERR_LABEL_NOT_FOUND));
        };
        let (Some(attr), Some(rules)) = (attr, rules) else {
            return Err(fail(ERR_AFFINITY_NOT_FOUND));
        };
        if !rules.accepts(group) {
            return Err(fail(ERR_NODE_UNSATISFIED));
        }
        if !Self::within_limit(ssn, attr, task, group) {
            return Err(fail(ERR_LIMIT_EXCEEDED));
        }
        Ok(())
    }

    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let Some(group) = node_group(ssn, node) else {
            return Ok(0.0);
        };
        let score = self
            .attr_of_task(ssn, task)
            .and_then(|a| a.affinity.as_deref())
            .map_or(0.0, |a| a.score(group, self.enable_preferred_order));
        Ok(score)
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        if let Some(queue) = ssn.queue_of_task(task) {
            self.add_allocated(ssn, queue, task);
        }
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        if let Some(queue) = ssn.queue_of_task(task) {
            self.sub_allocated(ssn, queue, task);
        }
    }
}
