//! Shared machinery of the actions (spec/framework.md §6.0): how many feasible nodes to look
//! for, the feasible-node search with its error cache, and scoring and choosing a node.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::framework::Session;
use crate::model::fit::{FitError, FitErrors, FitStatus, StatusCode};
use crate::model::{NodeId, TaskId};

use super::search_index::{CATCH_UP_PER_TASK, follow_touches, index_lag, work_out_leaves};
use super::search_memo::{ClassMemo, Remembered};

/// `CalculateNumOfFeasibleNodesToFind` (§6.0.1), integer arithmetic as Volcano.
pub fn num_feasible_nodes_to_find(ssn: &Session, n: usize) -> usize {
    let o = ssn.state.options();
    let min_nodes = o.minimum_feasible_nodes;
    if n <= min_nodes || o.percentage_nodes_to_find >= 100 {
        return n;
    }
    let mut p = o.percentage_nodes_to_find as i64;
    if p <= 0 {
        p = 50 - (n as i64) / 125;
        if p < o.minimum_percentage_nodes_to_find as i64 {
            p = o.minimum_percentage_nodes_to_find as i64;
        }
    }
    let k = (n as i64 * p / 100) as usize;
    k.max(min_nodes)
}

/// Resource check the actions run before plugin predicates: the request must fit the node's
/// future idle resources ("Insufficient <resource>").
pub fn resource_fit(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), FitError> {
    future_idle_fit(ssn, task, node).map_err(|name| {
        FitError::new(FitStatus::new(
            StatusCode::Unschedulable,
            format!("Insufficient {name}"),
            "allocate",
        ))
    })
}

/// `allocPredicate`: resources first, then the plugins (`PredicateForAllocateAction`).
pub fn allocate_predicate(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), FitError> {
    resource_fit(ssn, task, node)?;
    predicate_for_allocate(ssn, task, node)
}

/// The request against the node's future idle resources: the first dimension short, if any.
fn future_idle_fit(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), &'static str> {
    let n = ssn.state.node(node);
    ssn.state
        .task(task)
        .resreq()
        .fits_future_idle(&n.idle, &n.releasing, &n.pipelined)
}

/// [`allocate_predicate`]'s answer without its reasons.
pub fn allocate_fits(ssn: &Session, task: TaskId, node: NodeId) -> bool {
    future_idle_fit(ssn, task, node).is_ok() && ssn.predicate_allows_allocation(task, node)
}

/// Whether the task's request fits the node's idle resources now (the choice prefers such
/// nodes; placing there allocates rather than pipelines).
pub fn fits_idle_now(ssn: &Session, task: TaskId, node: NodeId) -> bool {
    ssn.state.task(task).resreq().less_equal(
        &ssn.state.node(node).idle,
        crate::model::DimensionDefault::Zero,
    )
}

/// A node check with its reasons.
pub type CheckFn = dyn Fn(&Session, TaskId, NodeId) -> Result<(), FitError> + Sync;
/// The same check's pass or fail alone.
pub type FitsFn = dyn Fn(&Session, TaskId, NodeId) -> bool + Sync;

/// `PredicateForAllocateAction`: a fit error with no failing code counts as fitting.
pub fn predicate_for_allocate(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), FitError> {
    match ssn.predicate(task, node) {
        Err(e) if e.blocks_allocation() => Err(e),
        _ => Ok(()),
    }
}

/// Why a node failed a search: an error of the class's memo (by id), one the search computed
/// (by id in [`Found::errors`]; new to the role's cache), or one taken from the role's error
/// cache.
enum Failure {
    Memo(u32),
    Computed(u32),
    Cached(Arc<FitError>),
}

/// What a search found: the feasible nodes in search order, how many nodes it took, the nodes
/// that failed (gathered only when wanted), and the distinct errors it computed.
#[derive(Default)]
struct Found {
    feasible: Vec<NodeId>,
    processed: usize,
    failures: Vec<(NodeId, Failure)>,
    errors: Computed,
}

/// The distinct errors one search computed, each kept once: a search that fails everywhere
/// gives the same few errors on thousands of nodes, which are then counted together.
#[derive(Default)]
struct Computed {
    errors: Vec<Arc<FitError>>,
    /// The errors past the first [`FEW_ERRORS`], by content (the first are compared in turn,
    /// which costs less than hashing an error).
    ids: HashMap<FitError, u32>,
}

