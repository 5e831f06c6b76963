//! Delegated authorisation: every request for reconciles is put to
//! kube-apiserver as a SubjectAccessReview (verb, the resource, namespace
//! and name, for the user the front proxy named), so RBAC decides exactly
//! as it would for a built-in resource. Answers are cached for
//! [`CACHE_TTL`], as Kubernetes' delegating authorizer does, in a map
//! bounded by [`CACHE_ENTRIES`] and by [`CACHE_BYTES`] of keys (a user's
//! groups and extra are the front proxy's, names the URL's: both come from
//! outside). When full of fresh answers it starts again empty; a map and
//! a byte count are all it takes, so no cache crate.

use crate::front_proxy::User;
use crate::resource::{GROUP, RESOURCE, VERSION};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const CACHE_TTL: Duration = Duration::from_secs(10);
pub const CACHE_ENTRIES: usize = 4096;
/// What the cached questions and answers may weigh, in bytes of text.
pub const CACHE_BYTES: usize = 4 * 1024 * 1024;
/// What an entry weighs besides its text (the map's slot, the vectors').
const ENTRY_OVERHEAD: usize = 256;

/// What a request asks to do.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attributes {
    /// `get` or `list`.
    pub verb: &'static str,
    /// Empty: every namespace.
    pub namespace: String,
    /// Empty: every name.
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Denied, with the authoriser's reason (possibly empty).
    Deny(String),
}

#[derive(Debug, thiserror::Error)]
#[error("the SubjectAccessReview failed")]
pub struct ReviewFailed(#[source] pub kube::Error);

/// Asks kube-apiserver, remembering answers briefly.
pub struct Authorizer {
    reviews: Box<dyn Reviewer>,
    cache: Mutex<Cache>,
}

type Key = (User, Attributes);

#[derive(Debug, Default)]
struct Cache {
    entries: HashMap<Key, Entry>,
    /// The sum of the entries' weights.
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    decision: Decision,
    at: Instant,
    bytes: usize,
}

impl Cache {
    fn insert(&mut self, key: Key, decision: Decision, now: Instant) {
        let bytes = weight(&key, &decision);
        if bytes > CACHE_BYTES {
            return;
        }
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.bytes;
        }
        if self.entries.len() >= CACHE_ENTRIES || self.bytes + bytes > CACHE_BYTES {
            self.entries
                .retain(|_, e| now.duration_since(e.at) < CACHE_TTL);
            self.bytes = self.entries.values().map(|e| e.bytes).sum();
            if self.entries.len() >= CACHE_ENTRIES || self.bytes + bytes > CACHE_BYTES {
                self.entries.clear();
                self.bytes = 0;
            }
        }
        self.bytes += bytes;
        self.entries.insert(
            key,
            Entry {
                decision,
                at: now,
                bytes,
            },
        );
    }
}

/// The bytes of text an entry holds, plus [`ENTRY_OVERHEAD`].
fn weight((user, attributes): &Key, decision: &Decision) -> usize {
    let extra: usize = user
        .extra
        .iter()
        .map(|(k, v)| k.len() + v.iter().map(String::len).sum::<usize>())
        .sum();
    let reason = match decision {
        Decision::Allow => 0,
        Decision::Deny(reason) => reason.len(),
    };
    ENTRY_OVERHEAD
        + user.name.len()
        + user.uid.as_ref().map_or(0, String::len)
        + user.groups.iter().map(String::len).sum::<usize>()
        + extra
        + attributes.namespace.len()
        + attributes.name.len()
        + reason
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").finish_non_exhaustive()
    }
}

/// Where reviews go: kube-apiserver, or a test's table.
pub trait Reviewer: Send + Sync {
    fn review(
        &self,
        review: SubjectAccessReview,
    ) -> futures::future::BoxFuture<'static, Result<SubjectAccessReview, ReviewFailed>>;
}

/// kube-apiserver, through `client`, on `runtime` (the driver's: the
/// client's connections live there).
pub struct ApiReviewer {
    pub client: Client,
    pub runtime: tokio::runtime::Handle,
}

impl Reviewer for ApiReviewer {
    fn review(
        &self,
        review: SubjectAccessReview,
    ) -> futures::future::BoxFuture<'static, Result<SubjectAccessReview, ReviewFailed>> {
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let task = self
            .runtime
            .spawn(async move { api.create(&PostParams::default(), &review).await });
        Box::pin(async move {
            match task.await {
                Ok(result) => result.map_err(ReviewFailed),
                Err(join) => Err(ReviewFailed(kube::Error::Service(Box::new(join)))),
            }
        })
    }
}

impl Authorizer {
    pub fn new(reviews: Box<dyn Reviewer>) -> Self {
        Authorizer {
            reviews,
            cache: Mutex::new(Cache::default()),
        }
    }

