//! What plugins remember from one session to the next. Volcano keeps such things in
//! process-wide variables (the `rescheduling` interval timer, `tdm`'s last eviction time); here
//! the scheduler owns one [`PluginMemory`] and hands it to every session it opens, so that two
//! schedulers (or two simulations, or two tests) never share it.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Timers by name (`<plugin>/<what>`).
#[derive(Debug, Default)]
pub struct PluginMemory {
    timers: Mutex<BTreeMap<String, Timestamp>>,
}

impl PluginMemory {
    /// An interval timer that starts when first asked (Volcano's starts at process start, the
    /// first session's time here): true, and restarted at `now`, once `interval` has passed
    /// strictly since it last fired.
    pub fn interval_elapsed(&self, key: &str, now: Timestamp, interval: SignedDuration) -> bool {
        let mut timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        let last = *timers.entry(key.to_string()).or_insert(now);
        let due = last.checked_add(interval).is_ok_and(|at| at < now);
        if due {
            timers.insert(key.to_string(), now);
        }
        due
    }

    /// A period timer that has never fired (Volcano's zero time) until set: true unless it fired
    /// less than `period` ago. Does not restart it; see [`PluginMemory::set`].
    pub fn period_passed(&self, key: &str, now: Timestamp, period: SignedDuration) -> bool {
        let timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        match timers.get(key) {
            None => true,
            Some(last) => last.checked_add(period).is_ok_and(|at| at <= now),
        }
    }

    /// Restarts a timer at `now`.
    pub fn set(&self, key: &str, now: Timestamp) {
        self.timers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_string(), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn an_interval_timer_starts_on_first_use_and_fires_strictly_after() {
        let m = PluginMemory::default();
        let five = SignedDuration::from_mins(5);
        assert!(!m.interval_elapsed("r", at("2026-01-01T00:00:00Z"), five));
        assert!(!m.interval_elapsed("r", at("2026-01-01T00:05:00Z"), five));
        assert!(m.interval_elapsed("r", at("2026-01-01T00:05:01Z"), five));
        assert!(!m.interval_elapsed("r", at("2026-01-01T00:06:00Z"), five));
        assert!(m.interval_elapsed("r", at("2026-01-01T00:11:00Z"), five));
        // Timers are separate by name.
        assert!(!m.interval_elapsed("other", at("2026-01-01T00:11:00Z"), five));
    }

    #[test]
    fn a_period_timer_is_due_until_set() {
        let m = PluginMemory::default();
        let minute = SignedDuration::from_mins(1);
        assert!(m.period_passed("t", at("2026-01-01T00:00:00Z"), minute));
        m.set("t", at("2026-01-01T00:00:00Z"));
        assert!(!m.period_passed("t", at("2026-01-01T00:00:59Z"), minute));
        assert!(m.period_passed("t", at("2026-01-01T00:01:00Z"), minute));
    }
}
