use super::*;
use crate::testutil::{
    SESSION_UID, StateLookup, TestCluster, allocate, pipeline, pod, pod_group, test_now,
};
use engine::framework::Session;
use engine::model::task::TransactionContext;
use serde_json::{Value, json};

fn plugin(ssn: &mut Session) -> Box<dyn Plugin> {
    let mut p = new(&Arguments::new());
    p.on_session_open(&mut ssn.state);
    p
}

fn cluster() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "16", "memory": "32Gi", "pods": "110"}));
    c
}

/// Adds pods `<group>-<i>` of PodGroup `group` with the given phases (Running pods on n1).
fn add_pods(c: &mut TestCluster, group: &str, phases: &[&str]) {
    for (i, phase) in phases.iter().enumerate() {
        let node = (*phase == "Running").then_some("n1");
        c.pod(pod(
            "ns",
            &format!("{group}-{i}"),
            Some(group),
            phase,
            node,
            json!({"cpu": "1"}),
        ));
    }
}

fn role_pod(name: &str, group: &str, role: &str) -> Value {
    let mut p = pod(
        "ns",
        name,
        Some(group),
        "Pending",
        None,
        json!({"cpu": "1"}),
    );
    p["metadata"]["labels"]["volcano.sh/task-spec"] = json!(role);
    p
}

