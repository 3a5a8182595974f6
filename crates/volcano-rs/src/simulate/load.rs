//! Reading the simulated cluster: files of ordinary Kubernetes objects → [`SimInput`].
//!
//! A file holds YAML documents separated by `---`, or JSON (one or more values), as
//! `kubectl get -o yaml|json` prints them; `kind: List` (and typed lists such as `PodList`,
//! whose items may omit `kind`) are unpacked. The kinds the scheduler watches are kept, other
//! kinds are skipped with a warning. A malformed object is an error naming the file, the
//! document, the object and the offending field.
//!
//! Objects are taken as they are, status included: a ResourceQuota counts through its
//! `status.hard`/`status.used`, as Volcano reads it. What the API server would add on creation
//! is added later, by the simulated cluster.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use apis::{PodGroup, Queue};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ResourceQuota,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::SimError;
use super::decode::decode;

/// The objects of a simulated cluster, in the order they were read.
#[derive(Clone, Debug, Default)]
pub struct SimInput {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pod_groups: Vec<PodGroup>,
    pub queues: Vec<Queue>,
    pub priority_classes: Vec<PriorityClass>,
    pub pod_disruption_budgets: Vec<PodDisruptionBudget>,
    pub resource_quotas: Vec<ResourceQuota>,
    pub namespaces: Vec<Namespace>,
    pub claims: Vec<PersistentVolumeClaim>,
    pub volumes: Vec<PersistentVolume>,
    pub storage_classes: Vec<StorageClass>,
    pub csi_nodes: Vec<CSINode>,
    pub hyper_nodes: Vec<apis::HyperNode>,
    pub numatopologies: Vec<apis::Numatopology>,
    /// ConfigMaps: the one `deviceshare`'s vGPU device names holds its device configuration.
    pub config_maps: Vec<ConfigMap>,
    /// The scheduler configuration a daemon's `/debug/state` dump carries
    /// (`kind: SchedulerConfiguration`): its location and text. Used when no
    /// `--scheduler-conf` is given.
    pub scheduler_conf: Option<(String, String)>,
    /// Node load for the `usage` plugin (`kind: NodeUsage`), in the order read.
    pub node_usage: Vec<cluster::dump::NodeUsageDocument>,
    /// Problems that did not stop the load (skipped kinds, duplicates), one line each.
    pub warnings: Vec<String>,
    /// (kind, namespace/name) of every object read, to report duplicates.
    seen: BTreeSet<(Kind, String)>,
}

/// The kinds the simulator reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Node,
    Pod,
    PodGroup,
    Queue,
    PriorityClass,
    PodDisruptionBudget,
    ResourceQuota,
    Namespace,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    HyperNode,
    Numatopology,
    ConfigMap,
}

impl Kind {
    const ALL: [Kind; 15] = [
        Kind::Node,
        Kind::Pod,
        Kind::PodGroup,
        Kind::Queue,
        Kind::PriorityClass,
        Kind::PodDisruptionBudget,
        Kind::ResourceQuota,
        Kind::Namespace,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::StorageClass,
        Kind::CSINode,
        Kind::HyperNode,
        Kind::Numatopology,
        Kind::ConfigMap,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::PodGroup => "PodGroup",
            Kind::Queue => "Queue",
            Kind::PriorityClass => "PriorityClass",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::ResourceQuota => "ResourceQuota",
            Kind::Namespace => "Namespace",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::StorageClass => "StorageClass",
            Kind::CSINode => "CSINode",
            Kind::HyperNode => "HyperNode",
            Kind::Numatopology => "Numatopology",
            Kind::ConfigMap => "ConfigMap",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Kind::Node
            | Kind::Pod
            | Kind::ResourceQuota
            | Kind::Namespace
            | Kind::PersistentVolumeClaim
            | Kind::PersistentVolume
            | Kind::ConfigMap => "v1",
            Kind::StorageClass | Kind::CSINode => "storage.k8s.io/v1",
            Kind::PodGroup | Kind::Queue => apis::API_VERSION,
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::HyperNode => apis::topology::TOPOLOGY_API_VERSION,
            Kind::Numatopology => apis::nodeinfo::NODEINFO_API_VERSION,
        }
    }

    fn namespaced(self) -> bool {
        matches!(
            self,
            Kind::Pod
                | Kind::PodGroup
                | Kind::PodDisruptionBudget
                | Kind::ResourceQuota
                | Kind::PersistentVolumeClaim
                | Kind::ConfigMap
        )
    }

    fn from_name(kind: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == kind)
    }
}

