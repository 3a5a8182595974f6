//! `predicates`: may this task run on this node? (spec/plugins-core.md §6).
//!
//! Volcano embeds upstream Kubernetes filter plugins; this module runs the same checks, in the
//! same order and with the same status codes and reasons (§6.3, §6.5), on the k8s library in
//! [`crate::k8s`]:
//!
//! 1. the pod-count check: `allocatable pods <= pods on the node` ⇒ Unschedulable
//!    "node(s) pod number exceeded" (recorded, does not stop the other filters);
//! 2. the "stable" filters NodeUnschedulable, NodeAffinity, TaintToleration — optionally through
//!    the equivalence cache keyed by the `volcano.sh/template-uid` annotation
//!    (`predicate.CacheEnable`);
//! 3. NodePorts, InterPodAffinity, VolumeRestrictions, NodeVolumeLimits, VolumeZone,
//!    PodTopologySpread, VolumeBinding (the volume filters in [`volumes`], on the rules of
//!    [`crate::k8s::volumes`]).
//!
//! A filter failing with UnschedulableAndUnresolvable (or Error/Wait/Skip) ends the check; an
//! Unschedulable one is recorded and the next filter runs.
//!
//! PrePredicate (§6.4) runs the PreFilter step once per task attempt: a filter with nothing to
//! check for the pod (no node selector or required node affinity, no host port, no inter-pod
//! constraint in play, no `DoNotSchedule` spread constraint) goes into the task's skip set, which
//! lasts for the session as in Volcano; the rest of the per-task work (parsed node affinity,
//! wanted host ports, inter-pod affinity and spread counts over the placed pods) is stashed for
//! `predicate`, which runs in parallel across nodes and only reads.
//!
//! Pods on nodes are seen as Volcano's shared upstream node infos see them (§6.8): the tasks on
//! each node at open, plus the allocations and pipelines of the session, minus the tasks evicted
//! in the session (Volcano removes those from its node infos at once, while the node keeps
//! accounting them as Releasing). [`PodView`] keeps that view; `nodeorder` uses it too.
//!
//! The volume bindings a placed task takes (a static volume promised to its claim, a claim to
//! provision on its node) are assumed for the rest of the session, so that the next pod does not
//! take the same volume (upstream Reserve/Unreserve). VolumeRestrictions is not in Volcano; it
//! runs here (`predicate.VolumeRestrictionsEnable`, on by default) because a second pod on a
//! `ReadWriteOncePod` claim or the same disk can only fail on its node. Not modelled: volume
//! scoring (off in Volcano too, behind an alpha gate), CSI storage capacity, in-tree volumes
//! migrated to CSI, VolumeAttachments, and DynamicResources (DRA). The
//! SidecarContainers feature gate is GA (locked on) in Kubernetes v1.36, so pods with restartable
//! init containers are never refused. Device sharing (Volcano's device registry) belongs to the
//! `deviceshare` plugin and is not handled here.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::{Arc, Mutex};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::plugin::PredicateOutcome;
use engine::framework::{ExtensionPoints, Plugin, PreBindWrites, SessionState};
use engine::model::claim::pod_uses_claims;
use engine::model::{FitError, FitStatus, NodeId, StatusCode, TaskId};
use k8s_openapi::api::core::v1::{Node, Pod};

use crate::k8s::labels::PlacedPod;
use crate::k8s::node_affinity::{
    NODE_AFFINITY_MISMATCH, NODE_AFFINITY_TERMS_CONFLICT, RequiredNodeAffinity,
    has_required_node_constraints, required_terms_conflict,
};
use crate::k8s::node_columns::NodeColumns;
use crate::k8s::pod_affinity::AffinityFilterState;
use crate::k8s::pod_view::{PodView, all_nodes, has_spread_constraint, namespace_labels};
use crate::k8s::ports::{HostPort, PORTS_CONFLICT, pod_host_ports, ports_conflict};
use crate::k8s::taints::{UNTOLERATED_TAINT, find_untolerated_taint, untolerated_taint_reason};
use crate::k8s::topology_spread::SpreadFilterState;
use crate::k8s::unschedulable::{NODE_UNSCHEDULABLE, node_unschedulable};

/// Registered plugin name.
pub const NAME: &str = "predicates";

/// Reason of the pod-count check (Volcano's `NodePodNumberExceeded`).
pub const POD_NUMBER_EXCEEDED: &str = "node(s) pod number exceeded";
/// Reason of an equivalence-cache hit that did not fit.
pub const CACHE_NOT_FIT: &str = "plugin equivalence cache predicates failed";
/// Plugin name carried by the equivalence-cache status (the argument key, as in Volcano).
pub const CACHE_PLUGIN: &str = "predicate.CacheEnable";

