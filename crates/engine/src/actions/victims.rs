//! Victim machinery shared by `preempt` and `reclaim` (spec/framework.md §6.4.3, §6.5): the
//! per-node attempt that evicts victims in victim order (§3.3.1) until the task fits, then
//! pipelines it there inside a statement of its own, merged into the caller's statement only on
//! success (§4.5).
//!
//! On top of Volcano's procedure, three rules keep evictions from coming in storms
//! (docs/fairness.md, "Preemption and reclaim without storms"):
//!
//! 1. **Fit before evict** (Volcano #4925): evicting stops only when the task really fits the
//!    node — resources *and* every plugin predicate, for reclaim too (Volcano's reclaim looks at
//!    resources only). When it never fits, the node's evictions are discarded.
//! 2. **Fewest victims** (Volcano #5994): a node where the task fits without evicting anything is
//!    taken first; on a node that needs evictions, victims evicted along the way that the task
//!    turns out not to need (a later, larger victim freed enough) are spared again, the most
//!    important first. No victim is left that the task could fit without.
//! 3. **No take-back** (Volcano #4947, #4949): an eviction is refused when the next allocate
//!    would hand the freed resources straight back to the victim's side — the victim's queue
//!    (reclaim) or job (preempt) is served before the preemptor's, is not overused, and would
//!    admit the victim's pod again once its controller recreates it.

use std::collections::HashSet;

use crate::framework::{OpKind, PriorityQueue, Session, Statement};
use crate::model::{DimensionDefault, JobId, NodeId, QueueId, TaskId, TaskStatus};

/// Which side the no-take-back rule compares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Contest {
    /// Preemption inside one queue: the victim's job against the preemptor's job.
    Jobs,
    /// Reclaim across queues: the victim's queue against the preemptor's queue.
    Queues,
}

/// How an action evicts.
#[derive(Copy, Clone, Debug)]
pub(super) struct Rules {
    /// Recorded with each eviction: "preempt" or "reclaim".
    pub reason: &'static str,
    /// Preempt also requires the preemptor's queue to admit it (`Allocatable`); reclaim asked
    /// `Preemptive` before searching and leaves this `None`.
    pub allocatable_in: Option<QueueId>,
    pub contest: Contest,
    /// Rule 3 applies (argument `refuseTakeBack`, default true).
    pub refuse_take_back: bool,
}

/// The arguments preempt and reclaim share.
#[derive(Copy, Clone, Debug)]
pub(super) struct EvictionArgs {
    /// `predicateErrorCacheEnable` (default true).
    pub predicate_cache: bool,
    /// `refuseTakeBack` (default true): volcano-rs's rule 3. Off, the action evicts as Volcano
    /// does, take-backs included — for comparing with Volcano, not for production.
    pub refuse_take_back: bool,
}

impl EvictionArgs {
    pub fn read(ssn: &Session, action: &str) -> EvictionArgs {
        let mut read = EvictionArgs {
            predicate_cache: true,
            refuse_take_back: true,
        };
        let Some(args) = ssn.state.conf().action_arguments(action) else {
            return read;
        };
        for (key, value) in [
            ("predicateErrorCacheEnable", &mut read.predicate_cache),
            ("refuseTakeBack", &mut read.refuse_take_back),
        ] {
            if let Err(e) = args.get_bool(key, value) {
                tracing::warn!(action, key, error = %e, "argument ignored");
            }
        }
        if !read.refuse_take_back {
            tracing::warn!(
                action,
                "refuseTakeBack is false: evictions whose resources go straight back to the victim are made"
            );
        }
        read
    }
}

/// The job's `Pending` tasks without scheduling gates, in task order (the preemptors).
pub(super) fn pending_tasks(ssn: &Session, job: JobId) -> PriorityQueue<TaskId> {
    let mut heap = PriorityQueue::new();
    for t in ssn.state.job_tasks_in(job, TaskStatus::Pending) {
        if !ssn.state.task(t).spec.sch_gated {
            heap.push(t, |a, b| ssn.task_order(a, b));
        }
    }
    heap
}

/// Does `task` fit `node` as things stand: its queue admits it (when asked), its request fits
/// the node's future idle resources, and every plugin predicate passes.
pub(super) fn fits(ssn: &Session, task: TaskId, node: NodeId, queue: Option<QueueId>) -> bool {
    if queue.is_some_and(|q| !ssn.allocatable(q, task)) {
        return false;
    }
    let n = ssn.state.node(node);
    ssn.state
        .task(task)
        .resreq()
        .fits_future_idle(&n.idle, &n.releasing, &n.pipelined)
        .is_ok()
        && ssn.predicate(task, node).is_ok()
}

/// `ValidateVictims`: would the node's future idle resources plus everything the victims hold
/// cover the task's request?
pub(super) fn victims_cover(ssn: &Session, task: TaskId, node: NodeId, victims: &[TaskId]) -> bool {
    let mut available = ssn.state.node(node).future_idle();
    for &v in victims {
        available.add(ssn.state.task(v).resreq());
    }
    ssn.state
        .task(task)
        .resreq()
        .less_equal(&available, DimensionDefault::Zero)
}

/// Keeps the victims a plugin answer may name that are among the candidates, once each, in the
/// answer's order (a task evicted twice would be two evictions of one pod).
pub(super) fn sanitize_victims(victims: Vec<TaskId>, candidates: &[TaskId]) -> Vec<TaskId> {
    let allowed: HashSet<TaskId> = candidates.iter().copied().collect();
    let mut seen = HashSet::new();
    victims
        .into_iter()
        .filter(|v| allowed.contains(v) && seen.insert(*v))
        .collect()
}

