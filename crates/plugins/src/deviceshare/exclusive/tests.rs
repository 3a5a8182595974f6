//! Volcano's GPU-exclusive tests (`pkg/scheduler/plugins/deviceshare/gpuexclusive_test.go`)
//! ported onto [`ExclusiveRules`] and the rule bits that [`Gpus::fit`] honours.

use std::collections::BTreeMap;

use apis::device_config::{Geometry, MigTemplate};
use engine::conf::{ArgValue, ArgWarning, Arguments};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::*;
use crate::deviceshare::vgpu::request::{ResourceNames, VGPU_MEMORY, VGPU_NUMBER};
use crate::deviceshare::vgpu::{Gpu, Gpus, HAMI_CORE, IDS_NEW, MIG, PodCards, Policy};

/// Bit of the first rule (`app=training, team=ml`).
const TRAINING: u64 = 1 << 0;
/// Bit of the second rule (`workload=inference`).
const INFERENCE: u64 = 1 << 1;

/// One label map as the configuration parser hands it over.
fn label_map(pairs: &[(&str, &str)]) -> ArgValue {
    ArgValue::Map(
        pairs
            .iter()
            .map(|(k, v)| (ArgValue::Str((*k).into()), ArgValue::Str((*v).into())))
            .collect(),
    )
}

/// Arguments holding `value` under the rules key.
fn args_with(value: ArgValue) -> Arguments {
    Arguments::from_pairs(&[(KEY, value)])
}

/// Reads the rules from `value`, returning them with the warnings raised.
fn read(value: ArgValue) -> (ExclusiveRules, Vec<ArgWarning>) {
    let mut warnings = Vec::new();
    let rules = ExclusiveRules::read(&args_with(value), &mut warnings);
    (rules, warnings)
}

/// The two rules every behaviour test uses: training pods of the ML team, and inference pods.
fn two_rules() -> ExclusiveRules {
    let (rules, warnings) = read(ArgValue::List(vec![
        label_map(&[("app", "training"), ("team", "ml")]),
        label_map(&[("workload", "inference")]),
    ]));
    assert!(warnings.is_empty(), "{warnings:?}");
    rules
}

/// A rule as stored.
fn rule(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

/// A pod in `default` with uid `uid-<name>`, the given labels (`null` for none) and
/// annotations, whose single container asks `cards` cards of 1 GiB each.
fn pod(name: &str, labels: Value, cards: u32, annotations: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"containers": [{
            "name": "main",
            "resources": {"limits": {
                VGPU_NUMBER: cards.to_string(),
                VGPU_MEMORY: "1024",
            }},
        }]},
    }))
    .expect("pod")
}

