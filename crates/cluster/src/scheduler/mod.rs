//! The scheduling loop (spec/framework.md §2), the same for the daemon and the simulator.
//!
//! A [`Scheduler`] owns what lives from one session to the next: the configuration source, the
//! leader signal, the sink its writes go to, and the bookkeeping of what it has reported. Its
//! [`run_cycle`](Scheduler::run_cycle) is one turn of the loop, with these rules:
//!
//! * Only a leader decides: a standby runs no session and writes nothing (it drops the watches'
//!   problem reports: the leader reports them).
//! * The configuration the background reader accepted applies from this cycle on; queues it
//!   needs (the default queue, `root` for hierarchy) are ensured when leadership is gained and
//!   after every applied reload.
//! * No session on a view going stale: while a watch is broken, the cycle pauses.
//! * A session's decisions are dropped when leadership was lost while it ran.
//! * Binds and evictions are assumed in the state before the next snapshot can be taken; the
//!   sink writes, and owns the order and concurrency of the writes ([`WriteSink::write`]).
//!
//! [`run`](Scheduler::run) repeats cycles until shutdown, waiting between them as the outcome
//! asks: a period (or less when pending work arrives), a leadership change, a watch recovery.

mod report;
mod session_thread;
mod sink;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::conf::SchedulerConf;
use engine::framework::{
    Decisions, Event, EventType, ObjectRef, PluginRegistry, Session, SessionOptions,
};
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::{mpsc, watch};

use crate::conf_watch::{ConfSource, ReloadOutcome};
use crate::http::Health;
use crate::invariants::InvariantTracker;
use crate::metrics::Metrics;
use crate::shared::Shared;

pub use sink::WriteSink;

/// Whether this replica leads, as the scheduler sees it.
pub trait LeaderSignal: Send {
    /// True while this replica may decide.
    fn leading(&self) -> bool;
    /// False once whatever keeps the answer current has died: nobody renews or gives up the
    /// Lease any more, and the process should stop so that a restart campaigns again.
    fn alive(&self) -> bool {
        true
    }
    /// Resolves when [`leading`](Self::leading) may have changed.
    fn changed(&mut self) -> BoxFuture<'_, ()>;
}

/// The elector publishes leadership on a watch channel; its sender is dropped when the elector
/// task ends (also by a panic), which is how a dead elector shows.
impl LeaderSignal for watch::Receiver<bool> {
    fn leading(&self) -> bool {
        *self.borrow()
    }

    fn alive(&self) -> bool {
        self.has_changed().is_ok()
    }

    fn changed(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if watch::Receiver::changed(self).await.is_err() {
                // The sender is gone: the answer will never change again.
                futures::future::pending::<()>().await;
            }
        })
    }
}

/// The daemon's leadership: what the elector last published, and only while the Lease was
/// renewed within the renew deadline ([`crate::leader::Fence`]). A leader resumed after a pause
/// longer than that stops deciding at once, before its elector notices, so it never acts on a
/// view the new leader has already changed.
pub struct FencedLeader {
    pub elected: watch::Receiver<bool>,
    pub fence: crate::leader::Fence,
}

impl LeaderSignal for FencedLeader {
    fn leading(&self) -> bool {
        *self.elected.borrow() && self.fence.holds()
    }

    fn alive(&self) -> bool {
        self.elected.has_changed().is_ok()
    }

    fn changed(&mut self) -> BoxFuture<'_, ()> {
        // The fence turns back without a message (a renewal after a pause): look again soon.
        Box::pin(async move {
            tokio::select! {
                _ = watch::Receiver::changed(&mut self.elected) => {}
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        })
    }
}