const NODE_AFFINITY_ENABLE: &str = "predicate.NodeAffinityEnable";
const NODE_PORTS_ENABLE: &str = "predicate.NodePortsEnable";
const TAINT_TOLERATION_ENABLE: &str = "predicate.TaintTolerationEnable";
const POD_AFFINITY_ENABLE: &str = "predicate.PodAffinityEnable";
const NODE_VOLUME_LIMITS_ENABLE: &str = "predicate.NodeVolumeLimitsEnable";
const VOLUME_ZONE_ENABLE: &str = "predicate.VolumeZoneEnable";
const POD_TOPOLOGY_SPREAD_ENABLE: &str = "predicate.PodTopologySpreadEnable";
const VOLUME_BINDING_ENABLE: &str = "predicate.VolumeBindingEnable";
const VOLUME_RESTRICTIONS_ENABLE: &str = "predicate.VolumeRestrictionsEnable";
const CACHE_ENABLE: &str = "predicate.CacheEnable";
const VOLUME_BINDING_WEIGHT: &str = "volumebinding.weight";
const VOLUME_BIND_TIMEOUT: &str = "volumebinding.bindTimeoutSeconds";
/// Volcano's default wait for the volume controller to complete a pod's volume bindings.
const DEFAULT_VOLUME_BIND_TIMEOUT_SECONDS: i64 = 600;

const DO_NOT_SCHEDULE: &str = "DoNotSchedule";

/// The upstream filters this plugin runs, under their upstream names (used in skip sets and as
/// the plugin of each status; Volcano leaves that field empty, since it calls the upstream
/// filters directly, but only the reason is ever shown to users).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    NodeUnschedulable,
    NodeAffinity,
    NodePorts,
    TaintToleration,
    InterPodAffinity,
    PodTopologySpread,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeZone,
    VolumeBinding,
}

impl Filter {
    pub fn name(self) -> &'static str {
        match self {
            Filter::NodeUnschedulable => "NodeUnschedulable",
            Filter::NodeAffinity => "NodeAffinity",
            Filter::NodePorts => "NodePorts",
            Filter::TaintToleration => "TaintToleration",
            Filter::InterPodAffinity => "InterPodAffinity",
            Filter::PodTopologySpread => "PodTopologySpread",
            Filter::VolumeRestrictions => "VolumeRestrictions",
            Filter::NodeVolumeLimits => "NodeVolumeLimits",
            Filter::VolumeZone => "VolumeZone",
            Filter::VolumeBinding => "VolumeBinding",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u8)
    }
}

/// Filters whose PreFilter returned Skip for a task; they do not run for it this session.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SkipSet(u16);

impl SkipSet {
    pub fn insert(&mut self, f: Filter) {
        self.0 |= f.bit();
    }

    pub fn contains(self, f: Filter) -> bool {
        self.0 & f.bit() != 0
    }
}

/// Which filters are on (§6.1).
#[derive(Clone, Debug, PartialEq)]
struct Enabled {
    volumes: volumes::VolumeSwitches,
    /// How long a bind waits for its volumes (`volumebinding.bindTimeoutSeconds`).
    volume_bind_timeout: std::time::Duration,
    node_affinity: bool,
    node_ports: bool,
    taint_toleration: bool,
    pod_affinity: bool,
    pod_topology_spread: bool,
    cache: bool,
}

/// The problems [`Enabled::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    Enabled::read(args, &mut warnings);
    warnings
}

impl Enabled {
    fn from_arguments(args: &Arguments) -> Self {
        Self::read(args, &mut Vec::new())
    }

