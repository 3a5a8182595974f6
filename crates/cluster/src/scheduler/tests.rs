//! The loop's rules, one test each, on a cluster held in memory: the state is filled as the
//! watches would fill it, the sink records what it is asked to write, and the leader signal is
//! scripted. No API server.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use engine::conf::KnownNames;
use engine::state::{ClusterState, StateOptions};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::*;
use crate::conf_watch::ReloadLimits;

/// Answers `leading()` from a script; the last answer repeats.
struct ScriptedLeader {
    answers: Mutex<VecDeque<bool>>,
    last: Mutex<bool>,
}

impl ScriptedLeader {
    fn new(answers: &[bool]) -> Box<ScriptedLeader> {
        Box::new(ScriptedLeader {
            answers: Mutex::new(answers.iter().copied().collect()),
            last: Mutex::new(answers.last().copied().unwrap_or(true)),
        })
    }
}

impl LeaderSignal for ScriptedLeader {
    fn leading(&self) -> bool {
        let next = self.answers.lock().expect("script").pop_front();
        let mut last = self.last.lock().expect("last");
        if let Some(answer) = next {
            *last = answer;
        }
        *last
    }

    fn changed(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Records every write; binds and evictions are assumed as the executor assumes them, and
/// nothing is ever written back into the state (as if the API server were slow).
#[derive(Default)]
struct MemorySink {
    shared: Mutex<Option<Arc<Shared>>>,
    writes: Mutex<Vec<Decisions>>,
    published: Mutex<Vec<Event>>,
    ensured: Mutex<Vec<(String, bool)>>,
}

impl MemorySink {
    fn binds(&self) -> Vec<String> {
        let writes = self.writes.lock().expect("writes");
        writes
            .iter()
            .flat_map(|d| d.binds.iter().map(|b| format!("{}→{}", b.pod, b.node)))
            .collect()
    }

    fn published_reasons(&self) -> Vec<String> {
        let published = self.published.lock().expect("published");
        published.iter().map(|e| e.reason.clone()).collect()
    }

    fn ensured(&self) -> Vec<(String, bool)> {
        self.ensured.lock().expect("ensured").clone()
    }
}

impl WriteSink for MemorySink {
    fn assume(&self, decisions: &Decisions) {
        let shared = self.shared.lock().expect("shared").clone();
        if let Some(shared) = shared {
            let mut state = shared.lock();
            for b in &decisions.binds {
                state.assume_bind(&b.pod, &b.node);
            }
        }
    }

    fn write(&self, decisions: Decisions) -> BoxFuture<'static, ()> {
        self.writes.lock().expect("writes").push(decisions);
        Box::pin(async {})
    }

    fn publish(&self, event: Event) -> BoxFuture<'static, ()> {
        self.published.lock().expect("published").push(event);
        Box::pin(async {})
    }

    fn ensure_queue(
        &self,
        name: &str,
        reclaimable: bool,
    ) -> BoxFuture<'static, Result<(), String>> {
        self.ensured
            .lock()
            .expect("ensured")
            .push((name.to_string(), reclaimable));
        Box::pin(async { Ok(()) })
    }

    fn drain(&self, _within: Duration) -> BoxFuture<'static, bool> {
        Box::pin(async { true })
    }
}

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }))
    .expect("node")
}

fn pending_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedulerName": "volcano-rs",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"}
    }))
    .expect("pod")
}

