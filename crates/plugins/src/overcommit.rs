//! `overcommit`: admission control for the enqueue action against the cluster's capacity
//! inflated by a factor (spec/plugins-core.md §10).
//!
//! At open, `idle = total × factor − Σ node.used`, and `inqueue` sums what admitted jobs have
//! reserved: the full `minResources` of Inqueue PodGroups, and for Running PodGroups that reached
//! `minMember` allocated tasks, the part of `minResources` not allocated yet. A job is admitted
//! when `inqueue + minResources` fits into `idle` on the dimensions the job asks for; admitting it
//! (`JobEnqueued`) adds its minimum to `inqueue`. Resources of scheduling-gated pods are not
//! reserved (§0.7 `DeductSchGatedResources`).
//!
//! A rejection records the Normal `Unschedulable` PodGroup event of spec/kubernetes.md §7.8.
//! `JobEnqueueable` only sees the session read-only, so the events are queued here and recorded
//! by the close hook.

use crate::fairness::{EnqueueRejections, format_resource_names};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, PERMIT, Plugin, REJECT, SessionState};
use engine::model::job::phase;
use engine::model::{JobId, Resource};

/// Registered plugin name.
pub const NAME: &str = "overcommit";

/// Argument key of the factor.
const FACTOR_KEY: &str = "overcommit-factor";
/// Factor used when the argument is absent, of the wrong type or below 1.
const DEFAULT_FACTOR: f64 = 1.2;

/// Builds the plugin, reading `overcommit-factor` (§10.1).
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(OvercommitPlugin {
        factor: parse_factor(args, &mut Vec::new()),
        idle: Resource::empty(),
        inqueue: Resource::empty(),
        rejections: EnqueueRejections::default(),
    })
}

/// The problems of `overcommit-factor`, for the configuration parser (reported once per
/// configuration load rather than at every session).
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    parse_factor(args, &mut warnings);
    warnings
}

/// §10.1: a float or an integer; anything below 1.0 falls back to the default, not to 1.0.
fn parse_factor(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> f64 {
    let mut factor = DEFAULT_FACTOR;
    if let Err(e) = args.get_float(FACTOR_KEY, &mut factor) {
        warnings.push(ArgWarning::new(
            FACTOR_KEY,
            format!("{}; the default {DEFAULT_FACTOR} is used", e.message),
        ));
    }
    // Volcano lets NaN and +∞ through (they are not below 1); both make every comparison
    // meaningless, so they are refused as well.
    if factor < 1.0 || !factor.is_finite() {
        warnings.push(ArgWarning::new(
            FACTOR_KEY,
            format!("{factor} is not a factor of at least 1; the default {DEFAULT_FACTOR} is used"),
        ));
        factor = DEFAULT_FACTOR;
    }
    factor
}

struct OvercommitPlugin {
    factor: f64,
    /// Inflated capacity not used by any pod.
    idle: Resource,
    /// Reserved by admitted jobs.
    inqueue: Resource,
    /// Jobs rejected by `job_enqueueable` with the event message, recorded at close.
    rejections: EnqueueRejections,
}

impl Plugin for OvercommitPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::JOB_ENQUEUEABLE | ExtensionPoints::JOB_ENQUEUED
    }

    /// §10.2.
    fn on_session_open(&mut self, ssn: &mut SessionState) {
        let mut used = Resource::empty();
        for node in ssn.nodes() {
            used.add(&node.used);
        }
        let mut idle = ssn.total_resource().clone();
        idle.multi(self.factor).sub_without_assert(&used);
        self.idle = idle;

        for job in ssn.jobs() {
            let Some(min) = &job.spec.min_resources else {
                continue;
            };
            if job.phase() == phase::INQUEUE {
                // Admitted but not running: the whole minimum stays reserved.
                self.inqueue
                    .add(&job.deduct_sch_gated_resources(ssn.tasks(), min));
            } else if job.phase() == phase::RUNNING
                && job.allocated_task_num() >= job.spec.min_available
            {
                // Running at its gang size: only what is not allocated yet (a finished Spark
                // driver must not reserve its share again).
                let reserved = job.inqueue_resource();
                self.inqueue
                    .add(&job.deduct_sch_gated_resources(ssn.tasks(), &reserved));
            }
        }
    }

    fn on_session_close(&mut self, ssn: &mut SessionState) {
        self.rejections.emit(ssn);
    }

    fn enqueue_rejection(&self, _ssn: &SessionState, job: JobId) -> Option<String> {
        self.rejections.message_for(job)
    }

    /// §10.3: permit when `inqueue + min` fits into `idle` on the requested dimensions.
    fn job_enqueueable(&self, ssn: &SessionState, job: JobId) -> i32 {
        let j = ssn.job(job);
        let Some(min) = &j.spec.min_resources else {
            // A best-effort job reserves nothing.
            return PERMIT;
        };
        let mut wanted = self.inqueue.clone();
        wanted.add(min);
        let (fits, overused) =
            wanted.less_equal_with_dimension_and_resources_name(Some(&self.idle), Some(min));
        if fits {
            return PERMIT;
        }
        tracing::debug!(job = %j.spec.uid, ?overused, "overcommit: resource in cluster is overused");
        self.rejections.record(
            job,
            format_resource_names("resource in cluster is overused", "overused", &overused),
        );
        REJECT
    }

    /// §10.3: the admitted job's minimum is reserved from now on.
    fn job_enqueued(&mut self, ssn: &SessionState, job: JobId) {
        let j = ssn.job(job);
        if let Some(min) = &j.spec.min_resources {
            self.inqueue
                .add(&j.deduct_sch_gated_resources(ssn.tasks(), min));
        }
    }
}

#[cfg(test)]
mod tests;
