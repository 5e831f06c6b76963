//! Read-side views of the objects in a hook request.
//!
//! Metacontroller sends every object whole (`managedFields` and all). These
//! views name only the fields the hooks read; serde skips the rest without
//! building it, which is most of the cost of a large request.

use crate::decode::strip_position;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;

/// The metadata fields the hooks read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, expecting = "object metadata")]
pub struct Meta {
    pub name: String,
    pub namespace: Option<String>,
    pub uid: Option<String>,
    pub generation: Option<i64>,
    pub creation_timestamp: Option<Time>,
    pub deletion_timestamp: Option<Time>,
    pub labels: BTreeMap<String, String>,
    /// Without the last-applied copies of the whole object (see
    /// [`LAST_APPLIED`]).
    #[serde(deserialize_with = "annotations")]
    pub annotations: BTreeMap<String, String>,
    pub owner_references: Vec<OwnerRef>,
}

/// Annotations holding a copy of the whole object as last applied, by
/// `kubectl apply` and by Metacontroller on every child. No hook reads them,
/// and unescaping them was most of the cost of decoding a child: they are
/// skipped, not kept.
pub const LAST_APPLIED: [&str; 2] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    "metacontroller.k8s.io/last-applied-configuration",
];

fn annotations<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    struct Annotations;
    impl<'de> Visitor<'de> for Annotations {
        type Value = BTreeMap<String, String>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                if LAST_APPLIED.contains(&key.as_str()) {
                    map.next_value::<IgnoredAny>()?;
                } else {
                    let value = map.next_value()?;
                    out.insert(key, value);
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(Annotations)
}

impl Meta {
    /// The owner reference marked `controller: true`, if any.
    pub fn controller(&self) -> Option<&OwnerRef> {
        self.owner_references
            .iter()
            .find(|r| r.controller == Some(true))
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

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub controller: Option<bool>,
}

/// A parent object. `spec` and `status` are read leniently: a spec that does
/// not fit the type is kept as an error for the hook to report in the status
/// (nothing is lost, the user is told why), and an unreadable status is
/// treated as absent (it is only read to carry condition times over).
#[derive(Debug, Clone, PartialEq)]
pub struct Parent<Spec, Status> {
    pub api_version: String,
    pub kind: String,
    pub metadata: Meta,
    pub spec: Result<Spec, SpecError>,
    pub status: Option<Status>,
}

/// Why a parent's spec could not be read: the field path and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SpecError {
    pub path: String,
    pub message: String,
}

impl<'de, Spec: DeserializeOwned, Status: DeserializeOwned> Deserialize<'de>
    for Parent<Spec, Status>
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", expecting = "a Kubernetes object")]
        struct Raw {
            #[serde(default)]
            api_version: String,
            #[serde(default)]
            kind: String,
            metadata: Meta,
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
        Ok(Parent {
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
    pub api_version: String,
    pub kind: String,
    pub metadata: Meta,
    pub spec: ObservedDeploymentSpec,
    pub status: ObservedDeploymentStatus,
}

impl ObservedDeployment {
    pub fn is_deployment(&self) -> bool {
        self.kind == "Deployment" && self.api_version == "apps/v1"
    }

    /// The image of the first container, if there is one.
    pub fn first_image(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .containers
            .first()
            .and_then(|c| c.image.as_deref())
    }

    /// `spec.replicas` as the API server reads it: absent means 1.
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedDeploymentSpec {
    pub replicas: Option<i32>,
    pub template: ObservedPodTemplate,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedPodTemplate {
    pub spec: ObservedPodSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedPodSpec {
    pub containers: Vec<ObservedContainer>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObservedContainer {
    pub name: String,
    pub image: Option<String>,
}

/// Replica counts a Deployment reports; absent counts are zero, as in the API.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservedDeploymentStatus {
    pub replicas: i32,
    pub ready_replicas: i32,
    pub available_replicas: i32,
    pub updated_replicas: i32,
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_applied_copies_are_skipped_and_other_annotations_kept() {
        let meta: Meta = serde_json::from_value(json!({
            "name": "x",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"X\"}",
                "metacontroller.k8s.io/last-applied-configuration": "{\"kind\":\"X\"}",
                "zundokokiyoshi.kaitoy.github.com/said-at": "2026-11-22T03:00:00Z"
            }
        }))
        .unwrap();
        assert_eq!(
            meta.annotations,
            BTreeMap::from([(
                "zundokokiyoshi.kaitoy.github.com/said-at".to_owned(),
                "2026-11-22T03:00:00Z".to_owned()
            )])
        );
    }

    #[test]
    fn annotations_of_the_wrong_shape_are_still_refused() {
        assert!(serde_json::from_value::<Meta>(json!({"annotations": {"a": 1}})).is_err());
        assert!(serde_json::from_value::<Meta>(json!({"annotations": null})).is_err());
        assert!(serde_json::from_value::<Meta>(json!({"annotations": []})).is_err());
    }
}