    pub async fn decide(
        &self,
        user: &User,
        attributes: Attributes,
    ) -> Result<Decision, ReviewFailed> {
        let key = (user.clone(), attributes);
        let now = Instant::now();
        if let Some(entry) = self.lock().entries.get(&key)
            && now.duration_since(entry.at) < CACHE_TTL
        {
            return Ok(entry.decision.clone());
        }
        let answer = self.reviews.review(review(&key.0, &key.1)).await?;
        let status = answer.status.unwrap_or_default();
        let decision = if status.allowed && !status.denied.unwrap_or(false) {
            Decision::Allow
        } else {
            Decision::Deny(status.reason.unwrap_or_default())
        };
        self.lock().insert(key, decision.clone(), now);
        Ok(decision)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn review(user: &User, attributes: &Attributes) -> SubjectAccessReview {
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: user.uid.clone(),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.to_owned()),
                version: Some(VERSION.to_owned()),
                resource: Some(RESOURCE.to_owned()),
                verb: Some(attributes.verb.to_owned()),
                namespace: non_empty(&attributes.namespace),
                name: non_empty(&attributes.name),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Allows `allowed` users everything; counts the reviews asked.
    pub(crate) struct Table {
        pub allowed: Vec<&'static str>,
        pub asked: Arc<AtomicUsize>,
        pub last: Arc<Mutex<Option<SubjectAccessReview>>>,
    }

    impl Reviewer for Table {
        fn review(
            &self,
            review: SubjectAccessReview,
        ) -> futures::future::BoxFuture<'static, Result<SubjectAccessReview, ReviewFailed>>
        {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let user = review.spec.user.clone().unwrap_or_default();
            let allowed = self.allowed.contains(&user.as_str());
            *self.last.lock().unwrap() = Some(review.clone());
            Box::pin(async move {
                Ok(SubjectAccessReview {
                    status: Some(SubjectAccessReviewStatus {
                        allowed,
                        reason: (!allowed).then(|| "no RBAC policy matched".to_owned()),
                        ..SubjectAccessReviewStatus::default()
                    }),
                    ..review
                })
            })
        }
    }

    pub(crate) fn user(name: &str) -> User {
        User {
            name: name.to_owned(),
            uid: None,
            groups: vec!["system:authenticated".to_owned()],
            extra: Default::default(),
        }
    }

    #[actix_rt::test]
    async fn reviews_carry_the_request_and_are_remembered_briefly() {
        let asked = Arc::new(AtomicUsize::new(0));
        let last = Arc::new(Mutex::new(None));
        let authz = Authorizer::new(Box::new(Table {
            allowed: vec!["alice"],
            asked: asked.clone(),
            last: last.clone(),
        }));
        let get = Attributes {
            verb: "get",
            namespace: "shop".to_owned(),
            name: "hello.web".to_owned(),
        };
        assert_eq!(
            authz.decide(&user("alice"), get.clone()).await.unwrap(),
            Decision::Allow
        );
        let sent = last.lock().unwrap().clone().unwrap().spec;
        let attrs = sent.resource_attributes.unwrap();
        assert_eq!(
            (
                attrs.group.as_deref(),
                attrs.version.as_deref(),
                attrs.resource.as_deref(),
                attrs.verb.as_deref(),
                attrs.namespace.as_deref(),
                attrs.name.as_deref()
            ),
            (
                Some("driver.metahook.dev"),
                Some("v1alpha1"),
                Some("reconciles"),
                Some("get"),
                Some("shop"),
                Some("hello.web")
            )
        );
        assert_eq!(sent.groups.unwrap(), ["system:authenticated"]);
        // Cached: the same question is not asked again.
        authz.decide(&user("alice"), get.clone()).await.unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        let list_all = Attributes {
            verb: "list",
            namespace: String::new(),
            name: String::new(),
        };
        assert_eq!(
            authz.decide(&user("nobody"), list_all).await.unwrap(),
            Decision::Deny("no RBAC policy matched".to_owned())
        );
        assert!(
            last.lock()
                .unwrap()
                .clone()
                .unwrap()
                .spec
                .resource_attributes
                .unwrap()
                .namespace
                .is_none()
        );
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[actix_rt::test]
    async fn the_cache_stays_within_its_bound() {
        let authz = Authorizer::new(Box::new(Table {
            allowed: vec![],
            asked: Arc::new(AtomicUsize::new(0)),
            last: Arc::new(Mutex::new(None)),
        }));
        for i in 0..CACHE_ENTRIES + 10 {
            let attrs = Attributes {
                verb: "get",
                namespace: "ns".to_owned(),
                name: format!("n{i}"),
            };
            authz.decide(&user("bob"), attrs).await.unwrap();
        }
        assert!(authz.lock().entries.len() <= CACHE_ENTRIES);
    }

    /// Counting entries alone would let 2,000 gets of 120 KB names take the
    /// driver past its memory limit: the text is bounded too.
    #[actix_rt::test]
    async fn the_cache_holds_a_bounded_number_of_bytes() {
        let asked = Arc::new(AtomicUsize::new(0));
        let authz = Authorizer::new(Box::new(Table {
            allowed: vec!["viewer"],
            asked: asked.clone(),
            last: Arc::new(Mutex::new(None)),
        }));
        let mut most = 0;
        for i in 0..200 {
            let attrs = Attributes {
                verb: "get",
                namespace: "ns".to_owned(),
                name: format!("{i}{}", "n".repeat(120_000)),
            };
            authz.decide(&user("viewer"), attrs).await.unwrap();
            let cache = authz.lock();
            let held: usize = cache.entries.keys().map(|(_, a)| a.name.len()).sum();
            assert_eq!(
                cache.bytes,
                cache
                    .entries
                    .iter()
                    .map(|(k, e)| weight(k, &e.decision))
                    .sum::<usize>()
            );
            most = most.max(held);
        }
        assert!(most <= CACHE_BYTES, "{most} bytes of names held");
        assert!(most > CACHE_BYTES / 2, "the cache is used: {most}");
        // A small question is still answered from the cache.
        let small = Attributes {
            verb: "get",
            namespace: "ns".to_owned(),
            name: "hello.web".to_owned(),
        };
        authz.decide(&user("viewer"), small.clone()).await.unwrap();
        let before = asked.load(Ordering::SeqCst);
        authz.decide(&user("viewer"), small).await.unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), before);
    }
}