fn known<'a>(plugins: &'a [&'a str]) -> KnownNames<'a> {
    KnownNames {
        actions: engine::actions::KNOWN_ACTIONS,
        plugins,
        strict: true,
        check_arguments: None,
    }
}

/// A cluster of one 4-cpu node and two pending 1-cpu pods of ours, and a scheduler on it.
struct Fixture {
    shared: Arc<Shared>,
    sink: Arc<MemorySink>,
    scheduler: Scheduler,
}

fn fixture_with(leader: Box<dyn LeaderSignal>, conf: ConfSource) -> Fixture {
    let mut state = ClusterState::new(StateOptions::default());
    state.upsert_node(node("n1"));
    // The default queue exists: the sink below only records that it was ensured.
    state.upsert_queue(
        serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": {"weight": 1}}))
            .expect("queue"),
    );
    for name in ["a", "b"] {
        state.upsert_pod(pending_pod(name));
    }
    let shared = Shared::new(state);
    let sink = Arc::new(MemorySink::default());
    *sink.shared.lock().expect("shared") = Some(shared.clone());
    let now: Timestamp = "2026-01-01T00:01:00Z".parse().expect("timestamp");
    let scheduler = Scheduler::new(SchedulerParts {
        shared: shared.clone(),
        sink: sink.clone(),
        conf,
        registry: Arc::new(plugins::registry()),
        session_options: SessionOptions::default(),
        leader,
        metrics: Metrics::new(),
        clock: Arc::new(move || now),
        identity: "test".into(),
        default_queue: "default".into(),
        self_ref: ObjectRef {
            kind: "Lease",
            namespace: Some("volcano-system".into()),
            name: "volcano-rs".into(),
            uid: String::new(),
        },
        period: Duration::from_millis(10),
    });
    Fixture {
        shared,
        sink,
        scheduler,
    }
}

fn fixture(leader: Box<dyn LeaderSignal>) -> Fixture {
    let names = plugins::known_plugins();
    let conf = ConfSource::load(None, &known(&names)).expect("embedded default");
    fixture_with(leader, conf)
}

fn ran(outcome: &CycleOutcome) -> &CycleSummary {
    match outcome {
        CycleOutcome::Ran(summary) => summary,
        other => panic!("expected a session, got {other:?}"),
    }
}

#[tokio::test]
async fn a_standby_decides_and_writes_nothing() {
    let mut f = fixture(ScriptedLeader::new(&[false]));
    let (problems_tx, problems_rx) = mpsc::unbounded_channel();
    f.scheduler = f.scheduler.with_problems(problems_rx);
    problems_tx
        .send(Event {
            object: f.scheduler.self_ref.clone(),
            type_: EventType::Warning,
            reason: "Malformed".into(),
            message: "x".into(),
        })
        .expect("send");
    assert_eq!(f.scheduler.run_cycle().await, CycleOutcome::Standby);
    assert_eq!(f.scheduler.cycles(), 0);
    assert!(f.sink.writes.lock().expect("writes").is_empty());
    assert!(f.sink.ensured().is_empty());
    // The leader reports the watches' problems; a standby drops them.
    assert!(f.sink.published_reasons().is_empty());
}

#[tokio::test]
async fn a_leader_binds_and_reports_the_watches_problems() {
    let mut f = fixture(ScriptedLeader::new(&[true]));
    let (problems_tx, problems_rx) = mpsc::unbounded_channel();
    f.scheduler = f.scheduler.with_problems(problems_rx);
    problems_tx
        .send(Event {
            object: f.scheduler.self_ref.clone(),
            type_: EventType::Warning,
            reason: "Malformed".into(),
            message: "x".into(),
        })
        .expect("send");
    let outcome = f.scheduler.run_cycle().await;
    assert_eq!(ran(&outcome).binds, 2);
    assert_eq!(f.sink.binds(), ["ns/a→n1", "ns/b→n1"]);
    assert_eq!(f.sink.published_reasons(), ["Malformed"]);
}

/// Binds are assumed before the next snapshot: the next session does not decide them again,
/// although nothing was written back.
#[tokio::test]
async fn binds_are_assumed_before_the_next_session() {
    let mut f = fixture(ScriptedLeader::new(&[true]));
    assert_eq!(ran(&f.scheduler.run_cycle().await).binds, 2);
    {
        let state = f.shared.lock();
        let a = state.pod("ns/a").expect("a");
        assert_eq!(a.node_name.as_deref(), Some("n1"));
        // Binding until the watch shows it: the PodGroup phase does not run ahead of the bind.
        assert_eq!(a.status, engine::model::TaskStatus::Binding);
    }
    assert_eq!(ran(&f.scheduler.run_cycle().await).binds, 0);
    assert_eq!(f.sink.binds().len(), 2);
}

#[tokio::test]
async fn decisions_of_a_session_during_which_leadership_was_lost_are_dropped() {
    // Leading when the cycle starts, not any more when the session closes.
    let mut f = fixture(ScriptedLeader::new(&[true, false]));
    assert_eq!(f.scheduler.run_cycle().await, CycleOutcome::Dropped);
    assert!(f.sink.writes.lock().expect("writes").is_empty());
    // Nothing was assumed: whoever leads decides the pods again.
    let state = f.shared.lock();
    assert_eq!(state.pod("ns/a").expect("a").node_name, None);
}

#[tokio::test]
async fn no_session_runs_while_a_watch_is_broken() {
    let mut f = fixture(ScriptedLeader::new(&[true]));
    f.shared.watch_failed("Pod");
    assert_eq!(
        f.scheduler.run_cycle().await,
        CycleOutcome::Paused {
            broken: vec!["Pod"]
        }
    );
    assert!(f.sink.writes.lock().expect("writes").is_empty());
    f.shared.watch_working("Pod");
    assert_eq!(ran(&f.scheduler.run_cycle().await).binds, 2);
}

#[tokio::test]
async fn queues_are_ensured_whenever_leadership_is_gained() {
    // Two answers per session (at its start and at its close), one per standby cycle.
    let mut f = fixture(ScriptedLeader::new(&[
        true, true, true, true, false, true, true,
    ]));
    // Not (yet) in the mirror: the scheduler asks for it.
    f.shared.lock().delete_queue("default");
    f.scheduler.run_cycle().await;
    f.scheduler.run_cycle().await;
    assert_eq!(f.sink.ensured(), [("default".to_string(), true)]);
    assert_eq!(f.scheduler.run_cycle().await, CycleOutcome::Standby);
    f.scheduler.run_cycle().await;
    assert_eq!(f.sink.ensured().len(), 2);
}

#[tokio::test]
async fn a_queue_the_mirror_shows_is_not_asked_for() {
    let mut f = fixture(ScriptedLeader::new(&[true, true]));
    assert!(f.shared.lock().queue("default").is_some());
    f.scheduler.run_cycle().await;
    assert!(f.sink.ensured().is_empty());
}

/// A reload that turns hierarchy on ensures `root`; a refused one is published and the
/// configuration in force stays.
#[tokio::test]
async fn reloads_apply_from_the_next_cycle_and_refusals_keep_the_previous_configuration() {
    let dir =
        std::env::temp_dir().join(format!("volcano-rs-scheduler-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("scheduler.conf");
    let flat = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: drf\n";
    std::fs::write(&path, flat).expect("write");
    let names = plugins::known_plugins();
    let limits = ReloadLimits {
        check_interval: Duration::from_millis(10),
        ..ReloadLimits::default()
    };
    let conf = ConfSource::load_with(Some(path.clone()), &known(&names), limits).expect("loads");
    let mut f = fixture_with(ScriptedLeader::new(&[true]), conf);
    f.shared.lock().delete_queue("default");
    let (updates_tx, updates_rx) = watch::channel(Arc::new(SchedulerConf::embedded_default()));
    f.scheduler = f.scheduler.with_conf_updates(updates_tx);
    assert_eq!(updates_rx.borrow().actions, ["enqueue", "allocate"]);
    f.scheduler.run_cycle().await;
    assert_eq!(f.sink.ensured(), [("default".to_string(), true)]);

    replace_file(&path, &format!("{flat}    enableHierarchy: true\n"));
    wait_for_a_look(&f.scheduler.conf).await;
    f.scheduler.run_cycle().await;
    assert_eq!(
        f.sink.ensured(),
        [
            ("default".to_string(), true),
            ("default".to_string(), true),
            (apis::ROOT_QUEUE.to_string(), false)
        ]
    );
    assert!(
        updates_rx
            .borrow()
            .plugin_options()
            .any(|p| p.enable_hierarchy)
    );

    replace_file(&path, "actions: \"enqueue, nosuchaction\"\ntiers: []\n");
    wait_for_a_look(&f.scheduler.conf).await;
    f.scheduler.run_cycle().await;
    assert_eq!(f.sink.published_reasons(), ["ConfigRefused"]);
    assert!(
        f.scheduler
            .conf
            .current()
            .plugin_options()
            .any(|p| p.enable_hierarchy)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Returns after the configuration reader has looked at its file twice more (so at least
/// once after the caller's last change).
/// Replaces the file's content in one step, as a ConfigMap update does (a look never reads a
/// half-written file: under load it could, and count a refusal of the truncated text).
fn replace_file(path: &std::path::Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

async fn wait_for_a_look(conf: &ConfSource) {
    let seen = conf.looks();
    for _ in 0..500 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if conf.looks() > seen + 1 {
            return;
        }
    }
    panic!("the configuration was not looked at again");
}

#[tokio::test]
async fn skipped_plugins_are_reported_once() {
    let names = plugins::known_plugins();
    let lenient = KnownNames {
        strict: false,
        ..known(&names)
    };
    let parsed = engine::conf::parse(
        "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: nosuchplugin\n",
        &lenient,
    )
    .expect("parses");
    let mut f = fixture_with(ScriptedLeader::new(&[true]), ConfSource::fixed(parsed.conf));
    f.scheduler.run_cycle().await;
    f.scheduler.run_cycle().await;
    assert_eq!(f.sink.published_reasons(), ["PluginSkipped"]);
}

/// `run` stops when the leader signal dies (a dead elector), and on shutdown.
#[tokio::test]
async fn run_ends_on_a_dead_leader_signal_and_on_shutdown() {
    let (leader_tx, leader_rx) = watch::channel(true);
    let mut f = fixture(Box::new(leader_rx));
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    drop(leader_tx);
    let ended = tokio::time::timeout(Duration::from_secs(5), f.scheduler.run(shutdown_rx.clone()))
        .await
        .expect("ends at once");
    assert!(ended.is_err());

    let (_leader_tx, leader_rx) = watch::channel(true);
    let mut f = fixture(Box::new(leader_rx));
    let stop = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = shutdown_tx.send(true);
    });
    let ended = tokio::time::timeout(Duration::from_secs(5), f.scheduler.run(shutdown_rx))
        .await
        .expect("ends on shutdown");
    assert!(ended.is_ok());
    assert!(f.scheduler.cycles() >= 1);
    assert_eq!(f.sink.binds().len(), 2);
    stop.await.expect("stopper");
}

/// Leads throughout, but its signal wakes every few milliseconds, as the fenced leader's
/// does every 500 ms.
struct RestlessLeader;

impl LeaderSignal for RestlessLeader {
    fn leading(&self) -> bool {
        true
    }

    fn changed(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(2)))
    }
}

/// A leader signal that wakes without a change starts no session: sessions follow the period
/// (and new work), not the signal.
#[tokio::test]
async fn a_wake_of_the_leader_signal_without_a_change_starts_no_session() {
    let mut f = fixture(Box::new(RestlessLeader));
    f.scheduler.period = Duration::from_millis(200);
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let stop = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = shutdown_tx.send(true);
    });
    tokio::time::timeout(Duration::from_secs(5), f.scheduler.run(shutdown_rx))
        .await
        .expect("ends on shutdown")
        .expect("runs");
    stop.await.expect("stopper");
    // One at the start and one after the first period; a session per wake would be ~100.
    let cycles = f.scheduler.cycles();
    assert!((1..=3).contains(&cycles), "{cycles} sessions in 300 ms");
}

