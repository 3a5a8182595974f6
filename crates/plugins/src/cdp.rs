//! `cdp`: cooldown protection for preemption and reclaim victims (spec/plugins-more.md §2).
//!
//! Elastic jobs can be preempted, restarted and preempted again in quick succession. A pod that
//! carries the `volcano.sh/cooldown-time` label (else annotation), a Go duration such as `10m`,
//! is protected from eviction while it is Running and less than that duration has passed since
//! its `PodScheduled=True` condition last changed. The same filter answers `Preemptable` and
//! `Reclaimable`; it ignores the evictor and always votes Permit. Time is the session clock.

use engine::conf::Arguments;
use engine::conf::parse_go_duration;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::TaskId;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Registered plugin name.
pub const NAME: &str = "cdp";

/// Builds the plugin; it takes no arguments.
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(CooldownProtection)
}

struct CooldownProtection;

/// The pod's cooldown in nanoseconds, or `None` when protection is off for it. The label wins
/// over the annotation even when its value does not parse.
fn cooldown(pod: &Pod) -> Option<i64> {
    let meta = &pod.metadata;
    let raw = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(apis::keys::COOLDOWN_TIME))
        .or_else(|| {
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(apis::keys::COOLDOWN_TIME))
        })?;
    let parsed = parse_go_duration(raw);
    if parsed.is_none() {
        tracing::warn!(
            pod = meta.name.as_deref().unwrap_or_default(),
            value = %raw,
            "invalid {}; cooldown protection off",
            apis::keys::COOLDOWN_TIME
        );
    }
    parsed
}

/// Whether a Running pod was scheduled less than `cooldown_ns` before `now`. Only the first
/// `PodScheduled=True` condition counts; a pod without one is not protected.
fn in_cooldown(pod: &Pod, cooldown_ns: i64, now: Timestamp) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    if status.phase.as_deref() != Some("Running") {
        return false;
    }
    let Some(scheduled) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "True")
    else {
        return false;
    };
    // A missing time is Go's zero time (year 1): no cooldown reaches today from there.
    let Some(since) = scheduled.last_transition_time.as_ref() else {
        return false;
    };
    match since.0.checked_add(SignedDuration::from_nanos(cooldown_ns)) {
        Ok(end) => end > now,
        // Past the representable range: a positive cooldown ends in the far future.
        Err(_) => cooldown_ns > 0,
    }
}

impl CooldownProtection {
    fn filter(&self, ssn: &SessionState, candidates: &[TaskId]) -> (Vec<TaskId>, i32) {
        let victims = candidates
            .iter()
            .copied()
            .filter(|&t| {
                let pod = &ssn.task(t).spec.pod;
                cooldown(pod).is_none_or(|d| !in_cooldown(pod, d, ssn.now()))
            })
            .collect();
        (victims, PERMIT)
    }
}

