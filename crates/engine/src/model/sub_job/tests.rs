use std::sync::Arc;

use super::*;
use crate::model::task::{TaskInfo, TaskSpec};

fn task(name: &str, labels: &[(&str, &str)], status: TaskStatus) -> TaskInfo {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }))
    .expect("pod");
    let spec = TaskSpec::from_pod(Arc::new(pod), true, "default");
    let mut t = TaskInfo::new(Arc::new(spec), None, None);
    t.status = status;
    t
}

fn policy(
    name: &str,
    keys: &[&str],
    size: Option<i32>,
    min: Option<i32>,
) -> apis::SubGroupPolicySpec {
    apis::SubGroupPolicySpec {
        name: name.into(),
        match_label_keys: keys.iter().map(|k| k.to_string()).collect(),
        sub_group_size: size,
        min_sub_groups: min,
        ..Default::default()
    }
}

fn ids(n: usize) -> Vec<TaskId> {
    (0..n).map(TaskId::from_index).collect()
}

#[test]
fn tasks_with_equal_values_form_one_sub_job_and_the_rest_the_default_one() {
    let tasks = vec![
        task("a", &[("rack", "1")], TaskStatus::Pending),
        task("b", &[("rack", "2")], TaskStatus::Pending),
        task("c", &[("rack", "1")], TaskStatus::Pending),
        task("d", &[], TaskStatus::Pending),
        task("e", &[("rack", "")], TaskStatus::Pending),
    ];
    let policies = [policy("p", &["rack"], Some(2), None)];
    let sub_jobs = build("ns/job", &policies, None, &ids(5), &tasks);
    let uids: Vec<&str> = sub_jobs.iter().map(|s| s.uid.as_str()).collect();
    assert_eq!(uids, ["ns/job/p-1", "ns/job/p-2", "ns/job"]);
    assert_eq!(
        sub_jobs[0].tasks,
        [TaskId::from_index(0), TaskId::from_index(2)]
    );
    assert_eq!(sub_jobs[0].min_available, 2);
    assert_eq!(sub_jobs[0].match_index, 1);
    // An empty value or a missing key falls to the default sub-job, whose minimum is 1.
    assert_eq!(
        sub_jobs[2].tasks,
        [TaskId::from_index(3), TaskId::from_index(4)]
    );
    assert_eq!(sub_jobs[2].policy, None);
    assert_eq!(sub_jobs[2].min_available, 1);
}

#[test]
fn a_policy_without_keys_or_with_an_unmatched_selector_takes_no_pod() {
    let tasks = vec![task("a", &[("role", "w")], TaskStatus::Pending)];
    let mut selective = policy("sel", &["role"], None, None);
    selective.label_selector = Some(
        serde_json::from_value(serde_json::json!({"matchLabels": {"role": "ps"}}))
            .expect("selector"),
    );
    let policies = [policy("none", &[], None, None), selective];
    let sub_jobs = build("j", &policies, None, &ids(1), &tasks);
    assert_eq!(sub_jobs.len(), 1);
    assert_eq!(sub_jobs[0].policy, None);
}

#[test]
fn long_values_are_hashed_into_the_uid() {
    let long = "x".repeat(200);
    let tasks = vec![task("a", &[("k", long.as_str())], TaskStatus::Pending)];
    let sub_jobs = build(
        "j",
        &[policy("p", &["k"], None, None)],
        None,
        &ids(1),
        &tasks,
    );
    assert!(sub_jobs[0].uid.starts_with("j/p-"));
    assert!(sub_jobs[0].uid.len() < 40, "{}", sub_jobs[0].uid);
}

#[test]
fn readiness_counts_ready_and_pipelined_tasks_against_the_size() {
    let tasks = vec![
        task("a", &[("g", "1")], TaskStatus::Running),
        task("b", &[("g", "1")], TaskStatus::Pipelined),
        task("c", &[("g", "2")], TaskStatus::Pending),
    ];
    let sub_jobs = build(
        "j",
        &[policy("p", &["g"], Some(2), None)],
        None,
        &ids(3),
        &tasks,
    );
    assert!(!sub_jobs[0].is_ready(&tasks));
    assert!(sub_jobs[0].is_pipelined(&tasks));
    assert!(!sub_jobs[1].is_pipelined(&tasks));
}

#[test]
fn policy_minimums_count_sub_jobs_by_policy() {
    let tasks = vec![
        task("a", &[("g", "1")], TaskStatus::Running),
        task("b", &[("g", "2")], TaskStatus::Pending),
    ];
    let policies = [policy("p", &["g"], Some(1), Some(2))];
    let mut job = crate::model::JobInfo::new("j".into(), "j".into(), "ns".into(), "q".into(), 1);
    job.change_spec(|s| {
        s.sub_group_policy = policies.to_vec();
        s.has_sub_group_policy = true;
    });
    job.tasks = ids(2).into();
    job.sub_jobs = build("j", &policies, None, &job.tasks, &tasks);
    assert!(job.check_sub_job_valid());
    assert!(
        !job.check_sub_job_ready(&tasks),
        "one of two sub-jobs is ready"
    );
    assert!(!job.check_sub_job_pipelined(&tasks));
    assert_eq!(job.min_sub_jobs_of(SubJobId(0)), 2);
    let too_few = [policy("p", &["g"], Some(1), Some(3))];
    job.change_spec(|s| s.sub_group_policy = too_few.to_vec());
    assert!(
        !job.check_sub_job_valid(),
        "two sub-jobs where three are asked"
    );
}
