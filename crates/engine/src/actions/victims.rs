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
    i64::try_from(live).unwrap_or(i64::MAX) >= i64::from(job.spec.min_available)
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

/// A small cluster and fake plugins for the eviction actions' tests (`victims/testkit.rs`).
#[cfg(test)]
pub(super) mod testkit;

#[cfg(test)]
mod tests;
