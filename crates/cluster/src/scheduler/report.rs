//! What a cycle reports besides its writes: metrics of the session, runtime invariant
//! violations, and events for plugins the configuration names but this build lacks.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

use engine::framework::{Decisions, Event, EventType, JobMetrics, ObjectRef};
use engine::state::invariants::Violation;
use k8s_openapi::jiff::Timestamp;

use crate::metrics::{JobLabels, Metrics, TaskStage};
use crate::shared::Shared;

/// Queues and jobs reported by the previous session, to delete the series of those that are
/// gone and to leave alone the series whose figures did not change.
#[derive(Default)]
pub(super) struct SeenSeries {
    queues: BTreeSet<String>,
    /// By job uid: the figures last reported (without the session's retry and placements).
    jobs: HashMap<String, SeenJob>,
}

struct SeenJob {
    last: JobMetrics,
    /// False once a series it shares (Volcano labels some by PodGroup name only) was
    /// deleted for another job: its figures are then set again.
    intact: bool,
}

/// The job's gauges would be set to what they hold.
fn same_series(last: &JobMetrics, m: &JobMetrics) -> bool {
    last.figures.unschedule_task_count == m.figures.unschedule_task_count
        && last.figures.share == m.figures.share
        && same_labels(last, m)
        && last.creation() == m.creation()
}

/// The same namespace, name and queue; a job's shared spec is compared by pointer first.
fn same_labels(last: &JobMetrics, m: &JobMetrics) -> bool {
    std::sync::Arc::ptr_eq(&last.job, &m.job)
        || (last.namespace(), last.name(), last.queue()) == (m.namespace(), m.name(), m.queue())
}

fn labels(m: &JobMetrics) -> JobLabels<'_> {
    JobLabels {
        namespace: m.namespace(),
        name: m.name(),
        queue: m.queue(),
    }
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
    record_decisions(metrics, decisions, seen, now);
    let state = shared.lock();
    for b in &decisions.binds {
        if let Some(created) = state.pod(&b.pod).and_then(|p| p.creation)
            && let Ok(age) = Duration::try_from(now.duration_since(created))
        {
            metrics.observe_task_stage(TaskStage::Assumed, age);
        }
    }
}

/// The session's decision metrics, and the job and queue series: set where they changed,
/// deleted where their job or queue left.
pub(super) fn record_decisions(
    metrics: &Metrics,
    decisions: &Decisions,
    seen: &mut SeenSeries,
    now: Timestamp,
) {
    metrics.record_decisions_with(decisions, |uid, m| {
        seen.jobs
            .get(uid)
            .is_some_and(|s| s.intact && same_series(&s.last, m))
    });
    job_and_queue_lifecycle(metrics, decisions, seen, now);
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
    let mut removed_names = BTreeSet::new();
    seen.jobs.retain(|uid, s| {
        let present = d.job_metrics.contains_key(uid);
        if !present {
            metrics.remove_job(labels(&s.last));
            removed_names.insert(s.last.name().to_string());
        }
        present
    });
    for (uid, m) in &d.job_metrics {
        let last = seen.jobs.get(uid);
        if !last.is_some_and(|s| s.intact && same_series(&s.last, m)) {
            if let Some(s) = last
                && !same_labels(&s.last, m)
            {
                metrics.remove_job(labels(&s.last));
                removed_names.insert(s.last.name().to_string());
            }
            if let Some(created) = m.creation() {
                metrics.set_job_start_time(labels(m), created);
            }
            let mut last = m.clone();
            last.figures.retried = false;
            last.figures.placed = 0;
            seen.jobs
                .insert(uid.clone(), SeenJob { last, intact: true });
        }
        if m.figures.placed > 0
            && let Some(created) = m.creation()
            && let Ok(age) = Duration::try_from(now.duration_since(created))
        {
            metrics.job_task_allocated(labels(m), age, now);
        }
    }
    if !removed_names.is_empty() {
        for s in seen.jobs.values_mut() {
            if removed_names.contains(s.last.name()) {
                s.intact = false;
            }
        }
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
