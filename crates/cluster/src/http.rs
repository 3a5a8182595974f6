//! The daemon's HTTP endpoints (spec/kubernetes.md §9.1 metrics server, §9.2 health server).
//!
//! * `/metrics` — Prometheus text exposition of [`Metrics`] (§10).
//! * `/healthz`, `/healthz/ping` — liveness: `200 ok` while the process serves HTTP, like the
//!   Kubernetes healthz handler with its only `ping` check (`?verbose` lists the check).
//! * `/readyz` — readiness (ours; Volcano has none): `200` once every watch has listed, `503`
//!   before. A standby replica is ready too, so that a rollout does not wait for leadership; the
//!   body names the role.
//! * `/debug/state` — the cluster as the daemon sees it, in the simulator's input format (ours,
//!   in place of Volcano's SIGUSR1 cache dump, §9.4), on its own server ([`serve_debug_on`]),
//!   which the daemon starts only when asked to, on loopback unless told otherwise; the dump
//!   carries no env values, commands or `last-applied-configuration` (see `dump`).
//! * anything else — `404`.
//!
//! Timeouts follow §9.1 as far as axum's server lets them be set (see [`Timeouts`]); TLS and the
//! pprof endpoints are not offered.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::RawQuery;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

use crate::metrics::Metrics;

/// What the probes report. The daemon flips the flags; the server only reads them.
#[derive(Debug)]
pub struct Health {
    /// Every watch has completed its initial list.
    pub synced: AtomicBool,
    /// This replica holds the leader lease (always true without leader election).
    pub leader: AtomicBool,
    /// Whether leader election is enabled.
    pub leader_election: bool,
    /// The write fence: a leader whose hold lapsed reports `standby` at once, before its
    /// session loop or elector have noticed.
    fence: std::sync::OnceLock<crate::leader::Fence>,
}

impl Health {
    /// Not synced yet; leader from the start when there is no election to win.
    pub fn new(leader_election: bool) -> Health {
        Health {
            synced: AtomicBool::new(false),
            leader: AtomicBool::new(!leader_election),
            leader_election,
            fence: std::sync::OnceLock::new(),
        }
    }

    /// Makes the role follow the write fence too (the first fence set stays).
    pub fn set_fence(&self, fence: crate::leader::Fence) {
        let _ = self.fence.set(fence);
    }

    /// Ready once synced, whether leading or standing by.
    pub fn is_ready(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Why leader election cannot campaign, while it cannot.
    pub fn election_problem(&self) -> Option<String> {
        self.fence.get().and_then(|f| f.problem())
    }

    /// `leader` or `standby`.
    pub fn role(&self) -> &'static str {
        let fenced_off = self.fence.get().is_some_and(|f| !f.holds());
        if !self.leader_election || (self.leader.load(Ordering::Acquire) && !fenced_off) {
            "leader"
        } else {
            "standby"
        }
    }
}

/// Produces the `/debug/state` document (YAML).
pub type DumpFn = Arc<dyn Fn() -> String + Send + Sync>;