impl Plugin for CooldownProtection {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::EVICTION_GUARD
    }

    fn eviction_guard(&self, ssn: &SessionState, candidates: &[TaskId]) -> Vec<TaskId> {
        self.filter(ssn, candidates).0
    }

    fn preemptable(
        &self,
        ssn: &SessionState,
        _preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        self.filter(ssn, candidates)
    }

    fn reclaimable(
        &self,
        ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        self.filter(ssn, candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{StateLookup, TestCluster, pod, pod_group, test_now};
    use engine::framework::Session;
    use serde_json::{Value, json};

    const MIN: i64 = 60_000_000_000;

    /// How a test pod carries its cooldown.
    enum Cooldown<'a> {
        None,
        Label(&'a str),
        Annotation(&'a str),
        Both { label: &'a str, annotation: &'a str },
    }

    /// A candidate pod `default/victim` in `phase`, scheduled `scheduled_ago` seconds before the
    /// session time (`None`: no PodScheduled condition), with a pending preemptor beside it.
    fn session(cooldown: Cooldown<'_>, phase: &str, scheduled_ago: Option<i64>) -> Session {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        c.pod_group(pod_group("default", "pg", 1));
        c.pod(pod(
            "default",
            "preemptor",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        let mut p = pod(
            "default",
            "victim",
            None,
            phase,
            Some("n1"),
            json!({"cpu": "1"}),
        );
        let key = apis::keys::COOLDOWN_TIME;
        match cooldown {
            Cooldown::None => {}
            Cooldown::Label(v) => p["metadata"]["labels"][key] = json!(v),
            Cooldown::Annotation(v) => p["metadata"]["annotations"][key] = json!(v),
            Cooldown::Both { label, annotation } => {
                p["metadata"]["labels"][key] = json!(label);
                p["metadata"]["annotations"][key] = json!(annotation);
            }
        }
        let mut conditions = vec![json!({"type": "Ready", "status": "True",
            "lastTransitionTime": "2023-12-31T23:59:59Z"})];
        if let Some(ago) = scheduled_ago {
            let at = Timestamp::from_second(test_now().as_second() - ago).expect("timestamp");
            conditions.push(
                json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": at.to_string()}),
            );
        }
        p["status"]["conditions"] = Value::Array(conditions);
        c.pod(p);
        c.session(&[&[NAME]])
    }

    /// Whether the candidate survives the filter; checks both registrations agree.
    fn kept(ssn: &Session) -> bool {
        let s = &ssn.state;
        let preemptor = s.task_by_key("default/preemptor");
        let victim = s.task_by_key("default/victim");
        let p = new(&Arguments::new());
        let (victims, vote) = p.preemptable(s, preemptor, &[victim]);
        assert_eq!(vote, PERMIT);
        assert_eq!(
            p.reclaimable(s, preemptor, &[victim]),
            (victims.clone(), PERMIT)
        );
        match victims.as_slice() {
            [] => false,
            [v] if *v == victim => true,
            other => panic!("unexpected victims {other:?}"),
        }
    }

    #[test]
    fn c1_running_pod_within_its_cooldown_is_protected() {
        assert!(!kept(&session(
            Cooldown::Label("10m"),
            "Running",
            Some(5 * 60)
        )));
    }

    #[test]
    fn c2_cooldown_over_pod_is_a_victim() {
        assert!(kept(&session(
            Cooldown::Label("10m"),
            "Running",
            Some(11 * 60)
        )));
    }

    #[test]
    fn protection_ends_exactly_at_the_end_of_the_cooldown() {
        assert!(kept(&session(
            Cooldown::Label("10m"),
            "Running",
            Some(10 * 60)
        )));
        assert!(!kept(&session(
            Cooldown::Label("10m"),
            "Running",
            Some(10 * 60 - 1)
        )));
    }

    #[test]
    fn c3_unparsable_cooldown_disables_protection() {
        assert!(kept(&session(Cooldown::Label("abc"), "Running", Some(60))));
    }

    #[test]
    fn c4_pods_that_are_not_running_are_victims() {
        assert!(kept(&session(Cooldown::Label("10m"), "Pending", Some(60))));
    }

    #[test]
    fn c5_running_pod_without_pod_scheduled_condition_is_a_victim() {
        assert!(kept(&session(Cooldown::Label("10m"), "Running", None)));
    }

    #[test]
    fn c6_annotation_is_read_when_there_is_no_label() {
        assert!(!kept(&session(
            Cooldown::Annotation("1h"),
            "Running",
            Some(30 * 60)
        )));
    }

    #[test]
    fn c7_an_invalid_label_wins_over_a_valid_annotation() {
        let both = Cooldown::Both {
            label: "bad",
            annotation: "1h",
        };
        assert!(kept(&session(both, "Running", Some(60))));
    }

    #[test]
    fn c8_vote_is_permit_whatever_the_input() {
        let ssn = session(Cooldown::None, "Running", Some(60));
        let s = &ssn.state;
        let preemptor = s.task_by_key("default/preemptor");
        let p = new(&Arguments::new());
        assert_eq!(p.preemptable(s, preemptor, &[]), (vec![], PERMIT));
        assert_eq!(p.reclaimable(s, preemptor, &[]), (vec![], PERMIT));
        assert!(kept(&ssn));
        assert_eq!(
            p.extension_points(),
            ExtensionPoints::PREEMPTABLE
                | ExtensionPoints::RECLAIMABLE
                | ExtensionPoints::EVICTION_GUARD
        );
    }

    #[test]
    fn only_the_first_true_pod_scheduled_condition_counts() {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        let mut p = pod("default", "victim", None, "Running", Some("n1"), json!({}));
        p["metadata"]["labels"][apis::keys::COOLDOWN_TIME] = json!("10m");
        p["status"]["conditions"] = json!([
            {"type": "PodScheduled", "status": "False", "lastTransitionTime": "2023-12-31T23:59:00Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2023-12-31T00:00:00Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2023-12-31T23:59:00Z"}
        ]);
        c.pod(p);
        let ssn = c.session(&[&[NAME]]);
        let victim = ssn.state.task_by_key("default/victim");
        let p = new(&Arguments::new());
        assert_eq!(p.preemptable(&ssn.state, victim, &[victim]).0, [victim]);
    }

    #[test]
    fn filter_keeps_candidate_order_and_drops_only_protected_pods() {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        for (name, ago) in [("old", 3600), ("young", 60), ("plain", 60)] {
            let mut p = pod("default", name, None, "Running", Some("n1"), json!({}));
            if name != "plain" {
                p["metadata"]["labels"][apis::keys::COOLDOWN_TIME] = json!("30m");
            }
            let at = Timestamp::from_second(test_now().as_second() - ago).expect("timestamp");
            p["status"]["conditions"] = json!([
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at.to_string()}
            ]);
            c.pod(p);
        }
        let ssn = c.session(&[&[NAME]]);
        let s = &ssn.state;
        let [old, young, plain] =
            ["default/old", "default/young", "default/plain"].map(|k| s.task_by_key(k));
        let p = new(&Arguments::new());
        assert_eq!(p.preemptable(s, old, &[plain, young, old]).0, [plain, old]);
        // Through the dispatcher as well.
        assert_eq!(ssn.reclaimable(old, &[young, old, plain]), [old, plain]);
    }

    #[test]
    fn in_cooldown_edge_cases() {
        let pod = |v: Value| -> Pod { serde_json::from_value(v).expect("pod") };
        let now = test_now();
        let running_since = |t: Option<&str>| {
            let mut cond = json!({"type": "PodScheduled", "status": "True"});
            if let Some(t) = t {
                cond["lastTransitionTime"] = json!(t);
            }
            pod(json!({"metadata": {"name": "p"},
                       "status": {"phase": "Running", "conditions": [cond]}}))
        };
        // No transition time: Go's zero time, long past.
        assert!(!in_cooldown(&running_since(None), 100 * MIN, now));
        // Negative cooldowns never protect.
        let recent = running_since(Some("2023-12-31T23:59:00Z"));
        assert!(in_cooldown(&recent, 2 * MIN, now));
        assert!(!in_cooldown(&recent, -2 * MIN, now));
        // A cooldown beyond the calendar saturates instead of failing.
        let future = running_since(Some("9999-01-01T00:00:00Z"));
        assert!(in_cooldown(&future, i64::MAX, now));
        // No status at all.
        assert!(!in_cooldown(
            &pod(json!({"metadata": {"name": "p"}})),
            MIN,
            now
        ));
    }
}
