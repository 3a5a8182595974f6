//! Interned resource names and the small scalar map keyed by them.

use std::collections::HashMap;
use std::fmt;
use std::sync::{OnceLock, PoisonError, RwLock};

use smallvec::SmallVec;

use super::PODS;

/// Interned resource name: a cheap `Copy` handle into a process-wide table. Names are leaked
/// on first use, which is bounded by the number of distinct resource names in the cluster.
///
/// The ordering is the order of first interning (stable within a process, not alphabetical);
/// wherever an order is observable the code sorts by [`ResourceName::as_str`] instead.
#[derive(Copy, Clone, Eq, PartialEq, Hash, Ord, PartialOrd, Debug)]
pub struct ResourceName(u32);

struct Interner {
    ids: HashMap<&'static str, u32>,
    names: Vec<&'static str>,
}

fn interner() -> &'static RwLock<Interner> {
    static INTERNER: OnceLock<RwLock<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| {
        // Slot 0 must be "pods" so that `ResourceName::PODS` can be a constant.
        RwLock::new(Interner {
            ids: HashMap::from([(PODS, 0)]),
            names: vec![PODS],
        })
    })
}

impl ResourceName {
    /// The `pods` scalar.
    pub const PODS: ResourceName = ResourceName(0);

    /// Interns `name`, returning the existing handle if it was seen before.
    pub fn new(name: &str) -> Self {
        if let Some(existing) = Self::lookup(name) {
            return existing;
        }
        // A panic while holding the lock cannot leave the table inconsistent (push and insert
        // are the only mutations), so a poisoned lock is safe to keep using.
        let mut table = interner().write().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = table.ids.get(name) {
            return ResourceName(id);
        }
        // Four billion distinct names would exhaust memory long before the id space.
        let id = table.names.len() as u32;
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        table.names.push(leaked);
        table.ids.insert(leaked, id);
        ResourceName(id)
    }

    /// The handle of `name` if it has been interned, without interning it.
    pub fn lookup(name: &str) -> Option<Self> {
        let table = interner().read().unwrap_or_else(PoisonError::into_inner);
        table.ids.get(name).map(|&id| ResourceName(id))
    }

    /// The name's text.
    pub fn as_str(self) -> &'static str {
        let table = interner().read().unwrap_or_else(PoisonError::into_inner);
        // Handles are only minted by `new`, so the slot always exists.
        table.names.get(self.0 as usize).copied().unwrap_or("")
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for ResourceName {
    fn from(name: &str) -> Self {
        ResourceName::new(name)
    }
}

// ---------------------------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------------------------

/// Small map `ResourceName → f64`, kept sorted by handle; allocation-free for up to four
/// entries (the common case: `pods` plus one device). An entry holding 0 is distinct from a
/// missing entry, as in Volcano's map.
#[derive(Debug, Default, PartialEq)]
pub struct Scalars(pub(super) SmallVec<[(ResourceName, f64); 4]>);

impl Clone for Scalars {
    /// A copy of the entries at once: the derived clone copies them one by one, and resources
    /// are cloned for every job and node of every session.
    fn clone(&self) -> Self {
        Scalars(SmallVec::from_slice(&self.0))
    }
}

impl Scalars {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, n: ResourceName) -> Result<usize, usize> {
        self.0.binary_search_by_key(&n, |&(name, _)| name)
    }

    /// The value of `n`, if present.
    pub fn get(&self, n: ResourceName) -> Option<f64> {
        self.position(n).ok().map(|i| self.0[i].1)
    }

    /// Whether `n` has an entry (possibly 0).
    pub fn contains(&self, n: ResourceName) -> bool {
        self.position(n).is_ok()
    }

    /// Sets `n` to `v`, creating the entry.
    pub fn set(&mut self, n: ResourceName, v: f64) {
        match self.position(n) {
            Ok(i) => self.0[i].1 = v,
            Err(i) => self.0.insert(i, (n, v)),
        }
    }

    /// Adds every entry of `other` (Go's `m[n] += v` for each), creating missing entries at 0
    /// first. When both hold the same names, as a node's and its pods' usually do, the values
    /// are added in place without a search.
    pub fn add_all(&mut self, other: &Scalars, sign: f64) {
        if self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a.0 == b.0) {
            for (a, b) in self.0.iter_mut().zip(&other.0) {
                a.1 += sign * b.1;
            }
            return;
        }
        for &(n, v) in &other.0 {
            self.add(n, sign * v);
        }
    }

    /// Adds `v` to `n`, creating the entry at 0 first (Go's `m[n] += v`).
    pub fn add(&mut self, n: ResourceName, v: f64) {
        match self.position(n) {
            Ok(i) => self.0[i].1 += v,
            Err(i) => self.0.insert(i, (n, 0.0 + v)),
        }
    }

    /// Removes `n`, returning its value.
    pub fn remove(&mut self, n: ResourceName) -> Option<f64> {
        self.position(n).ok().map(|i| self.0.remove(i).1)
    }

    /// Entries in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (ResourceName, f64)> + '_ {
        self.0.iter().copied()
    }

    /// Mutable access to the values, in handle order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut f64> + '_ {
        self.0.iter_mut().map(|(_, v)| v)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(ResourceName, f64)> for Scalars {
    /// Later duplicates overwrite earlier ones.
    fn from_iter<I: IntoIterator<Item = (ResourceName, f64)>>(iter: I) -> Self {
        let mut scalars = Scalars::new();
        for (n, v) in iter {
            scalars.set(n, v);
        }
        scalars
    }
}

/// The entries of either map, in handle order, as `(name, left value, right value)` (both maps
/// are sorted, so this is one merge without a search).
pub(super) fn union_entries<'a>(
    a: &'a Scalars,
    b: &'a Scalars,
) -> impl Iterator<Item = (ResourceName, Option<f64>, Option<f64>)> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || match (a.0.get(i), b.0.get(j)) {
        (Some(&(l, lv)), Some(&(r, rv))) if l == r => {
            i += 1;
            j += 1;
            Some((l, Some(lv), Some(rv)))
        }
        (Some(&(l, lv)), Some(&(r, _))) if l < r => {
            i += 1;
            Some((l, Some(lv), None))
        }
        (_, Some(&(r, rv))) => {
            j += 1;
            Some((r, None, Some(rv)))
        }
        (Some(&(l, lv)), None) => {
            i += 1;
            Some((l, Some(lv), None))
        }
        (None, None) => None,
    })
}
