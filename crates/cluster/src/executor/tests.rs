//! Executor tests against a scripted in-process API server (spec/kubernetes.md §7.2–§7.8).
//!
//! The mock is a `tower::service_fn` behind a real `kube::Client`, so every request goes through
//! kube's URL building, patch content types and error decoding exactly as in production; only
//! the network is gone. It records each request and answers from a small script.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::leader::Fence;
use engine::model::Resource;
use engine::model::TaskStatus;
use engine::model::job::{JobCondition, JobStatus};
use engine::state::{ClusterState, StateOptions};
use http::{Method, Request, Response};
use kube::client::Body;
use serde_json::Value;

use super::*;

const EVENTS_PATH: &str = "/api/v1/namespaces/ns/events";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const MERGE: &str = "application/merge-patch+json";
/// `Mock::fail` count for a failure that never stops.
const ALWAYS: usize = usize::MAX;

/// One request as the mock API server saw it.
#[derive(Clone, Debug)]
struct Recorded {
    method: Method,
    path: String,
    query: String,
    content_type: String,
    body: Value,
    /// For binding POSTs: the node the shared state showed for the pod when the call arrived.
    node_in_state: Option<String>,
}

/// A scripted failure: answer with status `code` the next `times` times.
#[derive(Debug)]
struct Scripted {
    code: u16,
    times: usize,
}

#[derive(Default)]
struct MockInner {
    requests: Mutex<Vec<Recorded>>,
    /// (method, path) → (status code, how many more times), consumed front to back; once
    /// empty the default answer applies.
    script: Mutex<HashMap<(Method, String), Vec<Scripted>>>,
    /// Binding requests currently being answered, and the highest value seen.
    binds_in_flight: AtomicUsize,
    max_binds_in_flight: AtomicUsize,
    bind_delay: Mutex<Duration>,
    shared: Mutex<Option<Arc<Shared>>>,
    /// Objects a GET on their path answers with (others: 404).
    objects: Mutex<HashMap<String, Value>>,
}

#[derive(Clone, Default)]
struct Mock(Arc<MockInner>);

impl Mock {
    /// The next `times` requests with `method` on `path` fail with `code`.
    fn fail(&self, method: Method, path: &str, code: u16, times: usize) {
        let mut script = self.0.script.lock().expect("script lock");
        script
            .entry((method, path.to_string()))
            .or_default()
            .push(Scripted { code, times });
    }

    fn requests(&self) -> Vec<Recorded> {
        self.0.requests.lock().expect("requests lock").clone()
    }

    fn matching(&self, method: Method, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path == path)
            .collect()
    }

    /// Event bodies written (created or patched), in order.
    fn events(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.starts_with(EVENTS_PATH))
            .map(|r| r.body)
            .collect()
    }

    fn events_with_reason(&self, reason: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .collect()
    }

    /// A client with the daemon's policy layers over the mock.
    fn client(&self, policy: api_client::WritePolicy) -> Client {
        let mock = self.clone();
        let service = tower::service_fn(move |req: Request<Body>| {
            let mock = mock.clone();
            async move { Ok::<_, Infallible>(mock.answer(req).await) }
        });
        api_client::over(service, policy, "default")
    }

    async fn answer(&self, req: Request<Body>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = body.collect_bytes().await.expect("request body");
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("request bodies are JSON")
        };
        let path = parts.uri.path().to_string();
        let is_bind = parts.method == Method::POST && path.ends_with("/binding");
        let node_in_state = if is_bind {
            self.node_in_state(&path)
        } else {
            None
        };
        self.0
            .requests
            .lock()
            .expect("requests lock")
            .push(Recorded {
                method: parts.method.clone(),
                path: path.clone(),
                query: parts.uri.query().unwrap_or("").to_string(),
                content_type: parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string(),
                body: body.clone(),
                node_in_state,
            });

        if is_bind {
            let now = self.0.binds_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.0.max_binds_in_flight.fetch_max(now, Ordering::SeqCst);
            let delay = *self.0.bind_delay.lock().expect("delay lock");
            tokio::time::sleep(delay).await;
            self.0.binds_in_flight.fetch_sub(1, Ordering::SeqCst);
        }

        let scripted = {
            let mut script = self.0.script.lock().expect("script lock");
            script
                .get_mut(&(parts.method.clone(), path.clone()))
                .and_then(|queue| {
                    let next = queue.first_mut()?;
                    let code = next.code;
                    next.times -= 1;
                    if next.times == 0 {
                        queue.remove(0);
                    }
                    Some(code)
                })
        };
        if let Some(code) = scripted {
            return reply(
                code,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": format!("scripted failure {code}"), "reason": "Scripted", "code": code}),
            );
        }
        match parts.method {
            Method::POST if is_bind => reply(
                201,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}),
            ),
            // Creates and patches answer with the object they were sent, which deserialises as
            // the resource each call expects.
            Method::POST | Method::PATCH => reply(
                if parts.method == Method::POST {
                    201
                } else {
                    200
                },
                body,
            ),
            // A replace answers with the object sent, one version on.
            Method::PUT => {
                let mut body = body;
                body["metadata"]["resourceVersion"] = json!("written");
                reply(200, body)
            }
            Method::GET
                if self
                    .0
                    .objects
                    .lock()
                    .expect("objects lock")
                    .contains_key(&path) =>
            {
                let object = self.0.objects.lock().expect("objects lock")[&path].clone();
                reply(200, object)
            }
            Method::DELETE => reply(
                200,
                json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": path.rsplit('/').next()}}),
            ),
            _ => reply(
                404,
                json!({"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}),
            ),
        }
    }

    fn node_in_state(&self, binding_path: &str) -> Option<String> {
        // /api/v1/namespaces/{ns}/pods/{name}/binding
        let segments: Vec<&str> = binding_path.split('/').collect();
        let key = format!("{}/{}", segments.get(4)?, segments.get(6)?);
        let shared = self.0.shared.lock().expect("shared lock").clone()?;
        let state = shared.lock();
        state.pod(&key)?.node_name.clone()
    }
}

