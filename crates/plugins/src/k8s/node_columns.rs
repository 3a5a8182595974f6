//! Node labels by column: one label key's value on every node, by the node's position in the
//! session's node list. A filter that asks "which domain is this node in" for thousands of
//! nodes per search then reads a number from a vector instead of reaching each node object
//! (a cache miss or more per node on a large cluster) and searching its label map.
//!
//! Nodes do not change within a session, so a column holds for the session. Building one costs
//! a pass over every node, so a key gets its column only once it is asked for the second time:
//! a session that places one pod (the steady state) keeps reading labels where it needs them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Node;

use super::labels::node_labels;

/// One label key's values over the nodes.
#[derive(Debug)]
pub struct LabelColumn {
    /// The distinct values, an id being a place in this list.
    values: Vec<String>,
    /// Each distinct value's id.
    ids: HashMap<String, u32>,
    /// Each node's value id, [`NO_VALUE`] when the node lacks the key.
    node_values: Vec<u32>,
}

const NO_VALUE: u32 = u32::MAX;

impl LabelColumn {
    /// The column of `key` over `nodes`, positions as in `nodes`.
    pub fn build(key: &str, nodes: &[&Node]) -> Self {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut values = Vec::new();
        let node_values = nodes
            .iter()
            .map(|node| match node_labels(node).get(key) {
                None => NO_VALUE,
                Some(v) => match ids.get(v.as_str()) {
                    Some(&id) => id,
                    None => {
                        let id = values.len() as u32;
                        values.push(v.clone());
                        ids.insert(v.clone(), id);
                        id
                    }
                },
            })
            .collect();
        Self {
            values,
            ids,
            node_values,
        }
    }

    /// The distinct values, in id order.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// The id of the value of the node at `position`; `None` when it lacks the key (or is not
    /// one of the nodes the column was built from).
    #[inline]
    pub fn at(&self, position: usize) -> Option<u32> {
        self.node_values
            .get(position)
            .copied()
            .filter(|&v| v != NO_VALUE)
    }

    /// The id of `value`; `None` when no node carries it.
    pub fn id(&self, value: &str) -> Option<u32> {
        self.ids.get(value).copied()
    }
}

/// The columns of one session, by label key, each built on its second request.
#[derive(Debug, Default)]
pub struct NodeColumns {
    by_key: Mutex<HashMap<String, Slot>>,
}

#[derive(Debug)]
enum Slot {
    /// Asked for once: not built yet.
    Asked,
    Built(Arc<LabelColumn>),
}

impl NodeColumns {
    /// The column of `key`, built over `nodes()` (the session's nodes in position order) if
    /// it was not.
    pub fn built<'n>(&self, key: &str, nodes: impl FnOnce() -> Vec<&'n Node>) -> Arc<LabelColumn> {
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(Slot::Built(column)) = by_key.get(key) {
            return column.clone();
        }
        let column = Arc::new(LabelColumn::build(key, &nodes()));
        by_key.insert(key.to_owned(), Slot::Built(column.clone()));
        column
    }

    /// The column of `key`, built over `nodes()` (the session's nodes in position order) if
    /// this is not the first request; `None` on the first.
    pub fn get<'n>(
        &self,
        key: &str,
        nodes: impl FnOnce() -> Vec<&'n Node>,
    ) -> Option<Arc<LabelColumn>> {
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        match by_key.get(key) {
            Some(Slot::Built(column)) => Some(column.clone()),
            Some(Slot::Asked) => {
                let column = Arc::new(LabelColumn::build(key, &nodes()));
                by_key.insert(key.to_owned(), Slot::Built(column.clone()));
                Some(column)
            }
            None => {
                by_key.insert(key.to_owned(), Slot::Asked);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, zone: Option<&str>) -> Node {
        let mut labels = json!({"kubernetes.io/hostname": name});
        if let Some(z) = zone {
            labels["zone"] = json!(z);
        }
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
    }

    #[test]
    fn a_column_gives_each_node_its_value_id() {
        let nodes = [
            node("a", Some("z1")),
            node("b", None),
            node("c", Some("z1")),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let column = LabelColumn::build("zone", &refs);
        assert_eq!(column.at(0), column.id("z1"));
        assert!(column.at(0).is_some());
        assert_eq!(column.at(1), None);
        assert_eq!(column.at(2), column.at(0));
        assert_eq!(column.at(3), None);
        assert_eq!(column.id("z2"), None);
        assert_eq!(column.values(), ["z1".to_string()]);
    }

    #[test]
    fn a_column_is_built_on_its_second_request() {
        let nodes = [node("a", Some("z1"))];
        let columns = NodeColumns::default();
        let list = || nodes.iter().collect::<Vec<_>>();
        assert!(columns.get("zone", list).is_none());
        let first = columns.get("zone", list).expect("built");
        let again = columns
            .get("zone", || panic!("not built again"))
            .expect("kept");
        assert!(Arc::ptr_eq(&first, &again));
    }
}
