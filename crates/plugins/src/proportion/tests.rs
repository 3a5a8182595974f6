use super::*;
use crate::testutil::{StateLookup, TestCluster, pending, pod, queued_group as group, running};
use engine::framework::{Decisions, Event, EventType, Session, Statement};
use engine::model::ResourceName;
use proptest::prelude::*;
use serde_json::{Value, json};

fn cpu(milli: f64) -> Resource {
    Resource::from_pairs(milli, 0.0, &[])
}

/// A test attribute: `request` set, `(capability, guarantee)` as given.
fn attr(
    id: usize,
    weight: i32,
    request: Resource,
    capability: Option<Resource>,
    guarantee: Option<Resource>,
    total: &Resource,
    total_guarantee: &Resource,
) -> QueueAttr {
    let mut a = QueueAttr::with_limits(
        QueueId::from_index(id),
        weight,
        capability.as_ref(),
        guarantee.as_ref(),
        total,
        total_guarantee,
    );
    a.request = request;
    a
}

/// Queues given as (weight, request, capability, guarantee) over `total`; returns the
/// filled attributes and the number of rounds.
fn fill(
    total: &Resource,
    queues: &[(i32, Resource, Option<Resource>, Option<Resource>)],
) -> (Vec<QueueAttr>, u32) {
    let mut total_guarantee = Resource::empty();
    for (_, _, _, g) in queues {
        if let Some(g) = g {
            total_guarantee.add(g);
        }
    }
    let mut attrs: Vec<QueueAttr> = queues
        .iter()
        .enumerate()
        .map(|(i, (w, req, cap, g))| {
            attr(
                i,
                *w,
                req.clone(),
                cap.clone(),
                g.clone(),
                total,
                &total_guarantee,
            )
        })
        .collect();
    let rounds = water_fill(total, &mut attrs);
    (attrs, rounds)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn p1_seed_003_worked_example() {
    // Seed 003: 100 CPU; A weight 2, capability 50, guarantee 10, request 80; B weight 3,
    // request 60; C weight 5, guarantee 20, request 30 ⇒ A 28, B 42, C 30 in two rounds.
    let total = cpu(100_000.0);
    let (attrs, rounds) = fill(
        &total,
        &[
            (2, cpu(80_000.0), Some(cpu(50_000.0)), Some(cpu(10_000.0))),
            (3, cpu(60_000.0), None, None),
            (5, cpu(30_000.0), None, Some(cpu(20_000.0))),
        ],
    );
    let real: Vec<f64> = attrs.iter().map(|a| a.real_capability.milli_cpu).collect();
    assert_eq!(real, vec![50_000.0, 70_000.0, 90_000.0]);
    let deserved: Vec<f64> = attrs.iter().map(|a| a.deserved.milli_cpu).collect();
    assert!(close(deserved[0], 28_000.0), "{deserved:?}");
    assert!(close(deserved[1], 42_000.0), "{deserved:?}");
    assert!(close(deserved[2], 30_000.0), "{deserved:?}");
    assert_eq!(rounds, 2);
    // No request carries memory, so nobody deserves any.
    assert!(attrs.iter().all(|a| a.deserved.memory == 0.0));
}

#[test]
fn p2_leftover_goes_to_the_unsatisfied_queue() {
    let (attrs, rounds) = fill(
        &cpu(10_000.0),
        &[
            (1, cpu(2_000.0), None, None),
            (1, cpu(20_000.0), None, None),
        ],
    );
    assert_eq!(attrs[0].deserved.milli_cpu, 2_000.0);
    assert_eq!(attrs[1].deserved.milli_cpu, 8_000.0);
    assert_eq!(rounds, 2);
}

#[test]
fn p3_capped_queue_meets_when_its_deserved_stops_moving() {
    let (attrs, rounds) = fill(
        &cpu(10_000.0),
        &[
            (1, cpu(20_000.0), Some(cpu(3_000.0)), None),
            (1, cpu(20_000.0), None, None),
        ],
    );
    assert_eq!(attrs[0].deserved.milli_cpu, 3_000.0);
    assert_eq!(attrs[1].deserved.milli_cpu, 7_000.0);
    assert_eq!(rounds, 3);
}

#[test]
fn p4_guarantee_can_exceed_the_request() {
    let (attrs, rounds) = fill(
        &cpu(10_000.0),
        &[
            (1, cpu(1_000.0), None, Some(cpu(4_000.0))),
            (1, cpu(20_000.0), None, None),
        ],
    );
    assert_eq!(attrs[0].deserved.milli_cpu, 4_000.0);
    assert_eq!(attrs[1].deserved.milli_cpu, 6_000.0);
    assert_eq!(rounds, 2);
}

#[test]
fn p5_split_by_weight() {
    let (attrs, rounds) = fill(
        &cpu(8_000.0),
        &[
            (1, cpu(100_000.0), None, None),
            (3, cpu(100_000.0), None, None),
        ],
    );
    assert_eq!(attrs[0].deserved.milli_cpu, 2_000.0);
    assert_eq!(attrs[1].deserved.milli_cpu, 6_000.0);
    assert_eq!(rounds, 1);
}

#[test]
fn p6_crossed_demands_converge_geometrically() {
    let total = Resource::from_pairs(10_000.0, 10_000.0, &[]);
    let (attrs, rounds) = fill(
        &total,
        &[
            (1, Resource::from_pairs(8_000.0, 2_000.0, &[]), None, None),
            (1, Resource::from_pairs(2_000.0, 8_000.0, &[]), None, None),
        ],
    );
    let expected = 8_000.0 - 3_000.0 / 32_768.0;
    assert!(
        close(attrs[0].deserved.milli_cpu, expected),
        "{}",
        attrs[0].deserved
    );
    assert_eq!(attrs[0].deserved.memory, 2_000.0);
    assert!(
        close(attrs[1].deserved.memory, expected),
        "{}",
        attrs[1].deserved
    );
    assert_eq!(attrs[1].deserved.milli_cpu, 2_000.0);
    assert_eq!(rounds, 16);
}

#[test]
fn guarantees_can_oversubscribe_the_cluster() {
    // A Volcano quirk kept on purpose: the guarantee is applied after the weighted share, so
    // a queue raised to its guarantee in round 1 does not take from the others' shares.
    // 100 cpu, three equal weights, the middle queue guarantees 60: 33.3 + 60 + 33.3.
    let big = cpu(100_000.0);
    let (attrs, _) = fill(
        &cpu(100_000.0),
        &[
            (1, big.clone(), None, None),
            (1, big.clone(), None, Some(cpu(60_000.0))),
            (1, big.clone(), None, None),
        ],
    );
    let third = 100_000.0 / 3.0;
    assert!(close(attrs[0].deserved.milli_cpu, third));
    assert_eq!(attrs[1].deserved.milli_cpu, 60_000.0);
    assert!(close(attrs[2].deserved.milli_cpu, third));
}

#[test]
fn weight_zero_queues_only_get_their_guarantee() {
    let (attrs, _) = fill(
        &cpu(10_000.0),
        &[
            (0, cpu(5_000.0), None, Some(cpu(1_000.0))),
            (1, cpu(20_000.0), None, None),
        ],
    );
    assert_eq!(attrs[0].deserved.milli_cpu, 1_000.0);
    assert_eq!(attrs[1].deserved.milli_cpu, 9_000.0);
    // With every weight 0 the loop never runs: not even the guarantee is applied.
    let (attrs, rounds) = fill(
        &cpu(10_000.0),
        &[(0, cpu(5_000.0), None, Some(cpu(1_000.0)))],
    );
    assert_eq!(rounds, 0);
    assert_eq!(attrs[0].deserved, Resource::empty());
}

#[test]
fn unrequested_scalars_are_not_deserved_and_pods_take_part() {
    let total = Resource::from_pairs(
        10_000.0,
        0.0,
        &[("pods", 110.0), ("nvidia.com/gpu", 4_000.0)],
    );
    let (attrs, _) = fill(
        &total,
        &[
            (
                1,
                Resource::from_pairs(2_000.0, 0.0, &[("pods", 2.0)]),
                None,
                None,
            ),
            (
                1,
                Resource::from_pairs(
                    20_000.0,
                    0.0,
                    &[("pods", 20.0), ("nvidia.com/gpu", 8_000.0)],
                ),
                None,
                None,
            ),
        ],
    );
    let gpu = ResourceName::new("nvidia.com/gpu");
    // Zero semantics: forced to 0 (the entry stays, as in Volcano's map).
    assert_eq!(attrs[0].deserved.scalars.get(gpu), Some(0.0));
    assert_eq!(attrs[0].deserved.scalar(ResourceName::PODS), 2.0);
    assert_eq!(attrs[1].deserved.scalar(gpu), 4_000.0);
    assert_eq!(attrs[1].deserved.scalar(ResourceName::PODS), 20.0);
    assert_eq!(attrs[1].deserved.milli_cpu, 8_000.0);
}

#[test]
fn real_capability_widens_unset_cpu_and_memory_and_clamps_guarantees() {
    let total = Resource::from_pairs(10_000.0, 1_000.0, &[("nvidia.com/gpu", 2_000.0)]);
    // A capability naming only gpu leaves cpu and memory unbounded.
    let a = attr(
        0,
        1,
        Resource::empty(),
        Some(Resource::from_pairs(
            0.0,
            0.0,
            &[("nvidia.com/gpu", 1_000.0)],
        )),
        None,
        &total,
        &Resource::empty(),
    );
    assert_eq!(
        a.real_capability,
        Resource::from_pairs(10_000.0, 1_000.0, &[("nvidia.com/gpu", 1_000.0)])
    );
    let cap = a.capability.expect("capability kept");
    assert_eq!((cap.milli_cpu, cap.memory), (f64::MAX, f64::MAX));
    // Guarantees above the cluster leave each queue its own guarantee only.
    let b = attr(
        1,
        1,
        Resource::empty(),
        None,
        Some(cpu(3_000.0)),
        &cpu(10_000.0),
        &cpu(15_000.0),
    );
    assert_eq!(b.real_capability, cpu(3_000.0));
}

#[test]
fn p7_share_uses_deserved_dimensions_only() {
    let gi = 1024.0 * 1024.0 * 1024.0;
    let s = queue_share(
        &Resource::from_pairs(2_000.0, 6.0 * gi, &[]),
        &Resource::from_pairs(4_000.0, 8.0 * gi, &[]),
    );
    assert_eq!(s, 0.75);
    assert_eq!(
        queue_share(&cpu(100.0), &Resource::from_pairs(0.0, 8.0 * gi, &[])),
        0.0
    );
    assert_eq!(queue_share(&cpu(100.0), &Resource::empty()), 0.0);
}

fn held(deserved: Resource, allocated: Resource) -> QueueAttr {
    let mut a = attr(
        0,
        1,
        Resource::empty(),
        None,
        None,
        &Resource::empty(),
        &Resource::empty(),
    );
    a.deserved = deserved;
    a.allocated = allocated;
    a.update_share();
    a
}

#[test]
fn p8_overused_with_tolerance() {
    let gi = 1024.0 * 1024.0 * 1024.0;
    let deserved = Resource::from_pairs(4_000.0, 4.0 * gi, &[]);
    assert!(
        held(
            deserved.clone(),
            Resource::from_pairs(4_000.0, 4.0 * gi, &[])
        )
        .overused()
    );
    assert!(
        !held(
            deserved.clone(),
            Resource::from_pairs(4_000.0, 3.0 * gi, &[])
        )
        .overused()
    );
    assert!(held(deserved, Resource::from_pairs(3_999.95, 4.0 * gi, &[])).overused());
    // Nothing deserved: overused straight away.
    assert!(held(Resource::empty(), Resource::empty()).overused());
}

#[test]
fn p9_fits_checks_requested_dimensions_strictly() {
    let a = held(cpu(4_000.0), cpu(3_000.0));
    let task = |milli: f64| Resource::from_pairs(milli, 0.0, &[("pods", 1.0)]);
    assert!(a.fits(&task(1_000.0)));
    assert!(!a.fits(&task(1_001.0)));
    assert!(!a.fits(&Resource::from_pairs(
        0.0,
        0.0,
        &[("nvidia.com/gpu", 1_000.0), ("pods", 1.0)]
    )));
    // Best effort: only pods, which is never checked.
    assert!(a.fits(&Resource::from_pairs(0.0, 0.0, &[("pods", 1.0)])));
}

#[test]
fn p11_enqueue_check_formula() {
    let mut a = attr(
        0,
        1,
        Resource::empty(),
        None,
        None,
        &cpu(10_000.0),
        &Resource::empty(),
    );
    a.allocated = cpu(4_000.0);
    a.inqueue = cpu(3_000.0);
    a.elastic = cpu(1_000.0);
    assert_eq!(a.enqueue_check(&cpu(4_000.0)), Ok(()));
    assert_eq!(a.enqueue_check(&cpu(4_001.0)), Err(vec!["cpu".to_string()]));
}

// ---- session-level tests ------------------------------------------------------------------

fn queue(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "creationTimestamp": "2023-01-01T00:00:00Z"}, "spec": spec})
}

