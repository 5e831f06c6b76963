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
//! - the n-th word is [`word`]`(uid, n)`: pseudo-random but deterministic,
//!   so a call on a stale cache desires the very same child again.
//! - pacing: each child carries the time it was first desired in the
//!   [`SAID_AT`] annotation, carried over unchanged from then on; the next
//!   word is paced from the newest one observed. The hook never reads its own
//!   status back, so a stale parent status cannot make a word early.
//! - the bound: after `spec.maxZundokos` Zundokos without Zun×4+Doko the
//!   song gives up; nothing more is created and nothing is deleted.
//! - invalid spec: every observed child is held as it is, nothing new is
//!   said, and the status says why.
//!
//! The status is a function of the observed children and the spec only (not
//! of `now`), so it changes exactly when a word appears. The first word is
//! paced from `creationTimestamp`, which the API server truncates to the
//! second: it may come up to a second sooner after the real creation than an
//! interval. A child that lost its annotation is paced from its own
//! `creationTimestamp` plus one second (late rather than early), and that
//! time is written back as its annotation.

use crate::conditions::{self, Wanted};
use crate::objects::{Meta, Parent};
use crate::protocol::{SyncRequest, SyncResponse};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const GROUP: &str = "zundokokiyoshi.kaitoy.github.com";
pub const API_VERSION: &str = "zundokokiyoshi.kaitoy.github.com/v1beta1";
/// When a word was said (RFC 3339, sub-second precision), on every child.
pub const SAID_AT: &str = "zundokokiyoshi.kaitoy.github.com/said-at";
pub const KIYOSHI: &str = "Kiyoshi!";
pub const MAX_INTERVAL_MILLIS: i64 = 3_600_000;
pub const DEFAULT_MAX_ZUNDOKOS: u32 = 1000;
/// Keeps a request (every Zundoko, whole) well under the service's body
/// limit.
pub const MAX_MAX_ZUNDOKOS: u32 = 10_000;
/// Object names are DNS subdomains: at most 253 characters.
const MAX_NAME_LEN: usize = 253;
const ZUNDOKO_INFIX: &str = "-zundoko-";
const KIYOSHI_SUFFIX: &str = "-kiyoshi";

/// A Hikawa sings Zundokos until Kiyoshi.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "zundokokiyoshi.kaitoy.github.com",
    version = "v1beta1",
    kind = "Hikawa",
    derive = "PartialEq",
    singular = "hikawa",
    plural = "hikawas",
    category = "metahook",
    namespaced,
    status = "HikawaStatus",
    doc = "A Hikawa sings Zun and Doko at random, one Zundoko per word, until Zun Zun Zun Zun Doko; then it says Kiyoshi!",
    printcolumn(
        name = "Said",
        type_ = "integer",
        json_path = ".status.numZundokosSaid"
    ),
    printcolumn(name = "Kiyoshied", type_ = "boolean", json_path = ".status.kiyoshied"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HikawaSpec {
    /// Milliseconds between two words (0 to 3,600,000).
    #[schemars(range(min = 0, max = 3_600_000))]
    pub interval_millis: i64,
    /// How many Zundokos are said before the song gives up without a
    /// Kiyoshi (1 to 10,000).
    #[serde(default = "default_max_zundokos")]
    #[schemars(range(min = 1, max = 10_000))]
    pub max_zundokos: u32,
}

fn default_max_zundokos() -> u32 {
    DEFAULT_MAX_ZUNDOKOS
}

/// How far the song has got, from the observed children.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HikawaStatus {
    /// The `metadata.generation` this status describes; written by
    /// Metacontroller or the driver, never by the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Zundokos observed.
    #[serde(default)]
    pub num_zundokos_said: u32,
    /// Whether the Kiyoshi is observed.
    #[serde(default)]
    pub kiyoshied: bool,
    /// The song so far, e.g. `Zun Doko Zun Zun Zun Zun Doko Kiyoshi!`.
    #[serde(default)]
    pub song: String,
    /// `Singing`, `Kiyoshied` or `GaveUp`.
    #[serde(default)]
    pub phase: Phase,
    /// `SpecValid` and `Finished`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Still waiting for Zun Zun Zun Zun Doko.
    #[default]
    Singing,
    /// The Kiyoshi is observed; nothing more is said.
    Kiyoshied,
    /// `spec.maxZundokos` Zundokos were said without Zun×4+Doko.
    GaveUp,
}

