//! Host ports: the upstream `NodePorts` filter (spec `plugins-core.md` §6.3), as of Kubernetes
//! v1.36.1 — `pkg/scheduler/framework/plugins/nodeports/node_ports.go`, `GetHostPorts` in
//! `pkg/scheduler/util/utils.go` and `HostPortInfo.CheckConflict` in the scheduler framework types.

use k8s_openapi::api::core::v1::{Container, Pod};

/// NodePorts filter reason (code Unschedulable).
pub const PORTS_CONFLICT: &str = "node(s) didn't have free ports for the requested pod ports";

/// Host IP that binds every address; it collides with any other host IP.
pub const DEFAULT_BIND_ALL_HOST_IP: &str = "0.0.0.0";

/// Protocol assumed when a container port leaves it empty.
pub const DEFAULT_PROTOCOL: &str = "TCP";

const RESTART_POLICY_ALWAYS: &str = "Always";

/// One `(protocol, host IP, host port)` binding. [`pod_host_ports`] fills in the defaults; values
/// built by hand may leave `protocol` or `host_ip` empty, which then mean TCP and `0.0.0.0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub protocol: String,
    pub host_ip: String,
    pub port: i32,
}

impl HostPort {
    fn protocol(&self) -> &str {
        if self.protocol.is_empty() {
            DEFAULT_PROTOCOL
        } else {
            &self.protocol
        }
    }

    fn host_ip(&self) -> &str {
        if self.host_ip.is_empty() {
            DEFAULT_BIND_ALL_HOST_IP
        } else {
            &self.host_ip
        }
    }

    /// Upstream `CheckConflict` for a single pair. IPs are compared as strings, exactly as
    /// upstream does: `::` is not treated as a wildcard and `127.0.0.1` differs from `127.000.0.1`.
    fn conflicts_with(&self, other: &HostPort) -> bool {
        // Upstream never records, nor checks, a non-positive port.
        if self.port <= 0 || other.port <= 0 {
            return false;
        }
        self.port == other.port
            && self.protocol() == other.protocol()
            && (self.host_ip() == other.host_ip()
                || self.host_ip() == DEFAULT_BIND_ALL_HOST_IP
                || other.host_ip() == DEFAULT_BIND_ALL_HOST_IP)
    }
}

/// Host ports a pod occupies, in upstream `GetHostPorts` order: restartable (sidecar) init
/// containers first, then regular containers. Ordinary init containers don't count, since they
/// have exited before the pod runs, and neither do ports with a `hostPort` that is unset or not
/// positive. Empty protocol and host IP are filled with `TCP` and `0.0.0.0`.
pub fn pod_host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some(RESTART_POLICY_ALWAYS));
    sidecars
        .chain(spec.containers.iter())
        .flat_map(container_host_ports)
        .collect()
}

fn container_host_ports(container: &Container) -> impl Iterator<Item = HostPort> + '_ {
    container.ports.iter().flatten().filter_map(|p| {
        let port = p.host_port.filter(|&port| port > 0)?;
        let protocol = p.protocol.as_deref().unwrap_or_default();
        let host_ip = p.host_ip.as_deref().unwrap_or_default();
        Some(HostPort {
            protocol: if protocol.is_empty() {
                DEFAULT_PROTOCOL
            } else {
                protocol
            }
            .to_string(),
            host_ip: if host_ip.is_empty() {
                DEFAULT_BIND_ALL_HOST_IP
            } else {
                host_ip
            }
            .to_string(),
            port,
        })
    })
}

