//! `rbac`: the chart's permissions are proven, not assumed. The daemon runs with a token of a
//! ServiceAccount that holds exactly the rules of the chart's ClusterRole and Role (read from
//! `deploy/volcano-rs.yaml`, the chart rendered with its defaults), with leader election on, and
//! does the basic work: binds a plain pod and a gang, writes PodGroup and Queue status, a pod's
//! PodScheduled condition, events, and keeps its Lease. Any denied call in its log fails the
//! test. The configuration runs `deviceshare` with vGPU and the node lock, so the daemon also
//! reads its device configuration ConfigMap under the chart's device configuration Role and
//! locks a node for a vGPU pod under the ClusterRole rendered with `nodeLock.enabled` (the
//! defaults plus nodes get/patch, which the test checks).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};

use crate::harness::{Env, LEASE_NAMESPACE, TestCtx, cpu_millis, pod_scheduled};

const NAME: &str = "rbac";
/// Name of the ServiceAccount (in the test namespace) and of the test's RBAC objects.
const IDENTITY: &str = "e2e-rbac";
/// The chart rendered with its defaults, relative to the workspace root.
const MANIFEST: &str = "deploy/volcano-rs.yaml";
/// The Lease name the chart's Role is limited to (its default release name).
const CHART_LEASE: &str = "volcano-rs";
const SHORT: Duration = Duration::from_secs(30);
/// The chart's Roles: the Lease one and the device configuration one.
const LEASE_ROLE: &str = "volcano-rs-leader-election";
const DEVICE_ROLE: &str = "volcano-rs-device-config";
/// The ConfigMap the chart's device configuration Role names, and where it lives.
const CHART_DEVICE_CONFIG: &str = "volcano-vgpu-device-config";
const DEVICE_CONFIG_NAMESPACE: &str = "kube-system";
/// This test's device configuration ConfigMap (so that it touches no other).
const DEVICE_CONFIG: &str = "e2e-rbac-device-config";
/// `deviceshare`'s arguments: the vGPU device, reading this test's device configuration.
const DEVICESHARE_ARGS: &str = "      deviceshare.VGPUEnable: true
      deviceshare.NodeLockEnable: true
      deviceshare.KnownGeometriesCMName: e2e-rbac-device-config
";

pub fn rbac(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(async move {
        let ctx = TestCtx::new(&env, NAME).await?;
        let outcome = run(&ctx).await;
        // The runner's cleanup knows nothing of RBAC objects, and the ServiceAccount would
        // outlive its namespace (no namespace controller deletes its contents).
        let removed = remove_grants(&ctx.env.client, &ctx.ns).await;
        match (outcome, removed) {
            (Ok(()), Ok(())) => Ok(()),
            (Ok(()), Err(e)) => Err(e.context("removing the test's RBAC objects")),
            (Err(e), Ok(())) => Err(e),
            (Err(e), Err(r)) => {
                Err(e.context(format!("(removing RBAC objects failed too: {r:#})")))
            }
        }
    })
}

