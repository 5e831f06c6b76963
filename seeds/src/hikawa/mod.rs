//! The Hikawa controller (from the Kubebuilder Zundoko operator article): a
//! `Hikawa` sings "Zun" and "Doko" at random, one `Zundoko` child per word,
//! until it has sung Zun, Zun, Zun, Zun, Doko; then it says "Kiyoshi!" with
//! one `Kiyoshi` child and stops.
//!
//! - sync: return every observed word as it was sung, and at most one new
//!   one, only once `spec.intervalMillis` has passed since the newest word
//!   (since the Hikawa's `creationTimestamp` for the first). Zundokos are
//!   named `<hikawa>-zundoko-001`, `-002`, … (after the highest number
//!   observed); the Kiyoshi `<hikawa>-kiyoshi`. A word edited by hand is put
//!   back (it is `word(uid, n)`); a child not named like that (adopted by the
//!   `controller-uid` label) is held exactly as observed and is not part of
//!   the song.
//! - the bound: after `spec.maxZundokos` Zundokos without Zun×4+Doko the
//!   song gives up; nothing more is created and nothing is deleted.
//! - invalid spec: every observed child is held as it is, nothing new is
//!   said, and the status says why.
//!
//! Where each piece is:
//! - `crds.rs`: the Hikawa, Zundoko and Kiyoshi CRDs, and the spec's bounds
//! - `words.rs`: the n-th word, [`word`]`(uid, n)`, and [`ready_to_kiyoshi`]
//! - `names.rs`: the children's names, and a Zundoko's number read back
//! - `observed.rs`: what the hook reads of a request, sorted into the song
//! - `pacing.rs`: when the next word is due, from the [`SAID_AT`] annotations
//! - `decide.rs`: whether the spec is valid; what comes next, or why nothing
//! - `status.rs`: the status, from the observed song
//! - `desired.rs`: the children returned
//! - here: [`sync`], which puts them together

mod crds;
mod decide;
mod desired;
mod names;
mod observed;
mod pacing;
mod status;
mod words;

pub use crds::{
    API_VERSION, DEFAULT_MAX_ZUNDOKOS, GROUP, Hikawa, HikawaSpec, HikawaStatus, Kiyoshi,
    KiyoshiSpec, MAX_INTERVAL_MILLIS, MAX_MAX_ZUNDOKOS, Phase, Zundoko, ZundokoSpec, crds,
};
pub use desired::Child;
pub use names::{kiyoshi_name, zundoko_name};
pub use observed::{ObservedSay, ObservedWord, Request, SAID_AT};
pub use words::{KIYOSHI, Word, ready_to_kiyoshi, word};

use decide::{Next, Step, checked_spec, step, valid_spec};
use desired::{held, kiyoshi, zundoko};
use jiff::SignedDuration;
use metahook_core::admission::{Admission, Verdict};
use metahook_core::{Answer, Controller};
use observed::Song;
use pacing::seconds;
use status::status;

/// The Hikawa controller, declared.
pub fn controller() -> Controller {
    Controller::composite::<Hikawa>("hikawa")
        .revision(env!("CARGO_PKG_VERSION"))
        .sync(sync)
        .validate(validate)
        .crd_of::<Zundoko>()
        .crd_of::<Kiyoshi>()
        .build()
}

/// The `validate` hook: the API server refuses a Hikawa whose spec `sync`
/// would report invalid, for the same reasons.
pub fn validate(admission: &Admission<Hikawa>) -> Verdict {
    crate::reading::verdict(admission.object.as_ref().map(checked_spec))
}

