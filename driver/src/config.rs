//! The CompositeController subset the driver supports
//! (docs/metacontroller.md §2; README, "Metacontroller features the driver
//! does not support"), read from `metacontroller/*.yaml` (embedded) or
//! `--controllers DIR`, and validated before anything connects to a cluster:
//! a field outside the subset is rejected by its path, so a bad file fails
//! fast with no cluster at hand.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The manifests built into the binary. One line per controller manifest.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "metacontroller/hello.yaml",
        include_str!("../../metacontroller/hello.yaml"),
    ),
    (
        "metacontroller/hikawa.yaml",
        include_str!("../../metacontroller/hikawa.yaml"),
    ),
    (
        "metacontroller/foo.yaml",
        include_str!("../../metacontroller/foo.yaml"),
    ),
];

/// Metacontroller's default hook timeout (docs/metacontroller.md §1.1).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// One CompositeController, in the supported subset.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    pub name: String,
    /// Where it came from, for messages.
    pub source: String,
    pub parent: ParentResource,
    pub children: Vec<ChildResource>,
    pub generate_selector: bool,
    pub resync_period: Option<Duration>,
    pub hooks: Hooks,
    /// The whole object as read: sent as `controller` in every hook request.
    pub object: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParentResource {
    pub api_version: String,
    pub resource: String,
    pub label_selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChildResource {
    pub api_version: String,
    pub resource: String,
    pub update_strategy: UpdateStrategy,
}

/// `OnDelete` (the default), `Recreate`, `InPlace`; the rolling methods are
/// outside the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpdateStrategy {
    #[default]
    OnDelete,
    Recreate,
    InPlace,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hooks {
    pub sync: Hook,
    pub finalize: Option<Hook>,
    pub customize: Option<Hook>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HookVersion {
    #[default]
    V1,
    V2,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub version: HookVersion,
    pub webhook: Webhook,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    /// `url`, or `<protocol>://<service.name>.<service.namespace>:<port><path>`.
    pub url: String,
    /// The path part, which names the hook in metahook's own service
    /// (`/{controller}/{hook}`).
    pub path: String,
    pub timeout: Duration,
    /// `caBundle`, `clientTLS`, `authorization`, `basicAuth`.
    pub auth: WebhookAuth,
}

/// How a webhook's server is verified and its caller identified, as
/// Metacontroller v4.17 reads a webhook's fields (`pkg/hooks/auth.go`,
/// `cabundle.go`): references only; the Secrets and ConfigMaps are read
/// when the hook is first called (`crate::hook_auth`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct WebhookAuth {
    /// The CAs that verify the server; `None`: the system's roots.
    pub ca_bundle: Option<CaBundle>,
    /// A client certificate for mutual TLS.
    pub client_tls: Option<ClientTls>,
    /// The `Authorization` header.
    pub header: Option<AuthHeader>,
}

impl WebhookAuth {
    pub fn is_empty(&self) -> bool {
        *self == WebhookAuth::default()
    }
}

/// Exactly one of Metacontroller's three sources.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CaBundle {
    Inline(String),
    Secret(KeyRef),
    ConfigMap(KeyRef),
}

/// A Secret or ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A key of a Secret or ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyRef {
    pub object: ObjectRef,
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientTls {
    pub secret: ObjectRef,
    /// `certKey`, default `tls.crt`.
    pub cert_key: String,
    /// `privateKeyKey`, default `tls.key`.
    pub private_key_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AuthHeader {
    /// `authorization`: `<type> <the Secret's value>`, type `Bearer` unless
    /// set.
    Authorization { scheme: String, secret: KeyRef },
    /// `basicAuth`: `Basic base64(username:password)`.
    Basic {
        secret: ObjectRef,
        username_key: String,
        password_key: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path} failed")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{source_name}: not valid YAML")]
    Yaml {
        source_name: String,
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    #[error("{source_name}: `{field}` is not supported by the bundled driver{hint}")]
    Unsupported {
        source_name: String,
        field: String,
        hint: String,
    },
    #[error("{source_name}: `{field}` {message}")]
    Invalid {
        source_name: String,
        field: String,
        message: String,
    },
    #[error("{source_name}: a CompositeController named {name} is already defined in {first}")]
    Duplicate {
        source_name: String,
        name: String,
        first: String,
    },
    #[error("{dir} holds no *.yaml or *.yml CompositeController files")]
    Empty { dir: PathBuf },
}

