//! Start-up queues (spec/kubernetes.md §4.8.3): the default queue (and `root` when a plugin
//! runs in hierarchy mode) is created if missing, as Volcano does, so standalone use works
//! without Volcano's controllers.

use apis::{Queue, QueueSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::{Api, Client};

/// Creates the queue unless it exists. AlreadyExists counts as success.
pub async fn ensure_queue(
    client: &Client,
    name: &str,
    reclaimable: bool,
) -> Result<bool, kube::Error> {
    let api: Api<Queue> = Api::all(client.clone());
    if api.get_opt(name).await?.is_some() {
        return Ok(false);
    }
    let queue = Queue {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: QueueSpec {
            weight: 1,
            reclaimable: Some(reclaimable),
            ..Default::default()
        },
        status: None,
    };
    match api.create(&PostParams::default(), &queue).await {
        Ok(_) => {
            tracing::info!(queue = name, "created queue");
            Ok(true)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}
