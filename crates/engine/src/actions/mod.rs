//! Actions: the steps of a scheduling cycle (spec/framework.md §6).

pub mod allocate;
pub mod backfill;
pub mod enqueue;
pub mod gang_eviction;
pub mod helper;
#[cfg(test)]
mod one_plugin_session;
pub mod preempt;
pub mod reclaim;
pub mod search_index;
pub mod search_memo;
pub mod shuffle;
mod victims;

use crate::framework::Session;

/// An action runs on the whole session.
pub type ActionFn = fn(&mut Session);

/// Actions this build implements, by their Volcano names.
pub const KNOWN_ACTIONS: &[&str] = &[
    "enqueue",
    "allocate",
    "preempt",
    "reclaim",
    "backfill",
    "shuffle",
    "gangpreempt",
    "gangreclaim",
];

pub fn action_by_name(name: &str) -> Option<ActionFn> {
    match name {
        "enqueue" => Some(enqueue::execute),
        "allocate" => Some(allocate::execute),
        "backfill" => Some(backfill::execute),
        "preempt" => Some(preempt::execute),
        "reclaim" => Some(reclaim::execute),
        "shuffle" => Some(shuffle::execute),
        "gangpreempt" => Some(gang_eviction::execute_gang_preempt),
        "gangreclaim" => Some(gang_eviction::execute_gang_reclaim),
        _ => None,
    }
}

/// Runs the configured actions in order (§2.3, §2.6). Returns the wall time of each action
/// as measured by `clock` (the engine reads no clock itself).
///
/// On a cluster large enough to share its node searches ([`wants_pool`]) the actions run
/// inside rayon's pool, so the parallel searches they start are picked up by the pool's own
/// threads instead of being handed over from a foreign thread each time (a hand-over per
/// search costs more than a small search itself). On a smaller one they run where they are
/// called: nothing in them would use the pool.
pub fn run_configured_actions(
    ssn: &mut Session,
    clock: &(dyn Fn() -> std::time::Duration + Sync),
) -> Vec<(String, std::time::Duration)> {
    let mut timings = Vec::new();
    let pool = if wants_pool(ssn.state.nodes().len()) {
        pool()
    } else {
        None
    };
    match pool {
        Some(pool) => pool.install(|| run_actions(ssn, clock, &mut timings)),
        None => run_actions(ssn, clock, &mut timings),
    }
    timings
}

/// Whether a session over `nodes` nodes shares its node searches with the pool's threads
/// (below that size every search and score runs on the session's own thread).
pub fn wants_pool(nodes: usize) -> bool {
    nodes >= helper::PARALLEL_MIN_NODES
}

/// The pool sessions run their parallel work on (size from `RAYON_NUM_THREADS`, else one
/// thread per core), built once. `None` if no thread could be started: then actions run inline.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("session-{i}"))
            .build()
            .map_err(|e| tracing::error!(error = %e, "no thread pool for sessions; running inline"))
            .ok()
    })
    .as_ref()
}

/// Runs `work` on a thread of the sessions' pool, so that a session's parallel searches start
/// from a pool thread (no hand-over from a foreign thread). Returns `work` back when there is
/// no pool; the caller then runs it on a thread of its own.
pub fn spawn_on_session_pool<F>(work: F) -> Result<(), F>
where
    F: FnOnce() + Send + 'static,
{
    match pool() {
        Some(pool) => {
            pool.spawn(work);
            Ok(())
        }
        None => Err(work),
    }
}

fn run_actions(
    ssn: &mut Session,
    clock: &(dyn Fn() -> std::time::Duration + Sync),
    timings: &mut Vec<(String, std::time::Duration)>,
) {
    let names = ssn.state.configured_actions().to_vec();
    for name in names {
        let Some(action) = action_by_name(&name) else {
            tracing::error!(action = %name, "unknown action skipped");
            continue;
        };
        ssn.state.begin_action(&name);
        let start = clock();
        action(ssn);
        timings.push((name, clock().saturating_sub(start)));
        ssn.state.end_action();
    }
}
