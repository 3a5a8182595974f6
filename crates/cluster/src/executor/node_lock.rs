//! Device node locks (Volcano's `nodelock`, `deviceshare.NodeLockEnable`): before the bind of a
//! pod whose device asked for it, the node's lock annotation is set to the time, so that the
//! node's device plugin serves one such pod at a time; the device plugin removes it once it
//! has handed out the devices. A lock younger than five minutes refuses the bind; an older one
//! is taken over. The write carries the node's resource version, so that two writers cannot
//! both take the lock. A bind that fails afterwards gives the lock back.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::{Executor, PreBindError, WriteError};

/// A lock younger than this holds.
const EXPIRY_SECONDS: i64 = 5 * 60;
/// Attempts when another writer changed the node in between.
const ATTEMPTS: usize = 5;

/// Whether a lock set at `value` still holds at `now` (an unreadable time holds, as in Volcano,
/// where it refuses the lock).
pub(super) fn holds(value: &str, now: Timestamp) -> Result<bool, String> {
    let at: Timestamp = value
        .parse()
        .map_err(|e| format!("lock time {value:?} is not a time: {e}"))?;
    Ok(now.as_second() - at.as_second() <= EXPIRY_SECONDS)
}

/// The lock value for `now`: RFC 3339 in UTC, whole seconds, as Go's `time.RFC3339` writes it.
pub(super) fn value_at(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Executor {
    fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Sets the node's `key` annotation to now, unless a lock younger than five minutes is
    /// there. Returns the value written.
    pub(super) async fn take_node_lock(
        &self,
        node: &str,
        key: &str,
    ) -> Result<String, PreBindError> {
        let api = self.nodes();
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            let current = api
                .get(node)
                .await
                .map_err(|e| PreBindError::Failed(crate::errors::kube(&e)))?;
            let now = Timestamp::now();
            if let Some(value) = current
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
            {
                match holds(value, now) {
                    Ok(false) => {}
                    Ok(true) => {
                        return Err(PreBindError::Failed(format!(
                            "node {node} has been locked within 5 minutes"
                        )));
                    }
                    Err(why) => return Err(PreBindError::Failed(why)),
                }
            }
            let value = value_at(now);
            let patch = json!({"metadata": {
                "resourceVersion": current.metadata.resource_version,
                "annotations": {key: value},
            }});
            match self
                .call(api.patch(node, &PatchParams::default(), &Patch::Merge(&patch)))
                .await
            {
                Ok(_) => return Ok(value),
                Err(WriteError::Api(kube::Error::Api(s))) if s.code == 409 => {
                    last = s.message;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(PreBindError::Failed(format!(
            "node {node} changed under every attempt to lock it: {last}"
        )))
    }

    /// Removes the lock a failed bind took, unless someone else's lock replaced it.
    pub(super) async fn give_back_node_lock(&self, node: &str, key: &str, value: &str) {
        let api = self.nodes();
        let Ok(current) = api.get(node).await else {
            return;
        };
        let ours = current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key));
        if ours.map(String::as_str) != Some(value) {
            return;
        }
        let patch = json!({"metadata": {
            "resourceVersion": current.metadata.resource_version,
            "annotations": {key: null},
        }});
        if let Err(e) = self
            .call(api.patch(node, &PatchParams::default(), &Patch::Merge(&patch)))
            .await
        {
            tracing::warn!(%node, lock = %key, error = %e, "node lock not given back; it expires in 5 minutes");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_holds_for_five_minutes_and_is_written_as_go_writes_it() {
        let now: Timestamp = "2026-11-28T08:00:00Z".parse().expect("time");
        assert_eq!(value_at(now), "2026-11-28T08:00:00Z");
        assert_eq!(holds("2026-11-28T07:55:00Z", now), Ok(true));
        assert_eq!(holds("2026-11-28T07:54:59Z", now), Ok(false));
        assert_eq!(holds("2026-11-28T16:00:00+08:00", now), Ok(true));
        assert!(holds("yesterday", now).is_err());
    }
}
