//! The algorithm behind Go's `sort.Slice` (pattern-defeating quicksort, as in Go 1.26's
//! `sort/zsortfunc.go`), rewritten in Rust.
//!
//! Volcano's `provider/cpumanager/cpu_assignment.go` sorts with comparators that are not strict
//! weak orders (they OR the criteria together). For such a comparator the result depends on the
//! exact steps of the sorting algorithm, so reproducing Volcano's CPU picks needs Go's algorithm,
//! not Rust's `sort_by`.

/// Sorts `v` the way Go's `sort.Slice(v, less)` would, for any `less`.
pub(super) fn sort_slice<T>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = v.len();
    let mut s = Sorter { v, less };
    s.pdqsort(0, n, bit_len(n));
}

/// Go's `bits.Len`: the number of bits needed to write `x`.
fn bit_len(x: usize) -> u32 {
    usize::BITS - x.leading_zeros()
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Order {
    Unknown,
    Increasing,
    Decreasing,
}

struct Sorter<'a, T, F> {
    v: &'a mut [T],
    less: F,
}

impl<T, F: Fn(&T, &T) -> bool> Sorter<'_, T, F> {
    fn less(&self, i: usize, j: usize) -> bool {
        (self.less)(&self.v[i], &self.v[j])
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.v.swap(i, j);
    }

    fn insertion_sort(&mut self, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(&mut self, lo: usize, hi: usize, first: usize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                return;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: usize, b: usize) {
        let hi = b - a;
        for i in (0..=(hi - 1) / 2).rev() {
            self.sift_down(i, hi, a);
        }
        for i in (0..hi).rev() {
            self.swap(a, a + i);
            self.sift_down(0, i, a);
        }
    }

    fn pdqsort(&mut self, mut a: usize, mut b: usize, mut limit: u32) {
        const MAX_INSERTION: usize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut order) = self.choose_pivot(a, b);
            if order == Order::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                order = Order::Increasing;
            }
            if was_balanced
                && was_partitioned
                && order == Order::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already_partitioned) = self.partition(a, b, pivot);
            was_partitioned = already_partitioned;
            let (left, right) = (mid - a, b - mid);
            let threshold = length / 8;
            if left < right {
                was_balanced = left >= threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    /// Moves the elements below the pivot (placed at `a`) left of it; returns the pivot's final
    /// index and whether nothing had to move.
    fn partition(&mut self, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        while i <= j && self.less(i, a) {
            i += 1;
        }
        while i <= j && !self.less(j, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j, a);
            return (j, true);
        }
        self.swap(i, j);
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(i, a) {
                i += 1;
            }
            while i <= j && !self.less(j, a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        self.swap(j, a);
        (j, false)
    }

    fn partition_equal(&mut self, a: usize, b: usize, pivot: usize) -> usize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        loop {
            while i <= j && !self.less(a, i) {
                i += 1;
            }
            while i <= j && self.less(a, j) {
                j -= 1;
            }
            if i > j {
                return i;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }

    fn partial_insertion_sort(&mut self, a: usize, b: usize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: usize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            if i - a >= 2 {
                // Go walks down to index 1 of the whole slice here, not to `a`.
                let mut j = i - 1;
                while j >= 1 && self.less(j, j - 1) {
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            if b - i >= 2 {
                let mut j = i + 1;
                while j < b && self.less(j, j - 1) {
                    self.swap(j, j - 1);
                    j += 1;
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: usize, b: usize) {
        let length = b - a;
        if length < 8 {
            return;
        }
        let mut random = length as u64;
        let modulus = 1usize << bit_len(length);
        let mid = a + (length / 4) * 2;
        for idx in mid - 1..=mid + 1 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let mut other = (random as usize) & (modulus - 1);
            if other >= length {
                other -= length;
            }
            self.swap(idx, a + other);
        }
    }

    fn choose_pivot(&mut self, a: usize, b: usize) -> (usize, Order) {
        const SHORTEST_NINTHER: usize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let l = b - a;
        let mut swaps = 0;
        let (mut i, mut j, mut k) = (a + l / 4, a + l / 4 * 2, a + l / 4 * 3);
        if l >= 8 {
            if l >= SHORTEST_NINTHER {
                i = self.median(i - 1, i, i + 1, &mut swaps);
                j = self.median(j - 1, j, j + 1, &mut swaps);
                k = self.median(k - 1, k, k + 1, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        let order = match swaps {
            0 => Order::Increasing,
            MAX_SWAPS => Order::Decreasing,
            _ => Order::Unknown,
        };
        (j, order)
    }

    fn order2(&self, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
        if self.less(b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn median(&self, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, _) = self.order2(b, c, swaps);
        let (_, b) = self.order2(a, b, swaps);
        b
    }

    fn reverse_range(&mut self, a: usize, b: usize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparators of the golden file, by index.
    fn comparator(index: usize) -> fn(&u64, &u64) -> bool {
        match index {
            0 => |a, b| a % 7 < b % 7 || a < b,
            1 => |a, b| a / 10 > b / 10 || a % 3 < b % 3 || a < b,
            2 => |a, b| a < b,
            3 => |a, b| a > b,
            4 => |a, b| a % 5 < b % 5,
            _ => unreachable!("no comparator {index}"),
        }
    }

    /// The inputs of the golden file, by generator index.
    fn input(generator: u64, n: u64) -> Vec<u64> {
        (0..n)
            .map(|i| match generator {
                0 => (i * 37 + 11) % 101,
                1 => i,
                2 => n - i,
                3 => (i * i * 7 + 3) % 13,
                _ => unreachable!("no generator {generator}"),
            })
            .collect()
    }

    #[test]
    fn matches_go_sort_slice() {
        let golden = include_str!("go_sort_golden.txt");
        let mut checked = 0;
        for line in golden.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
            let (cmp, n, generator, want) = (f[0] as usize, f[1], f[2], f[3]);
            let mut v = input(generator, n);
            sort_slice(&mut v, comparator(cmp));
            let hash = v
                .iter()
                .fold(0u64, |h, &x| h.wrapping_mul(1_000_003).wrapping_add(x));
            assert_eq!(hash, want, "comparator {cmp}, n {n}, input {generator}");
            checked += 1;
        }
        assert_eq!(checked, 140);
    }

    #[test]
    fn sorts_with_a_proper_order() {
        for n in [0u64, 1, 2, 12, 13, 49, 50, 51, 300] {
            for generator in 0..4 {
                let mut v = input(generator, n);
                let mut want = v.clone();
                want.sort();
                sort_slice(&mut v, |a, b| a < b);
                assert_eq!(v, want);
            }
        }
    }
}
