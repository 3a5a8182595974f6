use std::collections::BTreeMap;

use super::*;
use engine::framework::JobFigures;

/// Boundaries of §10.1, as printed there (rounded to 4 significant digits).
const BUCKET_TABLE: &[(f64, f64, usize, &[f64])] = &[
    (
        1.0,
        5000.0,
        20,
        &[
            1.0, 1.566, 2.451, 3.837, 6.008, 9.406, 14.73, 23.06, 36.1, 56.51, 88.48, 138.5, 216.9,
            339.5, 531.6, 832.2, 1303.0, 2040.0, 3194.0, 5000.0,
        ],
    ),
    (
        1.0,
        2000.0,
        20,
        &[
            1.0, 1.492, 2.226, 3.321, 4.954, 7.391, 11.03, 16.45, 24.54, 36.61, 54.62, 81.49,
            121.6, 181.4, 270.6, 403.7, 602.3, 898.6, 1341.0, 2000.0,
        ],
    ),
    (
        0.1,
        100.0,
        15,
        &[
            0.1, 0.1638, 0.2683, 0.4394, 0.7197, 1.179, 1.931, 3.162, 5.179, 8.483, 13.89, 22.76,
            37.28, 61.05, 100.0,
        ],
    ),
    (
        0.1,
        500.0,
        20,
        &[
            0.1, 0.1566, 0.2451, 0.3837, 0.6008, 0.9406, 1.473, 2.306, 3.61, 5.651, 8.848, 13.85,
            21.69, 33.95, 53.16, 83.22, 130.3, 204.0, 319.4, 500.0,
        ],
    ),
    (
        50.0,
        60000.0,
        30,
        &[
            50.0, 63.85, 81.53, 104.1, 132.9, 169.8, 216.8, 276.8, 353.5, 451.4, 576.4, 736.1,
            940.0, 1200.0, 1533.0, 1957.0, 2499.0, 3192.0, 4076.0, 5204.0, 6646.0, 8486.0, 10840.0,
            13840.0, 17670.0, 22570.0, 28810.0, 36800.0, 46990.0, 60000.0,
        ],
    ),
    (
        100.0,
        120000.0,
        30,
        &[
            100.0, 127.7, 163.1, 208.2, 265.9, 339.5, 433.6, 553.7, 707.0, 902.8, 1153.0, 1472.0,
            1880.0, 2401.0, 3065.0, 3915.0, 4999.0, 6383.0, 8151.0, 10410.0, 13290.0, 16970.0,
            21670.0, 27680.0, 35340.0, 45130.0, 57630.0, 73590.0, 93970.0, 120000.0,
        ],
    ),
];

#[test]
fn bucket_boundaries_match_the_spec_table() {
    for &(min, max, n, expected) in BUCKET_TABLE {
        let got = exponential_buckets_range(min, max, n);
        assert_eq!(got.len(), expected.len(), "({min}, {max}, {n})");
        for (i, (g, e)) in got.iter().zip(expected).enumerate() {
            let rel = (g - e).abs() / e;
            assert!(rel < 0.005, "({min}, {max}, {n}) b_{i}: got {g}, table {e}");
        }
        // The ends are exact up to rounding of the growth factor.
        assert!((got[0] - min).abs() < 1e-12);
        assert!((got[n - 1] - max).abs() / max < 1e-9);
    }
}

#[test]
fn bucket_range_degenerate_counts() {
    assert!(exponential_buckets_range(1.0, 10.0, 0).is_empty());
    assert_eq!(exponential_buckets_range(1.0, 10.0, 1), vec![1.0]);
    assert_eq!(
        exponential_buckets_range(1.0, 100.0, 3),
        vec![1.0, 10.0, 100.0]
    );
}

/// One sample line of the exposition: metric name and labels.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the sample lines of a text exposition (enough for the values used here: label
/// values without escaped quotes).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("sample has a value");
            let value = value.parse().expect("numeric value");
            let (name, labels) = match series.split_once('{') {
                None => (series, BTreeMap::new()),
                Some((name, rest)) => {
                    let body = rest.strip_suffix('}').expect("closing brace");
                    let labels = body
                        .split("\",")
                        .filter(|kv| !kv.is_empty())
                        .map(|kv| {
                            let (k, v) = kv.split_once("=\"").expect("label pair");
                            (k.to_owned(), v.trim_end_matches('"').to_owned())
                        })
                        .collect();
                    (name, labels)
                }
            };
            Sample {
                name: name.to_owned(),
                labels,
                value,
            }
        })
        .collect()
}

