//! Sets of logical CPUs in the Linux "CPU list" notation (`0-3,8,10-11`), as used by the
//! `numa-aware` plugin (spec/plugins-more.md §11) for the Numatopology CRD's allocatable and
//! assigned CPU sets. Behaviour follows `k8s.io/utils/cpuset` (`Parse`, `String`, and the set
//! algebra Volcano's `provider/cpumanager` relies on).
//!
//! One deliberate limit: CPU ids at or above [`MAX_CPU_ID`] are rejected by [`CpuSet::parse`],
//! so that a malformed list such as `0-4000000000` cannot make the scheduler allocate gigabytes
//! (Go would try to build that set).

use std::collections::BTreeSet;
use std::fmt;

/// Exclusive upper bound on CPU ids accepted by [`CpuSet::parse`] (Linux's own limit is far
/// lower).
pub const MAX_CPU_ID: u32 = 1 << 20;

/// An ordered set of logical CPU ids.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(BTreeSet<u32>);

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// Parses a CPU list: comma-separated elements, each a single id or an inclusive range
    /// `a-b` with `a <= b`. The empty string is the empty set. As in k8s, no whitespace is
    /// allowed and an empty element (`"1,,2"`, `"1,"`) is an error. The error message names the
    /// offending element.
    pub fn parse(s: &str) -> Result<CpuSet, String> {
        let mut set = BTreeSet::new();
        if s.is_empty() {
            return Ok(CpuSet(set));
        }
        for part in s.split(',') {
            match part.split_once('-') {
                None => {
                    set.insert(parse_id(part, part)?);
                }
                Some((lo, hi)) => {
                    let (lo, hi) = (parse_id(lo, part)?, parse_id(hi, part)?);
                    if lo > hi {
                        return Err(format!("invalid CPU range {part:?} ({lo} > {hi})"));
                    }
                    set.extend(lo..=hi);
                }
            }
        }
        Ok(CpuSet(set))
    }

    /// The set of the given ids (duplicates collapse).
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> CpuSet {
        CpuSet(cpus.into_iter().collect())
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set has no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `cpu` belongs to the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    /// CPUs in either set.
    pub fn union(&self, o: &CpuSet) -> CpuSet {
        CpuSet(self.0.union(&o.0).copied().collect())
    }

    /// CPUs of `self` that are not in `o`.
    pub fn difference(&self, o: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&o.0).copied().collect())
    }

    /// CPUs in both sets.
    pub fn intersection(&self, o: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&o.0).copied().collect())
    }

    /// Whether every CPU of `self` is in `o`.
    pub fn is_subset(&self, o: &CpuSet) -> bool {
        self.0.is_subset(&o.0)
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    /// Adds one CPU.
    pub fn insert(&mut self, cpu: u32) {
        self.0.insert(cpu);
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuSet::from_cpus(iter)
    }
}

/// Parses one id of a CPU list element; `element` is the whole element, quoted in errors.
fn parse_id(text: &str, element: &str) -> Result<u32, String> {
    let id: u32 = text
        .parse()
        .map_err(|e| format!("invalid CPU list element {element:?}: {text:?}: {e}"))?;
    if id >= MAX_CPU_ID {
        return Err(format!(
            "invalid CPU list element {element:?}: CPU id {id} is not below {MAX_CPU_ID}"
        ));
    }
    Ok(id)
}

/// Canonical CPU list: ascending, maximal runs of consecutive ids written `a-b`, single ids
/// written alone, separated by commas; the empty set is the empty string.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids = self.iter().peekable();
        let mut first = true;
        while let Some(start) = ids.next() {
            let mut end = start;
            while ids.peek() == Some(&(end + 1)) {
                end += 1;
                ids.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(ids: &[u32]) -> CpuSet {
        CpuSet::from_cpus(ids.iter().copied())
    }

    #[test]
    fn parse_accepts_k8s_lists() {
        assert_eq!(CpuSet::parse("").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse("5").unwrap(), set(&[5]));
        assert_eq!(CpuSet::parse("1,2,3,4,5").unwrap(), set(&[1, 2, 3, 4, 5]));
        assert_eq!(CpuSet::parse("1-5").unwrap(), set(&[1, 2, 3, 4, 5]));
        assert_eq!(
            CpuSet::parse("0-3,8,10-11").unwrap(),
            set(&[0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(CpuSet::parse("3-3").unwrap(), set(&[3]));
        assert_eq!(CpuSet::parse("5,1-2,2").unwrap(), set(&[1, 2, 5]));
    }

    #[test]
    fn parse_rejects_malformed_lists_naming_the_element() {
        for bad in [
            "nonnumeric",
            "non-numeric",
            "no,numbers",
            "0-a",
            "a-0",
            "1,,2",
            "1,",
        ] {
            assert!(CpuSet::parse(bad).is_err(), "{bad:?} should fail");
        }
        for bad in [" 1", "1 ", "-1", "1-", "1--3", "2-1", "0-2-4"] {
            assert!(CpuSet::parse(bad).is_err(), "{bad:?} should fail");
        }
        let e = CpuSet::parse("0-3,x,5").unwrap_err();
        assert!(e.contains("\"x\""), "{e}");
        let e = CpuSet::parse("0-3,7-5").unwrap_err();
        assert!(e.contains("\"7-5\""), "{e}");
        let e = CpuSet::parse("0-4000000000").unwrap_err();
        assert!(e.contains("\"0-4000000000\""), "{e}");
    }

    #[test]
    fn display_matches_k8s_string() {
        assert_eq!(CpuSet::new().to_string(), "");
        assert_eq!(set(&[5]).to_string(), "5");
        assert_eq!(set(&[1, 2, 3, 4, 5]).to_string(), "1-5");
        assert_eq!(set(&[1, 2, 3, 5, 6, 8]).to_string(), "1-3,5-6,8");
        assert_eq!(set(&[0, 2, 4]).to_string(), "0,2,4");
    }

    #[test]
    fn set_algebra() {
        let a = set(&[0, 1, 2, 3]);
        let b = set(&[2, 3, 4]);
        assert_eq!(a.union(&b), set(&[0, 1, 2, 3, 4]));
        assert_eq!(a.intersection(&b), set(&[2, 3]));
        assert_eq!(a.difference(&b), set(&[0, 1]));
        assert_eq!(b.difference(&a), set(&[4]));
        assert!(set(&[2, 3]).is_subset(&a));
        assert!(!b.is_subset(&a));
        assert_eq!(a.len(), 4);
        assert!(a.contains(3) && !a.contains(4));
        assert!(CpuSet::new().is_empty() && !a.is_empty());
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![2, 3, 4]);
        let mut c: CpuSet = [9, 7].into_iter().collect();
        c.insert(8);
        assert_eq!(c.to_string(), "7-9");
    }

    proptest! {
        #[test]
        fn display_then_parse_round_trips(ids in proptest::collection::btree_set(0u32..200, 0..40)) {
            let s = CpuSet::from_cpus(ids);
            prop_assert_eq!(CpuSet::parse(&s.to_string()).unwrap(), s);
        }
    }
}