/// The wall clock sessions are given as "now" (a fixed one in the simulator).
pub type WallClock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Everything a [`Scheduler`] is built from.
pub struct SchedulerParts {
    pub shared: Arc<Shared>,
    pub sink: Arc<dyn WriteSink>,
    pub conf: ConfSource,
    pub registry: Arc<PluginRegistry>,
    pub session_options: SessionOptions,
    pub leader: Box<dyn LeaderSignal>,
    pub metrics: Arc<Metrics>,
    pub clock: WallClock,
    /// Prefix of session UIDs (PodGroup condition transitionIDs): `<identity>-<cycle>`.
    pub identity: String,
    pub default_queue: String,
    /// The object configuration events are recorded on.
    pub self_ref: ObjectRef,
    /// Time between the end of one session and the start of the next.
    pub period: Duration,
}

/// What one cycle did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CycleOutcome {
    /// Not the leader: nothing decided, nothing written.
    Standby,
    /// These watches are broken: no session ran.
    Paused { broken: Vec<&'static str> },
    /// The session panicked; nothing was written.
    Failed,
    /// Leadership was lost while the session ran: its decisions were dropped.
    Dropped,
    /// A session ran and its decisions went to the sink.
    Ran(CycleSummary),
}

/// Counts of what a session decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CycleSummary {
    pub cycle: u64,
    pub binds: usize,
    pub evictions: usize,
    pub status_writes: usize,
    pub events: usize,
}

impl CycleSummary {
    fn of(cycle: u64, d: &Decisions) -> CycleSummary {
        CycleSummary {
            cycle,
            binds: d.binds.len(),
            evictions: d.evictions.len(),
            status_writes: d.pod_group_statuses.len()
                + d.pod_conditions.len()
                + d.queue_allocations.len(),
            events: d.events.len(),
        }
    }
}

/// The scheduling loop; see the module documentation for its rules.
pub struct Scheduler {
    shared: Arc<Shared>,
    sink: Arc<dyn WriteSink>,
    conf: ConfSource,
    registry: Arc<PluginRegistry>,
    session_options: SessionOptions,
    leader: Box<dyn LeaderSignal>,
    metrics: Arc<Metrics>,
    clock: WallClock,
    identity: String,
    default_queue: String,
    self_ref: ObjectRef,
    period: Duration,
    /// Malformed objects the watches met, reported by the leader.
    problems: Option<mpsc::UnboundedReceiver<Event>>,
    health: Option<Arc<Health>>,
    conf_updates: Option<watch::Sender<Arc<SchedulerConf>>>,
    cycle: u64,
    queues_ensured: bool,
    /// The skipped plugins last reported as events; `None` until the leader first reports.
    reported_skips: Option<Vec<String>>,
    invariants: InvariantTracker,
    last_state_check: Option<Instant>,
    sessions_paused: bool,
    seen: report::SeenSeries,
    session_thread: session_thread::SessionThread,
    /// What the last session took, for where the next one runs (`session_thread.rs`).
    last_session_took: Option<Duration>,
}

impl Scheduler {
    pub fn new(parts: SchedulerParts) -> Scheduler {
        let current = parts.conf.current();
        parts.metrics.set_skipped_plugins(&current.skipped_plugins);
        Scheduler {
            shared: parts.shared,
            sink: parts.sink,
            conf: parts.conf,
            registry: parts.registry,
            session_options: parts.session_options,
            leader: parts.leader,
            metrics: parts.metrics,
            clock: parts.clock,
            identity: parts.identity,
            default_queue: parts.default_queue,
            self_ref: parts.self_ref,
            period: parts.period,
            problems: None,
            health: None,
            conf_updates: None,
            cycle: 0,
            queues_ensured: false,
            reported_skips: None,
            invariants: InvariantTracker::default(),
            last_state_check: None,
            sessions_paused: false,
            seen: report::SeenSeries::default(),
            session_thread: session_thread::SessionThread::start(),
            last_session_took: None,
        }
    }

    /// Reports the objects the watches could not use (as events, while leading).
    pub fn with_problems(mut self, problems: mpsc::UnboundedReceiver<Event>) -> Self {
        self.problems = Some(problems);
        self
    }

    /// Keeps `/readyz`'s role current.
    pub fn with_health(mut self, health: Arc<Health>) -> Self {
        self.health = Some(health);
        self
    }

