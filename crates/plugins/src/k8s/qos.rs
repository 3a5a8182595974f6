//! A pod's QoS class, as Kubernetes computes it (`GetPodQOS`): `status.qosClass` when the API
//! server has set it, else from the cpu and memory requests and limits of every container and
//! init container.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use engine::model::Resource;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum QosClass {
    BestEffort,
    Burstable,
    Guaranteed,
}

pub fn pod_qos(pod: &Pod) -> QosClass {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some("Guaranteed") => return QosClass::Guaranteed,
        Some("Burstable") => return QosClass::Burstable,
        Some("BestEffort") => return QosClass::BestEffort,
        _ => {}
    }
    let Some(spec) = pod.spec.as_ref() else {
        return QosClass::BestEffort;
    };
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    let mut requests: BTreeMap<&str, u64> = BTreeMap::new();
    let mut limits: BTreeMap<&str, u64> = BTreeMap::new();
    // Guaranteed needs cpu and memory limits in every container, and the summed requests
    // equal to the summed limits (the API server defaults missing requests to the limits).
    let mut limits_everywhere = true;
    for c in containers {
        for (k, v) in compute(c, |r| r.requests.as_ref()) {
            *requests.entry(k).or_default() += v;
        }
        let own = compute(c, |r| r.limits.as_ref());
        limits_everywhere &= own.contains_key("cpu") && own.contains_key("memory");
        for (k, v) in own {
            *limits.entry(k).or_default() += v;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        QosClass::BestEffort
    } else if limits_everywhere && requests == limits {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

/// The non-zero cpu and memory quantities of one container's requests or limits, in the
/// engine's units (milli-cpu, bytes).
fn compute(
    c: &Container,
    pick: impl Fn(
        &k8s_openapi::api::core::v1::ResourceRequirements,
    ) -> Option<&BTreeMap<String, Quantity>>,
) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    let Some(list) = c.resources.as_ref().and_then(pick) else {
        return out;
    };
    let r = Resource::from_list(list);
    if r.milli_cpu > 0.0 {
        out.insert("cpu", r.milli_cpu.round() as u64);
    }
    if r.memory > 0.0 {
        out.insert("memory", r.memory.round() as u64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: serde_json::Value, qos: Option<&str>) -> Pod {
        let mut v =
            serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": containers}});
        if let Some(q) = qos {
            v["status"] = serde_json::json!({"qosClass": q});
        }
        serde_json::from_value(v).expect("pod")
    }

    #[test]
    fn classes() {
        let be = pod(serde_json::json!([{"name": "a"}]), None);
        assert_eq!(pod_qos(&be), QosClass::BestEffort);
        let bu = pod(
            serde_json::json!([{"name": "a", "resources": {"requests": {"cpu": "1"}}}]),
            None,
        );
        assert_eq!(pod_qos(&bu), QosClass::Burstable);
        let gu = pod(
            serde_json::json!([{"name": "a", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"},
                "limits": {"cpu": "1000m", "memory": "1Gi"}}}]),
            None,
        );
        assert_eq!(pod_qos(&gu), QosClass::Guaranteed);
        let limits_only = pod(
            serde_json::json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
            None,
        );
        // Without the API server's defaulting, the requests are missing: not Guaranteed.
        assert_eq!(pod_qos(&limits_only), QosClass::Burstable);
        assert_eq!(
            pod_qos(&pod(serde_json::json!([]), Some("Burstable"))),
            QosClass::Burstable
        );
        assert!(QosClass::BestEffort < QosClass::Burstable);
    }
}
