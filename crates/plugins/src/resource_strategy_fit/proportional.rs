//! Proportional (spec/plugins-more.md §8.1 `proportional`, §8.5): a predicate that keeps, on a
//! node with idle scarce resources (GPUs), enough idle cpu and memory for tasks that will want
//! those GPUs later. Tasks that request one of the scarce resources themselves are exempt.

use std::collections::BTreeMap;

use engine::conf::{ArgValue, ArgWarning, shorten};
use engine::model::{Resource, ResourceName};

use engine::conf::go_decode::{self as decode, DecodeError};

/// The `proportional` argument as decoded.
#[derive(Clone, Debug, Default, PartialEq)]
struct ProportionalArgs {
    enable: bool,
    resources: String,
    resource_proportion: BTreeMap<String, f64>,
}

fn decode_args(v: &ArgValue, path: &str) -> Result<ProportionalArgs, DecodeError> {
    let mut out = ProportionalArgs::default();
    let Some(f) = decode::fields(v, path)? else {
        return Ok(out);
    };
    if let Some(b) = f.read("Enable", "enable", decode::boolean)? {
        out.enable = b;
    }
    if let Some(s) = f.read("Resources", "resources", decode::string)? {
        out.resources = s;
    }
    let ratios = f.read("ResourceProportion", "resourceProportion", |v, p| {
        decode::map(v, p, |e, p| Ok(decode::float(e, p)?.unwrap_or(0.0)))
    })?;
    if let Some(entries) = ratios {
        out.resource_proportion = entries.into_iter().collect();
    }
    Ok(out)
}

/// What one idle unit of a scarce resource reserves.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Ratio {
    /// Cores per unit (`<res>.cpu`, default 1).
    pub cpu: f64,
    /// 10⁹ bytes per unit (`<res>.memory`, default 1).
    pub memory: f64,
}

/// The scarce resources of one session with their ratios, by name (which only decides the
/// resource named when several would fail; Volcano's order is random).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Proportional {
    pub resources: BTreeMap<String, Ratio>,
}

impl Proportional {
    /// Reads the `proportional` argument (§8.1): `None` when it is not enabled. A value
    /// Volcano cannot decode (it exits) disables the check here, with a warning.
    pub fn from_argument(value: Option<&ArgValue>) -> Option<Self> {
        Self::read(value, &mut Vec::new())
    }

    /// [`Proportional::from_argument`], adding what is wrong with the argument to `warnings`.
    pub fn read(value: Option<&ArgValue>, warnings: &mut Vec<ArgWarning>) -> Option<Self> {
        let args = match decode_args(value?, "proportional") {
            Ok(args) => args,
            Err(e) => {
                warnings.push(ArgWarning::new(
                    "proportional",
                    format!("{e}; the proportional check is off (Volcano exits on this)"),
                ));
                return None;
            }
        };
        if !args.enable {
            return None;
        }
        let mut ratio = |key: String| {
            let r = args.resource_proportion.get(&key).copied().unwrap_or(1.0);
            if r < 0.0 {
                warnings.push(ArgWarning::new(
                    format!("proportional.resourceProportion[{}]", shorten(&key)),
                    format!("negative ratio {r}; 1 is used, as in Volcano"),
                ));
                1.0
            } else {
                r
            }
        };
        let resources = args
            .resources
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(|name| {
                let r = Ratio {
                    cpu: ratio(format!("{name}.cpu")),
                    memory: ratio(format!("{name}.memory")),
                };
                (name.to_owned(), r)
            })
            .collect();
        Some(Proportional { resources })
    }

    /// §8.5: `Err(name)` of the first scarce resource whose reservation the task would eat
    /// into on a node with `idle` resources.
    pub fn check<'a>(&'a self, request: &Resource, idle: &Resource) -> Result<(), &'a str> {
        // Only the scalar map is consulted, as in Volcano: listing `cpu` here exempts nobody.
        let held =
            |r: &Resource, name: &str| ResourceName::lookup(name).and_then(|n| r.scalars.get(n));
        if self
            .resources
            .keys()
            .any(|name| held(request, name).is_some_and(|v| v > 0.0))
        {
            return Ok(());
        }
        for (name, ratio) in &self.resources {
            // A scarce resource the node lists, even at 0, takes part.
            let Some(units) = held(idle, name) else {
                continue;
            };
            // Scalars are milli-units, so `units × cpu` is millicores and the memory ratio
            // ends up in 10⁹ bytes per unit.
            let cpu_reserved = units * ratio.cpu;
            let memory_reserved = units * ratio.memory * 1000.0 * 1000.0;
            if idle.milli_cpu - request.milli_cpu < cpu_reserved
                || idle.memory - request.memory < memory_reserved
            {
                return Err(name);
            }
        }
        Ok(())
    }
}