fn reply(code: u16, body: Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            serde_json::to_vec(&body).expect("serialisable reply"),
        ))
        .expect("valid response")
}

fn pod(name: &str, condition: Option<Value>) -> Pod {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"schedulerName": "volcano-rs", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"}
    });
    if let Some(c) = condition {
        v["status"]["conditions"] = json!([c]);
    }
    serde_json::from_value(v).expect("pod")
}

fn queue(name: &str, status: Option<Value>) -> Queue {
    let mut v = json!({"metadata": {"name": name}, "spec": {"weight": 1}});
    if let Some(s) = status {
        v["status"] = s;
    }
    serde_json::from_value(v).expect("queue")
}

struct Fixture {
    mock: Mock,
    shared: Arc<Shared>,
    metrics: Arc<Metrics>,
    executor: Arc<Executor>,
}

impl Fixture {
    async fn run(&self, d: Decisions) {
        self.executor.clone().execute(d).await;
    }
}

fn fixture_with(bind_workers: usize, pods: &[&str]) -> Fixture {
    fixture_fenced(bind_workers, pods, Fence::always())
}

fn fixture_fenced(bind_workers: usize, pods: &[&str], fence: Fence) -> Fixture {
    fixture_limited(
        bind_workers,
        pods,
        fence,
        RateLimiter::new(10_000.0, 10_000),
    )
}

fn fixture_rate_limited(qps: f64, burst: u32) -> Fixture {
    fixture_limited(4, &[], Fence::always(), RateLimiter::new(qps, burst))
}

fn fixture_limited(
    bind_workers: usize,
    pods: &[&str],
    fence: Fence,
    limiter: RateLimiter,
) -> Fixture {
    fixture_resting(bind_workers, pods, fence, limiter, Duration::ZERO)
}

fn fixture_resting(
    bind_workers: usize,
    pods: &[&str],
    fence: Fence,
    limiter: RateLimiter,
    queue_status_rest: Duration,
) -> Fixture {
    let mut state = ClusterState::new(StateOptions::default());
    for p in pods {
        state.upsert_pod(pod(p, None));
    }
    let shared = Shared::new(state);
    let mock = Mock::default();
    *mock.0.shared.lock().expect("shared lock") = Some(shared.clone());
    let metrics = Metrics::new();
    let limiter = Arc::new(limiter);
    let client = mock.client(api_client::WritePolicy {
        limiter: limiter.clone(),
        fence,
        metrics: metrics.clone(),
    });
    let executor = Arc::new(Executor::new(
        client,
        shared.clone(),
        limiter,
        metrics.clone(),
        ExecutorConfig {
            bind_workers,
            scheduler_name: "volcano-rs".into(),
            instance: "volcano-rs-0".into(),
            queue_status_rest,
        },
    ));
    Fixture {
        mock,
        shared,
        metrics,
        executor,
    }
}

fn fixture(pods: &[&str]) -> Fixture {
    fixture_with(4, pods)
}

fn bind(pod: &str, node: &str) -> Bind {
    Bind {
        pod: format!("ns/{pod}"),
        pod_uid: format!("uid-{pod}"),
        node: node.into(),
        volumes: Vec::new(),
        volume_bind_timeout: Duration::ZERO,
        annotations: Default::default(),
        node_lock: None,
    }
}

fn binds(list: Vec<Bind>) -> Decisions {
    Decisions {
        binds: list,
        ..Decisions::default()
    }
}

