//! Client-side rate limit for API writes (spec `kubernetes.md` §2.1 `--kube-api-qps` and
//! `--kube-api-burst`, §3).
//!
//! Volcano gives every API client a client-go token bucket (QPS 2000, burst 2000). This is the
//! same bucket: it holds up to `burst` tokens, refills at `qps` tokens per second, and each write
//! takes one. A caller that finds the bucket empty reserves the next token and sleeps until it is
//! due, so waiting callers are served in arrival order and nobody polls.
//!
//! Writes come in three classes, served in this order when they compete for tokens: binds,
//! then status writes (PodGroup, Queue, pod conditions, evictions), then events
//! ([`RateLimiter::acquire_for`]). Binds reserve as above; a lower class takes a token only when
//! one is available now and no caller of a higher class is waiting, so a burst of binds is never
//! queued behind events, and a PodGroup's status is not queued behind the events of its pods.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

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

/// A token bucket shared by every writer (wrap it in an `Arc`).
#[derive(Debug)]
pub struct RateLimiter {
    /// `None`: unlimited.
    bucket: Option<Mutex<Bucket>>,
    /// Callers of each [`WriteClass`] waiting for a token.
    waiting: [AtomicUsize; 3],
}

/// Counts a waiting caller for as long as it waits (also when its future is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Waiting(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    /// Negative while callers are waiting for reserved tokens.
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

    /// Takes one token and returns how long the caller must wait for it.
    fn reserve(&mut self, now: Instant) -> Duration {
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-self.tokens / self.qps).unwrap_or(Duration::MAX)
        }
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
            waiting: [
                AtomicUsize::new(0),
                AtomicUsize::new(0),
                AtomicUsize::new(0),
            ],
            bucket: limited.then(|| {
                Mutex::new(Bucket {
                    qps,
                    burst,
                    tokens: burst,
                    updated: Instant::now(),
                })
            }),
        }
    }

    /// Waits for a token for a write of `class`, after every waiting caller of a higher class.
    /// Cancel-safe.
    pub async fn acquire_for(&self, class: WriteClass) {
        let Some(bucket) = &self.bucket else {
            return;
        };
        let _waiting = Waiting::new(&self.waiting[class as usize]);
        if class == WriteClass::Bind {
            return self.acquire().await;
        }
        loop {
            let higher_waiting = self.waiting[..class as usize]
                .iter()
                .any(|w| w.load(Ordering::SeqCst) > 0);
            let wait = {
                let mut b = lock(bucket);
                if higher_waiting {
                    // The next token is the higher class's: look again after it.
                    b.refill(Instant::now());
                    let until_token = ((1.0 - b.tokens).max(0.0) + 1.0) / b.qps;
                    Duration::try_from_secs_f64(until_token)
                        .unwrap_or(Duration::MAX)
                        .max(Duration::from_millis(1))
                } else {
                    match b.take_now(Instant::now()) {
                        Ok(()) => return,
                        Err(wait) => wait,
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// Waits for a token. Cancel-safe: dropping the future before it completes returns the
    /// reserved token.
    pub async fn acquire(&self) {
        let Some(bucket) = &self.bucket else {
            return;
        };
        let wait = lock(bucket).reserve(Instant::now());
        if wait.is_zero() {
            return;
        }
        let refund = Refund(Some(bucket));
        tokio::time::sleep(wait).await;
        refund.disarm();
    }
}

/// Gives a reserved token back if the waiting caller goes away. Callers that reserved after it
/// keep their (now slightly pessimistic) wake-up times, which only errs on the slow side.
struct Refund<'a>(Option<&'a Mutex<Bucket>>);

impl Refund<'_> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Refund<'_> {
    fn drop(&mut self) {
        if let Some(bucket) = self.0 {
            let mut bucket = lock(bucket);
            bucket.tokens = (bucket.tokens + 1.0).min(bucket.burst);
        }
    }
}

/// The bucket is plain numbers updated in one step, so a poisoned lock still holds a usable state.
fn lock(bucket: &Mutex<Bucket>) -> std::sync::MutexGuard<'_, Bucket> {
    bucket.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Events asked first still wait for the binds and status writes that came after them.
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
                "bind", "bind", "bind", "status", "status", "event", "event", "event"
            ]
        );
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
