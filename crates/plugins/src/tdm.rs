//! `tdm`: time-division multiplexing of revocable nodes (spec/plugins-more.md §10).
//!
//! A node labelled `volcano.sh/revocable-zone: <zone>` lends its capacity to preemptable work
//! only while its zone's daily window (`tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`) is open:
//! only pods marked for revocable zones (`volcano.sh/revocable-zone: "*"`, or the annotation
//! `volcano.sh/preemptable: "true"`) may land there, and they prefer it (score 100). Once the
//! window closes nothing new lands there, and the victim function hands the preemptable pods
//! running there to `shuffle`, at most once per `tdm.evict.period` (default 1m) and within
//! each job's disruption budget (`volcano.sh/jdb-max-unavailable` or
//! `volcano.sh/jdb-min-available` on the PodGroup). Besides, non-preemptable jobs come first in
//! job order, a preemptable job never starves, and only a non-preemptable pod outside the zones
//! may preempt, and only preemptable pods on ordinary nodes.
//!
//! Windows are read in [`SessionOptions::time_zone`](engine::framework::SessionOptions) at the
//! session's `now`, re-anchored on the current day as Volcano does (an overnight window such as
//! `22:00-06:00` is open from 22:00 to midnight only). The last eviction time lives in the
//! scheduler's plugin memory (Volcano: a process-wide variable).
//!
//! Differences from Volcano, on purpose (docs/architecture.md): a job's budget is applied once
//! per victim search, not once per closed zone (Volcano lets a job spread over two closed zones
//! lose twice its budget); a job already below `jdb-min-available` loses nothing (Volcano still
//! takes one pod); a non-string argument is refused with a warning (Volcano's scheduler panics).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use engine::conf::{ArgValue, ArgWarning, Arguments, parse_go_duration};
use engine::framework::{ExtensionPoints, PERMIT, Plugin, REJECT, SessionState};
use engine::model::{FitError, FitStatus, JobId, NodeId, StatusCode, TaskId, TaskStatus};
use k8s_openapi::jiff::{SignedDuration, Timestamp, civil, tz::TimeZone};

/// Registered plugin name.
pub const NAME: &str = "tdm";
/// Argument key prefix of a zone's window.
pub const ZONE_PREFIX: &str = "tdm.revocable-zone.";
/// Argument key of the eviction period.
pub const EVICT_PERIOD: &str = "tdm.evict.period";
/// Plugin-memory key of the last victim search.
const LAST_EVICT: &str = "tdm/last-evict";
/// PodGroup annotations of the job's disruption budget.
const MIN_AVAILABLE: &str = "volcano.sh/jdb-min-available";
const MAX_UNAVAILABLE: &str = "volcano.sh/jdb-max-unavailable";
/// Victims per job when the PodGroup states no budget.
const DEFAULT_EVICT_NUM: usize = 1;
/// Reason of the predicate for a pod not marked for revocable zones.
pub const NOT_ALLOWED: &str = "not allow to dispatch to revocable node";

#[derive(Clone, Debug, PartialEq)]
pub struct TdmArgs {
    /// Zone name → window text, as configured (parsed at each use: a bad one is a closed zone).
    pub zones: BTreeMap<String, String>,
    pub evict_period: SignedDuration,
}

