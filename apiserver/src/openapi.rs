//! `/openapi/v2` and `/openapi/v3`: the group's schema, generated from the
//! Rust types (their doc comments are its descriptions), so that
//! kube-apiserver's aggregator merges it and `kubectl explain
//! reconcile.status` prints the documented fields. Built once.

use crate::object::{Reconcile, ReconcileList};
use crate::resource::{GROUP, GROUP_VERSION, KIND, LIST_KIND, RESOURCE, VERSION};
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// Our definitions' names are prefixed like Kubernetes' own
/// (`io.k8s.api.apps.v1.Deployment`), so none collides with another API's
/// in the aggregator's merged v2 document.
const PREFIX: &str = "dev.metahook.driver.v1alpha1.";

/// The served documents, as bytes.
#[derive(Debug)]
pub struct Documents {
    pub v2: Vec<u8>,
    /// `/openapi/v3`: where the group's document is.
    pub v3_root: Vec<u8>,
    /// `/openapi/v3/apis/<group>/<version>`.
    pub v3_group: Vec<u8>,
}

pub fn documents() -> &'static Documents {
    static DOCUMENTS: OnceLock<Documents> = OnceLock::new();
    DOCUMENTS.get_or_init(build)
}

/// The path of the group's v3 document under `/openapi/v3/`.
pub fn v3_group_path() -> String {
    format!("apis/{GROUP_VERSION}")
}

fn build() -> Documents {
    let schemas = schemas();
    let v3 = json!({
        "openapi": "3.0.0",
        "info": {"title": "metahook driver", "version": VERSION},
        "paths": paths("#/components/schemas/"),
        "components": {"schemas": schemas},
    });
    let v3_group = serde_json::to_vec(&v3).unwrap_or_default();
    // The hash lets clients cache the group's document until it changes.
    let hash = fnv1a(&v3_group);
    let v3_root = json!({"paths": {v3_group_path(): {
        "serverRelativeURL": format!("/openapi/v3/{}?hash={hash:016X}", v3_group_path())
    }}});
    let mut v2_definitions = Value::Object(schemas);
    to_swagger(&mut v2_definitions);
    let v2 = json!({
        "swagger": "2.0",
        "info": {"title": "metahook driver", "version": VERSION},
        "paths": paths("#/definitions/"),
        "definitions": v2_definitions,
    });
    Documents {
        v2: serde_json::to_vec(&v2).unwrap_or_default(),
        v3_root: serde_json::to_vec(&v3_root).unwrap_or_default(),
        v3_group,
    }
}

/// Every schema, named and cross-referenced as in `components.schemas`.
fn schemas() -> Map<String, Value> {
    let mut generator = SchemaSettings::openapi3().for_serialize().into_generator();
    generator.subschema_for::<Reconcile>();
    generator.subschema_for::<ReconcileList>();
    let definitions = generator.take_definitions(true);
    let rename = |name: &str| {
        if name.starts_with("io.k8s.") {
            name.to_owned()
        } else {
            format!("{PREFIX}{name}")
        }
    };
    let mut out = Map::new();
    for (name, mut schema) in definitions {
        rewrite_refs(&mut schema, &|r: &str| {
            r.strip_prefix("#/components/schemas/")
                .map(|n| format!("#/components/schemas/{}", rename(n)))
        });
        let gvk = match name.as_str() {
            "Reconcile" => Some(KIND),
            "ReconcileList" => Some(LIST_KIND),
            _ => None,
        };
        if let (Some(kind), Some(object)) = (gvk, schema.as_object_mut()) {
            object.insert(
                "x-kubernetes-group-version-kind".to_owned(),
                json!([{"group": GROUP, "version": VERSION, "kind": kind}]),
            );
        }
        out.insert(rename(&name), schema);
    }
    out
}

