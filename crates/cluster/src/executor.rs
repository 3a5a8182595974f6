//! The executor: a session's decisions become API calls (spec/kubernetes.md §7).
//!
//! * Binds go through `pods/{name}/binding` with bounded concurrency (`--bind-workers`).
//!   Before anything is sent, every decided bind is *assumed* in the shared state, so the next
//!   session cannot reuse the capacity; a failed bind rolls the assumption back, the pod returns
//!   to pending, and its `PodScheduled` condition and a `FailedScheduling` event say why.
//! * A bind that carries volume writes makes them first and waits until the volume controller
//!   completed them ([`volumes`]); a failure there fails the bind the same way. A bind that
//!   carries a device's node lock takes it first ([`node_lock`]).
//! * Evictions as Volcano does them: a `Evict` event, `Ready=False`/`DisruptionTarget=True`
//!   conditions, then a delete with the pod's own grace period.
//! * PodGroup status, pod `PodScheduled=False` conditions and Queue `status` are written only
//!   when the session found them changed (the session compares against what it observed).
//! * Every write goes through the client's policy layers ([`crate::api_client`]): the rate
//!   limiter (`--kube-api-qps`/`--kube-api-burst`) by class, the fence, and one bounded retry of
//!   idempotent writes on transient errors. The executor keeps the limiter only so that a status
//!   worker can take its token before it takes a write.
//! * Identical events are published at most once per [`EVENT_REPEAT_INTERVAL`] per object, so
//!   an unschedulable job does not cost an API write every cycle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use apis::{PodGroup, Queue};
use engine::framework::decisions::{
    Bind, Eviction, PodConditionUpdate, PodGroupStatusUpdate, QueueAllocation,
};
use engine::framework::{Decisions, Event as SchedEvent, EventType, ObjectRef};
use engine::state::{AssumedBind, BindSource};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Event as KubeEvent, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::api_client;
use crate::metrics::Metrics;
use crate::ratelimit::{RateLimiter, WriteClass};
use crate::scheduler::WriteSink;
use crate::shared::Shared;
use status_queue::{StatusQueue, StatusWrite};

mod event_body;
mod node_lock;
mod volumes;

/// How often an identical event (same object, reason and message) may be published again.
pub const EVENT_REPEAT_INTERVAL: Duration = Duration::from_secs(600);

pub struct ExecutorConfig {
    pub bind_workers: usize,
    /// Written into eviction messages and as the events' reporting controller.
    pub scheduler_name: String,
    /// Reporting instance of events (pod name or identity).
    pub instance: String,
    /// How long a Queue's status rests after a write (the schedule period; see
    /// [`status_queue`]).
    pub queue_status_rest: Duration,
}

/// Executes decisions against the API server.
pub struct Executor {
    client: Client,
    shared: Arc<Shared>,
    limiter: Arc<RateLimiter>,
    metrics: Arc<Metrics>,
    cfg: ExecutorConfig,
    recent_events: Mutex<HashMap<(String, String, String), Instant>>,
    /// The events' timestamp text, made once per second.
    event_second: event_body::SecondText,
    /// Writes that outlive [`WriteSink::write`]'s future: binds, events, and status writes
    /// whose caller went away. [`WriteSink::drain`] waits for them.
    background: Mutex<tokio::task::JoinSet<()>>,
    /// Sessions whose events are queued (see [`MAX_EVENT_BATCHES`]).
    event_batches: Arc<AtomicUsize>,
    /// Status writes waiting, one per object (see [`status_queue`]).
    status: Mutex<StatusQueue>,
}

/// Binds assumed under one hold of the state's lock (see [`WriteSink::assume_and_write`]).
const ASSUME_BATCH: usize = 64;

/// How many of a session's binds, in order, are assumed so far.
#[derive(Default)]
struct AssumeGate {
    count: AtomicUsize,
    /// The assuming stopped part-way (it panicked, or never ran): the binds still waiting
    /// were never assumed, so they are not sent.
    abandoned: AtomicBool,
    changed: tokio::sync::Notify,
}

impl AssumeGate {
    fn advance(&self, count: usize) {
        self.count.store(count, Ordering::Release);
        self.changed.notify_waiters();
    }

    fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Resolves once at least `count` are assumed (true), or once the assuming was abandoned
    /// short of them (false).
    async fn assumed(&self, count: usize) -> bool {
        loop {
            // Registered before the check: an advance in between still wakes it.
            let changed = self.changed.notified();
            if self.count.load(Ordering::Acquire) >= count {
                return true;
            }
            if self.abandoned.load(Ordering::Acquire) {
                return false;
            }
            changed.await;
        }
    }
}

/// Assumes a session's binds batch by batch, opening the gate as it goes; dropped before the
/// last batch (a panic, or a blocking task that never ran), it abandons the gate.
struct Assuming {
    executor: Arc<Executor>,
    binds: Arc<Vec<Bind>>,
    gate: Arc<AssumeGate>,
}

impl Assuming {
    fn run(self) {
        let mut done = 0;
        for batch in self.binds.chunks(ASSUME_BATCH) {
            self.executor.assume_batch(batch);
            done += batch.len();
            self.gate.advance(done);
        }
    }
}

impl Drop for Assuming {
    fn drop(&mut self) {
        if self.gate.count.load(Ordering::Acquire) < self.binds.len() {
            self.gate.abandon();
        }
    }
}

/// Sessions whose events may be queued at once; beyond that a session's own are dropped.
/// Events take the rate limit's tokens last, and a session waiting for them would hold back the
/// next session's status writes.
pub const MAX_EVENT_BATCHES: usize = 4;
/// Scheduled events sent at a time once a batch's binds are done.
const EVENT_WORKERS: usize = 8;

/// Why a write was not done.
#[derive(Debug)]
enum WriteError {
    /// This replica does not hold a fresh Lease (see [`crate::leader::Fence`]): not sent.
    Fenced,
    Api(kube::Error),
}

/// Why a write a bind needs first (its volumes, its node lock) was not done.
enum PreBindError {
    Fenced,
    Failed(String),
}

impl From<WriteError> for PreBindError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Fenced => PreBindError::Fenced,
            api => PreBindError::Failed(api.to_string()),
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Fenced => f.write_str("not sent: this replica no longer holds the lease"),
            WriteError::Api(e) => f.write_str(&crate::errors::kube(e)),
        }
    }
}

impl Executor {
    pub fn new(
        client: Client,
        shared: Arc<Shared>,
        limiter: Arc<RateLimiter>,
        metrics: Arc<Metrics>,
        cfg: ExecutorConfig,
    ) -> Self {
        Executor {
            client,
            shared,
            limiter,
            metrics,
            recent_events: Mutex::new(HashMap::new()),
            event_second: event_body::SecondText::default(),
            background: Mutex::new(tokio::task::JoinSet::new()),
            event_batches: Arc::new(AtomicUsize::new(0)),
            status: Mutex::new(StatusQueue::with_queue_rest(cfg.queue_status_rest)),
            cfg,
        }
    }

    /// Queues status writes (the newest decision per object wins) and starts workers to send
    /// them, at most `--bind-workers` at a time.
    fn queue_status_writes(self: &Arc<Self>, writes: impl IntoIterator<Item = StatusWrite>) {
        let now = tokio::time::Instant::now();
        let (start, wake) = {
            let mut q = self.status.lock().unwrap_or_else(PoisonError::into_inner);
            for w in writes {
                q.offer(w);
            }
            let room = self.cfg.bind_workers.max(1).saturating_sub(q.workers);
            let start = q.takeable(now).min(room);
            q.workers += start;
            (start, Self::wake_for_rest(&mut q, now))
        };
        for _ in 0..start {
            let me = Arc::clone(self);
            self.spawn_tracked(async move { me.send_status_writes().await });
        }
        self.set_wake(wake);
    }

    /// When a write waits only for its object's rest to end, and no wake-up is set for that
    /// yet: the time to set one for (and it counts as set).
    fn wake_for_rest(
        q: &mut StatusQueue,
        now: tokio::time::Instant,
    ) -> Option<tokio::time::Instant> {
        if q.wake_set {
            return None;
        }
        let at = q.rest_ends(now)?;
        q.wake_set = true;
        Some(at)
    }

