use serde_json::json;

use crate::actions::victims::testkit::*;
use crate::model::TaskStatus;

/// One node of 4 cpu full of low-priority work, a pending high-priority pod.
fn priority_cluster() -> Cluster {
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "4", json!({}));
    c.job("low", "q1", 1, "low");
    c.pod("low-a-0", "low", "2", Some("n1"));
    c.pod("low-a-1", "low", "2", Some("n1"));
    c.job("high", "q1", 1, "high");
    c.pod("high-a-0", "high", "2", None);
    c
}

#[test]
fn higher_priority_job_evicts_one_victim_and_is_pipelined() {
    let mut ssn = priority_cluster().session(&conf("preempt"));
    run(&mut ssn, "preempt");
    // Same job: reverse task order, so the later pod gives way first.
    assert_eq!(
        evictions(&ssn),
        vec![("low-a-1".to_string(), "preempt".to_string())]
    );
    assert_eq!(status(&ssn, "low-a-1"), TaskStatus::Releasing);
    assert_eq!(status(&ssn, "low-a-0"), TaskStatus::Running);
    assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
    assert!(ssn.state.task(task(&ssn, "high-a-0")).eviction_occurred);
}

#[test]
fn no_starving_registrant_means_no_preemption() {
    // §8.2 item 7: without a JobStarving registrant nothing is starving.
    let conf = "actions: \"preempt\"\ntiers:\n- plugins:\n  - name: prio\n  - name: quota\n";
    let mut ssn = priority_cluster().session(conf);
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
    assert_eq!(status(&ssn, "high-a-0"), TaskStatus::Pending);
}

#[test]
fn job_no_longer_starving_stops_preempting() {
    // minMember 1 with two pending pods: once one is pipelined the job is not starving.
    let mut c = priority_cluster();
    c.pod("high-a-1", "high", "2", None);
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert_eq!(evictions(&ssn).len(), 1);
    assert_eq!(status(&ssn, "high-a-1"), TaskStatus::Pending);
}

#[test]
fn gang_that_cannot_be_pipelined_evicts_nothing() {
    // The high job needs 3 pods of 2 cpu on a 4-cpu node: two victims make room for two
    // pods only, the job is not pipelined, and the statement is discarded.
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "4", json!({}));
    c.job("low", "q1", 1, "low");
    c.pod("low-a-0", "low", "2", Some("n1"));
    c.pod("low-a-1", "low", "2", Some("n1"));
    c.job("high", "q1", 3, "high");
    for i in 0..3 {
        c.pod(&format!("high-a-{i}"), "high", "2", None);
    }
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
    for name in ["low-a-0", "low-a-1"] {
        assert_eq!(status(&ssn, name), TaskStatus::Running);
    }
    for i in 0..3 {
        assert_eq!(status(&ssn, &format!("high-a-{i}")), TaskStatus::Pending);
    }
    let node = ssn.state.node(node(&ssn, "n1"));
    assert_eq!(node.idle.milli_cpu, 0.0);
    assert_eq!(node.pipelined.milli_cpu, 0.0);
    assert_eq!(node.releasing.milli_cpu, 0.0);
}

#[test]
fn no_eviction_when_a_predicate_still_fails_after_it() {
    // `test/unschedulable` is Unschedulable: the node stays a candidate, but evicting the
    // victim never makes the pod fit, so nothing is evicted.
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "4", json!({"test/unschedulable": "true"}));
    c.job("low", "q1", 1, "low");
    c.pod("low-a-0", "low", "4", Some("n1"));
    c.job("high", "q1", 1, "high");
    c.pod("high-a-0", "high", "2", None);
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
    assert_eq!(status(&ssn, "low-a-0"), TaskStatus::Running);
}

#[test]
fn eviction_that_fixes_a_predicate_is_made() {
    // `test/max-pods: 2`: the node is full by pod count, not by cpu.
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "8", json!({"test/max-pods": "2"}));
    c.job("low", "q1", 1, "low");
    c.pod("low-a-0", "low", "1", Some("n1"));
    c.pod("low-a-1", "low", "1", Some("n1"));
    c.job("high", "q1", 1, "high");
    c.pod("high-a-0", "high", "1", None);
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert_eq!(evictions(&ssn).len(), 1);
    assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
}

#[test]
fn unneeded_victims_are_spared() {
    // Victim order: the 1-cpu pod (created last) first, then the 3-cpu pod. The preemptor
    // needs 3 cpu: Volcano evicts both; the 1-cpu pod is not needed and is spared.
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "4", json!({}));
    c.job("big", "q1", 1, "low");
    c.pod("big-a-0", "big", "3", Some("n1"));
    c.job("small", "q1", 1, "low");
    c.pod("small-a-0", "small", "1", Some("n1"));
    c.job("high", "q1", 1, "high");
    c.pod("high-a-0", "high", "3", None);
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert_eq!(
        evictions(&ssn),
        vec![("big-a-0".to_string(), "preempt".to_string())]
    );
    assert_eq!(status(&ssn, "small-a-0"), TaskStatus::Running);
    assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
    let n = ssn.state.node(node(&ssn, "n1"));
    assert_eq!(n.releasing.milli_cpu, 3000.0);
    assert_eq!(n.idle.milli_cpu, 0.0);
}

