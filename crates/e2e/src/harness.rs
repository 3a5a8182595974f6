//! What every e2e test needs: a per-test namespace, KWOK nodes, Queues, PodGroups and Pods on the
//! local control plane (e2e/README.md), a `volcano-rs run` daemon of its own, polling with
//! deadlines, and a cleanup that leaves nothing behind.
//!
//! Isolation between tests that run at the same time is by construction: test `<t>` uses the
//! namespace `e2e-<t>`, the scheduler name `e2e-<t>`, nodes labelled `e2e.volcano-rs/test=<t>`
//! (its daemon runs with the matching `--node-selector`, so it neither sees nor fills other
//! tests' nodes), cluster-scoped objects carrying that label (Queues, PriorityClasses) and the
//! Lease `volcano-system/e2e-<t>`.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use apis::{PodGroup, PodGroupSpec, Queue, QueueSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Affinity, Binding, ConfigMap, Container, Event as CoreEvent, Namespace, NamespaceSpec, Node,
    NodeSpec, NodeStatus, ObjectReference, Pod, PodSpec, ResourceQuota, ResourceRequirements,
    Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Label every node and cluster-scoped object of a test carries; the value is the test name.
pub const TEST_LABEL: &str = "e2e.volcano-rs/test";
/// Namespace of the tests' leader Leases.
pub const LEASE_NAMESPACE: &str = "volcano-system";
/// Label kwok selects the nodes it simulates by (`manageNodesWithLabelSelector`, e2e/lib.sh).
const KWOK_LABEL: (&str, &str) = ("type", "kwok");
/// How often [`TestCtx::wait_for`] polls.
const POLL: Duration = Duration::from_millis(100);
/// Cleanup of one test, all steps together (deleting hundreds of pods on a busy 2-core
/// machine can take a while).
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(120);

/// What the runner hands every test.
#[derive(Clone)]
pub struct Env {
    pub client: Client,
    pub kubeconfig: PathBuf,
    pub daemon_bin: PathBuf,
    /// Daemon logs (`<test>[-<n>].log`) and the `pids` file; `target/e2e-logs` by default.
    pub log_dir: PathBuf,
}

/// Names of the tests that created a [`TestCtx`] in this process, so that the runner can clean
/// up after a test that named itself differently from its entry in `TESTS`.
static STARTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Test names [`TestCtx::new`] was called with so far.
pub fn started_tests() -> Vec<String> {
    STARTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .cloned()
        .collect()
}

/// One test's names and handles. Create it first thing in a test with the test's name as it
/// appears in `TESTS`.
pub struct TestCtx {
    pub env: Env,
    pub name: String,
    /// `e2e-<name>`; created fresh by [`TestCtx::new`].
    pub ns: String,
    /// `e2e-<name>`: the pods' `schedulerName` and the daemon's `--scheduler-name`.
    pub scheduler: String,
    /// `(TEST_LABEL, name)`: on every node and cluster-scoped object of the test.
    pub label: (String, String),
    daemons_started: AtomicUsize,
}

