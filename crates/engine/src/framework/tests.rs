//! Framework tests with small configurable plugins: tier dispatch (spec/framework.md §3.3,
//! §8.2 items 5–8), the Statement (§4) and session close (§2.7).

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::json;

use crate::conf::{ArgValue, Arguments, KnownNames, parse};
use crate::framework::{
    ExtensionPoints as EP, Plugin, PluginRegistry, Session, SessionOptions, SessionState, Statement,
};
use crate::model::{JobId, NodeId, TaskId, TaskStatus};
use crate::state::{ClusterState, StateOptions};

/// A plugin whose answers come from its arguments:
/// `victims: "0,2"` (task indices, or "" for an empty answer), `vote: n`, `starving: bool`,
/// `reverse: bool` (job order by reverse uid).
struct Fake {
    points: EP,
    victims: Option<Vec<TaskId>>,
    vote: i64,
    starving: bool,
    reverse: bool,
}

fn fake(args: &Arguments) -> Box<dyn Plugin> {
    let mut points = EP::NONE;
    let victims = match args.get("victims") {
        Some(ArgValue::Str(s)) => {
            points = points | EP::PREEMPTABLE;
            Some(
                s.split(',')
                    .filter(|x| !x.is_empty())
                    .filter_map(|x| x.parse().ok())
                    .map(TaskId)
                    .collect(),
            )
        }
        _ => None,
    };
    let mut vote = 0;
    if args.get_int("vote", &mut vote) == Ok(true) {
        points = points | EP::JOB_PIPELINED;
    }
    let mut starving = false;
    if args.get_bool("starving", &mut starving) == Ok(true) {
        points = points | EP::JOB_STARVING;
    }
    let mut reverse = false;
    if args.get_bool("reverse", &mut reverse) == Ok(true) {
        points = points | EP::JOB_ORDER;
    }
    Box::new(Fake {
        points,
        victims,
        vote,
        starving,
        reverse,
    })
}

impl Plugin for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn extension_points(&self) -> EP {
        self.points
    }
    fn preemptable(&self, _: &SessionState, _: TaskId, _: &[TaskId]) -> (Vec<TaskId>, i32) {
        (self.victims.clone().unwrap_or_default(), 1)
    }
    fn job_pipelined(&self, _: &SessionState, _: JobId) -> i32 {
        self.vote as i32
    }
    fn job_starving(&self, _: &SessionState, _: JobId) -> bool {
        self.starving
    }
    fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        if self.reverse {
            ssn.job(r).spec.uid.cmp(&ssn.job(l).spec.uid)
        } else {
            Ordering::Equal
        }
    }
}

fn registry() -> PluginRegistry {
    let mut r = PluginRegistry::new();
    for name in ["a", "b", "c", "d"] {
        r.register(name, fake);
    }
    r
}

