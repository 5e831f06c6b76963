//! Properties of the Hikawa hook over random UIDs, intervals, bounds and
//! Metacontroller timings (stale caches, early and late syncs), played on
//! the simulated Metacontroller of `common`.

use jiff::SignedDuration;
use metahook_seeds::hikawa::{self, Word};
use metahook_testkit::hikawa_sim::{Chaos, Sim, View, play, t0};
use proptest::prelude::*;
use serde_json::json;

fn uid() -> impl Strategy<Value = String> {
    "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
}

fn interval() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(500),
        1..=1_000i64,
        0..=hikawa::MAX_INTERVAL_MILLIS
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Every song ends with Zun Zun Zun Zun Doko Kiyoshi! (at its first
    /// Zun×4+Doko), or gives up at exactly the bound; and every state on
    /// the way, stale or fresh, gives the same bytes when asked twice.
    #[test]
    fn every_song_ends_in_kiyoshi_or_at_the_bound(
        uid in uid(),
        interval in interval(),
        max in prop::option::weighted(0.7, 1..=48u32),
        seed in any::<u64>(),
    ) {
        let mut sim = Sim::new(&uid, interval, max);
        sim.twice = true;
        let end = play(&mut sim, Some(Chaos::new(seed)));
        let words = sim.words();
        let first_kiyoshi = (5..=words.len()).find(|&k| hikawa::ready_to_kiyoshi(&words[..k]));
        match first_kiyoshi {
            Some(k) => {
                prop_assert_eq!(k, words.len(), "the song went on after Zun Zun Zun Zun Doko");
                prop_assert_eq!(sim.kiyoshis(), 1);
                prop_assert_eq!(&end["status"]["phase"], &json!("Kiyoshied"));
                let song = end["status"]["song"].as_str().unwrap_or_default();
                prop_assert!(song.ends_with("Zun Zun Zun Zun Doko Kiyoshi!"), "{}", song);
            }
            None => {
                let bound = max.unwrap_or(hikawa::DEFAULT_MAX_ZUNDOKOS) as usize;
                prop_assert_eq!(words.len(), bound);
                prop_assert_eq!(sim.kiyoshis(), 0);
                prop_assert_eq!(&end["status"]["phase"], &json!("GaveUp"));
            }
        }
        prop_assert_eq!(&end["status"]["numZundokosSaid"], &json!(words.len()));
        // The words are the documented function of the UID and n.
        for (i, w) in words.iter().enumerate() {
            prop_assert_eq!(*w, hikawa::word(&uid, i as u32 + 1));
        }
    }

    /// A state after the end stays the end, whenever Metacontroller asks.
    #[test]
    fn the_end_is_stable(uid in uid(), later_ms in 0..=86_400_000i64) {
        let mut sim = Sim::new(&uid, 100, Some(48));
        let end = play(&mut sim, None);
        let now = t0() + SignedDuration::from_hours(1) + SignedDuration::from_millis(later_ms);
        let (again, created) = sim.reconcile(View::Fresh, now);
        prop_assert!(!created);
        prop_assert_eq!(&again["children"], &end["children"]);
        prop_assert_eq!(&again["status"], &end["status"]);
    }

    /// The word function: a pure function of (uid, n), both words occur.
    #[test]
    fn word_is_a_function_of_uid_and_n(uid in uid(), n in 1..=10_000u32) {
        prop_assert_eq!(hikawa::word(&uid, n), hikawa::word(&uid.clone(), n));
        let words: Vec<Word> = (1..=64).map(|k| hikawa::word(&uid, k)).collect();
        prop_assert!(words.contains(&Word::Zun) && words.contains(&Word::Doko));
    }
}
