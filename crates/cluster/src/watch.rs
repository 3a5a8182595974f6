//! Watchers: every mirrored kind (the scheduling objects, and the storage objects the volume
//! predicates read) is watched with kube-rs and applied to the shared
//! `ClusterState` one event at a time (spec/kubernetes.md §4).
//!
//! A watch that errors, expires (410 Gone) or disconnects is restarted by kube-rs with a
//! relist; the relist arrives as `Init` … `InitApply` … `InitDone`, and at `InitDone` every
//! object we held that the new list no longer contains is deleted, so nothing is double
//! counted and nothing deleted while we were disconnected lingers.
//!
//! PodGroups and Queues are read one by one ([`Read`]): typed, or, for a malformed object, its
//! identity and the error, so a single malformed object is skipped with a warning and an event
//! instead of failing the whole list.
//! A Queue whose values the engine does not use as given (a negative capability, unusable HDRF
//! weights: `engine::model::queue::value_problems`) is kept, with a warning and an
//! `InvalidValue` event per distinct problem: not again at a relist or a status update.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use apis::{HyperNode, Numatopology, PodGroup, Queue};
use engine::framework::{Event as SchedEvent, EventType, ObjectRef};
use engine::state::ClusterState;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ResourceQuota,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc::UnboundedSender;

use crate::shared::Shared;

mod read;
mod watched_pod;
pub use read::Read;
pub use watched_pod::WatchedPod;

/// An object kind the state mirrors.
pub trait Mirrored: Sized {
    const KIND: &'static str;
    /// `namespace/name` for namespaced kinds, `name` otherwise.
    fn state_key(&self) -> String;
    /// Applies the object; true when it can change a decision (a session should start now).
    fn upsert(self, state: &mut ClusterState) -> bool;
    /// Removes the object; true when that can change a decision (it freed capacity).
    fn delete(key: &str, state: &mut ClusterState) -> bool;
}

fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

fn ns_key<K: ResourceExt>(o: &K) -> String {
    format!(
        "{}/{}",
        o.namespace().unwrap_or_else(|| "default".into()),
        o.name_any()
    )
}

/// Whether a state change can change a decision: the state's answer, or never for kinds whose
/// changes wait for the next periodic session.
trait Wakes {
    fn wakes(self) -> bool;
}

impl Wakes for bool {
    fn wakes(self) -> bool {
        self
    }
}

impl Wakes for () {
    fn wakes(self) -> bool {
        false
    }
}

macro_rules! namespaced {
    ($ty:ty, $kind:literal, $upsert:ident, $delete:ident) => {
        impl Mirrored for $ty {
            const KIND: &'static str = $kind;
            fn state_key(&self) -> String {
                ns_key(self)
            }
            fn upsert(self, state: &mut ClusterState) -> bool {
                state.$upsert(self).wakes()
            }
            fn delete(key: &str, state: &mut ClusterState) -> bool {
                let (ns, name) = split_key(key);
                state.$delete(ns, name).wakes()
            }
        }
    };
}

macro_rules! cluster_scoped {
    ($ty:ty, $kind:literal, $upsert:ident, $delete:ident) => {
        impl Mirrored for $ty {
            const KIND: &'static str = $kind;
            fn state_key(&self) -> String {
                self.name_any()
            }
            fn upsert(self, state: &mut ClusterState) -> bool {
                state.$upsert(self).wakes()
            }
            fn delete(key: &str, state: &mut ClusterState) -> bool {
                state.$delete(key).wakes()
            }
        }
    };
}

