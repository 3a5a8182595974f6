//! The vGPU device's MIG mode (Volcano's `pkg/scheduler/api/devices/nvidia/vgpu/mig.go`): a card
//! registered as `mig` whose model the device configuration knows is split by one of its
//! geometries (a group of instance kinds, each `count` instances of `memory` MiB). The first pod
//! on the card fixes the group; a container gets the smallest instance kind that holds its
//! memory and has an instance free. The instance is named `uuid[group-position]`, the position
//! counting the instances of the kinds listed before it in the group.

use apis::device_config::{Geometry, MigTemplate};

/// The instances of one kind in use on a card (`MigTemplateUsage`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindUsage {
    pub name: String,
    pub memory: u32,
    /// Indices within the kind, ascending.
    pub used: Vec<u32>,
}

/// What a MIG card has in use (`MigInUse`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigUsage {
    /// The geometry the card was split by, once a pod used it (Volcano never clears it).
    pub group: Option<usize>,
    pub kinds: Vec<KindUsage>,
}

/// `uuid[group-position]`.
pub fn encode_id(uuid: &str, group: &str, position: u32) -> String {
    format!("{uuid}[{group}-{position}]")
}

/// The group and position of an instance id; `None` when it is not one (`decodeMIGID`: the
/// bracket must hold exactly one `-`).
pub fn decode_id(id: &str) -> Option<(&str, u32)> {
    let start = id.find('[')?;
    let end = id.find(']')?;
    if start > end {
        return None;
    }
    let mut parts = id[start + 1..end].split('-');
    let (group, position, rest) = (parts.next()?, parts.next()?, parts.next());
    if rest.is_some() {
        return None;
    }
    Some((group, position.parse().ok()?))
}

/// The position of the first free instance of kind `index` (`getPosition`).
fn position(group: &Geometry, index: usize, used: &[u32]) -> u32 {
    // Saturating: the counts come from the device configuration.
    let before = (group.instances[..index].iter()).fold(0u32, |sum, i| sum.saturating_add(i.count));
    let count = group.instances[index].count;
    before.saturating_add((0..count).find(|i| !used.contains(i)).unwrap_or(0))
}

/// The kind and index within it of a position (`findPosition`).
fn find_position(group: &Geometry, position: u32) -> Option<(usize, u32)> {
    let mut sum = 0u32;
    for (i, kind) in group.instances.iter().enumerate() {
        if position < sum.saturating_add(kind.count) {
            return Some((i, position - sum));
        }
        sum = sum.saturating_add(kind.count);
    }
    None
}

/// The smallest kind of the group that holds `request` MiB with an instance free: its position
/// and memory (`pickFromGroup`). On a card in use only kinds already in use are considered, as
/// in Volcano.
fn pick(group: &Geometry, usage: &[KindUsage], request: u32) -> Option<(u32, u32)> {
    let mut kinds: Vec<usize> = (0..group.instances.len()).collect();
    kinds.sort_by_key(|&i| group.instances[i].memory);
    for i in kinds {
        let kind = &group.instances[i];
        if usage.is_empty() && kind.memory >= request {
            return Some((position(group, i, &[]), kind.memory));
        }
        for used in usage.iter().filter(|u| u.name == kind.name) {
            let free = kind.count as usize > used.used.len();
            if free && kind.memory >= request {
                return Some((position(group, i, &used.used), kind.memory));
            }
        }
    }
    None
}

/// The instance a container of `request` MiB would get on the card: its id and memory
/// (`findMatch`). A card split already uses its group; a fresh card the first group that fits.
pub fn find(
    uuid: &str,
    request: u32,
    usage: &MigUsage,
    geometries: &[Geometry],
) -> Option<(String, u32)> {
    if let Some(g) = usage.group {
        let group = geometries.get(g)?;
        let (position, memory) = pick(group, &usage.kinds, request)?;
        return Some((encode_id(uuid, &group.group, position), memory));
    }
    geometries.iter().find_map(|group| {
        let (position, memory) = pick(group, &[], request)?;
        Some((encode_id(uuid, &group.group, position), memory))
    })
}

/// The kind of the instance at `position` of `group` and its index within the kind; fixes the
/// card's geometry to that group, as Volcano does on every add and sub.
fn locate<'a>(
    usage: &mut MigUsage,
    geometries: &'a [Geometry],
    group: &str,
    position: u32,
) -> Option<(&'a MigTemplate, u32)> {
    let (g, geometry) = geometries
        .iter()
        .enumerate()
        .find(|(_, x)| x.group == group)?;
    usage.group = Some(g);
    let (kind, index) = find_position(geometry, position)?;
    Some((&geometry.instances[kind], index))
}

/// Marks the instance at `position` of `group` in use; its memory, 0 when the group or
/// position is unknown (`addMigUsed`).
pub fn add_used(usage: &mut MigUsage, geometries: &[Geometry], group: &str, position: u32) -> u32 {
    let Some((template, index)) = locate(usage, geometries, group, position) else {
        return 0;
    };
    if let Some(used) = usage.kinds.iter_mut().find(|u| u.name == template.name) {
        if let Err(at) = used.used.binary_search(&index) {
            used.used.insert(at, index);
        }
        return used.memory;
    }
    usage.kinds.push(KindUsage {
        name: template.name.clone(),
        memory: template.memory,
        used: vec![index],
    });
    template.memory
}

/// Frees the instance at `position` of `group`; its memory, 0 when it was not in use
/// (`subMigUsed`).
pub fn sub_used(usage: &mut MigUsage, geometries: &[Geometry], group: &str, position: u32) -> u32 {
    let Some((template, index)) = locate(usage, geometries, group, position) else {
        return 0;
    };
    let Some(at) = usage.kinds.iter().position(|u| u.name == template.name) else {
        return 0;
    };
    let used = &mut usage.kinds[at];
    used.used.retain(|&i| i != index);
    let memory = used.memory;
    if used.used.is_empty() {
        usage.kinds.remove(at);
    }
    memory
}

#[cfg(test)]
mod tests;