/// The embedded manifests, validated.
pub fn embedded() -> Result<Vec<ControllerConfig>, ConfigError> {
    collect(
        EMBEDDED
            .iter()
            .map(|(name, text)| ((*name).to_owned(), (*text).to_owned())),
    )
}

/// Every `*.yaml`/`*.yml` file in `dir` (not recursive), in name order.
pub fn from_dir(dir: &Path) -> Result<Vec<ControllerConfig>, ConfigError> {
    let read_err = |source| ConfigError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(ConfigError::Empty {
            dir: dir.to_owned(),
        });
    }
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        files.push((path.display().to_string(), text));
    }
    collect(files.into_iter())
}

fn collect(
    files: impl Iterator<Item = (String, String)>,
) -> Result<Vec<ControllerConfig>, ConfigError> {
    let mut out: Vec<ControllerConfig> = Vec::new();
    for (source_name, text) in files {
        let config = parse(&source_name, &text)?;
        if let Some(first) = out.iter().find(|c| c.name == config.name) {
            return Err(ConfigError::Duplicate {
                source_name,
                name: config.name,
                first: first.source.clone(),
            });
        }
        out.push(config);
    }
    Ok(out)
}

/// Parses and validates one CompositeController document.
pub fn parse(source_name: &str, text: &str) -> Result<ControllerConfig, ConfigError> {
    let object: Value = serde_saphyr::from_str(text).map_err(|source| ConfigError::Yaml {
        source_name: source_name.to_owned(),
        source: Box::new(source),
    })?;
    let check = Check { source_name };
    let document: manifest::Document = serde_path_to_error::deserialize(&object)
        .map_err(|e| check.invalid(&e.path().to_string(), e.into_inner().to_string()))?;
    check.controller(document, object)
}

/// The manifest as written, typed. Every struct keeps the keys it does not
/// know in `other`, so that the first one is refused by its path (with a
/// hint for Metacontroller features outside the subset) rather than
/// ignored; type errors come with their path from `serde_path_to_error`.
/// Fields that are required or have rules beyond their type are checked in
/// [`Check`], so that each message names the field and the rule.
mod manifest {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    use std::collections::BTreeMap;

