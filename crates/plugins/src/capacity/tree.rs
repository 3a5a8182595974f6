//! The queue tree of hierarchical mode: how each queue reaches the root, and the problems
//! reported when it does not.

use engine::framework::{Event, EventType, ObjectRef, SessionState};
use engine::model::QueueId;

use super::*;

/// A problem with the queue tree, reported as a Warning event on `queue`.
pub(super) struct TreeProblem {
    pub(super) queue: QueueId,
    pub(super) reason: &'static str,
    pub(super) message: String,
}

/// How a queue relates to `root` while the tree is resolved.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Reach {
    Unknown,
    Root,
    /// Cut off by the problem with this index.
    Cut(usize),
}

/// Why a part of the tree is cut off from `root`.
pub(super) enum Cut {
    MissingParent {
        queue: QueueId,
        parent: String,
    },
    /// The queues of a parent loop, each followed by its parent.
    Cycle(Vec<QueueId>),
}

impl Cut {
    pub(super) fn offenders(&self) -> Vec<QueueId> {
        match self {
            Cut::MissingParent { queue, .. } => vec![*queue],
            Cut::Cycle(members) => members.clone(),
        }
    }
}

/// The queue tree of a session (§5.4).
pub(super) struct QueueTree {
    pub(super) root: Option<QueueId>,
    /// Root-first ancestors of each queue connected to `root`; `None` for the others.
    pub(super) ancestors: Vec<Option<Vec<QueueId>>>,
    pub(super) children: Vec<Vec<QueueId>>,
    /// The connected queues, parents before children (breadth-first from `root`).
    pub(super) order: Vec<QueueId>,
    pub(super) problems: Vec<TreeProblem>,
}

impl QueueTree {
    /// Links every queue to its parent. A missing parent or a parent loop cuts the affected
    /// queues and everything below them off from `root`; every other queue is connected.
    pub(super) fn resolve(ssn: &SessionState) -> QueueTree {
        enum Parent {
            IsRoot,
            Queue(QueueId),
            Missing(String),
        }
        let n = ssn.queues().len();
        let root = ssn.queue_id(apis::ROOT_QUEUE);
        let parents: Vec<Parent> = ssn
            .queue_ids()
            .map(|q| {
                if Some(q) == root {
                    return Parent::IsRoot;
                }
                let name = ssn.queue(q).spec.parent.as_str();
                let name = if name.is_empty() {
                    apis::ROOT_QUEUE
                } else {
                    name
                };
                match ssn.queue_id(name) {
                    Some(p) => Parent::Queue(p),
                    None => Parent::Missing(name.to_string()),
                }
            })
            .collect();

        // Walk up from every queue until a queue of known reach, `root`, a missing parent or a
        // queue already on the walk (a loop); everything walked shares the outcome.
        let mut reach = vec![Reach::Unknown; n];
        let mut position_on_walk: Vec<Option<usize>> = vec![None; n];
        let mut cuts: Vec<Cut> = Vec::new();
        for start in 0..n {
            let mut walk: Vec<usize> = Vec::new();
            let mut current = start;
            let outcome = loop {
                if reach[current] != Reach::Unknown {
                    break reach[current];
                }
                if let Some(at) = position_on_walk[current] {
                    let mut members = walk.split_off(at);
                    // Start the loop at its first queue (by name), whatever queue the walk
                    // started from.
                    if let Some(first) = members.iter().enumerate().min_by_key(|&(_, &m)| m) {
                        let at = first.0;
                        members.rotate_left(at);
                    }
                    let cut = Reach::Cut(cuts.len());
                    for &m in &members {
                        reach[m] = cut;
                        position_on_walk[m] = None;
                    }
                    cuts.push(Cut::Cycle(
                        members.into_iter().map(QueueId::from_index).collect(),
                    ));
                    break cut;
                }
                match &parents[current] {
                    Parent::IsRoot => {
                        reach[current] = Reach::Root;
                        break Reach::Root;
                    }
                    Parent::Queue(p) => {
                        position_on_walk[current] = Some(walk.len());
                        walk.push(current);
                        current = p.index();
                    }
                    Parent::Missing(name) => {
                        let cut = Reach::Cut(cuts.len());
                        reach[current] = cut;
                        cuts.push(Cut::MissingParent {
                            queue: QueueId::from_index(current),
                            parent: name.clone(),
                        });
                        break cut;
                    }
                }
            };
            for q in walk {
                reach[q] = outcome;
                position_on_walk[q] = None;
            }
        }

        let mut children: Vec<Vec<QueueId>> = vec![Vec::new(); n];
        for (q, parent) in parents.iter().enumerate() {
            if let (Reach::Root, Parent::Queue(p)) = (reach[q], parent) {
                children[p.index()].push(QueueId::from_index(q));
            }
        }
        let mut ancestors: Vec<Option<Vec<QueueId>>> = vec![None; n];
        let mut order = Vec::new();
        if let Some(root) = root {
            ancestors[root.index()] = Some(Vec::new());
            order.push(root);
            let mut next = 0;
            while let Some(&p) = order.get(next) {
                next += 1;
                let mut chain = ancestors[p.index()].clone().unwrap_or_default();
                chain.push(p);
                for &c in &children[p.index()] {
                    ancestors[c.index()] = Some(chain.clone());
                    order.push(c);
                }
            }
        }

        let problems = describe_cuts(ssn, &cuts, &reach);

        QueueTree {
            root,
            ancestors,
            children,
            order,
            problems,
        }
    }
}

