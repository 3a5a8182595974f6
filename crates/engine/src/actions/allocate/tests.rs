//! Allocate's reuse of a failed search (`FailedSearch`): counted calls and the recorded
//! reasons, with the memo on and off.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::actions::one_plugin_session::{open, three_nodes_one_job};
use crate::framework::{ExtensionPoints as EP, Plugin, SessionState};
use crate::model::{FitError, FitStatus, NodeId, StatusCode, TaskId};

static PREDICATES: AtomicUsize = AtomicUsize::new(0);

/// Refuses every node for a reason that names the node, counting its calls. Not node-local
/// (so the memo keeps nothing of it and every search calls it), but alike for any two tasks.
struct Refusing;

impl Plugin for Refusing {
    fn name(&self) -> &'static str {
        "refusing"
    }
    fn extension_points(&self) -> EP {
        EP::PREDICATE
    }
    fn predicate(&self, ssn: &SessionState, _: TaskId, n: NodeId) -> Result<(), FitError> {
        PREDICATES.fetch_add(1, Ordering::SeqCst);
        Err(FitError::new(FitStatus::new(
            StatusCode::Unschedulable,
            format!("refused on {}", ssn.node(n).name()),
            "refusing",
        )))
    }
    fn predicate_answers_alike(&self, _: &SessionState, _: TaskId, _: TaskId) -> bool {
        true
    }
}

/// Runs allocate on one job of `pods` pods, `minMember` 1 (it goes on after a task fails);
/// returns the predicate calls and each pod's recorded reasons.
fn allocate(pods: usize, memo: bool) -> (usize, Vec<(String, String)>) {
    let state = three_nodes_one_job(1, pods);
    let mut ssn = open(&state, "refusing", |_| Box::new(Refusing), memo);
    let before = PREDICATES.load(Ordering::SeqCst);
    crate::actions::allocate::execute(&mut ssn);
    let calls = PREDICATES.load(Ordering::SeqCst) - before;
    let mut reasons: Vec<(String, String)> = ssn
        .close()
        .pod_conditions
        .into_iter()
        .map(|c| (c.pod, c.message))
        .collect();
    reasons.sort();
    (calls, reasons)
}

/// One test, so the call counter is not shared with a concurrent run.
#[test]
fn a_failed_search_is_not_done_again_for_a_task_answered_alike() {
    let (one, _) = allocate(1, true);
    let (six, with) = allocate(6, true);
    let (six_without, without) = allocate(6, false);
    assert!(one > 0);
    // With the memo, the job's first task searches; the five after it take its reasons.
    assert_eq!(six, one);
    // Without it, every task checks every node (as Volcano does).
    assert_eq!(six_without, 6 * 3);
    // The same reasons on every pod either way.
    assert_eq!(with.len(), 6);
    assert_eq!(with, without);
    assert!(with[0].1.contains("refused on n0"), "{:?}", with[0]);
}
