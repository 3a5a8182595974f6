//! Client-side rate limit for API writes (spec `kubernetes.md` §2.1 `--kube-api-qps` and
//! `--kube-api-burst`, §3).
//!
//! Volcano gives every API client a client-go token bucket (QPS 2000, burst 2000). This is the
//! same bucket: it holds up to `burst` tokens, refills at `qps` tokens per second, and each write
//! takes one.
//!
//! Writes come in three classes, binds, then status writes (PodGroup, Queue, pod conditions,
//! evictions), then events ([`RateLimiter::acquire_for`]). Waiting callers stand in one line
//! per class; only the caller to be served next watches the bucket, the others sleep until
//! their turn. Higher classes go first, but a waiting lower class gets a token after a bounded
//! run of higher ones ([`MAX_PASSED`]), so that at any rate a PodGroup's status is written
//! while its binds are, not after every other pod's bind.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Volcano's `--kube-api-qps` default.
pub const DEFAULT_QPS: f64 = 2000.0;
/// Volcano's `--kube-api-burst` default.
pub const DEFAULT_BURST: u32 = 2000;

/// Which kind of write asks for a token; earlier variants go first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WriteClass {
    Bind = 0,
    Status = 1,
    Event = 2,
}

/// While a caller of a class waits, callers of higher classes take at most this many tokens in
/// a row before it gets one: status writes get at least a third of a saturated rate, events at
/// least a fifth, so that a PodGroup's phase is not held up behind thousands of binds.
const MAX_PASSED: [u32; 3] = [0, 2, 4];

/// A token bucket shared by every writer (wrap it in an `Arc`).
#[derive(Debug)]
pub struct RateLimiter {
    /// `None`: unlimited.
    inner: Option<Mutex<Dispatch>>,
}

/// The bucket and the callers waiting for it, one line per class.
#[derive(Debug)]
struct Dispatch {
    bucket: Bucket,
    lines: [VecDeque<Arc<Ticket>>; 3],
    /// Tokens higher classes took in a row while the head of each line waited.
    passed: [u32; 3],
    next_id: u64,
}

/// A waiting caller; woken when it is the next to be served.
#[derive(Debug)]
struct Ticket {
    id: u64,
    class: usize,
    turn: Notify,
}

impl Dispatch {
    /// The class whose head is served next: the highest class with a waiter, unless a lower
    /// one has seen its share of tokens go by.
    fn next_class(&self) -> Option<usize> {
        let starved = (1..3)
            .rev()
            .find(|&c| !self.lines[c].is_empty() && self.passed[c] >= MAX_PASSED[c]);
        starved.or_else(|| (0..3).find(|&c| !self.lines[c].is_empty()))
    }

    fn is_next(&self, ticket: &Ticket) -> bool {
        self.next_class() == Some(ticket.class)
            && self.lines[ticket.class]
                .front()
                .is_some_and(|t| t.id == ticket.id)
    }

    /// Serves the head of `class`: it leaves its line and the others count one more token gone.
    fn served(&mut self, class: usize) {
        self.lines[class].pop_front();
        self.passed[class] = 0;
        for c in class + 1..3 {
            if !self.lines[c].is_empty() {
                self.passed[c] += 1;
            }
        }
    }

    /// Wakes whoever is served next, so that exactly one waiter watches the bucket.
    fn wake_next(&self) {
        if let Some(c) = self.next_class()
            && let Some(head) = self.lines[c].front()
        {
            head.turn.notify_one();
        }
    }
}

#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.updated = now;
    }

    /// Takes a token if one is there now; otherwise returns how long until one will be.
    fn take_now(&mut self, now: Instant) -> Result<(), Duration> {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            let wait = Duration::try_from_secs_f64((1.0 - self.tokens) / self.qps)
                .unwrap_or(Duration::MAX);
            Err(wait.max(Duration::from_millis(1)))
        }
    }
}

/// Takes the ticket out of its line if its caller goes away before being served, and hands the
/// watch over the bucket to the next waiter.
struct InLine<'a> {
    dispatch: &'a Mutex<Dispatch>,
    ticket: Arc<Ticket>,
    served: bool,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        let mut d = lock(self.dispatch);
        let line = &mut d.lines[self.ticket.class];
        if let Some(pos) = line.iter().position(|t| t.id == self.ticket.id) {
            line.remove(pos);
            if line.is_empty() {
                d.passed[self.ticket.class] = 0;
            }
        }
        d.wake_next();
    }
}

