//! `priority`: orders jobs and tasks by priority and forbids preempting work of equal or higher
//! priority (spec/plugins-core.md §2).
//!
//! Job priority is the value of the PodGroup's PriorityClass; task priority is the pod's
//! `spec.priority` (default 1) overridden by `volcano.sh/task-priority` (§0.7). Both are
//! derived by the engine when the objects are loaded, so this plugin only compares them.
//!
//! Not wired yet: `SubJobOrderFn` and `UnifiedEvictableFn` (§2.2), because the engine has no
//! sub-job or gang-aware eviction extension points.

use std::cmp::Ordering;

use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::{JobId, TaskId};

/// Registered plugin name.
pub const NAME: &str = "priority";

/// Builds the plugin; it takes no arguments (§2.1).
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(PriorityPlugin)
}

struct PriorityPlugin;

/// Higher priority first: `Less` when `l` outranks `r`.
fn higher_first(l: i32, r: i32) -> Ordering {
    r.cmp(&l)
}

impl Plugin for PriorityPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::TASK_ORDER
            | ExtensionPoints::JOB_ORDER
            | ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::JOB_STARVING
            | ExtensionPoints::UNIFIED_EVICTABLE
    }

    /// Gang reclaim crosses queues and compares no priorities; gang preemption takes only
    /// jobs of lower priority than the preemptor's.
    fn unified_evictable(
        &self,
        ssn: &SessionState,
        ctx: &engine::framework::EvictionContext,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        if ctx.kind == engine::framework::EvictionKind::GangReclaim {
            return (candidates.to_vec(), engine::framework::PERMIT);
        }
        let priority = ssn.job(ctx.job).priority;
        let victims = candidates
            .iter()
            .copied()
            .filter(|&c| {
                ssn.task(c)
                    .job
                    .is_some_and(|j| ssn.job(j).priority < priority)
            })
            .collect();
        (victims, engine::framework::PERMIT)
    }

    /// §2.3 TaskOrder.
    fn task_order(&self, ssn: &SessionState, l: TaskId, r: TaskId) -> Ordering {
        higher_first(ssn.task(l).spec.priority, ssn.task(r).spec.priority)
    }

    /// §2.3 JobOrder.
    fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        higher_first(ssn.job(l).priority, ssn.job(r).priority)
    }

    /// §2.3 Preemptable: across jobs the job priorities decide, inside one job the task
    /// priorities; equal priority is never a victim. Orphaned tasks are skipped.
    fn preemptable(
        &self,
        ssn: &SessionState,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let Some(preemptor_job) = ssn.job_of(preemptor) else {
            tracing::warn!(
                task = ssn.task(preemptor).key(),
                "priority: preemptor has no job in the session"
            );
            return (Vec::new(), PERMIT);
        };
        let preemptor_job_priority = ssn.job(preemptor_job).priority;
        let preemptor_priority = ssn.task(preemptor).spec.priority;
        let victims = candidates
            .iter()
            .copied()
            .filter(|&t| match ssn.job_of(t) {
                None => false,
                Some(job) if job != preemptor_job => ssn.job(job).priority < preemptor_job_priority,
                Some(_) => ssn.task(t).spec.priority < preemptor_priority,
            })
            .collect();
        (victims, PERMIT)
    }

    /// §2.3 JobStarving: some task of the job (whatever its status) is neither ready nor
    /// pipelined.
    fn job_starving(&self, ssn: &SessionState, job: JobId) -> bool {
        let j = ssn.job(job);
        let tasks = i32::try_from(j.tasks.len()).unwrap_or(i32::MAX);
        j.ready_task_num() + j.waiting_task_num() < tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{StateLookup, TestCluster, allocate, pipeline, pod, pod_group};
    use engine::framework::Session;
    use serde_json::json;

    fn plugin() -> Box<dyn Plugin> {
        new(&Arguments::new())
    }

    /// Two jobs: `high` (PriorityClass value 100) and `low` (50); each pod gets its task
    /// priority from `spec.priority`.
    fn two_jobs(low_class_value: i32) -> Session {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        c.priority_class("high", 100);
        c.priority_class("low", low_class_value);
        let mut high = pod_group("ns", "high", 1);
        high["spec"]["priorityClassName"] = json!("high");
        c.pod_group(high);
        let mut low = pod_group("ns", "low", 1);
        low["spec"]["priorityClassName"] = json!("low");
        c.pod_group(low);
        for (name, group, prio, phase, node) in [
            ("h-preemptor", "high", 5, "Pending", None),
            ("h-low", "high", 3, "Running", Some("n1")),
            ("h-same", "high", 5, "Running", Some("n1")),
            ("l-1", "low", 1000, "Running", Some("n1")),
        ] {
            let mut p = pod("ns", name, Some(group), phase, node, json!({"cpu": "1"}));
            p["spec"]["priority"] = json!(prio);
            c.pod(p);
        }
        c.session(&[&[NAME]])
    }

    #[test]
    fn pr1_task_order_higher_priority_first() {
        let mut c = TestCluster::new();
        c.pod_group(pod_group("ns", "pg", 1));
        for (name, prio) in [("a", 10), ("b", 5), ("c", 10)] {
            let mut p = pod("ns", name, Some("pg"), "Pending", None, json!({"cpu": "1"}));
            p["spec"]["priority"] = json!(prio);
            c.pod(p);
        }
        let ssn = c.session(&[&[NAME]]);
        let s = &ssn.state;
        let (a, b, cc) = (
            s.task_by_key("ns/a"),
            s.task_by_key("ns/b"),
            s.task_by_key("ns/c"),
        );
        let p = plugin();
        assert_eq!(p.task_order(s, a, b), Ordering::Less);
        assert_eq!(p.task_order(s, b, a), Ordering::Greater);
        assert_eq!(p.task_order(s, a, cc), Ordering::Equal);
        // Through the dispatcher, the tie falls back to the default order.
        assert!(ssn.task_order(a, b));
        assert!(!ssn.task_order(b, a));
    }

    #[test]
    fn job_order_higher_priority_first_and_equal_abstains() {
        let ssn = two_jobs(50);
        let s = &ssn.state;
        let (high, low) = (s.job_by_key("ns/high"), s.job_by_key("ns/low"));
        let p = plugin();
        assert_eq!(p.job_order(s, high, low), Ordering::Less);
        assert_eq!(p.job_order(s, low, high), Ordering::Greater);
        let ssn = two_jobs(100);
        let s = &ssn.state;
        let (high, low) = (s.job_by_key("ns/high"), s.job_by_key("ns/low"));
        assert_eq!(p.job_order(s, high, low), Ordering::Equal);
    }

    #[test]
    fn pr2_preemptable_across_jobs_compares_job_priority() {
        let ssn = two_jobs(50);
        let s = &ssn.state;
        let preemptor = s.task_by_key("ns/h-preemptor");
        let other = s.task_by_key("ns/l-1");
        // The candidate's task priority (1000) is irrelevant across jobs.
        assert_eq!(
            plugin().preemptable(s, preemptor, &[other]),
            (vec![other], PERMIT)
        );

        let ssn = two_jobs(100);
        let s = &ssn.state;
        let preemptor = s.task_by_key("ns/h-preemptor");
        let other = s.task_by_key("ns/l-1");
        assert_eq!(
            plugin().preemptable(s, preemptor, &[other]),
            (vec![], PERMIT)
        );
    }

    #[test]
    fn pr3_preemptable_within_a_job_compares_task_priority() {
        let ssn = two_jobs(50);
        let s = &ssn.state;
        let preemptor = s.task_by_key("ns/h-preemptor");
        let lower = s.task_by_key("ns/h-low");
        let same = s.task_by_key("ns/h-same");
        assert_eq!(
            plugin().preemptable(s, preemptor, &[same, lower]),
            (vec![lower], PERMIT)
        );
    }

    #[test]
    fn preemptable_skips_orphans_and_permits_without_preemptor_job() {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        c.pod_group(pod_group("ns", "pg", 1));
        c.pod(pod(
            "ns",
            "member",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        // A pod whose PodGroup does not exist has no job in the session.
        c.pod(pod(
            "ns",
            "orphan",
            Some("gone"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        let ssn = c.session(&[&[NAME]]);
        let s = &ssn.state;
        let (member, orphan) = (s.task_by_key("ns/member"), s.task_by_key("ns/orphan"));
        assert_eq!(plugin().preemptable(s, member, &[orphan]), (vec![], PERMIT));
        assert_eq!(plugin().preemptable(s, orphan, &[member]), (vec![], PERMIT));
    }

    #[test]
    fn pr4_job_starving_counts_every_task() {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        c.pod_group(pod_group("ns", "pg", 1));
        c.pod(pod(
            "ns",
            "r1",
            Some("pg"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        c.pod(pod(
            "ns",
            "r2",
            Some("pg"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        c.pod(pod(
            "ns",
            "p1",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        c.pod(pod(
            "ns",
            "q1",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        let mut ssn = c.session(&[&[NAME]]);
        pipeline(&mut ssn, "ns/q1", "n1");
        let job = ssn.state.job_by_key("ns/pg");
        // 2 Running + 1 Pipelined < 4 tasks.
        assert!(plugin().job_starving(&ssn.state, job));
        allocate(&mut ssn, "ns/p1", "n1");
        assert!(!plugin().job_starving(&ssn.state, job));
    }

    #[test]
    fn pr5_task_priority_source() {
        let mut c = TestCluster::new();
        c.pod_group(pod_group("ns", "pg", 1));
        let mut annotated = pod(
            "ns",
            "annotated",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        );
        annotated["spec"]["priority"] = json!(1000);
        annotated["metadata"]["annotations"]["volcano.sh/task-priority"] = json!("7");
        c.pod(annotated);
        let mut garbage = pod(
            "ns",
            "garbage",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        );
        garbage["spec"]["priority"] = json!(1000);
        garbage["metadata"]["annotations"]["volcano.sh/task-priority"] = json!("x");
        c.pod(garbage);
        c.pod(pod(
            "ns",
            "plain",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        let ssn = c.session(&[&[NAME]]);
        let s = &ssn.state;
        let prio = |key: &str| s.task(s.task_by_key(key)).spec.priority;
        assert_eq!(prio("ns/annotated"), 7);
        assert_eq!(prio("ns/garbage"), 1000);
        assert_eq!(prio("ns/plain"), 1);
        // And the order follows those values: 1000 before 7 before 1.
        let p = plugin();
        let t = |key: &str| s.task_by_key(key);
        assert_eq!(
            p.task_order(s, t("ns/garbage"), t("ns/annotated")),
            Ordering::Less
        );
        assert_eq!(
            p.task_order(s, t("ns/annotated"), t("ns/plain")),
            Ordering::Less
        );
    }
}