    /// Reads the switches, adding what is wrong with them to `warnings`.
    fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        let mut timeout = DEFAULT_VOLUME_BIND_TIMEOUT_SECONDS;
        if let Err(e) = args.get_int(VOLUME_BIND_TIMEOUT, &mut timeout) {
            warnings.push(ArgWarning::new(
                VOLUME_BIND_TIMEOUT,
                format!("{}; the default {timeout} is used", e.message),
            ));
        }
        let mut read = |key: &str, default: bool| {
            let mut v = default;
            if let Err(e) = args.get_bool(key, &mut v) {
                warnings.push(ArgWarning::new(
                    key,
                    format!("{}; the default {default} is used", e.message),
                ));
            }
            v
        };
        let enabled = Enabled {
            volume_bind_timeout: std::time::Duration::from_secs(
                u64::try_from(timeout).unwrap_or(0),
            ),
            volumes: volumes::VolumeSwitches {
                restrictions: read(VOLUME_RESTRICTIONS_ENABLE, true),
                limits: read(NODE_VOLUME_LIMITS_ENABLE, true),
                zone: read(VOLUME_ZONE_ENABLE, true),
                binding: read(VOLUME_BINDING_ENABLE, true),
            },
            node_affinity: read(NODE_AFFINITY_ENABLE, true),
            node_ports: read(NODE_PORTS_ENABLE, true),
            taint_toleration: read(TAINT_TOLERATION_ENABLE, true),
            pod_affinity: read(POD_AFFINITY_ENABLE, true),
            pod_topology_spread: read(POD_TOPOLOGY_SPREAD_ENABLE, true),
            cache: read(CACHE_ENABLE, false),
        };
        if let Some(v) = args.get(VOLUME_BINDING_WEIGHT)
            && v.as_i64().is_none()
        {
            // Volcano decodes this key generically and exits on a bad type; the weight only
            // matters to volume scoring, which is off (in Volcano too), but the mistake is still
            // reported.
            warnings.push(ArgWarning::new(
                VOLUME_BINDING_WEIGHT,
                format!(
                    "expected an integer, found {} (Volcano exits on this; volume scoring is off, \
                     so the value has no effect)",
                    v.describe()
                ),
            ));
        }
        enabled
    }
}

// ---------------------------------------------------------------------------------------------
// The plugin
// ---------------------------------------------------------------------------------------------

/// What PreFilter prepared for one task; a field is set when that filter is to run.
#[derive(Debug, Default)]
struct TaskFilters {
    /// The stable filters' verdicts of the task's class, when they are kept.
    stable: Option<Arc<ClassVerdicts>>,
    node_affinity: Option<RequiredNodeAffinity>,
    host_ports: Vec<HostPort>,
    pod_affinity: Option<AffinityFilterState>,
    topology_spread: Option<SpreadFilterState>,
    volumes: volumes::VolumeFilters,
}

/// Host ports in use on one node, with the task holding each.
#[derive(Debug, Default)]
struct UsedPorts {
    ports: Vec<HostPort>,
    owners: Vec<TaskId>,
}

impl UsedPorts {
    fn add(&mut self, task: TaskId, pod: &Pod) {
        for port in pod_host_ports(pod) {
            self.ports.push(port);
            self.owners.push(task);
        }
    }

    fn remove(&mut self, task: TaskId) {
        let mut i = 0;
        while i < self.owners.len() {
            if self.owners[i] == task {
                self.owners.swap_remove(i);
                self.ports.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }
}

/// Per-task state indexed by task id: the predicate reads it for every (task, node) pair, so
/// a vector lookup instead of a hash.
struct TaskTable<T>(Vec<Option<T>>);

impl<T> Default for TaskTable<T> {
    fn default() -> Self {
        TaskTable(Vec::new())
    }
}

impl<T> TaskTable<T> {
    /// A table with room for `tasks` tasks, so that filling it never reallocates.
    fn with_tasks(tasks: usize) -> Self {
        TaskTable(std::iter::repeat_with(|| None).take(tasks).collect())
    }
    fn get(&self, task: &TaskId) -> Option<&T> {
        self.0.get(task.index()).and_then(Option::as_ref)
    }
    fn get_mut(&mut self, task: &TaskId) -> Option<&mut T> {
        self.0.get_mut(task.index()).and_then(Option::as_mut)
    }
    fn insert(&mut self, task: TaskId, value: T) {
        if self.0.len() <= task.index() {
            self.0.resize_with(task.index() + 1, || None);
        }
        self.0[task.index()] = Some(value);
    }
    fn remove(&mut self, task: &TaskId) {
        if let Some(slot) = self.0.get_mut(task.index()) {
            *slot = None;
        }
    }
}

/// The plugin instance of one session.
pub struct Predicates {
    enabled: Enabled,
    view: PodView,
    /// Host ports in use per node (kept only when NodePorts is on).
    used_ports: Vec<UsedPorts>,
    skips: TaskTable<SkipSet>,
    /// Boxed: a table slot per task of the session, most of them empty.
    filters: TaskTable<Box<TaskFilters>>,
    /// The task of the latest successful PrePredicate: the one being placed. Its inter-pod
    /// affinity counts follow the pods the session places or removes while it is being placed
    /// (see [`Predicates::follow_placement`]).
    current: Option<TaskId>,
    cache: Option<EquivalenceCache>,
    /// The stable filters' verdicts per class (used with the session's memo on and the
    /// equivalence cache off).
    stable_verdicts: StableVerdicts,
    /// Each node's allocatable pod count (`max_task_num`), which no session changes.
    max_pods: Vec<i64>,
    /// Volume bindings assumed for the tasks placed so far.
    assumed_volumes: volumes::VolumeAssumptions,
    /// (namespace, labels) no placed pod's required anti-affinity matched, with the
    /// [`PodView::required_anti_affinity_version`] that was true at.
    anti_affinity_misses: Mutex<HashMap<AntiAffinityKey, u64>>,
    /// PodTopologySpread's domains per scheduling class (see [`Predicates::spread_prefilter`]).
    spread_domains: Mutex<prefilter::SpreadDomainCache>,
    /// Node label columns for the inter-pod affinity filter (see [`Predicates::by_position`]).
    columns: NodeColumns,
}

type AntiAffinityKey = (Option<String>, Option<BTreeMap<String, String>>);

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Predicates::from_arguments(args))
}

