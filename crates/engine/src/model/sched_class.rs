//! A pod's scheduling class: two pods of one class ask the same of a node, so a plugin that
//! declares its answers node-local gives both the same predicate result and the same score on
//! a node in the same state (the allocate search memo, `actions::search_memo`).
//!
//! The class is a keyed 128-bit hash of the pod's namespace and spec, without the containers'
//! environment, `hostname` and `subdomain` (Volcano's job controller writes the task index into
//! those). The pod's metadata is not part of it: labels and annotations mostly name the pod or
//! its job (Volcano adds the job name, version and task index to both), so keeping them would
//! give every job a class of its own. A plugin whose predicate or score reads the pod's name,
//! uid, labels, annotations, status or job must therefore not declare itself node-local for a
//! task unless that reading cannot change its answer (`predicates` reads labels only for
//! inter-pod affinity and spread, which make a task's answers not node-local anyway).
//!
//! The hash is SipHash with two random per-process keys (std's `RandomState`): 128 bits make an
//! accidental collision negligible, and the random keys keep a pod author from crafting one.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::Write;
use std::sync::OnceLock;

use k8s_openapi::api::core::v1::{Container, Pod};
use serde::Serialize;

/// A scheduling class (see the module documentation).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchedClass(pub u128);

fn keys() -> &'static (RandomState, RandomState) {
    static KEYS: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    KEYS.get_or_init(|| (RandomState::new(), RandomState::new()))
}

/// Feeds serialised bytes into both hashers.
struct TwoHashers<H: Hasher>(H, H);

impl<H: Hasher> Write for TwoHashers<H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        self.1.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Serialize)]
struct ClassView<'a> {
    namespace: &'a Option<String>,
    spec: Option<k8s_openapi::api::core::v1::PodSpec>,
}

fn without_env(containers: &mut [Container]) {
    for c in containers {
        c.env = None;
        c.env_from = None;
    }
}

impl SchedClass {
    /// The class of a pod.
    pub fn of(pod: &Pod) -> SchedClass {
        let meta = &pod.metadata;
        let spec = pod.spec.as_ref().map(|s| {
            let mut s = s.clone();
            s.hostname = None;
            s.subdomain = None;
            without_env(&mut s.containers);
            without_env(s.init_containers.as_deref_mut().unwrap_or_default());
            for c in s.ephemeral_containers.iter_mut().flatten() {
                c.env = None;
                c.env_from = None;
            }
            s
        });
        let view = ClassView {
            namespace: &meta.namespace,
            spec,
        };
        let (a, b) = keys();
        let mut out = TwoHashers(a.build_hasher(), b.build_hasher());
        // Serialising plain data into a hasher cannot fail; should it, the pod gets a class of
        // its own (its uid), which only costs reuse.
        if serde_json::to_writer(&mut out, &view).is_err() {
            out.write_all(meta.uid.as_deref().unwrap_or_default().as_bytes())
                .ok();
        }
        SchedClass(((out.0.finish() as u128) << 64) | out.1.finish() as u128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).expect("pod")
    }

    #[test]
    fn pods_that_differ_only_in_metadata_index_and_env_share_a_class() {
        let a = pod(
            json!({"metadata": {"name": "a-0", "namespace": "ns", "uid": "1",
            "labels": {"app": "x", "volcano.sh/task-index": "0"},
            "annotations": {"scheduling.k8s.io/group-name": "job-a"}},
            "spec": {"hostname": "a-0", "containers": [{"name": "c", "image": "i",
                "env": [{"name": "VC_TASK_INDEX", "value": "0"}]}]}}),
        );
        let b = pod(
            json!({"metadata": {"name": "a-1", "namespace": "ns", "uid": "2",
            "labels": {"app": "x", "volcano.sh/task-index": "1"},
            "annotations": {"scheduling.k8s.io/group-name": "job-b"}},
            "spec": {"hostname": "a-1", "containers": [{"name": "c", "image": "i",
                "env": [{"name": "VC_TASK_INDEX", "value": "1"}]}]}}),
        );
        assert_eq!(SchedClass::of(&a), SchedClass::of(&b));
    }

    #[test]
    fn anything_a_decision_reads_splits_classes() {
        let base = json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let class = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut v = base.clone();
            f(&mut v);
            SchedClass::of(&pod(v))
        };
        let same = class(&|_| {});
        for change in [
            &(|v: &mut serde_json::Value| v["metadata"]["namespace"] = json!("other"))
                as &dyn Fn(&mut serde_json::Value),
            &|v| v["spec"]["containers"][0]["image"] = json!("j"),
            &|v| v["spec"]["nodeSelector"] = json!({"zone": "a"}),
            &|v| v["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]),
            &|v| v["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1"}}),
        ] {
            assert_ne!(class(change), same);
        }
    }
}
