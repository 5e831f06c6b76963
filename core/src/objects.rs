//! Read-side views of the objects in a hook request.
//!
//! Metacontroller sends every object whole (`managedFields` and all). These
//! views name only the fields the hooks read; serde skips the rest without
//! building it, which is most of the cost of a large request.
//!
//! They also bound what decoding builds, whatever the request
//! (docs/robustness.md, "Hostile shapes"): a list or map of which the hooks
//! read one entry keeps that entry, not the list (owner references,
//! containers, annotations, labels: each entry is still checked for its
//! type); a name is at most as long as Kubernetes allows, since the hooks
//! copy the parent's into every child they desire; and a request holds at
//! most [`Observed::MAX`] objects of a type ([`crate::protocol::ObjectMap`]).

use crate::decode::strip_position;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;

/// The longest `metadata.name` Kubernetes accepts (a DNS-1123 subdomain).
pub const MAX_NAME_LEN: usize = 253;
/// The longest `metadata.namespace` (a DNS-1123 label).
pub const MAX_NAMESPACE_LEN: usize = 63;
/// Longer than any UID the API server writes (36 characters).
pub const MAX_UID_LEN: usize = 128;

/// A type of object that may appear in a request's `children` or `related`,
/// and the most of them one request may hold. Past it the request is
/// refused (422): what a hook builds grows with the objects, and no parent
/// of these controllers has that many (docs/robustness.md).
pub trait Observed {
    /// At most this many objects of the type in one request.
    const MAX: usize;
}

/// Which annotations a [`Meta`] keeps: a view names the ones its hook
/// reads, and the rest are checked to be strings and not kept (what a hook
/// holds must not grow with what a user writes).
pub trait KeptAnnotations {
    /// The keys of the annotations kept.
    const KEYS: &'static [&'static str];
}

/// Keeps no annotation.
impl KeptAnnotations for () {
    const KEYS: &'static [&'static str] = &[];
}

/// The metadata fields a hook reads: name, namespace, uid, generation,
/// the creation and deletion times, the controller owner reference, and
/// the annotations `A` names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    rename_all = "camelCase",
    default,
    expecting = "object metadata",
    bound(deserialize = "A: KeptAnnotations")
)]
pub struct Meta<A = ()> {
    /// `metadata.name` (refused past [`MAX_NAME_LEN`] bytes).
    #[serde(deserialize_with = "name")]
    pub name: String,
    /// `metadata.namespace`; `None` for a cluster-scoped object.
    #[serde(deserialize_with = "namespace")]
    pub namespace: Option<String>,
    /// `metadata.uid`: the object's identity, which owner references name
    /// (one deleted and made again under the same name has a new one).
    #[serde(deserialize_with = "uid")]
    pub uid: Option<String>,
    /// `metadata.generation`: raised by the API server at each change of
    /// the spec, not of the status.
    pub generation: Option<i64>,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Time>,
    /// `metadata.deletionTimestamp`: set once the object is being deleted
    /// (it stays while a finalizer holds it).
    pub deletion_timestamp: Option<Time>,
    /// Read by no hook: checked to be a map of strings, not kept.
    #[serde(rename = "labels")]
    _labels: StringMap,
    /// Only those `A` names; the rest are checked to be strings, but the
    /// last-applied copies of the whole object ([`LAST_APPLIED`]) are
    /// skipped unread.
    #[serde(deserialize_with = "annotations::<A, _>")]
    pub annotations: BTreeMap<String, String>,
    /// The first owner reference marked `controller: true`, the only one a
    /// hook reads; every reference is still checked for its type.
    #[serde(rename = "ownerReferences", deserialize_with = "controller_ref")]
    pub controller: Option<OwnerRef>,
    #[serde(skip)]
    _kept: std::marker::PhantomData<fn() -> A>,
}