    /// Starts the workers again when a rest ends (nothing else might: no session need follow).
    fn set_wake(self: &Arc<Self>, at: Option<tokio::time::Instant>) {
        let Some(at) = at else { return };
        let me = Arc::clone(self);
        self.spawn_tracked(async move {
            tokio::time::sleep_until(at).await;
            me.status
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .wake_set = false;
            me.queue_status_writes([]);
        });
    }

    /// A status worker: sends queued writes until none is left to take. It takes a write only
    /// once it holds a token, so that writes wait in the queue, where a newer decision can
    /// replace them and urgent ones go first, not in the rate limiter's line.
    async fn send_status_writes(self: Arc<Self>) {
        loop {
            let now = tokio::time::Instant::now();
            if self
                .status
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .any_takeable(now)
            {
                self.limiter.acquire_for(WriteClass::Status).await;
            }
            let now = tokio::time::Instant::now();
            let write = {
                let mut q = self.status.lock().unwrap_or_else(PoisonError::into_inner);
                match q.take(now) {
                    Some(w) => w,
                    None => {
                        q.workers -= 1;
                        let wake = Self::wake_for_rest(&mut q, now);
                        drop(q);
                        self.set_wake(wake);
                        return;
                    }
                }
            };
            let send = async {
                match &write {
                    StatusWrite::PodGroup(u) => self.write_pod_group_status(u).await,
                    StatusWrite::PodCondition(c) => self.write_pod_condition(c).await,
                    StatusWrite::Queue(q) => self.write_queue_status(q).await,
                }
            };
            api_client::with_token_held(send).await;
            self.status
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .done(&write, tokio::time::Instant::now());
        }
    }