/// One word of the song: "Zun" or "Doko".
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "zundokokiyoshi.kaitoy.github.com",
    version = "v1beta1",
    kind = "Zundoko",
    derive = "PartialEq",
    singular = "zundoko",
    plural = "zundokos",
    category = "metahook",
    namespaced,
    doc = "One word of a Hikawa's song: Zun or Doko.",
    printcolumn(name = "Say", type_ = "string", json_path = ".spec.say"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct ZundokoSpec {
    /// `Zun` or `Doko`.
    #[schemars(extend("enum" = ["Zun", "Doko"]))]
    pub say: String,
}

/// The end of the song: "Kiyoshi!".
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "zundokokiyoshi.kaitoy.github.com",
    version = "v1beta1",
    kind = "Kiyoshi",
    derive = "PartialEq",
    singular = "kiyoshi",
    plural = "kiyoshis",
    category = "metahook",
    namespaced,
    doc = "The end of a Hikawa's song: Kiyoshi!",
    printcolumn(name = "Say", type_ = "string", json_path = ".spec.say"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct KiyoshiSpec {
    /// `Kiyoshi!`.
    #[schemars(extend("enum" = ["Kiyoshi!"]))]
    pub say: String,
}

pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Hikawa::crd(), Zundoko::crd(), Kiyoshi::crd()]
}

/// The word pseudo-randomly chosen for a Zundoko.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Word {
    Zun,
    Doko,
}

impl Word {
    pub fn as_str(self) -> &'static str {
        match self {
            Word::Zun => "Zun",
            Word::Doko => "Doko",
        }
    }
}

/// The n-th word (n ≥ 1) a Hikawa with this UID sings.
///
/// FNV-1a (64-bit) over the UID's bytes, a `0xff` separator (no UTF-8 text
/// contains it, so `("a", 12)` and `("a1", 2)` cannot collide by
/// concatenation) and `n` as 4 little-endian bytes; then SplitMix64's
/// finaliser, because FNV-1a's high bits barely depend on the last bytes.
/// The top bit picks the word: 0 is Zun, 1 is Doko, each half the time, as
/// in the article. A pure function of `(uid, n)`: the same UID always sings
/// the same song, whatever order the calls come in. Changing it changes every
/// running song; the unit tests pin it.
pub fn word(uid: &str, n: u32) -> Word {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = FNV_OFFSET;
    for byte in uid.bytes().chain([0xff]).chain(n.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    if splitmix64_mix(hash) >> 63 == 0 {
        Word::Zun
    } else {
        Word::Doko
    }
}

/// The output function of SplitMix64 (Steele, Lea, Flood 2014).
fn splitmix64_mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Whether a song (in order) ends the way that earns a Kiyoshi.
pub fn ready_to_kiyoshi(song: &[Word]) -> bool {
    song.ends_with(&[Word::Zun, Word::Zun, Word::Zun, Word::Zun, Word::Doko])
}

/// The Zundoko name of the n-th word.
pub fn zundoko_name(hikawa: &str, n: u32) -> String {
    format!("{hikawa}{ZUNDOKO_INFIX}{n:03}")
}

pub fn kiyoshi_name(hikawa: &str) -> String {
    format!("{hikawa}{KIYOSHI_SUFFIX}")
}

/// `n` if `name` is exactly `zundoko_name(hikawa, n)` for some n ≥ 1 (so two
/// names can never mean the same word).
fn zundoko_number(hikawa: &str, name: &str) -> Option<u32> {
    let digits = name.strip_prefix(hikawa)?.strip_prefix(ZUNDOKO_INFIX)?;
    let n: u32 = digits.parse().ok()?;
    (n >= 1 && format!("{n:03}") == digits).then_some(n)
}

/// What the hook reads of the parent's current status: only the conditions,
/// to carry their transition times over. Reading no more means a status it
/// cannot parse costs nothing else.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PreviousStatus {
    pub conditions: Vec<Condition>,
}

