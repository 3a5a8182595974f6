//! `resourcequota`: admission of PodGroups against the Kubernetes ResourceQuotas of their
//! namespace (spec/plugins-more.md §5).
//!
//! A PodGroup is admitted (`JobEnqueueable`) when, for every quota of its namespace, each
//! `minResources` entry the quota limits still fits: `status.used` + what this session already
//! admitted in the namespace + the request ≤ `status.hard`. Only the quota's `status` is read
//! (as published by the Kubernetes quota controller); scopes and `spec.hard` are ignored.
//! Names are compared literally (`cpu` and `requests.cpu` are different limits) and amounts
//! exactly, as Kubernetes quantities. A job without `minResources`, or in a namespace without
//! quotas, is permitted.
//!
//! The admitted amount grows in `JobEnqueued` only, i.e. once every plugin let the job in: a
//! job rejected by another plugin reserves nothing. A rejection queues the Normal
//! `Unschedulable` PodGroup event (recorded at close, like `overcommit`) with Volcano's text
//! (quantities printed readably), which is also the reason the enqueue action keeps for the PodGroup condition.

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, REJECT, SessionState};

use crate::fairness::EnqueueRejections;
use engine::model::quantity;
use engine::model::{JobId, Resource, ResourceName};

/// Registered plugin name.
pub const NAME: &str = "resourcequota";

/// Builds the plugin; it takes no arguments.
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(ResourceQuotaPlugin::default())
}

/// One quantity as read from an object: its exact amount in nano-units and its text (the
/// rejection message prints the quantity as Volcano holds it after parsing that text).
#[derive(Clone, Debug, PartialEq)]
struct Amount {
    nano: i128,
    text: String,
}

/// A resource list, by resource name.
type Amounts = BTreeMap<String, Amount>;

/// The `status` of one ResourceQuota.
#[derive(Debug)]
struct QuotaStatus {
    hard: Amounts,
    used: Amounts,
}

#[derive(Default)]
struct ResourceQuotaPlugin {
    /// Namespace → the statuses of its quotas, in quota-name order. A namespace without any
    /// quota has no entry.
    quotas: HashMap<String, Vec<QuotaStatus>>,
    /// Namespace → the sum of the `minResources` of the jobs admitted in this session (every
    /// key, in nano-units).
    pending: HashMap<String, BTreeMap<String, i128>>,
    /// Jobs rejected by `job_enqueueable` with the event message, recorded at close.
    rejections: EnqueueRejections,
}

/// Reads a resource list; an entry that is not a valid quantity is left out with a warning
/// (Kubernetes would not have accepted the object at all).
fn read_list(list: Option<&apis::ResourceList>, what: &str) -> Amounts {
    let mut out = Amounts::new();
    for (name, q) in list.into_iter().flatten() {
        match quantity::parse_nano(&q.0) {
            Ok(nano) => {
                out.insert(
                    name.clone(),
                    Amount {
                        nano,
                        text: q.0.clone(),
                    },
                );
            }
            Err(e) => {
                tracing::warn!(what, resource = %name, error = %e, "resourcequota: ignoring entry")
            }
        }
    }
    out
}

/// The quota usage a standalone pod's PodGroup would carry: Volcano's controller fills it from
/// the Kubernetes pod quota evaluator, which lists each request under its own name and under
/// `requests.<name>`, plus `pods` and `count/pods`. Limits (`limits.*`) are not known here.
fn standalone_usage(req: &Resource) -> Amounts {
    let mut texts: Vec<(String, String)> = vec![
        ("pods".into(), "1".into()),
        ("count/pods".into(), "1".into()),
    ];
    let mut both = |name: &str, text: String| {
        texts.push((format!("requests.{name}"), text.clone()));
        texts.push((name.to_string(), text));
    };
    if req.milli_cpu > 0.0 {
        both("cpu", quantity::format_milli_cpu(req.milli_cpu));
    }
    if req.memory > 0.0 {
        both("memory", quantity::format_bytes(req.memory));
    }
    for (name, value) in req.scalars.iter() {
        if name != ResourceName::PODS && value > 0.0 {
            both(name.as_str(), quantity::format_milli(value));
        }
    }
    texts
        .into_iter()
        .filter_map(|(name, text)| {
            let nano = quantity::parse_nano(&text).ok()?;
            Some((name, Amount { nano, text }))
        })
        .collect()
}

