use serde_json::json;

use super::testkit::*;
use super::*;
use crate::model::{FitError, FitErrors, FitStatus, StatusCode};

/// Queue q1 holds jobs `a` (priority 10) and `b` (priority 10), q2 job `c` (priority 10);
/// all pods run on n1. The preemptor is `p-x-0` of job `p` in q1.
fn victims_cluster() -> Cluster {
    let mut c = Cluster::new();
    c.queue("q1", json!({"deserved": {"cpu": "4"}}), true)
        .queue("q2", json!({"deserved": {"cpu": "4"}}), true);
    c.priority_class("ten", 10).priority_class("five", 5);
    c.node("n1", "16", json!({}));
    c.job("a", "q1", 1, "ten").job("b", "q1", 1, "ten");
    c.job("c", "q2", 1, "ten").job("low", "q1", 1, "five");
    c.job("p", "q1", 1, "ten");
    c.pod("a-x-0", "a", "1", Some("n1"));
    c.pod("a-x-1", "a", "1", Some("n1"));
    c.pod("b-x-0", "b", "1", Some("n1"));
    c.pod("c-x-0", "c", "4", Some("n1"));
    c.pod("low-x-0", "low", "1", Some("n1"));
    // A pod whose PodGroup does not exist: on the node, without a job.
    c.pod("orphan-x-0", "missing", "1", Some("n1"));
    c.pod("p-x-0", "p", "1", None);
    c
}

fn pop_order(ssn: &Session, victims: &[&str]) -> Vec<String> {
    let p = task(ssn, "p-x-0");
    let ids: Vec<TaskId> = victims.iter().map(|v| task(ssn, v)).collect();
    let mut heap = ssn.build_victims_priority_queue(&ids, p);
    let mut order = Vec::new();
    while let Some(t) = heap.pop(|a, b| ssn.victim_before(a, b, p)) {
        order.push(ssn.state.task(t).spec.name.clone());
    }
    order
}

#[test]
fn same_job_victims_go_in_reverse_task_order() {
    let ssn = victims_cluster().session(&conf("preempt"));
    assert_eq!(pop_order(&ssn, &["a-x-0", "a-x-1"]), ["a-x-1", "a-x-0"]);
}

#[test]
fn a_task_without_a_job_goes_first() {
    let ssn = victims_cluster().session(&conf("preempt"));
    assert_eq!(ssn.state.task(task(&ssn, "orphan-x-0")).job, None);
    assert_eq!(
        pop_order(&ssn, &["a-x-0", "orphan-x-0"]),
        ["orphan-x-0", "a-x-0"]
    );
}

#[test]
fn the_job_scheduled_later_gives_way_first() {
    // prio orders `a` (10) before `low` (5): `low` would be scheduled later.
    let ssn = victims_cluster().session(&conf("preempt"));
    assert_eq!(pop_order(&ssn, &["a-x-0", "low-x-0"]), ["low-x-0", "a-x-0"]);
}

#[test]
fn equal_jobs_fall_back_to_reverse_task_order() {
    // §8.2 item 17: `a` and `b` tie in every plugin, so the reverse task order decides, not
    // the jobs: the highest pod index (a-x-1) first, then among index 0 the pod created
    // last (b-x-0).
    let ssn = victims_cluster().session(&conf("preempt"));
    assert_eq!(
        pop_order(&ssn, &["a-x-0", "b-x-0", "a-x-1"]),
        ["a-x-1", "b-x-0", "a-x-0"]
    );
}

#[test]
fn different_queues_follow_the_victim_queue_order() {
    // No victim queue order plugin: the reverse of the queue order. q1 holds 4 of its 4
    // deserved cpu (share 1), q2 4 of 4 too; shares tie, so the queue order falls back to the
    // name (q1 first) and q2, served last, gives way first.
    let ssn = victims_cluster().session(&conf("preempt"));
    assert!(ssn.queue_order(queue(&ssn, "q1"), queue(&ssn, "q2")));
    assert_eq!(pop_order(&ssn, &["a-x-0", "c-x-0"]), ["c-x-0", "a-x-0"]);
    // With q2 less served than q1, q1 gives way first.
    let mut c = victims_cluster();
    c.queue("q2", json!({"deserved": {"cpu": "8"}}), true);
    let ssn = c.session(&conf("preempt"));
    assert_eq!(pop_order(&ssn, &["c-x-0", "a-x-0"]), ["a-x-0", "c-x-0"]);
}

