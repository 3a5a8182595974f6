//! Actions: the steps of a scheduling cycle (spec/framework.md §6).

pub mod allocate;
pub mod backfill;
pub mod enqueue;
pub mod helper;

use crate::framework::Session;

/// An action runs on the whole session.
pub type ActionFn = fn(&mut Session);

/// Actions this build implements, by their Volcano names.
pub const KNOWN_ACTIONS: &[&str] = &["enqueue", "allocate", "backfill"];

pub fn action_by_name(name: &str) -> Option<ActionFn> {
    match name {
        "enqueue" => Some(enqueue::execute),
        "allocate" => Some(allocate::execute),
        "backfill" => Some(backfill::execute),
        _ => None,
    }
}

/// Runs the configured actions in order (§2.3, §2.6). Returns the wall time of each action
/// as measured by `clock` (the engine reads no clock itself).
pub fn run_configured_actions(ssn: &mut Session, clock: &dyn Fn() -> std::time::Duration) -> Vec<(String, std::time::Duration)> {
    let names = ssn.state.configured_actions.clone();
    let mut timings = Vec::new();
    for name in names {
        let Some(action) = action_by_name(&name) else {
            tracing::error!(action = %name, "unknown action skipped");
            continue;
        };
        ssn.state.current_action = name.clone();
        let start = clock();
        action(ssn);
        timings.push((name.clone(), clock().saturating_sub(start)));
        ssn.state.decisions.actions_run.push(name);
    }
    ssn.state.current_action.clear();
    timings
}
