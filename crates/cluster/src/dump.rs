//! A dump of the daemon's current view of the cluster, in the simulator's input format
//! (multi-document YAML of ordinary Kubernetes objects), so any live situation can be replayed
//! with `volcano-rs simulate`.

use engine::state::ClusterState;
use serde::Serialize;

fn push<T: Serialize>(out: &mut String, obj: &T) {
    match serde_yaml::to_string(obj) {
        Ok(doc) => {
            out.push_str("---\n");
            out.push_str(&doc);
        }
        Err(e) => tracing::warn!(error = %e, "object left out of the dump"),
    }
}

/// Every object as last observed, namespaces and classes first, pods last.
pub fn dump_yaml(state: &ClusterState) -> String {
    let o = state.observed_objects();
    let mut out = String::new();
    for x in &o.namespaces {
        push(&mut out, x.as_ref());
    }
    for x in &o.priority_classes {
        push(&mut out, x.as_ref());
    }
    for x in &o.queues {
        push(&mut out, x.as_ref());
    }
    for x in &o.nodes {
        push(&mut out, x.as_ref());
    }
    for x in &o.pod_groups {
        push(&mut out, x.as_ref());
    }
    for x in &o.pdbs {
        push(&mut out, x.as_ref());
    }
    for x in &o.resource_quotas {
        push(&mut out, x.as_ref());
    }
    for x in &o.pods {
        push(&mut out, x.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::state::StateOptions;

    #[test]
    fn dump_has_kinds_and_round_trips_through_yaml() {
        let mut s = ClusterState::new(StateOptions::default());
        s.upsert_node(
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}}))
                .expect("node"),
        );
        s.upsert_pod(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"schedulerName": "volcano-rs", "containers": [{"name": "c"}]}
            }))
            .expect("pod"),
        );
        let text = dump_yaml(&s);
        assert!(text.contains("kind: Node"), "{text}");
        assert!(text.contains("kind: Pod"), "{text}");
        let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde_yaml::Value::deserialize(d).expect("yaml"))
            .collect();
        assert_eq!(docs.len(), 2);
    }
    use serde::Deserialize;
}
