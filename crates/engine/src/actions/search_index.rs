//! The class index: the search memo's answers for one scheduling class over every node, kept
//! in a segment tree so that a task's search and choice cost a descent instead of a walk.
//!
//! Allocate looks at nodes from the rotating start until `want` of them fit (spec
//! framework.md §6.0.1–§6.0.3) and takes the best of those: the first of the highest score
//! among the nodes where the request fits `Idle`, else among the rest. With the memo each
//! visit is a lookup, but a task still visits hundreds of nodes (thousands when few fit), and
//! a job of many tasks walks the whole cluster over and over. The index keeps, per node in
//! node order, whether the class fits there and, if so, its idle fit and score; each tree node
//! holds how many of its nodes fit and the best of them. The `want`-th fitting node from the
//! start and the best node up to it are then found in `O(log n)`, and the answer is the
//! walk's: same nodes, same order, same ties.
//!
//! A leaf is worked out from the memo (checking and scoring the node if the memo has nothing
//! under the node's stamp). The session logs every node whose stamp moves
//! ([`SessionState::search_touches`]); before answering, the index brings the leaves of the
//! nodes touched since it last looked up to date, and starts over when the epoch moved.
//!
//! [`SessionState::search_touches`]: crate::framework::SessionState::search_touches

use crate::framework::{Session, SessionState};
use crate::model::{NodeId, TaskId};

use super::helper::{FitsFn, fits_idle_now, prioritize_nodes};
use super::search_memo::{ClassMemo, Remembered};

/// The best fitting node of a range: idle fit first, then the score, then the first in
/// node order. `pos == NONE` is no node.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Best {
    idle: bool,
    score: f64,
    pos: u32,
}

const NONE: u32 = u32::MAX;
const NO_BEST: Best = Best {
    idle: false,
    score: f64::NEG_INFINITY,
    pos: NONE,
};

impl Best {
    /// Whether `other` beats `self` when `self` comes first: strictly better only, so that
    /// the first of equals wins, as in the walk.
    #[inline]
    fn beaten_by(&self, other: &Best) -> bool {
        if other.pos == NONE {
            return false;
        }
        if self.pos == NONE {
            return true;
        }
        match (self.idle, other.idle) {
            (false, true) => true,
            (true, false) => false,
            _ => other.score > self.score,
        }
    }
}

/// `first` followed by `then`.
#[inline]
fn join(first: Best, then: Best) -> Best {
    if first.beaten_by(&then) { then } else { first }
}

/// A stale leaf could not be worked out (a score failed): the index gives no answer.
#[derive(Debug, PartialEq, Eq)]
pub struct WorkOutFailed;

/// One node's leaf: `None` where the class does not fit, else its idle fit and score.
pub type Leaf = Option<(bool, f64)>;

/// What a tree node knows of its nodes, kept together so that a pull touches one place, and
/// packed into 16 bytes (the best's idle fit rides in the top bit of its position): an index
/// is `2 × size` of these for every class, and the descents and pulls are bound by reading
/// them.
#[derive(Clone, Copy)]
struct TreeNode {
    /// The best's score.
    score: f64,
    /// The best's position, its idle fit in the top bit; `NONE` when there is no best.
    best_at: u32,
    /// How many fit or are stale.
    count: u32,
}

/// The top bit of [`TreeNode::best_at`]: the best fits `Idle`.
const IDLE_BIT: u32 = 1 << 31;

/// The most nodes an index covers: positions must leave [`IDLE_BIT`] free.
pub(super) const MAX_INDEXED_NODES: usize = IDLE_BIT as usize - 1;

impl TreeNode {
    #[inline]
    const fn new(count: u32, best: Best) -> Self {
        let best_at = if best.pos == NONE {
            NONE
        } else if best.idle {
            best.pos | IDLE_BIT
        } else {
            best.pos
        };
        TreeNode {
            score: best.score,
            best_at,
            count,
        }
    }

    /// The best of the worked-out fitting ones.
    #[inline]
    fn best(&self) -> Best {
        if self.best_at == NONE {
            return Best {
                idle: false,
                score: self.score,
                pos: NONE,
            };
        }
        Best {
            idle: self.best_at & IDLE_BIT != 0,
            score: self.score,
            pos: self.best_at & !IDLE_BIT,
        }
    }

