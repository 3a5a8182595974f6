//! A session table that remembers which of its rows the session changed.
//!
//! The next build takes over the rows nobody changed whose objects did not change either
//! (`framework::table_build`), instead of building them again from their specs. Reading a row
//! goes through `Index` or the slice; every way to change one (`IndexMut`, `get_mut`,
//! `iter_mut`) marks it, so no change can slip past the mark.

use std::ops::{Deref, Index, IndexMut};

pub struct Rows<T> {
    rows: Vec<T>,
    /// One bit per row: changed since the build.
    changed: Vec<u64>,
}

impl<T> Rows<T> {
    pub fn new(rows: Vec<T>) -> Rows<T> {
        let words = rows.len().div_ceil(64);
        Rows {
            rows,
            changed: vec![0; words],
        }
    }

    fn mark(&mut self, i: usize) {
        if let Some(w) = self.changed.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    /// Whether the session changed row `i` (or may have: a mutable borrow marks it).
    pub fn changed(&self, i: usize) -> bool {
        self.changed
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// How many rows were changed.
    pub fn changed_count(&self) -> usize {
        self.changed.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i < self.rows.len() {
            self.mark(i);
        }
        self.rows.get_mut(i)
    }

    /// The row without marking it: only for a field that a build resets on every row it takes
    /// over (`JobInfo::renewed_condition`), so that the row still counts as unchanged.
    pub fn get_unmarked_mut(&mut self, i: usize) -> Option<&mut T> {
        self.rows.get_mut(i)
    }

    /// Every row, each marked as changed.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        for (k, w) in self.changed.iter_mut().enumerate() {
            let left = self.rows.len() - k * 64;
            *w = if left >= 64 {
                u64::MAX
            } else {
                (1 << left) - 1
            };
        }
        self.rows.iter_mut()
    }

    /// The rows and, per row, whether it was changed.
    pub fn into_parts(self) -> (Vec<T>, Vec<u64>) {
        (self.rows, self.changed)
    }
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows::new(Vec::new())
    }
}

impl<T> Deref for Rows<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.rows
    }
}

impl<T> Index<usize> for Rows<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.rows[i]
    }
}

impl<T> IndexMut<usize> for Rows<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.mark(i);
        &mut self.rows[i]
    }
}

impl<'a, T> IntoIterator for &'a Rows<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.rows.iter()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Rows<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.rows.fmt(f)
    }
}

/// The changed bits of `into_parts`, read.
pub fn bit(changed: &[u64], i: usize) -> bool {
    changed
        .get(i / 64)
        .is_some_and(|w| w & (1 << (i % 64)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_to_change_a_row_marks_it() {
        let mut rows = Rows::new((0..130).collect::<Vec<u32>>());
        assert_eq!(rows[3], 3);
        assert_eq!(rows.iter().sum::<u32>(), (0..130u32).sum::<u32>());
        assert_eq!(rows.changed_count(), 0);
        rows[5] += 1;
        if let Some(r) = rows.get_mut(129) {
            *r = 0;
        }
        assert!(rows.get_mut(130).is_none());
        if let Some(r) = rows.get_unmarked_mut(6) {
            *r = 0;
        }
        assert!(!rows.changed(6));
        assert!(rows.changed(5) && rows.changed(129) && !rows.changed(4));
        assert_eq!(rows.changed_count(), 2);
        rows.iter_mut().for_each(|_| {});
        assert_eq!(rows.changed_count(), 130);
        let (v, changed) = rows.into_parts();
        assert_eq!(v.len(), 130);
        assert!(bit(&changed, 129) && !bit(&changed, 130));
    }
}