impl TestCtx {
    /// Removes whatever an earlier run of this test left behind, then creates the namespace
    /// (and the Lease namespace, shared by all tests).
    pub async fn new(env: &Env, name: &str) -> anyhow::Result<TestCtx> {
        check_test_name(name)?;
        STARTED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string());
        let ctx = TestCtx {
            env: env.clone(),
            name: name.to_string(),
            ns: format!("e2e-{name}"),
            scheduler: format!("e2e-{name}"),
            label: (TEST_LABEL.to_string(), name.to_string()),
            daemons_started: AtomicUsize::new(0),
        };
        ctx.cleanup()
            .await
            .context("removing what an earlier run left")?;
        create_namespace(&env.client, &ctx.ns, Some(&ctx.label)).await?;
        create_namespace(&env.client, LEASE_NAMESPACE, None).await?;
        Ok(ctx)
    }

    /// `<TEST_LABEL>=<name>`, for list calls.
    pub fn label_selector(&self) -> String {
        format!("{}={}", self.label.0, self.label.1)
    }

    /// Name of this test's leader Lease in [`LEASE_NAMESPACE`].
    pub fn lease_name(&self) -> String {
        format!("e2e-{}", self.name)
    }

    pub fn pods_api(&self) -> Api<Pod> {
        Api::namespaced(self.env.client.clone(), &self.ns)
    }

    pub fn pod_groups_api(&self) -> Api<PodGroup> {
        Api::namespaced(self.env.client.clone(), &self.ns)
    }

    pub fn queues_api(&self) -> Api<Queue> {
        Api::all(self.env.client.clone())
    }

    pub fn nodes_api(&self) -> Api<Node> {
        Api::all(self.env.client.clone())
    }

    /// `count` KWOK nodes `<name>-<prefix>-<i>` with allocatable = capacity as given, labelled
    /// for this test; returns once all of them are Ready.
    pub async fn nodes(
        &self,
        prefix: &str,
        count: usize,
        cpu: &str,
        memory: &str,
        pods: u32,
    ) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::with_capacity(count);
        for i in 0..count {
            let name = format!("{}-{prefix}-{i}", self.name);
            let node = Node {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                spec: Some(NodeSpec::default()),
                status: Some(NodeStatus {
                    allocatable: Some(resources(cpu, memory, pods)),
                    ..Default::default()
                }),
            };
            names.push(self.create_node(node).await?);
        }
        self.wait_nodes_ready(&names).await?;
        Ok(names)
    }

    /// Creates a custom node (taints, labels, sizes) and waits until it is Ready. The node is
    /// named `<test>-<metadata.name>` (unless the name already has that prefix) and gets the
    /// test label, the kwok label and annotation, and the usual `kubernetes.io/*` labels where
    /// missing. `status.allocatable` is required; `status.capacity` defaults to it.
    pub async fn node_with(&self, node: Node) -> anyhow::Result<String> {
        let name = self.create_node(node).await?;
        self.wait_nodes_ready(std::slice::from_ref(&name)).await?;
        Ok(name)
    }

    async fn create_node(&self, mut node: Node) -> anyhow::Result<String> {
        let given = node
            .metadata
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .context("node_with: metadata.name is required")?;
        let prefix = format!("{}-", self.name);
        let name = if given.starts_with(&prefix) {
            given
        } else {
            format!("{prefix}{given}")
        };
        node.metadata.name = Some(name.clone());
        let labels = node.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(KWOK_LABEL.0.into(), KWOK_LABEL.1.into());
        labels.insert(self.label.0.clone(), self.label.1.clone());
        labels
            .entry("kubernetes.io/hostname".into())
            .or_insert_with(|| name.clone());
        labels
            .entry("kubernetes.io/os".into())
            .or_insert_with(|| "linux".into());
        labels
            .entry("kubernetes.io/arch".into())
            .or_insert_with(|| "amd64".into());
        let annotations = node.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert("kwok.x-k8s.io/node".into(), "fake".into());
        annotations.insert("node.alpha.kubernetes.io/ttl".into(), "0".into());
        // A node stores the status it is created with (nodes self-register that way); kwok
        // keeps allocatable/capacity and adds the Ready condition.
        let status = node.status.get_or_insert_with(Default::default);
        let allocatable = status
            .allocatable
            .clone()
            .with_context(|| format!("node {name}: status.allocatable is required"))?;
        status.capacity.get_or_insert(allocatable);
        self.nodes_api()
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating node {name}"))?;
        Ok(name)
    }

    async fn wait_nodes_ready(&self, names: &[String]) -> anyhow::Result<()> {
        let api = self.nodes_api();
        let selector = self.label_selector();
        let wanted: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        self.wait_for(
            &format!("nodes {names:?} Ready"),
            Duration::from_secs(60),
            || async {
                let list = api
                    .list(&ListParams::default().labels(&selector))
                    .await
                    .map_err(|e| e.to_string())?;
                let ready: BTreeSet<&str> = list
                    .items
                    .iter()
                    .filter(|n| node_ready(n))
                    .filter_map(|n| n.metadata.name.as_deref())
                    .filter(|n| wanted.contains(n))
                    .collect();
                if ready.len() == wanted.len() {
                    Ok(())
                } else {
                    let missing: Vec<_> = wanted.difference(&ready).collect();
                    Err(format!("not Ready yet: {missing:?}"))
                }
            },
        )
        .await
    }

    /// Creates the cluster-scoped Queue `<test>-<name>` with the given weight, labelled for this
    /// test, and opens it through the status subresource (no Volcano controller does). Returns
    /// the full name.
    pub async fn queue(&self, name: &str, weight: i32) -> anyhow::Result<String> {
        let spec = QueueSpec {
            weight,
            ..Default::default()
        };
        self.queue_with(name, spec, BTreeMap::new()).await
    }

    /// [`TestCtx::queue`] with any spec and annotations.
    pub async fn queue_with(
        &self,
        name: &str,
        spec: QueueSpec,
        annotations: BTreeMap<String, String>,
    ) -> anyhow::Result<String> {
        let full = format!("{}-{name}", self.name);
        let queue = Queue {
            metadata: ObjectMeta {
                name: Some(full.clone()),
                labels: Some(BTreeMap::from([self.label.clone()])),
                annotations: Some(annotations).filter(|a| !a.is_empty()),
                ..Default::default()
            },
            spec,
            status: None,
        };
        let api = self.queues_api();
        api.create(&PostParams::default(), &queue)
            .await
            .with_context(|| format!("creating queue {full}"))?;
        let open = serde_json::json!({"status": {"state": apis::queue_state::OPEN}});
        api.patch_status(&full, &PatchParams::default(), &Patch::Merge(&open))
            .await
            .with_context(|| format!("opening queue {full}"))?;
        Ok(full)
    }

    /// A PodGroup in the test namespace; `queue` is used verbatim (pass what [`TestCtx::queue`]
    /// returned, or a deliberately wrong name).
    pub async fn pod_group(&self, name: &str, min_member: i32, queue: &str) -> anyhow::Result<()> {
        self.create_pod_group(PodGroup {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            spec: PodGroupSpec {
                min_member,
                queue: queue.to_string(),
                ..Default::default()
            },
            status: None,
        })
        .await
    }

    /// Creates any PodGroup in the test namespace (the namespace is filled in).
    pub async fn create_pod_group(&self, mut pg: PodGroup) -> anyhow::Result<()> {
        pg.metadata.namespace = Some(self.ns.clone());
        let name = pg.metadata.name.clone().unwrap_or_default();
        self.pod_groups_api()
            .create(&PostParams::default(), &pg)
            .await
            .with_context(|| format!("creating PodGroup {}/{name}", self.ns))?;
        Ok(())
    }

    /// A pod for this test's scheduler in the test namespace; see [`PodBuilder`].
    pub fn pod(&self, name: &str) -> PodBuilder {
        PodBuilder::new(name, &self.ns, &self.scheduler)
    }

    /// Creates a pod built elsewhere (the namespace is filled in).
    pub async fn create_pod(&self, mut pod: Pod) -> anyhow::Result<Pod> {
        pod.metadata.namespace = Some(self.ns.clone());
        let name = pod.metadata.name.clone().unwrap_or_default();
        self.pods_api()
            .create(&PostParams::default(), &pod)
            .await
            .with_context(|| format!("creating pod {}/{name}", self.ns))
    }

    /// Binds a pod the way a scheduler does (`pods/<name>/binding`), e.g. to occupy a node with
    /// a pod of another scheduler.
    pub async fn bind(&self, pod: &str, node: &str) -> anyhow::Result<()> {
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(pod.to_string()),
                namespace: Some(self.ns.clone()),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..Default::default()
            },
        };
        let _: serde_json::Value = self
            .pods_api()
            .create_subresource("binding", pod, &PostParams::default(), &binding)
            .await
            .with_context(|| format!("binding pod {pod} to {node}"))?;
        Ok(())
    }

    pub async fn get_pod(&self, name: &str) -> anyhow::Result<Pod> {
        self.pods_api()
            .get(name)
            .await
            .with_context(|| format!("reading pod {}/{name}", self.ns))
    }

    /// Pod name → node, for the pods of the test namespace that have `spec.nodeName`.
    pub async fn bound_pods(&self) -> anyhow::Result<BTreeMap<String, String>> {
        let list = self
            .pods_api()
            .list(&ListParams::default())
            .await
            .context("listing pods")?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|p| {
                let node = p.spec.and_then(|s| s.node_name).filter(|n| !n.is_empty())?;
                Some((p.metadata.name?, node))
            })
            .collect())
    }

    /// `(reason, message)` of the events regarding an object, oldest first. Lists core/v1
    /// Events, which include those created through events.k8s.io/v1 (one storage; `note` reads
    /// as `message`). Namespaced kinds are matched in the test namespace; Queue, Node, Lease,
    /// PriorityClass and Namespace events in any namespace.
    pub async fn events_for(
        &self,
        kind: &str,
        name: &str,
    ) -> anyhow::Result<Vec<(String, String)>> {
        let api: Api<CoreEvent> = Api::all(self.env.client.clone());
        let fields = format!("involvedObject.kind={kind},involvedObject.name={name}");
        let mut events = api
            .list(&ListParams::default().fields(&fields))
            .await
            .with_context(|| format!("listing events of {kind} {name}"))?
            .items;
        let any_namespace = matches!(
            kind,
            "Queue" | "Node" | "Lease" | "PriorityClass" | "Namespace"
        );
        events
            .retain(|e| any_namespace || e.involved_object.namespace.as_deref() == Some(&self.ns));
        events.sort_by_key(|e| {
            e.event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.last_timestamp.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
        });
        Ok(events
            .into_iter()
            .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
            .collect())
    }

    /// Polls `f` every 100 ms until it reports success or `timeout` passes; the error names
    /// `what` and the last observation. `f`'s future may yield `Option<T>`,
    /// `Result<T, String>` (the `Err` describes what was seen), `anyhow::Result<Option<T>>`
    /// (errors count as observations, so transient API errors are retried) or [`Observed<T>`].
    pub async fn wait_for<T, O, Fut>(
        &self,
        what: &str,
        timeout: Duration,
        f: impl FnMut() -> Fut,
    ) -> anyhow::Result<T>
    where
        Fut: Future<Output = O>,
        O: Observation<T>,
    {
        wait_for(what, timeout, f).await
    }

    /// Starts this test's daemon (see [`TestCtx::daemon_logging`]) with `RUST_LOG=info`.
    pub async fn daemon(&self, extra_args: &[&str]) -> anyhow::Result<Daemon> {
        self.daemon_logging("info", extra_args).await
    }

    /// Starts `volcano-rs run` for this test: its kubeconfig, scheduler name, node selector,
    /// Lease, `--leader-elect=false`, `--schedule-period 200ms` and free loopback ports for
    /// `--listen-address`/`--healthz-address`, each unless `extra_args` gives that flag itself.
    /// Logs go to `<log_dir>/<test>[-<n>].log`. Returns once `/readyz` answers 200.
    pub async fn daemon_logging(
        &self,
        rust_log: &str,
        extra_args: &[&str],
    ) -> anyhow::Result<Daemon> {
        self.daemon_with(rust_log, extra_args, false).await
    }

    /// Like [`TestCtx::daemon`], but returns once the health server answers, ready or not.
    pub async fn daemon_unready(&self, extra_args: &[&str]) -> anyhow::Result<Daemon> {
        self.daemon_with("info", extra_args, true).await
    }

    async fn daemon_with(
        &self,
        rust_log: &str,
        extra_args: &[&str],
        answering_only: bool,
    ) -> anyhow::Result<Daemon> {
        let n = self.daemons_started.fetch_add(1, Ordering::SeqCst) + 1;
        let log_path = if n == 1 {
            self.env.log_dir.join(format!("{}.log", self.name))
        } else {
            self.env.log_dir.join(format!("{}-{n}.log", self.name))
        };
        let extra: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        // A free port found by binding :0 may be taken again before the daemon binds it;
        // such a start is retried with new ports.
        let mut last_error = None;
        for _ in 0..3 {
            let defaults = vec![
                ("--kubeconfig", self.env.kubeconfig.display().to_string()),
                ("--scheduler-name", self.scheduler.clone()),
                (
                    "--node-selector",
                    format!("{}:{}", self.label.0, self.label.1),
                ),
                ("--leader-elect", "false".to_string()),
                ("--leader-elect-resource-name", self.lease_name()),
                (
                    "--leader-elect-resource-namespace",
                    LEASE_NAMESPACE.to_string(),
                ),
                ("--schedule-period", "200ms".to_string()),
                ("--listen-address", format!("127.0.0.1:{}", free_port()?)),
                ("--healthz-address", format!("127.0.0.1:{}", free_port()?)),
            ];
            let args = daemon_args(&defaults, &extra);
            match Daemon::start(&self.env, &args, rust_log, &log_path, answering_only).await {
                Ok(d) => return Ok(d),
                Err(StartError::PortTaken(e)) => last_error = Some(e),
                Err(StartError::Other(e)) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("daemon did not start")))
    }

    /// Deletes everything of this test: the namespace with its contents, its nodes, Queues,
    /// PriorityClasses and Lease. Idempotent.
    pub async fn cleanup(&self) -> anyhow::Result<()> {
        cleanup_test(&self.env, &self.name).await
    }
}

