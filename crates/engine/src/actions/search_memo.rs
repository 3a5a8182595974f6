//! The allocate search memo: predicate results and scores remembered per scheduling class and
//! node, so that the tasks of a job — and every task with the same pod spec — do not check and
//! score a node again while nothing on it changed.
//!
//! Volcano computes every (task, node) pair afresh. The memo gives the same answers because it
//! is used only where they cannot differ:
//!
//! * a task's answers are remembered only when every plugin that predicates or scores says they
//!   are node-local for it ([`Session::search_is_node_local`]): they depend only on the task's
//!   [`SchedClass`] and the node's state;
//! * each answer carries the node's stamp ([`SessionState::search_stamp`]), which moves whenever
//!   the session puts a task on the node or takes one off, and for every node when a task whose
//!   placement reaches beyond its node moves;
//! * an answer is reused only under the stamp it was computed at.
//!
//! A property test (`tests/search_memo_properties.rs`) runs random clusters and session
//! sequences with the memo on and off and requires identical decisions.
//!
//! A class whose job will sweep the cluster several times also keeps an index over these
//! answers ([`super::search_index`]), which finds a task's nodes and choice without walking.
//!
//! [`Session::search_is_node_local`]: crate::framework::Session::search_is_node_local
//! [`SessionState::search_stamp`]: crate::framework::SessionState::search_stamp

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{FitError, NodeId, SchedClass};

use super::search_index::{ClassIndex, MAX_INDEXED_NODES};

/// Most remembered (class, node) answers in one session: about 32 MiB (more where checks fail,
/// by their reasons). Past it the memo starts over, which only costs recomputation.
const MAX_SLOTS: usize = 1 << 20;

/// A remembered predicate result: the node's version it was computed at (the low half of its
/// stamp; the high half is the class's epoch) and the answer: [`NOTHING`], [`REFUSED`], 0 for
/// fits, or 1 + the error's place in the class's error table. Kept apart from the scores and
/// small, so that a search reads 8 bytes per node.
#[derive(Clone, Copy)]
struct CheckSlot {
    version: u32,
    answer: u32,
}

/// Nothing remembered.
const NOTHING: u32 = u32::MAX;
/// Fails, for reasons not worked out yet.
const REFUSED: u32 = u32::MAX - 1;

impl Default for CheckSlot {
    fn default() -> Self {
        CheckSlot {
            version: 0,
            answer: NOTHING,
        }
    }
}

/// A remembered score and idle fit, each with the node's version it was computed at.
#[derive(Clone, Copy, Default)]
struct ChoiceSlot {
    score: f64,
    score_version: u32,
    idle_version: u32,
    has_score: bool,
    has_idle: bool,
    fits_idle: bool,
}

/// A stamp's halves: the epoch (which moves for every node at once) and the node's version.
fn split(stamp: u64) -> (u64, u32) {
    (stamp >> 32, stamp as u32)
}

/// What one class was told on each node.
pub struct ClassMemo {
    /// The epoch the slots were filled in; a stamp of another epoch finds nothing, and the
    /// first answer remembered under a new one clears them all.
    epoch: u64,
    checks: Vec<CheckSlot>,
    choices: Vec<ChoiceSlot>,
    /// The distinct errors the class was given, each once: a class fails most nodes for the
    /// same few reasons, so a search that fails everywhere counts reasons per error, not per
    /// node.
    errors: Vec<Arc<FitError>>,
    error_ids: HashMap<Arc<FitError>, u32>,
    /// The class's index over every node, while it has one ([`SearchMemo::class_indexed`]).
    pub(super) index: Option<Box<ClassIndex>>,
    /// An index could not give its answer (a score failed): the class searches by walking.
    pub(super) index_refused: bool,
}

/// A remembered predicate result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remembered {
    Fits,
    /// Fails, for reasons not worked out: a check under the same stamp gives them.
    Refused,
    /// The error's id in the class's table ([`ClassMemo::error`]).
    Fails(u32),
}

impl ClassMemo {
    fn new(nodes: usize) -> Self {
        ClassMemo::with_slots(
            vec![CheckSlot::default(); nodes],
            vec![ChoiceSlot::default(); nodes],
        )
    }

