//! Leader election on a `coordination.k8s.io/v1` Lease (spec `kubernetes.md` §8, flags §2.2).
//!
//! Every replica keeps its cluster state warm; only the replica holding the Lease runs sessions
//! and writes. The protocol is client-go's `leaderelection` one:
//!
//! * a candidate takes the Lease when it does not exist (create), has no holder, is already its
//!   own, or has expired (`renewTime + leaseDurationSeconds < now`), and only takes it over with a
//!   conditional write (the `resourceVersion` it read), so of two candidates one gets `409
//!   Conflict` and loses the race;
//! * the leader renews every retry period; a takeover increments `leaseTransitions` and resets
//!   `acquireTime`, a renewal keeps both;
//! * candidates retry every retry period, jittered by up to 120 % as client-go does, so replicas
//!   that started together do not keep colliding.
//!
//! Where this implementation differs, on purpose:
//!
//! * Expiry is judged from the Lease's `renewTime` against this replica's wall clock (client-go
//!   times its own observations instead). Replica clocks must agree to well within
//!   `lease duration − renew deadline` (5 s with the defaults), which NTP gives.
//! * The renew deadline counts from the start of the last renewal that succeeded, and a Lease
//!   found held by another identity ends leadership at once (client-go keeps acting until the
//!   deadline of the current renewal round). Leadership therefore ends at most `renew deadline`
//!   after the `renewTime` other replicas see, which leaves them the rest of the lease duration
//!   as a safety margin.
//! * Losing leadership sends the replica back to campaigning, and on shutdown the leader
//!   releases the Lease (no holder, `leaseDurationSeconds: 1`) so that another replica takes over
//!   at once; Volcano exits on loss and never releases.

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::pin::pin;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout, timeout_at};
use tracing::{debug, error, info, warn};

/// Whether this replica may write: it holds a Lease it renewed within the renew deadline.
///
/// The elector extends the hold on every acquisition or renewal (from the start of that
/// attempt) and drops it on loss; every write checks [`Fence::holds`] just before it is sent.
/// The hold is a point on the monotonic clock, which keeps running while the process is
/// stopped, so a leader paused past its Lease finds its hold expired the moment it resumes,
/// before its elector has even noticed.
#[derive(Clone, Debug)]
pub struct Fence(std::sync::Arc<FenceInner>);

#[derive(Debug)]
struct FenceInner {
    /// Without leader election the only replica always writes.
    always: bool,
    until: std::sync::Mutex<Option<Instant>>,
    /// Why campaigning fails, while it does (shown by `/readyz`).
    problem: std::sync::Mutex<Option<String>>,
}

impl Fence {
    /// A fence for a replica that runs without leader election.
    pub fn always() -> Fence {
        Fence(std::sync::Arc::new(FenceInner {
            always: true,
            until: std::sync::Mutex::new(None),
            problem: std::sync::Mutex::new(None),
        }))
    }

    /// A fence that holds nothing until the elector acquires the Lease.
    pub fn elected() -> Fence {
        Fence(std::sync::Arc::new(FenceInner {
            always: false,
            until: std::sync::Mutex::new(None),
            problem: std::sync::Mutex::new(None),
        }))
    }

