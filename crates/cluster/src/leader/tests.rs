use std::sync::{Arc, Mutex};

use kube::client::Body;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::*;

const NS: &str = "volcano-system";
const NAME: &str = "volcano-rs";
const COLLECTION: &str = "/apis/coordination.k8s.io/v1/namespaces/volcano-system/leases";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Serve,
    /// Every request answers 500.
    Fail,
    /// Every request hangs forever.
    Hang,
}

struct Server {
    lease: Option<Lease>,
    version: u64,
    mode: Mode,
    writes: usize,
}

/// An in-memory API server for one Lease: GET, POST and PUT with `resourceVersion` checks.
#[derive(Clone)]
struct MockApi(Arc<Mutex<Server>>);

impl MockApi {
    fn new(lease: Option<Lease>) -> Self {
        let lease = lease.map(|mut lease| {
            lease.metadata.resource_version = Some("1".to_owned());
            lease
        });
        MockApi(Arc::new(Mutex::new(Server {
            lease,
            version: 1,
            mode: Mode::Serve,
            writes: 0,
        })))
    }

    fn client(&self) -> kube::Client {
        let api = self.clone();
        let service = tower::service_fn(move |req: http::Request<Body>| {
            let api = api.clone();
            async move { Ok::<_, std::convert::Infallible>(api.handle(req).await) }
        });
        kube::Client::new(service, "default")
    }

    fn server(&self) -> std::sync::MutexGuard<'_, Server> {
        self.0.lock().unwrap()
    }

    fn spec(&self) -> LeaseSpec {
        let server = self.server();
        let lease = server.lease.as_ref().expect("the lease exists");
        lease.spec.clone().expect("the lease has a spec")
    }

    fn writes(&self) -> usize {
        self.server().writes
    }

    fn set_mode(&self, mode: Mode) {
        self.server().mode = mode;
    }

    /// Changes the lease as another client would, bumping its resourceVersion.
    fn overwrite(&self, change: impl FnOnce(&mut LeaseSpec)) {
        let mut server = self.server();
        server.version += 1;
        let version = server.version.to_string();
        let lease = server.lease.as_mut().expect("the lease exists");
        change(lease.spec.get_or_insert_with(LeaseSpec::default));
        lease.metadata.resource_version = Some(version);
    }

    async fn handle(self, req: http::Request<Body>) -> http::Response<Body> {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = body.collect_bytes().await else {
            return status(400, "BadRequest", "unreadable body");
        };
        let mode = self.server().mode;
        match mode {
            Mode::Serve => {}
            Mode::Fail => return status(500, "InternalError", "injected failure"),
            Mode::Hang => std::future::pending::<()>().await,
        }
        let item = format!("{COLLECTION}/{NAME}");
        let path = parts.uri.path();
        let mut server = self.server();
        match parts.method.as_str() {
            "GET" if path == item => match &server.lease {
                Some(lease) => json(200, lease),
                None => status(404, "NotFound", "leases \"volcano-rs\" not found"),
            },
            "POST" if path == COLLECTION => {
                if server.lease.is_some() {
                    return status(409, "AlreadyExists", "leases \"volcano-rs\" already exists");
                }
                let Ok(mut lease) = serde_json::from_slice::<Lease>(&bytes) else {
                    return status(400, "BadRequest", "not a Lease");
                };
                server.version += 1;
                lease.metadata.resource_version = Some(server.version.to_string());
                server.lease = Some(lease.clone());
                server.writes += 1;
                json(201, &lease)
            }
            "PUT" if path == item => {
                let Ok(mut lease) = serde_json::from_slice::<Lease>(&bytes) else {
                    return status(400, "BadRequest", "not a Lease");
                };
                let Some(stored) = &server.lease else {
                    return status(404, "NotFound", "leases \"volcano-rs\" not found");
                };
                if lease.metadata.resource_version != stored.metadata.resource_version {
                    return status(409, "Conflict", "the object has been modified");
                }
                server.version += 1;
                lease.metadata.resource_version = Some(server.version.to_string());
                server.lease = Some(lease.clone());
                server.writes += 1;
                json(200, &lease)
            }
            _ => status(405, "MethodNotAllowed", "unexpected request"),
        }
    }
}

fn json(code: u16, value: &impl serde::Serialize) -> http::Response<Body> {
    http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(value).unwrap()))
        .unwrap()
}

fn status(code: u16, reason: &str, message: &str) -> http::Response<Body> {
    json(
        code,
        &serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": message, "reason": reason, "code": code,
        }),
    )
}

/// Wall time that follows tokio's paused clock. It starts on a whole second so that the
/// times written (which the API keeps to the microsecond) compare equal to `clock.now()`.
fn virtual_clock() -> Clock {
    let start = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    Clock {
        anchor: Some((start, Instant::now())),
    }
}