#[test]
fn g1_not_enough_valid_tasks() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 3));
    add_pods(&mut c, "pg", &["Running", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let job = ssn.state.job_by_key("ns/pg");
    let expected = ValidateResult {
        reason: "NotEnoughTasks".to_string(),
        message: "Not enough valid tasks for gang-scheduling, valid: 2, min: 3".to_string(),
    };
    assert_eq!(p.job_valid(&ssn.state, job), Some(expected.clone()));
    assert_eq!(ssn.job_valid(job), Some(expected));
}

#[test]
fn failed_tasks_are_not_valid_but_succeeded_ones_are() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 2));
    add_pods(&mut c, "pg", &["Succeeded", "Failed", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    assert_eq!(p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg")), None);
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 3));
    add_pods(&mut c, "pg", &["Succeeded", "Failed", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let result = p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg"));
    assert_eq!(result.map(|r| r.reason), Some("NotEnoughTasks".to_string()));
}

#[test]
fn g2_role_minimum_not_met() {
    let mut c = cluster();
    let mut pg = pod_group("ns", "pg", 4);
    pg["spec"]["minTaskMember"] = json!({"ps": 1, "worker": 3});
    c.pod_group(pg);
    c.pod(role_pod("ps-0", "pg", "ps"));
    c.pod(role_pod("worker-0", "pg", "worker"));
    c.pod(role_pod("worker-1", "pg", "worker"));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let result = p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg"));
    assert_eq!(
        result,
        Some(ValidateResult {
            reason: "NotEnoughPodsOfTask".to_string(),
            message: "Not enough valid pods of each task for gang-scheduling".to_string(),
        })
    );
}

#[test]
fn g3_elastic_job_skips_role_checks() {
    let mut c = cluster();
    let mut pg = pod_group("ns", "pg", 3);
    pg["spec"]["minTaskMember"] = json!({"task1": 2, "task2": 3});
    c.pod_group(pg);
    c.pod(role_pod("a-0", "pg", "task1"));
    c.pod(role_pod("b-0", "pg", "task2"));
    c.pod(role_pod("b-1", "pg", "task2"));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    assert_eq!(p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg")), None);
}

#[test]
fn g4_victims_keep_min_member_ready_tasks() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "j", 2));
    add_pods(&mut c, "j", &["Running", "Running", "Running"]);
    c.pod_group(pod_group("ns", "k", 2));
    add_pods(&mut c, "k", &["Running", "Running"]);
    c.pod_group(pod_group("ns", "hungry", 1));
    add_pods(&mut c, "hungry", &["Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let s = &ssn.state;
    let preemptor = s.task_by_key("ns/hungry-0");
    let j: Vec<TaskId> = (0..3)
        .map(|i| s.task_by_key(&format!("ns/j-{i}")))
        .collect();
    assert_eq!(p.preemptable(s, preemptor, &j), (vec![j[0]], PERMIT));
    assert_eq!(p.reclaimable(s, preemptor, &j), (vec![j[0]], PERMIT));
    // Given in another order, the first candidate is still the one taken.
    assert_eq!(
        p.preemptable(s, preemptor, &[j[2], j[1]]),
        (vec![j[2]], PERMIT)
    );
    let k: Vec<TaskId> = (0..2)
        .map(|i| s.task_by_key(&format!("ns/k-{i}")))
        .collect();
    assert_eq!(p.preemptable(s, preemptor, &k), (vec![], PERMIT));
    // Budgets are per job.
    let mixed = [k[0], j[0], k[1], j[1]];
    assert_eq!(p.preemptable(s, preemptor, &mixed), (vec![j[0]], PERMIT));
}

#[test]
fn victims_of_a_zero_minimum_job_and_orphans() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "zero", 0));
    add_pods(&mut c, "zero", &["Running", "Running"]);
    c.pod(pod(
        "ns",
        "orphan",
        Some("gone"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let s = &ssn.state;
    let (z0, z1, orphan) = (
        s.task_by_key("ns/zero-0"),
        s.task_by_key("ns/zero-1"),
        s.task_by_key("ns/orphan"),
    );
    assert_eq!(
        p.preemptable(s, z0, &[z0, orphan, z1]),
        (vec![z0, z1], PERMIT)
    );
}

#[test]
fn g5_job_order_puts_unready_jobs_first() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "ready-a", 1));
    add_pods(&mut c, "ready-a", &["Running"]);
    c.pod_group(pod_group("ns", "ready-b", 1));
    add_pods(&mut c, "ready-b", &["Running"]);
    c.pod_group(pod_group("ns", "waiting-a", 2));
    add_pods(&mut c, "waiting-a", &["Running", "Pending"]);
    c.pod_group(pod_group("ns", "waiting-b", 1));
    add_pods(&mut c, "waiting-b", &["Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let s = &ssn.state;
    let j = |k: &str| s.job_by_key(k);
    assert_eq!(
        p.job_order(s, j("ns/ready-a"), j("ns/waiting-a")),
        Ordering::Greater
    );
    assert_eq!(
        p.job_order(s, j("ns/waiting-a"), j("ns/ready-a")),
        Ordering::Less
    );
    assert_eq!(
        p.job_order(s, j("ns/ready-a"), j("ns/ready-b")),
        Ordering::Equal
    );
    assert_eq!(
        p.job_order(s, j("ns/waiting-a"), j("ns/waiting-b")),
        Ordering::Equal
    );
}

#[test]
fn g6_pending_best_effort_tasks_count_as_ready() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 2));
    c.pod(pod(
        "ns",
        "pg-0",
        Some("pg"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    c.pod(pod("ns", "pg-1", Some("pg"), "Pending", None, json!({})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let job = ssn.state.job_by_key("ns/pg");
    assert!(p.job_ready(&ssn.state, job));
    assert!(ssn.job_ready(job));
}

#[test]
fn job_ready_needs_every_role_minimum() {
    let mut c = cluster();
    let mut pg = pod_group("ns", "pg", 3);
    pg["spec"]["minTaskMember"] = json!({"ps": 1, "worker": 2});
    c.pod_group(pg);
    c.pod(role_pod("ps-0", "pg", "ps"));
    for i in 0..3 {
        c.pod(role_pod(&format!("worker-{i}"), "pg", "worker"));
    }
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let job = ssn.state.job_by_key("ns/pg");
    for w in ["ns/worker-0", "ns/worker-1", "ns/worker-2"] {
        allocate(&mut ssn, w, "n1");
    }
    // Three ready tasks meet minMember, but the ps role has none.
    assert!(ssn.state.job(job).is_ready());
    assert!(!p.job_ready(&ssn.state, job));
    assert_eq!(p.job_pipelined(&ssn.state, job), REJECT);
    pipeline(&mut ssn, "ns/ps-0", "n1");
    assert!(!p.job_ready(&ssn.state, job));
    assert_eq!(p.job_pipelined(&ssn.state, job), PERMIT);
}

#[test]
fn g7_job_starving() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 3));
    add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let job = ssn.state.job_by_key("ns/pg");
    pipeline(&mut ssn, "ns/pg-1", "n1");
    assert!(p.job_starving(&ssn.state, job));
    allocate(&mut ssn, "ns/pg-2", "n1");
    assert!(!p.job_starving(&ssn.state, job));
}

#[test]
fn f4_starving_with_priority_in_the_same_tier_is_the_and_of_both() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 2));
    add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
    let mut ssn = c.session(&[&[crate::priority::NAME, NAME]]);
    pipeline(&mut ssn, "ns/pg-1", "n1");
    let job = ssn.state.job_by_key("ns/pg");
    // priority: 1 + 1 < 3 tasks ⇒ starving; gang: 1 + 1 < 2 is false ⇒ not starving.
    assert!(!ssn.job_starving(job));
    // In separate tiers the first tier (priority) decides alone.
    let mut tiered = c.session(&[&[crate::priority::NAME], &[NAME]]);
    pipeline(&mut tiered, "ns/pg-1", "n1");
    assert!(tiered.job_starving(tiered.state.job_by_key("ns/pg")));
}

