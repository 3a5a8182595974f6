//! Node resource and image scores of the upstream Kubernetes v1.36 score plugins, spec
//! plugins-core.md §7.4–7.5: `NodeResourcesFit` (LeastAllocated / MostAllocated strategies,
//! `pkg/scheduler/framework/plugins/noderesources`), `NodeResourcesBalancedAllocation`,
//! `ImageLocality` (`pkg/scheduler/framework/plugins/imagelocality`) and the score normalisation
//! helpers (`DefaultNormalizeScore`, InterPodAffinity's min–max normalisation).
//!
//! Integer arithmetic follows upstream exactly (`MaxNodeScore = 100`); intermediate products are
//! widened so that absurd inputs saturate instead of overflowing.
//!
//! [`non_zero_request`] is the scheduler's `NonZeroRequested` of a pod: upstream
//! `resourcehelper.PodRequests` (containers summed, init containers as a running maximum with
//! restartable "sidecar" init containers accumulated, in-place resize status honoured, pod-level
//! requests overriding, overhead added) with 100m CPU / 200 MiB memory substituted for containers
//! that do not declare the request at all.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Upstream `framework.MaxNodeScore`.
pub const MAX_NODE_SCORE: i64 = 100;
/// Upstream `DefaultMilliCPURequest`: CPU counted for a container without a CPU request.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Upstream `DefaultMemoryRequest`: memory counted for a container without a memory request.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

pub(crate) const MIB: i64 = 1024 * 1024;
/// ImageLocality lower clamp of the summed image score.
const IMAGE_MIN_THRESHOLD: i64 = 23 * MIB;
/// ImageLocality upper clamp per container.
const IMAGE_MAX_CONTAINER_THRESHOLD: i64 = 1000 * MIB;

const NANO_PER_UNIT: i128 = 1_000_000_000;
const NANO_PER_MILLI: i128 = 1_000_000;

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// `weighted average of per-resource scores`, skipping resources with zero allocatable, as
/// upstream `leastResourceScorer` / `mostResourceScorer`.
fn weighted_score(
    resources: &[(i64, i64)],
    weights: &[i64],
    per_resource: impl Fn(i64, i64) -> i64,
) -> i64 {
    let mut score: i64 = 0;
    let mut weight_sum: i64 = 0;
    for (&(requested, allocatable), &weight) in resources.iter().zip(weights) {
        if allocatable == 0 {
            continue;
        }
        score = score.saturating_add(per_resource(requested, allocatable).saturating_mul(weight));
        weight_sum = weight_sum.saturating_add(weight);
    }
    if weight_sum == 0 {
        return 0;
    }
    score / weight_sum
}

/// `part × 100 / whole` in integer arithmetic, exact even where `part × 100` overflows i64
/// (this runs per node for every task, so the wide type is only used when needed).
fn percent_of(part: i64, whole: i64) -> i64 {
    match part.checked_mul(MAX_NODE_SCORE) {
        Some(v) => v / whole,
        None => saturate(i128::from(part) * i128::from(MAX_NODE_SCORE) / i128::from(whole)),
    }
}

/// LeastAllocated: per resource `(allocatable − requested) × 100 / allocatable` (0 when over
/// capacity), weighted integer average; resources with zero allocatable are left out. Each
/// element of `resources` is (requested including the incoming pod, allocatable); `weights` pairs
/// with it by index (surplus entries on either side are ignored).
pub fn least_allocated_score(resources: &[(i64, i64)], weights: &[i64]) -> i64 {
    weighted_score(resources, weights, |requested, allocatable| {
        if requested > allocatable {
            0
        } else {
            percent_of(allocatable.saturating_sub(requested), allocatable)
        }
    })
}

/// MostAllocated: per resource `min(requested, allocatable) × 100 / allocatable`, weighted
/// integer average. Arguments as for [`least_allocated_score`].
pub fn most_allocated_score(resources: &[(i64, i64)], weights: &[i64]) -> i64 {
    weighted_score(resources, weights, |requested, allocatable| {
        percent_of(requested.min(allocatable), allocatable)
    })
}

