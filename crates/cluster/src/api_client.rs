//! The daemon's one API client: kube's HTTP stack with kube's own retry switched off, under
//! three layers that carry the write policy (spec/kubernetes.md §7):
//!
//! ```text
//! bounded retry (idempotent writes) → rate limit (by write class) → fence → kube's stack
//! ```
//!
//! Every attempt of a write takes its own token and passes the fence just before it is sent,
//! so a retry waiting out its delay, or a write waiting for a token, when leadership ends is
//! dropped, not sent. Reads (lists, watches, gets) and the Lease's own requests pass through
//! untouched: the watches own their recovery, the elector owns its timing, and the fence is
//! derived from the Lease. The watchers, the elector and the executor share this client.
//!
//! kube's default stack retries every request on 429/503/504 up to 15 times with delays up to
//! 1,000 s, non-idempotent POSTs included; that layer is disabled here so that one bounded
//! policy, ours, decides.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::{Body, ClientBuilder};
use tower::retry::{Policy, RetryLayer};
use tower::{BoxError, Layer, Service, ServiceExt};

use crate::leader::Fence;
use crate::metrics::Metrics;
use crate::ratelimit::{RateLimiter, WriteClass};

/// Attempts of an idempotent write before it is given up until the next cycle.
pub const WRITE_ATTEMPTS: u32 = 3;
/// Delay before the second attempt; it doubles for each further one.
pub const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);

/// A write request as the policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteKind {
    /// Its place in the rate limiter's order.
    pub class: WriteClass,
    /// The `write` label of the write metrics.
    pub label: &'static str,
    /// PUT, PATCH and DELETE may be repeated; a POST (bind, event, queue creation) may not.
    pub idempotent: bool,
}

/// What the policy layers need: the rate limiter, the fence and the metrics they count in.
#[derive(Clone)]
pub struct WritePolicy {
    pub limiter: Arc<RateLimiter>,
    pub fence: Fence,
    pub metrics: Arc<Metrics>,
}

/// The request was not sent: this replica does not hold a fresh Lease.
#[derive(Debug)]
pub struct Fenced;

impl std::fmt::Display for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not sent: this replica no longer holds the lease")
    }
}

impl std::error::Error for Fenced {}

/// True when `e` is the fence layer's refusal, as the client returns it.
pub fn is_fenced(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Service(inner) if inner.is::<Fenced>())
}

/// Classifies a request by method and path; `None` for reads and for the Lease.
pub fn classify(method: &Method, path: &str) -> Option<WriteKind> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    // `/api/v1/…` (core) or `/apis/{group}/{version}/…`.
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", "coordination.k8s.io", ..] => return None,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => &[][..],
    };
    let rest = match rest {
        ["namespaces", _ns, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    let idempotent = matches!(*method, Method::PUT | Method::PATCH | Method::DELETE);
    let (class, label) = match rest {
        ["pods", _, "binding"] => (WriteClass::Bind, "bind"),
        ["events", ..] => (WriteClass::Event, "event"),
        ["pods", _, "status"] => (WriteClass::Status, "pod status"),
        ["pods", _] if *method == Method::DELETE => (WriteClass::Status, "pod delete"),
        ["podgroups", ..] => (WriteClass::Status, "podgroup status"),
        ["queues"] if *method == Method::POST => (WriteClass::Status, "queue create"),
        ["queues", ..] => (WriteClass::Status, "queue status"),
        _ => (WriteClass::Status, "other"),
    };
    Some(WriteKind {
        class,
        label,
        idempotent,
    })
}

fn write_kind<B>(req: &Request<B>) -> Option<WriteKind> {
    classify(req.method(), req.uri().path())
}

tokio::task_local! {
    /// Set while a caller sends a write it already took a rate-limit token for.
    static TOKEN_HELD: std::cell::Cell<bool>;
}

/// Runs `send` as a caller that already holds a token of its write's class: its first write
/// attempt uses that token instead of taking another. The status workers take their token
/// before they take a write, so that writes wait in their queue, not in the limiter's line.
pub async fn with_token_held<F: Future>(send: F) -> F::Output {
    TOKEN_HELD.scope(std::cell::Cell::new(true), send).await
}

fn take_held_token() -> bool {
    TOKEN_HELD.try_with(|t| t.replace(false)).unwrap_or(false)
}

/// Builds the client from a kube configuration: kube's stack without its retry, under ours.
pub fn build(mut config: kube::Config, policy: WritePolicy) -> Result<Client, kube::Error> {
    config.default_retry = false;
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&PolicyLayer(policy))
        .build())
}

/// The same layers over any service (the executor's tests put a scripted API server there).
pub fn over<S, B>(base: S, policy: WritePolicy, default_namespace: &str) -> Client
where
    S: Service<Request<Body>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    ClientBuilder::new(base.map_err(Into::into), default_namespace)
        .with_layer(&PolicyLayer(policy))
        .build()
}