fn queue_id(ssn: &Session, name: &str) -> QueueId {
    ssn.state.queue_id(name).expect("queue exists")
}

#[test]
fn seed_003_example_through_a_session() {
    let mut c = TestCluster::new();
    c.node(
        "n1",
        json!({"cpu": "100", "memory": "400Gi", "pods": "110"}),
    );
    c.queue(queue(
        "a",
        json!({"weight": 2, "capability": {"cpu": "50"}, "guarantee": {"resource": {"cpu": "10"}}}),
    ));
    c.queue(queue("b", json!({"weight": 3})));
    c.queue(queue(
        "c",
        json!({"weight": 5, "guarantee": {"resource": {"cpu": "20"}}}),
    ));
    for (q, tasks) in [("a", 8), ("b", 6), ("c", 3)] {
        let job = format!("job-{q}");
        c.pod_group(group(&job, q, "Inqueue", None));
        for i in 0..tasks {
            pending(&mut c, &format!("{job}-{i}"), &job, "10");
        }
    }
    let ssn = c.session(&[&[NAME]]);
    let d = ssn.close();
    let deserved = |q: &str| {
        d.queue_metrics[q]
            .deserved
            .as_ref()
            .expect("deserved")
            .milli_cpu
    };
    assert!(close(deserved("a"), 28_000.0), "{}", deserved("a"));
    assert!(close(deserved("b"), 42_000.0), "{}", deserved("b"));
    assert!(close(deserved("c"), 30_000.0), "{}", deserved("c"));
    let a = &d.queue_metrics["a"];
    assert_eq!(
        a.real_capability.as_ref().map(|r| r.milli_cpu),
        Some(50_000.0)
    );
    assert_eq!(a.capability.as_ref().map(|r| r.milli_cpu), Some(50_000.0));
    assert_eq!(a.request.milli_cpu, 80_000.0);
    assert_eq!(a.share, Some(0.0));
    assert_eq!(a.overused, Some(false));
    assert_eq!(a.weight, 2);
    assert_eq!(d.queue_metrics["b"].capability, None);
    // The default queue has no job: zeroed figures, nothing deserved.
    let default = &d.queue_metrics["default"];
    assert_eq!(default.deserved, None);
    assert_eq!(default.inqueue, Some(Resource::empty()));
}

