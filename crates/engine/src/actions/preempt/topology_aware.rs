//! The topology-aware mode of `preempt` (`enableTopologyAwarePreemption: true`,
//! spec/framework.md §6.4.4). Despite the name it has nothing to do with network topology: it
//! is kube-scheduler's default preemption on Volcano's session. Instead of taking the first
//! node, best score first, where evictions let the task fit (normal mode), it
//!
//! 1. dry-runs the victim selection on the feasible nodes until k of them need at least one
//!    victim (k from `minCandidateNodesPercentage`, `minCandidateNodesAbsolute` and
//!    `maxCandidateNodesAbsolute`, see [`CandidateArgs::num_candidates`]);
//! 2. picks the candidate whose victims cost least ([`Cost`], Volcano's
//!    `pickOneNodeForPreemption`);
//! 3. evicts that node's victims and pipelines the task there, in one statement merged into
//!    the caller's.
//!
//! The dry run on one node evicts the allowed victims in victim order (§3.3.1) until the task
//! fits — its queue admits it, its request fits the node's future idle resources, and every
//! plugin predicate passes — then puts them back one by one, the most important first, keeping
//! evicted only those the task cannot fit without. It runs on the session itself, with the
//! session's evict and revert operations, and leaves it as it found it. Since evictions fire
//! the plugins' event handlers, every check after a tentative removal sees the pod gone: the
//! queue's allocation (proportion, capacity), the node's host ports and pod count, and the
//! inter-pod affinity counts of the predicates plugin. This takes the place of Volcano's
//! `SimulateRemoveTask`/`SimulateAddTask`/`SimulateAllocatable`/`SimulatePredicate` hooks on
//! cloned nodes and cycle states.
//!
//! Deterministic where Volcano is not:
//!
//! * Volcano starts its scan at a random offset in the feasible-node list, with
//!   `topologyAwarePreemptWorkerNum` goroutines racing to collect the k candidates. Here the
//!   scan starts at the beginning of the feasible list and runs sequentially, one node after
//!   the other; the worker count is read and validated but changes nothing. The feasible list
//!   itself starts at the session's rotating node index, so successive preemptors still start
//!   at different nodes, which was the point of the random offset. When at most k nodes could
//!   yield victims, the candidates are exactly Volcano's whatever its offset; otherwise the
//!   outcome is the one Volcano gets with offset 0 and one worker.
//! * The last tie-break of the node choice is the scan order (Volcano: map order), and a victim
//!   without `status.startTime` counts as started at the session's `now` (Volcano: the clock at
//!   each comparison).
//!
//! volcano-rs's rules against eviction storms (docs/fairness.md) hold here too: a node where
//! the task fits without any eviction is used first, best score first, as in normal mode
//! (Volcano's topology-aware mode never considers such a node and may evict elsewhere); a node
//! where the task never fits, queue included, is no candidate (Volcano re-checks only the
//! predicate after removing every victim, and can evict for a task its queue will never
//! admit); and the no-take-back rule is applied to the chosen candidate, the next best being
//! tried when it refuses (Volcano gives up after its one choice).

use std::cmp::Reverse;

use k8s_openapi::jiff::Timestamp;

use crate::framework::{Session, Statement};
use crate::model::{NodeId, TaskId, TaskStatus};

use super::super::victims::{Rules, finish_on_node, fits, place_without_eviction, victims_cover};
use super::args::CandidateArgs;
use super::{Scope, by_score, node_victims, pod_priority};

/// A node where evicting `victims` lets the task fit.
#[derive(Clone, Debug)]
struct Candidate {
    node: NodeId,
    /// Most important first (the order they were kept in while sparing).
    victims: Vec<TaskId>,
    /// Position in the scan of the feasible nodes.
    scan: usize,
}

/// How much evicting a candidate's victims costs, compared field by field, the smaller the
/// better. Volcano's `pickOneNodeForPreemption` applies its criteria one after the other,
/// keeping the best candidates of each; that is this lexicographic order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cost {
    /// Pod priority (`spec.priority`, 0 if unset) of the first victim, the most important one
    /// in victim order. Volcano takes the first victim, not the highest pod priority: with
    /// victims of several jobs the two can differ.
    first_priority: i32,
    /// Σ (pod priority + 2^31) over the victims: fewer and lower-priority victims cost less.
    priority_sum: i64,
    /// The number of victims (decides only when the sums tie).
    victims: usize,
    /// The earliest start among the victims of the highest pod priority, the later the better:
    /// evicting pods that have run for less time loses less work.
    latest_start: Reverse<Timestamp>,
    /// The first candidate in scan order wins a full tie.
    scan: usize,
}

