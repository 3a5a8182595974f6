//! The CPU hint provider of the `numa-aware` plugin (spec/plugins-more.md §11, Predicate
//! step 4): NUMA hints for a container's exclusive CPUs and the choice of those CPUs. Follows
//! Volcano's `pkg/scheduler/plugins/numaaware/provider/cpumanager/cpu_mng.go` and
//! `cpu_assignment.go` (a variant of kubelet's static CPU manager `takeByTopology`), including
//! its quirks, which are kept on purpose:
//!
//! * "free sockets" are the socket ids that are also ids of free CPUs, and "free cores" of a
//!   socket are the core ids that are also ids of free CPUs (Volcano's port to the newer
//!   `cpuset` API intersects id sets of different kinds instead of checking whole sockets and
//!   cores);
//! * taking a socket or core takes all its free CPUs, and cores are matched by core id alone
//!   (across sockets), so a take may overshoot the request;
//! * the sort orders are Go's `sort.Slice` with OR-ed comparators, reproduced by running Go's
//!   algorithm (see `go_sort`); the socket list Go gets in map order is taken ascending here;
//! * a CPU in the available set but absent from the details counts as NUMA node 0 for hints.

mod go_sort;

use std::collections::{BTreeMap, BTreeSet};

use super::bitmask::iterate_masks;
use super::cpuset::CpuSet;
use super::policy::TopologyHint;

/// The resource name the provider reports hints and assignments for.
pub const CPU: &str = "cpu";

/// Where one logical CPU sits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    pub numa: u32,
    pub socket: u32,
    pub core: u32,
}

/// The node's CPUs by id (Volcano's `topology.CPUDetails` from the Numatopology CRD).
pub type CpuDetails = BTreeMap<u32, CpuInfo>;

/// Volcano's `guaranteedCPUs`: the whole number of CPUs a container requests, or 0 when it
/// requests no CPU or a fractional amount. A negative request (which the API server refuses)
/// also counts as 0.
pub fn guaranteed_cpus(cpu_request_milli: Option<i64>) -> i64 {
    match cpu_request_milli {
        Some(m) if m > 0 && m % 1000 == 0 => m / 1000,
        _ => 0,
    }
}

/// The CPUs Volcano keeps out for the node's reservation: `reserved_cpus` CPUs picked by
/// topology from all the node's CPUs (not only the available ones). `reserved_cpus` is the
/// ceiling of the node's reserved `cpu` quantity (`ResReserved`), 0 when absent. When the node
/// has fewer CPUs than that, nothing is reserved (Volcano ignores the error).
pub fn reserved_set(details: &CpuDetails, reserved_cpus: u32) -> CpuSet {
    let topo = Topology::new(details);
    let all = CpuSet::from_cpus(details.keys().copied());
    take_by_topology(&topo, &all, i64::from(reserved_cpus)).unwrap_or_default()
}

/// Hints for a container asking `cpu_request_milli` (Volcano's `GetTopologyHints`). No request,
/// or not a whole number of CPUs, means no preference: an empty map. Otherwise
/// `{"cpu": Some(hints)}` with, in [`iterate_masks`] order over the node's NUMA ids, one hint per
/// mask whose available CPUs (minus the reserved ones) cover the request; the hints with the
/// fewest NUMA nodes among the masks whose total CPUs (free or not) could cover it are preferred.
/// No fitting mask gives `Some(vec![])`.
///
/// Volcano also answers "no preference" when the node reports no `cpu` entry in its NUMA
/// resources at all; the caller should then use an empty map instead of calling this.
pub fn cpu_hints(
    details: &CpuDetails,
    available: &CpuSet,
    reserved_cpus: u32,
    cpu_request_milli: Option<i64>,
) -> BTreeMap<String, Option<Vec<TopologyHint>>> {
    let request = guaranteed_cpus(cpu_request_milli);
    if request == 0 {
        return BTreeMap::new();
    }
    let available = available.difference(&reserved_set(details, reserved_cpus));
    let hints = generate_hints(details, &available, request);
    BTreeMap::from([(CPU.to_string(), Some(hints))])
}

