//! Kubernetes' rules for names, as hooks check them for objects stored
//! before a CRD's schema had the rule.

/// A DNS-1123 subdomain, as Kubernetes checks most objects' names.
pub const DNS_SUBDOMAIN_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// The longest DNS-1123 subdomain, in bytes.
pub const DNS_SUBDOMAIN_MAX_LEN: usize = 253;

/// Whether `name` is a DNS-1123 subdomain (`DNS_SUBDOMAIN_PATTERN` and
/// at most `DNS_SUBDOMAIN_MAX_LEN`); otherwise why not.
pub fn check_dns_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.len() > DNS_SUBDOMAIN_MAX_LEN {
        return Err(format!("longer than {DNS_SUBDOMAIN_MAX_LEN} characters"));
    }
    if !name.split('.').all(is_dns_label) {
        return Err(format!(
            "\"{}\" is not a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', \
             each dot-separated part starting and ending with a letter or digit",
            name.escape_default()
        ));
    }
    Ok(())
}

fn is_dns_label(part: &str) -> bool {
    let alphanumeric = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = part.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alphanumeric(first)
                && alphanumeric(last)
                && bytes.iter().all(|c| alphanumeric(c) || *c == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_are_checked_as_kubernetes_checks_them() {
        assert!(check_dns_subdomain("web-1.example").is_ok());
        for bad in ["", "-web", "web-", "Web", "a..b", "a_b"] {
            assert!(check_dns_subdomain(bad).is_err(), "{bad:?}");
        }
        assert!(check_dns_subdomain(&"a".repeat(254)).is_err());
    }
}
