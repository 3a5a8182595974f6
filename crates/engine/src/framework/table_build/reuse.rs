//! The rows of a build made in the vector of the last build's rows.
//!
//! A build lays its rows out in key order, and so did the last one; between two sessions few
//! objects come or go. Moving every kept row out of the old vector and into a new one copied
//! each row twice per session (a job row is about 500 bytes), which under a steady stream
//! was most of the build's memory traffic. Here a row whose object sits at the same position
//! stays where it is; an object that came or went shifts the rows after it once (an insert or
//! a removal in the vector). After [`EDITS_IN_PLACE`] such shifts the rest goes the old way,
//! moved row by row into place, so that a build with many changes does not shift the tail
//! again for each of them.

use super::Cursor;

/// Inserts and removals made in place before the rest of the rows is moved instead.
const EDITS_IN_PLACE: usize = 8;

/// This build's rows, in the order the build makes them; see the module documentation.
pub(super) struct Reuse<T> {
    /// `rows[..done]` are this build's; in place, `rows[done..]` are the old rows from old
    /// position `old_at` on.
    rows: Vec<T>,
    done: usize,
    old_at: usize,
    edits: usize,
    /// Once the rows are no longer made in place: the old rows not passed yet.
    rest: Option<Cursor<T>>,
}

impl<T> Default for Reuse<T> {
    fn default() -> Self {
        Reuse::fresh(0)
    }
}

impl<T> Reuse<T> {
    /// Rows made without old ones.
    pub(super) fn fresh(capacity: usize) -> Reuse<T> {
        Reuse::of(Vec::with_capacity(capacity))
    }

    /// Rows made over the last build's, `old[i]` being the row of old position `i`.
    pub(super) fn of(old: Vec<T>) -> Reuse<T> {
        Reuse {
            rows: old,
            done: 0,
            old_at: 0,
            edits: 0,
            rest: None,
        }
    }

    /// How many rows this build made so far: the position of the next.
    pub(super) fn len(&self) -> usize {
        self.done
    }

    /// The rows this build made.
    #[cfg(test)]
    fn rows(&self) -> &[T] {
        &self.rows[..self.done]
    }

    /// The old row of position `w` becomes the next row; `None` when it was passed (or there
    /// is none), and nothing was added.
    pub(super) fn keep(&mut self, w: usize) -> Option<&mut T> {
        if let Some(rest) = &mut self.rest {
            let row = rest.take(w)?;
            self.rows.push(row);
            self.done += 1;
            return self.rows.last_mut();
        }
        if w < self.old_at || w - self.old_at >= self.rows.len() - self.done {
            return None;
        }
        if !self.skip_to(w) {
            return self.keep(w);
        }
        self.done += 1;
        self.old_at = w + 1;
        self.rows.get_mut(self.done - 1)
    }

    /// `row` becomes the next row; `old` is the old position of the same object, whose old
    /// row it replaces (`None` for an object the last build did not have).
    pub(super) fn put(&mut self, old: Option<usize>, row: T) {
        if let Some(rest) = &mut self.rest {
            if let Some(w) = old {
                // The old row goes now rather than when the cursor passes it.
                let _ = rest.take(w);
            }
            self.rows.push(row);
            self.done += 1;
            return;
        }
        let left = self.rows.len() - self.done;
        match old {
            Some(w) if w >= self.old_at && w - self.old_at < left => {
                if !self.skip_to(w) {
                    self.put(old, row);
                    return;
                }
                self.rows[self.done] = row;
                self.old_at = w + 1;
            }
            _ if left == 0 => self.rows.push(row),
            _ => {
                if !self.edit() {
                    self.put(old, row);
                    return;
                }
                self.rows.insert(self.done, row);
            }
        }
        self.done += 1;
    }

    /// This build's rows; old rows not taken are dropped.
    pub(super) fn finish(mut self) -> Vec<T> {
        self.rows.truncate(self.done);
        self.rows
    }

