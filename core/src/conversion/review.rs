//! The ConversionReview (`apiextensions.k8s.io/v1`) the API server sends a
//! conversion webhook, and the review it answers with: every object at the
//! version asked for, in the order sent, or a failure naming the object
//! that could not be converted.

use super::versions::{Parts, Version};
use crate::decode::{DecodeError, decode};
use crate::hook::Handler;
use crate::request::ParentType;
use serde::{Deserialize, Serialize};
use serde_json::value::{RawValue, to_raw_value};
use std::sync::Arc;

#[derive(Deserialize)]
struct WireReview {
    request: WireRequest,
}

#[derive(Deserialize)]
struct WireRequest {
    uid: String,
    #[serde(rename = "desiredAPIVersion")]
    desired_api_version: String,
    #[serde(default)]
    objects: Vec<Box<RawValue>>,
}

/// One object as sent. Its metadata is kept as text and sent back as it
/// came: the API server refuses a conversion that changes it (but for
/// labels and annotations), and a round trip through a type could.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireObject {
    api_version: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<Box<RawValue>>,
    #[serde(default)]
    spec: Option<Box<RawValue>>,
    #[serde(default)]
    status: Option<Box<RawValue>>,
}

/// One object as answered: only `apiVersion`, the spec and the status differ.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Converted<'a> {
    api_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Box<RawValue>>,
}

/// Why a review could not be converted; the API server shows the message
/// to the client whose read or write needed it.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("cannot convert to {desired}: the versions served are {known}")]
    UnknownDesired { desired: String, known: String },
    #[error("{object} is at {api_version}, not a version served ({known})")]
    UnknownVersion {
        object: String,
        api_version: String,
        known: String,
    },
    #[error("{object} does not decode as {api_version}: {source}")]
    Decode {
        object: String,
        api_version: String,
        source: DecodeError,
    },
    #[error("{object} could not be encoded as {api_version}: {source}")]
    Encode {
        object: String,
        api_version: String,
        source: serde_json::Error,
    },
}

/// The review a conversion webhook answers with.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Reply<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: Response<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    uid: &'a str,
    result: Outcome,
    converted_objects: Vec<Box<RawValue>>,
}

#[derive(Serialize)]
struct Outcome {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// The handler of a controller's `convert` path, converting between
/// `versions` (the hub's first) through the hub.
pub(crate) fn convert_handler<P: ParentType>(versions: Vec<Version<P>>) -> Handler {
    Arc::new(move |body, _now| {
        let review: WireReview = decode(body)?;
        let request = &review.request;
        let (result, converted_objects) =
            match convert_all(&versions, &request.desired_api_version, &request.objects) {
                Ok(objects) => (
                    Outcome {
                        status: "Success",
                        message: None,
                    },
                    objects,
                ),
                Err(failure) => (
                    Outcome {
                        status: "Failure",
                        message: Some(failure.to_string()),
                    },
                    Vec::new(),
                ),
            };
        Ok(serde_json::to_vec(&Reply {
            api_version: "apiextensions.k8s.io/v1",
            kind: "ConversionReview",
            response: Response {
                uid: &request.uid,
                result,
                converted_objects,
            },
        })?)
    })
}

/// Every object at `desired`, in order; the first that cannot be fails
/// them all (the API server takes all or nothing).
fn convert_all<P: ParentType>(
    versions: &[Version<P>],
    desired: &str,
    objects: &[Box<RawValue>],
) -> Result<Vec<Box<RawValue>>, Failure> {
    let known = || {
        versions
            .iter()
            .map(|v| v.api_version.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(to) = versions.iter().find(|v| v.api_version == desired) else {
        return Err(Failure::UnknownDesired {
            desired: desired.to_owned(),
            known: known(),
        });
    };
    objects
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            let at = format!("objects[{i}]");
            let object: WireObject =
                decode(raw.get().as_bytes()).map_err(|source| Failure::Decode {
                    object: at.clone(),
                    api_version: desired.to_owned(),
                    source: source.under(&at),
                })?;
            let object_label = label(&at, object.metadata.as_deref());
            let WireObject {
                api_version,
                kind,
                metadata,
                spec,
                status,
            } = object;
            if api_version == desired {
                return Ok(raw.clone());
            }
            let Some(from) = versions.iter().find(|v| v.api_version == api_version) else {
                return Err(Failure::UnknownVersion {
                    object: object_label,
                    api_version,
                    known: known(),
                });
            };
            let hub = (from.up)(&Parts { spec, status }).map_err(|source| Failure::Decode {
                object: object_label.clone(),
                api_version,
                source: source.under(&at),
            })?;
            let encode = |source| Failure::Encode {
                object: object_label.clone(),
                api_version: desired.to_owned(),
                source,
            };
            let parts = (to.down)(hub).map_err(encode)?;
            to_raw_value(&Converted {
                api_version: desired,
                kind: kind.as_deref(),
                metadata: metadata.as_deref(),
                spec: parts.spec,
                status: parts.status,
            })
            .map_err(encode)
        })
        .collect()
}

/// `objects[2] (shop/web)`: where the object is in the review, and its
/// name when its metadata has one.
fn label(at: &str, metadata: Option<&RawValue>) -> String {
    #[derive(Deserialize)]
    struct Name {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        namespace: Option<String>,
    }
    let name = metadata.and_then(|m| serde_json::from_str::<Name>(m.get()).ok());
    match name {
        Some(Name {
            name: Some(name),
            namespace: Some(ns),
        }) => format!("{at} ({ns}/{name})"),
        Some(Name {
            name: Some(name),
            namespace: None,
        }) => format!("{at} ({name})"),
        _ => at.to_owned(),
    }
}
