//! Name constraints as Go's `crypto/x509` checks them (`checkChainConstraints`):
//! every certificate with a subjectAltName is checked against the
//! constraints of each CA above it in the chain. DNS names and IP
//! addresses are matched as Go matches them; an email address or a URI
//! under any constraint is refused, which is stricter than Go (which parses
//! and matches them too): callers of hooks do not need them.

use crate::certificate::{Cert, Name, NameConstraints};
use crate::refusal::ClientCertRefused;

/// Go's `dnsHasSuffix(constraint, name)`: `constraint` is a label suffix of
/// `name`, ASCII case aside; a leading period excludes the domain itself.
fn dns_has_suffix(constraint: &str, name: &str) -> bool {
    let (c, n) = (constraint.as_bytes(), name.as_bytes());
    if c.len() > n.len() || !n[n.len() - c.len()..].eq_ignore_ascii_case(c) {
        return false;
    }
    c.first() == Some(&b'.') || n.len() == c.len() || n[n.len() - c.len() - 1] == b'.'
}

/// Go's `trimFirstLabel`: `a.b.c` → `.b.c`, a single label → nothing.
fn parent(name: &str) -> Option<&str> {
    name.find('.').map(|dot| &name[dot..])
}

/// Go's `domainNameValid` for a name of a certificate: printable ASCII, no
/// empty label, no trailing period.
fn valid_domain(name: &str) -> bool {
    !name.ends_with('.')
        && name.bytes().all(|b| (33..=126).contains(&b))
        && (name.is_empty() || name.split('.').all(|label| !label.is_empty()))
}

fn dns_matches(constraint: &str, name: &str, excluded: bool) -> bool {
    constraint.is_empty()
        || dns_has_suffix(constraint, name)
        // An excluded name may be what a wildcard covers.
        || (excluded
            && name.starts_with('*')
            && parent(&name.to_ascii_lowercase()).is_some_and(|p| {
                parent(&constraint.to_ascii_lowercase()).is_some_and(|c| c == p)
            }))
}

/// An address within a constraint's address and mask, of the same family.
fn ip_matches(constraint: &[u8], ip: &[u8]) -> bool {
    let (net, mask) = constraint.split_at(constraint.len() / 2);
    net.len() == ip.len()
        && ip
            .iter()
            .zip(net)
            .zip(mask)
            .all(|((a, n), m)| a & m == n & m)
}

/// Whether `name` may be used under `constraints`.
fn check(name: &Name<'_>, constraints: &NameConstraints<'_>) -> Result<(), String> {
    match name {
        Name::Dns(dns) if !valid_domain(dns) => {
            return Err(format!("DNS name {dns:?} cannot be parsed"));
        }
        Name::Email(_) | Name::Uri(_) => {
            return Err("an email address or URI under name constraints".to_owned());
        }
        Name::Other => return Ok(()),
        Name::Dns(_) | Name::Ip(_) => {}
    }
    // Whether constraint `c` matches; `None` for a constraint of another kind.
    let matches = |c: &Name<'_>, excluded: bool| match (name, c) {
        (Name::Dns(name), Name::Dns(c)) => Some(dns_matches(c, name, excluded)),
        (Name::Ip(ip), Name::Ip(c)) => Some(ip_matches(c, ip)),
        _ => None,
    };
    let permitted: Vec<bool> = constraints
        .permitted
        .iter()
        .filter_map(|c| matches(c, false))
        .collect();
    if !permitted.is_empty() && !permitted.contains(&true) {
        return Err(format!("{name:?} is not permitted by any constraint"));
    }
    if let Some(c) = constraints
        .excluded
        .iter()
        .find(|c| matches(c, true) == Some(true))
    {
        return Err(format!("{name:?} is excluded by constraint {c:?}"));
    }
    Ok(())
}

/// Go's `checkChainConstraints` over `chain` (leaf first).
pub(crate) fn check_chain(chain: &[&Cert<'_>]) -> Result<(), ClientCertRefused> {
    if chain.iter().all(|c| c.name_constraints.is_none()) {
        return Ok(());
    }
    for (i, cert) in chain.iter().enumerate() {
        let Some((_, names)) = &cert.san else {
            continue;
        };
        for constraints in chain[i + 1..]
            .iter()
            .filter_map(|c| c.name_constraints.as_ref())
        {
            for name in names {
                check(name, constraints).map_err(|why| match name {
                    Name::Email(_) | Name::Uri(_) => ClientCertRefused::Unsupported(why),
                    _ => ClientCertRefused::NameConstraints(why),
                })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names_match_as_go_matches_them() {
        assert!(dns_has_suffix("example.com", "example.com"));
        assert!(dns_has_suffix("example.com", "a.EXAMPLE.com"));
        assert!(!dns_has_suffix("example.com", "aexample.com"));
        assert!(!dns_has_suffix(".example.com", "example.com"));
        assert!(dns_has_suffix(".example.com", "a.example.com"));
        assert!(dns_matches("", "anything", false), "empty: every name");
        assert!(dns_matches("a.example.com", "*.example.com", true));
        assert!(!dns_matches("a.example.com", "*.example.com", false));
        assert!(!valid_domain("trailing.dot."));
        assert!(!valid_domain("two..dots"));
    }

    #[test]
    fn constraints_permit_and_exclude_by_kind() {
        let constraints = NameConstraints {
            permitted: vec![Name::Dns("svc"), Name::Ip(&[10, 0, 0, 0, 255, 0, 0, 0])],
            excluded: vec![Name::Dns("secret.svc")],
        };
        assert!(check(&Name::Dns("hooks.svc"), &constraints).is_ok());
        assert!(check(&Name::Dns("hooks.example"), &constraints).is_err());
        assert!(check(&Name::Dns("a.secret.svc"), &constraints).is_err());
        assert!(check(&Name::Ip(&[10, 1, 2, 3]), &constraints).is_ok());
        assert!(check(&Name::Ip(&[11, 1, 2, 3]), &constraints).is_err());
        assert!(
            check(&Name::Ip(&[0; 16]), &constraints).is_err(),
            "no IPv6 permitted"
        );
        assert!(check(&Name::Email("a@svc"), &constraints).is_err());
        let dns_only = NameConstraints {
            permitted: vec![Name::Dns("svc")],
            excluded: vec![],
        };
        assert!(
            check(&Name::Ip(&[192, 168, 0, 1]), &dns_only).is_ok(),
            "a kind without constraints is free"
        );
    }
}