impl SimInput {
    /// Reads every file in order; `-` reads standard input.
    pub fn from_files<P: AsRef<Path>>(files: &[P]) -> Result<SimInput, SimError> {
        let mut input = SimInput::default();
        for file in files {
            let file = file.as_ref();
            if file == Path::new("-") {
                input.add_reader("<stdin>", std::io::stdin().lock())?;
            } else {
                let name = file.display().to_string();
                let text = std::fs::read_to_string(file).map_err(|e| SimError::Io {
                    file: name.clone(),
                    message: e.to_string(),
                })?;
                input.add_str(&name, &text)?;
            }
        }
        Ok(input)
    }

    /// Reads all of `reader` as one file called `name` (used for standard input).
    pub fn add_reader(&mut self, name: &str, mut reader: impl Read) -> Result<(), SimError> {
        let mut text = String::new();
        reader.read_to_string(&mut text).map_err(|e| SimError::Io {
            file: name.to_string(),
            message: e.to_string(),
        })?;
        self.add_str(name, &text)
    }

    /// Adds the objects of one file's text; `name` is used in messages.
    pub fn add_str(&mut self, name: &str, text: &str) -> Result<(), SimError> {
        for (index, document) in documents(name, text)?.into_iter().enumerate() {
            let location = format!("document {}", index + 1);
            self.add_value(name, &location, &document, None)?;
        }
        Ok(())
    }

    /// Number of distinct objects read (a redefinition counts once).
    pub fn object_count(&self) -> usize {
        self.seen.len()
    }