/// How many distinct errors are looked for by comparison before by hash.
const FEW_ERRORS: usize = 8;

impl Computed {
    fn id(&mut self, err: FitError) -> u32 {
        let few = &self.errors[..self.errors.len().min(FEW_ERRORS)];
        if let Some(id) = few.iter().position(|e| **e == err) {
            return id as u32;
        }
        if let Some(&id) = self.ids.get(&err) {
            return id;
        }
        let id = self.errors.len() as u32;
        if self.errors.len() >= FEW_ERRORS {
            self.ids.insert(err.clone(), id);
        }
        self.errors.push(Arc::new(err));
        id
    }
}

impl Found {
    /// Files a failure the search computed.
    fn computed(&mut self, node: NodeId, err: FitError) {
        let id = self.errors.id(err);
        self.failures.push((node, Failure::Computed(id)));
    }

    /// The fit errors of a search that found nothing: the nodes that failed with the same
    /// error are counted together (the counts do not depend on the order).
    fn fit_errors(&self, memo: Option<&ClassMemo>) -> FitErrors {
        let mut fit_errors = FitErrors::default();
        let mut by_memo: Vec<Vec<NodeId>> = Vec::new();
        let mut by_computed: Vec<Vec<NodeId>> = vec![Vec::new(); self.errors.errors.len()];
        for (node, failure) in &self.failures {
            match failure {
                Failure::Memo(id) => {
                    let id = *id as usize;
                    if by_memo.len() <= id {
                        by_memo.resize_with(id + 1, Vec::new);
                    }
                    by_memo[id].push(*node);
                }
                Failure::Computed(id) => by_computed[*id as usize].push(*node),
                Failure::Cached(err) => fit_errors.set_node_error(*node, err),
            }
        }
        if let Some(memo) = memo {
            for (id, nodes) in by_memo.into_iter().enumerate() {
                fit_errors.add_nodes(memo.error(id as u32), nodes);
            }
        }
        for (err, nodes) in self.errors.errors.iter().zip(by_computed) {
            fit_errors.add_nodes(err, nodes);
        }
        fit_errors
    }
}

/// The role's remembered failures, by node.
type ErrorCache = HashMap<NodeId, Arc<FitError>>;

/// One search: from `start`, over `nodes` in order (wrapping), until `want` nodes fit.
struct Scan<'a> {
    session: &'a Session,
    task: TaskId,
    nodes: &'a [NodeId],
    start: usize,
    want: usize,
    check: &'a CheckFn,
    /// `check` without its reasons, when the caller has it and the memo is on.
    fits: Option<&'a FitsFn>,
    /// The role's error cache, which answers before anything else.
    cached: Option<&'a ErrorCache>,
    /// Whether the failures are wanted even when a node fits (for the error cache).
    keep_failures: bool,
}