    /// Bit for bit: a pull that changes nothing stops there.
    #[inline]
    fn same_as(&self, other: &TreeNode) -> bool {
        self.count == other.count
            && self.best_at == other.best_at
            && self.score.to_bits() == other.score.to_bits()
    }
}

const EMPTY: TreeNode = TreeNode::new(0, NO_BEST);
/// A stale leaf counts as fitting and is nobody's best.
const STALE: TreeNode = TreeNode::new(1, NO_BEST);

/// The nodes a search looks at: from `start` through `last`, wrapping past the end, `processed`
/// of them.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    last: usize,
    processed: usize,
}

/// The tree over `n` nodes; see the module doc. A leaf is either worked out (fits or not, with
/// its idle fit and score) or stale: not worked out since its node last changed. A stale leaf
/// counts as fitting when the search's end is looked for, so that the end found is never past
/// the true one; the stale leaves up to it are then worked out and the end looked for again.
pub struct ClassIndex {
    n: usize,
    /// Leaves start here (a power of two ≥ `n`).
    size: usize,
    /// The tree nodes; the root is 1, leaves start at `size`.
    tree: Vec<TreeNode>,
    /// The stale leaves, a bit per node. Kept beside the tree rather than counted in it:
    /// forgetting a fitting leaf that is not its parent's best then changes no tree node above
    /// the leaf, and most touched nodes are such leaves.
    stale: Vec<u64>,
    /// The epoch (high half of the stamps) the leaves belong to; `None` until first used.
    pub(super) epoch: Option<u64>,
    /// How much of the session's touch log the leaves reflect.
    pub(super) synced: usize,
    /// Buffers reused from one call to the next.
    level: Vec<usize>,
    stale_found: Vec<usize>,
}

impl ClassIndex {
    pub fn new(n: usize) -> Self {
        debug_assert!(n <= MAX_INDEXED_NODES);
        let size = n.next_power_of_two().max(1);
        ClassIndex {
            n,
            size,
            tree: vec![EMPTY; 2 * size],
            stale: vec![0; n.div_ceil(64)],
            epoch: None,
            synced: 0,
            level: Vec::new(),
            stale_found: Vec::new(),
        }
    }

    /// An index over `n` nodes made of `spare`'s buffers when it has that size. Either way it
    /// has never been used: its first use makes every leaf stale ([`follow_touches`]).
    pub fn reuse(spare: Option<ClassIndex>, n: usize) -> Box<ClassIndex> {
        match spare {
            Some(mut index) if index.n == n => {
                index.epoch = None;
                index.synced = 0;
                Box::new(index)
            }
            _ => Box::new(ClassIndex::new(n)),
        }
    }

    /// Makes every leaf stale.
    pub fn forget_all(&mut self) {
        self.tree.fill(EMPTY);
        self.tree[self.size..self.size + self.n].fill(STALE);
        self.stale.fill(u64::MAX);
        if let Some(last) = self.stale.last_mut()
            && !self.n.is_multiple_of(64)
        {
            *last = (1 << (self.n % 64)) - 1;
        }
        for i in (1..self.size).rev() {
            self.pull(i);
        }
    }

    /// Recomputes tree node `i` from its children; whether it changed.
    #[inline]
    fn pull(&mut self, i: usize) -> bool {
        let (l, r) = (self.tree[2 * i], self.tree[2 * i + 1]);
        let new = TreeNode::new(l.count + r.count, join(l.best(), r.best()));
        let changed = !new.same_as(&self.tree[i]);
        self.tree[i] = new;
        changed
    }

    /// Recomputes the tree above the changed leaves in `self.level` (positions in the tree,
    /// sorted), each tree node once, going no higher than the tree nodes that changed.
    fn pull_above(&mut self) {
        let mut level = std::mem::take(&mut self.level);
        while level.first().is_some_and(|&i| i > 1) {
            for i in level.iter_mut() {
                *i /= 2;
            }
            level.dedup();
            level.retain(|&i| self.pull(i));
        }
        level.clear();
        self.level = level;
    }