// What wakes a session early (spec: only work that can change a decision): a pod of ours
// newly pending, a pod that stopped holding a node, a new or re-specified PodGroup, a node that
// can take new pods, a claim that got its volume. Never a status a session wrote itself.
namespaced!(Pod, "Pod", upsert_pod, delete_pod);
namespaced!(PodGroup, "PodGroup", upsert_pod_group, delete_pod_group);
namespaced!(
    PodDisruptionBudget,
    "PodDisruptionBudget",
    upsert_pdb,
    delete_pdb
);
namespaced!(
    ResourceQuota,
    "ResourceQuota",
    upsert_resource_quota,
    delete_resource_quota
);
namespaced!(
    PersistentVolumeClaim,
    "PersistentVolumeClaim",
    upsert_claim,
    delete_claim
);
cluster_scoped!(Node, "Node", upsert_node, delete_node);
cluster_scoped!(
    PersistentVolume,
    "PersistentVolume",
    upsert_volume,
    delete_volume
);
cluster_scoped!(
    StorageClass,
    "StorageClass",
    upsert_storage_class,
    delete_storage_class
);
cluster_scoped!(CSINode, "CSINode", upsert_csi_node, delete_csi_node);
cluster_scoped!(Queue, "Queue", upsert_queue, delete_queue);
cluster_scoped!(
    PriorityClass,
    "PriorityClass",
    upsert_priority_class,
    delete_priority_class
);
cluster_scoped!(Namespace, "Namespace", upsert_namespace, delete_namespace);
cluster_scoped!(HyperNode, "HyperNode", upsert_hyper_node, delete_hyper_node);
cluster_scoped!(
    Numatopology,
    "Numatopology",
    upsert_numatopology,
    delete_numatopology
);

/// Kinds whose objects can carry values the engine does not use as given.
pub trait ValueCheck {
    /// One line per problem, each starting with the field path.
    fn value_problems(&self) -> Vec<String> {
        Vec::new()
    }
}

impl ValueCheck for PodGroup {}
impl ValueCheck for Numatopology {}
impl ValueCheck for HyperNode {
    fn value_problems(&self) -> Vec<String> {
        engine::model::hypernode::value_problems(self)
    }
}

impl ValueCheck for Queue {
    fn value_problems(&self) -> Vec<String> {
        engine::model::queue::value_problems(self)
    }
}

/// The value problems last reported per object, so each is reported once per object (by UID)
/// and not again when a relist or a status write delivers the object unchanged.
#[derive(Default)]
struct ReportedProblems {
    by_key: HashMap<String, (String, Vec<String>)>,
}

impl ReportedProblems {
    /// The problems of `key` not reported yet; remembers `problems` as the object's current set
    /// (a problem that goes away and comes back is reported again).
    fn fresh(&mut self, key: &str, uid: &str, problems: Vec<String>) -> Vec<String> {
        let previous = match self.by_key.get(key) {
            Some((known_uid, known)) if known_uid == uid => known.as_slice(),
            _ => &[],
        };
        let fresh: Vec<String> = problems
            .iter()
            .filter(|p| !previous.contains(p))
            .cloned()
            .collect();
        if problems.is_empty() {
            self.by_key.remove(key);
        } else {
            self.by_key
                .insert(key.to_owned(), (uid.to_owned(), problems));
        }
        fresh
    }

    fn forget(&mut self, key: &str) {
        self.by_key.remove(key);
    }
}

/// Applies one watch event stream to the shared state, reconciling after every relist.
pub struct Mirror<K> {
    known: HashSet<String>,
    relisting: Option<HashSet<String>>,
    /// When the current list began (for the debug log: start-up waits for every first list).
    listing_since: Option<std::time::Instant>,
    _kind: std::marker::PhantomData<K>,
}