impl Scan<'_> {
    fn node(&self, i: usize) -> NodeId {
        self.nodes[(self.start + i) % self.nodes.len()]
    }

    fn cached_error(&self, node: NodeId) -> Option<Arc<FitError>> {
        self.cached.and_then(|c| c.get(&node)).cloned()
    }

    /// The memo's answer on `node` under `stamp`, checked and remembered if it has none.
    #[inline]
    fn answer(&self, memo: &mut ClassMemo, node: NodeId, stamp: u64) -> Remembered {
        match memo.check(node, stamp) {
            Some(r) => r,
            None => self.fresh_answer(memo, node, stamp),
        }
    }

    /// The check's answer on `node`, remembered. Kept out of line: the remembered path above
    /// runs for most nodes of every search and stays small.
    #[inline(never)]
    fn fresh_answer(&self, memo: &mut ClassMemo, node: NodeId, stamp: u64) -> Remembered {
        match self.fits {
            Some(fits) => memo.remember_outcome(node, stamp, fits(self.session, self.task, node)),
            None => {
                let result = (self.check)(self.session, self.task, node);
                memo.remember_check(node, stamp, result)
            }
        }
    }

    /// [`Scan::answer`], with the reasons of a failure worked out if they were not: the
    /// stamp is the same, so the check gives what it would have given then.
    fn answer_with_reasons(&self, memo: &mut ClassMemo, node: NodeId, stamp: u64) -> Remembered {
        match self.answer(memo, node, stamp) {
            Remembered::Refused => {
                let result = (self.check)(self.session, self.task, node);
                memo.remember_check(node, stamp, result)
            }
            r => r,
        }
    }

    /// Through the class's memo: a remembered answer under the node's stamp stands for the
    /// check, a fresh one is remembered. Remembered answers cost a lookup, so the nodes are
    /// taken one by one, and this loop only looks for the nodes that fit.
    fn with_memo(&self, memo: &mut ClassMemo) -> Found {
        let n = self.nodes.len();
        let stamps = self.session.state.search_stamps();
        let mut feasible = Vec::with_capacity(self.want.min(n));
        let mut processed = 0;
        let mut at = self.start;
        while processed < n && feasible.len() < self.want {
            let node = self.nodes[at];
            processed += 1;
            at = if at + 1 == n { 0 } else { at + 1 };
            if self.cached.is_some_and(|c| c.contains_key(&node)) {
                continue;
            }
            if self.answer(memo, node, stamps.of(node)) == Remembered::Fits {
                feasible.push(node);
            }
        }
        // The failures are read only for the fit errors of a search that found nothing and
        // for the error cache: gathered then, from the answers just looked at (nothing moved
        // in between, so each is still remembered).
        let mut failures = Vec::new();
        if feasible.is_empty() || self.keep_failures {
            for i in 0..processed {
                let node = self.node(i);
                if let Some(err) = self.cached_error(node) {
                    failures.push((node, Failure::Cached(err)));
                    continue;
                }
                if let Remembered::Fails(id) = self.answer_with_reasons(memo, node, stamps.of(node))
                {
                    failures.push((node, Failure::Memo(id)));
                }
            }
        }
        Found {
            feasible,
            processed,
            failures,
            errors: Computed::default(),
        }
    }

    /// Without a memo: every node is checked, in parallel batches taken in node order. When
    /// no failure is kept for the error cache, the nodes are only told to fit or not, and
    /// their reasons worked out only if none fits.
    fn in_batches(&self) -> Found {
        if let Some(fits) = self.fits.filter(|_| !self.keep_failures) {
            let eval = |&node: &NodeId| fits(self.session, self.task, node);
            let mut found = self.batches(eval, |found, node, ok| {
                if ok {
                    found.feasible.push(node);
                }
            });
            if found.feasible.is_empty() {
                self.reasons(&mut found);
            }
            return found;
        }
        let eval = |&node: &NodeId| match self.cached_error(node) {
            Some(err) => Err(Err(err)),
            None => (self.check)(self.session, self.task, node).map_err(Ok),
        };
        self.batches(eval, |found, node, outcome| match outcome {
            Ok(()) => found.feasible.push(node),
            Err(Ok(err)) => found.computed(node, err),
            Err(Err(cached)) => found.failures.push((node, Failure::Cached(cached))),
        })
    }

    /// Evaluates the nodes in parallel batches taken in node order until `want` fit; `file`
    /// puts each node's outcome in the result.
    fn batches<T: Send>(
        &self,
        eval: impl Fn(&NodeId) -> T + Sync,
        mut file: impl FnMut(&mut Found, NodeId, T),
    ) -> Found {
        let n = self.nodes.len();
        let mut found = Found {
            feasible: Vec::with_capacity(self.want.min(n)),
            ..Found::default()
        };
        while found.processed < n && found.feasible.len() < self.want {
            let end = (found.processed + SEARCH_BATCH.max(self.want)).min(n);
            let batch: Vec<NodeId> = (found.processed..end).map(|i| self.node(i)).collect();
            let results: Vec<T> = if parallel(n) {
                batch.par_iter().map(&eval).collect()
            } else {
                batch.iter().map(&eval).collect()
            };
            for (&node, outcome) in batch.iter().zip(results) {
                found.processed += 1;
                file(&mut found, node, outcome);
                if found.feasible.len() >= self.want {
                    break;
                }
            }
        }
        found
    }

    /// The nodes the search took, with the reasons of their failures, checked again: nothing
    /// moved since they were told not to fit.
    fn reasons(&self, found: &mut Found) {
        let nodes: Vec<NodeId> = (0..found.processed).map(|i| self.node(i)).collect();
        let eval = |&node: &NodeId| {
            (self.check)(self.session, self.task, node)
                .err()
                .map(|e| (node, e))
        };
        let failed: Vec<(NodeId, FitError)> = if parallel(self.nodes.len()) {
            nodes.par_iter().filter_map(eval).collect()
        } else {
            nodes.iter().filter_map(eval).collect()
        };
        for (node, err) in failed {
            found.computed(node, err);
        }
    }
}