/// An observed Zundoko or Kiyoshi, as far as the hook reads it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedWord {
    pub api_version: String,
    pub kind: String,
    pub metadata: Meta,
    pub spec: ObservedSay,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedSay {
    pub say: Option<String>,
}

impl ObservedWord {
    fn is(&self, kind: &str) -> bool {
        self.kind == kind && self.api_version == API_VERSION
    }

    /// When this word was said: its annotation; failing that, one second
    /// after its `creationTimestamp` (which is truncated to the second, so
    /// this errs late, never early).
    pub fn said_at(&self) -> Option<Timestamp> {
        self.metadata
            .annotations
            .get(SAID_AT)
            .and_then(|s| s.parse().ok())
            .or_else(|| {
                let created = self.metadata.creation_timestamp.as_ref()?.0;
                created.checked_add(SignedDuration::from_secs(1)).ok()
            })
    }

    /// The annotation the desired child carries: the observed one verbatim,
    /// or (if it was lost) the time it is paced from, so it stays put.
    fn said_at_annotation(&self) -> Option<String> {
        self.metadata
            .annotations
            .get(SAID_AT)
            .cloned()
            .or_else(|| self.said_at().map(|t| t.to_string()))
    }
}

/// A desired child: one of the two kinds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Child {
    Zundoko(Zundoko),
    Kiyoshi(Kiyoshi),
}

pub type Request = SyncRequest<Parent<HikawaSpec, PreviousStatus>, ObservedWord>;
pub type Response = SyncResponse<HikawaStatus, Child>;

/// The observed children, sorted out.
struct Song<'a> {
    /// This Hikawa's Zundokos by number: the song, in order.
    zundokos: BTreeMap<u32, &'a ObservedWord>,
    /// This Hikawa's Kiyoshi.
    kiyoshi: Option<&'a ObservedWord>,
    /// Children that are not named like this Hikawa's (adopted by label):
    /// held as they are, not part of the song.
    others: Vec<&'a ObservedWord>,
}

impl<'a> Song<'a> {
    fn read(req: &'a Request) -> Self {
        let hikawa = req.parent.metadata.name.as_str();
        let kiyoshi_name = kiyoshi_name(hikawa);
        let mut song = Song {
            zundokos: BTreeMap::new(),
            kiyoshi: None,
            others: Vec::new(),
        };
        for child in &req.children {
            let name = child.metadata.name.as_str();
            match zundoko_number(hikawa, name) {
                Some(n) if child.is("Zundoko") => {
                    song.zundokos.insert(n, child);
                }
                _ if child.is("Kiyoshi") && name == kiyoshi_name => song.kiyoshi = Some(child),
                _ => song.others.push(child),
            }
        }
        song.others
            .sort_by(|a, b| (&a.kind, &a.metadata.name).cmp(&(&b.kind, &b.metadata.name)));
        song
    }

    fn words(&self, uid: &str) -> Vec<Word> {
        self.zundokos.keys().map(|&n| word(uid, n)).collect()
    }

    /// The newest said-at of any observed child.
    fn newest(&self) -> Option<Timestamp> {
        self.zundokos
            .values()
            .chain(self.kiyoshi.iter())
            .chain(self.others.iter())
            .filter_map(|c| c.said_at())
            .max()
    }
}

/// What comes next in a song that is not over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Zundoko(u32),
    Kiyoshi,
}

