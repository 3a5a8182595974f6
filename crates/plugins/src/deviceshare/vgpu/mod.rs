//! Volcano's vGPU device (spec/plugins-more.md §12; Volcano's
//! `pkg/scheduler/api/devices/nvidia/vgpu`, HAMi-core and [`mig`] modes): the device plugin
//! registers a node's cards in the node annotation `volcano.sh/node-vgpu-register`
//! (`uuid,count,memory,type,health,mode:` per card); a container asks cards
//! (`volcano.sh/vgpu-number`), memory per card (`volcano.sh/vgpu-memory`, MiB) and compute per
//! card (`volcano.sh/vgpu-cores`, percent). A card takes a container while it has fewer than
//! `count` users, the memory idle, and compute to spare; the cards chosen are written to the
//! pod as `volcano.sh/vgpu-ids-new` (`uuid,NVIDIA,memory,cores:` per card, `;` between
//! containers), which is also how the pods already on a node are accounted.

pub mod mig;
pub mod request;

use std::collections::BTreeMap;
use std::sync::Arc;

use apis::DeviceConfig;
use apis::device_config::Geometry;
use k8s_openapi::api::core::v1::{Node, Pod};

use request::{ContainerRequest, NVIDIA, ResourceNames, UuidFilter};

/// Node annotation: the cards the device plugin registered.
pub const REGISTER: &str = "volcano.sh/node-vgpu-register";
/// Pod annotation: the cards given, per container.
pub const IDS_NEW: &str = "volcano.sh/vgpu-ids-new";
/// Pod annotation: the cards the device plugin still has to hand out (same value).
pub const TO_ALLOCATE: &str = "volcano.sh/devices-to-allocate";
/// Pod annotation: the node the cards are on.
pub const ASSIGNED_NODE: &str = "volcano.sh/vgpu-node";
/// Pod annotation: when the cards were chosen (Unix seconds).
pub const ASSIGNED_TIME: &str = "volcano.sh/vgpu-time";
/// Pod annotation: when the bind was sent (Unix seconds).
pub const BIND_TIME: &str = "volcano.sh/bind-time";
/// Pod annotation: the device plugin's progress; the scheduler writes `allocating`.
pub const BIND_PHASE: &str = "volcano.sh/bind-phase";

/// The HAMi-core sharing mode, the one a card registered without a known mode gets.
pub const HAMI_CORE: &str = "hami-core";
/// The MIG sharing mode ([`mig`]).
pub const MIG: &str = "mig";

/// The policy that orders a node's cards and scores the node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Highest card index first; every node scores 0.
    #[default]
    None,
    /// Most used memory first; a node scores the share of memory in use on the cards chosen.
    Binpack,
    /// Fewest users first; a node scores 100 for each chosen card no one used.
    Spread,
}

impl Policy {
    /// `deviceshare.SchedulePolicy`; any other value acts as none, as in Volcano.
    pub fn parse(s: &str) -> Policy {
        match s {
            "binpack" => Policy::Binpack,
            "spread" => Policy::Spread,
            _ => Policy::None,
        }
    }
}

/// What one pod uses of one card.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub memory: u32,
    pub cores: u32,
    /// `namespace/group` of the pod's PodGroup, empty without one.
    pub group: String,
    /// How many of the pod's containers use the card (each counts as a user).
    pub containers: u32,
    /// The MIG instances the pod holds here (MIG mode).
    pub instances: Vec<String>,
    /// The GPU-exclusive rules the pod matches, as a bit set.
    pub rules: u64,
}

/// One registered card and what is in use on it (`GPUDevice`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gpu {
    pub uuid: String,
    /// How many containers may share it.
    pub number: u32,
    /// Memory in MiB.
    pub memory: u32,
    pub card_type: String,
    pub health: bool,
    pub used_num: u32,
    pub used_mem: u32,
    pub used_cores: u32,
    /// Pod uid → what it uses here. Shared, like the geometries, so that the trial copy a fit
    /// makes for every task and node copies only the counters.
    pub pods: Arc<BTreeMap<String, Usage>>,
    /// MIG mode: the geometries the card's model allows, and the instances in use.
    pub mig_geometries: Arc<[Geometry]>,
    pub mig_usage: mig::MigUsage,
}