/// A pod asking one card, not yet placed.
fn pending(name: &str, labels: Value) -> Pod {
    pod(name, labels, 1, json!({}))
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

fn training() -> Value {
    json!({"app": "training", "team": "ml"})
}

fn inference() -> Value {
    json!({"workload": "inference"})
}

fn serving() -> Value {
    json!({"app": "serving"})
}

/// Volcano's fixture cards: `GPU-<i>`, shared by up to ten, 16 GiB, on a HAMi-core node.
fn node(n: usize) -> Gpus {
    let cards = (0..n)
        .map(|i| (i, Gpu::new(&format!("GPU-{i}"), 10, 16384, "NVIDIA")))
        .collect();
    Gpus {
        node: "test-node".into(),
        mode: HAMI_CORE.into(),
        memory_factor: 0,
        cards,
    }
}

/// Accounts a pod already running on `card` (known from its `vgpu-ids-new` annotation), with
/// the rules its labels match.
fn running(gpus: &mut Gpus, rules: &ExclusiveRules, name: &str, labels: Value, card: usize) {
    let annotations = json!({ IDS_NEW: format!("GPU-{card},NVIDIA,1024,0:") });
    let p = pod(name, labels, 1, annotations);
    gpus.add_pod(&p, uid(&p), rules.of_pod(&p));
}

/// The cards the first container got, sorted.
fn uuids(cards: &PodCards) -> Vec<String> {
    let mut out: Vec<String> = cards[0].iter().map(|a| a.uuid.clone()).collect();
    out.sort();
    out
}

/// Chooses cards for the pod under `policy` and puts them in use with its rule bits.
fn place(gpus: &mut Gpus, rules: &ExclusiveRules, p: &Pod, policy: Policy) -> Vec<String> {
    let bits = rules.of_pod(p);
    let (cards, _) = gpus
        .fit(p, &ResourceNames::default(), policy, bits)
        .expect("fits");
    gpus.commit(p, uid(p), &cards, bits);
    uuids(&cards)
}

/// Every card a pod with `labels` may still get: a pod asking as many cards as are open takes
/// each of them, and one more card does not fit.
fn open_cards(gpus: &Gpus, rules: &ExclusiveRules, labels: Value) -> Vec<String> {
    for n in (1..=gpus.cards.len() as u32).rev() {
        let p = pod("probe", labels.clone(), n, json!({}));
        let fitted = gpus.fit(
            &p,
            &ResourceNames::default(),
            Policy::None,
            rules.of_pod(&p),
        );
        if let Ok((cards, _)) = fitted {
            return uuids(&cards);
        }
    }
    Vec::new()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

// ---- TestPodMatchesRule ----

#[test]
fn pod_matches_rule() {
    let rules = two_rules();
    let cases = [
        ("both labels of rule 0", training(), 0, true),
        (
            "rule 0 plus a label it does not name",
            json!({"app": "training", "team": "ml", "env": "prod"}),
            0,
            true,
        ),
        (
            "one label of rule 0 missing",
            json!({"app": "training"}),
            0,
            false,
        ),
        (
            "rule 0 label with another value",
            json!({"app": "training", "team": "data"}),
            0,
            false,
        ),
        ("the label of rule 1", inference(), 1, true),
        ("no labels at all", Value::Null, 0, false),
    ];
    for (what, labels, index, expected) in cases {
        let bits = rules.of_pod(&pending("p", labels));
        assert_eq!(bits & (1 << index) != 0, expected, "{what}");
    }
}

// ---- TestMatchingRules ----

#[test]
fn matching_rules_as_bit_sets() {
    let rules = two_rules();
    let cases = [
        ("rule 0 only", training(), TRAINING),
        ("rule 1 only", inference(), INFERENCE),
        (
            "both rules",
            json!({"app": "training", "team": "ml", "workload": "inference"}),
            TRAINING | INFERENCE,
        ),
        ("no rule", serving(), 0),
        ("no labels", Value::Null, 0),
    ];
    for (what, labels, expected) in cases {
        assert_eq!(rules.of_pod(&pending("p", labels)), expected, "{what}");
    }
}

#[test]
fn no_rules_match_nothing() {
    let rules = ExclusiveRules::default();
    assert!(rules.is_empty());
    assert_eq!(rules.of_pod(&pending("p", training())), 0);
}

// ---- TestLoadGPUExclusiveConfig ----

#[test]
fn load_config_without_the_key_has_no_rules() {
    let mut warnings = Vec::new();
    let rules = ExclusiveRules::read(&Arguments::new(), &mut warnings);
    assert!(rules.is_empty());
    assert!(warnings.is_empty());
}

#[test]
fn load_config_keeps_rules_in_order() {
    let rules = two_rules();
    assert_eq!(
        rules.rules,
        vec![
            rule(&[("app", "training"), ("team", "ml")]),
            rule(&[("workload", "inference")]),
        ]
    );
}

#[test]
fn load_config_drops_keys_and_values_that_are_not_strings() {
    // Go also accepts `map[interface{}]interface{}` and keeps only string keys and values; our
    // maps are always keyed by typed values, so the same filtering applies to every entry.
    let (rules, warnings) = read(ArgValue::List(vec![ArgValue::Map(vec![
        (
            ArgValue::Str("app".into()),
            ArgValue::Str("training".into()),
        ),
        (ArgValue::Int(1), ArgValue::Str("one".into())),
        (ArgValue::Str("gpus".into()), ArgValue::Int(2)),
        (ArgValue::Str("exclusive".into()), ArgValue::Bool(true)),
    ])]));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(rules.rules, vec![rule(&[("app", "training")])]);
}

// ---- TestParseExclusiveRulesHandlesEdgeCases ----

#[test]
fn parse_null_value_gives_no_rules_and_a_warning() {
    // Go returns no rules silently for nil; we also say the value was ignored.
    let (rules, warnings) = read(ArgValue::Null);
    assert!(rules.is_empty());
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key, KEY);
}

#[test]
fn parse_value_of_the_wrong_type_gives_no_rules_and_a_warning() {
    // Go silently ignores a value that is not a list; our warning is intended.
    let (rules, warnings) = read(ArgValue::Str("not a slice".into()));
    assert!(rules.is_empty());
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key, KEY);

    let (rules, warnings) = read(label_map(&[("app", "training")]));
    assert!(rules.is_empty());
    assert_eq!(warnings.len(), 1);
}

