//! The thread the sessions of a small cluster run on.
//!
//! Below the size where a session shares its node searches with the engine's thread pool
//! (`engine::actions::wants_pool`), a session runs on one thread from start to end. Run on a
//! pool thread, it left that thread looking for more work when it ended: rayon's idle threads
//! yield the processor in rounds before they sleep, and in steady state, with a session for
//! every new pod, those rounds and the task switches they bring cost about a twentieth of the
//! daemon's CPU. This thread blocks on its queue instead, and wakes only for the next session.
//!
//! A session that is small for sure runs on the async worker that asks for it instead
//! ([`Placement::choose`]): handing it over and back took two thread wake-ups per session,
//! and with a session per new pod that cost the daemon about 6 % of its CPU
//! (docs/benchmarks.md). "Small for sure" is judged from what the last session took and the
//! size of the snapshot, so that a backlog, or a relist after a broken watch, runs on this
//! thread while the worker goes on sending binds and reading the watches. A session that may
//! call out over HTTP (the `extender` plugin) never runs on the worker: it waits for the answer by
//! blocking its thread on the runtime, which the worker itself cannot do, and the wait would
//! hold up everything else the worker does.

use std::sync::mpsc;
use std::time::Duration;

/// Where a session runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Placement {
    /// On the sessions' rayon pool: it shares its node searches with the pool.
    Pool,
    /// On the session thread.
    Thread,
    /// On the async worker that started it, blocking it for the session's length.
    Worker,
}

/// A session the last one of which took longer than this is not run on the async worker: it
/// would hold up the watches and the binds for as long.
pub(super) const WORKER_SESSION_BUDGET: Duration = Duration::from_millis(10);

/// Snapshots of more pods than this run their sessions off the async worker, whatever the last
/// one took: a session's tables grow with the pods, and after a relist most may be new.
pub(super) const WORKER_SESSION_MAX_PODS: usize = 4_096;

/// The plugins whose sessions may wait for an HTTP answer (through the session options'
/// caller, which blocks its thread on the runtime).
pub(super) const CALLS_OUT: &[&str] = &["extender"];

impl Placement {
    /// The placement of a session: `shares_searches` from the engine's rule for the node
    /// count, `calls_out` when its configuration may make HTTP calls, `last` the time the
    /// previous session took (none yet: not the worker), `pods` the snapshot's pods.
    pub(super) fn choose(
        shares_searches: bool,
        calls_out: bool,
        last: Option<Duration>,
        pods: usize,
    ) -> Self {
        if shares_searches {
            Placement::Pool
        } else if !calls_out
            && last.is_some_and(|t| t <= WORKER_SESSION_BUDGET)
            && pods <= WORKER_SESSION_MAX_PODS
        {
            Placement::Worker
        } else {
            Placement::Thread
        }
    }
}

/// A session to run, with the sending of its result.
pub(super) type Work = Box<dyn FnOnce() + Send + 'static>;

/// A long-lived thread that runs the sessions handed to it, one at a time.
pub(super) struct SessionThread {
    queue: Option<mpsc::Sender<Work>>,
}

impl SessionThread {
    /// Starts the thread; without it (the process is out of threads), [`SessionThread::run`]
    /// hands every session back.
    pub(super) fn start() -> Self {
        let (queue, sessions) = mpsc::channel::<Work>();
        let spawned = std::thread::Builder::new()
            .name("session".into())
            .spawn(move || {
                while let Ok(work) = sessions.recv() {
                    work();
                }
            });
        match spawned {
            Ok(_) => SessionThread { queue: Some(queue) },
            Err(error) => {
                tracing::warn!(%error, "no session thread; sessions run on the runtime's blocking threads");
                SessionThread { queue: None }
            }
        }
    }

    /// Runs `work` on the thread; gives it back when the thread is gone.
    pub(super) fn run(&self, work: Work) -> Result<(), Work> {
        match &self.queue {
            Some(queue) => queue.send(work).map_err(|returned| returned.0),
            None => Err(work),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_session_small_for_sure_runs_on_the_worker() {
        let quick = Some(WORKER_SESSION_BUDGET);
        let slow = Some(WORKER_SESSION_BUDGET + Duration::from_micros(1));
        assert_eq!(
            Placement::choose(false, false, quick, 1_200),
            Placement::Worker
        );
        assert_eq!(
            Placement::choose(false, false, quick, WORKER_SESSION_MAX_PODS),
            Placement::Worker
        );
        // The first session, a slow last one, or a large snapshot: the session thread.
        assert_eq!(Placement::choose(false, false, None, 10), Placement::Thread);
        assert_eq!(Placement::choose(false, false, slow, 10), Placement::Thread);
        assert_eq!(
            Placement::choose(false, false, quick, WORKER_SESSION_MAX_PODS + 1),
            Placement::Thread
        );
        // A session that may wait for an HTTP answer never blocks the worker.
        assert_eq!(Placement::choose(false, true, quick, 10), Placement::Thread);
        // A cluster that shares its searches stays on the pool however quick.
        assert_eq!(Placement::choose(true, false, quick, 10), Placement::Pool);
        assert_eq!(
            Placement::choose(true, false, None, 10_000),
            Placement::Pool
        );
    }

    #[test]
    fn runs_work_in_order_on_its_own_thread() {
        let thread = SessionThread::start();
        let (tx, rx) = mpsc::channel();
        for i in 0..3 {
            let tx = tx.clone();
            let work: Work = Box::new(move || {
                let name = std::thread::current().name().map(str::to_string);
                let _ = tx.send((i, name));
            });
            assert!(thread.run(work).is_ok());
        }
        let got: Vec<_> = (0..3).map(|_| rx.recv().expect("ran")).collect();
        assert_eq!(
            got,
            (0..3)
                .map(|i| (i, Some("session".to_string())))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_panicking_session_is_the_caller_s_to_catch_and_the_thread_goes_on() {
        let thread = SessionThread::start();
        let caught: Work = Box::new(|| {
            let _ = std::panic::catch_unwind(|| panic!("session failed"));
        });
        assert!(thread.run(caught).is_ok());
        let (tx, rx) = mpsc::channel();
        assert!(
            thread
                .run(Box::new(move || tx.send(()).expect("sent")))
                .is_ok()
        );
        assert!(rx.recv().is_ok());
    }
}