fn find<'a>(all: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
    all.iter().find(|s| {
        s.name == name
            && labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    })
}

fn value(all: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    find(all, name, labels)
        .unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
        .value
}

fn gpu_queue_metrics() -> QueueMetrics {
    QueueMetrics {
        weight: 3,
        allocated: Resource::from_pairs(2000.0, 4e9, &[("nvidia.com/gpu", 1000.0), ("pods", 2.0)]),
        request: Resource::from_pairs(3000.0, 6e9, &[("nvidia.com/gpu", 2000.0)]),
        deserved: Some(Resource::from_pairs(2500.0, 5e9, &[])),
        capability: Some(Resource::from_pairs(8000.0, 16e9, &[])),
        real_capability: Some(Resource::from_pairs(6000.0, 12e9, &[])),
        inqueue: Some(Resource::from_pairs(1000.0, 1e9, &[])),
        share: Some(0.8),
        overused: Some(true),
    }
}

fn sample_decisions() -> Decisions {
    let mut d = Decisions {
        unschedulable_tasks: 4,
        unschedulable_jobs: Some(2),
        ..Decisions::default()
    };
    d.job_metrics.push(JobMetrics::labelled(
        "ns",
        "pg",
        "q1",
        None,
        JobFigures {
            unschedule_task_count: Some(3),
            retried: true,
            share: Some(0.25),
            ..JobFigures::default()
        },
    ));
    d.job_metrics.push(JobMetrics::labelled(
        "ns",
        "ready",
        "q1",
        None,
        JobFigures {
            unschedule_task_count: Some(0),
            ..JobFigures::default()
        },
    ));
    d.queue_metrics.insert("q1".to_owned(), gpu_queue_metrics());
    d.queue_metrics.insert(
        "q2".to_owned(),
        QueueMetrics {
            weight: 1,
            ..QueueMetrics::default()
        },
    );
    d
}