#[test]
fn preempt_predicate_lets_unschedulable_through_but_not_unresolvable() {
    let mut c = victims_cluster();
    c.node("n2", "4", json!({"test/unschedulable": "true"}))
        .node("n3", "4", json!({"test/unresolvable": "true"}));
    let ssn = c.session(&conf("preempt"));
    let p = task(&ssn, "p-x-0");
    assert!(ssn.predicate(p, node(&ssn, "n2")).is_err());
    assert!(
        ssn.predicate_for_preempt_action(p, node(&ssn, "n2"))
            .is_ok()
    );
    assert!(
        ssn.predicate_for_preempt_action(p, node(&ssn, "n3"))
            .is_err()
    );
    assert!(
        ssn.predicate_for_preempt_action(p, node(&ssn, "n1"))
            .is_ok()
    );
}

#[test]
fn nodes_found_unresolvable_earlier_are_left_out() {
    let mut c = victims_cluster();
    c.node("n2", "4", json!({})).node("n3", "4", json!({}));
    let mut ssn = c.session(&conf("preempt"));
    let p = task(&ssn, "p-x-0");
    let all: Vec<NodeId> = ssn.state.node_ids().collect();
    assert_eq!(ssn.filter_out_unschedulable_and_unresolvable_nodes(p), all);

    let mut fe = FitErrors::default();
    let status = |code| FitError::new(FitStatus::new(code, "x", "test"));
    fe.set_node_error(
        node(&ssn, "n2"),
        &status(StatusCode::UnschedulableAndUnresolvable),
    );
    fe.set_node_error(node(&ssn, "n3"), &status(StatusCode::Unschedulable));
    let job = ssn.state.job_of(p).expect("job");
    ssn.state.record_task_fit_errors(job, p, fe);
    assert_eq!(
        ssn.filter_out_unschedulable_and_unresolvable_nodes(p),
        vec![node(&ssn, "n1"), node(&ssn, "n3")]
    );
}

#[test]
fn a_reverted_eviction_leaves_no_trace() {
    let mut c = victims_cluster();
    c.pod_with(
        "b-x-1",
        "b",
        "2",
        Some("n1"),
        json!({"status": {"phase": "Pending"}}),
    );
    let mut ssn = c.session(&conf("preempt"));
    let (bound, running) = (task(&ssn, "b-x-1"), task(&ssn, "b-x-0"));
    assert_eq!(ssn.state.task(bound).status, TaskStatus::Bound);
    let n = node(&ssn, "n1");
    let idle = ssn.state.node(n).idle.milli_cpu;
    let job = ssn.state.job_of(bound).expect("job");
    let ready = ssn.state.job(job).ready_task_num();

    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, bound, "preempt");
    ssn.evict(&mut stmt, running, "preempt");
    assert_eq!(ssn.state.node(n).releasing.milli_cpu, 3000.0);
    assert!(ssn.revert_eviction(&mut stmt, bound, TaskStatus::Bound));
    assert!(!ssn.revert_eviction(&mut stmt, bound, TaskStatus::Bound));
    assert_eq!(ssn.state.task(bound).status, TaskStatus::Bound);
    assert_eq!(stmt.ops.len(), 1);
    assert_eq!(stmt.ops[0].task, running);
    assert_eq!(ssn.state.node(n).releasing.milli_cpu, 1000.0);

    ssn.discard(stmt);
    assert_eq!(ssn.state.node(n).idle.milli_cpu, idle);
    assert_eq!(ssn.state.node(n).releasing.milli_cpu, 0.0);
    assert_eq!(ssn.state.job(job).ready_task_num(), ready);
    assert!(ssn.state.decisions().evictions.is_empty());
}

