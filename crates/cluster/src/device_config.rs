//! Reads Volcano's device configuration ConfigMap for `deviceshare`'s vGPU device
//! (`apis::device_config`): once the configuration in force runs vGPU, the ConfigMap it names
//! is read, once per process as Volcano does, and put on the state, where the sessions find
//! the resource names and MIG geometries. A missing or unreadable ConfigMap leaves Volcano's
//! defaults, with a warning; an API error is retried a few times first.

use std::sync::Arc;
use std::time::Duration;

use apis::DeviceConfig;
use engine::conf::SchedulerConf;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use tokio::sync::watch;

use crate::shared::Shared;

/// Attempts at reading the ConfigMap when the API server fails, and the wait between them.
const ATTEMPTS: u32 = 5;
const RETRY_WAIT: Duration = Duration::from_secs(2);

/// Where a scheduler configuration wants the device configuration read from: (namespace,
/// name), or `None` when it runs no vGPU device.
pub type Source = fn(&SchedulerConf) -> Option<(String, String)>;

/// Runs until it has read the configuration once, the configuration channel closes or
/// `shutdown` resolves.
pub async fn run(
    client: kube::Client,
    shared: Arc<Shared>,
    (mut conf, source): (watch::Receiver<Arc<SchedulerConf>>, Source),
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let (namespace, name) = loop {
        let wanted = source(&conf.borrow_and_update());
        if let Some(source) = wanted {
            break source;
        }
        tokio::select! {
            _ = &mut shutdown => return,
            changed = conf.changed() => if changed.is_err() { return },
        }
    };
    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
    let read = async {
        for attempt in 1..=ATTEMPTS {
            match api.get_opt(&name).await {
                Ok(found) => return Ok(found),
                Err(e) if attempt < ATTEMPTS => {
                    tracing::debug!(%namespace, %name, error = %crate::errors::kube(&e), "device configuration not read; retrying");
                    tokio::time::sleep(RETRY_WAIT).await;
                }
                Err(e) => return Err(crate::errors::kube(&e)),
            }
        }
        Err("no attempt made".to_string())
    };
    let found = tokio::select! {
        _ = &mut shutdown => return,
        found = read => found,
    };
    let config = match from_config_map(found) {
        Ok(config) => {
            tracing::info!(%namespace, %name, "device configuration read");
            config
        }
        Err(why) => {
            tracing::warn!(%namespace, %name, reason = %why, "device configuration not read; Volcano's defaults apply");
            DeviceConfig::defaults()
        }
    };
    shared.lock().set_device_config(config);
}

/// The configuration a read gave: the ConfigMap's document, or why there is none.
pub fn from_config_map(read: Result<Option<ConfigMap>, String>) -> Result<DeviceConfig, String> {
    let cm = read?.ok_or("no such ConfigMap")?;
    let key = apis::device_config::DATA_KEY;
    let yaml = cm
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| format!("the ConfigMap has no data key {key}"))?;
    DeviceConfig::parse(yaml).map_err(|e| format!("data[{key}]: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn the_document_or_why_not() {
        let ok = from_config_map(Ok(Some(cm(&[(
            "device-config.yaml",
            "nvidia:\n  resourceCountName: example.com/gpu\n",
        )]))));
        assert_eq!(
            ok.expect("readable").nvidia.resource_count_name,
            "example.com/gpu"
        );
        assert_eq!(
            from_config_map(Ok(None)).expect_err("absent"),
            "no such ConfigMap"
        );
        let no_key = from_config_map(Ok(Some(cm(&[("other", "x")])))).expect_err("no key");
        assert!(no_key.contains("device-config.yaml"), "{no_key}");
        let bad = from_config_map(Ok(Some(cm(&[("device-config.yaml", "nvidia: [")]))));
        assert!(
            bad.expect_err("bad")
                .starts_with("data[device-config.yaml]:")
        );
        assert_eq!(
            from_config_map(Err("forbidden".into())).expect_err("error"),
            "forbidden"
        );
    }
}