/// The value of an unlabelled or fully labelled series in the text exposition, 0 if absent.
fn metric(metrics: &Metrics, series: &str) -> f64 {
    metrics
        .encode_text()
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

fn pod_status(shared: &Shared, key: &str) -> (TaskStatus, Option<String>) {
    let state = shared.lock();
    let p = state.pod(key).expect("pod in state");
    (p.status, p.node_name.clone())
}

// ---- (1) binds ------------------------------------------------------------------------------

/// A bind waits for the gate to show it assumed: none goes out before, exactly the first
/// goes out once one is, and all once all are.
#[tokio::test]
async fn a_bind_waits_until_the_gate_shows_it_assumed() {
    let names: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    let keys: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = fixture_with(8, &keys);
    let binds: Vec<Bind> = names.iter().map(|n| bind(n, "n1")).collect();
    let gate = Arc::new(AssumeGate::default());
    let sent = || {
        f.mock
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/binding"))
            .count()
    };
    // Resolves at once: the binds run in the background.
    f.executor
        .write_with(Decisions::default(), Arc::new(binds), Some(gate.clone()))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(sent(), 0, "nothing assumed, nothing sent");
    gate.advance(1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(sent(), 1);
    gate.advance(5);
    assert!(f.executor.drain(Duration::from_secs(5)).await);
    assert_eq!(sent(), 5);
}

/// Assuming that stops part-way (dropped after two binds, as by a panic) sends the binds it
/// assumed, and the others give up instead of waiting: the writes drain.
#[tokio::test]
async fn binds_never_assumed_are_not_sent_and_do_not_wait() {
    let names: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    let keys: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = fixture_with(8, &keys);
    let binds = Arc::new(names.iter().map(|n| bind(n, "n1")).collect::<Vec<Bind>>());
    let gate = Arc::new(AssumeGate::default());
    f.executor
        .write_with(Decisions::default(), binds.clone(), Some(gate.clone()))
        .await;
    f.executor.assume_batch(&binds[..2]);
    gate.advance(2);
    drop(Assuming {
        executor: f.executor.clone(),
        binds,
        gate,
    });
    assert!(
        f.executor.drain(Duration::from_secs(5)).await,
        "nothing waits"
    );
    let sent = f
        .mock
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/binding"))
        .count();
    assert_eq!(sent, 2);
}

/// Through the sink: everything assumed when the returned future resolves, every bind sent,
/// and each found its pod assumed when it arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assume_and_write_assumes_all_and_sends_all() {
    let names: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
    let keys: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = fixture_with(8, &keys);
    let d = binds(names.iter().map(|n| bind(n, "n1")).collect());
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    sink.assume_and_write(d).await;
    assert_eq!(
        f.shared.lock().assumed_count(),
        names.len(),
        "all assumed once it resolves"
    );
    assert!(sink.drain(Duration::from_secs(10)).await);
    let posts: Vec<Recorded> = f
        .mock
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/binding"))
        .collect();
    assert_eq!(posts.len(), names.len());
    for p in &posts {
        assert_eq!(p.node_in_state.as_deref(), Some("n1"), "{}", p.path);
    }
}

#[tokio::test]
async fn successful_bind_posts_binding_keeps_assumption_and_reports_scheduled() {
    let f = fixture(&["p"]);
    let d = binds(vec![bind("p", "n1")]);

    f.executor.assume(&d);
    assert_eq!(
        pod_status(&f.shared, "ns/p"),
        (TaskStatus::Binding, Some("n1".into())),
        "assumed before any call"
    );
    assert_eq!(f.shared.lock().assumed_count(), 1);
    assert!(f.mock.requests().is_empty(), "assume performs no I/O");

    f.run(d).await;

    let posts = f
        .mock
        .matching(Method::POST, "/api/v1/namespaces/ns/pods/p/binding");
    assert_eq!(posts.len(), 1);
    let b = &posts[0];
    assert_eq!(b.content_type, "application/json");
    assert!(
        b.query.is_empty(),
        "no dryRun or other parameters: {}",
        b.query
    );
    assert_eq!(b.body["metadata"]["name"], "p");
    assert_eq!(b.body["metadata"]["namespace"], "ns");
    assert_eq!(b.body["metadata"]["uid"], "uid-p");
    assert_eq!(
        b.body["target"],
        json!({"apiVersion": "v1", "kind": "Node", "name": "n1"})
    );
    assert_eq!(
        b.node_in_state.as_deref(),
        Some("n1"),
        "pod already assumed while its bind was in flight"
    );

    // The assumption stays until the watch shows the binding.
    assert_eq!(
        pod_status(&f.shared, "ns/p"),
        (TaskStatus::Binding, Some("n1".into()))
    );
    assert_eq!(f.shared.lock().assumed_count(), 1);

    let scheduled = f.mock.events_with_reason("Scheduled");
    assert_eq!(scheduled.len(), 1);
    let ev = &scheduled[0];
    assert_eq!(ev["type"], "Normal");
    assert_eq!(ev["message"], "Successfully assigned ns/p to n1");
    assert_eq!(ev["involvedObject"]["kind"], "Pod");
    assert_eq!(ev["involvedObject"]["name"], "p");
    assert_eq!(ev["involvedObject"]["uid"], "uid-p");
    assert_eq!(ev["reportingComponent"], "volcano-rs");
    assert_eq!(ev["reportingInstance"], "volcano-rs-0");
    // What `kubectl get events` reads through the core/v1 view.
    assert_eq!(ev["source"]["component"], "volcano-rs");
    assert_eq!(ev["count"], 1);
    assert!(ev["firstTimestamp"].is_string());
    assert_eq!(ev["firstTimestamp"], ev["lastTimestamp"]);
    assert!(f.mock.events_with_reason("FailedScheduling").is_empty());
    assert!(
        f.mock
            .matching(Method::PATCH, "/api/v1/namespaces/ns/pods/p/status")
            .is_empty()
    );

    assert_eq!(metric(&f.metrics, "volcano_pods_bound_total"), 1.0);
    assert_eq!(metric(&f.metrics, "volcano_bind_errors_total"), 0.0);
}

#[tokio::test]
async fn failed_bind_rolls_back_writes_condition_and_failed_scheduling() {
    for code in [500, 409] {
        let f = fixture(&["p"]);
        let binding = "/api/v1/namespaces/ns/pods/p/binding";
        f.mock.fail(Method::POST, binding, code, 1);
        let d = binds(vec![bind("p", "n1")]);
        f.executor.assume(&d);
        f.run(d).await;

        // A bind is not idempotent: never retried, even on a 500.
        assert_eq!(
            f.mock.matching(Method::POST, binding).len(),
            1,
            "code {code}"
        );
        assert_eq!(
            pod_status(&f.shared, "ns/p"),
            (TaskStatus::Pending, None),
            "code {code}: rolled back"
        );
        assert_eq!(f.shared.lock().assumed_count(), 0);

        let patches = f
            .mock
            .matching(Method::PATCH, "/api/v1/namespaces/ns/pods/p/status");
        assert_eq!(patches.len(), 1, "code {code}");
        assert_eq!(patches[0].content_type, STRATEGIC);
        let conds = patches[0].body["status"]["conditions"]
            .as_array()
            .expect("conditions");
        assert_eq!(conds.len(), 1);
        let c = &conds[0];
        assert_eq!(c["type"], "PodScheduled");
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "SchedulerError");
        let message = c["message"].as_str().expect("message");
        assert!(
            message.starts_with("failed to bind to node n1: "),
            "{message}"
        );
        assert!(
            message.contains(&format!("scripted failure {code}")),
            "{message}"
        );
        assert!(
            c.get("lastTransitionTime").is_some(),
            "first transition to False is stamped"
        );
        assert!(patches[0].body["status"].get("nominatedNodeName").is_none());

        let failed = f.mock.events_with_reason("FailedScheduling");
        assert_eq!(failed.len(), 1, "code {code}");
        assert_eq!(failed[0]["type"], "Warning");
        assert_eq!(failed[0]["message"], message);
        assert_eq!(failed[0]["involvedObject"]["uid"], "uid-p");
        assert!(f.mock.events_with_reason("Scheduled").is_empty());

        assert_eq!(metric(&f.metrics, "volcano_bind_errors_total"), 1.0);
        assert_eq!(metric(&f.metrics, "volcano_pods_bound_total"), 0.0);
    }
}

