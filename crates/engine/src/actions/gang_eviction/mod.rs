//! `gangpreempt` and `gangreclaim`: gang-aware eviction that plans a starving job's whole
//! placement before evicting anything (spec/framework.md §6.7, §6.8).
//!
//! For each starving job, queue by queue: its pending demand; the candidate victims — running
//! tasks of lower-priority jobs of its queue (gangpreempt), or of other, reclaimable queues
//! (gangreclaim) — grouped per victim job into safe and whole bundles ([`bundles`]), sorted,
//! filtered by the plugins' `UnifiedEvictable`; then bundles are added one at a time until the
//! cluster's idle and releasing resources plus the victims' cover the demand, and a dry run
//! evicts the victims and pipelines every pending task. The first dry run that leaves the job
//! pipelined is kept; its evictions are committed with the job's statement.
//!
//! The only domain is the whole cluster, as in Volcano without a topology gradient plugin: the
//! HyperNode domains (the eviction gradient of `network-topology-aware`) and the nominations
//! allocate would redeem are not used yet; `maxDomains` is read and validated.
//!
//! Differences from Volcano, on purpose (docs/fairness.md, docs/architecture.md), each so that
//! no eviction happens that achieves nothing:
//! * a job whose pending tasks can be pipelined without evicting anything evicts nothing (left
//!   to allocate); Volcano always evicts at least its first bundle;
//! * safe victims the plan turns out not to need are spared again, the most important first;
//!   Volcano evicts whole bundles;
//! * a pod with `preemptionPolicy: Never` makes its job evict nothing (Volcano's gang actions
//!   ignore the policy);
//! * the no-take-back rule of preempt and reclaim applies (argument `refuseTakeBack`).

mod bundles;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::framework::{EvictionContext, EvictionKind, PriorityQueue, Session, Statement};
use crate::model::{DimensionDefault, JobId, QueueId, Resource, TaskId, TaskStatus};

use super::helper::{PredicateHelper, choose_node, resource_fit};
use super::victims::{Contest, take_back_risk};
use bundles::{Bundle, BundleKind, apply_allowed, job_bundles, sort_bundles};

/// The action names, as configured and recorded on their evictions.
pub const GANG_PREEMPT: &str = "gangpreempt";
pub const GANG_RECLAIM: &str = "gangreclaim";

pub fn execute_gang_preempt(ssn: &mut Session) {
    execute(ssn, EvictionKind::GangPreempt);
}

pub fn execute_gang_reclaim(ssn: &mut Session) {
    execute(ssn, EvictionKind::GangReclaim);
}

/// The actions' arguments.
#[derive(Copy, Clone, Debug)]
struct GangArgs {
    allow_whole_bundle: bool,
    /// allocate's `predicateErrorCacheEnable`, as Volcano reads it.
    predicate_cache: bool,
    refuse_take_back: bool,
}

fn name_of(kind: EvictionKind) -> &'static str {
    match kind {
        EvictionKind::GangPreempt => GANG_PREEMPT,
        EvictionKind::GangReclaim => GANG_RECLAIM,
    }
}

fn read_args(ssn: &Session, kind: EvictionKind) -> GangArgs {
    let action = name_of(kind);
    let mut out = GangArgs {
        allow_whole_bundle: true,
        predicate_cache: true,
        refuse_take_back: true,
    };
    if let Some(args) = ssn.state.conf().action_arguments(action) {
        let mut max_domains = 8;
        match args.get_int("maxDomains", &mut max_domains) {
            Err(e) => tracing::warn!(action, error = %e, "argument ignored"),
            Ok(_) if max_domains <= 0 => tracing::warn!(
                action,
                max_domains,
                "maxDomains must be positive; 8 is used"
            ),
            Ok(_) => {}
        }
        for (key, value) in [
            ("allowWholeBundle", &mut out.allow_whole_bundle),
            ("refuseTakeBack", &mut out.refuse_take_back),
        ] {
            if let Err(e) = args.get_bool(key, value) {
                tracing::warn!(action, key, error = %e, "argument ignored");
            }
        }
    }
    if let Some(args) = ssn.state.conf().action_arguments("allocate")
        && let Err(e) = args.get_bool("predicateErrorCacheEnable", &mut out.predicate_cache)
    {
        tracing::warn!(action, error = %e, "allocate's predicateErrorCacheEnable ignored");
    }
    out
}