async fn run(ctx: &TestCtx) -> Result<()> {
    let manifest_path = workspace_root().join(MANIFEST);
    let manifest = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("reading {}", manifest_path.display()))?;
    // The ClusterRole with the node lock on (`nodeLock.enabled`): the defaults' rules and the
    // node lock's, nothing else, so the defaults are what the rest of the work runs under.
    let cluster_rules = role_rules(&render_with_node_lock()?, "ClusterRole", None)?;
    let defaults = role_rules(&manifest, "ClusterRole", None)?;
    ensure!(
        triples(&cluster_rules) == &triples(&defaults) | &node_lock_triples(),
        "nodeLock.enabled should add only nodes get/patch to the ClusterRole: {cluster_rules:?}"
    );
    let lease_rules = rename_lease(
        role_rules(&manifest, "Role", Some(LEASE_ROLE))?,
        &ctx.lease_name(),
    )?;
    let device_rules = rename_device_config(role_rules(&manifest, "Role", Some(DEVICE_ROLE))?)?;

    remove_grants(&ctx.env.client, &ctx.ns)
        .await
        .context("removing RBAC objects of an earlier run")?;
    grant(ctx, cluster_rules, lease_rules).await?;
    grant_device_config(ctx, device_rules).await?;
    let kubeconfig = service_account_kubeconfig(ctx).await?;
    check_least_privilege(ctx, &kubeconfig).await?;

    ctx.nodes("n", 2, "4", "8Gi", 110).await?;
    let gpu = super::device_share::vgpu_node(
        ctx,
        "gpu",
        ["4", "16384", "100"],
        "GPU-R0,4,16384,NVIDIA-A10,true,hami-core:",
    )
    .await?;
    let queue = ctx.queue("q", 1).await?;
    let kubeconfig_arg = kubeconfig.display().to_string();
    let conf_path = ctx.env.log_dir.join(format!("{NAME}.conf"));
    std::fs::write(&conf_path, super::device_share::conf(DEVICESHARE_ARGS))
        .context("writing the scheduler configuration")?;
    let conf_arg = conf_path.display().to_string();
    // Event publishing failures are logged at debug level by the executor only.
    let daemon = ctx
        .daemon_logging(
            "info,volcano_rs_cluster::executor=debug",
            &[
                "--kubeconfig",
                &kubeconfig_arg,
                "--leader-elect=true",
                "--leader-elect-resource-namespace",
                LEASE_NAMESPACE,
                "--leader-elect-resource-name",
                &ctx.lease_name(),
                "--scheduler-conf",
                &conf_arg,
            ],
        )
        .await?;

    let checked = scheduling_checks(ctx, &queue).await;
    let checked = match checked {
        Ok(()) => node_lock_checks(ctx, &queue, &gpu).await,
        failed => failed,
    };
    let checked = match checked {
        Ok(()) => {
            ctx.wait_for("the device configuration read", SHORT, || async {
                if daemon.log().contains("device configuration read") {
                    Ok(())
                } else {
                    Err("no \"device configuration read\" in the log".to_string())
                }
            })
            .await
        }
        failed => failed,
    };
    // Denied calls are reported even when a check failed first: they are its likely cause.
    let denied = denied_lines(&daemon.log());
    if !denied.is_empty() {
        let failed_check = match &checked {
            Ok(()) => String::new(),
            Err(e) => format!("\n(and a check failed: {e:#})"),
        };
        // A denied call is retried every cycle: the first few lines name it.
        let shown: Vec<&str> = denied.iter().take(5).map(|l| clip(l, 500)).collect();
        bail!(
            "expected no denied API call with the chart's RBAC, got {} denied line(s) in {}, \
             first:\n{}{failed_check}",
            denied.len(),
            daemon.log_path().display(),
            shown.join("\n")
        );
    }
    checked
}