    /// Sends the configuration in force on `updates`, now and on every applied reload (for
    /// `/debug/state`).
    pub fn with_conf_updates(mut self, updates: watch::Sender<Arc<SchedulerConf>>) -> Self {
        updates.send_replace(self.conf.current());
        self.conf_updates = Some(updates);
        self
    }

    /// Cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// One turn of the loop (see the module documentation).
    pub async fn run_cycle(&mut self) -> CycleOutcome {
        let leading = self.leader.leading();
        if let Some(h) = &self.health {
            h.leader.store(leading, std::sync::atomic::Ordering::SeqCst);
        }
        self.metrics.set_leader(leading);
        if !leading {
            self.queues_ensured = false;
            if let Some(rx) = &mut self.problems {
                while rx.try_recv().is_ok() {}
            }
            return CycleOutcome::Standby;
        }
        let current = self.take_configuration().await;
        self.report_problems().await;

        let broken = self.shared.broken_watches();
        if !broken.is_empty() {
            if !self.sessions_paused {
                tracing::warn!(kinds = ?broken, "watches broken; sessions paused until they recover");
                self.sessions_paused = true;
            }
            return CycleOutcome::Paused { broken };
        }
        if self.sessions_paused {
            tracing::info!("watches working again; sessions resume");
            self.sessions_paused = false;
        }

        self.cycle += 1;
        let now = (self.clock)();
        let Some(decisions) = self.run_session(current, now).await else {
            return CycleOutcome::Failed;
        };
        if !self.leader.leading() {
            tracing::warn!("leadership lost during the session; its decisions are dropped");
            return CycleOutcome::Dropped;
        }
        tracing::debug!(
            cycle = self.cycle,
            binds = decisions.binds.len(),
            evictions = decisions.evictions.len(),
            "session"
        );
        let summary = CycleSummary::of(self.cycle, &decisions);
        let binds: Vec<(&str, &str)> = decisions
            .binds
            .iter()
            .map(|b| (b.pod.as_str(), b.node.as_str()))
            .collect();
        let found = engine::state::invariants::check_binds(&self.shared.lock(), binds);
        report::violations(&self.metrics, found);
        // Assumed and handed to the sink with no await in between: a cycle cancelled at
        // shutdown never leaves assumed binds unwritten.
        let written = self.sink.assume_and_write(decisions);
        written.await;
        // Once a period, on the state with this session's binds assumed: sessions started
        // early by new work must not each pay a pass over the whole state, and what it finds
        // is reported after a grace period anyway.
        if self
            .last_state_check
            .is_none_or(|at| at.elapsed() >= self.period)
        {
            self.last_state_check = Some(Instant::now());
            self.check_state_invariants().await;
        }
        CycleOutcome::Ran(summary)
    }

