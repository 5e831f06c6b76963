//! What a warm standby keeps of the changes it sees while another replica
//! leads: its caches list and watch as the leader's do, but it reconciles
//! nothing, so a change only says which parents may need work at the
//! takeover. The leader handled every change it lived to see; the ones it
//! may not have are those since its last renewal, at most a term before
//! the takeover. So a standby keeps the parents changed within a window
//! (two terms, to be safe), the oldest first, and forgets the rest as the
//! window moves: what it holds is bounded by the changes of the window,
//! not by how long it stood by. At the takeover those parents go first;
//! every other parent is queued as at a start (`worker::enqueue_all`).

use crate::controller::queue::ParentKey;
use crate::decide::order::Urgency;
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// Whether a controller stands by, and what it saw meanwhile. A context
/// leads from the start unless told to stand by.
#[derive(Default)]
pub struct Standby {
    state: Mutex<Option<Seen>>,
}

/// The parents changed within `window`, each with the instant it was last
/// seen changing.
struct Seen {
    window: Duration,
    /// In the order seen; a parent seen again has a later entry too.
    order: VecDeque<(Instant, ParentKey)>,
    latest: HashMap<ParentKey, Instant>,
}

impl Seen {
    /// Forgets what was seen before `now - window`.
    fn forget_before(&mut self, now: Instant) {
        while let Some((at, _)) = self.order.front() {
            if now.saturating_duration_since(*at) <= self.window {
                break;
            }
            if let Some((at, key)) = self.order.pop_front()
                && self.latest.get(&key) == Some(&at)
            {
                self.latest.remove(&key);
            }
        }
    }
}

impl Standby {
    fn state(&self) -> MutexGuard<'_, Option<Seen>> {
        // Each update leaves the state whole: a poisoned lock's is usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stands by until [`Standby::take_over`], keeping the parents changed
    /// within `window`.
    pub fn begin(&self, window: Duration) {
        *self.state() = Some(Seen {
            window,
            order: VecDeque::new(),
            latest: HashMap::new(),
        });
    }

    /// Whether a parent queued now is held here (standing by) rather than
    /// queued. A change is kept; anything less urgent is what the takeover
    /// finds from the caches anyway.
    pub fn hold(&self, key: &ParentKey, urgency: Urgency, now: Instant) -> bool {
        let mut state = self.state();
        let Some(seen) = state.as_mut() else {
            return false;
        };
        seen.forget_before(now);
        if urgency == Urgency::Changed {
            seen.order.push_back((now, key.clone()));
            seen.latest.insert(key.clone(), now);
        }
        true
    }

    /// Leads from now on: the parents changed within the window before
    /// `now`, each once, the earliest seen first. A parent queued after
    /// this is queued, not held.
    pub fn take_over(&self, now: Instant) -> Vec<ParentKey> {
        let Some(mut seen) = self.state().take() else {
            return Vec::new();
        };
        seen.forget_before(now);
        seen.order
            .into_iter()
            .filter(|(at, key)| seen.latest.get(key) == Some(at))
            .map(|(_, key)| key)
            .collect()
    }

    /// How many parents it holds (tests; a standby's memory).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.state().as_ref().map_or(0, |seen| seen.order.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::cache::SharedType;
    use crate::decide::model::ResolvedType;

    fn key(name: &str) -> ParentKey {
        let hello = ResolvedType::new("fraim.co.jp", "v1", "Hello", "helloes", true);
        ParentKey::new_with(name, SharedType::of(&hello.api)).within("shop")
    }

    fn names(keys: Vec<ParentKey>) -> Vec<String> {
        keys.into_iter().map(|k| k.name).collect()
    }

    const WINDOW: Duration = Duration::from_secs(30);

    #[test]
    fn a_context_leads_unless_told_to_stand_by() {
        let standby = Standby::default();
        assert!(!standby.hold(&key("a"), Urgency::Changed, Instant::now()));
        assert!(standby.take_over(Instant::now()).is_empty());
    }

    #[test]
    fn standing_by_holds_every_parent_and_keeps_only_the_changed_ones() {
        let standby = Standby::default();
        standby.begin(WINDOW);
        let start = Instant::now();
        assert!(standby.hold(&key("changed"), Urgency::Changed, start));
        assert!(standby.hold(&key("behind"), Urgency::Behind, start));
        assert!(standby.hold(&key("listed"), Urgency::Confirm, start));
        assert_eq!(names(standby.take_over(start)), ["changed"]);
        // Leading now: queued, not held.
        assert!(!standby.hold(&key("later"), Urgency::Changed, start));
    }

    #[test]
    fn the_takeover_names_each_recent_change_once_the_earliest_first() {
        let standby = Standby::default();
        standby.begin(WINDOW);
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        standby.hold(&key("old"), Urgency::Changed, at(0));
        standby.hold(&key("a"), Urgency::Changed, at(40));
        standby.hold(&key("b"), Urgency::Changed, at(45));
        // Seen again: keeps its place as last seen, not its first.
        standby.hold(&key("a"), Urgency::Changed, at(50));
        assert_eq!(names(standby.take_over(at(60))), ["b", "a"]);
    }

    #[test]
    fn what_a_standby_holds_is_bounded_by_the_window_not_by_how_long_it_stood_by() {
        let standby = Standby::default();
        standby.begin(WINDOW);
        let start = Instant::now();
        // An hour of one change a second, over 100 parents.
        for s in 0..3600u64 {
            let at = start + Duration::from_secs(s);
            standby.hold(&key(&format!("p{}", s % 100)), Urgency::Changed, at);
        }
        assert!(standby.held() <= 31, "held {}", standby.held());
        let recent = standby.take_over(start + Duration::from_secs(3600));
        // The window's 30 s: the parents changed in it, once each.
        assert_eq!(recent.len(), 30);
    }

    #[test]
    fn a_change_seen_before_the_window_is_the_old_leaders_and_not_kept() {
        let standby = Standby::default();
        standby.begin(WINDOW);
        let start = Instant::now();
        standby.hold(&key("handled"), Urgency::Changed, start);
        assert!(
            standby
                .take_over(start + WINDOW + Duration::from_secs(1))
                .is_empty()
        );
    }
}
