//! A webhook's `etag` mode (docs/metacontroller.md §1.1): the last 200
//! answer for each root object (the request's `parent`, or a decorator's
//! `object`) kept with the `ETag` the hook sent; the next call for it sends
//! `If-None-Match`, and a 304 or 412 means "the same answer" — the hook
//! decides freshness. Keyed as Metacontroller keys it: kind, namespace and
//! name (not the UID, not the request). Entries expire after
//! `cacheTimeoutSeconds` (never without it, as with Metacontroller), swept
//! every `cacheCleanupSeconds`; unlike Metacontroller's, the cache holds at
//! most [`MAX_ENTRIES`], so a churn of parents cannot grow it without end.

use bytes::Bytes;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most answers one hook's cache keeps: past it, new ones are not
/// kept until a sweep makes room.
pub const MAX_ENTRIES: usize = 65_536;

/// How often expired entries are swept when `cacheCleanupSeconds` is not
/// given.
const DEFAULT_CLEANUP: Duration = Duration::from_secs(60);

/// `kind`, `namespace`, `name` of the request's root object.
pub type RootKey = (String, String, String);

#[derive(Debug)]
struct Entry {
    etag: String,
    body: Bytes,
    stored: Instant,
}

#[derive(Debug)]
struct Entries {
    map: HashMap<RootKey, Entry>,
    swept: Instant,
}

/// One hook's cache.
#[derive(Debug)]
pub struct EtagCache {
    timeout: Option<Duration>,
    cleanup: Duration,
    entries: Mutex<Entries>,
}

impl EtagCache {
    /// `timeout`: `cacheTimeoutSeconds`; `cleanup`: `cacheCleanupSeconds`.
    pub fn new(timeout: Option<Duration>, cleanup: Option<Duration>) -> Self {
        EtagCache {
            timeout,
            cleanup: cleanup.unwrap_or(DEFAULT_CLEANUP),
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                swept: Instant::now(),
            }),
        }
    }

    fn live(&self, entry: &Entry, now: Instant) -> bool {
        self.timeout
            .is_none_or(|t| now.duration_since(entry.stored) < t)
    }

    /// The tag and answer kept for `key`, if any and not expired.
    pub fn get(&self, key: &RootKey) -> Option<(String, Bytes)> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entry = entries.map.get(key)?;
        self.live(entry, Instant::now())
            .then(|| (entry.etag.clone(), entry.body.clone()))
    }

    /// Keeps a 200 answer and its tag.
    pub fn put(&self, key: RootKey, etag: String, body: Bytes) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if now.duration_since(entries.swept) >= self.cleanup || entries.map.len() >= MAX_ENTRIES {
            entries.map.retain(|_, e| {
                self.timeout
                    .is_none_or(|t| now.duration_since(e.stored) < t)
            });
            entries.swept = now;
        }
        if entries.map.len() >= MAX_ENTRIES && !entries.map.contains_key(&key) {
            return;
        }
        entries.map.insert(
            key,
            Entry {
                etag,
                body,
                stored: now,
            },
        );
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }
}

#[derive(Deserialize)]
struct Request {
    parent: Option<Root>,
    object: Option<Root>,
    #[serde(flatten)]
    _rest: HashMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
struct Root {
    kind: Option<String>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
}

/// The request's root object: its `parent` (sync, finalize, customize),
/// or a decorator's `object`.
pub fn root_key(request: &[u8]) -> Option<RootKey> {
    let request: Request = serde_json::from_slice(request).ok()?;
    let root = request.parent.or(request.object)?;
    let metadata = root.metadata?;
    Some((
        root.kind.unwrap_or_default(),
        metadata.namespace.unwrap_or_default(),
        metadata.name?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> RootKey {
        ("Thing".to_owned(), "shop".to_owned(), name.to_owned())
    }

    #[test]
    fn the_root_is_the_parent_or_the_decorated_object() {
        let sync = br#"{"controller": {}, "parent": {"kind": "Thing", "metadata": {"name": "p", "namespace": "shop"}}, "children": {}}"#;
        assert_eq!(root_key(sync), Some(key("p")));
        let decorator =
            br#"{"object": {"kind": "Thing", "metadata": {"name": "p", "namespace": "shop"}}}"#;
        assert_eq!(root_key(decorator), Some(key("p")));
        assert_eq!(root_key(b"{}"), None);
        assert_eq!(root_key(b"not json"), None);
    }

    #[test]
    fn answers_expire_and_the_cache_stays_bounded() {
        let cache = EtagCache::new(Some(Duration::from_millis(50)), Some(Duration::ZERO));
        cache.put(key("p"), "\"v1\"".to_owned(), Bytes::from_static(b"{}"));
        assert_eq!(
            cache.get(&key("p")),
            Some(("\"v1\"".to_owned(), Bytes::from_static(b"{}")))
        );
        assert_eq!(cache.get(&key("q")), None);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(&key("p")), None, "expired");
        // The next put sweeps it.
        cache.put(key("q"), "\"v1\"".to_owned(), Bytes::new());
        assert_eq!(cache.len(), 1);

        let never = EtagCache::new(None, None);
        for i in 0..MAX_ENTRIES + 10 {
            never.put(key(&i.to_string()), String::new(), Bytes::new());
        }
        assert_eq!(never.len(), MAX_ENTRIES);
        assert!(never.get(&key("0")).is_some(), "no timeout: never expires");
    }
}
