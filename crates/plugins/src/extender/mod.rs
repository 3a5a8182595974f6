//! `extender`: every extension point delegated to an HTTP service (spec/plugins-more.md §7).
//!
//! Each configured verb is a path under `extender.urlPrefix`; the plugin POSTs Volcano's JSON
//! request to it ([`wire`]) and reads Volcano's answer. The call itself is made by the I/O layer
//! ([`engine::framework::HttpCaller`], from the session's options) within
//! `extender.httpTimeout` (default 1 s); an answer is read up to 10 MiB. A failed call is
//! handled by `extender.ignorable`, verb by verb as Volcano does (§7.4). Tasks outside
//! `extender.managedResources` (when set) are not sent for the task-level verbs.
//!
//! Difference on purpose: once a call of a session finds the extender unreachable (refused,
//! down, or no answer within the timeout), the session's later calls fail at once with the same
//! error instead of each waiting out the timeout again; the outcome is the one each call would
//! have had, and a session waits at most one timeout per extender, not one per node and task.

#[cfg(test)]
mod tests;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::conf::{ArgValue, ArgWarning, Arguments, parse_go_duration};
use engine::framework::{
    ABSTAIN, CallError, ExtensionPoints, HttpCaller, PERMIT, Plugin, REJECT, SessionState,
};
use engine::model::{FitError, FitStatus, JobId, NodeId, QueueId, StatusCode, TaskId};
use serde_json::{Value, json};

/// Registered plugin name.
pub const NAME: &str = "extender";
/// The default `extender.httpTimeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
/// The largest answer read (Volcano's `10<<20`).
pub const MAX_ANSWER_BYTES: usize = 10 << 20;

/// The verbs, by argument key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verbs {
    pub on_session_open: String,
    pub on_session_close: String,
    pub predicate: String,
    pub prioritize: String,
    pub preemptable: String,
    pub reclaimable: String,
    pub queue_overused: String,
    pub job_enqueueable: String,
    pub job_enqueued: String,
    pub job_ready: String,
    pub allocate_func: String,
    pub deallocate_func: String,
}

/// The plugin's arguments (§7.1).
#[derive(Clone, Debug, PartialEq)]
pub struct ExtenderArgs {
    pub url_prefix: String,
    pub timeout: Duration,
    pub verbs: Verbs,
    pub ignorable: bool,
    pub managed_resources: Vec<String>,
}

/// The problems [`ExtenderArgs::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    ExtenderArgs::read(args, &mut warnings);
    warnings
}

fn verb(args: &Arguments, key: &str, warnings: &mut Vec<ArgWarning>) -> String {
    let mut v = String::new();
    if let Err(e) = args.get_string(key, &mut v) {
        warnings.push(ArgWarning::new(
            key,
            format!("{}; the verb is not called", e.message),
        ));
    }
    v
}

impl ExtenderArgs {
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        let key = |k: &str| format!("extender.{k}");
        let mut url_prefix = String::new();
        if let Err(e) = args.get_string(&key("urlPrefix"), &mut url_prefix) {
            warnings.push(ArgWarning::new(key("urlPrefix"), e.message));
        }
        let timeout = match args.get(&key("httpTimeout")) {
            None => DEFAULT_TIMEOUT,
            Some(v) => match v.as_str().and_then(parse_go_duration) {
                Some(nanos) if nanos > 0 => Duration::from_nanos(nanos as u64),
                _ => {
                    warnings.push(ArgWarning::new(
                        key("httpTimeout"),
                        format!("{} is not a positive Go duration; 1s is used", v.describe()),
                    ));
                    DEFAULT_TIMEOUT
                }
            },
        };
        let mut ignorable = false;
        if let Err(e) = args.get_bool(&key("ignorable"), &mut ignorable) {
            warnings.push(ArgWarning::new(
                key("ignorable"),
                format!("{}; false is used", e.message),
            ));
        }
        let managed_resources = match args.get(&key("managedResources")) {
            None | Some(ArgValue::Null) => Vec::new(),
            Some(v) => {
                let names: Option<Vec<String>> = v
                    .as_list()
                    .and_then(|items| items.iter().map(|i| i.as_str().map(String::from)).collect());
                names.unwrap_or_else(|| {
                    // Volcano exits on this decoding error; here the filter is off (every task
                    // is sent) and the problem is reported.
                    warnings.push(ArgWarning::new(
                        key("managedResources"),
                        format!(
                            "expected a list of resource names, found {}; every task is sent",
                            v.describe()
                        ),
                    ));
                    Vec::new()
                })
            }
        };
        if url_prefix.is_empty() {
            warnings.push(ArgWarning::new(
                key("urlPrefix"),
                "empty: every call fails (as in Volcano)",
            ));
        }
        let mut v = |k: &str| verb(args, &key(k), warnings);
        let verbs = Verbs {
            on_session_open: v("onSessionOpenVerb"),
            on_session_close: v("onSessionCloseVerb"),
            predicate: v("predicateVerb"),
            prioritize: v("prioritizeVerb"),
            preemptable: v("preemptableVerb"),
            reclaimable: v("reclaimableVerb"),
            queue_overused: v("queueOverusedVerb"),
            job_enqueueable: v("jobEnqueueableVerb"),
            job_enqueued: v("jobEnqueuedVerb"),
            job_ready: v("jobReadyVerb"),
            allocate_func: v("allocateFuncVerb"),
            deallocate_func: v("deallocateFuncVerb"),
        };
        ExtenderArgs {
            url_prefix,
            timeout,
            verbs,
            ignorable,
            managed_resources,
        }
    }
}

pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(ExtenderPlugin {
        args: ExtenderArgs::read(args, &mut Vec::new()),
        http: None,
        unreachable: Mutex::new(None),
        points: ExtensionPoints::NONE,
        searching: None,
    })
}

pub struct ExtenderPlugin {
    args: ExtenderArgs,
    http: Option<Arc<dyn HttpCaller>>,
    /// Set by the first call of the session that found the extender unreachable.
    unreachable: Mutex<Option<String>>,
    points: ExtensionPoints,
    /// The JSON of the task whose node search is under way (set once per task by
    /// `pre_predicate`), so that a predicate call per node does not encode the pod again.
    searching: Option<(TaskId, Value)>,
}

/// Does any container or init container list a managed resource in its requests or limits?
pub fn interested(pod: &k8s_openapi::api::core::v1::Pod, managed: &[String]) -> bool {
    if managed.is_empty() {
        return true;
    }
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref())
        .any(|r| {
            [r.requests.as_ref(), r.limits.as_ref()]
                .into_iter()
                .flatten()
                .any(|list| managed.iter().any(|m| list.contains_key(m)))
        })
}

/// Volcano's status codes by number; anything else is an error.
fn status_code(code: i64) -> StatusCode {
    match code {
        0 | 1 => StatusCode::Error,
        2 => StatusCode::Unschedulable,
        3 => StatusCode::UnschedulableAndUnresolvable,
        4 => StatusCode::Wait,
        5 => StatusCode::Skip,
        _ => StatusCode::Error,
    }
}