/// The basic work of a scheduler, each step a write the chart's RBAC must allow: binds (and
/// their Scheduled events), PodGroup status, Queue status, a pod condition, the Lease.
async fn scheduling_checks(ctx: &TestCtx, queue: &str) -> Result<()> {
    let client = &ctx.env.client;
    ctx.pod("plain")
        .cpu("1")
        .queue_annotation(queue)
        .create(ctx)
        .await?;
    ctx.pod_group("gang", 2, queue).await?;
    for name in ["g0", "g1"] {
        ctx.pod(name).cpu("1").group("gang").create(ctx).await?;
    }
    // Fits no node: its PodScheduled=False condition is a pods/status write.
    ctx.pod("stray")
        .cpu("1")
        .queue_annotation(queue)
        .node_selector("e2e.volcano-rs/absent", "true")
        .create(ctx)
        .await?;

    let bound = ctx
        .wait_for("pods plain, g0, g1 bound", SHORT, || async {
            let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
            if ["plain", "g0", "g1"].iter().all(|p| bound.contains_key(*p)) {
                Ok(bound)
            } else {
                Err(format!("bound: {bound:?}"))
            }
        })
        .await?;
    ensure!(
        !bound.contains_key("stray"),
        "expected pod stray (selecting no node) unbound, got {bound:?}"
    );

    let plain_node = bound.get("plain").cloned().unwrap_or_default();
    let expected = format!("Successfully assigned {}/plain to {plain_node}", ctx.ns);
    ctx.wait_for("a Scheduled event on pod plain", SHORT, || async {
        let events = ctx
            .events_for("Pod", "plain")
            .map_err(|e| format!("{e:#}"))
            .await?;
        if events
            .iter()
            .any(|(reason, message)| reason == "Scheduled" && *message == expected)
        {
            Ok(())
        } else {
            Err(format!(
                "events {events:?}; expected Scheduled {expected:?}"
            ))
        }
    })
    .await?;

    let pg_api = ctx.pod_groups_api();
    ctx.wait_for("PodGroup gang phase Running", SHORT, || async {
        let pg = pg_api.get("gang").await.map_err(|e| e.to_string())?;
        if pg.phase() == apis::pod_group_phase::RUNNING {
            Ok(())
        } else {
            Err(format!("status {:?}", pg.status))
        }
    })
    .await?;

    let queues = ctx.queues_api();
    ctx.wait_for(
        &format!("Queue {queue} status.allocated cpu = 3 (plain, g0, g1)"),
        SHORT,
        || async {
            let q = queues.get(queue).await.map_err(|e| e.to_string())?;
            let cpu = q
                .status
                .as_ref()
                .and_then(|s| s.allocated.get("cpu"))
                .and_then(|c| cpu_millis(&c.0));
            if cpu == Some(3000) {
                Ok(())
            } else {
                Err(format!("status {:?}", q.status))
            }
        },
    )
    .await?;

    ctx.wait_for("pod stray PodScheduled=False", SHORT, || async {
        let pod = ctx.get_pod("stray").map_err(|e| format!("{e:#}")).await?;
        match pod_scheduled(&pod) {
            Some((status, _, _)) if status == "False" => Ok(()),
            other => Err(format!("PodScheduled = {other:?}")),
        }
    })
    .await?;

    // The Lease was created and is renewed (get + update under the Role).
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let lease_name = ctx.lease_name();
    let holder_and_renewal = |lease: &Lease| {
        let spec = lease.spec.as_ref();
        (
            spec.and_then(|s| s.holder_identity.clone()),
            spec.and_then(|s| s.renew_time.as_ref().map(|t| t.0)),
        )
    };
    let first = holder_and_renewal(&leases.get(&lease_name).await.context("reading the Lease")?);
    ensure!(
        first.0.as_deref().is_some_and(|h| !h.is_empty()) && first.1.is_some(),
        "expected Lease {LEASE_NAMESPACE}/{lease_name} held and renewed, got (holder, renewTime) {first:?}"
    );
    ctx.wait_for(
        &format!("Lease {lease_name} renewed again"),
        SHORT,
        || async {
            let lease = leases.get(&lease_name).await.map_err(|e| e.to_string())?;
            let now = holder_and_renewal(&lease);
            if now.0 == first.0 && now.1 > first.1 {
                Ok(())
            } else {
                Err(format!("(holder, renewTime) {now:?}, first {first:?}"))
            }
        },
    )
    .await?;
    Ok(())
}