impl<A> Default for Meta<A> {
    fn default() -> Self {
        Meta {
            name: String::new(),
            namespace: None,
            uid: None,
            generation: None,
            creation_timestamp: None,
            deletion_timestamp: None,
            _labels: StringMap,
            annotations: BTreeMap::new(),
            controller: None,
            _kept: std::marker::PhantomData,
        }
    }
}

/// How many labels, and how many annotations, a parent's metadata keeps:
/// the first ones; the rest are checked to be strings and not kept.
pub const MAX_KEPT_ENTRIES: usize = 64;

/// A parent's metadata as a hook reads it: [`Meta`]'s fields, and its labels
/// and annotations (at most [`MAX_KEPT_ENTRIES`] of each; the last-applied
/// copies of the whole object skipped) — to copy onto children, or to read
/// settings a user puts there.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, expecting = "object metadata")]
pub struct ParentMeta {
    /// `metadata.name` (refused past [`MAX_NAME_LEN`] bytes).
    #[serde(deserialize_with = "name")]
    pub name: String,
    /// `metadata.namespace`; `None` for a cluster-scoped object.
    #[serde(deserialize_with = "namespace")]
    pub namespace: Option<String>,
    /// `metadata.uid`: the object's identity, which owner references name
    /// (one deleted and made again under the same name has a new one).
    #[serde(deserialize_with = "uid")]
    pub uid: Option<String>,
    /// `metadata.generation`: raised by the API server at each change of
    /// the spec, not of the status.
    pub generation: Option<i64>,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Time>,
    /// `metadata.deletionTimestamp`: set once the object is being deleted
    /// (it stays while a finalizer holds it).
    pub deletion_timestamp: Option<Time>,
    /// The first [`MAX_KEPT_ENTRIES`] labels, as the request lists them.
    #[serde(deserialize_with = "first_labels")]
    pub labels: BTreeMap<String, String>,
    /// The first [`MAX_KEPT_ENTRIES`] annotations, as the request lists
    /// them, but the last-applied copies of the whole object
    /// ([`LAST_APPLIED`]).
    #[serde(deserialize_with = "first_annotations")]
    pub annotations: BTreeMap<String, String>,
}

fn first_labels<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(Firsts { skip: &[] })
}

fn first_annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(Firsts {
        skip: &LAST_APPLIED,
    })
}

/// Visits a map of strings, keeping the first [`MAX_KEPT_ENTRIES`] entries
/// but those in `skip` (skipped unread), and checking the rest are strings.
struct Firsts {
    skip: &'static [&'static str],
}

impl<'de> Visitor<'de> for Firsts {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.skip.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
            } else if out.len() < MAX_KEPT_ENTRIES {
                out.insert(key, map.next_value()?);
            } else {
                map.next_value::<IgnoredString>()?;
            }
        }
        Ok(out)
    }
}

/// A string at most `N` bytes long, refused otherwise.
fn bounded<'de, D: Deserializer<'de>, const N: usize>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    if text.len() > N {
        return Err(serde::de::Error::custom(format_args!(
            "{} bytes long; Kubernetes allows at most {N}",
            text.len()
        )));
    }
    Ok(text)
}

fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    bounded::<D, MAX_NAME_LEN>(d)
}

fn namespace<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<Bounded<MAX_NAMESPACE_LEN>>::deserialize(d).map(|o| o.map(|b| b.0))
}

fn uid<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<Bounded<MAX_UID_LEN>>::deserialize(d).map(|o| o.map(|b| b.0))
}

/// [`bounded`] as a type, for inside an `Option`.
struct Bounded<const N: usize>(String);

impl<'de, const N: usize> Deserialize<'de> for Bounded<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        bounded::<D, N>(d).map(Bounded)
    }
}

/// A map of strings, checked and not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct StringMap;

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Filtered {
            keep: &[],
            skip: &[],
        })
        .map(|_| StringMap)
    }
}

/// A string, checked and not kept.
struct IgnoredString;