/// A replica whose Lease renewal is older than the renew deadline decides nothing, whatever the
/// elector last said.
#[tokio::test]
async fn a_leader_with_a_stale_lease_decides_nothing() {
    let (_leader_tx, leader_rx) = watch::channel(true);
    let fence = crate::leader::Fence::elected();
    let mut f = fixture(Box::new(FencedLeader {
        elected: leader_rx,
        fence: fence.clone(),
    }));
    assert_eq!(f.scheduler.run_cycle().await, CycleOutcome::Standby);
    fence.hold_until(tokio::time::Instant::now() + Duration::from_secs(10));
    assert_eq!(ran(&f.scheduler.run_cycle().await).binds, 2);
}

fn job_figures(ns: &str, name: &str, unschedulable: i32) -> engine::framework::JobMetrics {
    engine::framework::JobMetrics::labelled(
        ns,
        name,
        "q",
        Some(Timestamp::UNIX_EPOCH),
        engine::framework::JobFigures {
            unschedule_task_count: Some(unschedulable),
            ..Default::default()
        },
    )
}

fn gauge(metrics: &Metrics, family: &str, label: &str) -> Option<String> {
    metrics
        .encode_text()
        .lines()
        .find(|l| l.starts_with(family) && l.contains(label))
        .map(|l| l.rsplit(' ').next().unwrap_or_default().to_string())
}