impl Gpu {
    pub fn new(uuid: &str, number: u32, memory: u32, card_type: &str) -> Gpu {
        Gpu {
            uuid: uuid.to_string(),
            number,
            memory,
            card_type: card_type.to_string(),
            health: true,
            ..Gpu::default()
        }
    }

    /// Saturating: the amounts come from annotations anyone may write.
    fn take(&mut self, memory: u32, cores: u32) {
        self.used_num = self.used_num.saturating_add(1);
        self.used_mem = self.used_mem.saturating_add(memory);
        self.used_cores = self.used_cores.saturating_add(cores);
    }

    /// Whether a pod of this PodGroup holds memory or compute here (`deviceHasPodFromSameGroup`).
    fn has_group(&self, group: &str) -> bool {
        !group.is_empty()
            && self
                .pods
                .values()
                .any(|u| u.group == group && (u.memory > 0 || u.cores > 0))
    }
}

/// One card given to one container (`ContainerDevice`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assigned {
    pub uuid: String,
    pub card_type: String,
    pub memory: u32,
    pub cores: u32,
}

/// The cards given to each asking container of a pod.
pub type PodCards = Vec<Vec<Assigned>>;

/// A node's cards by their position in the registration (`GPUDevices`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gpus {
    pub node: String,
    /// The sharing mode the node registered (the last card's).
    pub mode: String,
    /// MIG mode: instance memory is `request × factor` when the factor is above 1.
    pub memory_factor: u32,
    pub cards: BTreeMap<usize, Gpu>,
}

/// A whole-number quantity of the node's allocatable, 0 when absent.
fn allocatable(node: &Node, name: &str) -> i128 {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(name))
        .and_then(|q| engine::model::quantity::parse_milli(&q.0).ok())
        .map_or(0, |m| m / 1000)
}

impl Gpus {
    /// The node's registered cards, or `None` when it registered none or offers no vGPU
    /// number, cores or memory (`NewGPUDevices`).
    pub fn of_node(node: &Node, config: &DeviceConfig) -> Option<Gpus> {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let value = node.metadata.annotations.as_ref()?.get(REGISTER)?;
        let offered = [
            request::VGPU_NUMBER,
            request::VGPU_CORES,
            request::VGPU_MEMORY,
        ];
        if offered.iter().any(|r| allocatable(node, r) == 0) {
            return None;
        }
        let gpus = Gpus::decode(name, value, config)?;
        (!gpus.cards.is_empty()).then_some(gpus)
    }

    /// Reads the registration (`decodeNodeDevices`): a card with fewer than six fields makes
    /// the whole registration unreadable; unreadable numbers count as 0, as in Volcano. A card
    /// registered as `mig` whose model the configuration gives no geometry is HAMi-core; the
    /// node's mode is the last card's.
    pub fn decode(node: &str, value: &str, config: &DeviceConfig) -> Option<Gpus> {
        if !value.contains(':') {
            return None;
        }
        let mut gpus = Gpus {
            node: node.to_string(),
            mode: HAMI_CORE.to_string(),
            memory_factor: config.nvidia.gpu_memory_factor,
            cards: BTreeMap::new(),
        };
        for (index, card) in value.split(':').enumerate() {
            if !card.contains(',') {
                continue;
            }
            let items: Vec<&str> = card.split(',').collect();
            if items.len() < 6 {
                return None;
            }
            let mut gpu = Gpu::new(
                items[0],
                items[1].parse().unwrap_or(0),
                items[2].parse().unwrap_or(0),
                items[3],
            );
            gpu.health = parse_go_bool(items[4]);
            gpus.mode = HAMI_CORE.to_string();
            if items[5] == MIG
                && let Some(geometries) = config.geometries_of(&gpu.card_type)
            {
                gpu.mig_geometries = geometries.into();
                gpus.mode = MIG.to_string();
            }
            gpus.cards.insert(index, gpu);
        }
        Some(gpus)
    }