/// Topology-aware preemption of `task` over the feasible nodes, in their search order.
pub(super) fn preempt(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    scope: Scope,
    feasible: &[NodeId],
    rules: Rules,
    sizing: CandidateArgs,
) -> Result<(), String> {
    if feasible.is_empty() {
        return Err("no candidate node".to_string());
    }
    // Rule 2, first half, exactly as in normal mode; should scoring fail, the search order.
    let mut by_score = by_score(ssn, task, feasible);
    if by_score.is_empty() {
        by_score = feasible.to_vec();
    }
    if place_without_eviction(ssn, stmt, task, &by_score, rules.allocatable_in) {
        return Ok(());
    }

    let k = sizing.num_candidates(feasible.len());
    let mut ranked: Vec<(Cost, Candidate)> = find_candidates(ssn, task, scope, feasible, k, rules)
        .into_iter()
        .map(|c| (cost(ssn, &c), c))
        .collect();
    ranked.sort_by(|a, b| a.0.cmp(&b.0));
    if ranked.is_empty() {
        return Err("no node where evicting victims lets the task fit".to_string());
    }
    for (cost, candidate) in ranked {
        // `volcano_total_preemption_attempts`: once per candidate the task is placed on.
        ssn.state.record_preemption_attempt();
        let node = candidate.node;
        match evict_and_pipeline(ssn, stmt, task, &candidate, rules) {
            Ok(()) => {
                tracing::debug!(
                    task = ssn.state.task(task).key(),
                    node = ssn.state.node(node).name(),
                    ?cost,
                    "topology-aware preemption chose the node"
                );
                return Ok(());
            }
            Err(reason) => tracing::debug!(
                task = ssn.state.task(task).key(),
                node = ssn.state.node(node).name(),
                %reason,
                "candidate node not used"
            ),
        }
    }
    Err("every candidate node was refused".to_string())
}

/// Scans `feasible` in order and returns the first `k` nodes where the dry run finds victims.
fn find_candidates(
    ssn: &mut Session,
    task: TaskId,
    scope: Scope,
    feasible: &[NodeId],
    k: usize,
    rules: Rules,
) -> Vec<Candidate> {
    let mut found = Vec::new();
    for (scan, &node) in feasible.iter().enumerate() {
        if found.len() >= k {
            break;
        }
        let allowed = node_victims(ssn, task, node, scope);
        // `volcano_pod_preemption_victims`: Volcano sets it for every node of the dry run.
        ssn.state.record_preemption_victims(allowed.len());
        if allowed.is_empty() || !victims_cover(ssn, task, node, &allowed) {
            continue;
        }
        match select_victims_on_node(ssn, task, node, &allowed, rules) {
            Some(victims) => {
                tracing::debug!(
                    task = ssn.state.task(task).key(),
                    node = ssn.state.node(node).name(),
                    victims = ?victims.iter().map(|&v| ssn.state.task(v).key()).collect::<Vec<_>>(),
                    "preemption candidate"
                );
                found.push(Candidate {
                    node,
                    victims,
                    scan,
                });
            }
            None => tracing::trace!(
                task = ssn.state.task(task).key(),
                node = ssn.state.node(node).name(),
                "no victims let the task fit"
            ),
        }
    }
    found
}

