//! Hook requests built exactly as Metacontroller builds them
//! (docs/metacontroller.md §1.2, §1.3, §1.6) and hook responses decoded as it
//! decodes them (docs/metacontroller.md §1.4): pure.

pub mod decorator;
mod written;

pub use written::{ControllerJson, ObjectJson, ObjectMapJson, body};

use crate::config::HookVersion;
use crate::decide::model::{ResolvedType, key_of};
use kube::core::DynamicObject;
use metahook_core::protocol::RelatedResourceRule;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Objects of one type, as a request map's inner entries.
pub struct TypedObjects<'a> {
    pub resource: &'a ResolvedType,
    pub objects: &'a [Arc<DynamicObject>],
}

/// The `children`/`related` map: every listed type present (possibly `{}`),
/// inner keys per hook version. With v1 and a namespaced parent, objects in
/// another namespace (and cluster-scoped ones) are dropped, as Metacontroller
/// does.
pub fn object_map<'a>(
    types: &[TypedObjects<'a>],
    version: HookVersion,
    parent_namespace: Option<&str>,
) -> ObjectMapJson<'a> {
    let mut outer = ObjectMapJson::new();
    for typed in types {
        let objects: &'a [Arc<DynamicObject>] = typed.objects;
        let mut inner = std::collections::BTreeMap::new();
        for obj in objects {
            let name = obj.metadata.name.as_deref().unwrap_or_default();
            let namespace = obj
                .metadata
                .namespace
                .as_deref()
                .filter(|ns| !ns.is_empty());
            let key = match (version, parent_namespace) {
                (HookVersion::V2, _) => key_of(namespace, name),
                (HookVersion::V1, Some(parent_ns)) => {
                    if namespace != Some(parent_ns) {
                        continue;
                    }
                    name.to_owned()
                }
                (HookVersion::V1, None) => key_of(namespace, name),
            };
            inner.insert(key, ObjectJson(obj.as_ref()));
        }
        // Types can repeat in `related` (several rules on one type): merge.
        outer
            .entry(typed.resource.map_key())
            .or_default()
            .extend(inner);
    }
    outer
}

/// An object as JSON, `apiVersion` and `kind` included.
pub fn object_json(obj: &DynamicObject) -> Value {
    serde_json::to_value(obj).unwrap_or(Value::Null)
}

/// A sync or finalize request (docs/metacontroller.md §1.3).
pub fn sync_request(
    controller: &Value,
    parent: &DynamicObject,
    children: &ObjectMapJson<'_>,
    related: &ObjectMapJson<'_>,
    finalizing: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    body(
        ("children", children),
        controller,
        finalizing,
        ("parent", parent),
        related,
    )
}

/// A customize request (docs/metacontroller.md §1.6).
pub fn customize_request(
    controller: &Value,
    parent: &DynamicObject,
) -> Result<Vec<u8>, serde_json::Error> {
    #[derive(serde::Serialize)]
    struct CustomizeRequest<'a> {
        controller: ControllerJson<'a>,
        parent: ObjectJson<'a>,
    }
    serde_json::to_vec(&CustomizeRequest {
        controller: ControllerJson(controller),
        parent: ObjectJson(parent),
    })
}