/// Where the song stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Kiyoshied,
    GaveUp,
    /// The spec is invalid: nothing more is said until it is fixed.
    Held,
    Due(Next, Timestamp),
}

pub fn sync(req: &Request, now: Timestamp) -> Response {
    let parent = &req.parent;
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

    SyncResponse {
        status: status(parent, &spec, &song, &words, step, now),
        children,
        resync_after_seconds,
        finalized: None,
    }
}

/// Positive durations as fractional seconds; `None` otherwise (Metacontroller
/// ignores a resync of zero, and the child's appearance re-syncs anyway).
fn seconds(d: SignedDuration) -> Option<f64> {
    (d > SignedDuration::ZERO).then(|| d.as_secs_f64())
}

fn step(
    parent: &Parent<HikawaSpec, PreviousStatus>,
    spec: &Result<&HikawaSpec, String>,
    song: &Song,
    words: &[Word],
) -> Step {
    if song.kiyoshi.is_some() {
        return Step::Kiyoshied;
    }
    let Ok(spec) = spec else {
        return Step::Held;
    };
    // After the highest number, so a gap (a Zundoko deleted by hand) never
    // makes two children share a name; past u32::MAX there is no next name.
    let next_number = match song.zundokos.keys().next_back() {
        Some(n) => n.checked_add(1),
        None => Some(1),
    };
    let next = if ready_to_kiyoshi(words) {
        Next::Kiyoshi
    } else if let Some(n) = next_number.filter(|_| words.len() < spec.max_zundokos as usize) {
        Next::Zundoko(n)
    } else {
        return Step::GaveUp;
    };
    let since = song
        .newest()
        .or_else(|| parent.metadata.creation_timestamp.as_ref().map(|t| t.0));
    let due = match since {
        // An overflowing time (a said-at in the year 9999) is never due.
        Some(t) => t
            .checked_add(SignedDuration::from_millis(spec.interval_millis))
            .unwrap_or(Timestamp::MAX),
        None => Timestamp::MIN,
    };
    Step::Due(next, due)
}

/// The spec, if it is valid; otherwise every reason it is not, in one line.
fn valid_spec(parent: &Parent<HikawaSpec, PreviousStatus>) -> Result<&HikawaSpec, String> {
    let spec = parent.spec.as_ref().map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    if !(0..=MAX_INTERVAL_MILLIS).contains(&spec.interval_millis) {
        problems.push(format!(
            "intervalMillis: {} is not between 0 and {MAX_INTERVAL_MILLIS}",
            spec.interval_millis
        ));
    }
    if !(1..=MAX_MAX_ZUNDOKOS).contains(&spec.max_zundokos) {
        problems.push(format!(
            "maxZundokos: {} is not between 1 and {MAX_MAX_ZUNDOKOS}",
            spec.max_zundokos
        ));
    }
    let longest = zundoko_name(&parent.metadata.name, spec.max_zundokos.max(1));
    if longest.len() > MAX_NAME_LEN {
        problems.push(format!(
            "metadata.name: too long; Zundoko names such as {longest:?} would exceed {MAX_NAME_LEN} characters"
        ));
    }
    if problems.is_empty() {
        Ok(spec)
    } else {
        Err(problems.join("; "))
    }
}