/// Workspace root: this crate sits at `<workspace>/crates/e2e`.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Creates the ServiceAccount and grants it the chart's rules: a ClusterRole with the
/// ClusterRole's rules, and a Role with the Lease rules in the Lease namespace.
async fn grant(
    ctx: &TestCtx,
    cluster_rules: Vec<PolicyRule>,
    lease_rules: Vec<PolicyRule>,
) -> Result<()> {
    let client = &ctx.env.client;
    let pp = PostParams::default();
    let meta = |namespace: Option<&str>| ObjectMeta {
        name: Some(IDENTITY.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(BTreeMap::from([ctx.label.clone()])),
        ..Default::default()
    };
    let subject = Subject {
        kind: "ServiceAccount".into(),
        name: IDENTITY.into(),
        namespace: Some(ctx.ns.clone()),
        ..Default::default()
    };
    let role_ref = |kind: &str| RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: kind.to_string(),
        name: IDENTITY.into(),
    };

    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &ctx.ns);
    let account = ServiceAccount {
        metadata: meta(Some(&ctx.ns)),
        ..Default::default()
    };
    accounts
        .create(&pp, &account)
        .await
        .context("creating the ServiceAccount")?;

    let cluster_role = ClusterRole {
        metadata: meta(None),
        rules: Some(cluster_rules),
        ..Default::default()
    };
    Api::<ClusterRole>::all(client.clone())
        .create(&pp, &cluster_role)
        .await
        .context("creating the ClusterRole")?;
    let cluster_binding = ClusterRoleBinding {
        metadata: meta(None),
        role_ref: role_ref("ClusterRole"),
        subjects: Some(vec![subject.clone()]),
    };
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&pp, &cluster_binding)
        .await
        .context("creating the ClusterRoleBinding")?;

    let role = Role {
        metadata: meta(Some(LEASE_NAMESPACE)),
        rules: Some(lease_rules),
    };
    Api::<Role>::namespaced(client.clone(), LEASE_NAMESPACE)
        .create(&pp, &role)
        .await
        .context("creating the Role")?;
    let binding = RoleBinding {
        metadata: meta(Some(LEASE_NAMESPACE)),
        role_ref: role_ref("Role"),
        subjects: Some(vec![subject]),
    };
    Api::<RoleBinding>::namespaced(client.clone(), LEASE_NAMESPACE)
        .create(&pp, &binding)
        .await
        .context("creating the RoleBinding")?;
    Ok(())
}

/// A vGPU pod binds, its bind taking the node's lock (node GET and PATCH).
async fn node_lock_checks(ctx: &TestCtx, queue: &str, node: &str) -> Result<()> {
    ctx.pod("gpu-pod")
        .cpu("1")
        .request("volcano.sh/vgpu-number", "1")
        .limit("volcano.sh/vgpu-number", "1")
        .request("volcano.sh/vgpu-memory", "1000")
        .limit("volcano.sh/vgpu-memory", "1000")
        .queue_annotation(queue)
        .create(ctx)
        .await?;
    let nodes: Api<Node> = Api::all(ctx.env.client.clone());
    ctx.wait_for("pod gpu-pod bound and node locked", SHORT, || async {
        let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        let n = nodes.get(node).await.map_err(|e| e.to_string())?;
        let locked = n
            .metadata
            .annotations
            .is_some_and(|a| a.contains_key("hamivgpu"));
        if bound.get("gpu-pod").map(String::as_str) == Some(node) && locked {
            Ok(())
        } else {
            Err(format!("bound: {bound:?}, node locked: {locked}"))
        }
    })
    .await
}

/// The chart rendered with `nodeLock.enabled=true` (the pinned helm, built once and cached).
fn render_with_node_lock() -> Result<String> {
    let root = workspace_root();
    let helm = std::process::Command::new(root.join("e2e/build-helm.sh"))
        .output()
        .context("running e2e/build-helm.sh")?;
    ensure!(helm.status.success(), "e2e/build-helm.sh failed");
    let helm = String::from_utf8(helm.stdout).context("helm path")?;
    let out = std::process::Command::new(helm.trim())
        .args(["template", "volcano-rs"])
        .arg(root.join("charts/volcano-rs"))
        .args([
            "--namespace",
            "volcano-system",
            "--set",
            "nodeLock.enabled=true",
        ])
        .output()
        .context("running helm template")?;
    ensure!(
        out.status.success(),
        "helm template failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).context("helm output")
}

/// (API group, resource, verb) of each rule.
fn triples(rules: &[PolicyRule]) -> std::collections::BTreeSet<(String, String, String)> {
    let mut out = std::collections::BTreeSet::new();
    for r in rules {
        for g in r.api_groups.iter().flatten() {
            for res in r.resources.iter().flatten() {
                for v in &r.verbs {
                    out.insert((g.clone(), res.clone(), v.clone()));
                }
            }
        }
    }
    out
}

fn node_lock_triples() -> std::collections::BTreeSet<(String, String, String)> {
    ["get", "patch"]
        .into_iter()
        .map(|v| (String::new(), "nodes".to_string(), v.to_string()))
        .collect()
}

/// Grants the chart's device configuration rules in the ConfigMap's namespace and creates the
/// test's ConfigMap there.
async fn grant_device_config(ctx: &TestCtx, rules: Vec<PolicyRule>) -> Result<()> {
    let client = &ctx.env.client;
    let pp = PostParams::default();
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(DEVICE_CONFIG_NAMESPACE.to_string()),
        labels: Some(BTreeMap::from([ctx.label.clone()])),
        ..Default::default()
    };
    let role = Role {
        metadata: meta(IDENTITY),
        rules: Some(rules),
    };
    Api::<Role>::namespaced(client.clone(), DEVICE_CONFIG_NAMESPACE)
        .create(&pp, &role)
        .await
        .context("creating the device configuration Role")?;
    let binding = RoleBinding {
        metadata: meta(IDENTITY),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: IDENTITY.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: IDENTITY.into(),
            namespace: Some(ctx.ns.clone()),
            ..Default::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(client.clone(), DEVICE_CONFIG_NAMESPACE)
        .create(&pp, &binding)
        .await
        .context("creating the device configuration RoleBinding")?;
    let cm = ConfigMap {
        metadata: meta(DEVICE_CONFIG),
        data: Some(BTreeMap::from([(
            "device-config.yaml".to_string(),
            "nvidia:\n  resourceCountName: volcano.sh/vgpu-number\n".to_string(),
        )])),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), DEVICE_CONFIG_NAMESPACE)
        .create(&pp, &cm)
        .await
        .context("creating the device configuration ConfigMap")?;
    Ok(())
}