impl<K: Mirrored> Default for Mirror<K> {
    fn default() -> Self {
        Mirror {
            known: HashSet::new(),
            relisting: None,
            listing_since: None,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: Mirrored> Mirror<K> {
    /// Applies one event; returns true when pending work arrived.
    pub fn apply(&mut self, event: Event<K>, shared: &Shared) -> bool {
        match event {
            Event::Init => {
                self.relisting = Some(HashSet::new());
                self.listing_since = Some(std::time::Instant::now());
                tracing::debug!(kind = <K as Mirrored>::KIND, "listing");
                false
            }
            Event::InitApply(obj) => {
                let key = obj.state_key();
                let pending = obj.upsert(&mut shared.lock());
                match &mut self.relisting {
                    Some(seen) => {
                        seen.insert(key);
                    }
                    None => {
                        self.known.insert(key);
                    }
                }
                pending
            }
            Event::InitDone => {
                let seen = self.relisting.take().unwrap_or_default();
                {
                    let mut state = shared.lock();
                    for gone in self.known.difference(&seen) {
                        let _ = K::delete(gone, &mut state);
                    }
                }
                self.known = seen;
                tracing::debug!(
                    kind = <K as Mirrored>::KIND,
                    objects = self.known.len(),
                    ms = self
                        .listing_since
                        .take()
                        .map(|t| t.elapsed().as_millis() as u64),
                    "listed"
                );
                shared.mark_synced(<K as Mirrored>::KIND);
                true
            }
            Event::Apply(obj) => {
                self.known.insert(obj.state_key());
                obj.upsert(&mut shared.lock())
            }
            Event::Delete(obj) => {
                let key = obj.state_key();
                self.known.remove(&key);
                K::delete(&key, &mut shared.lock())
            }
        }
    }
}

/// Drives a watch stream into the shared state until it ends.
pub async fn run_mirror<K, S>(stream: S, shared: Arc<Shared>)
where
    K: Mirrored,
    S: Stream<Item = Result<Event<K>, watcher::Error>>,
{
    run_mirror_of(stream, shared, Presence::Required).await
}

/// Whether a watched kind must exist in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// A kind the daemon cannot schedule without: a failing list is a broken watch, and
    /// sessions wait until it works again.
    Required,
    /// A kind whose CRD a cluster may not have installed (HyperNodes, on clusters of a Volcano
    /// older than 1.12): while the API server does not know the resource, the kind counts as
    /// listed and empty, and is looked for again every few seconds.
    Optional,
}

/// [`run_mirror`] for a kind of the given [`Presence`].
pub async fn run_mirror_of<K, S>(stream: S, shared: Arc<Shared>, presence: Presence)
where
    K: Mirrored,
    S: Stream<Item = Result<Event<K>, watcher::Error>>,
{
    let mut mirror = Mirror::<K>::default();
    let mut stream = std::pin::pin!(stream);
    let mut failing = ErrorStreak::default();
    let mut absent_since: Option<tokio::time::Instant> = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                if let Some(errors) = failing.recovered() {
                    tracing::info!(kind = <K as Mirrored>::KIND, errors, "watch recovered");
                }
                if absent_since.take().is_some() {
                    tracing::info!(kind = <K as Mirrored>::KIND, "the resource is served now");
                }
                shared.watch_working(<K as Mirrored>::KIND);
                if mirror.apply(event, &shared) {
                    shared.work.notify_one();
                }
            }
            Err(e) if presence == Presence::Optional && resource_not_served(&e) => {
                let now = tokio::time::Instant::now();
                let since = *absent_since.get_or_insert(now);
                if since == now {
                    tracing::info!(
                        kind = <K as Mirrored>::KIND,
                        "the API server does not serve this resource (CRD not installed): none of it is used until it does"
                    );
                }
                // Nothing held: an empty list, so the kind counts as listed. Objects held are
                // dropped only once the resource has stayed away for a while: an API server
                // that is starting answers 404 for custom resources until it has read their
                // CRDs.
                let held = !mirror.known.is_empty();
                if !held || now.duration_since(since) >= ABSENT_FORGET {
                    mirror.apply(Event::Init, &shared);
                    mirror.apply(Event::InitDone, &shared);
                    if held {
                        shared.work.notify_one();
                    }
                }
                shared.watch_working(<K as Mirrored>::KIND);
                // Looked for again after a pause: a missing CRD is not a broken watch.
                tokio::time::sleep(ABSENT_RECHECK).await;
            }
            Err(e) => {
                shared.watch_failed(<K as Mirrored>::KIND);
                if failing.failed() {
                    tracing::warn!(kind = <K as Mirrored>::KIND, error = %crate::errors::watch(&e), "watch broken; retrying twice a second until it recovers");
                } else {
                    tracing::debug!(kind = <K as Mirrored>::KIND, error = %crate::errors::watch(&e), "watch still broken");
                }
            }
        }
    }
}

