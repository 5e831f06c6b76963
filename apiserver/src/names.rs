//! Which namespaces and reconcile names can exist, checked before a
//! request costs a SubjectAccessReview or a cache entry: a name from the
//! URL is otherwise unbounded (the aggregator forwards what it is given).
//! kube-apiserver answers a get of a name that cannot exist with 404
//! NotFound and a list in such a namespace with an empty list; so do we.

use metahook_core::names::{DNS_SUBDOMAIN_MAX_LEN, check_dns_subdomain};

/// A DNS-1123 label, as namespaces and CompositeController names are.
pub const DNS_LABEL_MAX_LEN: usize = 63;

/// The longest reconcile name: `<controller>.<parent name>`, a DNS label,
/// a dot and a DNS-1123 subdomain (a custom resource's name).
pub const RECONCILE_NAME_MAX_LEN: usize = DNS_LABEL_MAX_LEN + 1 + DNS_SUBDOMAIN_MAX_LEN;

pub fn is_dns_label(text: &str) -> bool {
    text.len() <= DNS_LABEL_MAX_LEN && !text.contains('.') && check_dns_subdomain(text).is_ok()
}

/// Whether `namespace` can name a namespace.
pub fn is_namespace(namespace: &str) -> bool {
    is_dns_label(namespace)
}

/// Whether `name` can name a reconcile (see [`crate::object::name_of`]).
pub fn is_reconcile_name(name: &str) -> bool {
    name.len() <= RECONCILE_NAME_MAX_LEN
        && name.split_once('.').is_some_and(|(controller, parent)| {
            is_dns_label(controller) && check_dns_subdomain(parent).is_ok()
        })
}

/// `name` as an answer may repeat it: cut at the longest valid name.
pub fn shown(name: &str) -> String {
    if name.len() <= RECONCILE_NAME_MAX_LEN {
        return name.to_owned();
    }
    let mut end = RECONCILE_NAME_MAX_LEN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_kubernetes_checks_them() {
        let longest_parent = "p".repeat(DNS_SUBDOMAIN_MAX_LEN);
        let longest_controller = "c".repeat(DNS_LABEL_MAX_LEN);
        let longest = format!("{longest_controller}.{longest_parent}");
        for good in ["hello.web", "hikawa.a.b-c", longest.as_str()] {
            assert!(is_reconcile_name(good), "{good}");
        }
        let too_long_parent = format!("hello.{longest_parent}p");
        let too_long_controller = format!("{longest_controller}c.web");
        let huge = "a".repeat(120_000);
        for bad in [
            "hello",
            "",
            ".web",
            "hello.",
            "Hello.web",
            "hello.web_1",
            "hello..web",
            too_long_parent.as_str(),
            too_long_controller.as_str(),
            huge.as_str(),
        ] {
            assert!(!is_reconcile_name(bad), "{:.40}", bad);
        }
        assert!(is_namespace("shop") && is_namespace(&"n".repeat(63)));
        for bad in ["", "a.b", "Shop", "-shop", &"n".repeat(64)] {
            assert!(!is_namespace(bad), "{bad}");
        }
        assert_eq!(shown(&huge).len(), RECONCILE_NAME_MAX_LEN + 3);
        assert_eq!(shown("hello.web"), "hello.web");
        assert!(shown(&"é".repeat(1000)).ends_with("..."));
    }
}