impl RateLimiter {
    /// `qps` tokens per second, at most `burst` at once; the bucket starts full. A `qps` that is
    /// not a positive finite number means unlimited; a `burst` of 0 is taken as 1, since a bucket
    /// that holds no token would never let anything through.
    pub fn new(qps: f64, burst: u32) -> Self {
        let limited = qps.is_finite() && qps > 0.0;
        let burst = f64::from(burst.max(1));
        RateLimiter {
            inner: limited.then(|| {
                Mutex::new(Dispatch {
                    bucket: Bucket {
                        qps,
                        burst,
                        tokens: burst,
                        updated: Instant::now(),
                    },
                    lines: Default::default(),
                    passed: [0; 3],
                    next_id: 0,
                })
            }),
        }
    }

    /// Waits for a token for a write of `class`. Callers are served in arrival order within a
    /// class; between classes, higher first, with the shares of [`MAX_PASSED`]. Cancel-safe.
    pub async fn acquire_for(&self, class: WriteClass) {
        let Some(dispatch) = &self.inner else {
            return;
        };
        let class = class as usize;
        let ticket = {
            let mut d = lock(dispatch);
            let nobody_waits = d.lines.iter().all(VecDeque::is_empty);
            if nobody_waits && d.bucket.take_now(Instant::now()).is_ok() {
                return;
            }
            d.next_id += 1;
            let ticket = Arc::new(Ticket {
                id: d.next_id,
                class,
                turn: Notify::new(),
            });
            d.lines[class].push_back(ticket.clone());
            ticket
        };
        let mut in_line = InLine {
            dispatch,
            ticket,
            served: false,
        };
        loop {
            // Only the caller served next watches the bucket; the others wait for their turn.
            let wait = {
                let mut d = lock(dispatch);
                if d.is_next(&in_line.ticket) {
                    match d.bucket.take_now(Instant::now()) {
                        Ok(()) => {
                            d.served(class);
                            in_line.served = true;
                            d.wake_next();
                            return;
                        }
                        Err(wait) => Some(wait),
                    }
                } else {
                    None
                }
            };
            match wait {
                // A caller of a higher class may arrive meanwhile: look again when the token is
                // due, or sooner if woken.
                Some(wait) => {
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = in_line.ticket.turn.notified() => {}
                    }
                }
                None => in_line.ticket.turn.notified().await,
            }
        }
    }

    /// Waits for a token as a bind would.
    pub async fn acquire(&self) {
        self.acquire_for(WriteClass::Bind).await
    }
}