/// A list or watch the API server refused with 404: it does not serve the resource at all.
fn resource_not_served(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}

/// Consecutive watch errors, so that a broken watch logs once when it breaks and once when it
/// recovers, not at every retry.
#[derive(Debug, Default)]
struct ErrorStreak(u64);

impl ErrorStreak {
    /// Counts an error; true for the first of a streak.
    fn failed(&mut self) -> bool {
        self.0 += 1;
        self.0 == 1
    }

    /// Ends a streak; the number of errors it had, if there was one.
    fn recovered(&mut self) -> Option<u64> {
        let n = std::mem::take(&mut self.0);
        (n > 0).then_some(n)
    }
}

/// Retry delays of a broken watch: 100 ms, doubling to at most 500 ms, back to 100 ms once an
/// event comes through. kube's default grows to 30 s, so a watch broken by a 10 s API server
/// restart could wait half a minute before it re-listed, and the scheduler worked on a stale
/// view meanwhile; two retries a second per watch are nothing for an API server that is back.
#[derive(Debug)]
struct WatchBackoff {
    next: Duration,
}

const WATCH_RETRY_FIRST: Duration = Duration::from_millis(100);
const WATCH_RETRY_MAX: Duration = Duration::from_millis(500);
/// Wait between looks at an optional kind whose resource is not served.
const ABSENT_RECHECK: Duration = Duration::from_secs(5);
/// How long an optional kind's resource must stay unserved before the objects held are dropped.
const ABSENT_FORGET: Duration = Duration::from_secs(30);

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff {
            next: WATCH_RETRY_FIRST,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(WATCH_RETRY_MAX);
        Some(delay)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = WATCH_RETRY_FIRST;
    }
}

/// The watches' list pages. Larger than kube's default of 500 (client-go's pager size): a
/// start-up lists every pod before its first session, and at 500 a list of 5,000 pods took ten
/// round trips in a row, most of the start-up. A page of 5,000 pods is about 8 MB.
const LIST_PAGE: u32 = 5_000;

fn watch_config() -> watcher::Config {
    watcher::Config::default().page_size(LIST_PAGE)
}

/// A typed watch with backoff and pruning.
pub fn typed_stream<K>(client: Client) -> impl Stream<Item = Result<Event<K>, watcher::Error>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client);
    watcher::watcher(api, watch_config())
        .backoff(WatchBackoff::default())
        // What the scheduler never reads and what costs the most memory.
        .map(|r| r.map(|ev| ev.modify(|o| o.managed_fields_mut().clear())))
}

/// A watch of a custom resource whose objects are each read typed or reported: objects that
/// do not parse are reported on `problems` and skipped (treated as absent; [`Read`]).
pub fn read_stream<K>(
    client: Client,
    problems: UnboundedSender<SchedEvent>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>>
where
    K: Mirrored + ValueCheck + Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug,
    K: Send + 'static,
{
    let api: Api<Read<K>> = Api::all(client);
    let mut reported = ReportedProblems::default();
    watcher::watcher(api, watch_config())
        .backoff(WatchBackoff::default())
        .filter_map(move |r| {
            let converted = match r {
                Err(e) => Some(Err(e)),
                Ok(ev) => convert_event::<K>(ev, &problems, &mut reported).map(Ok),
            };
            futures::future::ready(converted)
        })
}

/// A Warning event on the object of kind `K` with this metadata.
fn object_event<K: Mirrored>(meta: &ObjectMeta, reason: &str, message: String) -> SchedEvent {
    SchedEvent {
        object: ObjectRef {
            kind: <K as Mirrored>::KIND,
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
        },
        type_: EventType::Warning,
        reason: reason.to_string(),
        message,
    }
}

/// Reports the value problems of an object that were not reported before.
fn report_values<K: Mirrored + ValueCheck + Resource>(
    k: &K,
    problems: &UnboundedSender<SchedEvent>,
    reported: &mut ReportedProblems,
) {
    let key = k.state_key();
    let uid = k.meta().uid.clone().unwrap_or_default();
    for problem in reported.fresh(&key, &uid, k.value_problems()) {
        tracing::warn!(kind = <K as Mirrored>::KIND, name = %key, "{} {key} {problem}", <K as Mirrored>::KIND);
        let _ = problems.send(object_event::<K>(k.meta(), "InvalidValue", problem));
    }
}

/// A stand-in of kind `K` with only the name and namespace of `meta`, to delete by key.
fn stand_in<K: Resource<DynamicType = ()> + Mirrored + DeserializeOwned>(
    meta: &ObjectMeta,
) -> Option<K> {
    serde_json::from_value(serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": <K as Mirrored>::KIND,
        "metadata": {"name": meta.name, "namespace": meta.namespace},
        "spec": {}
    }))
    .ok()
}