#[test]
fn a_node_that_needs_no_eviction_is_preferred() {
    // n1 (scanned first) is full of victims, n2 has room: nothing is evicted.
    let mut c = priority_cluster();
    c.node("n2", "2", json!({}));
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
    assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n2"));
    assert!(!ssn.state.task(task(&ssn, "high-a-0")).eviction_occurred);
}

#[test]
fn preemption_policy_never_does_not_preempt() {
    let mut c = priority_cluster();
    c.pod_with(
        "high-a-1",
        "high",
        "2",
        None,
        json!({"spec": {"preemptionPolicy": "Never"}}),
    );
    // Only the Never pod is pending in its job.
    c.state.delete_pod("ns", "high-a-0");
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
}

/// A preemptor nominated to n1, where a lower-priority pod is terminating.
fn nominated_cluster(condition_reason: &str, annotations: serde_json::Value) -> Cluster {
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "4", annotations);
    c.job("low", "q1", 1, "low");
    c.pod_with(
            "low-a-0",
            "low",
            "2",
            Some("n1"),
            json!({
                "metadata": {"deletionTimestamp": "2024-01-01T00:01:00Z"},
                "spec": {"priority": 10},
                "status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": condition_reason}]}
            }),
        );
    c.pod("low-a-1", "low", "2", Some("n1"));
    c.job("high", "q1", 1, "high");
    c.pod_with(
        "high-a-0",
        "high",
        "4",
        None,
        json!({"spec": {"priority": 100}, "status": {"nominatedNodeName": "n1"}}),
    );
    c
}

#[test]
fn waits_for_a_pod_preempted_on_its_nominated_node() {
    // n1 fails the predicates (pod count), and a lower-priority pod preempted there is
    // still terminating: the preemptor waits instead of evicting more.
    let c = nominated_cluster("PreemptionByScheduler", json!({"test/max-pods": "1"}));
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
    assert_eq!(status(&ssn, "high-a-0"), TaskStatus::Pending);
}

#[test]
fn preempts_again_when_the_terminating_pod_was_not_preempted() {
    let c = nominated_cluster("DeletionByTaintManager", json!({"test/max-pods": "1"}));
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert_eq!(
        evictions(&ssn),
        vec![("low-a-1".to_string(), "preempt".to_string())]
    );
    assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
}

#[test]
fn nominated_node_that_passes_the_predicates_means_no_preemption() {
    // Nothing fails on n1 but resources: Volcano considers the pod schedulable there.
    let c = nominated_cluster("PreemptionByScheduler", json!({}));
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
}

#[test]
fn unresolvable_nominated_node_lets_the_pod_preempt_elsewhere() {
    let mut c = nominated_cluster("PreemptionByScheduler", json!({"test/unresolvable": "x"}));
    c.node("n2", "4", json!({}));
    c.pod("low-b-0", "low", "4", Some("n2"));
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert_eq!(
        evictions(&ssn),
        vec![("low-b-0".to_string(), "preempt".to_string())]
    );
    assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n2"));
}

#[test]
fn within_a_job_a_higher_priority_task_preempts_a_lower_one() {
    // Phase 2: one job, a running task of priority 1 and a pending one of priority 5.
    let mut c = Cluster::new();
    c.node("n1", "2", json!({}));
    c.job("j", "q1", 2, "");
    c.pod_with(
        "j-a-0",
        "j",
        "2",
        Some("n1"),
        json!({"spec": {"priority": 1}}),
    );
    c.pod_with("j-b-0", "j", "2", None, json!({"spec": {"priority": 5}}));
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert_eq!(
        evictions(&ssn),
        vec![("j-a-0".to_string(), "preempt".to_string())]
    );
    assert_eq!(pipelined_on(&ssn, "j-b-0").as_deref(), Some("n1"));
}

#[test]
fn other_queues_are_not_preempted() {
    let mut c = Cluster::new();
    c.priority_class("low", 10).priority_class("high", 100);
    c.node("n1", "2", json!({}));
    c.job("low", "q2", 1, "low");
    c.pod("low-a-0", "low", "2", Some("n1"));
    c.job("high", "q1", 1, "high");
    c.pod("high-a-0", "high", "2", None);
    let mut ssn = c.session(&conf("preempt"));
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
}

#[test]
fn eviction_the_victim_job_would_take_back_is_refused() {
    // With `lowfirst` ordering jobs, the low job would be served first next cycle and
    // retake the node: the eviction is refused and the preemptor is not nominated.
    let c = priority_cluster();
    let conf = "actions: \"preempt\"\ntiers:\n- plugins:\n  - name: lowfirst\n  - name: prio\n  - name: gangish\n  - name: quota\n";
    let mut ssn = c.session(conf);
    run(&mut ssn, "preempt");
    assert!(evictions(&ssn).is_empty());
    let t = ssn.state.task(task(&ssn, "high-a-0"));
    assert_eq!(t.status, TaskStatus::Pending);
    assert!(t.last_transaction.is_none());
    assert_eq!(
        ssn.state.task_scheduling_reason(task(&ssn, "high-a-0")).2,
        None
    );
}

#[test]
fn topology_aware_mode_evicts_one_victim() {
    let conf = format!(
        "{}configurations:\n- name: preempt\n  arguments:\n    enableTopologyAwarePreemption: true\n",
        conf("preempt")
    );
    let mut ssn = priority_cluster().session(&conf);
    run(&mut ssn, "preempt");
    assert_eq!(evictions(&ssn).len(), 1);
}