/// Every exported family: name, type, label names of its samples (without `le`).
const FAMILIES: &[(&str, &str, &[&str])] = &[
    (
        "volcano_e2e_scheduling_latency_milliseconds",
        "histogram",
        &[],
    ),
    (
        "volcano_open_session_duration_milliseconds",
        "histogram",
        &[],
    ),
    (
        "volcano_action_scheduling_latency_milliseconds",
        "histogram",
        &["action"],
    ),
    (
        "volcano_plugin_scheduling_latency_milliseconds",
        "histogram",
        &["plugin", "OnSession"],
    ),
    (
        "volcano_task_scheduling_latency_milliseconds",
        "histogram",
        &["stage"],
    ),
    (
        "volcano_scheduling_stage_duration_milliseconds",
        "histogram",
        &["stage"],
    ),
    (
        "volcano_e2e_job_scheduling_latency_milliseconds",
        "histogram",
        &[],
    ),
    (
        "volcano_e2e_job_scheduling_duration",
        "gauge",
        &["job_name", "queue", "job_namespace"],
    ),
    (
        "volcano_e2e_job_scheduling_start_time",
        "gauge",
        &["job_name", "queue", "job_namespace"],
    ),
    (
        "volcano_e2e_job_scheduling_last_time",
        "gauge",
        &["job_name", "queue", "job_namespace"],
    ),
    ("volcano_schedule_attempts_total", "counter", &["result"]),
    ("volcano_pod_preemption_victims", "gauge", &[]),
    ("volcano_total_preemption_attempts", "counter", &[]),
    (
        "volcano_eviction_transactions_total",
        "counter",
        &["action"],
    ),
    ("volcano_unschedule_task_count", "gauge", &["job_id"]),
    ("volcano_unschedule_job_count", "gauge", &[]),
    (
        "volcano_queue_allocated_milli_cpu",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_allocated_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_allocated_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_request_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_request_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_request_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_inqueue_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_inqueue_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_inqueue_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_deserved_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_deserved_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_deserved_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_capacity_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_capacity_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_capacity_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    (
        "volcano_queue_real_capacity_milli_cpu",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_real_capacity_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_real_capacity_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_share", "gauge", &["queue_name"]),
    ("volcano_queue_weight", "gauge", &["queue_name"]),
    ("volcano_queue_overused", "gauge", &["queue_name"]),
    ("volcano_job_share", "gauge", &["job_ns", "job_id"]),
    ("volcano_job_retry_counts", "counter", &["job_id"]),
    (
        "volcano_vgpu_device_memory_limit",
        "gauge",
        &["devID", "NodeName"],
    ),
    (
        "volcano_vgpu_device_shared_number",
        "gauge",
        &["devID", "NodeName"],
    ),
    (
        "volcano_vgpu_device_allocated_memory",
        "gauge",
        &["devID", "NodeName"],
    ),
    (
        "volcano_vgpu_device_allocated_cores",
        "gauge",
        &["devID", "NodeName"],
    ),
    (
        "volcano_vgpu_device_memory_allocation_for_a_certain_pod",
        "gauge",
        &["devID", "NodeName", "podName"],
    ),
    (
        "volcano_vgpu_device_core_allocation_for_a_certain_pod",
        "gauge",
        &["devID", "NodeName", "podName"],
    ),
    ("volcano_pods_bound_total", "counter", &[]),
    ("volcano_sessions_total", "counter", &["outcome"]),
    ("volcano_bind_errors_total", "counter", &[]),
    ("volcano_pods_evicted_total", "counter", &["action"]),
    ("volcano_config_reloads_total", "counter", &["result"]),
    ("volcano_config_skipped_plugins", "gauge", &["plugin"]),
    ("volcano_invariant_violations_total", "counter", &["kind"]),
    ("volcano_api_writes_total", "counter", &["write"]),
    ("volcano_api_writes_fenced_total", "counter", &["write"]),
    (
        "volcano_node_metrics_collections_total",
        "counter",
        &["result"],
    ),
    ("volcano_node_metrics_nodes", "gauge", &[]),
    ("volcano_leader", "gauge", &[]),
    ("process_cpu_seconds_total", "counter", &[]),
    ("process_open_fds", "gauge", &[]),
    ("process_max_fds", "gauge", &[]),
    ("process_virtual_memory_bytes", "gauge", &[]),
    ("process_resident_memory_bytes", "gauge", &[]),
    ("process_start_time_seconds", "gauge", &[]),
    ("process_threads", "gauge", &[]),
    (
        "promhttp_metric_handler_requests_total",
        "counter",
        &["code"],
    ),
    ("promhttp_metric_handler_requests_in_flight", "gauge", &[]),
];

/// Exercises every recording method once.
fn record_everything(m: &Metrics) {
    let ms = Duration::from_millis;
    m.observe_session(ms(3), &[("allocate".to_owned(), ms(7))], ms(12));
    m.observe_plugin("gang", ON_SESSION_OPEN, Duration::from_micros(300));
    m.record_decisions(&sample_decisions());
    m.observe_task_stage(TaskStage::Watched, ms(60));
    m.observe_scheduling_stage(SchedulingStage::Predicate, ms(1));
    m.pod_bound(ms(4), Some(ms(900)));
    m.bind_failed();
    m.set_skipped_plugins(&["usage".to_string()]);
    m.invariant_violation("double_bind");
    m.write_sent("bind");
    m.write_fenced("event");
    m.node_metrics_collected(Ok(3));
    m.node_metrics_collected(Err(()));
    m.session_failed();
    m.evictions("preempt", 2);
    m.preemption_attempt();
    m.set_preemption_victims(2);
    let job = JobLabels {
        namespace: "ns",
        name: "pg",
        queue: "q1",
    };
    let created = Timestamp::from_second(1_700_000_000).expect("valid");
    let now = Timestamp::from_second(1_700_000_090).expect("valid");
    m.set_job_start_time(job, created);
    m.job_task_allocated(job, ms(90_000), now);
    m.config_reload(true);
    m.set_leader(true);
    m.record_vgpu_cards(Some(&[vgpu_card("GPU-0", &["p"])]));
}

fn vgpu_card(uuid: &str, pods: &[&str]) -> engine::framework::VgpuCard {
    engine::framework::VgpuCard {
        node: "n1".into(),
        uuid: uuid.into(),
        memory: 16384,
        shared: pods.len() as u64,
        used_memory: 1000 * pods.len() as u64,
        used_cores: 10 * pods.len() as u64,
        pods: pods.iter().map(|p| (p.to_string(), 1000, 10)).collect(),
    }
}

#[test]
fn vgpu_card_series_follow_the_cards_and_pods_seen_last() {
    let m = Metrics::new();
    m.record_vgpu_cards(Some(&[
        vgpu_card("GPU-0", &["a", "b"]),
        vgpu_card("GPU-1", &[]),
    ]));
    let all = samples(&m.encode_text());
    let card = [("devID", "GPU-0"), ("NodeName", "n1")];
    assert_eq!(
        value(&all, "volcano_vgpu_device_memory_limit", &card),
        16384.0
    );
    assert_eq!(value(&all, "volcano_vgpu_device_shared_number", &card), 2.0);
    assert_eq!(
        value(&all, "volcano_vgpu_device_allocated_memory", &card),
        2000.0
    );
    assert_eq!(
        value(&all, "volcano_vgpu_device_allocated_cores", &card),
        20.0
    );
    let pod_b = [("devID", "GPU-0"), ("NodeName", "n1"), ("podName", "b")];
    let pod_memory = "volcano_vgpu_device_memory_allocation_for_a_certain_pod";
    assert_eq!(value(&all, pod_memory, &pod_b), 1000.0);
    // b left and GPU-1 is gone: their series go.
    m.record_vgpu_cards(Some(&[vgpu_card("GPU-0", &["a"])]));
    let all = samples(&m.encode_text());
    assert!(find(&all, pod_memory, &pod_b).is_none());
    let gpu1 = [("devID", "GPU-1"), ("NodeName", "n1")];
    assert!(find(&all, "volcano_vgpu_device_memory_limit", &gpu1).is_none());
    assert_eq!(value(&all, "volcano_vgpu_device_shared_number", &card), 1.0);
    // The device turned off: nothing is left.
    m.record_vgpu_cards(None);
    let all = samples(&m.encode_text());
    assert!(find(&all, "volcano_vgpu_device_memory_limit", &card).is_none());
}

#[test]
fn every_family_is_exported_with_its_type_and_labels() {
    let m = Metrics::new();
    record_everything(&m);
    let text = m.encode_text();
    let all = samples(&text);
    for &(name, kind, labels) in FAMILIES {
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "missing `# TYPE {name} {kind}`"
        );
        let series: Vec<&Sample> = all
            .iter()
            .filter(|s| {
                s.name == name
                    || (kind == "histogram"
                        && [
                            format!("{name}_bucket"),
                            format!("{name}_sum"),
                            format!("{name}_count"),
                        ]
                        .contains(&s.name))
            })
            .collect();
        assert!(!series.is_empty(), "no sample of {name}");
        for s in series {
            let mut got: Vec<&str> = s
                .labels
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "le")
                .collect();
            got.sort_unstable();
            let mut want = labels.to_vec();
            want.sort_unstable();
            assert_eq!(got, want, "labels of {}", s.name);
        }
    }
    // No family we do not know of.
    let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
    assert_eq!(types, FAMILIES.len());
}

