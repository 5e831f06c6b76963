//! The three CRDs: the `Hikawa` that sings, each word a `Zundoko`, the end
//! a `Kiyoshi`; and the bounds on a Hikawa's spec.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use metahook_core::conditions::Conditions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const GROUP: &str = "zundokokiyoshi.kaitoy.github.com";
pub const API_VERSION: &str = "zundokokiyoshi.kaitoy.github.com/v1beta1";
pub const MAX_INTERVAL_MILLIS: i64 = 3_600_000;
pub const DEFAULT_MAX_ZUNDOKOS: u32 = 1000;
/// Keeps a request (every Zundoko, whole) well under the service's body
/// limit.
pub const MAX_MAX_ZUNDOKOS: u32 = 10_000;

/// A Hikawa sings Zundokos until Kiyoshi.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "zundokokiyoshi.kaitoy.github.com",
    version = "v1beta1",
    kind = "Hikawa",
    derive = "PartialEq",
    singular = "hikawa",
    plural = "hikawas",
    category = "metahook",
    namespaced,
    status = "HikawaStatus",
    doc = "A Hikawa sings Zun and Doko at random, one Zundoko per word, until Zun Zun Zun Zun Doko; then it says Kiyoshi!",
    printcolumn(
        name = "Said",
        type_ = "integer",
        json_path = ".status.numZundokosSaid"
    ),
    printcolumn(name = "Kiyoshied", type_ = "boolean", json_path = ".status.kiyoshied"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HikawaSpec {
    /// Milliseconds between two words (0 to 3,600,000).
    #[schemars(range(min = 0, max = 3_600_000))]
    pub interval_millis: i64,
    /// How many Zundokos are said before the song gives up without a
    /// Kiyoshi (1 to 10,000).
    #[serde(default = "default_max_zundokos")]
    #[schemars(range(min = 1, max = 10_000))]
    pub max_zundokos: u32,
}

fn default_max_zundokos() -> u32 {
    DEFAULT_MAX_ZUNDOKOS
}

/// How far the song has got, from the observed children.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HikawaStatus {
    /// The `metadata.generation` this status describes; written by
    /// Metacontroller or the driver, never by the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Zundokos observed.
    #[serde(default)]
    pub num_zundokos_said: u32,
    /// Whether the Kiyoshi is observed.
    #[serde(default)]
    pub kiyoshied: bool,
    /// The song so far, e.g. `Zun Doko Zun Zun Zun Zun Doko Kiyoshi!`.
    #[serde(default)]
    pub song: String,
    /// `Singing`, `Kiyoshied` or `GaveUp`.
    #[serde(default)]
    pub phase: Phase,
    /// `SpecValid` and `Finished`.
    #[serde(default)]
    pub conditions: Conditions,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Still waiting for Zun Zun Zun Zun Doko.
    #[default]
    Singing,
    /// The Kiyoshi is observed; nothing more is said.
    Kiyoshied,
    /// `spec.maxZundokos` Zundokos were said without Zun×4+Doko.
    GaveUp,
}

/// One word of the song: "Zun" or "Doko".
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "zundokokiyoshi.kaitoy.github.com",
    version = "v1beta1",
    kind = "Zundoko",
    derive = "PartialEq",
    singular = "zundoko",
    plural = "zundokos",
    category = "metahook",
    namespaced,
    doc = "One word of a Hikawa's song: Zun or Doko.",
    printcolumn(name = "Say", type_ = "string", json_path = ".spec.say"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct ZundokoSpec {
    /// `Zun` or `Doko`.
    #[schemars(extend("enum" = ["Zun", "Doko"]))]
    pub say: String,
}

/// The end of the song: "Kiyoshi!".
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "zundokokiyoshi.kaitoy.github.com",
    version = "v1beta1",
    kind = "Kiyoshi",
    derive = "PartialEq",
    singular = "kiyoshi",
    plural = "kiyoshis",
    category = "metahook",
    namespaced,
    doc = "The end of a Hikawa's song: Kiyoshi!",
    printcolumn(name = "Say", type_ = "string", json_path = ".spec.say"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct KiyoshiSpec {
    /// `Kiyoshi!`.
    #[schemars(extend("enum" = ["Kiyoshi!"]))]
    pub say: String,
}

pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Hikawa::crd(), Zundoko::crd(), Kiyoshi::crd()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_seed_manifest_applies_unchanged() {
        let hikawa: Hikawa = serde_json::from_value(json!({
            "apiVersion": "zundokokiyoshi.kaitoy.github.com/v1beta1",
            "kind": "Hikawa",
            "metadata": {"labels": {"controller-tools.k8s.io": "1.0"}, "name": "hikawa-sample"},
            "spec": {"intervalMillis": 500}
        }))
        .unwrap();
        assert_eq!(hikawa.spec.interval_millis, 500);
        assert_eq!(hikawa.spec.max_zundokos, DEFAULT_MAX_ZUNDOKOS);
    }

    #[test]
    fn crds_carry_the_seed_names_and_the_bounds() {
        let crds = crds();
        let names: Vec<_> = crds.iter().map(|c| c.spec.names.plural.as_str()).collect();
        assert_eq!(names, ["hikawas", "zundokos", "kiyoshis"]);
        for crd in &crds {
            assert_eq!(crd.spec.group, GROUP);
            assert_eq!(crd.spec.scope, "Namespaced");
            assert_eq!(crd.spec.versions[0].name, "v1beta1");
        }
        let hikawa = &crds[0].spec.versions[0];
        assert!(
            hikawa
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
        );
        let columns: Vec<_> = hikawa
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(columns, ["Said", "Kiyoshied", "Age"]);
        let schema = serde_json::to_value(&hikawa.schema).unwrap();
        let root = &schema["openAPIV3Schema"]["properties"];
        let interval = &root["spec"]["properties"]["intervalMillis"];
        assert_eq!(interval["minimum"], json!(0.0));
        assert_eq!(interval["maximum"], json!(3_600_000.0));
        assert_eq!(root["spec"]["required"], json!(["intervalMillis"]));
        assert_eq!(
            root["spec"]["properties"]["maxZundokos"]["default"],
            json!(1000)
        );
        // Metacontroller writes it; a structural schema would prune it.
        assert_eq!(
            root["status"]["properties"]["observedGeneration"]["type"],
            "integer"
        );
        for (crd, words) in [
            (&crds[1], json!(["Zun", "Doko"])),
            (&crds[2], json!(["Kiyoshi!"])),
        ] {
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
            let say = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["say"];
            assert_eq!(say["enum"], words);
        }
    }
}
