//! [`RequiredNodeAffinity`] matched by node position. A label requirement's answer depends on
//! the node's value for its key alone, so it is worked out once per distinct value of the key's
//! [`LabelColumn`] (and once for a node without the key); a node's answer is then a few vector
//! reads instead of a reach into the node object and its label map for every requirement.

use std::sync::Arc;

use super::RequiredNodeAffinity;
use crate::k8s::node_columns::LabelColumn;

/// One requirement's answer for each value of its key, and for a node without the key.
#[derive(Debug)]
struct Answers {
    column: Arc<LabelColumn>,
    by_value: Vec<bool>,
    absent: bool,
}

impl Answers {
    fn new(column: Arc<LabelColumn>, answer: impl Fn(Option<&str>) -> bool) -> Self {
        let by_value = column.values().iter().map(|v| answer(Some(v))).collect();
        Self {
            absent: answer(None),
            by_value,
            column,
        }
    }

    #[inline]
    fn at(&self, position: usize) -> bool {
        match self.column.at(position) {
            Some(id) => self.by_value.get(id as usize).copied().unwrap_or(false),
            None => self.absent,
        }
    }
}

/// A [`RequiredNodeAffinity`] as answers by node position ([`RequiredNodeAffinity::compile`]).
#[derive(Debug)]
pub struct CompiledAffinity {
    /// The node selector's pairs.
    selector: Vec<Answers>,
    /// The required terms (OR-ed) of requirements (AND-ed); `None` without required affinity.
    terms: Option<Vec<Vec<Answers>>>,
}

impl CompiledAffinity {
    /// [`RequiredNodeAffinity::matches`] for the node at `position` of the columns.
    pub fn matches(&self, position: usize) -> bool {
        self.selector.iter().all(|a| a.at(position))
            && (self.terms.as_ref())
                .is_none_or(|terms| terms.iter().any(|term| term.iter().all(|a| a.at(position))))
    }
}

impl RequiredNodeAffinity {
    /// The affinity by node position, `column` giving a label key's column over the nodes;
    /// `None` when a term has field requirements (the node name is not in a column).
    pub fn compile(
        &self,
        column: &mut dyn FnMut(&str) -> Arc<LabelColumn>,
    ) -> Option<CompiledAffinity> {
        let selector = (self.node_selector.iter())
            .map(|(key, value)| Answers::new(column(key), |v| v == Some(value.as_str())))
            .collect();
        let terms = match &self.terms {
            None => None,
            Some(terms) => {
                let mut compiled = Vec::with_capacity(terms.len());
                for term in terms {
                    if !term.fields.is_empty() {
                        return None;
                    }
                    compiled.push(
                        (term.labels.iter())
                            .map(|r| Answers::new(column(&r.key), |v| r.matches_value(v)))
                            .collect(),
                    );
                }
                Some(compiled)
            }
        };
        Some(CompiledAffinity { selector, terms })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{Value, json};

    use super::*;

    fn node(name: &str, labels: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
    }

    fn pod(spec: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("pod")
    }

    /// Every node gets the same answer by position as by its labels.
    #[test]
    fn compiled_answers_are_the_nodes_answers() {
        let nodes = [
            node("a", json!({"zone": "z1", "size": "4"})),
            node("b", json!({"zone": "z2", "size": "16"})),
            node("c", json!({"size": "x"})),
            node("d", json!({})),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let specs = [
            json!({"containers": [], "nodeSelector": {"zone": "z1"}}),
            json!({"containers": [], "nodeSelector": {"zone": "nowhere"}}),
            json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]},
                    {"matchExpressions": [{"key": "size", "operator": "Gt", "values": ["8"]},
                                          {"key": "zone", "operator": "Exists"}]}]}}}}),
            json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]},
                    {"matchExpressions": [{"key": "size", "operator": "Lt", "values": ["8"]}]}]}}}}),
            json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": []}}}}),
        ];
        for spec in specs {
            let affinity = RequiredNodeAffinity::from_pod(&pod(spec.clone()));
            let mut columns = HashMap::new();
            let compiled = affinity
                .compile(&mut |key| {
                    (columns.entry(key.to_string()))
                        .or_insert_with(|| Arc::new(LabelColumn::build(key, &refs)))
                        .clone()
                })
                .expect("no fields");
            for (i, n) in nodes.iter().enumerate() {
                assert_eq!(
                    compiled.matches(i),
                    affinity.matches(n),
                    "{spec} on node {i}"
                );
            }
        }
    }

    #[test]
    fn terms_with_fields_are_not_compiled() {
        let affinity = RequiredNodeAffinity::from_pod(&pod(json!({"containers": [],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}}})));
        let nodes = [node("a", json!({}))];
        let refs: Vec<&Node> = nodes.iter().collect();
        assert!(
            affinity
                .compile(&mut |key| Arc::new(LabelColumn::build(key, &refs)))
                .is_none()
        );
    }
}