fn cluster() -> ClusterState {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_queue(
        serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": {"weight": 1}}))
            .expect("queue"),
    );
    s.upsert_node(
        serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .expect("node"),
    );
    for pg in ["pg-a", "pg-b"] {
        s.upsert_pod_group(
            serde_json::from_value(json!({"metadata": {"name": pg, "namespace": "ns"}, "spec": {"minMember": 1, "queue": "default"}}))
                .expect("pg"),
        );
    }
    for (i, pg) in ["pg-a", "pg-a", "pg-b"].iter().enumerate() {
        s.upsert_pod(
            serde_json::from_value(json!({
                "metadata": {"name": format!("p{i}"), "namespace": "ns", "uid": format!("u{i}"),
                             "annotations": {"scheduling.k8s.io/group-name": pg}},
                "spec": {"schedulerName": "volcano-rs", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": "Pending"}
            }))
            .expect("pod"),
        );
    }
    s
}

fn open(conf: &str) -> Session {
    let known = KnownNames {
        actions: &["enqueue", "allocate", "backfill"],
        plugins: &["a", "b", "c", "d"],
        strict: true,
        check_arguments: None,
    };
    let conf = parse(conf, &known).expect("conf").conf;
    Session::open(
        &cluster().snapshot(),
        Arc::new(conf),
        &registry(),
        SessionOptions::default(),
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        "s1".into(),
    )
}

fn tiers(t: &[&[&str]]) -> String {
    let mut s = String::from("actions: \"allocate\"\ntiers:\n");
    for tier in t {
        s.push_str("- plugins:\n");
        for p in *tier {
            s.push_str(&format!("  - {p}\n"));
        }
    }
    s
}

#[test]
fn empty_intersection_reseeds_from_next_plugin() {
    let ssn = open(&tiers(&[&[
        "{name: a, arguments: {victims: \"0\"}}",
        "{name: b, arguments: {victims: \"1\"}}",
        "{name: c, arguments: {victims: \"2\"}}",
    ]]));
    assert_eq!(
        ssn.preemptable(TaskId(2), &[TaskId(0), TaskId(1)]),
        vec![TaskId(2)]
    );
}

#[test]
fn empty_answer_abandons_the_tier_only() {
    let ssn = open(&tiers(&[
        &[
            "{name: a, arguments: {victims: \"0,1\"}}",
            "{name: b, arguments: {victims: \"\"}}",
            "{name: c, arguments: {victims: \"1\"}}",
        ],
        &["{name: d, arguments: {victims: \"2\"}}"],
    ]));
    assert_eq!(ssn.preemptable(TaskId(0), &[]), vec![TaskId(2)]);
}

#[test]
fn intersection_keeps_first_order_and_first_deciding_tier_wins() {
    let ssn = open(&tiers(&[
        &[
            "{name: a, arguments: {victims: \"2,1,0\"}}",
            "{name: b, arguments: {victims: \"0,1\"}}",
        ],
        &["{name: c, arguments: {victims: \"2\"}}"],
    ]));
    assert_eq!(ssn.preemptable(TaskId(0), &[]), vec![TaskId(1), TaskId(0)]);
}

#[test]
fn no_participant_means_no_victims_and_gate_excludes_plugin() {
    let ssn = open(&tiers(&[&[
        "{name: a, enablePreemptable: false, arguments: {victims: \"0\"}}",
        "{name: b}",
    ]]));
    assert!(ssn.preemptable(TaskId(0), &[]).is_empty());
}

#[test]
fn pipelined_vote_is_tier_aware() {
    // A reject in the deciding tier rejects.
    let ssn = open(&tiers(&[&[
        "{name: a, arguments: {vote: 1}}",
        "{name: b, arguments: {vote: -1}}",
    ]]));
    assert!(!ssn.job_pipelined(JobId(0)));
    // A permit in tier 1 decides; tier 2's reject is never consulted.
    let ssn = open(&tiers(&[
        &["{name: a, arguments: {vote: 1}}"],
        &["{name: b, arguments: {vote: -1}}"],
    ]));
    assert!(ssn.job_pipelined(JobId(0)));
    // Abstentions only: permitted.
    let ssn = open(&tiers(&[
        &["{name: a, arguments: {vote: 0}}"],
        &["{name: b}"],
    ]));
    assert!(ssn.job_pipelined(JobId(0)));
    // Tier 1 abstains, tier 2 rejects.
    let ssn = open(&tiers(&[
        &["{name: a, arguments: {vote: 0}}"],
        &["{name: b, arguments: {vote: -1}}"],
    ]));
    assert!(!ssn.job_pipelined(JobId(0)));
}

#[test]
fn starving_without_registrant_is_false_and_first_tier_decides() {
    let ssn = open(&tiers(&[&["{name: a}"]]));
    assert!(!ssn.job_starving(JobId(0)));
    let ssn = open(&tiers(&[
        &["{name: a, arguments: {starving: true}}"],
        &["{name: b, arguments: {starving: false}}"],
    ]));
    assert!(ssn.job_starving(JobId(0)));
    let ssn = open(&tiers(&[&[
        "{name: a, arguments: {starving: true}}",
        "{name: b, arguments: {starving: false}}",
    ]]));
    assert!(!ssn.job_starving(JobId(0)));
}

#[test]
fn job_order_uses_plugins_then_creation_then_uid() {
    let ssn = open(&tiers(&[&["{name: a}"]]));
    assert!(
        ssn.job_order(JobId(0), JobId(1)),
        "ns/pg-a before ns/pg-b by uid"
    );
    let ssn = open(&tiers(&[&["{name: a, arguments: {reverse: true}}"]]));
    assert!(ssn.job_order(JobId(1), JobId(0)));
    let ssn = open(&tiers(&[&[
        "{name: a, enableJobOrder: false, arguments: {reverse: true}}",
    ]]));
    assert!(
        ssn.job_order(JobId(0), JobId(1)),
        "gate off: fallback order"
    );
}

#[test]
fn statement_discard_restores_and_remembers_commit_binds() {
    let mut ssn = open(&tiers(&[&["{name: a}"]]));
    let n = NodeId(0);
    let mut stmt = Statement::new();
    ssn.allocate(&mut stmt, TaskId(0), n).expect("allocate");
    ssn.pipeline(&mut stmt, TaskId(1), n, false)
        .expect("pipeline");
    assert_eq!(ssn.state.node(n).idle.milli_cpu, 3000.0);
    assert_eq!(ssn.state.node(n).pipelined.milli_cpu, 1000.0);
    assert_eq!(ssn.state.job(JobId(0)).ready_task_num(), 1);
    assert_eq!(ssn.state.job(JobId(0)).waiting_task_num(), 1);
    ssn.discard(stmt);
    assert_eq!(ssn.state.node(n).idle.milli_cpu, 4000.0);
    assert_eq!(ssn.state.node(n).pipelined.milli_cpu, 0.0);
    // The touch log: two placements, then the discard's two removals, which the class
    // indexes must not take for placements (a node refused before may fit again).
    let kinds: Vec<(usize, bool)> = (ssn.state.search_touches().iter())
        .map(|t| (t.node_index(), t.only_added()))
        .collect();
    assert_eq!(kinds, [(0, true), (0, true), (0, false), (0, false)]);
    let t0 = ssn.state.task(TaskId(0));
    assert_eq!(t0.status, TaskStatus::Pending);
    assert_eq!(
        t0.last_transaction.as_ref().map(|c| c.status),
        Some(TaskStatus::Allocated)
    );
    assert_eq!(ssn.state.job(JobId(0)).ready_task_num(), 0);
    let (reason, msg, _) = ssn.state.task_scheduling_reason(TaskId(0));
    assert_eq!(reason, "Schedulable");
    assert_eq!(
        msg,
        "Pod ns/p0 can possibly be assigned to n1, once minAvailable is satisfied"
    );

    let mut stmt = Statement::new();
    ssn.allocate(&mut stmt, TaskId(2), n).expect("allocate");
    ssn.commit(stmt);
    assert_eq!(ssn.state.task(TaskId(2)).status, TaskStatus::Binding);
    let decisions = ssn.close();
    assert_eq!(decisions.binds.len(), 1);
    assert_eq!(decisions.binds[0].pod, "ns/p2");
    assert_eq!(decisions.binds[0].node, "n1");
}

#[test]
fn evict_and_undo() {
    let mut s = cluster();
    s.upsert_pod(
        serde_json::from_value(json!({
            "metadata": {"name": "run", "namespace": "ns", "uid": "urun", "annotations": {"scheduling.k8s.io/group-name": "pg-b"}},
            "spec": {"schedulerName": "volcano-rs", "nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
            "status": {"phase": "Running"}
        }))
        .expect("pod"),
    );
    let known = KnownNames {
        actions: &["allocate"],
        plugins: &["a"],
        strict: true,
        check_arguments: None,
    };
    let conf = parse(&tiers(&[&["{name: a}"]]), &known).expect("conf").conf;
    let mut ssn = Session::open(
        &s.snapshot(),
        Arc::new(conf),
        &registry(),
        SessionOptions::default(),
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        "s".into(),
    );
    let victim = ssn
        .state
        .tasks
        .iter()
        .position(|t| t.spec.name == "run")
        .map(TaskId::from_index)
        .expect("victim");
    let n = NodeId(0);
    assert_eq!(ssn.state.node(n).idle.milli_cpu, 2000.0);
    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, victim, "test");
    assert_eq!(ssn.state.task(victim).status, TaskStatus::Releasing);
    assert_eq!(ssn.state.node(n).releasing.milli_cpu, 2000.0);
    assert_eq!(ssn.state.node(n).future_idle().milli_cpu, 4000.0);
    ssn.discard(stmt);
    assert_eq!(ssn.state.task(victim).status, TaskStatus::Running);
    assert_eq!(ssn.state.node(n).releasing.milli_cpu, 0.0);
    assert_eq!(ssn.state.node(n).idle.milli_cpu, 2000.0);
}

#[test]
fn close_writes_pod_group_status_once_and_pod_conditions_only_when_changed() {
    let ssn = open(&tiers(&[&["{name: a}"]]));
    let d = ssn.close();
    // Both PodGroups had no status: phase Pending is written.
    assert_eq!(d.pod_group_statuses.len(), 2);
    assert!(
        d.pod_group_statuses
            .iter()
            .all(|u| u.status.phase == "Pending")
    );
    // Pending tasks get PodScheduled=False with the job-level reason.
    assert_eq!(d.pod_conditions.len(), 3);
    assert!(d.pod_conditions.iter().all(|c| c.reason == "Unschedulable"));
}

#[test]
fn duplicate_plugin_names_answer_at_each_occurrence() {
    // Two occurrences of `a` in one tier with different victims: the last instance answers both
    // times, so the intersection is its own list.
    let ssn = open(&tiers(&[&[
        "{name: a, arguments: {victims: \"0\"}}",
        "{name: a, arguments: {victims: \"1\"}}",
    ]]));
    assert_eq!(ssn.preemptable(TaskId(0), &[]), vec![TaskId(1)]);
}

#[test]
fn pod_groups_of_other_schedulers_are_not_written() {
    let mut s = cluster();
    s.upsert_pod_group(
        serde_json::from_value(json!({"metadata": {"name": "theirs", "namespace": "ns"}, "spec": {"minMember": 1, "queue": "other-q"}}))
            .expect("pg"),
    );
    s.upsert_queue(
        serde_json::from_value(json!({"metadata": {"name": "other-q"}, "spec": {"weight": 1}}))
            .expect("queue"),
    );
    // A bound pod of another scheduler in that PodGroup: visible (it occupies its node), not ours.
    s.upsert_pod(
        serde_json::from_value(json!({
            "metadata": {"name": "x", "namespace": "ns", "uid": "ux", "annotations": {"scheduling.k8s.io/group-name": "theirs"}},
            "spec": {"schedulerName": "someone-else", "nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"}
        }))
        .expect("pod"),
    );
    let known = KnownNames {
        actions: &["allocate"],
        plugins: &["a"],
        strict: true,
        check_arguments: None,
    };
    let conf = parse(&tiers(&[&["{name: a}"]]), &known).expect("conf").conf;
    let ssn = Session::open(
        &s.snapshot(),
        Arc::new(conf),
        &registry(),
        SessionOptions::default(),
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        "s".into(),
    );
    let d = ssn.close();
    assert!(
        d.pod_group_statuses
            .iter()
            .all(|u| u.pod_group != "ns/theirs"),
        "{:?}",
        d.pod_group_statuses
    );
    assert!(
        d.pod_group_statuses
            .iter()
            .any(|u| u.pod_group == "ns/pg-a")
    );
    assert!(d.queue_allocations.iter().all(|q| q.queue != "other-q"));
}

#[test]
fn standalone_pod_job_reserves_its_own_request_as_minimum() {
    let mut s = cluster();
    s.upsert_pod(
        serde_json::from_value(json!({
            "metadata": {"name": "lone", "namespace": "ns", "uid": "ulone"},
            "spec": {"schedulerName": "volcano-rs", "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]},
            "status": {"phase": "Pending"}
        }))
        .expect("pod"),
    );
    let ssn = open_on(&s);
    let job = ssn
        .state
        .jobs
        .iter()
        .find(|j| j.spec.implicit)
        .expect("implicit job");
    // As the PodGroup Volcano's controller would create for it (kubernetes.md §4.6).
    assert_eq!(
        job.spec.min_resources.as_ref().map(|r| r.milli_cpu),
        Some(3000.0)
    );
    assert_eq!(job.spec.min_available, 1);
}

fn open_on(s: &ClusterState) -> Session {
    let known = KnownNames {
        actions: &["allocate"],
        plugins: &["a"],
        strict: true,
        check_arguments: None,
    };
    let conf = parse(&tiers(&[&["{name: a}"]]), &known).expect("conf").conf;
    Session::open(
        &s.snapshot(),
        Arc::new(conf),
        &registry(),
        SessionOptions::default(),
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        "s".into(),
    )
}