#[test]
fn parse_empty_list_gives_no_rules() {
    let (rules, warnings) = read(ArgValue::List(vec![]));
    assert!(rules.is_empty());
    assert!(warnings.is_empty());
}

#[test]
fn parse_skips_empty_label_maps() {
    let (rules, warnings) = read(ArgValue::List(vec![
        ArgValue::Map(vec![]),
        // Left empty once its only non-string value is dropped.
        ArgValue::Map(vec![(ArgValue::Str("n".into()), ArgValue::Int(3))]),
        label_map(&[("workload", "inference")]),
    ]));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(rules.rules, vec![rule(&[("workload", "inference")])]);
    // The surviving rule is rule 0: skipped maps take no index.
    assert_eq!(rules.of_pod(&pending("p", inference())), 1);
}

#[test]
fn parse_skips_entries_that_are_not_maps_with_a_warning() {
    // Go skips such an entry silently (it yields an empty label set); we say so.
    let (rules, warnings) = read(ArgValue::List(vec![
        ArgValue::Str("app=training".into()),
        label_map(&[("app", "training")]),
    ]));
    assert_eq!(rules.rules, vec![rule(&[("app", "training")])]);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key, KEY);
}

#[test]
fn parse_keeps_at_most_64_rules() {
    let maps = (0..70)
        .map(|i| label_map(&[("rule", &i.to_string())]))
        .collect();
    let (rules, warnings) = read(ArgValue::List(maps));
    assert_eq!(rules.rules.len(), MAX_RULES);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key, KEY);
    // The last rule kept takes the last bit; the ones beyond are gone.
    assert_eq!(rules.of_pod(&pending("p", json!({"rule": "63"}))), 1 << 63);
    assert_eq!(rules.of_pod(&pending("p", json!({"rule": "64"}))), 0);
}

#[test]
fn parse_exactly_64_rules_without_warning() {
    let maps = (0..64)
        .map(|i| label_map(&[("rule", &i.to_string())]))
        .collect();
    let (rules, warnings) = read(ArgValue::List(maps));
    assert_eq!(rules.rules.len(), 64);
    assert!(warnings.is_empty(), "{warnings:?}");
}

// ---- TestCapGPUsOnlyAffectsSpecifiedIndices ----

#[test]
fn capping_closes_only_the_cards_of_the_rule() {
    // Go caps cards 0 and 1 by hand and checks cards 2 and 3 keep their share count, then that
    // restoring undoes it. Here cards 0 and 1 hold a training pod each: a training pod may get
    // only cards 2 and 3, and choosing leaves the node's cards as they were.
    let rules = two_rules();
    let mut gpus = node(4);
    running(&mut gpus, &rules, "pod-a", training(), 0);
    running(&mut gpus, &rules, "pod-b", training(), 1);
    let before = gpus.clone();

    assert_eq!(
        open_cards(&gpus, &rules, training()),
        names(&["GPU-2", "GPU-3"])
    );
    assert_eq!(gpus, before, "fitting changes nothing on the node");
    assert!(gpus.cards.values().all(|g| g.number == 10));
    assert_eq!(gpus.cards[&0].used_num, 1);
    assert_eq!(gpus.cards[&1].used_num, 1);
    // A pod of no rule is not held back.
    assert_eq!(
        open_cards(&gpus, &rules, serving()),
        names(&["GPU-0", "GPU-1", "GPU-2", "GPU-3"])
    );
}

// ---- TestReservedGPUsForPod ----

