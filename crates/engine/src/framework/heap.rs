//! The priority queue every action uses (spec/framework.md §3.4).
//!
//! A binary min-heap whose `less` reads live session state. It is deliberately never
//! re-heapified when keys change while elements sit in it: Volcano's pop order is exactly what
//! this algorithm produces, which is not always a sorted order, and we reproduce it.

/// A heap of copyable ids; `less(a, b)` means "a pops before b".
#[derive(Clone, Debug)]
pub struct PriorityQueue<T: Copy> {
    items: Vec<T>,
}

impl<T: Copy> Default for PriorityQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> PriorityQueue<T> {
    pub fn new() -> Self {
        Self { items: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, x: T, less: impl Fn(T, T) -> bool) {
        self.items.push(x);
        let mut j = self.items.len() - 1;
        while j > 0 {
            let i = (j - 1) / 2;
            if !less(self.items[j], self.items[i]) {
                break;
            }
            self.items.swap(i, j);
            j = i;
        }
    }

    pub fn pop(&mut self, less: impl Fn(T, T) -> bool) -> Option<T> {
        let n = self.items.len().checked_sub(1)?;
        self.items.swap(0, n);
        // sift down over the first n elements
        let mut i = 0;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let mut c = l;
            if l + 1 < n && less(self.items[l + 1], self.items[l]) {
                c = l + 1;
            }
            if !less(self.items[c], self.items[i]) {
                break;
            }
            self.items.swap(i, c);
            i = c;
        }
        self.items.pop()
    }

    /// The elements in heap layout (not in pop order).
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn static_keys_pop_sorted(v in proptest::collection::vec(0u32..1000, 0..200)) {
            let mut h = PriorityQueue::new();
            for x in &v { h.push(*x, |a, b| a < b); }
            let mut out = Vec::new();
            while let Some(x) = h.pop(|a, b| a < b) { out.push(x); }
            let mut sorted = v.clone();
            sorted.sort();
            prop_assert_eq!(out, sorted);
        }
    }

    #[test]
    fn changed_keys_are_not_reheapified() {
        // Keys live outside the heap, as session state does.
        use std::cell::RefCell;
        let keys = RefCell::new(vec![1, 2, 3, 4]);
        let less = |a: usize, b: usize| keys.borrow()[a] < keys.borrow()[b];
        let mut h = PriorityQueue::new();
        for i in 0..4 {
            h.push(i, less);
        }
        // Element 3 becomes the smallest, but it is a leaf: the next pop still returns 0.
        keys.borrow_mut()[3] = 0;
        assert_eq!(h.pop(less), Some(0));
        // After that pop, the sift-down brought 3 to the root.
        assert_eq!(h.pop(less), Some(3));
    }
}
