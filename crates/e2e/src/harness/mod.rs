//! What every e2e test needs: a per-test namespace, KWOK nodes, Queues, PodGroups and Pods on the
//! local control plane (e2e/README.md), a `volcano-rs run` daemon of its own, polling with
//! deadlines, and a cleanup that leaves nothing behind.
//!
//! Isolation between tests that run at the same time is by construction: test `<t>` uses the
//! namespace `e2e-<t>`, the scheduler name `e2e-<t>`, nodes labelled `e2e.volcano-rs/test=<t>`
//! (its daemon runs with the matching `--node-selector`, so it neither sees nor fills other
//! tests' nodes), cluster-scoped objects carrying that label (Queues, PriorityClasses,
//! HyperNodes) and the
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
    NodeSpec, NodeStatus, ObjectReference, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource, Pod, PodSpec, ResourceQuota, ResourceRequirements,
    Toleration, Volume,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Label every node and cluster-scoped object of a test carries; the value is the test name.
mod daemon;
mod http;
mod pods;

pub use daemon::*;
pub use http::*;
pub use pods::*;

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

/// The environment from `KUBECONFIG`, `VOLCANO_RS_BIN`, `CARGO_TARGET_DIR` and `E2E_LOG_DIR`;
/// fails when the API server does not answer or the daemon binary is missing.
pub async fn environment() -> anyhow::Result<Env> {
    let kubeconfig = PathBuf::from(
        std::env::var_os("KUBECONFIG")
            .context("KUBECONFIG is not set (make cluster-up; source e2e/env.sh)")?,
    );
    let config = kube::config::Kubeconfig::read_from(&kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", kubeconfig.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
            .await
            .with_context(|| format!("kubeconfig {}", kubeconfig.display()))?;
    let client = kube::Client::try_from(config).context("building the API client")?;
    client
        .apiserver_version()
        .await
        .context("the API server does not answer (is the cluster up? make cluster-up)")?;

    // This crate sits at <workspace>/crates/e2e.
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let daemon_bin = std::env::var_os("VOLCANO_RS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("debug/volcano-rs"));
    if !daemon_bin.is_file() {
        bail!(
            "daemon binary {} not found (cargo build -p volcano-rs, or set VOLCANO_RS_BIN)",
            daemon_bin.display()
        );
    }
    let log_dir = std::env::var_os("E2E_LOG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("e2e-logs"));
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    Ok(Env {
        client,
        kubeconfig: kubeconfig.canonicalize().unwrap_or(kubeconfig),
        daemon_bin: daemon_bin.canonicalize().unwrap_or(daemon_bin),
        log_dir: log_dir.canonicalize().unwrap_or(log_dir),
    })
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
    /// PriorityClass, Namespace and HyperNode events in any namespace.
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
            "Queue" | "Node" | "Lease" | "PriorityClass" | "Namespace" | "HyperNode"
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

    /// [`Self::daemon`] with this scheduler configuration, written to `<log_dir>/<test>.conf`.
    pub async fn daemon_with_conf(&self, conf: &str) -> anyhow::Result<Daemon> {
        let path = self.env.log_dir.join(format!("{}.conf", self.name));
        std::fs::write(&path, conf).context("writing the scheduler configuration")?;
        let path = path.display().to_string();
        self.daemon(&["--scheduler-conf", &path]).await
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
        let program = daemon::Program {
            bin: &self.env.daemon_bin,
            subcommand: Some("run"),
            ready_path: "/readyz",
        };
        let flags = |ports: (u16, u16)| {
            let mut f = self.scheduler_flags(ports);
            f.extend([
                ("--leader-elect-resource-name", self.lease_name()),
                (
                    "--leader-elect-resource-namespace",
                    LEASE_NAMESPACE.to_string(),
                ),
                ("--schedule-period", "200ms".to_string()),
            ]);
            f
        };
        self.start_scheduler(&program, rust_log, flags, extra_args, answering_only)
            .await
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
        // Claims and volumes carry protection finalizers that only controllers not running
        // here would remove.
        delete_unprotected(
            &Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns),
            &all,
        )
        .await
        .context("deleting PersistentVolumeClaims")?;
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
    delete_unprotected(&Api::<PersistentVolume>::all(client.clone()), &by_label)
        .await
        .context("deleting PersistentVolumes")?;
    Api::<StorageClass>::all(client.clone())
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .context("deleting StorageClasses")?;
    Api::<CSINode>::all(client.clone())
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .context("deleting CSINodes")?;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    classes
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .context("deleting PriorityClasses")?;
    // A cluster without the HyperNode CRD answers 404.
    ignore_not_found(
        Api::<apis::HyperNode>::all(client.clone())
            .delete_collection(&DeleteParams::default(), &by_label)
            .await,
    )
    .context("deleting HyperNodes")?;
    ignore_not_found(
        Api::<apis::Numatopology>::all(client.clone())
            .delete_collection(&DeleteParams::default(), &by_label)
            .await,
    )
    .context("deleting Numatopologies")?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    ignore_not_found(
        leases
            .delete(&format!("e2e-{name}"), &DeleteParams::default())
            .await,
    )
    .context("deleting the Lease")?;
    // Queue, HyperNode and Lease events are recorded in `default` and the Lease namespace.
    for (ns, kind, object) in [
        ("default", "Queue", None),
        ("default", "HyperNode", None),
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

/// Deletes the listed objects after clearing their finalizers.
async fn delete_unprotected<K>(api: &Api<K>, list: &ListParams) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    for object in api.list(list).await?.items {
        let Some(name) = object.meta().name.clone() else {
            continue;
        };
        let clear = serde_json::json!({"metadata": {"finalizers": null}});
        ignore_not_found(
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&clear))
                .await
                .map(|_| ()),
        )?;
        ignore_not_found(
            api.delete(&name, &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
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

/// The lines of the logs of the daemons test `name` started (files `<name>.log` and
/// `<name>-<n>.log` written since `since`) that no test may produce: an invariant violation,
/// or a session that failed (it panicked: the next one may still place the pods, so a test
/// that only waits for them would not notice).
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
                .filter(|l| l.contains("invariant violation") || l.contains("session failed"))
                .map(|l| format!("{file}: {l}")),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_and_failed_sessions_of_the_test_s_own_logs_are_found() {
        let dir =
            std::env::temp_dir().join(format!("volcano-rs-e2e-faults-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let since = std::time::SystemTime::now() - Duration::from_secs(1);
        let lines = "INFO started\n\
            ERROR volcano_rs_cluster::scheduler: session failed; next one in a period error=x\n\
            WARN invariant violation: idle below zero\n\
            INFO bound\n";
        std::fs::write(dir.join("case.log"), lines).expect("write");
        std::fs::write(dir.join("case-2.log"), "ERROR session failed\n").expect("write");
        // Another test's logs, and a name that only starts like this one's.
        std::fs::write(dir.join("other.log"), lines).expect("write");
        std::fs::write(dir.join("case-x.log"), lines).expect("write");
        let mut found = invariant_violations(&dir, "case", since);
        found.sort();
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].starts_with("case-2.log: "));
        assert!(found.iter().any(|l| l.contains("session failed; next one")));
        assert!(found.iter().any(|l| l.contains("invariant violation")));
        let _ = std::fs::remove_dir_all(&dir);
    }

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
        let volcano = b"/c/vc-scheduler\0--kubeconfig=/k/config\0--scheduler-name=e2e-bench\0";
        assert!(is_e2e_daemon(volcano, kc));
        assert!(!is_e2e_daemon(
            b"/w/target/debug/volcano-rs\0--kubeconfig=/k/config\0--scheduler-name=e2e-x\0",
            kc
        ));
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