#[test]
fn reserved_cards_are_those_of_the_same_rule_only() {
    let rules = two_rules();
    let mut gpus = node(3);
    running(&mut gpus, &rules, "pod-a", training(), 0);
    running(&mut gpus, &rules, "pod-b", inference(), 1);

    // Card 0 holds a training pod; card 1's inference pod does not keep a training pod away.
    assert_eq!(
        open_cards(&gpus, &rules, training()),
        names(&["GPU-1", "GPU-2"])
    );
    // Binpack prefers the used cards, lowest index first: card 0 is skipped, card 1 is shared.
    let (cards, _) = gpus
        .fit(
            &pending("pod-c", training()),
            &ResourceNames::default(),
            Policy::Binpack,
            TRAINING,
        )
        .expect("fits");
    assert_eq!(uuids(&cards), names(&["GPU-1"]));

    // A pod of no rule has nothing reserved.
    assert_eq!(
        open_cards(&gpus, &rules, serving()),
        names(&["GPU-0", "GPU-1", "GPU-2"])
    );
}

// ---- TestPodMatchingMultipleRulesSeesUnionOfReservedGPUs ----

#[test]
fn pod_of_two_rules_avoids_the_cards_of_both() {
    let rules = two_rules();
    let mut gpus = node(3);
    running(&mut gpus, &rules, "pod-a", training(), 0);
    running(&mut gpus, &rules, "pod-b", inference(), 1);
    let both = json!({"app": "training", "team": "ml", "workload": "inference"});

    assert_eq!(open_cards(&gpus, &rules, both.clone()), names(&["GPU-2"]));
    let two_cards = pod("pod-x", both, 2, json!({}));
    let fitted = gpus.fit(
        &two_cards,
        &ResourceNames::default(),
        Policy::None,
        rules.of_pod(&two_cards),
    );
    assert!(fitted.is_err(), "{fitted:?}");
}

// ---- TestNonMatchingPodDoesNotReserve ----

#[test]
fn pod_of_no_rule_reserves_nothing() {
    // Go checks the pod is not tracked; here the card records no rule for it, and a training
    // pod may still join it.
    let rules = two_rules();
    let mut gpus = node(1);
    let other = pending("pod-x", serving());
    assert_eq!(rules.of_pod(&other), 0);
    assert_eq!(
        place(&mut gpus, &rules, &other, Policy::None),
        names(&["GPU-0"])
    );
    assert_eq!(gpus.cards[&0].pods[uid(&other)].rules, 0);
    assert_eq!(open_cards(&gpus, &rules, training()), names(&["GPU-0"]));
}

// ---- TestEndToEndExclusive ----

#[test]
fn end_to_end_exclusive() {
    let rules = two_rules();
    let mut gpus = node(4);
    running(&mut gpus, &rules, "pod-a", training(), 0);
    running(&mut gpus, &rules, "pod-b", inference(), 1);

    // A new training pod sees three cards: only the training pod's card is closed.
    assert_eq!(
        open_cards(&gpus, &rules, training()),
        names(&["GPU-1", "GPU-2", "GPU-3"])
    );
    // A pod of no rule sees all four, and every card still shares ten ways.
    assert_eq!(
        open_cards(&gpus, &rules, serving()),
        names(&["GPU-0", "GPU-1", "GPU-2", "GPU-3"])
    );
    assert!(gpus.cards.values().all(|g| g.number == 10));

    // Ours beyond Go: once the training pod is placed (highest index first), its card closes
    // to the next training pod too, but stays open to inference pods except on card 1.
    let train = pending("pod-c", training());
    assert_eq!(
        place(&mut gpus, &rules, &train, Policy::None),
        names(&["GPU-3"])
    );
    assert_eq!(
        open_cards(&gpus, &rules, training()),
        names(&["GPU-1", "GPU-2"])
    );
    assert_eq!(
        open_cards(&gpus, &rules, inference()),
        names(&["GPU-0", "GPU-2", "GPU-3"])
    );
}

// ---- TestOnSessionOpenWrapsDevices ----

