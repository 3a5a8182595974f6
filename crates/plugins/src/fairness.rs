//! Queue bookkeeping shared by the queue-fairness plugins `proportion` and `capacity`
//! (spec/plugins-core.md §4.3, §4.5, §4.9 and §5.3, §5.5, §5.8).
//!
//! Both plugins keep, per queue, what its jobs hold, ask for, reserve and hold above their
//! minimum; both bound a queue by a "real capability" derived from the cluster total and every
//! queue's guarantee; both rank queues by `allocated / deserved`; and both refuse to enqueue a
//! job whose minimum would overflow the real capability, reporting it on the PodGroup.

use std::cmp::Ordering;
use std::sync::{Mutex, PoisonError};

use engine::framework::{EventType, SessionState};
use engine::model::job::phase;
use engine::model::resource::{DimensionDefault, MIN_RESOURCE, exceeded_part, share};
use engine::model::{JobId, Resource, TaskStatus};

/// What a queue's jobs hold, ask for, reserve and hold beyond their minimum (§4.3).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct QueueUsage {
    /// Requests of tasks in an allocated status (Allocated, Binding, Bound, Running).
    pub allocated: Resource,
    /// `allocated` plus the requests of Pending tasks.
    pub request: Resource,
    /// What admitted jobs' `minResources` still reserve beyond what they hold.
    pub inqueue: Resource,
    /// What jobs hold above their `minResources`.
    pub elastic: Resource,
}

impl QueueUsage {
    /// One job's contribution to its queue's figures, at session open (before any task has
    /// moved, so the framework's `allocated` is still the sum in task order).
    ///
    /// Tasks in other statuses (Pipelined, Releasing, finished) count in neither `allocated`
    /// nor `request`. A job reserves its unmet minimum while it is Inqueue, and while it is
    /// Running with its minimum of tasks held; the second condition keeps a job whose driver
    /// pod finished from reserving its minimum again.
    pub fn of_job(ssn: &SessionState, job_id: JobId) -> QueueUsage {
        let job = ssn.job(job_id);
        let mut usage = QueueUsage::default();
        if job.count(TaskStatus::Pending) == 0 {
            // The framework's `allocated` is the same sum, over the same tasks in the same
            // order, so it is the same figure to the bit; and without pending tasks the
            // request is that sum too. A running job costs no look at its tasks.
            usage.allocated = job.allocated.clone();
            usage.request = job.allocated.clone();
        } else {
            for &t in &job.tasks {
                let task = ssn.task(t);
                if task.status.is_allocated() {
                    usage.allocated.add(task.resreq());
                    usage.request.add(task.resreq());
                } else if task.status == TaskStatus::Pending {
                    usage.request.add(task.resreq());
                }
            }
        }
        if job.spec.min_resources.is_some() && QueueUsage::reserves(job) {
            usage.inqueue = job.deduct_sch_gated_resources(ssn.tasks(), &job.inqueue_resource());
        }
        usage.elastic = match &job.spec.min_resources {
            Some(min) => exceeded_part(Some(&job.allocated), Some(min)),
            None => exceeded_part(Some(&job.allocated), Some(&Resource::empty())),
        };
        usage
    }

    /// Whether a job with `minResources` reserves its unmet minimum (see [`QueueUsage::of_job`]).
    fn reserves(job: &engine::model::JobInfo) -> bool {
        job.phase() == phase::INQUEUE
            || (job.phase() == phase::RUNNING && job.allocated_task_num() >= job.min_available())
    }

    pub fn add(&mut self, other: &QueueUsage) {
        self.sums().add(other);
    }

    /// `self.add(&QueueUsage::of_job(ssn, job_id))`; see [`UsageSums::add_job`].
    pub fn add_job(&mut self, ssn: &SessionState, job_id: JobId) {
        self.sums().add_job(ssn, job_id);
    }

    fn sums(&mut self) -> UsageSums<'_> {
        UsageSums {
            allocated: &mut self.allocated,
            request: &mut self.request,
            inqueue: &mut self.inqueue,
            elastic: &mut self.elastic,
        }
    }
}

/// A queue's four usage sums, wherever its plugin keeps them.
pub(crate) struct UsageSums<'a> {
    pub allocated: &'a mut Resource,
    pub request: &'a mut Resource,
    pub inqueue: &'a mut Resource,
    pub elastic: &'a mut Resource,
}

