//! Scheduling through the real API: plain pods next to another scheduler's pods, gangs, queue
//! shares, and placement constraints on real Node objects.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use apis::{PodGroupCondition, condition_reason, condition_status, condition_type};
use futures::TryFutureExt as _;
use futures::future::{BoxFuture, try_join_all};
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    NodeSpec, NodeStatus, PodAffinityTerm, PodAntiAffinity, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::harness::{Daemon, Env, TestCtx, cpu_millis, pod_scheduled};

const SHORT: Duration = Duration::from_secs(30);

/// Waits until every pod in `names` is bound; returns pod → node for the whole namespace.
async fn wait_bound(ctx: &TestCtx, names: &[&str]) -> Result<BTreeMap<String, String>> {
    ctx.wait_for(&format!("pods {names:?} bound"), SHORT, || async {
        let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        let missing: Vec<_> = names.iter().filter(|n| !bound.contains_key(**n)).collect();
        if missing.is_empty() {
            Ok(bound)
        } else {
            Err(format!("unbound: {missing:?}; bound: {bound:?}"))
        }
    })
    .await
}

/// How many sessions the daemon has run (the count of the e2e latency histogram).
async fn sessions(daemon: &Daemon) -> Result<f64> {
    let text = daemon.metrics().await?;
    Daemon::metric_value(
        &text,
        "volcano_e2e_scheduling_latency_milliseconds_count",
        &[],
    )
    .context("no volcano_e2e_scheduling_latency_milliseconds_count in /metrics")
}

/// Returns once the daemon has run `n` more sessions than now: "nothing happened" is then
/// a statement about real scheduling cycles, not about elapsed time.
async fn let_sessions_pass(ctx: &TestCtx, daemon: &Daemon, n: f64) -> Result<()> {
    let start = sessions(daemon).await?;
    ctx.wait_for(&format!("{n} more sessions"), SHORT, || async {
        match sessions(daemon).await {
            Ok(now) if now >= start + n => Ok(()),
            Ok(now) => Err(format!("{} sessions so far", now - start)),
            Err(e) => Err(format!("{e:#}")),
        }
    })
    .await
}

fn single(names: Vec<String>) -> Result<String> {
    names.into_iter().next().context("no node was created")
}