#[test]
fn pods_already_on_the_node_reserve_their_cards() {
    // Go rebuilds the rule-to-card map from the node's tasks at session open and checks it;
    // here a running pod is accounted from its annotation with its rule bits, and the card it
    // sits on is the one a same-rule pod may not get.
    let rules = two_rules();
    let mut gpus = node(2);
    running(&mut gpus, &rules, "pod-a", training(), 0);

    assert_eq!(gpus.cards[&0].pods["uid-pod-a"].rules, TRAINING);
    assert!(gpus.cards[&1].pods.is_empty());
    assert_eq!(open_cards(&gpus, &rules, training()), names(&["GPU-1"]));
}

#[test]
fn running_pod_of_no_rule_does_not_reserve_its_card() {
    let rules = two_rules();
    let mut gpus = node(1);
    running(&mut gpus, &rules, "pod-e", serving(), 0);
    assert_eq!(gpus.cards[&0].pods["uid-pod-e"].rules, 0);
    assert_eq!(open_cards(&gpus, &rules, training()), names(&["GPU-0"]));
}

// ---- Ours ----

#[test]
fn mig_node_ignores_the_rules() {
    // Volcano wraps only HAMi-core nodes: on a MIG node a second training pod shares the card.
    let rules = two_rules();
    let mut card = Gpu::new("gpu-1234", 10, 40960, "NVIDIA A100-SXM4-40GB");
    card.mig_geometries = std::sync::Arc::from(vec![Geometry {
        group: "group1".into(),
        instances: vec![MigTemplate {
            name: "1g.10gb".into(),
            memory: 10240,
            count: 2,
        }],
    }]);
    let mut gpus = Gpus {
        node: "mig-node".into(),
        mode: MIG.into(),
        memory_factor: 0,
        cards: BTreeMap::from([(0, card)]),
    };

    let first = pending("pod-a", training());
    let second = pending("pod-b", training());
    place(&mut gpus, &rules, &first, Policy::None);
    assert_eq!(gpus.cards[&0].pods["uid-pod-a"].rules, TRAINING);
    let (cards, _) = gpus
        .fit(
            &second,
            &ResourceNames::default(),
            Policy::None,
            rules.of_pod(&second),
        )
        .expect("the rule is not applied in MIG mode");
    assert!(cards[0][0].uuid.starts_with("gpu-1234["), "{cards:?}");

    // The same pods on a HAMi-core node of one card: the second one does not fit.
    let mut hami = node(1);
    place(&mut hami, &rules, &first, Policy::None);
    let fitted = hami.fit(
        &second,
        &ResourceNames::default(),
        Policy::None,
        rules.of_pod(&second),
    );
    assert!(fitted.is_err(), "{fitted:?}");
}

#[test]
fn releasing_the_last_pod_of_a_rule_reopens_the_card() {
    let rules = two_rules();
    let mut gpus = node(1);
    let a = pending("pod-a", training());
    let b = pending("pod-b", inference());
    place(&mut gpus, &rules, &a, Policy::None);
    place(&mut gpus, &rules, &b, Policy::None);
    assert!(open_cards(&gpus, &rules, training()).is_empty());
    assert!(open_cards(&gpus, &rules, inference()).is_empty());

    // The training pod leaves: the inference pod still holds the card for its own rule only.
    gpus.release(uid(&a));
    assert_eq!(gpus.cards[&0].used_num, 1);
    assert_eq!(open_cards(&gpus, &rules, training()), names(&["GPU-0"]));
    assert!(open_cards(&gpus, &rules, inference()).is_empty());

    gpus.release(uid(&b));
    assert_eq!(gpus.cards[&0].used_num, 0);
    assert_eq!(open_cards(&gpus, &rules, inference()), names(&["GPU-0"]));
}

#[test]
fn card_stays_closed_while_another_pod_of_the_rule_holds_it() {
    // Go's untrack keeps a card reserved while another tracked pod still uses it. Two training
    // pods can share a card only when they were already there (e.g. placed before the rule was
    // configured), so they are accounted from their annotations.
    let rules = two_rules();
    let mut gpus = node(1);
    running(&mut gpus, &rules, "pod-a", training(), 0);
    running(&mut gpus, &rules, "pod-b", training(), 0);

    gpus.release("uid-pod-a");
    assert!(open_cards(&gpus, &rules, training()).is_empty());
    gpus.release("uid-pod-b");
    assert_eq!(open_cards(&gpus, &rules, training()), names(&["GPU-0"]));
}
