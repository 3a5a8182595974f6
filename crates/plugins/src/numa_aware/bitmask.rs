//! NUMA affinity masks for the `numa-aware` plugin (spec/plugins-more.md §11), with the
//! semantics of kubelet's `pkg/kubelet/cm/topologymanager/bitmask` (a `uint64` of NUMA ids)
//! that Volcano's `numaaware/policy` and `provider/cpumanager` use.
//!
//! Only NUMA ids 0..=63 fit. kubelet's `NewBitMask` fails on a larger id (and Volcano then
//! works with a nil mask and would crash); here such ids are ignored.

/// Number of NUMA ids a mask can hold.
pub const MAX_NUMA_NODES: u32 = 64;

/// A set of NUMA node ids; bit `n` is NUMA node `n`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct NumaMask(pub u64);

impl NumaMask {
    /// The mask of the given NUMA ids; ids of 64 and above are ignored.
    pub fn of(nodes: &[u32]) -> NumaMask {
        NumaMask(
            nodes
                .iter()
                .filter(|&&n| n < MAX_NUMA_NODES)
                .fold(0, |m, &n| m | 1u64 << n),
        )
    }

    /// Number of NUMA nodes in the mask.
    pub fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether NUMA node `n` is in the mask (false for `n >= 64`).
    pub fn is_set(self, n: u32) -> bool {
        n < MAX_NUMA_NODES && self.0 & (1u64 << n) != 0
    }

    /// Whether the mask has no NUMA node.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// NUMA nodes in both masks.
    pub fn and(self, o: NumaMask) -> NumaMask {
        NumaMask(self.0 & o.0)
    }

    /// The NUMA ids of the mask, ascending (kubelet's `GetBits`).
    pub fn nodes(self) -> Vec<u32> {
        (0..MAX_NUMA_NODES).filter(|&n| self.is_set(n)).collect()
    }

    /// kubelet's `IsNarrowerThan`: fewer NUMA nodes, or as many and a smaller integer value
    /// (so lower NUMA ids win ties).
    pub fn is_narrower_than(self, o: NumaMask) -> bool {
        if self.count() == o.count() {
            self.0 < o.0
        } else {
            self.count() < o.count()
        }
    }
}

/// Calls `f` with every non-empty combination of `nodes`, in kubelet's `IterateBitMasks` order:
/// by size first (1, 2, …), then lexicographically by position in `nodes`. Ids of 64 and above
/// are left out. The number of calls is `2^len - 1`, so this is meant for the handful of NUMA
/// nodes of one machine.
pub fn iterate_masks(nodes: &[u32], mut f: impl FnMut(NumaMask)) {
    let nodes: Vec<u32> = nodes
        .iter()
        .copied()
        .filter(|&n| n < MAX_NUMA_NODES)
        .collect();
    let mut chosen = Vec::with_capacity(nodes.len());
    for size in 1..=nodes.len() {
        combinations(&nodes, size, &mut chosen, &mut f);
    }
}

/// Extends `chosen` with every `size`-element combination of `rest`, in order, and reports each.
fn combinations(rest: &[u32], size: usize, chosen: &mut Vec<u32>, f: &mut impl FnMut(NumaMask)) {
    if chosen.len() == size {
        f(NumaMask::of(chosen));
        return;
    }
    for (i, &n) in rest.iter().enumerate() {
        chosen.push(n);
        combinations(&rest[i + 1..], size, chosen, f);
        chosen.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_masks(nodes: &[u32]) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        iterate_masks(nodes, |m| out.push(m.nodes()));
        out
    }

    #[test]
    fn of_count_is_set_nodes() {
        let m = NumaMask::of(&[0, 2, 5]);
        assert_eq!(m, NumaMask(0b100101));
        assert_eq!(m.count(), 3);
        assert!(m.is_set(0) && m.is_set(2) && m.is_set(5));
        assert!(!m.is_set(1) && !m.is_set(63) && !m.is_set(64) && !m.is_set(1000));
        assert_eq!(m.nodes(), vec![0, 2, 5]);
        assert_eq!(NumaMask::of(&[]), NumaMask(0));
        assert!(NumaMask::of(&[]).is_empty());
        assert_eq!(NumaMask::of(&[63]).nodes(), vec![63]);
        assert_eq!(NumaMask::of(&[1, 64, 99]), NumaMask::of(&[1]));
        assert_eq!(NumaMask::of(&[1, 1]).count(), 1);
    }

    #[test]
    fn and_intersects() {
        let a = NumaMask::of(&[0, 1]);
        assert_eq!(a.and(NumaMask::of(&[1, 2])), NumaMask::of(&[1]));
        assert_eq!(a.and(NumaMask::of(&[2])), NumaMask(0));
    }

    #[test]
    fn narrower_follows_kubelet() {
        // kubelet's TestIsNarrowerThan cases, plus wider mixes.
        let cases: &[(&[u32], &[u32], bool)] = &[
            (&[0], &[0], false),
            (&[0], &[1], true),
            (&[1], &[0], false),
            (&[0], &[0, 1], true),
            (&[0, 1], &[0], false),
            (&[0, 1], &[0, 2], true),
            (&[0, 2], &[0, 1], false),
            (&[1, 2], &[0], false),
            (&[1], &[0, 2], true),
        ];
        for &(a, b, want) in cases {
            assert_eq!(
                NumaMask::of(a).is_narrower_than(NumaMask::of(b)),
                want,
                "{a:?} narrower than {b:?}"
            );
        }
    }

    #[test]
    fn iterate_in_kubelet_order() {
        assert_eq!(all_masks(&[]), Vec::<Vec<u32>>::new());
        assert_eq!(all_masks(&[0]), vec![vec![0]]);
        assert_eq!(
            all_masks(&[0, 1, 2]),
            vec![
                vec![0],
                vec![1],
                vec![2],
                vec![0, 1],
                vec![0, 2],
                vec![1, 2],
                vec![0, 1, 2]
            ]
        );
        // Order follows the input positions, not the ids.
        assert_eq!(all_masks(&[3, 1]), vec![vec![3], vec![1], vec![1, 3]]);
        assert_eq!(all_masks(&[0, 70, 1]), all_masks(&[0, 1]));
    }

    #[test]
    fn iterate_counts_match_kubelet() {
        // kubelet's TestIterateBitMasks: 2^n - 1 masks for n bits.
        for n in [1u32, 2, 4, 8, 16] {
            let nodes: Vec<u32> = (0..n).collect();
            let mut count = 0u32;
            let mut seen = std::collections::BTreeSet::new();
            iterate_masks(&nodes, |m| {
                count += 1;
                seen.insert(m.0);
            });
            assert_eq!(count, (1 << n) - 1);
            assert_eq!(seen.len() as u32, count);
        }
    }
}