fn status(
    parent: &Parent<HikawaSpec, PreviousStatus>,
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
            Wanted::new(
                "Finished",
                true,
                "Kiyoshied",
                format!("Kiyoshi! after {}", zundokos(said)),
            ),
        ),
        Step::GaveUp => (
            Phase::GaveUp,
            Wanted::new(
                "Finished",
                true,
                "GaveUp",
                format!(
                    "gave up after {} (spec.maxZundokos) without Zun Zun Zun Zun Doko",
                    zundokos(said)
                ),
            ),
        ),
        Step::Held => (
            Phase::Singing,
            Wanted::new(
                "Finished",
                false,
                "InvalidSpec",
                format!(
                    "{} said; nothing more is said while the spec is invalid",
                    zundokos(said)
                ),
            ),
        ),
        Step::Due(next, due) => {
            let what = match next {
                Next::Zundoko(n) => format!("Zundoko {n}"),
                Next::Kiyoshi => "Zun Zun Zun Zun Doko, so Kiyoshi!".to_owned(),
            };
            (
                Phase::Singing,
                Wanted::new(
                    "Finished",
                    false,
                    "Singing",
                    format!("{} said; {what} is due at {due}", zundokos(said)),
                ),
            )
        }
    };
    let spec_valid = match spec {
        Ok(_) => Wanted::new("SpecValid", true, "Valid", "the spec is valid".to_owned()),
        Err(why) => Wanted::new(
            "SpecValid",
            false,
            "InvalidSpec",
            format!("Invalid Hikawa spec: {why}"),
        ),
    };
    let previous = parent
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    HikawaStatus {
        observed_generation: None,
        num_zundokos_said: u32::try_from(said).unwrap_or(u32::MAX),
        kiyoshied: song.kiyoshi.is_some(),
        song: text.join(" "),
        phase,
        conditions: conditions::build(
            previous,
            vec![spec_valid, finished],
            parent.metadata.generation,
            now,
        ),
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

fn meta(
    parent: &Parent<HikawaSpec, PreviousStatus>,
    name: String,
    said_at: Option<String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: parent.metadata.namespace.clone(),
        annotations: said_at.map(|t| BTreeMap::from([(SAID_AT.to_owned(), t)])),
        ..ObjectMeta::default()
    }
}

fn zundoko(
    parent: &Parent<HikawaSpec, PreviousStatus>,
    n: u32,
    say: &str,
    said_at: Option<String>,
) -> Child {
    Child::Zundoko(Zundoko {
        metadata: meta(parent, zundoko_name(&parent.metadata.name, n), said_at),
        spec: ZundokoSpec {
            say: say.to_owned(),
        },
    })
}

fn kiyoshi(parent: &Parent<HikawaSpec, PreviousStatus>, said_at: Option<String>) -> Child {
    Child::Kiyoshi(Kiyoshi {
        metadata: meta(parent, kiyoshi_name(&parent.metadata.name), said_at),
        spec: KiyoshiSpec {
            say: KIYOSHI.to_owned(),
        },
    })
}

