//! Test helpers: a session whose only plugin is the test's own, on a small cluster of three
//! nodes and one job, to count the calls an action makes.

use std::sync::Arc;

use serde_json::json;

use crate::conf::{KnownNames, parse};
use crate::framework::{PluginBuilder, PluginRegistry, Session, SessionOptions};
use crate::state::{ClusterState, StateOptions};

/// Three nodes of 4 cpu; one PodGroup `ns/pg` of `pods` pending pods of 1 cpu, with
/// `min_member`.
pub fn three_nodes_one_job(min_member: usize, pods: usize) -> ClusterState {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_queue(
        serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": {"weight": 1}}))
            .expect("queue"),
    );
    for n in 0..3 {
        s.upsert_node(
            serde_json::from_value(json!({
                "metadata": {"name": format!("n{n}")},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
            }))
            .expect("node"),
        );
    }
    s.upsert_pod_group(
        serde_json::from_value(json!({"metadata": {"name": "pg", "namespace": "ns"},
            "spec": {"minMember": min_member, "queue": "default"}}))
        .expect("pg"),
    );
    for i in 0..pods {
        s.upsert_pod(
            serde_json::from_value(json!({
                "metadata": {"name": format!("p{i}"), "namespace": "ns", "uid": format!("u{i}"),
                             "annotations": {"scheduling.k8s.io/group-name": "pg"}},
                "spec": {"schedulerName": "volcano-rs",
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": "Pending"}
            }))
            .expect("pod"),
        );
    }
    s
}

/// A session of `state` with the allocate action and `plugin` alone, registered as `name`.
pub fn open(
    state: &ClusterState,
    name: &'static str,
    plugin: PluginBuilder,
    search_memo: bool,
) -> Session {
    let known = KnownNames {
        actions: &["allocate"],
        plugins: &[name],
        strict: true,
        check_arguments: None,
    };
    let yaml = format!("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: {name}\n");
    let conf = parse(&yaml, &known).expect("conf").conf;
    let mut registry = PluginRegistry::new();
    registry.register(name, plugin);
    let options = SessionOptions {
        search_memo,
        ..SessionOptions::default()
    };
    Session::open(
        &state.snapshot(),
        Arc::new(conf),
        &registry,
        options,
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        "s".into(),
    )
}
