//! Narrowing a report to what a person asks about (`--pending`, `--namespace`, `--queue`,
//! `--job`), and comparing the reports of two configurations on the same input (`--compare`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::report::{PodReport, Report, Table};

/// What to keep; every given criterion must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportFilter {
    /// Only pods that are not bound (and PodGroups not Running or Completed).
    pub pending: bool,
    pub namespace: Option<String>,
    pub queue: Option<String>,
    /// `namespace/name` of a PodGroup (or `podgroup-<uid>` of a standalone pod's).
    pub job: Option<String>,
}

impl ReportFilter {
    pub fn is_empty(&self) -> bool {
        *self == ReportFilter::default()
    }

    fn matches_place(&self, namespace: &str, queue: &str, job: &str) -> bool {
        self.namespace.as_deref().is_none_or(|n| n == namespace)
            && self.queue.as_deref().is_none_or(|q| q == queue)
            && self.job.as_deref().is_none_or(|j| j == job)
    }

    fn matches_pod(&self, key: &str, pod: &PodReport) -> bool {
        let namespace = key.split_once('/').map(|(ns, _)| ns).unwrap_or("");
        self.matches_place(namespace, &pod.queue, &pod.job)
    }

    /// The report with only what matches: pods, their PodGroups, their queues (when a queue
    /// or job is asked for), and the cycles' decisions about the pods kept.
    pub fn apply(&self, mut report: Report) -> Report {
        if self.is_empty() {
            return report;
        }
        let placed: BTreeMap<String, PodReport> = std::mem::take(&mut report.pods)
            .into_iter()
            .filter(|(k, p)| self.matches_pod(k, p))
            .collect();
        let jobs: std::collections::BTreeSet<String> =
            placed.values().map(|p| p.job.clone()).collect();
        let queues: std::collections::BTreeSet<String> =
            placed.values().map(|p| p.queue.clone()).collect();
        for c in &mut report.cycles {
            c.binds.retain(|b| placed.contains_key(&b.pod));
            c.pipelined.retain(|b| placed.contains_key(&b.pod));
            c.evictions.retain(|e| placed.contains_key(&e.pod));
        }
        report.pods = placed
            .into_iter()
            .filter(|(_, p)| !self.pending || p.node.is_none())
            .collect();
        report.pod_groups.retain(|key, pg| {
            let namespace = key.split_once('/').map(|(ns, _)| ns).unwrap_or("");
            let in_place = self.namespace.as_deref().is_none_or(|n| n == namespace)
                && self.job.as_deref().is_none_or(|j| j == key)
                && (self.queue.is_none() || jobs.contains(key));
            in_place && (!self.pending || !matches!(pg.phase.as_str(), "Running" | "Completed"))
        });
        if self.queue.is_some() || self.job.is_some() {
            report.queues.retain(|name, _| queues.contains(name));
        }
        report
    }
}

/// One pod's fate under each configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub a: Fate,
    pub b: Fate,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fate {
    pub node: Option<String>,
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Fate {
    fn of(pod: Option<&PodReport>) -> Fate {
        match pod {
            Some(p) => Fate {
                node: p.node.clone(),
                phase: p.phase.clone(),
                reason: p.reason.clone(),
            },
            None => Fate {
                node: None,
                phase: "absent".into(),
                reason: None,
            },
        }
    }

    fn text(&self) -> String {
        match &self.node {
            Some(n) => format!("{} on {n}", self.phase),
            None => self.phase.clone(),
        }
    }
}

/// The pods whose node or phase differs between the two reports, by `ns/name`.
pub fn compare(a: &Report, b: &Report) -> BTreeMap<String, Difference> {
    let keys: std::collections::BTreeSet<&String> = a.pods.keys().chain(b.pods.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (fa, fb) = (Fate::of(a.pods.get(k)), Fate::of(b.pods.get(k)));
            (fa.node != fb.node || fa.phase != fb.phase)
                .then(|| (k.clone(), Difference { a: fa, b: fb }))
        })
        .collect()
}

/// The comparison as a table (or a sentence when nothing differs).
pub fn comparison_text(a_name: &str, b_name: &str, diff: &BTreeMap<String, Difference>) -> String {
    if diff.is_empty() {
        return format!("Every pod ends the same under {a_name} and {b_name}.\n");
    }
    let mut table = Table::new(["POD", a_name, b_name]);
    for (pod, d) in diff {
        table.row([pod.clone(), d.a.text(), d.b.text()]);
    }
    let mut out = format!("{} pods end differently:\n", diff.len());
    table.render(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::report::{CycleReport, Placement};

    fn pod(node: Option<&str>, queue: &str, job: &str) -> PodReport {
        PodReport {
            node: node.map(String::from),
            phase: if node.is_some() { "Running" } else { "Pending" }.into(),
            reason: None,
            queue: queue.into(),
            job: job.into(),
        }
    }

    fn report() -> Report {
        let mut r = Report::empty();
        r.pods.insert("a/p1".into(), pod(Some("n1"), "q1", "a/pg1"));
        r.pods.insert("a/p2".into(), pod(None, "q1", "a/pg1"));
        r.pods.insert("b/p3".into(), pod(None, "q2", "b/pg2"));
        r.cycles.push(CycleReport {
            cycle: 1,
            binds: vec![Placement {
                pod: "a/p1".into(),
                node: "n1".into(),
                annotations: Default::default(),
            }],
            pipelined: Vec::new(),
            evictions: Vec::new(),
        });
        r
    }

    #[test]
    fn filters_narrow_pods_and_decisions() {
        let keys = |f: ReportFilter| f.apply(report()).pods.keys().cloned().collect::<Vec<_>>();
        let pending = ReportFilter {
            pending: true,
            ..Default::default()
        };
        assert_eq!(keys(pending), ["a/p2", "b/p3"]);
        let ns = ReportFilter {
            namespace: Some("b".into()),
            ..Default::default()
        };
        assert_eq!(keys(ns.clone()), ["b/p3"]);
        assert!(ns.apply(report()).cycles[0].binds.is_empty());
        let queue = ReportFilter {
            queue: Some("q1".into()),
            ..Default::default()
        };
        assert_eq!(keys(queue), ["a/p1", "a/p2"]);
        let job = ReportFilter {
            job: Some("a/pg1".into()),
            pending: true,
            ..Default::default()
        };
        assert_eq!(keys(job), ["a/p2"]);
    }

    #[test]
    fn comparison_lists_pods_whose_fate_differs() {
        let a = report();
        let mut b = report();
        b.pods.insert("a/p2".into(), pod(Some("n2"), "q1", "a/pg1"));
        let diff = compare(&a, &b);
        assert_eq!(diff.keys().collect::<Vec<_>>(), ["a/p2"]);
        let text = comparison_text("A", "B", &diff);
        assert!(text.contains("1 pods end differently"), "{text}");
        assert!(text.contains("a/p2   Pending   Running on n2"), "{text}");
        assert!(comparison_text("A", "B", &compare(&a, &a)).starts_with("Every pod"));
    }
}
