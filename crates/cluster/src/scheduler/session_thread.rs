//! The thread the sessions of a small cluster run on.
//!
//! Below the size where a session shares its node searches with the engine's thread pool
//! (`engine::actions::wants_pool`), a session runs on one thread from start to end. Run on a
//! pool thread, it left that thread looking for more work when it ended: rayon's idle threads
//! yield the processor in rounds before they sleep, and in steady state, with a session for
//! every new pod, those rounds and the task switches they bring cost about a twentieth of the
//! daemon's CPU. This thread blocks on its queue instead, and wakes only for the next session.

use std::sync::mpsc;

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