/// NodePorts filter: whether any wanted host port collides with one already used on the node
/// (the host ports of the node's pods). Two bindings collide when protocol and port are equal and
/// the host IPs are equal or either one is `0.0.0.0`.
pub fn ports_conflict(wanted: &[HostPort], used: &[HostPort]) -> bool {
    wanted
        .iter()
        .any(|w| used.iter().any(|u| w.conflicts_with(u)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(spec: Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": spec
        }))
        .expect("valid pod")
    }

    fn pod_with_ports(ports: Value) -> Pod {
        pod(json!({"containers": [{"name": "c", "image": "nginx", "ports": ports}]}))
    }

    fn hp(protocol: &str, host_ip: &str, port: i32) -> HostPort {
        HostPort {
            protocol: protocol.to_string(),
            host_ip: host_ip.to_string(),
            port,
        }
    }

    #[test]
    fn host_ports_defaults_and_skips() {
        let p = pod_with_ports(json!([
            {"containerPort": 80, "hostPort": 8080},
            {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
            {"containerPort": 9090},
            {"containerPort": 9091, "hostPort": 0}
        ]));
        assert_eq!(
            pod_host_ports(&p),
            vec![hp("TCP", "0.0.0.0", 8080), hp("UDP", "10.0.0.1", 53)]
        );
    }

    #[test]
    fn host_ports_count_sidecars_but_not_plain_init_containers() {
        let p = pod(json!({
            "initContainers": [
                {"name": "setup", "image": "busybox", "ports": [{"containerPort": 1, "hostPort": 7001}]},
                {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
                 "ports": [{"containerPort": 2, "hostPort": 7002}]}
            ],
            "containers": [{"name": "app", "image": "app", "ports": [{"containerPort": 3, "hostPort": 7003}]}]
        }));
        assert_eq!(
            pod_host_ports(&p),
            vec![hp("TCP", "0.0.0.0", 7002), hp("TCP", "0.0.0.0", 7003)]
        );
    }

    #[test]
    fn host_ports_of_pod_without_spec() {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).expect("pod");
        assert!(pod_host_ports(&p).is_empty());
    }

    #[test]
    fn conflict_table() {
        let cases = [
            // (name, wanted, used, conflict)
            (
                "nothing used",
                vec![hp("TCP", "0.0.0.0", 8080)],
                vec![],
                false,
            ),
            (
                "same port, protocol and IP",
                vec![hp("TCP", "10.0.0.1", 8080)],
                vec![hp("TCP", "10.0.0.1", 8080)],
                true,
            ),
            (
                "different port",
                vec![hp("TCP", "0.0.0.0", 8080)],
                vec![hp("TCP", "0.0.0.0", 8081)],
                false,
            ),
            (
                "different protocol",
                vec![hp("UDP", "0.0.0.0", 8080)],
                vec![hp("TCP", "0.0.0.0", 8080)],
                false,
            ),
            (
                "different specific IPs",
                vec![hp("TCP", "10.0.0.1", 8080)],
                vec![hp("TCP", "10.0.0.2", 8080)],
                false,
            ),
            (
                "wanted 0.0.0.0 collides with a specific IP",
                vec![hp("TCP", "0.0.0.0", 8080)],
                vec![hp("TCP", "10.0.0.2", 8080)],
                true,
            ),
            (
                "used 0.0.0.0 collides with a specific IP",
                vec![hp("TCP", "127.0.0.1", 8080)],
                vec![hp("TCP", "0.0.0.0", 8080)],
                true,
            ),
            (
                "UDP collides through 0.0.0.0",
                vec![hp("UDP", "127.0.0.1", 8001)],
                vec![hp("TCP", "0.0.0.0", 8001), hp("UDP", "0.0.0.0", 8001)],
                true,
            ),
            (
                "empty fields mean TCP and 0.0.0.0",
                vec![hp("", "", 8080)],
                vec![hp("TCP", "10.0.0.9", 8080)],
                true,
            ),
            (
                "protocols compare case-sensitively",
                vec![hp("tcp", "0.0.0.0", 8080)],
                vec![hp("TCP", "0.0.0.0", 8080)],
                false,
            ),
            (
                "IPv6 any address is not a wildcard",
                vec![hp("TCP", "::", 8080)],
                vec![hp("TCP", "10.0.0.1", 8080)],
                false,
            ),
            (
                "non-positive ports never conflict",
                vec![hp("TCP", "0.0.0.0", 0)],
                vec![hp("TCP", "0.0.0.0", 0)],
                false,
            ),
            (
                "any of several wanted ports",
                vec![hp("TCP", "0.0.0.0", 1), hp("SCTP", "0.0.0.0", 2)],
                vec![hp("SCTP", "10.1.1.1", 2)],
                true,
            ),
        ];
        for (name, wanted, used, want) in cases {
            assert_eq!(ports_conflict(&wanted, &used), want, "{name}");
            assert_eq!(ports_conflict(&used, &wanted), want, "{name} (symmetric)");
        }
    }

    #[test]
    fn conflict_between_pods() {
        let existing =
            pod_with_ports(json!([{"containerPort": 80, "hostPort": 80, "hostIP": "10.0.0.1"}]));
        let incoming = pod_with_ports(json!([{"containerPort": 8080, "hostPort": 80}]));
        assert!(ports_conflict(
            &pod_host_ports(&incoming),
            &pod_host_ports(&existing)
        ));
        let udp =
            pod_with_ports(json!([{"containerPort": 8080, "hostPort": 80, "protocol": "UDP"}]));
        assert!(!ports_conflict(
            &pod_host_ports(&udp),
            &pod_host_ports(&existing)
        ));
    }
}