fn execute(ssn: &mut Session, kind: EvictionKind) {
    let args = read_args(ssn, kind);
    let mut queues: PriorityQueue<QueueId> = PriorityQueue::new();
    let mut seen: BTreeMap<QueueId, PriorityQueue<JobId>> = BTreeMap::new();
    let job_ids: Vec<JobId> = ssn.state.job_ids().collect();
    for job in job_ids {
        let j = ssn.state.job(job);
        let Some(queue) = j.queue else { continue };
        if j.is_pending() || ssn.job_valid(job).is_some() {
            continue;
        }
        if !seen.contains_key(&queue) {
            queues.push(queue, |a, b| ssn.queue_order(a, b));
        }
        let jobs = seen.entry(queue).or_default();
        if ssn.job_starving(job) {
            jobs.push(job, |a, b| ssn.job_order(a, b));
        }
    }
    while let Some(queue) = queues.pop(|a, b| ssn.queue_order(a, b)) {
        if kind == EvictionKind::GangReclaim && ssn.overused(queue) {
            continue;
        }
        while let Some(job) = seen
            .get_mut(&queue)
            .and_then(|jobs| jobs.pop(|a, b| ssn.job_order(a, b)))
        {
            let mut stmt = Statement::new();
            if let Err(reason) = evict_for_job(ssn, &mut stmt, queue, job, kind, args) {
                tracing::debug!(job = %ssn.state.job(job).spec.uid, action = name_of(kind), %reason, "no gang eviction");
            }
            if ssn.job_pipelined(job) {
                ssn.commit(stmt);
            } else {
                ssn.discard(stmt);
            }
        }
    }
}

/// The job's demand: pending tasks that ask for something and are not gated, in task order.
fn pending_demand(ssn: &Session, job: JobId) -> Vec<TaskId> {
    let mut heap = PriorityQueue::new();
    for t in ssn.state.job_tasks_in(job, TaskStatus::Pending) {
        let spec = &ssn.state.task(t).spec;
        if !spec.sch_gated && !spec.resreq.is_empty() {
            heap.push(t, |a, b| ssn.task_order(a, b));
        }
    }
    let mut out = Vec::new();
    while let Some(t) = heap.pop(|a, b| ssn.task_order(a, b)) {
        out.push(t);
    }
    out
}

/// `preemptJobInDomains` / `reclaimJobInDomains` over the one domain there is.
fn evict_for_job(
    ssn: &mut Session,
    stmt: &mut Statement,
    queue: QueueId,
    job: JobId,
    kind: EvictionKind,
    args: GangArgs,
) -> Result<(), String> {
    let pending = pending_demand(ssn, job);
    if pending.is_empty() {
        return Err("no pending demand".into());
    }
    if pending
        .iter()
        .any(|&t| ssn.state.task(t).spec.preemption_never)
    {
        return Err("a pod of the job has preemptionPolicy Never".into());
    }
    let mut need = Resource::empty();
    for &t in &pending {
        need.add(ssn.state.task(t).resreq());
    }
    if kind == EvictionKind::GangReclaim && !ssn.preemptive_request(queue, &need) {
        return Err("the queue may not reclaim that much".into());
    }
    // Rule 2: a job that fits as things are needs no eviction; allocate places it.
    if let Some(plan) = plan(ssn, queue, job, &pending, &[], kind, args) {
        ssn.discard(plan);
        return Err("fits without evicting anything; left to allocate".into());
    }
    let bundles = select_bundles(ssn, job, &need, kind, args);
    if bundles.is_empty() {
        return Err("no victims".into());
    }
    let mut base = Resource::empty();
    for n in ssn.state.node_ids() {
        let node = ssn.state.node(n);
        base.add(&node.idle);
        base.add(&node.releasing);
    }
    let mut victims: Vec<(TaskId, BundleKind)> = Vec::new();
    for b in &bundles {
        victims.extend(b.tasks.iter().map(|&t| (t, b.kind)));
        let mut available = base.clone();
        for &(v, _) in &victims {
            available.add(ssn.state.task(v).resreq());
        }
        if !need.less_equal(&available, DimensionDefault::Zero) {
            continue;
        }
        let ids: Vec<TaskId> = victims.iter().map(|&(t, _)| t).collect();
        let Some(found) = plan(ssn, queue, job, &pending, &ids, kind, args) else {
            continue;
        };
        let kept = spare_safe_victims(ssn, queue, job, &pending, &victims, found, kind, args);
        stmt.merge(kept);
        return Ok(());
    }
    Err("no set of bundles lets the job be pipelined".into())
}