/// Rule 2, first half: pipelines `task` onto the first of `nodes` where it fits without any
/// eviction. Returns whether it was placed (its pipeline is recorded in `stmt`).
pub(super) fn place_without_eviction(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    nodes: &[NodeId],
    queue: Option<QueueId>,
) -> bool {
    for &node in nodes {
        if !fits(ssn, task, node, queue) {
            continue;
        }
        match ssn.pipeline(stmt, task, node, false) {
            Ok(()) => return true,
            Err(e) => tracing::warn!(
                task = ssn.state.task(task).key(),
                node = ssn.state.node(node).name(),
                error = %e,
                "pipeline failed"
            ),
        }
    }
    false
}

/// Tries the nodes in order: on each, `victims_on` names the victims the plugins allow there
/// (empty: next node), and [`preempt_on_node`] evicts just enough of them. The first node where
/// the task then fits wins. Shared by preempt and reclaim, which differ only in who may be a
/// victim.
pub(super) fn preempt_on_first_node(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    nodes: impl IntoIterator<Item = NodeId>,
    rules: Rules,
    victims_on: &dyn Fn(&mut Session, NodeId) -> Vec<TaskId>,
) -> Result<(), String> {
    for node in nodes {
        let victims = victims_on(ssn, node);
        if victims.is_empty() {
            continue;
        }
        match preempt_on_node(ssn, stmt, task, node, &victims, rules) {
            Ok(()) => return Ok(()),
            Err(reason) => tracing::debug!(
                task = ssn.state.task(task).key(),
                node = ssn.state.node(node).name(),
                action = rules.reason,
                %reason,
                "node not used"
            ),
        }
    }
    Err(format!("no node where {} lets the task fit", rules.reason))
}

/// One node attempt (§6.4.3 `normalPreempt`, §6.5 `reclaimForTask`): evict `victims` in victim
/// order until `preemptor` fits (rule 1), spare the victims it does not need (rule 2), check
/// that the freed resources will not be taken back (rule 3), and pipeline it. On success the
/// node's operations join `stmt`; otherwise the session is as before and the reason is returned.
pub(super) fn preempt_on_node(
    ssn: &mut Session,
    stmt: &mut Statement,
    preemptor: TaskId,
    node: NodeId,
    victims: &[TaskId],
    rules: Rules,
) -> Result<(), String> {
    if !victims_cover(ssn, preemptor, node, victims) {
        return Err("the victims do not free enough resources".to_string());
    }
    let Some(node_stmt) = evict_until_fit(ssn, preemptor, node, victims, rules) else {
        return Err("the task does not fit even with every victim evicted".to_string());
    };
    finish_on_node(ssn, stmt, node_stmt, preemptor, node, rules)
}

/// The end of a node attempt, once `node_stmt` holds the evictions that let `preemptor` fit
/// `node`: rule 3, then the pipeline. On success `node_stmt` joins `stmt`, with its evictions
/// attributed to the preemptor; otherwise it is discarded and the reason returned. Shared by
/// the node-by-node attempts and the topology-aware mode of preempt, which chooses its victims
/// beforehand.
pub(super) fn finish_on_node(
    ssn: &mut Session,
    stmt: &mut Statement,
    mut node_stmt: Statement,
    preemptor: TaskId,
    node: NodeId,
    rules: Rules,
) -> Result<(), String> {
    let evicted = node_stmt.has_evictions();
    // Checked before the pipeline: the next cycle starts with the victims gone and the
    // preemptor still pending, and that is the state its allocate orders queues and jobs by.
    if evicted
        && rules.refuse_take_back
        && let Some(victim) = take_back_risk(ssn, &node_stmt, preemptor, rules.contest)
    {
        let victim = ssn.state.task(victim).key().to_string();
        ssn.discard(node_stmt);
        return Err(format!(
            "evicting {victim} would hand its resources back to it in the next cycle"
        ));
    }
    if evicted
        && rules.refuse_take_back
        && let Some(first) = served_first(ssn, preemptor, node)
    {
        let first = ssn.state.task(first).key().to_string();
        ssn.discard(node_stmt);
        return Err(format!(
            "{first} would be placed on the freed resources first, and the task no longer fit"
        ));
    }
    if let Err(e) = ssn.pipeline(&mut node_stmt, preemptor, node, evicted) {
        ssn.discard(node_stmt);
        return Err(format!("pipeline failed: {e}"));
    }
    node_stmt.attribute_evictions(preemptor);
    stmt.merge(node_stmt);
    Ok(())
}

/// Evicts victims in victim order until `preemptor` fits `node`, then spares again, most
/// important first, every evicted victim it still fits without. `None`, with every eviction
/// undone, when it never fits.
fn evict_until_fit(
    ssn: &mut Session,
    preemptor: TaskId,
    node: NodeId,
    victims: &[TaskId],
    rules: Rules,
) -> Option<Statement> {
    let mut stmt = Statement::new();
    let mut heap = ssn.build_victims_priority_queue(victims, preemptor);
    let mut evicted: Vec<(TaskId, TaskStatus)> = Vec::new();
    let mut fit = fits(ssn, preemptor, node, rules.allocatable_in);
    while !fit {
        let Some(victim) = heap.pop(|a, b| ssn.victim_before(a, b, preemptor)) else {
            break;
        };
        evicted.push((victim, ssn.state.task(victim).status));
        ssn.evict(&mut stmt, victim, rules.reason);
        fit = fits(ssn, preemptor, node, rules.allocatable_in);
    }
    if !fit {
        ssn.discard(stmt);
        return None;
    }
    // The last victim is needed: the task did not fit just before it was evicted, with every
    // earlier victim gone. Each earlier one is given back if the task still fits without it.
    for &(victim, status) in evicted.iter().rev().skip(1) {
        ssn.revert_eviction(&mut stmt, victim, status);
        if !fits(ssn, preemptor, node, rules.allocatable_in) {
            ssn.evict(&mut stmt, victim, rules.reason);
        }
    }
    Some(stmt)
}