/// The three GET paths; `refs`: where the schemas are (v3 responses wrap
/// the schema in `content`, v2's hold it).
fn paths(refs: &str) -> Value {
    let ok = |schema: &str| {
        let schema = json!({"$ref": format!("{refs}{PREFIX}{schema}")});
        if refs.contains("components") {
            json!({"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}})
        } else {
            json!({"200": {"description": "OK", "schema": schema}})
        }
    };
    // kubectl explain finds a resource's kind by these two extensions of
    // its operations, as Kubernetes' own documents carry them.
    let operation = |id: &str, description: &str, action: &str, schema: &str| {
        json!({"get": {
            "operationId": id,
            "description": description,
            "responses": ok(schema),
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": GROUP, "version": VERSION, "kind": KIND},
        }})
    };
    let base = format!("/apis/{GROUP_VERSION}");
    json!({
        format!("{base}/{RESOURCE}"): operation("listReconcileForAllNamespaces",
            "list the last reconcile of every parent", "list", LIST_KIND),
        format!("{base}/namespaces/{{namespace}}/{RESOURCE}"): operation("listNamespacedReconcile",
            "list the last reconcile of every parent in a namespace", "list", LIST_KIND),
        format!("{base}/namespaces/{{namespace}}/{RESOURCE}/{{name}}"): operation("readNamespacedReconcile",
            "read the last reconcile of one parent", "get", KIND),
    })
}

/// OpenAPI 3 schemas as Swagger 2 definitions: other reference roots, no
/// `nullable`.
fn to_swagger(value: &mut Value) {
    rewrite_refs(value, &|r: &str| {
        r.strip_prefix("#/components/schemas/")
            .map(|n| format!("#/definitions/{n}"))
    });
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("nullable");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(value);
}

fn rewrite_refs(value: &mut Value, rewrite: &dyn Fn(&str) -> Option<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(r) if key == "$ref" => {
                        if let Some(new) = rewrite(r) {
                            *r = new;
                        }
                    }
                    _ => rewrite_refs(v, rewrite),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, rewrite)),
        _ => {}
    }
}

/// FNV-1a, 64 bits: a stable content hash with no dependency (not a
/// security boundary: a cache key).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    /// Every `$ref` in `doc` resolves inside it.
    fn refs_resolve(doc: &Value, root: &str, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    if key == "$ref" {
                        let name = v
                            .as_str()
                            .unwrap()
                            .strip_prefix(root)
                            .unwrap_or_else(|| panic!("{v}"));
                        let defs = if root.contains("components") {
                            &doc["components"]["schemas"]
                        } else {
                            &doc["definitions"]
                        };
                        assert!(
                            defs.get(name).is_some(),
                            "{name} is referenced but not defined"
                        );
                    } else {
                        refs_resolve(doc, root, v);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| refs_resolve(doc, root, v)),
            _ => {}
        }
    }

    #[test]
    fn the_v3_document_describes_reconcile_status_with_its_gvk() {
        let docs = documents();
        let v3 = parse(&docs.v3_group);
        let schemas = &v3["components"]["schemas"];
        let reconcile = &schemas["dev.metahook.driver.v1alpha1.Reconcile"];
        assert_eq!(
            reconcile["x-kubernetes-group-version-kind"],
            json!([{"group": "driver.metahook.dev", "version": "v1alpha1", "kind": "Reconcile"}])
        );
        assert!(
            reconcile["properties"]["metadata"]
                .to_string()
                .contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
        // kubectl explain reconcile.status: the record's fields, documented.
        let record = &schemas["dev.metahook.driver.v1alpha1.Record"];
        for field in [
            "controller",
            "parent",
            "outcome",
            "plan",
            "lastRun",
            "durationSeconds",
            "children",
        ] {
            assert!(
                record["properties"].get(field).is_some(),
                "status.{field} is missing: {record}"
            );
        }
        assert!(
            record["properties"]["plan"]["description"]
                .as_str()
                .unwrap()
                .contains("operation")
        );
        refs_resolve(&v3, "#/components/schemas/", &v3);
        // What kubectl explain looks the kind up by.
        let get = &v3["paths"]["/apis/driver.metahook.dev/v1alpha1/namespaces/{namespace}/reconciles/{name}"]
            ["get"];
        assert_eq!(get["x-kubernetes-group-version-kind"]["kind"], "Reconcile");
        let list = &v3["paths"]["/apis/driver.metahook.dev/v1alpha1/reconciles"]["get"];
        assert_eq!(list["x-kubernetes-group-version-kind"]["kind"], "Reconcile");
        let root = parse(&docs.v3_root);
        let url = root["paths"]["apis/driver.metahook.dev/v1alpha1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(
            url.starts_with("/openapi/v3/apis/driver.metahook.dev/v1alpha1?hash="),
            "{url}"
        );
    }

    #[test]
    fn the_v2_document_has_the_same_definitions_as_swagger() {
        let v2 = parse(&documents().v2);
        assert_eq!(v2["swagger"], "2.0");
        assert!(v2["definitions"]["dev.metahook.driver.v1alpha1.ReconcileList"].is_object());
        assert!(!v2.to_string().contains("nullable"));
        assert!(!v2.to_string().contains("#/components/"));
        refs_resolve(&v2, "#/definitions/", &v2);
    }
}