    /// Sets leaf `pos` and its stale bit; queues it for [`ClassIndex::pull_above`] when it
    /// changed.
    #[inline]
    fn put_leaf(&mut self, pos: usize, leaf: TreeNode, stale: bool) {
        let (word, bit) = (pos / 64, 1u64 << (pos % 64));
        if stale {
            self.stale[word] |= bit;
        } else {
            self.stale[word] &= !bit;
        }
        let i = self.size + pos;
        if !leaf.same_as(&self.tree[i]) {
            self.tree[i] = leaf;
            self.level.push(i);
        }
    }

    /// Makes the leaves of `positions` stale (the tests' shorthand for touches that change).
    #[cfg(test)]
    fn forget(&mut self, positions: impl IntoIterator<Item = usize>) {
        self.forget_touched(positions.into_iter().map(|pos| (pos, false)));
    }

    /// Makes stale the leaves of the touched positions, except, for a touch that only put a
    /// task on its node (`true`), a leaf worked out as not fitting: the caller vouches that
    /// such a touch cannot make the class fit there. Those are most touches of a busy index's
    /// refused nodes, and forgetting one changes the counts all the way up the tree.
    pub fn forget_touched(&mut self, touches: impl IntoIterator<Item = (usize, bool)>) {
        self.level.clear();
        for (pos, only_added) in touches {
            if pos >= self.n {
                continue;
            }
            if only_added && !self.is_stale(pos) && self.tree[self.size + pos].count == 0 {
                continue;
            }
            self.put_leaf(pos, STALE, true);
        }
        self.level.sort_unstable();
        self.level.dedup();
        self.pull_above();
    }

    #[inline]
    fn is_stale(&self, pos: usize) -> bool {
        self.stale[pos / 64] & (1u64 << (pos % 64)) != 0
    }

    /// Sets worked-out leaves (`positions[k]`'s is `leaves[k]`).
    fn set(&mut self, positions: &[usize], leaves: &[Leaf]) {
        self.level.clear();
        for (&pos, &leaf) in positions.iter().zip(leaves) {
            if pos >= self.n {
                continue;
            }
            let node = match leaf {
                Some((idle, score)) => TreeNode::new(
                    1,
                    Best {
                        idle,
                        score,
                        pos: pos as u32,
                    },
                ),
                None => EMPTY,
            };
            self.put_leaf(pos, node, false);
        }
        self.level.sort_unstable();
        self.level.dedup();
        self.pull_above();
    }

    /// How many nodes before `pos` fit or are stale.
    fn count_before(&self, pos: usize) -> u32 {
        let (mut lo, mut hi) = (self.size, self.size + pos);
        let mut sum = 0;
        while lo < hi {
            if lo & 1 == 1 {
                sum += self.tree[lo].count;
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                sum += self.tree[hi].count;
            }
            lo /= 2;
            hi /= 2;
        }
        sum
    }

    /// The position of the `k`-th node (from 1) that fits or is stale; `k` ≤ the total.
    fn kth(&self, mut k: u32) -> usize {
        let mut i = 1;
        while i < self.size {
            let left = self.tree[2 * i].count;
            if left >= k {
                i *= 2;
            } else {
                k -= left;
                i = 2 * i + 1;
            }
        }
        i - self.size
    }

    /// The nodes a search from `start` for `want` nodes looks at, counting stale leaves as
    /// fitting; `None` when no node fits or is stale.
    fn span(&self, start: usize, want: u32) -> Option<Span> {
        let (n, total) = (self.n, self.tree[1].count);
        if total == 0 {
            return None;
        }
        let before = self.count_before(start);
        let after = total - before;
        Some(if want <= after {
            let last = self.kth(before + want);
            Span {
                start,
                last,
                processed: last - start + 1,
            }
        } else if want <= total {
            let last = self.kth(want - after);
            Span {
                start,
                last,
                processed: n - start + last + 1,
            }
        } else {
            Span {
                start,
                last: (start + n - 1) % n,
                processed: n,
            }
        })
    }

    /// A span as one or two ranges of positions, in search order.
    fn ranges(&self, span: Span) -> [(usize, usize); 2] {
        if span.start + span.processed <= self.n {
            [(span.start, span.start + span.processed - 1), (1, 0)]
        } else {
            [(span.start, self.n - 1), (0, span.last)]
        }
    }

