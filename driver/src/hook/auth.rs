//! A webhook's `caBundle`, `clientTLS`, `authorization` and `basicAuth`
//! turned into what a call needs: the TLS client settings (the bundle's CAs
//! instead of the system's, the client certificate) and the
//! `Authorization` header. Read from their Secrets and ConfigMaps the first
//! time the hook is called, and kept: Metacontroller v4.17 resolves them
//! when it creates the controller and does not re-read them either
//! (`pkg/hooks/endpoint_config.go`, `auth.go`, `cabundle.go`); the errors
//! say the same things.

use crate::config::{AuthHeader, CaBundle, ClientTls, KeyRef, ObjectRef, WebhookAuth};
use base64::Engine as _;
use http::HeaderValue;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("{field}: reading {kind} {object} failed")]
    Read {
        field: &'static str,
        kind: &'static str,
        object: ObjectRef,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("{field}: {kind} {object} has no key {key:?}")]
    MissingKey {
        field: &'static str,
        kind: &'static str,
        object: ObjectRef,
        key: String,
    },
    #[error("caBundle: key {key:?} of {kind} {object} is empty")]
    EmptyCa {
        kind: &'static str,
        object: ObjectRef,
        key: String,
    },
    #[error("caBundle: no PEM certificate in it")]
    NoCaCertificate,
    #[error("caBundle: a certificate in it cannot be a CA")]
    BadCaCertificate(#[source] rustls::Error),
    #[error("clientTLS: the certificate and key in Secret {object} are unusable")]
    ClientCertificate {
        object: ObjectRef,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("basicAuth: the username in Secret {object} contains ':'")]
    ColonInUsername { object: ObjectRef },
    #[error("{field}: the value in Secret {object} cannot be an HTTP header")]
    NotAHeader {
        field: &'static str,
        object: ObjectRef,
    },
    #[error("reading Secrets and ConfigMaps needs a Kubernetes client")]
    NoClient,
    #[error("building the TLS client settings failed")]
    Tls(#[source] rustls::Error),
}

/// What a call to one webhook uses beyond its URL.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// `None`: the caller's default settings (the system's CAs, no client
    /// certificate).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub authorization: Option<HeaderValue>,
}

/// Reads what `auth` refers to (through `client`, when it refers to any).
pub async fn resolve(
    client: Option<&Client>,
    auth: &WebhookAuth,
) -> Result<Resolved, CredentialError> {
    let reader = Reader { client };
    let ca = match &auth.ca_bundle {
        None => None,
        Some(CaBundle::Inline(pem)) => Some(pem.as_bytes().to_vec()),
        Some(CaBundle::Secret(r)) => Some(reader.ca("Secret", r).await?),
        Some(CaBundle::ConfigMap(r)) => Some(reader.ca("ConfigMap", r).await?),
    };
    let identity = match &auth.client_tls {
        None => None,
        Some(tls) => Some(reader.client_tls(tls).await?),
    };
    let tls = if ca.is_some() || identity.is_some() {
        Some(Arc::new(tls_config(ca.as_deref(), identity)?))
    } else {
        None
    };
    let authorization = match &auth.header {
        None => None,
        Some(header) => Some(reader.header(header).await?),
    };
    Ok(Resolved { tls, authorization })
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// TLS 1.2 and up; the bundle's CAs alone when there is a bundle, else the
/// system's (as Go's `RootCAs`).
pub(crate) fn tls_config(
    ca: Option<&[u8]>,
    identity: Option<Identity>,
) -> Result<rustls::ClientConfig, CredentialError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(pem) => {
            let certs: Vec<_> = CertificateDer::pem_slice_iter(pem).flatten().collect();
            if certs.is_empty() {
                return Err(CredentialError::NoCaCertificate);
            }
            for cert in certs {
                roots.add(cert).map_err(CredentialError::BadCaCertificate)?;
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            if native.certs.is_empty() {
                // A minimal image may carry none: plain-HTTP hooks (the
                // usual in-cluster Service) still work, HTTPS ones fail to
                // verify and say so.
                tracing::warn!(errors = ?native.errors, "no system CA certificates; HTTPS hooks without a caBundle cannot be verified");
            }
            roots.add_parsable_certificates(native.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(CredentialError::Tls)?
        .with_root_certificates(roots);
    Ok(match identity {
        Some((chain, key)) => {
            let certified = client_identity(&provider, chain, key)?;
            builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(certified)))
        }
        None => builder.with_no_client_auth(),
    })
}

/// The client certificate and its key, refused when the key is not the
/// certificate's (where webpki can tell; otherwise the server's handshake
/// will). rustls's `with_client_auth_cert` also refuses a
/// certificate webpki cannot parse, such as an X.509 v1 one (`openssl x509
/// -req` without extensions makes those; Metacontroller's webhook-auth
/// example does), which Go presents and servers accept: whether to trust
/// it is the server's to say.
fn client_identity(
    provider: &rustls::crypto::CryptoProvider,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<CertifiedKey, CredentialError> {
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(CredentialError::Tls)?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Err(err @ rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(CredentialError::Tls(err))
        }
        // Matching, or not checkable (a key that does not say its public
        // half, a certificate webpki does not parse).
        _ => Ok(certified),
    }
}

struct Reader<'a> {
    client: Option<&'a Client>,
}