/// P-10 set-up on an 8-cpu node: q1 runs 1.5 + 1.5 + 1 + 2 cpu and waits for 4 more; q2
/// waits for one 4-cpu task. Both deserve 4 cpu.
fn two_queues() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "8", "pods": "110"}));
    c.queue(queue("q1", json!({"weight": 1})));
    c.queue(queue("q2", json!({"weight": 1})));
    c.pod_group(group("a", "q1", "Running", None));
    for (i, cpu) in ["1500m", "1500m", "1", "2"].iter().enumerate() {
        running(&mut c, &format!("a-{i}"), "a", cpu);
    }
    pending(&mut c, "a-4", "a", "4");
    c.pod_group(group("b", "q2", "Inqueue", None));
    pending(&mut c, "b-0", "b", "4");
    c
}

#[test]
fn p10_reclaim_takes_victims_until_the_queue_is_back_within_deserved() {
    let ssn = two_queues().session(&[&[NAME]]);
    let reclaimer = ssn.state.task_by_key("ns/b-0");
    let candidates: Vec<TaskId> = ["ns/a-0", "ns/a-1", "ns/a-2"]
        .iter()
        .map(|k| ssn.state.task_by_key(k))
        .collect();
    let victims = ssn.reclaimable(reclaimer, &candidates);
    assert_eq!(victims, candidates[..2].to_vec());
}

