use super::*;
use engine::state::StateOptions;
use serde_json::json;

fn pod(name: &str, node: Option<&str>) -> Pod {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
                     "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
        "spec": {"schedulerName": "volcano-rs", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}
    });
    if let Some(n) = node {
        v["spec"]["nodeName"] = json!(n);
    }
    serde_json::from_value(v).expect("pod")
}

fn shared() -> Arc<Shared> {
    Shared::new(ClusterState::new(StateOptions::default()))
}

#[test]
fn initial_list_marks_synced_and_reports_pending_work() {
    let s = shared();
    let mut m = Mirror::<Pod>::default();
    assert!(!m.apply(Event::Init, &s));
    assert!(
        m.apply(Event::InitApply(pod("a", None)), &s),
        "pending pod is work"
    );
    assert!(!m.apply(Event::InitApply(pod("b", Some("n1"))), &s));
    assert!(!s.all_synced());
    m.apply(Event::InitDone, &s);
    assert!(!s.unsynced_kinds().contains(&"Pod"));
    assert_eq!(s.lock().pod_count(), 2);
}

#[test]
fn relist_deletes_what_vanished_and_does_not_double_count() {
    let s = shared();
    let mut m = Mirror::<Pod>::default();
    m.apply(Event::Init, &s);
    m.apply(Event::InitApply(pod("a", None)), &s);
    m.apply(Event::InitApply(pod("b", None)), &s);
    m.apply(Event::InitDone, &s);
    // Live updates, then the watch expires (410) and kube-rs relists.
    m.apply(Event::Apply(pod("a", Some("n1"))), &s);
    m.apply(Event::Apply(pod("c", None)), &s);
    m.apply(Event::Init, &s);
    m.apply(Event::InitApply(pod("a", Some("n1"))), &s);
    m.apply(Event::InitApply(pod("c", None)), &s);
    // "b" was deleted while we were disconnected: the relist drops it.
    m.apply(Event::InitDone, &s);
    let state = s.lock();
    assert_eq!(state.pod_count(), 2);
    assert!(state.pod("ns/b").is_none());
    assert_eq!(
        state.pod("ns/a").and_then(|p| p.node_name.as_deref()),
        Some("n1")
    );
}

#[test]
fn delete_event_removes_and_the_pod_watch_drops_managed_fields() {
    let s = shared();
    let mut m = Mirror::<WatchedPod>::default();
    let watched: WatchedPod =
        serde_json::from_value(serde_json::to_value(pod("a", None)).expect("json"))
            .expect("watched pod");
    m.apply(Event::Apply(watched), &s);
    assert!(s.lock().pod("ns/a").is_some_and(|p| {
        p.pod
            .metadata
            .managed_fields
            .as_ref()
            .is_none_or(|f| f.is_empty())
    }));
    m.apply(Event::Delete(WatchedPod(pod("a", None))), &s);
    assert_eq!(s.lock().pod_count(), 0);
}

/// An object as a watch reads it: from the text of its JSON, as the event carries it.
fn dynamic<K: serde::de::DeserializeOwned>(v: serde_json::Value) -> Read<K> {
    serde_json::from_str(&v.to_string()).expect("an object with metadata")
}

#[test]
fn malformed_pod_group_is_skipped_with_an_event() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut reported = ReportedProblems::default();
    let good = dynamic(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 2, "queue": "q"}
    }));
    let bad = dynamic(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns", "uid": "u1"}, "spec": {"minMember": "many"}
    }));
    let ev = convert_event::<PodGroup>(Event::InitApply(good), &tx, &mut reported);
    assert!(matches!(ev, Some(Event::InitApply(ref pg)) if pg.spec.min_member == 2));
    // A malformed list item is dropped; a malformed update deletes the last good version.
    assert!(convert_event::<PodGroup>(Event::InitApply(bad.clone()), &tx, &mut reported).is_none());
    let ev = convert_event::<PodGroup>(Event::Apply(bad), &tx, &mut reported);
    assert!(matches!(ev, Some(Event::Delete(ref pg)) if pg.metadata.name.as_deref() == Some("pg")));
    let reported = rx.try_recv().expect("an event for the malformed object");
    assert_eq!(reported.object.kind, "PodGroup");
    assert_eq!(reported.reason, "FailedParse");
    assert!(
        reported.message.contains("minMember") || reported.message.contains("invalid type"),
        "{}",
        reported.message
    );
}

