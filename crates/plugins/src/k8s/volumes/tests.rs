use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde_json::{Value, json};

use super::binding::{self, BIND_CONFLICT, NODE_CONFLICT, PV_NOT_EXIST, UNBOUND_IMMEDIATE};
use super::claims::{claim_class, find_matching_volume};
use super::restrictions::{self, DISK_CONFLICT};
use super::zone::{self, NO_VOLUME_ZONE};
use super::{Assumed, Failure, StorageView, limits};

/// Storage objects in memory, for the rules alone.
#[derive(Default)]
struct Storage {
    claims: BTreeMap<String, Arc<PersistentVolumeClaim>>,
    volumes: BTreeMap<String, Arc<PersistentVolume>>,
    classes: BTreeMap<String, Arc<StorageClass>>,
    csi_nodes: BTreeMap<String, Arc<CSINode>>,
}

fn object<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("valid object")
}

impl Storage {
    fn claim(mut self, v: Value) -> Self {
        let c: PersistentVolumeClaim = object(v);
        let key = format!("default/{}", c.metadata.name.clone().unwrap_or_default());
        self.claims.insert(key, Arc::new(c));
        self
    }
    fn volume(mut self, v: Value) -> Self {
        let pv: PersistentVolume = object(v);
        self.volumes
            .insert(pv.metadata.name.clone().unwrap_or_default(), Arc::new(pv));
        self
    }
    fn class(mut self, v: Value) -> Self {
        let c: StorageClass = object(v);
        self.classes
            .insert(c.metadata.name.clone().unwrap_or_default(), Arc::new(c));
        self
    }
    fn csi_node(mut self, v: Value) -> Self {
        let c: CSINode = object(v);
        self.csi_nodes
            .insert(c.metadata.name.clone().unwrap_or_default(), Arc::new(c));
        self
    }
}

impl StorageView for Storage {
    fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        self.claims.get(&format!("{namespace}/{name}"))
    }
    fn volume(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        self.volumes.get(name)
    }
    fn volumes(&self) -> Box<dyn Iterator<Item = &Arc<PersistentVolume>> + '_> {
        Box::new(self.volumes.values())
    }
    fn storage_class(&self, name: &str) -> Option<&Arc<StorageClass>> {
        self.classes.get(name)
    }
    fn csi_node(&self, node: &str) -> Option<&Arc<CSINode>> {
        self.csi_nodes.get(node)
    }
}

fn node(name: &str, labels: Value) -> Node {
    object(json!({"metadata": {"name": name, "labels": labels}}))
}

fn pod_with_claims(name: &str, claims: &[&str]) -> Pod {
    let volumes: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    object(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c"}], "volumes": volumes}
    }))
}

fn wffc_class(name: &str, provisioner: &str) -> Value {
    json!({"metadata": {"name": name}, "provisioner": provisioner,
           "volumeBindingMode": "WaitForFirstConsumer"})
}

fn unbound_claim(name: &str, class: &str, size: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default"},
           "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": size}}}})
}

fn available_volume(name: &str, class: &str, size: &str, host: Option<&str>) -> Value {
    let mut pv = json!({"metadata": {"name": name},
        "spec": {"storageClassName": class, "capacity": {"storage": size},
                 "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": "Available"}});
    if let Some(h) = host {
        pv["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [h]}]}
        ]}});
    }
    pv
}

fn bound_claim(name: &str, volume: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default",
                        "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
           "spec": {"volumeName": volume}})
}

fn host(name: &str) -> Node {
    node(name, json!({"kubernetes.io/hostname": name}))
}

#[test]
fn the_beta_class_annotation_wins_over_the_spec() {
    let claim: PersistentVolumeClaim = object(json!({
        "metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": ""}},
        "spec": {"storageClassName": "fast"}
    }));
    assert_eq!(claim_class(&claim), "");
}

#[test]
fn the_smallest_fitting_volume_is_matched_and_ties_go_by_name() {
    let storage = Storage::default()
        .class(wffc_class("local", "kubernetes.io/no-provisioner"))
        .claim(unbound_claim("data", "local", "1Gi"))
        .volume(available_volume("pv-c", "local", "5Gi", Some("n1")))
        .volume(available_volume("pv-b", "local", "5Gi", Some("n1")))
        .volume(available_volume("pv-a", "local", "10Gi", Some("n1")))
        .volume(available_volume("pv-small", "local", "512Mi", Some("n1")))
        .volume(available_volume(
            "pv-other-node",
            "local",
            "2Gi",
            Some("n2"),
        ));
    let claim = storage.claims["default/data"].clone();
    let labels = BTreeMap::from([("kubernetes.io/hostname".to_owned(), "n1".to_owned())]);
    let pick = |excluded: &BTreeSet<String>, assumed: &Assumed| {
        find_matching_volume(&claim, storage.volumes(), &labels, excluded, assumed)
            .and_then(|v| v.metadata.name.clone())
    };
    assert_eq!(
        pick(&BTreeSet::new(), &Assumed::default()).as_deref(),
        Some("pv-b")
    );
    let excluded = BTreeSet::from(["pv-b".to_owned()]);
    assert_eq!(
        pick(&excluded, &Assumed::default()).as_deref(),
        Some("pv-c")
    );
    // A volume promised to another claim in this session is not offered again.
    let mut assumed = Assumed::default();
    assumed
        .volume_claims
        .insert("pv-b".to_owned(), "default/other".to_owned());
    assert_eq!(pick(&BTreeSet::new(), &assumed).as_deref(), Some("pv-c"));
    // Promised to this claim: that volume or none.
    assumed
        .volume_claims
        .insert("pv-a".to_owned(), "default/data".to_owned());
    assert_eq!(pick(&BTreeSet::new(), &assumed).as_deref(), Some("pv-a"));
}