impl<'de> Deserialize<'de> for IgnoredString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(IgnoredString)
    }
}

impl Visitor<'_> for IgnoredString {
    type Value = IgnoredString;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<IgnoredString, E> {
        Ok(IgnoredString)
    }
}

/// What [`Filtered`] does with an entry, by its key (read without copying).
enum Entry {
    Keep(&'static str),
    Skip,
    Check,
}

struct EntryOf<'a>(&'a Filtered);

impl<'de> serde::de::DeserializeSeed<'de> for EntryOf<'_> {
    type Value = Entry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Entry, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for EntryOf<'_> {
    type Value = Entry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Entry, E> {
        Ok(match self.0.keep.iter().find(|k| **k == key) {
            Some(kept) => Entry::Keep(kept),
            None if self.0.skip.contains(&key) => Entry::Skip,
            None => Entry::Check,
        })
    }
}

/// Visits a map of strings, keeping the entries whose keys are in `keep`,
/// skipping the values of those in `skip` unread, and checking the others
/// are strings without keeping them.
struct Filtered {
    keep: &'static [&'static str],
    skip: &'static [&'static str],
}

impl<'de> Visitor<'de> for Filtered {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(entry) = map.next_key_seed(EntryOf(&self))? {
            match entry {
                Entry::Keep(key) => {
                    out.insert(key.to_owned(), map.next_value()?);
                }
                Entry::Skip => {
                    map.next_value::<IgnoredAny>()?;
                }
                Entry::Check => {
                    map.next_value::<IgnoredString>()?;
                }
            }
        }
        Ok(out)
    }
}

/// Annotations holding a copy of the whole object as last applied, by
/// `kubectl apply` and by Metacontroller on every child. No hook reads them,
/// and unescaping them was most of the cost of decoding a child: they are
/// skipped, not kept.
pub const LAST_APPLIED: [&str; 2] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    "metacontroller.k8s.io/last-applied-configuration",
];

fn annotations<'de, A: KeptAnnotations, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(Filtered {
        keep: A::KEYS,
        skip: &LAST_APPLIED,
    })
}

fn controller_ref<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OwnerRef>, D::Error> {
    first_where(d, |owner: &OwnerRef| owner.controller == Some(true))
}

fn first_container<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ObservedContainer>, D::Error> {
    first_where(d, |_| true)
}

/// The first element of a list for which `keep` holds; every element is
/// decoded (and so checked), one at a time, and the others dropped.
fn first_where<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    keep: fn(&T) -> bool,
) -> Result<Option<T>, D::Error> {
    struct First<T>(fn(&T) -> bool);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for First<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(element) = seq.next_element::<T>()? {
                if found.is_none() && (self.0)(&element) {
                    found = Some(element);
                }
            }
            Ok(found)
        }
    }
    d.deserialize_seq(First(keep))
}

impl<A> Meta<A> {
    /// The owner reference marked `controller: true`, if any.
    pub fn controller(&self) -> Option<&OwnerRef> {
        self.controller.as_ref()
    }

    /// Whether the object's controller is the object with this UID. An
    /// unknown UID controls nothing: when in doubt, the object is not ours.
    pub fn is_controlled_by(&self, uid: Option<&str>) -> bool {
        match (self.controller(), uid) {
            (Some(owner), Some(uid)) => owner.uid == uid,
            _ => false,
        }
    }
}

/// An owner reference (an entry of `metadata.ownerReferences`): the object
/// that owns this one, whose deletion deletes it too.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerRef {
    /// The owner's `apiVersion`.
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's UID: which object of that name, so that one made again
    /// under the same name is not taken for the owner.
    pub uid: String,
    /// Whether the owner is the object's controller, the one that manages
    /// it (`controller: true`); an object has at most one.
    pub controller: Option<bool>,
}

