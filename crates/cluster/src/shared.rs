//! The cluster state shared by the watchers (writers), the session loop (snapshots) and the
//! executor (assumed binds and their rollbacks).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

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
];

pub struct Shared {
    state: Mutex<ClusterState>,
    synced: Mutex<BTreeSet<&'static str>>,
    /// Woken when pending work of ours arrives, so a session can start before the period ends.
    pub work: Notify,
    /// Woken whenever every kind has listed once.
    pub sync_done: Notify,
}

impl Shared {
    pub fn new(state: ClusterState) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(state),
            synced: Mutex::new(BTreeSet::new()),
            work: Notify::new(),
            sync_done: Notify::new(),
        })
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