impl UsageSums<'_> {
    /// Adds what [`QueueUsage::of_job`] gives, in the same additions in the same order, so to
    /// the same sums to the bit, without building the job's figures apart when it has no
    /// pending task: then they are its `allocated` twice, which is added without a copy.
    /// Proportion and capacity add every job of the session at each open.
    pub fn add_job(self, ssn: &SessionState, job_id: JobId) {
        let job = ssn.job(job_id);
        if job.count(TaskStatus::Pending) != 0 {
            // Partial sums over the tasks first, as `of_job` adds them.
            self.add(&QueueUsage::of_job(ssn, job_id));
            return;
        }
        self.allocated.add(&job.allocated);
        self.request.add(&job.allocated);
        if job.spec.min_resources.is_some() && QueueUsage::reserves(job) {
            self.inqueue
                .add(&job.deduct_sch_gated_resources(ssn.tasks(), &job.inqueue_resource()));
        } else {
            // What adding `of_job`'s empty figure does: `+ 0.0` turns a −0 into +0.
            self.inqueue.milli_cpu += 0.0;
            self.inqueue.memory += 0.0;
        }
        let none = Resource::empty();
        let min = job.spec.min_resources.as_ref().unwrap_or(&none);
        self.elastic
            .add(&exceeded_part(Some(&job.allocated), Some(min)));
    }

    /// Adds a job's figures.
    pub fn add(self, usage: &QueueUsage) {
        self.allocated.add(&usage.allocated);
        self.request.add(&usage.request);
        self.inqueue.add(&usage.inqueue);
        self.elastic.add(&usage.elastic);
    }
}

/// Σ `spec.guarantee` over every queue of the session, with or without jobs.
pub(crate) fn total_guarantee(ssn: &SessionState) -> Resource {
    let mut total = Resource::empty();
    for q in ssn.queues() {
        if let Some(g) = &q.spec.guarantee {
            total.add(g);
        }
    }
    total
}

/// A configured capability as the flat plugins use it: cpu or memory left at 0 (or negative)
/// means "no limit" on that dimension.
pub(crate) fn widen_capability(capability: &Resource) -> Resource {
    let mut c = capability.clone();
    if c.milli_cpu <= 0.0 {
        c.milli_cpu = f64::MAX;
    }
    if c.memory <= 0.0 {
        c.memory = f64::MAX;
    }
    c
}

/// `min(capability, max(0, total − Σ guarantees) + own guarantee)` per dimension. Capability
/// scalars the spec leaves out are unbounded (`Infinity`); no capability bounds nothing.
pub(crate) fn real_capability(
    total: &Resource,
    total_guarantee: &Resource,
    guarantee: &Resource,
    capability: Option<&Resource>,
) -> Resource {
    let mut real = exceeded_part(Some(total), Some(total_guarantee));
    real.add(guarantee);
    if let Some(c) = capability {
        real.min_dimension_resource(c, DimensionDefault::Infinity);
    }
    real
}

/// The largest `Share(allocated, deserved)` over the dimensions deserved holds (≥ ε, `pods`
/// included); 0 when it holds none (§4.5).
pub(crate) fn queue_share(allocated: &Resource, deserved: &Resource) -> f64 {
    let mut best: f64 = 0.0;
    let mut consider = |a: f64, d: f64| {
        if d >= MIN_RESOURCE {
            best = best.max(share(a, d));
        }
    };
    consider(allocated.milli_cpu, deserved.milli_cpu);
    consider(allocated.memory, deserved.memory);
    for (n, d) in deserved.scalars.iter() {
        consider(allocated.scalar(n), d);
    }
    best
}

