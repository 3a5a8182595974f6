//! Pods built for tests, and what their conditions say.

use super::*;

/// A pod under construction: one container `main` with the requested resources, the test's
/// scheduler name and namespace, `terminationGracePeriodSeconds: 0`.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Pod,
    requests: BTreeMap<String, Quantity>,
    limits: BTreeMap<String, Quantity>,
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
            limits: BTreeMap::new(),
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

    /// A limit (extended resources need one; their request then equals it).
    pub fn limit(mut self, resource: &str, quantity: &str) -> Self {
        self.limits
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
    /// Mounts the claim `claim` (a `persistentVolumeClaim` volume of the same name).
    pub fn claim(mut self, claim: &str) -> Self {
        self.spec()
            .volumes
            .get_or_insert_with(Vec::new)
            .push(Volume {
                name: claim.to_string(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.to_string(),
                    read_only: None,
                }),
                ..Default::default()
            });
        self
    }

    pub fn scheduler_name(mut self, name: &str) -> Self {
        self.spec().scheduler_name = Some(name.to_string());
        self
    }

    pub fn build(mut self) -> Pod {
        if !self.requests.is_empty() || !self.limits.is_empty() {
            let requests = std::mem::take(&mut self.requests);
            let limits = std::mem::take(&mut self.limits);
            if let Some(c) = self.spec().containers.first_mut() {
                c.resources = Some(ResourceRequirements {
                    requests: (!requests.is_empty()).then_some(requests),
                    limits: (!limits.is_empty()).then_some(limits),
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

impl TestCtx {
    /// Waits until pod `name` has `PodScheduled=False` with a message containing `needle`, and
    /// returns that message.
    pub async fn wait_unschedulable(
        &self,
        name: &str,
        needle: &str,
        timeout: Duration,
    ) -> anyhow::Result<String> {
        self.wait_for(
            &format!("pod {name} PodScheduled=False with a message containing {needle:?}"),
            timeout,
            || async {
                let pod = self.get_pod(name).await.map_err(|e| format!("{e:#}"))?;
                match pod_scheduled(&pod) {
                    Some((status, _, message)) if status == "False" && message.contains(needle) => {
                        Ok(message)
                    }
                    other => Err(format!("PodScheduled = {other:?}")),
                }
            },
        )
        .await
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
