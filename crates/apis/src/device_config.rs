//! Volcano's device configuration (`pkg/scheduler/api/devices/config`): the YAML under the key
//! `device-config.yaml` of the ConfigMap `deviceshare.KnownGeometriesCMName` (default
//! `volcano-vgpu-device-config`) in `deviceshare.KnownGeometriesCMNamespace` (default
//! `kube-system`), which the vGPU device plugin's deployment ships. Only its `nvidia` section is
//! read here; Volcano's Ascend sections are ignored.

use serde::Deserialize;

/// Default ConfigMap name and namespace, and the data key that holds the YAML.
pub const DEFAULT_NAME: &str = "volcano-vgpu-device-config";
pub const DEFAULT_NAMESPACE: &str = "kube-system";
pub const DATA_KEY: &str = "device-config.yaml";

/// The whole document.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct DeviceConfig {
    /// A document without the section reads as Go's zero value, as in Volcano.
    #[serde(default)]
    pub nvidia: NvidiaConfig,
}

/// The NVIDIA section. Absent keys are empty or zero, as Go's YAML decoder leaves them: a loaded
/// configuration replaces the defaults wholesale.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct NvidiaConfig {
    pub resource_count_name: String,
    pub resource_memory_name: String,
    pub resource_core_name: String,
    pub resource_memory_percentage_name: String,
    /// MIG memory is `request × factor` when above 1.
    pub gpu_memory_factor: u32,
    pub known_mig_geometries: Vec<AllowedMigGeometries>,
}

/// The MIG layouts allowed for card models whose type contains one of `models`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct AllowedMigGeometries {
    pub models: Vec<String>,
    pub allowed_geometries: Vec<Geometry>,
}

/// One way to split a card: a named group of instance kinds.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Geometry {
    pub group: String,
    #[serde(rename = "geometries")]
    pub instances: Vec<MigTemplate>,
}

/// `count` instances of `memory` MiB each.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct MigTemplate {
    pub name: String,
    pub memory: u32,
    pub count: u32,
}

impl DeviceConfig {
    /// Volcano's defaults, used when no ConfigMap could be read (`GetDefaultDevicesConfig`).
    pub fn defaults() -> DeviceConfig {
        DeviceConfig {
            nvidia: NvidiaConfig {
                resource_count_name: "volcano.sh/vgpu-number".into(),
                resource_memory_name: "volcano.sh/vgpu-memory".into(),
                resource_core_name: "volcano.sh/vgpu-cores".into(),
                resource_memory_percentage_name: String::new(),
                gpu_memory_factor: 0,
                known_mig_geometries: Vec::new(),
            },
        }
    }

    /// Reads the YAML document of the ConfigMap's `device-config.yaml`.
    pub fn parse(yaml: &str) -> Result<DeviceConfig, String> {
        serde_saphyr::from_str(yaml).map_err(|e| e.to_string())
    }

    /// The MIG geometries of the first entry one of whose models the card type contains
    /// (`extractGeometryFromType`).
    pub fn geometries_of(&self, card_type: &str) -> Option<&[Geometry]> {
        self.nvidia
            .known_mig_geometries
            .iter()
            .find(|g| g.models.iter().any(|m| card_type.contains(m.as_str())))
            .map(|g| g.allowed_geometries.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_document_is_read() {
        // The shape of Volcano's TestParseDeviceConfig document (two models shown).
        let yaml = "nvidia:
  resourceCountName: volcano.sh/vgpu-number
  resourceMemoryName: volcano.sh/vgpu-memory
  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage
  resourceCoreName: volcano.sh/vgpu-cores
  overwriteEnv: false
  defaultMemory: 0
  deviceSplitCount: 10
  deviceMemoryScaling: 1
  gpuMemoryFactor: 1
  knownMigGeometries:
  - models: [ \"A30\" ]
    allowedGeometries:
      - group: group1
        geometries:
        - name: 1g.6gb
          memory: 6144
          count: 4
  - models: [ \"A100-SXM4-80GB\", \"A100-80GB-PCIe\" ]
    allowedGeometries:
      - group: \"group2\"
        geometries:
        - name: 2g.20gb
          memory: 20480
          count: 3
        - name: 1g.10gb
          memory: 10240
          count: 1
vnpus:
- chipName: 310P3
";
        let c = DeviceConfig::parse(yaml).expect("valid");
        assert_eq!(c.nvidia.resource_count_name, "volcano.sh/vgpu-number");
        assert_eq!(
            c.nvidia.resource_memory_percentage_name,
            "volcano.sh/vgpu-memory-percentage"
        );
        assert_eq!(c.nvidia.gpu_memory_factor, 1);
        let a100 = c.geometries_of("NVIDIA-A100-SXM4-80GB").expect("known");
        assert_eq!(a100[0].group, "group2");
        assert_eq!(
            a100[0].instances[1],
            MigTemplate {
                name: "1g.10gb".into(),
                memory: 10240,
                count: 1
            }
        );
        assert!(c.geometries_of("NVIDIA-Tesla T4").is_none());
    }

    #[test]
    fn absent_keys_are_empty_as_in_go() {
        let c = DeviceConfig::parse("nvidia:\n  gpuMemoryFactor: 2\n").expect("valid");
        assert_eq!(c.nvidia.resource_count_name, "");
        assert_eq!(c.nvidia.gpu_memory_factor, 2);
        assert!(DeviceConfig::parse("nvidia: [1, 2]").is_err());
    }
}