    /// The stale leaves of `first..=last`, in node order.
    fn stale_in(&self, first: usize, last: usize, out: &mut Vec<usize>) {
        if first > last {
            return;
        }
        for w in first / 64..=last / 64 {
            let mut bits = self.stale[w];
            if w == first / 64 {
                bits &= u64::MAX << (first % 64);
            }
            if w == last / 64 && last % 64 != 63 {
                bits &= (1u64 << (last % 64 + 1)) - 1;
            }
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
    }

    /// The best worked-out fitting node of `first..=last`.
    fn best_in(&self, first: usize, last: usize) -> Best {
        if first > last {
            return NO_BEST;
        }
        let (mut lo, mut hi) = (self.size + first, self.size + last + 1);
        let (mut left, mut right) = (NO_BEST, NO_BEST);
        while lo < hi {
            if lo & 1 == 1 {
                left = join(left, self.tree[lo].best());
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                right = join(self.tree[hi].best(), right);
            }
            lo /= 2;
            hi /= 2;
        }
        join(left, right)
    }

    /// The walk's answer from `start` looking for `want` fitting nodes: the best of the nodes
    /// it finds and how many nodes it looks at; `Ok(None)` when no node fits. The stale
    /// leaves the search reaches are worked out by `work_out` (their leaves, in the order
    /// given); [`WorkOutFailed`] when it fails.
    pub fn choose(
        &mut self,
        start: usize,
        want: usize,
        mut work_out: impl FnMut(&[usize]) -> Option<Vec<Leaf>>,
    ) -> Result<Option<(usize, usize)>, WorkOutFailed> {
        if want == 0 || start >= self.n {
            return Ok(None);
        }
        let want = u32::try_from(want).unwrap_or(u32::MAX);
        let mut stale = std::mem::take(&mut self.stale_found);
        let answer = loop {
            let Some(span) = self.span(start, want) else {
                break Ok(None);
            };
            let ranges = self.ranges(span);
            stale.clear();
            for (first, last) in ranges {
                self.stale_in(first, last, &mut stale);
            }
            if stale.is_empty() {
                let best = join(
                    self.best_in(ranges[0].0, ranges[0].1),
                    self.best_in(ranges[1].0, ranges[1].1),
                );
                break Ok((best.pos != NONE).then_some((best.pos as usize, span.processed)));
            }
            match work_out(&stale) {
                Some(leaves) => self.set(&stale, &leaves),
                None => break Err(WorkOutFailed),
            }
        };
        self.stale_found = stale;
        answer
    }
}

/// How many leaves an index would forget per task left before a walk is cheaper.
pub(super) const CATCH_UP_PER_TASK: usize = 16;

/// How many nodes the index has to forget to catch up: those touched since it last looked,
/// every node when the epoch moved, none when it was never used.
pub(super) fn index_lag(state: &SessionState, index: &ClassIndex) -> usize {
    match index.epoch {
        None => 0,
        Some(e) if e == state.search_stamps().epoch() => {
            state.search_touches().len().saturating_sub(index.synced)
        }
        Some(_) => state.nodes().len(),
    }
}

/// Makes stale the index's leaves of the nodes touched since it last looked (all of them when
/// the epoch moved, or when so many were touched that forgetting all costs less). With
/// `refusals_hold` (the class's refusals survive placements:
/// [`Session::refusals_survive_placements`]) a refused node that was only given tasks stays
/// refused.
///
/// [`Session::refusals_survive_placements`]: crate::framework::Session::refusals_survive_placements
pub(super) fn follow_touches(state: &SessionState, index: &mut ClassIndex, refusals_hold: bool) {
    let epoch = state.search_stamps().epoch();
    let touches = state.search_touches();
    let since = touches.get(index.synced..).unwrap_or_default();
    if index.epoch != Some(epoch)
        || index.synced > touches.len()
        || since.len() >= state.nodes().len() / 2
    {
        index.forget_all();
    } else {
        index.forget_touched(
            since
                .iter()
                .map(|t| (t.node_index(), refusals_hold && t.only_added())),
        );
    }
    index.epoch = Some(epoch);
    index.synced = touches.len();
}

/// The leaves of `stale` nodes, from the memo (checked now where it has nothing under the
/// node's stamp); the fitting nodes without a remembered score are scored together, as the
/// choice does. `None` when a score failed or is not a number (which would make the first
/// node win every comparison in the walk and none in the tree).
pub(super) fn work_out_leaves(
    ssn: &Session,
    task: TaskId,
    fits: &FitsFn,
    memo: &mut ClassMemo,
    stale: &[usize],
) -> Option<Vec<Leaf>> {
    let state = &ssn.state;
    let stamps = state.search_stamps();
    let mut fitting = Vec::with_capacity(stale.len());
    let mut unscored = Vec::new();
    for &pos in stale {
        let node = NodeId::from_index(pos);
        let stamp = stamps.of(node);
        let answer = match memo.check(node, stamp) {
            Some(r) => r,
            None => memo.remember_outcome(node, stamp, fits(ssn, task, node)),
        };
        let fit = answer == Remembered::Fits;
        if fit && memo.score(node, stamp).is_none() {
            unscored.push(node);
        }
        fitting.push(fit);
    }
    if !unscored.is_empty() {
        let scores = prioritize_nodes(ssn, task, &unscored)?;
        for (&node, score) in unscored.iter().zip(scores) {
            memo.remember_score(node, stamps.of(node), score);
        }
    }
    let mut leaves = Vec::with_capacity(stale.len());
    for (&pos, fit) in stale.iter().zip(fitting) {
        if !fit {
            leaves.push(None);
            continue;
        }
        let node = NodeId::from_index(pos);
        let stamp = stamps.of(node);
        let score = memo.score(node, stamp).filter(|s| !s.is_nan())?;
        let idle = memo.fits_idle(node, stamp, || fits_idle_now(ssn, task, node));
        leaves.push(Some((idle, score)));
    }
    Some(leaves)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk the index stands for, written plainly.
    fn walk(leaves: &[Leaf], start: usize, want: usize) -> Option<(usize, usize)> {
        let n = leaves.len();
        let mut found = Vec::new();
        let mut processed = 0;
        while processed < n && found.len() < want {
            let pos = (start + processed) % n;
            processed += 1;
            if let Some((idle, score)) = leaves[pos] {
                found.push((pos, idle, score));
            }
        }
        let pick = |idle: bool| {
            let mut best: Option<(usize, f64)> = None;
            for &(pos, i, s) in &found {
                if i == idle && best.is_none_or(|(_, b)| s > b) {
                    best = Some((pos, s));
                }
            }
            best.map(|(p, _)| p)
        };
        pick(true).or_else(|| pick(false)).map(|p| (p, processed))
    }

    /// A small deterministic generator, so the test needs no crate.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, below: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % below
        }
    }

    fn random_leaf(rng: &mut Lcg) -> Leaf {
        (rng.next(3) > 0).then(|| (rng.next(2) == 0, rng.next(5) as f64))
    }

    #[test]
    fn a_tree_node_is_sixteen_bytes_and_gives_back_its_best() {
        assert_eq!(std::mem::size_of::<TreeNode>(), 16);
        for best in [
            NO_BEST,
            Best {
                idle: true,
                score: 2.5,
                pos: 0,
            },
            Best {
                idle: false,
                score: -0.0,
                pos: 7,
            },
            Best {
                idle: true,
                score: f64::NEG_INFINITY,
                pos: MAX_INDEXED_NODES as u32 - 1,
            },
        ] {
            let node = TreeNode::new(3, best);
            assert_eq!(node.best(), best);
            assert_eq!(node.best().score.to_bits(), best.score.to_bits());
            assert_eq!(node.count, 3);
        }
        // Idle fit alone tells two nodes apart.
        let idle = TreeNode::new(
            1,
            Best {
                idle: true,
                score: 1.0,
                pos: 4,
            },
        );
        let busy = TreeNode::new(
            1,
            Best {
                idle: false,
                score: 1.0,
                pos: 4,
            },
        );
        assert!(!idle.same_as(&busy));
    }

    /// Random leaves, searches compared with the walk, and between searches the touches
    /// `touch` makes (it changes `leaves` and says which positions it touched, and whether
    /// each touch only put a task on its node).
    fn compare_with_the_walk(
        seed: u64,
        touch: impl Fn(&mut Lcg, &mut [Leaf]) -> Vec<(usize, bool)>,
    ) {
        let mut rng = Lcg(seed);
        for round in 0..300 {
            // Up to three words of stale bits.
            let n = 1 + rng.next(150) as usize;
            let mut leaves: Vec<Leaf> = (0..n).map(|_| random_leaf(&mut rng)).collect();
            let mut index = ClassIndex::new(n);
            index.forget_all();
            for _ in 0..20 {
                let start = rng.next(n as u64) as usize;
                let want = 1 + rng.next(n as u64 + 2) as usize;
                let truth = leaves.clone();
                let mut asked = Vec::new();
                let answer = index.choose(start, want, |stale| {
                    asked.extend_from_slice(stale);
                    Some(stale.iter().map(|&p| truth[p]).collect())
                });
                let expected = walk(&leaves, start, want);
                assert_eq!(
                    answer,
                    Ok(expected),
                    "round {round}: start {start}, want {want}, leaves {leaves:?}"
                );
                // Only what the walk looked at is worked out.
                let looked = expected.map_or(n, |(_, processed)| processed);
                assert!(
                    asked.iter().all(|&p| (p + n - start) % n < looked),
                    "round {round}: worked out {asked:?} beyond the {looked} nodes from {start}"
                );
                let touches = touch(&mut rng, &mut leaves);
                index.forget_touched(touches);
            }
        }
    }

    #[test]
    fn answers_as_the_walk_does_on_random_leaves_and_changes() {
        compare_with_the_walk(7, |rng, leaves| {
            (0..rng.next(4))
                .map(|_| {
                    let pos = rng.next(leaves.len() as u64) as usize;
                    leaves[pos] = random_leaf(rng);
                    (pos, false)
                })
                .collect()
        });
    }

    #[test]
    fn refused_leaves_touched_only_by_placements_stay_refused() {
        // A placement never makes a refused node fit; any other change may.
        compare_with_the_walk(11, |rng, leaves| {
            (0..rng.next(6))
                .map(|_| {
                    let pos = rng.next(leaves.len() as u64) as usize;
                    let only_added = rng.next(2) == 0;
                    if !(only_added && leaves[pos].is_none()) {
                        leaves[pos] = random_leaf(rng);
                    }
                    (pos, only_added)
                })
                .collect()
        });
    }

    #[test]
    fn a_refused_leaf_is_worked_out_again_only_after_a_change_other_than_a_placement() {
        let mut index = ClassIndex::new(4);
        index.forget_all();
        let refuse_two =
            |s: &[usize]| Some(s.iter().map(|&p| (p != 2).then_some((true, 1.0))).collect());
        assert_eq!(index.choose(0, 4, refuse_two), Ok(Some((0, 4))));
        index.forget_touched([(2, true)]);
        let mut asked = Vec::new();
        let fits_all = |s: &[usize]| -> Option<Vec<Leaf>> {
            asked.extend_from_slice(s);
            Some(vec![Some((true, 9.0)); s.len()])
        };
        // Three fit of the four wanted: all four looked at, the first of the best kept.
        assert_eq!(index.choose(0, 4, fits_all), Ok(Some((0, 4))));
        assert!(asked.is_empty(), "worked out {asked:?}");
        index.forget_touched([(2, false)]);
        assert_eq!(
            index.choose(0, 4, |s| {
                assert_eq!(s, [2]);
                Some(vec![Some((true, 9.0))])
            }),
            Ok(Some((2, 4)))
        );
    }

    #[test]
    fn nothing_fits_gives_no_answer_and_a_failed_work_out_an_error() {
        let mut index = ClassIndex::new(5);
        index.forget_all();
        assert_eq!(index.choose(2, 3, |s| Some(vec![None; s.len()])), Ok(None));
        index.forget([4]);
        assert_eq!(
            index.choose(2, 3, |s| Some(vec![Some((false, 1.0)); s.len()])),
            Ok(Some((4, 5)))
        );
        index.forget([0]);
        assert_eq!(index.choose(2, 3, |_| None), Err(WorkOutFailed));
    }
}
