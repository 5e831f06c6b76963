//! A parent object, its spec and status read leniently.

use super::meta::ParentMeta;
use crate::conditions::Conditions;
use crate::decode::strip_position;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

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
    /// The conditions of its current status, whatever `Status` is (read
    /// bounded, [`Conditions`]): what [`crate::Request::conditions`] carries
    /// transition times over from.
    pub conditions: Conditions,
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
            .as_ref()
            .and_then(|s| serde_json::from_str::<Status>(s.get()).ok());
        let conditions = raw
            .status
            .and_then(|s| serde_json::from_str::<ConditionsOnly>(s.get()).ok())
            .map(|s| s.conditions)
            .unwrap_or_default();
        Ok(ParentObject {
            api_version: raw.api_version,
            kind: raw.kind,
            metadata: raw.metadata,
            spec,
            status,
            conditions,
        })
    }
}

/// A status as far as its conditions.
#[derive(Deserialize)]
struct ConditionsOnly {
    #[serde(default)]
    conditions: Conditions,
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