/// The chart's device configuration Role names the default ConfigMap; this test's daemon reads
/// the test's own instead.
fn rename_device_config(mut rules: Vec<PolicyRule>) -> Result<Vec<PolicyRule>> {
    let mut renamed = 0;
    for names in rules.iter_mut().filter_map(|r| r.resource_names.as_mut()) {
        for name in names.iter_mut().filter(|n| *n == CHART_DEVICE_CONFIG) {
            *name = DEVICE_CONFIG.to_string();
            renamed += 1;
        }
    }
    ensure!(
        renamed > 0,
        "expected the chart's device configuration Role to name {CHART_DEVICE_CONFIG:?}, got {rules:?}"
    );
    Ok(rules)
}

/// Deletes the ServiceAccount and the RBAC objects of this test; absent ones are fine.
async fn remove_grants(client: &Client, ns: &str) -> Result<()> {
    let dp = DeleteParams::default();
    for (what, deleted) in [
        (
            "the device configuration RoleBinding",
            Api::<RoleBinding>::namespaced(client.clone(), DEVICE_CONFIG_NAMESPACE)
                .delete(IDENTITY, &dp)
                .await
                .map(|_| ()),
        ),
        (
            "the device configuration Role",
            Api::<Role>::namespaced(client.clone(), DEVICE_CONFIG_NAMESPACE)
                .delete(IDENTITY, &dp)
                .await
                .map(|_| ()),
        ),
        (
            "the device configuration ConfigMap",
            Api::<ConfigMap>::namespaced(client.clone(), DEVICE_CONFIG_NAMESPACE)
                .delete(DEVICE_CONFIG, &dp)
                .await
                .map(|_| ()),
        ),
    ] {
        absent_ok(deleted).with_context(|| format!("deleting {what}"))?;
    }
    absent_ok(
        Api::<ClusterRoleBinding>::all(client.clone())
            .delete(IDENTITY, &dp)
            .await,
    )
    .context("deleting the ClusterRoleBinding")?;
    absent_ok(
        Api::<ClusterRole>::all(client.clone())
            .delete(IDENTITY, &dp)
            .await,
    )
    .context("deleting the ClusterRole")?;
    absent_ok(
        Api::<RoleBinding>::namespaced(client.clone(), LEASE_NAMESPACE)
            .delete(IDENTITY, &dp)
            .await,
    )
    .context("deleting the RoleBinding")?;
    absent_ok(
        Api::<Role>::namespaced(client.clone(), LEASE_NAMESPACE)
            .delete(IDENTITY, &dp)
            .await,
    )
    .context("deleting the Role")?;
    absent_ok(
        Api::<ServiceAccount>::namespaced(client.clone(), ns)
            .delete(IDENTITY, &dp)
            .await,
    )
    .context("deleting the ServiceAccount")?;
    Ok(())
}