/// A sync or finalize response (docs/metacontroller.md §1.4). Absent or
/// `null` fields take Metacontroller's defaults: no status, no children.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResponse {
    pub status: Option<Map<String, Value>>,
    pub children: Vec<Value>,
    pub resync_after_seconds: f64,
    pub finalized: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeResponseError {
    #[error("the response is not valid JSON")]
    Json(#[source] serde_json::Error),
    #[error("unknown top-level key {0:?} (a v2 hook's response is decoded strictly)")]
    UnknownKey(String),
    #[error("`{key}` has the wrong type")]
    WrongType {
        key: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("children[{0}] is null or not an object")]
    ChildNotObject(usize),
}

const SYNC_KEYS: &[&str] = &["status", "children", "resyncAfterSeconds", "finalized"];

/// Decodes a 200 body. `strict` (the v2 default) rejects unknown top-level
/// keys; keys are case-sensitive either way. `{}` and `null` are valid.
pub fn decode_sync_response(
    body: &[u8],
    strict: bool,
) -> Result<HookResponse, DecodeResponseError> {
    let Some(map) = top_level(body, strict, SYNC_KEYS)? else {
        return Ok(HookResponse::default());
    };
    Ok(HookResponse {
        status: field(&map, "status")?,
        children: objects(&map, "children")?,
        resync_after_seconds: field(&map, "resyncAfterSeconds")?,
        finalized: field(&map, "finalized")?,
    })
}

/// A response's top level: `None` for `null`, else an object whose keys
/// are `keys` when `strict` (case-sensitive either way).
pub(crate) fn top_level(
    body: &[u8],
    strict: bool,
    keys: &[&str],
) -> Result<Option<Map<String, Value>>, DecodeResponseError> {
    let value: Value = serde_json::from_slice(body).map_err(DecodeResponseError::Json)?;
    let map = match value {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        other => {
            return Err(DecodeResponseError::Json(serde::de::Error::custom(
                format!("expected an object, got {other}"),
            )));
        }
    };
    if strict && let Some(key) = map.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(DecodeResponseError::UnknownKey(key.clone()));
    }
    Ok(Some(map))
}

/// A top-level field; absent or `null` is its zero value, as Go decodes it.
pub(crate) fn field<T: for<'de> Deserialize<'de> + Default>(
    map: &Map<String, Value>,
    key: &'static str,
) -> Result<T, DecodeResponseError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => {
            T::deserialize(v).map_err(|source| DecodeResponseError::WrongType { key, source })
        }
    }
}

/// A top-level list of objects (desired children, attachments).
pub(crate) fn objects(
    map: &Map<String, Value>,
    key: &'static str,
) -> Result<Vec<Value>, DecodeResponseError> {
    let objects: Vec<Value> = field(map, key)?;
    match objects.iter().position(|c| !c.is_object()) {
        Some(i) => Err(DecodeResponseError::ChildNotObject(i)),
        None => Ok(objects),
    }
}