/// "A plain pod with schedulerName: volcano-rs and no PodGroup is bound; a pod for another
/// scheduler is left alone but its requests count against its node."
pub fn plain_pod(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(async move {
        let ctx = TestCtx::new(&env, "plain-pod").await?;
        let first = single(ctx.nodes("a", 1, "4", "8Gi", 110).await?)?;
        // Another scheduler's pod, bound by the test itself, takes 3 of the node's 4 cpus.
        ctx.pod("other")
            .scheduler_name("other")
            .cpu("3")
            .create(&ctx)
            .await?;
        ctx.bind("other", &first).await?;
        let _daemon = ctx.daemon(&[]).await?;

        // 1.5 cpus: more than the 1 left, so the other pod's requests must count for the pod
        // to be refused; less than the 1.8 the overcommit plugin admits (4 × 1.2 − 3), so the
        // refusal comes from the nodes' predicates, which name the resource, and not from the
        // enqueue gate.
        ctx.pod("mine").cpu("1500m").create(&ctx).await?;
        let message = ctx
            .wait_unschedulable("mine", "Insufficient cpu", SHORT)
            .await?;
        ensure!(
            message.contains("0/1 nodes are unavailable"),
            "expected the message to count the one node, got {message:?}"
        );
        let bound = ctx.bound_pods().await?;
        ensure!(
            !bound.contains_key("mine"),
            "expected pod mine (1.5 cpus) unbound while only 1 of 4 cpus is free, got {bound:?}"
        );

        let second = single(ctx.nodes("b", 1, "4", "8Gi", 110).await?)?;
        let bound = wait_bound(&ctx, &["mine"]).await?;
        ensure!(
            bound.get("mine") == Some(&second),
            "expected pod mine on the new node {second}, got {bound:?}"
        );
        let expected = format!("Successfully assigned {}/mine to {second}", ctx.ns);
        ctx.wait_for("a Scheduled event on pod mine", SHORT, || async {
            let events = ctx
                .events_for("Pod", "mine")
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

        // The other scheduler's pod: still where the test put it, no condition or event from us.
        let other = ctx.get_pod("other").await?;
        let node = other.spec.as_ref().and_then(|s| s.node_name.clone());
        ensure!(
            node.as_deref() == Some(first.as_str()),
            "expected pod other to stay on {first}, got {node:?}"
        );
        let condition = pod_scheduled(&other);
        ensure!(
            condition
                .as_ref()
                .is_none_or(|(status, _, _)| status == "True"),
            "expected no PodScheduled=False on pod other, got {condition:?}"
        );
        let events = ctx.events_for("Pod", "other").await?;
        ensure!(
            !events
                .iter()
                .any(|(r, _)| r == "Scheduled" || r == "FailedScheduling"),
            "expected no scheduling event on pod other, got {events:?}"
        );
        Ok(())
    })
}

/// `binds` of every session the daemon logged (JSON log format, debug level for the daemon
/// module), in order.
fn session_binds(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|v| v["fields"]["message"] == "session")
        .filter_map(|v| v["fields"]["binds"].as_u64())
        .collect()
}

fn pg_condition(pg: &apis::PodGroup, type_: &str) -> Option<PodGroupCondition> {
    pg.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .cloned()
}

/// "Gang: a PodGroup with minMember 4 whose pods fit only 3 at a time binds nothing and shows
/// the Unschedulable condition with a readable reason; after capacity is added, all 4 bind in
/// one cycle."
pub fn gang(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(async move {
        let ctx = TestCtx::new(&env, "gang").await?;
        ctx.nodes("a", 1, "3", "8Gi", 110).await?;
        let queue = ctx.queue("q", 1).await?;
        ctx.pod_group("pg", 4, &queue).await?;
        let pods = ["p0", "p1", "p2", "p3"];
        for name in pods {
            ctx.pod(name).cpu("1").group("pg").create(&ctx).await?;
        }
        // "One cycle" is checked on the daemon's own account: at debug level it logs every
        // session with the number of binds it decided, before any of them is sent. Watching
        // the API instead cannot tell one session's four concurrent binds from binds of two
        // sessions 200 ms apart without timing assumptions.
        let daemon = ctx
            .daemon_logging(
                "info,volcano_rs_cluster::scheduler=debug",
                &["--log-format", "json"],
            )
            .await?;

        let pg_api = ctx.pod_groups_api();
        let condition = ctx
            .wait_for(
                "PodGroup pg condition Unschedulable=True",
                SHORT,
                || async {
                    let pg = pg_api.get("pg").await.map_err(|e| e.to_string())?;
                    match pg_condition(&pg, condition_type::UNSCHEDULABLE) {
                        Some(c) if c.status == condition_status::TRUE => Ok(c),
                        _ => Err(format!("status {:?}", pg.status)),
                    }
                },
            )
            .await?;
        ensure!(
            condition.reason == condition_reason::NOT_ENOUGH_RESOURCES,
            "expected reason NotEnoughResources, got {condition:?}"
        );
        for part in [
            "tasks in gang unschedulable",
            "pod group is not ready",
            "4 minAvailable",
        ] {
            ensure!(
                condition.message.contains(part),
                "expected the Unschedulable message to contain {part:?}, got {:?}",
                condition.message
            );
        }
        // Several more cycles with 3 of 4 pods placeable: still nothing may bind.
        let_sessions_pass(&ctx, &daemon, 3.0).await?;
        let bound = ctx.bound_pods().await?;
        ensure!(
            bound.is_empty(),
            "expected no pod bound while only 3 of 4 fit, got {bound:?}"
        );
        let decided = session_binds(&daemon.log());
        ensure!(
            !decided.is_empty(),
            "expected session lines in the daemon log {}",
            daemon.log_path().display()
        );
        ensure!(
            decided.iter().all(|b| *b == 0),
            "expected no session to decide binds before capacity was added, got {decided:?}"
        );

        ctx.nodes("b", 1, "1", "8Gi", 110).await?;
        let bound = wait_bound(&ctx, &pods).await?;
        ensure!(
            bound.len() == 4,
            "expected exactly 4 pods bound, got {bound:?}"
        );
        let nonzero: Vec<u64> = session_binds(&daemon.log())
            .into_iter()
            .filter(|b| *b > 0)
            .collect();
        ensure!(
            nonzero == [4],
            "expected one session binding all 4 pods, got sessions with binds {nonzero:?}"
        );

        ctx.wait_for("PodGroup pg Running and Scheduled=True", SHORT, || async {
            let pg = pg_api.get("pg").await.map_err(|e| e.to_string())?;
            let scheduled = pg_condition(&pg, condition_type::SCHEDULED);
            let ok = pg.phase() == apis::pod_group_phase::RUNNING
                && scheduled.is_some_and(|c| c.status == condition_status::TRUE);
            if ok {
                Ok(())
            } else {
                Err(format!("status {:?}", pg.status))
            }
        })
        .await?;
        // The session that placed the gang said so in a Normal event, not in a Warning
        // "…unschedulable: pod group is ready".
        let ready_warnings: Vec<(String, String)> = ctx
            .events_for("PodGroup", "pg")
            .await?
            .into_iter()
            .filter(|(_, message)| message.contains("pod group is ready"))
            .filter(|(reason, _)| reason == "Unschedulable")
            .collect();
        ensure!(
            ready_warnings.is_empty(),
            "the placed gang got Warning events: {ready_warnings:?}"
        );
        Ok(())
    })
}

/// Bound pods per name prefix (`light-3` → `light`).
fn bound_per_queue(bound: &BTreeMap<String, String>) -> BTreeMap<String, i64> {
    let mut counts = BTreeMap::new();
    for pod in bound.keys() {
        let prefix = pod.rsplit_once('-').map_or(pod.as_str(), |(p, _)| p);
        *counts.entry(prefix.to_string()).or_default() += 1;
    }
    counts
}

/// "Queues: two queues with weights 1:3 and more demand than the cluster holds end with
/// allocated resources in proportion (within one pod), and the volcano_queue_* metrics say so."
pub fn queues(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(async move {
        let ctx = TestCtx::new(&env, "queues").await?;
        // 16 cpus for 40 one-cpu pods: proportion gives weight 1 a quarter (4) and weight 3
        // three quarters (12).
        ctx.nodes("n", 4, "4", "16Gi", 110).await?;
        let light = ctx.queue("light", 1).await?;
        let heavy = ctx.queue("heavy", 3).await?;
        let creations = (0..20).flat_map(|i| {
            [("light", &light), ("heavy", &heavy)].map(|(prefix, queue)| {
                ctx.pod(&format!("{prefix}-{i}"))
                    .cpu("1")
                    .queue_annotation(queue)
                    .create(&ctx)
            })
        });
        try_join_all(creations).await?;
        // Started after the pods exist, so the first session sees all the demand at once.
        let daemon = ctx.daemon(&[]).await?;

        let bound = ctx
            .wait_for(
                "16 of 40 pods bound (the cluster full)",
                Duration::from_secs(60),
                || async {
                    let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
                    if bound.len() >= 16 {
                        Ok(bound)
                    } else {
                        Err(format!("bound per queue {:?}", bound_per_queue(&bound)))
                    }
                },
            )
            .await?;
        let counts = bound_per_queue(&bound);
        let (n_light, n_heavy) = (
            counts.get("light").copied().unwrap_or(0),
            counts.get("heavy").copied().unwrap_or(0),
        );
        ensure!(
            (n_light - 4).abs() <= 1 && (n_heavy - 12).abs() <= 1 && n_light + n_heavy == 16,
            "expected 4 light and 12 heavy pods (±1), got {counts:?}"
        );

        let queues = ctx.queues_api();
        ctx.wait_for("Queue status.allocated = bound pods", SHORT, || async {
            let mut seen = Vec::new();
            for (queue, want) in [(&light, n_light), (&heavy, n_heavy)] {
                let q = queues.get(queue).await.map_err(|e| e.to_string())?;
                let cpu = q
                    .status
                    .as_ref()
                    .and_then(|s| s.allocated.get("cpu"))
                    .and_then(|c| cpu_millis(&c.0));
                seen.push((queue.clone(), cpu, want * 1000));
            }
            if seen.iter().all(|(_, cpu, want)| *cpu == Some(*want)) {
                Ok(())
            } else {
                Err(format!("(queue, allocated milli-cpu, expected): {seen:?}"))
            }
        })
        .await?;

        ctx.wait_for("volcano_queue_* metrics", SHORT, || async {
            let text = daemon.metrics().await.map_err(|e| format!("{e:#}"))?;
            let mut problems = Vec::new();
            for (queue, weight, deserved, allocated) in [
                (&light, 1.0, 4000.0, n_light as f64 * 1000.0),
                (&heavy, 3.0, 12000.0, n_heavy as f64 * 1000.0),
            ] {
                let value =
                    |name: &str| Daemon::metric_value(&text, name, &[("queue_name", queue)]);
                let w = value("volcano_queue_weight");
                let a = value("volcano_queue_allocated_milli_cpu");
                let d = value("volcano_queue_deserved_milli_cpu");
                if w != Some(weight) {
                    problems.push(format!("{queue}: weight {w:?}, expected {weight}"));
                }
                if a != Some(allocated) {
                    problems.push(format!("{queue}: allocated {a:?}, expected {allocated}"));
                }
                if d.is_none_or(|d| (d - deserved).abs() > 1000.0) {
                    problems.push(format!(
                        "{queue}: deserved {d:?}, expected {deserved} ± 1000"
                    ));
                }
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("; "))
            }
        })
        .await
    })
}