impl QuotaStatus {
    fn read(status: Option<&k8s_openapi::api::core::v1::ResourceQuotaStatus>) -> Self {
        QuotaStatus {
            hard: read_list(status.and_then(|s| s.hard.as_ref()), "status.hard"),
            used: read_list(status.and_then(|s| s.used.as_ref()), "status.used"),
        }
    }

    /// The limited names the request would push past `hard`, counting what the session
    /// already admitted in the namespace. Names the job does not request are not checked.
    fn exceeded(&self, requested: &Amounts, pending: Option<&BTreeMap<String, i128>>) -> Vec<&str> {
        self.hard
            .iter()
            .filter(|(name, hard)| {
                let Some(req) = requested.get(*name) else {
                    return false;
                };
                let used = self.used.get(*name).map_or(0, |a| a.nano);
                let admitted = pending.and_then(|p| p.get(*name)).copied().unwrap_or(0);
                used.saturating_add(admitted).saturating_add(req.nano) > hard.nano
            })
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Volcano's event text: the request, the quota's `used` (without this session's
    /// admissions) and its `hard`, each restricted to the exceeded names. Each list is printed
    /// as Go prints a map, `map[cpu:4 memory:1Gi]`, with every quantity as its text: Volcano
    /// prints the internal fields of each quantity there, which no reader can use.
    fn message(&self, requested: &Amounts, exceeded: &[&str]) -> String {
        let part = |list: &Amounts| {
            let entries: Vec<String> = list
                .iter()
                .filter(|(name, _)| exceeded.contains(&name.as_str()))
                .map(|(name, a)| format!("{name}:{}", a.text))
                .collect();
            format!("map[{}]", entries.join(" "))
        };
        format!(
            "resource quota insufficient, requested: {}, used: {}, limited: {}",
            part(requested),
            part(&self.used),
            part(&self.hard)
        )
    }
}

impl ResourceQuotaPlugin {
    /// The job's `minResources` as a resource list; `None` when the PodGroup has none.
    fn min_resources(ssn: &SessionState, job: JobId) -> Option<Amounts> {
        let j = ssn.job(job);
        if j.spec.implicit {
            return j.spec.min_resources.as_ref().map(standalone_usage);
        }
        let pg = ssn.snapshot().pod_group(&j.spec.uid)?;
        let list = pg.spec.min_resources.as_ref()?;
        Some(read_list(Some(list), "minResources"))
    }
}

impl Plugin for ResourceQuotaPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::JOB_ENQUEUEABLE | ExtensionPoints::JOB_ENQUEUED
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        // The snapshot is ordered by `namespace/name`, so each namespace's quotas are checked
        // in name order (Volcano walks a Go map, in no fixed order).
        for rq in ssn.snapshot().resource_quotas() {
            let ns = rq
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into());
            self.quotas
                .entry(ns)
                .or_default()
                .push(QuotaStatus::read(rq.status.as_ref()));
        }
    }

    fn on_session_close(&mut self, ssn: &mut SessionState) {
        self.rejections.emit(ssn);
    }

    fn enqueue_rejection(&self, _ssn: &SessionState, job: JobId) -> Option<String> {
        self.rejections.message_for(job)
    }

    /// §5: the first quota of the namespace that the request would exceed rejects the job.
    fn job_enqueueable(&self, ssn: &SessionState, job: JobId) -> i32 {
        let Some(requested) = Self::min_resources(ssn, job) else {
            return PERMIT;
        };
        let j = ssn.job(job);
        let Some(quotas) = self.quotas.get(&j.spec.namespace) else {
            return PERMIT;
        };
        let pending = self.pending.get(&j.spec.namespace);
        for quota in quotas {
            let exceeded = quota.exceeded(&requested, pending);
            if exceeded.is_empty() {
                continue;
            }
            let message = quota.message(&requested, &exceeded);
            tracing::debug!(job = %j.spec.uid, %message, "resourcequota: job not enqueueable");
            self.rejections.record(job, message);
            return REJECT;
        }
        PERMIT
    }

    /// §5: the admitted job's whole `minResources` (not only the limited names) counts
    /// against its namespace from now on.
    fn job_enqueued(&mut self, ssn: &SessionState, job: JobId) {
        let Some(min) = Self::min_resources(ssn, job) else {
            return;
        };
        let ns = &ssn.job(job).spec.namespace;
        if !self.quotas.contains_key(ns) {
            return;
        }
        let pending = self.pending.entry(ns.clone()).or_default();
        for (name, amount) in min {
            let sum = pending.entry(name).or_default();
            *sum = sum.saturating_add(amount.nano);
        }
    }
}