/// Test names become namespace, node and label values, so they must be short DNS labels.
fn check_test_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        bail!("test name {name:?} must be a lowercase DNS label of at most 40 characters")
    }
}

async fn create_namespace(
    client: &Client,
    name: &str,
    label: Option<&(String, String)>,
) -> anyhow::Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: label.map(|l| BTreeMap::from([l.clone()])),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<Namespace> = Api::all(client.clone());
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 && label.is_none() => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating namespace {name}")),
    }
}

fn resources(cpu: &str, memory: &str, pods: u32) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity(memory.to_string())),
        ("pods".to_string(), Quantity(pods.to_string())),
    ])
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn ignore_not_found<T>(r: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes everything test `name` may have created; used by [`TestCtx::cleanup`] and by the
/// runner after every test, pass or fail.
pub async fn cleanup_test(env: &Env, name: &str) -> anyhow::Result<()> {
    check_test_name(name)?;
    tokio::time::timeout(CLEANUP_TIMEOUT, cleanup_inner(env, name))
        .await
        .map_err(|_| anyhow!("cleanup of {name} took more than {CLEANUP_TIMEOUT:?}"))?
}

async fn cleanup_inner(env: &Env, name: &str) -> anyhow::Result<()> {
    let client = &env.client;
    let ns = format!("e2e-{name}");
    let selector = format!("{TEST_LABEL}={name}");
    let by_label = ListParams::default().labels(&selector);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(&ns).await?.is_some() {
        // Deleting first makes the namespace Terminating, so nothing new can be created in it
        // while its contents go. No namespace controller runs here (no
        // kube-controller-manager), so the contents are deleted by hand and the `kubernetes`
        // finalizer removed through `finalize`; otherwise the namespace stays Terminating and
        // its objects would reappear in a namespace of the same name.
        ignore_not_found(namespaces.delete(&ns, &DeleteParams::default()).await)?;
        let now = DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        let all = ListParams::default();
        let c = client.clone();
        Api::<Pod>::namespaced(c.clone(), &ns)
            .delete_collection(&now, &all)
            .await
            .context("deleting pods")?;
        Api::<PodGroup>::namespaced(c.clone(), &ns)
            .delete_collection(&now, &all)
            .await
            .context("deleting PodGroups")?;
        Api::<PodDisruptionBudget>::namespaced(c.clone(), &ns)
            .delete_collection(&now, &all)
            .await
            .context("deleting PodDisruptionBudgets")?;
        Api::<ResourceQuota>::namespaced(c.clone(), &ns)
            .delete_collection(&now, &all)
            .await
            .context("deleting ResourceQuotas")?;
        Api::<ConfigMap>::namespaced(c.clone(), &ns)
            .delete_collection(&now, &all)
            .await
            .context("deleting ConfigMaps")?;
        Api::<CoreEvent>::namespaced(c.clone(), &ns)
            .delete_collection(&now, &all)
            .await
            .context("deleting events")?;
        finalize_namespace(&namespaces, &ns).await?;
    }
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .context("deleting nodes")?;
    let queues: Api<Queue> = Api::all(client.clone());
    queues
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .context("deleting queues")?;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    classes
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .context("deleting PriorityClasses")?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    ignore_not_found(
        leases
            .delete(&format!("e2e-{name}"), &DeleteParams::default())
            .await,
    )
    .context("deleting the Lease")?;
    // Queue and Lease events are recorded in `default` and the Lease namespace.
    for (ns, kind, object) in [
        ("default", "Queue", None),
        (LEASE_NAMESPACE, "Lease", Some(format!("e2e-{name}"))),
    ] {
        let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns);
        let list = events
            .list(&ListParams::default().fields(&format!("involvedObject.kind={kind}")))
            .await
            .with_context(|| format!("listing {kind} events"))?;
        for e in list.items {
            let target = e.involved_object.name.as_deref().unwrap_or_default();
            let ours = match &object {
                Some(exact) => target == exact,
                None => target.starts_with(&format!("{name}-")),
            };
            if let (true, Some(event_name)) = (ours, e.metadata.name.as_deref()) {
                ignore_not_found(events.delete(event_name, &DeleteParams::default()).await)?;
            }
        }
    }
    Ok(())
}

