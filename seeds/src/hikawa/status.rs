//! The Hikawa's status: how far the song has got, from the observed children.
//!
//! The status is a function of the observed children and the spec only (not
//! of `now`), so it changes exactly when a word appears.

use super::crds::{Hikawa, HikawaSpec, HikawaStatus, Phase};
use super::decide::{Next, Step};
use super::observed::Song;
use super::words::{KIYOSHI, Word};
use jiff::Timestamp;
use metahook_core::Parent;
use metahook_core::conditions::{self, condition_false, condition_true};

pub(super) fn status(
    parent: &Parent<Hikawa>,
    spec: &Result<&HikawaSpec, String>,
    song: &Song,
    words: &[Word],
    step: Step,
    now: Timestamp,
) -> HikawaStatus {
    let said = words.len();
    let mut text: Vec<&str> = words.iter().map(|w| w.as_str()).collect();
    if song.kiyoshi.is_some() {
        text.push(KIYOSHI);
    }
    let (phase, finished) = match step {
        Step::Kiyoshied => (
            Phase::Kiyoshied,
            condition_true("Finished", "Kiyoshied")
                .message(format!("Kiyoshi! after {}", zundokos(said))),
        ),
        Step::GaveUp => (
            Phase::GaveUp,
            condition_true("Finished", "GaveUp").message(format!(
                "gave up after {} (spec.maxZundokos) without Zun Zun Zun Zun Doko",
                zundokos(said)
            )),
        ),
        Step::Held => (
            Phase::Singing,
            condition_false("Finished", "InvalidSpec").message(format!(
                "{} said; nothing more is said while the spec is invalid",
                zundokos(said)
            )),
        ),
        Step::Due(next, due) => {
            let what = match next {
                Next::Zundoko(n) => format!("Zundoko {n}"),
                Next::Kiyoshi => "Zun Zun Zun Zun Doko, so Kiyoshi!".to_owned(),
            };
            (
                Phase::Singing,
                condition_false("Finished", "Singing")
                    .message(format!("{} said; {what} is due at {due}", zundokos(said))),
            )
        }
    };
    let spec_valid =
        crate::conditions::spec_valid("Hikawa", spec.as_ref().err().map(String::as_str));
    HikawaStatus {
        observed_generation: None,
        num_zundokos_said: u32::try_from(said).unwrap_or(u32::MAX),
        kiyoshied: song.kiyoshi.is_some(),
        song: text.join(" "),
        phase,
        conditions: conditions::build(
            &parent.conditions,
            vec![spec_valid, finished],
            parent.metadata.generation,
            now,
        )
        .into(),
    }
}

/// "1 Zundoko", "2 Zundokos".
fn zundokos(n: usize) -> String {
    if n == 1 {
        "1 Zundoko".to_owned()
    } else {
        format!("{n} Zundokos")
    }
}
