//! The cluster a convergence check runs against: objects in memory, written
//! as the API server writes them where it matters for convergence —
//! server-side apply that keeps what others set (defaults, status) and
//! drops what the applier stopped sending, defaults run on every write,
//! `generation` moving with the spec only, deletion held by finalizers,
//! and dependents collected with their controller.

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Where an object is: its type (`Kind.apiVersion`), namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub group_key: String,
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub fn of(object: &Value) -> Key {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Key {
            group_key: format!("{}.{}", text(&object["kind"]), text(&object["apiVersion"])),
            namespace: text(&object["metadata"]["namespace"]),
            name: text(&object["metadata"]["name"]),
        }
    }

    /// `Kind namespace/name`, for messages.
    pub fn describe(&self) -> String {
        let kind = self.group_key.split('.').next().unwrap_or_default();
        if self.namespace.is_empty() {
            format!("{kind} {}", self.name)
        } else {
            format!("{kind} {}/{}", self.namespace, self.name)
        }
    }
}

/// A function run on an object of one type: its defaults, or the world
/// moving its status.
pub type Edit = Box<dyn Fn(&mut Value)>;

#[derive(Default)]
pub struct Store {
    objects: BTreeMap<Key, Value>,
    /// The body each object was last applied with, to tell what the
    /// applier stopped sending.
    applied: BTreeMap<Key, Value>,
    defaults: Vec<(String, Edit)>,
    revision: u64,
    uids: u64,
}

impl Store {
    pub fn add_defaults(&mut self, group_key: String, edit: Edit) {
        self.defaults.push((group_key, edit));
    }

    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Every object of a type (`Kind.apiVersion`).
    pub fn of_type(&self, group_key: &str) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| k.group_key == group_key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn objects(&self) -> &BTreeMap<Key, Value> {
        &self.objects
    }

    /// Sets on `object` what the API server sets on objects of its type
    /// when they are written without it.
    pub fn defaulted(&self, key: &Key, object: &mut Value) {
        for (group_key, edit) in &self.defaults {
            if *group_key == key.group_key {
                edit(object);
            }
        }
    }

    fn stamp(&mut self, object: &mut Value) {
        self.revision += 1;
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
    }

    /// Creates `object` as a user's `kubectl apply` would: a uid, a
    /// generation, defaults. Replaces one of the same key.
    pub fn create(&mut self, object: Value, now: &str) -> Key {
        let object = self.prepare(object, now);
        self.insert(object)
    }

    /// `object` as the API server makes it on a create before admission:
    /// a uid, a generation, its creation time, defaults.
    pub fn prepare(&mut self, mut object: Value, now: &str) -> Value {
        let key = Key::of(&object);
        self.uids += 1;
        let meta = &mut object["metadata"];
        if meta["uid"].is_null() {
            meta["uid"] = json!(format!("uid-{}", self.uids));
        }
        meta["generation"] = json!(1);
        meta["creationTimestamp"] = json!(now);
        self.defaulted(&key, &mut object);
        object
    }

    /// Stores a [prepared](Store::prepare) object, replacing one of the
    /// same key.
    pub fn insert(&mut self, mut object: Value) -> Key {
        let key = Key::of(&object);
        self.stamp(&mut object);
        self.objects.insert(key.clone(), object);
        key
    }

    /// Server-side apply of `body`: creates, or merges it into the object
    /// (maps field by field, lists and values whole), first dropping the
    /// fields the last apply set and this one does not. `true` if the
    /// object changed.
    pub fn apply(&mut self, body: &Value, now: &str) -> bool {
        let key = Key::of(body);
        let Some(existing) = self.objects.get(&key).cloned() else {
            self.create(body.clone(), now);
            self.applied.insert(key, body.clone());
            return true;
        };
        let mut next = existing.clone();
        if let Some(previous) = self.applied.get(&key) {
            drop_unsent(&mut next, previous, body);
        }
        merge(&mut next, body);
        self.defaulted(&key, &mut next);
        self.applied.insert(key.clone(), body.clone());
        self.replace(key, existing, next)
    }

    /// Replaces the object at `key` with `next` (from `existing`): the
    /// generation moves if the spec did, the revision if anything did.
    pub fn replace(&mut self, key: Key, existing: Value, mut next: Value) -> bool {
        if without_revision(&next) == without_revision(&existing) {
            return false;
        }
        if next.get("spec") != existing.get("spec") {
            let generation = existing["metadata"]["generation"].as_i64().unwrap_or(1);
            next["metadata"]["generation"] = json!(generation + 1);
        }
        self.stamp(&mut next);
        self.objects.insert(key, next);
        true
    }

    /// Edits the object at `key`; `true` if it changed.
    pub fn edit(&mut self, key: &Key, edit: impl FnOnce(&mut Value)) -> bool {
        let Some(existing) = self.objects.get(key).cloned() else {
            return false;
        };
        let mut next = existing.clone();
        edit(&mut next);
        self.replace(key.clone(), existing, next)
    }