/// The feasible-node search with Volcano's per-(job, role) error cache (§6.0.2).
pub struct PredicateHelper {
    cache_enabled: bool,
    error_cache: HashMap<String, ErrorCache>,
    /// Whether the last search without a memo found nothing: the next one (often the job's
    /// next task) then likely finds nothing either and wants every node's reasons, which the
    /// full check gives in one pass rather than after a pass of outcomes.
    found_nothing: bool,
}

/// Nodes evaluated per parallel batch: large enough to keep both cores busy, small enough not
/// to overshoot the number of feasible nodes wanted by much.
const SEARCH_BATCH: usize = 256;

/// Clusters smaller than this are searched and scored on the session's own thread: waking the
/// pool's other threads costs more CPU than the work they would share (in steady state a
/// session places a pod or two).
pub(crate) const PARALLEL_MIN_NODES: usize = 1024;

/// Whether work over a cluster of `nodes` nodes is shared with the pool's other threads: not
/// on a small cluster (above), nor when the pool has no other thread, where a parallel
/// iterator only adds its bookkeeping.
fn parallel(nodes: usize) -> bool {
    nodes >= PARALLEL_MIN_NODES && rayon::current_num_threads() > 1
}

impl PredicateHelper {
    pub fn new(cache_enabled: bool) -> Self {
        Self {
            cache_enabled,
            error_cache: HashMap::new(),
            found_nothing: false,
        }
    }

    /// Whether the task's search reads and fills its role's error cache. Tasks of one role
    /// share failures, except when they use claims: their volumes differ per pod (Volcano
    /// shares them anyway, so a pod whose volume lives on a node another pod of its role
    /// failed on would never be tried there).
    fn role_cache_on(&self, ssn: &Session, task: TaskId) -> bool {
        let t = ssn.state.task(task);
        self.cache_enabled
            && !t.spec.role.is_empty()
            && !crate::model::claim::pod_uses_claims(&t.spec.pod)
    }

    /// [`PredicateHelper::predicate_nodes`] over every node of the session followed by
    /// [`choose_node`], answered by the class's index (`search_index`): the node they would
    /// choose, with the search start moved as the search moves it. `None`, with nothing moved,
    /// where the index does not answer: no index, the role's error cache in use, nothing fits
    /// (the search then works out why), or a score failed (the index is then given up).
    /// `nodes` must be every node of the session in node order (the index is kept by position).
    pub fn choose_indexed(
        &self,
        ssn: &mut Session,
        task: TaskId,
        nodes: &[NodeId],
        fits: &FitsFn,
        memo: &mut ClassMemo,
        tasks_left: usize,
    ) -> Option<NodeId> {
        let n = nodes.len();
        if n == 0 || !ssn.state.options().search_memo || self.role_cache_on(ssn, task) {
            return None;
        }
        let mut index = memo.index.take()?;
        // Catching up costs about a tree path per node touched since the index last looked; a
        // task's walk costs hundreds of lookups. An index too far behind for the tasks left is
        // left as it is, for a job of many tasks to catch up.
        // (Catching up never costs more than forgetting every leaf.)
        if index_lag(&ssn.state, &index).min(n) > tasks_left.saturating_mul(CATCH_UP_PER_TASK) {
            memo.index = Some(index);
            return None;
        }
        follow_touches(
            &ssn.state,
            &mut index,
            ssn.refusals_survive_placements(task),
        );
        let want = num_feasible_nodes_to_find(ssn, n);
        let start = ssn.state.node_search_start() % n;
        let session: &Session = ssn;
        let answer = index.choose(start, want, |stale| {
            work_out_leaves(session, task, fits, memo, stale)
        });
        let Ok(answer) = answer else {
            memo.index_refused = true;
            return None;
        };
        memo.index = Some(index);
        let (pos, processed) = answer?;
        ssn.state.set_node_search_start((start + processed) % n);
        Some(NodeId::from_index(pos))
    }