    /// Cycles until `shutdown` turns true, then returns; the sink's writes may still be under
    /// way ([`WriteSink::drain`]). Fails when the leader signal dies.
    pub async fn run(&mut self, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            if !self.leader.alive() {
                anyhow::bail!("the leader election task ended unexpectedly; exiting");
            }
            let outcome = tokio::select! {
                outcome = self.run_cycle() => outcome,
                _ = shutdown.wait_for(|s| *s) => return Ok(()),
            };
            let wait: BoxFuture<'_, ()> = match outcome {
                CycleOutcome::Standby => self.leader.changed(),
                CycleOutcome::Paused { .. } => {
                    // A broken watch retries at least once a second (`Shared::broken_watches`).
                    Box::pin(tokio::time::sleep(Duration::from_millis(100)))
                }
                CycleOutcome::Dropped => Box::pin(async {}),
                CycleOutcome::Failed => Box::pin(tokio::time::sleep(self.period)),
                CycleOutcome::Ran(_) => {
                    // The next session after the period, or sooner when pending work arrives
                    // (debounced), or at once when leadership is lost. The signal may wake
                    // with nothing changed (the fenced leader looks again every 500 ms): that
                    // starts no session, or sessions would run at that pace instead of the
                    // period's.
                    let (period, shared) = (self.period, self.shared.clone());
                    let leader = &mut self.leader;
                    Box::pin(async move {
                        tokio::select! {
                            _ = tokio::time::sleep(period) => {}
                            _ = early_work(&shared) => {}
                            _ = async {
                                loop {
                                    leader.changed().await;
                                    if !leader.leading() {
                                        break;
                                    }
                                    // A signal that is always ready must not starve the timer.
                                    tokio::task::yield_now().await;
                                }
                            } => {}
                        }
                    })
                }
            };
            tokio::select! {
                _ = wait => {}
                _ = shutdown.wait_for(|s| *s) => return Ok(()),
            }
        }
    }

    /// Takes what the configuration reader found, reports it, and ensures the queues the
    /// configuration in force needs. Returns that configuration.
    async fn take_configuration(&mut self) -> Arc<SchedulerConf> {
        let applied = self.report_config_outcomes().await;
        let current = self.conf.current();
        if applied {
            self.metrics.set_skipped_plugins(&current.skipped_plugins);
            if let Some(updates) = &self.conf_updates {
                updates.send_replace(current.clone());
            }
            // The new configuration may need a queue the old one did not (`root`).
            self.queues_ensured = false;
        }
        if self.reported_skips.as_ref() != Some(&current.skipped_plugins) {
            let events = report::skipped_plugin_events(
                &self.self_ref,
                self.conf.path(),
                &current.skipped_plugins,
            );
            for event in events {
                self.sink.publish(event).await;
            }
            self.reported_skips = Some(current.skipped_plugins.clone());
        }
        if !self.queues_ensured {
            self.queues_ensured = true;
            for (name, reclaimable) in wanted_queues(&self.default_queue, &current) {
                // The mirror is synced: a queue it shows exists (the daemon may have made it
                // while the caches synced).
                if self.shared.lock().queue(&name).is_some() {
                    continue;
                }
                if let Err(e) = self.sink.ensure_queue(&name, reclaimable).await {
                    tracing::warn!(queue = %name, error = %e, "could not ensure queue; retrying next cycle");
                    self.queues_ensured = false;
                }
            }
        }
        current
    }

    /// Logs, counts and publishes what the configuration reader found; true when a new
    /// configuration was applied.
    async fn report_config_outcomes(&mut self) -> bool {
        let mut applied = false;
        for outcome in self.conf.poll() {
            match outcome {
                ReloadOutcome::Applied { warnings } => {
                    for w in &warnings {
                        tracing::warn!(warning = %w, "scheduler configuration");
                    }
                    tracing::info!("scheduler configuration reloaded");
                    self.metrics.config_reload(true);
                    applied = true;
                }
                ReloadOutcome::Refused { error } => {
                    tracing::error!(%error, "scheduler configuration refused; the previous one stays in force");
                    self.metrics.config_reload(false);
                    let event = Event {
                        object: self.self_ref.clone(),
                        type_: EventType::Warning,
                        reason: "ConfigRefused".into(),
                        message: error,
                    };
                    self.sink.publish(event).await;
                }
            }
        }
        applied
    }

    async fn report_problems(&mut self) {
        let Some(rx) = &mut self.problems else {
            return;
        };
        let mut found = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            found.push(ev);
        }
        for ev in found {
            self.sink.publish(ev).await;
        }
    }

    /// Opens a session on a snapshot, runs the configured actions and closes it, off the async
    /// worker threads; records its timings and what it decided. `None` if it panicked.
    async fn run_session(&mut self, conf: Arc<SchedulerConf>, now: Timestamp) -> Option<Decisions> {
        // Work announced before this snapshot is in it: a wake stored for it would only start
        // a session with nothing new to decide. Work announced from here on wakes the next.
        let _ = futures::FutureExt::now_or_never(self.shared.work.notified());
        let snapshot = self.shared.snapshot();
        let placement = session_thread::Placement::choose(
            engine::actions::wants_pool(snapshot.node_table().specs.len()),
            conf.plugin_names()
                .any(|n| session_thread::CALLS_OUT.contains(&n)),
            self.last_session_took,
            snapshot.pod_count(),
        );
        let (registry, options) = (self.registry.clone(), self.session_options.clone());
        let uid = format!("{}-{}", self.identity, self.cycle);
        let session = move || {
            let start = Instant::now();
            let clock: engine::framework::Clock = Arc::new(move || start.elapsed());
            let mut ssn =
                Session::open_timed(&snapshot, conf, &registry, options, now, uid, Some(clock));
            let opened = start.elapsed();
            let timings = engine::actions::run_configured_actions(&mut ssn, &|| start.elapsed());
            let decisions = ssn.close();
            (decisions, opened, timings, start.elapsed())
        };
        // A session that shares its searches runs on the pool, so they need no further
        // hand-over; a smaller one on the session thread, or right here when it is small for
        // sure (`session_thread.rs`).
        let (tx, rx) = tokio::sync::oneshot::channel();
        let work: session_thread::Work = Box::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(session));
            let _ = tx.send(result);
        });
        let placed = match placement {
            session_thread::Placement::Pool => engine::actions::spawn_on_session_pool(work),
            session_thread::Placement::Thread => self.session_thread.run(work),
            session_thread::Placement::Worker => {
                work();
                Ok(())
            }
        };
        if let Err(work) = placed {
            // No pool or no session thread: one of the runtime's blocking threads.
            drop(tokio::task::spawn_blocking(work));
        }
        let run: Result<_, Box<dyn std::any::Any + Send>> = rx
            .await
            .unwrap_or_else(|_| Err(Box::new("the session's thread ended without an answer")));
        let (decisions, opened, timings, total) = match run {
            Ok(r) => r,
            Err(panic) => {
                self.last_session_took = None;
                let error = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!(%error, "session failed; next one in a period");
                self.metrics.session_failed();
                return None;
            }
        };
        self.last_session_took = Some(total);
        self.metrics.observe_session(opened, &timings, total);
        report::session_metrics(&self.metrics, &self.shared, &decisions, &mut self.seen, now);
        Some(decisions)
    }

    /// Runs the state invariants off the async threads and reports what is new.
    async fn check_state_invariants(&mut self) {
        let snapshot = self.shared.snapshot();
        let checked =
            tokio::task::spawn_blocking(move || engine::state::invariants::check_state(&snapshot))
                .await;
        if let Ok(found) = checked {
            let new = self.invariants.observe_state(found, Instant::now());
            report::violations(&self.metrics, new);
        }
    }
}

