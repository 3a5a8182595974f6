//! A dump of the daemon's current view of the cluster, in the simulator's input format
//! (multi-document YAML of ordinary Kubernetes objects), so any live situation can be replayed
//! with `volcano-rs simulate`.
//!
//! The first document is the scheduler configuration in force (`kind: SchedulerConfiguration`,
//! which the simulator uses when it is given no `--scheduler-conf`), so a replay decides with
//! the same policy. Nothing a pod carries for its program is kept: container `env` values,
//! `command` and `args` are dropped (an `env` entry keeps its name and its `valueFrom`
//! reference), and so is the `kubectl.kubernetes.io/last-applied-configuration` annotation of
//! every object, which repeats the whole manifest. None of it plays a part in scheduling.

use engine::conf::SchedulerConf;
use engine::state::ClusterState;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// `apiVersion` of the configuration document (read by `volcano-rs simulate`).
pub const CONF_API_VERSION: &str = "volcano-rs/v1";
/// `kind` of the configuration document.
pub const CONF_KIND: &str = "SchedulerConfiguration";

/// `kind` of a node-load document (the `usage` plugin's input; `volcano-rs simulate` reads it).
pub const NODE_USAGE_KIND: &str = "NodeUsage";

/// One node's measured load: `cpu` and `memory` in percent (0–100), `metricsTime` when it was
/// sampled (RFC 3339; the simulator takes its own clock when it is missing, i.e. fresh).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeUsageDocument {
    pub api_version: String,
    pub kind: String,
    pub metadata: NodeUsageMeta,
    pub cpu: f64,
    pub memory: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_time: Option<k8s_openapi::jiff::Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct NodeUsageMeta {
    pub name: String,
}

impl NodeUsageDocument {
    pub fn new(node: &str, usage: &engine::model::NodeUsage) -> Self {
        NodeUsageDocument {
            api_version: CONF_API_VERSION.to_string(),
            kind: NODE_USAGE_KIND.to_string(),
            metadata: NodeUsageMeta {
                name: node.to_string(),
            },
            cpu: usage.cpu_percent,
            memory: usage.memory_percent,
            metrics_time: Some(usage.metrics_time),
        }
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn push<T: Serialize>(out: &mut String, obj: &T) {
    match serde_saphyr::to_string(obj) {
        Ok(doc) => {
            out.push_str("---\n");
            out.push_str(&doc);
        }
        Err(e) => tracing::warn!(error = %e, "object left out of the dump"),
    }
}

/// The configuration document: the configuration in force, as YAML text.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfDocument {
    api_version: &'static str,
    kind: &'static str,
    conf: String,
}

fn without_last_applied(meta: &ObjectMeta) -> ObjectMeta {
    let mut meta = meta.clone();
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
    meta
}

/// A copy of an object with its `last-applied-configuration` annotation removed.
fn clean<T: k8s_openapi::Metadata<Ty = ObjectMeta> + Clone>(obj: &T) -> T {
    let mut obj = obj.clone();
    *obj.metadata_mut() = without_last_applied(obj.metadata());
    obj
}

fn redact_container(c: &mut Container) {
    c.command = None;
    c.args = None;
    for e in c.env.iter_mut().flatten() {
        e.value = None;
    }
}

/// A pod as the scheduler needs it: no env values, commands, arguments or last-applied copy.
fn redact_pod(pod: &Pod) -> Pod {
    let mut pod = clean(pod);
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers.iter_mut().for_each(redact_container);
        spec.init_containers
            .iter_mut()
            .flatten()
            .for_each(redact_container);
        for c in spec.ephemeral_containers.iter_mut().flatten() {
            c.command = None;
            c.args = None;
            for e in c.env.iter_mut().flatten() {
                e.value = None;
            }
        }
    }
    pod
}

