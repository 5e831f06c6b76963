//! Types for tests: a custom resource and its status, for this crate's
//! tests and (feature `test-types`) the testing crate's.

use crate::Conditions;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Note keeps its text in ConfigMaps.
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Note",
    namespaced,
    status = "NoteStatus"
)]
pub struct NoteSpec {
    pub text: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct NoteStatus {
    /// When a hook last saw the Note (a controller made to misbehave).
    #[serde(rename = "lastSeen", default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<String>,
    #[serde(default)]
    pub copies: usize,
    #[serde(default)]
    pub conditions: Conditions,
}

/// A second version of Note: the text moved into a body.
pub mod v2 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "example.com",
        version = "v2",
        kind = "Note",
        namespaced,
        status = "super::NoteStatus"
    )]
    pub struct NoteSpec {
        pub body: Body,
    }

    #[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
    pub struct Body {
        pub text: String,
    }

    impl From<NoteSpec> for super::NoteSpec {
        fn from(v2: NoteSpec) -> Self {
            super::NoteSpec { text: v2.body.text }
        }
    }

    impl From<super::NoteSpec> for NoteSpec {
        fn from(hub: super::NoteSpec) -> Self {
            NoteSpec {
                body: Body { text: hub.text },
            }
        }
    }
}

/// A request for the Note `name` in namespace `ns` with the children
/// groups `children` (`{"Kind.apiVersion": {"key": object}}`).
pub fn request(name: &str, spec: serde_json::Value, children: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "controller": {"kind": "CompositeController"},
        "parent": {
            "apiVersion": "example.com/v1", "kind": "Note",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1", "generation": 3},
            "spec": spec,
        },
        "children": children,
        "related": {},
    }))
    .unwrap_or_default()
}
