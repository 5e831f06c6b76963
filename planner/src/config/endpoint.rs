//! `spec.endpointConfigs`: a webhook's TLS and credentials given once per
//! host (Metacontroller v4.17's `pkg/hooks/endpoint_config.go`). A webhook
//! with settings of its own keeps them, all of them; one with none takes
//! the first entry whose `host` is its URL's host — as written, or with
//! the scheme's default port (`svc` matches `https://svc/`, and so does
//! `svc:443`), case aside.

use super::check::{Check, join};
use super::{ConfigError, Hooks, WebhookAuth, manifest};

/// One entry, checked: its host, and the settings it gives.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct EndpointConfig {
    host: String,
    auth: WebhookAuth,
}

impl Check<'_> {
    pub(super) fn endpoint_configs(
        &self,
        configs: Vec<manifest::EndpointConfig>,
    ) -> Result<Vec<EndpointConfig>, ConfigError> {
        configs
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let field = format!("spec.endpointConfigs[{i}]");
                self.known(&c.other, &field)?;
                Ok(EndpointConfig {
                    host: self.required(c.host, &join(&field, "host"))?,
                    auth: self.webhook_auth(
                        c.ca_bundle,
                        c.client_tls,
                        c.authorization,
                        c.basic_auth,
                        &field,
                    )?,
                })
            })
            .collect()
    }
}

/// Gives each webhook with no settings of its own those of the first
/// matching entry.
pub(super) fn apply(hooks: &mut Hooks, configs: &[EndpointConfig]) {
    let webhooks = std::iter::once(&mut hooks.sync)
        .chain(hooks.finalize.as_mut())
        .chain(hooks.customize.as_mut())
        .map(|hook| &mut hook.webhook);
    for webhook in webhooks {
        if !webhook.auth.is_empty() {
            continue;
        }
        if let Some(config) = configs.iter().find(|c| host_matches(&webhook.url, &c.host)) {
            webhook.auth = config.auth.clone();
        }
    }
}

/// Whether `url`'s host (with its port, or the scheme's default one) is
/// `host`.
fn host_matches(url: &str, host: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    let Some(authority) = uri.authority() else {
        return false;
    };
    if authority.as_str().eq_ignore_ascii_case(host) {
        return true;
    }
    let default_port = match uri.scheme_str() {
        Some("https") => 443,
        Some("http") => 80,
        _ => return false,
    };
    authority.port_u16().is_none()
        && format!("{}:{default_port}", authority.host()).eq_ignore_ascii_case(host)
}

#[cfg(test)]
mod tests {
    use super::host_matches;

    #[test]
    fn a_host_matches_as_written_or_with_the_default_port() {
        let url = "https://Hooks.Example:8443/sync";
        assert!(host_matches(url, "hooks.example:8443"));
        assert!(!host_matches(url, "hooks.example"), "another port");
        let default = "https://hooks.example/sync";
        assert!(host_matches(default, "hooks.example"));
        assert!(host_matches(default, "hooks.example:443"));
        assert!(!host_matches(default, "hooks.example:80"));
        assert!(host_matches("http://hooks.example/x", "hooks.example:80"));
        assert!(!host_matches(default, "other.example"));
        assert!(!host_matches("not a url", "not"));
    }
}
