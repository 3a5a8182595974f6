//! GPU-exclusive rules of the vGPU device (spec/plugins-more.md §12.2; Volcano's
//! `plugins/deviceshare/gpuexclusive.go`): `deviceshare.GPUExclusiveRules` lists label sets;
//! a pod carrying every label of a rule takes no card that already holds a pod of the same
//! rule. Only HAMi-core nodes apply them, as in Volcano.

use std::collections::BTreeMap;

use engine::conf::{ArgValue, ArgWarning, Arguments};
use k8s_openapi::api::core::v1::Pod;

/// The argument key.
pub const KEY: &str = "deviceshare.GPUExclusiveRules";

/// At most this many rules are kept: a pod's rules are a bit set.
pub const MAX_RULES: usize = 64;

/// The rules, in the order written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExclusiveRules {
    rules: Vec<BTreeMap<String, String>>,
}

impl ExclusiveRules {
    /// Reads the rules as Volcano does (`parseExclusiveRules`): a list of maps; keys and values
    /// that are not strings are left out, and a map left empty is no rule. Anything else is
    /// reported.
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> ExclusiveRules {
        let Some(value) = args.get(KEY) else {
            return ExclusiveRules::default();
        };
        let ArgValue::List(items) = value else {
            warnings.push(ArgWarning::new(
                KEY,
                "expected a list of label maps; ignored",
            ));
            return ExclusiveRules::default();
        };
        let mut rules = Vec::new();
        for item in items {
            let ArgValue::Map(pairs) = item else {
                warnings.push(ArgWarning::new(KEY, "an entry is not a label map; skipped"));
                continue;
            };
            let labels: BTreeMap<String, String> = pairs
                .iter()
                .filter_map(|(k, v)| match (k, v) {
                    (ArgValue::Str(k), ArgValue::Str(v)) => Some((k.clone(), v.clone())),
                    _ => None,
                })
                .collect();
            if !labels.is_empty() {
                rules.push(labels);
            }
        }
        if rules.len() > MAX_RULES {
            warnings.push(ArgWarning::new(
                KEY,
                format!("more than {MAX_RULES} rules; the rest are ignored"),
            ));
            rules.truncate(MAX_RULES);
        }
        ExclusiveRules { rules }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules the pod matches (every label of the rule, with its value), as a bit set.
    pub fn of_pod(&self, pod: &Pod) -> u64 {
        let Some(labels) = pod.metadata.labels.as_ref() else {
            return 0;
        };
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.iter().all(|(k, v)| labels.get(k) == Some(v)))
            .fold(0, |mask, (i, _)| mask | (1 << i))
    }
}

#[cfg(test)]
mod tests;