#[tokio::test]
async fn one_failed_bind_does_not_affect_the_others() {
    let f = fixture(&["a", "b", "c"]);
    f.mock
        .fail(Method::POST, "/api/v1/namespaces/ns/pods/b/binding", 500, 1);
    let d = binds(vec![bind("a", "n1"), bind("b", "n1"), bind("c", "n2")]);
    f.executor.assume(&d);
    f.run(d).await;
    assert_eq!(pod_status(&f.shared, "ns/a").1.as_deref(), Some("n1"));
    assert_eq!(pod_status(&f.shared, "ns/b"), (TaskStatus::Pending, None));
    assert_eq!(pod_status(&f.shared, "ns/c").1.as_deref(), Some("n2"));
    assert_eq!(f.shared.lock().assumed_count(), 2);
    assert_eq!(f.mock.events_with_reason("Scheduled").len(), 2);
    assert_eq!(f.mock.events_with_reason("FailedScheduling").len(), 1);
}

#[tokio::test]
async fn pods_gone_or_malformed_are_not_assumed_and_malformed_keys_send_nothing() {
    let f = fixture(&[]);
    f.mock.fail(
        Method::POST,
        "/api/v1/namespaces/ns/pods/gone/binding",
        404,
        1,
    );
    let mut bad = bind("x", "n1");
    bad.pod = "no-namespace".into();
    let d = binds(vec![bind("gone", "n1"), bad]);
    f.executor.assume(&d);
    assert_eq!(f.shared.lock().assumed_count(), 0);
    f.run(d).await;
    assert!(
        f.mock
            .requests()
            .iter()
            .all(|r| !r.path.contains("no-namespace")),
        "{:?}",
        f.mock.requests()
    );
    // The failed bind of the vanished pod rolls back nothing and recreates nothing.
    assert_eq!(f.shared.lock().pod_count(), 0);
}

// ---- (2) pod conditions -----------------------------------------------------------------------

#[tokio::test]
async fn pod_condition_keeps_transition_time_when_already_false_and_sets_nominated_node() {
    let f = fixture(&[]);
    f.shared.lock().upsert_pod(pod(
        "p",
        Some(
            json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "old", "lastTransitionTime": "2025-01-01T00:00:00Z"}),
        ),
    ));
    let d = Decisions {
        pod_conditions: vec![PodConditionUpdate {
            pod: "ns/p".into(),
            reason: "Unschedulable".into(),
            message: "0/3 nodes are available: 3 Insufficient cpu.".into(),
            nominated_node: Some("n2".into()),
        }],
        ..Decisions::default()
    };
    f.run(d).await;
    let patches = f
        .mock
        .matching(Method::PATCH, "/api/v1/namespaces/ns/pods/p/status");
    assert_eq!(patches.len(), 1);
    let status = &patches[0].body["status"];
    assert_eq!(status["nominatedNodeName"], "n2");
    let c = &status["conditions"][0];
    assert_eq!(c["reason"], "Unschedulable");
    assert_eq!(c["message"], "0/3 nodes are available: 3 Insufficient cpu.");
    assert!(
        c.get("lastTransitionTime").is_none(),
        "status unchanged: server keeps the old time"
    );
    let failed = f.mock.events_with_reason("FailedScheduling");
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0]["message"],
        "0/3 nodes are available: 3 Insufficient cpu."
    );
}

// ---- (3) evictions ----------------------------------------------------------------------------

fn eviction(pod: &str) -> Decisions {
    Decisions {
        evictions: vec![Eviction {
            pod: format!("ns/{pod}"),
            pod_uid: format!("uid-{pod}"),
            node: "n1".into(),
            action: "preempt".into(),
            reason: "preempt".into(),
            preemptor: None,
        }],
        ..Decisions::default()
    }
}

#[tokio::test]
async fn eviction_emits_event_writes_conditions_then_deletes() {
    let f = fixture(&[]);
    f.run(eviction("v")).await;

    let reqs = f.mock.requests();
    let order: Vec<(Method, &str)> = reqs
        .iter()
        .map(|r| (r.method.clone(), r.path.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![
            (Method::POST, EVENTS_PATH),
            (Method::PATCH, "/api/v1/namespaces/ns/pods/v/status"),
            (Method::DELETE, "/api/v1/namespaces/ns/pods/v"),
        ]
    );

    let ev = &reqs[0].body;
    assert_eq!(ev["reason"], "Evict");
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["message"], "Pod is evicted, because of preempt");
    assert_eq!(ev["involvedObject"]["name"], "v");
    assert_eq!(ev["involvedObject"]["uid"], "uid-v");

    assert_eq!(reqs[1].content_type, STRATEGIC);
    let conds = reqs[1].body["status"]["conditions"]
        .as_array()
        .expect("conditions");
    assert_eq!(conds.len(), 2);
    assert_eq!(conds[0]["type"], "Ready");
    assert_eq!(conds[0]["status"], "False");
    assert_eq!(conds[0]["reason"], "Evict");
    assert_eq!(conds[0]["message"], "Pod is evicted, because of preempt");
    assert_eq!(conds[1]["type"], "DisruptionTarget");
    assert_eq!(conds[1]["status"], "True");
    assert_eq!(conds[1]["reason"], "PreemptionByScheduler");
    assert_eq!(
        conds[1]["message"],
        "volcano-rs: preempting to accommodate a higher priority pod"
    );
    assert!(conds.iter().all(|c| c["lastTransitionTime"].is_string()));

    // No grace-period override and no preconditions: the pod's own grace period applies.
    let delete = &reqs[2];
    assert!(
        delete.body.get("gracePeriodSeconds").is_none(),
        "{}",
        delete.body
    );
    assert!(
        delete.body.get("preconditions").is_none(),
        "{}",
        delete.body
    );

    assert_eq!(
        metric(&f.metrics, "volcano_pods_evicted_total{action=\"preempt\"}"),
        1.0
    );
}

