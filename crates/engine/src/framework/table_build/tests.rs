//! The tables a build makes with the last build's links are the tables it makes without them:
//! random sequences of cluster changes (pods, PodGroups, queues, nodes, priority classes added,
//! replaced and deleted), each followed by one build with the scheduler's memo and one with a
//! fresh memo, compared field by field.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::conf::{KnownNames, parse};
use crate::state::{ClusterState, StateOptions};

#[derive(Clone, Debug)]
enum Change {
    /// Pod `i`: its group (`None`: standalone), node, phase, scheduler and cpu.
    Pod {
        i: u8,
        group: Option<u8>,
        node: Option<u8>,
        phase: u8,
        ours: bool,
        cpu: u8,
    },
    DeletePod(u8),
    PodGroup {
        i: u8,
        queue: u8,
        class: Option<u8>,
        min: u8,
    },
    DeletePodGroup(u8),
    Queue(u8),
    DeleteQueue(u8),
    Node {
        i: u8,
        cpu: u8,
    },
    DeleteNode(u8),
    PriorityClass {
        i: u8,
        value: i8,
        default: bool,
    },
    DeletePriorityClass(u8),
    /// A session of the scheduler: builds with and without the memo.
    Build,
    /// A session that runs actions on the memo's tables (placing, counting, writing statuses)
    /// and hands them back changed; nothing it decides reaches the cluster.
    Session,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        6 => (0..12u8, prop::option::weighted(0.8, 0..6u8), prop::option::of(0..5u8), 0..3u8, prop::bool::weighted(0.8), 1..4u8)
            .prop_map(|(i, group, node, phase, ours, cpu)| Change::Pod { i, group, node, phase, ours, cpu }),
        2 => (0..12u8).prop_map(Change::DeletePod),
        3 => (0..6u8, 0..4u8, prop::option::of(0..3u8), 1..3u8)
            .prop_map(|(i, queue, class, min)| Change::PodGroup { i, queue, class, min }),
        1 => (0..6u8).prop_map(Change::DeletePodGroup),
        1 => (0..4u8).prop_map(Change::Queue),
        1 => (0..4u8).prop_map(Change::DeleteQueue),
        1 => (0..4u8, 1..8u8).prop_map(|(i, cpu)| Change::Node { i, cpu }),
        1 => (0..4u8).prop_map(Change::DeleteNode),
        1 => (0..3u8, -3..3i8, any::<bool>()).prop_map(|(i, value, default)| Change::PriorityClass { i, value, default }),
        1 => (0..3u8).prop_map(Change::DeletePriorityClass),
        4 => Just(Change::Build),
        2 => Just(Change::Session),
    ]
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("object")
}

/// Pods and PodGroups live in two namespaces, so that keys and uids interleave.
fn namespace(i: u8) -> &'static str {
    if i.is_multiple_of(2) { "a" } else { "b" }
}

/// PodGroup 5 has the name of the one-pod job a standalone pod `a/p0` gets, so that the two
/// share a uid.
fn pod_group_name(i: u8) -> String {
    if i == 5 {
        "podgroup-uid-p0".to_string()
    } else {
        format!("pg{i}")
    }
}

fn pod_group_namespace(i: u8) -> &'static str {
    if i == 5 { "a" } else { namespace(i) }
}

