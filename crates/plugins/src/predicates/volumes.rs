//! The volume filters in `predicates` (spec `kubernetes.md` §7.9.4): VolumeRestrictions,
//! NodeVolumeLimits, VolumeZone and VolumeBinding on the rules of [`crate::k8s::volumes`], and
//! the volume bindings the session assumes for the tasks it places (upstream Reserve and
//! Unreserve), so that two pods of one session do not take the same volume.

use std::collections::HashMap;

use engine::framework::{SessionState, VolumeWrite};
use engine::model::{FitStatus, NodeId, StatusCode, TaskId};
use k8s_openapi::api::core::v1::Pod;

use super::{Filter, SkipSet, aborts, status};
use crate::k8s::labels::node_name;
use crate::k8s::pod_view::PodView;
use crate::k8s::volumes::binding::{self, ClaimGroups, PodVolumes};
use crate::k8s::volumes::restrictions::{self, RestrictionState};
use crate::k8s::volumes::zone::{self, VolumeTopology};
use crate::k8s::volumes::{Assumed, Failure, limits};

/// Which volume filters are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VolumeSwitches {
    pub restrictions: bool,
    pub limits: bool,
    pub zone: bool,
    pub binding: bool,
}

/// What the volume PreFilters prepared for one task; a field is set when that filter runs.
#[derive(Debug, Default)]
pub(super) struct VolumeFilters {
    restrictions: Option<RestrictionState>,
    /// The pod's countable CSI volumes, when NodeVolumeLimits runs for it.
    limits: Option<limits::NewVolumes>,
    zone: Option<Vec<VolumeTopology>>,
    binding: Option<ClaimGroups>,
}

impl VolumeFilters {
    /// Whether no volume filter runs for the task.
    pub(super) fn is_empty(&self) -> bool {
        self.restrictions.is_none()
            && self.limits.is_none()
            && self.zone.is_none()
            && self.binding.is_none()
    }
}

fn prefilter_error(filter: Filter, failure: Failure) -> String {
    let message = match failure {
        Failure::Unschedulable(m) | Failure::Unresolvable(m) | Failure::Error(m) => m,
    };
    format!("plugin {} pre-predicates failed {message}", filter.name())
}

fn failure_status(failure: Failure, filter: Filter) -> FitStatus {
    match failure {
        Failure::Unschedulable(m) => status(StatusCode::Unschedulable, m, filter),
        Failure::Unresolvable(m) => status(StatusCode::UnschedulableAndUnresolvable, m, filter),
        Failure::Error(m) => status(StatusCode::Error, m, filter),
    }
}

impl VolumeSwitches {
    /// PreFilters of VolumeRestrictions, NodeVolumeLimits and VolumeZone, in Volcano's order
    /// (after InterPodAffinity, before PodTopologySpread).
    pub(super) fn prefilter_early(
        &self,
        ssn: &SessionState,
        view: &PodView,
        pod: &Pod,
        skip: &mut SkipSet,
        f: &mut VolumeFilters,
    ) -> Result<(), String> {
        let storage = ssn.snapshot();
        if self.restrictions {
            let placed = view.placed(ssn).map(|p| p.pod);
            match restrictions::prefilter(pod, storage, placed) {
                Ok(Some(state)) => f.restrictions = Some(state),
                Ok(None) => skip.insert(Filter::VolumeRestrictions),
                Err(e) => return Err(prefilter_error(Filter::VolumeRestrictions, e)),
            }
        }
        if self.limits {
            if limits::applies(pod) {
                f.limits = Some(limits::new_volumes(pod, storage));
            } else {
                skip.insert(Filter::NodeVolumeLimits);
            }
        }
        if self.zone {
            match zone::prefilter(pod, storage) {
                Ok(Some(topology)) => f.zone = Some(topology),
                Ok(None) => skip.insert(Filter::VolumeZone),
                Err(e) => return Err(prefilter_error(Filter::VolumeZone, e)),
            }
        }
        Ok(())
    }

    /// VolumeBinding's PreFilter (last in Volcano's order).
    pub(super) fn prefilter_binding(
        &self,
        ssn: &SessionState,
        pod: &Pod,
        skip: &mut SkipSet,
        f: &mut VolumeFilters,
    ) -> Result<(), String> {
        if !self.binding {
            return Ok(());
        }
        match binding::prefilter(pod, ssn.snapshot()) {
            Ok(Some(groups)) => f.binding = Some(groups),
            Ok(None) => skip.insert(Filter::VolumeBinding),
            Err(e) => return Err(prefilter_error(Filter::VolumeBinding, e)),
        }
        Ok(())
    }

