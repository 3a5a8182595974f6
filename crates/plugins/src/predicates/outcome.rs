//! Whether a task passes the predicates on a node, without the reasons: a search reads the
//! reasons only when every node fails, while a failing node's statuses cost a few allocations
//! each (their text, the plugin name, the list), more than most checks themselves.

use engine::model::{NodeId, TaskId};

use engine::framework::SessionState;

use super::cache::Verdict;
use super::{Filter, Predicates, TaskFilters};
use crate::k8s::ports::ports_conflict;

impl Predicates {
    /// `predicate`'s pass or fail, when it can be told without its statuses; `None` where the
    /// full run must answer (no prepared state, no class verdicts — memo off or equivalence
    /// cache on —, or volume filters in play). Every status this plugin gives otherwise blocks
    /// allocation (Unschedulable or UnschedulableAndUnresolvable), so it fails exactly when a
    /// filter fails, whichever one comes first.
    pub(super) fn passes(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Option<bool> {
        let f = self.filters.get(&task)?;
        let verdicts = f.stable.as_ref()?;
        if !f.volumes.is_empty() {
            return None;
        }
        let pods = i64::try_from(self.view.pod_count(ssn, node)).unwrap_or(i64::MAX);
        let max_pods = (self.max_pods.get(node.index()).copied())
            .unwrap_or_else(|| ssn.node(node).allocatable().max_task_num);
        if max_pods <= pods {
            return Some(false);
        }
        let skip = self.skip_set(task);
        let pod = ssn.task(task).spec.pod.as_ref();
        match verdicts.get(node.index()) {
            Verdict::Fits => {}
            Verdict::Unknown => {
                // First time for this class and node: the run keeps its verdict.
                let mut statuses = Vec::new();
                let fit = self.stable_by_class(verdicts, ssn, pod, node, skip, f, &mut statuses);
                if !fit || !statuses.is_empty() {
                    return Some(false);
                }
            }
            Verdict::Unschedulable | Verdict::Affinity | Verdict::Taint => return Some(false),
        }
        Some(!self.others_refuse(ssn, task, node, f))
    }

    /// Whether NodePorts, InterPodAffinity or PodTopologySpread refuses, as
    /// [`Predicates::run_others`] runs them.
    fn others_refuse(
        &self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
        f: &TaskFilters,
    ) -> bool {
        let skip = self.skip_set(task);
        let pod = ssn.task(task).spec.pod.as_ref();
        let k8s_node = || ssn.node(node).spec.node.as_ref();
        if self.enabled.node_ports
            && !skip.contains(Filter::NodePorts)
            && !f.host_ports.is_empty()
            && let Some(used) = self.used_ports.get(node.index())
            && ports_conflict(&f.host_ports, &used.ports)
        {
            return true;
        }
        if self.enabled.pod_affinity
            && !skip.contains(Filter::InterPodAffinity)
            && let Some(state) = &f.pod_affinity
            && state.filter_at(pod, node.index(), k8s_node).is_err()
        {
            return true;
        }
        if self.enabled.pod_topology_spread
            && !skip.contains(Filter::PodTopologySpread)
            && let Some(state) = &f.topology_spread
        {
            return state.filter_at(pod, node.index(), k8s_node).is_err();
        }
        false
    }
}
