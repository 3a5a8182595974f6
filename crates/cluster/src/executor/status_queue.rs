//! Status writes waiting to be sent, one per object, the newest decision winning.
//!
//! A session compares against what the watches show, so while a PodGroup's, a pod's or a
//! Queue's status write waits for the rate limiter, the next session decides the same write
//! again. Instead of queueing it twice (writes piling up without bound, landing out of order),
//! the newer decision replaces the waiting one, and an object never has two writes in flight.
//! So the scheduling loop need not wait for status writes: at any write rate a session runs
//! every period and its newest decisions go out as soon as the rate allows.
//!
//! A PodGroup turning Running goes ahead of the other waiting writes: it is what a user waits
//! for after the binds, and the writes it overtakes (mostly `Inqueue` of gangs whose binds are
//! still queued) are often replaced by their own Running before their turn. Each PodGroup turns
//! Running once per run, so the others are delayed by a bounded number of writes.
//!
//! A Queue's status rests for a while after it was written (the schedule period): the
//! decisions made meanwhile wait, the newest replacing the others, and the newest is written
//! when the rest ends. A Queue's `allocated` changes with every session that places a pod in
//! it; Volcano writes it once per session, so once per period, and a daemon that runs a
//! session for each arriving pod would otherwise write it (and read its own write back) that
//! many times.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use engine::framework::decisions::{PodConditionUpdate, PodGroupStatusUpdate, QueueAllocation};

/// One status write.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StatusWrite {
    PodGroup(PodGroupStatusUpdate),
    PodCondition(PodConditionUpdate),
    Queue(QueueAllocation),
}

/// The object a write is about: its kind and key.
type Key = (u8, String);

impl StatusWrite {
    /// Served before the others (see the module documentation).
    fn is_urgent(&self) -> bool {
        matches!(self, StatusWrite::PodGroup(u) if u.status.phase == engine::model::job::phase::RUNNING)
    }

    fn key(&self) -> Key {
        match self {
            StatusWrite::PodGroup(u) => (0, u.pod_group.clone()),
            StatusWrite::PodCondition(c) => (1, c.pod.clone()),
            StatusWrite::Queue(q) => (2, q.queue.clone()),
        }
    }
}

/// Writes waiting, oldest object first, and the objects whose write is being sent.
#[derive(Debug, Default)]
pub(crate) struct StatusQueue {
    /// Urgent writes waiting, oldest first; served before `order`.
    urgent: VecDeque<Key>,
    order: VecDeque<Key>,
    latest: HashMap<Key, StatusWrite>,
    in_flight: HashSet<Key>,
    /// Workers sending from this queue; each stops when nothing is left to take.
    pub(crate) workers: usize,
    /// How long a Queue's status rests after a write (zero: it does not).
    queue_rest: Duration,
    /// Queues resting, until when.
    resting: HashMap<Key, Instant>,
    /// A wake-up is set for the end of a rest (the executor's, see [`Self::rest_ends`]).
    pub(crate) wake_set: bool,
}

impl StatusQueue {
    /// An empty queue in which a Queue's status rests for `rest` after each write.
    pub(crate) fn with_queue_rest(rest: Duration) -> Self {
        StatusQueue {
            queue_rest: rest,
            ..StatusQueue::default()
        }
    }

    /// Queues a write, replacing the one waiting for the same object (which keeps its place).
    /// An urgent write moves ahead of the non-urgent ones.
    pub(crate) fn offer(&mut self, write: StatusWrite) {
        let key = write.key();
        let urgent = write.is_urgent();
        let waiting = self.latest.insert(key.clone(), write).is_some();
        let in_urgent = waiting && self.urgent.contains(&key);
        if urgent && !in_urgent {
            if waiting && let Some(pos) = self.order.iter().position(|k| *k == key) {
                self.order.remove(pos);
            }
            self.urgent.push_back(key);
        } else if !waiting {
            self.order.push_back(key);
        }
    }

