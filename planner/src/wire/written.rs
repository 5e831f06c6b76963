//! The objects of a hook request written straight into its body, byte for
//! byte as the `Value` tree they used to be copied into would have been
//! written (keys in order, as serde_json's map keeps them): a request is
//! built once per hook call, and copying the parent, every child and the
//! controller into a tree first was most of its cost
//! (`bench/driver-callgrind.sh`).

use kube::core::DynamicObject;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// An object as [`super::object_json`] gives it, `apiVersion` and `kind`
/// included.
pub struct ObjectJson<'a>(pub &'a DynamicObject);

/// A request's `children`, `attachments` or `related`: objects by type,
/// then by key.
pub type ObjectMapJson<'a> = BTreeMap<String, BTreeMap<String, ObjectJson<'a>>>;

/// One top-level field of an object.
enum Field<'a> {
    Text(&'a str),
    Metadata(&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta),
    Value(&'a Value),
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Text(text) => s.serialize_str(text),
            Field::Metadata(meta) => meta.serialize(s),
            Field::Value(value) => value.serialize(s),
        }
    }
}

impl Serialize for ObjectJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let obj = self.0;
        let data = match &obj.data {
            Value::Object(data) => Some(data),
            Value::Null => None,
            // What `object_json` makes of an object that cannot be one.
            _ => return s.serialize_unit(),
        };
        let mut fields: Vec<(&str, Field<'_>)> = Vec::with_capacity(3 + data.map_or(0, Map::len));
        if let Some(types) = &obj.types {
            fields.push(("apiVersion", Field::Text(&types.api_version)));
            fields.push(("kind", Field::Text(&types.kind)));
        }
        fields.push(("metadata", Field::Metadata(&obj.metadata)));
        for (key, value) in data.into_iter().flatten() {
            // As in a tree: the later of two equal keys stays.
            fields.retain(|(k, _)| *k != key.as_str());
            fields.push((key, Field::Value(value)));
        }
        fields.sort_by(|a, b| a.0.cmp(b.0));
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (key, value) in &fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A sync or finalize request's body, a composite's or a decorator's: its
/// objects (`children` or `attachments`), the controller, whether it
/// finalizes, its root object (`parent` or `object`) and the related
/// objects, in the order serde_json's map writes those keys (both kinds of
/// request sort the same way).
pub fn body(
    objects: (&str, &ObjectMapJson<'_>),
    controller: &Value,
    finalizing: bool,
    root: (&str, &DynamicObject),
    related: &ObjectMapJson<'_>,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&RequestBody {
        objects,
        controller,
        finalizing,
        root,
        related,
    })
}

struct RequestBody<'a> {
    objects: (&'a str, &'a ObjectMapJson<'a>),
    controller: &'a Value,
    finalizing: bool,
    root: (&'a str, &'a DynamicObject),
    related: &'a ObjectMapJson<'a>,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(5))?;
        map.serialize_entry(self.objects.0, self.objects.1)?;
        map.serialize_entry("controller", &ControllerJson(self.controller))?;
        map.serialize_entry("finalizing", &self.finalizing)?;
        map.serialize_entry(self.root.0, &ObjectJson(self.root.1))?;
        map.serialize_entry("related", self.related)?;
        map.end()
    }
}

/// The CompositeController (or DecoratorController) as Metacontroller sends
/// it: with `status: {}` when it has none.
pub struct ControllerJson<'a>(pub &'a Value);

impl Serialize for ControllerJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map = match self.0 {
            Value::Object(map) if !map.contains_key("status") => map,
            other => return other.serialize(s),
        };
        let empty = Map::new();
        let mut out = s.serialize_map(Some(map.len() + 1))?;
        let mut status = Some(&empty);
        for (key, value) in map {
            if key.as_str() > "status"
                && let Some(status) = status.take()
            {
                out.serialize_entry("status", status)?;
            }
            out.serialize_entry(key, value)?;
        }
        if let Some(status) = status {
            out.serialize_entry("status", status)?;
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    /// Written straight out, the same bytes as through a tree.
    fn same_as_a_tree(obj: &DynamicObject) {
        let tree = serde_json::to_vec(&super::super::object_json(obj)).unwrap();
        let written = serde_json::to_vec(&ObjectJson(obj)).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            String::from_utf8(tree).unwrap()
        );
    }

    #[test]
    fn objects_are_written_as_their_trees_are() {
        let fixture: Value =
            serde_json::from_slice(include_bytes!("../../../fixtures/hello/ready.json")).unwrap();
        same_as_a_tree(&object(fixture["parent"].clone()));
        same_as_a_tree(&object(
            fixture["children"]["Deployment.apps/v1"]["default/hello"].clone(),
        ));
        // Fields before `kind` and `metadata` in order, and none at all.
        same_as_a_tree(&object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"b": "2", "a": "1"}},
            "binaryData": {}, "data": {"z": "1", "a": "2"}, "immutable": true})));
        same_as_a_tree(&object(json!({"metadata": {}})));
        let mut odd = object(json!({"metadata": {"name": "o"}}));
        odd.data = json!("not an object");
        same_as_a_tree(&odd);
        odd.data = Value::Null;
        same_as_a_tree(&odd);
    }

    #[test]
    fn the_controller_gets_an_empty_status_in_its_place() {
        for controller in [
            json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                "metadata": {"name": "c"}, "spec": {"generateSelector": true}}),
            json!({"kind": "K", "metadata": {}}),
            json!({"zz": 1}),
            json!({}),
            json!({"spec": {}, "status": {"kept": true}}),
            json!("not an object"),
        ] {
            let mut tree = controller.clone();
            if let Some(map) = tree.as_object_mut() {
                map.entry("status").or_insert_with(|| json!({}));
            }
            assert_eq!(
                serde_json::to_string(&ControllerJson(&controller)).unwrap(),
                serde_json::to_string(&tree).unwrap()
            );
        }
    }
}