/// The three layers in their order, over a buffer that makes kube's stack cloneable (each
/// attempt needs its own handle to the service below).
struct PolicyLayer(WritePolicy);

type Buffered<S> = tower::buffer::Buffer<Request<Body>, <S as Service<Request<Body>>>::Future>;

impl<S, B> Layer<S> for PolicyLayer
where
    S: Service<Request<Body>, Response = Response<B>, Error = BoxError> + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Service =
        tower::retry::Retry<BoundedRetry, Gated<Gated<Buffered<S>, FenceCheck>, RateLimit>>;

    fn layer(&self, inner: S) -> Self::Service {
        let fenced = Gated {
            inner: tower::buffer::Buffer::new(inner, 1024),
            gate: FenceCheck {
                fence: self.0.fence.clone(),
                metrics: self.0.metrics.clone(),
            },
        };
        let limited = Gated {
            inner: fenced,
            gate: RateLimit(self.0.limiter.clone()),
        };
        RetryLayer::new(BoundedRetry::new()).layer(limited)
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// A step every write passes before it goes further down; reads and the Lease skip it.
pub trait Gate: Clone + Send + Sync + 'static {
    fn pass(&self, kind: WriteKind) -> BoxFuture<()>;
}

/// Waits for a token of the write's class, unless the caller already holds one.
#[derive(Clone)]
pub struct RateLimit(Arc<RateLimiter>);

impl Gate for RateLimit {
    fn pass(&self, kind: WriteKind) -> BoxFuture<()> {
        let limiter = self.0.clone();
        Box::pin(async move {
            if !take_held_token() {
                limiter.acquire_for(kind.class).await;
            }
            Ok(())
        })
    }
}

/// Lets a write through only while the fence holds, checked just before it is sent; counts
/// sent and fenced writes by kind.
#[derive(Clone)]
pub struct FenceCheck {
    fence: Fence,
    metrics: Arc<Metrics>,
}

impl Gate for FenceCheck {
    fn pass(&self, kind: WriteKind) -> BoxFuture<()> {
        let result = if self.fence.holds() {
            self.metrics.write_sent(kind.label);
            tracing::trace!(write = kind.label, "sending write");
            Ok(())
        } else {
            self.metrics.write_fenced(kind.label);
            Err(Box::new(Fenced) as BoxError)
        };
        Box::pin(std::future::ready(result))
    }
}

/// A [`Gate`] as a layer over a cloneable service.
#[derive(Clone)]
pub struct Gated<S, G> {
    inner: S,
    gate: G,
}

impl<S, G, R> Service<Request<Body>> for Gated<S, G>
where
    S: Service<Request<Body>, Response = R, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
    G: Gate,
    R: Send + 'static,
{
    type Response = R;
    type Error = BoxError;
    type Future = BoxFuture<R>;

    // Always ready: the wait is in the call, so that a write waiting at a gate holds no slot
    // of the service below and reads pass it.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let (inner, gate) = (self.inner.clone(), self.gate.clone());
        Box::pin(async move {
            if let Some(kind) = write_kind(&req) {
                gate.pass(kind).await?;
            }
            inner.oneshot(req).await
        })
    }
}

/// Retries an idempotent write on 429, a 5xx answer or a transport error, at most
/// [`WRITE_ATTEMPTS`] attempts in all, [`FIRST_RETRY_DELAY`] then doubling. Never a POST,
/// never a read (the watches own their recovery), never a write the fence refused.
#[derive(Clone, Debug)]
pub struct BoundedRetry {
    attempts: u32,
    delay: Duration,
}

impl BoundedRetry {
    fn new() -> Self {
        BoundedRetry {
            attempts: 1,
            delay: FIRST_RETRY_DELAY,
        }
    }
}

fn transient<B>(result: &Result<Response<B>, BoxError>) -> bool {
    match result {
        Ok(r) => r.status() == StatusCode::TOO_MANY_REQUESTS || r.status().is_server_error(),
        Err(e) => !e.is::<Fenced>(),
    }
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for BoundedRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let kind = write_kind(req)?;
        if !kind.idempotent || self.attempts >= WRITE_ATTEMPTS || !transient(result) {
            return None;
        }
        tracing::debug!(
            write = kind.label,
            attempt = self.attempts,
            "transient API error; retrying"
        );
        let delay = self.delay;
        self.attempts += 1;
        self.delay *= 2;
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        if !write_kind(req)?.idempotent {
            return None;
        }
        let mut copy = Request::new(req.body().try_clone()?);
        *copy.method_mut() = req.method().clone();
        *copy.uri_mut() = req.uri().clone();
        *copy.version_mut() = req.version();
        *copy.headers_mut() = req.headers().clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests;
