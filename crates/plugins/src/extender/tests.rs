//! Volcano's extender tests (extender_test.go: the interest filter, the answer cap) and the
//! per-verb rules of spec §7.4, through a session whose HTTP calls go to a scripted caller.
//! The real HTTP client is tested in the cluster crate, and against a real HTTP extender in the
//! e2e suite.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use engine::conf::{ArgValue, Arguments, PluginOption};
use engine::framework::{CallError, HttpCaller, Session, SessionOptions};
use serde_json::json;

use super::*;
use crate::testutil::{StateLookup, TestCluster, conf, pod, test_now};

/// Answers by verb (the URL's last segment); records every call.
#[derive(Default)]
struct Script {
    answers: BTreeMap<String, Result<Value, CallError>>,
    calls: Mutex<Vec<(String, Value)>>,
}

impl HttpCaller for Script {
    fn post_json(
        &self,
        url: &str,
        body: &[u8],
        _timeout: Duration,
        read_body: bool,
        _max: usize,
    ) -> Result<Vec<u8>, CallError> {
        let verb = url.rsplit('/').next().unwrap_or_default().to_string();
        let request: Value = serde_json::from_slice(body).expect("JSON request");
        self.calls.lock().unwrap().push((verb.clone(), request));
        match self.answers.get(&verb) {
            Some(Ok(v)) if read_body => Ok(serde_json::to_vec(v).unwrap()),
            Some(Ok(_)) => Ok(Vec::new()),
            Some(Err(e)) => Err(e.clone()),
            None => Err(CallError {
                message: format!("{url}: status code 404"),
                unreachable: false,
            }),
        }
    }
}

impl Script {
    fn answer(mut self, verb: &str, v: Value) -> Self {
        self.answers.insert(verb.into(), Ok(v));
        self
    }
    fn fail(mut self, verb: &str, unreachable: bool) -> Self {
        let e = CallError {
            message: format!("{verb} failed"),
            unreachable,
        };
        self.answers.insert(verb.into(), Err(e));
        self
    }
    fn verbs_called(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(v, _)| v.clone())
            .collect()
    }
}

fn text(s: &str) -> ArgValue {
    ArgValue::Str(s.into())
}

fn cluster() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "4", "memory": "8Gi", "pods": "10"}));
    c.node("n2", json!({"cpu": "4", "memory": "8Gi", "pods": "10"}));
    c.pod(pod("ns", "p", None, "Pending", None, json!({"cpu": "1"})));
    c.pod(pod(
        "ns",
        "gpu",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "nvidia.com/gpu": "1"}),
    ));
    c
}

fn session(c: &TestCluster, args: &[(&str, ArgValue)], script: Arc<Script>) -> Session {
    let mut pairs = vec![("extender.urlPrefix", text("http://extender/"))];
    pairs.extend(args.iter().cloned());
    let option = PluginOption::new(NAME).with_arguments(Arguments::from_pairs(&pairs));
    let options = SessionOptions {
        http: Some(script),
        ..SessionOptions::default()
    };
    Session::open(
        &c.state.snapshot(),
        Arc::new(conf(vec![vec![option]])),
        &crate::registry(),
        options,
        test_now(),
        "uid".into(),
    )
}

fn container(res: Value) -> Value {
    json!({"spec": {"containers": [{"name": "c", "resources": res}]}})
}

