//! `drf`: Dominant Resource Fairness (spec/plugins-core.md §3).
//!
//! Every job's *dominant share* is the largest ratio `allocated / cluster total` over the
//! cluster's resource dimensions (§3.3). Jobs with a smaller dominant share go first (§3.5), and a
//! preemption is allowed only when the preemptor, after receiving its task, would not be richer
//! than the victim after losing it (§3.6). Allocate/deallocate events keep the shares current
//! (§3.7).
//!
//! Hierarchical mode (HDRF, `enableHierarchy: true`, §3.8–§3.10) is not implemented yet: when it is
//! requested the plugin logs a warning (once per process) and behaves as flat DRF, registering
//! neither the queue order nor the reclaim filter that HDRF adds. The per-job state below is what
//! HDRF builds its tree from, so it can be added alongside without changing the flat path.
//!
//! The `volcano_job_share` gauge (§3.11) is fed at close through `SessionState::job_metrics`
//! with each job's final dominant share.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Once;

use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::resource::{CPU, MEMORY, MIN_RESOURCE, share};
use engine::model::{JobId, Resource, ResourceName, TaskId};

/// Registered plugin name.
pub const NAME: &str = "drf";

/// Tolerance of the preemption comparison (§3.1); job order compares shares exactly.
const SHARE_DELTA: f64 = 0.000_001;

/// Builds the plugin; `drf` reads no arguments (§3.1).
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Drf::default())
}

/// One dimension of the cluster total that takes part in share computations.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Dimension {
    Cpu,
    Memory,
    Scalar(ResourceName),
}

impl Dimension {
    fn value(self, r: &Resource) -> f64 {
        match self {
            Dimension::Cpu => r.milli_cpu,
            Dimension::Memory => r.memory,
            Dimension::Scalar(n) => r.scalar(n),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dimension::Cpu => CPU,
            Dimension::Memory => MEMORY,
            Dimension::Scalar(n) => n.as_str(),
        }
    }
}

/// The dimensions of `total` at or above ε, in Volcano's `ResourceNames()` order (cpu, memory,
/// then scalars by name). Only these count towards a share (§3.3): a resource no node offers is
/// ignored.
fn dimensions(total: &Resource) -> Vec<Dimension> {
    let mut dims = Vec::with_capacity(2 + total.scalars.len());
    if total.milli_cpu >= MIN_RESOURCE {
        dims.push(Dimension::Cpu);
    }
    if total.memory >= MIN_RESOURCE {
        dims.push(Dimension::Memory);
    }
    let mut scalars: Vec<ResourceName> = total
        .scalars
        .iter()
        .filter(|&(_, v)| v >= MIN_RESOURCE)
        .map(|(n, _)| n)
        .collect();
    scalars.sort_by_key(|n| n.as_str());
    dims.extend(scalars.into_iter().map(Dimension::Scalar));
    dims
}

/// A dominant share and the resource it comes from (`""` when the share is 0).
#[derive(Copy, Clone, Debug, PartialEq)]
struct DominantShare {
    share: f64,
    resource: &'static str,
}

/// `calculateShare` (§3.3): the largest `Share(allocated, total)` over `dims`; on a tie the
/// earlier dimension keeps the title.
fn calculate_share(allocated: &Resource, total: &Resource, dims: &[Dimension]) -> DominantShare {
    let mut best = DominantShare {
        share: 0.0,
        resource: "",
    };
    for &d in dims {
        let s = share(d.value(allocated), d.value(total));
        if s > best.share {
            best = DominantShare {
                share: s,
                resource: d.name(),
            };
        }
    }
    best
}