fn absent_ok<T>(deleted: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match deleted {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Mints a token for the ServiceAccount (TokenRequest, one hour) and writes a kubeconfig with
/// it and the admin kubeconfig's cluster (server, CA) to `<log_dir>/rbac.kubeconfig`.
async fn service_account_kubeconfig(ctx: &TestCtx) -> Result<PathBuf> {
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token = accounts
        .create_token_request(IDENTITY, &PostParams::default(), &request)
        .await
        .context("requesting a ServiceAccount token")?
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .context("the TokenRequest came back without a token")?;

    let admin = kube::config::Kubeconfig::read_from(&ctx.env.kubeconfig)
        .with_context(|| format!("reading {}", ctx.env.kubeconfig.display()))?;
    let context_name = admin
        .current_context
        .as_deref()
        .context("the admin kubeconfig has no current-context")?;
    let cluster_name = admin
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .with_context(|| format!("the admin kubeconfig has no context {context_name}"))?;
    let cluster = admin
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .with_context(|| format!("the admin kubeconfig has no cluster {cluster_name}"))?;
    // JSON is YAML, so this is a valid kubeconfig file.
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": IDENTITY, "user": {"token": token}}],
        "contexts": [{
            "name": IDENTITY,
            "context": {"cluster": cluster_name, "user": IDENTITY, "namespace": ctx.ns},
        }],
        "current-context": IDENTITY,
    });
    let path = ctx.env.log_dir.join(format!("{NAME}.kubeconfig"));
    // It holds a bearer token: readable by its owner only.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(serde_json::to_string_pretty(&kubeconfig)?.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The token must really be the ServiceAccount's and limited by RBAC: otherwise "nothing was
/// denied" proves nothing. Reading Secrets is granted by no rule of the chart.
async fn check_least_privilege(ctx: &TestCtx, kubeconfig: &Path) -> Result<()> {
    let config = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
            .await
            .with_context(|| format!("kubeconfig {}", kubeconfig.display()))?;
    let client = Client::try_from(config).context("building the ServiceAccount's client")?;
    let user = format!("system:serviceaccount:{}:{IDENTITY}", ctx.ns);
    let secrets: Api<Secret> = Api::namespaced(client, &ctx.ns);
    match secrets.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains(&user) => Ok(()),
        other => bail!(
            "expected listing Secrets with the token to be forbidden for {user}, got {:?}",
            other.map(|l| l.items.len())
        ),
    }
}

/// The `rules` of the one document of `kind` (`ClusterRole` or `Role`) in a rendered manifest.
///
/// Reads only what the chart's RBAC templates produce: a top-level `rules:` whose items hold
/// `key: [flow, list]` fields. Anything else is an error, so a change of the chart's layout
/// fails the test instead of silently granting something else.
fn role_rules(manifest: &str, kind: &str, name: Option<&str>) -> Result<Vec<PolicyRule>> {
    let kind_line = format!("kind: {kind}");
    let name_line = name.map(|n| format!("name: {n}"));
    let documents: Vec<&str> = manifest
        .split("\n---")
        .filter(|doc| doc.lines().any(|l| l.trim_end() == kind_line))
        .filter(|doc| {
            name_line
                .as_ref()
                .is_none_or(|n| doc.lines().any(|l| l.trim() == n))
        })
        .collect();
    let [document] = documents[..] else {
        bail!(
            "expected exactly one {kind} in {MANIFEST}, found {}",
            documents.len()
        );
    };
    let mut lines = document.lines().skip_while(|l| l.trim_end() != "rules:");
    if lines.next().is_none() {
        bail!("the {kind} in {MANIFEST} has no top-level rules:");
    }
    let mut rules: Vec<PolicyRule> = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // The next top-level key ends the list.
        if !line.starts_with(' ') && !line.starts_with('-') {
            break;
        }
        let field = match trimmed.strip_prefix("- ") {
            Some(rest) => {
                rules.push(PolicyRule::default());
                rest
            }
            None => trimmed,
        };
        let rule = rules
            .last_mut()
            .with_context(|| format!("{kind} rules: field outside a rule: {line:?}"))?;
        let (key, value) = field
            .split_once(':')
            .with_context(|| format!("{kind} rules: not a `key: value` line: {line:?}"))?;
        let values = flow_list(value.trim())
            .with_context(|| format!("{kind} rules: unsupported value in {line:?}"))?;
        match key.trim() {
            "apiGroups" => rule.api_groups = Some(values),
            "resources" => rule.resources = Some(values),
            "resourceNames" => rule.resource_names = Some(values),
            "nonResourceURLs" => rule.non_resource_urls = Some(values),
            "verbs" => rule.verbs = values,
            other => bail!("{kind} rules: unknown field {other:?}"),
        }
    }
    ensure!(!rules.is_empty(), "the {kind} in {MANIFEST} has no rules");
    if let Some(rule) = rules.iter().find(|r| r.verbs.is_empty()) {
        bail!("{kind} rule without verbs: {rule:?}");
    }
    Ok(rules)
}