fn status(
    code: StatusCode,
    reason: impl Into<std::borrow::Cow<'static, str>>,
    filter: Filter,
) -> FitStatus {
    FitStatus::new(code, reason, filter.name())
}

/// Volcano's `ShouldAbort`: these codes end the filter run.
fn aborts(code: StatusCode) -> bool {
    matches!(
        code,
        StatusCode::UnschedulableAndUnresolvable
            | StatusCode::Error
            | StatusCode::Wait
            | StatusCode::Skip
    )
}

impl Predicates {
    pub fn from_arguments(args: &Arguments) -> Self {
        Predicates {
            enabled: Enabled::from_arguments(args),
            view: PodView::default(),
            used_ports: Vec::new(),
            skips: TaskTable::default(),
            filters: TaskTable::default(),
            current: None,
            cache: None,
            stable_verdicts: StableVerdicts::default(),
            max_pods: Vec::new(),
            assumed_volumes: volumes::VolumeAssumptions::default(),
            anti_affinity_misses: Mutex::new(HashMap::new()),
            spread_domains: Mutex::default(),
            columns: NodeColumns::default(),
        }
    }

    /// Upstream's PreFilter extensions `AddPod` / `RemovePod` for InterPodAffinity, applied to
    /// the task being placed when another task's pod joins (`delta` 1) or leaves (−1) a node
    /// in the session. Without this, the counts PrePredicate took would stay as they were
    /// while the task's attempt evicts pods: preemption could then never find that evicting a
    /// pod clears the task's anti-affinity conflict, since the predicate would still count the
    /// pod. Only the current task is updated: any other task runs PrePredicate again before
    /// its next search. PodTopologySpread's counts are not updated (as in Volcano, where
    /// neither normal nor topology-aware preemption re-counts spread after an eviction).
    fn follow_placement(&mut self, ssn: &SessionState, task: TaskId, delta: i64) {
        let Some(current) = self.current.filter(|&c| c != task) else {
            return;
        };
        let Some(node) = ssn.task(task).node else {
            return;
        };
        let Some(state) = self
            .filters
            .get_mut(&current)
            .and_then(|f| f.pod_affinity.as_mut())
        else {
            return;
        };
        let placed = PlacedPod {
            pod: ssn.task(task).spec.pod.as_ref(),
            node: ssn.node(node).spec.node.as_ref(),
        };
        let ns = |name: &str| namespace_labels(ssn, name);
        state.update(ssn.task(current).spec.pod.as_ref(), placed, delta, &ns);
    }

    /// The task's skip set so far (empty before its first PrePredicate).
    pub fn skip_set(&self, task: TaskId) -> SkipSet {
        self.skips.get(&task).copied().unwrap_or_default()
    }

