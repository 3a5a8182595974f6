//! Closing a session (spec/framework.md §2.7): plugins' close hooks, the PodGroup status of
//! every job, pod `PodScheduled` conditions and queue `status.allocated` — each emitted only
//! when it differs from what the cluster already holds.

use std::collections::BTreeMap;

use crate::model::job::phase;
use crate::model::resource::{DimensionDefault, Resource};
use crate::model::task::JobLink;
use crate::model::{JobId, QueueId, TaskId, TaskStatus};

use super::decisions::{
    Decisions, EventType, ObjectRef, Pipeline, PodConditionUpdate, PodGroupStatusUpdate,
    QueueAllocation,
};
use super::session::Session;

/// What `jobStatus` computes besides the conditions.
struct JobCounts {
    phase: &'static str,
    running: i32,
    succeeded: i32,
    failed: i32,
}

impl Session {
    /// Closes the session and returns everything it decided.
    pub fn close(mut self) -> Decisions {
        for slot in 0..self.slots.len() {
            let i = self.slots[slot].instance;
            // A duplicated name has one instance: close it once, at its last occurrence.
            if self.slots[slot + 1..].iter().any(|s| s.instance == i) {
                continue;
            }
            let start = self.clock.as_ref().map(|c| c());
            self.instances[i].on_session_close(&mut self.state);
            if let (Some(c), Some(start)) = (&self.clock, start) {
                let plugin = self.slots[slot].option.name.clone();
                self.state
                    .decisions
                    .plugin_timings
                    .push(super::decisions::PluginTiming {
                        plugin,
                        on_session: "OnSessionClose",
                        duration: c().saturating_sub(start),
                    });
            }
        }
        let jobs: Vec<JobId> = self.state.job_ids().collect();
        for job in jobs {
            self.update_job(job);
        }
        self.explain_jobless_tasks();
        self.update_queues();

        let state = &mut self.state;
        for t in &state.tasks {
            if t.status == TaskStatus::Pipelined
                && let Some(n) = t.node
            {
                state.decisions.pipelined.push(Pipeline {
                    pod: t.key().to_string(),
                    node: state.nodes[n.index()].name().to_string(),
                });
            }
        }
        let mut metrics = std::mem::take(&mut state.job_metrics);
        metrics.resize_with(state.jobs.len(), Default::default);
        // Standalone pods' implicit jobs too, under the name Volcano's controller gives their
        // PodGroup (`podgroup-<pod uid>`): gang counts them in `unschedule_job_count`, so
        // `unschedule_task_count` has their series, as in Volcano.
        for (j, mut figures) in state.jobs.iter().zip(metrics) {
            figures.placed =
                (j.count(TaskStatus::Binding) + j.count(TaskStatus::Pipelined)) as usize;
            if figures.is_empty() {
                continue;
            }
            let m = super::decisions::JobMetrics {
                job: j.spec.clone(),
                figures,
            };
            state.decisions.job_metrics.push(m);
        }
        let mut decisions = std::mem::take(&mut state.decisions);
        decisions.events.append(&mut state.events);
        decisions
    }

    /// `jobStatus` (§2.7.1), without the conditions (the job's own are kept).
    fn compute_job_counts(&self, job: JobId) -> JobCounts {
        let j = self.state.job(job);
        let uid = &self.state.uid;
        // The observed status without an Unschedulable=True condition has none to look at.
        let unschedulable = j.observed_figures().is_none_or(|f| f.unschedulable)
            && j.status().conditions.iter().any(|c| {
                c.type_ == apis::condition_type::UNSCHEDULABLE
                    && c.status == apis::condition_status::TRUE
                    && (c.transition_id == *uid || j.renewed_condition == Some(c.type_.as_str()))
            });
        let running = j.count(TaskStatus::Running) as i32;
        let releasing_on_node = if j.count(TaskStatus::Releasing) == 0 {
            0
        } else {
            self.state
                .job_tasks_in(job, TaskStatus::Releasing)
                .filter(|t| self.state.task(*t).has_node())
                .count() as i32
        };
        let scheduled = j.scheduled_task_num() + releasing_on_node;
        let completed = (j.count(TaskStatus::Failed) + j.count(TaskStatus::Succeeded)) as i32;
        let phase = if running > 0 && unschedulable {
            phase::UNKNOWN
        } else if scheduled >= j.min_available() {
            if scheduled == completed {
                phase::COMPLETED
            } else {
                phase::RUNNING
            }
        } else if j.phase() != phase::INQUEUE {
            phase::PENDING
        } else {
            phase::INQUEUE
        };
        JobCounts {
            phase,
            running,
            succeeded: j.count(TaskStatus::Succeeded) as i32,
            failed: j.count(TaskStatus::Failed) as i32,
        }
    }

