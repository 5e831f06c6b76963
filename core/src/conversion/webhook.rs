//! Where the API server sends a controller's ConversionReviews, as a CRD's
//! `spec.conversion` says it.

use crate::controller::Webhooks;
use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, ServiceReference, WebhookClientConfig, WebhookConversion,
};

/// The hook service as the API server reaches it for conversions: a
/// Service in the cluster (as the chart installs metahook) or a URL, and
/// the CA bundle its serving certificate is checked against. The
/// controller's path (`/{controller}/convert`) is added to either.
///
/// ```
/// use metahook_core::Webhooks;
/// use metahook_core::conversion::ConversionWebhook;
///
/// let in_cluster = ConversionWebhook::service(&Webhooks::default());
/// let local = ConversionWebhook::url("https://127.0.0.1:8443").ca_bundle(b"-----BEGIN CERTIFICATE-----\n".to_vec());
/// # let _ = (in_cluster, local);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionWebhook {
    target: Target,
    ca_bundle: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Service(Webhooks),
    Url(String),
}

impl ConversionWebhook {
    /// The hook service behind `webhooks`' Service. The API server speaks
    /// only HTTPS to a webhook: the Service's port must serve TLS.
    pub fn service(webhooks: &Webhooks) -> Self {
        ConversionWebhook {
            target: Target::Service(webhooks.clone()),
            ca_bundle: None,
        }
    }

    /// The hook service at `base`, an `https://` URL without a path
    /// (`https://127.0.0.1:8443`): for an API server outside the cluster
    /// or a hook service outside it.
    pub fn url(base: impl Into<String>) -> Self {
        ConversionWebhook {
            target: Target::Url(base.into()),
            ca_bundle: None,
        }
    }

    /// The PEM certificates that sign the hook service's serving
    /// certificate; without, the API server trusts its own roots.
    pub fn ca_bundle(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_bundle = Some(pem.into());
        self
    }

    /// A CRD's `spec.conversion`: the `Webhook` strategy, reviews of
    /// `apiextensions.k8s.io/v1` only, sent to `controller`'s `convert` path.
    pub(crate) fn conversion(&self, controller: &str) -> CustomResourceConversion {
        let path = format!("/{controller}/convert");
        let (service, url) = match &self.target {
            Target::Service(webhooks) => (
                Some(ServiceReference {
                    name: webhooks.service.clone(),
                    namespace: webhooks.namespace.clone(),
                    path: Some(path),
                    port: Some(i32::from(webhooks.port)),
                }),
                None,
            ),
            Target::Url(base) => (None, Some(format!("{}{path}", base.trim_end_matches('/')))),
        };
        CustomResourceConversion {
            strategy: "Webhook".to_owned(),
            webhook: Some(WebhookConversion {
                client_config: Some(WebhookClientConfig {
                    ca_bundle: self.ca_bundle.clone().map(ByteString),
                    service,
                    url,
                }),
                conversion_review_versions: vec!["v1".to_owned()],
            }),
        }
    }
}