/// Unchanged job figures are not set again, changed ones are, and a series two same-named jobs
/// share comes back for the one that stays when the other leaves.
#[test]
fn job_series_follow_changes_and_shared_names() {
    let metrics = Metrics::new();
    let mut seen = report::SeenSeries::default();
    let now = Timestamp::UNIX_EPOCH;
    let mut d = Decisions {
        job_metrics: vec![
            job_figures("a", "x", 0),
            job_figures("b", "x", 0),
            job_figures("a", "y", 2),
        ],
        ..Decisions::default()
    };
    report::record_decisions(&metrics, &d, &mut seen, now);
    let series = |job: &str| gauge(&metrics, "volcano_unschedule_task_count", job);
    assert_eq!(series("job_id=\"y\"").as_deref(), Some("2"));

    // The same figures again: left alone; a changed figure is set.
    d.job_metrics[2] = job_figures("a", "y", 1);
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series("job_id=\"y\"").as_deref(), Some("1"));
    assert_eq!(series("job_id=\"x\"").as_deref(), Some("0"));

    // b/x leaves: the name-only series goes with it, and is set again for a/x next session.
    d.job_metrics.retain(|m| m.uid() != "b/x");
    report::record_decisions(&metrics, &d, &mut seen, now);
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series("job_id=\"x\"").as_deref(), Some("0"));
    let start = |ns: &str| {
        gauge(
            &metrics,
            "volcano_e2e_job_scheduling_start_time",
            &format!("job_namespace=\"{ns}\""),
        )
    };
    assert!(start("a").is_some());
    assert!(
        start("b").is_none(),
        "the series of a job that left are deleted"
    );
}

