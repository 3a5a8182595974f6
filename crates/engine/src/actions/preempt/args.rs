//! The arguments of `preempt` (spec/framework.md §1.6, §6.4, §6.4.4): the two shared with
//! `reclaim` ([`EvictionArgs`]), the switch to the topology-aware mode, and the four numbers
//! that size that mode's dry run.
//!
//! Volcano validates none of the four numbers: a negative candidate count or worker count makes
//! it panic, and a zero one silently turns the mode into a no-op. Here a value that cannot mean
//! anything is refused with a warning naming the argument, and the default is used instead.

use crate::conf::Arguments;
use crate::framework::Session;

use super::super::victims::EvictionArgs;

/// `enableTopologyAwarePreemption`.
pub(super) const ENABLE_KEY: &str = "enableTopologyAwarePreemption";
/// `topologyAwarePreemptWorkerNum`.
pub(super) const WORKERS_KEY: &str = "topologyAwarePreemptWorkerNum";
/// `minCandidateNodesPercentage`.
pub(super) const MIN_PERCENTAGE_KEY: &str = "minCandidateNodesPercentage";
/// `minCandidateNodesAbsolute`.
pub(super) const MIN_ABSOLUTE_KEY: &str = "minCandidateNodesAbsolute";
/// `maxCandidateNodesAbsolute`.
pub(super) const MAX_ABSOLUTE_KEY: &str = "maxCandidateNodesAbsolute";

/// Everything `preempt` reads from its `configurations` entry, at every execution.
#[derive(Copy, Clone, Debug)]
pub(super) struct PreemptArgs {
    pub eviction: EvictionArgs,
    /// `enableTopologyAwarePreemption` (default false).
    pub topology_aware: bool,
    pub candidates: CandidateArgs,
}

impl PreemptArgs {
    /// Reads the arguments of `action`, logging each refused value.
    pub fn read(ssn: &Session, action: &str) -> PreemptArgs {
        let eviction = EvictionArgs::read(ssn, action);
        let mut read = PreemptArgs {
            eviction,
            topology_aware: false,
            candidates: CandidateArgs::DEFAULT,
        };
        let Some(args) = ssn.state.conf().action_arguments(action) else {
            return read;
        };
        if let Err(e) = args.get_bool(ENABLE_KEY, &mut read.topology_aware) {
            tracing::warn!(action, key = ENABLE_KEY, error = %e, "argument ignored");
        }
        let (candidates, warnings) = CandidateArgs::parse(args);
        for warning in warnings {
            tracing::warn!(action, "{warning}");
        }
        read.candidates = candidates;
        read
    }
}

/// The sizing of the topology-aware dry run, validated: every field is at least 1, except the
/// percentage, which is at least 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct CandidateArgs {
    /// `topologyAwarePreemptWorkerNum` (default 16). Only validated: the dry run here is
    /// sequential (see the topology-aware module), so the value changes nothing else.
    pub workers: i64,
    /// `minCandidateNodesPercentage` (default 10): the share of the feasible nodes to collect
    /// as candidates.
    pub min_percentage: i64,
    /// `minCandidateNodesAbsolute` (default 1).
    pub min_absolute: i64,
    /// `maxCandidateNodesAbsolute` (default 100).
    pub max_absolute: i64,
}

impl CandidateArgs {
    pub const DEFAULT: CandidateArgs = CandidateArgs {
        workers: 16,
        min_percentage: 10,
        min_absolute: 1,
        max_absolute: 100,
    };

    /// Reads the four numbers (Volcano's `GetInt`: an integer or nothing). A value of the wrong
    /// type, or out of range, keeps the default and yields a warning naming the argument.
    ///
    /// The percentage may be 0 (the candidate count is then the absolute minimum, which is at
    /// least 1); every other value must be at least 1, since 0 workers or a candidate count of
    /// 0 would make the mode a silent no-op, and negative values crash Volcano.
    pub fn parse(args: &Arguments) -> (CandidateArgs, Vec<String>) {
        let mut read = CandidateArgs::DEFAULT;
        let mut warnings = Vec::new();
        let fields: [(&str, &mut i64, i64); 4] = [
            (WORKERS_KEY, &mut read.workers, 1),
            (MIN_PERCENTAGE_KEY, &mut read.min_percentage, 0),
            (MIN_ABSOLUTE_KEY, &mut read.min_absolute, 1),
            (MAX_ABSOLUTE_KEY, &mut read.max_absolute, 1),
        ];
        for (key, field, lowest) in fields {
            let default = *field;
            let mut value = default;
            match args.get_int(key, &mut value) {
                Ok(true) if value < lowest => warnings.push(format!(
                    "argument {key} is {value}, below its minimum {lowest}; the default {default} is used"
                )),
                Ok(true) => *field = value,
                Ok(false) => {}
                Err(e) => warnings.push(format!(
                    "argument {key} ignored ({e}); the default {default} is used"
                )),
            }
        }
        if read.min_absolute > read.max_absolute {
            warnings.push(format!(
                "{MIN_ABSOLUTE_KEY} ({}) exceeds {MAX_ABSOLUTE_KEY} ({}); the maximum wins",
                read.min_absolute, read.max_absolute
            ));
        }
        (read, warnings)
    }