/// A child that is not part of this Hikawa's song, desired exactly as
/// observed (its word and said-at), so applying it changes nothing.
fn held(parent: &Parent<HikawaSpec, PreviousStatus>, observed: &ObservedWord) -> Child {
    let metadata = meta(
        parent,
        observed.metadata.name.clone(),
        observed.metadata.annotations.get(SAID_AT).cloned(),
    );
    let say = observed.spec.say.clone().unwrap_or_default();
    if observed.is("Kiyoshi") {
        Child::Kiyoshi(Kiyoshi {
            metadata,
            spec: KiyoshiSpec { say },
        })
    } else {
        Child::Zundoko(Zundoko {
            metadata,
            spec: ZundokoSpec { say },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn request(name: &str, spec: Value, zundokos: &[(u32, &str)]) -> Request {
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
        serde_json::from_value(json!({
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
        }))
        .unwrap()
    }

    fn condition<'a>(response: &'a Response, type_: &str) -> &'a Condition {
        response
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap()
    }

    #[test]
    fn the_seed_manifest_applies_unchanged() {
        let hikawa: Hikawa = serde_json::from_value(json!({
            "apiVersion": "zundokokiyoshi.kaitoy.github.com/v1beta1",
            "kind": "Hikawa",
            "metadata": {"labels": {"controller-tools.k8s.io": "1.0"}, "name": "hikawa-sample"},
            "spec": {"intervalMillis": 500}
        }))
        .unwrap();
        assert_eq!(hikawa.spec.interval_millis, 500);
        assert_eq!(hikawa.spec.max_zundokos, DEFAULT_MAX_ZUNDOKOS);
    }

    #[test]
    fn crds_carry_the_seed_names_and_the_bounds() {
        let crds = crds();
        let names: Vec<_> = crds.iter().map(|c| c.spec.names.plural.as_str()).collect();
        assert_eq!(names, ["hikawas", "zundokos", "kiyoshis"]);
        for crd in &crds {
            assert_eq!(crd.spec.group, GROUP);
            assert_eq!(crd.spec.scope, "Namespaced");
            assert_eq!(crd.spec.versions[0].name, "v1beta1");
        }
        let hikawa = &crds[0].spec.versions[0];
        assert!(
            hikawa
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
        );
        let columns: Vec<_> = hikawa
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(columns, ["Said", "Kiyoshied", "Age"]);
        let schema = serde_json::to_value(&hikawa.schema).unwrap();
        let root = &schema["openAPIV3Schema"]["properties"];
        let interval = &root["spec"]["properties"]["intervalMillis"];
        assert_eq!(interval["minimum"], json!(0.0));
        assert_eq!(interval["maximum"], json!(3_600_000.0));
        assert_eq!(root["spec"]["required"], json!(["intervalMillis"]));
        assert_eq!(
            root["spec"]["properties"]["maxZundokos"]["default"],
            json!(1000)
        );
        // Metacontroller writes it; a structural schema would prune it.
        assert_eq!(
            root["status"]["properties"]["observedGeneration"]["type"],
            "integer"
        );
        for (crd, words) in [
            (&crds[1], json!(["Zun", "Doko"])),
            (&crds[2], json!(["Kiyoshi!"])),
        ] {
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
            let say = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["say"];
            assert_eq!(say["enum"], words);
        }
    }

    #[test]
    fn an_invalid_spec_holds_the_song_and_says_why() {
        let req = request(
            "h",
            json!({"intervalMillis": -1, "maxZundokos": 0}),
            &[(1, "2026-11-22T02:00:01Z")],
        );
        let resp = sync(&req, at("2026-11-22T03:00:00Z"));
        assert_eq!(resp.children.len(), 1);
        assert_eq!(resp.resync_after_seconds, None);
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
        assert_eq!(resp.status.num_zundokos_said, 1);
    }

    #[test]
    fn an_unreadable_spec_names_the_field() {
        let req = request("h", json!({"intervalMillis": "fast"}), &[]);
        let resp = sync(&req, at("2026-11-22T03:00:00Z"));
        assert!(resp.children.is_empty());
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
        let ok = sync(
            &request(&long, json!({"intervalMillis": 0, "maxZundokos": 999}), &[]),
            at("2026-11-22T03:00:00Z"),
        );
        assert_eq!(ok.children.len(), 1);
        let refused = sync(
            &request(
                &long,
                json!({"intervalMillis": 0, "maxZundokos": 1000}),
                &[],
            ),
            at("2026-11-22T03:00:00Z"),
        );
        assert!(refused.children.is_empty());
        assert_eq!(condition(&refused, "SpecValid").status, "False");
    }

    #[test]
    fn the_next_word_waits_for_the_newest_said_at_and_resyncs_in_fractions() {
        let req = request(
            "h",
            json!({"intervalMillis": 1500}),
            &[(1, "2026-11-22T02:59:57Z"), (2, "2026-11-22T02:59:59.25Z")],
        );
        let early = sync(&req, at("2026-11-22T03:00:00Z"));
        assert_eq!(early.children.len(), 2);
        assert_eq!(early.resync_after_seconds, Some(0.75));
        let due = sync(&req, at("2026-11-22T03:00:00.75Z"));
        assert_eq!(due.children.len(), 3);
        assert_eq!(due.resync_after_seconds, Some(1.5));
        // Time moves nothing in the status but the stamps of conditions
        // first set: it is the observed song.
        let text = |r: &Response| {
            let messages: Vec<String> = r
                .status
                .conditions
                .iter()
                .map(|c| c.message.clone())
                .collect();
            (r.status.song.clone(), r.status.phase, messages)
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
        let resp = sync(&req, at("2026-11-22T03:00:00Z"));
        let names: Vec<_> = resp
            .children
            .iter()
            .map(|c| match c {
                Child::Zundoko(z) => z.metadata.name.clone().unwrap(),
                Child::Kiyoshi(k) => k.metadata.name.clone().unwrap(),
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
        let resp = sync(&req, at("2026-11-22T03:00:00Z"));
        assert_eq!(resp.children.len(), 1);
        assert_eq!(resp.status.phase, Phase::GaveUp);
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
        let resp = sync(&req, at("2026-11-22T03:00:00Z"));
        // Every word held, no 1001st Zundoko (a Kiyoshi only if the
        // thousandth word completes Zun Zun Zun Zun Doko).
        let words: Vec<Word> = (1..=DEFAULT_MAX_ZUNDOKOS)
            .map(|n| word("uid-1", n))
            .collect();
        let kiyoshi = usize::from(ready_to_kiyoshi(&words));
        assert_eq!(resp.children.len(), DEFAULT_MAX_ZUNDOKOS as usize + kiyoshi);
        assert_eq!(resp.status.num_zundokos_said, DEFAULT_MAX_ZUNDOKOS);
        assert_eq!(resp.status.phase == Phase::GaveUp, kiyoshi == 0);
    }

    #[test]
    fn word_is_pinned() {
        // Changing `word` changes every running song: these must not move.
        let uid = "5b1c2d3e-4f50-4a61-8b72-9c83d4e5f601";
        let song: String = (1..=16)
            .map(|n| match word(uid, n) {
                Word::Zun => 'Z',
                Word::Doko => 'D',
            })
            .collect();
        assert_eq!(song, "DDZDDDDDDDDZDDZZ");
    }

    #[test]
    fn word_is_about_half_zun() {
        let zuns = (1..=10_000)
            .filter(|&n| word("0b3a6f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", n) == Word::Zun)
            .count();
        assert!((4_800..=5_200).contains(&zuns), "{zuns} Zuns in 10,000");
    }

    #[test]
    fn word_depends_on_the_uid() {
        let a: Vec<Word> = (1..=64).map(|n| word("a", n)).collect();
        let b: Vec<Word> = (1..=64).map(|n| word("b", n)).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn kiyoshi_needs_exactly_zun_zun_zun_zun_doko_at_the_end() {
        use Word::{Doko as D, Zun as Z};
        assert!(ready_to_kiyoshi(&[Z, Z, Z, Z, D]));
        assert!(ready_to_kiyoshi(&[D, Z, Z, Z, Z, Z, D]));
        assert!(!ready_to_kiyoshi(&[Z, Z, Z, D]));
        assert!(!ready_to_kiyoshi(&[Z, Z, Z, Z, D, Z]));
        assert!(!ready_to_kiyoshi(&[]));
    }

    #[test]
    fn only_canonical_zundoko_names_are_numbered() {
        assert_eq!(zundoko_number("h", "h-zundoko-001"), Some(1));
        assert_eq!(zundoko_number("h", "h-zundoko-1234"), Some(1234));
        assert_eq!(zundoko_number("h", "h-zundoko-1"), None);
        assert_eq!(zundoko_number("h", "h-zundoko-0001"), None);
        assert_eq!(zundoko_number("h", "h-zundoko-000"), None);
        assert_eq!(zundoko_number("h", "h-zundoko-+01"), None);
        assert_eq!(zundoko_number("h", "hh-zundoko-001"), None);
        assert_eq!(
            zundoko_number("h-zundoko", "h-zundoko-zundoko-002"),
            Some(2)
        );
        assert_eq!(zundoko_name("h", 7), "h-zundoko-007");
    }
}