/// A job reported again with the very spec it was last reported with is found by that spec
/// alone: its changed figures are still set. A new version of its PodGroup replaces what is
/// kept for it (one entry per job), and when the job leaves its series go.
#[test]
fn job_series_kept_by_spec_follow_figures_and_versions() {
    let metrics = Metrics::new();
    let mut seen = report::SeenSeries::default();
    let now = Timestamp::UNIX_EPOCH;
    let series =
        |metrics: &Metrics| gauge(metrics, "volcano_unschedule_task_count", "job_id=\"y\"");
    let first = job_figures("a", "y", 2);
    let mut d = Decisions {
        job_metrics: vec![first.clone()],
        ..Decisions::default()
    };
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series(&metrics).as_deref(), Some("2"));

    // The same spec, another figure: set.
    d.job_metrics[0].figures.unschedule_task_count = Some(1);
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series(&metrics).as_deref(), Some("1"));
    assert_eq!(seen.tracked(), (1, 1));

    // A new version of the PodGroup with the same labels and figures, then with others.
    d.job_metrics[0] = job_figures("a", "y", 1);
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series(&metrics).as_deref(), Some("1"));
    assert_eq!(seen.tracked(), (1, 1));
    d.job_metrics[0] = job_figures("a", "y", 3);
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series(&metrics).as_deref(), Some("3"));
    assert_eq!(seen.tracked(), (1, 1));
    // And again the first spec's figures under its newest spec: found by address.
    d.job_metrics[0].figures.unschedule_task_count = Some(0);
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(series(&metrics).as_deref(), Some("0"));

    d.job_metrics.clear();
    report::record_decisions(&metrics, &d, &mut seen, now);
    assert_eq!(
        series(&metrics),
        None,
        "the series of a job that left are deleted"
    );
    assert_eq!(seen.tracked(), (0, 0));
    drop(first);
}