pub fn sync(req: &Request) -> Answer<HikawaStatus> {
    let parent = &req.parent;
    let now = req.now;
    let uid = parent.metadata.uid.as_deref().unwrap_or_default();
    let song = Song::read(req);
    let words = song.words(uid);
    let spec = valid_spec(parent);
    let step = step(parent, &spec, &song, &words);

    let mut children: Vec<Child> = song
        .zundokos
        .iter()
        .map(|(&n, observed)| {
            zundoko(
                parent,
                n,
                word(uid, n).as_str(),
                observed.said_at_annotation(),
            )
        })
        .chain(song.others.iter().map(|o| held(parent, o)))
        .chain(
            song.kiyoshi
                .map(|o| kiyoshi(parent, o.said_at_annotation())),
        )
        .collect();
    let mut resync_after_seconds = None;
    if let (Step::Due(next, due), Ok(spec)) = (step, &spec) {
        if now >= due {
            let said_at = Some(now.to_string());
            children.push(match next {
                Next::Zundoko(n) => zundoko(parent, n, word(uid, n).as_str(), said_at),
                Next::Kiyoshi => kiyoshi(parent, said_at),
            });
            // The word after this one is due an interval from now; after
            // the Kiyoshi nothing is.
            if next != Next::Kiyoshi {
                resync_after_seconds = seconds(SignedDuration::from_millis(spec.interval_millis));
            }
        } else {
            resync_after_seconds = seconds(due.duration_since(now));
        }
    }

    let answer = Answer::new(status(parent, &spec, &song, &words, step, now)).children(children);
    match resync_after_seconds {
        Some(seconds) => answer.resync_after_seconds(seconds),
        None => answer,
    }
}

#[cfg(test)]
mod tests {
    use super::names::{MAX_NAME_LEN, ZUNDOKO_INFIX};
    use super::*;
    use jiff::Timestamp;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use serde_json::{Value, json};

    type Response = Answer<HikawaStatus>;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// The hook on `request` at `now`.
    fn sync_at(request: &Value, now: &str) -> Response {
        let body = serde_json::to_vec(request).unwrap();
        sync(&Request::from_json(&body, at(now)).unwrap())
    }

    fn request(name: &str, spec: Value, zundokos: &[(u32, &str)]) -> Value {
        let children: serde_json::Map<String, Value> = zundokos
            .iter()
            .map(|(n, said_at)| {
                let name = zundoko_name(name, *n);
                let child = json!({
                    "apiVersion": API_VERSION, "kind": "Zundoko",
                    "metadata": {"name": name, "namespace": "default",
                                 "annotations": {SAID_AT: said_at}},
                    "spec": {"say": word("uid-1", *n).as_str()}
                });
                (name, child)
            })
            .collect();
        json!({
            "parent": {
                "apiVersion": API_VERSION, "kind": "Hikawa",
                "metadata": {"name": name, "namespace": "default", "uid": "uid-1",
                             "generation": 2, "creationTimestamp": "2026-11-22T02:00:00Z"},
                "spec": spec
            },
            "children": {
                format!("Zundoko.{API_VERSION}"): children,
                format!("Kiyoshi.{API_VERSION}"): {}
            }
        })
    }

