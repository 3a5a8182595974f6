//! What a simulation shows: per-cycle decisions and the final state of pods, PodGroups and
//! queues, as JSON (the shape below, keys in this order, maps sorted by key) or as tables.
//!
//! ```json
//! {"cycles": [{"cycle": 1, "binds": [{"pod": "ns/name", "node": "n1"}],
//!              "pipelined": [{"pod": "ns/name", "node": "n1"}],
//!              "evictions": [{"pod": "ns/name", "node": "n1", "action": "preempt"}]}],
//!  "pods": {"ns/name": {"node": "n1", "phase": "Running"},
//!           "ns/other": {"node": null, "phase": "Pending", "reason": "0/3 nodes are unavailable: 3 Insufficient cpu."}},
//!  "podGroups": {"ns/pg": {"phase": "Running", "conditions": [{"type": "Scheduled", "status": "True", "reason": "...", "message": "..."}]}},
//!  "queues": {"default": {"state": "Open", "weight": 1, "deserved": {"cpu": 4000, "memory": 8589934592},
//!                         "allocated": {"cpu": 2000, "memory": 1073741824}, "share": 0.5}}}
//! ```
//!
//! Resources are in canonical units: `cpu` in millicores, `memory` in bytes, every other
//! resource as a plain count.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use engine::framework::{Decisions, QueueMetrics};
use engine::model::Resource;
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::cluster::SimCluster;

/// The outcome of a simulation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub cycles: Vec<CycleReport>,
    /// Every pod of ours, by `ns/name`.
    pub pods: BTreeMap<String, PodReport>,
    /// Every PodGroup, by `ns/name`.
    #[serde(rename = "podGroups")]
    pub pod_groups: BTreeMap<String, PodGroupReport>,
    /// Every queue, by name.
    pub queues: BTreeMap<String, QueueReport>,
    /// Plugins the configuration names but this build lacks: skipped (absent when none).
    #[serde(rename = "skippedPlugins", skip_serializing_if = "Vec::is_empty")]
    pub skipped_plugins: Vec<String>,
    /// The last session changed nothing (rather than the cycle limit being reached).
    #[serde(skip)]
    pub converged: bool,
    /// Non-fatal problems (configuration warnings, refused priority classes), one line each.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// What one session decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CycleReport {
    pub cycle: usize,
    pub binds: Vec<Placement>,
    pub pipelined: Vec<Placement>,
    pub evictions: Vec<EvictionReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Placement {
    pub pod: String,
    pub node: String,
    /// The pod annotations a bind carries (a device's assignment); absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvictionReport {
    pub pod: String,
    pub node: String,
    pub action: String,
    /// The pod the eviction makes room for, when there is one.
    #[serde(rename = "for", skip_serializing_if = "Option::is_none")]
    pub preemptor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodReport {
    pub node: Option<String>,
    pub phase: String,
    /// The message of the pod's `PodScheduled=False` condition, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The pod's queue and job (`ns/podgroup` or `ns/podgroup-<uid>`), for filters.
    #[serde(skip)]
    pub queue: String,
    #[serde(skip)]
    pub job: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodGroupReport {
    pub phase: String,
    pub conditions: Vec<ConditionReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConditionReport {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// A queue's state and, where a plugin reported them in the last session, its fairness
/// figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueReport {
    pub state: String,
    pub weight: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability: Option<Quantities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_capability: Option<Quantities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deserved: Option<Quantities>,
    pub allocated: Quantities,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Quantities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inqueue: Option<Quantities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overused: Option<bool>,
}

/// Resource name → amount in canonical units. Whole amounts serialise as integers
/// (`4000`, not `4000.0`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Quantities(pub BTreeMap<String, f64>);

impl From<&Resource> for Quantities {
    /// Dimensions a plugin leaves unbounded (Volcano's "infinite" resource, f64::MAX) are left
    /// out: an absent dimension in a capability means "no limit".
    fn from(r: &Resource) -> Self {
        let mut map = r.to_canonical_map();
        map.retain(|_, v| v.is_finite() && *v < f64::MAX / 2.0);
        Quantities(map)
    }
}

/// Largest magnitude below which every integer is exact in an f64.
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;

fn as_integer(v: f64) -> Option<i64> {
    // The range check makes the cast exact.
    (v.fract() == 0.0 && v.abs() < EXACT_INTEGER_LIMIT).then_some(v as i64)
}

impl Serialize for Quantities {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, &value) in &self.0 {
            match as_integer(value) {
                Some(i) => map.serialize_entry(name, &i)?,
                None => map.serialize_entry(name, &value)?,
            }
        }
        map.end()
    }
}

impl CycleReport {
    pub(crate) fn from_decisions(cycle: usize, d: &Decisions) -> CycleReport {
        let placement = |pod: &str, node: &str| Placement {
            pod: pod.to_string(),
            node: node.to_string(),
            annotations: BTreeMap::new(),
        };
        CycleReport {
            cycle,
            binds: d
                .binds
                .iter()
                .map(|b| Placement {
                    annotations: b.annotations.clone(),
                    ..placement(&b.pod, &b.node)
                })
                .collect(),
            pipelined: d
                .pipelined
                .iter()
                .map(|p| placement(&p.pod, &p.node))
                .collect(),
            evictions: d
                .evictions
                .iter()
                .map(|e| EvictionReport {
                    pod: e.pod.clone(),
                    node: e.node.clone(),
                    action: e.action.clone(),
                    preemptor: e.preemptor.clone(),
                })
                .collect(),
        }
    }
}

impl PodReport {
    fn from_pod(pod: &Pod, cluster: &SimCluster) -> PodReport {
        let meta = &pod.metadata;
        let namespace = meta.namespace.clone().unwrap_or_else(|| "default".into());
        let annotation = |k: &str| meta.annotations.as_ref().and_then(|a| a.get(k)).cloned();
        let default_queue = || apis::DEFAULT_QUEUE.to_string();
        let group = annotation(apis::keys::GROUP_NAME)
            .or_else(|| annotation(apis::keys::VOLCANO_GROUP_NAME))
            .filter(|g| !g.is_empty());
        let (job, queue) = match group {
            Some(group) => {
                let key = format!("{namespace}/{group}");
                let queue = cluster
                    .pod_groups()
                    .get(&key)
                    .map(|pg| pg.spec.queue.clone())
                    .filter(|q| !q.is_empty())
                    .unwrap_or_else(default_queue);
                (key, queue)
            }
            None => (
                format!(
                    "{namespace}/podgroup-{}",
                    meta.uid.clone().unwrap_or_default()
                ),
                annotation(apis::keys::QUEUE_NAME)
                    .filter(|q| !q.is_empty())
                    .unwrap_or_else(default_queue),
            ),
        };
        let status = pod.status.as_ref();
        let reason = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
            .filter(|c| c.status == "False")
            .map(|c| c.message.clone().unwrap_or_default());
        PodReport {
            node: pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty()),
            phase: status.and_then(|s| s.phase.clone()).unwrap_or_default(),
            reason,
            queue,
            job,
        }
    }
}