/// A PodGroup is read typed straight from its JSON, without its managed fields; JSON that is
/// not even an object with metadata fails the event's decoding (the watch reports and retries).
#[test]
fn a_pod_group_is_read_typed_without_managed_fields() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut reported = ReportedProblems::default();
    let read: Read<PodGroup> = dynamic(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns", "managedFields": [
            {"manager": "volcano-rs", "operation": "Update", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {"f:phase": {}}}}
        ]},
        "spec": {"minMember": 3, "queue": "q"}
    }));
    assert!(matches!(read, Read::Typed(_)));
    let ev = convert_event::<PodGroup>(Event::Apply(read), &tx, &mut reported);
    let Some(Event::Apply(pg)) = ev else {
        panic!("a typed apply: {ev:?}")
    };
    assert_eq!(pg.spec.min_member, 3);
    assert_eq!(pg.metadata.managed_fields, None);
    assert!(rx.try_recv().is_err(), "nothing to report");
    assert!(serde_json::from_str::<Read<PodGroup>>("[1, 2]").is_err());
}

#[test]
fn queue_mirror_uses_names_as_keys() {
    let s = shared();
    let mut m = Mirror::<Queue>::default();
    let q: Queue =
        serde_json::from_value(json!({"metadata": {"name": "q1"}, "spec": {"weight": 3}}))
            .expect("queue");
    m.apply(Event::Apply(q.clone()), &s);
    assert_eq!(s.lock().queue("q1").map(|q| q.weight), Some(3));
    m.apply(Event::Delete(q), &s);
    assert!(s.lock().queue("q1").is_none());
}

fn queue_object(uid: &str, capability: serde_json::Value) -> Read<Queue> {
    dynamic(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "q1", "uid": uid},
        "spec": {"weight": 1, "capability": capability}
    }))
}

/// A negative capability is kept out of the model and reported once per distinct problem: not
/// again when a relist or a status write delivers the object unchanged.
#[test]
fn negative_queue_capability_is_reported_once() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut reported = ReportedProblems::default();
    let bad = queue_object("u1", json!({"cpu": "-4", "memory": "1Gi"}));
    let ev = convert_event::<Queue>(Event::InitApply(bad.clone()), &tx, &mut reported);
    assert!(matches!(ev, Some(Event::InitApply(_))), "the Queue is kept");
    let event = rx.try_recv().expect("an event for the negative capability");
    assert_eq!(
        (event.object.kind, event.reason.as_str()),
        ("Queue", "InvalidValue")
    );
    assert!(
        event
            .message
            .starts_with("spec.capability.cpu: \"-4\" is negative"),
        "{}",
        event.message
    );
    // Relisted, updated unchanged: nothing new.
    convert_event::<Queue>(Event::InitApply(bad.clone()), &tx, &mut reported);
    convert_event::<Queue>(Event::Apply(bad), &tx, &mut reported);
    assert!(rx.try_recv().is_err());
    // A second problem is new; the first is not repeated.
    let worse = queue_object("u1", json!({"cpu": "-4", "memory": "-1Gi"}));
    convert_event::<Queue>(Event::Apply(worse), &tx, &mut reported);
    let event = rx.try_recv().expect("the new problem");
    assert!(
        event.message.starts_with("spec.capability.memory"),
        "{}",
        event.message
    );
    assert!(rx.try_recv().is_err());
    // Deleted and created again (a new UID): reported again.
    let again = queue_object("u2", json!({"cpu": "-4"}));
    convert_event::<Queue>(Event::Apply(again), &tx, &mut reported);
    assert!(rx.try_recv().is_ok());

    // The model does not use the negative quantity: no limit on cpu, as if it were not set.
    let s = shared();
    let q: Queue = serde_json::from_value(json!({
        "metadata": {"name": "q1"}, "spec": {"weight": 1, "capability": {"cpu": "-4", "memory": "1Gi"}}
    }))
    .expect("queue");
    Mirror::<Queue>::default().apply(Event::Apply(q), &s);
    let cap = s
        .lock()
        .queue("q1")
        .and_then(|q| q.capability.clone())
        .expect("a capability");
    assert_eq!((cap.milli_cpu, cap.memory), (0.0, 1024.0 * 1024.0 * 1024.0));
}

