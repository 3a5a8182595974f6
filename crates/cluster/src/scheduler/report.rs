//! What a cycle reports besides its writes: metrics of the session, runtime invariant
//! violations, and events for plugins the configuration names but this build lacks.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use engine::framework::{Decisions, Event, EventType, JobMetrics, ObjectRef};
use engine::state::invariants::Violation;
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashMap;

use crate::metrics::{JobLabels, Metrics, TaskStage};
use crate::shared::Shared;

/// Queues and jobs reported by the previous session, to delete the series of those that are
/// gone and to leave alone the series whose figures did not change.
///
/// A session reports every job, so this is read once per job per session. The jobs are kept by
/// the address of the spec they were last reported with: a job whose PodGroup did not change
/// since is found by that address alone, without reading its uid (hashing and comparing every
/// job's uid was most of the loop thread's work among a thousand running jobs). The spec is
/// held, so the address cannot be reused while it is a key. Only a new job, or a new version
/// of a PodGroup, is looked up by uid.
#[derive(Default)]
pub(super) struct SeenSeries {
    queues: BTreeSet<String>,
    /// By the address of `SeenJob::last.job`: the figures last reported (without the
    /// session's retry and placements).
    jobs: FxHashMap<usize, SeenJob>,
    /// Job uid → its key in `jobs`.
    by_uid: FxHashMap<String, usize>,
    /// Counts sessions; a job reported in this one carries its number ([`SeenJob::reported_in`]).
    session: u64,
}

struct SeenJob {
    last: JobMetrics,
    /// False once a series it shares (Volcano labels some by PodGroup name only) was
    /// deleted for another job: its figures are then set again.
    intact: bool,
    /// The last session that reported the job: one that did not report it any more removes
    /// its series without looking every seen job up in the session's figures.
    reported_in: u64,
}

fn spec_key(m: &JobMetrics) -> usize {
    std::sync::Arc::as_ptr(&m.job) as usize
}

/// The job's gauges would be set to what they hold.
fn same_series(last: &JobMetrics, m: &JobMetrics) -> bool {
    same_figures(last, m) && same_labels(last, m) && last.creation() == m.creation()
}

fn same_figures(last: &JobMetrics, m: &JobMetrics) -> bool {
    last.figures.unschedule_task_count == m.figures.unschedule_task_count
        && last.figures.share == m.figures.share
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
    metrics.record_vgpu_cards(decisions.vgpu_cards.as_deref());
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
    seen.session += 1;
    let unchanged: Vec<bool> = decisions
        .job_metrics
        .iter()
        .map(|m| seen.mark_reported(m))
        .collect();
    metrics.record_decisions_with(decisions, |i| unchanged[i]);
    job_and_queue_lifecycle(metrics, decisions, seen, &unchanged, now);
}

impl SeenSeries {
    /// Marks the job as reported in this session; true when its series already hold these
    /// figures.
    fn mark_reported(&mut self, m: &JobMetrics) -> bool {
        let session = self.session;
        if let Some(s) = self.jobs.get_mut(&spec_key(m)) {
            // The very spec last reported: the same labels and creation time.
            s.reported_in = session;
            return s.intact && same_figures(&s.last, m);
        }
        let Some(&old_key) = self.by_uid.get(m.uid()) else {
            return false;
        };
        let Some(s) = self.jobs.get_mut(&old_key) else {
            return false;
        };
        s.reported_in = session;
        let same = s.intact && same_series(&s.last, m);
        // A new PodGroup version with the same labels: kept under its new spec, so the next
        // sessions find it by address.
        if same && let Some(mut s) = self.jobs.remove(&old_key) {
            s.last.job = m.job.clone();
            self.jobs.insert(spec_key(m), s);
            self.by_uid.insert(m.uid().to_string(), spec_key(m));
        }
        same
    }

    /// How many jobs are kept, and how many uids point at them.
    #[cfg(test)]
    pub(super) fn tracked(&self) -> (usize, usize) {
        (self.jobs.len(), self.by_uid.len())
    }

    /// The job as last reported, looked up by uid.
    fn last_by_uid(&self, uid: &str) -> Option<&SeenJob> {
        self.jobs.get(self.by_uid.get(uid)?)
    }

    /// Records the figures just set for the job, replacing what was kept for it.
    fn insert(&mut self, m: &JobMetrics, session: u64) {
        if let Some(old_key) = self.by_uid.get(m.uid()).copied() {
            self.jobs.remove(&old_key);
        }
        let mut last = m.clone();
        last.figures.retried = false;
        last.figures.placed = 0;
        let seen_job = SeenJob {
            last,
            intact: true,
            reported_in: session,
        };
        self.jobs.insert(spec_key(m), seen_job);
        self.by_uid.insert(m.uid().to_string(), spec_key(m));
    }
}

/// Job e2e gauges for this session, and removal of the series of queues and jobs that left the
/// cluster (Volcano does it on informer deletes; we do it when a session no longer sees them).
fn job_and_queue_lifecycle(
    metrics: &Metrics,
    d: &Decisions,
    seen: &mut SeenSeries,
    unchanged: &[bool],
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
    let session = seen.session;
    let by_uid = &mut seen.by_uid;
    seen.jobs.retain(|_, s| {
        let present = s.reported_in == session;
        if !present {
            metrics.remove_job(labels(&s.last));
            removed_names.insert(s.last.name().to_string());
            by_uid.remove(s.last.uid());
        }
        present
    });
    for (m, &same) in d.job_metrics.iter().zip(unchanged) {
        if !same {
            if let Some(s) = seen.last_by_uid(m.uid())
                && !same_labels(&s.last, m)
            {
                metrics.remove_job(labels(&s.last));
                removed_names.insert(s.last.name().to_string());
            }
            if let Some(created) = m.creation() {
                metrics.set_job_start_time(labels(m), created);
            }
            seen.insert(m, session);
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