fn apply(state: &mut ClusterState, c: &Change) {
    match *c {
        Change::Pod {
            i,
            group,
            node,
            phase,
            ours,
            cpu,
        } => {
            let phase = ["Pending", "Running", "Succeeded"][usize::from(phase)];
            let mut pod = json!({
                "metadata": {"name": format!("p{i}"), "namespace": namespace(i), "uid": format!("uid-p{i}")},
                "spec": {
                    "schedulerName": if ours { "volcano-rs" } else { "other" },
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu.to_string()}}}]
                },
                "status": {"phase": phase}
            });
            if let Some(g) = group {
                pod["metadata"]["annotations"] =
                    json!({"scheduling.k8s.io/group-name": pod_group_name(g)});
            }
            if let Some(n) = node {
                // Node 4 is never created: a pod naming a node the cluster lacks.
                pod["spec"]["nodeName"] = json!(format!("n{n}"));
            }
            // Some pods with anti-affinity terms, some with host ports (the builds list those
            // placed).
            if i % 3 == 0 {
                pod["spec"]["affinity"] = json!({"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
                    ]
                }});
            }
            if i % 4 == 1 {
                pod["spec"]["containers"][0]["ports"] =
                    json!([{"containerPort": 80, "hostPort": 80}]);
            }
            state.upsert_pod(decode(pod));
        }
        Change::DeletePod(i) => {
            state.delete_pod(namespace(i), &format!("p{i}"));
        }
        Change::PodGroup {
            i,
            queue,
            class,
            min,
        } => {
            let mut spec = json!({"minMember": min, "queue": format!("q{queue}")});
            if let Some(c) = class {
                spec["priorityClassName"] = json!(format!("pc{c}"));
            }
            state.upsert_pod_group(decode(json!({
                "metadata": {"name": pod_group_name(i), "namespace": pod_group_namespace(i), "uid": format!("uid-pg{i}")},
                "spec": spec
            })));
        }
        Change::DeletePodGroup(i) => {
            state.delete_pod_group(pod_group_namespace(i), &pod_group_name(i))
        }
        Change::Queue(i) => state.upsert_queue(decode(json!({
            "metadata": {"name": format!("q{i}")},
            "spec": {"weight": 1}
        }))),
        Change::DeleteQueue(i) => state.delete_queue(&format!("q{i}")),
        Change::Node { i, cpu } => {
            state.upsert_node(decode(json!({
            "metadata": {"name": format!("n{i}")},
            "status": {"allocatable": {"cpu": cpu.to_string(), "memory": "8Gi", "pods": "110"}}
            })));
        }
        Change::DeleteNode(i) => state.delete_node(&format!("n{i}")),
        Change::PriorityClass { i, value, default } => state.upsert_priority_class(decode(json!({
            "metadata": {"name": format!("pc{i}")},
            "value": value,
            "globalDefault": default
        }))),
        Change::DeletePriorityClass(i) => state.delete_priority_class(&format!("pc{i}")),
        Change::Build | Change::Session => {}
    }
}

/// Standalone pods of ours go to queue `q0`, which may or may not exist.
fn options() -> StateOptions {
    StateOptions {
        default_queue: "q0".to_string(),
        ..StateOptions::default()
    }
}

fn conf() -> Arc<SchedulerConf> {
    let known = KnownNames {
        actions: &["allocate"],
        plugins: &[],
        strict: true,
        check_arguments: None,
    };
    Arc::new(
        parse("actions: \"allocate\"\ntiers: []\n", &known)
            .expect("conf")
            .conf,
    )
}

