//! `manifests`: what installs the controllers without Helm, as one YAML
//! stream for `kubectl apply -f -`: their CRDs, their CompositeController
//! or DecoratorController manifests with webhooks at a Service, with
//! `--driver` the driver's RBAC, and with `--ca-bundle` (the Service
//! serving TLS, as the API server requires) the admission webhook
//! configurations and every version of a CRD with its conversion webhook.
//! With `--plan-role`, only the read-only ClusterRole of `plan --live`
//! (`plan_role.rs`).
//!
//! The ClusterRole is the one the chart's template `chart/templates/rbac.yaml` derives
//! from the same manifests, rule for rule (`tests/chart/test_scaffold.py`,
//! `test_driver_mode`, compares the two for a scaffolded controller): exactly the verbs the driver uses, per
//! resource, no wildcard.

mod plan_role;
mod resources;

#[cfg(feature = "runtime")]
use crate::cli::ManifestsArgs;
use crate::crds::{CrdsError, to_yaml};
use crate::ordered::Ordered;
use metahook_core::conversion::ConversionWebhook;
use metahook_core::{Controller, Webhooks};
use resources::resources_by_group;
use serde_json::{Value, json};

/// Why `manifests` printed nothing, or not everything.
#[derive(Debug, thiserror::Error)]
pub enum ManifestsError {
    /// A CRD could not be written as YAML.
    #[error(transparent)]
    Crds(#[from] CrdsError),
    /// A manifest could not be written as YAML.
    #[error("encoding the {kind} {name:?} failed")]
    Yaml {
        /// Its kind: `ClusterRole`.
        kind: String,
        /// Its name.
        name: String,
        /// What the YAML writer said.
        #[source]
        source: serde_saphyr::SerializeError,
    },
    /// The namespace or Service name is not a DNS label.
    #[error(
        "the {what} {value:?} must be a DNS label (lowercase letters, digits, '-'; at most 63)"
    )]
    Name {
        /// `namespace` or `Service name`.
        what: &'static str,
        /// The name given.
        value: String,
    },
    /// Standard output could not be written.
    #[error("writing the manifests failed")]
    Write(#[source] std::io::Error),
    /// The CA bundle file could not be read.
    #[error("reading {path} failed")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A controller's versions do not make one CRD.
    #[error(transparent)]
    Declaration(#[from] metahook_core::DeclarationError),
    /// The controller manifests of `--controllers` could not be read.
    #[error("reading the controller manifests in {dir} failed")]
    Controllers {
        /// The directory.
        dir: std::path::PathBuf,
        /// Why.
        #[source]
        source: Box<metahook_planner::config::ConfigError>,
    },
}

/// Where the manifests point, and what they add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSettings {
    /// The Service the webhooks call; also the driver's ServiceAccount,
    /// ClusterRole and bindings.
    pub service: String,
    /// Their namespace.
    pub namespace: String,
    /// The Service's port.
    pub port: u16,
    /// With the driver's RBAC, for its Lease of this name.
    pub driver_lease: Option<String>,
    /// The PEM CA that signed the Service's serving certificate: with it,
    /// the admission webhooks and the CRDs' other versions and conversion
    /// (the API server calls those over HTTPS only); without, the CRDs'
    /// stored versions only.
    pub ca_bundle: Option<Vec<u8>>,
}

/// `manifests`, printed.
#[cfg(feature = "runtime")]
pub fn run(
    args: &ManifestsArgs,
    program: &str,
    controllers: &[Controller],
) -> Result<(), ManifestsError> {
    let service = args.service.clone().unwrap_or_else(|| program.to_owned());
    if args.plan_role {
        let name = format!("{service}-plan");
        let role = match &args.controllers {
            Some(dir) => {
                let configs = metahook_planner::config::from_dir(dir).map_err(|source| {
                    ManifestsError::Controllers {
                        dir: dir.clone(),
                        source: Box::new(source),
                    }
                })?;
                plan_role::plan_role_of_manifests(&configs, &name)
            }
            None => plan_role::plan_role(controllers, &name),
        };
        return write(&format!("---\n{}", yaml(&role)?));
    }
    let settings = ManifestSettings {
        service,
        namespace: args.namespace.clone(),
        port: args.port,
        driver_lease: args
            .driver
            .then(|| metahook_planner::config::LEASE_NAME.to_owned()),
        ca_bundle: match &args.ca_bundle {
            Some(path) => Some(std::fs::read(path).map_err(|source| ManifestsError::Read {
                path: path.clone(),
                source,
            })?),
            None => None,
        },
    };
    write(&stream(controllers, &settings)?)
}