    /// Finds up to `numFeasibleNodesToFind` nodes that pass `check`, scanning `nodes` from the
    /// session's rotating start index. Batches are evaluated in parallel; results are taken in
    /// node order, so the outcome is deterministic (Volcano's is not).
    ///
    /// With a class memo, a node's remembered result under its current stamp stands for
    /// `check` (the caller vouches that the task's answers are node-local), and fresh results
    /// are remembered.
    ///
    /// The fit errors are filled only when no node is feasible, the one case callers read
    /// them: building them for every search would copy a reason per failing node. For the
    /// same reason `fits`, `check`'s answer without reasons, is asked instead where the
    /// reasons may not be read (with the memo on only, so that the property test compares).
    pub fn predicate_nodes(
        &mut self,
        ssn: &mut Session,
        task: TaskId,
        nodes: &[NodeId],
        check: &CheckFn,
        fits: Option<&FitsFn>,
        memo: Option<&mut ClassMemo>,
    ) -> (Vec<NodeId>, FitErrors) {
        let n = nodes.len();
        if n == 0 {
            return (Vec::new(), FitErrors::default());
        }
        let want = num_feasible_nodes_to_find(ssn, n);
        let t = ssn.state.task(task);
        let cache_on = self.role_cache_on(ssn, task);
        let group = if cache_on {
            t.job
                .map(|j| format!("{}/{}", ssn.state.job(j).spec.uid, t.spec.role))
                .unwrap_or_default()
        } else {
            String::new()
        };
        // Borrowed, not cloned: this runs for every task, and a role that keeps failing can
        // have an entry for most nodes.
        let cached = if cache_on {
            self.error_cache.get(&group)
        } else {
            None
        };
        let start = ssn.state.node_search_start() % n;
        let scan = Scan {
            session: ssn,
            task,
            nodes,
            start,
            want,
            check,
            fits: fits.filter(|_| {
                ssn.state.options().search_memo && (memo.is_some() || !self.found_nothing)
            }),
            cached,
            keep_failures: cache_on,
        };
        let (found, memo) = match memo {
            Some(memo) => (scan.with_memo(memo), Some(&*memo)),
            None => {
                let found = scan.in_batches();
                self.found_nothing = found.feasible.is_empty();
                (found, None)
            }
        };
        let fit_errors = if found.feasible.is_empty() {
            found.fit_errors(memo)
        } else {
            FitErrors::default()
        };
        if cache_on {
            // A memo answer is new to the cache too: the cache is the role's, the memo the
            // class's.
            let computed = &found.errors.errors;
            let fresh = found.failures.into_iter().filter_map(|(node, f)| match f {
                Failure::Computed(id) => Some((node, computed[id as usize].clone())),
                Failure::Cached(_) => None,
                Failure::Memo(id) => memo.map(|m| (node, m.error(id).clone())),
            });
            self.error_cache.entry(group).or_default().extend(fresh);
        }
        ssn.state
            .set_node_search_start((start + found.processed) % n);
        (found.feasible, fit_errors)
    }
}

/// `PrioritizeNodes` (§6.0.3): Σ per-node order scores + Σ batch scores for each node, in the
/// input order. `None` when scoring failed (Volcano then returns empty buckets).
pub fn prioritize_nodes(ssn: &Session, task: TaskId, nodes: &[NodeId]) -> Option<Vec<f64>> {
    let mut scores: Vec<f64> = if ssn.has_node_order() {
        let score = |&n: &NodeId| match ssn.node_order(task, n) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "node order failed; node gets no per-node score");
                0.0
            }
        };
        if parallel(ssn.state.nodes().len()) {
            nodes.par_iter().map(score).collect()
        } else {
            nodes.iter().map(score).collect()
        }
    } else {
        vec![0.0; nodes.len()]
    };
    match ssn.batch_node_order(task, nodes) {
        Ok(batch) => {
            for (s, b) in scores.iter_mut().zip(batch) {
                *s += b;
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "batch node order failed");
            return None;
        }
    }
    Some(scores)
}