#[test]
fn g8_job_pipelined() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 3));
    add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let job = ssn.state.job_by_key("ns/pg");
    pipeline(&mut ssn, "ns/pg-1", "n1");
    assert_eq!(p.job_pipelined(&ssn.state, job), REJECT);
    assert!(!ssn.job_pipelined(job));
    pipeline(&mut ssn, "ns/pg-2", "n1");
    assert_eq!(p.job_pipelined(&ssn.state, job), PERMIT);
    assert!(ssn.job_pipelined(job));
}

fn condition<'a>(ssn: &'a Session, job: &str, type_: &str) -> Option<&'a JobCondition> {
    let j = ssn.state.job(ssn.state.job_by_key(job));
    j.status().conditions.iter().find(|c| c.type_ == type_)
}

#[test]
fn g9_close_hook_writes_unschedulable_condition() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 3));
    add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = plugin(&mut ssn);
    let tried = ssn.state.task_by_key("ns/pg-1");
    let n1 = ssn.state.node_by_key("n1");
    // Allocated in a statement that was then discarded: the task remembers where it would
    // have gone.
    let mut stmt = engine::framework::Statement::new();
    ssn.allocate(&mut stmt, tried, n1).expect("fits");
    ssn.discard(stmt);
    assert_eq!(
        ssn.state.task(tried).last_transaction,
        Some(TransactionContext {
            node: Some(n1),
            eviction_occurred: false,
            status: TaskStatus::Allocated,
        })
    );
    p.on_session_close(&mut ssn.state);
    let job = ssn.state.job_by_key("ns/pg");
    let cond = condition(&ssn, "ns/pg", "Unschedulable").expect("condition written");
    assert_eq!(cond.status, "True");
    assert_eq!(cond.reason, "NotEnoughResources");
    assert_eq!(cond.transition_id, SESSION_UID);
    assert_eq!(cond.last_transition_time, Some(test_now()));
    assert!(
        cond.message
            .starts_with("1/3 tasks in gang unschedulable: "),
        "{}",
        cond.message
    );
    assert_eq!(
        cond.message,
        format!(
            "1/3 tasks in gang unschedulable: {}",
            ssn.state.job_fit_error(job)
        )
    );
    assert_eq!(
        cond.message,
        "1/3 tasks in gang unschedulable: pod group is not ready, 1 Running, 2 Pending, \
             3 minAvailable; Pending: 1 Schedulable, 1 Unschedulable"
    );
    assert!(condition(&ssn, "ns/pg", "Scheduled").is_none());
}

/// A standalone pod that does not fit counts in `unschedule_job_count` and has its
/// `unschedule_task_count` series under its implicit PodGroup's name, so the two agree.
#[test]
fn standalone_pods_count_in_both_unschedulable_metrics() {
    let mut c = cluster();
    c.pod(pod(
        "ns",
        "big",
        None,
        "Pending",
        None,
        json!({"cpu": "64"}),
    ));
    let decisions = c.session(&[&[NAME]]).close();
    assert_eq!(decisions.unschedulable_jobs, Some(1));
    let m = decisions
        .job_metrics
        .iter()
        .find(|m| m.name() == "podgroup-uid-ns-big")
        .expect("a series for the standalone pod's job");
    assert_eq!(m.figures.unschedule_task_count, Some(1));
}

/// A gang placed in this session is still Inqueue at close (its binds have not landed):
/// its event is the Normal "Scheduled", not a Warning "…unschedulable: pod group is ready"
/// (a difference from Volcano, on purpose: Warnings are for real problems).
#[test]
fn a_gang_placed_this_session_gets_no_warning_event() {
    let mut c = cluster();
    let mut pg = pod_group("ns", "pg", 2);
    pg["status"] = json!({"phase": "Inqueue"});
    c.pod_group(pg);
    add_pods(&mut c, "pg", &["Pending", "Pending"]);
    let mut ssn = c.session(&[&[NAME]]);
    allocate(&mut ssn, "ns/pg-0", "n1");
    allocate(&mut ssn, "ns/pg-1", "n1");
    let decisions = ssn.close();
    use engine::framework::EventType;
    let events: Vec<(EventType, &str)> = decisions
        .events
        .iter()
        .filter(|e| e.object.name == "pg")
        .map(|e| (e.type_, e.reason.as_str()))
        .collect();
    assert_eq!(
        events,
        [(EventType::Normal, "Scheduled")],
        "{:?}",
        decisions.events
    );
}