/// Every object as last observed (configuration first, then namespaces and classes, pods last),
/// without the fields the module doc lists.
pub fn dump_yaml(state: &ClusterState, conf: Option<&SchedulerConf>) -> String {
    let o = state.observed_objects();
    let mut out = String::new();
    if let Some(conf) = conf {
        push(
            &mut out,
            &ConfDocument {
                api_version: CONF_API_VERSION,
                kind: CONF_KIND,
                conf: conf.to_yaml(),
            },
        );
    }
    for x in &o.namespaces {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.priority_classes {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.queues {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.nodes {
        push(&mut out, &clean(x.as_ref()));
    }
    for (node, usage) in state.node_usages() {
        push(&mut out, &NodeUsageDocument::new(node, usage));
    }
    for x in &o.pod_groups {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.pdbs {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.resource_quotas {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.storage_classes {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.csi_nodes {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.hyper_nodes {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.numatopologies {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.volumes {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.claims {
        push(&mut out, &clean(x.as_ref()));
    }
    for x in &o.pods {
        push(&mut out, &redact_pod(x.as_ref()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::state::StateOptions;

    fn state_with_secret_pod() -> ClusterState {
        let mut s = ClusterState::new(StateOptions::default());
        s.upsert_node(
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}}))
                .expect("node"),
        );
        s.upsert_pod(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "ns", "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"spec\":{\"containers\":[{\"env\":[{\"name\":\"DB_PASSWORD\",\"value\":\"hunter2-in-annotation\"}]}]}}",
                    "keep": "me"
                }},
                "spec": {"schedulerName": "volcano-rs", "containers": [{
                    "name": "c",
                    "command": ["/bin/run", "--token=hunter2-in-command"],
                    "args": ["--password", "hunter2-in-args"],
                    "env": [
                        {"name": "DB_PASSWORD", "value": "hunter2-in-env"},
                        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                    ],
                    "resources": {"requests": {"cpu": "1"}}
                }],
                "initContainers": [{"name": "i", "env": [{"name": "X", "value": "hunter2-in-init"}]}]}
            }))
            .expect("pod"),
        );
        s
    }

    fn documents(text: &str) -> Vec<serde_json::Value> {
        serde_saphyr::from_multiple(text).expect("yaml")
    }

    #[test]
    fn dump_has_kinds_and_round_trips_through_yaml() {
        let text = dump_yaml(&state_with_secret_pod(), None);
        assert!(text.contains("kind: Node"), "{text}");
        assert!(text.contains("kind: Pod"), "{text}");
        assert_eq!(documents(&text).len(), 2);
    }

    #[test]
    fn dump_carries_node_load_for_the_usage_plugin() {
        let mut s = state_with_secret_pod();
        let at: k8s_openapi::jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let usage = engine::model::NodeUsage {
            cpu_percent: 42.5,
            memory_percent: 10.0,
            metrics_time: at,
        };
        s.set_node_usage([("n1".to_string(), usage)]);
        let docs = documents(&dump_yaml(&s, None));
        let doc = docs
            .iter()
            .find(|d| d["kind"].as_str() == Some(NODE_USAGE_KIND))
            .expect("a NodeUsage document");
        let read: NodeUsageDocument = serde_json::from_value(doc.clone()).expect("decodes");
        assert_eq!(read, NodeUsageDocument::new("n1", &usage));
    }

    #[test]
    fn dump_keeps_no_secret_values_commands_or_last_applied() {
        let text = dump_yaml(&state_with_secret_pod(), None);
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains(LAST_APPLIED), "{text}");
        // What scheduling needs stays: names, references, requests, other annotations.
        for kept in [
            "DB_PASSWORD",
            "FROM_SECRET",
            "secretKeyRef",
            "cpu: \"1\"",
            "keep: me",
        ] {
            assert!(text.contains(kept), "{kept} missing from {text}");
        }
    }

    #[test]
    fn dump_starts_with_the_configuration_in_force() {
        let conf = SchedulerConf::embedded_default();
        let text = dump_yaml(&state_with_secret_pod(), Some(&conf));
        let docs = documents(&text);
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0]["kind"].as_str(), Some(CONF_KIND));
        assert_eq!(docs[0]["apiVersion"].as_str(), Some(CONF_API_VERSION));
        let conf_text = docs[0]["conf"].as_str().expect("conf text");
        assert!(conf_text.contains("name: proportion"), "{conf_text}");
    }
}