    /// Drops the write waiting for this PodGroup, if any (one in flight goes on): a newer
    /// decision says nothing is to be written yet.
    pub(crate) fn withdraw_pod_group(&mut self, pod_group: &str) {
        let key = (0, pod_group.to_string());
        if self.latest.remove(&key).is_some() {
            self.urgent.retain(|k| *k != key);
            self.order.retain(|k| *k != key);
        }
    }

    /// Whether a write for `key` may be taken at `now`: none in flight, and not resting.
    fn free(&self, key: &Key, now: Instant) -> bool {
        !self.in_flight.contains(key)
            && (self.resting.is_empty() || self.resting.get(key).is_none_or(|until| *until <= now))
    }

    /// Takes the oldest waiting write whose object has no write in flight and does not rest,
    /// and marks it in flight until [`done`](Self::done).
    pub(crate) fn take(&mut self, now: Instant) -> Option<StatusWrite> {
        let key = match self.urgent.iter().position(|k| self.free(k, now)) {
            Some(pos) => self.urgent.remove(pos)?,
            None => {
                let pos = self.order.iter().position(|k| self.free(k, now))?;
                self.order.remove(pos)?
            }
        };
        let write = self.latest.remove(&key)?;
        self.in_flight.insert(key);
        Some(write)
    }

    /// The write taken for this object was sent (or given up) at `now`; a Queue's then rests.
    pub(crate) fn done(&mut self, write: &StatusWrite, now: Instant) {
        let key = write.key();
        self.in_flight.remove(&key);
        self.resting.retain(|_, until| *until > now);
        if matches!(write, StatusWrite::Queue(_)) && !self.queue_rest.is_zero() {
            self.resting.insert(key, now + self.queue_rest);
        }
    }

    /// Writes waiting that a worker could take at `now`.
    pub(crate) fn takeable(&self, now: Instant) -> usize {
        self.urgent
            .iter()
            .chain(&self.order)
            .filter(|k| self.free(k, now))
            .count()
    }

    /// Whether a worker could take a write at `now`.
    pub(crate) fn any_takeable(&self, now: Instant) -> bool {
        self.urgent
            .iter()
            .chain(&self.order)
            .any(|k| self.free(k, now))
    }

    /// When the first rest of an object with a write waiting ends, if one rests after `now`
    /// (nothing else would take that write then: a wake-up must be set for it).
    pub(crate) fn rest_ends(&self, now: Instant) -> Option<Instant> {
        // Few objects rest (the queues): look at them, not at every waiting write.
        self.resting
            .iter()
            .filter(|(k, until)| {
                **until > now && self.latest.contains_key(*k) && !self.in_flight.contains(*k)
            })
            .map(|(_, until)| *until)
            .min()
    }