/// [`choose_node`] through a class memo, without building the groups: each node's idle fit and
/// score come from the memo under the node's stamp; nodes without a score are scored together
/// and remembered before a second pass (below). The best node that fits `Idle`,
/// else the best of the rest, is what the groups give, since a group of one needs no score
/// and a remembered score cannot fail. `None` when scoring failed: the caller then takes the
/// groups' path, which fails over as Volcano does.
fn choose_node_memo(
    ssn: &Session,
    task: TaskId,
    feasible: &[NodeId],
    memo: &mut ClassMemo,
) -> Option<Option<NodeId>> {
    let stamps = ssn.state.search_stamps();
    let fits_idle = |memo: &mut ClassMemo, n: NodeId, stamp: u64| {
        memo.fits_idle(n, stamp, || fits_idle_now(ssn, task, n))
    };
    // One pass in node order while every score is remembered (the usual case once a class
    // has seen the nodes): each node's slot is read once. A node without a score ends it.
    let mut best = Best::default();
    let mut missing: Vec<NodeId> = Vec::new();
    for &n in feasible {
        let stamp = stamps.of(n);
        match memo.score(n, stamp) {
            Some(score) if missing.is_empty() => {
                let fits = fits_idle(memo, n, stamp);
                best.offer(n, score, fits);
            }
            Some(_) => {}
            None => missing.push(n),
        }
    }
    if missing.is_empty() {
        return Some(best.choice());
    }
    // The nodes without a score are scored together (the caller vouches that the task's scores
    // are node-local, so each gets the score it would get in its group) and remembered; then
    // the pass is made again over every node.
    let fresh = prioritize_nodes(ssn, task, &missing)?;
    for (&n, score) in missing.iter().zip(fresh) {
        memo.remember_score(n, stamps.of(n), score);
    }
    let mut best = Best::default();
    for &n in feasible {
        let stamp = stamps.of(n);
        let score = memo.score(n, stamp)?;
        let fits = fits_idle(memo, n, stamp);
        best.offer(n, score, fits);
    }
    Some(best.choice())
}

/// The best node that fits `Idle` and the best of the rest, each the first of the highest
/// score in the order offered (Volcano picks one at random).
#[derive(Default)]
struct Best {
    idle: Option<(NodeId, f64)>,
    future: Option<(NodeId, f64)>,
}

impl Best {
    #[inline]
    fn offer(&mut self, n: NodeId, score: f64, fits_idle: bool) {
        let best = if fits_idle {
            &mut self.idle
        } else {
            &mut self.future
        };
        if best.is_none_or(|(_, b)| score > b) {
            *best = Some((n, score));
        }
    }

    fn choice(&self) -> Option<NodeId> {
        self.idle.or(self.future).map(|(n, _)| n)
    }
}

/// `SelectBestNodeAndScore`: the highest score; among equal scores the first node in the
/// given order (Volcano picks one at random — we stay deterministic).
pub fn select_best_node(nodes: &[NodeId], scores: &[f64]) -> Option<NodeId> {
    let mut best: Option<(NodeId, f64)> = None;
    for (&n, &s) in nodes.iter().zip(scores) {
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((n, s));
        }
    }
    best.map(|(n, _)| n)
}

/// Chooses a node among feasible ones (§6.0.3): nodes where the request fits `Idle` first,
/// then nodes where it fits only the future idle resources. Every feasible node already passed
/// the future-idle check of [`allocate_predicate`], so that check is not repeated here.
pub fn choose_node(
    ssn: &Session,
    task: TaskId,
    feasible: &[NodeId],
    memo: Option<&mut ClassMemo>,
) -> Option<NodeId> {
    if let Some(memo) = memo
        && let Some(best) = choose_node_memo(ssn, task, feasible, memo)
    {
        return best;
    }
    let (idle_fit, future_fit): (Vec<NodeId>, Vec<NodeId>) =
        feasible.iter().partition(|&&n| fits_idle_now(ssn, task, n));
    for group in [idle_fit, future_fit] {
        match group.len() {
            0 => continue,
            1 => return Some(group[0]),
            _ => {
                if let Some(scores) = prioritize_nodes(ssn, task, &group)
                    && let Some(best) = select_best_node(&group, &scores)
                {
                    return Some(best);
                }
            }
        }
    }
    None
}
