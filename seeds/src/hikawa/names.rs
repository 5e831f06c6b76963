//! The children's names: the n-th Zundoko is `<hikawa>-zundoko-001`,
//! `-002`, …, the Kiyoshi `<hikawa>-kiyoshi`; and the number read back from
//! a Zundoko's name.

/// Object names are DNS subdomains: at most 253 characters.
pub(super) const MAX_NAME_LEN: usize = 253;
pub(super) const ZUNDOKO_INFIX: &str = "-zundoko-";
const KIYOSHI_SUFFIX: &str = "-kiyoshi";

/// The Zundoko name of the n-th word.
pub fn zundoko_name(hikawa: &str, n: u32) -> String {
    format!("{hikawa}{ZUNDOKO_INFIX}{n:03}")
}

pub fn kiyoshi_name(hikawa: &str) -> String {
    format!("{hikawa}{KIYOSHI_SUFFIX}")
}

/// `n` if `name` is exactly `zundoko_name(hikawa, n)` for some n ≥ 1 (so two
/// names can never mean the same word).
pub(super) fn zundoko_number(hikawa: &str, name: &str) -> Option<u32> {
    let digits = name.strip_prefix(hikawa)?.strip_prefix(ZUNDOKO_INFIX)?;
    let n: u32 = digits.parse().ok()?;
    (n >= 1 && format!("{n:03}") == digits).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

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