/// Rule 3: the first victim in `stmt` whose pod, recreated by its controller, the next allocate
/// would place before the preemptor — on the resources its eviction freed: the victim's side
/// (queue or job) is not overused, admits the pod, and comes first in the order. The session
/// state is the one after the evictions, before the preemptor is placed.
pub(super) fn take_back_risk(
    ssn: &Session,
    stmt: &Statement,
    preemptor: TaskId,
    contest: Contest,
) -> Option<TaskId> {
    let evicted = stmt
        .ops
        .iter()
        .filter(|op| op.kind == OpKind::Evict)
        .map(|op| op.task);
    for victim in evicted {
        let risky = match contest {
            Contest::Queues => {
                let (Some(vq), Some(pq)) = (
                    ssn.state.queue_of_task(victim),
                    ssn.state.queue_of_task(preemptor),
                ) else {
                    continue;
                };
                vq != pq
                    && served(ssn, victim)
                    && !ssn.overused(vq)
                    && ssn.allocatable(vq, victim)
                    && ssn.queue_order(vq, pq)
            }
            Contest::Jobs => {
                let (Some(vj), Some(pj)) = (ssn.state.job_of(victim), ssn.state.job_of(preemptor))
                else {
                    continue;
                };
                let Some(q) = ssn.state.job(vj).queue else {
                    continue;
                };
                vj != pj
                    && served(ssn, victim)
                    && !ssn.overused(q)
                    && ssn.allocatable(q, victim)
                    && ssn.job_order(vj, pj)
            }
        };
        if risky {
            return Some(victim);
        }
    }
    None
}

/// Whether allocate would serve the victim's job at all in the next session, with the evicted
/// pods recreated: a gang with fewer live pods than its minimum fails `JobValid` and is skipped,
/// so it cannot take anything back. (Counted here rather than asked of `JobValid`, which would
/// see the victims of this very eviction as gone and call a whole gang invalid.)
fn served(ssn: &Session, victim: TaskId) -> bool {
    let Some(j) = ssn.state.job_of(victim) else {
        return false;
    };
    let job = ssn.state.job(j);
    let finished = job.count(TaskStatus::Succeeded) + job.count(TaskStatus::Failed);
    let live = job.tasks.len().saturating_sub(finished as usize);
    i64::try_from(live).unwrap_or(i64::MAX) >= i64::from(job.min_available)
}

/// Rule 3, second half: the next allocate serves other pending tasks before `preemptor` —
/// those of queues ordered before its queue, and of jobs ordered before its job in its queue —
/// and hands them the freed room if they fit there. Returns the first such task after which
/// `preemptor` no longer fits `node` (the eviction would then serve someone else while the
/// preemptor waits, and the victims' side would take the leftovers back). Tasks of the
/// preemptor's own job do not count: room they take still goes to the job.
fn served_first(ssn: &Session, preemptor: TaskId, node: NodeId) -> Option<TaskId> {
    let (pj, pq) = (
        ssn.state.job_of(preemptor)?,
        ssn.state.queue_of_task(preemptor)?,
    );
    let ahead = |t: TaskId| -> bool {
        let (Some(j), Some(q)) = (ssn.state.job_of(t), ssn.state.queue_of_task(t)) else {
            return false;
        };
        if j == pj || ssn.state.job(j).is_pending() {
            return false;
        }
        let before = if q == pq {
            ssn.job_order(j, pj)
        } else {
            ssn.queue_order(q, pq)
        };
        before && !ssn.overused(q) && ssn.allocatable(q, t)
    };
    // A heap rather than a sort: plugin orders need not be total, and a heap, like Volcano's,
    // copes with that where a sort may not.
    let before = |a: TaskId, b: TaskId| served_order(ssn, a, b) == std::cmp::Ordering::Less;
    let mut candidates = PriorityQueue::new();
    for j in ssn.state.job_ids() {
        for t in ssn.state.job_tasks_in(j, TaskStatus::Pending) {
            if !ssn.state.task(t).spec.sch_gated && ahead(t) {
                candidates.push(t, before);
            }
        }
    }
    let mut room = ssn.state.node(node).future_idle();
    let need = ssn.state.task(preemptor).resreq();
    while let Some(t) = candidates.pop(before) {
        let req = ssn.state.task(t).resreq();
        if req.less_equal(&room, DimensionDefault::Zero) && ssn.predicate(t, node).is_ok() {
            room.sub(req);
            if !need.less_equal(&room, DimensionDefault::Zero) {
                return Some(t);
            }
        }
    }
    None
}

/// Allocate's order between two pending tasks: queue, then job, then task order.
fn served_order(ssn: &Session, a: TaskId, b: TaskId) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (qa, qb) = (ssn.state.queue_of_task(a), ssn.state.queue_of_task(b));
    if let (Some(qa), Some(qb)) = (qa, qb)
        && qa != qb
    {
        if ssn.queue_order(qa, qb) {
            return Ordering::Less;
        }
        if ssn.queue_order(qb, qa) {
            return Ordering::Greater;
        }
    }
    let (ja, jb) = (ssn.state.job_of(a), ssn.state.job_of(b));
    if let (Some(ja), Some(jb)) = (ja, jb)
        && ja != jb
    {
        return ssn.job_order_compare(ja, jb).then(a.cmp(&b));
    }
    ssn.task_order_compare(a, b).then(a.cmp(&b))
}

/// A small cluster and fake plugins for the eviction actions' tests. The plugins are simple
/// stand-ins with the shape of Volcano's (gang-like starving/pipelined votes, priority-like
/// victims, proportion-like queue quotas, a predicate driven by node annotations), so that the
/// actions can be tested without the plugins crate.
#[cfg(test)]
pub(super) mod testkit {
    use std::cmp::Ordering;
    use std::sync::Arc;

    use serde_json::{Value, json};

    use crate::conf::{Arguments, KnownNames, parse};
    use crate::framework::{
        ExtensionPoints as EP, PERMIT, Plugin, PluginRegistry, REJECT, Session, SessionOptions,
        SessionState,
    };
    use crate::model::{FitError, FitStatus, JobId, NodeId, QueueId, StatusCode, TaskId};
    use crate::model::{TaskStatus, task::TaskInfo};
    use crate::state::{ClusterState, StateOptions};

