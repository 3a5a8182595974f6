//! `sla`: jobs that have waited past their service-level deadline go first and are let through
//! the enqueue and pipeline votes (spec/plugins-more.md §9).
//!
//! A job's waiting time is its PodGroup annotation `volcano.sh/sla-waiting-time`, else the
//! annotation `sla-waiting-time`, else the plugin argument `sla-waiting-time`; each a positive Go
//! duration (`1h30m`), anything else counts as unset. Jobs with a waiting time come before jobs
//! without one, and among themselves by deadline (`creationTimestamp + waiting time`). Once the
//! session time reaches a job's deadline, `JobEnqueueable` and `JobPipelined` vote Permit for it,
//! which ends the vote after this plugin's tier; before that, or without a waiting time, they
//! abstain.

use std::cmp::Ordering;

use engine::conf::Arguments;
use engine::conf::parse_go_duration;
use engine::framework::{ABSTAIN, ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::{JobId, JobInfo};
use k8s_openapi::jiff::Timestamp;

/// Registered plugin name.
pub const NAME: &str = "sla";

/// Argument key of the global waiting time.
const WAITING_TIME_KEY: &str = "sla-waiting-time";

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix nanoseconds: the creation time of a
/// PodGroup without `creationTimestamp`.
const GO_ZERO_TIME_NANOS: i128 = -62_135_596_800 * 1_000_000_000;

/// Builds the plugin, reading `sla-waiting-time`.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(SlaPlugin {
        global: global_waiting_time(args),
        deadlines: Vec::new(),
    })
}

struct SlaPlugin {
    /// The argument's waiting time in nanoseconds, when valid.
    global: Option<i64>,
    /// Per job (by index), when its waiting time runs out in Unix nanoseconds; `None` for a job
    /// without a waiting time. Filled at open so the annotations are read once per session.
    deadlines: Vec<Option<i128>>,
}

/// The `sla-waiting-time` argument: a string holding a positive Go duration. Anything else is
/// logged and leaves the global waiting time unset.
fn global_waiting_time(args: &Arguments) -> Option<i64> {
    if !args.contains_key(WAITING_TIME_KEY) {
        return None;
    }
    let mut text = String::new();
    if let Err(e) = args.get_string(WAITING_TIME_KEY, &mut text) {
        tracing::warn!(error = %e, "sla: ignoring the global waiting time");
        return None;
    }
    match parse_go_duration(&text) {
        Some(d) if d > 0 => Some(d),
        _ => {
            tracing::warn!(value = %text, "sla: invalid global waiting time; none is used");
            None
        }
    }
}

/// The job's own waiting time from its PodGroup annotations: the prefixed key first; an absent
/// or invalid value there falls back to the plain key.
fn job_waiting_time(job: &JobInfo) -> Option<i64> {
    [
        apis::keys::SLA_WAITING_TIME,
        apis::keys::SLA_WAITING_TIME_SHORT,
    ]
    .into_iter()
    .find_map(|key| {
        let text = job.spec.annotations.get(key)?;
        match parse_go_duration(text) {
            Some(d) if d > 0 => Some(d),
            _ => {
                tracing::warn!(job = %job.spec.uid, key, value = %text, "sla: invalid waiting time");
                None
            }
        }
    })
}

fn nanos(t: Option<Timestamp>) -> i128 {
    t.map_or(GO_ZERO_TIME_NANOS, |t| t.as_nanosecond())
}

impl SlaPlugin {
    /// When the job's waiting time runs out, in Unix nanoseconds; `None` without one.
    fn deadline_of(&self, job: &JobInfo) -> Option<i128> {
        let wait = job_waiting_time(job).or(self.global)?;
        Some(nanos(job.spec.creation) + i128::from(wait))
    }

    fn deadline(&self, job: JobId) -> Option<i128> {
        self.deadlines.get(job.index()).copied().flatten()
    }