#[test]
fn docs_list_every_family() {
    let docs = include_str!("../../../../docs/metrics.md");
    for &(name, _, _) in FAMILIES {
        assert!(
            docs.contains(&format!("`{name}")),
            "docs/metrics.md lacks {name}"
        );
    }
}

#[test]
fn histograms_use_volcanos_buckets() {
    let m = Metrics::new();
    m.observe_session(Duration::from_millis(2), &[], Duration::from_millis(10));
    let all = samples(&m.encode_text());
    let buckets: Vec<(f64, f64)> = all
        .iter()
        .filter(|s| s.name == "volcano_e2e_scheduling_latency_milliseconds_bucket")
        .map(|s| (s.labels["le"].parse().expect("numeric le"), s.value))
        .collect();
    // 20 finite boundaries, then +Inf.
    assert_eq!(buckets.len(), 21);
    let expected = exponential_buckets_range(1.0, 5000.0, 20);
    for (i, (le, _)) in buckets.iter().take(20).enumerate() {
        assert_eq!(*le, expected[i]);
    }
    assert_eq!(buckets[20].0, f64::INFINITY);
    // Cumulative counts: 10 ms falls into (9.406, 14.73].
    for &(le, n) in &buckets {
        assert_eq!(n, if le < 10.0 { 0.0 } else { 1.0 }, "le={le}");
    }
    let open_count = value(
        &all,
        "volcano_open_session_duration_milliseconds_count",
        &[],
    );
    assert_eq!(open_count, 1.0);
    let open_sum = value(&all, "volcano_open_session_duration_milliseconds_sum", &[]);
    assert!((open_sum - 2.0).abs() < 1e-9);
    let e2e_sum = value(&all, "volcano_e2e_scheduling_latency_milliseconds_sum", &[]);
    assert!((e2e_sum - 10.0).abs() < 1e-9);
}