    /// A memo that remembers nothing, in these slots (all empty).
    fn with_slots(checks: Vec<CheckSlot>, choices: Vec<ChoiceSlot>) -> Self {
        ClassMemo {
            epoch: 0,
            checks,
            choices,
            errors: Vec::new(),
            error_ids: HashMap::new(),
            index: None,
            index_refused: false,
        }
    }

    /// A memo for `nodes` nodes in `spare`'s slots when they have that size: a large session
    /// makes hundreds of class memos, and fresh slots cost a page fault per 4 KiB. Only the
    /// slots are taken over; the memo is a new one.
    fn reuse(spare: Option<ClassMemo>, nodes: usize) -> Self {
        match spare {
            Some(ClassMemo {
                mut checks,
                mut choices,
                ..
            }) if checks.len() == nodes => {
                checks.fill(CheckSlot::default());
                choices.fill(ChoiceSlot::default());
                ClassMemo::with_slots(checks, choices)
            }
            _ => ClassMemo::new(nodes),
        }
    }

    /// Makes the slots those of `epoch`, forgetting them all if it moved.
    fn enter(&mut self, epoch: u64) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.checks.fill(CheckSlot::default());
            self.choices.fill(ChoiceSlot::default());
        }
    }

    /// The remembered predicate result on `node`, if it was computed at `stamp`.
    #[inline]
    pub fn check(&self, node: NodeId, stamp: u64) -> Option<Remembered> {
        let (epoch, version) = split(stamp);
        let slot = self.checks.get(node.index())?;
        if epoch != self.epoch || slot.answer == NOTHING || slot.version != version {
            return None;
        }
        Some(match slot.answer {
            0 => Remembered::Fits,
            REFUSED => Remembered::Refused,
            e => Remembered::Fails(e - 1),
        })
    }

    /// Remembers a result computed at `stamp`; returns it as [`ClassMemo::check`] would.
    pub fn remember_check(
        &mut self,
        node: NodeId,
        stamp: u64,
        result: Result<(), FitError>,
    ) -> Remembered {
        let remembered = match result {
            Ok(()) => Remembered::Fits,
            Err(e) => Remembered::Fails(self.intern(e)),
        };
        self.remember(node, stamp, remembered)
    }

    /// Remembers whether the check passed, without its reasons.
    pub fn remember_outcome(&mut self, node: NodeId, stamp: u64, fits: bool) -> Remembered {
        let remembered = if fits {
            Remembered::Fits
        } else {
            Remembered::Refused
        };
        self.remember(node, stamp, remembered)
    }

    fn remember(&mut self, node: NodeId, stamp: u64, remembered: Remembered) -> Remembered {
        let (epoch, version) = split(stamp);
        self.enter(epoch);
        if let Some(slot) = self.checks.get_mut(node.index()) {
            slot.version = version;
            slot.answer = match remembered {
                Remembered::Fits => 0,
                Remembered::Refused => REFUSED,
                Remembered::Fails(id) => id + 1,
            };
        }
        remembered
    }

    fn intern(&mut self, e: FitError) -> u32 {
        if let Some(&id) = self.error_ids.get(&e) {
            return id;
        }
        // At most one new error per predicate call: far fewer than 2^32 - 2 in a session.
        let id = self.errors.len() as u32;
        let e = Arc::new(e);
        self.errors.push(e.clone());
        self.error_ids.insert(e, id);
        id
    }

    /// How many distinct errors the class was given.
    pub fn error_count(&self) -> usize {
        self.errors.len()
    }

    /// The error of id `id` (from [`Remembered::Fails`]).
    pub fn error(&self, id: u32) -> &Arc<FitError> {
        &self.errors[id as usize]
    }

    /// The remembered score on `node`, if it was computed at `stamp`.
    #[inline]
    pub fn score(&self, node: NodeId, stamp: u64) -> Option<f64> {
        let (epoch, version) = split(stamp);
        self.choices
            .get(node.index())
            .filter(|c| epoch == self.epoch && c.has_score && c.score_version == version)
            .map(|c| c.score)
    }

    pub fn remember_score(&mut self, node: NodeId, stamp: u64, score: f64) {
        let (epoch, version) = split(stamp);
        self.enter(epoch);
        if let Some(c) = self.choices.get_mut(node.index()) {
            c.score_version = version;
            c.has_score = true;
            c.score = score;
        }
    }

    /// Whether the request fits the node's idle resources, computed at most once per stamp.
    #[inline]
    pub fn fits_idle(&mut self, node: NodeId, stamp: u64, compute: impl FnOnce() -> bool) -> bool {
        let (epoch, version) = split(stamp);
        self.enter(epoch);
        match self.choices.get_mut(node.index()) {
            Some(c) if c.has_idle && c.idle_version == version => c.fits_idle,
            Some(c) => {
                c.idle_version = version;
                c.has_idle = true;
                c.fits_idle = compute();
                c.fits_idle
            }
            None => compute(),
        }
    }
}

