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

use std::collections::{HashMap, HashSet, VecDeque};

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
}

impl StatusQueue {
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

    /// Takes the oldest waiting write whose object has no write in flight, and marks it in
    /// flight until [`done`](Self::done).
    pub(crate) fn take(&mut self) -> Option<StatusWrite> {
        let in_flight = &self.in_flight;
        let key = match self.urgent.iter().position(|k| !in_flight.contains(k)) {
            Some(pos) => self.urgent.remove(pos)?,
            None => {
                let pos = self.order.iter().position(|k| !in_flight.contains(k))?;
                self.order.remove(pos)?
            }
        };
        let write = self.latest.remove(&key)?;
        self.in_flight.insert(key);
        Some(write)
    }

    /// The write taken for this object was sent (or given up).
    pub(crate) fn done(&mut self, write: &StatusWrite) {
        self.in_flight.remove(&write.key());
    }

    /// Writes waiting that a worker could take now.
    pub(crate) fn takeable(&self) -> usize {
        self.urgent
            .iter()
            .chain(&self.order)
            .filter(|k| !self.in_flight.contains(*k))
            .count()
    }

    /// Whether any write waits (possibly behind one in flight for its object). O(1), unlike
    /// [`takeable`](Self::takeable).
    pub(crate) fn has_waiting(&self) -> bool {
        !self.urgent.is_empty() || !self.order.is_empty()
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

    fn pg(name: &str, phase: &str) -> StatusWrite {
        StatusWrite::PodGroup(PodGroupStatusUpdate {
            pod_group: format!("ns/{name}"),
            status: JobStatus {
                phase: phase.into(),
                ..JobStatus::default()
            },
        })
    }

    #[test]
    fn a_newer_decision_replaces_the_waiting_one_in_its_place() {
        let mut q = StatusQueue::default();
        q.offer(pg("a", "Inqueue"));
        q.offer(pg("b", "Inqueue"));
        q.offer(pg("a", "Running"));
        assert_eq!(q.len(), 2);
        assert_eq!(q.take(), Some(pg("a", "Running")));
        assert_eq!(q.take(), Some(pg("b", "Inqueue")));
        assert_eq!(q.take(), None);
    }

    #[test]
    fn an_object_never_has_two_writes_in_flight() {
        let mut q = StatusQueue::default();
        q.offer(pg("a", "Inqueue"));
        let first = q.take().expect("first");
        // Decided again while the first is being sent: it waits for the first to finish.
        q.offer(pg("a", "Running"));
        q.offer(pg("b", "Inqueue"));
        assert_eq!(q.takeable(), 1);
        assert_eq!(q.take(), Some(pg("b", "Inqueue")));
        assert_eq!(q.take(), None);
        q.done(&first);
        assert_eq!(q.take(), Some(pg("a", "Running")));
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
        let order: Vec<_> = std::iter::from_fn(|| q.take()).collect();
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
}
