//! An object as a cache holds it: its metadata decoded (what the driver
//! indexes, selects and keys on), everything else kept as the JSON text it
//! arrived as.
//!
//! A decoded `DynamicObject` costs several times its JSON
//! (`tests/memory_per_parent.rs` counts it), and most of it is `spec` and `status`, which the driver reads only while it
//! reconciles the object's parent. Holding those as text, and decoding them
//! for the reconcile that reads them ([`CachedObject::decode`]), is how the
//! cache stays near the size of the objects (docs/performance.md,
//! "Memory"). The labels and annotations are kept as text too: outside a
//! reconcile only selectors read them (a parent's filter, an orphan's
//! adopters, related rules) and `ignoreStatusChanges` compares them, and a
//! map of a few entries decoded costs a tree node of half a kilobyte and a
//! string per key and value. Read them with [`CachedObject::labels`] and
//! [`CachedObject::annotations`], or through [`Labelled`] where code takes
//! either kind of object: `ResourceExt::labels` and the metadata's fields
//! find none. `managedFields` is skipped while the metadata is read:
//! no decision reads it, and it can be most of an object. The type
//! (`apiVersion`, `kind`) is one shared copy per type, not one per object.

use crate::decide::selector::Labelled;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::core::{ApiResource, DynamicObject, DynamicResourceScope, Resource, TypeMeta};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, Mutex};

/// One cached object.
#[derive(Debug, Clone)]
pub struct CachedObject {
    /// `apiVersion` and `kind`, shared with every object of the type.
    pub types: Option<Arc<TypeMeta>>,
    /// Without `managedFields`, `labels` and `annotations`: those are
    /// [`CachedObject::labels`] and [`CachedObject::annotations`].
    pub metadata: ObjectMeta,
    /// `metadata.labels` as the API server wrote them.
    labels: Option<Box<RawValue>>,
    /// `metadata.annotations` as the API server wrote them.
    annotations: Option<Box<RawValue>>,
    /// Every other top-level field (`spec`, `status`, `data`, …) as one JSON
    /// object, as the API server wrote it.
    rest: Box<RawValue>,
}

impl CachedObject {
    /// The whole object, as the planner and the hooks read it.
    pub fn decode(&self) -> Result<DynamicObject, serde_json::Error> {
        let mut metadata = self.metadata.clone();
        metadata.labels = decode_map(self.labels.as_deref())?;
        metadata.annotations = decode_map(self.annotations.as_deref())?;
        Ok(DynamicObject {
            types: self.types.as_deref().cloned(),
            metadata,
            data: serde_json::from_str(self.rest.get())?,
        })
    }

    /// `status.observedGeneration`, read from the kept JSON text without
    /// building the rest: what orders a start's reconciles
    /// (`metahook_planner::decide::order`).
    pub fn observed_generation(&self) -> Option<i64> {
        #[derive(serde::Deserialize)]
        struct Rest {
            status: Option<Status>,
        }
        #[derive(serde::Deserialize)]
        struct Status {
            #[serde(rename = "observedGeneration")]
            observed_generation: Option<i64>,
        }
        serde_json::from_str::<Rest>(self.rest.get())
            .ok()?
            .status?
            .observed_generation
    }

    /// The object's labels, decoded (none when they do not decode as a
    /// map of strings, which the API server never sends). A method of its
    /// own, so that `obj.labels()` does not reach `ResourceExt::labels`,
    /// which would find none.
    pub fn labels(&self) -> BTreeMap<String, String> {
        decode_map_or_empty(self.labels.as_deref())
    }

    /// The object's annotations, as [`CachedObject::labels`] are.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        decode_map_or_empty(self.annotations.as_deref())
    }

    /// The labels as the API server wrote them: what stays the same while
    /// they do (it writes map keys in order).
    pub fn labels_text(&self) -> &str {
        self.labels.as_deref().map_or("", RawValue::get)
    }

    /// The annotations as the API server wrote them.
    pub fn annotations_text(&self) -> &str {
        self.annotations.as_deref().map_or("", RawValue::get)
    }

    /// Each of `cached`, decoded.
    pub fn decode_all(cached: &[Arc<Self>]) -> Result<Vec<Arc<DynamicObject>>, serde_json::Error> {
        cached.iter().map(|o| o.decode().map(Arc::new)).collect()
    }

    /// Every top-level field but `apiVersion`, `kind` and `metadata`, as
    /// the JSON text of one object (what the tests check is kept).
    #[cfg(test)]
    fn rest(&self) -> &str {
        self.rest.get()
    }

    /// `obj` as a cache would hold it (tests and the memory benchmark).
    pub fn of(obj: &DynamicObject) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(&serde_json::to_vec(obj)?)
    }

    /// Gives the object its type when it came without one (a listing's
    /// items do: only watch events carry it).
    pub fn set_type_if_missing(&mut self, api_version: &str, kind: &str) {
        if self.types.is_none() {
            self.types = Some(shared_type(api_version, kind));
        }
    }
}

impl Labelled for CachedObject {
    fn label_map(&self) -> Cow<'_, BTreeMap<String, String>> {
        Cow::Owned(self.labels())
    }
}