/// Volcano's share comparison: exact equality, otherwise the smaller share first.
pub(crate) fn compare_shares(l: f64, r: f64) -> Ordering {
    if l == r {
        Ordering::Equal
    } else if l < r {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// `util.FormatResourceNames`: `"<prefix>: <verb> <r1>, <verb> <r2>"`, or the prefix alone.
pub(crate) fn format_resource_names(prefix: &str, verb: &str, names: &[String]) -> String {
    if names.is_empty() {
        return prefix.to_string();
    }
    let parts: Vec<String> = names.iter().map(|n| format!("{verb} {n}")).collect();
    format!("{prefix}: {}", parts.join(", "))
}

/// The enqueue quota test of §4.9 / §5.8 for one queue: `min + allocated + inqueue − elastic`
/// must stay within the real capability on the dimensions `min` asks for (strictly, `pods`
/// excluded). `Err` carries the insufficient resource names.
pub(crate) fn enqueue_fits(
    min: &Resource,
    allocated: &Resource,
    inqueue: &Resource,
    elastic: &Resource,
    real_capability: &Resource,
) -> Result<(), Vec<String>> {
    let mut need = min.clone();
    need.add(allocated).add(inqueue).sub(elastic);
    match need.less_equal_with_dimension_and_resources_name(Some(real_capability), Some(min)) {
        (true, _) => Ok(()),
        (false, names) => Err(names),
    }
}

/// The PodGroup event message of a quota rejection.
pub(crate) fn quota_insufficient_message(names: &[String]) -> String {
    format_resource_names("queue resource quota insufficient", "insufficient", names)
}

/// PodGroup events of rejected enqueue votes (overcommit, proportion, capacity, resourcequota). A vote only reads the session, so the events are
/// collected here and recorded when the session closes.
#[derive(Debug, Default)]
pub(crate) struct EnqueueRejections(Mutex<Vec<(JobId, String)>>);

impl EnqueueRejections {
    pub fn record(&self, job: JobId, message: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((job, message));
    }

    /// The message of this session's last rejection of `job`, if any.
    pub fn message_for(&self, job: JobId) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .rev()
            .find(|(j, _)| *j == job)
            .map(|(_, m)| m.clone())
    }

    /// Records every collected rejection as a Normal `Unschedulable` event on its PodGroup.
    pub fn emit(&mut self, ssn: &mut SessionState) {
        let rejections = std::mem::take(self.0.get_mut().unwrap_or_else(PoisonError::into_inner));
        for (job, message) in rejections {
            ssn.record_job_event(
                job,
                EventType::Normal,
                apis::condition_type::UNSCHEDULABLE,
                message,
            );
        }
    }
}

pub(crate) use engine::model::queue::not_open_message as queue_not_open_message;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{TestCluster, pod, queued_group};
    use proptest::prelude::*;
    use serde_json::json;

    /// A job: its phase, its minimum cpu (if any) and its pods as (phase, on a node, cpu).
    type JobCase = (usize, Option<u32>, Vec<(usize, bool, u32)>);

    fn job_case() -> impl Strategy<Value = JobCase> {
        (
            0..3usize,
            proptest::option::of(1..4_000u32),
            proptest::collection::vec((0..3usize, any::<bool>(), 1..3_000u32), 0..5),
        )
    }

    fn check_add_job_is_of_job(jobs: &[JobCase]) -> Result<(), TestCaseError> {
        let mut c = TestCluster::new();
        c.node(
            "n1",
            json!({"cpu": "1000", "memory": "4000Gi", "pods": "1000"}),
        );
        for (j, (phase, min, pods)) in jobs.iter().enumerate() {
            let group = format!("job-{j}");
            let min = min.map(|m| json!({"cpu": format!("{m}m")}));
            let phase = ["Pending", "Inqueue", "Running"][*phase];
            c.pod_group(queued_group(&group, "default", phase, min));
            for (p, (status, placed, cpu)) in pods.iter().enumerate() {
                let status = ["Pending", "Running", "Succeeded"][*status];
                let node = (*placed || status != "Pending").then_some("n1");
                let requests = json!({"cpu": format!("{cpu}m"), "memory": format!("{cpu}Mi")});
                c.pod(pod(
                    "ns",
                    &format!("{group}-{p}"),
                    Some(&group),
                    status,
                    node,
                    requests,
                ));
            }
        }
        let ssn = c.session(&[]);
        let (mut apart, mut in_place) = (QueueUsage::default(), QueueUsage::default());
        for job in ssn.state.job_ids() {
            apart.add(&QueueUsage::of_job(&ssn.state, job));
            in_place.add_job(&ssn.state, job);
        }
        // Debug prints every value with its sign (−0 apart from +0), bit for bit.
        prop_assert_eq!(format!("{apart:?}"), format!("{in_place:?}"));
        Ok(())
    }

    proptest! {
        #[test]
        fn adding_a_job_in_place_gives_the_sums_of_its_figures(
            jobs in proptest::collection::vec(job_case(), 1..8),
        ) {
            check_add_job_is_of_job(&jobs)?;
        }
    }

    fn cpu(milli: f64) -> Resource {
        Resource::from_pairs(milli, 0.0, &[])
    }

    #[test]
    fn share_uses_deserved_dimensions_only() {
        let gi = 1024.0 * 1024.0 * 1024.0;
        let s = queue_share(
            &Resource::from_pairs(2_000.0, 6.0 * gi, &[]),
            &Resource::from_pairs(4_000.0, 8.0 * gi, &[]),
        );
        assert_eq!(s, 0.75);
        // cpu is not a deserved dimension when deserved holds none of it.
        assert_eq!(
            queue_share(&cpu(100.0), &Resource::from_pairs(0.0, 8.0 * gi, &[])),
            0.0
        );
        assert_eq!(queue_share(&cpu(100.0), &Resource::empty()), 0.0);
        // pods take part when deserved names them.
        assert_eq!(
            queue_share(
                &Resource::from_pairs(0.0, 0.0, &[("pods", 5.0)]),
                &Resource::from_pairs(0.0, 0.0, &[("pods", 10.0)])
            ),
            0.5
        );
    }

    #[test]
    fn shares_compare_exactly() {
        assert_eq!(compare_shares(0.5, 0.5), Ordering::Equal);
        assert_eq!(compare_shares(0.25, 0.5), Ordering::Less);
        assert_eq!(compare_shares(0.5, 0.25), Ordering::Greater);
    }

    #[test]
    fn resource_names_message() {
        assert_eq!(
            quota_insufficient_message(&["cpu".into(), "memory".into()]),
            "queue resource quota insufficient: insufficient cpu, insufficient memory"
        );
        assert_eq!(
            quota_insufficient_message(&[]),
            "queue resource quota insufficient"
        );
        assert_eq!(format_resource_names("p", "v", &["x".into()]), "p: v x");
    }

    #[test]
    fn real_capability_widens_unset_cpu_and_memory_and_clamps_guarantees() {
        let total = Resource::from_pairs(10_000.0, 100.0, &[("nvidia.com/gpu", 4_000.0)]);
        // Capability naming only a device: cpu and memory unbounded, the device capped.
        let cap = widen_capability(&Resource::from_pairs(
            0.0,
            0.0,
            &[("nvidia.com/gpu", 1_000.0)],
        ));
        assert_eq!(cap.milli_cpu, f64::MAX);
        assert_eq!(cap.memory, f64::MAX);
        let real = real_capability(&total, &Resource::empty(), &Resource::empty(), Some(&cap));
        assert_eq!(
            real,
            Resource::from_pairs(10_000.0, 100.0, &[("nvidia.com/gpu", 1_000.0)])
        );
        // Guarantees above the cluster: the shared part is 0, only the own guarantee is left.
        let real = real_capability(&cpu(10_000.0), &cpu(15_000.0), &cpu(3_000.0), None);
        assert_eq!(real.milli_cpu, 3_000.0);
        // Capability scalars left out stay unbounded.
        let real = real_capability(
            &total,
            &Resource::empty(),
            &Resource::empty(),
            Some(&cpu(2_000.0)),
        );
        assert_eq!(real.milli_cpu, 2_000.0);
        assert_eq!(real.get("nvidia.com/gpu"), 4_000.0);
    }

    #[test]
    fn enqueue_quota_formula() {
        // P-11: realCapability 10000, allocated 4000, inqueue 3000, elastic 1000.
        let (inqueue, elastic, real) = (cpu(3_000.0), cpu(1_000.0), cpu(10_000.0));
        let fits = |min: f64, allocated: &Resource| {
            enqueue_fits(&cpu(min), allocated, &inqueue, &elastic, &real)
        };
        assert_eq!(fits(4_000.0, &cpu(4_000.0)), Ok(()));
        assert_eq!(fits(4_001.0, &cpu(4_000.0)), Err(vec!["cpu".to_string()]));
        // Only the dimensions the minimum names are compared.
        let gi = 1024.0 * 1024.0 * 1024.0;
        assert_eq!(
            fits(4_000.0, &Resource::from_pairs(4_000.0, 100.0 * gi, &[])),
            Ok(())
        );
    }
}
