//! A session: one scheduling cycle's working state (spec/framework.md §2.4–§2.7).
//!
//! [`Session::open`] builds the session tables from a snapshot (O(pods + nodes + jobs), no
//! object copies: tasks and nodes share the snapshot's `Arc`'d specs), builds and opens the
//! plugins in tier order; the actions then run on it; [`Session::close`] computes the
//! PodGroup, pod and queue updates and returns the [`Decisions`].

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;

use crate::conf::{Gate, SchedulerConf};
use crate::state::Snapshot;

use super::plugin::{ExtensionPoints, Plugin, PluginRegistry};
use super::session_state::{SessionOptions, SessionState};
use super::table_build::build_state;

/// One plugin option occurrence in tier order, pointing at the instance that answers for it.
pub(crate) struct PluginSlot {
    pub tier: usize,
    pub option: crate::conf::PluginOption,
    pub instance: usize,
}

/// A clock the caller may hand to a session to time plugin hooks (the engine reads none itself).
pub type Clock = std::sync::Arc<dyn Fn() -> std::time::Duration + Send + Sync>;

/// A session: the state plus the plugins.
pub struct Session {
    pub state: SessionState,
    pub(crate) clock: Option<Clock>,
    pub(crate) instances: Vec<Box<dyn Plugin>>,
    pub(crate) points: Vec<ExtensionPoints>,
    pub(crate) slots: Vec<PluginSlot>,
    pub(crate) tier_count: usize,
    /// The instances answering `TaskOrderFn` and `PredicateFn`, in slot order: asked per
    /// comparison and per node, where filtering the slots each time showed in profiles.
    pub(crate) task_order_instances: Vec<usize>,
    pub(crate) predicate_instances: Vec<usize>,
}

impl Session {
    /// `OpenSession` (§2.5). Unknown plugin names were refused when the configuration was
    /// parsed; one that still slips through is skipped with an error log.
    pub fn open(
        snapshot: &Snapshot,
        conf: Arc<SchedulerConf>,
        registry: &PluginRegistry,
        options: SessionOptions,
        now: Timestamp,
        uid: String,
    ) -> Session {
        Self::open_timed(snapshot, conf, registry, options, now, uid, None)
    }

    /// [`Session::open`] with a clock: each plugin's open and close hook is timed and reported
    /// in [`Decisions::plugin_timings`].
    pub fn open_timed(
        snapshot: &Snapshot,
        conf: Arc<SchedulerConf>,
        registry: &PluginRegistry,
        options: SessionOptions,
        now: Timestamp,
        uid: String,
        clock: Option<Clock>,
    ) -> Session {
        let state = build_state(snapshot, conf.clone(), options, now, uid);
        let mut session = Session {
            clock,
            state,
            instances: Vec::new(),
            points: Vec::new(),
            slots: Vec::new(),
            tier_count: conf.tiers.len(),
            task_order_instances: Vec::new(),
            predicate_instances: Vec::new(),
        };
        let mut handed_over = session.state.take_handed_over(&conf);
        let mut instance_by_name: HashMap<String, usize> = HashMap::new();
        for (tier_index, tier) in conf.tiers.iter().enumerate() {
            for option in &tier.plugins {
                let Some(builder) = registry.get(&option.name) else {
                    tracing::error!(plugin = %option.name, "unknown plugin, skipped");
                    continue;
                };
                let mut plugin = builder(&option.arguments);
                // The same configuration makes the same instances in the same order.
                if let Some(previous) = handed_over
                    .get_mut(session.instances.len())
                    .and_then(Option::take)
                {
                    plugin.take_over(previous);
                }
                let start = session.clock.as_ref().map(|c| c());
                plugin.on_session_open(&mut session.state);
                if let (Some(c), Some(start)) = (&session.clock, start) {
                    session
                        .state
                        .decisions
                        .plugin_timings
                        .push(super::decisions::PluginTiming {
                            plugin: option.name.clone(),
                            on_session: "OnSessionOpen",
                            duration: c().saturating_sub(start),
                        });
                }
                let idx = session.instances.len();
                session.points.push(plugin.extension_points());
                session.instances.push(plugin);
                instance_by_name.insert(option.name.clone(), idx);
                session.slots.push(PluginSlot {
                    tier: tier_index,
                    option: option.clone(),
                    instance: idx,
                });
            }
        }
        // A duplicated name answers with its last instance at every occurrence (§3.1).
        for slot in &mut session.slots {
            if let Some(&last) = instance_by_name.get(&slot.option.name) {
                slot.instance = last;
            }
        }
        session.task_order_instances = session
            .slots_for(ExtensionPoints::TASK_ORDER, Some(Gate::TaskOrder))
            .map(|s| s.instance)
            .collect();
        session.predicate_instances = session
            .slots_for(ExtensionPoints::PREDICATE, Some(Gate::Predicate))
            .map(|s| s.instance)
            .collect();
        session
    }

    pub fn state(&self) -> &SessionState {
        &self.state
    }
}

/// A session hands what its plugins keep to the scheduler's memo as it ends, before its rows
/// (`SessionState`'s drop): the next build passes both on when it takes the rows over.
impl Drop for Session {
    fn drop(&mut self) {
        // A session cut short by a panic may have left its plugins half-updated.
        if !self.state.options.carry_rows || std::thread::panicking() {
            return;
        }
        let states: Vec<_> = self.instances.iter_mut().map(|p| p.hand_over()).collect();
        if states.iter().any(Option::is_some) {
            let handed = super::table_build::HandedOver {
                conf: Arc::clone(&self.state.conf),
                states,
            };
            self.state
                .options
                .tables
                .keep_handed_over(self.state.built, handed);
        }
    }
}