/// A gang placed only by this session's binds is written with `awaiting_binds` (the daemon
/// leaves it to the session that sees the binds land); a gang placed on one bind short of
/// its minimum, and a gang whose pods run, are written as usual.
#[test]
fn a_status_written_while_binds_are_on_their_way_says_so() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "placed", 2));
    add_pods(&mut c, "placed", &["Pending", "Pending"]);
    c.pod_group(pod_group("ns", "short", 3));
    add_pods(&mut c, "short", &["Pending", "Pending", "Pending"]);
    c.pod_group(pod_group("ns", "running", 1));
    add_pods(&mut c, "running", &["Running"]);
    let mut ssn = c.session(&[&[NAME]]);
    // Committed, as the allocate action does: the tasks are Binding.
    let mut stmt = engine::framework::Statement::new();
    for key in ["ns/placed-0", "ns/placed-1", "ns/short-0"] {
        let (task, node) = (ssn.state.task_by_key(key), ssn.state.node_by_key("n1"));
        ssn.allocate(&mut stmt, task, node).expect("fits");
    }
    ssn.commit(stmt);
    let decisions = ssn.close();
    let awaiting = |name: &str| {
        decisions
            .pod_group_statuses
            .iter()
            .find(|u| u.pod_group == format!("ns/{name}"))
            .map(|u| (u.status.phase.as_str(), u.awaiting_binds))
    };
    assert_eq!(awaiting("placed"), Some(("Pending", true)));
    assert_eq!(awaiting("short"), Some(("Pending", false)));
    assert_eq!(awaiting("running"), Some(("Running", false)));
}

/// A running gang gets the Normal "Scheduled" event only when its status is written, as in
/// Volcano's `RecordJobStatusEvent`: one whose status stays the same gets none.
#[test]
fn a_running_gang_gets_a_scheduled_event_only_with_a_status_update() {
    let mut c = cluster();
    let mut same = pod_group("ns", "same", 1);
    same["status"] = json!({"phase": "Running", "running": 1, "conditions": [
        {"type": "Scheduled", "status": "True", "transitionID": "old",
         "reason": "tasks in gang are ready to be scheduled"}
    ]});
    c.pod_group(same);
    add_pods(&mut c, "same", &["Running"]);
    let mut moved = pod_group("ns", "moved", 1);
    moved["status"] = json!({"phase": "Inqueue"});
    c.pod_group(moved);
    add_pods(&mut c, "moved", &["Running"]);
    let ssn = c.session(&[&[NAME]]);
    let decisions = ssn.close();
    let scheduled = |name: &str| {
        decisions
            .events
            .iter()
            .filter(|e| e.object.name == name && e.reason == "Scheduled")
            .count()
    };
    assert_eq!(scheduled("same"), 0, "{:?}", decisions.events);
    assert_eq!(scheduled("moved"), 1, "{:?}", decisions.events);
    let written: Vec<&str> = decisions
        .pod_group_statuses
        .iter()
        .map(|u| u.pod_group.as_str())
        .collect();
    assert_eq!(written, ["ns/moved"]);
}

/// Every session renews a running gang's unchanged Scheduled condition with its own
/// transition ID and time, as Volcano does. The status comparison ignores both, so the
/// renewal is seen only on a status written for another reason: there it must be stamped.
#[test]
fn a_renewed_condition_is_stamped_on_a_written_status_only() {
    let mut c = cluster();
    let scheduled = json!({"type": "Scheduled", "status": "True", "transitionID": "old",
        "lastTransitionTime": "2020-01-01T00:00:00Z",
        "reason": "tasks in gang are ready to be scheduled"});
    let mut same = pod_group("ns", "same", 1);
    same["status"] = json!({"phase": "Running", "running": 1, "conditions": [scheduled]});
    c.pod_group(same);
    add_pods(&mut c, "same", &["Running"]);
    let mut grown = pod_group("ns", "grown", 1);
    grown["status"] = json!({"phase": "Running", "running": 1, "conditions": [scheduled]});
    c.pod_group(grown);
    add_pods(&mut c, "grown", &["Running", "Running"]);
    let decisions = c.session(&[&[NAME]]).close();
    let written: Vec<_> = decisions.pod_group_statuses.iter().collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].pod_group, "ns/grown");
    assert_eq!(written[0].status.running, 2);
    let cond = &written[0].status.conditions[0];
    assert_eq!(cond.type_, "Scheduled");
    assert_eq!(cond.transition_id, SESSION_UID);
    assert_eq!(cond.last_transition_time, Some(test_now()));
}