/// A map of strings kept as text, decoded; empty when there is none or it
/// is not a map of strings.
fn decode_map_or_empty(text: Option<&RawValue>) -> BTreeMap<String, String> {
    decode_map(text).ok().flatten().unwrap_or_default()
}

/// A map of strings kept as text, decoded.
fn decode_map(
    text: Option<&RawValue>,
) -> Result<Option<BTreeMap<String, String>>, serde_json::Error> {
    text.map(|raw| serde_json::from_str(raw.get())).transpose()
}

/// The type of a cached object as kube's keys name it: one shared copy per
/// type. kube's store keys each object with its type; with `ApiResource`
/// itself that is five strings of its own per object (and per key the
/// driver keeps: queue, records, backoff).
#[derive(Debug, Clone, Eq)]
pub struct SharedType(Arc<ApiResource>);

impl SharedType {
    pub fn of(api: &ApiResource) -> Self {
        SharedType(shared(&RESOURCES, |known| known == api, || api.clone()))
    }
}

impl Deref for SharedType {
    type Target = ApiResource;

    fn deref(&self) -> &ApiResource {
        &self.0
    }
}

impl PartialEq for SharedType {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

// By content, as equality falls back to: a type past `SHARED` is not shared.
impl Hash for SharedType {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl Resource for CachedObject {
    type DynamicType = SharedType;
    type Scope = DynamicResourceScope;

    fn group(dt: &SharedType) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &SharedType) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &SharedType) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &SharedType) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &SharedType) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// At most this many types are shared; past it (a process watching more
/// types than any controller set names) each new one is a copy of its own.
const SHARED: usize = 256;

static TYPES: Mutex<Vec<Arc<TypeMeta>>> = Mutex::new(Vec::new());
static RESOURCES: Mutex<Vec<Arc<ApiResource>>> = Mutex::new(Vec::new());

/// The shared copy of a type: the one in `pool` that `is` finds, or a new
/// one (`make`), kept while the pool has room. A handful of types per
/// process: a scan is all it takes.
fn shared<T>(
    pool: &Mutex<Vec<Arc<T>>>,
    is: impl Fn(&T) -> bool,
    make: impl FnOnce() -> T,
) -> Arc<T> {
    let mut pool = pool.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = pool.iter().find(|t| is(t)) {
        return Arc::clone(known);
    }
    let new = Arc::new(make());
    if pool.len() < SHARED {
        pool.push(Arc::clone(&new));
    }
    new
}

fn shared_type(api_version: &str, kind: &str) -> Arc<TypeMeta> {
    let is = |t: &TypeMeta| t.api_version == api_version && t.kind == kind;
    shared(&TYPES, is, || TypeMeta {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })
}

/// `ObjectMeta`'s fields but `managedFields`, which serde skips unread
/// (k8s-openapi's own `ObjectMeta` would decode them).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    annotations: Option<Box<RawValue>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<Box<RawValue>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

/// What a cache keeps of an object's metadata: the decoded part, and the
/// labels and annotations as text.
#[derive(Default)]
struct Split {
    meta: ObjectMeta,
    labels: Option<Box<RawValue>>,
    annotations: Option<Box<RawValue>>,
}

impl Metadata {
    fn split(self) -> Split {
        let m = self;
        let meta = ObjectMeta {
            annotations: None,
            creation_timestamp: m.creation_timestamp,
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            generate_name: m.generate_name,
            generation: m.generation,
            labels: None,
            managed_fields: None,
            name: m.name,
            namespace: m.namespace,
            owner_references: m.owner_references,
            resource_version: m.resource_version,
            self_link: m.self_link,
            uid: m.uid,
        };
        Split {
            meta,
            labels: m.labels,
            annotations: m.annotations,
        }
    }
}

// Hand-written: serde's `flatten` would gather the other fields into its own
// buffer, where a `RawValue` cannot be read.
impl<'de> Deserialize<'de> for CachedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = CachedObject;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CachedObject, A::Error> {
        let mut api_version: Option<String> = None;
        let mut kind: Option<String> = None;
        let mut metadata: Option<Metadata> = None;
        let mut rest = String::from("{");
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "apiVersion" => api_version = map.next_value()?,
                "kind" => kind = map.next_value()?,
                "metadata" => metadata = map.next_value()?,
                _ => {
                    let value: Box<RawValue> = map.next_value()?;
                    if rest.len() > 1 {
                        rest.push(',');
                    }
                    let key = serde_json::to_string(key.as_ref()).map_err(de::Error::custom)?;
                    rest.push_str(&key);
                    rest.push(':');
                    rest.push_str(value.get());
                }
            }
        }
        rest.push('}');
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(shared_type(&api_version, &kind)),
            _ => None,
        };
        let Split {
            meta: metadata,
            labels,
            annotations,
        } = metadata.map(Metadata::split).unwrap_or_default();
        Ok(CachedObject {
            types,
            metadata,
            labels,
            annotations,
            rest: RawValue::from_string(rest).map_err(de::Error::custom)?,
        })
    }
}

#[cfg(test)]
mod tests;