    /// Writes waiting or in flight.
    pub(crate) fn len(&self) -> usize {
        self.urgent.len() + self.order.len() + self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::model::job::JobStatus;

    fn now() -> Instant {
        Instant::now()
    }

    fn queue(name: &str, pods: f64) -> StatusWrite {
        StatusWrite::Queue(QueueAllocation {
            queue: name.into(),
            allocated: engine::model::resource::Resource::from_pairs(0.0, 0.0, &[("pods", pods)]),
        })
    }

    fn pg(name: &str, phase: &str) -> StatusWrite {
        StatusWrite::PodGroup(PodGroupStatusUpdate {
            pod_group: format!("ns/{name}"),
            status: JobStatus {
                phase: phase.into(),
                ..JobStatus::default()
            },
            awaiting_binds: false,
        })
    }

    #[test]
    fn a_newer_decision_replaces_the_waiting_one_in_its_place() {
        let mut q = StatusQueue::default();
        q.offer(pg("a", "Inqueue"));
        q.offer(pg("b", "Inqueue"));
        q.offer(pg("a", "Running"));
        assert_eq!(q.len(), 2);
        assert_eq!(q.take(now()), Some(pg("a", "Running")));
        assert_eq!(q.take(now()), Some(pg("b", "Inqueue")));
        assert_eq!(q.take(now()), None);
    }

    #[test]
    fn an_object_never_has_two_writes_in_flight() {
        let mut q = StatusQueue::default();
        q.offer(pg("a", "Inqueue"));
        let first = q.take(now()).expect("first");
        // Decided again while the first is being sent: it waits for the first to finish.
        q.offer(pg("a", "Running"));
        q.offer(pg("b", "Inqueue"));
        assert_eq!(q.takeable(now()), 1);
        assert_eq!(q.take(now()), Some(pg("b", "Inqueue")));
        assert_eq!(q.take(now()), None);
        q.done(&first, now());
        assert_eq!(q.take(now()), Some(pg("a", "Running")));
    }

    #[test]
    fn a_podgroup_turning_running_goes_first() {
        let mut q = StatusQueue::default();
        q.offer(pg("a", "Inqueue"));
        q.offer(pg("b", "Inqueue"));
        q.offer(pg("c", "Inqueue"));
        q.offer(pg("c", "Running"));
        q.offer(pg("d", "Running"));
        // Replaced by a non-urgent decision: it keeps its urgent place.
        q.offer(pg("d", "Pending"));
        let order: Vec<_> = std::iter::from_fn(|| q.take(now())).collect();
        assert_eq!(
            order,
            [
                pg("c", "Running"),
                pg("d", "Pending"),
                pg("a", "Inqueue"),
                pg("b", "Inqueue")
            ]
        );
    }

    #[test]
    fn kinds_do_not_collide() {
        let mut q = StatusQueue::default();
        q.offer(pg("x", "Inqueue"));
        q.offer(StatusWrite::PodCondition(PodConditionUpdate {
            pod: "ns/x".into(),
            reason: "Unschedulable".into(),
            message: "m".into(),
            nominated_node: None,
        }));
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn a_queue_written_rests_and_then_gets_the_newest_decision() {
        let rest = Duration::from_secs(1);
        let mut q = StatusQueue {
            queue_rest: rest,
            ..StatusQueue::default()
        };
        let t0 = now();
        q.offer(queue("q", 1.0));
        let first = q.take(t0).expect("first write");
        q.done(&first, t0);
        // Decided again by the sessions that follow: they wait, the newest winning.
        q.offer(queue("q", 2.0));
        q.offer(queue("q", 3.0));
        q.offer(queue("other", 1.0));
        q.offer(pg("a", "Inqueue"));
        assert_eq!(
            q.takeable(t0),
            2,
            "another queue and a PodGroup do not wait"
        );
        assert_eq!(q.take(t0), Some(queue("other", 1.0)));
        assert_eq!(q.take(t0), Some(pg("a", "Inqueue")));
        assert_eq!(q.take(t0), None);
        assert!(!q.any_takeable(t0));
        assert_eq!(q.rest_ends(t0), Some(t0 + rest));
        let later = t0 + rest;
        assert_eq!(q.rest_ends(later), None);
        assert_eq!(q.take(later), Some(queue("q", 3.0)));
        assert_eq!(q.take(later), None);
    }

    #[test]
    fn without_a_rest_a_queue_is_written_at_once() {
        let mut q = StatusQueue::default();
        let t0 = now();
        q.offer(queue("q", 1.0));
        let first = q.take(t0).expect("first write");
        q.done(&first, t0);
        q.offer(queue("q", 2.0));
        assert_eq!(q.rest_ends(t0), None);
        assert_eq!(q.take(t0), Some(queue("q", 2.0)));
    }

    #[test]
    fn a_podgroup_does_not_rest() {
        let mut q = StatusQueue {
            queue_rest: Duration::from_secs(1),
            ..StatusQueue::default()
        };
        let t0 = now();
        q.offer(pg("a", "Inqueue"));
        let first = q.take(t0).expect("first write");
        q.done(&first, t0);
        q.offer(pg("a", "Running"));
        assert_eq!(q.take(t0), Some(pg("a", "Running")));
    }
}
