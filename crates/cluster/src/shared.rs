//! The cluster state shared by the watchers (writers), the session loop (snapshots) and the
//! executor (assumed binds and their rollbacks).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use engine::state::{ClusterState, Snapshot};
use tokio::sync::Notify;

/// The resource kinds the daemon mirrors; a session runs only once each has listed once.
pub const MIRRORED_KINDS: &[&str] = &[
    "Pod",
    "Node",
    "PodGroup",
    "Queue",
    "PriorityClass",
    "PodDisruptionBudget",
    "ResourceQuota",
    "Namespace",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "HyperNode",
    "Numatopology",
];

pub struct Shared {
    state: Mutex<ClusterState>,
    synced: Mutex<BTreeSet<&'static str>>,
    /// Woken when pending work of ours arrives, so a session can start before the period ends.
    pub work: Notify,
    /// Woken whenever every kind has listed once.
    pub sync_done: Notify,
    /// Kinds whose watch is broken: the time of its last error. Cleared by the next event.
    broken: Mutex<BTreeMap<&'static str, Instant>>,
}

/// A broken watch retries at least once a second; a kind with no error for this long is taken
/// as working again even if no event came through (a quiet kind may have nothing to say).
pub const BROKEN_WATCH_WINDOW: Duration = Duration::from_secs(2);

impl Shared {
    pub fn new(state: ClusterState) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(state),
            synced: Mutex::new(BTreeSet::new()),
            work: Notify::new(),
            sync_done: Notify::new(),
            broken: Mutex::new(BTreeMap::new()),
        })
    }

    /// A watch of `kind` failed (disconnect, API server down, expired resource version).
    pub fn watch_failed(&self, kind: &'static str) {
        self.broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(kind, Instant::now());
    }

    /// A watch of `kind` delivered an event: it works.
    pub fn watch_working(&self, kind: &'static str) {
        let mut b = self.broken.lock().unwrap_or_else(|p| p.into_inner());
        if b.remove(kind).is_some() {
            drop(b);
            // Sessions paused while it was broken: start one now.
            self.work.notify_one();
        }
    }

    /// Kinds whose watch failed within [`BROKEN_WATCH_WINDOW`] and has delivered nothing since.
    /// Sessions wait while there are any: they would decide on a view that is going stale, and
    /// every write they made would fail against an unreachable API server.
    pub fn broken_watches(&self) -> Vec<&'static str> {
        let now = Instant::now();
        self.broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, at)| now.duration_since(**at) < BROKEN_WATCH_WINDOW)
            .map(|(k, _)| *k)
            .collect()
    }

    /// Locks the state. Watch handlers and snapshots hold it only for one short step; a
    /// poisoned lock (a panic elsewhere) still yields the state, which stays consistent
    /// because every mutation is a single upsert/delete.
    pub fn lock(&self) -> MutexGuard<'_, ClusterState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn snapshot(&self) -> Snapshot {
        self.lock().snapshot()
    }

    pub fn mark_synced(&self, kind: &'static str) {
        let all = {
            let mut s = self.synced.lock().unwrap_or_else(|p| p.into_inner());
            s.insert(kind);
            MIRRORED_KINDS.iter().all(|k| s.contains(k))
        };
        if all {
            self.sync_done.notify_waiters();
        }
    }

    /// Every mirrored kind has completed its first list.
    pub fn all_synced(&self) -> bool {
        let s = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        MIRRORED_KINDS.iter().all(|k| s.contains(k))
    }

    /// Kinds still waiting for their first list (for /readyz and logs).
    pub fn unsynced_kinds(&self) -> Vec<&'static str> {
        let s = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        MIRRORED_KINDS
            .iter()
            .copied()
            .filter(|k| !s.contains(k))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::state::StateOptions;

    #[test]
    fn a_broken_watch_pauses_until_an_event_or_a_quiet_window() {
        let shared = Shared::new(ClusterState::new(StateOptions::default()));
        assert!(shared.broken_watches().is_empty());
        shared.watch_failed("Pod");
        shared.watch_failed("Node");
        assert_eq!(shared.broken_watches(), vec!["Node", "Pod"]);
        shared.watch_working("Pod");
        assert_eq!(shared.broken_watches(), vec!["Node"]);
        // No error for longer than the window: taken as working even without an event.
        shared
            .broken
            .lock()
            .expect("lock")
            .insert("Node", Instant::now() - BROKEN_WATCH_WINDOW);
        assert!(shared.broken_watches().is_empty());
    }
}
