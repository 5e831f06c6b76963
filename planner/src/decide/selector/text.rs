//! Label selectors from their text (`a=b,c!=d,e in (x,y),f notin (z),g,!h`),
//! as the API server reads `?labelSelector=`: kube-core parses selectors
//! from a `LabelSelector` object but not from text. Bounded, as a selector
//! may come from a stranger's URL (the aggregated API): at most
//! [`MAX_SELECTOR_BYTES`] and [`MAX_REQUIREMENTS`], keys and values as long
//! as Kubernetes allows labels to be.

use kube::core::{Expression, Selector};
use std::collections::BTreeSet;

/// The longest selector text accepted (label or field): room for 25
/// requirements on the longest keys and values Kubernetes allows.
pub const MAX_SELECTOR_BYTES: usize = 8 * 1024;
/// The most requirements (comma-separated terms) in one selector.
pub const MAX_REQUIREMENTS: usize = 100;
/// A label value: at most 63 characters, as Kubernetes allows.
const MAX_VALUE_LEN: usize = 63;
/// A label key: a DNS subdomain prefix (253), a slash, a name (63).
const MAX_KEY_LEN: usize = 253 + 1 + 63;

/// A label selector's text (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
pub fn labels(text: &str) -> Result<Selector, String> {
    within_bounds("label", text)?;
    let mut expressions = Vec::new();
    for term in split_terms(text)? {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        expressions.push(term_expression(term)?);
        if expressions.len() > MAX_REQUIREMENTS {
            return Err(too_many("label"));
        }
    }
    Ok(Selector::from_iter(expressions))
}

pub fn within_bounds(which: &str, text: &str) -> Result<(), String> {
    if text.len() > MAX_SELECTOR_BYTES {
        return Err(format!(
            "the {which} selector is {} bytes long: at most {MAX_SELECTOR_BYTES} are accepted",
            text.len()
        ));
    }
    Ok(())
}

pub fn too_many(which: &str) -> String {
    format!(
        "the {which} selector has more than {MAX_REQUIREMENTS} requirements: at most {MAX_REQUIREMENTS} are accepted"
    )
}

fn value(v: &str) -> Result<String, String> {
    if v.len() > MAX_VALUE_LEN {
        return Err(format!(
            "invalid label value {v:?}: must be no more than {MAX_VALUE_LEN} bytes"
        ));
    }
    Ok(v.to_owned())
}

/// Splits on the commas outside parentheses.
fn split_terms(text: &str) -> Result<Vec<&str>, String> {
    let (mut terms, mut depth, mut start) = (Vec::new(), 0u32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unbalanced ')' in label selector {text:?}"))?
            }
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '(' in label selector {text:?}"));
    }
    terms.push(&text[start..]);
    Ok(terms)
}

fn term_expression(term: &str) -> Result<Expression, String> {
    let invalid = || format!("invalid label selector term {term:?}");
    if let Some(k) = term.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(key(k.trim())?));
    }
    for (op, negated) in [(" notin ", true), (" in ", false)] {
        if let Some((k, set)) = term.split_once(op) {
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(invalid)?;
            let values: BTreeSet<String> = set
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(value)
                .collect::<Result<_, _>>()?;
            if values.is_empty() {
                return Err(format!("{term:?}: a set needs at least one value"));
            }
            let k = key(k.trim())?;
            return Ok(if negated {
                Expression::NotIn(k, values)
            } else {
                Expression::In(k, values)
            });
        }
    }
    for (op, equal) in [("!=", false), ("==", true), ("=", true)] {
        if let Some((k, v)) = term.split_once(op) {
            let (k, v) = (key(k.trim())?, value(v.trim())?);
            return Ok(if equal {
                Expression::Equal(k, v)
            } else {
                Expression::NotEqual(k, v)
            });
        }
    }
    Ok(Expression::Exists(key(term)?))
}

fn key(k: &str) -> Result<String, String> {
    let valid = !k.is_empty()
        && k.len() <= MAX_KEY_LEN
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(k.to_owned())
    } else {
        Err(format!("invalid label key {k:?}"))
    }
}