/// One Warning per queue that cuts the tree (a missing parent, a loop), naming the queues cut
/// off below it.
fn describe_cuts(ssn: &SessionState, cuts: &[Cut], reach: &[Reach]) -> Vec<TreeProblem> {
    let n = reach.len();
    cuts
        .iter()
        .enumerate()
        .flat_map(|(i, cut)| {
            let offenders = cut.offenders();
            let cut_off: Vec<&str> = (0..n)
                .filter(|&q| {
                    reach[q] == Reach::Cut(i) && !offenders.contains(&QueueId::from_index(q))
                })
                .map(|q| ssn.queues()[q].name())
                .collect();
            let name = |q: QueueId| ssn.queue(q).name().to_string();
            let what = match cut {
                Cut::MissingParent { queue, parent } => format!(
                    "parent queue {parent:?} of queue {:?} does not exist",
                    name(*queue)
                ),
                Cut::Cycle(members) => {
                    // Back to the first queue, to show the loop closing.
                    let names: Vec<String> =
                        members.iter().chain(members.first()).map(|&q| name(q)).collect();
                    format!("the queue parents form a loop: {}", names.join(" -> "))
                }
            };
            let scope = if cut_off.is_empty() {
                String::new()
            } else {
                format!(" nor of the queues below it ({})", cut_off.join(", "))
            };
            let message = format!(
                "{what}; the capacity plugin schedules no job of this queue{scope} until the hierarchy is fixed"
            );
            offenders.into_iter().map(move |queue| TreeProblem {
                queue,
                reason: REASON_INVALID_HIERARCHY,
                message: message.clone(),
            })
        })
        .collect()
}

/// Pushes the tree problems as Warning events on their queues, and logs them.
pub(super) fn report_problems(ssn: &mut SessionState, problems: Vec<TreeProblem>) {
    for p in problems {
        let spec = ssn.queue(p.queue).spec.clone();
        tracing::warn!(plugin = NAME, queue = %spec.name, reason = p.reason, "{}", p.message);
        ssn.record_event(Event {
            object: ObjectRef {
                kind: "Queue",
                namespace: None,
                name: spec.name.clone(),
                uid: spec.queue.metadata.uid.clone().unwrap_or_default(),
            },
            type_: EventType::Warning,
            reason: p.reason.to_string(),
            message: p.message,
        });
    }
}