#[test]
fn queue_gauges_carry_the_decisions_values() {
    let m = Metrics::new();
    m.record_decisions(&sample_decisions());
    let all = samples(&m.encode_text());
    let q1 = [("queue_name", "q1")];
    assert_eq!(
        value(&all, "volcano_queue_allocated_milli_cpu", &q1),
        2000.0
    );
    assert_eq!(
        value(&all, "volcano_queue_allocated_memory_bytes", &q1),
        4e9
    );
    let gpu = [("queue_name", "q1"), ("resource", "nvidia.com/gpu")];
    let pods = [("queue_name", "q1"), ("resource", "pods")];
    assert_eq!(
        value(&all, "volcano_queue_allocated_scalar_resources", &gpu),
        1000.0
    );
    assert_eq!(
        value(&all, "volcano_queue_allocated_scalar_resources", &pods),
        2.0
    );
    assert_eq!(
        value(&all, "volcano_queue_request_scalar_resources", &gpu),
        2000.0
    );
    // Seen in this update for the queue, so reported as 0 where absent.
    assert_eq!(
        value(&all, "volcano_queue_request_scalar_resources", &pods),
        0.0
    );
    assert_eq!(
        value(&all, "volcano_queue_deserved_scalar_resources", &gpu),
        0.0
    );
    assert_eq!(value(&all, "volcano_queue_deserved_milli_cpu", &q1), 2500.0);
    assert_eq!(
        value(&all, "volcano_queue_capacity_memory_bytes", &q1),
        16e9
    );
    assert_eq!(
        value(&all, "volcano_queue_real_capacity_milli_cpu", &q1),
        6000.0
    );
    assert_eq!(value(&all, "volcano_queue_inqueue_milli_cpu", &q1), 1000.0);
    assert_eq!(value(&all, "volcano_queue_share", &q1), 0.8);
    assert_eq!(value(&all, "volcano_queue_weight", &q1), 3.0);
    assert_eq!(value(&all, "volcano_queue_overused", &q1), 1.0);
    assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 2.0);
    let unsched = [("result", "unschedulable")];
    assert_eq!(
        value(&all, "volcano_schedule_attempts_total", &unsched),
        4.0
    );

    // Only what a plugin set is reported: q2 has no deserved, share or overused series.
    let q2 = [("queue_name", "q2")];
    assert_eq!(value(&all, "volcano_queue_weight", &q2), 1.0);
    assert_eq!(value(&all, "volcano_queue_allocated_milli_cpu", &q2), 0.0);
    for absent in [
        "volcano_queue_deserved_milli_cpu",
        "volcano_queue_capacity_milli_cpu",
        "volcano_queue_real_capacity_milli_cpu",
        "volcano_queue_inqueue_milli_cpu",
        "volcano_queue_share",
        "volcano_queue_overused",
    ] {
        assert!(find(&all, absent, &q2).is_none(), "{absent} for q2");
    }
    assert!(find(&all, "volcano_queue_allocated_scalar_resources", &q2).is_none());
}

#[test]
fn scalar_gauge_reports_zero_once_seen() {
    let m = Metrics::new();
    m.record_decisions(&sample_decisions());
    // Next session: the gpu job finished, the queue reports cpu only.
    let mut d = Decisions::default();
    d.queue_metrics.insert(
        "q1".to_owned(),
        QueueMetrics {
            weight: 3,
            allocated: Resource::from_pairs(500.0, 0.0, &[]),
            ..QueueMetrics::default()
        },
    );
    m.record_decisions(&d);
    let all = samples(&m.encode_text());
    let gpu = [("queue_name", "q1"), ("resource", "nvidia.com/gpu")];
    assert_eq!(
        value(&all, "volcano_queue_allocated_scalar_resources", &gpu),
        0.0
    );
    assert_eq!(
        value(&all, "volcano_queue_request_scalar_resources", &gpu),
        0.0
    );
    assert_eq!(
        value(
            &all,
            "volcano_queue_allocated_milli_cpu",
            &[("queue_name", "q1")]
        ),
        500.0
    );
    // Vectors not updated this time keep their last value (Volcano updates them the same way).
    assert_eq!(
        value(&all, "volcano_queue_share", &[("queue_name", "q1")]),
        0.8
    );
}

