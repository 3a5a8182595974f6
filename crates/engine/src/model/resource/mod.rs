//! The resource vector used for every request, capacity and quota in the scheduler.
//!
//! Implements framework.md §5.4 (representation, thresholds, arithmetic, comparisons) and
//! plugins-core.md §0.6 (the same model as the plugins see it, plus `helpers.Share`,
//! `helpers.Max` and `helpers.Min`). Semantics follow Volcano's
//! `pkg/scheduler/api/resource_info.go` and `pkg/scheduler/api/helpers/helpers.go`, including the
//! ε = [`MIN_RESOURCE`] tolerance and every documented quirk.
//!
//! Units: cpu in milli-cores, memory in bytes, scalars in milli-units, except `pods`, which is a
//! plain count.
//!
//! Deliberate differences from the Go code:
//!
//! * Volcano tells a nil scalar map from an empty one; here both are "no scalars", and every
//!   operation behaves as Volcano does for a *non-nil* map (the common case: task requests and
//!   node capacities always carry `pods`). This changes results only in these corners:
//!   - [`Resource::sub`]: Volcano skips the scalars of `rr` when the receiver's map is nil; we
//!     always subtract them (names only in `rr` become negative entries).
//!   - [`Resource::less_equal_with_dimension_and_resources_name`]: Volcano checks only cpu and
//!     memory when the receiver's map is nil; we also check the requested scalars, which can
//!     only fail when `rr` holds a negative value for one of them.
//!   - [`min_resource`]: Volcano returns no scalars when either side's map is nil; we take the
//!     minimum for every scalar of `l`, reading a missing right-hand value as 0.
//!   - [`Resource::is_zero`]: a scalar missing from a non-empty map is an assertion failure in
//!     Volcano; we log an error and report zero.
//! * Lists of resource names come in Volcano's order — cpu, memory, then scalars — with the
//!   scalars sorted by name instead of Go's random map order.
//! * Volcano's asserting `Sub` panics by default; we log the violation and subtract anyway.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use smallvec::SmallVec;

use super::quantity;

mod kinds;
mod name;

pub use kinds::{is_count_quota, is_scalar_resource_name};
use name::union_entries;
pub use name::{ResourceName, Scalars};

/// Tolerance of "≤" comparisons and threshold of "non-zero", in each dimension's stored unit.
pub const MIN_RESOURCE: f64 = 0.1;

/// Name of the cpu dimension.
pub const CPU: &str = "cpu";
/// Name of the memory dimension.
pub const MEMORY: &str = "memory";
/// Name of the pod-count scalar.
pub const PODS: &str = "pods";
/// Name of the ephemeral-storage scalar.
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

/// What a scalar present on one side of a comparison but missing on the other is taken to be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DimensionDefault {
    /// The missing dimension is 0.
    Zero,
    /// The missing dimension is unbounded (Volcano encodes it as −1 in `Diff`).
    Infinity,
}

