//! Who held the Lease when each write landed, from the API server's audit
//! log alone. In the namespace `tests/cluster/` records in full
//! (`e2e-leader-terms`), every write's answer carries the object's new
//! `resourceVersion`: etcd's revision at its commit, one counter for every
//! object. The Lease's own writes order its holders on that counter, so a
//! write committed at revision r was made in the term of whoever the last
//! Lease write before r named.
//!
//! A write that changed nothing (an apply of what was already there) keeps
//! the object's old revision and cannot be placed so; nor can a delete. For
//! those the check is on the API server's clock instead, and lenient: the
//! request must overlap one of its writer's terms at all, from when the
//! write that began the term arrived to when the one that ended it was
//! answered.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One successful write, as the audit log has it.
#[derive(Debug, Clone)]
struct Write {
    user: String,
    verb: String,
    /// `resource[/subresource] name`.
    object: String,
    /// The object's revision in the answer.
    revision: Option<u64>,
    /// The holder the answer names, for the Lease.
    holder: Option<String>,
    received: String,
    completed: String,
}

/// A holder's term, between two Lease writes.
#[derive(Debug, Clone)]
pub struct Term {
    pub holder: Option<String>,
    pub from_revision: u64,
    /// When the write that began it arrived / the one that ended it was
    /// answered (`None`: still going).
    from_received: String,
    to_completed: Option<String>,
}

/// What the log shows.
#[derive(Debug, Default)]
pub struct Report {
    pub terms: Vec<Term>,
    /// Writes committed (placed by revision), by writer.
    pub committed: BTreeMap<String, usize>,
    /// Writes that changed nothing or deleted, by writer.
    pub unplaced: BTreeMap<String, usize>,
    /// Each write made outside its writer's term, said in a sentence.
    pub violations: Vec<String>,
}

fn writes(audit: &[Value], ns: &str) -> Vec<Write> {
    audit
        .iter()
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["objectRef"]["namespace"] == ns
                && matches!(
                    e["verb"].as_str(),
                    Some("create" | "update" | "patch" | "delete" | "deletecollection")
                )
                && e["responseStatus"]["code"]
                    .as_u64()
                    .is_some_and(|c| (200..300).contains(&c))
        })
        .map(|e| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            let reference = &e["objectRef"];
            let mut object = text(&reference["resource"]);
            if let Some(sub) = reference["subresource"].as_str() {
                object = format!("{object}/{sub}");
            }
            let answer = &e["responseObject"];
            Write {
                user: text(&e["user"]["username"]),
                verb: text(&e["verb"]),
                object: format!("{object} {}", text(&reference["name"])),
                revision: answer["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|rv| rv.parse().ok()),
                holder: answer["spec"]["holderIdentity"]
                    .as_str()
                    .filter(|h| !h.is_empty())
                    .map(str::to_owned),
                received: text(&e["requestReceivedTimestamp"]),
                completed: text(&e["stageTimestamp"]),
            }
        })
        .collect()
}

/// Checks that every write of `writers` in `ns` landed within the writer's
/// own term on the Lease `lease` (writers are named as the Lease names its
/// holders).
pub fn check(audit: &[Value], ns: &str, lease: &str, writers: &BTreeSet<String>) -> Report {
    let all = writes(audit, ns);
    let lease_object = format!("leases {lease}");
    let mut lease_writes: Vec<&Write> = all
        .iter()
        .filter(|w| w.object == lease_object && w.revision.is_some())
        .collect();
    lease_writes.sort_by_key(|w| w.revision);
    let mut report = Report::default();
    for (i, write) in lease_writes.iter().enumerate() {
        let holder = write.holder.clone();
        if report.terms.last().is_some_and(|t| t.holder == holder) {
            continue;
        }
        if let Some(last) = report.terms.last_mut() {
            last.to_completed = Some(lease_writes[i].completed.clone());
        }
        report.terms.push(Term {
            holder,
            from_revision: write.revision.unwrap_or_default(),
            from_received: write.received.clone(),
            to_completed: None,
        });
    }
    // The first write of each revision of an object committed it; later
    // ones answered with the same revision changed nothing.
    let mut by_completion: Vec<&Write> = all.iter().filter(|w| w.object != lease_object).collect();
    by_completion.sort_by(|a, b| a.completed.cmp(&b.completed));
    let mut committed_revisions = BTreeSet::new();
    for write in by_completion {
        let placed = match write.revision {
            Some(revision) if write.verb != "delete" && write.verb != "deletecollection" => {
                committed_revisions.insert((write.object.clone(), revision))
            }
            _ => false,
        };
        if !writers.contains(&write.user) {
            continue;
        }
        let verdict = if placed {
            *report.committed.entry(write.user.clone()).or_default() += 1;
            placed_check(&report.terms, write)
        } else {
            *report.unplaced.entry(write.user.clone()).or_default() += 1;
            unplaced_check(&report.terms, write)
        };
        if let Some(violation) = verdict {
            report.violations.push(violation);
        }
    }
    report
}