    /// `calculateNumCandidates`: how many candidate nodes to collect out of `feasible` nodes.
    /// Volcano's integer arithmetic (the percentage truncated toward zero), then its clamps in
    /// its order: raised to the absolute minimum, lowered to the absolute maximum (so the
    /// maximum wins when the two cross), and never more than the feasible nodes.
    pub fn num_candidates(&self, feasible: usize) -> usize {
        let n = i128::try_from(feasible).unwrap_or(i128::MAX);
        // i128: a large percentage times a large node count cannot overflow.
        let mut k = n.saturating_mul(i128::from(self.min_percentage)) / 100;
        if k < i128::from(self.min_absolute) {
            k = i128::from(self.min_absolute);
        }
        if k > i128::from(self.max_absolute) {
            k = i128::from(self.max_absolute);
        }
        if k > n {
            k = n;
        }
        usize::try_from(k.max(0)).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conf::ArgValue;

    fn parse(pairs: &[(&str, ArgValue)]) -> (CandidateArgs, Vec<String>) {
        CandidateArgs::parse(&Arguments::from_pairs(pairs))
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let (args, warnings) = parse(&[]);
        assert_eq!(args, CandidateArgs::DEFAULT);
        assert!(warnings.is_empty());
    }

    #[test]
    fn valid_values_are_taken() {
        let (args, warnings) = parse(&[
            (WORKERS_KEY, ArgValue::Int(2)),
            (MIN_PERCENTAGE_KEY, ArgValue::Int(0)),
            (MIN_ABSOLUTE_KEY, ArgValue::Int(3)),
            (MAX_ABSOLUTE_KEY, ArgValue::Int(7)),
        ]);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            args,
            CandidateArgs {
                workers: 2,
                min_percentage: 0,
                min_absolute: 3,
                max_absolute: 7
            }
        );
    }

    #[test]
    fn zero_and_negative_values_are_refused_by_name() {
        let (args, warnings) = parse(&[
            (WORKERS_KEY, ArgValue::Int(0)),
            (MIN_PERCENTAGE_KEY, ArgValue::Int(-1)),
            (MIN_ABSOLUTE_KEY, ArgValue::Int(0)),
            (MAX_ABSOLUTE_KEY, ArgValue::Int(-5)),
        ]);
        assert_eq!(args, CandidateArgs::DEFAULT);
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        for (warning, key) in warnings.iter().zip([
            WORKERS_KEY,
            MIN_PERCENTAGE_KEY,
            MIN_ABSOLUTE_KEY,
            MAX_ABSOLUTE_KEY,
        ]) {
            assert!(warning.contains(key), "{warning}");
            assert!(warning.contains("default"), "{warning}");
        }
    }

    #[test]
    fn values_of_the_wrong_type_are_refused() {
        // GetInt takes an integer only: a float or a string keeps the default.
        let (args, warnings) = parse(&[
            (MIN_PERCENTAGE_KEY, ArgValue::Float(50.0)),
            (MAX_ABSOLUTE_KEY, ArgValue::Str("5".into())),
        ]);
        assert_eq!(args, CandidateArgs::DEFAULT);
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains(MIN_PERCENTAGE_KEY));
        assert!(warnings[1].contains(MAX_ABSOLUTE_KEY));
    }

    #[test]
    fn crossed_bounds_are_reported_and_the_maximum_wins() {
        let (args, warnings) = parse(&[
            (MIN_ABSOLUTE_KEY, ArgValue::Int(10)),
            (MAX_ABSOLUTE_KEY, ArgValue::Int(4)),
        ]);
        assert_eq!(warnings.len(), 1);
        assert_eq!(args.num_candidates(50), 4);
    }

    #[test]
    fn candidate_count_follows_volcano_arithmetic() {
        let d = CandidateArgs::DEFAULT;
        // Below 20 nodes the 10 % rounds down under the minimum of 1.
        assert_eq!(d.num_candidates(1), 1);
        assert_eq!(d.num_candidates(19), 1);
        assert_eq!(d.num_candidates(20), 2);
        assert_eq!(d.num_candidates(1009), 100);
        assert_eq!(d.num_candidates(5000), 100);
        assert_eq!(d.num_candidates(0), 0);
        let all = CandidateArgs {
            min_percentage: 100,
            ..d
        };
        assert_eq!(all.num_candidates(7), 7);
        // More than the feasible nodes is never asked for.
        let many = CandidateArgs {
            min_absolute: 50,
            ..d
        };
        assert_eq!(many.num_candidates(3), 3);
        // Percentages above 100 and huge values do not overflow.
        let huge = CandidateArgs {
            min_percentage: i64::MAX,
            max_absolute: i64::MAX,
            ..d
        };
        assert_eq!(huge.num_candidates(1 << 40), 1 << 40);
        // Percentage 0 leaves the absolute minimum.
        let zero = CandidateArgs {
            min_percentage: 0,
            min_absolute: 3,
            ..d
        };
        assert_eq!(zero.num_candidates(500), 3);
    }
}
