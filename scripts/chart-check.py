#!/usr/bin/env python3
"""Checks the rendered volcano-rs chart against what the daemon needs and the issue promises.

Usage: chart-check.py defaults RENDERED.yaml NAMESPACE
       chart-check.py all-on   RENDERED.yaml NAMESPACE

`defaults` checks the render with default values: the Deployment (2 replicas, leader election
in the release namespace, probes, hardening, requests, downward API), the scheduler
configuration (identical to config/volcano-chart.conf), the exact RBAC rules, the PDB, the
metrics Service, and that the optional objects are absent. `all-on` checks that the optional
objects appear. Exits 1 with one line per problem.
"""

import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    sys.exit("chart-check.py needs PyYAML (Debian: python3-yaml)")

REPO = Path(__file__).resolve().parent.parent

# (API group, resource, verb) the daemon calls, cluster-wide: crates/cluster/src/watch.rs
# (list+watch of twelve kinds), executor.rs (bind, pod status, eviction delete, PodGroup patch,
# Queue status patch, events), executor/volumes.rs (claim patch, volume get/update),
# queues.rs (queue get/create). Widening the ClusterRole must be
# a deliberate change here too.
EXPECTED_CLUSTER_RULES = {
    *(("", r, v) for r in ("pods", "nodes", "namespaces", "resourcequotas") for v in ("list", "watch")),
    ("", "pods", "delete"),
    ("", "pods/binding", "create"),
    ("", "pods/status", "patch"),
    ("scheduling.k8s.io", "priorityclasses", "list"),
    ("scheduling.k8s.io", "priorityclasses", "watch"),
    ("policy", "poddisruptionbudgets", "list"),
    ("policy", "poddisruptionbudgets", "watch"),
    ("scheduling.volcano.sh", "podgroups", "list"),
    ("scheduling.volcano.sh", "podgroups", "watch"),
    ("scheduling.volcano.sh", "podgroups", "patch"),
    ("scheduling.volcano.sh", "queues", "get"),
    ("scheduling.volcano.sh", "queues", "list"),
    ("scheduling.volcano.sh", "queues", "watch"),
    ("scheduling.volcano.sh", "queues", "create"),
    ("scheduling.volcano.sh", "queues/status", "patch"),
    ("", "events", "create"),
    *(("", r, v) for r in ("persistentvolumeclaims", "persistentvolumes") for v in ("list", "watch")),
    ("", "persistentvolumeclaims", "patch"),
    ("", "persistentvolumes", "get"),
    ("", "persistentvolumes", "update"),
    *(("storage.k8s.io", r, v) for r in ("storageclasses", "csinodes") for v in ("list", "watch")),
    ("topology.volcano.sh", "hypernodes", "list"),
    ("topology.volcano.sh", "hypernodes", "watch"),
    ("nodeinfo.volcano.sh", "numatopologies", "list"),
    ("nodeinfo.volcano.sh", "numatopologies", "watch"),
}
EXPECTED_LEASE_VERBS = {"get", "create", "update"}
# nodeLock.enabled: the node lock's GET and resource-versioned PATCH (executor/node_lock.rs).
NODE_LOCK_RULES = {("", "nodes", "get"), ("", "nodes", "patch")}
# deviceConfig.read: one GET of the device configuration ConfigMap (device_config.rs).
DEVICE_CONFIG_RULES = {("", "configmaps", "get")}

problems = []


def expect(cond, message):
    if not cond:
        problems.append(message)


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def one(docs, kind):
    found = by_kind(docs, kind)
    expect(len(found) == 1, f"expected one {kind}, found {len(found)}")
    return found[0] if found else {}


def rule_triples(rules):
    return {
        (g, r, v)
        for rule in rules
        for g in rule.get("apiGroups", [])
        for r in rule.get("resources", [])
        for v in rule.get("verbs", [])
    }


def check_rbac_comments():
    """Every rule of the ClusterRole template carries a comment saying which call needs it."""
    text = (REPO / "charts/volcano-rs/templates/clusterrole.yaml").read_text()
    rules = text.split("rules:", 1)[1].split("\n---", 1)[0].splitlines()
    for prev, line in zip([""] + rules, rules):
        if line.strip().startswith("- apiGroups:") and not prev.strip().startswith("#"):
            problems.append(f"clusterrole.yaml: rule without a comment justifying it: {line.strip()}")


