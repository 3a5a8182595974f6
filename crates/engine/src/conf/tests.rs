//! Tests of configuration parsing (spec `framework.md` §1, §8.2 items 1 and 4).

use std::path::PathBuf;

use proptest::prelude::*;

use super::*;

/// Volcano's registered actions (`framework.md` §1.3).
const VOLCANO_ACTIONS: &[&str] = &[
    "enqueue",
    "allocate",
    "backfill",
    "preempt",
    "reclaim",
    "shuffle",
    "gangpreempt",
    "gangreclaim",
];

/// Volcano's built-in plugins.
const VOLCANO_PLUGINS: &[&str] = super::VOLCANO_PLUGIN_NAMES;

const KNOWN: KnownNames<'static> = KnownNames {
    actions: VOLCANO_ACTIONS,
    plugins: VOLCANO_PLUGINS,
    strict: true,
    check_arguments: None,
};

fn ok(text: &str) -> Parsed {
    match parse(text, &KNOWN) {
        Ok(parsed) => parsed,
        Err(e) => panic!("expected a valid configuration, got {e}\n{text}"),
    }
}

fn err(text: &str) -> ConfError {
    match parse(text, &KNOWN) {
        Ok(parsed) => panic!("expected an error, parsed {:?}", parsed.conf),
        Err(e) => e,
    }
}

fn option(conf: &SchedulerConf, tier: usize, index: usize) -> &PluginOption {
    &conf.tiers[tier].plugins[index]
}

fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn read_config(name: &str) -> String {
    let path = config_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts that every gate of `option` is at its default, except those listed as `(gate, value)`.
fn assert_gates(option: &PluginOption, explicit: &[(Gate, bool)]) {
    for gate in Gate::ALL {
        let expected = explicit
            .iter()
            .find(|(g, _)| *g == gate)
            .map_or(gate.default_enabled(), |(_, on)| *on);
        assert_eq!(
            option.is_enabled(gate),
            expected,
            "{}: {}",
            option.name,
            gate.yaml_key()
        );
    }
}

#[test]
fn default_conf_file_is_the_embedded_default() {
    assert_eq!(read_config("default.conf"), DEFAULT_SCHEDULER_CONF);
}

#[test]
fn embedded_default_parses_with_all_defaults() {
    let parsed = ok(DEFAULT_SCHEDULER_CONF);
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let conf = parsed.conf;
    assert_eq!(conf, SchedulerConf::embedded_default());
    assert_eq!(conf.actions, ["enqueue", "allocate", "backfill"]);
    assert_eq!(
        conf.plugin_names().collect::<Vec<_>>(),
        [
            "priority",
            "gang",
            "conformance",
            "overcommit",
            "drf",
            "predicates",
            "proportion",
            "nodeorder"
        ]
    );
    for option in conf.plugin_options() {
        assert_gates(option, &[]);
        assert!(!option.enable_hierarchy);
        assert!(option.arguments.is_empty());
    }
    assert!(conf.configurations.is_empty());
    assert!(conf.metrics.is_empty());
    // Volcano's copy has a leading newline; the loader trims it away (§1.1).
    assert_eq!(ok(&format!("\n{DEFAULT_SCHEDULER_CONF}")).conf, conf);
}

#[test]
fn every_shipped_config_parses_and_round_trips() {
    let mut names: Vec<String> = std::fs::read_dir(config_dir())
        .expect("config/ exists")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".conf"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in &names {
        let text = read_config(name);
        let parsed = parse(&text, &KNOWN).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(parsed.warnings.is_empty(), "{name}: {:?}", parsed.warnings);
        let conf = parsed.conf;
        assert!(!conf.actions.is_empty(), "{name}");
        for option in conf.plugin_options() {
            assert!(!option.enabled_cluster_order, "{name}: {}", option.name);
            assert!(!option.enable_hierarchy, "{name}: {}", option.name);
        }
        let again = ok(&conf.to_yaml()).conf;
        assert_eq!(again, conf, "{name} does not round-trip");
    }
}

#[test]
fn helm_chart_config_disables_preemptable_on_gang_and_drf() {
    let conf = ok(&read_config("volcano-chart.conf")).conf;
    assert_eq!(conf.actions, ["enqueue", "allocate", "backfill"]);
    assert_eq!(conf.tiers.len(), 2);
    assert_eq!(conf.tiers[1].plugins.len(), 6);
    assert_eq!(option(&conf, 1, 5).name, "binpack");
    for option in conf.plugin_options() {
        if matches!(option.name.as_str(), "gang" | "drf") {
            assert_gates(option, &[(Gate::Preemptable, false)]);
        } else {
            assert_gates(option, &[]);
        }
    }
}

#[test]
fn seed_example_configs_keep_their_arguments() {
    let production = ok(&read_config("production.conf")).conf;
    assert_eq!(
        production.plugin_names().collect::<Vec<_>>(),
        [
            "priority",
            "gang",
            "conformance",
            "overcommit",
            "drf",
            "predicates",
            "proportion"
        ]
    );

    let gpu = ok(&read_config("gpu-training.conf")).conf;
    let fit = option(&gpu, 1, 3);
    assert_eq!(fit.name, "resource-strategy-fit");
    let gpu_weight = fit
        .arguments
        .get("resources")
        .and_then(|r| r.get("nvidia.com/gpu"))
        .and_then(|g| g.get("weight"));
    assert_eq!(gpu_weight, Some(&ArgValue::Int(5)));
    let sra_enable = fit.arguments.get("sra").and_then(|s| s.get("enable"));
    assert_eq!(sra_enable, Some(&ArgValue::Bool(true)));
    let cpu_per_gpu = fit
        .arguments
        .get("proportional")
        .and_then(|p| p.get("resourceProportion"))
        .and_then(|r| r.get("nvidia.com/gpu.cpu"));
    assert_eq!(cpu_per_gpu, Some(&ArgValue::Int(8)));
    let mut weight = 0;
    assert_eq!(
        option(&gpu, 1, 4)
            .arguments
            .get_int("task-topology.weight", &mut weight),
        Ok(true)
    );
    assert_eq!(weight, 10);

    let mixed = ok(&read_config("mixed-extender.conf")).conf;
    let extender = option(&mixed, 1, 5);
    assert_eq!(extender.name, "extender");
    let mut url = String::new();
    assert_eq!(
        extender
            .arguments
            .get_string("extender.urlPrefix", &mut url),
        Ok(true)
    );
    assert_eq!(url, "http://custom-scheduler:8080");
    let mut ignorable = false;
    assert_eq!(
        extender
            .arguments
            .get_bool("extender.ignorable", &mut ignorable),
        Ok(true)
    );
    assert!(ignorable);
    let usage = option(&mixed, 1, 3);
    let cpu_threshold = usage.arguments.get("thresholds").and_then(|t| t.get("cpu"));
    assert_eq!(cpu_threshold, Some(&ArgValue::Int(75)));
}

/// §8.2 item 1: every flag defaults to true except `enabledClusterOrder` and `enableHierarchy`;
/// an explicit value is honoured; unknown keys are ignored (and reported).
#[test]
fn flags_default_to_true_except_cluster_order_and_hierarchy() {
    let parsed = ok("actions: allocate
tiers:
- plugins:
  - name: drf
  - name: gang
    enableJobOrder: false
    enabledClusterOrder: true
    enableHierarchy: true
    enabledVictim: false
    enableJobOrdr: false
");
    let conf = &parsed.conf;
    let drf = option(conf, 0, 0);
    assert_gates(drf, &[]);
    assert!(!drf.is_enabled(Gate::ClusterOrder));
    assert!(!drf.enabled_cluster_order);
    assert!(!drf.enable_hierarchy);
    assert_eq!(drf, &PluginOption::new("drf"));

    let gang = option(conf, 0, 1);
    assert_gates(
        gang,
        &[
            (Gate::JobOrder, false),
            (Gate::ClusterOrder, true),
            (Gate::Victim, false),
        ],
    );
    assert!(gang.enabled_cluster_order);
    assert!(gang.enable_hierarchy);
    assert_eq!(
        parsed.warnings,
        [r#"tiers[0].plugins[1]: unknown key "enableJobOrdr" (did you mean "enableJobOrder"?)"#]
    );
}

#[test]
fn every_gate_has_its_own_yaml_key() {
    for gate in Gate::ALL {
        assert_eq!(Gate::from_yaml_key(gate.yaml_key()), Some(gate));
        let conf = ok(&format!(
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    {}: {}\n",
            gate.yaml_key(),
            !gate.default_enabled()
        ))
        .conf;
        assert_gates(option(&conf, 0, 0), &[(gate, !gate.default_enabled())]);
    }
    assert_eq!(Gate::Overused.yaml_key(), "enabledOverused");
    assert_eq!(Gate::JobEnqueued.yaml_key(), "enableJobEnqueued");
    assert_eq!(Gate::from_yaml_key("enableHierarchy"), None);
}

#[test]
fn null_flags_take_their_default() {
    let conf = ok("actions: allocate
tiers:
- plugins:
  - name: gang
    enableJobOrder: ~
    enabledClusterOrder:
    enableHierarchy: null
")
    .conf;
    let gang = option(&conf, 0, 0);
    assert_gates(gang, &[]);
    assert!(!gang.enable_hierarchy);
}

#[test]
fn yaml_1_1_words_are_accepted_for_flags() {
    let cases = [
        ("yes", true),
        ("Yes", true),
        ("YES", true),
        ("y", true),
        ("Y", true),
        ("on", true),
        ("On", true),
        ("ON", true),
        ("true", true),
        ("True", true),
        ("TRUE", true),
        ("no", false),
        ("No", false),
        ("NO", false),
        ("n", false),
        ("N", false),
        ("off", false),
        ("Off", false),
        ("OFF", false),
        ("false", false),
        ("False", false),
        ("FALSE", false),
    ];
    for (word, value) in cases {
        let conf = ok(&format!(
            "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    \
             enablePreemptable: {word}\n    enableHierarchy: {word}\n"
        ))
        .conf;
        let drf = option(&conf, 0, 0);
        assert_eq!(drf.is_enabled(Gate::Preemptable), value, "{word}");
        assert_eq!(drf.enable_hierarchy, value, "{word}");
    }
}

#[test]
fn non_boolean_flag_is_an_error_naming_its_path() {
    let e = err("actions: allocate
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: drf
    enableJobOrder: maybe
");
    assert_eq!(e.path, "tiers[0].plugins[2].enableJobOrder");
    assert_eq!(e.message, r#"expected a boolean, found "maybe""#);
    assert_eq!(
        e.to_string(),
        r#"tiers[0].plugins[2].enableJobOrder: expected a boolean, found "maybe""#
    );

    let e = err("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePredicate: 1\n");
    assert_eq!(e.path, "tiers[0].plugins[0].enablePredicate");
    assert_eq!(e.message, "expected a boolean, found 1");

    let e = err("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: [x]\n");
    assert_eq!(e.path, "tiers[0].plugins[0].enableHierarchy");
    assert_eq!(e.message, "expected a boolean, found a list");
}

#[test]
fn actions_keep_order_and_duplicates() {
    let conf = ok("actions: \" enqueue,allocate ,  allocate,backfill\"\ntiers: []\n").conf;
    assert_eq!(
        conf.actions,
        ["enqueue", "allocate", "allocate", "backfill"]
    );
}

#[test]
fn empty_action_elements_are_errors() {
    for actions in [
        "\"enqueue, allocate, backfill,\"",
        "\"enqueue,,allocate\"",
        "\", allocate\"",
    ] {
        let e = err(&format!("actions: {actions}\n"));
        assert_eq!(e.path, "actions", "{actions}");
        assert!(
            e.message.starts_with("empty action name at position"),
            "{}",
            e.message
        );
    }
    let e = err("actions: \"enqueue, allocate, backfill,\"\n");
    assert_eq!(
        e.message,
        r#"empty action name at position 4 in "enqueue, allocate, backfill," (stray comma?)"#
    );

    for text in ["actions: \"\"\n", "actions: \"  \"\n", "actions:\n"] {
        let e = err(text);
        assert_eq!(e.path, "actions", "{text}");
        assert!(e.message.starts_with("empty;"), "{}", e.message);
    }
    let e = err("tiers: []\n");
    assert_eq!(e.path, "actions");
    assert!(e.message.starts_with("missing;"), "{}", e.message);
    // An empty file (what Volcano parses when no file is given) fails the same way (§1.9).
    assert_eq!(err("").path, "actions");
}

#[test]
fn unknown_action_is_an_error_with_a_suggestion() {
    let e = err("actions: \"enqueue, alocate, backfill\"\n");
    assert_eq!(e.path, "actions");
    assert_eq!(
        e.message,
        "unknown action \"alocate\" (did you mean \"allocate\"?); known actions: enqueue, \
         allocate, backfill, preempt, reclaim, shuffle, gangpreempt, gangreclaim"
    );
    let e = err("actions: \"enqueue, schedule\"\n");
    assert!(
        e.message
            .starts_with("unknown action \"schedule\"; known actions: enqueue"),
        "{}",
        e.message
    );
    // Names are case-sensitive, as in Volcano.
    let e = err("actions: \"Allocate\"\n");
    assert!(
        e.message.contains("did you mean \"allocate\"?"),
        "{}",
        e.message
    );
}

/// Volcano's behaviour (the default): unknown plugins are skipped, named in a warning and in
/// `skipped_plugins`; the rest of the tiers stay as written.
#[test]
fn unknown_plugin_is_skipped_with_a_warning_when_not_strict() {
    let lenient = KnownNames {
        strict: false,
        ..KNOWN
    };
    let text = "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n  - name: usage\n\
                - plugins:\n  - name: dfr\n  - name: drf\n";
    let known_plugins = KnownNames {
        plugins: &["priority", "drf"],
        ..lenient
    };
    let parsed = parse(text, &known_plugins).expect("lenient parse");
    assert_eq!(parsed.conf.skipped_plugins, vec!["usage", "dfr"]);
    let names: Vec<Vec<&str>> = parsed
        .conf
        .tiers
        .iter()
        .map(|t| t.plugins.iter().map(|p| p.name.as_str()).collect())
        .collect();
    assert_eq!(names, vec![vec!["priority"], vec!["drf"]]);
    assert_eq!(parsed.warnings.len(), 2, "{:?}", parsed.warnings);
    assert!(
        parsed.warnings[0].starts_with(
            "tiers[0].plugins[1].name: plugin \"usage\" is a Volcano plugin that volcano-rs \
             does not provide yet"
        ),
        "{:?}",
        parsed.warnings
    );
    assert!(
        parsed.warnings[1].contains("(did you mean \"drf\"?)")
            && parsed.warnings[1].contains("skipped, the rest of the configuration runs"),
        "{:?}",
        parsed.warnings
    );
    // Strict: the same file is refused at the first unknown name.
    let strict = KnownNames {
        strict: true,
        ..known_plugins
    };
    let e = parse(text, &strict).expect_err("strict refuses");
    assert_eq!(e.path, "tiers[0].plugins[1].name");
}

/// An unknown name in `actions` refuses the file in both modes (Volcano's loader fails too);
/// a `configurations` entry for an unknown action is only a warning unless strict.
#[test]
fn unknown_actions_are_refused_and_unknown_configurations_warned() {
    let lenient = KnownNames {
        strict: false,
        ..KNOWN
    };
    let e = parse("actions: \"enqueue, allocat\"\ntiers: []\n", &lenient).expect_err("refused");
    assert_eq!(e.path, "actions");
    assert!(
        e.message.contains("(did you mean \"allocate\"?)"),
        "{}",
        e.message
    );

    let text =
        "actions: allocate\ntiers: []\nconfigurations:\n- name: alocate\n  arguments: {a: 1}\n";
    let parsed = parse(text, &lenient).expect("lenient parse");
    assert!(parsed.conf.configurations.is_empty());
    assert!(
        parsed.warnings.iter().any(|w| w
            .starts_with("configurations[0].name: unknown action \"alocate\"")
            && w.ends_with("these arguments are not used")),
        "{:?}",
        parsed.warnings
    );
    let e = parse(text, &KNOWN).expect_err("strict refuses");
    assert_eq!(e.path, "configurations[0].name");
}

#[test]
fn unknown_plugin_is_an_error_with_a_suggestion() {
    let e = err(
        "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n- plugins:\n  - name: dfr\n",
    );
    assert_eq!(e.path, "tiers[1].plugins[0].name");
    assert!(
        e.message.starts_with(
            "unknown plugin \"dfr\" (did you mean \"drf\"?); known plugins: binpack, capacity"
        ),
        "{}",
        e.message
    );
    let e = err("actions: allocate\ntiers:\n- plugins:\n  - name: fairness\n");
    assert!(
        e.message
            .starts_with("unknown plugin \"fairness\"; known plugins:"),
        "{}",
        e.message
    );
    let e = err("actions: allocate\ntiers:\n- plugins:\n  - enableJobOrder: true\n");
    assert_eq!(e.path, "tiers[0].plugins[0].name");
    assert_eq!(e.message, "missing plugin name");
    let e = err("actions: allocate\ntiers:\n- plugins:\n  - gang\n");
    assert_eq!(e.path, "tiers[0].plugins[0]");
    assert_eq!(
        e.message,
        r#"expected a mapping such as "name: gang", found "gang""#
    );
}

#[test]
fn known_names_come_from_the_caller() {
    let known = KnownNames {
        actions: &["allocate"],
        plugins: &["mine"],
        strict: true,
        check_arguments: None,
    };
    let parsed = parse(
        "actions: allocate\ntiers:\n- plugins:\n  - name: mine\n",
        &known,
    );
    assert_eq!(parsed.map(|p| p.conf.plugin_names().count()).ok(), Some(1));
    let e = parse("actions: enqueue\n", &known).expect_err("enqueue is not known here");
    assert_eq!(
        e.message,
        "unknown action \"enqueue\"; known actions: allocate"
    );
}

#[test]
fn drf_hierarchy_and_proportion_conflict_only_within_one_tier() {
    let e = err("actions: allocate
tiers:
- plugins:
  - name: priority
- plugins:
  - name: proportion
  - name: drf
    enableHierarchy: true
");
    assert_eq!(e.path, "tiers[1]");
    assert!(
        e.message
            .starts_with("proportion and drf with hierarchy enabled conflict"),
        "{}",
        e.message
    );

    let conf = ok("actions: allocate
tiers:
- plugins:
  - name: drf
    enableHierarchy: yes
- plugins:
  - name: proportion
  - name: drf
")
    .conf;
    assert!(conf.hierarchy_enabled("drf"));
    // drf without hierarchy next to proportion is the embedded default and fine.
    assert!(!ok(DEFAULT_SCHEDULER_CONF).conf.hierarchy_enabled("drf"));
}

#[test]
fn hierarchy_enabled_reads_the_first_option_with_that_name() {
    let conf = ok("actions: allocate
tiers:
- plugins:
  - name: capacity
- plugins:
  - name: capacity
    enableHierarchy: true
  - name: nodegroup
    enableHierarchy: true
")
    .conf;
    assert!(!conf.hierarchy_enabled("capacity"));
    assert!(conf.hierarchy_enabled("nodegroup"));
    assert!(!conf.hierarchy_enabled("drf"));
}

#[test]
fn structural_type_errors_name_their_path() {
    let e = err("actions: [enqueue, allocate]\n");
    assert_eq!(e.path, "actions");
    assert_eq!(
        e.message,
        "expected a comma-separated string such as \"enqueue, allocate, backfill\", found a list"
    );

    let e = err("actions: allocate\ntiers:\n  plugins: []\n");
    assert_eq!(e.path, "tiers");
    assert_eq!(e.message, "expected a list of tiers, found a mapping");

    let e = err("actions: allocate\ntiers: gang\n");
    assert_eq!(e.message, "expected a list of tiers, found \"gang\"");

    let e = err("actions: allocate\ntiers:\n- plugins: gang\n");
    assert_eq!(e.path, "tiers[0].plugins");

    let e = err("actions: allocate\ntiers:\n- - name: gang\n");
    assert_eq!(e.path, "tiers[0]");

    let e = err("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    arguments: [1]\n");
    assert_eq!(e.path, "tiers[0].plugins[0].arguments");

    let e = err("actions: allocate\ntiers:\n- plugins:\n  - name: [gang]\n");
    assert_eq!(e.path, "tiers[0].plugins[0].name");
    assert_eq!(e.message, "expected a plugin name, found a list");

    let e = err("actions: allocate\nmetrics:\n  tls:\n    insecureSkipVerify: true\n");
    assert_eq!(e.path, "metrics.tls");

    let e = err("actions: allocate\nconfigurations: {name: allocate}\n");
    assert_eq!(e.path, "configurations");
}

#[test]
fn whole_document_errors_have_an_empty_path() {
    let e = err("actions: [allocate\n");
    assert_eq!(e.path, "");
    assert!(e.message.starts_with("invalid YAML"), "{}", e.message);
    assert_eq!(e.to_string(), e.message);

    let e = err("- actions: allocate\n");
    assert_eq!(e.path, "");
    assert!(e.message.ends_with("found a list"), "{}", e.message);

    let e = err("actions: allocate\nactions: enqueue\n");
    assert_eq!(e.path, "");
}

#[test]
fn unknown_keys_are_warnings_with_suggestions() {
    let parsed = ok("actions: allocate
tier: []
tiers:
- plugins:
  - name: gang
- plugin: []
  plugins:
  - name: drf
    enablePreemtable: false
    enableClusterOrder: true
    weight: 3
configurations:
- name: allocate
  argument: {}
");
    assert_eq!(
        parsed.warnings,
        [
            r#"unknown top-level key "tier" (did you mean "tiers"?)"#,
            r#"tiers[1]: unknown key "plugin" (did you mean "plugins"?)"#,
            r#"tiers[1].plugins[0]: unknown key "enablePreemtable" (did you mean "enablePreemptable"?)"#,
            r#"tiers[1].plugins[0]: unknown key "enableClusterOrder" (did you mean "enabledClusterOrder"?)"#,
            r#"tiers[1].plugins[0]: unknown key "weight""#,
            r#"configurations[0]: unknown key "argument" (did you mean "arguments"?)"#,
        ]
    );
    // Unknown keys are otherwise ignored, as in Volcano: the misspelt flags changed nothing.
    let drf = option(&parsed.conf, 1, 0);
    assert_gates(drf, &[]);
}

#[test]
fn missing_tiers_are_accepted_with_a_warning() {
    let parsed = ok("actions: allocate\n");
    assert!(parsed.conf.tiers.is_empty());
    assert_eq!(
        parsed.warnings,
        ["tiers: no tiers configured, so no plugin will run"]
    );
    // A null tier or plugin list is an empty one.
    let conf = ok("actions: allocate\ntiers:\n-\n- plugins:\n").conf;
    assert_eq!(conf.tiers, [Tier::default(), Tier::default()]);
}

#[test]
fn action_configurations_first_entry_wins() {
    let parsed = ok("actions: \"allocate, preempt\"
tiers: []
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
    minCandidateNodesPercentage: 20
- name: allocate
  arguments:
    predicateErrorCacheEnable: false
- name: preempt
  arguments:
    minCandidateNodesPercentage: 50
- name: gangpreempt
");
    let conf = &parsed.conf;
    assert_eq!(conf.configurations.len(), 4);
    assert_eq!(
        parsed.warnings,
        [
            r#"configurations[2]: action "preempt" is already configured by configurations[0], which takes precedence; this entry is ignored"#,
            "tiers: no tiers configured, so no plugin will run",
        ]
    );

    let preempt = conf
        .action_arguments("preempt")
        .expect("preempt is configured");
    let mut percentage = 10;
    assert_eq!(
        preempt.get_int("minCandidateNodesPercentage", &mut percentage),
        Ok(true)
    );
    assert_eq!(percentage, 20);
    let mut topology = false;
    assert_eq!(
        preempt.get_bool("enableTopologyAwarePreemption", &mut topology),
        Ok(true)
    );
    assert!(topology);

    let mut cache = true;
    let allocate = conf
        .action_arguments("allocate")
        .expect("allocate is configured");
    assert_eq!(
        allocate.get_bool("predicateErrorCacheEnable", &mut cache),
        Ok(true)
    );
    assert!(!cache);

    assert_eq!(
        conf.action_arguments("gangpreempt"),
        Some(&Arguments::new())
    );
    assert_eq!(conf.action_arguments("backfill"), None);
}

#[test]
fn configuration_names_are_checked() {
    let e = err("actions: allocate\nconfigurations:\n- name: alocate\n  arguments: {}\n");
    assert_eq!(e.path, "configurations[0].name");
    assert!(
        e.message.contains("did you mean \"allocate\"?"),
        "{}",
        e.message
    );
    let e = err("actions: allocate\nconfigurations:\n- arguments: {a: 1}\n");
    assert_eq!(e.path, "configurations[0].name");
    assert_eq!(e.message, "missing action name");
}

/// §8.2 item 4, accessor part, plus the intentional absence of stickiness (§1.6): a key removed
/// from the configuration is absent, not remembered from an earlier configuration.
#[test]
fn action_arguments_typing_and_no_stickiness() {
    let first = ok("actions: \"allocate, preempt\"
configurations:
- name: allocate
  arguments:
    predicateErrorCacheEnable: false
- name: preempt
  arguments:
    topologyAwarePreemptWorkerNum: 4.0
    minCandidateNodesAbsolute: \"5\"
    maxCandidateNodesAbsolute: {nested: 1}
")
    .conf;
    let preempt = first.action_arguments("preempt").expect("configured");
    let mut workers = 16;
    assert!(
        preempt
            .get_int("topologyAwarePreemptWorkerNum", &mut workers)
            .is_err()
    );
    assert_eq!(workers, 16, "a float is rejected and the default kept");
    let mut min_absolute = 1;
    assert!(
        preempt
            .get_int("minCandidateNodesAbsolute", &mut min_absolute)
            .is_err()
    );
    assert_eq!(min_absolute, 1, "a string is rejected and the default kept");
    // The counterpart of Volcano's fatal `Get[T]` failure is an error for the caller.
    assert!(preempt.decode::<i64>("maxCandidateNodesAbsolute").is_err());
    assert_eq!(preempt.decode::<i64>("missing"), Ok(None));

    let reloaded = ok("actions: \"allocate, preempt\"\n").conf;
    assert_eq!(reloaded.action_arguments("allocate"), None);
    let mut cache = true;
    let no_args = Arguments::new();
    let args = reloaded.action_arguments("allocate").unwrap_or(&no_args);
    assert_eq!(
        args.get_bool("predicateErrorCacheEnable", &mut cache),
        Ok(false)
    );
    assert!(cache, "the default applies again after the key is removed");
}

#[test]
fn metrics_values_are_literal_text() {
    let conf = ok("actions: allocate
tiers: []
metrics:
  type: prometheus
  address: http://prometheus.example:9090
  interval: 30s
  tls.insecureSkipVerify: true
  retries: 3
  empty:
")
    .conf;
    let expected: BTreeMap<String, String> = [
        ("address", "http://prometheus.example:9090"),
        ("empty", ""),
        ("interval", "30s"),
        ("retries", "3"),
        ("tls.insecureSkipVerify", "true"),
        ("type", "prometheus"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(conf.metrics, expected);
}

#[test]
fn plugin_arguments_are_typed() {
    let conf = ok("actions: allocate
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1.5
      binpack.resources: nvidia.com/gpu
      flag: yes
      binpack.resources.nvidia.com/gpu: 2
")
    .conf;
    let args = &option(&conf, 0, 0).arguments;
    assert_eq!(args.get("binpack.weight"), Some(&ArgValue::Int(10)));
    assert_eq!(args.get("binpack.cpu"), Some(&ArgValue::Float(1.5)));
    assert_eq!(
        args.get("binpack.resources"),
        Some(&ArgValue::Str("nvidia.com/gpu".into()))
    );
    assert_eq!(args.get("flag"), Some(&ArgValue::Bool(true)));
    assert_eq!(args.len(), 5);
}

#[test]
fn merge_keys_and_tags_are_resolved() {
    let conf = ok("actions: !custom allocate
common: &common
  enablePreemptable: false
tiers:
- plugins:
  - <<: *common
    name: gang
")
    .conf;
    assert_gates(option(&conf, 0, 0), &[(Gate::Preemptable, false)]);
    assert_eq!(conf.actions, ["allocate"]);
}

#[test]
fn plugin_option_builders_and_gate_setters() {
    let mut option = PluginOption::new("gang");
    assert_gates(&option, &[]);
    option.set_enabled(Gate::ClusterOrder, true);
    assert!(option.enabled_cluster_order);
    option.enabled_cluster_order = false;
    assert!(!option.is_enabled(Gate::ClusterOrder));
    let option = option
        .with_gate(Gate::Preemptable, false)
        .with_arguments(Arguments::from_pairs(&[("a", ArgValue::Int(1))]));
    assert_gates(&option, &[(Gate::Preemptable, false)]);
    assert_eq!(option.arguments.len(), 1);
    let debug = format!("{option:?}");
    assert!(debug.contains("enablePreemptable: false"), "{debug}");
}

#[test]
fn conf_error_display() {
    assert_eq!(
        ConfError::new("tiers[0]", "boom").to_string(),
        "tiers[0]: boom"
    );
    assert_eq!(ConfError::new("", "boom").to_string(), "boom");
}

#[test]
fn to_yaml_writes_only_non_default_flags() {
    let conf = ok(&read_config("volcano-chart.conf")).conf;
    let yaml = conf.to_yaml();
    assert_eq!(
        yaml.matches("enablePreemptable: false").count(),
        2,
        "{yaml}"
    );
    assert!(!yaml.contains("enableJobOrder"), "{yaml}");
    assert!(!yaml.contains("configurations"), "{yaml}");
}

#[test]
fn to_yaml_round_trips_a_full_configuration() {
    let text = "actions: \"enqueue, allocate, preempt, allocate\"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: off
    enabledClusterOrder: on
- plugins:
  - name: drf
    enableHierarchy: true
    enableJobOrder: false
  - name: predicates
    arguments:
      predicate.GPUSharingEnable: true
      predicate.CacheEnable: 'yes'
      list: [1, 2.5, x, ~]
      nested: {a: {b: [c]}, 3: d}
      quoted: \"true\"
      octal: '012'
      big: 18446744073709551615
      weight: -4
configurations:
- name: preempt
  arguments:
    minCandidateNodesPercentage: 20
- name: allocate
metrics:
  type: prometheus
  interval: 30s
";
    let conf = ok(text).conf;
    let yaml = conf.to_yaml();
    let again = ok(&yaml);
    assert_eq!(again.conf, conf, "{yaml}");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

fn arb_scalar() -> impl Strategy<Value = ArgValue> {
    prop_oneof![
        Just(ArgValue::Null),
        any::<bool>().prop_map(ArgValue::Bool),
        any::<i64>().prop_map(ArgValue::Int),
        ((i64::MAX as u64 + 1)..=u64::MAX).prop_map(ArgValue::Uint),
        (-1e9f64..1e9).prop_map(ArgValue::Float),
        // Any text: the writer quotes what would read back as another type.
        "[ -~]{0,12}".prop_map(ArgValue::Str),
        prop::sample::select(vec!["yes", "Off", "y", "012", "0x1F", "1_000", "~", ".inf"])
            .prop_map(|s| ArgValue::Str(s.to_owned())),
    ]
}

/// Nested mapping keys, the YAML 1.1 words among them (written quoted, read back as text).
fn arb_map_key() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z.]{1,6}", Just("on".to_owned()), Just("n".to_owned())]
}

fn arb_value() -> impl Strategy<Value = ArgValue> {
    arb_scalar().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(ArgValue::List),
            prop::collection::vec((arb_map_key(), inner), 0..4).prop_map(|entries| {
                // Duplicate keys are rejected by the parser, so keep the first of each.
                let mut seen = std::collections::HashSet::new();
                ArgValue::Map(
                    entries
                        .into_iter()
                        .filter(|(k, _)| seen.insert(k.clone()))
                        .map(|(k, v)| (ArgValue::Str(k), v))
                        .collect(),
                )
            }),
        ]
    })
}

fn arb_arguments() -> impl Strategy<Value = Arguments> {
    prop::collection::btree_map("[a-zA-Z.]{1,10}", arb_value(), 0..4)
        .prop_map(|map| map.into_iter().collect())
}

fn arb_option() -> impl Strategy<Value = PluginOption> {
    (
        prop::sample::select(VOLCANO_PLUGINS),
        any::<bool>(),
        prop::collection::vec(
            (prop::sample::select(Gate::ALL.to_vec()), any::<bool>()),
            0..5,
        ),
        arb_arguments(),
    )
        .prop_map(|(name, hierarchy, gates, arguments)| {
            let mut option = PluginOption::new(name).with_arguments(arguments);
            // Keep clear of the drf-hierarchy/proportion conflict.
            option.enable_hierarchy = hierarchy && name != "drf";
            for (gate, on) in gates {
                option.set_enabled(gate, on);
            }
            option
        })
}

fn arb_conf() -> impl Strategy<Value = SchedulerConf> {
    (
        prop::collection::vec(prop::sample::select(VOLCANO_ACTIONS), 1..5),
        prop::collection::vec(prop::collection::vec(arb_option(), 0..4), 1..4),
        prop::collection::vec(
            (prop::sample::select(VOLCANO_ACTIONS), arb_arguments()),
            0..3,
        ),
        prop::collection::btree_map("[a-z.]{1,8}", "[ -~]{0,10}", 0..3),
    )
        .prop_map(|(actions, tiers, configurations, metrics)| SchedulerConf {
            actions: actions.into_iter().map(String::from).collect(),
            tiers: tiers.into_iter().map(|plugins| Tier { plugins }).collect(),
            configurations: configurations
                .into_iter()
                .map(|(name, arguments)| ActionConfiguration {
                    name: name.to_owned(),
                    arguments,
                })
                .collect(),
            metrics,
            skipped_plugins: Vec::new(),
        })
}

proptest! {
    #[test]
    fn to_yaml_round_trips_any_configuration(conf in arb_conf()) {
        let yaml = conf.to_yaml();
        let parsed = parse(&yaml, &KNOWN);
        prop_assert_eq!(parsed.map(|p| p.conf), Ok(conf), "{}", yaml);
    }

    #[test]
    fn parse_never_panics(text in "[ -~\n]{0,200}") {
        let _ = parse(&text, &KNOWN);
    }
}

/// A 1 MB name is echoed as its first characters and its size, in errors and warnings alike;
/// the skipped-plugin record (events, metric label) is shortened too.
#[test]
fn long_names_are_shortened_in_messages() {
    let huge = "p".repeat(1 << 20);
    let tail = "…(1048576 bytes)";
    let lenient = KnownNames {
        strict: false,
        ..KNOWN
    };
    // A YAML plain key is limited to 1024 characters; an explicit key (`? key`) is not.
    let text = format!("actions: allocate\nmetrics:\n  ? {huge}\n  : [x]\n");
    let e = parse(&text, &lenient).expect_err("the metrics value is refused");
    assert!(e.path.ends_with(tail) && e.path.len() < 200, "{}", e.path);

    let text = format!(
        "actions: allocate\ntiers:\n- plugins:\n  - name: {huge}\n    ? {huge}\n    : 1\n\
         configurations:\n- name: {huge}\n"
    );
    let parsed = parse(&text, &lenient).expect("unknown names are only warned about");
    assert_eq!(parsed.warnings.len(), 3, "{:?}", parsed.warnings.len());
    for warning in &parsed.warnings {
        assert!(warning.len() < 1000, "{} bytes", warning.len());
        assert!(warning.contains(tail), "{warning}");
    }
    assert_eq!(parsed.conf.skipped_plugins.len(), 1);
    assert!(parsed.conf.skipped_plugins[0].ends_with(tail));

    for text in [
        format!("actions: \"allocate, {huge}\"\ntiers: []\n"),
        format!("actions: \"allocate,,{huge}\"\ntiers: []\n"),
        format!("actions: allocate\ntiers:\n- plugins:\n  - {huge}\n"),
    ] {
        let e = parse(&text, &KNOWN).expect_err("refused");
        let message = e.to_string();
        assert!(
            message.len() < 1000 && message.contains(" bytes)"),
            "{message}"
        );
    }
}

/// The parser hands every known plugin option's arguments to the check and reports what it
/// finds under the argument's path.
#[test]
fn argument_checks_become_warnings_under_their_path() {
    fn check(plugin: &str, args: &Arguments) -> Vec<ArgWarning> {
        let mut w = 0;
        let mut warnings = Vec::new();
        if plugin == "binpack" {
            args.get_weight("binpack.weight", &mut w, &mut warnings);
        }
        warnings
    }
    let known = KnownNames {
        check_arguments: Some(check),
        ..KNOWN
    };
    let text = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    arguments: \
                {binpack.weight: 9223372036854775807}\n  - name: binpack\n    arguments: \
                {binpack.weight: 9223372036854775807}\n";
    let parsed = parse(text, &known).expect("valid");
    assert_eq!(
        parsed.warnings,
        [format!(
            "tiers[0].plugins[1].arguments.binpack.weight: weight 9223372036854775807 is out of \
             range: a weight beyond ±{MAX_WEIGHT} can overflow the score arithmetic; {MAX_WEIGHT} \
             is used"
        )]
    );
}