    /// Drops the old rows before old position `w` (their objects are gone), so that old row
    /// `w` is at `done`. False when that would take an edit beyond the budget: the rows are
    /// then moved from here on ([`Self::rest`]) and the caller starts over.
    fn skip_to(&mut self, w: usize) -> bool {
        let gone = w - self.old_at;
        if gone == 0 {
            return true;
        }
        if !self.edit() {
            return false;
        }
        self.rows.drain(self.done..self.done + gone);
        self.old_at = w;
        true
    }

    /// Counts an edit in place; past the budget, moves the old rows left to a cursor and
    /// returns false.
    fn edit(&mut self) -> bool {
        if self.edits < EDITS_IN_PLACE {
            self.edits += 1;
            return true;
        }
        let old = self.rows.split_off(self.done);
        self.rest = Some(Cursor::starting_at(old, self.old_at));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the build did before: every kept row moved into a new vector.
    fn moved(old: &[(u32, u32)], steps: &[(Option<usize>, bool, u32)]) -> Vec<(u32, u32)> {
        let mut cursor = Cursor::new(old.to_vec());
        let mut out = Vec::new();
        for &(w, keep, fresh) in steps {
            let kept = match (w, keep) {
                (Some(w), true) => cursor.take(w),
                _ => None,
            };
            match kept {
                Some(mut r) => {
                    r.1 += 1;
                    out.push(r);
                }
                None => out.push((fresh, 0)),
            }
        }
        out
    }

    fn reused(old: &[(u32, u32)], steps: &[(Option<usize>, bool, u32)]) -> Vec<(u32, u32)> {
        let mut rows = Reuse::of(old.to_vec());
        for &(w, keep, fresh) in steps {
            let at = rows.len();
            let kept = match (w, keep) {
                (Some(w), true) => rows.keep(w).map(|r| r.1 += 1).is_some(),
                _ => false,
            };
            if !kept {
                rows.put(w, (fresh, 0));
            }
            assert_eq!(rows.len(), at + 1);
            assert_eq!(rows.rows().len(), at + 1);
        }
        rows.finish()
    }

    /// Old positions are met in increasing order, as the build's key-ordered walk meets them;
    /// each step keeps its old row, replaces it, or adds a new object.
    fn steps() -> impl Strategy<Value = (usize, Vec<(Option<usize>, bool, u32)>)> {
        (0..40usize).prop_flat_map(|old_len| {
            let step = (any::<bool>(), any::<bool>(), 0..3usize, 0..1000u32);
            (Just(old_len), proptest::collection::vec(step, 0..60)).prop_map(move |(len, raw)| {
                let mut next = 0usize;
                let mut out = Vec::new();
                for (existing, keep, skip, fresh) in raw {
                    if existing && next + skip < len {
                        next += skip;
                        out.push((Some(next), keep, fresh));
                        next += 1;
                    } else {
                        out.push((None, false, fresh));
                    }
                }
                (len, out)
            })
        })
    }

    proptest! {
        #[test]
        fn rows_made_in_place_are_the_rows_moved(case in steps()) {
            let (len, steps) = case;
            let old: Vec<(u32, u32)> = (0..len as u32).map(|i| (10_000 + i, 0)).collect();
            prop_assert_eq!(reused(&old, &steps), moved(&old, &steps));
        }
    }

    #[test]
    fn an_object_added_in_the_middle_shifts_the_rest_once() {
        let old: Vec<(u32, u32)> = (0..5).map(|i| (i, 0)).collect();
        let steps = [
            (Some(0), true, 0),
            (Some(1), true, 0),
            (None, false, 99),
            (Some(2), true, 0),
            (Some(4), true, 0),
        ];
        let mut rows = Reuse::of(old.clone());
        for &(w, keep, fresh) in &steps {
            if !(keep && rows.keep(w.unwrap_or(usize::MAX)).is_some()) {
                rows.put(w, (fresh, 0));
            }
        }
        assert_eq!(rows.edits, 2, "one insert, one removal");
        assert!(rows.rest.is_none());
        assert_eq!(rows.finish(), vec![(0, 0), (1, 0), (99, 0), (2, 0), (4, 0)]);
    }
}
