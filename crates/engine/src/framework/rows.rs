//! A session table that remembers which of its rows the session changed.
//!
//! The next build takes over the rows nobody changed whose objects did not change either
//! (`framework::table_build`), instead of building them again from their specs. Reading a row
//! goes through `Index` or the slice (`Deref` gives no mutable slice); the only ways to change
//! one are `IndexMut`, which marks it, and `get_unmarked_mut`, kept for the one field a build
//! resets on every row it takes over.

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

    /// The row without marking it: only for a field that a build resets on every row it takes
    /// over (`JobInfo::renewed_condition`), so that the row still counts as unchanged.
    pub fn get_unmarked_mut(&mut self, i: usize) -> Option<&mut T> {
        self.rows.get_mut(i)
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
    fn indexing_mutably_marks_the_row() {
        let mut rows = Rows::new((0..130).collect::<Vec<u32>>());
        assert_eq!(rows[3], 3);
        assert_eq!(rows.iter().sum::<u32>(), (0..130u32).sum::<u32>());
        rows[5] += 1;
        rows[129] = 0;
        if let Some(r) = rows.get_unmarked_mut(6) {
            *r = 0;
        }
        let (v, changed) = rows.into_parts();
        assert_eq!((v[5], v[6], v[129]), (6, 0, 0));
        let marked: Vec<usize> = (0..131).filter(|&i| bit(&changed, i)).collect();
        assert_eq!(marked, [5, 129]);
    }
}