impl ExtenderPlugin {
    /// The task's JSON: the cached one during its node search, else encoded now.
    fn task_json(&self, ssn: &SessionState, task: TaskId) -> std::borrow::Cow<'_, Value> {
        match &self.searching {
            Some((t, json)) if *t == task => std::borrow::Cow::Borrowed(json),
            _ => std::borrow::Cow::Owned(wire::task(ssn, task)),
        }
    }

    fn is_interested(&self, ssn: &SessionState, task: TaskId) -> bool {
        interested(&ssn.task(task).spec.pod, &self.args.managed_resources)
    }

    /// POSTs `request` to `verb`; the decoded answer (`Value::Null` when `read` is false).
    fn call(
        &self,
        verb: &str,
        request: &impl serde::Serialize,
        read: bool,
    ) -> Result<Value, String> {
        let earlier = self
            .unreachable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(e) = earlier {
            return Err(e);
        }
        let Some(http) = &self.http else {
            return Err(format!("{verb}: no HTTP access in this session"));
        };
        let url = format!("{}/{verb}", self.args.url_prefix.trim_end_matches('/'));
        let body = serde_json::to_vec(request).map_err(|e| format!("{verb}: encoding: {e}"))?;
        match http.post_json(&url, &body, self.args.timeout, read, MAX_ANSWER_BYTES) {
            Ok(answer) if read => serde_json::from_slice(&answer)
                .map_err(|e| format!("{verb}: decoding the answer from {url}: {e}")),
            Ok(_) => Ok(Value::Null),
            Err(CallError {
                message,
                unreachable,
            }) => {
                if unreachable {
                    tracing::warn!(plugin = NAME, error = %message, "extender unreachable; its other calls in this session fail at once");
                    *self.unreachable.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(message.clone());
                }
                Err(message)
            }
        }
    }

    fn victims(
        &self,
        ssn: &SessionState,
        verb: &str,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        if !self.is_interested(ssn, preemptor) {
            return (Vec::new(), ABSTAIN);
        }
        let request = json!({
            "evictor": wire::task(ssn, preemptor),
            "evictees": candidates.iter().map(|t| wire::task(ssn, *t)).collect::<Vec<_>>(),
        });
        match self.call(verb, &request, true) {
            Ok(answer) => {
                let uids: Vec<&str> = answer["victims"]
                    .as_array()
                    .map(|v| v.iter().filter_map(|t| t["UID"].as_str()).collect())
                    .unwrap_or_default();
                let victims = candidates
                    .iter()
                    .copied()
                    .filter(|t| uids.contains(&ssn.task(*t).spec.uid.as_str()))
                    .collect();
                let vote = answer["status"].as_i64().unwrap_or(0) as i32;
                (victims, vote)
            }
            Err(e) => {
                tracing::warn!(plugin = NAME, verb, error = %e, "extender call failed");
                (
                    Vec::new(),
                    if self.args.ignorable { PERMIT } else { REJECT },
                )
            }
        }
    }

    fn handler(&self, ssn: &SessionState, verb: &str, task: TaskId) -> Result<(), String> {
        if verb.is_empty() || !self.is_interested(ssn, task) {
            return Ok(());
        }
        let request = json!({"task": wire::task(ssn, task)});
        match self.call(verb, &request, true) {
            Ok(answer) => match answer["errorMessage"].as_str() {
                Some(m) if !m.is_empty() => Err(m.to_string()),
                _ => Ok(()),
            },
            Err(e) if self.args.ignorable => {
                tracing::warn!(plugin = NAME, verb, error = %e, "extender call failed; ignored");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

impl Plugin for ExtenderPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.http = ssn.options().http.clone();
        *self
            .unreachable
            .get_mut()
            .unwrap_or_else(|p| p.into_inner()) = None;
        self.points = ExtensionPoints::NONE;
        self.searching = None;
        let v = &self.args.verbs;
        if !v.on_session_open.is_empty() {
            let request = wire::session_open(ssn);
            if let Err(e) = self.call(&v.on_session_open, &request, false) {
                tracing::warn!(plugin = NAME, error = %e, "extender session open failed");
                if !self.args.ignorable {
                    // Volcano returns from its open hook: nothing else is registered.
                    return;
                }
            }
        }
        let mut points = ExtensionPoints::EVENT_HANDLER;
        for (verb, point) in [
            // pre_predicate only caches the task's JSON for the predicate calls that follow.
            (
                &v.predicate,
                ExtensionPoints::PREDICATE | ExtensionPoints::PRE_PREDICATE,
            ),
            (&v.prioritize, ExtensionPoints::BATCH_NODE_ORDER),
            (&v.preemptable, ExtensionPoints::PREEMPTABLE),
            (&v.reclaimable, ExtensionPoints::RECLAIMABLE),
            (&v.queue_overused, ExtensionPoints::OVERUSED),
            (&v.job_enqueueable, ExtensionPoints::JOB_ENQUEUEABLE),
            (&v.job_enqueued, ExtensionPoints::JOB_ENQUEUED),
            (&v.job_ready, ExtensionPoints::JOB_READY),
        ] {
            if !verb.is_empty() {
                points = points | point;
            }
        }
        self.points = points;
    }

    fn on_session_close(&mut self, _ssn: &mut SessionState) {
        let verb = self.args.verbs.on_session_close.clone();
        if !verb.is_empty()
            && let Err(e) = self.call(&verb, &json!({}), false)
        {
            tracing::warn!(plugin = NAME, error = %e, "extender session close failed");
        }
    }

    fn extension_points(&self) -> ExtensionPoints {
        self.points
    }

    /// Each verb configured adds its point; the event handlers are always there.
    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::EVENT_HANDLER
            | ExtensionPoints::PREDICATE
            | ExtensionPoints::PRE_PREDICATE
            | ExtensionPoints::BATCH_NODE_ORDER
            | ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::OVERUSED
            | ExtensionPoints::JOB_ENQUEUEABLE
            | ExtensionPoints::JOB_ENQUEUED
            | ExtensionPoints::JOB_READY
    }

    fn pre_predicate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        self.searching = Some((task, wire::task(ssn, task)));
        Ok(())
    }

    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        if !self.is_interested(ssn, task) {
            return Ok(());
        }
        #[derive(serde::Serialize)]
        struct Request<'a> {
            task: &'a Value,
            node: Value,
        }
        let task_json = self.task_json(ssn, task);
        let request = Request {
            task: &task_json,
            node: wire::node(ssn, node),
        };
        match self.call(&self.args.verbs.predicate, &request, true) {
            Ok(answer) => match answer["status"].as_str() {
                None | Some("") => Ok(()),
                Some(reason) => Err(FitError::new(FitStatus::new(
                    status_code(answer["code"].as_i64().unwrap_or(0)),
                    reason.to_owned(),
                    NAME,
                ))),
            },
            Err(_) if self.args.ignorable => Ok(()),
            Err(e) => Err(FitError::error(e, NAME)),
        }
    }

    fn batch_node_order(
        &self,
        ssn: &SessionState,
        task: TaskId,
        nodes: &[NodeId],
    ) -> Result<Vec<f64>, String> {
        if !self.is_interested(ssn, task) {
            return Ok(Vec::new());
        }
        let request = json!({
            "task": self.task_json(ssn, task).into_owned(),
            "nodes": nodes.iter().map(|n| wire::node(ssn, *n)).collect::<Vec<_>>(),
        });
        match self.call(&self.args.verbs.prioritize, &request, true) {
            Ok(answer) => {
                let message = answer["errorMessage"].as_str().unwrap_or("");
                match answer["nodeScore"].as_object() {
                    Some(scores) if message.is_empty() => Ok(nodes
                        .iter()
                        .map(|n| {
                            scores
                                .get(ssn.node(*n).name())
                                .and_then(Value::as_f64)
                                .unwrap_or(0.0)
                        })
                        .collect()),
                    _ => Err(message.to_string()),
                }
            }
            Err(_) if self.args.ignorable => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    fn preemptable(
        &self,
        ssn: &SessionState,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        self.victims(ssn, &self.args.verbs.preemptable, preemptor, candidates)
    }

    fn reclaimable(
        &self,
        ssn: &SessionState,
        reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        self.victims(ssn, &self.args.verbs.reclaimable, reclaimer, candidates)
    }

    fn overused(&self, ssn: &SessionState, queue: QueueId) -> bool {
        let request = json!({"queue": wire::queue(ssn, queue)});
        match self.call(&self.args.verbs.queue_overused, &request, true) {
            Ok(answer) => answer["overused"].as_bool().unwrap_or(false),
            Err(_) => !self.args.ignorable,
        }
    }

    fn job_enqueueable(&self, ssn: &SessionState, job: JobId) -> i32 {
        let request = json!({"job": wire::job(ssn, job)});
        match self.call(&self.args.verbs.job_enqueueable, &request, true) {
            Ok(answer) => answer["status"].as_i64().unwrap_or(0) as i32,
            Err(_) if self.args.ignorable => PERMIT,
            Err(_) => REJECT,
        }
    }

    fn job_enqueued(&mut self, ssn: &SessionState, job: JobId) {
        let request = json!({"job": wire::job(ssn, job)});
        if let Err(e) = self.call(&self.args.verbs.job_enqueued, &request, true) {
            tracing::warn!(plugin = NAME, error = %e, "extender job-enqueued call failed");
        }
    }

    fn job_ready(&self, ssn: &SessionState, job: JobId) -> bool {
        let request = json!({"job": wire::job(ssn, job)});
        match self.call(&self.args.verbs.job_ready, &request, true) {
            Ok(answer) => answer["status"].as_bool().unwrap_or(false),
            // Volcano's rule, counter-intuitive as it is: not ignorable ⇒ ready.
            Err(_) => !self.args.ignorable,
        }
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let verb = self.args.verbs.allocate_func.clone();
        self.handler(ssn, &verb, task)
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        let verb = self.args.verbs.deallocate_func.clone();
        if let Err(e) = self.handler(ssn, &verb, task) {
            tracing::warn!(plugin = NAME, error = %e, "extender deallocate call failed");
        }
    }
}