/// BalancedAllocation: `trunc((1 − std) × 100)` over the fractions
/// `(node requested + pod request) / allocatable` (each clamped to 1). The deviation is
/// `|f1 − f2| / 2` for two fractions, the population standard deviation for more, 0 for fewer.
pub fn balanced_allocation_score(fractions: &[f64]) -> i64 {
    let clamped = || fractions.iter().map(|&f| f.min(1.0));
    let std = match fractions.len() {
        0 | 1 => 0.0,
        2 => {
            let mut it = clamped();
            let (a, b) = (it.next().unwrap_or(0.0), it.next().unwrap_or(0.0));
            ((a - b) / 2.0).abs()
        }
        n => {
            let n = n as f64;
            let mean = clamped().sum::<f64>() / n;
            (clamped().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n).sqrt()
        }
    };
    // `as` truncates toward zero like Go's int64(float64) and maps NaN to 0 instead of
    // panicking.
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// Upstream `normalizedImageName`: an image without a tag gets `:latest`.
pub fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    let last_colon = name.rfind(':');
    let last_slash = name.rfind('/');
    // Go compares LastIndex results with -1 for "absent"; `None < Some(_)` mirrors that.
    if last_colon <= last_slash {
        std::borrow::Cow::Owned(format!("{name}:latest"))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// ImageLocality score of `node` for `pod`. For each init and regular container whose
/// (normalised) image is listed in `node.status.images`, add
/// `size × nodes_with_image(name) / total_nodes` (truncated); clamp the sum to
/// `[23 MiB, 1000 MiB × containers]` and scale it linearly onto 0..=100. The size is this node's
/// `sizeBytes` for the name (upstream takes the size first recorded cluster-wide for the name,
/// which is the same unless nodes disagree about one image).
pub fn image_locality_score(
    pod: &Pod,
    node: &Node,
    nodes_with_image: &dyn Fn(&str) -> usize,
    total_nodes: usize,
) -> i64 {
    let Some(spec) = pod.spec.as_ref() else {
        return 0;
    };
    let images = node
        .status
        .as_ref()
        .and_then(|s| s.images.as_deref())
        .unwrap_or(&[]);
    // Upstream keys the node's image states by every name of every image.
    let mut sizes: HashMap<&str, i64> = HashMap::new();
    for image in images {
        for name in image.names.iter().flatten() {
            sizes
                .entry(name.as_str())
                .or_insert(image.size_bytes.unwrap_or(0));
        }
    }

    let containers: Vec<&Container> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .collect();
    let mut sum: i64 = 0;
    for container in &containers {
        let Some(image) = container.image.as_deref() else {
            continue;
        };
        let name = normalized_image_name(image);
        if let Some(&size) = sizes.get(name.as_ref()) {
            if total_nodes == 0 {
                continue;
            }
            let spread = nodes_with_image(&name) as f64 / total_nodes as f64;
            sum = sum.saturating_add((size as f64 * spread) as i64);
        }
    }

    image_score(sum, containers.len())
}

/// Upstream ImageLocality `calculatePriority`: clamp the summed image score to
/// `[23 MiB, 1000 MiB × containers]` and map it linearly onto `0..=100`.
pub fn image_score(sum: i64, containers: usize) -> i64 {
    let count = i64::try_from(containers).unwrap_or(i64::MAX);
    let max_threshold = IMAGE_MAX_CONTAINER_THRESHOLD.saturating_mul(count);
    let clamped = sum.clamp(IMAGE_MIN_THRESHOLD, max_threshold.max(IMAGE_MIN_THRESHOLD));
    let range = i128::from(max_threshold) - i128::from(IMAGE_MIN_THRESHOLD);
    if range <= 0 {
        return 0;
    }
    saturate(
        i128::from(MAX_NODE_SCORE) * (i128::from(clamped) - i128::from(IMAGE_MIN_THRESHOLD))
            / range,
    )
}

/// Upstream `helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)`: scale by the maximum
/// (`score × 100 / max`), then flip to `100 − score` when `reverse`. With a maximum of 0 the
/// scores stay as they are, or all become 100 when `reverse`.
pub fn normalize_max(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().fold(0, i64::max);
    if max == 0 {
        if reverse {
            scores.fill(MAX_NODE_SCORE);
        }
        return;
    }
    for score in scores.iter_mut() {
        let scaled = saturate(i128::from(MAX_NODE_SCORE) * i128::from(*score) / i128::from(max));
        *score = if reverse {
            MAX_NODE_SCORE - scaled
        } else {
            scaled
        };
    }
}

/// InterPodAffinity's NormalizeScore: `trunc(100 × (score − min) / (max − min))` in floating
/// point as upstream; every score becomes 0 when all are equal.
pub fn normalize_min_max(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    let diff = i128::from(max) - i128::from(min);
    for score in scores.iter_mut() {
        *score = if diff > 0 {
            let part = (i128::from(*score) - i128::from(min)) as f64 / diff as f64;
            (MAX_NODE_SCORE as f64 * part) as i64
        } else {
            0
        };
    }
}

/// Whether [`non_zero_request`] reads the pod's status: only a container status that reports
/// resources (an in-place resize) is read; otherwise the answer rests on the spec alone.
pub fn non_zero_request_reads_status(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        (s.container_statuses.iter().flatten())
            .chain(s.init_container_statuses.iter().flatten())
            .any(|c| c.resources.is_some())
    })
}