impl Report {
    /// A report of nothing (a start for tests and filters).
    pub fn empty() -> Report {
        Report {
            cycles: Vec::new(),
            pods: BTreeMap::new(),
            pod_groups: BTreeMap::new(),
            queues: BTreeMap::new(),
            skipped_plugins: Vec::new(),
            converged: false,
            warnings: Vec::new(),
        }
    }

    /// The final state of `cluster`; queue figures from the last session's metrics (`None`
    /// when no session ran: then only what the Queue objects say).
    pub(crate) fn build(
        cycles: Vec<CycleReport>,
        cluster: &SimCluster,
        metrics: Option<&BTreeMap<String, QueueMetrics>>,
        converged: bool,
        warnings: Vec<String>,
    ) -> Report {
        let pods = cluster
            .pods()
            .iter()
            .filter(|(_, pod)| cluster.is_ours(pod))
            .map(|(key, pod)| (key.clone(), PodReport::from_pod(pod, cluster)))
            .collect();

        let pod_groups = cluster
            .pod_groups()
            .iter()
            .map(|(key, pg)| {
                let status = pg.status.as_ref();
                // Volcano treats an unset phase exactly as Pending (spec/kubernetes.md §5.3).
                let phase = status
                    .map(|s| s.phase.clone())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "Pending".to_string());
                let conditions = status
                    .map(|s| {
                        s.conditions
                            .iter()
                            .map(|c| ConditionReport {
                                type_: c.type_.clone(),
                                status: c.status.clone(),
                                reason: c.reason.clone(),
                                message: c.message.clone(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (key.clone(), PodGroupReport { phase, conditions })
            })
            .collect();

        let queues = cluster
            .queues()
            .iter()
            .map(|(name, q)| {
                let state = q
                    .status
                    .as_ref()
                    .map(|s| s.state.clone())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| apis::queue_state::OPEN.to_string());
                let m = metrics.and_then(|m| m.get(name));
                let allocated = match m {
                    Some(m) => Quantities::from(&m.allocated),
                    None => q
                        .status
                        .as_ref()
                        .map(|s| Quantities::from(&Resource::from_list(&s.allocated)))
                        .unwrap_or_default(),
                };
                let opt = |r: Option<&Resource>| r.map(Quantities::from);
                let report = QueueReport {
                    state,
                    weight: q.spec.weight,
                    capability: opt(m.and_then(|m| m.capability.as_ref())),
                    real_capability: opt(m.and_then(|m| m.real_capability.as_ref())),
                    deserved: opt(m.and_then(|m| m.deserved.as_ref())),
                    allocated,
                    // An empty request is what every queue has before a plugin fills it in.
                    request: opt(m.map(|m| &m.request).filter(|r| !r.is_empty())),
                    inqueue: opt(m.and_then(|m| m.inqueue.as_ref())),
                    share: m.and_then(|m| m.share),
                    overused: m.and_then(|m| m.overused),
                };
                (name.clone(), report)
            })
            .collect();

        Report {
            cycles,
            pods,
            pod_groups,
            queues,
            skipped_plugins: Vec::new(),
            converged,
            warnings,
        }
    }

    /// The report as pretty-printed JSON (the documented shape).
    pub fn to_json(&self) -> String {
        // Serialising plain structs, strings, maps with string keys and finite numbers cannot
        // fail; the fallback keeps this free of panics all the same.
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
    }

    /// The report as tables a person reads at a glance.
    pub fn to_text(&self) -> String {
        let mut out = String::new();

        let mut summary = Table::new(["CYCLE", "BINDS", "PIPELINED", "EVICTIONS"]);
        let mut decisions = Table::new(["CYCLE", "DECISION", "POD", "NODE"]);
        for c in &self.cycles {
            summary.row([
                c.cycle.to_string(),
                c.binds.len().to_string(),
                c.pipelined.len().to_string(),
                c.evictions.len().to_string(),
            ]);
            for b in &c.binds {
                decisions.row([
                    c.cycle.to_string(),
                    "bind".into(),
                    b.pod.clone(),
                    b.node.clone(),
                ]);
            }
            for p in &c.pipelined {
                decisions.row([
                    c.cycle.to_string(),
                    "pipeline".into(),
                    p.pod.clone(),
                    p.node.clone(),
                ]);
            }
            for e in &c.evictions {
                let what = format!("evict ({})", e.action);
                decisions.row([c.cycle.to_string(), what, e.pod.clone(), e.node.clone()]);
            }
        }
        let ending = if self.cycles.is_empty() {
            "no session ran".to_string()
        } else if self.converged {
            "the last one bound and evicted nothing".to_string()
        } else {
            "stopped at the cycle limit while the cluster was still changing".to_string()
        };
        if !self.skipped_plugins.is_empty() {
            let _ = writeln!(
                out,
                "Skipped plugins (named by the configuration, not provided by volcano-rs): {}",
                self.skipped_plugins.join(", ")
            );
        }
        let _ = writeln!(out, "Cycles: {} ({ending})", self.cycles.len());
        summary.render(&mut out);
        if !decisions.is_empty() {
            out.push('\n');
            decisions.render(&mut out);
        }

        let mut pods = Table::new(["NAME", "NODE", "PHASE", "REASON"]);
        for (name, p) in &self.pods {
            pods.row([
                name.clone(),
                p.node.clone().unwrap_or_else(|| "<none>".into()),
                p.phase.clone(),
                p.reason.clone().unwrap_or_default(),
            ]);
        }
        let _ = writeln!(out, "\nPods: {}", self.pods.len());
        if !pods.is_empty() {
            pods.render(&mut out);
        }

        let mut groups = Table::new(["NAME", "PHASE", "CONDITIONS", "MESSAGE"]);
        for (name, g) in &self.pod_groups {
            let conditions: Vec<String> = g
                .conditions
                .iter()
                .map(|c| format!("{}={}", c.type_, c.status))
                .collect();
            let messages: Vec<&str> = g
                .conditions
                .iter()
                .map(|c| c.message.as_str())
                .filter(|m| !m.is_empty())
                .collect();
            groups.row([
                name.clone(),
                g.phase.clone(),
                or_none(conditions.join(",")),
                messages.join("; "),
            ]);
        }
        let _ = writeln!(out, "\nPod groups: {}", self.pod_groups.len());
        if !groups.is_empty() {
            groups.render(&mut out);
        }

        let mut queues = Table::new([
            "NAME",
            "STATE",
            "WEIGHT",
            "ALLOCATED",
            "DESERVED",
            "CAPABILITY",
            "SHARE",
        ]);
        for (name, q) in &self.queues {
            queues.row([
                name.clone(),
                q.state.clone(),
                q.weight.to_string(),
                or_none(human(&q.allocated)),
                q.deserved.as_ref().map_or_else(|| "-".into(), human),
                q.capability.as_ref().map_or_else(|| "-".into(), human),
                q.share.map_or_else(|| "-".into(), |s| format!("{s:.2}")),
            ]);
        }
        let _ = writeln!(out, "\nQueues: {}", self.queues.len());
        if !queues.is_empty() {
            queues.render(&mut out);
        }
        out
    }
}

fn or_none(s: String) -> String {
    if s.is_empty() { "<none>".into() } else { s }
}

/// `cpu=1500m,memory=2Gi,nvidia.com/gpu=1`, in Kubernetes' own notation.
fn human(q: &Quantities) -> String {
    q.0.iter()
        .map(|(name, &v)| {
            let text = match name.as_str() {
                "cpu" => human_cpu(v),
                "memory" => human_bytes(v),
                _ => human_number(v),
            };
            format!("{name}={text}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn human_cpu(millis: f64) -> String {
    match as_integer(millis) {
        Some(m) if m % 1000 == 0 => (m / 1000).to_string(),
        Some(m) => format!("{m}m"),
        None => format!("{millis}m"),
    }
}

fn human_bytes(bytes: f64) -> String {
    let Some(b) = as_integer(bytes) else {
        return human_number(bytes);
    };
    const UNITS: [(&str, i64); 5] = [
        ("Pi", 1 << 50),
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    UNITS
        .iter()
        .find(|(_, size)| b != 0 && b % size == 0)
        .map_or_else(
            || b.to_string(),
            |(unit, size)| format!("{}{unit}", b / size),
        )
}

fn human_number(v: f64) -> String {
    match as_integer(v) {
        Some(i) => i.to_string(),
        None => format!("{v}"),
    }
}

/// A left-aligned table with kubectl's three-space column gap.
pub(crate) struct Table<const N: usize> {
    header: [String; N],
    rows: Vec<[String; N]>,
}

impl<const N: usize> Table<N> {
    pub(crate) fn new(header: [&str; N]) -> Self {
        Table {
            header: header.map(String::from),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: [String; N]) {
        self.rows.push(cells);
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(crate) fn render(&self, out: &mut String) {
        let mut widths = self.header.clone().map(|h| h.chars().count());
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = |cells: &mut dyn Iterator<Item = &str>| {
            let mut text = String::new();
            for (i, (cell, width)) in cells.zip(widths).enumerate() {
                if i + 1 < N {
                    let _ = write!(text, "{cell:<width$}   ");
                } else {
                    text.push_str(cell);
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut self.header.iter().map(String::as_str));
        for row in &self.rows {
            line(&mut row.iter().map(String::as_str));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_serialise_whole_numbers_as_integers() {
        let q = Quantities(BTreeMap::from([
            ("cpu".to_string(), 1500.0),
            ("memory".to_string(), 8589934592.0),
            ("nvidia.com/gpu".to_string(), 0.5),
        ]));
        assert_eq!(
            serde_json::to_string(&q).expect("json"),
            r#"{"cpu":1500,"memory":8589934592,"nvidia.com/gpu":0.5}"#
        );
        let r = Resource::from_pairs(
            2000.0,
            1073741824.0,
            &[("pods", 3.0), ("nvidia.com/gpu", 1000.0)],
        );
        assert_eq!(
            serde_json::to_string(&Quantities::from(&r)).expect("json"),
            r#"{"cpu":2000,"memory":1073741824,"nvidia.com/gpu":1,"pods":3}"#
        );
    }

    #[test]
    fn human_units() {
        assert_eq!(human_cpu(2000.0), "2");
        assert_eq!(human_cpu(1500.0), "1500m");
        assert_eq!(human_bytes(8.0 * 1024.0 * 1024.0 * 1024.0), "8Gi");
        assert_eq!(human_bytes(1536.0 * 1024.0 * 1024.0), "1536Mi");
        assert_eq!(human_bytes(1000.0), "1000");
        assert_eq!(human_bytes(0.0), "0");
        assert_eq!(human_number(2.5), "2.5");
        let q = Quantities(BTreeMap::from([
            ("cpu".to_string(), 500.0),
            ("pods".to_string(), 2.0),
        ]));
        assert_eq!(human(&q), "cpu=500m,pods=2");
    }

    #[test]
    fn tables_align_columns() {
        let mut t = Table::new(["NAME", "NODE"]);
        t.row(["ns/long-name".into(), "n1".into()]);
        t.row(["a".into(), "".into()]);
        let mut out = String::new();
        t.render(&mut out);
        assert_eq!(out, "NAME           NODE\nns/long-name   n1\na\n");
    }

    fn sample() -> Report {
        Report {
            cycles: vec![CycleReport {
                cycle: 1,
                binds: vec![Placement {
                    pod: "ns/a".into(),
                    node: "n1".into(),
                    annotations: BTreeMap::new(),
                }],
                pipelined: vec![],
                evictions: vec![EvictionReport {
                    pod: "ns/v".into(),
                    node: "n1".into(),
                    action: "preempt".into(),
                    preemptor: None,
                }],
            }],
            pods: BTreeMap::from([
                (
                    "ns/a".to_string(),
                    PodReport {
                        node: Some("n1".into()),
                        phase: "Running".into(),
                        reason: None,
                        queue: "default".into(),
                        job: "ns/pg".into(),
                    },
                ),
                (
                    "ns/b".to_string(),
                    PodReport {
                        node: None,
                        phase: "Pending".into(),
                        reason: Some("0/1 nodes are unavailable: 1 Insufficient cpu.".into()),
                        queue: "default".into(),
                        job: "ns/pg".into(),
                    },
                ),
            ]),
            pod_groups: BTreeMap::from([(
                "ns/pg".to_string(),
                PodGroupReport {
                    phase: "Running".into(),
                    conditions: vec![ConditionReport {
                        type_: "Scheduled".into(),
                        status: "True".into(),
                        reason: "tasks in gang are ready to be scheduled".into(),
                        message: String::new(),
                    }],
                },
            )]),
            queues: BTreeMap::from([(
                "default".to_string(),
                QueueReport {
                    state: "Open".into(),
                    weight: 1,
                    capability: None,
                    real_capability: None,
                    deserved: Some(Quantities(BTreeMap::from([("cpu".to_string(), 4000.0)]))),
                    allocated: Quantities(BTreeMap::from([("cpu".to_string(), 1000.0)])),
                    request: None,
                    inqueue: None,
                    share: Some(0.25),
                    overused: None,
                },
            )]),
            skipped_plugins: Vec::new(),
            converged: true,
            warnings: vec!["ignored".into()],
        }
    }

    #[test]
    fn json_shape_and_key_order() {
        let json = serde_json::to_string(&sample()).expect("json");
        assert_eq!(
            json,
            concat!(
                r#"{"cycles":[{"cycle":1,"binds":[{"pod":"ns/a","node":"n1"}],"pipelined":[],"#,
                r#""evictions":[{"pod":"ns/v","node":"n1","action":"preempt"}]}],"#,
                r#""pods":{"ns/a":{"node":"n1","phase":"Running"},"#,
                r#""ns/b":{"node":null,"phase":"Pending","reason":"0/1 nodes are unavailable: 1 Insufficient cpu."}},"#,
                r#""podGroups":{"ns/pg":{"phase":"Running","conditions":[{"type":"Scheduled","status":"True","#,
                r#""reason":"tasks in gang are ready to be scheduled","message":""}]}},"#,
                r#""queues":{"default":{"state":"Open","weight":1,"deserved":{"cpu":4000},"#,
                r#""allocated":{"cpu":1000},"share":0.25}}}"#
            )
        );
    }

    #[test]
    fn text_tables() {
        let text = sample().to_text();
        let expected = "\
Cycles: 1 (the last one bound and evicted nothing)
CYCLE   BINDS   PIPELINED   EVICTIONS
1       1       0           1

CYCLE   DECISION          POD    NODE
1       bind              ns/a   n1
1       evict (preempt)   ns/v   n1

Pods: 2
NAME   NODE     PHASE     REASON
ns/a   n1       Running
ns/b   <none>   Pending   0/1 nodes are unavailable: 1 Insufficient cpu.

Pod groups: 1
NAME    PHASE     CONDITIONS       MESSAGE
ns/pg   Running   Scheduled=True

Queues: 1
NAME      STATE   WEIGHT   ALLOCATED   DESERVED   CAPABILITY   SHARE
default   Open    1        cpu=1       cpu=4      -            0.25
";
        assert_eq!(text, expected);
    }
}