#[test]
fn queue_order_priority_then_share() {
    let ssn = two_queues().session(&[&[NAME]]);
    let (q1, q2) = (queue_id(&ssn, "q1"), queue_id(&ssn, "q2"));
    // q1 holds 6 of its 4 deserved cpu (share 1.5); q2 nothing.
    assert!(ssn.queue_order(q2, q1));
    assert!(!ssn.queue_order(q1, q2));

    let mut c = two_queues();
    c.queue(queue("q1", json!({"weight": 1, "priority": 10})));
    let ssn = c.session(&[&[NAME]]);
    assert!(ssn.queue_order(queue_id(&ssn, "q1"), queue_id(&ssn, "q2")));
}

#[test]
fn event_handlers_track_allocation() {
    let mut ssn = two_queues().session(&[&[NAME]]);
    let q2 = queue_id(&ssn, "q2");
    let task = ssn.state.task_by_key("ns/b-0");
    let node = ssn.state.node_by_key("n1");
    // q1: deserved (cpu 4000, pods 5) vs allocated (6000, pods 4): not overused thanks to pods.
    assert!(!ssn.overused(queue_id(&ssn, "q1")));
    assert!(!ssn.overused(q2));
    assert!(ssn.allocatable(q2, task));

    let mut stmt = Statement::new();
    ssn.allocate(&mut stmt, task, node)
        .expect("allocation succeeds");
    assert!(ssn.overused(q2), "q2 now holds all it deserves");
    assert!(!ssn.allocatable(q2, task));
    assert!(!ssn.preemptive(q2, task));

    ssn.discard(stmt);
    assert!(!ssn.overused(q2));
    assert!(ssn.allocatable(q2, task));
}