    /// Accounts a pod already on the node to the cards its `volcano.sh/vgpu-ids-new` names
    /// (`AddResource`); a pod counts once per card.
    pub fn add_pod(&mut self, pod: &Pod, uid: &str, rules: u64) {
        let Some(ids) = request::annotation(pod, IDS_NEW) else {
            return;
        };
        let group = request::pod_group_key(pod);
        for used in decode_pod_cards(ids).iter().flatten() {
            if let Some(key) = self.card_of(&used.uuid)
                && !self.cards[&key].pods.contains_key(uid)
            {
                self.hold(key, used, uid, &group, rules);
            }
        }
    }

    /// The first card (by position) whose UUID the assigned id contains.
    fn card_of(&self, id: &str) -> Option<usize> {
        self.cards
            .iter()
            .find(|(_, g)| id.contains(&g.uuid))
            .map(|(&k, _)| k)
    }

    /// Puts one container's card in use for the pod (`AddPod` of the node's sharing mode).
    fn hold(&mut self, key: usize, used: &Assigned, uid: &str, group: &str, rules: u64) {
        let (mig, factor) = (self.mode == MIG, self.memory_factor);
        let Some(gpu) = self.cards.get_mut(&key) else {
            return;
        };
        let mut memory = used.memory;
        if mig {
            // An id that names no instance holds nothing, as in Volcano.
            let Some((g, position)) = mig::decode_id(&used.uuid) else {
                return;
            };
            memory = mig::add_used(&mut gpu.mig_usage, &gpu.mig_geometries, g, position);
            if factor > 1 {
                memory /= factor;
            }
        }
        gpu.take(memory, used.cores);
        let usage = Arc::make_mut(&mut gpu.pods)
            .entry(uid.to_string())
            .or_default();
        usage.memory = usage.memory.saturating_add(memory);
        usage.cores = usage.cores.saturating_add(used.cores);
        usage.containers = usage.containers.saturating_add(1);
        usage.group = group.to_string();
        usage.rules |= rules;
        if mig {
            usage.instances.push(used.uuid.clone());
        }
    }

    /// Puts a placed pod's cards in use (what `Allocate` does through `TryAddPod` and
    /// `addToPodMap`): every container's card counts, even a card two containers share.
    pub fn commit(&mut self, pod: &Pod, uid: &str, cards: &PodCards, rules: u64) {
        let group = request::pod_group_key(pod);
        for used in cards.iter().flatten() {
            if let Some(key) = self.card_of(&used.uuid) {
                self.hold(key, used, uid, &group, rules);
            }
        }
    }

    /// Takes back exactly what [`Gpus::commit`] or [`Gpus::add_pod`] put in use for the pod.
    pub fn release(&mut self, uid: &str) {
        for gpu in self.cards.values_mut() {
            if !gpu.pods.contains_key(uid) {
                continue;
            }
            if let Some(usage) = Arc::make_mut(&mut gpu.pods).remove(uid) {
                for id in &usage.instances {
                    if let Some((g, position)) = mig::decode_id(id) {
                        mig::sub_used(&mut gpu.mig_usage, &gpu.mig_geometries, g, position);
                    }
                }
                gpu.used_num = gpu.used_num.saturating_sub(usage.containers);
                gpu.used_mem = gpu.used_mem.saturating_sub(usage.memory);
                gpu.used_cores = gpu.used_cores.saturating_sub(usage.cores);
            }
        }
    }

