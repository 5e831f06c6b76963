//! Delegated authentication, as kube-apiserver's aggregator expects of an
//! aggregated API server: a request is trusted only when it comes with a
//! client certificate signed by the request-header CA (and, if the cluster
//! names any, with one of the allowed common names); only then are its
//! `X-Remote-User` / `X-Remote-Group` / `X-Remote-Extra-*` headers (or
//! whichever the cluster configures) believed. Everything comes from
//! `kube-system/extension-apiserver-authentication`, which the API server
//! keeps up to date; see [`FrontProxy::update`].

use actix_web::http::header::HeaderMap;
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, UnixTime};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

mod subject;

/// The ConfigMap kube-apiserver publishes for aggregated API servers.
pub const CONFIG_MAP_NAMESPACE: &str = "kube-system";
pub const CONFIG_MAP_NAME: &str = "extension-apiserver-authentication";

/// Who a request is for, as the aggregator said.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct User {
    pub name: String,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Why the request-header settings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RequestHeaderError {
    #[error(
        "{CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} has no requestheader-client-ca-file: the API server runs without an aggregation layer"
    )]
    NoCa,
    #[error("requestheader-client-ca-file holds no usable certificate")]
    Ca(#[source] rustls::Error),
    #[error("{key} is not a JSON list of strings")]
    List {
        key: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// The settings of one version of the ConfigMap.
pub struct RequestHeader {
    verifier: Arc<dyn ClientCertVerifier>,
    allowed_names: Vec<String>,
    username_headers: Vec<String>,
    uid_headers: Vec<String>,
    group_headers: Vec<String>,
    extra_prefixes: Vec<String>,
}

impl std::fmt::Debug for RequestHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHeader")
            .field("allowed_names", &self.allowed_names)
            .field("username_headers", &self.username_headers)
            .finish_non_exhaustive()
    }
}

impl RequestHeader {
    /// From the ConfigMap's data.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, RequestHeaderError> {
        let ca = data
            .get("requestheader-client-ca-file")
            .filter(|ca| !ca.trim().is_empty())
            .ok_or(RequestHeaderError::NoCa)?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca.as_bytes()).flatten() {
            roots.add(cert).map_err(RequestHeaderError::Ca)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(|e| RequestHeaderError::Ca(rustls::Error::General(e.to_string())))?;
        let list = |key: &'static str| -> Result<Vec<String>, RequestHeaderError> {
            match data.get(key) {
                None => Ok(Vec::new()),
                Some(text) if text.trim().is_empty() => Ok(Vec::new()),
                Some(text) => serde_json::from_str::<Option<Vec<String>>>(text)
                    .map(Option::unwrap_or_default)
                    .map_err(|source| RequestHeaderError::List { key, source }),
            }
        };
        let lower = |v: Vec<String>| v.into_iter().map(|h| h.to_ascii_lowercase()).collect();
        Ok(RequestHeader {
            verifier,
            allowed_names: list("requestheader-allowed-names")?,
            username_headers: lower(list("requestheader-username-headers")?),
            uid_headers: lower(list("requestheader-uid-headers")?),
            group_headers: lower(list("requestheader-group-headers")?),
            extra_prefixes: lower(list("requestheader-extra-headers-prefix")?),
        })
    }

    /// The user of a request that came with the certificate chain `peer`
    /// (leaf first) and `headers`; `Err` says why it is not trusted.
    pub fn authenticate(
        &self,
        peer: Option<&[CertificateDer<'static>]>,
        headers: &HeaderMap,
    ) -> Result<User, String> {
        let Some((leaf, intermediates)) = peer.and_then(|chain| chain.split_first()) else {
            return Err("no client certificate: requests are accepted from kube-apiserver's aggregation layer only".to_owned());
        };
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(|e| format!("the client certificate is not the front proxy's: {e}"))?;
        // Read even when any name is allowed: kube-apiserver refuses a
        // certificate whose subject it cannot read.
        let name = subject::common_name(leaf.as_ref())
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        if !self.allowed_names.is_empty() && !self.allowed_names.contains(&name) {
            return Err(format!(
                "the client certificate's common name {name:?} is not an allowed front-proxy name"
            ));
        }
        let first = |names: &[String]| {
            names.iter().find_map(|h| {
                headers
                    .get(h.as_str())
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
            })
        };
        let name = first(&self.username_headers)
            .ok_or_else(|| "the front proxy sent no user name".to_owned())?;
        let mut groups: Vec<String> = self
            .group_headers
            .iter()
            .flat_map(|h| headers.get_all(h.as_str()))
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect();
        // As Kubernetes' own authenticators do.
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".to_owned());
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers.iter() {
            let header = header.as_str();
            let Some(key) = self
                .extra_prefixes
                .iter()
                .find_map(|p| header.strip_prefix(p.as_str()))
            else {
                continue;
            };
            if let Ok(value) = value.to_str() {
                extra
                    .entry(unescape(key))
                    .or_default()
                    .push(value.to_owned());
            }
        }
        Ok(User {
            name,
            uid: first(&self.uid_headers),
            groups,
            extra,
        })
    }
}

/// An extra key is percent-encoded in its header name (Kubernetes'
/// `X-Remote-Extra-` convention), and lower-cased.
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).to_ascii_lowercase()
}

/// The current settings, replaced whenever the ConfigMap changes; none
/// until it has been read (every request is 401 until then).
#[derive(Debug, Default)]
pub struct FrontProxy {
    current: RwLock<Option<Arc<RequestHeader>>>,
}

impl FrontProxy {
    pub fn update(&self, settings: RequestHeader) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(settings));
    }

    pub fn authenticate(
        &self,
        peer: Option<&[CertificateDer<'static>]>,
        headers: &HeaderMap,
    ) -> Result<User, String> {
        let current = self
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match current {
            Some(settings) => settings.authenticate(peer, headers),
            None => Err(format!(
                "the front proxy's CA is not known yet ({CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} not read)"
            )),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
