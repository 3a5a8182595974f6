//! What a cycle reports besides its writes: metrics of the session, runtime invariant
//! violations, and events for plugins the configuration names but this build lacks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use engine::framework::{Decisions, Event, EventType, ObjectRef};
use engine::state::invariants::Violation;
use k8s_openapi::jiff::Timestamp;

use crate::metrics::{JobLabels, Metrics, TaskStage};
use crate::shared::Shared;

/// Queues and jobs reported by the previous session, to delete the series of those that are gone.
#[derive(Default)]
pub(super) struct SeenSeries {
    queues: BTreeSet<String>,
    jobs: BTreeMap<String, (String, String, String)>,
}

/// Plugin timings, decision counters, the age of pods at assumption, and the job and queue
/// series of this session.
pub(super) fn session_metrics(
    metrics: &Metrics,
    shared: &Shared,
    decisions: &Decisions,
    seen: &mut SeenSeries,
    now: Timestamp,
) {
    for t in &decisions.plugin_timings {
        metrics.observe_plugin(&t.plugin, t.on_session, t.duration);
    }
    metrics.record_decisions(decisions);
    job_and_queue_lifecycle(metrics, decisions, seen, now);
    let state = shared.lock();
    for b in &decisions.binds {
        if let Some(created) = state.pod(&b.pod).and_then(|p| p.creation)
            && let Ok(age) = Duration::try_from(now.duration_since(created))
        {
            metrics.observe_task_stage(TaskStage::Assumed, age);
        }
    }
}

/// Job e2e gauges for this session, and removal of the series of queues and jobs that left the
/// cluster (Volcano does it on informer deletes; we do it when a session no longer sees them).
fn job_and_queue_lifecycle(
    metrics: &Metrics,
    d: &Decisions,
    seen: &mut SeenSeries,
    now: Timestamp,
) {
    for gone in seen
        .queues
        .iter()
        .filter(|q| !d.queue_metrics.contains_key(*q))
    {
        metrics.remove_queue(gone);
    }
    seen.queues = d.queue_metrics.keys().cloned().collect();
    for (uid, (ns, name, queue)) in &seen.jobs {
        if !d.job_metrics.contains_key(uid) {
            metrics.remove_job(JobLabels {
                namespace: ns,
                name,
                queue,
            });
        }
    }
    seen.jobs.clear();
    for (uid, m) in &d.job_metrics {
        let labels = JobLabels {
            namespace: &m.namespace,
            name: &m.name,
            queue: &m.queue,
        };
        if let Some(created) = m.creation {
            metrics.set_job_start_time(labels, created);
            if m.placed > 0
                && let Ok(age) = Duration::try_from(now.duration_since(created))
            {
                metrics.job_task_allocated(labels, age, now);
            }
        }
        seen.jobs.insert(
            uid.clone(),
            (m.namespace.clone(), m.name.clone(), m.queue.clone()),
        );
    }
}

/// Logs and counts runtime invariant violations (docs/operations.md).
pub(super) fn violations(metrics: &Metrics, found: Vec<Violation>) {
    for v in found {
        tracing::error!(
            kind = v.kind.as_str(),
            subject = %v.subject,
            detail = %v.detail,
            "invariant violation"
        );
        metrics.invariant_violation(v.kind.as_str());
    }
}

/// One Warning event per plugin the configuration names but this build lacks, so that
/// `kubectl get events` shows why a policy the file asks for does not apply.
pub(super) fn skipped_plugin_events(
    object: &ObjectRef,
    file: Option<&Path>,
    skipped: &[String],
) -> Vec<Event> {
    let file = file.map_or_else(
        || "<embedded default>".to_string(),
        |p| p.display().to_string(),
    );
    skipped
        .iter()
        .map(|name| Event {
            object: object.clone(),
            type_: EventType::Warning,
            reason: "PluginSkipped".into(),
            message: format!(
                "{file}: plugin {name:?} is not provided by volcano-rs; it is skipped and the \
                 rest of the configuration runs (--strict-config refuses such a file)"
            ),
        })
        .collect()
}
