//! The daemon's runtime invariant checker: what `engine::state::invariants` finds, reported
//! once per finding while it lasts (a log line at error level and
//! `volcano_invariant_violations_total{kind}`), with a grace period for the findings that are
//! normal for a moment (a gang in the middle of binding or of being torn down).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use engine::state::invariants::{Violation, ViolationKind};

/// How long a gang may stay partly placed before it counts as broken.
pub const PARTIAL_GANG_GRACE: Duration = Duration::from_secs(30);

/// Which findings were reported and since when partial gangs have been seen.
#[derive(Debug)]
pub struct InvariantTracker {
    grace: Duration,
    partial_since: HashMap<String, Instant>,
    active: BTreeSet<(ViolationKind, String)>,
}

impl Default for InvariantTracker {
    fn default() -> Self {
        Self::new(PARTIAL_GANG_GRACE)
    }
}

impl InvariantTracker {
    pub fn new(grace: Duration) -> Self {
        InvariantTracker {
            grace,
            partial_since: HashMap::new(),
            active: BTreeSet::new(),
        }
    }

    /// Takes every finding of a state check; returns those to report now: new ones, and
    /// partial gangs that outlasted the grace period. A finding that went away is forgotten, so
    /// it is reported again if it comes back.
    pub fn observe_state(&mut self, found: Vec<Violation>, now: Instant) -> Vec<Violation> {
        let present: BTreeSet<(ViolationKind, String)> =
            found.iter().map(|v| (v.kind, v.subject.clone())).collect();
        self.active.retain(|k| present.contains(k));
        self.partial_since
            .retain(|g, _| present.contains(&(ViolationKind::PartialGang, g.clone())));
        let mut report = Vec::new();
        for v in found {
            if v.kind == ViolationKind::PartialGang {
                let since = *self.partial_since.entry(v.subject.clone()).or_insert(now);
                if now.duration_since(since) < self.grace {
                    continue;
                }
            }
            if self.active.insert((v.kind, v.subject.clone())) {
                report.push(v);
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(kind: ViolationKind, subject: &str) -> Violation {
        Violation {
            kind,
            subject: subject.into(),
            detail: String::new(),
        }
    }

    #[test]
    fn a_finding_is_reported_once_while_it_lasts_and_again_when_it_returns() {
        let mut t = InvariantTracker::new(Duration::from_secs(30));
        let now = Instant::now();
        let node = || vec![v(ViolationKind::NodeOverAllocatable, "n1")];
        assert_eq!(t.observe_state(node(), now).len(), 1);
        assert_eq!(t.observe_state(node(), now).len(), 0);
        assert_eq!(t.observe_state(vec![], now).len(), 0);
        assert_eq!(t.observe_state(node(), now).len(), 1);
    }

    #[test]
    fn a_partial_gang_is_reported_only_past_the_grace_period() {
        let mut t = InvariantTracker::new(Duration::from_secs(30));
        let start = Instant::now();
        let gang = || vec![v(ViolationKind::PartialGang, "ns/g")];
        assert!(t.observe_state(gang(), start).is_empty());
        assert!(
            t.observe_state(gang(), start + Duration::from_secs(29))
                .is_empty()
        );
        assert_eq!(
            t.observe_state(gang(), start + Duration::from_secs(31))
                .len(),
            1
        );
        // Completed in between: the clock starts again.
        assert!(
            t.observe_state(vec![], start + Duration::from_secs(32))
                .is_empty()
        );
        assert!(
            t.observe_state(gang(), start + Duration::from_secs(40))
                .is_empty()
        );
    }
}
