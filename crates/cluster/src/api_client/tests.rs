//! The policy layers over a scripted server: which requests are limited, fenced and retried.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Mutex;

use tokio::time::Instant;

use super::*;

const POD_STATUS: &str = "/api/v1/namespaces/ns/pods/p/status";
const BINDING: &str = "/api/v1/namespaces/ns/pods/p/binding";
const PODS: &str = "/api/v1/namespaces/ns/pods";

/// Answers each request with the next scripted status (200 once the script is used up) and
/// records what arrived and when.
#[derive(Clone, Default)]
struct Server {
    script: Arc<Mutex<VecDeque<u16>>>,
    seen: Arc<Mutex<Vec<(Method, String, Instant)>>>,
}

impl Server {
    fn answering(codes: &[u16]) -> Self {
        let s = Server::default();
        s.script.lock().unwrap().extend(codes);
        s
    }

    fn client(&self, policy: WritePolicy) -> Client {
        let me = self.clone();
        let service = tower::service_fn(move |req: Request<Body>| {
            let me = me.clone();
            async move {
                me.seen.lock().unwrap().push((
                    req.method().clone(),
                    req.uri().path().to_string(),
                    Instant::now(),
                ));
                let code = me.script.lock().unwrap().pop_front().unwrap_or(200);
                let mut res = Response::new(Body::from(b"{}".to_vec()));
                *res.status_mut() = StatusCode::from_u16(code).unwrap();
                Ok::<_, Infallible>(res)
            }
        });
        over(service, policy, "default")
    }

    fn seen(&self) -> Vec<(Method, String)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(m, p, _)| (m.clone(), p.clone()))
            .collect()
    }

    fn times_ms(&self, t0: Instant) -> Vec<u128> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, t)| t.duration_since(t0).as_millis())
            .collect()
    }
}

fn policy(fence: Fence, qps: f64, burst: u32) -> WritePolicy {
    WritePolicy {
        limiter: Arc::new(RateLimiter::new(qps, burst)),
        fence,
        metrics: Metrics::new(),
    }
}

fn unlimited() -> WritePolicy {
    policy(Fence::always(), 0.0, 0)
}

fn request(method: Method, path: &str) -> Request<Body> {
    let mut r = Request::new(Body::from(b"{}".to_vec()));
    *r.method_mut() = method;
    *r.uri_mut() = path.parse().unwrap();
    r
}

async fn send(client: &Client, method: Method, path: &str) -> Result<u16, kube::Error> {
    client
        .send(request(method, path))
        .await
        .map(|r| r.status().as_u16())
}

#[test]
fn requests_are_classified_by_method_and_path() {
    let w = |m: Method, p: &str| classify(&m, p).map(|k| (k.class, k.label, k.idempotent));
    assert_eq!(
        w(Method::POST, BINDING),
        Some((WriteClass::Bind, "bind", false))
    );
    assert_eq!(
        w(Method::PATCH, POD_STATUS),
        Some((WriteClass::Status, "pod status", true))
    );
    assert_eq!(
        w(Method::DELETE, "/api/v1/namespaces/ns/pods/p"),
        Some((WriteClass::Status, "pod delete", true))
    );
    assert_eq!(
        w(
            Method::PATCH,
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg"
        ),
        Some((WriteClass::Status, "podgroup status", true))
    );
    assert_eq!(
        w(
            Method::PATCH,
            "/apis/scheduling.volcano.sh/v1beta1/queues/q/status"
        ),
        Some((WriteClass::Status, "queue status", true))
    );
    assert_eq!(
        w(Method::POST, "/apis/scheduling.volcano.sh/v1beta1/queues"),
        Some((WriteClass::Status, "queue create", false))
    );
    assert_eq!(
        w(Method::POST, "/apis/events.k8s.io/v1/namespaces/ns/events"),
        Some((WriteClass::Event, "event", false))
    );
    assert_eq!(
        w(Method::POST, "/api/v1/namespaces/ns/events"),
        Some((WriteClass::Event, "event", false))
    );
    // Reads and the Lease pass the policy untouched.
    assert_eq!(w(Method::GET, PODS), None);
    assert_eq!(w(Method::GET, "/api/v1/pods?watch=true"), None);
    assert_eq!(
        w(
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/volcano"
        ),
        None
    );
}