/// Rule 2, second half: safe victims (whose jobs keep their minimum) the plan does not need
/// are given back, the most important (last added) first; each retry is a new dry run.
#[allow(clippy::too_many_arguments)]
fn spare_safe_victims(
    ssn: &mut Session,
    queue: QueueId,
    job: JobId,
    pending: &[TaskId],
    victims: &[(TaskId, BundleKind)],
    mut best: Statement,
    kind: EvictionKind,
    args: GangArgs,
) -> Statement {
    let mut chosen: Vec<TaskId> = victims.iter().map(|&(t, _)| t).collect();
    // A job whose whole bundle goes is broken anyway: its safe pods are not worth sparing.
    let broken: Vec<Option<JobId>> = victims
        .iter()
        .filter(|&&(_, b)| b == BundleKind::Whole)
        .map(|&(t, _)| ssn.state.job_of(t))
        .collect();
    for &(v, bundle) in victims.iter().rev() {
        if bundle != BundleKind::Safe || chosen.len() == 1 || broken.contains(&ssn.state.job_of(v))
        {
            continue;
        }
        let without: Vec<TaskId> = chosen.iter().copied().filter(|&t| t != v).collect();
        ssn.discard(best);
        match plan(ssn, queue, job, pending, &without, kind, args) {
            Some(smaller) => {
                best = smaller;
                chosen = without;
            }
            None => {
                best = plan(ssn, queue, job, pending, &chosen, kind, args).unwrap_or_default();
            }
        }
    }
    best
}