/// Decodes a customize response.
pub fn decode_customize_response(
    body: &[u8],
    strict: bool,
) -> Result<Vec<RelatedResourceRule>, DecodeResponseError> {
    let Some(map) = top_level(body, strict, &["relatedResources"])? else {
        return Ok(Vec::new());
    };
    match map.get("relatedResources") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => Vec::<RelatedResourceRule>::deserialize(v).map_err(|source| {
            DecodeResponseError::WrongType {
                key: "relatedResources",
                source,
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::{ApiResource, GroupVersionKind};

    fn resource(group: &str, version: &str, kind: &str, namespaced: bool) -> ResolvedType {
        ResolvedType {
            api: ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)),
            namespaced,
        }
    }

    fn obj(ar: &ResolvedType, ns: Option<&str>, name: &str) -> Arc<DynamicObject> {
        let mut o = DynamicObject::new(name, &ar.api);
        o.metadata.namespace = ns.map(str::to_owned);
        Arc::new(o)
    }

    #[test]
    fn map_keys_follow_the_hook_version() {
        let deploy = resource("apps", "v1", "Deployment", true);
        let ns = resource("", "v1", "Namespace", false);
        let deploys = [
            obj(&deploy, Some("shop"), "web"),
            obj(&deploy, Some("other"), "x"),
        ];
        let namespaces = [obj(&ns, None, "shop")];
        let types = [
            TypedObjects {
                resource: &deploy,
                objects: &deploys,
            },
            TypedObjects {
                resource: &ns,
                objects: &namespaces,
            },
        ];
        let map = |version, namespace| {
            serde_json::to_value(object_map(&types, version, namespace)).unwrap()
        };
        let v2 = map(HookVersion::V2, Some("shop"));
        let keys = |v: &Value, t: &str| -> Vec<String> {
            v[t].as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(&v2, "Deployment.apps/v1"), ["other/x", "shop/web"]);
        assert_eq!(keys(&v2, "Namespace.v1"), ["shop"]);
        // v1 with a namespaced parent: names only; other namespaces and
        // cluster-scoped objects dropped, the type still present.
        let v1 = map(HookVersion::V1, Some("shop"));
        assert_eq!(keys(&v1, "Deployment.apps/v1"), ["web"]);
        assert!(keys(&v1, "Namespace.v1").is_empty());
        // v1 with a cluster-scoped parent: namespace/name for namespaced objects.
        let v1c = map(HookVersion::V1, None);
        assert_eq!(keys(&v1c, "Deployment.apps/v1"), ["other/x", "shop/web"]);
        assert_eq!(v1c["Deployment.apps/v1"]["shop/web"]["kind"], "Deployment");
        assert_eq!(
            v1c["Deployment.apps/v1"]["shop/web"]["apiVersion"],
            "apps/v1"
        );
    }

    /// The request written straight out is the one the `Value` tree
    /// gave, byte for byte.
    #[test]
    fn a_sync_request_is_written_as_its_tree_was() {
        let fixture: Value =
            serde_json::from_slice(include_bytes!("../../fixtures/hello/ready.json")).unwrap();
        let parent: DynamicObject = serde_json::from_value(fixture["parent"].clone()).unwrap();
        let child: DynamicObject = serde_json::from_value(
            fixture["children"]["Deployment.apps/v1"]["default/hello"].clone(),
        )
        .unwrap();
        let deployments = resource("apps", "v1", "Deployment", true);
        let children = [Arc::new(child)];
        let typed = [TypedObjects {
            resource: &deployments,
            objects: &children,
        }];
        let map = object_map(&typed, HookVersion::V2, Some("default"));
        let controller = &fixture["controller"];
        for finalizing in [false, true] {
            let written =
                sync_request(controller, &parent, &map, &ObjectMapJson::new(), finalizing).unwrap();
            let mut with_status = controller.clone();
            if let Some(c) = with_status.as_object_mut() {
                c.entry("status").or_insert_with(|| serde_json::json!({}));
            }
            let tree = serde_json::to_vec(&serde_json::json!({
                "controller": with_status,
                "parent": object_json(&parent),
                "children": {"Deployment.apps/v1": {"default/hello": object_json(&children[0])}},
                "related": {},
                "finalizing": finalizing,
            }))
            .unwrap();
            assert_eq!(String::from_utf8(written), String::from_utf8(tree));
        }
    }

    #[test]
    fn responses_decode_as_metacontroller_does() {
        let full = br#"{"status":{"a":1},"children":[{"kind":"X"}],"resyncAfterSeconds":1.5,"finalized":true}"#;
        let r = decode_sync_response(full, true).unwrap();
        assert_eq!(r.status.unwrap()["a"], 1);
        assert_eq!(r.children.len(), 1);
        assert_eq!(r.resync_after_seconds, 1.5);
        assert!(r.finalized);
        assert_eq!(
            decode_sync_response(b"{}", true).unwrap(),
            HookResponse::default()
        );
        assert_eq!(
            decode_sync_response(b"null", true).unwrap(),
            HookResponse::default()
        );
        assert!(decode_sync_response(b"", false).is_err());
        let unknown = br#"{"status":{},"Children":[]}"#;
        assert!(matches!(
            decode_sync_response(unknown, true),
            Err(DecodeResponseError::UnknownKey(k)) if k == "Children"
        ));
        assert!(
            decode_sync_response(unknown, false)
                .unwrap()
                .children
                .is_empty()
        );
        assert!(matches!(
            decode_sync_response(br#"{"children":[null]}"#, false),
            Err(DecodeResponseError::ChildNotObject(0))
        ));
        assert!(matches!(
            decode_sync_response(br#"{"finalized":"yes"}"#, false),
            Err(DecodeResponseError::WrongType {
                key: "finalized",
                ..
            })
        ));
        let rules = decode_customize_response(
            br#"{"relatedResources":[{"apiVersion":"apps/v1","resource":"deployments","names":["a"]}]}"#,
            true,
        )
        .unwrap();
        assert_eq!(rules[0].resource, "deployments");
    }
}