#[cfg(feature = "runtime")]
fn write(text: &str) -> Result<(), ManifestsError> {
    use std::io::Write;
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(ManifestsError::Write)
}

/// Every document, `---` between them.
pub fn stream(
    controllers: &[Controller],
    settings: &ManifestSettings,
) -> Result<String, ManifestsError> {
    for (what, value) in [
        ("namespace", &settings.namespace),
        ("Service name", &settings.service),
    ] {
        if !crate::chart::dns_label(value, 63) {
            return Err(ManifestsError::Name {
                what,
                value: value.clone(),
            });
        }
    }
    let mut docs = Vec::new();
    let webhooks = Webhooks {
        service: settings.service.clone(),
        namespace: settings.namespace.clone(),
        port: settings.port,
    };
    match &settings.ca_bundle {
        Some(pem) => {
            let conversion = ConversionWebhook::service(&webhooks).ca_bundle(pem.clone());
            for controller in controllers {
                for crd in controller.crds_with_conversion(&conversion)? {
                    docs.push(to_yaml(&crd)?);
                }
            }
        }
        None => {
            for crd in metahook_core::registry::all_crds(controllers) {
                docs.push(to_yaml(&crd)?);
            }
        }
    }
    for controller in controllers {
        docs.push(yaml(&controller.manifest(&webhooks))?);
    }
    if let Some(pem) = &settings.ca_bundle {
        // ByteString serializes as the base64 a caBundle is.
        let ca = json!(k8s_openapi::ByteString(pem.clone()));
        for controller in controllers {
            for mut config in controller.webhook_configurations(&webhooks) {
                for webhook in config["webhooks"].as_array_mut().into_iter().flatten() {
                    webhook["clientConfig"]["caBundle"] = ca.clone();
                }
                docs.push(yaml(&config)?);
            }
        }
    }
    if let Some(lease) = &settings.driver_lease {
        for object in driver_rbac(controllers, &settings.service, &settings.namespace, lease) {
            docs.push(yaml(&object)?);
        }
    }
    Ok(docs.iter().map(|d| format!("---\n{d}")).collect::<String>())
}

fn yaml(object: &Value) -> Result<String, ManifestsError> {
    serde_saphyr::to_string(&Ordered(object)).map_err(|source| ManifestsError::Yaml {
        kind: object["kind"].as_str().unwrap_or_default().to_owned(),
        name: object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        source,
    })
}