/// `SelectVictimsOnNode` as a dry run on the session: evicts `allowed` in victim order until
/// `task` fits `node`, then gives each evicted victim back, the most important first, keeping
/// evicted those the task does not fit without. Every eviction is undone before returning, so
/// the session is as before. `None` when the task never fits, or fits without any victim.
fn select_victims_on_node(
    ssn: &mut Session,
    task: TaskId,
    node: NodeId,
    allowed: &[TaskId],
    rules: Rules,
) -> Option<Vec<TaskId>> {
    let mut dry = Statement::new();
    let mut removed: Vec<(TaskId, TaskStatus)> = Vec::new();
    let mut heap = ssn.build_victims_priority_queue(allowed, task);
    let mut fit = false;
    while let Some(victim) = heap.pop(|a, b| ssn.victim_before(a, b, task)) {
        removed.push((victim, ssn.state.task(victim).status));
        ssn.evict(&mut dry, victim, rules.reason);
        // The full check, on the session after the removals: this is what finds a victim
        // needed only because of a predicate, such as the task's pod anti-affinity.
        if fits(ssn, task, node, rules.allocatable_in) {
            fit = true;
            break;
        }
    }
    let mut victims = Vec::new();
    if fit {
        for &(victim, status) in removed.iter().rev() {
            ssn.revert_eviction(&mut dry, victim, status);
            if !fits(ssn, task, node, rules.allocatable_in) {
                ssn.evict(&mut dry, victim, rules.reason);
                victims.push(victim);
            }
        }
    }
    for &(victim, status) in removed.iter().rev() {
        ssn.revert_eviction(&mut dry, victim, status);
    }
    debug_assert!(dry.is_empty(), "the dry run left evictions behind");
    (!victims.is_empty()).then_some(victims)
}

/// Evicts the candidate's victims and pipelines `task` there, with the no-take-back rule
/// (through [`finish_on_node`]). On failure the session is as before.
fn evict_and_pipeline(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    candidate: &Candidate,
    rules: Rules,
) -> Result<(), String> {
    let mut node_stmt = Statement::new();
    for &victim in &candidate.victims {
        ssn.evict(&mut node_stmt, victim, rules.reason);
    }
    // The dry run left the session as it found it, so this holds as it did there; checked
    // again so that rule 1 (fit before evict) never rests on that alone.
    if !fits(ssn, task, candidate.node, rules.allocatable_in) {
        ssn.discard(node_stmt);
        return Err("the task does not fit after evicting the chosen victims".to_string());
    }
    finish_on_node(ssn, stmt, node_stmt, task, candidate.node, rules)
}

/// The [`Cost`] of a candidate (its victims are never empty).
fn cost(ssn: &Session, c: &Candidate) -> Cost {
    let first_priority = c.victims.first().map_or(0, |&v| pod_priority(ssn, v));
    let priority_sum = c
        .victims
        .iter()
        .map(|&v| i64::from(pod_priority(ssn, v)) + (1i64 << 31))
        .sum();
    Cost {
        first_priority,
        priority_sum,
        victims: c.victims.len(),
        latest_start: Reverse(earliest_start_of_highest(ssn, &c.victims)),
        scan: c.scan,
    }
}

/// `GetEarliestPodStartTime`: the earliest start among the victims of the highest pod
/// priority. A pod without `status.startTime` (bound, not started yet) counts as starting now.
fn earliest_start_of_highest(ssn: &Session, victims: &[TaskId]) -> Timestamp {
    let mut best: Option<(i32, Timestamp)> = None;
    for &v in victims {
        let priority = pod_priority(ssn, v);
        let start = start_time(ssn, v);
        best = match best {
            Some((p, s)) if p > priority || (p == priority && s <= start) => Some((p, s)),
            _ => Some((priority, start)),
        };
    }
    best.map_or(ssn.state.now(), |(_, s)| s)
}

