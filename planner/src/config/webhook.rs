//! Where a hook is called and how long the driver waits for it.
//!
//! `url`, or `service` and `path`, and `timeout`, as Metacontroller v4.17
//! builds them (docs/metacontroller.md §1.1). The path also names the hook
//! in metahook's own service (`/{controller}/{hook}`), which is how the
//! driver finds a hook when it calls it in-process
//! (the driver's `start::run::resolve_hooks`).

use super::check::{Check, join};
use super::go_duration::go_duration;
use super::{ConfigError, WebhookAuth, manifest};
use std::time::Duration;

/// Metacontroller's default hook timeout (docs/metacontroller.md §1.1).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// `responseUnMarshallMode`: `Some(true)` for `strict`, `Some(false)`
    /// for `loose`; `None`, the hook version's default.
    pub strict: Option<bool>,
    /// `etag`, when `enabled`: answers kept per root object and asked for
    /// again with `If-None-Match` (`hook/call/etag.rs`).
    pub etag: Option<Etag>,
}

/// `etag.cacheTimeoutSeconds` and `cacheCleanupSeconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Etag {
    pub timeout: Option<Duration>,
    pub cleanup: Option<Duration>,
}

impl Check<'_> {
    /// `field` is the webhook's path, `spec.hooks.<hook>.webhook`.
    pub(super) fn webhook(
        &self,
        webhook: manifest::Webhook,
        field: &str,
    ) -> Result<Webhook, ConfigError> {
        self.known(&webhook.other, field)?;
        let timeout = match webhook.timeout.as_deref() {
            None => DEFAULT_TIMEOUT,
            Some(text) => match go_duration(text) {
                // Metacontroller treats zero or negative as the default.
                Ok(d) if !d.is_zero() => d,
                Ok(_) => DEFAULT_TIMEOUT,
                Err(e) => {
                    return Err(self.invalid(
                        &join(field, "timeout"),
                        format!("must be a Go duration such as 10s or 1m30s ({e})"),
                    ));
                }
            },
        };
        let (url, path) = match (webhook.url, webhook.service) {
            (Some(url), _) => {
                let url = self.required(Some(url), &join(field, "url"))?;
                let path = url_path(&url)
                    .ok_or_else(|| {
                        self.invalid(&join(field, "url"), "must be an http:// or https:// URL")
                    })?
                    .to_owned();
                (url, path)
            }
            (None, Some(service)) => self.service_url(service, webhook.path, field)?,
            (None, None) => {
                return Err(self.invalid(field, "needs either url, or service and path"));
            }
        };
        let strict = match webhook.response_unmarshall_mode.as_deref() {
            None => None,
            Some("strict") => Some(true),
            Some("loose") => Some(false),
            Some(_) => {
                return Err(self.invalid(
                    &join(field, "responseUnMarshallMode"),
                    "must be loose or strict",
                ));
            }
        };
        let etag = match webhook.etag {
            None => None,
            Some(etag) => {
                let path = join(field, "etag");
                self.known(&etag.other, &path)?;
                let seconds = |value: Option<i64>, key: &str| match value {
                    None => Ok(None),
                    Some(n) if n > 0 => Ok(Some(Duration::from_secs(n.unsigned_abs()))),
                    Some(_) => {
                        Err(self.invalid(&join(&path, key), "must be a positive number of seconds"))
                    }
                };
                let settings = Etag {
                    timeout: seconds(etag.cache_timeout_seconds, "cacheTimeoutSeconds")?,
                    cleanup: seconds(etag.cache_cleanup_seconds, "cacheCleanupSeconds")?,
                };
                etag.enabled.unwrap_or(false).then_some(settings)
            }
        };
        let auth = self.webhook_auth(
            webhook.ca_bundle,
            webhook.client_tls,
            webhook.authorization,
            webhook.basic_auth,
            field,
        )?;
        Ok(Webhook {
            url,
            path,
            timeout,
            auth,
            strict,
            etag,
        })
    }

    /// `<protocol>://<name>.<namespace>:<port><path>` and the path.
    fn service_url(
        &self,
        service: manifest::Service,
        path: Option<String>,
        field: &str,
    ) -> Result<(String, String), ConfigError> {
        let service_field = join(field, "service");
        self.known(&service.other, &service_field)?;
        let name = self.required(service.name, &join(&service_field, "name"))?;
        let namespace = self.required(service.namespace, &join(&service_field, "namespace"))?;
        let port = service.port.unwrap_or(80);
        if !(1..=65535).contains(&port) {
            return Err(self.invalid(&join(&service_field, "port"), "must be a port number"));
        }
        let protocol = match service.protocol.as_deref() {
            None => "http",
            Some(p @ ("http" | "https")) => p,
            Some(_) => {
                return Err(
                    self.invalid(&join(&service_field, "protocol"), "must be http or https")
                );
            }
        };
        let path = self.required(path, &join(field, "path"))?;
        if !path.starts_with('/') {
            return Err(self.invalid(&join(field, "path"), "must begin with /"));
        }
        // No `.svc` suffix: Metacontroller builds exactly this
        // (docs/metacontroller.md §1.1).
        Ok((
            format!("{protocol}://{name}.{namespace}:{port}{path}"),
            path,
        ))
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