#[test]
fn removing_a_queue_drops_all_its_series() {
    let m = Metrics::new();
    m.record_decisions(&sample_decisions());
    m.remove_queue("q1");
    let text = m.encode_text();
    assert!(!text.contains("queue_name=\"q1\""), "{text}");
    // The other queue is untouched.
    assert!(text.contains("volcano_queue_weight{queue_name=\"q2\"} 1"));
    // A queue that comes back starts afresh: no zeroed scalars from its previous life.
    let mut d = Decisions::default();
    d.queue_metrics
        .insert("q1".to_owned(), QueueMetrics::default());
    m.record_decisions(&d);
    let all = samples(&m.encode_text());
    assert!(
        find(
            &all,
            "volcano_queue_allocated_scalar_resources",
            &[("queue_name", "q1")]
        )
        .is_none()
    );
    // Removing an unknown queue is harmless.
    m.remove_queue("never-seen");
}

#[test]
fn bind_eviction_and_attempt_counters() {
    let m = Metrics::new();
    let all = samples(&m.encode_text());
    for result in ["scheduled", "unschedulable", "error"] {
        assert_eq!(
            value(
                &all,
                "volcano_schedule_attempts_total",
                &[("result", result)]
            ),
            0.0
        );
    }
    assert_eq!(value(&all, "volcano_leader", &[]), 0.0);

    m.pod_bound(Duration::from_millis(5), None);
    m.pod_bound(Duration::from_millis(5), Some(Duration::from_secs(2)));
    m.bind_failed();
    m.evictions("reclaim", 3);
    m.evictions("reclaim", 0);
    m.evictions("preempt", 1);
    m.set_leader(true);
    let all = samples(&m.encode_text());
    assert_eq!(value(&all, "volcano_pods_bound_total", &[]), 2.0);
    assert_eq!(value(&all, "volcano_bind_errors_total", &[]), 1.0);
    assert_eq!(
        value(
            &all,
            "volcano_schedule_attempts_total",
            &[("result", "scheduled")]
        ),
        2.0
    );
    assert_eq!(
        value(
            &all,
            "volcano_schedule_attempts_total",
            &[("result", "error")]
        ),
        1.0
    );
    let bind = [("stage", "Bind")];
    assert_eq!(
        value(
            &all,
            "volcano_scheduling_stage_duration_milliseconds_count",
            &bind
        ),
        2.0
    );
    let bound = [("stage", "Bound")];
    assert_eq!(
        value(
            &all,
            "volcano_task_scheduling_latency_milliseconds_count",
            &bound
        ),
        1.0
    );
    let reclaim = [("action", "reclaim")];
    assert_eq!(
        value(&all, "volcano_eviction_transactions_total", &reclaim),
        1.0
    );
    assert_eq!(value(&all, "volcano_pods_evicted_total", &reclaim), 3.0);
    let preempt = [("action", "preempt")];
    assert_eq!(
        value(&all, "volcano_eviction_transactions_total", &preempt),
        1.0
    );
    assert_eq!(value(&all, "volcano_leader", &[]), 1.0);
    m.set_leader(false);
    assert_eq!(
        value(&samples(&m.encode_text()), "volcano_leader", &[]),
        0.0
    );
}

