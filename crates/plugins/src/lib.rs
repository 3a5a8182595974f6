//! Volcano's scheduler plugins, one module each (spec/plugins-core.md).
//!
//! [`registry`] returns the builders by their Volcano names; the configuration parser uses the
//! same list to refuse unknown plugin names.

/// Queue bookkeeping shared by `proportion` and `capacity`, and the enqueue-rejection record
/// every admission plugin uses.
pub(crate) mod fairness;
pub mod k8s;
// plugin modules (one line each, keep sorted)
pub mod binpack;
pub mod capacity;
pub mod cdp;
pub mod conformance;
pub mod deviceshare;
pub mod drf;
pub mod extender;
pub mod gang;
pub mod network_topology_aware;
pub mod nodegroup;
pub mod nodeorder;
pub mod numa_aware;
pub mod overcommit;
pub mod pdb;
pub mod predicates;
pub mod priority;
pub mod proportion;
#[cfg(test)]
mod registry_tests;
pub mod rescheduling;
pub mod resource_strategy_fit;
pub mod resourcequota;
pub mod sla;
pub mod task_topology;
pub mod tdm;
#[cfg(test)]
pub(crate) mod testutil;
pub mod usage;

use engine::conf::{ArgWarning, Arguments};
use engine::framework::PluginRegistry;

/// Every plugin this build provides.
pub fn registry() -> PluginRegistry {
    #[allow(unused_mut)]
    let mut registry = PluginRegistry::new();
    // registrations (one line each, keep sorted)
    registry.register(binpack::NAME, binpack::new);
    registry.register(capacity::NAME, capacity::new);
    registry.register(cdp::NAME, cdp::new);
    registry.register(conformance::NAME, conformance::new);
    registry.register(deviceshare::NAME, deviceshare::new);
    registry.register(drf::NAME, drf::new);
    registry.register(extender::NAME, extender::new);
    registry.register(gang::NAME, gang::new);
    registry.register(network_topology_aware::NAME, network_topology_aware::new);
    registry.register(nodegroup::NAME, nodegroup::new);
    registry.register(nodeorder::NAME, nodeorder::new);
    registry.register(numa_aware::NAME, numa_aware::new);
    registry.register(overcommit::NAME, overcommit::new);
    registry.register(pdb::NAME, pdb::new);
    registry.register(predicates::NAME, predicates::new);
    registry.register(priority::NAME, priority::new);
    registry.register(proportion::NAME, proportion::new);
    registry.register(rescheduling::NAME, rescheduling::new);
    registry.register(resource_strategy_fit::NAME, resource_strategy_fit::new);
    registry.register(resourcequota::NAME, resourcequota::new);
    registry.register(sla::NAME, sla::new);
    registry.register(task_topology::NAME, task_topology::new);
    registry.register(tdm::NAME, tdm::new);
    registry.register(usage::NAME, usage::new);
    registry
}

/// The argument check the configuration parser runs on every plugin option
/// ([`engine::conf::ArgumentCheck`]): a plugin that validates its arguments reads them as its
/// builder does and returns what is wrong, so each problem is reported once per configuration
/// load instead of at every session. Plugins without a check read nothing that can be wrong in
/// value, or still report per session.
pub fn check_arguments(plugin: &str, args: &Arguments) -> Vec<ArgWarning> {
    match plugin {
        binpack::NAME => binpack::check_arguments(args),
        deviceshare::NAME => deviceshare::check_arguments(args),
        capacity::NAME => capacity::check_arguments(args),
        extender::NAME => extender::check_arguments(args),
        network_topology_aware::NAME => network_topology_aware::check_arguments(args),
        nodeorder::NAME => nodeorder::check_arguments(args),
        overcommit::NAME => overcommit::check_arguments(args),
        predicates::NAME => predicates::check_arguments(args),
        rescheduling::NAME => rescheduling::check_arguments(args),
        resource_strategy_fit::NAME => resource_strategy_fit::check_arguments(args),
        task_topology::NAME => task_topology::check_arguments(args),
        tdm::NAME => tdm::check_arguments(args),
        usage::NAME => usage::check_arguments(args),
        _ => Vec::new(),
    }
}

/// Names of the plugins this build provides.
pub fn known_plugins() -> Vec<&'static str> {
    registry().names()
}