#[test]
fn the_plugins_that_call_out_are_named_as_the_registry_names_them() {
    assert_eq!(session_thread::CALLS_OUT, [plugins::extender::NAME]);
    let known = plugins::known_plugins();
    assert!(session_thread::CALLS_OUT.iter().all(|n| known.contains(n)));
}

/// A Running pod of another scheduler on `n1`.
fn foreign_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedulerName": "default-scheduler", "nodeName": "n1",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Running"}
    }))
    .expect("pod")
}

/// Runs the fixture's scheduler (a 10 s period, so every session after the first is an early
/// one) while other schedulers' pods come and go every 10 ms, each deletion announced as
/// freed capacity; with `ours_after`, a pod of ours arrives after that many deletions.
/// Returns the sessions run and the binds written.
async fn sessions_under_foreign_churn(ours_after: Option<usize>) -> (u64, usize) {
    let (_leader_tx, leader_rx) = watch::channel(true);
    let mut f = fixture(Box::new(leader_rx));
    f.scheduler.period = Duration::from_secs(10);
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shared = f.shared.clone();
    let churn = tokio::spawn(async move {
        // The first session binds both pods of ours; nothing of ours waits after it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        for i in 0..20 {
            let name = format!("other-{i}");
            let freed = {
                let mut state = shared.lock();
                state.upsert_pod(foreign_pod(&name));
                state.delete_pod("ns", &name)
            };
            assert!(freed, "a deleted pod that held a node frees capacity");
            shared.work.notify_one();
            if ours_after == Some(i) {
                assert!(shared.lock().upsert_pod(pending_pod("c")));
                shared.work.notify_one();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = shutdown_tx.send(true);
    });
    tokio::time::timeout(Duration::from_secs(5), f.scheduler.run(shutdown_rx))
        .await
        .expect("ends on shutdown")
        .expect("runs");
    churn.await.expect("churn");
    (f.scheduler.cycles(), f.sink.binds().len())
}

/// Freed capacity starts a session early only while something waits for a decision: other
/// schedulers' pods deleted while nothing of ours waits start none (one session per deletion
/// would be ~20); a pod of ours arriving among them starts one.
#[tokio::test]
async fn freed_capacity_starts_no_early_session_while_nothing_waits() {
    let (sessions, binds) = sessions_under_foreign_churn(None).await;
    assert_eq!((sessions, binds), (1, 2));
    let (sessions, binds) = sessions_under_foreign_churn(Some(5)).await;
    assert_eq!(binds, 3, "the pod of ours is bound early");
    // The early session for the pod of ours; the deletions after it start none.
    assert_eq!(sessions, 2);
}