    /// The plugins below, by name.
    pub const PLUGINS: &[&str] = &[
        "gangish",
        "prio",
        "quota",
        "nodecheck",
        "lowfirst",
        "s1",
        "s2",
        "s3",
        "s4",
    ];

    /// Names under which [`Scripted`] is registered.
    const SCRIPTED: [&str; 4] = ["s1", "s2", "s3", "s4"];

    /// Gang-like votes: starving while `ready + pipelined < minMember`, pipelined (Permit) once
    /// `ready + pipelined ≥ minMember`, ready once `ready ≥ minMember`.
    struct Gangish;

    impl Plugin for Gangish {
        fn name(&self) -> &'static str {
            "gangish"
        }
        fn extension_points(&self) -> EP {
            EP::JOB_STARVING | EP::JOB_PIPELINED | EP::JOB_READY
        }
        fn job_starving(&self, ssn: &SessionState, job: JobId) -> bool {
            ssn.job(job).is_starving()
        }
        fn job_pipelined(&self, ssn: &SessionState, job: JobId) -> i32 {
            if ssn.job(job).is_pipelined() {
                PERMIT
            } else {
                REJECT
            }
        }
        fn job_ready(&self, ssn: &SessionState, job: JobId) -> bool {
            ssn.job(job).is_ready()
        }
    }

    /// Priority-like: higher job priority first, higher task priority first; preemption victims
    /// are tasks of lower-priority jobs, or lower-priority tasks of the preemptor's own job.
    /// Every reclaim candidate is permitted (the quota plugin narrows them).
    struct Prio;

    impl Plugin for Prio {
        fn name(&self) -> &'static str {
            "prio"
        }
        fn extension_points(&self) -> EP {
            EP::JOB_ORDER | EP::TASK_ORDER | EP::PREEMPTABLE | EP::RECLAIMABLE
        }
        fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
            ssn.job(r).priority.cmp(&ssn.job(l).priority)
        }
        fn task_order(&self, ssn: &SessionState, l: TaskId, r: TaskId) -> Ordering {
            ssn.task(r).spec.priority.cmp(&ssn.task(l).spec.priority)
        }
        fn preemptable(
            &self,
            ssn: &SessionState,
            preemptor: TaskId,
            candidates: &[TaskId],
        ) -> (Vec<TaskId>, i32) {
            let p = ssn.task(preemptor);
            let victims = candidates
                .iter()
                .copied()
                .filter(|&c| {
                    let t = ssn.task(c);
                    match (t.job, p.job) {
                        (Some(cj), Some(pj)) if cj == pj => t.spec.priority < p.spec.priority,
                        (Some(cj), Some(pj)) => ssn.job(cj).priority < ssn.job(pj).priority,
                        _ => false,
                    }
                })
                .collect();
            (victims, PERMIT)
        }
        fn reclaimable(
            &self,
            _ssn: &SessionState,
            _reclaimer: TaskId,
            candidates: &[TaskId],
        ) -> (Vec<TaskId>, i32) {
            (candidates.to_vec(), PERMIT)
        }
    }

    /// Job order that serves lower-priority jobs first (to provoke the take-back rule).
    struct LowFirst;

    impl Plugin for LowFirst {
        fn name(&self) -> &'static str {
            "lowfirst"
        }
        fn extension_points(&self) -> EP {
            EP::JOB_ORDER
        }
        fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
            ssn.job(l).priority.cmp(&ssn.job(r).priority)
        }
    }

    /// Proportion-like quotas on cpu: a queue's `deserved` and `capability` come from its spec
    /// (missing = unlimited); its allocation is what its tasks hold, pipelined ones included.
    struct Quota;

    /// Milli-cpu a queue holds: allocated tasks plus pipelined ones.
    pub fn queue_cpu(ssn: &SessionState, q: QueueId) -> f64 {
        ssn.tasks()
            .iter()
            .filter(|t| t.job.and_then(|j| ssn.job(j).queue) == Some(q))
            .filter(|t| t.status.is_allocated() || t.status == TaskStatus::Pipelined)
            .map(|t| t.resreq().milli_cpu)
            .sum()
    }

    fn deserved(ssn: &SessionState, q: QueueId) -> f64 {
        ssn.queue(q)
            .spec
            .deserved
            .as_ref()
            .map_or(f64::INFINITY, |d| d.milli_cpu)
    }

    fn capability(ssn: &SessionState, q: QueueId) -> f64 {
        ssn.queue(q)
            .spec
            .capability
            .as_ref()
            .map_or(f64::INFINITY, |d| d.milli_cpu)
    }

    fn share(ssn: &SessionState, q: QueueId) -> f64 {
        let d = deserved(ssn, q);
        if d.is_finite() && d > 0.0 {
            queue_cpu(ssn, q) / d
        } else {
            0.0
        }
    }

    impl Plugin for Quota {
        fn name(&self) -> &'static str {
            "quota"
        }
        fn extension_points(&self) -> EP {
            EP::QUEUE_ORDER | EP::OVERUSED | EP::ALLOCATABLE | EP::PREEMPTIVE | EP::RECLAIMABLE
        }
        fn queue_order(&self, ssn: &SessionState, l: QueueId, r: QueueId) -> Ordering {
            share(ssn, l).total_cmp(&share(ssn, r))
        }
        fn overused(&self, ssn: &SessionState, q: QueueId) -> bool {
            deserved(ssn, q) <= queue_cpu(ssn, q)
        }
        fn allocatable(&self, ssn: &SessionState, q: QueueId, task: TaskId) -> bool {
            queue_cpu(ssn, q) + ssn.task(task).resreq().milli_cpu <= capability(ssn, q)
        }
        fn preemptive(
            &self,
            ssn: &SessionState,
            q: QueueId,
            request: &crate::model::Resource,
        ) -> bool {
            queue_cpu(ssn, q) + request.milli_cpu <= deserved(ssn, q)
        }
        fn reclaimable(
            &self,
            ssn: &SessionState,
            _reclaimer: TaskId,
            candidates: &[TaskId],
        ) -> (Vec<TaskId>, i32) {
            let mut held: Vec<(QueueId, f64)> = Vec::new();
            let mut victims = Vec::new();
            for &c in candidates {
                let Some(q) = ssn.queue_of_task(c) else {
                    continue;
                };
                let pos = match held.iter().position(|(hq, _)| *hq == q) {
                    Some(p) => p,
                    None => {
                        held.push((q, queue_cpu(ssn, q)));
                        held.len() - 1
                    }
                };
                if held[pos].1 > deserved(ssn, q) {
                    held[pos].1 -= ssn.task(c).resreq().milli_cpu;
                    victims.push(c);
                }
            }
            (victims, PERMIT)
        }
    }

    /// Node annotations drive the predicate: `test/unschedulable` fails with `Unschedulable`
    /// (evicting pods cannot fix it), `test/unresolvable` with `UnschedulableAndUnresolvable`,
    /// `test/max-pods: N` fails with `Unschedulable` while N pods hold the node (evicted
    /// ones no longer count, pipelined ones do), and `test/repels: <pod name>` fails with
    /// `Unschedulable` for other pods while that pod holds the node (an anti-affinity in
    /// miniature: only evicting that one pod helps).
    struct NodeCheck;

    fn annotation<'a>(ssn: &'a SessionState, node: NodeId, key: &str) -> Option<&'a str> {
        ssn.node(node)
            .spec
            .node
            .metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    impl Plugin for NodeCheck {
        fn name(&self) -> &'static str {
            "nodecheck"
        }
        fn extension_points(&self) -> EP {
            EP::PREDICATE
        }
        fn predicate(
            &self,
            ssn: &SessionState,
            task: TaskId,
            node: NodeId,
        ) -> Result<(), FitError> {
            let fail =
                |code, reason: &str| Err(FitError::new(FitStatus::new(code, reason, "nodecheck")));
            if annotation(ssn, node, "test/unresolvable").is_some() {
                return fail(StatusCode::UnschedulableAndUnresolvable, "unresolvable");
            }
            if annotation(ssn, node, "test/unschedulable").is_some() {
                return fail(StatusCode::Unschedulable, "unschedulable");
            }
            if let Some(repelled) = annotation(ssn, node, "test/repels") {
                let present = ssn.node(node).tasks.iter().any(|&(t, _)| {
                    let t = ssn.task(t);
                    t.spec.name == repelled && t.status != TaskStatus::Releasing
                });
                if present && ssn.task(task).spec.name != repelled {
                    return fail(StatusCode::Unschedulable, "repelled");
                }
            }
            if let Some(max) = annotation(ssn, node, "test/max-pods").and_then(|v| v.parse().ok()) {
                let pods = ssn
                    .node(node)
                    .tasks
                    .iter()
                    .filter(|(t, _)| ssn.task(*t).status != TaskStatus::Releasing)
                    .count();
                if pods >= max {
                    return fail(StatusCode::Unschedulable, "too many pods");
                }
            }
            Ok(())
        }
    }

    /// Answers from its arguments: `victims: "p1,p2"` (pod names; `""` is an empty answer)
    /// for both victim filters, `starving: bool` for `JobStarving`.
    struct Scripted {
        points: EP,
        victims: Vec<String>,
        starving: bool,
    }

    fn scripted(args: &Arguments) -> Box<dyn Plugin> {
        let mut points = EP::NONE;
        let mut victims = String::new();
        if args.get_string("victims", &mut victims) == Ok(true) {
            points = points | EP::PREEMPTABLE | EP::RECLAIMABLE;
        }
        let mut starving = false;
        if args.get_bool("starving", &mut starving) == Ok(true) {
            points = points | EP::JOB_STARVING;
        }
        Box::new(Scripted {
            points,
            victims: victims
                .split(',')
                .filter(|v| !v.is_empty())
                .map(|v| format!("ns/{v}"))
                .collect(),
            starving,
        })
    }

    impl Scripted {
        fn answer(&self, ssn: &SessionState) -> (Vec<TaskId>, i32) {
            let ids = self
                .victims
                .iter()
                .filter_map(|key| ssn.tasks().iter().position(|t| t.key() == key))
                .map(TaskId::from_index)
                .collect();
            (ids, PERMIT)
        }
    }

    impl Plugin for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn extension_points(&self) -> EP {
            self.points
        }
        fn preemptable(&self, ssn: &SessionState, _: TaskId, _: &[TaskId]) -> (Vec<TaskId>, i32) {
            self.answer(ssn)
        }
        fn reclaimable(&self, ssn: &SessionState, _: TaskId, _: &[TaskId]) -> (Vec<TaskId>, i32) {
            self.answer(ssn)
        }
        fn job_starving(&self, _: &SessionState, _: JobId) -> bool {
            self.starving
        }
    }

    fn registry() -> PluginRegistry {
        let mut r = PluginRegistry::new();
        for name in SCRIPTED {
            r.register(name, scripted);
        }
        r.register("gangish", |_: &Arguments| -> Box<dyn Plugin> {
            Box::new(Gangish)
        });
        r.register("prio", |_: &Arguments| -> Box<dyn Plugin> {
            Box::new(Prio)
        });
        r.register("quota", |_: &Arguments| -> Box<dyn Plugin> {
            Box::new(Quota)
        });
        r.register("nodecheck", |_: &Arguments| -> Box<dyn Plugin> {
            Box::new(NodeCheck)
        });
        r.register("lowfirst", |_: &Arguments| -> Box<dyn Plugin> {
            Box::new(LowFirst)
        });
        r
    }

    /// One tier with every plugin but `lowfirst`, running `actions`.
    pub fn conf(actions: &str) -> String {
        format!(
            "actions: \"{actions}\"\ntiers:\n- plugins:\n  - name: prio\n  - name: gangish\n  - name: quota\n  - name: nodecheck\n"
        )
    }

    /// A cluster written as JSON objects.
    pub struct Cluster {
        pub state: ClusterState,
        pods: usize,
    }

    impl Cluster {
        /// Queues `q1` and `q2` without quotas; add more with [`Cluster::queue`].
        pub fn new() -> Self {
            let mut c = Cluster {
                state: ClusterState::new(StateOptions::default()),
                pods: 0,
            };
            c.queue("q1", json!({}), true).queue("q2", json!({}), true);
            c
        }

        /// A node with `cpu` allocatable and the given annotations.
        pub fn node(&mut self, name: &str, cpu: &str, annotations: Value) -> &mut Self {
            let node = json!({
                "metadata": {"name": name, "annotations": annotations},
                "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}
            });
            self.state
                .upsert_node(serde_json::from_value(node).expect("valid node"));
            self
        }

        /// A queue; `spec` may set `deserved` and `capability`.
        pub fn queue(&mut self, name: &str, spec: Value, reclaimable: bool) -> &mut Self {
            let mut spec = spec;
            spec["weight"] = json!(1);
            spec["reclaimable"] = json!(reclaimable);
            let q = json!({"metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec});
            self.state
                .upsert_queue(serde_json::from_value(q).expect("valid queue"));
            self
        }

        pub fn priority_class(&mut self, name: &str, value: i32) -> &mut Self {
            let pc = json!({"metadata": {"name": name}, "value": value});
            self.state
                .upsert_priority_class(serde_json::from_value(pc).expect("valid priority class"));
            self
        }

        /// A running PodGroup `ns/<name>` in `queue` with a priority class (`""`: none).
        pub fn job(&mut self, name: &str, queue: &str, min: i32, class: &str) -> &mut Self {
            let pg = json!({
                "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2024-01-01T00:00:00Z"},
                "spec": {"minMember": min, "queue": queue, "priorityClassName": class},
                "status": {"phase": "Running"}
            });
            self.state
                .upsert_pod_group(serde_json::from_value(pg).expect("valid pod group"));
            self
        }

        /// A pod `ns/<name>` of job `job` asking for `cpu`: running on `node`, or pending.
        /// Pods are created one second apart, in call order.
        pub fn pod(&mut self, name: &str, job: &str, cpu: &str, node: Option<&str>) -> &mut Self {
            self.pod_with(name, job, cpu, node, json!({}))
        }

        /// [`Cluster::pod`] with extra top-level pod fields merged in (`spec`/`status` keys are
        /// merged one level deep).
        pub fn pod_with(
            &mut self,
            name: &str,
            job: &str,
            cpu: &str,
            node: Option<&str>,
            extra: Value,
        ) -> &mut Self {
            self.pods += 1;
            let mut pod = json!({
                "metadata": {
                    "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                    "creationTimestamp": format!("2024-01-01T00:00:{:02}Z", self.pods),
                    "annotations": {"scheduling.k8s.io/group-name": job}
                },
                "spec": {
                    "schedulerName": "volcano-rs",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
                },
                "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}
            });
            if let Some(n) = node {
                pod["spec"]["nodeName"] = json!(n);
            }
            if let Value::Object(extra) = extra {
                for (k, v) in extra {
                    match (pod.get_mut(&k), v) {
                        (Some(Value::Object(dst)), Value::Object(src)) => dst.extend(src),
                        (_, v) => pod[&k] = v,
                    }
                }
            }
            self.state
                .upsert_pod(serde_json::from_value(pod).expect("valid pod"));
            self
        }

        /// Opens a session with the test plugins.
        pub fn session(&self, conf: &str) -> Session {
            let known = KnownNames {
                actions: &["enqueue", "allocate", "preempt", "reclaim", "backfill"],
                plugins: PLUGINS,
                strict: true,
                check_arguments: None,
            };
            let conf = parse(conf, &known).expect("valid configuration").conf;
            Session::open(
                &self.state.snapshot(),
                Arc::new(conf),
                &registry(),
                SessionOptions::default(),
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                "session".into(),
            )
        }
    }

    /// The task of pod `ns/<name>`.
    pub fn task(ssn: &Session, name: &str) -> TaskId {
        let key = format!("ns/{name}");
        let i = ssn
            .state
            .tasks()
            .iter()
            .position(|t: &TaskInfo| t.key() == key)
            .unwrap_or_else(|| panic!("no pod {key}"));
        TaskId::from_index(i)
    }

    pub fn node(ssn: &Session, name: &str) -> NodeId {
        ssn.state.node_id(name).expect("node")
    }

    pub fn queue(ssn: &Session, name: &str) -> QueueId {
        ssn.state.queue_id(name).expect("queue")
    }

    pub fn status(ssn: &Session, name: &str) -> TaskStatus {
        ssn.state.task(task(ssn, name)).status
    }

    /// Runs one action the way the session loop does (so evictions name it).
    pub fn run(ssn: &mut Session, action: &str) {
        let execute = crate::actions::action_by_name(action).expect("known action");
        ssn.state.begin_action(action);
        execute(ssn);
        ssn.state.end_action();
    }

    /// The pod names evicted so far, with the action that decided it.
    pub fn evictions(ssn: &Session) -> Vec<(String, String)> {
        ssn.state
            .decisions()
            .evictions
            .iter()
            .map(|e| {
                let name = e.pod.strip_prefix("ns/").unwrap_or(&e.pod).to_string();
                (name, e.action.clone())
            })
            .collect()
    }

    /// The node a task was pipelined to, by name.
    pub fn pipelined_on(ssn: &Session, name: &str) -> Option<String> {
        let t = ssn.state.task(task(ssn, name));
        (t.status == TaskStatus::Pipelined)
            .then(|| t.node.map(|n| ssn.state.node(n).name().to_string()))
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::testkit::*;
    use super::*;
    use crate::model::{FitError, FitErrors, FitStatus, StatusCode};

    /// Queue q1 holds jobs `a` (priority 10) and `b` (priority 10), q2 job `c` (priority 10);
    /// all pods run on n1. The preemptor is `p-x-0` of job `p` in q1.
    fn victims_cluster() -> Cluster {
        let mut c = Cluster::new();
        c.queue("q1", json!({"deserved": {"cpu": "4"}}), true)
            .queue("q2", json!({"deserved": {"cpu": "4"}}), true);
        c.priority_class("ten", 10).priority_class("five", 5);
        c.node("n1", "16", json!({}));
        c.job("a", "q1", 1, "ten").job("b", "q1", 1, "ten");
        c.job("c", "q2", 1, "ten").job("low", "q1", 1, "five");
        c.job("p", "q1", 1, "ten");
        c.pod("a-x-0", "a", "1", Some("n1"));
        c.pod("a-x-1", "a", "1", Some("n1"));
        c.pod("b-x-0", "b", "1", Some("n1"));
        c.pod("c-x-0", "c", "4", Some("n1"));
        c.pod("low-x-0", "low", "1", Some("n1"));
        // A pod whose PodGroup does not exist: on the node, without a job.
        c.pod("orphan-x-0", "missing", "1", Some("n1"));
        c.pod("p-x-0", "p", "1", None);
        c
    }

    fn pop_order(ssn: &Session, victims: &[&str]) -> Vec<String> {
        let p = task(ssn, "p-x-0");
        let ids: Vec<TaskId> = victims.iter().map(|v| task(ssn, v)).collect();
        let mut heap = ssn.build_victims_priority_queue(&ids, p);
        let mut order = Vec::new();
        while let Some(t) = heap.pop(|a, b| ssn.victim_before(a, b, p)) {
            order.push(ssn.state.task(t).spec.name.clone());
        }
        order
    }

    #[test]
    fn same_job_victims_go_in_reverse_task_order() {
        let ssn = victims_cluster().session(&conf("preempt"));
        assert_eq!(pop_order(&ssn, &["a-x-0", "a-x-1"]), ["a-x-1", "a-x-0"]);
    }

    #[test]
    fn a_task_without_a_job_goes_first() {
        let ssn = victims_cluster().session(&conf("preempt"));
        assert_eq!(ssn.state.task(task(&ssn, "orphan-x-0")).job, None);
        assert_eq!(
            pop_order(&ssn, &["a-x-0", "orphan-x-0"]),
            ["orphan-x-0", "a-x-0"]
        );
    }

    #[test]
    fn the_job_scheduled_later_gives_way_first() {
        // prio orders `a` (10) before `low` (5): `low` would be scheduled later.
        let ssn = victims_cluster().session(&conf("preempt"));
        assert_eq!(pop_order(&ssn, &["a-x-0", "low-x-0"]), ["low-x-0", "a-x-0"]);
    }

    #[test]
    fn equal_jobs_fall_back_to_reverse_task_order() {
        // §8.2 item 17: `a` and `b` tie in every plugin, so the reverse task order decides, not
        // the jobs: the highest pod index (a-x-1) first, then among index 0 the pod created
        // last (b-x-0).
        let ssn = victims_cluster().session(&conf("preempt"));
        assert_eq!(
            pop_order(&ssn, &["a-x-0", "b-x-0", "a-x-1"]),
            ["a-x-1", "b-x-0", "a-x-0"]
        );
    }

    #[test]
    fn different_queues_follow_the_victim_queue_order() {
        // No victim queue order plugin: the reverse of the queue order. q1 holds 4 of its 4
        // deserved cpu (share 1), q2 4 of 4 too; shares tie, so the queue order falls back to the
        // name (q1 first) and q2, served last, gives way first.
        let ssn = victims_cluster().session(&conf("preempt"));
        assert!(ssn.queue_order(queue(&ssn, "q1"), queue(&ssn, "q2")));
        assert_eq!(pop_order(&ssn, &["a-x-0", "c-x-0"]), ["c-x-0", "a-x-0"]);
        // With q2 less served than q1, q1 gives way first.
        let mut c = victims_cluster();
        c.queue("q2", json!({"deserved": {"cpu": "8"}}), true);
        let ssn = c.session(&conf("preempt"));
        assert_eq!(pop_order(&ssn, &["c-x-0", "a-x-0"]), ["a-x-0", "c-x-0"]);
    }

    #[test]
    fn preempt_predicate_lets_unschedulable_through_but_not_unresolvable() {
        let mut c = victims_cluster();
        c.node("n2", "4", json!({"test/unschedulable": "true"}))
            .node("n3", "4", json!({"test/unresolvable": "true"}));
        let ssn = c.session(&conf("preempt"));
        let p = task(&ssn, "p-x-0");
        assert!(ssn.predicate(p, node(&ssn, "n2")).is_err());
        assert!(
            ssn.predicate_for_preempt_action(p, node(&ssn, "n2"))
                .is_ok()
        );
        assert!(
            ssn.predicate_for_preempt_action(p, node(&ssn, "n3"))
                .is_err()
        );
        assert!(
            ssn.predicate_for_preempt_action(p, node(&ssn, "n1"))
                .is_ok()
        );
    }

    #[test]
    fn nodes_found_unresolvable_earlier_are_left_out() {
        let mut c = victims_cluster();
        c.node("n2", "4", json!({})).node("n3", "4", json!({}));
        let mut ssn = c.session(&conf("preempt"));
        let p = task(&ssn, "p-x-0");
        let all: Vec<NodeId> = ssn.state.node_ids().collect();
        assert_eq!(ssn.filter_out_unschedulable_and_unresolvable_nodes(p), all);

        let mut fe = FitErrors::default();
        let status = |code| FitError::new(FitStatus::new(code, "x", "test"));
        fe.set_node_error("n2", status(StatusCode::UnschedulableAndUnresolvable));
        fe.set_node_error("n3", status(StatusCode::Unschedulable));
        let job = ssn.state.job_of(p).expect("job");
        ssn.state.record_task_fit_errors(job, p, fe);
        assert_eq!(
            ssn.filter_out_unschedulable_and_unresolvable_nodes(p),
            vec![node(&ssn, "n1"), node(&ssn, "n3")]
        );
    }

    #[test]
    fn a_reverted_eviction_leaves_no_trace() {
        let mut c = victims_cluster();
        c.pod_with(
            "b-x-1",
            "b",
            "2",
            Some("n1"),
            json!({"status": {"phase": "Pending"}}),
        );
        let mut ssn = c.session(&conf("preempt"));
        let (bound, running) = (task(&ssn, "b-x-1"), task(&ssn, "b-x-0"));
        assert_eq!(ssn.state.task(bound).status, TaskStatus::Bound);
        let n = node(&ssn, "n1");
        let idle = ssn.state.node(n).idle.milli_cpu;
        let job = ssn.state.job_of(bound).expect("job");
        let ready = ssn.state.job(job).ready_task_num();

        let mut stmt = Statement::new();
        ssn.evict(&mut stmt, bound, "preempt");
        ssn.evict(&mut stmt, running, "preempt");
        assert_eq!(ssn.state.node(n).releasing.milli_cpu, 3000.0);
        assert!(ssn.revert_eviction(&mut stmt, bound, TaskStatus::Bound));
        assert!(!ssn.revert_eviction(&mut stmt, bound, TaskStatus::Bound));
        assert_eq!(ssn.state.task(bound).status, TaskStatus::Bound);
        assert_eq!(stmt.ops.len(), 1);
        assert_eq!(stmt.ops[0].task, running);
        assert_eq!(ssn.state.node(n).releasing.milli_cpu, 1000.0);

        ssn.discard(stmt);
        assert_eq!(ssn.state.node(n).idle.milli_cpu, idle);
        assert_eq!(ssn.state.node(n).releasing.milli_cpu, 0.0);
        assert_eq!(ssn.state.job(job).ready_task_num(), ready);
        assert!(ssn.state.decisions().evictions.is_empty());
    }

    #[test]
    fn victims_are_kept_once_and_only_among_the_candidates() {
        let ids = |v: &[u32]| v.iter().map(|&i| TaskId(i)).collect::<Vec<_>>();
        assert_eq!(
            sanitize_victims(ids(&[3, 1, 3, 9, 2]), &ids(&[1, 2, 3])),
            ids(&[3, 1, 2])
        );
    }

    #[test]
    fn victims_cover_counts_future_idle() {
        // n1: 16 cpu, 9 held; the preemptor asks for 1.
        let mut c = victims_cluster();
        c.pod("p-x-1", "p", "8", None);
        let ssn = c.session(&conf("preempt"));
        let (p, big) = (task(&ssn, "p-x-0"), task(&ssn, "p-x-1"));
        let n = node(&ssn, "n1");
        assert!(victims_cover(&ssn, p, n, &[]));
        assert!(!victims_cover(&ssn, big, n, &[]));
        assert!(victims_cover(&ssn, big, n, &[task(&ssn, "a-x-0")]));
    }

    /// A configuration of scripted victim answers, one list per tier.
    fn scripted_tiers(tiers: &[&[(&str, &str)]]) -> String {
        let mut s = String::from("actions: \"preempt\"\ntiers:\n");
        for tier in tiers {
            s.push_str("- plugins:\n");
            for (name, victims) in *tier {
                s.push_str(&format!(
                    "  - name: {name}\n    arguments: {{victims: \"{victims}\"}}\n"
                ));
            }
        }
        s
    }

    fn preemptable(ssn: &Session) -> Vec<String> {
        let p = task(ssn, "p-x-0");
        ssn.preemptable(p, &[])
            .into_iter()
            .map(|t| ssn.state.task(t).spec.name.clone())
            .collect()
    }

    #[test]
    fn spec_f1_empty_intersection_is_reseeded() {
        // plugins-core §12.0 F-1: A {t1}, B {t2}, C {t2, t3} in one tier ⇒ {t2, t3}.
        let conf = scripted_tiers(&[&[("s1", "a-x-0"), ("s2", "a-x-1"), ("s3", "a-x-1,b-x-0")]]);
        let ssn = victims_cluster().session(&conf);
        assert_eq!(preemptable(&ssn), ["a-x-1", "b-x-0"]);
    }

    #[test]
    fn spec_f2_empty_answer_leaves_the_tier_undecided() {
        // F-2: A {t1, t2}, B {} ⇒ undecided; a next tier with {t2} decides; none ⇒ empty.
        let conf = scripted_tiers(&[&[("s1", "a-x-0,a-x-1"), ("s2", "")], &[("s3", "a-x-1")]]);
        let ssn = victims_cluster().session(&conf);
        assert_eq!(preemptable(&ssn), ["a-x-1"]);
        let conf = scripted_tiers(&[&[("s1", "a-x-0,a-x-1"), ("s2", "")]]);
        let ssn = victims_cluster().session(&conf);
        assert!(preemptable(&ssn).is_empty());
    }

    #[test]
    fn spec_f4_one_registrant_saying_not_starving_wins_its_tier() {
        // F-4 in shape: two starving registrants in the first tier, one says no ⇒ not starving,
        // so preempt does nothing, whatever the other says or a later tier would say.
        let conf = "actions: \"preempt\"\ntiers:\n- plugins:\n  - name: prio\n  - name: s1\n    arguments: {starving: true}\n  - name: s2\n    arguments: {starving: false}\n- plugins:\n  - name: s3\n    arguments: {starving: true}\n";
        let mut c = victims_cluster();
        // n1 full: with the job starving, low-x-0 would be evicted.
        c.node("n1", "9", json!({}));
        let mut ssn = c.session(conf);
        let job = ssn.state.job_of(task(&ssn, "p-x-0")).expect("job");
        assert!(!ssn.job_starving(job));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
    }
}