    /// Job updater + `RecordJobStatusEvent` for one job (§2.7.3). Runs for every job of the
    /// session, so a job with nothing new costs no allocation.
    fn update_job(&mut self, job: JobId) {
        if !self.state.job(job).owned {
            return;
        }
        let counts = self.compute_job_counts(job);
        // Borrowed mutably only to change it: the next build takes over unchanged rows.
        let j = &self.state.jobs[job.index()];
        let same_figures = match j.observed_figures().and_then(|f| f.phase.map(|p| (p, f))) {
            // Still the observed status: its figures were read when it was observed.
            Some((phase, observed)) => {
                phase == counts.phase
                    && observed.running == counts.running
                    && observed.succeeded == counts.succeeded
                    && observed.failed == counts.failed
            }
            _ => {
                let s = j.status();
                s.phase == counts.phase
                    && s.running == counts.running
                    && s.succeeded == counts.succeeded
                    && s.failed == counts.failed
            }
        };
        if !same_figures {
            let s = self.state.jobs[job.index()].status_mut();
            if s.phase != counts.phase {
                counts.phase.clone_into(&mut s.phase);
            }
            s.running = counts.running;
            s.succeeded = counts.succeeded;
            s.failed = counts.failed;
        }
        // Still the observed status itself: nothing changed.
        let j = &self.state.jobs[job.index()];
        let changed = !j.shows_observed_status()
            && j.spec
                .baseline
                .as_ref()
                .is_none_or(|b| j.status().differs_from(b));
        let implicit = j.is_implicit();
        let not_ready_phase = matches!(
            counts.phase,
            phase::UNKNOWN | phase::PENDING | phase::INQUEUE
        );
        // A gang placed in this session is still Pending/Inqueue until its binds land; Volcano
        // then records a Warning "…unschedulable: pod group is ready". Here that is the Normal
        // "Scheduled" event: Warnings are for real problems (alerting keys on them).
        let placed = self.state.job(job).is_ready();
        if changed && !implicit {
            let awaiting_binds =
                placed && not_ready_phase && self.state.job(job).count(TaskStatus::Binding) > 0;
            let update = PodGroupStatusUpdate {
                pod_group: self.state.job(job).spec.uid.clone(),
                status: self.state.written_job_status(job),
                awaiting_binds,
            };
            self.state.decisions.pod_group_statuses.push(update);
        }

        let mut fit_error = None;
        if not_ready_phase && !placed {
            if !implicit {
                let j = self.state.job(job);
                let error = fit_error.insert(self.state.job_fit_error(job));
                let msg = format!(
                    "{}/{} tasks in gang unschedulable: {error}",
                    j.count(TaskStatus::Pending),
                    j.tasks.len(),
                );
                self.state
                    .record_job_event(job, EventType::Warning, "Unschedulable", msg);
            }
        } else if (changed || (placed && not_ready_phase)) && !implicit {
            // Volcano's `RecordJobStatusEvent`: Scheduled only with a status update (the
            // executor would drop the repeats, but a running gang would still build one each
            // session), plus the placed-but-not-yet-running gang above.
            self.state.record_job_event(
                job,
                EventType::Normal,
                "Scheduled",
                apis::POD_GROUP_READY.to_string(),
            );
        }

        // Only tasks still waiting are explained: a job whose tasks all run has nothing to say.
        let waiting = |s: TaskStatus| self.state.job(job).count(s) > 0;
        if !(waiting(TaskStatus::Allocated)
            || waiting(TaskStatus::Pending)
            || waiting(TaskStatus::Pipelined))
        {
            return;
        }
        let job_fit_error = fit_error.unwrap_or_else(|| self.state.job_fit_error(job));
        let candidates: Vec<TaskId> = self
            .state
            .job(job)
            .tasks
            .iter()
            .copied()
            .filter(|t| {
                let t = self.state.task(*t);
                !t.spec.sch_gated
                    && matches!(
                        t.status,
                        TaskStatus::Allocated | TaskStatus::Pending | TaskStatus::Pipelined
                    )
            })
            .collect();
        // A queue that is not Open admits and allocates nothing; say so rather than "not ready".
        let closed_queue = self
            .state
            .job(job)
            .queue
            .map(|q| &self.state.queue(q).spec)
            .filter(|q| !q.is_open())
            .map(|q| {
                format!(
                    "queue {} is {}, not Open: it admits no new jobs",
                    q.name, q.state
                )
            });
        for task in candidates {
            let (reason, mut message, nominated) = self.state.task_scheduling_reason(task);
            if let Some(closed) = &closed_queue
                && self.state.task(task).status == TaskStatus::Pending
            {
                message = closed.clone();
            } else if message.is_empty() {
                message = if job_fit_error.is_empty() {
                    "all nodes are unavailable".to_string()
                } else {
                    job_fit_error.clone()
                };
            }
            if self.state.task(task).status == TaskStatus::Pending {
                self.state.decisions.unschedulable_tasks += 1;
            }
            self.task_unschedulable(task, reason, message, nominated);
        }
    }