/// Drops the `kubernetes` finalizer of a Terminating namespace and waits until it is gone.
async fn finalize_namespace(api: &Api<Namespace>, ns: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let Some(mut current) = api.get_opt(ns).await? else {
            return Ok(());
        };
        if Instant::now() > deadline {
            bail!("namespace {ns} still exists 30s after its deletion");
        }
        let has_finalizers = current
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.as_ref())
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            current.spec = Some(NamespaceSpec {
                finalizers: Some(Vec::new()),
            });
            match api
                .replace_subresource("finalize", ns, &PostParams::default(), &current)
                .await
            {
                Ok(_) => {}
                // Someone else changed it meanwhile: read again.
                Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("finalizing namespace {ns}")),
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A pod under construction: one container `main` with the requested resources, the test's
/// scheduler name and namespace, `terminationGracePeriodSeconds: 0`.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Pod,
    requests: BTreeMap<String, Quantity>,
}

impl PodBuilder {
    pub fn new(name: &str, namespace: &str, scheduler: &str) -> PodBuilder {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                scheduler_name: Some(scheduler.to_string()),
                termination_grace_period_seconds: Some(0),
                containers: vec![Container {
                    name: "main".into(),
                    image: Some("registry.invalid/e2e/fake:1".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        };
        PodBuilder {
            pod,
            requests: BTreeMap::new(),
        }
    }

    fn spec(&mut self) -> &mut PodSpec {
        self.pod.spec.get_or_insert_with(Default::default)
    }

    /// Any resource request.
    pub fn request(mut self, resource: &str, quantity: &str) -> Self {
        self.requests
            .insert(resource.to_string(), Quantity(quantity.to_string()));
        self
    }

    pub fn cpu(self, quantity: &str) -> Self {
        self.request("cpu", quantity)
    }

    pub fn memory(self, quantity: &str) -> Self {
        self.request("memory", quantity)
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.pod
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_string(), value.to_string());
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.pod
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_string(), value.to_string());
        self
    }

