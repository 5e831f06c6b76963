//! What a controller with a customize hook remembers between reconciles:
//! the hook's last answer per parent (UID, generation), reused for 20
//! minutes as Metacontroller does, and the related types the answers named,
//! resolved through discovery once (docs/metacontroller.md §1.6).
//!
//! Calling the hook and selecting the objects is the reconcile's
//! (`reconcile/related.rs`); which parents a related object's change queues
//! is `triggers.rs`'s.

use crate::controller::queue::ParentKey;
use crate::decide::model::ResolvedType;
use futures::future::BoxFuture;
use metahook_core::protocol::RelatedResourceRule;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// How long a customize answer is reused for one (UID, generation).
const CUSTOMIZE_TTL: Duration = Duration::from_secs(20 * 60);

/// Resolves a related rule's `apiVersion` + `resource` to a type.
pub type Discover =
    Arc<dyn Fn(&str, &str) -> BoxFuture<'static, Option<ResolvedType>> + Send + Sync>;

/// The rules of one customize answer.
pub type Rules = Arc<Vec<RelatedResourceRule>>;

struct Answer {
    at: Instant,
    parent: ParentKey,
    rules: Rules,
}

pub struct Customized {
    discover: Discover,
    /// By parent (UID, generation).
    answers: Mutex<HashMap<(String, i64), Answer>>,
    /// By (apiVersion, resource).
    types: Mutex<HashMap<(String, String), ResolvedType>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is one statement: a panic cannot leave a map half-done.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Customized {
    pub fn new(discover: Discover) -> Self {
        Customized {
            discover,
            answers: Mutex::new(HashMap::new()),
            types: Mutex::new(HashMap::new()),
        }
    }

    /// The rules answered for this parent generation, unless expired.
    pub fn rules(&self, uid: &str, generation: i64) -> Option<Rules> {
        let mut answers = lock(&self.answers);
        answers.retain(|_, a| a.at.elapsed() < CUSTOMIZE_TTL);
        answers
            .get(&(uid.to_owned(), generation))
            .map(|a| Arc::clone(&a.rules))
    }

    /// Keeps the answer for this parent generation. Only the latest
    /// generation is ever asked for again: one entry per parent, whatever
    /// the number of spec changes.
    pub fn remember(&self, uid: &str, generation: i64, parent: ParentKey, rules: Rules) {
        let mut answers = lock(&self.answers);
        answers.retain(|(cached, _), _| cached != uid);
        answers.insert(
            (uid.to_owned(), generation),
            Answer {
                at: Instant::now(),
                parent,
                rules,
            },
        );
    }

    /// Drops a deleted parent's answers: at most one entry per live parent.
    pub fn forget(&self, uid: &str) {
        lock(&self.answers).retain(|(cached, _), _| cached != uid);
    }

    /// Every parent's last rules.
    pub fn answers(&self) -> Vec<(ParentKey, Rules)> {
        lock(&self.answers)
            .values()
            .map(|a| (a.parent.clone(), Arc::clone(&a.rules)))
            .collect()
    }

    /// The type a rule names, if resolved before.
    pub fn known_type(&self, rule: &RelatedResourceRule) -> Option<ResolvedType> {
        lock(&self.types)
            .get(&(rule.api_version.clone(), rule.resource.clone()))
            .cloned()
    }

    /// Asks discovery for the type a rule names (`None`: the API server does
    /// not serve it) and keeps it.
    pub async fn discover(&self, rule: &RelatedResourceRule) -> Option<ResolvedType> {
        let resource = (self.discover)(&rule.api_version, &rule.resource).await?;
        lock(&self.types).insert(
            (rule.api_version.clone(), rule.resource.clone()),
            resource.clone(),
        );
        Some(resource)
    }
}