pub fn parse_args(args: &Arguments) -> (TdmArgs, Vec<ArgWarning>) {
    let mut out = TdmArgs {
        zones: BTreeMap::new(),
        evict_period: SignedDuration::from_mins(1),
    };
    let mut warnings = Vec::new();
    for (key, value) in args.iter() {
        if let Some(at) = key.find(ZONE_PREFIX) {
            // Volcano removes the first occurrence of the prefix from wherever it appears.
            let zone = format!("{}{}", &key[..at], &key[at + ZONE_PREFIX.len()..]);
            match value {
                ArgValue::Str(window) => {
                    if let Err(e) = parse_window(window) {
                        warnings.push(ArgWarning::new(
                            key.clone(),
                            format!("{e}; the zone counts as closed"),
                        ));
                    }
                    out.zones.insert(zone, window.clone());
                }
                other => warnings.push(ArgWarning::new(
                    key.clone(),
                    format!(
                        "{other:?} is not a string such as \"10:00-21:00\"; the zone is ignored"
                    ),
                )),
            }
        } else if key == EVICT_PERIOD {
            match value.as_str().map(|s| (s, parse_go_duration(s))) {
                Some((_, Some(nanos))) => out.evict_period = SignedDuration::from_nanos(nanos),
                _ => warnings.push(ArgWarning::new(
                    key.clone(),
                    format!("{value:?} is not a duration such as \"1m\"; 1m is used"),
                )),
            }
        }
    }
    (out, warnings)
}

/// Reported once per configuration load.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    parse_args(args).1
}

pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Tdm {
        args: parse_args(args).0,
        zones_open: BTreeMap::new(),
    })
}

/// A wall-clock time of day: (hour, minute).
pub type ClockTime = (i8, i8);

/// `H:MM-H:MM` (hour one or two digits, 0–23; minutes two digits) after trimming the whole
/// value: the start and end as (hour, minute).
pub fn parse_window(value: &str) -> Result<(ClockTime, ClockTime), String> {
    let parts: Vec<&str> = value.trim().split('-').collect();
    let [start, end] = parts[..] else {
        return Err(format!("revocable zone {value} format error"));
    };
    let time = |t: &str| -> Option<ClockTime> {
        let (h, m) = t.split_once(':')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(h) || h.len() > 2 || m.len() != 2 || !digits(m) {
            return None;
        }
        let (h, m) = (h.parse::<i8>().ok()?, m.parse::<i8>().ok()?);
        (h < 24 && m < 60).then_some((h, m))
    };
    match (time(start), time(end)) {
        (Some(s), Some(e)) => Ok((s, e)),
        _ => Err(format!("revocable zone {value} is not two times H:MM")),
    }
}

/// Whether `window` is open at `now`: from today's start to today's end (tomorrow's when the
/// end is not after the start), both ends included, compared in whole seconds.
pub fn window_open(window: &str, now: Timestamp, tz: &TimeZone) -> Result<(), String> {
    let ((h1, m1), (h2, m2)) = parse_window(window)?;
    let today = now.to_zoned(tz.clone()).date();
    let at = |day: civil::Date, h: i8, m: i8| {
        day.at(h, m, 0, 0)
            .to_zoned(tz.clone())
            .map(|z| z.timestamp().as_second())
            .map_err(|e| format!("revocable zone {window}: {e}"))
    };
    let start = at(today, h1, m1)?;
    let end_day = if (h1, m1) < (h2, m2) {
        today
    } else {
        today
            .tomorrow()
            .map_err(|e| format!("revocable zone {window}: {e}"))?
    };
    let end = at(end_day, h2, m2)?;
    let now = now.as_second();
    if start <= now && now <= end {
        Ok(())
    } else {
        Err(format!("current time beyond revocable zone {window}"))
    }
}

struct Tdm {
    args: TdmArgs,
    /// Each configured zone: open, or why not — settled once at session open, since the
    /// session has one clock (the predicate and score ask per task and node).
    zones_open: BTreeMap<String, Result<(), String>>,
}

impl Tdm {
    fn zone_open(&self, zone: &str) -> Result<(), String> {
        match self.zones_open.get(zone) {
            Some(open) => open.clone(),
            None => Err(format!("revocable zone {zone} not support")),
        }
    }