/// Volcano's `generateCPUTopologyHints`.
fn generate_hints(details: &CpuDetails, available: &CpuSet, request: i64) -> Vec<TopologyHint> {
    let numa_nodes: Vec<u32> = numa_ids(details).into_iter().collect();
    let mut min_width = numa_nodes.len() as u32;
    let mut hints = Vec::new();
    iterate_masks(&numa_nodes, |mask| {
        let in_mask = details.values().filter(|i| mask.is_set(i.numa)).count();
        if in_mask as i64 >= request && mask.count() < min_width {
            min_width = mask.count();
        }
        let free = available
            .iter()
            .filter(|c| mask.is_set(details.get(c).map_or(0, |i| i.numa)))
            .count();
        if free as i64 >= request {
            hints.push(TopologyHint {
                affinity: Some(mask),
                preferred: false,
            });
        }
    });
    for hint in &mut hints {
        hint.preferred = hint.affinity.is_some_and(|m| m.count() == min_width);
    }
    hints
}

/// The CPUs to give a container asking `cpu_request_milli` (Volcano's `Allocate`): first as many
/// as possible from the available CPUs on the hint's NUMA nodes, then the rest from the other
/// available CPUs, each picked by topology; reserved CPUs are never given. Empty when the
/// container asks no whole CPUs, or when there are not enough CPUs (Volcano then still admits
/// the container, with no CPUs assigned). Taking whole sockets or cores may give more CPUs than
/// asked (see the module notes).
pub fn assign_cpus(
    details: &CpuDetails,
    available: &CpuSet,
    reserved_cpus: u32,
    cpu_request_milli: Option<i64>,
    hint: &TopologyHint,
) -> CpuSet {
    let topo = Topology::new(details);
    let request = guaranteed_cpus(cpu_request_milli);
    let available = available.difference(&reserved_set(details, reserved_cpus));
    let mut result = CpuSet::new();
    if let Some(mask) = hint.affinity {
        let aligned: CpuSet = available
            .iter()
            .filter(|c| details.get(c).is_some_and(|i| mask.is_set(i.numa)))
            .collect();
        let want = request.min(aligned.len() as i64);
        match take_by_topology(&topo, &aligned, want) {
            Ok(cpus) => result = cpus,
            Err(()) => return CpuSet::new(),
        }
    }
    let rest = available.difference(&result);
    match take_by_topology(&topo, &rest, request - result.len() as i64) {
        Ok(cpus) => result.union(&cpus),
        Err(()) => CpuSet::new(),
    }
}

/// The NUMA node ids of the CPU details, ascending.
pub fn numa_ids(details: &CpuDetails) -> BTreeSet<u32> {
    details.values().map(|i| i.numa).collect()
}

/// kubelet's `CPUTopology` as Volcano fills it from the details.
struct Topology<'a> {
    details: &'a CpuDetails,
    cpus_per_core: i64,
    cpus_per_socket: i64,
}

impl<'a> Topology<'a> {
    fn new(details: &'a CpuDetails) -> Self {
        let cpus = details.len() as i64;
        // Core ids are only unique within a socket, so cores are counted per (socket, core).
        let cores = details
            .values()
            .map(|i| (i.socket, i.core))
            .collect::<BTreeSet<_>>()
            .len() as i64;
        let sockets = details.values().map(|i| i.socket).collect::<BTreeSet<_>>();
        let per = |n: i64| if n == 0 { 0 } else { cpus / n };
        Topology {
            details,
            cpus_per_core: per(cores),
            cpus_per_socket: per(sockets.len() as i64),
        }
    }
}

/// Volcano's `cpuAccumulator`: the CPUs picked so far and what is still free and needed.
struct Accumulator<'a> {
    topo: &'a Topology<'a>,
    free: CpuDetails,
    needed: i64,
    result: CpuSet,
}

