//! SRA, scarce resource avoidance (spec/plugins-more.md §8.1 `sra`, §8.4): a node score that
//! keeps tasks away from nodes holding scarce resources they do not need, so those nodes stay
//! free for the tasks that do.

use std::collections::BTreeMap;

use engine::conf::{ArgValue, ArgWarning, clamp_weight, shorten};
use engine::model::Resource;
use engine::model::resource::MIN_RESOURCE;

use super::MAX_NODE_SCORE;
use engine::conf::go_decode::{self as decode, DecodeError};

/// The `sra` argument as decoded, before the per-resource weights are derived.
#[derive(Clone, Debug, Default, PartialEq)]
struct SraArgs {
    enable: bool,
    resources: String,
    weight: i64,
    resource_weight: BTreeMap<String, i64>,
}

fn decode_args(v: &ArgValue, path: &str) -> Result<SraArgs, DecodeError> {
    let mut out = SraArgs::default();
    let Some(f) = decode::fields(v, path)? else {
        return Ok(out);
    };
    if let Some(b) = f.read("Enable", "enable", decode::boolean)? {
        out.enable = b;
    }
    if let Some(s) = f.read("Resources", "resources", decode::string)? {
        out.resources = s;
    }
    if let Some(w) = f.read("Weight", "weight", decode::int)? {
        out.weight = w;
    }
    let weights = f.read("ResourceWeight", "resourceWeight", |v, p| {
        decode::map(v, p, |e, p| Ok(decode::int(e, p)?.unwrap_or(0)))
    })?;
    if let Some(entries) = weights {
        out.resource_weight = entries.into_iter().collect();
    }
    Ok(out)
}

/// The SRA weights of one session. The default (SRA disabled) has weight 0, which scores
/// nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SraWeights {
    /// `sra.weight`: multiplies the score; 0 (also when omitted) switches SRA scoring off.
    pub weight: i64,
    /// Scarce resource → weight (negative configured weights become 1, 0 is kept).
    pub resources: BTreeMap<String, i64>,
    /// Sum of the weights over the *listed* names: a name listed twice counts twice, as in
    /// Volcano, although the map holds it once.
    pub weight_sum: i64,
}

impl SraWeights {
    /// Reads the `sra` argument (§8.1). A value Volcano cannot decode (it exits) disables SRA
    /// here, with a warning.
    pub fn from_argument(value: Option<&ArgValue>) -> Self {
        Self::read(value, &mut Vec::new())
    }

    /// [`SraWeights::from_argument`], adding what is wrong with the argument to `warnings`.
    /// Weights beyond ±`MAX_WEIGHT` are clamped to it (Volcano's integer products wrap).
    pub fn read(value: Option<&ArgValue>, warnings: &mut Vec<ArgWarning>) -> Self {
        let Some(value) = value else {
            return Self::default();
        };
        let mut args = match decode_args(value, "sra") {
            Ok(args) => args,
            Err(e) => {
                warnings.push(ArgWarning::new(
                    "sra",
                    format!("{e}; SRA is off (Volcano exits on this)"),
                ));
                return Self::default();
            }
        };
        if !args.enable {
            return Self::default();
        }
        warnings.extend(clamp_weight("sra.weight", &mut args.weight));
        if args.weight < 0 {
            warnings.push(ArgWarning::new(
                "sra.weight",
                format!(
                    "negative weight {}: SRA then draws tasks to the nodes with scarce \
                     resources (accepted, as in Volcano)",
                    args.weight
                ),
            ));
        }
        // Volcano starts the weight at 1 and then overwrites it with the decoded value, so an
        // omitted weight ends up 0.
        let mut out = SraWeights {
            weight: args.weight,
            ..Self::default()
        };
        for name in args.resources.split(',').map(str::trim) {
            if name.is_empty() {
                continue;
            }
            let key = format!("sra.resourceWeight[{}]", shorten(name));
            let mut w = args.resource_weight.get(name).copied().unwrap_or(1);
            warnings.extend(clamp_weight(&key, &mut w));
            if w < 0 {
                warnings.push(ArgWarning::new(
                    key,
                    format!("negative weight {w}; 1 is used, as in Volcano"),
                ));
                w = 1;
            }
            out.resources.insert(name.to_owned(), w);
            out.weight_sum = out.weight_sum.wrapping_add(w);
        }
        out
    }
}

/// §8.4: `(1 − Σ weights of the scarce resources the node offers / weight sum) × 100 ×
/// sra.weight`, or 0 when the node lacks (allocatable 0) anything the task requests.
pub fn sra_score(request: &Resource, allocatable: &Resource, sra: &SraWeights) -> f64 {
    let lacks = |value: f64| value == 0.0;
    if request.milli_cpu >= MIN_RESOURCE && lacks(allocatable.milli_cpu) {
        return 0.0;
    }
    if request.memory >= MIN_RESOURCE && lacks(allocatable.memory) {
        return 0.0;
    }
    if request
        .scalars
        .iter()
        .any(|(name, v)| v >= MIN_RESOURCE && lacks(allocatable.scalar(name)))
    {
        return 0.0;
    }
    let mut score: f64 = sra
        .resources
        .iter()
        .filter(|(name, _)| allocatable.get(name) > 0.0)
        .map(|(_, &w)| w as f64)
        .sum();
    if sra.weight_sum > 0 {
        score = 1.0 - score / sra.weight_sum as f64;
    }
    // Volcano multiplies the two integers first (wrapping on overflow).
    score * (MAX_NODE_SCORE as i64).wrapping_mul(sra.weight) as f64
}
