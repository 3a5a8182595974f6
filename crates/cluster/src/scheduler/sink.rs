//! Where a scheduler's writes go: the API server (the executor) or memory (the simulator and
//! the scheduler's tests). One trait, so that the loop that decides is the same everywhere and
//! the write policy belongs to whoever writes.

use std::time::Duration;

use engine::framework::{Decisions, Event};
use futures::future::BoxFuture;

/// Takes what sessions decide. Implementations decide how and in which order the writes are
/// made; the [`Scheduler`](super::Scheduler) only relies on the contract of each method.
pub trait WriteSink: Send + Sync {
    /// Records a session's binds and evictions in the state the next snapshot is taken from,
    /// before any of them is written, so that no later session decides them again. Called
    /// right after the session closes, while no other snapshot can be taken.
    fn assume(&self, decisions: &Decisions);

    /// Writes a session's decisions. The returned future resolves when the next session may
    /// run; which writes that waits for is the sink's policy, and it must keep the next
    /// session from deciding a write again while it is still under way (by waiting for it, or
    /// by replacing the waiting write with the newer decision). Dropping the future does not
    /// cancel the writes.
    fn write(&self, decisions: Decisions) -> BoxFuture<'static, ()>;

    /// [`assume`](Self::assume), then [`write`](Self::write); a sink may start writing
    /// before everything is assumed, but never a write before its own assumption, and all is
    /// assumed when the returned future resolves.
    fn assume_and_write(&self, decisions: Decisions) -> BoxFuture<'static, ()> {
        self.assume(&decisions);
        self.write(decisions)
    }

    /// Publishes one event that is not part of a session (configuration outcomes, malformed
    /// objects the watches met).
    fn publish(&self, event: Event) -> BoxFuture<'static, ()>;

    /// Creates the queue unless it exists (spec/kubernetes.md §4.8.3).
    fn ensure_queue(&self, name: &str, reclaimable: bool)
    -> BoxFuture<'static, Result<(), String>>;

    /// Waits, at most `within`, for every write still under way; true when all finished.
    fn drain(&self, within: Duration) -> BoxFuture<'static, bool>;
}