fn lease(holder: &str, renewed: Timestamp, seconds: i32, transitions: i32) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(NAME.to_owned()),
            namespace: Some(NS.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(MicroTime(renewed)),
            renew_time: Some(MicroTime(renewed)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }),
    }
}

fn ago(clock: Clock, seconds: i64) -> Timestamp {
    clock
        .now()
        .checked_sub(SignedDuration::from_secs(seconds))
        .unwrap()
}

struct Replica {
    leader: watch::Receiver<bool>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

fn start(api: &MockApi, identity: &str, clock: Clock) -> Replica {
    start_with(api, LeaderConfig::new(NS, NAME, identity), clock)
}

fn start_with(api: &MockApi, cfg: LeaderConfig, clock: Clock) -> Replica {
    let (leader, rx) = watch::channel(false);
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(run_with_clock(
        api.client(),
        cfg,
        leader,
        Fence::elected(),
        shutdown,
        clock,
    ));
    Replica {
        leader: rx,
        stop,
        task,
    }
}

impl Replica {
    /// Waits up to `within` for leadership to become `value`; returns when it did.
    async fn becomes(&mut self, value: bool, within: Duration) -> Option<Instant> {
        let changed = timeout(within, self.leader.wait_for(|v| *v == value)).await;
        matches!(changed, Ok(Ok(_))).then(Instant::now)
    }

    fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    async fn stop(self) -> watch::Receiver<bool> {
        let _ = self.stop.send(());
        timeout(Duration::from_secs(60), self.task)
            .await
            .expect("run returns after shutdown")
            .expect("run does not panic");
        self.leader
    }
}

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn creates_a_missing_lease_and_renews_it() {
    let api = MockApi::new(None);
    let t0 = Instant::now();
    let mut me = start(&api, "me", virtual_clock());
    let acquired = me.becomes(true, SECOND).await.expect("acquires");
    assert_eq!(acquired, t0, "a missing lease is taken at once");

    let spec = api.spec();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.acquire_time, spec.renew_time);
    assert_eq!(api.writes(), 1);