/// `selectDomainBundles`: candidates grouped into bundles per victim job, sorted, filtered by
/// `UnifiedEvictable`, sorted again; whole bundles dropped unless allowed.
fn select_bundles(
    ssn: &Session,
    job: JobId,
    need: &Resource,
    kind: EvictionKind,
    args: GangArgs,
) -> Vec<Bundle> {
    let state = &ssn.state;
    let pj = state.job(job);
    let mut by_job: BTreeMap<JobId, Vec<TaskId>> = BTreeMap::new();
    for n in state.node_ids() {
        for &(t, _) in &state.node(n).tasks {
            let task = state.task(t);
            let Some(vj) = task.job else { continue };
            let v = state.job(vj);
            let status_ok = match kind {
                EvictionKind::GangPreempt => {
                    matches!(task.status, TaskStatus::Running | TaskStatus::Bound)
                }
                EvictionKind::GangReclaim => task.status == TaskStatus::Running,
            };
            let (Some(vq), Some(pq)) = (v.queue, pj.queue) else {
                continue;
            };
            let relation_ok = match kind {
                EvictionKind::GangPreempt => vq == pq && vj != job && v.priority < pj.priority,
                EvictionKind::GangReclaim => vq != pq && state.queue(vq).spec.reclaimable,
            };
            if status_ok && task.spec.preemptable && relation_ok && gang_preemptable(ssn, vj) {
                by_job.entry(vj).or_default().push(t);
            }
        }
    }
    let mut bundles: Vec<Bundle> = by_job
        .into_iter()
        .flat_map(|(vj, tasks)| job_bundles(ssn, vj, tasks))
        .collect();
    let victim_first = |a: &Bundle, b: &Bundle| -> Option<Ordering> {
        match kind {
            // The job that would be scheduled last gives first.
            EvictionKind::GangPreempt => (a.job != b.job).then(|| {
                if ssn.job_order(b.job, a.job) {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }),
            EvictionKind::GangReclaim => {
                let (qa, qb) = (state.job(a.job).queue?, state.job(b.job).queue?);
                let pq = pj.queue?;
                (qa != qb).then(|| {
                    if ssn.victim_queue_order(qa, qb, pq) {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                })
            }
        }
    };
    sort_bundles(ssn, &mut bundles, need, &victim_first);
    let flat: Vec<TaskId> = bundles.iter().flat_map(|b| b.tasks.clone()).collect();
    let ctx = EvictionContext { kind, job };
    let allowed = ssn.unified_evictable(&ctx, &flat);
    let mut bundles = apply_allowed(ssn, bundles, &allowed);
    sort_bundles(ssn, &mut bundles, need, &victim_first);
    if !args.allow_whole_bundle {
        bundles.retain(|b| b.kind == BundleKind::Safe);
    }
    bundles
}

/// `IsJobPreemptableForGangEviction`: a PodGroup that says nothing may lose pods; one that
/// carries `volcano.sh/preemptable` (annotation, else label) follows it.
fn gang_preemptable(ssn: &Session, job: JobId) -> bool {
    let j = ssn.state.job(job);
    !j.spec.preemptable_stated || j.spec.preemptable
}

/// The dry run (`BuildNominationPlanInDomain`): evict `victims`, then pipeline every pending
/// task on the best feasible node. The statement if the job ends pipelined (still applied to
/// the session); `None`, with the session as before, otherwise.
fn plan(
    ssn: &mut Session,
    queue: QueueId,
    job: JobId,
    pending: &[TaskId],
    victims: &[TaskId],
    kind: EvictionKind,
    args: GangArgs,
) -> Option<Statement> {
    let reason = name_of(kind);
    let mut s = Statement::new();
    for &v in victims {
        ssn.evict(&mut s, v, reason);
    }
    let contest = match kind {
        EvictionKind::GangPreempt => Contest::Jobs,
        EvictionKind::GangReclaim => Contest::Queues,
    };
    if !victims.is_empty()
        && args.refuse_take_back
        && let Some(&first) = pending.first()
        && take_back_risk(ssn, &s, first, contest).is_some()
    {
        ssn.discard(s);
        return None;
    }
    let mut helper = PredicateHelper::new(args.predicate_cache);
    for &t in pending {
        if !place(ssn, &mut s, &mut helper, queue, t, !victims.is_empty()) {
            ssn.discard(s);
            return None;
        }
    }
    if !ssn.job_pipelined(job) {
        ssn.discard(s);
        return None;
    }
    if let Some(&first) = pending.first() {
        s.attribute_evictions(first);
    }
    Some(s)
}

/// One task of the dry run: admitted by its queue, pipelined on the best node where it fits
/// the future idle resources and the preempt-time predicates.
fn place(
    ssn: &mut Session,
    s: &mut Statement,
    helper: &mut PredicateHelper,
    queue: QueueId,
    task: TaskId,
    evicted: bool,
) -> bool {
    if !ssn.allocatable(queue, task) || ssn.pre_predicate(task).is_err() {
        return false;
    }
    let candidates = ssn.filter_out_unschedulable_and_unresolvable_nodes(task);
    let (feasible, _) = helper.predicate_nodes(
        ssn,
        task,
        &candidates,
        &|s, t, n| {
            resource_fit(s, t, n)?;
            s.predicate_for_preempt_action(t, n)
        },
        None,
        None,
    );
    let Some(best) = choose_node(ssn, task, &feasible, None) else {
        return false;
    };
    ssn.pipeline(s, task, best, evicted).is_ok()
}