/// TestIsInterested / TestHasManagedResources.
#[test]
fn interest_follows_managed_resources_in_requests_limits_and_init_containers() {
    let p = |v: Value| -> k8s_openapi::api::core::v1::Pod { serde_json::from_value(v).unwrap() };
    let gpu = vec!["nvidia.com/gpu".to_string()];
    let plain = p(container(json!({"requests": {"cpu": "1"}})));
    assert!(interested(&plain, &[]));
    assert!(!interested(&plain, &gpu));
    assert!(interested(
        &p(container(json!({"requests": {"nvidia.com/gpu": "1"}}))),
        &gpu
    ));
    assert!(interested(
        &p(container(json!({"limits": {"nvidia.com/gpu": "1"}}))),
        &gpu
    ));
    let init = json!({"spec": {"containers": [{"name": "c"}],
        "initContainers": [{"name": "i", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}});
    assert!(interested(&p(init), &gpu));
    let two = vec!["example.com/foo".to_string(), "nvidia.com/gpu".to_string()];
    assert!(interested(
        &p(container(json!({"limits": {"nvidia.com/gpu": "1"}}))),
        &two
    ));
    assert!(!interested(&p(json!({"spec": {"containers": []}})), &gpu));
    assert!(!interested(&p(container(json!({}))), &gpu));
}

#[test]
fn arguments_are_read_with_volcano_defaults() {
    let mut w = Vec::new();
    let a = ExtenderArgs::read(&Arguments::new(), &mut w);
    assert_eq!(a.timeout, DEFAULT_TIMEOUT);
    assert!(!a.ignorable && a.managed_resources.is_empty());
    assert!(w.iter().any(|w| w.key == "extender.urlPrefix"));
    let mut w = Vec::new();
    let a = ExtenderArgs::read(
        &Arguments::from_pairs(&[
            ("extender.urlPrefix", text("http://x")),
            ("extender.httpTimeout", text("250ms")),
            ("extender.ignorable", ArgValue::Bool(true)),
            ("extender.predicateVerb", text("filter")),
            (
                "extender.managedResources",
                ArgValue::List(vec![text("nvidia.com/gpu")]),
            ),
        ]),
        &mut w,
    );
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(a.timeout, Duration::from_millis(250));
    assert!(a.ignorable);
    assert_eq!(a.verbs.predicate, "filter");
    assert_eq!(a.managed_resources, ["nvidia.com/gpu"]);
    // A scalar list and a bad timeout are reported; the defaults apply.
    let mut w = Vec::new();
    let a = ExtenderArgs::read(
        &Arguments::from_pairs(&[
            ("extender.urlPrefix", text("http://x")),
            ("extender.httpTimeout", ArgValue::Int(5)),
            ("extender.managedResources", text("a,b")),
        ]),
        &mut w,
    );
    assert_eq!((a.timeout, a.managed_resources.len()), (DEFAULT_TIMEOUT, 0));
    assert_eq!(w.len(), 2, "{w:?}");
}

#[test]
fn predicate_passes_on_empty_status_fails_with_the_extenders_reason() {
    let script =
        Arc::new(Script::default().answer("filter", json!({"status": "no GPU left", "code": 0})));
    let c = cluster();
    let ssn = session(
        &c,
        &[("extender.predicateVerb", text("filter"))],
        script.clone(),
    );
    let (p, n1) = (ssn.state.task_by_key("ns/p"), ssn.state.node_by_key("n1"));
    let e = ssn.predicate(p, n1).expect_err("rejected");
    let s = &e.statuses[0];
    // Code 0 becomes Error (1).
    assert_eq!(
        (s.code, &*s.reason, &*s.plugin),
        (StatusCode::Error, "no GPU left", NAME)
    );
    let (verb, request) = script.calls.lock().unwrap()[0].clone();
    assert_eq!(verb, "filter");
    assert_eq!(request["task"]["Name"], "p");
    assert_eq!(request["task"]["Status"], 1);
    assert_eq!(request["task"]["Resreq"]["MilliCPU"], 1000.0);
    assert_eq!(request["node"]["Name"], "n1");
    assert_eq!(request["node"]["Node"]["metadata"]["name"], "n1");

    let script = Arc::new(Script::default().answer("filter", json!({"status": "", "code": 3})));
    let mut ssn = session(
        &c,
        &[("extender.predicateVerb", text("filter"))],
        script.clone(),
    );
    // The node search of a task encodes it once (pre_predicate) and sends it with every node.
    ssn.pre_predicate(p).expect("pre-predicate");
    assert!(
        ssn.predicate(p, n1).is_ok(),
        "an empty status passes whatever the code"
    );
    let n2 = ssn.state.node_by_key("n2");
    assert!(ssn.predicate(p, n2).is_ok());
    let sent = script.calls.lock().unwrap().clone();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|(_, r)| r["task"]["Name"] == "p"));
    assert_eq!(sent[1].1["node"]["Name"], "n2");
}

