//! What a PodGroup says of its job (spec/framework.md §2.4, §5.5): names, gang sizes, the
//! preemption stance and the status it was observed with.
//!
//! A spec depends only on the PodGroup object (and the default queue), so the cluster state
//! builds it once per PodGroup version and every session that sees that version shares it
//! (`Arc`): a session opens without parsing or copying what did not change. What depends on
//! other objects (the queue's index, the priority from the PriorityClass) and what the session
//! changes lives in [`JobInfo`](super::JobInfo).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;

use super::job::{JobStatus, job_status_from_api};
use super::resource::Resource;

/// See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct JobSpec {
    /// `<namespace>/<podgroup name>`
    pub uid: String,
    pub name: String,
    pub namespace: String,
    /// The PodGroup's Kubernetes UID (empty for a standalone pod's implicit job).
    pub pg_uid: String,
    /// True for the implicit one-pod job of a standalone pod: there is no PodGroup object to
    /// write back.
    pub implicit: bool,
    /// The queue named by the PodGroup, or the default queue.
    pub queue_name: String,
    pub min_available: i32,
    pub task_min_available: BTreeMap<String, i32>,
    pub task_min_available_total: i32,
    pub min_resources: Option<Resource>,
    pub priority_class_name: String,
    pub creation: Option<Timestamp>,
    pub preemptable: bool,
    /// The PodGroup carries `volcano.sh/preemptable` (annotation or label), whatever its value.
    pub preemptable_stated: bool,
    pub revocable_zone: String,
    pub annotations: BTreeMap<String, String>,
    /// The PodGroup sets `spec.subGroupPolicy`.
    pub has_sub_group_policy: bool,
    /// `spec.subGroupPolicy`, which forms the job's sub-jobs ([`super::sub_job`]).
    pub sub_group_policy: Vec<apis::SubGroupPolicySpec>,
    /// `spec.networkTopology` as written; the session normalises it
    /// ([`JobInfo::topology`](super::JobInfo::topology)).
    pub network_topology: Option<apis::NetworkTopologySpec>,
    /// The status the PodGroup was observed with (change detection at close). Shared with
    /// every session's `JobInfo::status` until a session changes it (copy on write).
    pub baseline: Option<Arc<JobStatus>>,
    /// What the sessions ask of the observed status of every job every session, worked out
    /// once per PodGroup version: read from the status itself, its phase and condition
    /// strings were allocations of their own to fetch per job (gang's renewal alone was a
    /// tenth of a steady session).
    pub baseline_figures: ObservedFigures,
}

/// Of a PodGroup's observed status: its phase when it is one of the known ones (or empty), its
/// counts, whether any of its conditions is `Unschedulable` with status True, and whether it
/// holds gang's renewable Scheduled condition ([`JobStatus::renewable`] of Scheduled, True,
/// [`apis::condition_reason::TASKS_READY`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObservedFigures {
    pub phase: Option<&'static str>,
    pub running: i32,
    pub succeeded: i32,
    pub failed: i32,
    pub unschedulable: bool,
    pub gang_ready: bool,
}

impl ObservedFigures {
    pub fn of(status: &JobStatus) -> ObservedFigures {
        use super::job::phase;
        let phase = [
            "",
            phase::PENDING,
            phase::RUNNING,
            phase::UNKNOWN,
            phase::INQUEUE,
            phase::COMPLETED,
        ]
        .into_iter()
        .find(|p| *p == status.phase);
        ObservedFigures {
            phase,
            running: status.running,
            succeeded: status.succeeded,
            failed: status.failed,
            unschedulable: status.conditions.iter().any(|c| {
                c.type_ == apis::condition_type::UNSCHEDULABLE
                    && c.status == apis::condition_status::TRUE
            }),
            gang_ready: status.renewable(
                apis::condition_type::SCHEDULED,
                apis::condition_status::TRUE,
                apis::condition_reason::TASKS_READY,
            ),
        }
    }
}

impl JobSpec {
    pub fn new(
        uid: String,
        name: String,
        namespace: String,
        queue_name: String,
        min_available: i32,
    ) -> JobSpec {
        JobSpec {
            uid,
            name,
            namespace,
            queue_name,
            min_available,
            ..JobSpec::default()
        }
    }