    fn condition<'a>(response: &'a Response, type_: &str) -> &'a Condition {
        response
            .status()
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap()
    }

    #[test]
    fn an_invalid_spec_holds_the_song_and_says_why() {
        let req = request(
            "h",
            json!({"intervalMillis": -1, "maxZundokos": 0}),
            &[(1, "2026-11-22T02:00:01Z")],
        );
        let resp = sync_at(&req, "2026-11-22T03:00:00Z");
        assert_eq!(resp.desired().len(), 1);
        assert_eq!(resp.resync_seconds(), None);
        let valid = condition(&resp, "SpecValid");
        assert_eq!(valid.status, "False");
        assert!(
            valid.message.contains("intervalMillis: -1"),
            "{}",
            valid.message
        );
        assert!(
            valid.message.contains("maxZundokos: 0"),
            "{}",
            valid.message
        );
        assert_eq!(condition(&resp, "Finished").reason, "InvalidSpec");
        assert_eq!(resp.status().num_zundokos_said, 1);
    }

    #[test]
    fn an_unreadable_spec_names_the_field() {
        let req = request("h", json!({"intervalMillis": "fast"}), &[]);
        let resp = sync_at(&req, "2026-11-22T03:00:00Z");
        assert!(resp.desired().is_empty());
        let valid = condition(&resp, "SpecValid");
        assert!(
            valid.message.contains("spec.intervalMillis"),
            "{}",
            valid.message
        );
    }

    #[test]
    fn a_name_too_long_for_its_zundokos_is_refused() {
        let long = "h".repeat(MAX_NAME_LEN - ZUNDOKO_INFIX.len() - 3);
        let ok = sync_at(
            &request(&long, json!({"intervalMillis": 0, "maxZundokos": 999}), &[]),
            "2026-11-22T03:00:00Z",
        );
        assert_eq!(ok.desired().len(), 1);
        let refused = sync_at(
            &request(
                &long,
                json!({"intervalMillis": 0, "maxZundokos": 1000}),
                &[],
            ),
            "2026-11-22T03:00:00Z",
        );
        assert!(refused.desired().is_empty());
        assert_eq!(condition(&refused, "SpecValid").status, "False");
    }

    #[test]
    fn the_next_word_waits_for_the_newest_said_at_and_resyncs_in_fractions() {
        let req = request(
            "h",
            json!({"intervalMillis": 1500}),
            &[(1, "2026-11-22T02:59:57Z"), (2, "2026-11-22T02:59:59.25Z")],
        );
        let early = sync_at(&req, "2026-11-22T03:00:00Z");
        assert_eq!(early.desired().len(), 2);
        assert_eq!(early.resync_seconds(), Some(0.75));
        let due = sync_at(&req, "2026-11-22T03:00:00.75Z");
        assert_eq!(due.desired().len(), 3);
        assert_eq!(due.resync_seconds(), Some(1.5));
        // Time moves nothing in the status but the stamps of conditions
        // first set: it is the observed song.
        let text = |r: &Response| {
            let messages: Vec<String> = r
                .status()
                .conditions
                .iter()
                .map(|c| c.message.clone())
                .collect();
            (r.status().song.clone(), r.status().phase, messages)
        };
        assert_eq!(text(&early), text(&due));
    }

    #[test]
    fn a_gap_never_reuses_a_name() {
        let req = request(
            "h",
            json!({"intervalMillis": 0}),
            &[(1, "2026-11-22T02:59:57Z"), (3, "2026-11-22T02:59:58Z")],
        );
        let resp = sync_at(&req, "2026-11-22T03:00:00Z");
        let names: Vec<String> = resp
            .desired()
            .iter()
            .map(|c| {
                let child: Value = serde_json::from_str(c).unwrap();
                child["metadata"]["name"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(names, ["h-zundoko-001", "h-zundoko-003", "h-zundoko-004"]);
    }

    #[test]
    fn the_highest_possible_number_gives_up_instead_of_overflowing() {
        let req = request(
            "h",
            json!({"intervalMillis": 0}),
            &[(u32::MAX, "2026-11-22T02:59:57Z")],
        );
        let resp = sync_at(&req, "2026-11-22T03:00:00Z");
        assert_eq!(resp.desired().len(), 1);
        assert_eq!(resp.status().phase, Phase::GaveUp);
    }

    #[test]
    fn a_thousand_zundokos_are_the_default_bound() {
        let times: Vec<(u32, String)> = (1..=DEFAULT_MAX_ZUNDOKOS)
            .map(|n| {
                (
                    n,
                    format!("2026-11-22T02:{:02}:{:02}Z", n / 60 % 60, n % 60),
                )
            })
            .collect();
        let refs: Vec<(u32, &str)> = times.iter().map(|(n, t)| (*n, t.as_str())).collect();
        let req = request("h", json!({"intervalMillis": 500}), &refs);
        let resp = sync_at(&req, "2026-11-22T03:00:00Z");
        // Every word held, no 1001st Zundoko (a Kiyoshi only if the
        // thousandth word completes Zun Zun Zun Zun Doko).
        let words: Vec<Word> = (1..=DEFAULT_MAX_ZUNDOKOS)
            .map(|n| word("uid-1", n))
            .collect();
        let kiyoshi = usize::from(ready_to_kiyoshi(&words));
        assert_eq!(
            resp.desired().len(),
            DEFAULT_MAX_ZUNDOKOS as usize + kiyoshi
        );
        assert_eq!(resp.status().num_zundokos_said, DEFAULT_MAX_ZUNDOKOS);
        assert_eq!(resp.status().phase == Phase::GaveUp, kiyoshi == 0);
    }
}