#[test]
fn failures_follow_ignorable_and_unreachable_extenders_are_asked_once() {
    let c = cluster();
    for ignorable in [false, true] {
        let script = Arc::new(
            Script::default()
                .fail("filter", true)
                .fail("enqueueable", false),
        );
        let ssn = session(
            &c,
            &[
                ("extender.predicateVerb", text("filter")),
                ("extender.jobEnqueueableVerb", text("enqueueable")),
                ("extender.ignorable", ArgValue::Bool(ignorable)),
            ],
            script.clone(),
        );
        let p = ssn.state.task_by_key("ns/p");
        for n in ["n1", "n2"] {
            let r = ssn.predicate(p, ssn.state.node_by_key(n));
            assert_eq!(r.is_ok(), ignorable, "{n}");
        }
        // The unreachable extender was asked once: the second node failed at once.
        assert_eq!(script.verbs_called(), ["filter"]);
        let job = ssn.state.job_ids().next().expect("a job");
        // The vote: Permit when ignorable, Reject otherwise.
        assert_eq!(ssn.job_enqueueable(job), ignorable);
    }
}

#[test]
fn session_open_failure_registers_nothing_unless_ignorable() {
    let c = cluster();
    let script = Arc::new(Script::default().fail("open", false));
    let args = [
        ("extender.onSessionOpenVerb", text("open")),
        ("extender.predicateVerb", text("filter")),
    ];
    let ssn = session(&c, &args, script.clone());
    let p = ssn.state.task_by_key("ns/p");
    // Not registered: the predicate is not called at all.
    assert!(ssn.predicate(p, ssn.state.node_by_key("n1")).is_ok());
    assert_eq!(script.verbs_called(), ["open"]);
    let open = script.calls.lock().unwrap()[0].1.clone();
    assert!(open["Nodes"]["n1"].is_object() && open["Jobs"].is_object());
}

#[test]
fn managed_resources_limit_task_verbs_and_prioritize_adds_raw_scores() {
    let c = cluster();
    let script = Arc::new(Script::default().answer(
        "prioritize",
        json!({"nodeScore": {"n1": 3.5, "n2": 80}, "errorMessage": ""}),
    ));
    let ssn = session(
        &c,
        &[
            ("extender.prioritizeVerb", text("prioritize")),
            (
                "extender.managedResources",
                ArgValue::List(vec![text("nvidia.com/gpu")]),
            ),
        ],
        script.clone(),
    );
    let nodes = [ssn.state.node_by_key("n1"), ssn.state.node_by_key("n2")];
    let plain = ssn.state.task_by_key("ns/p");
    assert_eq!(ssn.batch_node_order(plain, &nodes), Ok(vec![0.0, 0.0]));
    assert!(
        script.verbs_called().is_empty(),
        "a task without the resource is not sent"
    );
    let gpu = ssn.state.task_by_key("ns/gpu");
    assert_eq!(ssn.batch_node_order(gpu, &nodes), Ok(vec![3.5, 80.0]));
    // An error message fails the scoring round.
    let script = Arc::new(Script::default().answer(
        "prioritize",
        json!({"nodeScore": null, "errorMessage": "busy"}),
    ));
    let ssn = session(
        &c,
        &[("extender.prioritizeVerb", text("prioritize"))],
        script,
    );
    assert_eq!(ssn.batch_node_order(plain, &nodes), Err("busy".to_string()));
}

#[test]
fn overused_and_job_ready_fall_back_as_volcano_does() {
    let c = cluster();
    for (ignorable, overused, ready) in [(false, true, true), (true, false, false)] {
        let script = Arc::new(
            Script::default()
                .fail("overused", false)
                .fail("ready", false),
        );
        let ssn = session(
            &c,
            &[
                ("extender.queueOverusedVerb", text("overused")),
                ("extender.jobReadyVerb", text("ready")),
                ("extender.ignorable", ArgValue::Bool(ignorable)),
            ],
            script,
        );
        let q = ssn.state.queue_id("default").expect("queue");
        let job = ssn.state.job_ids().next().expect("a job");
        assert_eq!(ssn.overused(q), overused);
        assert_eq!(ssn.job_ready(job), ready);
    }
}