#[test]
fn victims_are_kept_once_and_only_among_the_candidates() {
    let ids = |v: &[u32]| v.iter().map(|&i| TaskId(i)).collect::<Vec<_>>();
    assert_eq!(
        sanitize_victims(ids(&[3, 1, 3, 9, 2]), &ids(&[1, 2, 3])),
        ids(&[3, 1, 2])
    );
}

#[test]
fn victims_cover_counts_future_idle() {
    // n1: 16 cpu, 9 held; the preemptor asks for 1.
    let mut c = victims_cluster();
    c.pod("p-x-1", "p", "8", None);
    let ssn = c.session(&conf("preempt"));
    let (p, big) = (task(&ssn, "p-x-0"), task(&ssn, "p-x-1"));
    let n = node(&ssn, "n1");
    assert!(victims_cover(&ssn, p, n, &[]));
    assert!(!victims_cover(&ssn, big, n, &[]));
    assert!(victims_cover(&ssn, big, n, &[task(&ssn, "a-x-0")]));
}

/// A configuration of scripted victim answers, one list per tier.
fn scripted_tiers(tiers: &[&[(&str, &str)]]) -> String {
    let mut s = String::from("actions: \"preempt\"\ntiers:\n");
    for tier in tiers {
        s.push_str("- plugins:\n");
        for (name, victims) in *tier {
            s.push_str(&format!(
                "  - name: {name}\n    arguments: {{victims: \"{victims}\"}}\n"
            ));
        }
    }
    s
}

fn preemptable(ssn: &Session) -> Vec<String> {
    let p = task(ssn, "p-x-0");
    ssn.preemptable(p, &[])
        .into_iter()
        .map(|t| ssn.state.task(t).spec.name.clone())
        .collect()
}

#[test]
fn spec_f1_empty_intersection_is_reseeded() {
    // plugins-core §12.0 F-1: A {t1}, B {t2}, C {t2, t3} in one tier ⇒ {t2, t3}.
    let conf = scripted_tiers(&[&[("s1", "a-x-0"), ("s2", "a-x-1"), ("s3", "a-x-1,b-x-0")]]);
    let ssn = victims_cluster().session(&conf);
    assert_eq!(preemptable(&ssn), ["a-x-1", "b-x-0"]);
}

#[test]
fn spec_f2_empty_answer_leaves_the_tier_undecided() {
    // F-2: A {t1, t2}, B {} ⇒ undecided; a next tier with {t2} decides; none ⇒ empty.
    let conf = scripted_tiers(&[&[("s1", "a-x-0,a-x-1"), ("s2", "")], &[("s3", "a-x-1")]]);
    let ssn = victims_cluster().session(&conf);
    assert_eq!(preemptable(&ssn), ["a-x-1"]);
    let conf = scripted_tiers(&[&[("s1", "a-x-0,a-x-1"), ("s2", "")]]);
    let ssn = victims_cluster().session(&conf);
    assert!(preemptable(&ssn).is_empty());
}

#[test]
fn spec_f4_one_registrant_saying_not_starving_wins_its_tier() {
    // F-4 in shape: two starving registrants in the first tier, one says no ⇒ not starving,
    // so preempt does nothing, whatever the other says or a later tier would say.
    let conf = "actions: \"preempt\"\ntiers:\n- plugins:\n  - name: prio\n  - name: s1\n    arguments: {starving: true}\n  - name: s2\n    arguments: {starving: false}\n- plugins:\n  - name: s3\n    arguments: {starving: true}\n";
    let mut c = victims_cluster();
    // n1 full: with the job starving, low-x-0 would be evicted.
    c.node("n1", "9", json!({}));
    let mut ssn = c.session(conf);
    let job = ssn.state.job_of(task(&ssn, "p-x-0")).expect("job");
    assert!(!ssn.job_starving(job));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
}