#[test]
fn job_series_and_their_removal() {
    let m = Metrics::new();
    record_everything(&m);
    let all = samples(&m.encode_text());
    let job = [("job_name", "pg"), ("queue", "q1"), ("job_namespace", "ns")];
    assert_eq!(
        value(&all, "volcano_e2e_job_scheduling_start_time", &job),
        1.7e9
    );
    assert_eq!(
        value(&all, "volcano_e2e_job_scheduling_last_time", &job),
        1_700_000_090.0
    );
    assert_eq!(
        value(&all, "volcano_e2e_job_scheduling_duration", &job),
        90_000.0
    );
    assert_eq!(
        value(&all, "volcano_unschedule_task_count", &[("job_id", "pg")]),
        3.0
    );
    assert_eq!(
        value(&all, "volcano_job_retry_counts", &[("job_id", "pg")]),
        1.0
    );
    assert_eq!(
        value(
            &all,
            "volcano_job_share",
            &[("job_ns", "ns"), ("job_id", "pg")]
        ),
        0.25
    );

    m.remove_job(JobLabels {
        namespace: "ns",
        name: "pg",
        queue: "q1",
    });
    let text = m.encode_text();
    assert!(!text.contains("\"pg\""), "{text}");
    // The histogram keeps its observation: it has no per-job series.
    let all = samples(&text);
    assert_eq!(
        value(
            &all,
            "volcano_e2e_job_scheduling_latency_milliseconds_count",
            &[]
        ),
        1.0
    );
}

#[test]
fn scrape_counts_itself_like_promhttp() {
    let m = Metrics::new();
    let first = samples(&m.scrape().expect("encodes"));
    assert_eq!(
        value(&first, "promhttp_metric_handler_requests_in_flight", &[]),
        1.0
    );
    assert_eq!(
        value(
            &first,
            "promhttp_metric_handler_requests_total",
            &[("code", "200")]
        ),
        0.0
    );
    let second = samples(&m.scrape().expect("encodes"));
    assert_eq!(
        value(
            &second,
            "promhttp_metric_handler_requests_total",
            &[("code", "200")]
        ),
        1.0
    );
    assert_eq!(m.content_type(), "text/plain; version=0.0.4");
}

#[test]
fn job_figures_follow_the_sessions() {
    let m = Metrics::new();
    m.record_decisions(&sample_decisions());
    m.record_decisions(&sample_decisions());
    let all = samples(&m.encode_text());
    // One retry per session the job stayed unready; none for the ready job.
    assert_eq!(
        value(&all, "volcano_job_retry_counts", &[("job_id", "pg")]),
        2.0
    );
    assert!(find(&all, "volcano_job_retry_counts", &[("job_id", "ready")]).is_none());
    assert_eq!(
        value(
            &all,
            "volcano_unschedule_task_count",
            &[("job_id", "ready")]
        ),
        0.0
    );
    assert!(find(&all, "volcano_job_share", &[("job_id", "ready")]).is_none());
    assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 2.0);
    assert_eq!(
        value(
            &all,
            "volcano_schedule_attempts_total",
            &[("result", "unschedulable")]
        ),
        8.0
    );

    // A session without gang leaves the job count as it was.
    let mut d = Decisions {
        unschedulable_jobs: None,
        ..Decisions::default()
    };
    m.record_decisions(&d);
    let all = samples(&m.encode_text());
    assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 2.0);
    d.unschedulable_jobs = Some(0);
    m.record_decisions(&d);
    let all = samples(&m.encode_text());
    assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 0.0);
}

#[test]
fn config_reload_results() {
    let m = Metrics::new();
    m.config_reload(true);
    m.config_reload(false);
    m.config_reload(false);
    let all = samples(&m.encode_text());
    assert_eq!(
        value(
            &all,
            "volcano_config_reloads_total",
            &[("result", "success")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &all,
            "volcano_config_reloads_total",
            &[("result", "failure")]
        ),
        2.0
    );
}

#[test]
fn sessions_count_as_decided_or_empty() {
    let m = Metrics::new();
    let all = samples(&m.encode_text());
    assert_eq!(
        value(&all, "volcano_sessions_total", &[("outcome", "empty")]),
        0.0
    );
    m.record_decisions(&Decisions::default());
    m.record_decisions(&Decisions::default());
    let mut decided = Decisions::default();
    decided.binds.push(engine::framework::decisions::Bind {
        pod: "ns/p".into(),
        pod_uid: "u".into(),
        node: "n".into(),
        volumes: Vec::new(),
        volume_bind_timeout: std::time::Duration::ZERO,
        annotations: Default::default(),
        node_lock: None,
    });
    m.record_decisions(&decided);
    let all = samples(&m.encode_text());
    assert_eq!(
        value(&all, "volcano_sessions_total", &[("outcome", "empty")]),
        2.0
    );
    assert_eq!(
        value(&all, "volcano_sessions_total", &[("outcome", "decided")]),
        1.0
    );
}