    /// The cards the pod's containers would get here, and the node's score for them under the
    /// policy (`checkNodeGPUSharingPredicateAndScore` on a copy); `Err` says why none fit.
    /// `rules` are the GPU-exclusive rules the pod matches: on a HAMi-core node, a card that
    /// holds a pod of one of them takes no new user for it (Volcano caps its `Number`).
    pub fn fit(
        &self,
        pod: &Pod,
        names: &ResourceNames,
        policy: Policy,
        rules: u64,
    ) -> Result<(PodCards, f64), String> {
        if !request::asks_vgpu(pod, names) {
            return Ok((Vec::new(), 0.0));
        }
        if let Some(mode) = request::required_mode(pod)
            && mode != self.mode
        {
            return Err(format!(
                "pod required sharing mode {mode} is not the same as the node mode {}",
                self.mode
            ));
        }
        let requests = request::container_requests(pod, names);
        if requests.is_empty() {
            return Ok((Vec::new(), 0.0));
        }
        let mut trial = self.clone();
        if rules != 0 && self.mode == HAMI_CORE {
            for gpu in trial.cards.values_mut() {
                if gpu.pods.values().any(|u| u.rules & rules != 0) {
                    gpu.number = gpu.used_num;
                }
            }
        }
        let group = request::spread_group(pod);
        let filter = UuidFilter::of_pod(pod);
        let mut score = 0.0;
        let mut out = Vec::new();
        for req in requests {
            let (cards, s) = trial.fit_container(pod, req, &group, &filter, policy)?;
            score += s;
            out.push(cards);
        }
        Ok((out, score))
    }

    /// One container's cards on the trial copy, which keeps them in use for the next container.
    fn fit_container(
        &mut self,
        pod: &Pod,
        req: ContainerRequest,
        group: &str,
        filter: &UuidFilter,
        policy: Policy,
    ) -> Result<(Vec<Assigned>, f64), String> {
        let mut nums = req.nums;
        if usize::try_from(nums).is_ok_and(|n| n > self.cards.len()) {
            return Err(format!("no enough gpu cards on node {}", self.node));
        }
        let (mig, factor) = (self.mode == MIG, self.memory_factor);
        let mut cards = Vec::new();
        let mut score = 0.0;
        let mut uuid_matched = false;
        for index in self.card_order(policy) {
            let Some(gpu) = self.cards.get_mut(&index) else {
                continue;
            };
            if !filter.matches(&gpu.uuid) {
                continue;
            }
            uuid_matched = true;
            let Some(memory) = card_accepts(pod, gpu, req, group) else {
                continue;
            };
            let cores = req.cores.max(0) as u32;
            let Some(id) = try_add(gpu, memory, cores, mig, factor) else {
                continue;
            };
            if nums > 0 {
                nums -= 1;
                cards.push(Assigned {
                    uuid: id,
                    card_type: NVIDIA.to_string(),
                    memory,
                    cores,
                });
                score += card_score(policy, gpu);
            }
            if nums == 0 {
                break;
            }
        }
        if nums > 0 {
            if filter.enabled() && !uuid_matched {
                return Err(format!(
                    "no GPU matches UUID constraints {}, {} on node {}",
                    apis::keys::VGPU_USE_GPU_UUID,
                    apis::keys::VGPU_NOUSE_GPU_UUID,
                    self.node
                ));
            }
            return Err("not enough gpu fitted on this node".to_string());
        }
        Ok((cards, score))
    }

    /// Card positions in the order the policy tries them (`sortedDeviceIndicesByPolicy`).
    fn card_order(&self, policy: Policy) -> Vec<usize> {
        let mut order: Vec<usize> = self.cards.keys().copied().collect();
        match policy {
            Policy::None => order.reverse(),
            Policy::Binpack => {
                order.sort_by_key(|i| (std::cmp::Reverse(self.cards[i].used_mem), *i));
            }
            Policy::Spread => order.sort_by_key(|i| (self.cards[i].used_num, *i)),
        }
        order
    }
}

/// Takes the card for a container (`TryAddPod` of the sharing mode): the id it is known by in
/// the pod's annotation, or `None` when a MIG card has no instance for it. The MIG instance is
/// marked in use at once, so that the pod's next container or the session's next pod does not
/// get it too (Volcano marks it only when it next reads the pod's annotation).
fn try_add(gpu: &mut Gpu, memory: u32, cores: u32, mig: bool, factor: u32) -> Option<String> {
    if !mig {
        gpu.take(memory, cores);
        return Some(gpu.uuid.clone());
    }
    let request = if factor > 1 {
        memory.saturating_mul(factor)
    } else {
        memory
    };
    let (id, _) = mig::find(&gpu.uuid, request, &gpu.mig_usage, &gpu.mig_geometries)?;
    let (g, position) = mig::decode_id(&id)?;
    let mut held = mig::add_used(&mut gpu.mig_usage, &gpu.mig_geometries, g, position);
    if factor > 1 {
        held /= factor;
    }
    gpu.take(held, cores);
    Some(id)
}