    /// How many more of the job's pods may go (`getMaxPodEvictNum`).
    fn max_evict(&self, ssn: &SessionState, job: JobId) -> usize {
        let j = ssn.job(job);
        let total = j.tasks.len() as i64;
        let running = i64::from(j.count(TaskStatus::Running));
        let finished = i64::from(j.count(TaskStatus::Succeeded) + j.count(TaskStatus::Failed));
        let budget = |key: &str| {
            j.spec
                .annotations
                .get(key)
                .map(|v| int_or_percent(v, total))
        };
        if let Some(min_available) = budget(MIN_AVAILABLE) {
            return usize::try_from(running - min_available).unwrap_or(0);
        }
        if let Some(max_unavailable) = budget(MAX_UNAVAILABLE) {
            let unavailable = total - finished - running;
            return usize::try_from(max_unavailable - unavailable).unwrap_or(0);
        }
        DEFAULT_EVICT_NUM
    }

    /// The first `max_evict` of each job's candidates, jobs in order of first appearance.
    fn within_budgets(&self, ssn: &SessionState, candidates: &[TaskId]) -> Vec<TaskId> {
        let mut by_job: Vec<(JobId, Vec<TaskId>)> = Vec::new();
        for &t in candidates {
            let Some(job) = ssn.task(t).job else { continue };
            match by_job.iter_mut().find(|(j, _)| *j == job) {
                Some((_, list)) => list.push(t),
                None => by_job.push((job, vec![t])),
            }
        }
        let mut out = Vec::new();
        for (job, list) in by_job {
            let n = self.max_evict(ssn, job).min(list.len());
            out.extend_from_slice(&list[..n]);
        }
        out
    }
}

/// k8s `intstr` with percentages rounded up against `total`; anything else counts as 0.
fn int_or_percent(value: &str, total: i64) -> i64 {
    if let Ok(n) = value.parse::<i64>() {
        return n;
    }
    match value.strip_suffix('%').map(str::parse::<i64>) {
        Some(Ok(p)) => (p * total + 99).div_euclid(100),
        _ => {
            tracing::warn!(
                value,
                "disruption budget is not a number or percentage; 0 is used"
            );
            0
        }
    }
}

fn fit_error(reason: String) -> FitError {
    FitError::new(FitStatus::new(
        StatusCode::UnschedulableAndUnresolvable,
        reason,
        NAME,
    ))
}