/// Connection timeouts (§9.1: read-header 5 s, read 30 s, write 60 s; graceful shutdown 30 s).
///
/// axum's server exposes no per-request deadlines, so they are enforced on the connection
/// instead: a read that waits longer than `read` with no byte moving either way fails, which
/// bounds slow or idle clients (Go's idle timeout defaults to its read timeout, 30 s); a write
/// stuck for `write` fails likewise. The 5 s header deadline has no separate equivalent.
#[derive(Copy, Clone, Debug)]
pub struct Timeouts {
    pub read: Duration,
    pub write: Duration,
    /// How long in-flight requests may finish after shutdown is requested.
    pub shutdown_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            read: Duration::from_secs(30),
            write: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` until `shutdown` resolves. Failing
/// to bind is an error; the caller decides whether it is fatal.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = bind(addr).await?;
    serve_on(listener, metrics, health, shutdown).await
}

/// Serves only `/debug/state` on an already bound listener.
pub async fn serve_debug_on(
    listener: TcpListener,
    dump: DumpFn,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let router = debug_router(dump).fallback(not_found);
    run(listener, router, Timeouts::default(), shutdown).await
}

/// Serves only `/healthz` and `/readyz` on `addr` (Volcano's separate `--healthz-address`).
pub async fn serve_health(
    addr: SocketAddr,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = bind(addr).await?;
    serve_health_on(listener, health, shutdown).await
}

/// Binds a listener for [`serve_on`] / [`serve_health_on`].
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}

/// [`serve`] on an already bound listener.
pub async fn serve_on(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let router = full_router(metrics, health);
    run(listener, router, Timeouts::default(), shutdown).await
}

/// [`serve_health`] on an already bound listener.
pub async fn serve_health_on(
    listener: TcpListener,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let router = health_router(health).fallback(not_found);
    run(listener, router, Timeouts::default(), shutdown).await
}

fn full_router(metrics: Arc<Metrics>, health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(move || metrics_response(metrics.clone())))
        .merge(health_router(health))
        .fallback(not_found)
}

fn debug_router(dump: DumpFn) -> Router {
    Router::new().route("/debug/state", get(move || dump_response(dump.clone())))
}

fn health_router(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/healthz/ping", get(healthz))
        .route("/readyz", get(move || readyz(health.clone())))
}

async fn healthz(RawQuery(query): RawQuery) -> Response {
    // Kubernetes' healthz treats `verbose` with any value as set.
    let verbose = query.as_deref().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv == "verbose" || kv.starts_with("verbose="))
    });
    let body = if verbose {
        "[+]ping ok\nhealthz check passed\n"
    } else {
        "ok"
    };
    text(StatusCode::OK, body.to_owned())
}

async fn readyz(health: Arc<Health>) -> Response {
    let role = health.role();
    if let Some(problem) = health.election_problem() {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: leader election: {problem}\nrole: {role}\n"),
        );
    }
    if health.is_ready() {
        text(StatusCode::OK, format!("ok\nrole: {role}\n"))
    } else {
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "not ready: initial list of the watched resources not complete\nrole: {role}\n"
            ),
        )
    }
}

async fn metrics_response(metrics: Arc<Metrics>) -> Response {
    let content_type = metrics.content_type();
    // Encoding walks every series; keep it off the async workers.
    match tokio::task::spawn_blocking(move || metrics.scrape()).await {
        Ok(Ok(body)) => ([(header::CONTENT_TYPE, content_type)], body).into_response(),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "encoding metrics failed");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("encoding metrics failed: {e}\n"),
            )
        }
        Err(e) => internal_error("metrics", e),
    }
}

async fn dump_response(dump: DumpFn) -> Response {
    // The dump serialises the whole cluster: keep it off the async workers.
    match tokio::task::spawn_blocking(move || dump()).await {
        Ok(body) => ([(header::CONTENT_TYPE, "application/yaml")], body).into_response(),
        Err(e) => internal_error("state dump", e),
    }
}

fn internal_error(what: &str, e: tokio::task::JoinError) -> Response {
    tracing::error!(error = %e, "{what} handler failed");
    text(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("{what} failed\n"),
    )
}

async fn not_found() -> Response {
    // Go's http.NotFound body.
    text(StatusCode::NOT_FOUND, "404 page not found\n".to_owned())
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Runs `router` on `listener` until `shutdown`, then lets in-flight requests finish for at
/// most the grace period.
async fn run(
    listener: TcpListener,
    router: Router,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr().ok();
    let (requested_tx, requested_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(
        DeadlineListener {
            inner: listener,
            timeouts,
        },
        router,
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        let _ = requested_tx.send(());
    });
    let grace = async move {
        match requested_rx.await {
            Ok(()) => tokio::time::sleep(timeouts.shutdown_grace).await,
            // The sender is gone only once the server has stopped by itself.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        result = server => result.with_context(|| format!("serving HTTP on {addr:?}")),
        () = grace => {
            tracing::warn!(?addr, "HTTP connections still open after the shutdown grace period");
            Ok(())
        }
    }
}

/// A TCP listener whose connections enforce [`Timeouts`].
struct DeadlineListener {
    inner: TcpListener,
    timeouts: Timeouts,
}

impl axum::serve::Listener for DeadlineListener {
    type Io = DeadlineStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    // Small responses: do not wait for Nagle (Go's default too).
                    let _ = stream.set_nodelay(true);
                    return (DeadlineStream::new(stream, self.timeouts), addr);
                }
                // The peer gave up before we accepted: nothing to do.
                Err(e) if is_connection_error(&e) => {}
                Err(e) => {
                    // Typically out of file descriptors: back off instead of spinning.
                    tracing::error!(error = %e, "accepting an HTTP connection failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A TCP stream whose pending reads and writes fail with `TimedOut` once nothing has moved on
/// the connection for the configured time.
struct DeadlineStream {
    inner: TcpStream,
    timeouts: Timeouts,
    /// When a byte last moved in either direction.
    last_progress: Instant,
    read_timer: Option<Pin<Box<Sleep>>>,
    write_timer: Option<Pin<Box<Sleep>>>,
}

impl DeadlineStream {
    fn new(inner: TcpStream, timeouts: Timeouts) -> Self {
        DeadlineStream {
            inner,
            timeouts,
            last_progress: Instant::now(),
            read_timer: None,
            write_timer: None,
        }
    }
}

/// Whether the deadline `last_progress + limit` has passed; otherwise arms `timer` so that the
/// task is woken when it does.
fn expired(
    timer: &mut Option<Pin<Box<Sleep>>>,
    last_progress: Instant,
    limit: Duration,
    cx: &mut Context<'_>,
) -> bool {
    let deadline = last_progress + limit;
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    if timer.deadline() != deadline {
        timer.as_mut().reset(deadline);
    }
    timer.as_mut().poll(cx).is_ready()
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("HTTP connection {what} timed out"),
    )
}

impl AsyncRead for DeadlineStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.last_progress = Instant::now();
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                if expired(
                    &mut this.read_timer,
                    this.last_progress,
                    this.timeouts.read,
                    cx,
                ) {
                    Poll::Ready(Err(timed_out("read")))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl DeadlineStream {
    /// Common tail of the write paths: record progress, or enforce the write deadline.
    fn after_write(
        &mut self,
        polled: Poll<io::Result<usize>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        match polled {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.last_progress = Instant::now();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if expired(
                    &mut self.write_timer,
                    self.last_progress,
                    self.timeouts.write,
                    cx,
                ) {
                    Poll::Ready(Err(timed_out("write")))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl AsyncWrite for DeadlineStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.after_write(polled, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.after_write(polled, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// A minimal HTTP/1.1 client: one request, `Connection: close`, the whole answer.
    struct Reply {
        status: u16,
        headers: String,
        body: String,
    }

    async fn fetch(addr: SocketAddr, path: &str) -> Reply {
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            write!(
                stream,
                "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
            )
            .expect("send");
            let mut raw = String::new();
            stream.read_to_string(&mut raw).expect("read reply");
            let (head, body) = raw.split_once("\r\n\r\n").expect("header/body separator");
            let (status_line, headers) = head.split_once("\r\n").unwrap_or((head, ""));
            let status = status_line
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .expect("status code");
            Reply {
                status,
                headers: headers.to_ascii_lowercase(),
                body: body.to_owned(),
            }
        })
        .await
        .expect("client task")
    }

    struct Server {
        addr: SocketAddr,
        stop: tokio::sync::oneshot::Sender<()>,
        done: tokio::task::JoinHandle<anyhow::Result<()>>,
    }

    impl Server {
        async fn stop(self) {
            let _ = self.stop.send(());
            let result = tokio::time::timeout(Duration::from_secs(10), self.done)
                .await
                .expect("server stops on shutdown")
                .expect("server task");
            assert!(result.is_ok(), "{result:?}");
        }
    }

    async fn start(router: Router, timeouts: Timeouts) -> Server {
        let listener = bind("127.0.0.1:0".parse().expect("address"))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(run(listener, router, timeouts, async move {
            let _ = stopped.await;
        }));
        Server { addr, stop, done }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_every_path() {
        let metrics = Metrics::new();
        metrics.set_leader(true);
        let health = Arc::new(Health::new(true));
        let server = start(
            full_router(metrics.clone(), health.clone()),
            Timeouts::default(),
        )
        .await;
        let addr = server.addr;

        let r = fetch(addr, "/metrics").await;
        assert_eq!(r.status, 200);
        assert!(
            r.headers
                .contains("content-type: text/plain; version=0.0.4"),
            "{}",
            r.headers
        );
        assert!(r.body.contains("volcano_leader 1\n"), "{}", r.body);
        assert!(
            r.body
                .contains("# TYPE volcano_e2e_scheduling_latency_milliseconds histogram")
        );

        let r = fetch(addr, "/healthz").await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"));
        let r = fetch(addr, "/healthz/ping").await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"));
        let r = fetch(addr, "/healthz?verbose").await;
        assert_eq!(r.status, 200);
        assert!(r.body.contains("[+]ping ok"), "{}", r.body);

        // Not synced yet: unready, standby.
        let r = fetch(addr, "/readyz").await;
        assert_eq!(r.status, 503);
        assert!(r.body.contains("not ready"), "{}", r.body);
        assert!(r.body.contains("role: standby"), "{}", r.body);
        // Synced standby: ready.
        health.synced.store(true, Ordering::Release);
        let r = fetch(addr, "/readyz").await;
        assert_eq!(r.status, 200);
        assert!(
            r.body.starts_with("ok\n") && r.body.contains("role: standby"),
            "{}",
            r.body
        );
        health.leader.store(true, Ordering::Release);
        let r = fetch(addr, "/readyz").await;
        assert!(r.body.contains("role: leader"), "{}", r.body);

        // The state dump is not on the metrics server.
        assert_eq!(fetch(addr, "/debug/state").await.status, 404);

        let r = fetch(addr, "/nope").await;
        assert_eq!(r.status, 404);
        assert_eq!(r.body, "404 page not found\n");

        server.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn debug_server_serves_the_dump_only() {
        let dump: DumpFn = Arc::new(|| "nodes: []\n".to_owned());
        let server = start(debug_router(dump).fallback(not_found), Timeouts::default()).await;
        let r = fetch(server.addr, "/debug/state").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body, "nodes: []\n");
        assert!(
            r.headers.contains("content-type: application/yaml"),
            "{}",
            r.headers
        );
        assert_eq!(fetch(server.addr, "/metrics").await.status, 404);
        assert_eq!(fetch(server.addr, "/healthz").await.status, 404);
        server.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_server_serves_probes_only() {
        let health = Arc::new(Health::new(false));
        health.synced.store(true, Ordering::Release);
        let server = start(
            health_router(health).fallback(not_found),
            Timeouts::default(),
        )
        .await;
        let r = fetch(server.addr, "/readyz").await;
        assert_eq!(r.status, 200);
        // Without election the only replica leads.
        assert!(r.body.contains("role: leader"), "{}", r.body);
        assert_eq!(fetch(server.addr, "/healthz").await.status, 200);
        assert_eq!(fetch(server.addr, "/metrics").await.status, 404);
        assert_eq!(fetch(server.addr, "/debug/state").await.status, 404);
        server.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_connection_is_closed_after_the_read_timeout() {
        let timeouts = Timeouts {
            read: Duration::from_millis(200),
            ..Timeouts::default()
        };
        let health = Arc::new(Health::new(false));
        let server = start(health_router(health), timeouts).await;
        let addr = server.addr;
        let started = std::time::Instant::now();
        let closed = tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            // Send half a request line and stall.
            stream.write_all(b"GET /hea").expect("send");
            let mut buf = [0u8; 64];
            // EOF, or a reset: either way the server hung up.
            !matches!(stream.read(&mut buf), Ok(n) if n > 0 && buf[..n].starts_with(b"HTTP/1.1 200"))
        })
        .await
        .expect("client task");
        assert!(closed);
        assert!(started.elapsed() < Duration::from_secs(5));
        server.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_waits_for_in_flight_requests_at_most_the_grace_period() {
        let timeouts = Timeouts {
            shutdown_grace: Duration::from_millis(300),
            ..Timeouts::default()
        };
        let slow = Router::new().route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }),
        );
        let server = start(slow, timeouts).await;
        let addr = server.addr;
        let client = tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
            stream
                .write_all(b"GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
                .expect("send");
            let mut buf = [0u8; 16];
            let _ = stream.read(&mut buf);
        });
        // Let the request reach its handler.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = std::time::Instant::now();
        server.stop().await;
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(250),
            "did not wait: {waited:?}"
        );
        assert!(waited < Duration::from_secs(3), "waited {waited:?}");
        drop(client);
    }

    #[tokio::test]
    async fn bind_failure_is_an_error() {
        let taken = bind("127.0.0.1:0".parse().expect("address"))
            .await
            .expect("bind");
        let addr = taken.local_addr().expect("local address");
        let err = serve_health(addr, Arc::new(Health::new(false)), async {})
            .await
            .expect_err("address in use");
        assert!(err.to_string().contains(&addr.to_string()), "{err:#}");
    }
}