/// Everything a build makes, written out.
fn tables(snapshot: &Snapshot, options: &SessionOptions) -> String {
    let s = build_state(
        snapshot,
        conf(),
        options.clone(),
        Timestamp::UNIX_EPOCH,
        "s".into(),
    );
    let placed = |flag: fn(&TaskSpec) -> bool| -> Vec<TaskId> {
        s.node_ids()
            .flat_map(|n| s.node(n).tasks.iter().map(|&(t, _)| t))
            .filter(|&t| flag(&s.task(t).spec))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    assert_eq!(
        s.placed_with_pod_affinity(),
        placed(|t| t.inter_pod_affinity)
    );
    assert_eq!(s.placed_with_host_ports(), placed(|t| t.uses_host_ports));
    format!(
        "tasks {:?}\njobs {:?}\nnodes {:?}\nqueues {:?}\nevents {:?}\ntotal {:?}",
        s.tasks, s.jobs, s.nodes, s.queues, s.events, s.total_resource
    )
}

/// A session with every action that needs no plugin, on the scheduler's memo.
fn run_session(snapshot: &Snapshot, options: &SessionOptions) {
    let known = KnownNames {
        actions: &["enqueue", "allocate", "backfill"],
        plugins: &[],
        strict: true,
        check_arguments: None,
    };
    let conf = parse(
        "actions: \"enqueue, allocate, backfill\"\ntiers: []\n",
        &known,
    )
    .expect("conf")
    .conf;
    let mut ssn = super::super::Session::open(
        snapshot,
        Arc::new(conf),
        &super::super::PluginRegistry::new(),
        options.clone(),
        Timestamp::UNIX_EPOCH,
        "session".into(),
    );
    crate::actions::run_configured_actions(&mut ssn, &|| std::time::Duration::ZERO);
    let d = ssn.close();
    eprintln!(
        "SESSION binds {} statuses {}",
        d.binds.len(),
        d.pod_group_statuses.len()
    );
}

/// What the last build with the memo took over from the session before it.
fn carried(options: &SessionOptions) -> Carried {
    let links = options.tables.links.lock().expect("memo");
    links.as_ref().map_or(Carried::default(), |l| l.carried)
}

/// Runs the changes; returns how many builds took at least one link over.
fn check(changes: &[Change]) -> Result<usize, TestCaseError> {
    let mut state = ClusterState::new(options());
    let scheduler = SessionOptions::default();
    let mut reused = 0;
    for c in changes.iter().chain([&Change::Build]) {
        if let Change::Session = c {
            run_session(&state.snapshot(), &scheduler);
            continue;
        }
        let Change::Build = c else {
            apply(&mut state, c);
            continue;
        };
        let snapshot = state.snapshot();
        // The node table's name index, shared with the table it replaced when the names held,
        // names its own nodes.
        let table = snapshot.node_table();
        prop_assert_eq!(table.by_name.len(), table.specs.len());
        for (i, n) in table.specs.iter().enumerate() {
            prop_assert_eq!(
                table.by_name.get(&n.name).copied(),
                Some(NodeId::from_index(i))
            );
        }
        let with = tables(&snapshot, &scheduler);
        let without = tables(&snapshot, &SessionOptions::default());
        prop_assert_eq!(with, without);
        let links = scheduler.tables.links.lock().expect("memo");
        reused += usize::from(links.as_ref().is_some_and(|l| l.same_pods > 0));
    }
    Ok(reused)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn a_build_with_the_last_builds_links_makes_the_same_tables(
        changes in prop::collection::vec(change(), 1..60)
    ) {
        check(&changes)?;
    }
}

/// The property above would hold trivially if nothing were ever taken over: a steady stream
/// (one pod and its PodGroup more per session) must take over the links of the pods and
/// PodGroups that did not change, also when the queue and the node were updated meanwhile
/// (a status written, a heartbeat) without changing their names.
#[test]
fn a_steady_stream_takes_the_links_of_what_did_not_change_over() {
    let mut state = ClusterState::new(options());
    for c in [Change::Queue(0), Change::Node { i: 0, cpu: 64 }] {
        apply(&mut state, &c);
    }
    let scheduler = SessionOptions::default();
    for i in 0..5u8 {
        apply(&mut state, &Change::Queue(0));
        apply(&mut state, &Change::Node { i: 0, cpu: 64 });
        apply(
            &mut state,
            &Change::PodGroup {
                i,
                queue: 0,
                class: None,
                min: 1,
            },
        );
        apply(
            &mut state,
            &Change::Pod {
                i,
                group: Some(i),
                node: Some(0),
                phase: 1,
                ours: true,
                cpu: 1,
            },
        );
        let snapshot = state.snapshot();
        assert_eq!(
            tables(&snapshot, &scheduler),
            tables(&snapshot, &SessionOptions::default())
        );
        let guard = scheduler.tables.links.lock().expect("memo");
        let links = guard.as_ref().expect("links kept");
        // Every pod and job resolved: one more of each than the build before.
        assert_eq!(links.tasks.len(), usize::from(i) + 1);
        assert_eq!(links.jobs.len(), usize::from(i) + 1);
        assert!(
            links
                .tasks
                .iter()
                .all(|t| t.job.is_some() && t.node.is_some()),
            "{:?}",
            links
                .task_specs
                .iter()
                .zip(&links.tasks)
                .map(|(s, t)| (s.key.clone(), t.job, t.node))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            links.same_pods,
            usize::from(i),
            "every earlier pod taken over"
        );
        assert_eq!(links.taken_nodes, usize::from(i), "node links taken over");
        assert_eq!(links.taken_jobs, usize::from(i), "queue links taken over");
        // The rows of the build before, which no session changed, are taken over but for the
        // node the new pod joined; the first build had none to take.
        let carried = links.carried;
        drop(guard);
        let expected = if i == 0 {
            Carried::default()
        } else {
            Carried {
                tasks: usize::from(i),
                jobs: usize::from(i),
                nodes: 0,
            }
        };
        assert_eq!(carried, expected, "rows taken over");
        let _ = carried_after_session(&state, &scheduler);
    }
}

/// A session changes the rows of what it placed; the next build makes those afresh and takes
/// the others over.
fn carried_after_session(state: &ClusterState, scheduler: &SessionOptions) -> Carried {
    run_session(&state.snapshot(), scheduler);
    let snapshot = state.snapshot();
    assert_eq!(
        tables(&snapshot, scheduler),
        tables(&snapshot, &SessionOptions::default())
    );
    carried(scheduler)
}

/// A pod taken over whose PodGroup now shares its uid with the one-pod job of a standalone pod
/// before it goes to that job, as a fresh build sends it.
#[test]
fn a_pod_taken_over_joins_the_one_pod_job_that_took_its_pod_groups_uid() {
    let linked = Change::Pod {
        i: 2,
        group: Some(5),
        node: None,
        phase: 0,
        ours: true,
        cpu: 1,
    };
    let standalone = Change::Pod {
        i: 0,
        group: None,
        node: None,
        phase: 0,
        ours: true,
        cpu: 1,
    };
    let pod_group = Change::PodGroup {
        i: 5,
        queue: 0,
        class: None,
        min: 1,
    };
    let changes = [
        Change::Queue(0),
        Change::Queue(1),
        pod_group,
        linked,
        Change::Build,
        standalone,
        Change::Build,
    ];
    let reused = check(&changes).expect("same tables");
    assert!(reused >= 1, "the linked pod was taken over");
}

/// Gang's renewal note is written without marking the row: a job row taken over must not keep
/// the last session's note, or a status written in the next session would carry a renewal that
/// session never made.
#[test]
fn a_job_taken_over_drops_the_last_sessions_renewal_note() {
    let mut state = ClusterState::new(options());
    apply(&mut state, &Change::Queue(0));
    apply(&mut state, &Change::Node { i: 0, cpu: 8 });
    let group = Change::PodGroup {
        i: 0,
        queue: 0,
        class: None,
        min: 1,
    };
    apply(&mut state, &group);
    let scheduler = SessionOptions::default();
    let snapshot = state.snapshot();
    {
        let mut s = build_state(
            &snapshot,
            conf(),
            scheduler.clone(),
            Timestamp::UNIX_EPOCH,
            "s".into(),
        );
        let job = s.jobs.get_unmarked_mut(0).expect("the PodGroup's job");
        job.renewed_condition = Some("Scheduled");
    }
    let s = build_state(
        &snapshot,
        conf(),
        scheduler.clone(),
        Timestamp::UNIX_EPOCH,
        "s".into(),
    );
    assert_eq!(carried(&scheduler).jobs, 1, "the job row was taken over");
    assert_eq!(s.jobs[0].renewed_condition, None);
}