/// Bad HDRF weights are a problem of the Queue: reported once when the Queue arrives, not at
/// every session and not again for an unchanged Queue (drf itself no longer reports them).
#[test]
fn bad_hierarchy_weights_are_reported_once() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut reported = ReportedProblems::default();
    let q = dynamic(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "hq", "uid": "u", "annotations": {
            "volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/-2"
        }},
        "spec": {"weight": 1}
    }));
    for _ in 0..3 {
        convert_event::<Queue>(Event::Apply(q.clone()), &tx, &mut reported);
    }
    let event = rx.try_recv().expect("one event");
    assert!(
        event
            .message
            .contains("weight \"-2\" at path level 1 is below 1; 1 is used"),
        "{}",
        event.message
    );
    assert!(rx.try_recv().is_err(), "reported once");
}

#[test]
fn a_broken_watch_retries_twice_a_second_and_starts_over_after_an_event() {
    use kube::runtime::utils::Backoff as _;
    let mut b = WatchBackoff::default();
    let delays: Vec<u128> = (0..6)
        .map(|_| b.next().expect("delay").as_millis())
        .collect();
    assert_eq!(delays, [100, 200, 400, 500, 500, 500]);
    b.reset();
    assert_eq!(b.next().map(|d| d.as_millis()), Some(100));
}

#[test]
fn an_error_streak_is_reported_once_when_it_starts_and_once_when_it_ends() {
    let mut s = ErrorStreak::default();
    assert_eq!(s.recovered(), None);
    assert!(s.failed());
    assert!(!s.failed());
    assert!(!s.failed());
    assert_eq!(s.recovered(), Some(3));
    assert_eq!(s.recovered(), None);
    assert!(s.failed());
}

fn not_served() -> watcher::Error {
    watcher::Error::InitialListFailed(kube::Error::Api(
        kube::core::Status::failure(
            "the server could not find the requested resource",
            "NotFound",
        )
        .with_code(404)
        .boxed(),
    ))
}

#[tokio::test(start_paused = true)]
async fn an_optional_kind_the_api_server_does_not_serve_counts_as_listed_and_empty() {
    // Never listed: the first 404 makes the kind listed and empty, not a broken watch.
    let s = shared();
    let events: Vec<Result<Event<HyperNode>, watcher::Error>> = vec![Err(not_served())];
    run_mirror_of(futures::stream::iter(events), s.clone(), Presence::Optional).await;
    assert!(!s.unsynced_kinds().contains(&"HyperNode"));
    assert!(s.broken_watches().is_empty());

    // Held objects survive a 404 that does not last (an API server reading its CRDs at start),
    // and go when the resource stays away.
    let hn: HyperNode = serde_json::from_value(json!({
        "metadata": {"name": "s0"}, "spec": {"tier": 1}
    }))
    .expect("hypernode");
    let listed = || -> Vec<Result<Event<HyperNode>, watcher::Error>> {
        vec![
            Ok(Event::Init),
            Ok(Event::InitApply(hn.clone())),
            Ok(Event::InitDone),
        ]
    };
    let s = shared();
    let mut brief = listed();
    brief.push(Err(not_served()));
    run_mirror_of(futures::stream::iter(brief), s.clone(), Presence::Optional).await;
    assert_eq!(
        s.lock().hyper_node_objects().count(),
        1,
        "kept through one 404"
    );
    let s = shared();
    let mut lasting = listed();
    lasting.extend((0..10).map(|_| Err(not_served())));
    run_mirror_of(
        futures::stream::iter(lasting),
        s.clone(),
        Presence::Optional,
    )
    .await;
    assert_eq!(
        s.lock().hyper_node_objects().count(),
        0,
        "dropped after 50 s of 404s"
    );
    assert!(s.broken_watches().is_empty());

    // A required kind refused the same way is a broken watch, and never listed.
    let s = shared();
    let events: Vec<Result<Event<Pod>, watcher::Error>> = vec![Err(not_served())];
    run_mirror_of(futures::stream::iter(events), s.clone(), Presence::Required).await;
    assert!(s.unsynced_kinds().contains(&"Pod"));
    assert_eq!(s.broken_watches(), ["Pod"]);
}