    /// Permit once the job has waited its waiting time, else abstain.
    fn permit_when_overdue(&self, ssn: &SessionState, job: JobId) -> i32 {
        match self.deadline(job) {
            Some(deadline) if ssn.now().as_nanosecond() >= deadline => PERMIT,
            _ => ABSTAIN,
        }
    }
}

impl Plugin for SlaPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.deadlines = ssn.jobs().iter().map(|j| self.deadline_of(j)).collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::JOB_ORDER
            | ExtensionPoints::JOB_ENQUEUEABLE
            | ExtensionPoints::JOB_PIPELINED
    }

    /// Jobs with a deadline first, the earliest deadline first.
    fn job_order(&self, _ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        match (self.deadline(l), self.deadline(r)) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => a.cmp(&b),
        }
    }

    fn job_enqueueable(&self, ssn: &SessionState, job: JobId) -> i32 {
        self.permit_when_overdue(ssn, job)
    }

    fn job_pipelined(&self, ssn: &SessionState, job: JobId) -> i32 {
        self.permit_when_overdue(ssn, job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{StateLookup, TestCluster, pod_group, test_now};
    use engine::conf::{ArgValue, PluginOption};
    use engine::framework::Session;
    use serde_json::json;

    const MIN: i64 = 60_000_000_000;
    const HOUR: i64 = 60 * MIN;

    fn args(value: ArgValue) -> Arguments {
        Arguments::from_pairs(&[(WAITING_TIME_KEY, value)])
    }

    /// A PodGroup `ns/<name>` created `ago_min` minutes before the session time (no
    /// creationTimestamp when `None`) with the given annotations.
    fn group(name: &str, ago_min: Option<i64>, annotations: &[(&str, &str)]) -> serde_json::Value {
        let mut pg = pod_group("ns", name, 1);
        match ago_min {
            Some(ago) => {
                let at = Timestamp::from_second(test_now().as_second() - ago * 60).expect("time");
                pg["metadata"]["creationTimestamp"] = json!(at.to_string());
            }
            None => {
                if let Some(meta) = pg["metadata"].as_object_mut() {
                    meta.remove("creationTimestamp");
                }
            }
        }
        for (k, v) in annotations {
            pg["metadata"]["annotations"][*k] = json!(v);
        }
        pg
    }

    fn session(c: &TestCluster, global: Option<ArgValue>) -> Session {
        let mut option = PluginOption::new(NAME);
        if let Some(v) = global {
            option = option.with_arguments(args(v));
        }
        c.session_with(vec![vec![option]])
    }

    /// The plugin with the given global waiting time, opened over the session.
    fn plugin(ssn: &mut Session, global: Option<&str>) -> Box<dyn Plugin> {
        let mut p = match global {
            Some(g) => new(&args(ArgValue::Str(g.into()))),
            None => new(&Arguments::new()),
        };
        p.on_session_open(&mut ssn.state);
        p
    }

    /// `TestSlaPlugin`: job1 without a waiting time, job2 with 1h; both without a creation
    /// time. Returns (JobOrderFn(job1, job2), JobEnqueueable(job1)) through the dispatcher.
    fn go_case(global: Option<ArgValue>) -> (bool, bool) {
        let mut c = TestCluster::new();
        c.pod_group(group("job1", None, &[]));
        c.pod_group(group("job2", None, &[("sla-waiting-time", "1h")]));
        let ssn = session(&c, global);
        let (j1, j2) = (
            ssn.state.job_by_key("ns/job1"),
            ssn.state.job_by_key("ns/job2"),
        );
        (ssn.job_order(j1, j2), ssn.job_enqueueable(j1))
    }

    #[test]
    fn go_sla_normal_placement() {
        // Global 3m: job1's deadline (zero time + 3m) comes before job2's (+1h); both are long
        // overdue, so job1 is permitted.
        assert_eq!(go_case(Some(ArgValue::Str("3m".into()))), (true, true));
    }

    #[test]
    fn go_sla_error_type_placement() {
        // A non-string argument is ignored: job1 has no waiting time and goes after job2; its
        // vote abstains, and an all-abstain vote admits.
        assert_eq!(go_case(Some(ArgValue::Int(1))), (false, true));
    }

    #[test]
    fn go_none_placement() {
        assert_eq!(go_case(None), (false, true));
    }

    #[test]
    fn s1_global_waiting_time_permits_only_overdue_jobs() {
        let mut c = TestCluster::new();
        c.pod_group(group("old", Some(120), &[]));
        c.pod_group(group("young", Some(30), &[]));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn, Some("1h"));
        let s = &ssn.state;
        let (old, young) = (s.job_by_key("ns/old"), s.job_by_key("ns/young"));
        assert_eq!(p.job_enqueueable(s, old), PERMIT);
        assert_eq!(p.job_pipelined(s, old), PERMIT);
        assert_eq!(p.job_enqueueable(s, young), ABSTAIN);
        assert_eq!(p.job_pipelined(s, young), ABSTAIN);
    }

    #[test]
    fn deadline_is_reached_exactly_at_creation_plus_waiting_time() {
        let mut c = TestCluster::new();
        c.pod_group(group("due", Some(60), &[]));
        c.pod_group(group("almost", Some(59), &[]));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn, Some("1h"));
        let s = &ssn.state;
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/due")), PERMIT);
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/almost")), ABSTAIN);
    }

    #[test]
    fn s2_job_annotation_overrides_the_global_waiting_time() {
        let mut c = TestCluster::new();
        c.pod_group(group(
            "a",
            Some(20),
            &[(apis::keys::SLA_WAITING_TIME, "10m")],
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn, Some("1h"));
        let s = &ssn.state;
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/a")), PERMIT);
    }

    #[test]
    fn s3_invalid_prefixed_annotation_falls_back_to_the_plain_one() {
        let mut c = TestCluster::new();
        c.pod_group(group(
            "a",
            Some(20),
            &[
                (apis::keys::SLA_WAITING_TIME, "-5m"),
                (apis::keys::SLA_WAITING_TIME_SHORT, "10m"),
            ],
        ));
        c.pod_group(group(
            "b",
            Some(20),
            &[
                (apis::keys::SLA_WAITING_TIME, "30m"),
                (apis::keys::SLA_WAITING_TIME_SHORT, "10m"),
            ],
        ));
        c.pod_group(group(
            "c",
            Some(20),
            &[(apis::keys::SLA_WAITING_TIME, "abc")],
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn, None);
        let s = &ssn.state;
        let wait = |key: &str| job_waiting_time(s.job(s.job_by_key(key)));
        assert_eq!(wait("ns/a"), Some(10 * MIN));
        // A valid prefixed value wins.
        assert_eq!(wait("ns/b"), Some(30 * MIN));
        assert_eq!(wait("ns/c"), None);
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/a")), PERMIT);
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/b")), ABSTAIN);
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/c")), ABSTAIN);
    }

    #[test]
    fn s4_jobs_with_waiting_times_are_ordered_by_deadline() {
        // A: created t0 = now − 60m, waits 1h (deadline now); B: created t0 + 10m, waits 20m
        // (deadline now − 30m) ⇒ B first.
        let mut c = TestCluster::new();
        c.pod_group(group(
            "a",
            Some(60),
            &[(apis::keys::SLA_WAITING_TIME, "1h")],
        ));
        c.pod_group(group(
            "b",
            Some(50),
            &[(apis::keys::SLA_WAITING_TIME, "20m")],
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn, None);
        let s = &ssn.state;
        let (a, b) = (s.job_by_key("ns/a"), s.job_by_key("ns/b"));
        assert_eq!(p.job_order(s, a, b), Ordering::Greater);
        assert_eq!(p.job_order(s, b, a), Ordering::Less);
        assert_eq!(p.job_order(s, a, a), Ordering::Equal);
        assert!(ssn.job_order(b, a));
    }

    #[test]
    fn s5_jobs_without_waiting_time_go_last() {
        let mut c = TestCluster::new();
        c.pod_group(group(
            "a",
            Some(10),
            &[(apis::keys::SLA_WAITING_TIME, "1h")],
        ));
        c.pod_group(group("c", Some(500), &[]));
        c.pod_group(group("c2", Some(600), &[]));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn, None);
        let s = &ssn.state;
        let [a, c1, c2] = ["ns/a", "ns/c", "ns/c2"].map(|k| s.job_by_key(k));
        assert_eq!(p.job_order(s, a, c1), Ordering::Less);
        assert_eq!(p.job_order(s, c1, a), Ordering::Greater);
        assert_eq!(p.job_order(s, c1, c2), Ordering::Equal);
        // Without a waiting time the vote abstains whatever the job's age.
        assert_eq!(p.job_enqueueable(s, c1), ABSTAIN);
        assert_eq!(p.job_pipelined(s, c2), ABSTAIN);
    }

    #[test]
    fn s6_invalid_global_waiting_times_are_ignored() {
        for bad in ["0s", "abc", "-1h", "", "10"] {
            assert_eq!(
                global_waiting_time(&args(ArgValue::Str(bad.into()))),
                None,
                "{bad}"
            );
        }
        assert_eq!(global_waiting_time(&args(ArgValue::Int(60))), None);
        assert_eq!(global_waiting_time(&args(ArgValue::Float(1.5))), None);
        assert_eq!(global_waiting_time(&Arguments::new()), None);
        assert_eq!(
            global_waiting_time(&args(ArgValue::Str("1h2m3s4ms5µs6ns".into()))),
            Some(HOUR + 2 * MIN + 3_004_005_006)
        );
    }

    #[test]
    fn permit_in_an_earlier_tier_overrides_a_later_reject() {
        // The overdue job has no room under overcommit (no node), but sla's tier decides first.
        let mut c = TestCluster::new();
        let mut old = group("old", Some(120), &[]);
        old["spec"]["minResources"] = json!({"cpu": "1"});
        c.pod_group(old);
        let mut young = group("young", Some(30), &[]);
        young["spec"]["minResources"] = json!({"cpu": "1"});
        c.pod_group(young);
        let sla = PluginOption::new(NAME).with_arguments(args(ArgValue::Str("1h".into())));
        let ssn = c.session_with(vec![vec![sla], vec![PluginOption::new("overcommit")]]);
        let s = &ssn.state;
        assert!(ssn.job_enqueueable(s.job_by_key("ns/old")));
        assert!(!ssn.job_enqueueable(s.job_by_key("ns/young")));
        assert!(ssn.job_pipelined(s.job_by_key("ns/old")));
    }

    #[test]
    fn missing_creation_time_is_go_zero_time() {
        let mut c = TestCluster::new();
        c.pod_group(group("a", None, &[]));
        let mut ssn = c.session(&[&[NAME]]);
        // Even the longest Go duration has run out since then.
        let p = plugin(&mut ssn, Some("2562047h"));
        let s = &ssn.state;
        let job = s.job(s.job_by_key("ns/a"));
        let zero: Timestamp = "0001-01-01T00:00:00Z".parse().expect("time");
        assert_eq!(nanos(job.spec.creation), zero.as_nanosecond());
        assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/a")), PERMIT);
    }

    #[test]
    fn registers_order_enqueue_and_pipeline() {
        let p = new(&Arguments::new());
        let points = p.extension_points();
        for ep in [
            ExtensionPoints::JOB_ORDER,
            ExtensionPoints::JOB_ENQUEUEABLE,
            ExtensionPoints::JOB_PIPELINED,
        ] {
            assert!(points.contains(ep));
        }
        assert!(!points.contains(ExtensionPoints::JOB_ENQUEUED));
    }
}
