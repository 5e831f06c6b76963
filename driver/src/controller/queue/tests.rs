use super::*;
use crate::decide::model::ResolvedType;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::task::Wake;

fn key(name: &str) -> ParentKey {
    let hello = ResolvedType::new("fraim.co.jp", "v1", "Hello", "helloes", true);
    ParentKey::new_with(name, SharedType::of(&hello.api)).within("shop")
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Every key the queue hands out now, up to `bound` held by the applier.
fn drain(queue: &Queue, bound: usize) -> Vec<String> {
    let waker = Waker::from(Arc::new(Counting::default()));
    let mut cx = Context::from_waker(&waker);
    let mut out = Vec::new();
    while let Poll::Ready(key) = queue.poll_next(&mut cx, bound) {
        out.push(key.name);
    }
    out
}

#[test]
fn a_change_goes_first_then_the_parents_behind_then_the_rest_each_in_turn() {
    let queue = Queue::default();
    for name in ["c1", "c2"] {
        queue.add(key(name), Urgency::Confirm);
    }
    queue.add(key("b1"), Urgency::Behind);
    queue.add(key("c3"), Urgency::Confirm);
    queue.add(key("x1"), Urgency::Changed);
    queue.add(key("b2"), Urgency::Behind);
    assert_eq!(queue.len(), 6);
    assert_eq!(drain(&queue, 100), ["x1", "b1", "b2", "c1", "c2", "c3"]);
    assert_eq!(queue.len(), 6, "handed and not started still wait");
}

#[test]
fn the_applier_holds_at_most_the_bound_and_gets_the_next_as_one_starts() {
    let queue = Queue::default();
    for name in ["a", "b", "c"] {
        queue.add(key(name), Urgency::Confirm);
    }
    assert_eq!(drain(&queue, 2), ["a", "b"]);
    // A change now waits for a free place, not behind the held ones.
    queue.add(key("x"), Urgency::Changed);
    assert!(drain(&queue, 2).is_empty());
    queue.taken(&key("a"));
    assert_eq!(drain(&queue, 2), ["x"]);
    queue.taken(&key("b"));
    assert_eq!(drain(&queue, 2), ["c"]);
}

#[test]
fn a_waiting_key_is_sent_once_and_a_more_urgent_trigger_moves_it_up() {
    let queue = Queue::default();
    queue.add(key("a"), Urgency::Confirm);
    queue.add(key("b"), Urgency::Confirm);
    queue.add(key("b"), Urgency::Confirm);
    queue.add(key("a"), Urgency::Confirm);
    assert_eq!(queue.len(), 2);
    queue.add(key("b"), Urgency::Changed);
    // A less urgent trigger does not move it back.
    queue.add(key("b"), Urgency::Confirm);
    assert_eq!(drain(&queue, 1), ["b"]);
    // Handed: another trigger sends nothing until it starts.
    queue.add(key("b"), Urgency::Changed);
    assert_eq!(queue.len(), 2);
    queue.taken(&key("b"));
    assert_eq!(drain(&queue, 1), ["a"]);
    queue.taken(&key("a"));
    assert_eq!(queue.len(), 0);
}

#[test]
fn a_reconcile_that_starts_another_way_takes_its_held_key_too() {
    // A requeue the applier schedules itself starts the parent: it reads
    // the cache then, so the key still held here would be a second run.
    let queue = Queue::default();
    queue.add(key("a"), Urgency::Confirm);
    queue.add(key("b"), Urgency::Confirm);
    queue.taken(&key("a"));
    assert_eq!(queue.len(), 1);
    assert_eq!(drain(&queue, 10), ["b"]);
}

#[test]
fn the_applier_waiting_for_a_key_or_a_place_is_woken() {
    let queue = Queue::default();
    let counting = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&counting));
    let mut cx = Context::from_waker(&waker);
    assert!(queue.poll_next(&mut cx, 1).is_pending());
    queue.add(key("a"), Urgency::Confirm);
    assert_eq!(counting.0.load(Ordering::SeqCst), 1, "woken by a key");
    queue.add(key("b"), Urgency::Confirm);
    assert!(matches!(queue.poll_next(&mut cx, 1), Poll::Ready(k) if k.name == "a"));
    assert!(
        queue.poll_next(&mut cx, 1).is_pending(),
        "the bound is full"
    );
    queue.taken(&key("a"));
    assert_eq!(
        counting.0.load(Ordering::SeqCst),
        2,
        "woken by a free place"
    );
    assert!(matches!(queue.poll_next(&mut cx, 1), Poll::Ready(k) if k.name == "b"));
}