    pub type Other = BTreeMap<String, IgnoredAny>;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Document {
        pub api_version: Option<String>,
        pub kind: Option<String>,
        #[serde(default)]
        pub metadata: Metadata,
        pub spec: Option<Spec>,
        /// Written by Metacontroller; accepted and not read.
        #[serde(default, rename = "status")]
        pub _status: Option<IgnoredAny>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize, Default)]
    pub struct Metadata {
        pub name: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Spec {
        pub parent_resource: Option<Parent>,
        #[serde(default)]
        pub child_resources: Option<Vec<Child>>,
        pub generate_selector: Option<bool>,
        pub resync_period_seconds: Option<i64>,
        pub hooks: Option<Hooks>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Parent {
        pub api_version: Option<String>,
        pub resource: Option<String>,
        pub label_selector: Option<LabelSelector>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Child {
        pub api_version: Option<String>,
        pub resource: Option<String>,
        pub update_strategy: Option<UpdateStrategy>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    pub struct UpdateStrategy {
        pub method: Option<String>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    pub struct Hooks {
        pub sync: Option<Hook>,
        pub finalize: Option<Hook>,
        pub customize: Option<Hook>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    pub struct Hook {
        pub version: Option<String>,
        pub webhook: Option<Webhook>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Webhook {
        pub url: Option<String>,
        pub service: Option<Service>,
        pub path: Option<String>,
        pub timeout: Option<String>,
        pub ca_bundle: Option<CaBundle>,
        #[serde(rename = "clientTLS")]
        pub client_tls: Option<ClientTls>,
        pub authorization: Option<Authorization>,
        pub basic_auth: Option<BasicAuth>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CaBundle {
        pub inline: Option<String>,
        pub secret_ref: Option<Ref>,
        pub config_map_ref: Option<Ref>,
        #[serde(flatten)]
        pub other: Other,
    }

    /// Metacontroller's SecretRef, SecretKeyRef and ResourceKeyRef.
    #[derive(Deserialize)]
    pub struct Ref {
        pub name: Option<String>,
        pub namespace: Option<String>,
        pub key: Option<String>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ClientTls {
        pub secret_ref: Option<Ref>,
        pub cert_key: Option<String>,
        pub private_key_key: Option<String>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Authorization {
        #[serde(rename = "type")]
        pub scheme: Option<String>,
        pub secret_ref: Option<Ref>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct BasicAuth {
        pub secret_ref: Option<Ref>,
        pub username_key: Option<String>,
        pub password_key: Option<String>,
        #[serde(flatten)]
        pub other: Other,
    }

    #[derive(Deserialize)]
    pub struct Service {
        pub name: Option<String>,
        pub namespace: Option<String>,
        pub port: Option<u64>,
        pub protocol: Option<String>,
        #[serde(flatten)]
        pub other: Other,
    }
}

/// The rules beyond the manifest's types, each failing with the field's path.
struct Check<'a> {
    source_name: &'a str,
}

impl Check<'_> {
    fn invalid(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            source_name: self.source_name.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        }
    }

    fn unsupported(&self, field: &str, hint: &str) -> ConfigError {
        ConfigError::Unsupported {
            source_name: self.source_name.to_owned(),
            field: field.to_owned(),
            hint: hint.to_owned(),
        }
    }

    /// Refuses the first key the manifest's types do not know; `hints`
    /// explain Metacontroller's features outside the subset.
    fn known(&self, other: &manifest::Other, field: &str) -> Result<(), ConfigError> {
        let Some(key) = other.keys().next() else {
            return Ok(());
        };
        let hint = match key.as_str() {
            "revisionHistory" | "statusChecks" => " (rolling updates are not supported)",
            "ignoreStatusChanges" => " (every parent update triggers a sync)",
            "endpointConfigs" => {
                " (set caBundle, clientTLS, authorization or basicAuth on each webhook instead)"
            }
            "etag" => " (hook responses are not cached)",
            "preUpdateChild" | "postUpdateChild" => " (Metacontroller ignores these hooks too)",
            _ => "",
        };
        Err(self.unsupported(&join(field, key), hint))
    }

    /// A string that must be there and not be empty.
    fn required(&self, value: Option<String>, field: &str) -> Result<String, ConfigError> {
        value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| self.invalid(field, "is required"))
    }

    fn controller(
        &self,
        doc: manifest::Document,
        object: Value,
    ) -> Result<ControllerConfig, ConfigError> {
        self.known(&doc.other, "")?;
        let api_version = self.required(doc.api_version, "apiVersion")?;
        if api_version != "metacontroller.k8s.io/v1alpha1" {
            return Err(self.invalid("apiVersion", "must be metacontroller.k8s.io/v1alpha1"));
        }
        let kind = self.required(doc.kind, "kind")?;
        if kind != "CompositeController" {
            let hint = if kind == "DecoratorController" {
                " (DecoratorControllers are not supported by the bundled driver)"
            } else {
                ""
            };
            return Err(self.invalid("kind", format!("must be CompositeController{hint}")));
        }
        let name = self.required(doc.metadata.name, "metadata.name")?;
        let spec = doc
            .spec
            .ok_or_else(|| self.invalid("spec", "must be a mapping"))?;
        self.known(&spec.other, "spec")?;
        let parent = self.parent(
            spec.parent_resource
                .ok_or_else(|| self.invalid("spec.parentResource", "must be a mapping"))?,
        )?;
        let children = spec
            .child_resources
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, child)| self.child(child, &format!("spec.childResources[{i}]")))
            .collect::<Result<_, _>>()?;
        // Metacontroller floors the period at one second.
        let resync_period = spec
            .resync_period_seconds
            .map(|n| Duration::from_secs(n.max(1).unsigned_abs()));
        let hooks = self.hooks(
            spec.hooks
                .ok_or_else(|| self.invalid("spec.hooks", "is required (no hooks defined)"))?,
        )?;
        Ok(ControllerConfig {
            name,
            source: self.source_name.to_owned(),
            parent,
            children,
            generate_selector: spec.generate_selector.unwrap_or(false),
            resync_period,
            hooks,
            object,
        })
    }

    fn parent(&self, parent: manifest::Parent) -> Result<ParentResource, ConfigError> {
        let field = "spec.parentResource";
        self.known(&parent.other, field)?;
        if let Some(selector) = &parent.label_selector {
            crate::selector::parse(selector)
                .map_err(|e| self.invalid(&join(field, "labelSelector"), e.to_string()))?;
        }
        Ok(ParentResource {
            api_version: self.required(parent.api_version, &join(field, "apiVersion"))?,
            resource: self.required(parent.resource, &join(field, "resource"))?,
            label_selector: parent.label_selector,
        })
    }

    fn child(&self, child: manifest::Child, field: &str) -> Result<ChildResource, ConfigError> {
        self.known(&child.other, field)?;
        let update_strategy = match child.update_strategy {
            None => UpdateStrategy::OnDelete,
            Some(strategy) => {
                let path = join(field, "updateStrategy");
                self.known(&strategy.other, &path)?;
                match strategy.method.as_deref() {
                    None | Some("" | "OnDelete") => UpdateStrategy::OnDelete,
                    Some("Recreate") => UpdateStrategy::Recreate,
                    Some("InPlace") => UpdateStrategy::InPlace,
                    Some(m @ ("RollingRecreate" | "RollingInPlace")) => {
                        return Err(self.unsupported(
                            &format!("{path}.method: {m}"),
                            " (rolling updates are not supported; use Recreate or InPlace)",
                        ));
                    }
                    Some(_) => {
                        return Err(self.invalid(
                            &join(&path, "method"),
                            "must be OnDelete, Recreate or InPlace",
                        ));
                    }
                }
            }
        };
        Ok(ChildResource {
            api_version: self.required(child.api_version, &join(field, "apiVersion"))?,
            resource: self.required(child.resource, &join(field, "resource"))?,
            update_strategy,
        })
    }

    fn hooks(&self, hooks: manifest::Hooks) -> Result<Hooks, ConfigError> {
        let field = "spec.hooks";
        self.known(&hooks.other, field)?;
        let hook = |hook: Option<manifest::Hook>, key: &str| {
            hook.map(|h| self.hook(h, &join(field, key))).transpose()
        };
        let sync = hook(hooks.sync, "sync")?.ok_or_else(|| {
            self.invalid(
                "spec.hooks.sync",
                "is required: the driver calls it for every parent",
            )
        })?;
        Ok(Hooks {
            sync,
            finalize: hook(hooks.finalize, "finalize")?,
            customize: hook(hooks.customize, "customize")?,
        })
    }

    fn hook(&self, hook: manifest::Hook, field: &str) -> Result<Hook, ConfigError> {
        self.known(&hook.other, field)?;
        let version = match hook.version.as_deref() {
            None | Some("v1") => HookVersion::V1,
            Some("v2") => HookVersion::V2,
            Some(_) => return Err(self.invalid(&join(field, "version"), "must be v1 or v2")),
        };
        let field = join(field, "webhook");
        let webhook = hook
            .webhook
            .ok_or_else(|| self.invalid(&field, "must be a mapping"))?;
        self.known(&webhook.other, &field)?;
        let timeout = match webhook.timeout.as_deref() {
            None => DEFAULT_TIMEOUT,
            Some(text) => match parse_go_duration(text) {
                // Metacontroller treats zero or negative as the default.
                Some(d) if !d.is_zero() => d,
                Some(_) => DEFAULT_TIMEOUT,
                None => {
                    return Err(self.invalid(
                        &join(&field, "timeout"),
                        "must be a Go duration such as 10s or 1m30s",
                    ));
                }
            },
        };
        let (url, path) = match (webhook.url, webhook.service) {
            (Some(url), _) => {
                let url = self.required(Some(url), &join(&field, "url"))?;
                let path = url_path(&url)
                    .ok_or_else(|| {
                        self.invalid(&join(&field, "url"), "must be an http:// or https:// URL")
                    })?
                    .to_owned();
                (url, path)
            }
            (None, Some(service)) => {
                let service_field = join(&field, "service");
                self.known(&service.other, &service_field)?;
                let name = self.required(service.name, &join(&service_field, "name"))?;
                let namespace =
                    self.required(service.namespace, &join(&service_field, "namespace"))?;
                let port = service.port.unwrap_or(80);
                if !(1..=65535).contains(&port) {
                    return Err(
                        self.invalid(&join(&service_field, "port"), "must be a port number")
                    );
                }
                let protocol = match service.protocol.as_deref() {
                    None => "http",
                    Some(p @ ("http" | "https")) => p,
                    Some(_) => {
                        return Err(self
                            .invalid(&join(&service_field, "protocol"), "must be http or https"));
                    }
                };
                let path = self.required(webhook.path, &join(&field, "path"))?;
                if !path.starts_with('/') {
                    return Err(self.invalid(&join(&field, "path"), "must begin with /"));
                }
                // No `.svc` suffix: Metacontroller builds exactly this
                // (docs/metacontroller.md §1.1).
                (
                    format!("{protocol}://{name}.{namespace}:{port}{path}"),
                    path,
                )
            }
            (None, None) => {
                return Err(self.invalid(&field, "needs either url, or service and path"));
            }
        };
        let auth = WebhookAuth {
            ca_bundle: webhook
                .ca_bundle
                .map(|ca| self.ca_bundle(ca, &join(&field, "caBundle")))
                .transpose()?,
            client_tls: webhook
                .client_tls
                .map(|tls| self.client_tls(tls, &join(&field, "clientTLS")))
                .transpose()?,
            header: match (webhook.authorization, webhook.basic_auth) {
                (Some(_), Some(_)) => {
                    return Err(self.invalid(
                        &join(&field, "authorization"),
                        "and basicAuth are mutually exclusive",
                    ));
                }
                (Some(a), None) => Some(self.authorization(a, &join(&field, "authorization"))?),
                (None, Some(b)) => Some(self.basic_auth(b, &join(&field, "basicAuth"))?),
                (None, None) => None,
            },
        };
        Ok(Hook {
            version,
            webhook: Webhook {
                url,
                path,
                timeout,
                auth,
            },
        })
    }

    /// A Secret's or ConfigMap's name and namespace (both required: the
    /// CompositeController is cluster-scoped), and its key if `key` says
    /// which (`Ok(None)`: absent and no default; `Some(default)`: absent
    /// means that).
    fn reference(
        &self,
        reference: Option<manifest::Ref>,
        field: &str,
        key: Option<&str>,
    ) -> Result<(ObjectRef, Option<String>), ConfigError> {
        let field = join(field, "secretRef");
        let reference = reference.ok_or_else(|| self.invalid(&field, "is required"))?;
        self.object_ref(reference, &field, key)
    }

    fn object_ref(
        &self,
        reference: manifest::Ref,
        field: &str,
        key: Option<&str>,
    ) -> Result<(ObjectRef, Option<String>), ConfigError> {
        self.known(&reference.other, field)?;
        let object = ObjectRef {
            name: self.required(reference.name, &join(field, "name"))?,
            namespace: self.required(reference.namespace, &join(field, "namespace"))?,
        };
        let key = match (reference.key.filter(|k| !k.is_empty()), key) {
            (Some(_), None) => {
                return Err(self.invalid(
                    &join(field, "key"),
                    "is not a field here (the keys have fields of their own)",
                ));
            }
            (Some(k), _) => Some(k),
            (None, Some("")) => return Err(self.invalid(&join(field, "key"), "is required")),
            (None, default) => default.map(str::to_owned),
        };
        Ok((object, key))
    }

    fn ca_bundle(&self, ca: manifest::CaBundle, field: &str) -> Result<CaBundle, ConfigError> {
        self.known(&ca.other, field)?;
        let key_ref = |r: manifest::Ref, name: &str| {
            let (object, key) = self.object_ref(r, &join(field, name), Some(DEFAULT_CA_KEY))?;
            Ok::<_, ConfigError>(KeyRef {
                object,
                key: key.unwrap_or_else(|| DEFAULT_CA_KEY.to_owned()),
            })
        };
        match (ca.inline, ca.secret_ref, ca.config_map_ref) {
            (Some(pem), None, None) => Ok(CaBundle::Inline(pem)),
            (None, Some(r), None) => Ok(CaBundle::Secret(key_ref(r, "secretRef")?)),
            (None, None, Some(r)) => Ok(CaBundle::ConfigMap(key_ref(r, "configMapRef")?)),
            (None, None, None) => {
                Err(self.invalid(field, "needs one of inline, secretRef or configMapRef"))
            }
            _ => Err(self.invalid(
                field,
                "has more than one source: exactly one of inline, secretRef or configMapRef",
            )),
        }
    }

    fn client_tls(&self, tls: manifest::ClientTls, field: &str) -> Result<ClientTls, ConfigError> {
        self.known(&tls.other, field)?;
        let (secret, _) = self.reference(tls.secret_ref, field, None)?;
        Ok(ClientTls {
            secret,
            cert_key: or_default(tls.cert_key, "tls.crt"),
            private_key_key: or_default(tls.private_key_key, "tls.key"),
        })
    }

    fn authorization(
        &self,
        auth: manifest::Authorization,
        field: &str,
    ) -> Result<AuthHeader, ConfigError> {
        self.known(&auth.other, field)?;
        let scheme = auth.scheme.unwrap_or_default().trim().to_owned();
        if scheme.eq_ignore_ascii_case("basic") {
            return Err(self.invalid(
                &join(field, "type"),
                "Basic is not supported: use basicAuth instead",
            ));
        }
        let (object, key) = self.reference(auth.secret_ref, field, Some(""))?;
        Ok(AuthHeader::Authorization {
            scheme: if scheme.is_empty() {
                "Bearer".to_owned()
            } else {
                scheme
            },
            secret: KeyRef {
                object,
                key: key.unwrap_or_default(),
            },
        })
    }

    fn basic_auth(
        &self,
        basic: manifest::BasicAuth,
        field: &str,
    ) -> Result<AuthHeader, ConfigError> {
        self.known(&basic.other, field)?;
        let (secret, _) = self.reference(basic.secret_ref, field, None)?;
        Ok(AuthHeader::Basic {
            secret,
            username_key: or_default(basic.username_key, "username"),
            password_key: or_default(basic.password_key, "password"),
        })
    }
}

/// The key of a CA bundle's Secret or ConfigMap when none is named.
pub const DEFAULT_CA_KEY: &str = "ca.crt";

fn or_default(value: Option<String>, default: &str) -> String {
    value
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_owned()
    } else {
        format!("{field}.{key}")
    }
}

/// The path of an http(s) URL (`/` when it has none).
fn url_path(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    if rest.is_empty() {
        return None;
    }
    Some(rest.find('/').map_or("/", |i| &rest[i..]))
}

/// A Go `time.ParseDuration` string: `300ms`, `1.5s`, `1m30s`, `-2h`; `0`
/// alone is zero. Negative durations come back as zero.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    if negative {
        return Some(Duration::ZERO);
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: demo}
spec:
  parentResource: {apiVersion: example.com/v1, resource: things}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  hooks:
    sync:
      webhook: {url: "http://hooks.example:8080/demo/sync"}
"#;

    fn err(text: &str) -> String {
        parse("test.yaml", text).unwrap_err().to_string()
    }

    fn with_spec(extra: &str) -> String {
        format!("{MINIMAL}{extra}")
    }

    #[test]
    fn embedded_manifests_are_in_the_subset() {
        let all = embedded().unwrap();
        let names: Vec<_> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["hello", "hikawa", "foo"]);
        let hello = &all[0];
        assert_eq!(hello.parent.api_version, "fraim.co.jp/v1");
        assert_eq!(hello.parent.resource, "helloes");
        assert!(hello.generate_selector);
        assert_eq!(hello.children[0].update_strategy, UpdateStrategy::InPlace);
        assert_eq!(hello.hooks.sync.version, HookVersion::V2);
        assert_eq!(
            hello.hooks.sync.webhook.url,
            "http://metahook.metahook:80/hello/sync"
        );
        assert_eq!(hello.hooks.sync.webhook.path, "/hello/sync");
        assert_eq!(hello.hooks.sync.webhook.timeout, Duration::from_secs(10));
        assert!(hello.hooks.finalize.is_some());
        assert!(all[2].hooks.customize.is_some());
    }

    #[test]
    fn defaults_match_metacontroller() {
        let c = parse("m.yaml", MINIMAL).unwrap();
        assert_eq!(c.children[0].update_strategy, UpdateStrategy::OnDelete);
        assert_eq!(c.hooks.sync.version, HookVersion::V1);
        assert_eq!(c.hooks.sync.webhook.timeout, DEFAULT_TIMEOUT);
        assert_eq!(c.hooks.sync.webhook.path, "/demo/sync");
        assert!(!c.generate_selector);
        assert_eq!(c.resync_period, None);
        assert_eq!(c.object["metadata"]["name"], "demo");
    }

    #[test]
    fn unsupported_fields_are_named() {
        let endpoint = with_spec("  endpointConfigs: []\n");
        assert!(err(&endpoint).contains("`spec.endpointConfigs` is not supported"));
        let history = MINIMAL.replace(
            "resource: things}",
            "resource: things, revisionHistory: {}}",
        );
        assert!(err(&history).contains("`spec.parentResource.revisionHistory` is not supported"));
        let rolling = MINIMAL.replace(
            "{apiVersion: v1, resource: configmaps}",
            "{apiVersion: v1, resource: configmaps, updateStrategy: {method: RollingInPlace}}",
        );
        assert!(err(&rolling).contains(
            "spec.childResources[0].updateStrategy.method: RollingInPlace` is not supported"
        ));
        let checks = MINIMAL.replace(
            "{apiVersion: v1, resource: configmaps}",
            "{apiVersion: v1, resource: configmaps, updateStrategy: {method: InPlace, statusChecks: {}}}",
        );
        assert!(
            err(&checks)
                .contains("`spec.childResources[0].updateStrategy.statusChecks` is not supported")
        );
        let etag = MINIMAL.replace("webhook: {url:", "webhook: {etag: {enabled: true}, url:");
        assert!(err(&etag).contains("`spec.hooks.sync.webhook.etag` is not supported"));
        let endpoints = with_spec("  endpointConfigs: []\n");
        assert!(err(&endpoints).contains("set caBundle, clientTLS, authorization or basicAuth"));
        let pre = MINIMAL.replace("  hooks:\n", "  hooks:\n    preUpdateChild: {}\n");
        assert!(err(&pre).contains("`spec.hooks.preUpdateChild`"));
        let status_changes = MINIMAL.replace(
            "resource: things}",
            "resource: things, ignoreStatusChanges: true}",
        );
        assert!(err(&status_changes).contains("`spec.parentResource.ignoreStatusChanges`"));
    }

    #[test]
    fn wrong_types_are_named_by_their_path() {
        let method = MINIMAL.replace(
            "{apiVersion: v1, resource: configmaps}",
            "{apiVersion: v1, resource: configmaps, updateStrategy: {method: 5}}",
        );
        assert!(
            err(&method).contains("`spec.childResources[0].updateStrategy.method` invalid type"),
            "{}",
            err(&method)
        );
        let selector = MINIMAL.replace("resource: things}", "resource: things, labelSelector: 5}");
        assert!(err(&selector).contains("`spec.parentResource.labelSelector` invalid type"));
    }

    #[test]
    fn invalid_values_are_named() {
        assert!(
            err(&MINIMAL.replace("CompositeController", "DecoratorController"))
                .contains("DecoratorControllers are not supported")
        );
        assert!(
            err(&MINIMAL.replace("resource: things", "resource: \"\""))
                .contains("`spec.parentResource.resource` is required")
        );
        assert!(
            err(&MINIMAL.replace("  hooks:\n    sync:\n", "  hooks:\n    finalize:\n"))
                .contains("`spec.hooks.sync` is required")
        );
        let bad_timeout = MINIMAL.replace("webhook: {url:", "webhook: {timeout: soon, url:");
        assert!(
            err(&bad_timeout).contains("`spec.hooks.sync.webhook.timeout` must be a Go duration")
        );
        let no_path = MINIMAL.replace(
            "webhook: {url: \"http://hooks.example:8080/demo/sync\"}",
            "webhook: {service: {name: s, namespace: tools}}",
        );
        let got = err(&no_path);
        assert!(
            got.contains("`spec.hooks.sync.webhook.path` is required"),
            "{got}"
        );
        let bad_method = MINIMAL.replace(
            "{apiVersion: v1, resource: configmaps}",
            "{apiVersion: v1, resource: configmaps, updateStrategy: {method: Sometimes}}",
        );
        assert!(err(&bad_method).contains("must be OnDelete, Recreate or InPlace"));
        let bad_selector = MINIMAL.replace(
            "resource: things}",
            "resource: things, labelSelector: {matchExpressions: [{key: a, operator: Near}]}}",
        );
        assert!(err(&bad_selector).contains("`spec.parentResource.labelSelector`"));
        assert!(err("not: [valid").contains("not valid YAML"));
    }

    #[test]
    fn service_webhooks_build_metacontrollers_url() {
        let text = MINIMAL.replace(
            "webhook: {url: \"http://hooks.example:8080/demo/sync\"}",
            "{version: v2, webhook: {service: {name: hooks, namespace: tools, port: 8080}, path: /demo/sync, timeout: 1m30s}}",
        )
        .replace("    sync:\n      {", "    sync: {");
        let c = parse("m.yaml", &text).unwrap();
        assert_eq!(
            c.hooks.sync.webhook.url,
            "http://hooks.tools:8080/demo/sync"
        );
        assert_eq!(c.hooks.sync.webhook.timeout, Duration::from_secs(90));
        assert_eq!(c.hooks.sync.version, HookVersion::V2);
    }

    fn webhook_auth(fields: &str) -> Result<WebhookAuth, String> {
        let text = MINIMAL.replace(
            "webhook: {url: \"http://hooks.example:8080/demo/sync\"}",
            &format!("webhook: {{url: \"https://hooks.example/demo/sync\", {fields}}}"),
        );
        parse("m.yaml", &text)
            .map(|c| c.hooks.sync.webhook.auth)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn webhook_credentials_as_metacontroller_reads_them() {
        let secret = |name: &str| ObjectRef {
            namespace: "hooks".to_owned(),
            name: name.to_owned(),
        };
        let all = webhook_auth(
            "caBundle: {secretRef: {name: ca, namespace: hooks}}, \
             clientTLS: {secretRef: {name: client, namespace: hooks}}, \
             authorization: {secretRef: {name: token, namespace: hooks, key: t}}",
        )
        .unwrap();
        assert_eq!(
            all,
            WebhookAuth {
                ca_bundle: Some(CaBundle::Secret(KeyRef {
                    object: secret("ca"),
                    key: "ca.crt".to_owned()
                })),
                client_tls: Some(ClientTls {
                    secret: secret("client"),
                    cert_key: "tls.crt".to_owned(),
                    private_key_key: "tls.key".to_owned(),
                }),
                header: Some(AuthHeader::Authorization {
                    scheme: "Bearer".to_owned(),
                    secret: KeyRef {
                        object: secret("token"),
                        key: "t".to_owned()
                    },
                }),
            }
        );
        let basic = webhook_auth(
            "caBundle: {configMapRef: {name: ca, namespace: hooks, key: bundle.pem}}, \
             basicAuth: {secretRef: {name: b, namespace: hooks}, usernameKey: u}",
        )
        .unwrap();
        assert_eq!(
            basic.ca_bundle,
            Some(CaBundle::ConfigMap(KeyRef {
                object: secret("ca"),
                key: "bundle.pem".to_owned()
            }))
        );
        assert_eq!(
            basic.header,
            Some(AuthHeader::Basic {
                secret: secret("b"),
                username_key: "u".to_owned(),
                password_key: "password".to_owned(),
            })
        );
        let token = webhook_auth(
            "authorization: {type: Token, secretRef: {name: t, namespace: hooks, key: k}}",
        )
        .unwrap();
        assert!(
            matches!(token.header, Some(AuthHeader::Authorization { ref scheme, .. }) if scheme == "Token")
        );
        assert!(webhook_auth("caBundle: {inline: pem}").is_ok());
        assert!(webhook_auth("").unwrap().is_empty());

        for (fields, message) in [
            (
                "authorization: {secretRef: {name: t, namespace: ns, key: k}}, basicAuth: {secretRef: {name: b, namespace: ns}}",
                "`spec.hooks.sync.webhook.authorization` and basicAuth are mutually exclusive",
            ),
            (
                "authorization: {type: basic, secretRef: {name: t, namespace: ns, key: k}}",
                "`spec.hooks.sync.webhook.authorization.type` Basic is not supported: use basicAuth",
            ),
            (
                "authorization: {secretRef: {name: t, namespace: ns}}",
                "`spec.hooks.sync.webhook.authorization.secretRef.key` is required",
            ),
            (
                "caBundle: {}",
                "`spec.hooks.sync.webhook.caBundle` needs one of inline, secretRef or configMapRef",
            ),
            (
                "caBundle: {inline: x, secretRef: {name: a, namespace: b}}",
                "has more than one source",
            ),
            (
                "clientTLS: {secretRef: {name: c}}",
                "`spec.hooks.sync.webhook.clientTLS.secretRef.namespace` is required",
            ),
            (
                "clientTLS: {secretRef: {name: c, namespace: ns, key: k}}",
                "`spec.hooks.sync.webhook.clientTLS.secretRef.key` is not a field here",
            ),
            (
                "basicAuth: {}",
                "`spec.hooks.sync.webhook.basicAuth.secretRef` is required",
            ),
            (
                "clientTLS: {secretRef: {name: c, namespace: ns}, caFile: x}",
                "`spec.hooks.sync.webhook.clientTLS.caFile` is not supported",
            ),
        ] {
            let got = webhook_auth(fields).unwrap_err();
            assert!(got.contains(message), "{fields}: {got}");
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("-3s"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("3"), None);
        assert_eq!(parse_go_duration("s"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn a_directory_is_read_in_name_order_and_duplicates_rejected() {
        let dir = std::env::temp_dir().join(format!("metahook-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b.yaml"), MINIMAL).unwrap();
        std::fs::write(
            dir.join("a.yml"),
            MINIMAL.replace("name: demo", "name: alpha"),
        )
        .unwrap();
        std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
        let names: Vec<_> = from_dir(&dir)
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["alpha", "demo"]);
        std::fs::write(dir.join("c.yaml"), MINIMAL).unwrap();
        assert!(
            from_dir(&dir)
                .unwrap_err()
                .to_string()
                .contains("already defined")
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(from_dir(&dir), Err(ConfigError::Read { .. })));
    }
}