    /// Filters of VolumeRestrictions, NodeVolumeLimits and VolumeZone, in order, each run only
    /// if the one before did not abort; `false` when one aborted.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn filter_early(
        &self,
        ssn: &SessionState,
        view: &PodView,
        pod: &Pod,
        node: NodeId,
        skip: SkipSet,
        f: &VolumeFilters,
        statuses: &mut Vec<FitStatus>,
    ) -> bool {
        // Reached only when a filter runs: most pods skip them all, and the node object is a
        // cache miss per node of every search.
        let k8s_node = || ssn.node(node).spec.node.as_ref();
        // Records a failure; true when it ends the run.
        let mut failed = |filter: Filter, result: Result<(), Failure>| match result {
            Ok(()) => false,
            Err(failure) => {
                let st = failure_status(failure, filter);
                let stop = aborts(st.code);
                statuses.push(st);
                stop
            }
        };
        if self.restrictions
            && !skip.contains(Filter::VolumeRestrictions)
            && let Some(state) = &f.restrictions
            && failed(
                Filter::VolumeRestrictions,
                restrictions::filter(state, pod, view.pods_on(ssn, node)),
            )
        {
            return false;
        }
        if self.limits
            && !skip.contains(Filter::NodeVolumeLimits)
            && let Some(new) = &f.limits
            && failed(
                Filter::NodeVolumeLimits,
                limits::filter(new, k8s_node(), view.pods_on(ssn, node), ssn.snapshot()),
            )
        {
            return false;
        }
        if self.zone
            && !skip.contains(Filter::VolumeZone)
            && let Some(topology) = &f.zone
            && failed(
                Filter::VolumeZone,
                zone::filter(topology, k8s_node()).map_err(Failure::Unresolvable),
            )
        {
            return false;
        }
        true
    }

    /// VolumeBinding's Filter.
    pub(super) fn filter_binding(
        &self,
        ssn: &SessionState,
        assumed: &VolumeAssumptions,
        node: NodeId,
        skip: SkipSet,
        f: &VolumeFilters,
        statuses: &mut Vec<FitStatus>,
    ) {
        if !self.binding || skip.contains(Filter::VolumeBinding) {
            return;
        }
        let Some(groups) = &f.binding else {
            return;
        };
        let k8s_node = ssn.node(node).spec.node.as_ref();
        if let Err(failure) = binding::filter(groups, k8s_node, ssn.snapshot(), &assumed.all) {
            statuses.push(failure_status(failure, Filter::VolumeBinding));
        }
    }
}

/// The volume bindings assumed for the tasks placed in this session (upstream's assume caches).
#[derive(Debug, Default)]
pub(super) struct VolumeAssumptions {
    by_task: HashMap<TaskId, (String, PodVolumes)>,
    all: Assumed,
}

impl VolumeAssumptions {
    /// The bindings earlier sessions decided that the watch has not shown yet, so that this
    /// session does not give their volumes away again.
    pub(super) fn open(ssn: &SessionState) -> Self {
        let snapshot = ssn.snapshot();
        VolumeAssumptions {
            by_task: HashMap::new(),
            all: Assumed {
                volume_claims: snapshot.assumed_volume_claims().clone(),
                selected_nodes: snapshot.assumed_selected_nodes().clone(),
            },
        }
    }

    /// Upstream Reserve: the volumes the task gets on its node become promised. A task whose
    /// volumes cannot be worked out (no claims, or a state that changed) reserves nothing.
    pub(super) fn reserve(&mut self, ssn: &SessionState, task: TaskId) {
        self.unreserve(task);
        let Some(node) = ssn.task(task).node else {
            return;
        };
        let pod = ssn.task(task).spec.pod.as_ref();
        let Ok(Some(groups)) = binding::prefilter(pod, ssn.snapshot()) else {
            return;
        };
        let k8s_node = ssn.node(node).spec.node.as_ref();
        let Ok(volumes) = binding::filter(&groups, k8s_node, ssn.snapshot(), &self.all) else {
            return;
        };
        if volumes.is_empty() {
            return;
        }
        let node_name = node_name(k8s_node).to_owned();
        for (volume, claim) in &volumes.bindings {
            self.all.volume_claims.insert(volume.clone(), claim.clone());
        }
        for claim in &volumes.provisions {
            self.all
                .selected_nodes
                .insert(claim.clone(), node_name.clone());
        }
        self.by_task.insert(task, (node_name, volumes));
    }

    /// Upstream PreBind's writes for a task: its promised volumes and its provisions.
    pub(super) fn writes(&self, task: TaskId) -> Vec<VolumeWrite> {
        let Some((node, volumes)) = self.by_task.get(&task) else {
            return Vec::new();
        };
        let binds = volumes
            .bindings
            .iter()
            .map(|(volume, claim)| VolumeWrite::BindVolume {
                volume: volume.clone(),
                claim: claim.clone(),
            });
        let provisions = volumes
            .provisions
            .iter()
            .map(|claim| VolumeWrite::SelectNode {
                claim: claim.clone(),
                node: node.clone(),
            });
        binds.chain(provisions).collect()
    }

    /// Upstream Unreserve: the task's promises are withdrawn.
    pub(super) fn unreserve(&mut self, task: TaskId) {
        let Some((_, volumes)) = self.by_task.remove(&task) else {
            return;
        };
        for (volume, _) in &volumes.bindings {
            self.all.volume_claims.remove(volume);
        }
        for claim in &volumes.provisions {
            self.all.selected_nodes.remove(claim);
        }
    }
}