#[test]
fn close_hook_marks_ready_jobs_scheduled_and_replaces_the_old_condition() {
    let mut c = cluster();
    let mut pg = pod_group("ns", "pg", 1);
    pg["status"] = json!({"phase": "Running", "conditions": [
        {"type": "Scheduled", "status": "True", "transitionID": "old", "reason": "old reason"}
    ]});
    c.pod_group(pg);
    add_pods(&mut c, "pg", &["Running"]);
    c.pod_group(pod_group("ns", "empty", 1));
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = plugin(&mut ssn);
    p.on_session_close(&mut ssn.state);
    let j = ssn.state.job(ssn.state.job_by_key("ns/pg"));
    assert_eq!(j.status().conditions.len(), 1);
    let cond = &j.status().conditions[0];
    assert_eq!(cond.type_, "Scheduled");
    assert_eq!(cond.reason, "tasks in gang are ready to be scheduled");
    assert_eq!(cond.message, "");
    assert_eq!(cond.transition_id, SESSION_UID);
    // A job without tasks gets no condition.
    assert!(
        ssn.state
            .job(ssn.state.job_by_key("ns/empty"))
            .status()
            .conditions
            .is_empty()
    );
}

#[test]
fn close_through_the_session_writes_the_pod_group_status() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 2));
    add_pods(&mut c, "pg", &["Running", "Pending"]);
    let decisions = c.session(&[&[NAME]]).close();
    let update = decisions
        .pod_group_statuses
        .iter()
        .find(|u| u.pod_group == "ns/pg")
        .expect("status written");
    // One Running task and an Unschedulable condition of this session: phase Unknown.
    assert_eq!(update.status.phase, "Unknown");
    let cond = &update.status.conditions[0];
    assert_eq!(cond.type_, "Unschedulable");
    assert!(
        cond.message
            .starts_with("1/2 tasks in gang unschedulable: pod group is not ready")
    );
}