/// A parent object. `spec` and `status` are read leniently: a spec that does
/// not fit the type is kept as an error for the hook to report in the status
/// (nothing is lost, the user is told why), and an unreadable status is
/// treated as absent (it is only read to carry condition times over).
#[derive(Debug, Clone, PartialEq)]
pub struct ParentObject<Spec, Status> {
    /// `apiVersion`: `example.com/v1`.
    pub api_version: String,
    /// `kind`: `Note`.
    pub kind: String,
    /// Its metadata, with the labels and annotations to copy to children.
    pub metadata: ParentMeta,
    /// Its spec, or why it does not fit `Spec`: for the status to say,
    /// since the user can fix it.
    pub spec: Result<Spec, SpecError>,
    /// Its current status: `None` when it has none yet, or one that does
    /// not fit `Status`.
    pub status: Option<Status>,
}

/// Why a parent's spec could not be read: the field path and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SpecError {
    /// Where: `spec`, or a field under it such as `spec.replicas`.
    pub path: String,
    /// What was wrong there: `invalid type: string "three", expected i32`.
    pub message: String,
}

impl<'de, Spec: DeserializeOwned, Status: DeserializeOwned> Deserialize<'de>
    for ParentObject<Spec, Status>
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", expecting = "a Kubernetes object")]
        struct Raw {
            #[serde(default)]
            api_version: String,
            #[serde(default)]
            kind: String,
            metadata: ParentMeta,
            // Kept as text, then parsed straight into the types: a
            // `serde_json::Value` tree in between cost a fifth of a Hello
            // sync's decoding.
            #[serde(default)]
            spec: Option<Box<RawValue>>,
            #[serde(default)]
            status: Option<Box<RawValue>>,
        }
        let raw = Raw::deserialize(d)?;
        let spec = read_spec(raw.spec.as_deref().map_or("{}", RawValue::get));
        let status = raw
            .status
            .and_then(|s| serde_json::from_str::<Status>(s.get()).ok());
        Ok(ParentObject {
            api_version: raw.api_version,
            kind: raw.kind,
            metadata: raw.metadata,
            spec,
            status,
        })
    }
}

fn read_spec<Spec: DeserializeOwned>(text: &str) -> Result<Spec, SpecError> {
    // The fast path; the field path is worked out only for a bad spec.
    if let Ok(spec) = serde_json::from_str(text) {
        return Ok(spec);
    }
    // A raw value is one whole JSON value: no trailing text to check.
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.path().to_string();
        SpecError {
            path: if inner == "." {
                "spec".to_owned()
            } else {
                format!("spec.{inner}")
            },
            message: strip_position(e.inner()),
        }
    })
}

/// An observed `apps/v1` Deployment, as far as the hooks read it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, expecting = "a Deployment")]
pub struct ObservedDeployment {
    /// `apiVersion`: `apps/v1`.
    pub api_version: String,
    /// `kind`: `Deployment`.
    pub kind: String,
    /// Its metadata, no annotation kept.
    pub metadata: Meta,
    /// What it is asked to run.
    pub spec: ObservedDeploymentSpec,
    /// What its controller reports of its pods (all zero before the first
    /// report).
    pub status: ObservedDeploymentStatus,
}

impl crate::Object for ObservedDeployment {
    fn type_ref() -> crate::TypeRef {
        crate::TypeRef::new("apps/v1", "Deployment", "deployments")
    }

    /// A Hello or a Foo runs one Deployment; more are only ever orphans
    /// adopted by label, and held.
    const MAX: usize = 1000;

    fn name(&self) -> &str {
        &self.metadata.name
    }

    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
}

impl ObservedDeployment {
    /// Whether the object says it is an `apps/v1` Deployment (one
    /// decoded from another group, or made with `Default`, does not).
    pub fn is_deployment(&self) -> bool {
        self.kind == "Deployment" && self.api_version == "apps/v1"
    }

    /// The image of the first container, if there is one.
    pub fn first_image(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .first_container
            .as_ref()
            .and_then(|c| c.image.as_deref())
    }

