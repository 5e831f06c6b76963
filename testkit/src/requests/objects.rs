//! The objects of a request, built as the API server stores them, and the
//! request around them.

use serde_json::{Map, Value, json};

/// The CompositeController that owns the request (sent whole, unread).
pub fn controller(name: &str, parent_api_version: &str, parent_resource: &str) -> Value {
    json!({
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {
            "name": name,
            "uid": uid(name, 0),
            "generation": 1,
            "resourceVersion": "1201",
            "creationTimestamp": "2026-11-20T08:00:00Z",
            "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "metahook"},
            "annotations": {
                "meta.helm.sh/release-name": "metahook",
                "meta.helm.sh/release-namespace": "metahook"
            }
        },
        "spec": {
            "parentResource": {"apiVersion": parent_api_version, "resource": parent_resource},
            "generateSelector": true,
            "hooks": {
                "sync": {
                    "version": "v2",
                    "webhook": {
                        "service": {"name": "metahook", "namespace": "metahook", "port": 80, "protocol": "http"},
                        "path": format!("/{name}/sync"),
                        "timeout": "10s"
                    }
                }
            }
        },
        "status": {}
    })
}

/// A stable, UUID-shaped identifier: requests are reproducible byte for byte.
pub fn uid(name: &str, n: usize) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes().chain(n.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let g = h.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        g & 0xfff,
        g >> 16
    )
}

/// Who owns a child: the parent's identity.
#[derive(Debug, Clone)]
pub struct Owner {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
}

impl Owner {
    pub fn reference(&self) -> Value {
        json!([{
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": true,
            "blockOwnerDeletion": true
        }])
    }
}

/// The `fieldsV1` tree of a value: every key `f:<key>`, leaves `{}`, as the
/// API server records which manager set what.
fn fields_v1(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(format!("f:{k}"), fields_v1(v));
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

/// What a child is, before it is dressed as the API server stores it.
pub struct Child<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub labels: Value,
    pub annotations: &'a [(&'a str, &'a str)],
    pub spec: Value,
    /// `Value::Null` for none.
    pub status: Value,
}

/// A child object as stored: desired part applied by Metacontroller (its
/// last-applied annotation, its managedFields entry), status written by
/// another manager. `n` makes its uid and resourceVersion unique.
pub fn child(c: Child, owner: &Owner, n: usize) -> Value {
    let Child {
        api_version,
        kind,
        name,
        namespace,
        labels,
        annotations,
        spec,
        status,
    } = c;
    let mut applied_annotations = Map::new();
    for (k, v) in annotations {
        applied_annotations.insert((*k).to_owned(), json!(v));
    }
    let applied = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": applied_annotations
        },
        "spec": spec
    });
    let mut all_annotations = applied_annotations.clone();
    all_annotations.insert(
        "metacontroller.k8s.io/last-applied-configuration".to_owned(),
        json!(applied.to_string()),
    );
    let mut object = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid(name, n),
            "resourceVersion": (100_000 + n).to_string(),
            "generation": 1,
            "creationTimestamp": "2026-11-22T02:00:00Z",
            "labels": labels,
            "annotations": all_annotations,
            "ownerReferences": owner.reference(),
            "managedFields": [
                {
                    "manager": "metacontroller",
                    "operation": "Update",
                    "apiVersion": api_version,
                    "time": "2026-11-22T02:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": fields_v1(&applied["metadata"]),
                        "f:spec": fields_v1(&applied["spec"])
                    }
                }
            ]
        },
        "spec": spec
    });
    if !status.is_null() {
        let managed = &mut object["metadata"]["managedFields"];
        if let Value::Array(entries) = managed {
            entries.push(json!({
                "manager": format!("{}-controller", kind.to_ascii_lowercase()),
                "operation": "Update",
                "apiVersion": api_version,
                "time": "2026-11-22T02:00:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": fields_v1(&status)},
                "subresource": "status"
            }));
        }
        object["status"] = status;
    }
    object
}

/// A ready `apps/v1` Deployment as the API server stores it.
pub fn deployment(
    name: &str,
    namespace: &str,
    owner: &Owner,
    labels: Value,
    replicas: i32,
    image: &str,
    n: usize,
) -> Value {
    let spec = json!({
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [{
                    "name": "hello",
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent"
                }],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "securityContext": {},
                "schedulerName": "default-scheduler"
            }
        },
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600
    });
    let status = json!({
        "observedGeneration": 1,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {
                "type": "Available", "status": "True",
                "lastUpdateTime": "2026-11-22T02:00:20Z", "lastTransitionTime": "2026-11-22T02:00:20Z",
                "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."
            },
            {
                "type": "Progressing", "status": "True",
                "lastUpdateTime": "2026-11-22T02:00:20Z", "lastTransitionTime": "2026-11-22T02:00:00Z",
                "reason": "NewReplicaSetAvailable",
                "message": format!("ReplicaSet \"{name}-7d9c6b8f5\" has successfully progressed.")
            }
        ]
    });
    let mut object = child(
        Child {
            api_version: "apps/v1",
            kind: "Deployment",
            name,
            namespace,
            labels,
            annotations: &[],
            spec,
            status,
        },
        owner,
        n,
    );
    object["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
    object
}

/// Which keys Metacontroller gives the objects of a map: the name for v1
/// hooks, `namespace/name` for v2 (docs/metacontroller.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    V1,
    V2,
}

/// One type's objects as a request map: `{"Kind.group/version": {key: obj}}`.
pub fn object_map(group: &str, objects: &[Value], keys: Keys) -> Value {
    let inner: Map<String, Value> = objects
        .iter()
        .map(|object| {
            let name = object["metadata"]["name"].as_str().unwrap_or("");
            let key = match keys {
                Keys::V1 => name.to_owned(),
                Keys::V2 => format!(
                    "{}/{name}",
                    object["metadata"]["namespace"].as_str().unwrap_or("")
                ),
            };
            (key, object.clone())
        })
        .collect();
    json!({ group: inner })
}

/// A whole sync request with v2 keys, as Metacontroller sends for v2 hooks.
pub fn sync_request(controller: Value, parent: Value, children: Vec<(&str, Vec<Value>)>) -> Value {
    let mut groups = Map::new();
    for (group, objects) in children {
        if let Value::Object(map) = object_map(group, &objects, Keys::V2) {
            groups.extend(map);
        }
    }
    json!({
        "controller": controller,
        "parent": parent,
        "children": groups,
        "related": {},
        "finalizing": false
    })
}

pub(super) fn parent(
    api_version: &str,
    kind: &str,
    name: &str,
    spec: Value,
    status: Value,
) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid(name, usize::MAX),
            "resourceVersion": "99001",
            "generation": 1,
            "creationTimestamp": "2026-11-22T02:00:00Z",
            "finalizers": [format!("metacontroller.io/compositecontroller-{}", kind.to_ascii_lowercase())],
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration":
                    json!({"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": name, "namespace": "default"}, "spec": spec}).to_string()
            },
            "managedFields": [{
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": api_version,
                "time": "2026-11-22T02:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": fields_v1(&spec)}
            }]
        },
        "spec": spec,
        "status": status
    })
}

pub(super) fn owner_of(parent: &Value) -> Owner {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    Owner {
        api_version: text(&parent["apiVersion"]),
        kind: text(&parent["kind"]),
        name: text(&parent["metadata"]["name"]),
        uid: text(&parent["metadata"]["uid"]),
    }
}

/// Compact bytes, as Go's encoder sends them.
pub fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