/// The bucket is plain numbers updated in one step, so a poisoned lock still holds a usable state.
fn lock(dispatch: &Mutex<Dispatch>) -> std::sync::MutexGuard<'_, Dispatch> {
    dispatch.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Virtual milliseconds since `t0`.
    fn ms_since(t0: Instant) -> u128 {
        t0.elapsed().as_millis()
    }

    #[tokio::test(start_paused = true)]
    async fn burst_passes_at_once_then_qps_paces() {
        let limiter = RateLimiter::new(10.0, 3);
        let t0 = Instant::now();
        let mut times = Vec::new();
        for _ in 0..7 {
            limiter.acquire().await;
            times.push(ms_since(t0));
        }
        assert_eq!(times, [0, 0, 0, 100, 200, 300, 400]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_refills_up_to_burst_only() {
        let limiter = RateLimiter::new(10.0, 2);
        limiter.acquire().await;
        limiter.acquire().await;
        // A long pause refills two tokens, not a hundred.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let t0 = Instant::now();
        let mut times = Vec::new();
        for _ in 0..4 {
            limiter.acquire().await;
            times.push(ms_since(t0));
        }
        assert_eq!(times, [0, 0, 100, 200]);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_the_rate() {
        let limiter = Arc::new(RateLimiter::new(5.0, 5));
        let t0 = Instant::now();
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                tokio::spawn(async move {
                    limiter.acquire().await;
                    ms_since(t0)
                })
            })
            .collect();
        let mut times = Vec::new();
        for task in tasks {
            times.push(task.await.unwrap());
        }
        times.sort_unstable();
        assert_eq!(times, [0, 0, 0, 0, 0, 200, 400, 600, 800, 1000]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_wait_returns_its_token() {
        let limiter = RateLimiter::new(1.0, 1);
        limiter.acquire().await;
        let t0 = Instant::now();
        let gave_up = tokio::time::timeout(Duration::from_millis(100), limiter.acquire()).await;
        assert!(gave_up.is_err());
        // Without the refund this caller would queue behind the abandoned reservation (2 s).
        limiter.acquire().await;
        assert_eq!(ms_since(t0), 1000);
    }

    /// Events asked first still wait for the binds and status writes that came after them, but
    /// each lower class gets its share: a status write after two binds, an event after four
    /// tokens of higher classes.
    #[tokio::test(start_paused = true)]
    async fn binds_go_before_status_writes_and_status_before_events() {
        let limiter = Arc::new(RateLimiter::new(10.0, 1));
        limiter.acquire().await; // empty the bucket
        let order = Arc::new(Mutex::new(Vec::new()));
        let spawn = |class: WriteClass, tag: &'static str| {
            let (limiter, order) = (Arc::clone(&limiter), Arc::clone(&order));
            tokio::spawn(async move {
                limiter.acquire_for(class).await;
                order
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(tag);
            })
        };
        let mut tasks = Vec::new();
        for _ in 0..3 {
            tasks.push(spawn(WriteClass::Event, "event"));
        }
        tokio::task::yield_now().await;
        for _ in 0..2 {
            tasks.push(spawn(WriteClass::Status, "status"));
        }
        tokio::task::yield_now().await;
        for _ in 0..3 {
            tasks.push(spawn(WriteClass::Bind, "bind"));
        }
        for t in tasks {
            t.await.expect("task");
        }
        let order = order.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(
            order,
            [
                "bind", "bind", "status", "bind", "event", "status", "event", "event"
            ]
        );
    }

    /// Under a flood of binds, status writes still get a third of the rate (and events a
    /// fifth of what is left), in arrival order within each class.
    #[tokio::test(start_paused = true)]
    async fn a_flood_of_binds_leaves_status_writes_their_share() {
        let limiter = Arc::new(RateLimiter::new(10.0, 1));
        limiter.acquire().await; // empty the bucket
        let t0 = Instant::now();
        let spawn = |class: WriteClass, n: usize| {
            (0..n)
                .map(|i| {
                    let limiter = Arc::clone(&limiter);
                    tokio::spawn(async move {
                        limiter.acquire_for(class).await;
                        (i, ms_since(t0))
                    })
                })
                .collect::<Vec<_>>()
        };
        let binds = spawn(WriteClass::Bind, 300);
        tokio::task::yield_now().await;
        let statuses = spawn(WriteClass::Status, 10);
        let mut status_times = Vec::new();
        for t in statuses {
            status_times.push(t.await.expect("task"));
        }
        // In order, one every three tokens (300 ms at 10 per second), not after the 300 binds.
        let times: Vec<u128> = status_times.iter().map(|(_, ms)| *ms).collect();
        assert_eq!(times, (1..=10).map(|k| k * 300).collect::<Vec<_>>());
        assert!(status_times.iter().enumerate().all(|(k, (i, _))| k == *i));
        for t in binds {
            t.await.expect("task");
        }
        // Every token was used: 310 writes in 31 s.
        assert_eq!(ms_since(t0), 31_000);
    }

    /// A waiter that gives up hands the bucket on: the next one is not left waiting for a wake-up
    /// that never comes.
    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_hands_over() {
        let limiter = Arc::new(RateLimiter::new(10.0, 1));
        limiter.acquire().await;
        let first = {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move { limiter.acquire_for(WriteClass::Bind).await })
        };
        tokio::task::yield_now().await;
        let t0 = Instant::now();
        let second = {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move {
                limiter.acquire_for(WriteClass::Status).await;
                ms_since(t0)
            })
        };
        tokio::task::yield_now().await;
        first.abort();
        assert_eq!(second.await.expect("task"), 100);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_class_keeps_the_rate() {
        let limiter = RateLimiter::new(10.0, 2);
        let t0 = Instant::now();
        let mut times = Vec::new();
        for _ in 0..5 {
            limiter.acquire_for(WriteClass::Event).await;
            times.push(ms_since(t0));
        }
        assert_eq!(times, [0, 0, 100, 200, 300]);
    }

    #[tokio::test(start_paused = true)]
    async fn non_positive_qps_is_unlimited() {
        for qps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let limiter = RateLimiter::new(qps, 1);
            let t0 = Instant::now();
            for _ in 0..10_000 {
                limiter.acquire().await;
            }
            assert_eq!(ms_since(t0), 0, "qps {qps}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn zero_burst_still_lets_one_through_per_interval() {
        let limiter = RateLimiter::new(2.0, 0);
        let t0 = Instant::now();
        let mut times = Vec::new();
        for _ in 0..3 {
            limiter.acquire().await;
            times.push(ms_since(t0));
        }
        assert_eq!(times, [0, 500, 1000]);
    }

    #[tokio::test(start_paused = true)]
    async fn volcano_defaults_allow_two_thousand_at_once() {
        let limiter = RateLimiter::new(DEFAULT_QPS, DEFAULT_BURST);
        let t0 = Instant::now();
        for _ in 0..2000 {
            limiter.acquire().await;
        }
        assert_eq!(ms_since(t0), 0);
        limiter.acquire().await;
        // The 2001st waits half a millisecond (the timer rounds up to whole milliseconds).
        assert!(t0.elapsed() >= Duration::from_micros(500) && ms_since(t0) <= 1);
    }
}