    /// Member of PodGroup `pg` (`scheduling.k8s.io/group-name`).
    pub fn group(self, pg: &str) -> Self {
        self.annotation(apis::keys::GROUP_NAME, pg)
    }

    /// Queue of a pod without PodGroup (`scheduling.volcano.sh/queue-name`).
    pub fn queue_annotation(self, queue: &str) -> Self {
        self.annotation(apis::keys::QUEUE_NAME, queue)
    }

    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.spec()
            .node_selector
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_string(), value.to_string());
        self
    }

    pub fn toleration(mut self, toleration: Toleration) -> Self {
        self.spec()
            .tolerations
            .get_or_insert_with(Vec::new)
            .push(toleration);
        self
    }

    pub fn affinity(mut self, affinity: Affinity) -> Self {
        self.spec().affinity = Some(affinity);
        self
    }

    pub fn priority_class(mut self, name: &str) -> Self {
        self.spec().priority_class_name = Some(name.to_string());
        self
    }

    /// Another `schedulerName` than the test's.
    pub fn scheduler_name(mut self, name: &str) -> Self {
        self.spec().scheduler_name = Some(name.to_string());
        self
    }

    pub fn build(mut self) -> Pod {
        if !self.requests.is_empty() {
            let requests = std::mem::take(&mut self.requests);
            if let Some(c) = self.spec().containers.first_mut() {
                c.resources = Some(ResourceRequirements {
                    requests: Some(requests),
                    ..Default::default()
                });
            }
        }
        self.pod
    }

    pub async fn create(self, ctx: &TestCtx) -> anyhow::Result<Pod> {
        ctx.create_pod(self.build()).await
    }
}

/// `(status, reason, message)` of a pod's `PodScheduled` condition.
pub fn pod_scheduled(pod: &Pod) -> Option<(String, String, String)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// What one poll of [`wait_for`] saw: done with a value, or not yet and why.
#[derive(Debug)]
pub enum Observed<T> {
    Done(T),
    Not(String),
}

/// A poll result [`wait_for`] understands.
pub trait Observation<T> {
    fn observe(self) -> Observed<T>;
}

impl<T> Observation<T> for Observed<T> {
    fn observe(self) -> Observed<T> {
        self
    }
}

impl<T> Observation<T> for Option<T> {
    fn observe(self) -> Observed<T> {
        match self {
            Some(v) => Observed::Done(v),
            None => Observed::Not("condition not met".into()),
        }
    }
}

impl<T> Observation<T> for Result<T, String> {
    fn observe(self) -> Observed<T> {
        match self {
            Ok(v) => Observed::Done(v),
            Err(seen) => Observed::Not(seen),
        }
    }
}

impl<T> Observation<T> for anyhow::Result<Option<T>> {
    fn observe(self) -> Observed<T> {
        match self {
            Ok(Some(v)) => Observed::Done(v),
            Ok(None) => Observed::Not("condition not met".into()),
            Err(e) => Observed::Not(format!("error: {e:#}")),
        }
    }
}