def check_defaults(docs, ns):
    chart = yaml.safe_load((REPO / "charts/volcano-rs/Chart.yaml").read_text())
    dep = one(docs, "Deployment")
    spec = dep.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    expect(spec.get("replicas") == 2, "Deployment: replicas should default to 2")
    containers = pod.get("containers", [])
    expect(len(containers) == 1, "Deployment: one container expected")
    c = containers[0] if containers else {}
    args = c.get("args", [])
    expect(args[:1] == ["run"], "container args must start with the `run` subcommand")
    for want in (
        "--leader-elect=true",
        "--leader-elect-resource-name=volcano-rs",
        f"--leader-elect-resource-namespace={ns}",
        "--scheduler-name=volcano-rs",
        "--scheduler-conf=/etc/volcano-rs/volcano-scheduler.conf",
        "--listen-address=:8080",
        "--healthz-address=:11251",
    ):
        expect(want in args, f"container args lack {want}")
    # Only these flags may be repeated; clap refuses any other flag given twice.
    flags = [a.split("=", 1)[0] for a in args if a.startswith("--")]
    repeated = {f for f in flags if flags.count(f) > 1} - {"--scheduler-name", "--node-selector"}
    expect(not repeated, f"flags given twice (the daemon refuses them): {sorted(repeated)}")
    expect(
        c.get("image") == f"ghcr.io/volcano-rs/volcano-rs:{chart['appVersion']}",
        f"image should default to the appVersion tag, got {c.get('image')}",
    )
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    expect(ports == {"metrics": 8080, "healthz": 11251}, f"container ports: {ports}")
    live = c.get("livenessProbe", {}).get("httpGet", {})
    ready = c.get("readinessProbe", {}).get("httpGet", {})
    expect(live.get("path") == "/healthz" and live.get("port") == "healthz", f"livenessProbe: {live}")
    expect(ready.get("path") == "/readyz" and ready.get("port") == "healthz", f"readinessProbe: {ready}")
    psc, sc = pod.get("securityContext", {}), c.get("securityContext", {})
    expect(psc.get("runAsNonRoot") is True, "pod must run as non-root")
    expect(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccomp RuntimeDefault")
    expect(sc.get("readOnlyRootFilesystem") is True, "read-only root filesystem")
    expect(sc.get("allowPrivilegeEscalation") is False, "no privilege escalation")
    expect(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities: drop ALL")
    requests = c.get("resources", {}).get("requests", {})
    expect("cpu" in requests and "memory" in requests, f"resource requests: {requests}")
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in c.get("env", [])}
    expect(env.get("POD_NAME") == "metadata.name", "POD_NAME from the downward API")
    expect(env.get("POD_NAMESPACE") == "metadata.namespace", "POD_NAMESPACE from the downward API")

    sa = one(docs, "ServiceAccount")
    sa_name = sa.get("metadata", {}).get("name")
    expect(pod.get("serviceAccountName") == sa_name, "the pod runs as the chart's ServiceAccount")

    # Scheduler configuration: mounted where --scheduler-conf points, Volcano's chart default.
    cm_names = {v.get("configMap", {}).get("name") for v in pod.get("volumes", [])}
    mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
    expect("/etc/volcano-rs" in mounts, "the configuration is mounted at /etc/volcano-rs")
    cms = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] in cm_names]
    expect(len(cms) == 1, "the mounted ConfigMap is rendered")
    if cms:
        conf = cms[0].get("data", {}).get("volcano-scheduler.conf")
        want = (REPO / "config/volcano-chart.conf").read_text()
        expect(conf == want, "volcano-scheduler.conf differs from config/volcano-chart.conf")

    # RBAC: exactly the daemon's calls; the Lease only in the release namespace.
    cr = one(docs, "ClusterRole")
    got = rule_triples(cr.get("rules", []))
    expect(got == EXPECTED_CLUSTER_RULES,
           f"ClusterRole: extra {sorted(got - EXPECTED_CLUSTER_RULES)}, missing {sorted(EXPECTED_CLUSTER_RULES - got)}")
    roles = {r.get("metadata", {}).get("name", ""): r for r in by_kind(docs, "Role")}
    expect(sorted(roles) == ["volcano-rs-device-config", "volcano-rs-leader-election"],
           f"Roles: {sorted(roles)}")
    role = roles.get("volcano-rs-leader-election", {})
    expect(role.get("metadata", {}).get("namespace") == ns, "the lease Role is in the release namespace")
    lease = rule_triples(role.get("rules", []))
    expect(lease == {("coordination.k8s.io", "leases", v) for v in EXPECTED_LEASE_VERBS},
           f"Role rules: {sorted(lease)}")
    device = roles.get("volcano-rs-device-config", {})
    expect(device.get("metadata", {}).get("namespace") == "kube-system",
           "the device configuration Role is in kube-system")
    expect(rule_triples(device.get("rules", [])) == DEVICE_CONFIG_RULES
           and all(r.get("resourceNames") == ["volcano-vgpu-device-config"] for r in device.get("rules", [])),
           f"device configuration Role rules: {device.get('rules')}")
    bindings = {b.get("roleRef", {}).get("name"): b for b in by_kind(docs, "RoleBinding")}
    expect(len(bindings) == len(by_kind(docs, "RoleBinding")) == 2, "one RoleBinding per Role")
    pairs = [("ClusterRoleBinding", one(docs, "ClusterRoleBinding"), cr)]
    pairs += [("RoleBinding", bindings.get(name, {}), r) for name, r in roles.items()]
    for kind, b, ref in pairs:
        expect(b.get("roleRef", {}).get("name") == ref.get("metadata", {}).get("name"), f"{kind} roleRef")
        expect(b.get("subjects") == [{"kind": "ServiceAccount", "name": sa_name, "namespace": ns}],
               f"{kind} subjects: {b.get('subjects')}")
    check_rbac_comments()

    pod_labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    pdb = one(docs, "PodDisruptionBudget")
    expect(pdb.get("spec", {}).get("minAvailable") == 1, "PDB minAvailable 1")
    sel = pdb.get("spec", {}).get("selector", {}).get("matchLabels", {})
    expect(sel and sel.items() <= pod_labels.items(), "the PDB selects the scheduler pods")
    svc = one(docs, "Service")
    expect(svc.get("spec", {}).get("selector", {}).items() <= pod_labels.items(), "the Service selects the pods")
    expect([(p["name"], p["port"]) for p in svc.get("spec", {}).get("ports", [])] == [("metrics", 8080)],
           "the Service exposes only metrics on 8080")
    expect(not by_kind(docs, "ServiceMonitor"), "no ServiceMonitor by default")
    expect(len(by_kind(docs, "ConfigMap")) == 1, "no dashboard ConfigMap by default")