#[test]
fn g10_releasing_pods_keep_their_gang_slots() {
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 2));
    c.pod(pod(
        "ns",
        "pg-0",
        Some("pg"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    let mut leaving = pod(
        "ns",
        "pg-1",
        Some("pg"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    );
    leaving["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    c.pod(leaving);
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = plugin(&mut ssn);
    p.on_session_close(&mut ssn.state);
    assert!(
        ssn.state
            .job(ssn.state.job_by_key("ns/pg"))
            .status()
            .conditions
            .is_empty()
    );

    // Without a releasing pod the shortcut does not apply, even when the scheduled pods
    // (here one Running, one Failed) reach minMember.
    let mut c2 = cluster();
    c2.pod_group(pod_group("ns", "pg", 2));
    add_pods(&mut c2, "pg", &["Running", "Failed"]);
    let mut ssn = c2.session(&[&[NAME]]);
    let mut p = plugin(&mut ssn);
    p.on_session_close(&mut ssn.state);
    assert!(condition(&ssn, "ns/pg", "Unschedulable").is_some());

    // With a Pending task left to schedule, the job is reported.
    c.pod(pod(
        "ns",
        "pg-2",
        Some("pg"),
        "Pending",
        None,
        json!({"cpu": "1"}),
    ));
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = plugin(&mut ssn);
    p.on_session_close(&mut ssn.state);
    assert!(condition(&ssn, "ns/pg", "Unschedulable").is_some());
}

/// A job with a policy `workers`: sub-groups of 2 pods keyed by label `group`, at least 2
/// sub-groups; pods `w-<group>-<i>` and one `ps` pod outside the policy.
fn sub_group_cluster(min_member: i32, groups: &[(&str, usize)]) -> TestCluster {
    let mut c = cluster();
    let mut pg = pod_group("ns", "pg", min_member);
    pg["spec"]["subGroupPolicy"] = json!([{
        "name": "workers",
        "subGroupSize": 2,
        "minSubGroups": 2,
        "labelSelector": {"matchLabels": {"role": "worker"}},
        "matchLabelKeys": ["group"]
    }]);
    c.pod_group(pg);
    for (group, size) in groups {
        for i in 0..*size {
            let mut p = pod(
                "ns",
                &format!("w-{group}-{i}"),
                Some("pg"),
                "Pending",
                None,
                json!({"cpu": "1"}),
            );
            p["metadata"]["labels"] = json!({"role": "worker", "group": group});
            c.pod(p);
        }
    }
    // Has a `group` label but not the selected role: default sub-group.
    let mut ps = pod("ns", "ps", Some("pg"), "Pending", None, json!({"cpu": "1"}));
    ps["metadata"]["labels"] = json!({"role": "ps", "group": "z"});
    c.pod(ps);
    c
}

#[test]
fn sub_group_policy_counts_for_validity() {
    let mut ssn = sub_group_cluster(1, &[("a", 2)]).session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let result = p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg"));
    assert_eq!(
        result,
        Some(ValidateResult {
            reason: "NotEnoughPodsOfTask".to_string(),
            message: "Not enough valid subGroups of each task for gang-scheduling".to_string(),
        })
    );
    let mut ssn = sub_group_cluster(1, &[("a", 2), ("b", 1)]).session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    assert_eq!(p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg")), None);
}

#[test]
fn sub_group_policy_counts_for_readiness_and_pipelining() {
    let mut ssn = sub_group_cluster(3, &[("a", 2), ("b", 2)]).session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    let job = ssn.state.job_by_key("ns/pg");
    for key in ["ns/w-a-0", "ns/w-a-1", "ns/w-b-0"] {
        allocate(&mut ssn, key, "n1");
    }
    // minMember 3 is met, but only sub-group `a` has its 2 pods.
    assert!(ssn.state.job(job).is_ready());
    assert!(!p.job_ready(&ssn.state, job));
    assert_eq!(p.job_pipelined(&ssn.state, job), REJECT);
    pipeline(&mut ssn, "ns/w-b-1", "n1");
    assert!(!p.job_ready(&ssn.state, job));
    assert_eq!(p.job_pipelined(&ssn.state, job), PERMIT);
    let mut ssn = sub_group_cluster(3, &[("a", 2), ("b", 2)]).session(&[&[NAME]]);
    let p = plugin(&mut ssn);
    for key in ["ns/w-a-0", "ns/w-a-1", "ns/w-b-0", "ns/w-b-1"] {
        allocate(&mut ssn, key, "n1");
    }
    assert!(p.job_ready(&ssn.state, ssn.state.job_by_key("ns/pg")));
}

#[test]
fn match_values_need_the_selector_and_every_key() {
    let policy: apis::SubGroupPolicySpec = serde_json::from_value(json!({
            "name": "p",
            "labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]},
            "matchLabelKeys": ["rack", "slot"]
        }))
        .expect("policy");
    let no_keys: apis::SubGroupPolicySpec =
        serde_json::from_value(json!({"name": "q"})).expect("policy");
    let mut c = cluster();
    c.pod_group(pod_group("ns", "pg", 1));
    for (name, labels) in [
        ("full", json!({"role": "worker", "rack": "r1", "slot": "3"})),
        (
            "empty-value",
            json!({"role": "worker", "rack": "r1", "slot": ""}),
        ),
        ("missing", json!({"role": "worker", "rack": "r1"})),
        (
            "other-role",
            json!({"role": "ps", "rack": "r1", "slot": "3"}),
        ),
    ] {
        let mut p = pod("ns", name, Some("pg"), "Pending", None, json!({"cpu": "1"}));
        p["metadata"]["labels"] = labels;
        c.pod(p);
    }
    let ssn = c.session(&[&[NAME]]);
    let s = &ssn.state;
    let task = |name: &str| {
        let pod = &s.task(s.task_by_key(&format!("ns/{name}"))).spec.pod;
        pod.metadata.labels.clone().unwrap_or_default()
    };
    let match_values = |p: &apis::SubGroupPolicySpec,
                        labels: std::collections::BTreeMap<String, String>| {
        engine::model::sub_job::match_values(p, &labels)
            .map(|v| v.into_iter().map(String::from).collect::<Vec<_>>())
    };
    assert_eq!(
        match_values(&policy, task("full")),
        Some(vec!["r1".to_string(), "3".to_string()])
    );
    assert_eq!(match_values(&policy, task("empty-value")), None);
    assert_eq!(match_values(&policy, task("missing")), None);
    assert_eq!(match_values(&policy, task("other-role")), None);
    // Without matchLabelKeys a policy forms no sub-group.
    assert_eq!(match_values(&no_keys, task("full")), None);
}