/// The ClusterRole's rules: what the driver does to each type
/// (`chart/templates/rbac.yaml` says why each verb).
pub fn cluster_role_rules(controllers: &[Controller]) -> Vec<Value> {
    let (parents, children) = resources_by_group(controllers);
    let mut rules = Vec::new();
    for (group, resources) in &parents {
        let with =
            |sub: &str| -> Vec<String> { resources.iter().map(|r| format!("{r}/{sub}")).collect() };
        rules.push(json!({"apiGroups": [group], "resources": resources, "verbs": ["get", "list", "watch", "patch"]}));
        rules.push(json!({"apiGroups": [group], "resources": with("status"), "verbs": ["patch"]}));
        rules.push(
            json!({"apiGroups": [group], "resources": with("finalizers"), "verbs": ["update"]}),
        );
    }
    for (group, resources) in &children {
        rules.push(json!({"apiGroups": [group], "resources": resources, "verbs": ["get", "list", "watch", "create", "patch", "delete"]}));
    }
    rules.push(json!({"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}));
    rules
}

/// The driver's ServiceAccount, ClusterRole and binding, and the Role and
/// binding for its Lease.
fn driver_rbac(controllers: &[Controller], name: &str, namespace: &str, lease: &str) -> Vec<Value> {
    let subject = json!([{"kind": "ServiceAccount", "name": name, "namespace": namespace}]);
    let election = format!("{name}-leader-election");
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": cluster_role_rules(controllers),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subject,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": election, "namespace": namespace},
            "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [lease],
                 "verbs": ["get", "list", "watch", "update"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": election, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": election},
            "subjects": subject,
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> ManifestSettings {
        ManifestSettings {
            service: "seeds".to_owned(),
            namespace: "ops".to_owned(),
            port: 8080,
            driver_lease: Some("seeds-lease".to_owned()),
            ca_bundle: None,
        }
    }

    fn docs(text: &str) -> Vec<Value> {
        text.split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_saphyr::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn webhooks_point_at_the_service_and_rbac_names_every_type_and_no_wildcard() {
        let controllers = metahook_seeds::controllers();
        let all = docs(&stream(controllers, &settings()).unwrap());
        let kinds: Vec<&str> = all.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "CustomResourceDefinition")
                .count(),
            5
        );
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "CompositeController")
                .count(),
            3
        );
        for cc in all.iter().filter(|d| d["kind"] == "CompositeController") {
            for hook in cc["spec"]["hooks"].as_object().unwrap().values() {
                let service = &hook["webhook"]["service"];
                assert_eq!(service["name"], "seeds");
                assert_eq!(service["namespace"], "ops");
                assert_eq!(service["port"], 8080);
            }
        }
        let role = all.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        let text = serde_json::to_string(role).unwrap();
        assert!(!text.contains('*'), "{text}");
        let rules = role["rules"].as_array().unwrap();
        let verbs_of = |resource: &str| -> Vec<String> {
            rules
                .iter()
                .filter(|r| {
                    r["resources"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|x| x == resource)
                })
                .flat_map(|r| {
                    r["verbs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_owned())
                })
                .collect()
        };
        assert_eq!(verbs_of("helloes"), ["get", "list", "watch", "patch"]);
        assert_eq!(verbs_of("helloes/status"), ["patch"]);
        assert_eq!(verbs_of("foos/finalizers"), ["update"]);
        assert_eq!(
            verbs_of("deployments"),
            ["get", "list", "watch", "create", "patch", "delete"]
        );
        assert_eq!(
            verbs_of("zundokos"),
            ["get", "list", "watch", "create", "patch", "delete"]
        );
        let lease = all.iter().find(|d| d["kind"] == "Role").unwrap();
        assert_eq!(lease["rules"][1]["resourceNames"], json!(["seeds-lease"]));
        let binding = all
            .iter()
            .find(|d| d["kind"] == "ClusterRoleBinding")
            .unwrap();
        assert_eq!(binding["subjects"][0]["namespace"], "ops");
    }

    #[test]
    fn with_a_ca_bundle_the_api_server_s_webhooks_are_written_too() {
        let plain = docs(&stream(metahook_seeds::controllers(), &settings()).unwrap());
        let kinds = |all: &[Value], kind: &str| all.iter().filter(|d| d["kind"] == kind).count();
        assert_eq!(kinds(&plain, "ValidatingWebhookConfiguration"), 0);
        let foos = |all: &[Value]| {
            all.iter()
                .find(|d| d["metadata"]["name"] == "foos.samplecontroller.k8s.io")
                .cloned()
                .unwrap()
        };
        assert_eq!(
            foos(&plain)["spec"]["versions"].as_array().unwrap().len(),
            1
        );

        let mut s = settings();
        s.ca_bundle = Some(b"-----BEGIN CERTIFICATE-----\n".to_vec());
        let all = docs(&stream(metahook_seeds::controllers(), &s).unwrap());
        assert_eq!(kinds(&all, "ValidatingWebhookConfiguration"), 3);
        assert_eq!(kinds(&all, "MutatingWebhookConfiguration"), 1);
        let ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==";
        for config in all.iter().filter(|d| {
            d["kind"]
                .as_str()
                .unwrap()
                .ends_with("WebhookConfiguration")
        }) {
            let client = &config["webhooks"][0]["clientConfig"];
            assert_eq!(client["caBundle"], ca);
            assert_eq!(client["service"]["name"], "seeds");
            assert_eq!(client["service"]["namespace"], "ops");
        }
        let foos = foos(&all);
        let names: Vec<&str> = foos["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["v1alpha1", "v1"]);
        let client = &foos["spec"]["conversion"]["webhook"]["clientConfig"];
        assert_eq!(client["caBundle"], ca);
        assert_eq!(client["service"]["path"], "/foo/convert");
        assert_eq!(client["service"]["port"], 8080);
    }

    #[test]
    fn a_name_that_cannot_be_an_object_name_is_refused() {
        let mut s = settings();
        s.namespace = "Ops".to_owned();
        let err = stream(metahook_seeds::controllers(), &s).unwrap_err();
        assert!(err.to_string().contains("\"Ops\""), "{err}");
    }
}