fn placed_check(terms: &[Term], write: &Write) -> Option<String> {
    let revision = write.revision.unwrap_or_default();
    let term = terms.iter().rev().find(|t| t.from_revision < revision);
    match term {
        Some(t) if t.holder.as_deref() == Some(write.user.as_str()) => None,
        Some(t) => Some(format!(
            "{} {} {} committed at revision {revision}, while the Lease was held by {} (from revision {})",
            write.user,
            write.verb,
            write.object,
            t.holder.as_deref().unwrap_or("nobody"),
            t.from_revision
        )),
        None => Some(format!(
            "{} {} {} committed at revision {revision}, before anyone held the Lease",
            write.user, write.verb, write.object
        )),
    }
}

fn unplaced_check(terms: &[Term], write: &Write) -> Option<String> {
    let overlaps = terms.iter().any(|t| {
        t.holder.as_deref() == Some(write.user.as_str())
            && t.from_received <= write.completed
            && t.to_completed
                .as_ref()
                .is_none_or(|end| write.received <= *end)
    });
    (!overlaps).then(|| {
        format!(
            "{} {} {} (changing nothing, or a delete) between {} and {}, in no term of its own",
            write.user, write.verb, write.object, write.received, write.completed
        )
    })
}

#[cfg(test)]
mod tests {
    //! Run with the e2e target (`cargo test --test e2e leader_terms`); no
    //! cluster needed.
    use super::*;
    use serde_json::json;

    fn event(user: &str, verb: &str, resource: &str, name: &str, rv: u64, at: u32) -> Value {
        let spec = if resource == "leases" {
            json!({"holderIdentity": user})
        } else {
            json!({})
        };
        json!({
            "stage": "ResponseComplete", "verb": verb,
            "user": {"username": user},
            "objectRef": {"namespace": "ns", "resource": resource, "name": name},
            "responseStatus": {"code": 200},
            "responseObject": {"metadata": {"resourceVersion": rv.to_string()}, "spec": spec},
            "requestReceivedTimestamp": format!("2026-11-26T00:00:{at:02}.000000Z"),
            "stageTimestamp": format!("2026-11-26T00:00:{at:02}.500000Z"),
        })
    }

    fn writers() -> BTreeSet<String> {
        ["a".to_owned(), "b".to_owned()].into()
    }

    #[test]
    fn writes_within_their_writers_terms_pass() {
        let audit = [
            event("a", "update", "leases", "l", 10, 1),
            event("a", "patch", "deployments", "web", 11, 2),
            event("b", "update", "leases", "l", 20, 3),
            event("b", "patch", "deployments", "web", 21, 4),
            // b applies what a left: no new revision, within b's term.
            event("b", "patch", "deployments", "web", 21, 5),
        ];
        let report = check(&audit, "ns", "l", &writers());
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert_eq!(report.terms.len(), 2);
        assert_eq!(report.committed["a"], 1);
        assert_eq!(report.committed["b"], 1);
        assert_eq!(report.unplaced["b"], 1);
    }

    /// Each audit log names exactly one violation, saying `says`.
    #[test]
    fn a_write_outside_its_writers_terms_is_named() {
        let cases = [
            (
                "committed after another took over",
                vec![
                    event("a", "update", "leases", "l", 10, 1),
                    event("b", "update", "leases", "l", 20, 3),
                    event("a", "patch", "deployments", "web", 21, 4),
                ],
                "held by b",
            ),
            (
                "changed nothing, outside every term of its writer",
                vec![
                    event("a", "update", "leases", "l", 10, 1),
                    event("a", "patch", "deployments", "web", 11, 2),
                    event("b", "update", "leases", "l", 20, 5),
                    // a again, long after b took over, applying the same: rev 11.
                    event("a", "patch", "deployments", "web", 11, 9),
                ],
                "in no term",
            ),
        ];
        for (case, audit, says) in cases {
            let report = check(&audit, "ns", "l", &writers());
            assert_eq!(
                report.violations.len(),
                1,
                "{case}: {:?}",
                report.violations
            );
            assert!(
                report.violations[0].contains(says),
                "{case}: {:?}",
                report.violations
            );
        }
    }
}