    /// Upstream PreFilter of every enabled filter, in order (§6.4). Skips found before an
    /// error are kept, as Volcano records them in the task's cycle state as it goes.
    fn prefilter(
        &self,
        ssn: &SessionState,
        task: TaskId,
        mut skip: SkipSet,
    ) -> (SkipSet, Result<TaskFilters, String>) {
        let pod = ssn.task(task).spec.pod.as_ref();
        let mut f = TaskFilters::default();
        if self.enabled.node_affinity {
            if !has_required_node_constraints(pod) {
                skip.insert(Filter::NodeAffinity);
            } else if required_terms_conflict(pod) {
                let name = Filter::NodeAffinity.name();
                return (
                    skip,
                    Err(format!(
                        "plugin {name} pre-predicates failed {NODE_AFFINITY_TERMS_CONFLICT}"
                    )),
                );
            } else {
                f.node_affinity = Some(RequiredNodeAffinity::from_pod(pod));
            }
        }
        if self.enabled.node_ports {
            f.host_ports = pod_host_ports(pod);
            if f.host_ports.is_empty() {
                skip.insert(Filter::NodePorts);
            }
        }
        if self.enabled.pod_affinity {
            match self.pod_affinity_prefilter(ssn, pod) {
                Some(s) => f.pod_affinity = Some(self.by_position(ssn, s)),
                None => skip.insert(Filter::InterPodAffinity),
            }
        }
        let switches = self.enabled.volumes;
        if let Err(e) = switches.prefilter_early(ssn, &self.view, pod, &mut skip, &mut f.volumes) {
            return (skip, Err(e));
        }
        if self.enabled.pod_topology_spread {
            if has_spread_constraint(pod, DO_NOT_SCHEDULE) {
                f.topology_spread = self.spread_prefilter(ssn, task);
            }
            if f.topology_spread.is_none() {
                skip.insert(Filter::PodTopologySpread);
            }
        }
        if let Err(e) = switches.prefilter_binding(ssn, pod, &mut skip, &mut f.volumes) {
            return (skip, Err(e));
        }
        // With the memo off, every node is judged afresh, as Volcano does: the property tests
        // compare the two.
        if self.cache.is_none() && ssn.options().search_memo {
            let class = ssn.task(task).spec.sched_class();
            f.stable = Some(self.stable_verdicts.of(class, pod, || all_nodes(ssn)));
        }
        (skip, Ok(f))
    }

    /// NodeUnschedulable, NodeAffinity, TaintToleration, in order; `false` when one of them
    /// aborted (each of them can only fail with UnschedulableAndUnresolvable, so the first
    /// failure ends the run).
    fn run_stable(
        &self,
        pod: &Pod,
        node: &Node,
        skip: SkipSet,
        f: &TaskFilters,
        statuses: &mut Vec<FitStatus>,
    ) -> bool {
        let checks: [&dyn Fn() -> Option<FitStatus>; 3] = [
            &|| self.unschedulable_filter(pod, node, skip),
            &|| self.node_affinity_filter(pod, node, skip, f),
            &|| self.taint_filter(pod, node, skip),
        ];
        run_checks(&checks, statuses)
    }

    fn unschedulable_filter(&self, pod: &Pod, node: &Node, skip: SkipSet) -> Option<FitStatus> {
        if skip.contains(Filter::NodeUnschedulable) {
            return None;
        }
        node_unschedulable(pod, node).err().map(|reason| {
            status(
                StatusCode::UnschedulableAndUnresolvable,
                reason,
                Filter::NodeUnschedulable,
            )
        })
    }

    fn node_affinity_filter(
        &self,
        pod: &Pod,
        node: &Node,
        skip: SkipSet,
        f: &TaskFilters,
    ) -> Option<FitStatus> {
        if !self.enabled.node_affinity || skip.contains(Filter::NodeAffinity) {
            return None;
        }
        let matches = match &f.node_affinity {
            Some(required) => required.matches(node),
            // Upstream recomputes from the pod when PreFilter left no state.
            None => RequiredNodeAffinity::from_pod(pod).matches(node),
        };
        (!matches).then(|| {
            status(
                StatusCode::UnschedulableAndUnresolvable,
                NODE_AFFINITY_MISMATCH,
                Filter::NodeAffinity,
            )
        })
    }

    fn taint_filter(&self, pod: &Pod, node: &Node, skip: SkipSet) -> Option<FitStatus> {
        if !self.enabled.taint_toleration || skip.contains(Filter::TaintToleration) {
            return None;
        }
        find_untolerated_taint(pod, node).map(|taint| {
            status(
                StatusCode::UnschedulableAndUnresolvable,
                untolerated_taint_reason(taint),
                Filter::TaintToleration,
            )
        })
    }

    /// The stable filters through the equivalence cache, when it is on and the pod has a
    /// template uid; otherwise run directly.
    fn stable_filters(
        &self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
        skip: SkipSet,
        f: &TaskFilters,
        statuses: &mut Vec<FitStatus>,
    ) -> bool {
        let spec = &ssn.task(task).spec;
        if let Some(verdicts) = &f.stable {
            return self.stable_by_class(verdicts, ssn, &spec.pod, node, skip, f, statuses);
        }
        let k8s_node = ssn.node(node).spec.node.as_ref();
        let (Some(cache), Some(template)) = (&self.cache, spec.template_uid.as_deref()) else {
            return self.run_stable(&spec.pod, k8s_node, skip, f, statuses);
        };
        let slots = cache.slots(template);
        let slot = slots.get(node.index());
        match slot.map(|s| s.load(AtomicOrdering::Relaxed)) {
            Some(CACHE_FIT) => true,
            Some(CACHE_NOT_FIT_MARK) => {
                statuses.push(FitStatus::new(
                    StatusCode::Error,
                    CACHE_NOT_FIT,
                    CACHE_PLUGIN,
                ));
                false
            }
            _ => {
                let fit = self.run_stable(&spec.pod, k8s_node, skip, f, statuses);
                if let Some(s) = slot {
                    s.store(
                        if fit { CACHE_FIT } else { CACHE_NOT_FIT_MARK },
                        AtomicOrdering::Relaxed,
                    );
                }
                fit
            }
        }
    }

