//! What a pod asks of the vGPU device and which cards it accepts (Volcano's
//! `devices.ExtractResourceRequest`, `checkGPUtype`, the UUID allow/deny lists and the PodGroup
//! key of `pkg/scheduler/api/devices/nvidia/vgpu/utils.go`).

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Extended resource: vGPUs (cards) a container asks; also node allocatable.
pub const VGPU_NUMBER: &str = "volcano.sh/vgpu-number";
/// Extended resource: device memory (MiB) per card a container asks; also node allocatable.
pub const VGPU_MEMORY: &str = "volcano.sh/vgpu-memory";
/// Extended resource: percentage of each card's compute a container asks; also node allocatable.
pub const VGPU_CORES: &str = "volcano.sh/vgpu-cores";
/// The device type every request of this device names.
pub const NVIDIA: &str = "NVIDIA";
/// Pod annotation: card types (substrings, comma-separated) the pod may use.
pub const USE_GPU_TYPE: &str = "nvidia.com/use-gputype";
/// Pod annotation: card types the pod must not use.
pub const NOUSE_GPU_TYPE: &str = "nvidia.com/nouse-gputype";
/// Memory percentage meaning "none asked" (the request is in MiB instead).
pub const NO_PERCENTAGE: i32 = 101;

/// The resource names the device reads (Volcano's default device configuration; a memory
/// percentage resource is not configured by default).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceNames {
    pub count: String,
    pub memory: String,
    pub cores: String,
    pub memory_percentage: String,
}

impl Default for ResourceNames {
    fn default() -> Self {
        ResourceNames {
            count: VGPU_NUMBER.to_string(),
            memory: VGPU_MEMORY.to_string(),
            cores: VGPU_CORES.to_string(),
            memory_percentage: String::new(),
        }
    }
}

impl ResourceNames {
    /// The names a device configuration gives (empty where it gives none, as in Volcano).
    pub fn of(config: &apis::DeviceConfig) -> ResourceNames {
        let n = &config.nvidia;
        ResourceNames {
            count: n.resource_count_name.clone(),
            memory: n.resource_memory_name.clone(),
            cores: n.resource_core_name.clone(),
            memory_percentage: n.resource_memory_percentage_name.clone(),
        }
    }
}

/// One container's request (`ContainerDeviceRequest`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerRequest {
    /// Cards.
    pub nums: i32,
    /// Memory per card in MiB.
    pub memory: i32,
    /// Memory per card as a percentage of the card, or [`NO_PERCENTAGE`].
    pub memory_percentage: i32,
    /// Compute per card in percent.
    pub cores: i32,
}

/// A quantity as Kubernetes' `AsInt64`: a whole number, or nothing when it has a fraction.
fn as_int(q: &Quantity) -> Option<i64> {
    let milli = engine::model::quantity::parse_milli(&q.0).ok()?;
    if milli % 1000 != 0 {
        return None;
    }
    i64::try_from(milli / 1000).ok()
}

fn limit<'a>(c: &'a Container, name: &str) -> Option<&'a Quantity> {
    c.resources.as_ref()?.limits.as_ref()?.get(name)
}

fn request<'a>(c: &'a Container, name: &str) -> Option<&'a Quantity> {
    c.resources.as_ref()?.requests.as_ref()?.get(name)
}

