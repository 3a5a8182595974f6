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
    /// The observed status holds gang's renewable Scheduled condition
    /// ([`JobStatus::renewable`] of Scheduled, True, [`apis::condition_reason::TASKS_READY`]).
    /// Worked out once per PodGroup version: gang asks it of every ready job every session,
    /// and reading each job's condition strings was a tenth of a steady session.
    pub baseline_gang_ready: bool,
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
        job.baseline_gang_ready = baseline.renewable(
            apis::condition_type::SCHEDULED,
            apis::condition_status::TRUE,
            apis::condition_reason::TASKS_READY,
        );
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
            assert_eq!(spec.baseline_gang_ready, want, "{conditions}");
            assert_eq!(read, want, "{conditions}");
        }
    }
}