/// Volcano's share comparison: exact equality, otherwise smaller first (a NaN sorts last).
fn compare_shares(l: f64, r: f64) -> Ordering {
    if l == r {
        Ordering::Equal
    } else if l < r {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Per-job state (`drfAttr`, §3.2).
#[derive(Clone, Debug)]
struct JobAttr {
    /// What the plugin has seen the job receive: the session's allocated tasks at open, then
    /// every allocate/deallocate event (pipelined tasks included, as in Volcano).
    allocated: Resource,
    dominant: DominantShare,
}

/// The plugin instance of one session.
#[derive(Default)]
pub struct Drf {
    total: Resource,
    dims: Vec<Dimension>,
    /// Indexed by `JobId`; every job of the session has an entry.
    jobs: Vec<JobAttr>,
}

/// HDRF is asked for in every session of a misconfigured scheduler; one warning is enough.
static HIERARCHY_WARNING: Once = Once::new();

impl Drf {
    fn share_of(&self, allocated: &Resource) -> DominantShare {
        calculate_share(allocated, &self.total, &self.dims)
    }

    fn attr(&self, job: JobId) -> Option<&JobAttr> {
        self.jobs.get(job.index())
    }

    /// The shared body of the allocate and deallocate handlers (§3.7).
    fn on_event(&mut self, ssn: &SessionState, task: TaskId, allocate: bool) {
        let Some(job) = ssn.job_of(task) else {
            tracing::warn!(
                task = ssn.task(task).key(),
                "drf: event for a task without a job, ignored"
            );
            return;
        };
        let total = &self.total;
        let dims = &self.dims;
        let Some(attr) = self.jobs.get_mut(job.index()) else {
            tracing::warn!(job = %ssn.job(job).uid, "drf: event for a job it does not track, ignored");
            return;
        };
        let request = ssn.task(task).resreq();
        if allocate {
            attr.allocated.add(request);
        } else {
            attr.allocated.sub(request);
        }
        attr.dominant = calculate_share(&attr.allocated, total, dims);
        tracing::debug!(
            job = %ssn.job(job).uid,
            share = attr.dominant.share,
            dominant = attr.dominant.resource,
            "drf: job share updated"
        );
    }
}

impl Plugin for Drf {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        if ssn.hierarchy_enabled(NAME) {
            HIERARCHY_WARNING.call_once(|| {
                tracing::warn!(
                    "drf: enableHierarchy (hierarchical DRF) is not supported yet; \
                     scheduling with flat DRF instead"
                );
            });
        }
        self.total = ssn.total_resource.clone();
        self.dims = dimensions(&self.total);
        // The framework's job counter already holds the sum over AllocatedStatus tasks.
        self.jobs = ssn
            .jobs
            .iter()
            .map(|job| JobAttr {
                dominant: calculate_share(&job.allocated, &self.total, &self.dims),
                allocated: job.allocated.clone(),
            })
            .collect();
    }

    fn on_session_close(&mut self, ssn: &mut SessionState) {
        for (i, attr) in self.jobs.drain(..).enumerate() {
            ssn.job_metrics
                .entry(JobId::from_index(i))
                .or_default()
                .share = Some(attr.dominant.share);
        }
    }

    fn extension_points(&self) -> ExtensionPoints {
        // HDRF would add QUEUE_ORDER and RECLAIMABLE here.
        ExtensionPoints::PREEMPTABLE | ExtensionPoints::JOB_ORDER | ExtensionPoints::EVENT_HANDLER
    }

    /// §3.5: the smaller dominant share goes first.
    fn job_order(&self, _ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        match (self.attr(l), self.attr(r)) {
            (Some(l), Some(r)) => compare_shares(l.dominant.share, r.dominant.share),
            _ => Ordering::Equal,
        }
    }

    /// §3.6: a candidate is a victim when the preemptor's share with its task added is at most
    /// (within `SHARE_DELTA`) the victim job's share with this and the job's earlier candidates
    /// removed.
    fn preemptable(
        &self,
        ssn: &SessionState,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let Some(preemptor_attr) = ssn.job_of(preemptor).and_then(|j| self.attr(j)) else {
            tracing::warn!(
                task = ssn.task(preemptor).key(),
                "drf: preemptor has no tracked job, no victims"
            );
            return (Vec::new(), PERMIT);
        };
        let mut with_task = preemptor_attr.allocated.clone();
        with_task.add(ssn.task(preemptor).resreq());
        let ls = self.share_of(&with_task).share;

        // Per victim job, what it would keep after losing the candidates seen so far (whether or
        // not they were accepted).
        let mut remaining: HashMap<JobId, Resource> = HashMap::new();
        let mut victims = Vec::new();
        for &candidate in candidates {
            let Some(job) = ssn.job_of(candidate) else {
                tracing::warn!(
                    task = ssn.task(candidate).key(),
                    "drf: candidate without a job skipped"
                );
                continue;
            };
            let kept = match remaining.entry(job) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let Some(attr) = self.attr(job) else {
                        tracing::warn!(
                            task = ssn.task(candidate).key(),
                            "drf: candidate of an untracked job skipped"
                        );
                        continue;
                    };
                    e.insert(attr.allocated.clone())
                }
            };
            kept.sub(ssn.task(candidate).resreq());
            let rs = self.share_of(kept).share;
            if ls < rs || (ls - rs).abs() <= SHARE_DELTA {
                victims.push(candidate);
            }
        }
        (victims, PERMIT)
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        self.on_event(ssn, task, true);
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        self.on_event(ssn, task, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{StateLookup, TestCluster, allocate, pod, pod_group};
    use engine::conf::PluginOption;
    use engine::framework::{Session, Statement};
    use serde_json::json;

    fn res(cpu: f64, memory: f64) -> Resource {
        Resource::from_pairs(cpu, memory, &[])
    }

    fn share_of(allocated: &Resource, total: &Resource) -> DominantShare {
        calculate_share(allocated, total, &dimensions(total))
    }

    #[test]
    fn d1_dominant_share_of_the_seed_example() {
        let total = res(100.0, 400.0);
        let a = share_of(&res(30.0, 40.0), &total);
        assert_eq!(a.resource, "cpu");
        assert!((a.share - 0.30).abs() < 1e-12);
        let b = share_of(&res(10.0, 200.0), &total);
        assert_eq!(b.resource, "memory");
        assert!((b.share - 0.50).abs() < 1e-12);
        // cpu and memory are both 0.2: cpu is examined first and keeps the title.
        let c = share_of(&res(20.0, 80.0), &total);
        assert_eq!(
            c,
            DominantShare {
                share: 0.2,
                resource: "cpu"
            }
        );
    }

    #[test]
    fn d2_resources_missing_from_the_cluster_are_ignored() {
        let total = res(100.0, 0.0);
        let allocated = Resource::from_pairs(10.0, 0.0, &[("nvidia.com/gpu", 1000.0)]);
        let s = share_of(&allocated, &total);
        assert_eq!(s.resource, "cpu");
        assert!((s.share - 0.10).abs() < 1e-12);
        // Nothing allocated: share 0 and no dominant resource.
        assert_eq!(
            share_of(&Resource::empty(), &total),
            DominantShare {
                share: 0.0,
                resource: ""
            }
        );
    }

    #[test]
    fn d3_share_helper_guards_division_by_zero() {
        assert_eq!(share(5.0, 0.0), 1.0);
        assert_eq!(share(0.0, 0.0), 0.0);
        assert_eq!(share(1.0, 4.0), 0.25);
    }

    #[test]
    fn d6_pods_can_dominate() {
        let total = Resource::from_pairs(100_000.0, 0.0, &[("pods", 110.0)]);
        let allocated = Resource::from_pairs(1_000.0, 0.0, &[("pods", 10.0)]);
        let s = share_of(&allocated, &total);
        assert_eq!(s.resource, "pods");
        assert!((s.share - 10.0 / 110.0).abs() < 1e-12);
    }

    #[test]
    fn dimensions_follow_volcano_order_and_skip_tiny_values() {
        let total = Resource::from_pairs(
            0.05,
            10.0,
            &[
                ("pods", 110.0),
                ("example.com/zz", 1000.0),
                ("example.com/aa", 0.0),
            ],
        );
        let names: Vec<&str> = dimensions(&total).iter().map(|d| d.name()).collect();
        assert_eq!(names, vec!["memory", "example.com/zz", "pods"]);
    }

    #[test]
    fn share_comparison_is_exact() {
        assert_eq!(compare_shares(0.3, 0.3), Ordering::Equal);
        assert_eq!(compare_shares(0.3, 0.3 + 1e-12), Ordering::Less);
        assert_eq!(compare_shares(0.5, 0.3), Ordering::Greater);
    }

    /// One node with the given allocatable; PodGroups `ns/<job>` in the default queue, each with
    /// running pods of the given (cpu, memory) requests on the node.
    fn cluster(allocatable: serde_json::Value, jobs: &[(&str, &[(&str, &str)])]) -> TestCluster {
        let mut c = TestCluster::new();
        c.node("n1", allocatable);
        for (job, pods) in jobs {
            c.pod_group(pod_group("ns", job, 1));
            for (i, (cpu, memory)) in pods.iter().enumerate() {
                c.pod(pod(
                    "ns",
                    &format!("{job}-{i}"),
                    Some(job),
                    "Running",
                    Some("n1"),
                    json!({"cpu": cpu, "memory": memory}),
                ));
            }
        }
        c
    }

    fn sorted_jobs(ssn: &Session) -> Vec<String> {
        let mut jobs: Vec<JobId> = ssn.state.job_ids().collect();
        jobs.sort_by(|&a, &b| {
            if ssn.job_order(a, b) {
                Ordering::Less
            } else if ssn.job_order(b, a) {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        });
        jobs.iter()
            .map(|&j| ssn.state.job(j).name.clone())
            .collect()
    }

    #[test]
    fn seed_000_job_order_c_before_a_before_b() {
        // Seed 000's table: cluster 100 CPU / 400 GB. A (30, 40) 0.30; B (10, 200) 0.50;
        // C (20, 80) 0.20.
        let c = cluster(
            json!({"cpu": "100", "memory": "400Gi"}),
            &[
                ("job-a", &[("30", "40Gi")]),
                ("job-b", &[("10", "200Gi")]),
                ("job-c", &[("20", "80Gi")]),
            ],
        );
        let ssn = c.session(&[&[NAME]]);
        assert_eq!(sorted_jobs(&ssn), vec!["job-c", "job-a", "job-b"]);
        let (a, b) = (
            ssn.state.job_by_key("ns/job-a"),
            ssn.state.job_by_key("ns/job-b"),
        );
        assert_eq!(ssn.job_order_compare(a, b), Ordering::Less);
        assert_eq!(ssn.job_order_compare(b, a), Ordering::Greater);
        assert_eq!(ssn.job_order_compare(a, a), Ordering::Equal);
    }

    /// D-4/D-5 set-up: total (cpu 10, memory 10Gi); the preemptor job holds cpu 2 and asks for
    /// `preemptor_cpu` more; the victim job runs the given cpu amounts.
    fn preemption_cluster(preemptor_cpu: &str, victim_pods: &[&str]) -> TestCluster {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "10", "memory": "10Gi"}));
        c.pod_group(pod_group("ns", "hungry", 1));
        c.pod(pod(
            "ns",
            "hungry-0",
            Some("hungry"),
            "Running",
            Some("n1"),
            json!({"cpu": "2"}),
        ));
        c.pod(pod(
            "ns",
            "hungry-1",
            Some("hungry"),
            "Pending",
            None,
            json!({"cpu": preemptor_cpu}),
        ));
        c.pod_group(pod_group("ns", "rich", 1));
        for (i, cpu) in victim_pods.iter().enumerate() {
            c.pod(pod(
                "ns",
                &format!("rich-{i}"),
                Some("rich"),
                "Running",
                Some("n1"),
                json!({"cpu": cpu}),
            ));
        }
        c
    }

    fn victims(ssn: &Session, preemptor: &str, candidates: &[&str]) -> Vec<String> {
        let preemptor = ssn.state.task_by_key(preemptor);
        let candidates: Vec<TaskId> = candidates
            .iter()
            .map(|k| ssn.state.task_by_key(k))
            .collect();
        ssn.preemptable(preemptor, &candidates)
            .into_iter()
            .map(|t| ssn.state.task(t).key().to_string())
            .collect()
    }

    #[test]
    fn d4_preemption_is_cumulative_per_victim_job() {
        // ls = (2 + 1) / 10 = 0.3; rich holds 6: without t1 0.4 (victim), without t1 and t2 0.2.
        let c = preemption_cluster("1", &["2", "2", "2"]);
        let ssn = c.session(&[&[NAME]]);
        assert_eq!(
            victims(&ssn, "ns/hungry-1", &["ns/rich-0", "ns/rich-1"]),
            vec!["ns/rich-0"]
        );
        // Order matters: the first candidate of the job is the one judged against 0.4.
        assert_eq!(
            victims(&ssn, "ns/hungry-1", &["ns/rich-1", "ns/rich-0"]),
            vec!["ns/rich-1"]
        );
    }

    #[test]
    fn d5_equal_shares_allow_preemption() {
        // ls = 0.3; rich holds 6 and loses 3: rs = 0.3.
        let c = preemption_cluster("1", &["3", "3"]);
        let ssn = c.session(&[&[NAME]]);
        assert_eq!(
            victims(&ssn, "ns/hungry-1", &["ns/rich-0"]),
            vec!["ns/rich-0"]
        );
        // A preemptor asking for 1.1 cpu (ls 0.31) is richer than the victim would be.
        let c = preemption_cluster("1100m", &["3", "3"]);
        let ssn = c.session(&[&[NAME]]);
        assert!(victims(&ssn, "ns/hungry-1", &["ns/rich-0"]).is_empty());
    }

    #[test]
    fn preemption_tolerance_is_share_delta() {
        // Direct check of the rule on the plugin: rs below ls by less than 1e-6 still passes.
        let mut drf = Drf {
            total: res(1_000_000_000.0, 0.0),
            ..Drf::default()
        };
        drf.dims = dimensions(&drf.total);
        let ls = drf.share_of(&res(300_000_000.0, 0.0)).share;
        let rs_close = drf.share_of(&res(299_999_500.0, 0.0)).share;
        let rs_far = drf.share_of(&res(299_998_000.0, 0.0)).share;
        assert!(ls - rs_close <= SHARE_DELTA);
        assert!(ls - rs_far > SHARE_DELTA);
    }

    #[test]
    fn event_handlers_keep_shares_current() {
        // a runs 3 cpu, b runs 1 cpu and has a pending 4-cpu task: b goes first until it gets it.
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "10", "memory": "10Gi"}));
        c.pod_group(pod_group("ns", "a", 1));
        c.pod(pod(
            "ns",
            "a-0",
            Some("a"),
            "Running",
            Some("n1"),
            json!({"cpu": "3"}),
        ));
        c.pod_group(pod_group("ns", "b", 1));
        c.pod(pod(
            "ns",
            "b-0",
            Some("b"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        c.pod(pod(
            "ns",
            "b-1",
            Some("b"),
            "Pending",
            None,
            json!({"cpu": "4"}),
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let (a, b) = (ssn.state.job_by_key("ns/a"), ssn.state.job_by_key("ns/b"));
        assert!(ssn.job_order(b, a));

        let task = ssn.state.task_by_key("ns/b-1");
        let node = ssn.state.node_by_key("n1");
        let mut stmt = Statement::new();
        ssn.allocate(&mut stmt, task, node)
            .expect("allocation succeeds");
        assert!(ssn.job_order(a, b), "b now holds 5 of 10 cpu");

        // Discarding the statement deallocates: b is back at 0.1.
        ssn.discard(stmt);
        assert!(ssn.job_order(b, a));

        // A committed allocation through the shared helper has the same effect.
        allocate(&mut ssn, "ns/b-1", "n1");
        assert!(ssn.job_order(a, b));
    }

    #[test]
    fn hierarchy_falls_back_to_flat_drf() {
        let c = cluster(
            json!({"cpu": "100", "memory": "400Gi"}),
            &[("job-a", &[("30", "40Gi")]), ("job-c", &[("20", "80Gi")])],
        );
        let hierarchical = || {
            let mut option = PluginOption::new(NAME);
            option.enable_hierarchy = true;
            vec![vec![option]]
        };
        let ssn = c.session_with(hierarchical());
        assert_eq!(sorted_jobs(&ssn), vec!["job-c", "job-a"]);

        // Only the flat points are registered.
        let mut ssn = c.session_with(hierarchical());
        let mut drf = Drf::default();
        drf.on_session_open(&mut ssn.state);
        let points = drf.extension_points();
        assert!(points.contains(ExtensionPoints::JOB_ORDER));
        assert!(points.contains(ExtensionPoints::PREEMPTABLE));
        assert!(points.contains(ExtensionPoints::EVENT_HANDLER));
        assert!(!points.contains(ExtensionPoints::QUEUE_ORDER));
        assert!(!points.contains(ExtensionPoints::RECLAIMABLE));
    }

    #[test]
    fn open_hook_counts_only_allocated_tasks() {
        // Pending and succeeded tasks hold nothing; the running one holds 2 of 10 cpu.
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "10"}));
        c.pod_group(pod_group("ns", "j", 1));
        c.pod(pod(
            "ns",
            "j-0",
            Some("j"),
            "Running",
            Some("n1"),
            json!({"cpu": "2"}),
        ));
        c.pod(pod(
            "ns",
            "j-1",
            Some("j"),
            "Pending",
            None,
            json!({"cpu": "3"}),
        ));
        c.pod(pod(
            "ns",
            "j-2",
            Some("j"),
            "Succeeded",
            Some("n1"),
            json!({"cpu": "4"}),
        ));
        let mut ssn = c.session(&[]);
        let mut drf = Drf::default();
        drf.on_session_open(&mut ssn.state);
        let job = ssn.state.job_by_key("ns/j");
        let attr = drf.attr(job).expect("every job is tracked");
        assert!((attr.dominant.share - 0.2).abs() < 1e-12);
        assert_eq!(attr.dominant.resource, "cpu");
    }
}