/// The limit, or else the request, of `name` as a whole number (Go's `int32` conversion wraps).
fn limit_or_request(c: &Container, name: &str) -> Option<i32> {
    let q = limit(c, name).or_else(|| request(c, name))?;
    as_int(q).map(|v| v as i32)
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

/// Whether any container limits the card count or card memory (`checkVGPUResourcesInPod`).
pub fn asks_vgpu(pod: &Pod, names: &ResourceNames) -> bool {
    containers(pod)
        .iter()
        .any(|c| limit(c, &names.memory).is_some() || limit(c, &names.count).is_some())
}

/// The requests of the containers that ask for cards, in container order; init containers
/// ask nothing here, as in Volcano.
pub fn container_requests(pod: &Pod, names: &ResourceNames) -> Vec<ContainerRequest> {
    let mut out = Vec::new();
    for c in containers(pod) {
        // A container limiting only memory asks one card.
        let nums = match limit(c, &names.count) {
            Some(q) => as_int(q).unwrap_or(0) as i32,
            None if limit(c, &names.memory).is_some() => 1,
            None => continue,
        };
        let memory = limit_or_request(c, &names.memory).unwrap_or(0);
        let mut memory_percentage = NO_PERCENTAGE;
        if !names.memory_percentage.is_empty()
            && let Some(p) = limit_or_request(c, &names.memory_percentage)
        {
            memory_percentage = p;
        }
        // Neither memory nor a percentage: the whole card.
        if memory_percentage == NO_PERCENTAGE && memory == 0 {
            memory_percentage = 100;
        }
        let cores = limit_or_request(c, &names.cores).unwrap_or(0);
        out.push(ContainerRequest {
            nums,
            memory,
            memory_percentage,
            cores,
        });
    }
    out
}

/// The pod's annotation `key`, if set.
pub fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether the pod's type annotations accept a card of this type (`checkGPUtype`): the use
/// list, when present, must name a substring of the type (case-insensitive); otherwise the
/// no-use list must not.
pub fn type_accepted(pod: &Pod, card_type: &str) -> bool {
    let upper = card_type.to_uppercase();
    let names = |v: &str| -> bool { v.split(',').any(|t| upper.contains(&t.to_uppercase())) };
    if let Some(inuse) = annotation(pod, USE_GPU_TYPE) {
        return names(inuse);
    }
    if let Some(nouse) = annotation(pod, NOUSE_GPU_TYPE) {
        return !names(nouse);
    }
    true
}

/// The pod's card allow and deny lists by UUID (`gpuUUIDFilter`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UuidFilter {
    allow: Vec<String>,
    deny: Vec<String>,
}

fn uuid_list(value: Option<&str>) -> Vec<String> {
    value
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

impl UuidFilter {
    pub fn of_pod(pod: &Pod) -> UuidFilter {
        UuidFilter {
            allow: uuid_list(annotation(pod, apis::keys::VGPU_USE_GPU_UUID)),
            deny: uuid_list(annotation(pod, apis::keys::VGPU_NOUSE_GPU_UUID)),
        }
    }

    pub fn enabled(&self) -> bool {
        !self.allow.is_empty() || !self.deny.is_empty()
    }

    /// Exact matches only; a card without a UUID fails any list; deny wins.
    pub fn matches(&self, uuid: &str) -> bool {
        if uuid.is_empty() && self.enabled() {
            return false;
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|a| a == uuid) {
            return false;
        }
        !self.deny.iter().any(|d| d == uuid)
    }
}

/// `namespace/group` from the pod's group-name annotation (Kubernetes' key first, then
/// Volcano's), or empty without one (`getPodGroupKey`).
pub fn pod_group_key(pod: &Pod) -> String {
    let group = annotation(pod, apis::keys::GROUP_NAME)
        .filter(|g| !g.is_empty())
        .or_else(|| annotation(pod, apis::keys::VOLCANO_GROUP_NAME))
        .unwrap_or("");
    if group.is_empty() {
        return String::new();
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    format!("{ns}/{group}")
}

/// The PodGroup key whose pods must not share a card with this one: set only when the pod
/// asks the `spread` policy for its group (`volcano.sh/vgpu-podgroup-policy`).
pub fn spread_group(pod: &Pod) -> String {
    if annotation(pod, apis::keys::VGPU_PODGROUP_POLICY) == Some("spread") {
        pod_group_key(pod)
    } else {
        String::new()
    }
}

/// The sharing mode the pod insists on (`volcano.sh/vgpu-mode`), if any.
pub fn required_mode(pod: &Pod) -> Option<&str> {
    annotation(pod, apis::keys::VGPU_MODE)
}