#[tokio::test]
async fn eviction_of_an_already_deleted_pod_is_fine() {
    let f = fixture(&[]);
    f.mock
        .fail(Method::DELETE, "/api/v1/namespaces/ns/pods/v", 404, ALWAYS);
    f.run(eviction("v")).await;
    assert_eq!(
        f.mock
            .matching(Method::DELETE, "/api/v1/namespaces/ns/pods/v")
            .len(),
        1,
        "404 is final"
    );
    assert_eq!(
        metric(&f.metrics, "volcano_pods_evicted_total{action=\"preempt\"}"),
        0.0
    );
}

#[tokio::test]
async fn eviction_delete_is_retried_on_transient_errors_and_proceeds_when_the_status_write_fails() {
    let f = fixture(&[]);
    f.mock
        .fail(Method::PATCH, "/api/v1/namespaces/ns/pods/v/status", 409, 1);
    f.mock
        .fail(Method::DELETE, "/api/v1/namespaces/ns/pods/v", 503, 1);
    f.run(eviction("v")).await;
    // 409 is not transient: one status attempt; the delete still happens, once retried.
    assert_eq!(
        f.mock
            .matching(Method::PATCH, "/api/v1/namespaces/ns/pods/v/status")
            .len(),
        1
    );
    assert_eq!(
        f.mock
            .matching(Method::DELETE, "/api/v1/namespaces/ns/pods/v")
            .len(),
        2
    );
    assert_eq!(
        metric(&f.metrics, "volcano_pods_evicted_total{action=\"preempt\"}"),
        1.0
    );
}

// ---- (4) PodGroup status ----------------------------------------------------------------------

#[tokio::test]
async fn pod_group_status_is_a_merge_patch_of_the_status() {
    let f = fixture(&[]);
    let status = JobStatus {
        phase: "Running".into(),
        conditions: vec![JobCondition {
            type_: "Scheduled".into(),
            status: "True".into(),
            transition_id: "t-1".into(),
            last_transition_time: None,
            reason: "tasks in gang are ready to be scheduled".into(),
            message: String::new(),
        }],
        running: 2,
        succeeded: 1,
        failed: 0,
    };
    let d = Decisions {
        pod_group_statuses: vec![PodGroupStatusUpdate {
            pod_group: "ns/pg".into(),
            status,
            awaiting_binds: false,
        }],
        ..Decisions::default()
    };
    f.run(d).await;

    let reqs = f.mock.requests();
    assert_eq!(reqs.len(), 1, "no events for a status write");
    let r = &reqs[0];
    assert_eq!(r.method, Method::PATCH);
    assert_eq!(
        r.path,
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg"
    );
    assert_eq!(r.content_type, MERGE);
    assert!(
        r.query.is_empty(),
        "no dryRun or other parameters: {}",
        r.query
    );
    let s = &r.body["status"];
    assert_eq!(s["phase"], "Running");
    assert_eq!(s["running"], 2);
    assert_eq!(s["succeeded"], 1);
    assert_eq!(s["conditions"][0]["type"], "Scheduled");
    assert_eq!(s["conditions"][0]["status"], "True");
    assert_eq!(s["conditions"][0]["transitionID"], "t-1");
    assert_eq!(
        s["conditions"][0]["reason"],
        "tasks in gang are ready to be scheduled"
    );
    assert!(
        r.body.get("spec").is_none() && r.body.get("metadata").is_none(),
        "only the status is sent"
    );
}

// ---- (5) queue status -------------------------------------------------------------------------

fn allocation(queue: &str) -> QueueAllocation {
    QueueAllocation {
        queue: queue.into(),
        allocated: Resource::from_pairs(
            1500.0,
            2.0 * 1024.0 * 1024.0 * 1024.0,
            &[("pods", 3.0), ("nvidia.com/gpu", 2000.0)],
        ),
    }
}

#[tokio::test]
async fn queue_status_patch_writes_quantities_and_opens_a_queue_without_state() {
    let f = fixture(&[]);
    {
        let mut state = f.shared.lock();
        state.upsert_queue(queue("fresh", None));
        state.upsert_queue(queue("closed", Some(json!({"state": "Closed"}))));
        state.upsert_queue(queue("blank", Some(json!({"running": 1}))));
    }
    let d = Decisions {
        queue_allocations: vec![
            allocation("fresh"),
            allocation("closed"),
            allocation("blank"),
            allocation("unknown"),
        ],
        ..Decisions::default()
    };
    f.run(d).await;

    let body_of = |q: &str| {
        let path = format!("/apis/scheduling.volcano.sh/v1beta1/queues/{q}/status");
        let reqs = f.mock.matching(Method::PATCH, &path);
        assert_eq!(reqs.len(), 1, "{path}");
        assert_eq!(reqs[0].content_type, MERGE);
        reqs[0].body.clone()
    };
    let fresh = body_of("fresh");
    assert_eq!(
        fresh["status"]["allocated"],
        json!({"cpu": "1500m", "memory": "2Gi", "pods": "3", "nvidia.com/gpu": "2"})
    );
    assert_eq!(fresh["status"]["state"], apis::queue_state::OPEN);
    assert_eq!(
        body_of("blank")["status"]["state"],
        apis::queue_state::OPEN,
        "empty state counts as unset"
    );
    // The queue controller's state is never overwritten, nor guessed for a queue we do not know.
    assert!(body_of("closed")["status"].get("state").is_none());
    assert!(body_of("unknown")["status"].get("state").is_none());
    assert_eq!(f.mock.requests().len(), 4);
}

