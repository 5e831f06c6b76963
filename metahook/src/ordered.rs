//! Manifests written as YAML with their keys in the order a person reads
//! them, for the chart and `manifests`.

/// A manifest with its keys in the order a person reads one (what it is,
/// what it watches, what it owns, how it is called), not alphabetical.
pub(crate) struct Ordered<'a>(pub(crate) &'a serde_json::Value);

/// Where a key goes; keys not named here follow, alphabetically.
const KEY_ORDER: [&str; 15] = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "spec",
    "parentResource",
    "resources",
    "childResources",
    "attachments",
    "resource",
    "updateStrategy",
    "generateSelector",
    "resyncPeriodSeconds",
    "hooks",
];

impl serde::Serialize for Ordered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                let rank = |k: &str| {
                    KEY_ORDER
                        .iter()
                        .position(|o| *o == k)
                        .unwrap_or(KEY_ORDER.len())
                };
                keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
                let mut out = serializer.serialize_map(Some(keys.len()))?;
                for key in keys {
                    out.serialize_entry(key, &Ordered(&map[key]))?;
                }
                out.end()
            }
            serde_json::Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Ordered(item))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}
