//! Registry-wide check of every plugin's declared extension points against what it implements:
//! a point declared but left to the trait's default would answer nothing, and a point implemented
//! but not declared would never be called — both silently.

use engine::conf::Arguments;
use engine::framework::{EvictionContext, EvictionKind, ExtensionPoints as EP, take_defaults_run};
use engine::model::{JobId, NodeId, QueueId, TaskId};
use serde_json::json;

use crate::testutil::{TestCluster, pending, queued_group, running};

/// Every point, with its name for messages.
const POINTS: [(EP, &str); 24] = [
    (EP::JOB_ORDER, "JOB_ORDER"),
    (EP::QUEUE_ORDER, "QUEUE_ORDER"),
    (EP::TASK_ORDER, "TASK_ORDER"),
    (EP::VICTIM_QUEUE_ORDER, "VICTIM_QUEUE_ORDER"),
    (EP::PREDICATE, "PREDICATE"),
    (EP::PRE_PREDICATE, "PRE_PREDICATE"),
    (EP::NODE_ORDER, "NODE_ORDER"),
    (EP::BATCH_NODE_ORDER, "BATCH_NODE_ORDER"),
    (EP::PREEMPTABLE, "PREEMPTABLE"),
    (EP::RECLAIMABLE, "RECLAIMABLE"),
    (EP::VICTIM_TASKS, "VICTIM_TASKS"),
    (EP::OVERUSED, "OVERUSED"),
    (EP::ALLOCATABLE, "ALLOCATABLE"),
    (EP::PREEMPTIVE, "PREEMPTIVE"),
    (EP::JOB_VALID, "JOB_VALID"),
    (EP::JOB_READY, "JOB_READY"),
    (EP::JOB_PIPELINED, "JOB_PIPELINED"),
    (EP::JOB_ENQUEUEABLE, "JOB_ENQUEUEABLE"),
    (EP::JOB_ENQUEUED, "JOB_ENQUEUED"),
    (EP::JOB_STARVING, "JOB_STARVING"),
    (EP::EVENT_HANDLER, "EVENT_HANDLER"),
    (EP::EVICTION_GUARD, "EVICTION_GUARD"),
    (EP::UNIFIED_EVICTABLE, "UNIFIED_EVICTABLE"),
    (EP::PRE_BIND, "PRE_BIND"),
];

/// Discards an answer: only whether the default body ran matters.
fn ignore<T>(_answer: T) {}

#[test]
fn every_plugin_implements_exactly_what_it_declares() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "8", "memory": "16Gi", "pods": "110"}));
    c.queue(json!({"metadata": {"name": "q"}, "spec": {"weight": 1}}));
    c.pod_group(queued_group("pg", "q", "Running", None));
    running(&mut c, "run", "pg", "1");
    pending(&mut c, "wait", "pg", "1");
    let mut ssn = c.session(&[]);
    let registry = crate::registry();
    let (task, other) = (TaskId::from_index(0), TaskId::from_index(1));
    let (job, node, queue) = (
        JobId::from_index(0),
        NodeId::from_index(0),
        QueueId::from_index(0),
    );
    let request = ssn.state.task(task).resreq().clone();
    let mut problems = Vec::new();
    for name in registry.names() {
        let builder = registry.get(name).expect("registered");
        let mut plugin = builder(&Arguments::new());
        plugin.on_session_open(&mut ssn.state);
        let declared = plugin.extension_points();
        let possible = plugin.possible_extension_points();
        let st = &ssn.state;
        take_defaults_run();
        let mut defaults = EP::NONE;
        let mut probe = |point: EP, call: &mut dyn FnMut()| {
            call();
            if take_defaults_run().contains(point) {
                defaults = defaults | point;
            }
        };
        probe(EP::JOB_ORDER, &mut || {
            ignore(plugin.job_order(st, job, job))
        });
        probe(EP::QUEUE_ORDER, &mut || {
            ignore(plugin.queue_order(st, queue, queue))
        });
        probe(EP::TASK_ORDER, &mut || {
            ignore(plugin.task_order(st, task, other))
        });
        probe(EP::VICTIM_QUEUE_ORDER, &mut || {
            ignore(plugin.victim_queue_order(st, queue, queue, queue))
        });
        probe(EP::PREDICATE, &mut || {
            ignore(plugin.predicate(st, task, node))
        });
        probe(EP::NODE_ORDER, &mut || {
            ignore(plugin.node_order(st, task, node))
        });
        probe(EP::BATCH_NODE_ORDER, &mut || {
            ignore(plugin.batch_node_order(st, task, &[node]))
        });
        probe(EP::PREEMPTABLE, &mut || {
            ignore(plugin.preemptable(st, other, &[task]))
        });
        probe(EP::RECLAIMABLE, &mut || {
            ignore(plugin.reclaimable(st, other, &[task]))
        });
        probe(EP::VICTIM_TASKS, &mut || {
            ignore(plugin.victim_tasks(st, &[task]))
        });
        probe(EP::OVERUSED, &mut || ignore(plugin.overused(st, queue)));
        probe(EP::ALLOCATABLE, &mut || {
            ignore(plugin.allocatable(st, queue, other))
        });
        probe(EP::PREEMPTIVE, &mut || {
            ignore(plugin.preemptive(st, queue, &request))
        });
        probe(EP::JOB_VALID, &mut || ignore(plugin.job_valid(st, job)));
        probe(EP::JOB_READY, &mut || ignore(plugin.job_ready(st, job)));
        probe(EP::JOB_PIPELINED, &mut || {
            ignore(plugin.job_pipelined(st, job))
        });
        probe(EP::JOB_ENQUEUEABLE, &mut || {
            ignore(plugin.job_enqueueable(st, job))
        });
        probe(EP::JOB_STARVING, &mut || {
            ignore(plugin.job_starving(st, job))
        });
        probe(EP::EVICTION_GUARD, &mut || {
            ignore(plugin.eviction_guard(st, &[task]))
        });
        probe(EP::UNIFIED_EVICTABLE, &mut || {
            let ctx = EvictionContext {
                kind: EvictionKind::GangPreempt,
                job,
            };
            ignore(plugin.unified_evictable(st, &ctx, &[task]))
        });
        probe(EP::PRE_BIND, &mut || ignore(plugin.pre_bind(st, task)));
        // The mutating points last, on the same instance.
        probe(EP::PRE_PREDICATE, &mut || {
            ignore(plugin.pre_predicate(st, other))
        });
        probe(EP::JOB_ENQUEUED, &mut || plugin.job_enqueued(st, job));
        // Either handler makes the plugin an event handler.
        ignore(plugin.on_allocate(st, other));
        let allocate_default = take_defaults_run().contains(EP::EVENT_HANDLER);
        plugin.on_deallocate(st, other);
        if allocate_default && take_defaults_run().contains(EP::EVENT_HANDLER) {
            defaults = defaults | EP::EVENT_HANDLER;
        }
        for (point, point_name) in POINTS {
            let implemented = !defaults.contains(point);
            if declared.contains(point) && !implemented {
                problems.push(format!(
                    "{name} declares {point_name} but does not implement it"
                ));
            }
            if implemented && !possible.contains(point) {
                problems.push(format!(
                    "{name} implements {point_name} but never declares it"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