#[test]
fn p9_closed_queue_refuses_allocation_and_enqueue() {
    let mut c = two_queues();
    let mut closed = queue("q2", json!({"weight": 1}));
    closed["status"] = json!({"state": "Closed"});
    c.queue(closed);
    c.pod_group(group("late", "q2", "Pending", Some(json!({"cpu": "1"}))));
    pending(&mut c, "late-0", "late", "1");
    let ssn = c.session(&[&[NAME]]);
    let q2 = queue_id(&ssn, "q2");
    let task = ssn.state.task_by_key("ns/b-0");
    assert!(!ssn.allocatable(q2, task));
    assert!(!ssn.job_enqueueable(ssn.state.job_by_key("ns/late")));
}

#[test]
fn best_effort_tasks_always_fit_an_open_queue() {
    let mut c = two_queues();
    c.pod(pod("ns", "b-1", Some("b"), "Pending", None, json!({})));
    let mut ssn = c.session(&[&[NAME]]);
    crate::testutil::allocate(&mut ssn, "ns/b-0", "n1");
    // q2 now holds all the cpu it deserves: another cpu task would not fit, a best-effort
    // one does.
    let q2 = queue_id(&ssn, "q2");
    assert!(!ssn.allocatable(q2, ssn.state.task_by_key("ns/b-0")));
    assert!(ssn.allocatable(q2, ssn.state.task_by_key("ns/b-1")));
}

