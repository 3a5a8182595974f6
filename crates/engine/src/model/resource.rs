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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{OnceLock, PoisonError, RwLock};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use smallvec::SmallVec;

use super::quantity;

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
// Resource names
// ---------------------------------------------------------------------------------------------

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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scalars(SmallVec<[(ResourceName, f64); 4]>);

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

/// Names present in either map, in handle order (both maps are sorted, so this is a merge).
fn union_names<'a>(a: &'a Scalars, b: &'a Scalars) -> impl Iterator<Item = ResourceName> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        let left = a.0.get(i).map(|e| e.0);
        let right = b.0.get(j).map(|e| e.0);
        match (left, right) {
            (Some(l), Some(r)) if l == r => {
                i += 1;
                j += 1;
                Some(l)
            }
            (Some(l), Some(r)) if l < r => {
                i += 1;
                Some(l)
            }
            (_, Some(r)) => {
                j += 1;
                Some(r)
            }
            (Some(l), None) => {
                i += 1;
                Some(l)
            }
            (None, None) => None,
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Resource names Kubernetes treats as scalar resources
// ---------------------------------------------------------------------------------------------

/// Resource-quota object counts (`count/pods`, …), never scheduling resources.
pub fn is_count_quota(name: &str) -> bool {
    name.starts_with("count/")
}

/// Kubernetes' `IsScalarResourceName`: extended resources, `hugepages-*`, names in the
/// `kubernetes.io/` namespace and `attachable-volumes-*`.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || is_prefixed_native_resource(name)
        || name.starts_with("attachable-volumes-")
}

fn is_prefixed_native_resource(name: &str) -> bool {
    name.contains("kubernetes.io/")
}

fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || is_prefixed_native_resource(name)
}

/// Kubernetes' `IsExtendedResourceName`: not native, not `requests.`-prefixed, and
/// `requests.<name>` is a qualified name.
fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}"))
}