#[test]
fn volume_binding_reasons_come_in_upstream_order() {
    let storage = Storage::default()
        .class(wffc_class("local", "kubernetes.io/no-provisioner"))
        .volume(
            json!({"metadata": {"name": "pv-pinned"}, "spec": {"nodeAffinity": {"required":
            {"nodeSelectorTerms": [{"matchExpressions":
                [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}}}),
        )
        .claim(bound_claim("bound", "pv-pinned"))
        .claim(unbound_claim("waiting", "local", "1Gi"));
    let pod = pod_with_claims("p", &["bound", "waiting"]);
    let groups = binding::prefilter(&pod, &storage)
        .expect("prefilter")
        .expect("claims");
    let result = binding::filter(&groups, &host("n1"), &storage, &Assumed::default());
    assert_eq!(
        result,
        Err(Failure::Unresolvable(format!(
            "{NODE_CONFLICT}, {BIND_CONFLICT}"
        )))
    );
    let lost = Storage::default().claim(bound_claim("gone", "pv-missing"));
    let pod = pod_with_claims("p", &["gone"]);
    let groups = binding::prefilter(&pod, &lost)
        .expect("ok")
        .expect("claims");
    assert_eq!(
        binding::filter(&groups, &host("n1"), &lost, &Assumed::default()),
        Err(Failure::Unresolvable(PV_NOT_EXIST.to_owned()))
    );
}

#[test]
fn immediate_and_missing_claims_fail_the_prefilter() {
    let storage = Storage::default()
        .class(json!({"metadata": {"name": "now"}, "provisioner": "p", "volumeBindingMode": "Immediate"}))
        .claim(unbound_claim("later", "now", "1Gi"));
    let pod = pod_with_claims("p", &["later"]);
    assert_eq!(
        binding::prefilter(&pod, &storage).err(),
        Some(Failure::Unresolvable(UNBOUND_IMMEDIATE.to_owned()))
    );
    let pod = pod_with_claims("p", &["absent"]);
    assert_eq!(
        binding::prefilter(&pod, &storage).err(),
        Some(Failure::Unresolvable(
            "persistentvolumeclaim \"absent\" not found".to_owned()
        ))
    );
    let no_claims = pod_with_claims("p", &[]);
    assert!(matches!(binding::prefilter(&no_claims, &storage), Ok(None)));
}

#[test]
fn provisioning_follows_allowed_topologies_and_selected_nodes() {
    let mut class = wffc_class("zonal", "ebs.csi.aws.com");
    class["allowedTopologies"] = json!([{"matchLabelExpressions":
        [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}]);
    let storage = Storage::default()
        .class(class)
        .claim(unbound_claim("data", "zonal", "1Gi"));
    let pod = pod_with_claims("p", &["data"]);
    let groups = binding::prefilter(&pod, &storage)
        .expect("ok")
        .expect("claims");
    let in_a = node("n1", json!({"topology.kubernetes.io/zone": "a"}));
    let in_b = node("n2", json!({"topology.kubernetes.io/zone": "b"}));
    let none = Assumed::default();
    let volumes = binding::filter(&groups, &in_a, &storage, &none).expect("provisionable");
    assert_eq!(volumes.provisions, ["default/data"]);
    assert_eq!(
        binding::filter(&groups, &in_b, &storage, &none),
        Err(Failure::Unresolvable(BIND_CONFLICT.to_owned()))
    );
    // Promised to n2 earlier in the session: no other node will do.
    let mut assumed = Assumed::default();
    assumed
        .selected_nodes
        .insert("default/data".to_owned(), "n2".to_owned());
    assert!(binding::filter(&groups, &in_a, &storage, &assumed).is_err());
}

#[test]
fn zone_values_may_list_zones_and_beta_labels_fall_back_to_ga_ones() {
    let storage = Storage::default()
        .volume(json!({"metadata": {"name": "pv", "labels":
            {"failure-domain.beta.kubernetes.io/zone": "a__c"}}}))
        .claim(bound_claim("data", "pv"));
    let pod = pod_with_claims("p", &["data"]);
    let topology = zone::prefilter(&pod, &storage)
        .expect("ok")
        .expect("labels");
    let ga = |z: &str| node("n", json!({"topology.kubernetes.io/zone": z}));
    assert_eq!(zone::filter(&topology, &ga("c")), Ok(()));
    assert_eq!(
        zone::filter(&topology, &ga("b")),
        Err(NO_VOLUME_ZONE.to_owned())
    );
    assert_eq!(zone::filter(&topology, &node("n", json!({}))), Ok(()));
}

#[test]
fn csi_limits_count_volumes_once_per_handle() {
    let csi = |name: &str, handle: &str| json!({"metadata": {"name": name}, "spec": {"csi": {"driver": "ebs", "volumeHandle": handle}}});
    let storage = Storage::default()
        .volume(csi("pv-1", "h1"))
        .volume(csi("pv-2", "h2"))
        .volume(csi("pv-3", "h3"))
        .claim(bound_claim("c1", "pv-1"))
        .claim(bound_claim("c2", "pv-2"))
        .claim(bound_claim("c3", "pv-3"))
        .csi_node(json!({"metadata": {"name": "n1"}, "spec": {"drivers":
            [{"name": "ebs", "nodeID": "n1", "allocatable": {"count": 2}}]}}));
    let n1 = host("n1");
    let on_node = [pod_with_claims("a", &["c1"]), pod_with_claims("b", &["c2"])];
    // A third volume does not fit; one already on the node (shared) does.
    assert_eq!(
        limits::filter(
            &limits::new_volumes(&pod_with_claims("new", &["c3"]), &storage),
            &n1,
            on_node.iter(),
            &storage
        ),
        Err(Failure::Unschedulable(limits::MAX_VOLUME_COUNT.to_owned()))
    );
    assert_eq!(
        limits::filter(
            &limits::new_volumes(&pod_with_claims("new", &["c1"]), &storage),
            &n1,
            on_node.iter(),
            &storage
        ),
        Ok(())
    );
    // No CSINode for the node: no limit.
    assert_eq!(
        limits::filter(
            &limits::new_volumes(&pod_with_claims("new", &["c3"]), &storage),
            &host("n2"),
            on_node.iter(),
            &storage
        ),
        Ok(())
    );
}

#[test]
fn the_same_disk_conflicts_unless_both_mount_it_read_only() {
    let disk = |read_only: bool| -> Pod {
        object(
            json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {
                "containers": [{"name": "c"}],
                "volumes": [{"name": "d", "gcePersistentDisk": {"pdName": "foo", "readOnly": read_only}}]
            }}),
        )
    };
    let storage = Storage::default();
    let state = restrictions::prefilter(&disk(false), &storage, std::iter::empty())
        .expect("ok")
        .expect("a disk");
    let existing = [disk(false)];
    assert_eq!(
        restrictions::filter(&state, &disk(false), existing.iter()),
        Err(Failure::Unschedulable(DISK_CONFLICT.to_owned()))
    );
    let read_only = [disk(true)];
    assert_eq!(
        restrictions::filter(&state, &disk(true), read_only.iter()),
        Ok(())
    );
}

#[test]
fn volume_node_affinity_ignores_match_fields() {
    use crate::k8s::node_affinity::volume_terms_match;
    let terms: Vec<k8s_openapi::api::core::v1::NodeSelectorTerm> = object(json!([
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}
    ]));
    assert!(volume_terms_match(&terms, &BTreeMap::new()));
    let empty: Vec<k8s_openapi::api::core::v1::NodeSelectorTerm> = object(json!([{}]));
    assert!(!volume_terms_match(&empty, &BTreeMap::new()));
}

#[test]
fn an_ephemeral_volume_needs_the_claim_created_for_its_pod() {
    let pod: Pod = object(json!({
        "metadata": {"name": "abc", "namespace": "default", "uid": "uid-abc"},
        "spec": {"containers": [{"name": "c"}],
                 "volumes": [{"name": "xyz", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}
    }));
    assert_eq!(
        binding::prefilter(&pod, &Storage::default()).err(),
        Some(Failure::Unresolvable(
            "waiting for ephemeral volume controller to create the persistentvolumeclaim \"abc-xyz\""
                .to_owned()
        ))
    );
    let foreign =
        Storage::default().claim(json!({"metadata": {"name": "abc-xyz", "namespace": "default"}}));
    assert_eq!(
        binding::prefilter(&pod, &foreign).err(),
        Some(Failure::Unresolvable(
            "PVC default/abc-xyz was not created for pod default/abc (pod is not owner)".to_owned()
        ))
    );
    let owned = Storage::default().claim(
        json!({"metadata": {"name": "abc-xyz", "namespace": "default",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": "uid-abc",
                             "controller": true}]},
        "spec": {"volumeName": "pv"}}),
    );
    // Owned, but only pre-bound: it waits like any claim the controller has not bound.
    assert_eq!(
        binding::prefilter(&pod, &owned).err(),
        Some(Failure::Unresolvable(UNBOUND_IMMEDIATE.to_owned()))
    );
}
