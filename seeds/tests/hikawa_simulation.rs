//! The Hikawa hook against a simulated Metacontroller on a fake clock
//! (`metahook_testkit::hikawa_sim::play`): every call is checked as it happens (one new child at
//! most, nothing removed or changed, `numZundokosSaid` is what was observed,
//! no word early, nothing after the Kiyoshi); these tests check how the
//! songs end.

use jiff::SignedDuration;
use metahook_seeds::hikawa::{self, Word};
use metahook_testkit::hikawa_sim::{Chaos, Sim, View, play, t0};
use serde_json::json;

/// The song ended at its first Zun Zun Zun Zun Doko, with one Kiyoshi.
fn assert_kiyoshied(sim: &Sim) {
    let words = sim.words();
    assert!(hikawa::ready_to_kiyoshi(&words), "{words:?}");
    for end in 5..words.len() {
        assert!(
            !hikawa::ready_to_kiyoshi(&words[..end]),
            "Zun Zun Zun Zun Doko already at word {end}, but the song went on"
        );
    }
    assert_eq!(sim.kiyoshis(), 1);
    let status = sim.status();
    assert_eq!(status["kiyoshied"], json!(true));
    assert_eq!(status["phase"], json!("Kiyoshied"));
    assert_eq!(status["numZundokosSaid"], json!(words.len()));
    let mut song: Vec<&str> = words.iter().map(|w| w.as_str()).collect();
    song.push("Kiyoshi!");
    assert_eq!(status["song"], json!(song.join(" ")));
}

#[test]
fn the_seed_hikawa_sings_until_kiyoshi() {
    // The article's manifest: intervalMillis 500, nothing else.
    let mut sim = Sim::new("7c1e4b2a-9d3f-4e6a-b5c8-2f0d1a3b4c2c", 500, None);
    play(&mut sim, None);
    assert_kiyoshied(&sim);
    // This UID's song is pinned by the fixtures: ten words, then Kiyoshi.
    assert_eq!(
        sim.status()["song"],
        json!("Zun Doko Zun Zun Doko Zun Zun Zun Zun Doko Kiyoshi!")
    );
    // On time: each word exactly an interval after the one before (the
    // simulated Metacontroller re-syncs exactly when asked).
    let mut at = t0();
    for said in &sim.said {
        at += SignedDuration::from_millis(500);
        assert_eq!(said.at, at, "{}", said.name);
    }
}

#[test]
fn with_v2_keys_the_song_is_the_same() {
    let uid = "7c1e4b2a-9d3f-4e6a-b5c8-2f0d1a3b4c2c";
    let mut v1 = Sim::new(uid, 500, None);
    let mut v2 = Sim::new(uid, 500, None);
    v2.v2_keys = true;
    let end_v1 = play(&mut v1, None);
    let end_v2 = play(&mut v2, None);
    assert_eq!(end_v1, end_v2);
    assert_eq!(v1.said, v2.said);
}

#[test]
fn stale_caches_and_odd_timing_never_make_a_word_early() {
    for seed in 0..12 {
        let uid = format!("0a1b2c3d-0000-4000-8000-{seed:012x}");
        let mut sim = Sim::new(&uid, 500, None);
        play(&mut sim, Some(Chaos::new(seed)));
        assert_kiyoshied(&sim);
    }
}

#[test]
fn an_interval_of_zero_still_says_one_word_per_call() {
    let mut sim = Sim::new("f00dface-0000-4000-8000-000000000001", 0, None);
    play(&mut sim, None);
    assert_kiyoshied(&sim);
    // One call per word, plus the one that sees the Kiyoshi.
    assert_eq!(sim.calls, sim.said.len() + 1);
}

#[test]
fn at_the_bound_the_song_gives_up_and_keeps_every_word() {
    // Find a UID whose first five words are not Zun Zun Zun Zun Doko.
    let uid = (0..)
        .map(|i| format!("9b8a7c6d-0000-4000-8000-{i:012x}"))
        .find(|uid| {
            let words: Vec<Word> = (1..=5).map(|n| hikawa::word(uid, n)).collect();
            !hikawa::ready_to_kiyoshi(&words)
        })
        .expect("some UID");
    let mut sim = Sim::new(&uid, 500, Some(5));
    let end = play(&mut sim, None);
    assert_eq!(sim.words().len(), 5);
    assert_eq!(sim.kiyoshis(), 0);
    assert_eq!(end["status"]["phase"], json!("GaveUp"));
    assert_eq!(end["status"]["kiyoshied"], json!(false));
    assert_eq!(end["children"].as_array().map(Vec::len), Some(5));
    // Later calls change nothing.
    let later = t0() + SignedDuration::from_hours(1);
    let (again, created) = sim.reconcile(View::Fresh, later);
    assert!(!created);
    assert_eq!(again["children"], end["children"]);
    assert!(again.get("resyncAfterSeconds").is_none());
}

#[test]
fn after_the_kiyoshi_nothing_more_is_said() {
    let mut sim = Sim::new("7c1e4b2a-9d3f-4e6a-b5c8-2f0d1a3b4c2c", 500, None);
    let end = play(&mut sim, None);
    for hours in [1, 24, 24 * 365] {
        let (again, created) = sim.reconcile(View::Fresh, t0() + SignedDuration::from_hours(hours));
        assert!(!created);
        assert_eq!(again["children"], end["children"]);
        assert_eq!(again["status"], end["status"]);
        assert!(again.get("resyncAfterSeconds").is_none());
    }
}