    /// The spec of the PodGroup stored under `key` (`<namespace>/<name>`).
    pub fn from_pod_group(key: &str, pg: &apis::PodGroup, default_queue: &str) -> JobSpec {
        let queue_name = if pg.spec.queue.is_empty() {
            default_queue.to_string()
        } else {
            pg.spec.queue.clone()
        };
        let mut job = JobSpec::new(
            key.to_string(),
            pg.metadata.name.clone().unwrap_or_default(),
            pg.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
            queue_name,
            pg.spec.min_member,
        );
        job.pg_uid = pg.metadata.uid.clone().unwrap_or_default();
        job.has_sub_group_policy = !pg.spec.sub_group_policy.is_empty();
        job.sub_group_policy = pg.spec.sub_group_policy.clone();
        job.network_topology = pg.spec.network_topology.clone();
        job.task_min_available = pg.spec.min_task_member.clone();
        job.task_min_available_total = pg.spec.min_task_member.values().sum();
        job.min_resources = pg.spec.min_resources.as_ref().map(Resource::from_list);
        job.priority_class_name = pg.spec.priority_class_name.clone();
        job.creation = pg.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let annotations = pg.metadata.annotations.clone().unwrap_or_default();
        let labels = pg.metadata.labels.as_ref();
        let stated = annotations
            .get(apis::keys::PREEMPTABLE)
            .or_else(|| labels.and_then(|l| l.get(apis::keys::PREEMPTABLE)));
        job.preemptable_stated = stated.is_some();
        job.preemptable = stated
            .map(|v| super::task::parse_go_bool(v).unwrap_or(false))
            .unwrap_or(false);
        job.revocable_zone = match annotations
            .get(apis::keys::REVOCABLE_ZONE)
            .map(String::as_str)
        {
            Some("*") => "*".to_string(),
            Some(_) => String::new(),
            None if job.preemptable && annotations.contains_key(apis::keys::PREEMPTABLE) => {
                "*".to_string()
            }
            None => String::new(),
        };
        job.annotations = annotations;
        let baseline = pg
            .status
            .as_ref()
            .map(job_status_from_api)
            .unwrap_or_default();
        job.baseline_figures = ObservedFigures::of(&baseline);
        job.baseline = Some(Arc::new(baseline));
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with_conditions(conditions: serde_json::Value) -> JobSpec {
        let pg: apis::PodGroup = serde_json::from_value(serde_json::json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "ns"},
            "spec": {"minMember": 1},
            "status": {"phase": "Running", "conditions": conditions},
        }))
        .expect("a PodGroup");
        JobSpec::from_pod_group("ns/pg", &pg, "default")
    }

    /// The flag worked out once per PodGroup version answers what reading the conditions
    /// answers, for the condition gang renews and the ones it must replace.
    #[test]
    fn the_gang_ready_flag_answers_as_the_conditions_do() {
        let ready = "tasks in gang are ready to be scheduled";
        let cases = [
            (
                serde_json::json!([{"type": "Scheduled", "status": "True", "reason": ready}]),
                true,
            ),
            (
                serde_json::json!([{"type": "Scheduled", "status": "True", "reason": ready,
                    "message": "m"}]),
                false,
            ),
            (
                serde_json::json!([{"type": "Scheduled", "status": "False", "reason": ready}]),
                false,
            ),
            (
                serde_json::json!([{"type": "Scheduled", "status": "True", "reason": "old"}]),
                false,
            ),
            (
                serde_json::json!([
                    {"type": "Unschedulable", "status": "True", "reason": ready},
                    {"type": "Scheduled", "status": "True", "reason": ready}
                ]),
                true,
            ),
            (
                serde_json::json!([
                    {"type": "Scheduled", "status": "True", "reason": "old"},
                    {"type": "Scheduled", "status": "True", "reason": ready}
                ]),
                false,
            ),
            (serde_json::json!([]), false),
        ];
        for (conditions, want) in cases {
            let spec = spec_with_conditions(conditions.clone());
            let baseline = spec.baseline.as_ref().expect("a baseline");
            let read = baseline.renewable("Scheduled", "True", ready);
            assert_eq!(spec.baseline_figures.gang_ready, want, "{conditions}");
            assert_eq!(read, want, "{conditions}");
        }
    }
}

#[cfg(test)]
mod observed_figures_tests {
    use super::*;
    use crate::model::JobInfo;

    fn spec(phase: &str, conditions: serde_json::Value) -> JobSpec {
        let pg: apis::PodGroup = serde_json::from_value(serde_json::json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "ns"},
            "spec": {"minMember": 3},
            "status": {"phase": phase, "running": 2, "failed": 1, "conditions": conditions},
        }))
        .expect("a PodGroup");
        JobSpec::from_pod_group("ns/pg", &pg, "default")
    }

    /// The figures copied once per PodGroup version are the status's own, and a row stops
    /// answering from them as soon as its status is changed.
    #[test]
    fn a_row_answers_from_the_observed_figures_until_its_status_changes() {
        let unschedulable = serde_json::json!([{"type": "Unschedulable", "status": "True"}]);
        let s = spec("Running", unschedulable);
        let f = s.baseline_figures;
        assert_eq!(f.phase, Some("Running"));
        assert_eq!((f.running, f.succeeded, f.failed), (2, 0, 1));
        assert!(f.unschedulable);
        assert!(
            !spec("Running", serde_json::json!([]))
                .baseline_figures
                .unschedulable
        );
        assert!(
            !spec(
                "Running",
                serde_json::json!([{"type": "Unschedulable", "status": "False"}])
            )
            .baseline_figures
            .unschedulable
        );
        assert_eq!(
            spec("", serde_json::json!([])).baseline_figures.phase,
            Some("")
        );
        assert_eq!(
            spec("Odd", serde_json::json!([])).baseline_figures.phase,
            None
        );

        let mut job = JobInfo::from_spec(Arc::new(s));
        assert!(job.shows_observed_status());
        assert_eq!(job.observed_figures(), Some(&f));
        assert_eq!((job.phase(), job.min_available()), ("Running", 3));
        job.status_mut().phase = "Pending".to_string();
        assert!(!job.shows_observed_status());
        assert_eq!(job.observed_figures(), None);
        assert_eq!(job.phase(), "Pending");
        assert!(job.is_pending());

        let mut odd = JobInfo::from_spec(Arc::new(spec("Odd", serde_json::json!([]))));
        assert_eq!(
            odd.phase(),
            "Odd",
            "an unknown phase is read from the status"
        );
        odd.change_spec(|s| s.min_available = 5);
        assert_eq!(odd.min_available(), 5, "the row follows a changed spec");
        let bare = JobInfo::new("u".into(), "n".into(), "ns".into(), "q".into(), 1);
        assert!(
            !bare.shows_observed_status(),
            "no observed status, nothing shown"
        );
    }
}