fn custom_node(name: &str, labels: &[(&str, &str)], taints: Vec<Taint>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: (!taints.is_empty()).then_some(taints),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("4".into())),
                ("memory".to_string(), Quantity("8Gi".into())),
                ("pods".to_string(), Quantity("110".into())),
            ])),
            ..Default::default()
        }),
    }
}

/// Required node affinity `pool In [a]` and required anti-affinity to `app=spread` pods per
/// hostname.
fn spread_affinity() -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: "pool".into(),
                        operator: "In".into(),
                        values: Some(vec!["a".into()]),
                    }]),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        }),
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".into(), "spread".into())])),
                    ..Default::default()
                }),
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// "Taints, node selectors and affinity are honoured on real Node objects."
pub fn placement(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(async move {
        let ctx = TestCtx::new(&env, "placement").await?;
        let taint_key = "e2e.volcano-rs/dedicated";
        let tainted = ctx
            .node_with(custom_node(
                "tainted",
                &[("zone", "t")],
                vec![Taint {
                    key: taint_key.into(),
                    value: Some("yes".into()),
                    effect: "NoSchedule".into(),
                    ..Default::default()
                }],
            ))
            .await?;
        let ssd = ctx
            .node_with(custom_node("ssd", &[("disk", "ssd")], Vec::new()))
            .await?;
        let pool_a0 = ctx
            .node_with(custom_node("a-0", &[("pool", "a")], Vec::new()))
            .await?;
        let pool_a1 = ctx
            .node_with(custom_node("a-1", &[("pool", "a")], Vec::new()))
            .await?;

        let toleration = Toleration {
            key: Some(taint_key.into()),
            operator: Some("Equal".into()),
            value: Some("yes".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        };
        ctx.pod("tolerant")
            .cpu("1")
            .node_selector("zone", "t")
            .toleration(toleration)
            .create(&ctx)
            .await?;
        ctx.pod("intolerant")
            .cpu("1")
            .node_selector("zone", "t")
            .create(&ctx)
            .await?;
        ctx.pod("ssd")
            .cpu("1")
            .node_selector("disk", "ssd")
            .create(&ctx)
            .await?;
        for i in 0..3 {
            ctx.pod(&format!("spread-{i}"))
                .cpu("1")
                .label("app", "spread")
                .affinity(spread_affinity())
                .create(&ctx)
                .await?;
        }
        // Unconstrained pods: 9 cpus are free outside the tainted node, so they never need it.
        for i in 0..4 {
            ctx.pod(&format!("free-{i}")).cpu("1").create(&ctx).await?;
        }
        let _daemon = ctx.daemon(&[]).await?;

        // Two of the three spread pods fit (one per pool-a node); which one is left is open.
        let fixed = ["tolerant", "ssd", "free-0", "free-1", "free-2", "free-3"];
        let mut bound = ctx
            .wait_for(
                &format!("pods {fixed:?} and two spread pods bound"),
                SHORT,
                || async {
                    let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
                    let spread = bound.keys().filter(|p| p.starts_with("spread-")).count();
                    if fixed.iter().all(|p| bound.contains_key(*p)) && spread == 2 {
                        Ok(bound)
                    } else {
                        Err(format!("bound {bound:?}"))
                    }
                },
            )
            .await?;
        ctx.wait_unschedulable("intolerant", "untolerated taint", SHORT)
            .await?;
        let spread_left: Vec<String> = (0..3)
            .map(|i| format!("spread-{i}"))
            .filter(|p| !bound.contains_key(p))
            .collect();
        let [left] = spread_left.as_slice() else {
            bail!("expected exactly one spread pod left unbound, got bound {bound:?}");
        };
        ctx.wait_unschedulable(left, "anti-affinity", SHORT).await?;
        // Read again after the waits: nothing else may have bound meanwhile.
        bound = ctx.bound_pods().await?;

        let on = |pod: &str| bound.get(pod).map(String::as_str);
        ensure!(
            on("tolerant") == Some(tainted.as_str()),
            "expected pod tolerant on {tainted}, got {:?}",
            on("tolerant")
        );
        ensure!(
            on("ssd") == Some(ssd.as_str()),
            "expected pod ssd on {ssd}, got {:?}",
            on("ssd")
        );
        let mut spread_nodes: Vec<&str> = bound
            .iter()
            .filter(|(pod, _)| pod.starts_with("spread-"))
            .map(|(_, node)| node.as_str())
            .collect();
        spread_nodes.sort_unstable();
        let mut pool = vec![pool_a0.as_str(), pool_a1.as_str()];
        pool.sort_unstable();
        ensure!(
            spread_nodes == pool,
            "expected the two bound spread pods on {pool:?}, one each, got {spread_nodes:?}"
        );
        let on_tainted: Vec<&String> = bound
            .iter()
            .filter(|(_, node)| **node == tainted)
            .map(|(pod, _)| pod)
            .collect();
        ensure!(
            on_tainted == ["tolerant"],
            "expected only pod tolerant on the tainted node, got {on_tainted:?}"
        );
        ensure!(
            !bound.contains_key("intolerant"),
            "expected pod intolerant unbound, got it on {:?}",
            on("intolerant")
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_lines_are_read_from_json_logs() {
        let log = concat!(
            r#"{"level":"INFO","fields":{"message":"caches synced"}}"#,
            "\n",
            r#"{"level":"DEBUG","fields":{"message":"session","cycle":1,"binds":0}}"#,
            "\n",
            "not json\n",
            r#"{"level":"DEBUG","fields":{"message":"session","cycle":2,"binds":4}}"#,
            "\n",
        );
        assert_eq!(session_binds(log), vec![0, 4]);
    }

    #[test]
    fn bound_pods_are_counted_per_queue_prefix() {
        let bound = BTreeMap::from([
            ("light-0".to_string(), "n0".to_string()),
            ("heavy-0".to_string(), "n0".to_string()),
            ("heavy-11".to_string(), "n1".to_string()),
        ]);
        let counts = bound_per_queue(&bound);
        assert_eq!(counts.get("light"), Some(&1));
        assert_eq!(counts.get("heavy"), Some(&2));
    }
}