    // Renewals every retry period (2 s, 4 s, 6 s) move renewTime, keep the rest.
    sleep(Duration::from_secs(7)).await;
    assert_eq!(api.writes(), 4);
    let renewed = api.spec();
    assert_eq!(renewed.acquire_time, spec.acquire_time);
    assert!(renewed.renew_time > spec.renew_time);
    assert_eq!(renewed.lease_transitions, Some(0));
    assert_eq!(renewed.holder_identity.as_deref(), Some("me"));
    assert!(me.is_leader());
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn takes_a_released_lease_at_once_counting_a_transition() {
    let clock = virtual_clock();
    let api = MockApi::new(Some(lease("", clock.now(), 1, 3)));
    let t0 = Instant::now();
    let mut me = start(&api, "me", clock);
    assert_eq!(me.becomes(true, SECOND).await, Some(t0));
    let spec = api.spec();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_transitions, Some(4));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.acquire_time, spec.renew_time);
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn waits_while_another_holds_an_unexpired_lease_then_takes_it_over() {
    let clock = virtual_clock();
    let api = MockApi::new(Some(lease("other", clock.now(), 15, 2)));
    let t0 = Instant::now();
    let mut me = start(&api, "me", clock);

    // Still valid for 15 s: nothing published, nothing written.
    let change = timeout(Duration::from_secs(10), me.leader.changed()).await;
    assert!(
        change.is_err(),
        "must not lead while another holds the lease"
    );
    assert_eq!(api.writes(), 0);
    assert_eq!(api.spec().holder_identity.as_deref(), Some("other"));

    // Expired after 15 s; the next attempt comes within a jittered retry period (≤ 4.4 s).
    let taken = me
        .becomes(true, Duration::from_secs(20))
        .await
        .expect("takes over");
    let waited = taken - t0;
    assert!(waited > Duration::from_secs(15), "{waited:?}");
    assert!(waited <= Duration::from_millis(19_400), "{waited:?}");
    let spec = api.spec();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_transitions, Some(3));
    assert_eq!(spec.acquire_time, spec.renew_time);
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_takeover_counts_from_zero_when_transitions_are_absent() {
    let clock = virtual_clock();
    let mut held = lease("crashed", ago(clock, 60), 15, 0);
    held.spec.as_mut().unwrap().lease_transitions = None;
    let api = MockApi::new(Some(held));
    let mut me = start(&api, "me", clock);
    assert!(me.becomes(true, SECOND).await.is_some());
    assert_eq!(api.spec().lease_transitions, Some(1));
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn takes_over_an_expired_lease_at_once() {
    let clock = virtual_clock();
    let api = MockApi::new(Some(lease("crashed", ago(clock, 60), 15, 7)));
    let t0 = Instant::now();
    let mut me = start(&api, "me", clock);
    assert_eq!(me.becomes(true, SECOND).await, Some(t0));
    let spec = api.spec();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_transitions, Some(8));
    assert_eq!(spec.acquire_time.map(|t| t.0), Some(clock.now()));
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn steps_down_when_renewals_fail_for_the_renew_deadline_then_campaigns_again() {
    let api = MockApi::new(None);
    let mut me = start(&api, "me", virtual_clock());
    let acquired = me.becomes(true, SECOND).await.expect("acquires");

    api.set_mode(Mode::Fail);
    let lost = me
        .becomes(false, Duration::from_secs(60))
        .await
        .expect("steps down");
    assert_eq!(lost - acquired, Duration::from_secs(10));
    assert_eq!(api.writes(), 1, "failed renewals write nothing");

    // The lease still names us and has not expired: we take it back without a transition.
    api.set_mode(Mode::Serve);
    assert!(me.becomes(true, Duration::from_secs(5)).await.is_some());
    let spec = api.spec();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_transitions, Some(0));
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn steps_down_at_the_renew_deadline_when_the_api_hangs() {
    let api = MockApi::new(None);
    let mut me = start(&api, "me", virtual_clock());
    let acquired = me.becomes(true, SECOND).await.expect("acquires");
    // One renewal succeeds at 2 s; the deadline then counts from there.
    sleep(Duration::from_millis(2500)).await;
    assert_eq!(api.writes(), 2);
    api.set_mode(Mode::Hang);
    let lost = me
        .becomes(false, Duration::from_secs(60))
        .await
        .expect("steps down");
    assert_eq!(lost - acquired, Duration::from_secs(12));
    // Shutdown is not held up by the hung API either.
    let rx = me.stop().await;
    assert!(!*rx.borrow());
}

#[tokio::test(start_paused = true)]
async fn steps_down_at_once_when_another_replica_took_the_lease() {
    let clock = virtual_clock();
    let api = MockApi::new(None);
    let mut me = start(&api, "me", clock);
    let acquired = me.becomes(true, SECOND).await.expect("acquires");
    api.overwrite(|spec| {
        spec.holder_identity = Some("intruder".to_owned());
        spec.renew_time = Some(MicroTime(clock.now()));
    });
    // The next renewal (2 s) gets 409, re-reads, sees the intruder and stops.
    let lost = me
        .becomes(false, Duration::from_secs(60))
        .await
        .expect("steps down");
    assert_eq!(lost - acquired, Duration::from_secs(2));
    assert_eq!(api.spec().holder_identity.as_deref(), Some("intruder"));
    me.stop().await;
}

#[tokio::test(start_paused = true)]
async fn releases_the_lease_on_shutdown_so_another_replica_takes_over_at_once() {
    let clock = virtual_clock();
    let api = MockApi::new(None);
    let mut first = start(&api, "first", clock);
    first.becomes(true, SECOND).await.expect("acquires");
    sleep(Duration::from_secs(3)).await;

    let rx = first.stop().await;
    assert!(!*rx.borrow(), "leadership is withdrawn on shutdown");
    let spec = api.spec();
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.renew_time.map(|t| t.0), Some(clock.now()));

    let t0 = Instant::now();
    let mut second = start(&api, "second", clock);
    assert_eq!(second.becomes(true, SECOND).await, Some(t0));
    assert_eq!(api.spec().lease_transitions, Some(1));
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_while_campaigning_leaves_the_lease_alone() {
    let clock = virtual_clock();
    let api = MockApi::new(Some(lease("other", clock.now(), 15, 0)));
    let me = start(&api, "me", clock);
    sleep(Duration::from_secs(5)).await;
    let rx = me.stop().await;
    assert!(!*rx.borrow());
    assert_eq!(api.writes(), 0);
    assert_eq!(api.spec().holder_identity.as_deref(), Some("other"));
}

#[tokio::test(start_paused = true)]
async fn two_replicas_never_lead_together() {
    let clock = virtual_clock();
    let api = MockApi::new(None);
    let a = start(&api, "a", clock);
    let b = start(&api, "b", clock);
    sleep(Duration::from_millis(100)).await;
    let (leader, mut follower) = if a.is_leader() { (a, b) } else { (b, a) };
    for _ in 0..30 {
        assert!(leader.is_leader(), "the first to write keeps renewing");
        assert!(!follower.is_leader(), "never two leaders");
        sleep(Duration::from_millis(1500)).await;
    }
    assert_eq!(api.spec().lease_transitions, Some(0));

    leader.stop().await;
    let taken = follower.becomes(true, Duration::from_secs(5)).await;
    assert!(
        taken.is_some(),
        "the other replica takes over after the release"
    );
    assert_eq!(api.spec().lease_transitions, Some(1));
    follower.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_configuration_is_not_run() {
    let api = MockApi::new(None);
    let mut cfg = LeaderConfig::new(NS, NAME, "me");
    cfg.renew_deadline = Duration::from_secs(20);
    let me = start_with(&api, cfg, virtual_clock());
    timeout(SECOND, me.task)
        .await
        .expect("returns at once")
        .expect("does not panic");
    assert_eq!(api.writes(), 0);
    assert!(!*me.leader.borrow());
}

#[test]
fn validate_accepts_volcano_defaults() {
    assert_eq!(
        LeaderConfig::new("volcano-system", "volcano-rs", "me").validate(),
        Ok(())
    );
}

#[test]
fn validate_names_every_problem() {
    let ok = LeaderConfig::new("ns", "name", "id");
    let cases: Vec<(LeaderConfig, &str)> = vec![
        (
            LeaderConfig {
                namespace: String::new(),
                ..ok.clone()
            },
            "the lease namespace must not be empty",
        ),
        (
            LeaderConfig {
                name: " ".to_owned(),
                ..ok.clone()
            },
            "the lease name must not be empty",
        ),
        (
            LeaderConfig {
                identity: String::new(),
                ..ok.clone()
            },
            "the lease identity must not be empty",
        ),
        (
            LeaderConfig {
                retry_period: Duration::ZERO,
                ..ok.clone()
            },
            "the retry period must be greater than zero",
        ),
        (
            LeaderConfig {
                renew_deadline: Duration::from_secs(15),
                ..ok.clone()
            },
            "the lease duration (15s) must be greater than the renew deadline (15s)",
        ),
        (
            LeaderConfig {
                // 1.2 × 2.5 s = 3 s: equal is not enough.
                renew_deadline: Duration::from_secs(3),
                retry_period: Duration::from_millis(2500),
                ..ok.clone()
            },
            "the renew deadline (3s) must be greater than 1.2 × the retry period (2.5s)",
        ),
        (
            LeaderConfig {
                lease_duration: Duration::from_millis(900),
                renew_deadline: Duration::from_millis(600),
                retry_period: Duration::from_millis(100),
                ..ok.clone()
            },
            "the lease duration (900ms) must be at least 1s",
        ),
    ];
    for (cfg, expected) in cases {
        let err = cfg.validate().expect_err(expected);
        assert!(
            err.contains(expected),
            "{err:?} should contain {expected:?}"
        );
    }
    // Just above 1.2 × retry passes.
    let tight = LeaderConfig {
        renew_deadline: Duration::from_millis(3001),
        retry_period: Duration::from_millis(2500),
        ..ok.clone()
    };
    assert_eq!(tight.validate(), Ok(()));
    // Several problems are all listed.
    let bad = LeaderConfig {
        name: String::new(),
        identity: String::new(),
        ..ok
    };
    assert_eq!(bad.validate().unwrap_err().matches("; ").count(), 1);
}

#[test]
fn expiry_is_renew_time_plus_duration_strictly_before_now() {
    let renewed = Timestamp::from_second(1_000_000).unwrap();
    let at = |s: i64, micros: i64| {
        renewed
            .checked_add(SignedDuration::from_secs(s) + SignedDuration::from_micros(micros))
            .unwrap()
    };
    let held = lease("other", renewed, 15, 0);
    assert!(
        !expired(&held, at(15, 0)),
        "valid up to and including the end"
    );
    assert!(expired(&held, at(15, 1)));
    assert!(!expired(&held, at(0, 0)));

    let mut no_renew = held.clone();
    no_renew.spec.as_mut().unwrap().renew_time = None;
    assert!(!expired(&no_renew, at(10, 0)), "acquireTime stands in");
    assert!(expired(&no_renew, at(16, 0)));

    let mut no_times = no_renew.clone();
    no_times.spec.as_mut().unwrap().acquire_time = None;
    assert!(expired(&no_times, at(0, 0)));

    let mut no_duration = held.clone();
    no_duration.spec.as_mut().unwrap().lease_duration_seconds = None;
    assert!(expired(&no_duration, at(0, 1)));

    let no_spec = Lease { spec: None, ..held };
    assert!(expired(&no_spec, at(0, 0)));
}

#[test]
fn jitter_stays_within_client_go_bounds() {
    let base = Duration::from_secs(2);
    let samples: Vec<Duration> = (0..200).map(|_| jittered(base)).collect();
    assert!(
        samples
            .iter()
            .all(|d| *d >= base && *d <= base.mul_f64(2.2))
    );
    assert!(samples.iter().any(|d| *d != samples[0]), "jitter varies");
}

#[test]
fn default_identity_is_host_and_random_hex() {
    let a = default_identity();
    let b = default_identity();
    assert_ne!(a, b);
    let (host, hex) = a.rsplit_once('_').expect("<hostname>_<hex>");
    assert!(!host.is_empty());
    assert!(
        hex.len() >= 16 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "{a}"
    );
}