/// Most tree leaves of all class indexes at once, about 32 MiB (an index takes two 16-byte tree
/// nodes and a stale bit per leaf, leaves rounded up to a power of two ≥ the nodes); past it
/// the oldest index goes, which only costs rebuilding it if its class comes back. Classes come
/// back across jobs (jobs of one shape share a class), so enough are kept for a few dozen
/// classes on a large cluster.
const MAX_INDEX_LEAVES: usize = 1 << 20;

/// The memo of one allocate run.
#[derive(Default)]
pub struct SearchMemo {
    /// By class; the class is already a hash, so a light hasher does.
    classes: rustc_hash::FxHashMap<SchedClass, ClassMemo>,
    /// The classes that have an index, oldest first.
    indexed: std::collections::VecDeque<SchedClass>,
    /// Memos and indexes let go of, whose buffers the next new ones take over.
    spare: Vec<ClassMemo>,
    spare_indexes: Vec<ClassIndex>,
}

impl SearchMemo {
    /// The class's memo, made on first use for `nodes` nodes.
    pub fn class(&mut self, class: SchedClass, nodes: usize) -> &mut ClassMemo {
        if !self.classes.contains_key(&class)
            && (self.classes.len() + 1).saturating_mul(nodes) > MAX_SLOTS
        {
            for (_, mut memo) in self.classes.drain() {
                self.spare_indexes
                    .extend(memo.index.take().map(|index| *index));
                self.spare.push(memo);
            }
            self.indexed.clear();
        }
        let spare = &mut self.spare;
        self.classes
            .entry(class)
            .or_insert_with(|| ClassMemo::reuse(spare.pop(), nodes))
    }

