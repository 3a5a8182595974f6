//! A bind's volume writes: made before the binding, waited on through the mirrored claims,
//! and undone on failure (spec kubernetes.md §7.9.4).

use super::*;
use engine::framework::VolumeWrite;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

const PV_PATH: &str = "/api/v1/persistentvolumes/pv-1";
const PVC_PATH: &str = "/api/v1/namespaces/ns/persistentvolumeclaims/data";
const BINDING_PATH: &str = "/api/v1/namespaces/ns/pods/p/binding";

fn claim(annotations: Value, volume: Option<&str>, version: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": "data", "namespace": "ns", "uid": "uid-data",
                     "resourceVersion": version, "annotations": annotations},
        "spec": {"volumeName": volume}
    }))
    .expect("claim")
}

/// pv-1, free, as the API server and the watch show it.
fn add_volume(f: &Fixture) {
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume",
                    "metadata": {"name": "pv-1", "resourceVersion": "7"}, "spec": {}});
    f.shared
        .lock()
        .upsert_volume(serde_json::from_value(pv.clone()).expect("volume"));
    f.mock
        .0
        .objects
        .lock()
        .expect("objects")
        .insert(PV_PATH.into(), pv);
}

fn volume_bind(writes: Vec<VolumeWrite>, timeout: Duration) -> Bind {
    Bind {
        volumes: writes,
        volume_bind_timeout: timeout,
        ..bind("p", "n1")
    }
}

fn static_write() -> VolumeWrite {
    VolumeWrite::BindVolume {
        volume: "pv-1".into(),
        claim: "ns/data".into(),
    }
}

fn provision_write() -> VolumeWrite {
    VolumeWrite::SelectNode {
        claim: "ns/data".into(),
        node: "n1".into(),
    }
}

#[tokio::test]
async fn a_static_volume_gets_its_claim_ref_and_the_bind_waits_for_the_controller() {
    let f = fixture(&["p"]);
    f.shared.lock().upsert_claim(claim(json!({}), None, "1"));
    add_volume(&f);
    let d = binds(vec![volume_bind(
        vec![static_write()],
        Duration::from_secs(30),
    )]);
    f.executor.assume(&d);
    assert_eq!(
        f.shared
            .lock()
            .assumed_volume_claims()
            .get("pv-1")
            .map(String::as_str),
        Some("ns/data"),
        "the volume is taken from the moment the session closes"
    );
    let run = tokio::spawn({
        let executor = f.executor.clone();
        async move { executor.execute(d).await }
    });
    // The volume controller completes the binding a moment later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        f.mock.matching(Method::POST, BINDING_PATH).is_empty(),
        "waits for the claim"
    );
    f.shared.lock().upsert_claim(claim(
        json!({"pv.kubernetes.io/bind-completed": "yes"}),
        Some("pv-1"),
        "2",
    ));
    run.await.expect("execute");
    let puts = f.mock.matching(Method::PUT, PV_PATH);
    assert_eq!(puts.len(), 1);
    let claim_ref = &puts[0].body["spec"]["claimRef"];
    assert_eq!(claim_ref["name"], "data");
    assert_eq!(claim_ref["namespace"], "ns");
    assert_eq!(claim_ref["uid"], "uid-data");
    assert_eq!(
        puts[0].body["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    assert_eq!(
        puts[0].body["metadata"]["resourceVersion"], "7",
        "a replace of what was read"
    );
    assert_eq!(f.mock.matching(Method::POST, BINDING_PATH).len(), 1);
}

#[tokio::test]
async fn a_failed_provisioning_fails_the_bind_and_frees_the_claim() {
    let f = fixture(&["p"]);
    f.shared.lock().upsert_claim(claim(json!({}), None, "1"));
    let d = binds(vec![volume_bind(
        vec![provision_write()],
        Duration::from_secs(30),
    )]);
    f.executor.assume(&d);
    let run = tokio::spawn({
        let executor = f.executor.clone();
        async move { executor.execute(d).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The provisioner gave up: the claim changed and no longer names the node.
    f.shared.lock().upsert_claim(claim(json!({}), None, "3"));
    run.await.expect("execute");
    let patches = f.mock.matching(Method::PATCH, PVC_PATH);
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].content_type, MERGE);
    assert_eq!(
        patches[0].body["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        "n1"
    );
    assert!(f.mock.matching(Method::POST, BINDING_PATH).is_empty());
    let conditions = f
        .mock
        .matching(Method::PATCH, "/api/v1/namespaces/ns/pods/p/status");
    let message = conditions[0].body["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains(r#"binding volumes: provisioning failed for PVC "data""#),
        "{message}"
    );
    assert!(f.shared.lock().assumed_selected_nodes().is_empty());
    assert_eq!(pod_status(&f.shared, "ns/p"), (TaskStatus::Pending, None));
}

#[tokio::test]
async fn a_claim_never_bound_times_the_bind_out() {
    let f = fixture(&["p"]);
    f.shared.lock().upsert_claim(claim(json!({}), None, "1"));
    add_volume(&f);
    let d = binds(vec![volume_bind(vec![static_write()], Duration::ZERO)]);
    f.executor.assume(&d);
    f.run(d).await;
    assert!(f.mock.matching(Method::POST, BINDING_PATH).is_empty());
    let conditions = f
        .mock
        .matching(Method::PATCH, "/api/v1/namespaces/ns/pods/p/status");
    let message = conditions[0].body["status"]["conditions"][0]["message"].to_string();
    assert!(message.contains("context deadline exceeded"), "{message}");
    assert!(f.shared.lock().assumed_volume_claims().is_empty());
}