    fn add_value(
        &mut self,
        file: &str,
        location: &str,
        value: &Value,
        inferred_kind: Option<&str>,
    ) -> Result<(), SimError> {
        let input_error = |location: String, message: String| SimError::Input {
            file: file.to_string(),
            location,
            message,
        };
        let object = match value {
            // An empty document (a stray `---`, a trailing separator).
            Value::Null => return Ok(()),
            // A bare JSON array of objects reads like a List.
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.add_value(file, &format!("{location}, [{i}]"), item, inferred_kind)?;
                }
                return Ok(());
            }
            Value::Object(object) => object,
            other => {
                return Err(input_error(
                    location.to_string(),
                    format!(
                        "expected a Kubernetes object (a mapping), found {}",
                        json_type(other)
                    ),
                ));
            }
        };
        let kind = match object.get("kind") {
            Some(Value::String(kind)) => kind.as_str(),
            None | Some(Value::Null) => match inferred_kind {
                Some(kind) => kind,
                None => {
                    return Err(input_error(
                        location.to_string(),
                        "missing field `kind`".to_string(),
                    ));
                }
            },
            Some(other) => {
                return Err(input_error(
                    location.to_string(),
                    format!("kind: expected a string, found {}", json_type(other)),
                ));
            }
        };
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");

        if kind.ends_with("List") && (kind == "List" || object.contains_key("items")) {
            return self.add_list(file, location, kind, object.get("items"));
        }

        let name = object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let namespace = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default");

        if api_version == cluster::dump::CONF_API_VERSION
            && self.add_dump_document(file, location, kind, name, value)?
        {
            return Ok(());
        }
        let Some(known) = Kind::from_name(kind) else {
            let what = describe(kind, api_version, name);
            self.warnings.push(format!(
                "{file}: {location} ({what}): kind {kind} is not simulated; skipped"
            ));
            return Ok(());
        };
        if !api_version.is_empty() && api_version != known.api_version() {
            let what = describe(kind, api_version, name);
            self.warnings.push(format!(
                "{file}: {location} ({what}): only {} {kind} is simulated; skipped",
                known.api_version()
            ));
            return Ok(());
        }

        let key = if known.namespaced() {
            format!("{namespace}/{name}")
        } else {
            name.to_string()
        };
        if name.is_empty() {
            return Err(input_error(
                format!("{location} ({kind} {key})"),
                "metadata.name: missing or empty".to_string(),
            ));
        }
        self.add_known(file, location, known, key, value)
    }

    /// The items of a `List` (or `<Kind>List`), each read as an object of the item kind.
    fn add_list(
        &mut self,
        file: &str,
        location: &str,
        kind: &str,
        items: Option<&Value>,
    ) -> Result<(), SimError> {
        let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
        match items {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    self.add_value(file, &format!("{location}, items[{i}]"), item, item_kind)?;
                }
                Ok(())
            }
            Some(other) => Err(SimError::Input {
                file: file.to_string(),
                location: location.to_string(),
                message: format!("items: expected a list, found {}", json_type(other)),
            }),
        }
    }

    /// The documents a state dump adds beside the objects: the configuration in force and the
    /// node load. `Ok(false)` when the object is neither.
    fn add_dump_document(
        &mut self,
        file: &str,
        location: &str,
        kind: &str,
        name: &str,
        value: &Value,
    ) -> Result<bool, SimError> {
        let input_error = |location: String, message: String| SimError::Input {
            file: file.to_string(),
            location,
            message,
        };
        if kind == cluster::dump::CONF_KIND {
            let Some(text) = value.get("conf").and_then(Value::as_str) else {
                return Err(input_error(
                    location.to_string(),
                    "conf: expected the configuration as a string".to_string(),
                ));
            };
            let located = format!("{file}: {location} ({kind})");
            if self.scheduler_conf.is_some() {
                self.warnings.push(format!(
                    "{located}: a second scheduler configuration; the later one is used"
                ));
            }
            self.scheduler_conf = Some((located, text.to_string()));
            return Ok(true);
        }
        if kind == cluster::dump::NODE_USAGE_KIND {
            let doc: cluster::dump::NodeUsageDocument = serde_json::from_value(value.clone())
                .map_err(|e| input_error(format!("{location} ({kind} {name})"), e.to_string()))?;
            if !(doc.cpu.is_finite() && doc.memory.is_finite()) {
                return Err(input_error(
                    format!("{location} ({kind} {name})"),
                    "cpu, memory: expected finite percentages".to_string(),
                ));
            }
            self.node_usage.push(doc);
            return Ok(true);
        }
        Ok(false)
    }

    /// One object of a simulated kind, decoded into its type.
    fn add_known(
        &mut self,
        file: &str,
        location: &str,
        known: Kind,
        key: String,
        value: &Value,
    ) -> Result<(), SimError> {
        let kind = known.name();
        let located = format!("{location} ({kind} {key})");
        let fail = |message: String| SimError::Input {
            file: file.to_string(),
            location: located.clone(),
            message,
        };
        match known {
            Kind::Node => self.nodes.push(typed(value, known, &fail)?),
            Kind::Pod => self.pods.push(typed(value, known, &fail)?),
            Kind::PodGroup => self.pod_groups.push(typed(value, known, &fail)?),
            Kind::Queue => self.queues.push(typed(value, known, &fail)?),
            Kind::PriorityClass => self.priority_classes.push(typed(value, known, &fail)?),
            Kind::PodDisruptionBudget => {
                self.pod_disruption_budgets
                    .push(typed(value, known, &fail)?);
            }
            Kind::ResourceQuota => {
                let quota: ResourceQuota = typed(value, known, &fail)?;
                // Volcano reads the status, which the quota controller writes from the spec.
                let has_status = quota.status.as_ref().is_some_and(|s| s.hard.is_some());
                let has_spec = quota.spec.as_ref().is_some_and(|s| s.hard.is_some());
                if has_spec && !has_status {
                    self.warnings.push(format!(
                        "{file}: {located}: no status.hard; the scheduler reads the quota's \
                         status (written by the quota controller), so it limits nothing here"
                    ));
                }
                self.resource_quotas.push(quota);
            }
            Kind::Namespace => self.namespaces.push(typed(value, known, &fail)?),
            Kind::PersistentVolumeClaim => self.claims.push(typed(value, known, &fail)?),
            Kind::PersistentVolume => self.volumes.push(typed(value, known, &fail)?),
            Kind::StorageClass => self.storage_classes.push(typed(value, known, &fail)?),
            Kind::CSINode => self.csi_nodes.push(typed(value, known, &fail)?),
            Kind::HyperNode => self.hyper_nodes.push(typed(value, known, &fail)?),
            Kind::Numatopology => self.numatopologies.push(typed(value, known, &fail)?),
            Kind::ConfigMap => self.config_maps.push(typed(value, known, &fail)?),
        }
        if !self.seen.insert((known, key)) {
            self.warnings.push(format!(
                "{file}: {located}: defined more than once; the later definition replaces the earlier one"
            ));
        }
        Ok(())
    }
}