/// An idempotent write is retried on 429 and 5xx, three attempts in all, 100 ms then 200 ms
/// apart; the third answer is final.
#[tokio::test(start_paused = true)]
async fn idempotent_writes_are_retried_three_times_at_most() {
    let server = Server::answering(&[503, 429, 500, 200]);
    let client = server.client(unlimited());
    let t0 = Instant::now();
    assert_eq!(send(&client, Method::PATCH, POD_STATUS).await.unwrap(), 500);
    assert_eq!(server.seen().len(), 3);
    assert_eq!(server.times_ms(t0), [0, 100, 300]);

    let server = Server::answering(&[503]);
    let client = server.client(unlimited());
    assert_eq!(send(&client, Method::PATCH, POD_STATUS).await.unwrap(), 200);
    assert_eq!(server.seen().len(), 2);
}

/// A POST is never repeated (a bind or an event could land twice), a 4xx is final, and reads
/// are left to their callers (the watches' own recovery).
#[tokio::test(start_paused = true)]
async fn posts_client_errors_and_reads_are_not_retried() {
    let server = Server::answering(&[503, 503, 503]);
    let client = server.client(unlimited());
    assert_eq!(send(&client, Method::POST, BINDING).await.unwrap(), 503);
    assert_eq!(send(&client, Method::GET, PODS).await.unwrap(), 503);
    assert_eq!(server.seen().len(), 2);

    let server = Server::answering(&[409, 404]);
    let client = server.client(unlimited());
    assert_eq!(send(&client, Method::PATCH, POD_STATUS).await.unwrap(), 409);
    assert_eq!(send(&client, Method::DELETE, PODS).await.unwrap(), 404);
    assert_eq!(server.seen().len(), 2);
}

/// Without the fence no write leaves, reads and the Lease still do, and the refusal is told
/// apart from an API error.
#[tokio::test]
async fn a_fenced_client_sends_reads_and_lease_requests_only() {
    let p = policy(Fence::elected(), 0.0, 0);
    let metrics = p.metrics.clone();
    let server = Server::default();
    let client = server.client(p);
    let err = send(&client, Method::POST, BINDING).await.unwrap_err();
    assert!(is_fenced(&err), "{err}");
    assert!(is_fenced(
        &send(&client, Method::PATCH, POD_STATUS).await.unwrap_err()
    ));
    assert_eq!(send(&client, Method::GET, PODS).await.unwrap(), 200);
    let lease = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l";
    assert_eq!(send(&client, Method::PUT, lease).await.unwrap(), 200);
    assert_eq!(
        server.seen(),
        [
            (Method::GET, PODS.to_string()),
            (Method::PUT, lease.to_string())
        ]
    );
    let text = metrics.encode_text();
    assert!(text.contains("volcano_api_writes_fenced_total{write=\"bind\"} 1"));
    assert!(text.contains("volcano_api_writes_fenced_total{write=\"pod status\"} 1"));
}

/// Each attempt passes the fence again: a retry whose delay outlives the hold is not sent.
#[tokio::test(start_paused = true)]
async fn a_retry_after_the_hold_ended_is_not_sent() {
    let fence = Fence::elected();
    fence.hold_until(Instant::now() + Duration::from_millis(50));
    let server = Server::answering(&[503, 503, 503]);
    let client = server.client(policy(fence, 0.0, 0));
    let err = send(&client, Method::PATCH, POD_STATUS).await.unwrap_err();
    assert!(is_fenced(&err), "{err}");
    assert_eq!(server.seen().len(), 1);
}

/// Writes take tokens (each attempt its own), reads do not, and a caller that already holds a
/// token uses it for its first attempt.
#[tokio::test(start_paused = true)]
async fn writes_take_tokens_and_reads_do_not() {
    let p = policy(Fence::always(), 10.0, 1);
    let limiter = p.limiter.clone();
    let server = Server::answering(&[503]);
    let client = server.client(p);
    let t0 = Instant::now();
    // Two attempts: the first takes the burst's token, the retry (after 100 ms) the next one.
    assert_eq!(send(&client, Method::PATCH, POD_STATUS).await.unwrap(), 200);
    for _ in 0..5 {
        assert_eq!(send(&client, Method::GET, PODS).await.unwrap(), 200);
    }
    assert_eq!(server.times_ms(t0), [0, 100, 100, 100, 100, 100, 100]);
    // The bucket is empty; a caller holding a token sends at once, the next waits 100 ms.
    limiter.acquire_for(WriteClass::Status).await;
    let t1 = Instant::now();
    with_token_held(async {
        send(&client, Method::PATCH, POD_STATUS).await.unwrap();
        send(&client, Method::PATCH, POD_STATUS).await.unwrap();
    })
    .await;
    let times = server.times_ms(t1);
    assert_eq!(times[times.len() - 2..], [0, 100]);
}