/// A pod's non-zero CPU (millicores) and memory (bytes) request as upstream `NonZeroRequested`.
pub fn non_zero_request(pod: &Pod) -> (i64, i64) {
    let default_cpu = i128::from(DEFAULT_MILLI_CPU_REQUEST) * NANO_PER_MILLI;
    let default_memory = i128::from(DEFAULT_MEMORY_REQUEST) * NANO_PER_UNIT;
    let defaults = if pod_level_requests_set(pod) {
        // With pod-level requests a default applies only where neither level lists the resource.
        let requests = pod_requests(pod, None);
        CpuMem {
            cpu: requests.cpu.is_none().then_some(default_cpu),
            memory: requests.memory.is_none().then_some(default_memory),
        }
    } else {
        CpuMem {
            cpu: Some(default_cpu),
            memory: Some(default_memory),
        }
    };
    let non_zero = pod_requests(pod, Some(defaults));
    (
        saturate(ceil_div(non_zero.cpu.unwrap_or(0), NANO_PER_MILLI)),
        saturate(ceil_div(non_zero.memory.unwrap_or(0), NANO_PER_UNIT)),
    )
}

/// CPU and memory amounts in nano-units; `None` = the resource is not listed at all (which is
/// what decides whether a default applies, an explicit `0` counts as set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CpuMem {
    cpu: Option<i128>,
    memory: Option<i128>,
}

impl CpuMem {
    fn from_list(list: Option<&BTreeMap<String, Quantity>>) -> Self {
        let get = |name: &str| {
            list.and_then(|l| l.get(name))
                .map(|q| parse_quantity_nanos(&q.0))
        };
        Self {
            cpu: get("cpu"),
            memory: get("memory"),
        }
    }

    /// `addResourceList`: sums, a resource present in either side is present in the result.
    fn add(&mut self, other: Self) {
        fn add(a: Option<i128>, b: Option<i128>) -> Option<i128> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            }
        }
        self.cpu = add(self.cpu, other.cpu);
        self.memory = add(self.memory, other.memory);
    }

    /// `maxResourceList`: per resource the larger value, present in either side.
    fn max(&mut self, other: Self) {
        fn max(a: Option<i128>, b: Option<i128>) -> Option<i128> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            }
        }
        self.cpu = max(self.cpu, other.cpu);
        self.memory = max(self.memory, other.memory);
    }

    /// `applyNonMissing`: fills in resources that are not listed.
    fn with_defaults(self, defaults: Option<Self>) -> Self {
        let Some(d) = defaults else { return self };
        Self {
            cpu: self.cpu.or(d.cpu),
            memory: self.memory.or(d.memory),
        }
    }
}

/// Upstream `IsSupportedPodLevelResource`.
fn is_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// Upstream `IsPodLevelRequestsSet` (the PodLevelResources feature is on by default in v1.36).
fn pod_level_requests_set(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| r.keys().any(|k| is_pod_level_resource(k)))
}

/// Upstream `IsPodResizeInfeasible`: the first `PodResizePending` condition says `Infeasible`.
fn resize_infeasible(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodResizePending"))
        .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"))
}

/// Upstream `determineContainerReqs` for a container whose status reports resources: the
/// maximum of spec, actual and allocated requests (spec ignored when the resize is infeasible).
fn container_requests(
    container: &Container,
    status: Option<&ContainerStatus>,
    infeasible: bool,
) -> CpuMem {
    let spec = CpuMem::from_list(
        container
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref()),
    );
    let Some(status) = status else { return spec };
    let Some(actual) = status.resources.as_ref() else {
        return spec;
    };
    let mut result = if infeasible { CpuMem::default() } else { spec };
    result.max(CpuMem::from_list(actual.requests.as_ref()));
    result.max(CpuMem::from_list(status.allocated_resources.as_ref()));
    result
}