    /// The write policy of [`WriteSink::write`] (see there), the binds apart; with a gate,
    /// each bind waits until the gate shows it assumed.
    fn write_with(
        self: &Arc<Self>,
        decisions: Decisions,
        binds: Arc<Vec<Bind>>,
        gate: Option<Arc<AssumeGate>>,
    ) -> futures::future::BoxFuture<'static, ()> {
        let Decisions {
            evictions,
            pod_group_statuses,
            pod_conditions,
            queue_allocations,
            events,
            ..
        } = decisions;
        let assumed = Decisions {
            evictions,
            ..Default::default()
        };
        let me = Arc::clone(self);
        self.spawn_tracked(async move { me.execute_gated(assumed, binds, gate).await });
        // A PodGroup placed only by binds still on their way is written once they land (as
        // Running, by the session that sees them); the Inqueue between would be replaced
        // within a period, and its echo read back, for every job.
        let (awaiting, pod_group_statuses): (Vec<_>, Vec<_>) = pod_group_statuses
            .into_iter()
            .partition(|u| u.awaiting_binds);
        if !awaiting.is_empty() {
            let mut q = self.status.lock().unwrap_or_else(PoisonError::into_inner);
            for u in &awaiting {
                q.withdraw_pod_group(&u.pod_group);
            }
        }
        self.queue_status_writes(
            pod_group_statuses
                .into_iter()
                .map(StatusWrite::PodGroup)
                .chain(pod_conditions.into_iter().map(StatusWrite::PodCondition))
                .chain(queue_allocations.into_iter().map(StatusWrite::Queue)),
        );
        self.publish_in_background(events);
        Box::pin(async {})
    }

    /// Status writes waiting or being sent.
    pub fn status_writes_queued(&self) -> usize {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Runs `write` in the background, tracked for [`WriteSink::drain`].
    fn spawn_tracked(&self, write: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut set = self
            .background
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while set.try_join_next().is_some() {}
        set.spawn(write);
    }

    /// Queues a session's events behind everything else, unless [`MAX_EVENT_BATCHES`]
    /// sessions' events are still queued.
    fn publish_in_background(self: &Arc<Self>, events: Vec<SchedEvent>) {
        if events.is_empty() {
            return;
        }
        if self.event_batches.load(Ordering::SeqCst) >= MAX_EVENT_BATCHES {
            tracing::debug!(
                events = events.len(),
                "events of earlier sessions still queued; this session's are dropped"
            );
            return;
        }
        self.event_batches.fetch_add(1, Ordering::SeqCst);
        let me = Arc::clone(self);
        self.spawn_tracked(async move {
            for ev in &events {
                Executor::publish(&me, ev).await;
            }
            me.event_batches.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Marks every decided bind as done in the shared state. Call it right after the session
    /// closes, before the next session can take a snapshot.
    pub fn assume(&self, decisions: &Decisions) {
        self.assume_batch(&decisions.binds);
        self.assume_others(decisions);
    }

    /// Assumes these binds, holding the state's lock only to look the pods up and to record
    /// them: the copies are made in between, so the watches and the binds already sent are not
    /// held up by a large session's.
    fn assume_batch(&self, batch: &[Bind]) {
        let sources: Vec<Option<BindSource>> = {
            let state = self.shared.lock();
            batch.iter().map(|b| state.bind_source(&b.pod)).collect()
        };
        let prepared: Vec<Option<AssumedBind>> = sources
            .into_iter()
            .zip(batch)
            .map(|(source, b)| source.map(|s| s.prepare(&b.node, &b.annotations)))
            .collect();
        let mut state = self.shared.lock();
        for (p, b) in prepared.into_iter().zip(batch) {
            if !p.is_some_and(|p| state.install_assumed_bind(&b.pod, p, &b.node, &b.annotations)) {
                tracing::debug!(pod = %b.pod, "pod gone before its bind was assumed");
                continue;
            }
            volumes::assume(&mut state, &b.volumes);
        }
    }

    /// What [`Executor::assume`] records besides the binds.
    fn assume_others(&self, decisions: &Decisions) {
        let mut state = self.shared.lock();
        for a in &decisions.numa_assignments {
            let given = engine::state::NumaGiven {
                uid: a.pod_uid.clone(),
                resources: a.resources.clone(),
            };
            state.assume_numa(&a.node, &a.pod, given);
        }
        // Victims are Releasing from now on in our view, so the next session neither counts
        // them as running nor evicts more pods for the same preemptor.
        let now = Timestamp::now();
        for e in &decisions.evictions {
            state.assume_eviction(&e.pod, now);
        }
    }

    /// Performs every write the decisions call for. Returns when all calls finished.
    pub async fn execute(self: Arc<Self>, mut decisions: Decisions) {
        let binds = Arc::new(std::mem::take(&mut decisions.binds));
        self.execute_gated(decisions, binds, None).await;
    }

    /// [`Executor::execute`] with the binds apart; with a gate, each bind is sent only once
    /// the gate shows it assumed.
    async fn execute_gated(
        self: Arc<Self>,
        decisions: Decisions,
        binds: Arc<Vec<Bind>>,
        gate: Option<Arc<AssumeGate>>,
    ) {
        let workers = self.cfg.bind_workers.max(1);
        let Decisions {
            pod_group_statuses,
            pod_conditions,
            queue_allocations,
            evictions,
            events,
            ..
        } = decisions;
        // Each write is an owned future (an `Arc` of the executor and its item), run at most
        // `workers` at a time per kind.
        let me = &self;
        let run = |futs: Vec<futures::future::BoxFuture<'static, ()>>| {
            futures::stream::iter(futs)
                .buffer_unordered(workers)
                .for_each(|()| async {})
        };
        // A bind's Scheduled event waits until every bind of the batch is sent: a worker that
        // published it at once would hold its place in the bind line for a second request.
        let binds = futures::stream::iter((0..binds.len()).map(|i| {
            let (me, binds, gate) = (me.clone(), binds.clone(), gate.clone());
            async move {
                if let Some(gate) = gate
                    && !gate.assumed(i + 1).await
                {
                    return None;
                }
                me.bind(&binds[i]).await
            }
        }))
        .buffer_unordered(workers)
        .filter_map(|scheduled| async move { scheduled })
        .collect::<Vec<SchedEvent>>();
        let statuses = run(pod_group_statuses
            .into_iter()
            .map(|u| {
                let me = me.clone();
                Box::pin(async move { me.write_pod_group_status(&u).await }) as _
            })
            .collect());
        let conditions = run(pod_conditions
            .into_iter()
            .map(|c| {
                let me = me.clone();
                Box::pin(async move { me.write_pod_condition(&c).await }) as _
            })
            .collect());
        let queues = run(queue_allocations
            .into_iter()
            .map(|q| {
                let me = me.clone();
                Box::pin(async move { me.write_queue_status(&q).await }) as _
            })
            .collect());
        let evicted = run(evictions
            .into_iter()
            .map(|e| {
                let me = me.clone();
                Box::pin(async move { me.evict(&e).await }) as _
            })
            .collect());
        let (scheduled, ..) = futures::join!(binds, statuses, conditions, queues, evicted);
        futures::stream::iter(scheduled.iter())
            .for_each_concurrent(EVENT_WORKERS, |ev| Executor::publish(&self, ev))
            .await;
        for ev in &events {
            Executor::publish(&self, ev).await;
        }
    }

    /// Sends one write through the client's policy layers ([`crate::api_client`]: rate limit,
    /// fence, bounded retry) and tells a fenced write from an API error.
    async fn call<T>(
        &self,
        write: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, WriteError> {
        write.await.map_err(|e| {
            if api_client::is_fenced(&e) {
                WriteError::Fenced
            } else {
                WriteError::Api(e)
            }
        })
    }

    /// [`Executor::call`] for a write whose answer nobody reads: the response is taken as
    /// text, not decoded into the object it returns (events and PodGroup statuses are written
    /// for every job; decoding their echoes cost as much as writing them).
    async fn call_unread(
        &self,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<(), WriteError> {
        let request = request.map_err(|e| WriteError::Api(kube::Error::BuildRequest(e)))?;
        self.call(self.client.request_text(request)).await.map(drop)
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Binds the pod (after its volumes); returns its Scheduled event on success, for the
    /// caller to publish once the batch's binds are sent.
    async fn bind(&self, b: &Bind) -> Option<SchedEvent> {
        let (ns, name) = b.pod.split_once('/')?;
        if !b.volumes.is_empty()
            && let Err(e) = self.bind_volumes(b).await
        {
            // Volcano's words for a failed pre-bind.
            self.fail_pre_bind(b, e, |message| {
                format!(
                    "execute preBind for pod {} failed: binding volumes: {message}, resync the task",
                    b.pod
                )
            })
            .await;
            return None;
        }
        let mut lock = None;
        if let Some(key) = &b.node_lock {
            match self.take_node_lock(&b.node, key).await {
                Ok(value) => lock = Some((key, value)),
                Err(e) => {
                    self.fail_pre_bind(b, e, |message| {
                        format!("node {} locked for {}: {message}", b.node, b.pod)
                    })
                    .await;
                    return None;
                }
            }
        }
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(ns.to_string()),
                uid: (!b.pod_uid.is_empty()).then(|| b.pod_uid.clone()),
                annotations: (!b.annotations.is_empty()).then(|| b.annotations.clone()),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(b.node.clone()),
                ..Default::default()
            },
        };
        let pods = self.pods(ns);
        let started = Instant::now();
        let pp = PostParams::default();
        let result: Result<serde_json::Value, _> = self
            .call(pods.create_subresource("binding", name, &pp, &binding))
            .await;
        match result {
            Ok(_) => {
                // One line per bind at `-v=3` (the `decisions` target).
                tracing::debug!(target: "decisions", "bound {} to node {}", b.pod, b.node);
                let since_creation = self.pod_age(&b.pod);
                self.metrics.pod_bound(started.elapsed(), since_creation);
                Some(SchedEvent {
                    object: pod_ref(ns, name, &b.pod_uid),
                    type_: EventType::Normal,
                    reason: "Scheduled".into(),
                    message: format!("Successfully assigned {ns}/{name} to {}", b.node),
                })
            }
            Err(WriteError::Fenced) => {
                // Whoever leads now decides this pod again.
                self.shared.lock().rollback_bind(&b.pod);
                None
            }
            Err(e) => {
                if let Some((key, value)) = &lock {
                    self.give_back_node_lock(&b.node, key, value).await;
                }
                self.fail_bind(b, format!("failed to bind to node {}: {e}", b.node))
                    .await;
                None
            }
        }
    }

    /// A write the bind needed first failed: fenced, the bind is only rolled back (whoever leads
    /// now decides the pod again); otherwise it fails with the message `say` makes.
    async fn fail_pre_bind(&self, b: &Bind, e: PreBindError, say: impl FnOnce(String) -> String) {
        match e {
            PreBindError::Fenced => {
                let mut state = self.shared.lock();
                volumes::forget(&mut state, &b.volumes);
                state.rollback_bind(&b.pod);
            }
            PreBindError::Failed(message) => self.fail_bind(b, say(message)).await,
        }
    }

    /// A bind that failed: its assumptions are rolled back and the pod's condition says why.
    async fn fail_bind(&self, b: &Bind, message: String) {
        tracing::warn!(pod = %b.pod, node = %b.node, error = %message, "bind failed; rolled back");
        self.metrics.bind_failed();
        {
            let mut state = self.shared.lock();
            volumes::forget(&mut state, &b.volumes);
            state.rollback_bind(&b.pod);
        }
        let cond = PodConditionUpdate {
            pod: b.pod.clone(),
            reason: "SchedulerError".into(),
            message,
            nominated_node: None,
        };
        self.write_pod_condition(&cond).await;
    }

    fn pod_age(&self, key: &str) -> Option<Duration> {
        let state = self.shared.lock();
        let created = state.pod(key)?.creation?;
        let age = Timestamp::now().duration_since(created);
        Duration::try_from(age).ok()
    }

    async fn write_pod_condition(&self, c: &PodConditionUpdate) {
        let Some((ns, name)) = c.pod.split_once('/') else {
            return;
        };
        // Keep the transition time when the condition was already False.
        let (was_false, uid) = {
            let state = self.shared.lock();
            let spec = state.pod(&c.pod);
            (
                spec.and_then(|s| s.pod_scheduled_condition())
                    .is_some_and(|(s, _, _)| s == "False"),
                spec.map(|s| s.uid.clone()).unwrap_or_default(),
            )
        };
        let mut cond = json!({"type": "PodScheduled", "status": "False", "reason": c.reason, "message": c.message});
        if !was_false {
            cond["lastTransitionTime"] = json!(Time(Timestamp::now()));
        }
        let mut status = json!({"conditions": [cond]});
        if let Some(n) = &c.nominated_node {
            status["nominatedNodeName"] = json!(n);
        }
        let patch = json!({"status": status});
        let pods = self.pods(ns);
        let (pp, patch) = (PatchParams::default(), Patch::Strategic(&patch));
        let result = self.call(pods.patch_status(name, &pp, &patch)).await;
        match result {
            Ok(_) => {
                self.publish(&SchedEvent {
                    object: pod_ref(ns, name, &uid),
                    type_: EventType::Warning,
                    reason: "FailedScheduling".into(),
                    message: c.message.clone(),
                })
                .await
            }
            Err(WriteError::Fenced) => {}
            Err(e) => {
                tracing::warn!(pod = %c.pod, error = %e, "pod condition not written; retried next cycle")
            }
        }
    }

    async fn write_pod_group_status(&self, u: &PodGroupStatusUpdate) {
        let Some((ns, name)) = u.pod_group.split_once('/') else {
            return;
        };
        tracing::trace!(pod_group = %u.pod_group, phase = %u.status.phase, "writing PodGroup status");
        let status = engine::model::job::job_status_to_api(&u.status);
        let patch = json!({"status": status});
        let url = <PodGroup as kube::Resource>::url_path(&(), Some(ns));
        let (pp, patch) = (PatchParams::default(), Patch::Merge(&patch));
        let result = self
            .call_unread(kube::core::Request::new(url).patch(name, &pp, &patch))
            .await;
        if let Err(WriteError::Api(e)) = result {
            tracing::warn!(pod_group = %u.pod_group, error = %e, "PodGroup status not written; retried next cycle");
        }
    }

    async fn write_queue_status(&self, q: &QueueAllocation) {
        let api: Api<Queue> = Api::all(self.client.clone());
        let mut allocated = serde_json::Map::new();
        for (name, quantity) in q.allocated.to_resource_list() {
            allocated.insert(name, json!(quantity));
        }
        // Standalone (no Volcano queue controller): a Queue without a state is Open.
        let (unset_state, observed_keys) = {
            let state = self.shared.lock();
            let status = state.queue(&q.queue).map(|s| s.queue.status.as_ref());
            (
                status.is_some_and(|st| st.is_none_or(|st| st.state.is_empty())),
                status
                    .flatten()
                    .map(|st| st.allocated.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default(),
            )
        };
        // A merge patch keeps keys it does not mention: a resource that dropped out of the
        // allocation (e.g. `pods` back to nothing) must be removed explicitly, or the status
        // never matches and every session writes it again.
        for name in observed_keys {
            allocated.entry(name).or_insert(serde_json::Value::Null);
        }
        let mut status = json!({"allocated": allocated});
        if unset_state {
            status["state"] = json!(apis::queue_state::OPEN);
        }
        let patch = json!({"status": status});
        let (pp, patch) = (PatchParams::default(), Patch::Merge(&patch));
        let result = self.call(api.patch_status(&q.queue, &pp, &patch)).await;
        if let Err(WriteError::Api(e)) = result {
            tracing::warn!(queue = %q.queue, error = %e, "Queue status not written; retried next cycle");
        }
    }

    async fn evict(&self, e: &Eviction) {
        let Some((ns, name)) = e.pod.split_once('/') else {
            return;
        };
        let message = format!("Pod is evicted, because of {}", e.reason);
        self.publish(&SchedEvent {
            object: pod_ref(ns, name, &e.pod_uid),
            type_: EventType::Warning,
            reason: "Evict".into(),
            message: message.clone(),
        })
        .await;
        let now = Time(Timestamp::now());
        let patch = json!({"status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "Evict", "message": message, "lastTransitionTime": now},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": format!("{}: preempting to accommodate a higher priority pod", self.cfg.scheduler_name),
             "lastTransitionTime": now}
        ]}});
        let pods = self.pods(ns);
        let (pp, patch) = (PatchParams::default(), Patch::Strategic(&patch));
        match self.call(pods.patch_status(name, &pp, &patch)).await {
            Ok(_) => {}
            Err(WriteError::Fenced) => {
                self.shared.lock().rollback_eviction(&e.pod);
                return;
            }
            Err(err) => {
                tracing::warn!(pod = %e.pod, error = %err, "eviction conditions not written")
            }
        }
        let dp = DeleteParams::default();
        match self.call(pods.delete(name, &dp)).await {
            Ok(_) => {
                tracing::debug!(
                    target: "decisions",
                    "evicted {} from node {} ({}: {})",
                    e.pod,
                    e.node,
                    e.action,
                    e.reason
                );
                self.metrics.evictions(&e.action, 1)
            }
            Err(WriteError::Api(kube::Error::Api(s))) if s.code == 404 => {}
            Err(err) => {
                tracing::warn!(pod = %e.pod, error = %err, "eviction delete failed; decided again next cycle");
                self.shared.lock().rollback_eviction(&e.pod);
            }
        }
    }

    /// Publishes an event unless the identical one was published recently.
    pub async fn publish(&self, ev: &SchedEvent) {
        let key = (
            format!(
                "{}/{}/{}",
                ev.object.kind,
                ev.object.namespace.as_deref().unwrap_or(""),
                ev.object.name
            ),
            ev.reason.clone(),
            ev.message.clone(),
        );
        {
            let mut recent = self.recent_events.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            if recent
                .get(&key)
                .is_some_and(|t| now.duration_since(*t) < EVENT_REPEAT_INTERVAL)
            {
                return;
            }
            recent.insert(key.clone(), now);
            if recent.len() > 50_000 {
                recent.retain(|_, t| now.duration_since(*t) < EVENT_REPEAT_INTERVAL);
            }
        }
        // Created directly rather than through kube's `Recorder`: its series cache keys events
        // without their message, so a changed message would patch the old event and be lost.
        // A core/v1 Event, as client-go's recorder writes Volcano's: `kubectl get events`,
        // `--sort-by=.lastTimestamp` and event exporters read source, count and first/last
        // timestamps, which events.k8s.io/v1 refuses to set on new events.
        let now = Timestamp::now();
        let namespace = ev.object.namespace.as_deref().unwrap_or("default");
        let reporter = event_body::Reporter {
            component: &self.cfg.scheduler_name,
            instance: &self.cfg.instance,
        };
        let time_text = self.event_second.of(now);
        let url = <KubeEvent as kube::Resource>::url_path(&(), Some(namespace));
        let request = event_body::event_body(ev, namespace, &reporter, now, &time_text)
            .map_err(kube::core::request::Error::SerializeBody)
            .and_then(|body| kube::core::Request::new(url).create(&PostParams::default(), body));
        if let Err(e) = self.call_unread(request).await {
            tracing::debug!(error = %e, reason = %ev.reason, "event not published");
            // Let the next identical event try again instead of suppressing it.
            self.recent_events
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
        }
    }
}

/// The executor's write policy: nothing holds up the next session. Binds and evictions run in
/// the background: they are assumed in the state, so no later session decides them again.
/// Status writes (PodGroup and Queue status, pod conditions) wait in a queue that keeps one per
/// object, the newest decision winning ([`status_queue`]), so that writes still waiting for the
/// rate limiter are replaced, not repeated, by the sessions that follow. Events go last, at
/// most [`MAX_EVENT_BATCHES`] sessions' worth. The rate limiter serves binds first, then status
/// writes, then events, each class with a guaranteed share ([`crate::ratelimit`]).
impl WriteSink for Arc<Executor> {
    fn assume(&self, decisions: &Decisions) {
        Executor::assume(self, decisions);
    }

    /// The binds are assumed a batch at a time ([`Executor::assume_batch`]), and each is sent
    /// as soon as it is assumed: a backlog's first binds go out while the rest are still being
    /// assumed (copying each pod took most of a 5,000-pod session's hand-over, about 125 ms
    /// before the first bind). More than a batch is assumed on a blocking thread: on the
    /// caller's, the bind task just spawned would wait in its worker's slot for the caller to
    /// yield, that is until the last batch. The future resolves once all are assumed.
    fn assume_and_write(
        &self,
        mut decisions: Decisions,
    ) -> futures::future::BoxFuture<'static, ()> {
        self.assume_others(&decisions);
        let binds = Arc::new(std::mem::take(&mut decisions.binds));
        let gate = Arc::new(AssumeGate::default());
        let write = self.write_with(decisions, binds.clone(), Some(gate.clone()));
        let assuming = Assuming {
            executor: Arc::clone(self),
            binds,
            gate,
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if assuming.binds.len() > ASSUME_BATCH => {
                let assumed = runtime.spawn_blocking(move || assuming.run());
                Box::pin(async move {
                    let _ = assumed.await;
                    write.await;
                })
            }
            _ => {
                assuming.run();
                write
            }
        }
    }

    fn write(&self, mut decisions: Decisions) -> futures::future::BoxFuture<'static, ()> {
        let binds = Arc::new(std::mem::take(&mut decisions.binds));
        self.write_with(decisions, binds, None)
    }

    fn publish(&self, event: SchedEvent) -> futures::future::BoxFuture<'static, ()> {
        let me = Arc::clone(self);
        Box::pin(async move { Executor::publish(&me, &event).await })
    }

    fn ensure_queue(
        &self,
        name: &str,
        reclaimable: bool,
    ) -> futures::future::BoxFuture<'static, Result<(), String>> {
        let (me, name) = (Arc::clone(self), name.to_string());
        Box::pin(async move {
            crate::queues::ensure_queue(&me.client, &name, reclaimable)
                .await
                .map(|_| ())
                .map_err(|e| crate::errors::kube(&e))
        })
    }

    fn drain(&self, within: Duration) -> futures::future::BoxFuture<'static, bool> {
        let mut set = std::mem::take(
            &mut *self
                .background
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        Box::pin(async move {
            let all = async { while set.join_next().await.is_some() {} };
            tokio::time::timeout(within, all).await.is_ok()
        })
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn pod_ref(ns: &str, name: &str, uid: &str) -> ObjectRef {
    ObjectRef {
        kind: "Pod",
        namespace: Some(ns.to_string()),
        name: name.to_string(),
        uid: uid.to_string(),
    }
}

mod status_queue;
#[cfg(test)]
mod tests;
