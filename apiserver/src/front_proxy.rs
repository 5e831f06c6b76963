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
pub(crate) mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

    /// A CA and a client certificate it signs with common name `cn`.
    pub(crate) struct Pki {
        pub ca_pem: String,
        pub client: CertificateDer<'static>,
        pub client_key: rustls_pki_types::PrivateKeyDer<'static>,
    }

    pub(crate) fn pki(cn: &str) -> Pki {
        pki_named(&[(rcgen::DnType::CommonName, cn.into())])
    }

    /// A CA and a client certificate it signs whose subject holds
    /// `attributes`, in order.
    pub(crate) fn pki_named(attributes: &[(rcgen::DnType, rcgen::DnValue)]) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "front-proxy-ca");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        for (kind, value) in attributes {
            params.distinguished_name.push(kind.clone(), value.clone());
        }
        let client = params.signed_by(&key, &issuer).unwrap();
        Pki {
            ca_pem: ca.pem(),
            client: client.der().clone(),
            client_key: rustls_pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        }
    }

    pub(crate) fn data(ca_pem: &str, allowed: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("requestheader-client-ca-file".to_owned(), ca_pem.to_owned()),
            ("requestheader-allowed-names".to_owned(), allowed.to_owned()),
            (
                "requestheader-username-headers".to_owned(),
                r#"["X-Remote-User"]"#.to_owned(),
            ),
            (
                "requestheader-group-headers".to_owned(),
                r#"["X-Remote-Group"]"#.to_owned(),
            ),
            (
                "requestheader-extra-headers-prefix".to_owned(),
                r#"["X-Remote-Extra-"]"#.to_owned(),
            ),
        ])
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn the_front_proxys_certificate_makes_its_headers_believed() {
        let pki = pki("front-proxy-client");
        let settings =
            RequestHeader::from_data(&data(&pki.ca_pem, r#"["front-proxy-client"]"#)).unwrap();
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "devs"),
            ("X-Remote-Group", "ops"),
            ("X-Remote-Extra-Scopes%2fread", "a"),
            ("X-Remote-Extra-Scopes%2fread", "b"),
        ]);
        let user = settings
            .authenticate(Some(std::slice::from_ref(&pki.client)), &h)
            .unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["devs", "ops", "system:authenticated"]);
        assert_eq!(user.extra.get("scopes/read").unwrap(), &["a", "b"]);
        // The aggregator's own check carries no group: it still gets the
        // group every authenticated user has.
        let aggregator = settings
            .authenticate(
                Some(std::slice::from_ref(&pki.client)),
                &headers(&[("X-Remote-User", "system:kube-aggregator")]),
            )
            .unwrap();
        assert_eq!(aggregator.groups, ["system:authenticated"]);
    }

    #[test]
    fn without_the_front_proxys_certificate_nothing_is_believed() {
        let proxy = pki("front-proxy-client");
        let settings =
            RequestHeader::from_data(&data(&proxy.ca_pem, r#"["front-proxy-client"]"#)).unwrap();
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "system:masters"),
        ]);
        let none = settings.authenticate(None, &h).unwrap_err();
        assert!(none.starts_with("no client certificate"), "{none}");
        // Signed by another CA.
        let stranger = pki("front-proxy-client");
        let other = settings
            .authenticate(Some(&[stranger.client]), &h)
            .unwrap_err();
        assert!(other.contains("not the front proxy's"), "{other}");
        // Signed by the CA, but not an allowed name.
        let signed_other_name = {
            let same_ca =
                RequestHeader::from_data(&data(&proxy.ca_pem, r#"["someone-else"]"#)).unwrap();
            same_ca
                .authenticate(Some(std::slice::from_ref(&proxy.client)), &h)
                .unwrap_err()
        };
        assert!(
            signed_other_name.contains("not an allowed front-proxy name"),
            "{signed_other_name}"
        );
        // No allowed names: any certificate the CA signed.
        let any_name = RequestHeader::from_data(&data(&proxy.ca_pem, "")).unwrap();
        assert!(
            any_name
                .authenticate(Some(std::slice::from_ref(&proxy.client)), &h)
                .is_ok()
        );
        // No user name.
        let nameless = settings
            .authenticate(
                Some(std::slice::from_ref(&proxy.client)),
                &headers(&[("X-Remote-Group", "g")]),
            )
            .unwrap_err();
        assert!(nameless.contains("no user name"), "{nameless}");
        // Before the ConfigMap is read: nobody.
        let unread = FrontProxy::default();
        assert!(unread.authenticate(Some(&[proxy.client]), &h).is_err());
    }

    #[test]
    fn allowed_names_are_judged_by_the_common_name_kube_apiserver_reads() {
        use rcgen::{DnType, DnValue};
        let cn = |name: &str| (DnType::CommonName, DnValue::from(name));
        // rcgen keeps one value per attribute type: a second CN is the
        // CN's OID under another name.
        let second_cn = |name: &str| (DnType::CustomDnType(vec![2, 5, 4, 3]), DnValue::from(name));
        let not_a_string = (
            DnType::OrganizationName,
            DnValue::UniversalString("front-proxy-client".try_into().unwrap()),
        );
        let h = headers(&[("X-Remote-User", "alice")]);
        // (the subject, the allowed names, whether the request is trusted)
        let cases = [
            (
                vec![cn("front-proxy-client")],
                r#"["front-proxy-client"]"#,
                true,
            ),
            (
                vec![cn("front-proxy-client"), second_cn("other-name")],
                r#"["front-proxy-client"]"#,
                false,
            ),
            (
                vec![cn("other-name"), second_cn("front-proxy-client")],
                r#"["front-proxy-client"]"#,
                true,
            ),
            (
                vec![cn("front-proxy-client"), not_a_string.clone()],
                r#"["front-proxy-client"]"#,
                false,
            ),
            // Any name allowed: still only a subject kube-apiserver can read.
            (vec![cn("front-proxy-client"), not_a_string], "", false),
            (vec![cn("anyone")], "", true),
        ];
        for (subject, allowed, trusted) in cases {
            let pki = pki_named(&subject);
            let settings = RequestHeader::from_data(&data(&pki.ca_pem, allowed)).unwrap();
            let result = settings.authenticate(Some(std::slice::from_ref(&pki.client)), &h);
            assert_eq!(
                result.is_ok(),
                trusted,
                "{subject:?} with {allowed:?}: {result:?}"
            );
        }
    }

    #[test]
    fn a_cluster_without_an_aggregation_layer_is_named() {
        let err = RequestHeader::from_data(&BTreeMap::new()).unwrap_err();
        assert!(matches!(err, RequestHeaderError::NoCa));
        let mut bad = data(&pki("x").ca_pem, "not json");
        bad.insert(
            "requestheader-allowed-names".to_owned(),
            "not json".to_owned(),
        );
        assert!(matches!(
            RequestHeader::from_data(&bad),
            Err(RequestHeaderError::List {
                key: "requestheader-allowed-names",
                ..
            })
        ));
    }
}
