//! Numatopology reports in the cluster state (spec/plugins-more.md §11): each node's NUMA
//! layout as its agent last reported it, by node name (the object is named after its node),
//! and the CPUs `numa-aware` gave pods bound since (Volcano's `UnassignedNumaPods`): while one
//! of those pods is not in its node's report yet, all of them still hold their CPUs, so that a
//! later session does not give them away again before the kubelet has taken them.

use std::collections::BTreeMap;
use std::sync::Arc;

use apis::Numatopology;

use super::ClusterState;

impl ClusterState {
    /// Adds or replaces a node's report; true when it is new or its spec changed.
    pub fn upsert_numatopology(&mut self, n: Numatopology) -> bool {
        let name = n.metadata.name.clone().unwrap_or_default();
        // Once every pod given CPUs here is in the report, the report alone is the truth.
        if let Some(given) = self.numa_given.get(&name)
            && given.iter().all(|(pod, g)| reported(&n, pod, &g.uid))
        {
            Arc::make_mut(&mut self.numa_given).remove(&name);
        }
        let changed = self
            .numatopologies
            .get(&name)
            .is_none_or(|old| old.spec != n.spec);
        Arc::make_mut(&mut self.numatopologies).insert(name, Arc::new(n));
        changed
    }

    /// Removes a node's report; true when it was there.
    pub fn delete_numatopology(&mut self, name: &str) -> bool {
        if !self.numatopologies.contains_key(name) {
            return false;
        }
        Arc::make_mut(&mut self.numatopologies).remove(name);
        true
    }

    /// The reports by node name.
    pub fn numatopologies(&self) -> &Arc<BTreeMap<String, Arc<Numatopology>>> {
        &self.numatopologies
    }
}

/// The CPUs a bound pod was given: resource name → CPU list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumaGiven {
    pub uid: String,
    pub resources: BTreeMap<String, String>,
}

/// Whether the node's report lists the pod (by uid, or by namespace and name).
fn reported(n: &Numatopology, pod_key: &str, uid: &str) -> bool {
    n.spec.pod_allocations.iter().any(|a| {
        (!uid.is_empty() && a.uid == uid) || format!("{}/{}", a.namespace, a.name) == pod_key
    })
}

impl ClusterState {
    /// Records the CPUs `numa-aware` gave a pod it bound to `node`.
    pub fn assume_numa(&mut self, node: &str, pod_key: &str, given: NumaGiven) {
        // Pods deleted since hold nothing; forgetting them here keeps the table to live pods
        // on a node whose agent never reports.
        let pods = self.pods.clone();
        let on_node = Arc::make_mut(&mut self.numa_given)
            .entry(node.to_string())
            .or_default();
        on_node.retain(|pod, _| pods.contains_key(pod));
        on_node.insert(pod_key.to_string(), given);
    }

    /// What still holds CPUs on `node` beyond its report: every recorded pod's CPUs while one
    /// of them (still present) is not in the report; nothing otherwise. Pods deleted since are
    /// left out (Volcano keeps them until every pod of the node is reported, which a deleted
    /// pod never is).
    pub fn numa_pre_occupied(&self, node: &str) -> Vec<&NumaGiven> {
        let Some(given) = self.numa_given.get(node) else {
            return Vec::new();
        };
        let live: Vec<(&String, &NumaGiven)> = given
            .iter()
            .filter(|(pod, _)| self.pod(pod).is_some())
            .collect();
        let report = self.numatopologies.get(node);
        let waiting = live
            .iter()
            .any(|(pod, g)| report.is_none_or(|n| !reported(n, pod, &g.uid)));
        if waiting {
            live.into_iter().map(|(_, g)| g).collect()
        } else {
            Vec::new()
        }
    }
}