/// Resolves when work arrived that can change a decision (debounced by [`EARLY_SETTLE`]). A
/// wake for freed capacity while nothing waits for a decision is passed over (mass deletions
/// of other schedulers' pods would otherwise start a session every few milliseconds with
/// nothing to decide); the periodic session still runs.
async fn early_work(shared: &Shared) {
    loop {
        shared.work.notified().await;
        tokio::time::sleep(EARLY_SETTLE).await;
        // Under the lock: a copy of the state held while a watch updates it would make the
        // update copy the whole pod table.
        if shared.lock().has_waiting_work() {
            return;
        }
        tracing::trace!("early wake passed over: nothing waits for a decision");
    }
}

/// How long an early session waits after the first sign of new work, for more of it.
const EARLY_SETTLE: Duration = Duration::from_millis(20);

/// The queues the scheduler creates if missing (spec/kubernetes.md §4.8.3), reclaimable or
/// not: the default queue, and `root` when a plugin of the configuration runs in hierarchy
/// mode.
pub fn wanted_queues(default_queue: &str, conf: &SchedulerConf) -> Vec<(String, bool)> {
    let mut wanted = vec![(default_queue.to_string(), true)];
    if conf.plugin_options().any(|p| p.enable_hierarchy) {
        wanted.push((apis::ROOT_QUEUE.to_string(), false));
    }
    wanted
}
