//! Volcano's scheduler plugins, one module each (spec/plugins-core.md).
//!
//! [`registry`] returns the builders by their Volcano names; the configuration parser uses the
//! same list to refuse unknown plugin names.

pub mod k8s;
// plugin modules (one line each, keep sorted)

use engine::framework::PluginRegistry;

/// Every plugin this build provides.
pub fn registry() -> PluginRegistry {
    #[allow(unused_mut)]
    let mut registry = PluginRegistry::new();
    // registrations (one line each, keep sorted)
    registry
}

/// Names of the plugins this build provides.
pub fn known_plugins() -> Vec<&'static str> {
    registry().names()
}