impl Plugin for Tdm {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        let tz = &ssn.options().time_zone;
        self.zones_open = self
            .args
            .zones
            .iter()
            .map(|(zone, window)| (zone.clone(), window_open(window, ssn.now(), tz)))
            .collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE
            | ExtensionPoints::NODE_ORDER
            | ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::VICTIM_TASKS
            | ExtensionPoints::JOB_ORDER
            | ExtensionPoints::JOB_PIPELINED
            | ExtensionPoints::JOB_STARVING
    }

    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        let zone = &ssn.node(node).spec.revocable_zone;
        if zone.is_empty() {
            return Ok(());
        }
        self.zone_open(zone).map_err(fit_error)?;
        if ssn.task(task).spec.revocable_zone.is_empty() {
            return Err(fit_error(NOT_ALLOWED.to_string()));
        }
        Ok(())
    }

    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let zone = &ssn.node(node).spec.revocable_zone;
        if zone.is_empty() {
            return Ok(0.0);
        }
        self.zone_open(zone)?;
        Ok(if ssn.task(task).spec.revocable_zone.is_empty() {
            0.0
        } else {
            100.0
        })
    }

    fn preemptable(
        &self,
        ssn: &SessionState,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let p = ssn.task(preemptor);
        if p.spec.preemptable || !p.spec.revocable_zone.is_empty() {
            return (Vec::new(), REJECT);
        }
        let eligible: Vec<TaskId> = candidates
            .iter()
            .copied()
            .filter(|&c| {
                let t = ssn.task(c);
                t.spec.preemptable
                    && t.status == TaskStatus::Running
                    && t.node
                        .is_some_and(|n| ssn.node(n).spec.revocable_zone.is_empty())
            })
            .collect();
        (self.within_budgets(ssn, &eligible), PERMIT)
    }

    fn victim_tasks(&self, ssn: &SessionState, _tasks: &[TaskId]) -> Vec<TaskId> {
        let memory = &ssn.options().memory;
        if !memory.period_passed(LAST_EVICT, ssn.now(), self.args.evict_period) {
            return Vec::new();
        }
        let mut candidates = Vec::new();
        for zone in self.args.zones.keys() {
            if self.zone_open(zone).is_ok() {
                continue;
            }
            for n in ssn
                .node_ids()
                .filter(|&n| ssn.node(n).spec.revocable_zone == *zone)
            {
                for &(t, _) in &ssn.node(n).tasks {
                    let task = ssn.task(t);
                    if task.spec.preemptable && task.status == TaskStatus::Running {
                        candidates.push(t);
                    }
                }
            }
        }
        memory.set(LAST_EVICT, ssn.now());
        self.within_budgets(ssn, &candidates)
    }

    fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        // Non-preemptable jobs first.
        ssn.job(l)
            .spec
            .preemptable
            .cmp(&ssn.job(r).spec.preemptable)
    }

    fn job_pipelined(&self, ssn: &SessionState, job: JobId) -> i32 {
        if ssn.job(job).is_pipelined() {
            PERMIT
        } else {
            REJECT
        }
    }

    fn job_starving(&self, ssn: &SessionState, job: JobId) -> bool {
        let j = ssn.job(job);
        !j.spec.preemptable && j.count(TaskStatus::Pending) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn windows_as_volcanos_parser_reads_them() {
        for bad in [
            "00:00_01:00",
            "0:00",
            "1:0-0:0",
            "63:59-23:59",
            "22:00-24:00",
            "10:00 - 21:00",
        ] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_window("   1:00-0:00    "), Ok(((1, 0), (0, 0))));
        assert_eq!(parse_window("0:00-23:59"), Ok(((0, 0), (23, 59))));
    }

    #[test]
    fn windows_open_and_close() {
        let utc = TimeZone::UTC;
        let open = |w: &str, t: &str| window_open(w, at(t), &utc).is_ok();
        assert!(open("10:00-21:00", "2026-01-01T21:00:00Z"));
        assert!(!open("10:00-21:00", "2026-01-01T21:00:01Z"));
        assert!(!open("00:00-01:00", "2026-01-01T23:50:00Z"));
        assert!(open("0:00-0:00", "2026-01-01T13:00:00Z"));
        assert!(open("1:00-0:00", "2026-01-01T23:50:00Z"));
        assert!(!open("1:00-0:00", "2026-01-01T00:30:00Z"));
        // Re-anchored on the current day: the part after midnight never counts.
        assert!(open("22:00-06:00", "2026-01-01T23:00:00Z"));
        assert!(!open("22:00-06:00", "2026-01-01T02:00:00Z"));
        // Read in the configured zone.
        let tokyo = TimeZone::fixed(k8s_openapi::jiff::tz::offset(9));
        assert!(window_open("10:00-11:00", at("2026-01-01T01:30:00Z"), &tokyo).is_ok());
    }

    #[test]
    fn budgets_as_intstr() {
        assert_eq!(int_or_percent("30%", 5), 2);
        assert_eq!(int_or_percent("99%", 5), 5);
        assert_eq!(int_or_percent("3", 5), 3);
        assert_eq!(int_or_percent("x", 5), 0);
    }

    #[test]
    fn non_string_arguments_are_refused() {
        let args = Arguments::from_pairs(&[
            ("tdm.revocable-zone.rz1", ArgValue::Int(10)),
            ("tdm.revocable-zone.rz2", ArgValue::Str("1:00-2:00".into())),
            (EVICT_PERIOD, ArgValue::Int(60)),
        ]);
        let (a, w) = parse_args(&args);
        assert_eq!(a.zones.keys().collect::<Vec<_>>(), ["rz2"]);
        assert_eq!(a.evict_period, SignedDuration::from_mins(1));
        assert_eq!(w.len(), 2);
    }
}