def check_all_on(docs, _ns):
    one(docs, "ServiceMonitor")
    # commonLabels on every object; extra volumes and mounts, probe overrides on the pod.
    for d in docs:
        labels = d.get("metadata", {}).get("labels", {})
        expect(labels.get("team") == "batch",
               f"commonLabels missing on {d.get('kind')} {d.get('metadata', {}).get('name')}")
    dep = one(docs, "Deployment")
    pod = dep.get("spec", {}).get("template", {}).get("spec", {})
    expect(any(v.get("name") == "ca-bundle" for v in pod.get("volumes", [])), "extraVolumes rendered")
    c = (pod.get("containers") or [{}])[0]
    expect(any(m.get("mountPath") == "/etc/ssl/extra" for m in c.get("volumeMounts", [])),
           "extraVolumeMounts rendered")
    expect(c.get("livenessProbe", {}).get("periodSeconds") == 20, "livenessProbe override")
    expect(c.get("readinessProbe", {}).get("periodSeconds") == 7, "readinessProbe override")
    if (REPO / "charts/volcano-rs/templates/dashboard-configmap.yaml").exists():
        dash = [d for d in by_kind(docs, "ConfigMap")
                if d.get("metadata", {}).get("labels", {}).get("grafana_dashboard") == "1"]
        expect(len(dash) == 1, "dashboard.enabled renders one ConfigMap labelled grafana_dashboard=1")
    one(docs, "PodDisruptionBudget")
    expect(len(by_kind(docs, "Role")) == 2, "the lease and device configuration Roles")
    got = rule_triples(one(docs, "ClusterRole").get("rules", []))
    expect(got == EXPECTED_CLUSTER_RULES | NODE_LOCK_RULES,
           f"ClusterRole with nodeLock: extra {sorted(got - EXPECTED_CLUSTER_RULES - NODE_LOCK_RULES)}, "
           f"missing {sorted(EXPECTED_CLUSTER_RULES | NODE_LOCK_RULES - got)}")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("defaults", "all-on"):
        sys.exit(__doc__)
    mode, path, ns = sys.argv[1:]
    docs = load(path)
    (check_defaults if mode == "defaults" else check_all_on)(docs, ns)
    for p in problems:
        print(f"chart-check ({mode}): {p}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
