//! Victim bundles of the gang actions (spec/framework.md §6.7.1, Volcano's
//! `actions/utils/bundle.go`): a victim job's candidate tasks split into a *safe* part, whose
//! eviction leaves the job at or above its gang minimum, and a *whole* part, any of which breaks
//! it (so the whole part goes together, and costs the whole job).

use std::cmp::Ordering;
use std::collections::HashSet;

use crate::framework::Session;
use crate::model::{JobId, Resource, TaskId, TaskStatus};

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BundleKind {
    Safe,
    Whole,
}

#[derive(Clone, Debug)]
pub struct Bundle {
    pub kind: BundleKind,
    pub job: JobId,
    pub tasks: Vec<TaskId>,
    /// What the bundle's tasks hold.
    pub local: Resource,
    /// What the whole victim job holds (whole bundles; empty for safe ones).
    pub global: Resource,
}

/// Tasks counted as ready (`ReadyTaskNum`): bound, binding, running, allocated, succeeded.
const READY: [TaskStatus; 5] = [
    TaskStatus::Bound,
    TaskStatus::Binding,
    TaskStatus::Running,
    TaskStatus::Allocated,
    TaskStatus::Succeeded,
];

/// `CreateJobBundles`: at most one safe and one whole bundle of `candidates` (tasks of `job`).
pub fn job_bundles(ssn: &Session, job: JobId, mut candidates: Vec<TaskId>) -> Vec<Bundle> {
    let state = &ssn.state;
    candidates.sort_by(|&a, &b| {
        let (ta, tb) = (state.task(a), state.task(b));
        ta.spec
            .priority
            .cmp(&tb.spec.priority)
            .then_with(|| ta.spec.uid.cmp(&tb.spec.uid))
    });
    let j = state.job(job);
    let ready: i64 = READY.iter().map(|&s| i64::from(j.count(s))).sum();
    let mut surplus = ready - i64::from(j.spec.min_available);
    let sum = |tasks: &[TaskId]| {
        let mut r = Resource::empty();
        for &t in tasks {
            r.add(state.task(t).resreq());
        }
        r
    };
    if surplus < 0 {
        // Already below its minimum: nothing more to break.
        let local = sum(&candidates);
        return vec![Bundle {
            kind: BundleKind::Safe,
            job,
            tasks: candidates,
            local,
            global: Resource::empty(),
        }];
    }
    // Per-role minimums bind only when the job's own minimum covers them all.
    let role_gate = j.spec.min_available >= j.spec.task_min_available_total;
    let mut role_surplus: Vec<(String, i64)> = if role_gate {
        j.spec
            .task_min_available
            .iter()
            .map(|(role, &min)| (role.clone(), role_occupied(ssn, job, role) - i64::from(min)))
            .collect()
    } else {
        Vec::new()
    };
    let (mut safe, mut whole) = (Vec::new(), Vec::new());
    for t in candidates {
        let role = &state.task(t).spec.role;
        let slot = role_surplus.iter_mut().find(|(r, _)| r == role);
        let role_ok = slot.as_ref().is_none_or(|(_, s)| *s > 0);
        if surplus > 0 && role_ok {
            surplus -= 1;
            if let Some((_, s)) = slot {
                *s -= 1;
            }
            safe.push(t);
        } else {
            whole.push(t);
        }
    }
    let mut out = Vec::new();
    if !safe.is_empty() {
        let local = sum(&safe);
        out.push(Bundle {
            kind: BundleKind::Safe,
            job,
            tasks: safe,
            local,
            global: Resource::empty(),
        });
    }
    if !whole.is_empty() {
        let local = sum(&whole);
        out.push(Bundle {
            kind: BundleKind::Whole,
            job,
            tasks: whole,
            local,
            global: sum(&j.tasks),
        });
    }
    out
}

/// Tasks of `role` that hold their place: ready ones, and pending ones that ask for nothing.
fn role_occupied(ssn: &Session, job: JobId, role: &str) -> i64 {
    let state = &ssn.state;
    let n = state
        .job(job)
        .tasks
        .iter()
        .filter(|&&t| {
            let task = state.task(t);
            task.spec.role == role
                && (READY.contains(&task.status)
                    || (task.status == TaskStatus::Pending && task.spec.resreq.is_empty()))
        })
        .count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `score(res, need)`: Σ over the demand's dimensions of `res / need` (capped at 1 each).
fn score(res: &Resource, need: &Resource, capped: bool) -> f64 {
    need.resource_names()
        .into_iter()
        .map(|name| {
            let (r, n) = (res.get(&name), need.get(&name));
            if n <= 0.0 {
                0.0
            } else if capped {
                r.min(n) / n
            } else {
                r / n
            }
        })
        .sum()
}

/// Return on investment: how much of the demand a bundle covers per unit of its job lost.
pub fn roi(b: &Bundle, need: &Resource) -> f64 {
    let global = score(&b.global, need, false);
    if global == 0.0 {
        f64::INFINITY
    } else {
        score(&b.local, need, true) / global
    }
}

/// `SortBundlesForPreempt` / `SortBundlesForReclaim`: safe first; then `victim_first` between
/// different jobs (preempt: the reverse of the job order) or queues (reclaim: the victim queue
/// order); then higher ROI; then job uid, first task uid, fewer tasks.
pub fn sort_bundles(
    ssn: &Session,
    bundles: &mut [Bundle],
    need: &Resource,
    victim_first: &dyn Fn(&Bundle, &Bundle) -> Option<Ordering>,
) {
    bundles.sort_by(|a, b| {
        a.kind
            .cmp(&b.kind)
            .then_with(|| victim_first(a, b).unwrap_or(Ordering::Equal))
            .then_with(|| roi(b, need).total_cmp(&roi(a, need)))
            .then_with(|| {
                let uid = |x: &Bundle| ssn.state.job(x.job).spec.uid.clone();
                uid(a).cmp(&uid(b))
            })
            .then_with(|| {
                let first =
                    |x: &Bundle| x.tasks.first().map(|&t| ssn.state.task(t).spec.uid.clone());
                first(a).cmp(&first(b))
            })
            .then_with(|| a.tasks.len().cmp(&b.tasks.len()))
    });
}

/// `ApplyAllowedTasks`: a whole bundle stays only if every task is allowed; a safe bundle keeps
/// its allowed tasks.
pub fn apply_allowed(ssn: &Session, bundles: Vec<Bundle>, allowed: &[TaskId]) -> Vec<Bundle> {
    let allowed: HashSet<TaskId> = allowed.iter().copied().collect();
    bundles
        .into_iter()
        .filter_map(|mut b| match b.kind {
            BundleKind::Whole => b.tasks.iter().all(|t| allowed.contains(t)).then_some(b),
            BundleKind::Safe => {
                b.tasks.retain(|t| allowed.contains(t));
                let mut local = Resource::empty();
                for &t in &b.tasks {
                    local.add(ssn.state.task(t).resreq());
                }
                b.local = local;
                (!b.tasks.is_empty()).then_some(b)
            }
        })
        .collect()
}