/// `["a", "b"]`, `[a, 'b']` or `[]` as strings.
fn flow_list(value: &str) -> Result<Vec<String>> {
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .context("expected a flow list [..]")?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|item| {
            let item = item.trim();
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|q| item.strip_prefix(*q).and_then(|i| i.strip_suffix(*q)))
                .unwrap_or(item);
            ensure!(
                !unquoted.contains(['"', '\'', '[', ']', '{', '}']),
                "unsupported list item {item:?}"
            );
            Ok(unquoted.to_string())
        })
        .collect()
}

/// The chart limits `get`/`update` of Leases to its own Lease name; this test's daemon uses the
/// test's Lease instead, so that it never touches another test's (or a real release's) Lease.
/// Every other part of the rules stays as the chart has it.
fn rename_lease(mut rules: Vec<PolicyRule>, lease: &str) -> Result<Vec<PolicyRule>> {
    let mut renamed = 0;
    for names in rules.iter_mut().filter_map(|r| r.resource_names.as_mut()) {
        for name in names.iter_mut().filter(|n| *n == CHART_LEASE) {
            *name = lease.to_string();
            renamed += 1;
        }
    }
    ensure!(
        renamed > 0,
        "expected the chart's Role to name the Lease {CHART_LEASE:?}, got rules {rules:?}"
    );
    Ok(rules)
}

/// Log lines that report a denied API call: "forbidden" in any case, or a 403 status code
/// standing alone (not part of a longer number or of a duration such as `403ms`).
fn denied_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| line.to_ascii_lowercase().contains("forbidden") || has_status_403(line))
        .map(str::to_string)
        .collect()
}