/// P-11 set-up on a 10-cpu node: a running job holding 4 cpu above its 3-cpu minimum
/// (elastic 1), an admitted job reserving 3, and a pending job asking for `min_cpu`.
fn enqueue_cluster(min_cpu: &str) -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "pods": "110"}));
    c.queue(queue("q", json!({"weight": 1})));
    c.pod_group(group("running", "q", "Running", Some(json!({"cpu": "3"}))));
    running(&mut c, "running-0", "running", "4");
    c.pod_group(group("waiting", "q", "Inqueue", Some(json!({"cpu": "3"}))));
    pending(&mut c, "waiting-0", "waiting", "3");
    c.pod_group(group("new", "q", "Pending", Some(json!({"cpu": min_cpu}))));
    pending(&mut c, "new-0", "new", min_cpu);
    c
}

/// The events this plugin records (the session's close adds the gang-style ones).
fn quota_events(d: &Decisions) -> Vec<&Event> {
    d.events
        .iter()
        .filter(|e| e.message.starts_with("queue resource quota insufficient"))
        .collect()
}

#[test]
fn p11_enqueue_within_real_capability_then_reserve() {
    let mut ssn = enqueue_cluster("4").session(&[&[NAME]]);
    let job = ssn.state.job_by_key("ns/new");
    assert!(ssn.job_enqueueable(job));
    ssn.job_enqueued(job);
    let d = ssn.close();
    assert!(quota_events(&d).is_empty(), "{:?}", d.events);
    let inqueue = d.queue_metrics["q"].inqueue.clone().expect("inqueue");
    assert_eq!(inqueue.milli_cpu, 7_000.0);
}

#[test]
fn p11_enqueue_rejection_is_reported_on_the_pod_group() {
    let ssn = enqueue_cluster("4001m").session(&[&[NAME]]);
    let job = ssn.state.job_by_key("ns/new");
    assert!(!ssn.job_enqueueable(job));
    let d = ssn.close();
    let events = quota_events(&d);
    assert_eq!(events.len(), 1, "{:?}", d.events);
    let e = events[0];
    assert_eq!(e.object.kind, "PodGroup");
    assert_eq!(e.object.name, "new");
    assert_eq!(e.type_, EventType::Normal);
    assert_eq!(e.reason, "Unschedulable");
    assert_eq!(
        e.message,
        "queue resource quota insufficient: insufficient cpu"
    );
    // A rejected job reserves nothing.
    assert_eq!(
        d.queue_metrics["q"].inqueue.as_ref().map(|r| r.milli_cpu),
        Some(3_000.0)
    );
}

#[test]
fn jobs_without_min_resources_are_permitted() {
    let mut c = enqueue_cluster("4001m");
    c.pod_group(group("free", "q", "Pending", None));
    pending(&mut c, "free-0", "free", "100");
    let ssn = c.session(&[&[NAME]]);
    assert!(ssn.job_enqueueable(ssn.state.job_by_key("ns/free")));
}

#[test]
fn p12_inqueue_accounting_at_open() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "pods": "110"}));
    c.queue(queue("q", json!({"weight": 1})));
    // Inqueue job holding 1 of its 3 cpu: reserves 2.
    c.pod_group(group("inq", "q", "Inqueue", Some(json!({"cpu": "3"}))));
    running(&mut c, "inq-0", "inq", "1");
    pending(&mut c, "inq-1", "inq", "2");
    // Running job below its minMember of 2: reserves nothing.
    let mut short = group("short", "q", "Running", Some(json!({"cpu": "5"})));
    short["spec"]["minMember"] = json!(2);
    c.pod_group(short);
    running(&mut c, "short-0", "short", "1");
    pending(&mut c, "short-1", "short", "1");
    // Pending job: reserves nothing until admitted.
    c.pod_group(group("later", "q", "Pending", Some(json!({"cpu": "4"}))));
    pending(&mut c, "later-0", "later", "4");
    let d = c.session(&[&[NAME]]).close();
    let m = &d.queue_metrics["q"];
    assert_eq!(m.inqueue.as_ref().map(|r| r.milli_cpu), Some(2_000.0));
    assert_eq!(m.allocated.milli_cpu, 2_000.0);
    assert_eq!(m.request.milli_cpu, 9_000.0);
}