    /// The stable filters through the class's verdicts: a known refusal gives the status the
    /// refusing filter gives; an unknown one runs the filters and keeps the verdict when one
    /// filter refused, or none.
    #[allow(clippy::too_many_arguments)]
    fn stable_by_class(
        &self,
        verdicts: &ClassVerdicts,
        ssn: &SessionState,
        pod: &Pod,
        node_id: NodeId,
        skip: SkipSet,
        f: &TaskFilters,
        statuses: &mut Vec<FitStatus>,
    ) -> bool {
        // The node object is reached only when a filter must run: a known verdict does not
        // touch it (on a large cluster that saves a cache miss per node of every search).
        let node = || ssn.node(node_id).spec.node.as_ref();
        let known = match verdicts.get(node_id.index()) {
            Verdict::Unknown => None,
            Verdict::Fits => return true,
            Verdict::Unschedulable => Some(status(
                StatusCode::UnschedulableAndUnresolvable,
                NODE_UNSCHEDULABLE,
                Filter::NodeUnschedulable,
            )),
            Verdict::Affinity => Some(status(
                StatusCode::UnschedulableAndUnresolvable,
                NODE_AFFINITY_MISMATCH,
                Filter::NodeAffinity,
            )),
            Verdict::Taint => Some(status(
                StatusCode::UnschedulableAndUnresolvable,
                UNTOLERATED_TAINT,
                Filter::TaintToleration,
            )),
        };
        if let Some(s) = known {
            statuses.push(s);
            return false;
        }
        let before = statuses.len();
        let fit = match self.stable_verdicts.plain() {
            Some(plain) => {
                self.run_stable_at(verdicts, plain, ssn, pod, node_id, skip, f, statuses)
            }
            None => self.run_stable(pod, node(), skip, f, statuses),
        };
        let verdict = match (fit, &statuses[before..]) {
            (true, []) => Verdict::Fits,
            (false, [s]) if s.plugin == Filter::NodeUnschedulable.name() => Verdict::Unschedulable,
            (false, [s]) if s.plugin == Filter::NodeAffinity.name() => Verdict::Affinity,
            // The reason names no taint, so one verdict stands for every untolerated taint.
            (false, [s])
                if s.plugin == Filter::TaintToleration.name() && s.reason == UNTOLERATED_TAINT =>
            {
                Verdict::Taint
            }
            // Not one of the outcomes above (a filter that records and goes on): not kept.
            _ => Verdict::Unknown,
        };
        verdicts.set(node_id.index(), verdict);
        fit
    }

    /// NodePorts, InterPodAffinity, PodTopologySpread, in order, until one aborts.
    fn run_others(
        &self,
        ssn: &SessionState,
        pod: &Pod,
        node_id: NodeId,
        skip: SkipSet,
        f: &TaskFilters,
        statuses: &mut Vec<FitStatus>,
    ) {
        let node = || ssn.node(node_id).spec.node.as_ref();
        if self.enabled.node_ports
            && !skip.contains(Filter::NodePorts)
            && !f.host_ports.is_empty()
            && let Some(used) = self.used_ports.get(node_id.index())
            && ports_conflict(&f.host_ports, &used.ports)
        {
            // Unschedulable: evicting the pod holding the port would help.
            statuses.push(status(
                StatusCode::Unschedulable,
                PORTS_CONFLICT,
                Filter::NodePorts,
            ));
        }
        if self.enabled.pod_affinity
            && !skip.contains(Filter::InterPodAffinity)
            && let Some(state) = &f.pod_affinity
            && let Err(failure) = state.filter_at(pod, node_id.index(), node)
        {
            let code = if failure.unresolvable() {
                StatusCode::UnschedulableAndUnresolvable
            } else {
                StatusCode::Unschedulable
            };
            statuses.push(status(code, failure.reason(), Filter::InterPodAffinity));
            if aborts(code) {
                return;
            }
        }
        let volumes = self.enabled.volumes;
        if !volumes.filter_early(ssn, &self.view, pod, node_id, skip, &f.volumes, statuses) {
            return;
        }
        if self.enabled.pod_topology_spread
            && !skip.contains(Filter::PodTopologySpread)
            && let Some(state) = &f.topology_spread
            && let Err(failure) = state.filter_at(pod, node_id.index(), node)
        {
            let code = if failure.unresolvable() {
                StatusCode::UnschedulableAndUnresolvable
            } else {
                StatusCode::Unschedulable
            };
            statuses.push(status(code, failure.reason(), Filter::PodTopologySpread));
            if aborts(code) {
                return;
            }
        }
        volumes.filter_binding(
            ssn,
            &self.assumed_volumes,
            node_id,
            skip,
            &f.volumes,
            statuses,
        );
    }

