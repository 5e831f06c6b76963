//! The words of the song. The n-th word is [`word`]`(uid, n)`:
//! pseudo-random but deterministic, so a call on a stale cache desires the
//! very same child again. [`ready_to_kiyoshi`] says when the song has earned
//! its [`KIYOSHI`].

pub const KIYOSHI: &str = "Kiyoshi!";

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