    /// Deletes the object: at once if no finalizer holds it (its
    /// dependents collected), else marked as being deleted.
    pub fn delete(&mut self, key: &Key, now: &str) -> bool {
        let Some(object) = self.objects.get(key) else {
            return false;
        };
        let held = object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if held {
            if object["metadata"]["deletionTimestamp"].is_null() {
                return self.edit(key, |o| {
                    o["metadata"]["deletionTimestamp"] = json!(now);
                });
            }
            return false;
        }
        self.remove(key, now);
        true
    }

    /// Removes a deleted object whose last finalizer went.
    pub fn collect_if_released(&mut self, key: &Key, now: &str) {
        let Some(object) = self.objects.get(key) else {
            return;
        };
        let deleting = !object["metadata"]["deletionTimestamp"].is_null();
        let held = object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if deleting && !held {
            self.remove(key, now);
        }
    }

    /// Removes the object and, as the garbage collector does, deletes the
    /// objects it controls.
    fn remove(&mut self, key: &Key, now: &str) {
        let Some(object) = self.objects.remove(key) else {
            return;
        };
        self.applied.remove(key);
        let uid = object["metadata"]["uid"].clone();
        let dependents: Vec<Key> = self
            .objects
            .iter()
            .filter(|(_, o)| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["uid"] == uid && r["controller"] == json!(true))
            })
            .map(|(k, _)| k.clone())
            .collect();
        for dependent in dependents {
            self.delete(&dependent, now);
        }
    }
}

fn without_revision(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    copy
}

/// Merges `patch` into `target`: maps key by key, anything else whole.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        merge(existing, value)
                    }
                    _ => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// Removes from `target` the fields `previous` set and `next` does not.
fn drop_unsent(target: &mut Value, previous: &Value, next: &Value) {
    let (Some(into), Some(before)) = (target.as_object_mut(), previous.as_object()) else {
        return;
    };
    let empty = Map::new();
    let now = next.as_object().unwrap_or(&empty);
    for (key, old) in before {
        match now.get(key) {
            None => {
                into.remove(key);
            }
            Some(new) if old.is_object() && new.is_object() => {
                if let Some(child) = into.get_mut(key) {
                    drop_unsent(child, old, new);
                }
            }
            Some(_) => {}
        }
    }
}

/// Where `a` and `b` differ, as `path: a → b` lines (at most `limit`).
pub fn differences(a: &Value, b: &Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    diff("", a, b, &mut out, limit);
    out
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                diff(
                    &sub,
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                    out,
                    limit,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), p, q, out, limit);
            }
        }
        _ => out.push(format!("{path}: {a} → {b}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-11-22T03:00:00Z";

    fn deployment(replicas: i64, labels: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "shop", "labels": labels},
               "spec": {"replicas": replicas}})
    }

    #[test]
    fn an_apply_keeps_what_others_set_and_drops_what_it_stopped_sending() {
        let mut store = Store::default();
        store.add_defaults(
            "Deployment.apps/v1".to_owned(),
            Box::new(|d| {
                if d["spec"]["revisionHistoryLimit"].is_null() {
                    d["spec"]["revisionHistoryLimit"] = json!(10);
                }
            }),
        );
        assert!(store.apply(&deployment(2, json!({"a": "1", "b": "2"})), NOW));
        let key = Key::of(&deployment(2, json!({})));
        store.edit(&key, |d| d["status"] = json!({"replicas": 2}));
        // The same body again changes nothing.
        assert!(!store.apply(&deployment(2, json!({"a": "1", "b": "2"})), NOW));
        assert!(store.apply(&deployment(3, json!({"a": "1"})), NOW));
        let stored = store.get(&key).unwrap();
        assert_eq!(stored["spec"]["replicas"], 3);
        assert_eq!(
            stored["spec"]["revisionHistoryLimit"], 10,
            "the default stays"
        );
        assert_eq!(
            stored["status"]["replicas"], 2,
            "the status is not the applier's"
        );
        assert_eq!(
            stored["metadata"]["labels"],
            json!({"a": "1"}),
            "b no longer sent"
        );
        assert_eq!(stored["metadata"]["generation"], 2);
    }

    #[test]
    fn a_finalizer_holds_a_deletion_and_the_controller_takes_its_dependents() {
        let mut store = Store::default();
        let parent = store.create(
            json!({"apiVersion": "example.com/v1", "kind": "Note",
                   "metadata": {"name": "n", "namespace": "shop", "uid": "p", "finalizers": ["f"]}}),
            NOW,
        );
        let child = store.create(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "namespace": "shop",
                                "ownerReferences": [{"uid": "p", "controller": true}]}}),
            NOW,
        );
        assert!(store.delete(&parent, NOW));
        assert!(store.get(&parent).is_some(), "held by its finalizer");
        store.edit(&parent, |p| p["metadata"]["finalizers"] = json!([]));
        store.collect_if_released(&parent, NOW);
        assert!(store.get(&parent).is_none());
        assert!(store.get(&child).is_none(), "collected with its controller");
    }

    #[test]
    fn differences_name_the_paths() {
        let a = json!({"status": {"at": "1", "list": [1, 2]}, "same": true});
        let b = json!({"status": {"at": "2", "list": [1, 3]}, "same": true});
        assert_eq!(
            differences(&a, &b, 10),
            ["status.at: \"1\" → \"2\"", "status.list[1]: 2 → 3"]
        );
    }
}