    fn add_ports(&mut self, ssn: &SessionState, task: TaskId) {
        let Some(node) = ssn.task(task).node else {
            return;
        };
        if let Some(used) = self.used_ports.get_mut(node.index())
            && ssn.task(task).spec.uses_host_ports
        {
            used.add(task, &ssn.task(task).spec.pod);
        }
    }

    fn remove_ports(&mut self, ssn: &SessionState, task: TaskId) {
        let Some(node) = ssn.task(task).node else {
            return;
        };
        if let Some(used) = self.used_ports.get_mut(node.index()) {
            used.remove(task);
        }
    }
}
impl Plugin for Predicates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.view = PodView::open(ssn, self.enabled.pod_affinity, false);
        self.skips = TaskTable::with_tasks(ssn.tasks().len());
        self.filters = TaskTable::with_tasks(ssn.tasks().len());
        self.assumed_volumes = volumes::VolumeAssumptions::open(ssn);
        if self.enabled.node_ports {
            self.used_ports = ssn.nodes().iter().map(|_| UsedPorts::default()).collect();
            // In TaskId order, which is each node's task order at open.
            for &task in ssn.placed_with_host_ports() {
                let t = ssn.task(task);
                if let Some(used) = t.node.and_then(|n| self.used_ports.get_mut(n.index())) {
                    used.add(task, &t.spec.pod);
                }
            }
        }
        if self.enabled.cache {
            self.cache = Some(EquivalenceCache::new(ssn.nodes().len()));
        }
        self.stable_verdicts = StableVerdicts::new(ssn.nodes().len());
        self.columns = NodeColumns::default();
        self.max_pods = ssn
            .nodes()
            .iter()
            .map(|n| n.allocatable().max_task_num)
            .collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        let points = ExtensionPoints::PRE_PREDICATE
            | ExtensionPoints::PREDICATE
            | ExtensionPoints::EVENT_HANDLER;
        if self.enabled.volumes.binding {
            points | ExtensionPoints::PRE_BIND
        } else {
            points
        }
    }

    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PRE_PREDICATE
            | ExtensionPoints::PREDICATE
            | ExtensionPoints::EVENT_HANDLER
            | ExtensionPoints::PRE_BIND
    }

    fn pre_bind(&self, _ssn: &SessionState, task: TaskId) -> PreBindWrites {
        PreBindWrites {
            writes: self.assumed_volumes.writes(task),
            timeout: self.enabled.volume_bind_timeout,
            ..PreBindWrites::default()
        }
    }

    fn pre_predicate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let (skip, result) = self.prefilter(ssn, task, self.skip_set(task));
        self.skips.insert(task, skip);
        match result {
            Ok(filters) => {
                self.filters.insert(task, Box::new(filters));
                self.current = Some(task);
                Ok(())
            }
            Err(e) => {
                self.filters.remove(&task);
                Err(e)
            }
        }
    }

    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        let n = ssn.node(node);
        let mut statuses = Vec::new();
        let pods = i64::try_from(self.view.pod_count(ssn, node)).unwrap_or(i64::MAX);
        // The node's pod capacity from a table kept here: reading it from the node's shared
        // spec costs a cache miss per node of every search.
        let max_pods = (self.max_pods.get(node.index()).copied())
            .unwrap_or_else(|| n.allocatable().max_task_num);
        if max_pods <= pods {
            statuses.push(FitStatus::new(
                StatusCode::Unschedulable,
                POD_NUMBER_EXCEEDED,
                NAME,
            ));
        }

        // The engine always runs PrePredicate first; should a caller not, prepare here (the
        // result is then not kept, since `predicate` only reads).
        let fresh;
        let (skip, filters) = match self.filters.get(&task) {
            Some(f) => (self.skip_set(task), f.as_ref()),
            None => {
                let (skip, result) = self.prefilter(ssn, task, self.skip_set(task));
                fresh = result.map_err(|e| FitError::error(e, NAME))?;
                (skip, &fresh)
            }
        };

        if !self.stable_filters(ssn, task, node, skip, filters, &mut statuses) {
            return Err(FitError { statuses });
        }
        let pod = ssn.task(task).spec.pod.as_ref();
        self.run_others(ssn, pod, node, skip, filters, &mut statuses);
        if statuses.is_empty() {
            Ok(())
        } else {
            Err(FitError { statuses })
        }
    }

    fn predicate_outcome(
        &self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
    ) -> PredicateOutcome {
        match self.passes(ssn, task, node) {
            Some(true) => PredicateOutcome::Passes,
            Some(false) => PredicateOutcome::Fails {
                blocks_allocation: true,
            },
            None => PredicateOutcome::of(&self.predicate(ssn, task, node)),
        }
    }

    /// Node-local unless a filter looks beyond the node for this task: inter-pod affinity
    /// in play, a `DoNotSchedule` spread constraint, or claims (whose bindings other pods may
    /// share). The equivalence cache makes the reason text depend on which task filled it, so
    /// with it on nothing is node-local.
    fn search_is_node_local(&self, ssn: &SessionState, task: TaskId) -> bool {
        self.cache.is_none()
            && self.filters.get(&task).is_some_and(|f| {
                f.pod_affinity.is_none()
                    && f.topology_spread.is_none()
                    && !pod_uses_claims(ssn.task(task).spec.pod.as_ref())
            })
    }

    /// Where the search is node-local, the filters left read the node's object (unschedulable,
    /// affinity, taints: unchanged by placements) and what is on it — its pod count, the host
    /// ports and volumes in use — each of which a placement only adds to; so a node refused
    /// stays refused while tasks are only put on it.
    fn refusal_survives_placements(&self, ssn: &SessionState, task: TaskId) -> bool {
        self.search_is_node_local(ssn, task)
    }

    /// Alike when node-local for both, or else when the only look beyond the node is inter-pod
    /// affinity or spread: those read the placed pods and, of the task's pod, its spec (the
    /// class) and its labels, so equal labels answer alike. Claims and the equivalence cache
    /// never do (see [`Plugin::search_is_node_local`]).
    fn predicate_answers_alike(&self, ssn: &SessionState, task: TaskId, other: TaskId) -> bool {
        if self.search_is_node_local(ssn, task) && self.search_is_node_local(ssn, other) {
            return true;
        }
        let pod = |t: TaskId| ssn.task(t).spec.pod.as_ref();
        self.cache.is_none()
            && self.filters.get(&task).is_some()
            && !pod_uses_claims(pod(task))
            && !pod_uses_claims(pod(other))
            && pod(task).metadata.labels == pod(other).metadata.labels
    }

    /// A placed pod's required anti-affinity reaches its whole topology domain, but only for
    /// pods it matches, and for those InterPodAffinity is in play at their next PrePredicate,
    /// which makes them not node-local; its labels count only for pods with inter-pod terms or
    /// spread constraints of their own, which are not node-local either. Its claims are
    /// treated as reaching further (other pods may share them).
    fn placement_is_node_local(&self, ssn: &SessionState, task: TaskId) -> bool {
        !pod_uses_claims(ssn.task(task).spec.pod.as_ref())
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        self.view.added(ssn, task);
        if self.enabled.volumes.binding {
            self.assumed_volumes.reserve(ssn, task);
        }
        if self.enabled.node_ports {
            self.add_ports(ssn, task);
        }
        if self.enabled.pod_affinity {
            self.follow_placement(ssn, task, 1);
        }
        // A placed task is searched for again only after a new PrePredicate.
        self.filters.remove(&task);
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        // Counted only if the pod was on its node in the view: an eviction undone twice, or
        // a pod already hidden, must not be subtracted again.
        let was_placed = self.view.is_visible(task);
        self.view.removed(ssn, task);
        self.assumed_volumes.unreserve(task);
        if self.enabled.node_ports {
            self.remove_ports(ssn, task);
        }
        if self.enabled.pod_affinity && was_placed {
            self.follow_placement(ssn, task, -1);
        }
    }
}

mod cache;
mod outcome;
mod prefilter;
mod volumes;

use cache::{
    CACHE_FIT, CACHE_NOT_FIT_MARK, ClassVerdicts, EquivalenceCache, StableVerdicts, Verdict,
};

/// Runs stable checks in order, keeping each failure; `false` when one aborted (each of them
/// can only fail with UnschedulableAndUnresolvable, so the first failure ends the run).
fn run_checks(checks: &[&dyn Fn() -> Option<FitStatus>], statuses: &mut Vec<FitStatus>) -> bool {
    for check in checks {
        if let Some(s) = check() {
            let abort = aborts(s.code);
            statuses.push(s);
            if abort {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests;