impl Accumulator<'_> {
    fn take(&mut self, cpus: &CpuSet) {
        for cpu in cpus.iter() {
            self.result.insert(cpu);
            self.free.remove(&cpu);
        }
        self.needed -= cpus.len() as i64;
    }

    fn needs(&self, n: i64) -> bool {
        self.needed >= n
    }

    fn is_satisfied(&self) -> bool {
        self.needed < 1
    }

    /// Free CPUs matching `pred`.
    fn free_cpus_where(&self, pred: impl Fn(&CpuInfo) -> bool) -> CpuSet {
        self.free
            .iter()
            .filter(|(_, i)| pred(i))
            .map(|(&c, _)| c)
            .collect()
    }

    /// Socket ids of free CPUs that are also ids of free CPUs, ascending.
    fn free_sockets(&self) -> Vec<u32> {
        let sockets: BTreeSet<u32> = self.free.values().map(|i| i.socket).collect();
        sockets
            .into_iter()
            .filter(|s| self.free.contains_key(s))
            .collect()
    }

    /// Per socket, its core ids that are also ids of free CPUs; sockets ordered as Go's
    /// `sort.Slice` orders them from an ascending start, with "fewer such cores, or lower id".
    fn free_cores(&self) -> Vec<u32> {
        let mut per_socket: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for info in self.free.values() {
            let cores = per_socket.entry(info.socket).or_default();
            if self.free.contains_key(&info.core) {
                cores.insert(info.core);
            }
        }
        let mut sockets: Vec<(u32, usize)> =
            per_socket.iter().map(|(&s, c)| (s, c.len())).collect();
        go_sort::sort_slice(&mut sockets, |i, j| i.1 < j.1 || i.0 < j.0);
        sockets
            .iter()
            .flat_map(|(s, _)| per_socket[s].iter().copied())
            .collect()
    }

    /// Free CPUs core by core, cores ordered as Volcano's `freeCPUs` orders them (Go's
    /// `sort.Slice`, OR-ed criteria, from ascending core ids).
    fn free_cpus(&self) -> Vec<u32> {
        let all = self.topo.details;
        // Per core id: the socket of the lowest CPU of the whole node with that id.
        let mut core_socket: BTreeMap<u32, u32> = BTreeMap::new();
        for info in all.values() {
            core_socket.entry(info.core).or_insert(info.socket);
        }
        let mut taken_on_socket: BTreeMap<u32, usize> = BTreeMap::new();
        for cpu in self.result.iter() {
            if let Some(info) = all.get(&cpu) {
                *taken_on_socket.entry(info.socket).or_default() += 1;
            }
        }
        let mut free_on_socket: BTreeMap<u32, usize> = BTreeMap::new();
        let mut free_on_core: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (&cpu, info) in &self.free {
            *free_on_socket.entry(info.socket).or_default() += 1;
            free_on_core.entry(info.core).or_default().push(cpu);
        }
        let count = |m: &BTreeMap<u32, usize>, k: u32| m.get(&k).copied().unwrap_or(0);
        let mut cores: Vec<CoreRank> = free_on_core
            .iter()
            .map(|(&core, cpus)| {
                let socket = core_socket.get(&core).copied().unwrap_or(0);
                CoreRank {
                    core,
                    socket,
                    taken_on_socket: count(&taken_on_socket, socket),
                    free_on_socket: count(&free_on_socket, socket),
                    free_on_core: cpus.len(),
                }
            })
            .collect();
        go_sort::sort_slice(&mut cores, |i, j| {
            i.taken_on_socket > j.taken_on_socket
                || i.free_on_socket < j.free_on_socket
                || i.free_on_core < j.free_on_core
                || i.socket < j.socket
                || i.core < j.core
        });
        cores
            .iter()
            .flat_map(|r| free_on_core[&r.core].iter().copied())
            .collect()
    }
}

/// The sort keys of one core id in [`Accumulator::free_cpus`].
struct CoreRank {
    core: u32,
    socket: u32,
    taken_on_socket: usize,
    free_on_socket: usize,
    free_on_core: usize,
}

/// Volcano's `takeByTopology`: `num` CPUs out of `available` (restricted to the node's CPUs),
/// by whole "free sockets" while a socket's worth is needed, then whole "free cores" while a
/// core's worth is needed, then single CPUs. `Err` when there are not enough CPUs; `num < 1`
/// gives the empty set.
fn take_by_topology(topo: &Topology, available: &CpuSet, num: i64) -> Result<CpuSet, ()> {
    let mut acc = Accumulator {
        topo,
        free: topo
            .details
            .iter()
            .filter(|(c, _)| available.contains(**c))
            .map(|(&c, &i)| (c, i))
            .collect(),
        needed: num,
        result: CpuSet::new(),
    };
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.needed > acc.free.len() as i64 {
        return Err(());
    }
    if acc.needs(topo.cpus_per_socket) {
        for socket in acc.free_sockets() {
            acc.take(&acc.free_cpus_where(|i| i.socket == socket));
            if acc.is_satisfied() {
                return Ok(acc.result);
            }
            if !acc.needs(topo.cpus_per_socket) {
                break;
            }
        }
    }
    if acc.needs(topo.cpus_per_core) {
        for core in acc.free_cores() {
            acc.take(&acc.free_cpus_where(|i| i.core == core));
            if acc.is_satisfied() {
                return Ok(acc.result);
            }
            if !acc.needs(topo.cpus_per_core) {
                break;
            }
        }
    }
    for cpu in acc.free_cpus() {
        if acc.needs(1) {
            acc.take(&CpuSet::from_cpus([cpu]));
        }
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
    }
    Err(())
}

#[cfg(test)]
mod tests;