#[test]
fn scheduling_gated_tasks_are_not_reserved() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "pods": "110"}));
    c.queue(queue("q", json!({"weight": 1})));
    c.pod_group(group("j", "q", "Inqueue", Some(json!({"cpu": "3"}))));
    let mut gated = pod("ns", "j-0", Some("j"), "Pending", None, json!({"cpu": "1"}));
    gated["spec"]["schedulingGates"] = json!([{"name": "example.com/hold"}]);
    c.pod(gated);
    // Gated only by Volcano's queue-allocation gate: still reserved.
    let mut volcano_gated = pod("ns", "j-1", Some("j"), "Pending", None, json!({"cpu": "1"}));
    volcano_gated["spec"]["schedulingGates"] = json!([{"name": apis::keys::QUEUE_ALLOCATION_GATE}]);
    c.pod(volcano_gated);
    pending(&mut c, "j-2", "j", "1");
    let d = c.session(&[&[NAME]]).close();
    assert_eq!(
        d.queue_metrics["q"].inqueue.as_ref().map(|r| r.milli_cpu),
        Some(2_000.0)
    );
}

// ---- properties of the water-filling -----------------------------------------------------

const GPU: &str = "nvidia.com/gpu";

/// cpu, memory and one device: the dimensions the properties look at.
type Dims = [f64; 3];

fn vector(v: Dims) -> Resource {
    Resource::from_pairs(v[0], v[1], &[(GPU, v[2])])
}

fn dims(r: &Resource) -> Dims {
    [r.milli_cpu, r.memory, r.get(GPU)]
}

/// One generated queue; it guarantees `guarantee_fraction` of what it may have at most.
#[derive(Clone, Debug)]
struct QueueCase {
    weight: i32,
    request: Dims,
    capability: Option<Dims>,
    guarantee_fraction: f64,
}

fn amounts(max: u32) -> impl Strategy<Value = Dims> {
    let amount = move || (0..max).prop_map(f64::from);
    [amount(), amount(), amount()]
}

fn totals() -> impl Strategy<Value = Dims> {
    amounts(200_000).prop_map(|[c, m, g]| [c.max(1.0), m.max(1.0), g.min(16_000.0)])
}

fn queue_case() -> impl Strategy<Value = QueueCase> {
    (
        1i32..10,
        amounts(150_000),
        proptest::option::of(amounts(150_000)),
        0.0f64..1.0,
    )
        .prop_map(
            |(weight, request, capability, guarantee_fraction)| QueueCase {
                weight,
                request,
                capability,
                guarantee_fraction,
            },
        )
}

/// The capability of dimension `k`: cpu or memory ≤ 0 means unbounded (§4.3).
fn capability_bound(capability: Option<Dims>, k: usize) -> f64 {
    match capability {
        None => f64::INFINITY,
        Some(c) if k < 2 && c[k] <= 0.0 => f64::INFINITY,
        Some(c) => c[k],
    }
}