/// The pod's `status.startTime`, or the session's `now` when unset.
fn start_time(ssn: &Session, task: TaskId) -> Timestamp {
    ssn.state
        .task(task)
        .spec
        .pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(ssn.state.now(), |t| t.0)
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::{Candidate, Cost, cost};
    use crate::actions::victims::testkit::*;
    use crate::model::TaskStatus;

    /// The test tier with the topology-aware mode on and extra argument lines.
    fn tap_conf(extra: &str) -> String {
        format!(
            "{}configurations:\n- name: preempt\n  arguments:\n    enableTopologyAwarePreemption: true\n{extra}",
            conf("preempt")
        )
    }

    const ALL_NODES: &str = "    minCandidateNodesPercentage: 100\n";

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn key(first: i32, sum: i64, victims: usize, start: &str, scan: usize) -> Cost {
        Cost {
            first_priority: first,
            priority_sum: sum,
            victims,
            latest_start: Reverse(ts(start)),
            scan,
        }
    }

    #[test]
    fn pick_order_follows_volcano_criteria_in_turn() {
        let t0 = "2024-01-01T00:00:00Z";
        let t1 = "2024-01-01T01:00:00Z";
        // 1. The lowest first-victim priority wins, whatever the sum.
        assert!(key(5, 900, 3, t0, 9) < key(10, 10, 1, t1, 0));
        // 2. Then the lowest sum of (priority + 2^31).
        assert!(key(5, 100, 3, t0, 9) < key(5, 200, 1, t1, 0));
        // 3. Then the fewest victims.
        assert!(key(5, 100, 1, t0, 9) < key(5, 100, 2, t1, 0));
        // 4. Then the latest start of the most important victims.
        assert!(key(5, 100, 1, t1, 9) < key(5, 100, 1, t0, 0));
        // 5. Then the scan order.
        assert!(key(5, 100, 1, t0, 0) < key(5, 100, 1, t0, 1));
    }

    /// n1 and n2, 2 cpu each, full with one victim each; a 2-cpu high-priority pod.
    fn two_victims_cluster(n1_priority: i32, n2_priority: i32) -> Cluster {
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 1000);
        c.node("n1", "2", json!({})).node("n2", "2", json!({}));
        c.job("a", "q1", 1, "low").job("b", "q1", 1, "low");
        c.pod_with(
            "a-x-0",
            "a",
            "2",
            Some("n1"),
            json!({"spec": {"priority": n1_priority}}),
        );
        c.pod_with(
            "b-x-0",
            "b",
            "2",
            Some("n2"),
            json!({"spec": {"priority": n2_priority}}),
        );
        c.job("high", "q1", 1, "high");
        c.pod_with(
            "high-x-0",
            "high",
            "2",
            None,
            json!({"spec": {"priority": 1000}}),
        );
        c
    }

    #[test]
    fn the_candidate_with_the_cheapest_victim_wins() {
        let mut ssn = two_victims_cluster(500, 10).session(&tap_conf(ALL_NODES));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("b-x-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "high-x-0").as_deref(), Some("n2"));
        assert_eq!(status(&ssn, "a-x-0"), TaskStatus::Running);
        // Both candidates were dry-run, one was placed on.
        assert_eq!(ssn.state.decisions().preemption_attempts, 1);
    }

    #[test]
    fn with_the_default_sizing_only_the_first_candidate_is_collected() {
        // Two feasible nodes: k = max(2 * 10 / 100, 1) = 1, so the scan stops at n1.
        let mut ssn = two_victims_cluster(500, 10).session(&tap_conf(""));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("a-x-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "high-x-0").as_deref(), Some("n1"));
    }

    #[test]
    fn a_missing_start_time_counts_as_now() {
        let mut c = two_victims_cluster(10, 10);
        c.pod_with(
            "b-x-0",
            "b",
            "2",
            Some("n2"),
            json!({"spec": {"priority": 10}, "status": {"startTime": "2024-01-01T00:00:00Z"}}),
        );
        let ssn = c.session(&tap_conf(ALL_NODES));
        let candidate = |pod: &str, scan| Candidate {
            node: node(&ssn, "n1"),
            victims: vec![task(&ssn, pod)],
            scan,
        };
        let (a, b) = (
            cost(&ssn, &candidate("a-x-0", 0)),
            cost(&ssn, &candidate("b-x-0", 1)),
        );
        assert_eq!(a.latest_start, Reverse(ssn.state.now()));
        assert_eq!(b.latest_start, Reverse(ts("2024-01-01T00:00:00Z")));
        assert_eq!(a.priority_sum, 10 + (1 << 31));
        // The test session's `now` is the Unix epoch, before b-x-0 started: b-x-0 started
        // later, so its node wins step 4.
        assert!(b < a);
    }

    #[test]
    fn a_victim_needed_only_by_a_predicate_is_found_and_the_other_spared() {
        // n1 has room, but `test/repels` keeps any other pod off it while db-x-0 is there.
        // other-x-0 (created later) comes first in victim order and is spared again.
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "8", json!({"test/repels": "db-x-0"}));
        c.job("db", "q1", 1, "low").job("other", "q1", 1, "low");
        c.pod("db-x-0", "db", "1", Some("n1"));
        c.pod("other-x-0", "other", "1", Some("n1"));
        c.job("web", "q1", 1, "high");
        c.pod("web-x-0", "web", "1", None);
        let mut ssn = c.session(&tap_conf(""));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("db-x-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(status(&ssn, "other-x-0"), TaskStatus::Running);
        assert_eq!(pipelined_on(&ssn, "web-x-0").as_deref(), Some("n1"));
        let e = &ssn.state.decisions().evictions[0];
        assert_eq!(e.preemptor.as_deref(), Some("ns/web-x-0"));
    }

    #[test]
    fn a_node_with_room_is_used_without_eviction() {
        let mut c = two_victims_cluster(10, 10);
        c.node("n3", "2", json!({}));
        let mut ssn = c.session(&tap_conf(ALL_NODES));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(pipelined_on(&ssn, "high-x-0").as_deref(), Some("n3"));
        assert!(!ssn.state.task(task(&ssn, "high-x-0")).eviction_occurred);
    }

    #[test]
    fn nothing_is_evicted_for_a_task_its_queue_never_admits() {
        // q1 may hold 3 cpu; the preemptor asks for 4, so no eviction can let it in.
        let mut c = Cluster::new();
        c.queue("q1", json!({"capability": {"cpu": "3"}}), true);
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "4", json!({}));
        c.job("low", "q1", 0, "low");
        c.pod("low-x-0", "low", "1", Some("n1"));
        c.pod("low-x-1", "low", "1", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod("high-x-0", "high", "4", None);
        let mut ssn = c.session(&tap_conf(ALL_NODES));
        let n1 = node(&ssn, "n1");
        let before = ssn.state.node(n1).idle.milli_cpu;
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        for pod in ["low-x-0", "low-x-1"] {
            assert_eq!(status(&ssn, pod), TaskStatus::Running);
            // The dry run leaves no trace on the victims.
            assert!(ssn.state.task(task(&ssn, pod)).last_transaction.is_none());
        }
        assert_eq!(status(&ssn, "high-x-0"), TaskStatus::Pending);
        let n = ssn.state.node(n1);
        assert_eq!(n.idle.milli_cpu, before);
        assert_eq!(n.releasing.milli_cpu, 0.0);
    }

    #[test]
    fn a_refused_best_candidate_gives_way_to_the_next() {
        // n1 (victim of pod priority 10) is the better candidate, but the room it frees would
        // first go to vip-x-1 (a job served before the preemptor's), after which the preemptor
        // no longer fits: rule 3 refuses n1, and n2 (victim of priority 50) is used.
        let mut c = Cluster::new();
        c.priority_class("low", 10)
            .priority_class("mid", 50)
            .priority_class("high", 100)
            .priority_class("vip", 200);
        c.node("n1", "4", json!({}))
            .node("n2", "2", json!({}))
            .node("n3", "1", json!({}));
        c.job("low", "q1", 1, "low").job("mid", "q1", 1, "mid");
        c.pod_with(
            "low-x-0",
            "low",
            "3",
            Some("n1"),
            json!({"spec": {"priority": 10}}),
        );
        c.pod_with(
            "mid-x-0",
            "mid",
            "2",
            Some("n2"),
            json!({"spec": {"priority": 50}}),
        );
        // vip is not starving (its one running pod meets minMember), but has a pending pod.
        c.job("vip", "q1", 1, "vip");
        c.pod("vip-x-0", "vip", "1", Some("n3"));
        c.pod("vip-x-1", "vip", "3", None);
        c.job("high", "q1", 1, "high");
        c.pod("high-x-0", "high", "2", None);
        let mut ssn = c.session(&tap_conf(ALL_NODES));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("mid-x-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "high-x-0").as_deref(), Some("n2"));
        assert_eq!(status(&ssn, "low-x-0"), TaskStatus::Running);
        assert_eq!(ssn.state.decisions().preemption_attempts, 2);
    }

    #[test]
    fn invalid_sizing_arguments_fall_back_to_the_defaults() {
        let extra = "    topologyAwarePreemptWorkerNum: 0\n    maxCandidateNodesAbsolute: -1\n";
        let mut ssn = two_victims_cluster(500, 10).session(&tap_conf(extra));
        run(&mut ssn, "preempt");
        // Defaults: k = 1, the first node in scan order.
        assert_eq!(
            evictions(&ssn),
            vec![("a-x-0".to_string(), "preempt".to_string())]
        );
    }
}