/// At most `max` bytes of `line`, cut at a character boundary.
fn clip(line: &str, max: usize) -> &str {
    let mut end = max.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

fn has_status_403(line: &str) -> bool {
    let bytes = line.as_bytes();
    let part_of_word = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'_';
    line.match_indices("403").any(|(i, _)| {
        let before = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
        let after = bytes.get(i + 3).copied();
        !before.is_some_and(part_of_word) && !after.is_some_and(part_of_word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RENDERED: &str = "\
---
# Source: volcano-rs/templates/clusterrole.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: volcano-rs
rules:
  # Binding.
  - apiGroups: [\"\"]
    resources: [\"pods/binding\"]
    verbs: [\"create\"]
  - apiGroups: ['scheduling.volcano.sh']
    resources: [queues, queues/status]
    verbs: [\"get\", \"patch\"]
---
kind: ClusterRoleBinding
rules:
  - apiGroups: [\"\"]
    verbs: [\"everything\"]
---
kind: Role
metadata:
  name: volcano-rs-leader-election
rules:
- apiGroups: [\"coordination.k8s.io\"]
  resources: [\"leases\"]
  verbs: [\"create\"]
- apiGroups: [\"coordination.k8s.io\"]
  resources: [\"leases\"]
  resourceNames: [\"volcano-rs\"]
  verbs: [\"get\", \"update\"]
roleRef:
  kind: Role
";

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cluster_role_rules_are_read_exactly() {
        let rules = role_rules(RENDERED, "ClusterRole", None).expect("valid");
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert_eq!(rules[0].api_groups, Some(strings(&[""])));
        assert_eq!(rules[0].resources, Some(strings(&["pods/binding"])));
        assert_eq!(rules[0].verbs, strings(&["create"]));
        assert_eq!(rules[0].resource_names, None);
        assert_eq!(
            rules[1].api_groups,
            Some(strings(&["scheduling.volcano.sh"]))
        );
        assert_eq!(
            rules[1].resources,
            Some(strings(&["queues", "queues/status"]))
        );
        assert_eq!(rules[1].verbs, strings(&["get", "patch"]));
    }

    #[test]
    fn role_rules_stop_at_the_next_top_level_key_and_the_lease_is_renamed() {
        let rules = role_rules(RENDERED, "Role", None).expect("valid");
        assert_eq!(rules.len(), 2, "{rules:?}");
        let rules = rename_lease(rules, "e2e-rbac").expect("names the chart's lease");
        assert_eq!(rules[0].resource_names, None);
        assert_eq!(rules[1].resource_names, Some(strings(&["e2e-rbac"])));
        assert_eq!(rules[1].verbs, strings(&["get", "update"]));
        // Without the chart's Lease name there is nothing to adjust: the chart changed.
        let unnamed = role_rules(RENDERED, "ClusterRole", None).expect("valid");
        assert!(rename_lease(unnamed, "e2e-rbac").is_err());
    }

    #[test]
    fn unexpected_layouts_are_errors() {
        assert!(role_rules("kind: Role\nmetadata: {}\n", "Role", None).is_err());
        assert!(role_rules("kind: ClusterRole\nrules:\n", "ClusterRole", None).is_err());
        let block_list = "kind: Role\nrules:\n  - verbs:\n    - get\n";
        assert!(role_rules(block_list, "Role", None).is_err());
        let unknown = "kind: Role\nrules:\n  - verbs: [get]\n    colour: [red]\n";
        assert!(role_rules(unknown, "Role", None).is_err());
        let twice =
            "kind: Role\nrules:\n  - verbs: [get]\n---\nkind: Role\nrules:\n  - verbs: [get]\n";
        assert!(role_rules(twice, "Role", None).is_err());
        assert!(role_rules(RENDERED, "Nothing", None).is_err());
        assert!(flow_list("[\"a\", [b]]").is_err());
        assert_eq!(flow_list("[]").ok(), Some(Vec::new()));
    }

    #[test]
    fn the_shipped_manifest_grants_binding_and_the_lease() {
        let path = workspace_root().join(MANIFEST);
        let manifest = std::fs::read_to_string(&path).expect("deploy/volcano-rs.yaml exists");
        let cluster = role_rules(&manifest, "ClusterRole", None).expect("chart ClusterRole");
        assert!(
            cluster.iter().any(|r| r
                .resources
                .as_ref()
                .is_some_and(|x| x.contains(&"pods/binding".to_string()))
                && r.verbs.contains(&"create".to_string())),
            "{cluster:?}"
        );
        let role = role_rules(&manifest, "Role", Some(LEASE_ROLE)).expect("chart Role");
        assert!(rename_lease(role, "e2e-rbac").is_ok());
        let device = role_rules(&manifest, "Role", Some(DEVICE_ROLE)).expect("device Role");
        assert!(rename_device_config(device).is_ok());
    }

    #[test]
    fn denials_are_found_and_lookalikes_are_not() {
        let log = "\
2025-01-01T10:00:00.403Z INFO session took 403ms
INFO resourceVersion=14031 bound
WARN watch error; retrying with backoff error=ApiError: pods is forbidden: User \"x\" cannot list
DEBUG event not published error=ApiError: Forbidden (ErrorResponse { code: 403 })
INFO status 403, giving up
INFO queue weight 1.403
";
        let denied = denied_lines(log);
        assert_eq!(denied.len(), 3, "{denied:?}");
        assert!(denied[0].contains("forbidden"));
        assert!(denied[2].contains("status 403,"));
        assert!(denied_lines("INFO all fine\n").is_empty());
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(clip("abcdef", 3), "abc");
        assert_eq!(clip("ab", 10), "ab");
        assert_eq!(clip("aé", 2), "a");
    }
}