/// apimachinery's `IsQualifiedName`: `[prefix/]name` with a DNS-1123 subdomain prefix and a
/// name of at most 63 characters that starts and ends alphanumeric.
fn is_qualified_name(value: &str) -> bool {
    let mut parts = value.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => return false,
    };
    if prefix.is_some_and(|p| !is_dns1123_subdomain(p)) {
        return false;
    }
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= 63
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253
        && value.split('.').all(|label| {
            let bytes = label.as_bytes();
            let edge_ok =
                |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            edge_ok(bytes.first())
                && edge_ok(bytes.last())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
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
        for (n, v) in rr.scalars.iter() {
            self.scalars.add(n, v);
        }
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
        let (ok, names) = rr.less_equal_with_resources_name(self, DimensionDefault::Zero);
        if !ok {
            tracing::error!(
                "resources <{names:?}> are not sufficient to do operation: <{self}> sub <{rr}>"
            );
        }
        self.sub_unchecked(rr)
    }

    fn sub_unchecked(&mut self, rr: &Resource) -> &mut Self {
        self.milli_cpu -= rr.milli_cpu;
        self.memory -= rr.memory;
        for (n, v) in rr.scalars.iter() {
            self.scalars.add(n, -v);
        }
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

    /// `(increased, decreased)` between `self` and `rr`. Missing scalars are padded with `d`'s
    /// value (0 or −1); a −1 on the left makes the scalar "infinitely" increased (−1), a −1 on
    /// the right infinitely decreased. Equal values land in `decreased` as 0. The −1 check
    /// applies to real values too, whatever `d` is.
    pub fn diff(&self, rr: &Resource, d: DimensionDefault) -> (Resource, Resource) {
        const INFINITE: f64 = -1.0;
        let mut increased = Resource::empty();
        let mut decreased = Resource::empty();
        if self.milli_cpu > rr.milli_cpu {
            increased.milli_cpu = self.milli_cpu - rr.milli_cpu;
        } else {
            decreased.milli_cpu = rr.milli_cpu - self.milli_cpu;
        }
        if self.memory > rr.memory {
            increased.memory = self.memory - rr.memory;
        } else {
            decreased.memory = rr.memory - self.memory;
        }
        let pad = d.padding();
        for n in union_names(&self.scalars, &rr.scalars) {
            let l = self.scalars.get(n).unwrap_or(pad);
            let r = rr.scalars.get(n).unwrap_or(pad);
            if l == INFINITE {
                increased.scalars.set(n, l);
            } else if r == INFINITE {
                decreased.scalars.set(n, r);
            } else if l > r {
                increased.scalars.set(n, l - r);
            } else {
                decreased.scalars.set(n, r - l);
            }
        }
        (increased, decreased)
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
        (Some(l), Some(r)) => l.diff(r, DimensionDefault::Zero).0,
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
mod tests {
    use super::DimensionDefault::{Infinity, Zero};
    use super::*;

    const GPU: &str = "nvidia.com/gpu";

    fn res(cpu: f64, mem: f64, scalars: &[(&str, f64)]) -> Resource {
        Resource::from_pairs(cpu, mem, scalars)
    }

    fn list(entries: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    // -- names and scalars ---------------------------------------------------------------------

    #[test]
    fn interner_round_trips() {
        assert_eq!(ResourceName::PODS.as_str(), "pods");
        assert_eq!(ResourceName::new("pods"), ResourceName::PODS);
        let gpu = ResourceName::new(GPU);
        assert_eq!(ResourceName::new(GPU), gpu);
        assert_eq!(gpu.as_str(), GPU);
        assert_eq!(ResourceName::lookup(GPU), Some(gpu));
        assert_eq!(ResourceName::lookup("never.interned.example/name"), None);
        assert_eq!(ResourceName::from(GPU).to_string(), GPU);
    }

    #[test]
    fn scalars_map_operations() {
        let a = ResourceName::new("example.com/a");
        let b = ResourceName::new("example.com/b");
        let mut s = Scalars::new();
        assert!(s.is_empty());
        s.set(b, 2.0);
        s.set(a, 1.0);
        s.add(ResourceName::PODS, 3.0);
        s.add(ResourceName::PODS, 1.0);
        assert_eq!(s.len(), 3);
        assert_eq!(s.get(a), Some(1.0));
        assert_eq!(s.get(ResourceName::PODS), Some(4.0));
        let order: Vec<ResourceName> = s.iter().map(|(n, _)| n).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted);
        assert_eq!(s.remove(b), Some(2.0));
        assert_eq!(s.remove(b), None);
        assert!(!s.contains(b));
        let collected: Scalars = [(a, 1.0), (a, 5.0)].into_iter().collect();
        assert_eq!(collected.get(a), Some(5.0));
        assert_eq!(collected.len(), 1);
    }

    // -- conversion ----------------------------------------------------------------------------

    #[test]
    fn from_list_units() {
        let r = Resource::from_list(&list(&[
            ("cpu", "1500m"),
            ("memory", "2Gi"),
            (GPU, "1"),
            ("pods", "110"),
            ("hugepages-2Mi", "2Mi"),
            ("ephemeral-storage", "1Ki"),
            ("count/pods", "10"),
            ("storage", "10Gi"),
            ("requests.nvidia.com/gpu", "1"),
            ("attachable-volumes-csi-ebs", "25"),
            ("example.kubernetes.io/thing", "2"),
        ]));
        assert_eq!(r.milli_cpu, 1500.0);
        assert_eq!(r.memory, 2_147_483_648.0);
        assert_eq!(r.get(GPU), 1000.0);
        assert_eq!(r.get("pods"), 110.0);
        assert_eq!(r.max_task_num, 110);
        assert_eq!(r.get("hugepages-2Mi"), 2_097_152_000.0);
        assert_eq!(r.get("ephemeral-storage"), 1_024_000.0);
        assert_eq!(r.get("attachable-volumes-csi-ebs"), 25_000.0);
        assert_eq!(r.get("example.kubernetes.io/thing"), 2000.0);
        let kept: Vec<&str> = r.scalars.iter().map(|(n, _)| n.as_str()).collect();
        for dropped in ["count/pods", "storage", "requests.nvidia.com/gpu"] {
            assert!(!kept.contains(&dropped), "{dropped} should be dropped");
        }
        assert_eq!(r.scalars.len(), 6);
    }

    #[test]
    fn from_list_skips_malformed_quantities() {
        let r = Resource::from_list(&list(&[("cpu", "lots"), ("memory", "1Gi"), (GPU, "1x")]));
        assert_eq!(r.milli_cpu, 0.0);
        assert_eq!(r.memory, 1_073_741_824.0);
        assert!(r.scalars.is_empty());
    }

    #[test]
    fn from_list_with_ignored_devices() {
        let l = list(&[("volcano.sh/vgpu-number", "2"), (GPU, "1")]);
        let r = Resource::from_list_with_ignored(&l, &["volcano.sh/vgpu-number"]);
        assert_eq!(r.get("volcano.sh/vgpu-number"), 0.0);
        assert_eq!(r.get(GPU), 1000.0);
        assert_eq!(r.scalars.len(), 1);
    }

    #[test]
    fn scalar_resource_name_rules() {
        for yes in [
            GPU,
            "example.com/foo",
            "example.com/Foo_bar.1",
            "hugepages-1Gi",
            "attachable-volumes-aws-ebs",
            "kubernetes.io/batch-cpu",
            "scheduling.k8s.io/x",
        ] {
            assert!(is_scalar_resource_name(yes), "{yes} should be scalar");
        }
        for no in [
            "cpu",
            "memory",
            "storage",
            "example.com/",
            "/gpu",
            "a/b/c",
            "Example.com/gpu",
            "example.com/-gpu",
            "example.com/gpu-",
            "example..com/gpu",
            "requests.example.com/gpu",
        ] {
            assert!(!is_scalar_resource_name(no), "{no} should not be scalar");
        }
        let long_name = format!("example.com/{}", "a".repeat(64));
        assert!(!is_scalar_resource_name(&long_name));
        assert!(is_count_quota("count/pods"));
    }

    #[test]
    fn from_pairs_routes_cpu_and_memory() {
        let r = res(
            100.0,
            5.0,
            &[("cpu", 50.0), ("memory", 1.0), (GPU, 2.0), (GPU, 3.0)],
        );
        assert_eq!(r.milli_cpu, 150.0);
        assert_eq!(r.memory, 6.0);
        assert_eq!(r.get(GPU), 5.0);
        assert_eq!(r.max_task_num, 0);
    }

    // -- thresholds ----------------------------------------------------------------------------

    #[test]
    fn empty_zero_and_names() {
        assert!(Resource::empty().is_empty());
        assert!(res(0.05, 0.09, &[("pods", 1.0), (GPU, 0.05)]).is_empty());
        assert!(!res(0.1, 0.0, &[]).is_empty());
        assert!(!res(0.0, 0.0, &[(GPU, 0.1)]).is_empty());

        let r = res(0.05, 1024.0, &[("pods", 1.0), (GPU, 0.0)]);
        assert!(r.is_zero("cpu"));
        assert!(!r.is_zero("memory"));
        assert!(r.is_zero(GPU));
        assert!(!r.is_zero("pods"));
        // Missing scalar: zero (Volcano asserts here when the map is non-nil).
        assert!(r.is_zero("example.com/missing"));
        assert!(Resource::empty().is_zero(GPU));

        assert_eq!(r.resource_names(), names(&["memory", "pods"]));
        assert_eq!(res(1.0, 0.0, &[]).resource_names(), names(&["cpu"]));
        assert_eq!(r.get("unknown.example/never"), 0.0);
    }

    // -- arithmetic ----------------------------------------------------------------------------

    #[test]
    fn add_and_sub() {
        let mut r = res(1000.0, 2048.0, &[("pods", 1.0)]);
        r.max_task_num = 7;
        r.add(&res(500.0, 1024.0, &[(GPU, 1000.0)]));
        assert_eq!(r.milli_cpu, 1500.0);
        assert_eq!(r.memory, 3072.0);
        assert_eq!(r.get(GPU), 1000.0);
        assert_eq!(r.max_task_num, 7);

        r.sub(&res(500.0, 1024.0, &[(GPU, 1000.0)]));
        assert_eq!(r.milli_cpu, 1000.0);
        assert_eq!(r.get(GPU), 0.0);
        assert!(r.scalars.contains(ResourceName::new(GPU)));
        assert_eq!(r.max_task_num, 7);

        // Insufficient: logged, subtracted anyway; names only in rr go negative.
        r.sub(&res(2000.0, 0.0, &[("example.com/x", 3.0)]));
        assert_eq!(r.milli_cpu, -1000.0);
        assert_eq!(r.get("example.com/x"), -3.0);

        let mut w = res(1.0, 1.0, &[]);
        w.sub_without_assert(&res(2.0, 0.0, &[(GPU, 5.0)]));
        assert_eq!(w.milli_cpu, -1.0);
        assert_eq!(w.get(GPU), -5.0);
    }

    #[test]
    fn multi_set_max_and_fit_delta() {
        let mut r = res(1000.0, 10.0, &[(GPU, 2000.0)]);
        r.multi(0.5);
        assert_eq!(r, res(500.0, 5.0, &[(GPU, 1000.0)]));

        let mut m = res(500.0, 50.0, &[(GPU, 1000.0)]);
        m.set_max_resource(&res(100.0, 80.0, &[(GPU, 3000.0), ("pods", 2.0)]));
        assert_eq!(m, res(500.0, 80.0, &[(GPU, 3000.0), ("pods", 2.0)]));
        m.set_max_resource(&res(0.0, 0.0, &[(GPU, 1.0)]));
        assert_eq!(m.get(GPU), 3000.0);

        let mut idle = res(1000.0, 100.0, &[(GPU, 1000.0)]);
        idle.fit_delta(&res(
            400.0,
            0.0,
            &[(GPU, 1000.0), ("example.com/x", 2.0), ("pods", 0.0)],
        ));
        assert!((idle.milli_cpu - 599.9).abs() < 1e-9);
        assert_eq!(idle.memory, 100.0);
        assert!((idle.get(GPU) + 0.1).abs() < 1e-9);
        assert!((idle.get("example.com/x") + 2.1).abs() < 1e-9);
        assert!(!idle.scalars.contains(ResourceName::PODS));
    }

    // -- comparisons ---------------------------------------------------------------------------

    #[test]
    fn less_is_strict_on_every_dimension() {
        assert!(res(1.0, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
        assert!(!res(2.0, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
        // No tolerance: within ε but not below.
        assert!(!res(2.05, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
        assert!(res(1.95, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
        assert!(!res(1.0, 2.0, &[]).less(&res(2.0, 2.0, &[]), Infinity));
    }

    #[test]
    fn less_missing_scalars() {
        let with_gpu = res(1.0, 1.0, &[(GPU, 1000.0)]);
        let without = res(2.0, 2.0, &[]);
        // Left has gpu, right lacks: Zero needs gpu < 0, Infinity skips it.
        assert!(!with_gpu.less(&without, Zero));
        assert!(with_gpu.less(&without, Infinity));
        assert!(res(1.0, 1.0, &[(GPU, -1.0)]).less(&without, Zero));
        // Right has gpu, left lacks: unchecked with Zero, false with Infinity.
        let left = res(1.0, 1.0, &[]);
        let right = res(2.0, 2.0, &[(GPU, 1000.0)]);
        assert!(left.less(&right, Zero));
        assert!(!left.less(&right, Infinity));
        // Both have it.
        assert!(with_gpu.less(&res(2.0, 2.0, &[(GPU, 2000.0)]), Zero));
        assert!(!with_gpu.less(&res(2.0, 2.0, &[(GPU, 1000.0)]), Zero));
    }

    #[test]
    fn less_equal_tolerance() {
        let rr = res(2.0, 100.0, &[(GPU, 1000.0)]);
        assert!(res(2.0, 100.0, &[(GPU, 1000.0)]).less_equal(&rr, Zero));
        assert!(res(2.09, 100.09, &[(GPU, 1000.09)]).less_equal(&rr, Zero));
        assert!(!res(2.15, 100.0, &[]).less_equal(&rr, Zero));
        assert!(!res(2.0, 100.15, &[]).less_equal(&rr, Zero));
        assert!(!res(2.0, 100.0, &[(GPU, 1000.15)]).less_equal(&rr, Zero));
        assert!(!res(2.0, 100.0, &[(GPU, 1000.15)]).less_equal(&rr, Infinity));
    }

    #[test]
    fn less_equal_missing_scalars() {
        let with_gpu = res(1.0, 1.0, &[(GPU, 1000.0)]);
        let without = res(2.0, 2.0, &[]);
        assert!(!with_gpu.less_equal(&without, Zero));
        assert!(with_gpu.less_equal(&without, Infinity));
        // Within ε of the implicit zero.
        assert!(res(1.0, 1.0, &[(GPU, 0.05)]).less_equal(&without, Zero));
        let left = res(1.0, 1.0, &[]);
        let right = res(2.0, 2.0, &[(GPU, 1000.0)]);
        assert!(left.less_equal(&right, Zero));
        assert!(!left.less_equal(&right, Infinity));
        assert!(res(1.0, 1.0, &[]).less_equal(&Resource::infinite(), Zero));
        assert!(!Resource::infinite().less_equal(&res(1.0, 1.0, &[]), Zero));
        assert!(Resource::infinite().less_equal(&Resource::infinite(), Infinity));
    }

    #[test]
    fn less_equal_with_resources_name_lacks_the_infinity_presence_rule() {
        let left = res(1.0, 1.0, &[]);
        let right = res(2.0, 2.0, &[(GPU, 1000.0)]);
        assert!(!left.less_equal(&right, Infinity));
        assert_eq!(
            left.less_equal_with_resources_name(&right, Infinity),
            (true, vec![])
        );
    }

    #[test]
    fn less_equal_with_resources_name_lists_failures_in_order() {
        // Intern "zz" before "aa" so that handle order and name order disagree.
        let zz = ResourceName::new("zz.example.com/dev");
        let aa = ResourceName::new("aa.example.com/dev");
        assert!(zz < aa);
        let left = res(
            3.0,
            3.0,
            &[(zz.as_str(), 5.0), (aa.as_str(), 5.0), (GPU, 1.0)],
        );
        let right = res(2.0, 2.0, &[(GPU, 1.0)]);
        let (ok, failed) = left.less_equal_with_resources_name(&right, Zero);
        assert!(!ok);
        assert_eq!(failed, names(&["cpu", "memory", aa.as_str(), zz.as_str()]));
        let (ok, failed) = left.less_equal_with_resources_name(&right, Infinity);
        assert!(!ok);
        assert_eq!(failed, names(&["cpu", "memory"]));
        assert_eq!(
            left.greater_partly(&right, Infinity),
            (true, names(&["cpu", "memory"]))
        );
        assert_eq!(right.greater_partly(&left, Zero), (false, vec![]));
    }

    #[test]
    fn less_equal_with_dimension_is_strict_and_filtered() {
        let req = res(100.0, 0.0, &[(GPU, 1000.0), ("pods", 1.0)]);
        let rr = res(2.0, 1.0, &[(GPU, 1000.0), ("pods", 0.0)]);
        // cpu within ε still fails (strict); memory not requested; pods ignored.
        let l = res(2.05, 50.0, &[(GPU, 1000.0), ("pods", 1.0)]);
        assert!(!l.less_equal_with_dimension(&rr, &req));
        assert_eq!(
            l.less_equal_with_dimension_and_resources_name(Some(&rr), Some(&req)),
            (false, names(&["cpu"]))
        );
        let l = res(2.0, 50.0, &[(GPU, 1000.0), ("pods", 1.0)]);
        assert!(l.less_equal_with_dimension(&rr, &req));
        assert_eq!(
            l.less_equal_with_dimension_and_resources_name(Some(&rr), Some(&req)),
            (true, vec![])
        );
        // Missing scalars read as 0 on both sides.
        let l = res(0.0, 0.0, &[(GPU, 1.0)]);
        assert_eq!(
            l.less_equal_with_dimension_and_resources_name(Some(&res(0.0, 0.0, &[])), Some(&req)),
            (false, names(&[GPU]))
        );
        assert!(res(0.0, 0.0, &[]).less_equal_with_dimension(&res(0.0, 0.0, &[]), &req));
        // Requested with zero value: not compared.
        let zero_req = res(0.0, 0.0, &[(GPU, 0.0)]);
        assert!(l.less_equal_with_dimension(&res(0.0, 0.0, &[]), &zero_req));
    }

    #[test]
    fn less_equal_with_dimension_absent_arguments() {
        let l = res(1000.0, 0.0, &[("pods", 1.0), (GPU, 0.05)]);
        assert_eq!(
            l.less_equal_with_dimension_and_resources_name(None, None),
            (false, names(&["cpu", "pods"]))
        );
        // req absent: LessEqualWithResourcesName(rr, Zero), tolerance included.
        let rr = res(999.95, 0.0, &[("pods", 1.0)]);
        assert_eq!(
            l.less_equal_with_dimension_and_resources_name(Some(&rr), None),
            (true, vec![])
        );
        let rr = res(900.0, 0.0, &[]);
        assert_eq!(
            l.less_equal_with_dimension_and_resources_name(Some(&rr), None),
            (false, names(&["cpu", "pods"]))
        );
    }

    #[test]
    fn less_partly_cases() {
        let base = res(2.0, 2.0, &[(GPU, 1000.0)]);
        assert!(res(1.0, 3.0, &[(GPU, 5000.0)]).less_partly(&base, Zero));
        assert!(!res(2.0, 2.0, &[(GPU, 1000.0)]).less_partly(&base, Zero));
        assert!(!res(2.0, 2.0, &[(GPU, 1000.0)]).less_partly(&base, Infinity));
        // rr has a scalar the left lacks: true with Zero only.
        assert!(res(3.0, 3.0, &[]).less_partly(&base, Zero));
        assert!(!res(3.0, 3.0, &[]).less_partly(&base, Infinity));
        // Left has a scalar rr lacks: true with Infinity; with Zero compare against 0.
        let extra = res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", 1.0)]);
        assert!(extra.less_partly(&base, Infinity));
        assert!(!extra.less_partly(&base, Zero));
        assert!(res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", -1.0)]).less_partly(&base, Zero));
        // Strict: within ε is not less.
        assert!(!res(2.05, 2.05, &[(GPU, 1000.05)]).less_partly(&base, Zero));
        assert!(res(1.95, 3.0, &[(GPU, 2000.0)]).less_partly(&base, Zero));
    }

    #[test]
    fn less_equal_partly_cases() {
        let base = res(2.0, 2.0, &[(GPU, 1000.0)]);
        assert!(res(2.05, 3.0, &[(GPU, 5000.0)]).less_equal_partly(&base, Zero));
        assert!(!res(2.15, 3.0, &[(GPU, 5000.0)]).less_equal_partly(&base, Zero));
        assert!(res(3.0, 3.0, &[(GPU, 1000.09)]).less_equal_partly(&base, Infinity));
        assert!(res(3.0, 3.0, &[]).less_equal_partly(&base, Zero));
        assert!(!res(3.0, 3.0, &[]).less_equal_partly(&base, Infinity));
        assert!(
            res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", 1.0)])
                .less_equal_partly(&base, Infinity)
        );
        assert!(
            !res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", 1.0)]).less_equal_partly(&base, Zero)
        );
    }

    #[test]
    fn less_equal_partly_with_dimension_cases() {
        let rr = res(2.0, 2.0, &[(GPU, 1000.0)]);
        let req = res(1.0, 1.0, &[(GPU, 1.0), ("pods", 1.0)]);
        let l = res(2.05, 3.0, &[(GPU, 2000.0), ("pods", 0.0)]);
        assert_eq!(
            l.less_equal_partly_with_dimension(&rr, Some(&req)),
            (true, names(&["cpu"]))
        );
        let l = res(3.0, 3.0, &[(GPU, 2000.0)]);
        assert_eq!(
            l.less_equal_partly_with_dimension(&rr, Some(&req)),
            (false, vec![])
        );
        assert_eq!(
            l.less_equal_partly_with_dimension(&rr, None),
            (false, vec![])
        );
        let l = res(1.0, 1.0, &[(GPU, 1.0)]);
        assert_eq!(
            l.less_equal_partly_with_dimension(&rr, Some(&req)),
            (true, names(&["cpu", "memory", GPU]))
        );
    }

    #[test]
    fn zero_filtered_drops_dimensions_zero_on_both_sides() {
        let req = res(1.0, 0.0, &[(GPU, 1000.0)]);
        let l = res(3.0, 0.0, &[(GPU, 0.0)]);
        let rr = res(2.0, 0.0, &[(GPU, 0.05)]);
        assert_eq!(
            l.less_equal_partly_with_dimension(&rr, Some(&req)),
            (true, names(&[GPU]))
        );
        assert_eq!(
            l.less_equal_partly_with_dimension_zero_filtered(&rr, Some(&req)),
            (false, vec![])
        );
        // A dimension non-zero on one side survives the filter.
        let rr = res(2.0, 0.0, &[(GPU, 1000.0)]);
        assert_eq!(
            l.less_equal_partly_with_dimension_zero_filtered(&rr, Some(&req)),
            (true, names(&[GPU]))
        );
        assert_eq!(
            l.less_equal_partly_with_dimension_zero_filtered(&rr, None),
            (false, vec![])
        );
    }

    #[test]
    fn equal_ignores_scalars_only_on_the_right() {
        let l = res(1.0, 2.0, &[(GPU, 1000.0)]);
        assert!(l.equal(&res(1.05, 1.95, &[(GPU, 1000.05), ("pods", 9.0)]), Zero));
        assert!(!l.equal(&res(1.2, 2.0, &[(GPU, 1000.0)]), Infinity));
        assert!(!l.equal(&res(1.0, 2.0, &[]), Zero));
        assert!(res(1.0, 2.0, &[]).equal(&l, Zero));
    }

    #[test]
    fn greater_partly_with_dimension_examples() {
        // The examples documented in Volcano's resource_info.go.
        let gpu2 = res(0.0, 0.0, &[(GPU, 2.0)]);
        let req_gpu = res(0.0, 0.0, &[(GPU, 1.0)]);
        assert_eq!(
            gpu2.greater_partly_with_dimension(Some(&Resource::empty()), &req_gpu),
            (true, names(&[GPU]))
        );
        assert_eq!(
            gpu2.greater_partly_with_relevant_dimensions(&Resource::empty(), &req_gpu),
            (false, vec![])
        );

        let cpu4 = res(4.0, 0.0, &[]);
        let req_cpu = res(2.0, 0.0, &[]);
        assert_eq!(
            cpu4.greater_partly_with_dimension(Some(&res(0.0, 0.0, &[])), &req_cpu),
            (true, names(&["cpu"]))
        );
        assert_eq!(
            cpu4.greater_partly_with_relevant_dimensions(&res(0.0, 0.0, &[]), &req_cpu),
            (false, vec![])
        );

        let rr_gpu0 = res(0.0, 0.0, &[(GPU, 0.0)]);
        assert_eq!(
            gpu2.greater_partly_with_dimension(Some(&rr_gpu0), &req_gpu),
            (true, names(&[GPU]))
        );
        assert_eq!(
            gpu2.greater_partly_with_relevant_dimensions(&rr_gpu0, &req_gpu),
            (true, names(&[GPU]))
        );

        let rr_cpu = res(0.1, 0.0, &[]);
        assert_eq!(
            cpu4.greater_partly_with_relevant_dimensions(&rr_cpu, &req_cpu),
            (true, names(&["cpu"]))
        );

        let r = res(4.0, 8192.0, &[(GPU, 2.0)]);
        let rr = res(2.0, 8192.0, &[(GPU, 1.0)]);
        let cases = [
            (res(0.0, 0.0, &[(GPU, 1.0)]), names(&[GPU])),
            (res(2.0, 0.0, &[(GPU, 1.0)]), names(&["cpu", GPU])),
            (res(0.0, 4096.0, &[(GPU, 0.0)]), vec![]),
        ];
        for (req, expected) in cases {
            let ok = !expected.is_empty();
            assert_eq!(
                r.greater_partly_with_dimension(Some(&rr), &req),
                (ok, expected.clone())
            );
            assert_eq!(
                r.greater_partly_with_relevant_dimensions(&rr, &req),
                (ok, expected)
            );
        }
        // rr absent = empty; pods never compared.
        let req_pods = res(0.0, 0.0, &[("pods", 1.0)]);
        assert_eq!(
            res(0.0, 0.0, &[("pods", 5.0)]).greater_partly_with_dimension(None, &req_pods),
            (false, vec![])
        );
        // Strict: equal or within ε is not greater... but any excess counts.
        assert_eq!(
            res(2.05, 0.0, &[]).greater_partly_with_dimension(Some(&res(2.0, 0.0, &[])), &req_cpu),
            (true, names(&["cpu"]))
        );
    }

    #[test]
    fn diff_with_zero_default() {
        let l = res(3.0, 1.0, &[(GPU, 2000.0), ("pods", 1.0)]);
        let r = res(1.0, 4.0, &[(GPU, 500.0), ("example.com/x", 7.0)]);
        let (inc, dec) = l.diff(&r, Zero);
        assert_eq!(inc, res(2.0, 0.0, &[(GPU, 1500.0), ("pods", 1.0)]));
        assert_eq!(dec, res(0.0, 3.0, &[("example.com/x", 7.0)]));
        // Equal values land in decreased as 0.
        let (inc, dec) = l.diff(&l, Zero);
        assert_eq!(inc, Resource::empty());
        assert_eq!(dec, res(0.0, 0.0, &[(GPU, 0.0), ("pods", 0.0)]));
    }

    #[test]
    fn diff_with_infinity_padding() {
        let l = res(1.0, 1.0, &[(GPU, 2000.0)]);
        let r = res(1.0, 1.0, &[("example.com/x", 7.0)]);
        let (inc, dec) = l.diff(&r, Infinity);
        // Right lacks gpu → padded −1 → decreased −1; left lacks x → increased −1.
        assert_eq!(inc, res(0.0, 0.0, &[("example.com/x", -1.0)]));
        assert_eq!(dec, res(0.0, 0.0, &[(GPU, -1.0)]));
        // A real −1 triggers the same branch whatever the default.
        let (inc, dec) = res(0.0, 0.0, &[(GPU, -1.0)]).diff(&res(0.0, 0.0, &[(GPU, 5.0)]), Zero);
        assert_eq!(inc, res(0.0, 0.0, &[(GPU, -1.0)]));
        assert_eq!(dec, Resource::empty());
    }

    #[test]
    fn exceeded_part_cases() {
        let l = res(3.0, 1.0, &[(GPU, 2000.0)]);
        let r = res(1.0, 4.0, &[(GPU, 500.0)]);
        assert_eq!(
            exceeded_part(Some(&l), Some(&r)),
            res(2.0, 0.0, &[(GPU, 1500.0)])
        );
        assert_eq!(exceeded_part(Some(&l), None), l);
        assert_eq!(exceeded_part(None, Some(&r)), Resource::empty());
        assert_eq!(exceeded_part(None, None), Resource::empty());
    }

    #[test]
    fn min_dimension_resource_cases() {
        // Volcano's doc example.
        let mut r = res(
            2000.0,
            4_047_845_376.0,
            &[("hugepages-2Mi", 0.0), ("hugepages-1Gi", 0.0)],
        );
        r.min_dimension_resource(&res(3000.0, 1000.0, &[]), Infinity);
        assert_eq!(
            r,
            res(
                2000.0,
                1000.0,
                &[("hugepages-2Mi", 0.0), ("hugepages-1Gi", 0.0)]
            )
        );

        let l = res(5.0, 5.0, &[(GPU, 2000.0)]);
        let mut keep = l.clone();
        keep.min_dimension_resource(&res(9.0, 1.0, &[]), Infinity);
        assert_eq!(keep, res(5.0, 1.0, &[(GPU, 2000.0)]));
        let mut zeroed = l.clone();
        zeroed.min_dimension_resource(&res(9.0, 1.0, &[]), Zero);
        assert_eq!(zeroed, res(5.0, 1.0, &[(GPU, 0.0)]));
        let mut min = l.clone();
        min.min_dimension_resource(
            &res(9.0, 9.0, &[(GPU, 1000.0), ("example.com/x", 1.0)]),
            Zero,
        );
        assert_eq!(min, res(5.0, 5.0, &[(GPU, 1000.0)]));
        let mut other = l.clone();
        other.min_dimension_resource(&res(9.0, 9.0, &[("example.com/x", 1.0)]), Infinity);
        assert_eq!(other, l);
        let mut other = l.clone();
        other.min_dimension_resource(&res(9.0, 9.0, &[("example.com/x", 1.0)]), Zero);
        assert_eq!(other, res(5.0, 5.0, &[(GPU, 0.0)]));
        let mut none = res(5.0, 5.0, &[]);
        none.min_dimension_resource(&res(1.0, 9.0, &[(GPU, 1.0)]), Zero);
        assert_eq!(none, res(1.0, 5.0, &[]));
    }

    #[test]
    fn fits_future_idle_cases() {
        let idle = res(1000.0, 100.0, &[(GPU, 1000.0), ("pods", 10.0)]);
        let releasing = res(500.0, 0.0, &[(GPU, 1000.0)]);
        let pipelined = res(200.0, 50.0, &[("pods", 1.0)]);
        assert_eq!(
            res(1300.0, 50.0, &[(GPU, 2000.0), ("pods", 9.0)])
                .fits_future_idle(&idle, &releasing, &pipelined),
            Ok(())
        );
        assert_eq!(
            res(1300.05, 50.05, &[]).fits_future_idle(&idle, &releasing, &pipelined),
            Ok(())
        );
        assert_eq!(
            res(1400.0, 60.0, &[]).fits_future_idle(&idle, &releasing, &pipelined),
            Err("cpu")
        );
        assert_eq!(
            res(100.0, 60.0, &[(GPU, 5000.0)]).fits_future_idle(&idle, &releasing, &pipelined),
            Err("memory")
        );
        // Several failing scalars: the first by name.
        let zz = ResourceName::new("zz.example.com/dev");
        let aa = ResourceName::new("aa.example.com/dev");
        let req = res(
            0.0,
            0.0,
            &[(zz.as_str(), 1.0), (aa.as_str(), 1.0), (GPU, 1.0)],
        );
        assert_eq!(
            req.fits_future_idle(&idle, &releasing, &pipelined),
            Err(aa.as_str())
        );
        // Scalars only in pipelined make the future negative.
        let pip = res(0.0, 0.0, &[("example.com/x", 1.0)]);
        assert_eq!(
            res(0.0, 0.0, &[("example.com/x", 0.0)]).fits_future_idle(&idle, &releasing, &pip),
            Err("example.com/x")
        );
    }

    // -- helpers and output --------------------------------------------------------------------

    #[test]
    fn share_cases() {
        assert_eq!(share(0.0, 0.0), 0.0);
        assert_eq!(share(5.0, 0.0), 1.0);
        assert_eq!(share(1.0, 4.0), 0.25);
        assert_eq!(share(0.0, 4.0), 0.0);
    }

    #[test]
    fn max_and_min_resource() {
        let mut l = res(1.0, 5.0, &[(GPU, 3.0), ("example.com/neg", -2.0)]);
        l.max_task_num = 3;
        let r = res(
            2.0,
            4.0,
            &[
                (GPU, 1.0),
                ("example.com/r", 0.0),
                ("example.com/rneg", -1.0),
            ],
        );
        let m = max_resource(&l, &r);
        assert_eq!(m, res(2.0, 5.0, &[(GPU, 3.0), ("example.com/r", 0.0)]));
        assert_eq!(m.max_task_num, 0);
        let n = min_resource(&l, &r);
        assert_eq!(n, res(1.0, 4.0, &[(GPU, 1.0), ("example.com/neg", -2.0)]));
    }

    #[test]
    fn intersection_cases() {
        let r1 = res(
            1000.0,
            0.0,
            &[("pods", 1.0), (GPU, 1000.0), ("example.com/x", 0.05)],
        );
        let r2 = res(
            500.0,
            10.0,
            &[("pods", 3.0), (GPU, 1.0), ("example.com/x", 5.0)],
        );
        assert_eq!(
            intersection_names(&r1, &r2, false),
            names(&["cpu", GPU, "pods"])
        );
        assert_eq!(intersection_names(&r1, &r2, true), names(&["cpu", GPU]));
    }

    #[test]
    fn canonical_map_units() {
        let r = res(
            1500.0,
            2048.0,
            &[
                ("pods", 3.0),
                (GPU, 2000.0),
                ("example.com/x", 0.05),
                ("example.com/neg", -5.0),
            ],
        );
        let m = r.to_canonical_map();
        let expected: BTreeMap<String, f64> = [
            ("cpu", 1500.0),
            ("memory", 2048.0),
            ("pods", 3.0),
            (GPU, 2.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(m, expected);
        assert!(Resource::empty().to_canonical_map().is_empty());
    }

    #[test]
    fn resource_list_round_trip() {
        let r = res(
            1500.0,
            1_073_741_824.0,
            &[
                ("pods", 110.0),
                (GPU, 2000.0),
                ("hugepages-2Mi", 2_097_152_000.0),
            ],
        );
        let out = r.to_resource_list();
        let text: BTreeMap<&str, &str> = out
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect();
        let expected: BTreeMap<&str, &str> = [
            ("cpu", "1500m"),
            ("memory", "1Gi"),
            ("pods", "110"),
            (GPU, "2"),
            // Written as a decimal milli-quantity, like ConvertRes2ResList: 2097152000m.
            ("hugepages-2Mi", "2097152"),
        ]
        .into_iter()
        .collect();
        assert_eq!(text, expected);
        let mut back = Resource::from_list(&out);
        back.max_task_num = 0;
        assert_eq!(back, r);
        let empty = Resource::empty().to_resource_list();
        assert_eq!(empty.get("cpu").map(|q| q.0.as_str()), Some("0"));
        assert_eq!(empty.get("memory").map(|q| q.0.as_str()), Some("0"));
    }

    #[test]
    fn display_like_volcano() {
        let r = res(1000.0, 2048.0, &[("pods", 1.0), (GPU, 1000.0)]);
        assert_eq!(
            r.to_string(),
            "cpu 1000.00, memory 2048.00, nvidia.com/gpu 1000.00, pods 1.00"
        );
        assert_eq!(
            Resource::infinite().to_string(),
            "cpu maxFloat, memory maxFloat"
        );
        assert_eq!(
            res(i64::MAX as f64, 0.5, &[]).to_string(),
            "cpu maxInt, memory 0.50"
        );
    }

    // -- properties ----------------------------------------------------------------------------

    mod props {
        use super::*;
        use proptest::prelude::*;

        const NAMES: [&str; 4] = ["pods", GPU, "example.com/b", "hugepages-2Mi"];

        fn value() -> impl Strategy<Value = f64> {
            prop_oneof![
                Just(0.0),
                Just(0.05),
                Just(0.1),
                Just(1000.0),
                Just(1000.09),
                Just(-1.0),
                -1.0e6..1.0e9f64,
                (0i64..5000).prop_map(|v| v as f64),
            ]
        }

        fn resource() -> impl Strategy<Value = Resource> {
            (
                value(),
                value(),
                proptest::collection::vec(proptest::option::of(value()), NAMES.len()),
            )
                .prop_map(|(cpu, mem, scalars)| {
                    let mut r = Resource::from_pairs(cpu, mem, &[]);
                    for (name, v) in NAMES.iter().zip(scalars) {
                        if let Some(v) = v {
                            r.set_scalar(ResourceName::new(name), v);
                        }
                    }
                    r
                })
        }

        proptest! {
            #[test]
            fn add_then_sub_restores(a in resource(), b in resource()) {
                let mut c = a.clone();
                c.add(&b);
                c.sub_without_assert(&b);
                prop_assert!(c.equal(&a, Zero), "{c} vs {a}");
                prop_assert!(a.equal(&c, Zero), "{a} vs {c}");
            }

            #[test]
            fn fits_future_idle_matches_explicit_sum(
                req in resource(),
                idle in resource(),
                releasing in resource(),
                pipelined in resource(),
            ) {
                let mut future = idle.clone();
                future.add(&releasing);
                future.sub_without_assert(&pipelined);
                let fits = req.fits_future_idle(&idle, &releasing, &pipelined);
                prop_assert_eq!(fits.is_ok(), req.less_equal(&future, Zero));
                let (_, failed) = req.less_equal_with_resources_name(&future, Zero);
                prop_assert_eq!(fits.err().map(str::to_owned), failed.first().cloned());
            }

            #[test]
            fn less_implies_less_equal(a in resource(), b in resource()) {
                for d in [Zero, Infinity] {
                    if a.less(&b, d) {
                        prop_assert!(a.less_equal(&b, d));
                    }
                    prop_assert_eq!(a.greater_partly(&b, d).0, !a.less_equal_with_resources_name(&b, d).0);
                }
            }

            #[test]
            fn diff_splits_the_difference(a in resource(), b in resource()) {
                let (inc, dec) = a.diff(&b, Zero);
                prop_assert!(inc.milli_cpu >= 0.0 && dec.milli_cpu >= 0.0);
                prop_assert!(inc.milli_cpu == 0.0 || dec.milli_cpu == 0.0);
                for (n, v) in inc.scalars.iter() {
                    prop_assert!(!dec.scalars.contains(n));
                    prop_assert!(v > 0.0 || v == -1.0);
                }
            }
        }
    }
}