/// An object with metadata, so that the namespace can be defaulted after decoding.
trait HasMeta {
    fn meta_mut(&mut self) -> &mut ObjectMeta;
}

macro_rules! has_meta {
    ($($t:ty),*) => {
        $(impl HasMeta for $t {
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        })*
    };
}
has_meta!(
    Node,
    Pod,
    PodGroup,
    Queue,
    PriorityClass,
    PodDisruptionBudget,
    ResourceQuota,
    Namespace,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    apis::HyperNode,
    apis::Numatopology,
    ConfigMap
);

/// Decodes one object and gives a namespaced object without a namespace the `default` one,
/// where `kubectl create` would put it.
fn typed<T: DeserializeOwned + HasMeta>(
    value: &Value,
    kind: Kind,
    fail: &dyn Fn(String) -> SimError,
) -> Result<T, SimError> {
    let mut object: T = decode(value).map_err(|e| fail(e.to_string()))?;
    let meta = object.meta_mut();
    if kind.namespaced() && meta.namespace.as_deref().is_none_or(str::is_empty) {
        meta.namespace = Some("default".to_string());
    }
    Ok(object)
}

fn describe(kind: &str, api_version: &str, name: &str) -> String {
    let mut out = String::new();
    if !api_version.is_empty() {
        out.push_str(api_version);
        out.push(' ');
    }
    out.push_str(kind);
    if !name.is_empty() {
        out.push(' ');
        out.push_str(name);
    }
    out
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Splits a file into its documents. Text that starts like JSON is read as a stream of JSON
/// values (falling back to YAML, which also covers flow-style YAML); anything else as YAML.
fn documents(file: &str, text: &str) -> Result<Vec<Value>, SimError> {
    let looks_like_json = text.trim_start().starts_with(['{', '[']);
    if looks_like_json {
        let json: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect();
        match json {
            Ok(values) => return Ok(values),
            Err(json_error) => {
                // Flow-style YAML also starts with `{`; report the JSON error only when the
                // text is no YAML either.
                return yaml_documents(file, text).map_err(|_| SimError::Input {
                    file: file.to_string(),
                    location: "document 1".to_string(),
                    message: format!("invalid JSON: {json_error}"),
                });
            }
        }
    }
    yaml_documents(file, text)
}

/// Reads every document of a YAML stream; empty documents are skipped. Only `true` and `false`
/// are booleans: kubectl reads a plain `n` or `on` in a string field (a name, a label) as text,
/// and every boolean field of these objects is written `true` or `false`.
fn yaml_documents(file: &str, text: &str) -> Result<Vec<Value>, SimError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
    };
    let mut reader = text.as_bytes();
    let mut out = Vec::new();
    for document in serde_saphyr::read_with_options::<_, Value>(&mut reader, options) {
        let value = document.map_err(|e| SimError::Input {
            file: file.to_string(),
            location: format!("document {}", out.len() + 1),
            message: format!("invalid YAML: {e}"),
        })?;
        out.push(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<SimInput, SimError> {
        let mut input = SimInput::default();
        input.add_str("cluster.yaml", text)?;
        Ok(input)
    }

    const MULTI_DOC: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: ns}
spec:
  schedulerName: volcano-rs
  containers: [{name: c, resources: {requests: {cpu: 1}}}]
---
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 2, queue: q1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec: {weight: 3}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: ns}
spec: {minAvailable: 1}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq, namespace: ns}
status: {hard: {cpu: "10"}, used: {cpu: "2"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
"#;

    #[test]
    fn hyper_nodes_are_read() {
        let input = load(
            "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: s0}\n\
             spec: {tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: '^n'}}}]}\n",
        )
        .expect("hypernode");
        assert_eq!(input.hyper_nodes.len(), 1);
        assert_eq!(input.hyper_nodes[0].spec.tier, 1);
        assert!(input.warnings.is_empty(), "{:?}", input.warnings);
    }

    #[test]
    fn storage_objects_are_read() {
        let input = load(
            "kind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {storageClassName: local}\n---\n\
             kind: PersistentVolume\nmetadata: {name: pv1}\nspec: {capacity: {storage: 1Gi}}\n---\n\
             apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\n\
             provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n---\n\
             apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\n\
             spec: {drivers: [{name: ebs.csi.aws.com, nodeID: n1, allocatable: {count: 2}}]}\n",
        )
        .expect("storage objects");
        assert_eq!(
            input.claims[0].metadata.namespace.as_deref(),
            Some("default")
        );
        assert_eq!(input.volumes.len(), 1);
        assert_eq!(
            input.storage_classes[0].volume_binding_mode.as_deref(),
            Some("WaitForFirstConsumer")
        );
        assert_eq!(input.csi_nodes[0].spec.drivers.len(), 1);
        assert!(input.warnings.is_empty(), "{:?}", input.warnings);
        let err = load("apiVersion: storage.k8s.io/v1beta1\nkind: CSINode\nmetadata: {name: n1}\n");
        assert!(err.expect("skipped").warnings[0].contains("only storage.k8s.io/v1 CSINode"));
    }

    #[test]
    fn multi_document_yaml_reads_every_kind() {
        let input = load(MULTI_DOC).expect("valid input");
        assert_eq!(input.nodes.len(), 1);
        assert_eq!(input.pods.len(), 1);
        assert_eq!(input.pod_groups.len(), 1);
        assert_eq!(input.queues.len(), 1);
        assert_eq!(input.priority_classes.len(), 1);
        assert_eq!(input.pod_disruption_budgets.len(), 1);
        assert_eq!(input.resource_quotas.len(), 1);
        assert_eq!(input.namespaces.len(), 1);
        assert_eq!(input.object_count(), 8);
        assert!(input.warnings.is_empty(), "{:?}", input.warnings);
        // A namespaced object without a namespace lands in `default`.
        assert_eq!(
            input.pod_groups[0].metadata.namespace.as_deref(),
            Some("default")
        );
        assert_eq!(input.queues[0].spec.weight, 3);
        let rq = input.resource_quotas[0]
            .status
            .as_ref()
            .expect("status kept");
        assert_eq!(rq.used.as_ref().expect("used")["cpu"].0, "2");
    }

    #[test]
    fn kind_list_and_typed_lists_are_unpacked() {
        let input = load(
            r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}}
- {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: x}, spec: {containers: []}}
---
apiVersion: v1
kind: PodList
items:
- {metadata: {name: q}, spec: {containers: []}}
"#,
        )
        .expect("valid lists");
        let nodes: Vec<_> = input
            .nodes
            .iter()
            .map(|n| n.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(nodes, ["n1", "n2"]);
        assert_eq!(input.pods.len(), 2);
        assert_eq!(input.pods[1].metadata.name.as_deref(), Some("q"));
    }

    #[test]
    fn json_documents_and_json_lists() {
        let input = load(
            r#"{"apiVersion": "v1", "kind": "List", "items": [
                 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]}
               {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}"#,
        )
        .expect("valid JSON stream");
        assert_eq!(input.nodes.len(), 2);
        // Flow-style YAML starting with a brace still reads as YAML.
        let input = load("{kind: Node, metadata: {name: n3}}").expect("flow YAML");
        assert_eq!(input.nodes.len(), 1);
    }

    #[test]
    fn unknown_kinds_and_versions_are_skipped_with_a_warning() {
        let input = load(
            r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: old}
---
kind: Node
metadata: {name: n1}
"#,
        )
        .expect("warnings only");
        assert_eq!(input.nodes.len(), 1);
        assert!(input.pod_disruption_budgets.is_empty());
        assert_eq!(input.warnings.len(), 2, "{:?}", input.warnings);
        assert_eq!(
            input.warnings[0],
            "cluster.yaml: document 1 (apps/v1 Deployment web): kind Deployment is not simulated; skipped"
        );
        assert!(
            input.warnings[1].contains("document 2") && input.warnings[1].contains("policy/v1")
        );
    }

    #[test]
    fn a_quota_without_status_is_reported() {
        let input = load("kind: ResourceQuota\nmetadata: {name: rq, namespace: ns}\nspec: {hard: {cpu: \"4\"}}\n")
            .expect("valid");
        assert_eq!(input.resource_quotas.len(), 1);
        assert_eq!(input.warnings.len(), 1, "{:?}", input.warnings);
        assert!(
            input.warnings[0].contains("(ResourceQuota ns/rq): no status.hard"),
            "{:?}",
            input.warnings
        );
    }

    #[test]
    fn duplicates_are_reported() {
        let input =
            load("kind: Node\nmetadata: {name: n1}\n---\nkind: Node\nmetadata: {name: n1}\n")
                .expect("ok");
        assert_eq!(input.nodes.len(), 2);
        assert_eq!(input.warnings.len(), 1);
        assert!(input.warnings[0].contains("document 2 (Node n1): defined more than once"));
    }

    #[test]
    fn malformed_object_names_file_document_object_and_field() {
        let err = load(
            r#"
kind: Node
metadata: {name: n1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: four}
"#,
        )
        .expect_err("minMember must be a number");
        let text = err.to_string();
        assert!(
            text.starts_with("cluster.yaml: document 2 (PodGroup ns/pg): spec.minMember: invalid type: string \"four\""),
            "{text}"
        );

        let err = load("apiVersion: v1\nkind: List\nitems:\n- {kind: Node, metadata: {name: n}}\n- {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: [cpu]}}]}}\n")
            .expect_err("requests must be a map");
        assert_eq!(
            err.to_string(),
            "cluster.yaml: document 1, items[1] (Pod default/p): spec.containers[0].resources.requests: invalid type: sequence, expected a map"
        );
    }

    #[test]
    fn structural_errors() {
        let err = load("metadata: {name: x}\n").expect_err("no kind");
        assert_eq!(
            err.to_string(),
            "cluster.yaml: document 1: missing field `kind`"
        );
        let err = load("- 1\n- 2\n").expect_err("not objects");
        assert!(
            err.to_string()
                .contains("document 1, [0]: expected a Kubernetes object"),
            "{err}"
        );
        let err = load("kind: Pod\nmetadata: {namespace: ns}\n").expect_err("no name");
        assert_eq!(
            err.to_string(),
            "cluster.yaml: document 1 (Pod ns/): metadata.name: missing or empty"
        );
        let err = load("kind: Node\nmetadata: {name: a}\n---\nkind: [\n").expect_err("bad YAML");
        assert!(
            err.to_string()
                .starts_with("cluster.yaml: document 2: invalid YAML:"),
            "{err}"
        );
        let err = load("{\"kind\": \"Node\", ").expect_err("bad JSON");
        assert!(
            err.to_string()
                .starts_with("cluster.yaml: document 1: invalid JSON:"),
            "{err}"
        );
    }

    #[test]
    fn reader_input_and_io_errors() {
        let mut input = SimInput::default();
        let stdin = std::io::Cursor::new(b"kind: Node\nmetadata: {name: n1}\n".to_vec());
        input.add_reader("<stdin>", stdin).expect("reader");
        assert_eq!(input.nodes.len(), 1);

        let err = input
            .add_reader("<stdin>", std::io::Cursor::new(vec![0xff, 0xfe]))
            .expect_err("not UTF-8");
        assert!(
            matches!(err, SimError::Io { ref file, .. } if file == "<stdin>"),
            "{err}"
        );

        let err = SimInput::from_files(&["/nonexistent/cluster.yaml"]).expect_err("missing file");
        assert!(
            err.to_string().starts_with("/nonexistent/cluster.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn empty_input_is_fine() {
        let input = load("").expect("empty");
        assert_eq!(input.object_count(), 0);
        let input = load("---\n---\n").expect("only separators");
        assert_eq!(input.object_count(), 0);
    }
}