/// See [`TestCtx::wait_for`].
pub async fn wait_for<T, O, Fut>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> Fut,
) -> anyhow::Result<T>
where
    Fut: Future<Output = O>,
    O: Observation<T>,
{
    let start = Instant::now();
    loop {
        let seen = match f().await.observe() {
            Observed::Done(v) => return Ok(v),
            Observed::Not(seen) => seen,
        };
        if start.elapsed() >= timeout {
            bail!("timed out after {timeout:?} waiting for {what}; last seen: {seen}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The `invariant violation` lines in the logs of the daemons test `name` started (files
/// `<name>.log` and `<name>-<n>.log` written since `since`).
pub fn invariant_violations(
    log_dir: &Path,
    name: &str,
    since: std::time::SystemTime,
) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(log_dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = file.strip_suffix(".log") else {
            continue;
        };
        let ours = stem == name
            || stem
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let fresh = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if !ours || !fresh {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        found.extend(
            text.lines()
                .filter(|l| l.contains("invariant violation"))
                .map(|l| format!("{file}: {l}")),
        );
    }
    found
}

/// A port free on 127.0.0.1 right now (it may be taken again before it is used).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The default flags, minus those `extra` sets itself, then `extra`.
fn daemon_args(defaults: &[(&str, String)], extra: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    for (flag, value) in defaults {
        let overridden = extra
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")));
        if !overridden {
            args.push(format!("{flag}={value}"));
        }
    }
    args.extend(extra.iter().cloned());
    args
}

/// The value of `flag` in an argument list (`--flag=v` or `--flag v`), the last one winning.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let prefix = format!("{flag}=");
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix(&prefix) {
            found = Some(v);
        } else if a == flag {
            found = args.get(i + 1).map(String::as_str);
        }
    }
    found
}

/// A listen address as the daemon reads it (`:8080` means every interface).
fn connect_address(addr: &str) -> anyhow::Result<SocketAddr> {
    let full = match addr.strip_prefix(':') {
        Some(port) => format!("127.0.0.1:{port}"),
        None => addr.replace("0.0.0.0", "127.0.0.1"),
    };
    full.parse()
        .with_context(|| format!("address {addr:?} is not host:port"))
}

enum StartError {
    /// A listen port was taken between choosing and binding it; worth another try.
    PortTaken(anyhow::Error),
    Other(anyhow::Error),
}

/// A running `volcano-rs run`. Dropping it kills the process (SIGKILL) and reaps it.
pub struct Daemon {
    child: tokio::process::Child,
    pid: u32,
    metrics_addr: SocketAddr,
    healthz_addr: SocketAddr,
    log_path: PathBuf,
}

impl Daemon {
    /// Starts the daemon and waits until `/readyz` answers 200, or, with `answering_only`,
    /// answers at all (for tests of a daemon that is not meant to become ready).
    async fn start(
        env: &Env,
        args: &[String],
        rust_log: &str,
        log_path: &Path,
        answering_only: bool,
    ) -> Result<Daemon, StartError> {
        let other = StartError::Other;
        let metrics_addr = connect_address(flag_value(args, "--listen-address").unwrap_or(":8080"))
            .map_err(other)?;
        let healthz_addr =
            connect_address(flag_value(args, "--healthz-address").unwrap_or(":11251"))
                .map_err(other)?;
        let log = std::fs::File::create(log_path)
            .with_context(|| format!("creating {}", log_path.display()))
            .map_err(other)?;
        let log_err = log.try_clone().map_err(|e| other(e.into()))?;
        let child = tokio::process::Command::new(&env.daemon_bin)
            .arg("run")
            .args(args)
            .env("RUST_LOG", rust_log)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", env.daemon_bin.display()))
            .map_err(other)?;
        let pid = child
            .id()
            .context("the daemon exited at once")
            .map_err(other)?;
        record_pid(&env.log_dir, pid);
        let mut daemon = Daemon {
            child,
            pid,
            metrics_addr,
            healthz_addr,
            log_path: log_path.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = daemon.child.try_wait() {
                let tail = log_tail(log_path, 20);
                let error = anyhow!(
                    "daemon exited with {status} before it was ready; end of {}:\n{tail}",
                    log_path.display()
                );
                return Err(if tail.contains("Address already in use") {
                    StartError::PortTaken(error)
                } else {
                    StartError::Other(error)
                });
            }
            if daemon.ready().await
                || (answering_only && http_get(daemon.healthz_addr, "/readyz").await.is_ok())
            {
                return Ok(daemon);
            }
            if Instant::now() > deadline {
                return Err(other(anyhow!(
                    "daemon not ready after 60s; end of {}:\n{}",
                    log_path.display(),
                    log_tail(log_path, 20)
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Address of `/metrics`.
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics_addr
    }

    pub fn healthz_addr(&self) -> SocketAddr {
        self.healthz_addr
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// GET `/metrics`.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        let (status, body) = http_get(self.metrics_addr, "/metrics").await?;
        if status != 200 {
            bail!("/metrics answered {status}: {body}");
        }
        Ok(body)
    }

    /// True when `/readyz` on the health address answers 200.
    pub async fn ready(&self) -> bool {
        matches!(http_get(self.healthz_addr, "/readyz").await, Ok((200, _)))
    }

    /// The value of one sample in Prometheus text: the first line of metric `name` whose labels
    /// include every pair of `labels`.
    pub fn metric_value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        text.lines()
            .filter_map(parse_sample)
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
            })
            .map(|s| s.value)
    }

    /// SIGKILL now and reap (restart-safety tests).
    pub fn kill9(&mut self) {
        let _ = self.child.start_kill();
        self.reap_blocking();
    }

    /// SIGTERM, then wait for the exit (at most 30 s; then SIGKILL).
    pub async fn terminate(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Ok(status);
        }
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .context("running kill -TERM")?;
        if !sent.success() {
            bail!("kill -TERM {} failed: {sent}", self.pid);
        }
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => {
                self.kill9();
                bail!("daemon {} did not exit within 30s of SIGTERM", self.pid)
            }
        }
    }

    /// Waits (briefly, synchronously: also used from `drop`) for a killed child to be reaped.
    fn reap_blocking(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.start_kill();
            self.reap_blocking();
        }
    }
}

/// Appends a daemon's pid to `<log_dir>/pids`, so that leftovers of a crashed runner can be
/// found (see [`kill_leftover_daemons`]).
fn record_pid(log_dir: &Path, pid: u32) {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_dir.join("pids"));
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{pid}");
    }
}