    /// True while a write may be sent.
    pub fn holds(&self) -> bool {
        self.0.always || self.lock().is_some_and(|until| Instant::now() < until)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.0.until.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why this replica cannot campaign right now (e.g. the Lease namespace does not exist).
    pub fn problem(&self) -> Option<String> {
        self.0
            .problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records the campaign's problem; true when it changed (so that it is logged once).
    fn set_problem(&self, problem: Option<String>) -> bool {
        let mut p = self.0.problem.lock().unwrap_or_else(|p| p.into_inner());
        let changed = *p != problem;
        *p = problem;
        changed
    }

    pub(crate) fn hold_until(&self, until: Instant) {
        *self.lock() = Some(until);
    }

    fn release(&self) {
        *self.lock() = None;
    }
}

/// Volcano's `--leader-elect-lease-duration` default (§2.2).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Volcano's `--leader-elect-renew-deadline` default.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Volcano's `--leader-elect-retry-period` default.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Where the Lease lives, who we are, and the election timings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderConfig {
    pub namespace: String,
    pub name: String,
    /// Written as `holderIdentity`; must be unique per replica (see [`default_identity`]).
    pub identity: String,
    /// How long a Lease stays valid after its last renewal. Written in whole seconds.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// Pause between attempts, both for candidates and for the leader's renewals.
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// A configuration with Volcano's default timings (15 s / 10 s / 2 s).
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaderConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
        }
    }

    /// Checks what component-base and client-go's elector insist on: positive durations,
    /// lease duration > renew deadline > 1.2 × retry period, and non-empty names. Every
    /// problem found is listed, separated by `; `.
    pub fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (flag, value) in [
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("identity", &self.identity),
        ] {
            if value.trim().is_empty() {
                problems.push(format!("the lease {flag} must not be empty"));
            }
        }
        let durations = [
            ("lease duration", self.lease_duration),
            ("renew deadline", self.renew_deadline),
            ("retry period", self.retry_period),
        ];
        for (what, value) in durations {
            if value.is_zero() {
                problems.push(format!("the {what} must be greater than zero"));
            }
        }
        // leaseDurationSeconds is a whole number of seconds in an int32.
        if !self.lease_duration.is_zero() && self.lease_duration < Duration::from_secs(1) {
            problems.push(format!(
                "the lease duration ({:?}) must be at least 1s",
                self.lease_duration
            ));
        }
        if self.lease_duration.as_secs() > i32::MAX as u64 {
            problems.push(format!(
                "the lease duration ({:?}) is too long",
                self.lease_duration
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            problems.push(format!(
                "the lease duration ({:?}) must be greater than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        // renew > 1.2 × retry, in integer nanoseconds: 5 × renew > 6 × retry.
        if 5 * self.renew_deadline.as_nanos() <= 6 * self.retry_period.as_nanos() {
            problems.push(format!(
                "the renew deadline ({:?}) must be greater than 1.2 × the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// `<hostname>_<random hex>`, unique per process, as client-go's `<hostname>_<uuid>`.
pub fn default_identity() -> String {
    format!("{}_{}", hostname(), random_hex())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "volcano-rs".to_owned())
}

fn random_hex() -> String {
    let from_kernel = std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .ok()
        .map(|uuid| {
            uuid.chars()
                .filter(char::is_ascii_hexdigit)
                .collect::<String>()
        })
        .filter(|hex| hex.len() == 32);
    from_kernel.unwrap_or_else(|| {
        // `RandomState` is seeded randomly per process; mixing in the pid and the time makes the
        // result differ even where that seed is weak.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = (std::process::id(), nanos);
        let state = RandomState::new();
        format!(
            "{:016x}{:016x}",
            state.hash_one((seed, 0u8)),
            state.hash_one((seed, 1u8))
        )
    })
}

/// Campaigns until `shutdown`; publishes leadership on `leader` (true while we hold the Lease).
///
/// Acquires the Lease when it is missing, free, expired or already ours; renews it every retry
/// period; if no renewal has succeeded for the renew deadline, publishes `false` at once, stops
/// writing and campaigns again. API errors are logged and retried at the retry period. On
/// shutdown a leader releases the Lease, so that another replica takes over at once, and then
/// publishes `false`.
///
/// The configuration should have passed [`LeaderConfig::validate`]; an invalid one is logged and
/// `run` returns without campaigning.
pub async fn run(
    client: kube::Client,
    cfg: LeaderConfig,
    leader: watch::Sender<bool>,
    fence: Fence,
    shutdown: impl Future<Output = ()>,
) {
    run_with_clock(client, cfg, leader, fence, shutdown, Clock::SYSTEM).await;
}

async fn run_with_clock(
    client: kube::Client,
    cfg: LeaderConfig,
    leader: watch::Sender<bool>,
    fence: Fence,
    shutdown: impl Future<Output = ()>,
    clock: Clock,
) {
    fence.release();
    publish(&leader, false);
    if let Err(problem) = cfg.validate() {
        error!(lease = %cfg.name, "invalid leader election configuration, not campaigning: {problem}");
        return;
    }
    let mut elector = Elector::new(client, cfg, clock, fence.clone());
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => return,
            () = elector.campaign() => {}
        }
        info!(
            lease = %elector.lease_name(),
            identity = %elector.cfg.identity,
            "acquired the lease, now leading"
        );
        publish(&leader, true);

        let lost = tokio::select! {
            biased;
            () = &mut shutdown => false,
            () = elector.lead() => true,
        };
        if lost {
            // `lead` returns only once writing must stop, so say so before anything else.
            fence.release();
            publish(&leader, false);
            warn!(lease = %elector.lease_name(), "lost leadership, campaigning again");
            continue;
        }

        // No write after the release starts: the Lease may be someone else's a moment later.
        fence.release();
        match timeout(elector.cfg.renew_deadline, elector.release()).await {
            Ok(Ok(())) => info!(lease = %elector.lease_name(), "released the lease"),
            Ok(Err(e)) => warn!(
                lease = %elector.lease_name(),
                "could not release the lease, it will expire instead: {}", crate::errors::kube(&e)
            ),
            Err(_) => warn!(
                lease = %elector.lease_name(),
                "timed out releasing the lease, it will expire instead"
            ),
        }
        publish(&leader, false);
        return;
    }
}

/// Sets the value and wakes receivers only when it changes; never fails for lack of receivers.
fn publish(leader: &watch::Sender<bool>, value: bool) {
    leader.send_if_modified(|current| {
        let changed = *current != value;
        *current = value;
        changed
    });
}

/// The source of the wall-clock times written into, and compared with, the Lease.
#[derive(Clone, Copy, Debug)]
struct Clock {
    /// `None`: the system clock. Tests anchor a wall time to tokio's (pausable) clock so that
    /// expiry follows virtual time.
    anchor: Option<(Timestamp, Instant)>,
}

impl Clock {
    const SYSTEM: Clock = Clock { anchor: None };

    fn now(&self) -> Timestamp {
        match self.anchor {
            None => Timestamp::now(),
            Some((wall, at)) => {
                let elapsed = SignedDuration::try_from(at.elapsed()).unwrap_or(SignedDuration::MAX);
                wall.checked_add(elapsed).unwrap_or(Timestamp::MAX)
            }
        }
    }
}

/// Outcome of one successful round trip to the API server.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    /// We hold the Lease (created, taken over or renewed).
    Holding,
    /// Another identity holds an unexpired Lease.
    HeldBy(String),
}

struct Elector {
    api: Api<Lease>,
    cfg: LeaderConfig,
    clock: Clock,
    /// The Lease as last read or written; its `resourceVersion` makes our next write
    /// conditional, so a concurrent writer turns it into a `409 Conflict`.
    observed: Option<Lease>,
    /// Start of the last attempt that left us holding the Lease. The renew deadline counts from
    /// here; the `renewTime` that attempt wrote is not earlier, so we stop leading at most the
    /// renew deadline after the `renewTime` other replicas judge expiry by.
    renewed_at: Instant,
    /// The holder last logged while campaigning, so that each change is logged once.
    reported_holder: Option<String>,
    /// Extended on every acquisition and renewal.
    fence: Fence,
}

impl Elector {
    fn new(client: kube::Client, cfg: LeaderConfig, clock: Clock, fence: Fence) -> Self {
        Elector {
            api: Api::namespaced(client, &cfg.namespace),
            cfg,
            clock,
            observed: None,
            renewed_at: Instant::now(),
            reported_holder: None,
            fence,
        }
    }

    /// We hold the Lease as of an attempt that started at `started`.
    fn held_since(&mut self, started: Instant) {
        self.renewed_at = started;
        self.fence.hold_until(started + self.cfg.renew_deadline);
    }

    fn lease_name(&self) -> String {
        format!("{}/{}", self.cfg.namespace, self.cfg.name)
    }

    /// A failed campaign attempt: logged once per distinct problem and shown by `/readyz`.
    fn report_problem(&self, e: &kube::Error) {
        let missing_namespace = matches!(e, kube::Error::Api(s)
            if s.code == 404 && s.details.as_ref().is_some_and(|d| d.kind == "namespaces"));
        let problem = if missing_namespace {
            format!(
                "the Lease namespace {:?} does not exist (set --leader-elect-resource-namespace, \
                 or create it)",
                self.cfg.namespace
            )
        } else {
            format!("cannot acquire the lease: {}", crate::errors::kube(e))
        };
        if self.fence.set_problem(Some(problem.clone())) {
            warn!(lease = %self.lease_name(), "{problem}; retrying every retry period");
        }
    }

    fn clear_problem(&self) {
        if self.fence.set_problem(None) {
            info!(lease = %self.lease_name(), "the lease is reachable again");
        }
    }

    /// Tries immediately, then every jittered retry period, until we hold the Lease.
    async fn campaign(&mut self) {
        loop {
            let started = Instant::now();
            // A hung request must not stall the campaign: each attempt is bounded.
            match timeout(self.cfg.renew_deadline, self.try_acquire_or_renew(false)).await {
                Ok(Ok(Attempt::Holding)) => {
                    self.held_since(started);
                    self.reported_holder = None;
                    self.clear_problem();
                    return;
                }
                Ok(Ok(Attempt::HeldBy(holder))) => {
                    self.clear_problem();
                    if self.reported_holder.as_ref() != Some(&holder) {
                        info!(lease = %self.lease_name(), %holder, "the lease is held by another replica, waiting");
                        self.reported_holder = Some(holder);
                    }
                }
                Ok(Err(e)) if is_conflict(&e) => {
                    debug!(lease = %self.lease_name(), "another replica wrote the lease first: {}", crate::errors::kube(&e));
                }
                Ok(Err(e)) => self.report_problem(&e),
                Err(_) => warn!(lease = %self.lease_name(), "acquiring the lease timed out"),
            }
            sleep(jittered(self.cfg.retry_period)).await;
        }
    }

    /// Renews every retry period; returns when leadership is lost.
    async fn lead(&mut self) {
        loop {
            sleep(self.cfg.retry_period).await;
            let deadline = self.renewed_at + self.cfg.renew_deadline;
            match timeout_at(deadline, self.renew_round()).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(_) => {
                    warn!(
                        lease = %self.lease_name(),
                        "no renewal succeeded within the renew deadline ({:?})",
                        self.cfg.renew_deadline
                    );
                    return;
                }
            }
        }
    }

    /// Retries a renewal every retry period until it succeeds (true) or the Lease turns out to
    /// be held by someone else (false). The caller bounds it by the renew deadline.
    async fn renew_round(&mut self) -> bool {
        loop {
            let started = Instant::now();
            match self.try_acquire_or_renew(true).await {
                Ok(Attempt::Holding) => {
                    self.held_since(started);
                    return true;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    warn!(lease = %self.lease_name(), %holder, "the lease was taken over");
                    return false;
                }
                Err(e) => warn!(
                    lease = %self.lease_name(),
                    "cannot renew the lease: {}",
                    crate::errors::kube(&e)
                ),
            }
            sleep(self.cfg.retry_period).await;
        }
    }

    /// One client-go `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self, leading: bool) -> Result<Attempt, kube::Error> {
        let now = self.clock.now();

        // Fast path: the leader writes over the Lease it last saw without reading it first.
        if leading
            && let Some(lease) = self.observed.clone()
            && holder(&lease) == self.cfg.identity
            && !expired(&lease, now)
        {
            match self.write(self.claimed(lease, now)).await {
                Ok(()) => return Ok(Attempt::Holding),
                Err(e) => {
                    debug!(lease = %self.lease_name(), "optimistic renewal failed, re-reading the lease: {}", crate::errors::kube(&e))
                }
            }
        }

        let Some(current) = self.api.get_opt(&self.cfg.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.cfg.name.clone()),
                    namespace: Some(self.cfg.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: None,
            };
            let mut lease = self.claimed(lease, now);
            if let Some(spec) = &mut lease.spec {
                // A new Lease starts at zero transitions, not at one.
                spec.lease_transitions = Some(0);
            }
            let created = self.api.create(&PostParams::default(), &lease).await?;
            self.observed = Some(created);
            return Ok(Attempt::Holding);
        };

        let current_holder = holder(&current).to_owned();
        self.observed = Some(current.clone());
        if !current_holder.is_empty()
            && current_holder != self.cfg.identity
            && !expired(&current, now)
        {
            return Ok(Attempt::HeldBy(current_holder));
        }
        self.write(self.claimed(current, now)).await?;
        Ok(Attempt::Holding)
    }

    /// `lease` with us as holder and `renewTime` = `now`. Taking it from another holder (or from
    /// nobody) restarts `acquireTime` and counts a transition; renewing our own keeps both.
    fn claimed(&self, mut lease: Lease, now: Timestamp) -> Lease {
        let ours = holder(&lease) == self.cfg.identity;
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !ours {
            let transitions = spec.lease_transitions.unwrap_or(0).max(0);
            spec.lease_transitions = Some(transitions.saturating_add(1));
            spec.acquire_time = Some(MicroTime(now));
        } else if spec.acquire_time.is_none() {
            spec.acquire_time = Some(MicroTime(now));
        }
        spec.holder_identity = Some(self.cfg.identity.clone());
        spec.lease_duration_seconds = Some(self.cfg.lease_seconds());
        spec.renew_time = Some(MicroTime(now));
        lease
    }

    /// A conditional update: `lease` carries the `resourceVersion` it was read with.
    async fn write(&mut self, lease: Lease) -> Result<(), kube::Error> {
        let written = self
            .api
            .replace(&self.cfg.name, &PostParams::default(), &lease)
            .await?;
        self.observed = Some(written);
        Ok(())
    }

    /// Gives the Lease up (client-go `release`): no holder, a one-second duration, times set to
    /// now, transitions kept. Does nothing when someone else holds it by now.
    async fn release(&mut self) -> Result<(), kube::Error> {
        // The last renewal may have been cut short by the shutdown, leaving `observed` stale;
        // after a conflict, read the Lease once more.
        let mut lease = self.observed.clone();
        for last_try in [false, true] {
            let current = match lease.take() {
                Some(lease) => lease,
                None => match self.api.get_opt(&self.cfg.name).await? {
                    Some(lease) => lease,
                    None => return Ok(()),
                },
            };
            if holder(&current) != self.cfg.identity {
                return Ok(());
            }
            let now = MicroTime(self.clock.now());
            let mut released = current;
            let spec = released.spec.get_or_insert_with(LeaseSpec::default);
            spec.holder_identity = Some(String::new());
            spec.lease_duration_seconds = Some(1);
            spec.acquire_time = Some(now.clone());
            spec.renew_time = Some(now);
            match self.write(released).await {
                Err(e) if is_conflict(&e) && !last_try => continue,
                result => return result,
            }
        }
        Ok(())
    }
}

fn holder(lease: &Lease) -> &str {
    lease
        .spec
        .as_ref()
        .and_then(|spec| spec.holder_identity.as_deref())
        .unwrap_or("")
}

/// `renewTime + leaseDurationSeconds < now`. A Lease without any time, or without a positive
/// duration, has expired; `acquireTime` stands in for a missing `renewTime`.
fn expired(lease: &Lease, now: Timestamp) -> bool {
    let Some(spec) = &lease.spec else {
        return true;
    };
    let Some(renewed) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else {
        return true;
    };
    let seconds = spec.lease_duration_seconds.unwrap_or(0).max(0);
    match renewed
        .0
        .checked_add(SignedDuration::from_secs(i64::from(seconds)))
    {
        Ok(valid_until) => valid_until < now,
        // Beyond the representable range: valid for all practical purposes.
        Err(_) => false,
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 409)
}

/// `base` plus up to 120 % of it (client-go's `JitterUntil` factor).
fn jittered(base: Duration) -> Duration {
    // `RandomState::new()` is freshly keyed on every call, which is random enough for jitter.
    let unit = (RandomState::new().hash_one(0u8) >> 11) as f64 / (1u64 << 53) as f64;
    base + base.mul_f64(1.2 * unit)
}

#[cfg(test)]
mod tests;