/// The memory (MiB) the container takes on this card, or `None` when the card cannot take it.
fn card_accepts(pod: &Pod, gpu: &Gpu, req: ContainerRequest, group: &str) -> Option<u32> {
    if gpu.number <= gpu.used_num {
        return None;
    }
    if gpu.has_group(group) {
        return None;
    }
    let memory = if req.memory_percentage != request::NO_PERCENTAGE {
        (f64::from(gpu.memory) * f64::from(req.memory_percentage) / 100.0) as u32
    } else {
        req.memory.max(0) as u32
    };
    if i64::from(gpu.memory) - i64::from(gpu.used_mem) < i64::from(memory) {
        return None;
    }
    let cores = i64::from(req.cores);
    if i64::from(gpu.used_cores) + cores > 100 {
        return None;
    }
    // A container wanting the whole compute takes a card no one uses; a card whose compute is
    // all taken takes no container that asks none.
    if cores == 100 && gpu.used_num > 0 {
        return None;
    }
    if gpu.used_cores == 100 && cores == 0 {
        return None;
    }
    if !gpu.card_type.contains(NVIDIA) || !request::type_accepted(pod, &gpu.card_type) {
        return None;
    }
    Some(memory)
}

/// A chosen card's score, taken after the container is on it (`GPUScore`): so under spread a
/// card scores only when it is unused even with the container, i.e. never for HAMi-core, as in
/// Volcano.
fn card_score(policy: Policy, gpu: &Gpu) -> f64 {
    match policy {
        Policy::Binpack if gpu.memory > 0 => {
            100.0 * f64::from(gpu.used_mem) / f64::from(gpu.memory)
        }
        Policy::Spread if gpu.used_num == 0 => 100.0,
        _ => 0.0,
    }
}

/// Go's `strconv.ParseBool`; anything else is false.
fn parse_go_bool(s: &str) -> bool {
    matches!(s, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

/// The node's cards for the `volcano_vgpu_device_*` gauges; pods by name (`uid → name`).
pub fn card_metrics(
    gpus: &Gpus,
    names: &std::collections::HashMap<String, String>,
) -> Vec<engine::framework::VgpuCard> {
    gpus.cards
        .values()
        .map(|g| engine::framework::VgpuCard {
            node: gpus.node.clone(),
            uuid: g.uuid.clone(),
            memory: g.memory.into(),
            shared: g.used_num.into(),
            used_memory: g.used_mem.into(),
            used_cores: g.used_cores.into(),
            pods: g
                .pods
                .iter()
                .map(|(uid, u)| {
                    let name = names.get(uid).cloned().unwrap_or_else(|| uid.clone());
                    (name, u.memory.into(), u.cores.into())
                })
                .collect(),
        })
        .collect()
}

/// The annotation value for a pod's cards (`encodePodDevices`).
pub fn encode_pod_cards(cards: &PodCards) -> String {
    cards
        .iter()
        .map(|container| {
            container
                .iter()
                .map(|a| format!("{},{},{},{}:", a.uuid, a.card_type, a.memory, a.cores))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Reads `volcano.sh/vgpu-ids-new` (`DecodePodDevices`); entries with fewer than four fields
/// or unreadable numbers are skipped.
pub fn decode_pod_cards(value: &str) -> PodCards {
    if value.is_empty() {
        return Vec::new();
    }
    value
        .split(';')
        .map(|container| {
            container
                .split(':')
                .filter(|e| e.contains(','))
                .filter_map(|e| {
                    let f: Vec<&str> = e.split(',').collect();
                    if f.len() < 4 {
                        return None;
                    }
                    Some(Assigned {
                        uuid: f[0].to_string(),
                        card_type: f[1].to_string(),
                        memory: f[2].parse().ok()?,
                        cores: f[3].parse().ok()?,
                    })
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests;