/// Takes a watch event's objects as read. A malformed `Apply` becomes a `Delete` of that key
/// (the object is no longer trusted); a malformed `InitApply` is dropped (the relist then
/// forgets it).
fn convert_event<K>(
    ev: Event<Read<K>>,
    problems: &UnboundedSender<SchedEvent>,
    reported: &mut ReportedProblems,
) -> Option<Event<K>>
where
    K: Mirrored + ValueCheck + Resource<DynamicType = ()> + DeserializeOwned,
{
    let report = |meta: &ObjectMeta, err: &str| {
        let name = meta.name.clone().unwrap_or_default();
        tracing::warn!(kind = <K as Mirrored>::KIND, name = %name, error = %err, "malformed object skipped");
        let message = format!("volcano-rs ignores this {}: {err}", <K as Mirrored>::KIND);
        let _ = problems.send(object_event::<K>(meta, "FailedParse", message));
    };
    // What the scheduler never reads and what costs the most memory.
    let typed = |mut k: K| {
        k.meta_mut().managed_fields = None;
        k
    };
    let mut accept = |k: K| {
        let k = typed(k);
        report_values(&k, problems, reported);
        k
    };
    match ev {
        Event::Init => Some(Event::Init),
        Event::InitDone => Some(Event::InitDone),
        Event::InitApply(Read::Typed(k)) => Some(Event::InitApply(accept(k))),
        Event::InitApply(Read::Malformed { shell, error }) => {
            report(&shell.metadata, &error);
            None
        }
        Event::Apply(Read::Typed(k)) => Some(Event::Apply(accept(k))),
        Event::Apply(Read::Malformed { shell, error }) => {
            report(&shell.metadata, &error);
            // Forget the last good version: a minimal stand-in object deletes it by key.
            stand_in::<K>(&shell.metadata).map(Event::Delete)
        }
        Event::Delete(Read::Typed(k)) => {
            reported.forget(&k.state_key());
            Some(Event::Delete(typed(k)))
        }
        Event::Delete(Read::Malformed { shell, .. }) => {
            stand_in::<K>(&shell.metadata).map(Event::Delete)
        }
    }
}

/// Starts one watcher task per mirrored kind.
pub fn spawn_all(
    client: Client,
    shared: Arc<Shared>,
    problems: UnboundedSender<SchedEvent>,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        tokio::spawn(run_mirror(
            typed_stream::<WatchedPod>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<Node>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            read_stream::<PodGroup>(client.clone(), problems.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            read_stream::<Queue>(client.clone(), problems.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<PriorityClass>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<PodDisruptionBudget>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<ResourceQuota>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<PersistentVolumeClaim>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<PersistentVolume>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<StorageClass>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<CSINode>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror(
            typed_stream::<Namespace>(client.clone()),
            shared.clone(),
        )),
        tokio::spawn(run_mirror_of(
            read_stream::<Numatopology>(client.clone(), problems.clone()),
            shared.clone(),
            Presence::Optional,
        )),
        tokio::spawn(run_mirror_of(
            read_stream::<HyperNode>(client, problems),
            shared,
            Presence::Optional,
        )),
    ]
}

#[cfg(test)]
mod tests;