/// The fill input; with `guarantees` every queue guarantees its fraction of
/// `min(request, capability)`, scaled down so that the cluster can honour them all.
fn build(
    total: Dims,
    cases: &[QueueCase],
    guarantees: bool,
) -> Vec<(i32, Resource, Option<Resource>, Option<Resource>)> {
    let mut wanted: Vec<Dims> = cases
        .iter()
        .map(|q| {
            let mut g = [0.0; 3];
            for (k, gk) in g.iter_mut().enumerate() {
                *gk = (q.request[k].min(capability_bound(q.capability, k)) * q.guarantee_fraction)
                    .floor();
            }
            g
        })
        .collect();
    for (k, &t) in total.iter().enumerate() {
        let sum: f64 = wanted.iter().map(|g| g[k]).sum();
        if sum > t {
            for g in &mut wanted {
                g[k] = (g[k] * t / sum).floor();
            }
        }
    }
    cases
        .iter()
        .zip(wanted)
        .map(|(q, g)| {
            (
                q.weight,
                vector(q.request),
                q.capability.map(vector),
                guarantees.then(|| vector(g)),
            )
        })
        .collect()
}

fn eps(x: f64) -> f64 {
    1e-6 * x.abs().max(1.0)
}

/// Deserved stays within request, real capability and capability, reaches the guarantee,
/// and the queues together get no more than the cluster (plus the guarantees, which Volcano
/// adds on top of the weighted shares, see `guarantees_can_oversubscribe_the_cluster`).
fn check_bounds(total: Dims, cases: &[QueueCase], guarantees: bool) -> Result<(), TestCaseError> {
    let queues = build(total, cases, guarantees);
    let (attrs, _) = fill(&vector(total), &queues);
    for ((a, (_, request, _, guarantee)), case) in attrs.iter().zip(&queues).zip(cases) {
        let (deserved, request, real) =
            (dims(&a.deserved), dims(request), dims(&a.real_capability));
        let guarantee = guarantee.as_ref().map_or([0.0; 3], dims);
        for k in 0..3 {
            let (d, cap) = (deserved[k], capability_bound(case.capability, k));
            prop_assert!(
                d <= request[k] + eps(request[k]),
                "dim {k}: deserved {d} > request {}",
                request[k]
            );
            prop_assert!(
                d <= real[k] + eps(real[k]),
                "dim {k}: deserved {d} > real capability {}",
                real[k]
            );
            prop_assert!(
                d <= cap + eps(cap),
                "dim {k}: deserved {d} > capability {cap}"
            );
            prop_assert!(
                d + eps(guarantee[k]) >= guarantee[k],
                "dim {k}: deserved {d} < guarantee {}",
                guarantee[k]
            );
        }
    }
    for (k, &t) in total.iter().enumerate() {
        let sum: f64 = attrs.iter().map(|a| dims(&a.deserved)[k]).sum();
        let guaranteed: f64 = queues
            .iter()
            .map(|(_, _, _, g)| g.as_ref().map_or(0.0, |g| dims(g)[k]))
            .sum();
        prop_assert!(
            sum <= t + guaranteed + eps(t),
            "dim {k}: Σ deserved {sum} > total {t} + Σ guarantee {guaranteed}"
        );
    }
    Ok(())
}

/// Every queue of a round sees the same remainder, so listing the queues backwards changes
/// nothing (up to float summation order).
fn check_order_independence(total: Dims, cases: &[QueueCase]) -> Result<(), TestCaseError> {
    let queues = build(total, cases, true);
    let (forward, _) = fill(&vector(total), &queues);
    let reversed: Vec<_> = queues.iter().rev().cloned().collect();
    let (backward, _) = fill(&vector(total), &reversed);
    for (f, b) in forward.iter().zip(backward.iter().rev()) {
        for (x, y) in dims(&f.deserved).into_iter().zip(dims(&b.deserved)) {
            prop_assert!((x - y).abs() <= eps(x), "{x} vs {y}");
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn deserved_respects_request_capability_and_guarantee(
        total in totals(),
        cases in proptest::collection::vec(queue_case(), 1..6),
        guarantees in any::<bool>(),
    ) {
        check_bounds(total, &cases, guarantees)?;
    }

    #[test]
    fn queue_order_does_not_change_the_result(
        total in totals(),
        cases in proptest::collection::vec(queue_case(), 1..6),
    ) {
        check_order_independence(total, &cases)?;
    }
}