impl DimensionDefault {
    /// Volcano's numeric encoding, used to pad missing scalars in [`Resource::diff`].
    fn padding(self) -> f64 {
        match self {
            DimensionDefault::Zero => 0.0,
            DimensionDefault::Infinity => -1.0,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resource
// ---------------------------------------------------------------------------------------------

/// A resource vector: cpu in milli-cores, memory in bytes, scalars in milli-units except
/// `pods` (plain count). `max_task_num` is only set from a resource list's `pods` entry and
/// is never touched by arithmetic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resource {
    pub milli_cpu: f64,
    pub memory: f64,
    pub scalars: Scalars,
    pub max_task_num: i64,
}

/// `a ≤ b` with Volcano's tolerance.
fn le(a: f64, b: f64) -> bool {
    a < b || (a - b).abs() < MIN_RESOURCE
}

fn lt(a: f64, b: f64) -> bool {
    a < b
}

/// Failing (or matching) dimension names collected by the list-returning comparisons.
#[derive(Default)]
struct NameList {
    cpu: bool,
    memory: bool,
    scalars: SmallVec<[&'static str; 4]>,
}

impl NameList {
    fn is_empty(&self) -> bool {
        !self.cpu && !self.memory && self.scalars.is_empty()
    }

    fn into_vec(mut self) -> Vec<String> {
        self.scalars.sort_unstable();
        let mut out = Vec::with_capacity(2 + self.scalars.len());
        if self.cpu {
            out.push(CPU.to_owned());
        }
        if self.memory {
            out.push(MEMORY.to_owned());
        }
        out.extend(self.scalars.iter().map(|s| (*s).to_owned()));
        out
    }
}

fn parse_or_warn(
    name: &str,
    q: &Quantity,
    parse: fn(&str) -> Result<i128, quantity::QuantityError>,
) -> Option<f64> {
    match parse(&q.0) {
        Ok(v) => Some(v as f64),
        Err(err) => {
            tracing::warn!(resource = name, %err, "skipping malformed resource quantity");
            None
        }
    }
}

impl Resource {
    /// All zero, no scalars (`EmptyResource`).
    pub fn empty() -> Self {
        Self::default()
    }

    /// cpu and memory at `f64::MAX`, `max_task_num` at `i64::MAX`, no scalars
    /// (`InfiniteResource`).
    pub fn infinite() -> Self {
        Resource {
            milli_cpu: f64::MAX,
            memory: f64::MAX,
            scalars: Scalars::new(),
            max_task_num: i64::MAX,
        }
    }

    /// Converts a Kubernetes resource list (`NewResource`, §5.4.1). Malformed quantities are
    /// skipped with a warning.
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Self {
        Self::from_list_with_ignored(list, &[])
    }

    /// [`Resource::from_list`] that also drops the scalar names in `ignored` (the
    /// device-sharing plugins' ignore list).
    pub fn from_list_with_ignored(list: &BTreeMap<String, Quantity>, ignored: &[&str]) -> Self {
        let mut r = Resource::empty();
        for (name, q) in list {
            match name.as_str() {
                CPU => {
                    if let Some(v) = parse_or_warn(name, q, quantity::parse_milli) {
                        r.milli_cpu += v;
                    }
                }
                MEMORY => {
                    if let Some(v) = parse_or_warn(name, q, quantity::parse_value) {
                        r.memory += v;
                    }
                }
                PODS => {
                    if let Some(v) = parse_or_warn(name, q, quantity::parse_value) {
                        // Saturating float-to-int conversion; counts never come near the limit.
                        r.max_task_num = r.max_task_num.saturating_add(v as i64);
                        r.scalars.add(ResourceName::PODS, v);
                    }
                }
                EPHEMERAL_STORAGE => {
                    if let Some(v) = parse_or_warn(name, q, quantity::parse_milli) {
                        r.scalars.add(ResourceName::new(name), v);
                    }
                }
                _ if is_count_quota(name) => {}
                _ if is_scalar_resource_name(name) => {
                    if ignored.contains(&name.as_str()) {
                        tracing::debug!(resource = %name, "ignoring shared-device resource");
                    } else if let Some(v) = parse_or_warn(name, q, quantity::parse_milli) {
                        r.scalars.add(ResourceName::new(name), v);
                    }
                }
                _ => {}
            }
        }
        r
    }

    /// Builds a resource from values already in stored units (tests and benches). `"cpu"` and
    /// `"memory"` among `scalars` are added to those dimensions; duplicates add up.
    /// `max_task_num` stays 0, as for a task request.
    pub fn from_pairs(cpu_milli: f64, memory: f64, scalars: &[(&str, f64)]) -> Self {
        let mut r = Resource {
            milli_cpu: cpu_milli,
            memory,
            ..Resource::default()
        };
        for &(name, v) in scalars {
            match name {
                CPU => r.milli_cpu += v,
                MEMORY => r.memory += v,
                _ => r.scalars.add(ResourceName::new(name), v),
            }
        }
        r
    }

    /// The value of `name` (`"cpu"`, `"memory"` or a scalar); missing means 0.
    pub fn get(&self, name: &str) -> f64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            _ => ResourceName::lookup(name).map_or(0.0, |n| self.scalar(n)),
        }
    }

    /// The value of scalar `n`; missing means 0.
    pub fn scalar(&self, n: ResourceName) -> f64 {
        self.scalars.get(n).unwrap_or(0.0)
    }

    /// Sets scalar `n` to `v`.
    pub fn set_scalar(&mut self, n: ResourceName, v: f64) {
        self.scalars.set(n, v);
    }

    /// Adds `v` to scalar `n`, creating it.
    pub fn add_scalar(&mut self, n: ResourceName, v: f64) {
        self.scalars.add(n, v);
    }

    /// Below ε in cpu, memory and every scalar except `pods` (a best-effort request).
    pub fn is_empty(&self) -> bool {
        self.milli_cpu < MIN_RESOURCE
            && self.memory < MIN_RESOURCE
            && self
                .scalars
                .iter()
                .all(|(n, v)| n == ResourceName::PODS || v < MIN_RESOURCE)
    }

    /// Whether dimension `name` is below ε. A scalar missing from a non-empty map is an
    /// assertion failure in Volcano; it is logged and reported as zero.
    pub fn is_zero(&self, name: &str) -> bool {
        match name {
            CPU => self.milli_cpu < MIN_RESOURCE,
            MEMORY => self.memory < MIN_RESOURCE,
            _ => match ResourceName::lookup(name).and_then(|n| self.scalars.get(n)) {
                Some(v) => v < MIN_RESOURCE,
                None => {
                    if !self.scalars.is_empty() {
                        tracing::error!(resource = name, "unknown resource {name} in {self}");
                    }
                    true
                }
            },
        }
    }

    /// Names of the dimensions at or above ε (`pods` included): cpu, memory, then scalars by
    /// name.
    pub fn resource_names(&self) -> Vec<String> {
        let mut names = NameList {
            cpu: self.milli_cpu >= MIN_RESOURCE,
            memory: self.memory >= MIN_RESOURCE,
            scalars: SmallVec::new(),
        };
        for (n, v) in self.scalars.iter() {
            if v >= MIN_RESOURCE {
                names.scalars.push(n.as_str());
            }
        }
        names.into_vec()
    }

    // -- arithmetic --------------------------------------------------------------------------

    /// Adds every dimension of `rr`, creating scalars as needed.
    pub fn add(&mut self, rr: &Resource) -> &mut Self {
        self.milli_cpu += rr.milli_cpu;
        self.memory += rr.memory;
        self.scalars.add_all(&rr.scalars, 1.0);
        self
    }

    /// Volcano's asserting `Sub`: `rr` must be ≤ `self` (`LessEqual(Zero)`). A violation is
    /// logged as an error (Volcano would panic) and the subtraction happens anyway.
    pub fn sub(&mut self, rr: &Resource) -> &mut Self {
        if !rr.less_equal(self, DimensionDefault::Zero) {
            tracing::error!("resource is not sufficient to do operation: <{self}> sub <{rr}>");
        }
        self.sub_unchecked(rr)
    }

    /// Subtraction that may go negative; insufficient dimensions are logged as an error.
    pub fn sub_without_assert(&mut self, rr: &Resource) -> &mut Self {
        // The plain check is the same test without collecting names; names only for the log.
        if !rr.less_equal(self, DimensionDefault::Zero) {
            let (_, names) = rr.less_equal_with_resources_name(self, DimensionDefault::Zero);
            tracing::error!(
                "resources <{names:?}> are not sufficient to do operation: <{self}> sub <{rr}>"
            );
        }
        self.sub_unchecked(rr)
    }

    fn sub_unchecked(&mut self, rr: &Resource) -> &mut Self {
        self.milli_cpu -= rr.milli_cpu;
        self.memory -= rr.memory;
        self.scalars.add_all(&rr.scalars, -1.0);
        self
    }

    /// Scales every dimension by `f`.
    pub fn multi(&mut self, f: f64) -> &mut Self {
        self.milli_cpu *= f;
        self.memory *= f;
        for v in self.scalars.values_mut() {
            *v *= f;
        }
        self
    }

    /// Element-wise maximum with `rr`, adding scalars only `rr` has.
    pub fn set_max_resource(&mut self, rr: &Resource) {
        if rr.milli_cpu > self.milli_cpu {
            self.milli_cpu = rr.milli_cpu;
        }
        if rr.memory > self.memory {
            self.memory = rr.memory;
        }
        for (n, v) in rr.scalars.iter() {
            if self.scalars.get(n).is_none_or(|current| v > current) {
                self.scalars.set(n, v);
            }
        }
    }

    /// For each dimension where `rr > 0`: `self -= rr + ε`. A negative result marks an
    /// insufficient dimension.
    pub fn fit_delta(&mut self, rr: &Resource) -> &mut Self {
        if rr.milli_cpu > 0.0 {
            self.milli_cpu -= rr.milli_cpu + MIN_RESOURCE;
        }
        if rr.memory > 0.0 {
            self.memory -= rr.memory + MIN_RESOURCE;
        }
        for (n, v) in rr.scalars.iter() {
            if v > 0.0 {
                self.scalars.add(n, -(v + MIN_RESOURCE));
            }
        }
        self
    }

    // -- comparisons -------------------------------------------------------------------------

    /// Every dimension strictly less (no tolerance); see §5.4.4 for the scalar rules.
    pub fn less(&self, rr: &Resource, d: DimensionDefault) -> bool {
        self.all_dimensions(rr, d, lt)
    }

    /// Every dimension ≤ within ε; see §5.4.4 for the scalar rules.
    pub fn less_equal(&self, rr: &Resource, d: DimensionDefault) -> bool {
        self.all_dimensions(rr, d, le)
    }

    /// Shared body of `Less` and `LessEqual`.
    fn all_dimensions(
        &self,
        rr: &Resource,
        d: DimensionDefault,
        cmp: fn(f64, f64) -> bool,
    ) -> bool {
        if !cmp(self.milli_cpu, rr.milli_cpu) || !cmp(self.memory, rr.memory) {
            return false;
        }
        if d == DimensionDefault::Infinity
            && rr.scalars.iter().any(|(n, _)| !self.scalars.contains(n))
        {
            return false;
        }
        self.scalars.iter().all(|(n, l)| match rr.scalars.get(n) {
            None if d == DimensionDefault::Infinity => true,
            r => cmp(l, r.unwrap_or(0.0)),
        })
    }

    /// `LessEqual` that also names the failing dimensions — without the "`rr` has a scalar
    /// `self` lacks" rule of `LessEqual(Infinity)`.
    pub fn less_equal_with_resources_name(
        &self,
        rr: &Resource,
        d: DimensionDefault,
    ) -> (bool, Vec<String>) {
        let mut failed = NameList {
            cpu: !le(self.milli_cpu, rr.milli_cpu),
            memory: !le(self.memory, rr.memory),
            scalars: SmallVec::new(),
        };
        for (n, l) in self.scalars.iter() {
            let r = match rr.scalars.get(n) {
                None if d == DimensionDefault::Infinity => continue,
                r => r.unwrap_or(0.0),
            };
            if !le(l, r) {
                failed.scalars.push(n.as_str());
            }
        }
        (failed.is_empty(), failed.into_vec())
    }

    /// Compares only the dimensions `req` asks for (`req > 0`, `pods` excluded); a dimension
    /// fails when `self > rr` strictly, without tolerance; missing scalars read as 0.
    pub fn less_equal_with_dimension(&self, rr: &Resource, req: &Resource) -> bool {
        let mut fits = true;
        self.for_each_exceeding_requested(rr, req, |_| {
            fits = false;
            false
        });
        fits
    }

    /// Calls `on_fail` with each requested dimension where `self > rr` strictly, in the order
    /// cpu, memory, scalars of `req`; stops when `on_fail` returns false.
    fn for_each_exceeding_requested(
        &self,
        rr: &Resource,
        req: &Resource,
        mut on_fail: impl FnMut(&'static str) -> bool,
    ) {
        if req.milli_cpu > 0.0 && self.milli_cpu > rr.milli_cpu && !on_fail(CPU) {
            return;
        }
        if req.memory > 0.0 && self.memory > rr.memory && !on_fail(MEMORY) {
            return;
        }
        for (n, q) in req.scalars.iter() {
            let exceeds = n != ResourceName::PODS && q > 0.0 && self.scalar(n) > rr.scalar(n);
            if exceeds && !on_fail(n.as_str()) {
                return;
            }
        }
    }

    /// `LessEqualWithDimensionAndResourcesName`: like [`Resource::less_equal_with_dimension`]
    /// with the failing names. `rr` absent → not ok with all of `self`'s names; `req` absent →
    /// [`Resource::less_equal_with_resources_name`] with `Zero`.
    pub fn less_equal_with_dimension_and_resources_name(
        &self,
        rr: Option<&Resource>,
        req: Option<&Resource>,
    ) -> (bool, Vec<String>) {
        let Some(rr) = rr else {
            return (false, self.resource_names());
        };
        let Some(req) = req else {
            return self.less_equal_with_resources_name(rr, DimensionDefault::Zero);
        };
        let mut failed = NameList::default();
        self.for_each_exceeding_requested(rr, req, |name| {
            match name {
                CPU => failed.cpu = true,
                MEMORY => failed.memory = true,
                _ => failed.scalars.push(name),
            }
            true
        });
        (failed.is_empty(), failed.into_vec())
    }

    /// Some dimension strictly less; see §5.4.4 for the scalar rules.
    pub fn less_partly(&self, rr: &Resource, d: DimensionDefault) -> bool {
        self.any_dimension(rr, d, lt)
    }

    /// Some dimension ≤ within ε; see §5.4.4 for the scalar rules.
    pub fn less_equal_partly(&self, rr: &Resource, d: DimensionDefault) -> bool {
        self.any_dimension(rr, d, le)
    }

    /// Shared body of `LessPartly` and `LessEqualPartly`.
    fn any_dimension(&self, rr: &Resource, d: DimensionDefault, cmp: fn(f64, f64) -> bool) -> bool {
        if cmp(self.milli_cpu, rr.milli_cpu) || cmp(self.memory, rr.memory) {
            return true;
        }
        if d == DimensionDefault::Zero && rr.scalars.iter().any(|(n, _)| !self.scalars.contains(n))
        {
            return true;
        }
        self.scalars.iter().any(|(n, l)| match rr.scalars.get(n) {
            None if d == DimensionDefault::Infinity => true,
            r => cmp(l, r.unwrap_or(0.0)),
        })
    }

    /// Over the dimensions `req` asks for (`pods` excluded): true with the dimensions where
    /// `self ≤ rr` within ε (missing = 0). `req` absent → `(false, [])`.
    pub fn less_equal_partly_with_dimension(
        &self,
        rr: &Resource,
        req: Option<&Resource>,
    ) -> (bool, Vec<String>) {
        let Some(req) = req else {
            return (false, Vec::new());
        };
        let mut matched = NameList {
            cpu: req.milli_cpu > 0.0 && le(self.milli_cpu, rr.milli_cpu),
            memory: req.memory > 0.0 && le(self.memory, rr.memory),
            scalars: SmallVec::new(),
        };
        for (n, q) in req.scalars.iter() {
            if n != ResourceName::PODS && q > 0.0 && le(self.scalar(n), rr.scalar(n)) {
                matched.scalars.push(n.as_str());
            }
        }
        (!matched.is_empty(), matched.into_vec())
    }

    /// [`Resource::less_equal_partly_with_dimension`] after dropping the requested dimensions
    /// where both `self` and `rr` are below ε.
    pub fn less_equal_partly_with_dimension_zero_filtered(
        &self,
        rr: &Resource,
        req: Option<&Resource>,
    ) -> (bool, Vec<String>) {
        let Some(req) = req else {
            return (false, Vec::new());
        };
        let both_zero = |l: f64, r: f64| l < MIN_RESOURCE && r < MIN_RESOURCE;
        let mut filtered = Resource::empty();
        if req.milli_cpu > 0.0 && !both_zero(self.milli_cpu, rr.milli_cpu) {
            filtered.milli_cpu = req.milli_cpu;
        }
        if req.memory > 0.0 && !both_zero(self.memory, rr.memory) {
            filtered.memory = req.memory;
        }
        for (n, q) in req.scalars.iter() {
            if q > 0.0 && !both_zero(self.scalar(n), rr.scalar(n)) {
                filtered.scalars.set(n, q);
            }
        }
        self.less_equal_partly_with_dimension(rr, Some(&filtered))
    }

    /// cpu and memory within ε, and every scalar of `self` within ε of `rr`'s (missing = 0).
    /// Scalars only in `rr` are not checked; `_d` is unused, as in Volcano.
    pub fn equal(&self, rr: &Resource, _d: DimensionDefault) -> bool {
        let eq = |l: f64, r: f64| l == r || (l - r).abs() < MIN_RESOURCE;
        eq(self.milli_cpu, rr.milli_cpu)
            && eq(self.memory, rr.memory)
            && self.scalars.iter().all(|(n, l)| eq(l, rr.scalar(n)))
    }

    /// Negation of [`Resource::less_equal_with_resources_name`], with the exceeding names.
    pub fn greater_partly(&self, rr: &Resource, d: DimensionDefault) -> (bool, Vec<String>) {
        let (ok, names) = self.less_equal_with_resources_name(rr, d);
        (!ok, names)
    }

    /// Requested dimensions (`req > 0`, `pods` excluded) where `self > rr` strictly (missing =
    /// 0; `rr` absent = empty).
    pub fn greater_partly_with_dimension(
        &self,
        rr: Option<&Resource>,
        req: &Resource,
    ) -> (bool, Vec<String>) {
        let empty = Resource::empty();
        let rr = rr.unwrap_or(&empty);
        let mut exceeded = NameList::default();
        self.for_each_exceeding_requested(rr, req, |name| {
            match name {
                CPU => exceeded.cpu = true,
                MEMORY => exceeded.memory = true,
                _ => exceeded.scalars.push(name),
            }
            true
        });
        (!exceeded.is_empty(), exceeded.into_vec())
    }

    /// [`Resource::greater_partly_with_dimension`] restricted to dimensions `rr` has: cpu and
    /// memory only when `rr`'s value is ≥ ε, a scalar only when `rr` has the key (even at 0).
    pub fn greater_partly_with_relevant_dimensions(
        &self,
        rr: &Resource,
        req: &Resource,
    ) -> (bool, Vec<String>) {
        let mut filtered = Resource::empty();
        if req.milli_cpu > 0.0 && rr.milli_cpu >= MIN_RESOURCE {
            filtered.milli_cpu = req.milli_cpu;
        }
        if req.memory > 0.0 && rr.memory >= MIN_RESOURCE {
            filtered.memory = req.memory;
        }
        for (n, q) in req.scalars.iter() {
            if q > 0.0 && rr.scalars.contains(n) {
                filtered.scalars.set(n, q);
            }
        }
        self.greater_partly_with_dimension(Some(rr), &filtered)
    }

    /// The first half of `diff(rr, Zero)` alone: what `self` holds beyond `rr` (proportion
    /// asks it of every job in every session).
    pub fn diff_increased(&self, rr: &Resource) -> Resource {
        self.diff_into(rr, DimensionDefault::Zero, None)
    }

    /// `(increased, decreased)` between `self` and `rr`. Missing scalars are padded with `d`'s
    /// value (0 or −1); a −1 on the left makes the scalar "infinitely" increased (−1), a −1 on
    /// the right infinitely decreased. Equal values land in `decreased` as 0. The −1 check
    /// applies to real values too, whatever `d` is.
    pub fn diff(&self, rr: &Resource, d: DimensionDefault) -> (Resource, Resource) {
        let mut decreased = Resource::empty();
        let increased = self.diff_into(rr, d, Some(&mut decreased));
        (increased, decreased)
    }

    /// [`Resource::diff`]'s increased half, and its decreased half into `decreased` when asked.
    fn diff_into(
        &self,
        rr: &Resource,
        d: DimensionDefault,
        mut decreased: Option<&mut Resource>,
    ) -> Resource {
        const INFINITE: f64 = -1.0;
        let mut increased = Resource::empty();
        if self.milli_cpu > rr.milli_cpu {
            increased.milli_cpu = self.milli_cpu - rr.milli_cpu;
        } else if let Some(dec) = decreased.as_deref_mut() {
            dec.milli_cpu = rr.milli_cpu - self.milli_cpu;
        }
        if self.memory > rr.memory {
            increased.memory = self.memory - rr.memory;
        } else if let Some(dec) = decreased.as_deref_mut() {
            dec.memory = rr.memory - self.memory;
        }
        let pad = d.padding();
        // The merge visits names in order, so each entry lands at the end of its map.
        for (n, l, r) in union_entries(&self.scalars, &rr.scalars) {
            let (l, r) = (l.unwrap_or(pad), r.unwrap_or(pad));
            if l == INFINITE {
                increased.scalars.0.push((n, l));
            } else if r == INFINITE {
                if let Some(dec) = decreased.as_deref_mut() {
                    dec.scalars.0.push((n, r));
                }
            } else if l > r {
                increased.scalars.0.push((n, l - r));
            } else if let Some(dec) = decreased.as_deref_mut() {
                dec.scalars.0.push((n, r - l));
            }
        }
        increased
    }

    /// In place: cpu and memory become the minimum; each scalar of `self` becomes the
    /// minimum with `rr`'s, or, when `rr` lacks it, stays (`Infinity`) or becomes 0 (`Zero`).
    /// Scalars only in `rr` are not added.
    pub fn min_dimension_resource(&mut self, rr: &Resource, d: DimensionDefault) -> &mut Self {
        if rr.milli_cpu < self.milli_cpu {
            self.milli_cpu = rr.milli_cpu;
        }
        if rr.memory < self.memory {
            self.memory = rr.memory;
        }
        for (n, v) in self.scalars.0.iter_mut() {
            match rr.scalars.get(*n) {
                Some(r) => *v = v.min(r),
                None if d == DimensionDefault::Zero => *v = 0.0,
                None => {}
            }
        }
        self
    }

    /// Allocation-free hot-path check that `self ≤ idle + releasing − pipelined` with
    /// `LessEqual(Zero)` semantics (Volcano's `FutureIdle()` comparison). On failure returns
    /// the first failing dimension: cpu, memory, then scalars by name.
    pub fn fits_future_idle(
        &self,
        idle: &Resource,
        releasing: &Resource,
        pipelined: &Resource,
    ) -> Result<(), &'static str> {
        // Same association as Idle.Clone().Add(Releasing).SubWithoutAssert(Pipelined), so the
        // result is bit-identical to comparing against the explicit sum.
        let future = |i: f64, r: f64, p: f64| (i + r) - p;
        if !le(
            self.milli_cpu,
            future(idle.milli_cpu, releasing.milli_cpu, pipelined.milli_cpu),
        ) {
            return Err(CPU);
        }
        if !le(
            self.memory,
            future(idle.memory, releasing.memory, pipelined.memory),
        ) {
            return Err(MEMORY);
        }
        let mut first: Option<&'static str> = None;
        for (n, v) in self.scalars.iter() {
            let available = future(idle.scalar(n), releasing.scalar(n), pipelined.scalar(n));
            if !le(v, available) {
                let name = n.as_str();
                if first.is_none_or(|f| name < f) {
                    first = Some(name);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    // -- output ------------------------------------------------------------------------------

    /// Plain-unit view for output: cpu in milli-cores, memory in bytes, scalars as counts
    /// (milli-units / 1000, `pods` as is). Dimensions below ε (stored unit) are left out.
    pub fn to_canonical_map(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        if self.milli_cpu >= MIN_RESOURCE {
            out.insert(CPU.to_owned(), self.milli_cpu);
        }
        if self.memory >= MIN_RESOURCE {
            out.insert(MEMORY.to_owned(), self.memory);
        }
        for (n, v) in self.scalars.iter() {
            if v >= MIN_RESOURCE {
                let count = if n == ResourceName::PODS {
                    v
                } else {
                    v / 1000.0
                };
                out.insert(n.as_str().to_owned(), count);
            }
        }
        out
    }

    /// Kubernetes resource list for writing (Volcano's `ConvertRes2ResList`): cpu and every
    /// scalar but `pods` as milli-quantities, memory as binary-SI bytes, `pods` as a count.
    /// cpu and memory are always present, scalars whatever their value.
    pub fn to_resource_list(&self) -> BTreeMap<String, Quantity> {
        let mut out = BTreeMap::new();
        out.insert(
            CPU.to_owned(),
            Quantity(quantity::format_milli_cpu(self.milli_cpu)),
        );
        out.insert(
            MEMORY.to_owned(),
            Quantity(quantity::format_bytes(self.memory)),
        );
        for (n, v) in self.scalars.iter() {
            let text = if n == ResourceName::PODS {
                quantity::format_count(v)
            } else {
                quantity::format_milli(v)
            };
            out.insert(n.as_str().to_owned(), Quantity(text));
        }
        out
    }
}

impl fmt::Display for Resource {
    /// `cpu 1000.00, memory 2048.00, nvidia.com/gpu 1000.00, pods 1.00` — scalars sorted by
    /// name, `maxFloat`/`maxInt` for the infinite markers, like Volcano's `String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Value(f64);
        impl fmt::Display for Value {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.0 == f64::MAX {
                    f.write_str("maxFloat")
                } else if self.0 == i64::MAX as f64 {
                    f.write_str("maxInt")
                } else {
                    write!(f, "{:.2}", self.0)
                }
            }
        }
        write!(
            f,
            "cpu {}, memory {}",
            Value(self.milli_cpu),
            Value(self.memory)
        )?;
        let mut scalars: SmallVec<[(&'static str, f64); 4]> =
            self.scalars.iter().map(|(n, v)| (n.as_str(), v)).collect();
        scalars.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (name, v) in scalars {
            write!(f, ", {name} {}", Value(v))?;
        }
        Ok(())
    }
}

/// The part of `left` exceeding `right`: the increased side of `left.diff(right, Zero)`.
/// `right` absent → `left` itself; `left` absent → empty (also when both are absent, where
/// Volcano would return nil).
pub fn exceeded_part(left: Option<&Resource>, right: Option<&Resource>) -> Resource {
    match (left, right) {
        (Some(l), None) => l.clone(),
        (None, _) => Resource::empty(),
        (Some(l), Some(r)) => l.diff_increased(r),
    }
}

/// `helpers.Share`: `l / r`, with 0 when both are 0 and 1 when only `r` is 0.
pub fn share(l: f64, r: f64) -> f64 {
    if r == 0.0 {
        if l == 0.0 { 0.0 } else { 1.0 }
    } else {
        l / r
    }
}

/// `helpers.Max`: element-wise maximum; negative scalars are dropped; `max_task_num` is not
/// carried.
pub fn max_resource(l: &Resource, r: &Resource) -> Resource {
    let mut res = Resource {
        milli_cpu: l.milli_cpu.max(r.milli_cpu),
        memory: l.memory.max(r.memory),
        ..Resource::default()
    };
    for (n, v) in l.scalars.iter() {
        if v >= 0.0 {
            res.scalars.set(n, v);
        }
    }
    for (n, v) in r.scalars.iter() {
        if v >= 0.0 {
            let current = res.scalar(n);
            res.scalars.set(n, v.max(current));
        }
    }
    res
}

/// `helpers.Min`: element-wise minimum over cpu, memory and the scalars of `l` (a missing
/// right-hand scalar reads as 0); `max_task_num` is not carried.
pub fn min_resource(l: &Resource, r: &Resource) -> Resource {
    Resource {
        milli_cpu: l.milli_cpu.min(r.milli_cpu),
        memory: l.memory.min(r.memory),
        scalars: l
            .scalars
            .iter()
            .map(|(n, v)| (n, v.min(r.scalar(n))))
            .collect(),
        max_task_num: 0,
    }
}

/// `Intersection` / `IntersectionWithIgnoredScalarResources`: names at or above ε in both,
/// in [`Resource::resource_names`] order; `ignore_pods` drops `pods`.
pub fn intersection_names(r1: &Resource, r2: &Resource, ignore_pods: bool) -> Vec<String> {
    let first = r1.resource_names();
    r2.resource_names()
        .into_iter()
        .filter(|name| first.contains(name) && !(ignore_pods && name == PODS))
        .collect()
}

#[cfg(test)]
mod tests;