    /// [`SearchMemo::class`], with an index over the nodes (built on first use) unless the
    /// class refused one: for a class whose search will sweep the cluster.
    pub fn class_indexed(&mut self, class: SchedClass, nodes: usize) -> &mut ClassMemo {
        let wants_index = {
            let memo = self.class(class, nodes);
            memo.index.is_none() && !memo.index_refused && nodes <= MAX_INDEXED_NODES
        };
        if wants_index {
            self.indexed.retain(|c| *c != class);
            let max_indexes = (MAX_INDEX_LEAVES / nodes.next_power_of_two().max(1)).max(1);
            if self.indexed.len() >= max_indexes
                && let Some(oldest) = self.indexed.pop_front()
                && let Some(memo) = self.classes.get_mut(&oldest)
            {
                self.spare_indexes
                    .extend(memo.index.take().map(|index| *index));
            }
            self.indexed.push_back(class);
        }
        let index = wants_index.then(|| ClassIndex::reuse(self.spare_indexes.pop(), nodes));
        let memo = self.class(class, nodes);
        if index.is_some() {
            memo.index = index;
        }
        memo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_reused_only_under_their_stamp() {
        let mut memo = SearchMemo::default();
        let class = memo.class(SchedClass(7), 3);
        let node = NodeId::from_index(1);
        assert!(class.check(node, 5).is_none());
        class.remember_check(node, 5, Ok(()));
        class.remember_score(node, 5, 12.5);
        assert_eq!(class.check(node, 5), Some(Remembered::Fits));
        assert_eq!(class.score(node, 5), Some(12.5));
        assert!(class.check(node, 6).is_none());
        assert_eq!(class.score(node, 6), None);
        assert!(class.check(NodeId::from_index(9), 5).is_none());
    }

    /// A memo past its size starts over; the classes after that are made of the buffers of
    /// the ones let go, and must remember nothing of them, index included.
    #[test]
    fn a_memo_made_of_spare_buffers_remembers_nothing() {
        let nodes = MAX_SLOTS / 2;
        let node = NodeId::from_index(nodes - 1);
        let stamp = (1 << 32) | 3;
        let mut memo = SearchMemo::default();
        for c in [1, 2] {
            let class = memo.class_indexed(SchedClass(c), nodes);
            class.remember_check(node, stamp, Err(FitError::error("full", "test")));
            class.remember_score(node, stamp, 4.0);
            assert!(class.fits_idle(node, stamp, || true));
            class.index_refused = true;
            let index = class.index.as_mut().expect("an index");
            index.epoch = Some(stamp >> 32);
            index.synced = 9;
        }
        assert!(memo.spare.is_empty() && memo.spare_indexes.is_empty());
        // A third class does not fit beside the two: they are let go, and it takes over
        // the buffers of one of them.
        let class = memo.class_indexed(SchedClass(3), nodes);
        assert_eq!(class.check(node, stamp), None);
        assert_eq!(class.score(node, stamp), None);
        assert!(!class.fits_idle(node, stamp, || false), "worked out afresh");
        assert_eq!(class.error_count(), 0);
        assert!(!class.index_refused);
        let index = class.index.as_ref().expect("a fresh index");
        assert_eq!((index.epoch, index.synced), (None, 0));
        assert_eq!((memo.spare.len(), memo.spare_indexes.len()), (1, 1));
        // Buffers of another size are not taken.
        let small = memo.class(SchedClass(4), 3);
        assert_eq!(small.check(NodeId::from_index(2), stamp), None);
        assert_eq!(
            memo.spare.len(),
            0,
            "the spare of the wrong size is dropped"
        );
    }

    #[test]
    fn a_new_epoch_forgets_every_answer() {
        let mut memo = SearchMemo::default();
        let class = memo.class(SchedClass(7), 2);
        let (a, b) = (NodeId::from_index(0), NodeId::from_index(1));
        let epoch = |e: u64, v: u64| (e << 32) | v;
        class.remember_check(a, epoch(1, 3), Ok(()));
        class.remember_score(a, epoch(1, 3), 2.0);
        assert!(class.fits_idle(a, epoch(1, 3), || true));
        assert_eq!(class.check(a, epoch(1, 3)), Some(Remembered::Fits));
        // Same version, other epoch: nothing, and an answer under it clears the old ones.
        assert_eq!(class.check(a, epoch(2, 3)), None);
        assert_eq!(class.score(a, epoch(2, 3)), None);
        class.remember_check(b, epoch(2, 0), Ok(()));
        assert_eq!(class.check(b, epoch(2, 0)), Some(Remembered::Fits));
        assert_eq!(class.check(a, epoch(1, 3)), None);
        assert_eq!(class.score(a, epoch(1, 3)), None);
        assert!(!class.fits_idle(a, epoch(2, 3), || false));
    }

    #[test]
    fn equal_errors_are_kept_once() {
        let mut memo = SearchMemo::default();
        let class = memo.class(SchedClass(7), 4);
        let err = |r: &'static str| FitError::error(r, "test");
        let a = class.remember_check(NodeId::from_index(0), 1, Err(err("a")));
        let b = class.remember_check(NodeId::from_index(1), 1, Err(err("b")));
        let a2 = class.remember_check(NodeId::from_index(2), 1, Err(err("a")));
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert_eq!(class.error_count(), 2);
        assert_eq!(class.check(NodeId::from_index(2), 1), Some(a));
        let Remembered::Fails(id) = a else {
            panic!("a failure")
        };
        assert_eq!(**class.error(id), err("a"));
    }

    #[test]
    fn a_refusal_without_reasons_is_remembered_until_they_are_worked_out() {
        let mut memo = SearchMemo::default();
        let class = memo.class(SchedClass(7), 2);
        let node = NodeId::from_index(1);
        assert_eq!(class.remember_outcome(node, 4, false), Remembered::Refused);
        assert_eq!(class.check(node, 4), Some(Remembered::Refused));
        assert_eq!(class.error_count(), 0);
        let worked_out = class.remember_check(node, 4, Err(FitError::error("full", "test")));
        assert_eq!(worked_out, Remembered::Fails(0));
        assert_eq!(class.check(node, 4), Some(worked_out));
        assert_eq!(class.remember_outcome(node, 5, true), Remembered::Fits);
        assert!(class.check(node, 4).is_none());
    }

    mod counted {
        //! A plugin whose node-local predicate and score count their calls.
        use std::sync::atomic::{AtomicUsize, Ordering};

        use crate::actions::one_plugin_session::{open, three_nodes_one_job};
        use crate::framework::{ExtensionPoints as EP, Plugin, SessionState};
        use crate::model::{FitError, NodeId, TaskId};

        pub static PREDICATES: AtomicUsize = AtomicUsize::new(0);
        pub static SCORES: AtomicUsize = AtomicUsize::new(0);

        struct Counted;

        impl Plugin for Counted {
            fn name(&self) -> &'static str {
                "counted"
            }
            fn extension_points(&self) -> EP {
                EP::PREDICATE | EP::NODE_ORDER
            }
            fn predicate(&self, _: &SessionState, _: TaskId, _: NodeId) -> Result<(), FitError> {
                PREDICATES.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            fn node_order(&self, ssn: &SessionState, _: TaskId, n: NodeId) -> Result<f64, String> {
                SCORES.fetch_add(1, Ordering::SeqCst);
                // Fewer tasks score higher: spreads the job, so every node changes.
                Ok(-(ssn.node(n).tasks.len() as f64) + n.index() as f64 * 0.1)
            }
            fn search_is_node_local(&self, _: &SessionState, _: TaskId) -> bool {
                true
            }
            fn placement_is_node_local(&self, _: &SessionState, _: TaskId) -> bool {
                true
            }
        }

        /// Runs allocate; returns the binds (pod → node) and the predicate and score calls.
        pub fn allocate(memo: bool) -> (Vec<(String, String)>, usize, usize) {
            let state = three_nodes_one_job(6, 6);
            let mut ssn = open(&state, "counted", |_| Box::new(Counted), memo);
            let (p0, s0) = (
                PREDICATES.load(Ordering::SeqCst),
                SCORES.load(Ordering::SeqCst),
            );
            crate::actions::allocate::execute(&mut ssn);
            let (p1, s1) = (
                PREDICATES.load(Ordering::SeqCst),
                SCORES.load(Ordering::SeqCst),
            );
            let binds = ssn
                .close()
                .binds
                .iter()
                .map(|b| (b.pod.clone(), b.node.clone()))
                .collect();
            (binds, p1 - p0, s1 - s0)
        }
    }

    /// One test, so the call counters are not shared with a concurrent run.
    #[test]
    fn the_memo_saves_calls_and_changes_no_bind() {
        let (with, predicates_with, scores_with) = counted::allocate(true);
        let (without, predicates_without, scores_without) = counted::allocate(false);
        assert_eq!(with.len(), 6);
        assert_eq!(with, without);
        // Without: every task checks and scores all 3 nodes. With: the first task does, each
        // later one only the node the previous placement changed.
        assert_eq!((predicates_without, scores_without), (18, 18));
        assert_eq!((predicates_with, scores_with), (8, 8));
    }

    #[test]
    fn the_memo_starts_over_past_its_budget() {
        let mut memo = SearchMemo::default();
        let nodes = MAX_SLOTS / 2;
        memo.class(SchedClass(1), nodes)
            .remember_score(NodeId::from_index(0), 1, 1.0);
        memo.class(SchedClass(2), nodes);
        assert_eq!(memo.classes.len(), 2);
        memo.class(SchedClass(3), nodes);
        assert_eq!(memo.classes.len(), 1);
        assert_eq!(
            memo.class(SchedClass(1), nodes)
                .score(NodeId::from_index(0), 1),
            None
        );
    }
}
