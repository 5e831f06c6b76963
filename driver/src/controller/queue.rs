//! The parents waiting for a reconcile, on their way to kube's applier.
//!
//! The applier takes every key it is given into a set and starts them in
//! no set order as its workers free up. So this queue hands it at most a
//! few keys at a time (those sent and not yet started) and keeps the rest
//! itself, the most urgent first (`metahook_planner::decide::order`): after
//! a start or a takeover, a parent that changed while no driver ran does
//! not wait behind thousands that are only being confirmed.
//!
//! A key waiting here or in the applier is not sent twice: a second
//! trigger sends nothing, though a more urgent one moves the key up. Its
//! change is not lost: a reconcile takes its parent out of the queue first
//! and reads it from the cache after (`worker::reconcile_isolated`). What
//! waits, here and in the applier, is the queue-depth metric.

use crate::controller::cache::{CachedObject, SharedType};
use crate::decide::order::Urgency;
use kube::api::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A parent, as kube's applier and store name it.
pub type ParentKey = ObjectRef<CachedObject>;

/// A parent's key as kube's applier reports it in an error (its errors
/// name objects as `DynamicObject`s, whatever the store holds).
pub fn key_of_erased(erased: &ObjectRef<DynamicObject>) -> ParentKey {
    let key = ParentKey::new_with(&erased.name, SharedType::of(&erased.dyntype));
    match &erased.namespace {
        Some(namespace) => key.within(namespace),
        None => key,
    }
}

/// How many keys the applier holds at once: enough that its workers
/// never wait for the next (a debounce delays each key it holds), few
/// enough that a change queued behind them starts within a few reconciles.
pub fn hand_off_bound(workers: usize) -> usize {
    workers.saturating_mul(8).max(64)
}

/// The queue of one controller.
#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    /// Whether the applier's stream was made (once per queue).
    streaming: AtomicBool,
}

#[derive(Default)]
struct State {
    /// Keys not yet handed, one line per urgency, in [`Urgency::ALL`]'s
    /// order.
    held: [VecDeque<ParentKey>; 3],
    /// The urgency of each held key.
    urgency: HashMap<ParentKey, Urgency>,
    /// Keys handed to the applier and not yet started.
    handed: HashSet<ParentKey>,
    /// The applier's stream, waiting for a key or a free place.
    waker: Option<Waker>,
}

fn line(urgency: Urgency) -> usize {
    match urgency {
        Urgency::Changed => 0,
        Urgency::Behind => 1,
        Urgency::Confirm => 2,
    }
}

impl State {
    /// Takes `key` out of the held lines, if it is there.
    fn unhold(&mut self, key: &ParentKey) {
        if let Some(urgency) = self.urgency.remove(key) {
            self.held[line(urgency)].retain(|k| k != key);
        }
    }
}

impl Queue {
    fn state(&self) -> MutexGuard<'_, State> {
        // Every update leaves the state whole between statements that can
        // panic: a poisoned lock's state is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` with `urgency`, unless it already waits as urgently.
    pub fn add(&self, key: ParentKey, urgency: Urgency) {
        let mut state = self.state();
        if state.handed.contains(&key) {
            return;
        }
        match state.urgency.get(&key) {
            Some(&held) if held <= urgency => return,
            Some(_) => state.unhold(&key),
            None => {}
        }
        state.held[line(urgency)].push_back(key.clone());
        state.urgency.insert(key, urgency);
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// `key` was taken (its reconcile starts: it reads the parent from the
    /// cache then, so a copy still held is one reconcile too many) or
    /// dropped (its parent is gone).
    pub fn taken(&self, key: &ParentKey) {
        let mut state = self.state();
        let freed = state.handed.remove(key);
        state.unhold(key);
        let waker = if freed { state.waker.take() } else { None };
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// How many parents wait, here and in the applier.
    pub(crate) fn len(&self) -> usize {
        let state = self.state();
        state.urgency.len() + state.handed.len()
    }

    /// The next key for the applier, the most urgent first, while it holds
    /// fewer than `bound`.
    pub fn poll_next(&self, cx: &mut Context<'_>, bound: usize) -> Poll<ParentKey> {
        let mut state = self.state();
        if state.handed.len() < bound {
            for urgency in Urgency::ALL {
                if let Some(key) = state.held[line(urgency)].pop_front() {
                    state.urgency.remove(&key);
                    state.handed.insert(key.clone());
                    return Poll::Ready(key);
                }
            }
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Whether this is the first call: the applier's stream is made once.
    pub fn start_streaming(&self) -> bool {
        !self.streaming.swap(true, Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests;