#[tokio::test]
async fn queue_status_patch_removes_resources_no_longer_allocated() {
    let f = fixture(&[]);
    f.shared.lock().upsert_queue(queue(
        "q",
        Some(json!({"state": "Open", "allocated": {"cpu": "2", "memory": "1Gi", "pods": "8", "example.com/fpga": "1"}})),
    ));
    let d = Decisions {
        queue_allocations: vec![QueueAllocation {
            queue: "q".into(),
            allocated: Resource::from_pairs(1000.0, 0.0, &[]),
        }],
        ..Decisions::default()
    };
    f.run(d).await;
    let reqs = f.mock.matching(
        Method::PATCH,
        "/apis/scheduling.volcano.sh/v1beta1/queues/q/status",
    );
    assert_eq!(reqs.len(), 1);
    // A merge patch keeps what it does not mention: dropped resources are set to null.
    assert_eq!(
        reqs[0].body["status"]["allocated"],
        json!({"cpu": "1", "memory": "0", "pods": null, "example.com/fpga": null})
    );
}

#[tokio::test(start_paused = true)]
async fn a_queue_status_is_written_once_per_rest_with_the_newest_allocation() {
    let rest = Duration::from_secs(1);
    let f = fixture_resting(
        4,
        &[],
        Fence::always(),
        RateLimiter::new(10_000.0, 10_000),
        rest,
    );
    f.shared.lock().upsert_queue(queue("q", None));
    let path = "/apis/scheduling.volcano.sh/v1beta1/queues/q/status";
    let decide = |pods: f64| Decisions {
        queue_allocations: vec![QueueAllocation {
            queue: "q".into(),
            allocated: Resource::from_pairs(0.0, 0.0, &[("pods", pods)]),
        }],
        ..Decisions::default()
    };
    // Three sessions in quick succession, as under a stream of single pods.
    for pods in [1.0, 2.0, 3.0] {
        f.executor.write(decide(pods)).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let patches = f.mock.matching(Method::PATCH, path);
    assert_eq!(patches.len(), 1, "the later two wait for the rest");
    assert_eq!(patches[0].body["status"]["allocated"]["pods"], "1");
    // No session follows: the end of the rest alone sends the newest.
    tokio::time::sleep(rest).await;
    let patches = f.mock.matching(Method::PATCH, path);
    assert_eq!(patches.len(), 2);
    assert_eq!(patches[1].body["status"]["allocated"]["pods"], "3");
    assert!(f.executor.drain(Duration::from_secs(5)).await);
    assert_eq!(f.mock.matching(Method::PATCH, path).len(), 2);
}

// ---- (6) retries ------------------------------------------------------------------------------

fn pod_group_update() -> Decisions {
    Decisions {
        pod_group_statuses: vec![PodGroupStatusUpdate {
            pod_group: "ns/pg".into(),
            status: JobStatus {
                phase: "Pending".into(),
                ..JobStatus::default()
            },
            awaiting_binds: false,
        }],
        ..Decisions::default()
    }
}

const PG_PATH: &str = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg";

#[tokio::test]
async fn transient_status_errors_are_retried_until_success() {
    let f = fixture(&[]);
    f.mock.fail(Method::PATCH, PG_PATH, 500, 1);
    f.mock.fail(Method::PATCH, PG_PATH, 429, 1);
    f.run(pod_group_update()).await;
    assert_eq!(f.mock.matching(Method::PATCH, PG_PATH).len(), 3);
}

#[tokio::test]
async fn transient_status_errors_give_up_after_three_attempts() {
    let f = fixture(&[]);
    f.mock.fail(Method::PATCH, PG_PATH, 500, ALWAYS);
    f.run(pod_group_update()).await;
    assert_eq!(
        f.mock.matching(Method::PATCH, PG_PATH).len(),
        api_client::WRITE_ATTEMPTS as usize
    );
    assert_eq!(api_client::WRITE_ATTEMPTS, 3);
}

#[tokio::test]
async fn permanent_status_errors_are_not_retried() {
    for code in [404, 409, 422] {
        let f = fixture(&[]);
        f.mock.fail(Method::PATCH, PG_PATH, code, ALWAYS);
        f.run(pod_group_update()).await;
        assert_eq!(
            f.mock.matching(Method::PATCH, PG_PATH).len(),
            1,
            "code {code}"
        );
    }
}

#[tokio::test]
async fn failed_pod_condition_write_publishes_no_event() {
    let f = fixture(&["p"]);
    let path = "/api/v1/namespaces/ns/pods/p/status";
    f.mock.fail(Method::PATCH, path, 404, ALWAYS);
    let d = Decisions {
        pod_conditions: vec![PodConditionUpdate {
            pod: "ns/p".into(),
            reason: "Unschedulable".into(),
            message: "no nodes".into(),
            nominated_node: None,
        }],
        ..Decisions::default()
    };
    f.run(d).await;
    assert_eq!(f.mock.matching(Method::PATCH, path).len(), 1);
    assert!(f.mock.events().is_empty());
}

// ---- (7) event de-duplication -----------------------------------------------------------------

fn pod_event(pod: &str, reason: &str, message: &str) -> SchedEvent {
    SchedEvent {
        object: pod_ref("ns", pod, &format!("uid-{pod}")),
        type_: EventType::Warning,
        reason: reason.into(),
        message: message.into(),
    }
}

fn events(list: Vec<SchedEvent>) -> Decisions {
    Decisions {
        events: list,
        ..Decisions::default()
    }
}

#[tokio::test]
async fn identical_event_is_published_once() {
    let f = fixture(&[]);
    let d = events(vec![pod_event(
        "p",
        "Unschedulable",
        "0/1 nodes are available",
    )]);
    f.run(d.clone()).await;
    f.run(d).await;
    assert_eq!(f.mock.events().len(), 1);
    assert_eq!(f.mock.matching(Method::POST, EVENTS_PATH).len(), 1);

    // Another object, or another reason, is another event.
    f.run(events(vec![
        pod_event("q", "Unschedulable", "0/1 nodes are available"),
        pod_event("p", "FailedScheduling", "0/1 nodes are available"),
    ]))
    .await;
    assert_eq!(f.mock.events().len(), 3);
}

#[tokio::test]
async fn a_changed_message_is_published_with_the_new_message() {
    let f = fixture(&[]);
    f.run(events(vec![pod_event(
        "p",
        "FailedScheduling",
        "0/3 nodes: Insufficient cpu",
    )]))
    .await;
    f.run(events(vec![pod_event(
        "p",
        "FailedScheduling",
        "0/3 nodes: untolerated taint",
    )]))
    .await;
    let written = f.mock.events();
    assert_eq!(written.len(), 2);
    // Whatever the write (a new event or a series update of the old one), the object that
    // ends up on the server must carry the new message.
    assert_eq!(
        written[1]["message"], "0/3 nodes: untolerated taint",
        "{}",
        written[1]
    );
}

#[test]
fn long_messages_are_truncated_on_a_char_boundary() {
    assert_eq!(truncate("short", 10), "short");
    assert_eq!(truncate("abcdef", 3), "abc…");
    // 'é' is two bytes: cutting at byte 2 would split it.
    assert_eq!(truncate("aébc", 2), "a…");
    assert_eq!(truncate("", 0), "");
}

#[test]
fn object_references_carry_the_right_api_version() {
    let reporter = event_body::Reporter {
        component: "volcano-rs",
        instance: "i",
    };
    let now = Timestamp::now();
    let involved = |object: ObjectRef| {
        let ev = SchedEvent {
            object,
            type_: EventType::Normal,
            reason: "Scheduled".into(),
            message: "m".into(),
        };
        let body = event_body::event_body(&ev, "ns", &reporter, now, "t").expect("body");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        v["involvedObject"].clone()
    };
    let pg = involved(ObjectRef {
        kind: "PodGroup",
        namespace: Some("ns".into()),
        name: "pg".into(),
        uid: String::new(),
    });
    assert_eq!(pg["apiVersion"], apis::API_VERSION);
    assert!(pg.get("uid").is_none(), "an empty uid is left out");
    let p = involved(pod_ref("ns", "p", "u"));
    assert_eq!(p["apiVersion"], "v1");
    assert_eq!(p["kind"], "Pod");
    assert_eq!(p["uid"], "u");
}

// ---- (8) bind concurrency -----------------------------------------------------------------------

#[tokio::test]
async fn bind_concurrency_never_exceeds_bind_workers() {
    for workers in [1usize, 3] {
        let names: Vec<String> = (0..9).map(|i| format!("p{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let f = fixture_with(workers, &refs);
        *f.mock.0.bind_delay.lock().expect("delay lock") = Duration::from_millis(20);
        let d = binds(names.iter().map(|n| bind(n, "n1")).collect());
        f.executor.assume(&d);
        f.run(d).await;
        let posted = f
            .mock
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/binding"))
            .count();
        assert_eq!(posted, 9);
        // Reaching the limit shows the binds do run concurrently; never going past it is the
        // point of the setting.
        assert_eq!(
            f.mock.0.max_binds_in_flight.load(Ordering::SeqCst),
            workers,
            "workers {workers}"
        );
        assert_eq!(metric(&f.metrics, "volcano_pods_bound_total"), 9.0);
    }
}

#[tokio::test]
async fn zero_bind_workers_still_binds_one_at_a_time() {
    let f = fixture_with(0, &["a", "b"]);
    *f.mock.0.bind_delay.lock().expect("delay lock") = Duration::from_millis(5);
    let d = binds(vec![bind("a", "n1"), bind("b", "n1")]);
    f.run(d).await;
    assert_eq!(f.mock.0.max_binds_in_flight.load(Ordering::SeqCst), 1);
    assert_eq!(f.mock.events_with_reason("Scheduled").len(), 2);
}

/// A replica without a fresh Lease sends nothing: binds and evictions are rolled back in its
/// state for whoever leads to decide again, and no status or event goes out.
#[tokio::test]
async fn a_fenced_replica_sends_no_write() {
    let f = fixture_fenced(4, &["p"], Fence::elected());
    let d = binds(vec![bind("p", "n1")]);
    f.executor.assume(&d);
    f.run(d).await;
    assert!(f.mock.requests().is_empty(), "{:?}", f.mock.requests());
    assert_eq!(
        f.shared.lock().assumed_count(),
        0,
        "the bind is rolled back"
    );
    assert_eq!(pod_status(&f.shared, "ns/p"), (TaskStatus::Pending, None));
    let text = f.metrics.scrape().expect("scrape");
    assert!(
        text.contains("volcano_api_writes_fenced_total{write=\"bind\"} 1"),
        "{text}"
    );
    Executor::publish(&f.executor, &pod_event("p", "Test", "m")).await;
    f.run(eviction("p")).await;
    assert!(f.mock.requests().is_empty(), "{:?}", f.mock.requests());
}

// ---- the write policy, through the sink ---------------------------------------------------

/// `write` holds nothing up: binds, evictions and status writes all go on in the background;
/// `drain` waits for them.
#[tokio::test(start_paused = true)]
async fn the_sink_holds_up_no_session() {
    let f = fixture(&["a"]);
    *f.mock.0.bind_delay.lock().expect("delay lock") = Duration::from_secs(5);
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    let mut d = pod_group_update();
    d.binds = vec![bind("a", "n1")];
    sink.assume(&d);
    let t0 = tokio::time::Instant::now();
    sink.write(d).await;
    assert_eq!(t0.elapsed(), Duration::ZERO);
    // Assumed at once, so the next session does not decide the pod again.
    assert_eq!(pod_status(&f.shared, "ns/a").1.as_deref(), Some("n1"));
    assert!(sink.drain(Duration::from_secs(10)).await);
    assert_eq!(f.mock.matching(Method::PATCH, PG_PATH).len(), 1);
    assert_eq!(f.mock.0.binds_in_flight.load(Ordering::SeqCst), 0);
    assert_eq!(
        metric(
            &f.metrics,
            "volcano_schedule_attempts_total{result=\"scheduled\"}"
        ),
        1.0
    );
}

/// A status write still waiting when the next session decides the object again is replaced,
/// not repeated: one write per object, the newest.
#[tokio::test(start_paused = true)]
async fn a_waiting_status_write_is_replaced_by_the_newer_decision() {
    let f = fixture_limited(1, &[], Fence::always(), RateLimiter::new(1.0, 1));
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    let status = |pg: &str, phase: &str| PodGroupStatusUpdate {
        pod_group: format!("ns/{pg}"),
        status: JobStatus {
            phase: phase.into(),
            ..JobStatus::default()
        },
        awaiting_binds: false,
    };
    let session = |updates: Vec<PodGroupStatusUpdate>| Decisions {
        pod_group_statuses: updates,
        ..Decisions::default()
    };
    // One worker: it takes pg's write and waits for a token; pg2's waits in the queue.
    sink.write(session(vec![
        status("pg", "Inqueue"),
        status("pg2", "Inqueue"),
    ]))
    .await;
    sink.write(session(vec![status("pg2", "Running")])).await;
    sink.write(session(vec![status("pg2", "Running")])).await;
    assert_eq!(f.executor.status_writes_queued(), 2);
    assert!(sink.drain(Duration::from_secs(60)).await);
    let pg2 = f.mock.matching(
        Method::PATCH,
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg2",
    );
    assert_eq!(pg2.len(), 1);
    assert_eq!(pg2[0].body["status"]["phase"], "Running");
    assert_eq!(f.mock.matching(Method::PATCH, PG_PATH).len(), 1);
}

/// A PodGroup placed only by binds still on their way is not written: the session that sees
/// them land writes it as Running. Its decision also replaces an older write still waiting.
#[tokio::test(start_paused = true)]
async fn a_pod_group_awaiting_its_binds_is_not_written() {
    let f = fixture_limited(1, &[], Fence::always(), RateLimiter::new(1.0, 1));
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    let status = |pg: &str, phase: &str, awaiting_binds: bool| PodGroupStatusUpdate {
        pod_group: format!("ns/{pg}"),
        status: JobStatus {
            phase: phase.into(),
            ..JobStatus::default()
        },
        awaiting_binds,
    };
    let session = |updates: Vec<PodGroupStatusUpdate>| Decisions {
        pod_group_statuses: updates,
        ..Decisions::default()
    };
    // One worker: it takes pg's write and waits for a token; pg2's waits in the queue, and
    // the next session finds pg2 placed by binds on their way, and pg3 too.
    sink.write(session(vec![
        status("pg", "Pending", false),
        status("pg2", "Pending", false),
    ]))
    .await;
    sink.write(session(vec![
        status("pg2", "Inqueue", true),
        status("pg3", "Inqueue", true),
    ]))
    .await;
    assert_eq!(f.executor.status_writes_queued(), 1, "pg's write only");
    assert!(sink.drain(Duration::from_secs(60)).await);
    let written = |pg: &str| {
        f.mock
            .matching(
                Method::PATCH,
                &format!("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/{pg}"),
            )
            .len()
    };
    assert_eq!((written("pg"), written("pg2"), written("pg3")), (1, 0, 0));
    // Once the binds landed, the next session's Running goes out.
    sink.write(session(vec![status("pg3", "Running", false)]))
        .await;
    assert!(sink.drain(Duration::from_secs(60)).await);
    assert_eq!(written("pg3"), 1);
}

/// A caller that stops waiting (shutdown) does not cancel the status writes: drain finishes them.
#[tokio::test(start_paused = true)]
async fn status_writes_outlive_a_caller_that_stops_waiting() {
    let f = fixture(&[]);
    f.mock.fail(Method::PATCH, PG_PATH, 503, 2);
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    drop(sink.write(pod_group_update()));
    assert!(sink.drain(Duration::from_secs(10)).await);
    // Two failures, then the third attempt lands.
    assert_eq!(f.mock.matching(Method::PATCH, PG_PATH).len(), 3);
}

/// Events of a session go behind its other writes, and at most `MAX_EVENT_BATCHES` sessions'
/// events wait at once.
#[tokio::test(start_paused = true)]
async fn events_wait_in_the_background_and_are_bounded() {
    let f = fixture_rate_limited(1.0, 1);
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    // Takes the only token: every session's events below wait for the next ones.
    sink.publish(pod_event("x", "Unschedulable", "first")).await;
    for session in 0..MAX_EVENT_BATCHES + 2 {
        let d = events(vec![pod_event(
            "a",
            "Unschedulable",
            &format!("session {session}"),
        )]);
        sink.write(d).await;
    }
    assert!(sink.drain(Duration::from_secs(60)).await);
    assert_eq!(f.mock.events().len(), 1 + MAX_EVENT_BATCHES);
}

/// A queue is created only by a replica that holds the fence.
#[tokio::test]
async fn ensure_queue_is_fenced() {
    let fence = Fence::elected();
    let f = fixture_fenced(4, &[], fence);
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    let refused = sink.ensure_queue("default", true).await;
    assert!(refused.is_err());
    // The lookup is a read and passes; the creation does not leave.
    assert!(
        f.mock.requests().iter().all(|r| r.method == Method::GET),
        "{:?}",
        f.mock.requests()
    );
    let f = fixture(&[]);
    let sink: Arc<dyn WriteSink> = Arc::new(f.executor.clone());
    assert_eq!(sink.ensure_queue("default", true).await, Ok(()));
    let created = f
        .mock
        .matching(Method::POST, "/apis/scheduling.volcano.sh/v1beta1/queues");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].body["spec"]["reclaimable"], true);
}

mod volumes;