    /// Pending pods of ours that belong to no job of the session: their PodGroup or queue does
    /// not exist. Volcano leaves them without a word; here each gets `PodScheduled=False`
    /// saying which object is missing (once, while it stays the same).
    fn explain_jobless_tasks(&mut self) {
        let state = &self.state;
        let orphans: Vec<(TaskId, String)> = (0..state.tasks.len())
            .map(TaskId::from_index)
            .filter_map(|id| {
                let t = state.task(id);
                let s = &t.spec;
                if t.job.is_some() || !s.ours || t.status != TaskStatus::Pending || s.sch_gated {
                    return None;
                }
                let message = match &s.job {
                    JobLink::PodGroup(key) => match state.snapshot.pod_group(key) {
                        Some(pg) => {
                            let queue = if pg.spec.queue.is_empty() {
                                state.snapshot.options().default_queue.clone()
                            } else {
                                pg.spec.queue.clone()
                            };
                            format!(
                                "queue {queue} of pod group {key} does not exist; the pod waits \
                                 until it does"
                            )
                        }
                        None => format!(
                            "pod group {key} (annotation scheduling.k8s.io/group-name) does not \
                             exist; the pod waits until it does"
                        ),
                    },
                    JobLink::Standalone { queue } => {
                        format!("queue {queue} does not exist; the pod waits until it does")
                    }
                    JobLink::None => return None,
                };
                Some((id, message))
            })
            .collect();
        for (task, message) in orphans {
            self.state.decisions.unschedulable_tasks += 1;
            self.task_unschedulable(task, "Unschedulable".to_string(), message, None);
        }
    }

    /// `taskUnschedulable`: write `PodScheduled=False` only when it is new or differs.
    fn task_unschedulable(
        &mut self,
        task: TaskId,
        reason: String,
        message: String,
        nominated: Option<String>,
    ) {
        let spec = &self.state.task(task).spec;
        let condition_same = spec
            .pod_scheduled_condition()
            .is_some_and(|(s, r, m)| s == "False" && r == reason && m == message);
        let nominated_changed = nominated
            .as_ref()
            .is_some_and(|n| spec.nominated_node_name.as_deref() != Some(n.as_str()));
        if condition_same && !nominated_changed {
            return;
        }
        let object = ObjectRef {
            kind: "Pod",
            namespace: Some(spec.namespace.clone()),
            name: spec.name.clone(),
            uid: spec.uid.clone(),
        };
        let pod = spec.key.clone();
        self.state.events.push(super::decisions::Event {
            object,
            type_: EventType::Warning,
            reason: "FailedScheduling".to_string(),
            message: message.clone(),
        });
        self.state
            .decisions
            .pod_conditions
            .push(PodConditionUpdate {
                pod,
                reason,
                message,
                nominated_node: nominated,
            });
    }

    /// `updateQueueStatus` (§2.7.4): allocated per queue, rolled up to parents when a `root`
    /// queue exists; emitted only for queues whose `status.allocated` differs.
    fn update_queues(&mut self) {
        let state = &self.state;
        let mut allocated: BTreeMap<QueueId, Resource> =
            state.queue_ids().map(|q| (q, Resource::empty())).collect();
        let root = state.queue_by_name.get(apis::ROOT_QUEUE).copied();
        for job in &state.jobs {
            let Some(q) = job.queue else { continue };
            if let Some(sum) = allocated.get_mut(&q) {
                sum.add(&job.allocated);
            }
            if root.is_some() && Some(q) != root {
                // Walk up the parents; a missing parent ends the walk (Volcano would crash).
                let mut current = q;
                let mut hops = 0;
                while hops < state.queues.len() {
                    hops += 1;
                    let parent_name = state.queue(current).spec.parent.as_str();
                    let parent_name = if parent_name.is_empty() {
                        apis::ROOT_QUEUE
                    } else {
                        parent_name
                    };
                    let Some(&parent) = state.queue_by_name.get(parent_name) else {
                        break;
                    };
                    if let Some(sum) = allocated.get_mut(&parent) {
                        sum.add(&job.allocated);
                    }
                    if Some(parent) == root {
                        break;
                    }
                    current = parent;
                }
            }
        }
        // A queue whose jobs all belong to another scheduler is that scheduler's to write.
        let mut has_job = vec![false; state.queues.len()];
        let mut has_owned_job = vec![false; state.queues.len()];
        for job in &state.jobs {
            if let Some(q) = job.queue {
                has_job[q.index()] = true;
                has_owned_job[q.index()] |= job.owned;
            }
        }
        let mut updates = Vec::new();
        for (q, alloc) in &allocated {
            if has_job[q.index()] && !has_owned_job[q.index()] {
                continue;
            }
            let spec = &state.queue(*q).spec;
            let same = spec.status_allocated.as_ref().is_some_and(|old| {
                old.equal(alloc, DimensionDefault::Zero) && alloc.equal(old, DimensionDefault::Zero)
            });
            if !same {
                updates.push(QueueAllocation {
                    queue: spec.name.clone(),
                    allocated: alloc.clone(),
                });
            }
        }
        let mut metrics = BTreeMap::new();
        for (q, alloc) in allocated {
            let mut m = self.state.queue_metrics.remove(&q).unwrap_or_default();
            let spec = &self.state.queue(q).spec;
            m.weight = spec.weight;
            m.allocated = alloc;
            metrics.insert(spec.name.clone(), m);
        }
        self.state.decisions.queue_allocations = updates;
        self.state.decisions.queue_metrics = metrics;
    }
}