impl Reader<'_> {
    fn client(&self) -> Result<Client, CredentialError> {
        self.client.cloned().ok_or(CredentialError::NoClient)
    }

    async fn secret(
        &self,
        field: &'static str,
        object: &ObjectRef,
    ) -> Result<BTreeMap<String, Vec<u8>>, CredentialError> {
        let api: Api<Secret> = Api::namespaced(self.client()?, &object.namespace);
        let secret = api
            .get(&object.name)
            .await
            .map_err(|source| CredentialError::Read {
                field,
                kind: "Secret",
                object: object.clone(),
                source: Box::new(source),
            })?;
        Ok(secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect())
    }

    async fn config_map(
        &self,
        field: &'static str,
        object: &ObjectRef,
    ) -> Result<BTreeMap<String, Vec<u8>>, CredentialError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client()?, &object.namespace);
        let map = api
            .get(&object.name)
            .await
            .map_err(|source| CredentialError::Read {
                field,
                kind: "ConfigMap",
                object: object.clone(),
                source: Box::new(source),
            })?;
        Ok(map
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect())
    }

    async fn ca(&self, kind: &'static str, r: &KeyRef) -> Result<Vec<u8>, CredentialError> {
        let mut data = match kind {
            "Secret" => self.secret("caBundle", &r.object).await?,
            _ => self.config_map("caBundle", &r.object).await?,
        };
        let value = take(&mut data, "caBundle", kind, &r.object, &r.key)?;
        if value.is_empty() {
            return Err(CredentialError::EmptyCa {
                kind,
                object: r.object.clone(),
                key: r.key.clone(),
            });
        }
        Ok(value)
    }

    async fn client_tls(&self, tls: &ClientTls) -> Result<Identity, CredentialError> {
        let field = "clientTLS";
        let mut data = self.secret(field, &tls.secret).await?;
        let cert = take(&mut data, field, "Secret", &tls.secret, &tls.cert_key)?;
        let key = take(
            &mut data,
            field,
            "Secret",
            &tls.secret,
            &tls.private_key_key,
        )?;
        let unusable =
            |source: Box<dyn std::error::Error + Send + Sync>| CredentialError::ClientCertificate {
                object: tls.secret.clone(),
                source,
            };
        let chain: Vec<_> = CertificateDer::pem_slice_iter(&cert)
            .collect::<Result<_, _>>()
            .map_err(|e| unusable(e.into()))?;
        if chain.is_empty() {
            return Err(unusable("no PEM certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| unusable(e.into()))?;
        Ok((chain, key))
    }

    async fn header(&self, header: &AuthHeader) -> Result<HeaderValue, CredentialError> {
        let (field, object, value) = match header {
            AuthHeader::Authorization { scheme, secret } => {
                let field = "authorization";
                let mut data = self.secret(field, &secret.object).await?;
                let value = take(&mut data, field, "Secret", &secret.object, &secret.key)?;
                let value = format!("{scheme} {}", String::from_utf8_lossy(&value).trim());
                (field, &secret.object, value)
            }
            AuthHeader::Basic {
                secret,
                username_key,
                password_key,
            } => {
                let field = "basicAuth";
                let mut data = self.secret(field, secret).await?;
                let username = take(&mut data, field, "Secret", secret, username_key)?;
                let password = take(&mut data, field, "Secret", secret, password_key)?;
                if username.contains(&b':') {
                    return Err(CredentialError::ColonInUsername {
                        object: secret.clone(),
                    });
                }
                let mut pair = username.trim_ascii().to_vec();
                pair.push(b':');
                pair.extend_from_slice(password.trim_ascii());
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
                (field, secret, format!("Basic {encoded}"))
            }
        };
        let mut value = HeaderValue::try_from(value).map_err(|_| CredentialError::NotAHeader {
            field,
            object: object.clone(),
        })?;
        // Kept out of logs and debug output.
        value.set_sensitive(true);
        Ok(value)
    }
}

fn take(
    data: &mut BTreeMap<String, Vec<u8>>,
    field: &'static str,
    kind: &'static str,
    object: &ObjectRef,
    key: &str,
) -> Result<Vec<u8>, CredentialError> {
    data.remove(key).ok_or_else(|| CredentialError::MissingKey {
        field,
        kind,
        object: object.clone(),
        key: key.to_owned(),
    })
}

#[cfg(test)]
mod tests;
