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
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).expect("pod")
    }

    #[test]
    fn worked_example_least_most_balanced() {
        // Node 4000m / 8Gi with 1000m / 2Gi requested, incoming pod 1000m / 2Gi.
        let gi = 1024 * 1024 * 1024;
        let resources = [(2000, 4000), (4 * gi, 8 * gi)];
        assert_eq!(least_allocated_score(&resources, &[50, 50]), 50);
        assert_eq!(most_allocated_score(&resources, &[1, 1]), 50);
        assert_eq!(balanced_allocation_score(&[0.5, 0.25]), 87);
    }

    #[test]
    fn least_and_most_table() {
        // (resources, weights, least, most)
        type Case = (&'static [(i64, i64)], &'static [i64], i64, i64);
        let cases: [Case; 6] = [
            (&[(0, 4000), (0, 8000)], &[1, 1], 100, 0),
            (
                &[(3000, 4000), (1000, 8000)],
                &[1, 1],
                (25 + 87) / 2,
                (75 + 12) / 2,
            ),
            (
                &[(5000, 4000), (1000, 8000)],
                &[1, 1],
                87 / 2,
                (100 + 12) / 2,
            ),
            // Zero allocatable is skipped entirely, weight included.
            (&[(1000, 0), (1000, 4000)], &[50, 50], 75, 25),
            (&[(1000, 0)], &[1], 0, 0),
            (
                &[(1000, 4000), (3000, 4000)],
                &[3, 1],
                (75 * 3 + 25) / 4,
                (25 * 3 + 75) / 4,
            ),
        ];
        for (i, (res, w, least, most)) in cases.into_iter().enumerate() {
            assert_eq!(least_allocated_score(res, w), least, "least case {i}");
            assert_eq!(most_allocated_score(res, w), most, "most case {i}");
        }
    }

    #[test]
    fn balanced_table() {
        let cases: [(&[f64], i64); 6] = [
            (&[], 100),
            (&[0.7], 100),
            (&[0.5, 0.5], 100),
            (&[1.5, 0.5], 75), // clamped to 1.0
            (&[0.0, 1.0], 50),
            // mean 0.5, deviations ±0.5 and 0 → sqrt(0.5/3) = 0.408 → 59
            (&[0.0, 0.5, 1.0], 59),
        ];
        for (fractions, want) in cases {
            assert_eq!(balanced_allocation_score(fractions), want, "{fractions:?}");
        }
        // Garbage in must not panic.
        let _ = balanced_allocation_score(&[f64::NAN, f64::INFINITY, -1.0]);
    }

    #[test]
    fn normalize_max_cases() {
        let mut s = vec![0, 0, 0];
        normalize_max(&mut s, false);
        assert_eq!(s, [0, 0, 0]);
        normalize_max(&mut s, true);
        assert_eq!(s, [100, 100, 100]);

        let mut s = vec![1, 2, 4];
        normalize_max(&mut s, false);
        assert_eq!(s, [25, 50, 100]);
        let mut s = vec![1, 2, 4];
        normalize_max(&mut s, true);
        assert_eq!(s, [75, 50, 0]);
        let mut s = vec![1, 3];
        normalize_max(&mut s, false);
        assert_eq!(s, [33, 100]);
        let mut empty: Vec<i64> = Vec::new();
        normalize_max(&mut empty, true);
        assert!(empty.is_empty());
    }

    #[test]
    fn normalize_min_max_cases() {
        let mut s = vec![5, 5];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 0]);
        let mut s = vec![-2, 0, 1];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 66, 100]);
        let mut s = vec![0, 0, 0];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 0, 0]);
        let mut s = vec![i64::MIN, i64::MAX];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 100]);
        let mut empty: Vec<i64> = Vec::new();
        normalize_min_max(&mut empty);
    }

    #[test]
    fn quantity_parsing() {
        let cases = [
            ("0", 0),
            ("1", NANO_PER_UNIT),
            ("100m", 100 * NANO_PER_MILLI),
            ("1.5", 1_500_000_000),
            ("0.1m", 100_000),
            ("1n", 1),
            ("0.5n", 1), // rounded up to a nano
            ("-0.5n", -1),
            ("2Ki", 2048 * NANO_PER_UNIT),
            ("1.5Gi", 1_610_612_736 * NANO_PER_UNIT),
            ("1e3", 1000 * NANO_PER_UNIT),
            ("1E3", 1000 * NANO_PER_UNIT),
            ("5E", 5 * 10i128.pow(27)),
            ("1k", 1000 * NANO_PER_UNIT),
            ("+3", 3 * NANO_PER_UNIT),
            (".5", 500_000_000),
            (" 2 ", 2 * NANO_PER_UNIT),
            ("bogus", 0),
            ("1.2.3", 0),
            ("1Zi", 0),
            ("", 0),
        ];
        for (text, want) in cases {
            assert_eq!(parse_quantity_nanos(text), want, "{text:?}");
        }
    }

    #[test]
    fn non_zero_request_table() {
        let mi = 1024 * 1024;
        let cases = [
            // No requests at all: the defaults per container.
            (
                json!({"containers": [{"name": "a"}, {"name": "b"}]}),
                (200, 400 * mi),
            ),
            // Explicit zero is respected, only missing resources are defaulted.
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}),
                (0, 200 * mi),
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]}),
                (250, 1024 * mi),
            ),
            // Init containers: maximum of the regular sum and each init container.
            (
                json!({
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}],
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
                }),
                (2000, 1024 * mi),
            ),
            // Sidecars run next to everything after them.
            (
                json!({
                    "initContainers": [
                        {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                        {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}
                    ],
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
                }),
                (3000, 2048 * mi),
            ),
            // Overhead is added.
            (
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                    "overhead": {"cpu": "100m", "memory": "10Mi"}
                }),
                (1100, 1034 * mi),
            ),
            // Pod-level requests override; unset memory falls back to the per-container default.
            (
                json!({
                    "resources": {"requests": {"cpu": "3"}},
                    "containers": [{"name": "a"}, {"name": "b"}]
                }),
                (3000, 400 * mi),
            ),
        ];
        for (i, (spec, want)) in cases.into_iter().enumerate() {
            let p = pod(json!({"metadata": {"name": "p"}, "spec": spec}));
            assert_eq!(non_zero_request(&p), want, "case {i}");
        }
        assert_eq!(non_zero_request(&pod(json!({"metadata": {}}))), (0, 0));
    }

    #[test]
    fn non_zero_request_uses_resize_status() {
        let p = pod(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"containerStatuses": [{
                "name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
                "resources": {"requests": {"cpu": "2", "memory": "512Mi"}},
                "allocatedResources": {"cpu": "1500m", "memory": "512Mi"}
            }]}
        }));
        assert_eq!(non_zero_request(&p), (2000, 1024 * 1024 * 1024));

        let mut infeasible = p.clone();
        let status = serde_json::from_value(json!({
            "containerStatuses": [{
                "name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
                "resources": {"requests": {"cpu": "2", "memory": "512Mi"}},
                "allocatedResources": {"cpu": "1500m", "memory": "512Mi"}
            }],
            "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
        }))
        .expect("status");
        infeasible.status = Some(status);
        assert_eq!(non_zero_request(&infeasible), (2000, 512 * 1024 * 1024));
    }

    #[test]
    fn image_locality() {
        let mb = 1024 * 1024;
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"images": [
                {"names": ["registry/app:v1", "registry/app@sha256:abc"], "sizeBytes": 500 * mb},
                {"names": ["busybox:latest"], "sizeBytes": 300 * mb}
            ]}
        }))
        .expect("node");
        let spread = |name: &str| match name {
            "registry/app:v1" => 2,
            "busybox:latest" => 4,
            _ => 0,
        };
        let p = |images: &[&str]| {
            let containers: Vec<_> = images
                .iter()
                .enumerate()
                .map(|(i, img)| json!({"name": format!("c{i}"), "image": img}))
                .collect();
            pod(json!({"metadata": {"name": "p"}, "spec": {"containers": containers}}))
        };
        // 500 MiB × 2/4 = 250 MiB → 100 × (250 − 23) / (1000 − 23) = 23
        assert_eq!(
            image_locality_score(&p(&["registry/app:v1"]), &node, &spread, 4),
            23
        );
        // Untagged image is normalised to :latest: 300 MiB × 4/4.
        assert_eq!(
            image_locality_score(&p(&["busybox"]), &node, &spread, 4),
            28
        );
        // Absent image: clamped to the minimum → 0.
        assert_eq!(
            image_locality_score(&p(&["other:v2"]), &node, &spread, 4),
            0
        );
        // Two containers: (250 + 300) MiB over [23, 2000] MiB → 100 × 527 / 1977 = 26
        assert_eq!(
            image_locality_score(&p(&["registry/app:v1", "busybox"]), &node, &spread, 4),
            26
        );
        // No containers / no nodes never divide by zero.
        assert_eq!(image_locality_score(&p(&[]), &node, &spread, 4), 0);
        assert_eq!(image_locality_score(&p(&["busybox"]), &node, &spread, 0), 0);
    }

    proptest::proptest! {
        #[test]
        fn allocation_scores_stay_in_range(
            requested in 0i64..(1 << 50),
            allocatable in 1i64..(1 << 50),
            weight in 1i64..1000,
        ) {
            let res = [(requested, allocatable)];
            proptest::prop_assert!((0..=100).contains(&least_allocated_score(&res, &[weight])));
            proptest::prop_assert!((0..=100).contains(&most_allocated_score(&res, &[weight])));
        }

        #[test]
        fn normalisers_stay_in_range(
            scores in proptest::collection::vec(0i64..i64::MAX, 0..20),
            signed in proptest::collection::vec(proptest::num::i64::ANY, 0..20),
            reverse: bool,
        ) {
            let mut s = scores;
            normalize_max(&mut s, reverse);
            proptest::prop_assert!(s.iter().all(|v| (0..=100).contains(v)));
            let mut s = signed;
            normalize_min_max(&mut s);
            proptest::prop_assert!(s.iter().all(|v| (0..=100).contains(v)));
        }

        #[test]
        fn quantity_parsing_never_panics(text in "[-+]?[0-9.]{0,45}[eEinumkKMGTP]{0,2}[-+]?[0-9]{0,4}") {
            let _ = parse_quantity_nanos(&text);
        }
    }

    #[test]
    fn image_name_normalisation() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.2"), "nginx:1.2");
        assert_eq!(
            normalized_image_name("host:5000/nginx"),
            "host:5000/nginx:latest"
        );
        assert_eq!(
            normalized_image_name("host:5000/nginx:1"),
            "host:5000/nginx:1"
        );
    }
}
