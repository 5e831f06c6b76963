//! How a webhook's server is verified and its caller identified.
//!
//! A webhook's `caBundle`, `clientTLS`, `authorization` and `basicAuth`, as
//! Metacontroller v4.17 reads them (`pkg/hooks/auth.go`, `cabundle.go`).
//! Only the references are read here: the Secrets and ConfigMaps they name
//! are read when the hook is first called (the driver's `hook::auth`), so a
//! manifest is checked with no cluster at hand. Both name and namespace are
//! required: the CompositeController is cluster-scoped.

use super::check::{Check, join, or_default};
use super::{ConfigError, manifest};

/// The key of a CA bundle's Secret or ConfigMap when none is named.
const DEFAULT_CA_KEY: &str = "ca.crt";

/// A webhook's credentials: references only (see the module's doc).
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
    /// No credentials: the driver's shared client will do.
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

impl Check<'_> {
    /// The webhook's credentials; `field` is the webhook's path.
    pub(super) fn webhook_auth(
        &self,
        ca_bundle: Option<manifest::CaBundle>,
        client_tls: Option<manifest::ClientTls>,
        authorization: Option<manifest::Authorization>,
        basic_auth: Option<manifest::BasicAuth>,
        field: &str,
    ) -> Result<WebhookAuth, ConfigError> {
        Ok(WebhookAuth {
            ca_bundle: ca_bundle
                .map(|ca| self.ca_bundle(ca, &join(field, "caBundle")))
                .transpose()?,
            client_tls: client_tls
                .map(|tls| self.client_tls(tls, &join(field, "clientTLS")))
                .transpose()?,
            header: match (authorization, basic_auth) {
                (Some(_), Some(_)) => {
                    return Err(self.invalid(
                        &join(field, "authorization"),
                        "and basicAuth are mutually exclusive",
                    ));
                }
                (Some(a), None) => Some(self.authorization(a, &join(field, "authorization"))?),
                (None, Some(b)) => Some(self.basic_auth(b, &join(field, "basicAuth"))?),
                (None, None) => None,
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