    /// `spec.replicas` as the API server reads it: absent means 1.
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }
}

/// A Deployment's spec, as far as the hooks read it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedDeploymentSpec {
    /// `spec.replicas`: absent means 1 ([`ObservedDeployment::replicas`]).
    pub replicas: Option<i32>,
    /// The template of its pods.
    pub template: ObservedPodTemplate,
}

/// A Deployment's pod template, as far as the hooks read it: its spec.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedPodTemplate {
    /// The spec of the pods.
    pub spec: ObservedPodSpec,
}

/// A pod spec, as far as the hooks read it: its first container.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedPodSpec {
    /// The first container, the only one a hook reads; every one is still
    /// checked for its type.
    #[serde(rename = "containers", deserialize_with = "first_container")]
    pub first_container: Option<ObservedContainer>,
}

/// A container, as far as the hooks read it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedContainer {
    /// Its name in the pod.
    pub name: String,
    /// Its image: `nginx:1.27`.
    pub image: Option<String>,
}

/// Replica counts a Deployment reports; absent counts are zero, as in the API.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedDeploymentStatus {
    /// Pods it runs, of any template (`status.replicas`).
    pub replicas: i32,
    /// Pods ready to serve (`status.readyReplicas`).
    pub ready_replicas: i32,
    /// Pods ready for at least the Deployment's `minReadySeconds`
    /// (`status.availableReplicas`).
    pub available_replicas: i32,
    /// Pods of the current template (`status.updatedReplicas`).
    pub updated_replicas: i32,
    /// The generation its controller last acted on: the counts are of an
    /// older spec while it is below `metadata.generation`.
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The one annotation a test's view reads.
    #[derive(Debug, Clone, PartialEq)]
    struct SaidAt;

    impl KeptAnnotations for SaidAt {
        const KEYS: &'static [&'static str] = &["example.com/said-at"];
    }

    #[test]
    fn only_the_annotations_a_view_names_are_kept() {
        let annotations = json!({
            "name": "x",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"X\"}",
                "metacontroller.k8s.io/last-applied-configuration": "{\"kind\":\"X\"}",
                "example.com/said-at": "2026-11-22T03:00:00Z",
                "example.com/other": "kept by nobody"
            }
        });
        let meta: Meta<SaidAt> = serde_json::from_value(annotations.clone()).unwrap();
        assert_eq!(
            meta.annotations,
            BTreeMap::from([(
                "example.com/said-at".to_owned(),
                "2026-11-22T03:00:00Z".to_owned()
            )])
        );
        let meta: Meta = serde_json::from_value(annotations).unwrap();
        assert!(meta.annotations.is_empty());
    }

    #[test]
    fn a_parent_keeps_its_first_labels_and_annotations_but_last_applied_copies() {
        let many: serde_json::Map<String, serde_json::Value> =
            (0..100).map(|i| (format!("k{i:03}"), json!("v"))).collect();
        let meta: ParentMeta = serde_json::from_value(json!({
            "name": "p",
            "labels": many,
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
                "example.com/greeting": "hi"
            }
        }))
        .unwrap();
        assert_eq!(meta.labels.len(), MAX_KEPT_ENTRIES);
        assert_eq!(meta.labels.keys().next().unwrap(), "k000");
        assert_eq!(
            meta.annotations,
            BTreeMap::from([("example.com/greeting".to_owned(), "hi".to_owned())])
        );
        assert!(serde_json::from_value::<ParentMeta>(json!({"labels": {"a": 1}})).is_err());
    }

    #[test]
    fn annotations_of_the_wrong_shape_are_still_refused() {
        assert!(serde_json::from_value::<Meta>(json!({"annotations": {"a": 1}})).is_err());
        assert!(serde_json::from_value::<Meta>(json!({"annotations": null})).is_err());
        assert!(serde_json::from_value::<Meta>(json!({"annotations": []})).is_err());
    }
}