/// Kills the daemons listed in `<log_dir>/pids` that are still running against `kubeconfig`
/// and whose runner is gone (checked in `/proc`, so a reused pid, a daemon of a runner using
/// another cluster, or one of a runner still at work is left alone). The file keeps only the
/// daemons left running. Returns how many were killed.
pub fn kill_leftover_daemons(log_dir: &Path, kubeconfig: &Path) -> usize {
    let path = log_dir.join("pids");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return 0;
    };
    let mut killed = 0;
    let mut kept = String::new();
    for pid in text.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !is_e2e_daemon(&cmdline, kubeconfig) {
            continue;
        }
        if parent_is_runner(pid) {
            kept.push_str(&format!("{pid}\n"));
            continue;
        }
        let ok = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        killed += usize::from(ok);
    }
    let _ = if kept.is_empty() {
        std::fs::remove_file(&path)
    } else {
        std::fs::write(&path, kept)
    };
    killed
}

/// True when the parent of `pid` is a live `volcano-rs-e2e` (a runner still using it).
fn parent_is_runner(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ppid …`; comm may contain spaces and parentheses.
    let Some(ppid) = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
    else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{ppid}/comm"))
        .is_ok_and(|comm| comm.trim() == "volcano-rs-e2e")
}

/// A `volcano-rs run` this harness started against `kubeconfig`: scheduler name `e2e-…`.
fn is_e2e_daemon(cmdline: &[u8], kubeconfig: &Path) -> bool {
    let kubeconfig_arg = format!("--kubeconfig={}", kubeconfig.display());
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let program_ok = args.first().is_some_and(|p| p.ends_with(b"volcano-rs"));
    program_ok
        && args.get(1) == Some(&&b"run"[..])
        && args.iter().any(|a| a.starts_with(b"--scheduler-name=e2e-"))
        && args.contains(&kubeconfig_arg.as_bytes())
}

/// The last `n` lines of a file (for error messages).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One `GET` over HTTP/1.0 (the daemon's endpoints are plain HTTP on loopback; no HTTP client
/// crate is needed for that). Returns status and body.
pub async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| anyhow!("GET http://{addr}{path}: no answer within 10s"))?
        .with_context(|| format!("GET http://{addr}{path}"))?;
    parse_response(&raw).with_context(|| format!("GET http://{addr}{path}"))
}

/// Status and body of a raw HTTP/1.x response (content-length, chunked or read-to-close).
fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, String)> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("response without a header end")?;
    let head = std::str::from_utf8(&raw[..split]).context("response head is not UTF-8")?;
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("chunk size line without CRLF")?;
        let size_text = std::str::from_utf8(&data[..eol]).context("chunk size is not text")?;
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .with_context(|| format!("bad chunk size {size_text:?}"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = data.get(..size).context("truncated chunk")?;
        out.extend_from_slice(chunk);
        data = data
            .get(size + 2..)
            .context("chunk without trailing CRLF")?;
    }
}

/// One sample line of the Prometheus text format.
#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

fn parse_sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ', '\t'])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '}' => break i,
                ',' | ' ' => {}
                '=' => {
                    if chars.next()?.1 != '"' {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '"' => break,
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            other => value.push(other),
                        }
                    }
                    labels.push((std::mem::take(&mut key), value));
                }
                other => key.push(other),
            }
        };
        rest = &inner[end + 1..];
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// CPU quantity in millicores ("4", "500m", "1.5", "2k"); `None` if it is not one.
pub fn cpu_millis(q: &str) -> Option<i64> {
    let q = q.trim();
    let (number, scale) = if let Some(n) = q.strip_suffix('m') {
        (n, 1.0)
    } else if let Some(n) = q.strip_suffix('k') {
        (n, 1_000_000.0)
    } else {
        (q, 1000.0)
    };
    let value: f64 = number.parse().ok()?;
    value.is_finite().then(|| (value * scale).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_parsed_with_labels_escapes_and_special_values() {
        let text = "# HELP x y\n# TYPE volcano_queue_weight gauge\n\
            volcano_queue_weight{queue_name=\"a\"} 1\n\
            volcano_queue_weight{queue_name=\"b\"} 3\n\
            volcano_x{k=\"with \\\"quote\\\", comma\",other=\"v\"} 2.5 1700000000\n\
            volcano_plain 7\n\
            volcano_h_bucket{le=\"+Inf\"} 4\n";
        assert_eq!(
            Daemon::metric_value(text, "volcano_queue_weight", &[("queue_name", "b")]),
            Some(3.0)
        );
        assert_eq!(
            Daemon::metric_value(text, "volcano_queue_weight", &[("queue_name", "c")]),
            None
        );
        assert_eq!(
            Daemon::metric_value(text, "volcano_x", &[("k", "with \"quote\", comma")]),
            Some(2.5)
        );
        assert_eq!(Daemon::metric_value(text, "volcano_plain", &[]), Some(7.0));
        assert_eq!(
            Daemon::metric_value(text, "volcano_h_bucket", &[("le", "+Inf")]),
            Some(4.0)
        );
        // A name is matched whole, not as a prefix.
        assert_eq!(Daemon::metric_value(text, "volcano_queue", &[]), None);
        assert_eq!(parse_sample("broken{a=\"b 1"), None);
        assert_eq!(parse_sample("x NaNa"), None);
    }

    #[test]
    fn responses_with_length_and_chunked_bodies() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        assert_eq!(parse_response(plain).ok(), Some((200, "ok".to_string())));
        let chunked =
            b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nnot\r\n6\r\n ready\r\n0\r\n\r\n";
        assert_eq!(
            parse_response(chunked).ok(),
            Some((503, "not ready".to_string()))
        );
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
        assert!(parse_response(b"garbage\r\n\r\n").is_err());
        let truncated = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nab";
        assert!(parse_response(truncated).is_err());
    }

    #[test]
    fn default_flags_yield_to_the_test_s_own() {
        let defaults = vec![
            ("--leader-elect", "false".to_string()),
            ("--schedule-period", "200ms".to_string()),
            ("--listen-address", "127.0.0.1:1".to_string()),
        ];
        let extra = vec![
            "--leader-elect=true".to_string(),
            "--listen-address".to_string(),
            "127.0.0.1:2".to_string(),
        ];
        let args = daemon_args(&defaults, &extra);
        assert_eq!(
            args,
            vec![
                "--schedule-period=200ms",
                "--leader-elect=true",
                "--listen-address",
                "127.0.0.1:2"
            ]
        );
        assert_eq!(flag_value(&args, "--listen-address"), Some("127.0.0.1:2"));
        assert_eq!(flag_value(&args, "--schedule-period"), Some("200ms"));
        // `--leader-elect-resource-name` is not `--leader-elect`.
        let args = daemon_args(&defaults, &["--leader-elect-resource-name=x".to_string()]);
        assert!(args.contains(&"--leader-elect=false".to_string()));
    }

    #[test]
    fn listen_addresses_become_connectable() {
        assert_eq!(connect_address(":8080").ok(), "127.0.0.1:8080".parse().ok());
        assert_eq!(
            connect_address("0.0.0.0:9").ok(),
            "127.0.0.1:9".parse().ok()
        );
        assert!(connect_address("nonsense").is_err());
    }

    #[test]
    fn cpu_quantities() {
        assert_eq!(cpu_millis("4"), Some(4000));
        assert_eq!(cpu_millis("500m"), Some(500));
        assert_eq!(cpu_millis("1.5"), Some(1500));
        assert_eq!(cpu_millis("2k"), Some(2_000_000));
        assert_eq!(cpu_millis("lots"), None);
    }

    #[test]
    fn test_names_must_be_dns_labels() {
        assert!(check_test_name("plain-pod").is_ok());
        assert!(check_test_name("Plain").is_err());
        assert!(check_test_name("-x").is_err());
        assert!(check_test_name("").is_err());
        assert!(check_test_name(&"a".repeat(41)).is_err());
    }

    #[test]
    fn only_harness_daemons_count_as_leftovers() {
        let kc = Path::new("/k/config");
        let ours =
            b"/w/target/debug/volcano-rs\0run\0--kubeconfig=/k/config\0--scheduler-name=e2e-gang\0";
        assert!(is_e2e_daemon(ours, kc));
        assert!(!is_e2e_daemon(ours, Path::new("/other/cluster")));
        assert!(!is_e2e_daemon(
            b"/w/target/debug/volcano-rs\0run\0--kubeconfig=/k/config\0--scheduler-name=volcano\0",
            kc
        ));
        assert!(!is_e2e_daemon(
            b"/bin/sleep\0run\0--kubeconfig=/k/config\0--scheduler-name=e2e-x\0",
            kc
        ));
        assert!(!is_e2e_daemon(b"", kc));
    }

    #[tokio::test]
    async fn wait_for_reports_the_last_observation() {
        let mut n = 0;
        let r: anyhow::Result<()> = wait_for("three polls", Duration::from_millis(250), || {
            n += 1;
            let seen = n;
            async move { Err::<(), _>(format!("poll {seen}")) }
        })
        .await;
        let message = format!("{:#}", r.err().map(|e| e.to_string()).unwrap_or_default());
        assert!(message.contains("three polls"), "{message}");
        assert!(message.contains("last seen: poll"), "{message}");
        let v = wait_for("done", Duration::from_secs(1), || async { Some(5) }).await;
        assert_eq!(v.ok(), Some(5));
    }
}