/// Upstream `resourcehelper.PodRequests` for cpu and memory with `UseStatusResources` and
/// pod-level resources enabled (their v1.36 defaults), optionally with `NonMissingContainerRequests`.
fn pod_requests(pod: &Pod, defaults: Option<CpuMem>) -> CpuMem {
    let Some(spec) = pod.spec.as_ref() else {
        return CpuMem::default();
    };
    let status = pod.status.as_ref();
    let statuses: HashMap<&str, &ContainerStatus> = status
        .into_iter()
        .flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        })
        .map(|cs| (cs.name.as_str(), cs))
        .collect();
    let infeasible = resize_infeasible(pod);

    let mut total = CpuMem::default();
    for container in &spec.containers {
        let status = statuses.get(container.name.as_str()).copied();
        total.add(container_requests(container, status, infeasible).with_defaults(defaults));
    }

    // Each init container runs alongside the sidecars started before it; the pod needs the
    // largest of those moments, while sidecars also run alongside the regular containers.
    let mut sidecars = CpuMem::default();
    let mut init_peak = CpuMem::default();
    for container in spec.init_containers.iter().flatten() {
        let sidecar = container.restart_policy.as_deref() == Some("Always");
        // Only sidecars have a resize status upstream.
        let status = sidecar
            .then(|| statuses.get(container.name.as_str()).copied())
            .flatten();
        let requests = container_requests(container, status, infeasible).with_defaults(defaults);
        let moment = if sidecar {
            total.add(requests);
            sidecars.add(requests);
            sidecars
        } else {
            let mut moment = requests;
            moment.add(sidecars);
            moment
        };
        init_peak.max(moment);
    }
    total.max(init_peak);

    if pod_level_requests_set(pod) {
        let pod_level =
            CpuMem::from_list(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
        total.cpu = pod_level.cpu.or(total.cpu);
        total.memory = pod_level.memory.or(total.memory);
    }
    if let Some(overhead) = spec.overhead.as_ref() {
        total.add(CpuMem::from_list(Some(overhead)));
    }
    total
}

/// Division rounding away from zero, as Quantity's `Value` / `MilliValue` do.
fn ceil_div(value: i128, divisor: i128) -> i128 {
    let quotient = value / divisor;
    if value % divisor == 0 {
        quotient
    } else if value > 0 {
        quotient + 1
    } else {
        quotient - 1
    }
}

/// Parses a Kubernetes quantity into nano-units, rounding away from zero at nano precision like
/// apimachinery `ParseQuantity`. Malformed text counts as 0 (the API server never stores it).
fn parse_quantity_nanos(text: &str) -> i128 {
    parse_quantity(text.trim()).unwrap_or(0)
}

fn parse_quantity(s: &str) -> Option<i128> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if frac_part.contains('.') {
        return None;
    }

    // value = digits × 10^(decimal_exp) × 2^(binary_exp), in units.
    let (binary_exp, suffix_exp): (u32, i32) = match suffix {
        "" => (0, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        _ => {
            let exp = suffix.strip_prefix(['e', 'E'])?;
            if exp.is_empty() {
                return None;
            }
            (0, exp.parse::<i32>().ok()?)
        }
    };

    let digits = format!("{}{}", int_part.trim_start_matches('0'), frac_part);
    let digits = digits.trim_start_matches('0');
    let frac_len = i32::try_from(frac_part.len()).ok()?;
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        // More than 38 significant digits cannot be held; such a value saturates anyway.
        digits.parse::<i128>().unwrap_or(i128::MAX)
    };
    let scaled = mantissa.saturating_mul(1i128.checked_shl(binary_exp).unwrap_or(i128::MAX));
    let exp10 = suffix_exp.saturating_add(9).saturating_sub(frac_len);
    let nanos = if exp10 >= 0 {
        let factor = 10i128
            .checked_pow(exp10.unsigned_abs())
            .unwrap_or(i128::MAX);
        if scaled == 0 {
            0
        } else {
            scaled.saturating_mul(factor)
        }
    } else {
        match 10i128.checked_pow(exp10.unsigned_abs()) {
            Some(divisor) => ceil_div(scaled, divisor),
            // Smaller than a nano: rounds up to one nano unless zero.
            None => i128::from(scaled != 0),
        }
    };
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests;
