//! Starting the aggregated API: the certificate read (a bad one fails at
//! start), the ConfigMap of the front proxy's settings watched and the
//! certificate files re-read in the background on the driver's runtime,
//! and the HTTPS server, run by the caller's actix System beside the hook
//! server.

use crate::authorize::{ApiReviewer, Authorizer};
use crate::front_proxy::{CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE, FrontProxy, RequestHeader};
use crate::routes;
use crate::state::State;
use crate::tls::{self, ServingCert, TlsError};
use actix_web::{App, HttpServer, web};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use metahook_driver::observe::view::View;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// Where HTTPS is served (`--api-listen`).
    pub listen: SocketAddr,
    /// Holds `tls.crt` and `tls.key` (`--api-tls-dir`).
    pub tls_dir: PathBuf,
    /// How often the certificate files are re-read. A mounted Secret is
    /// updated by the kubelet within about a minute of a change.
    pub reload_every: Duration,
    pub limits: Limits,
}

/// What one client may hold. While every connection slot of a worker is
/// taken it accepts no more and new connections wait in the kernel's
/// queue: the aggregator's too, whose availability check gives up after
/// 5 s (kube-aggregator's `remote_available_controller.go`) and marks the
/// APIService unavailable, which stalls discovery and namespace deletion
/// cluster-wide. actix-tls allows 256 handshakes at once per worker and
/// gives each 3 s: 1,500 sockets that send nothing, reopened as soon as
/// they are closed, made a new handshake wait over 5 s (tests/e2e/aggregated.rs).
/// So a connection that has not finished its handshake costs no more than
/// one that has: handshakes at once are bounded only by the connection
/// limit, and a socket that says nothing is closed after
/// `handshake_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Open connections per worker (two workers), handshaking or not.
    pub max_connections_per_worker: usize,
    /// Time from accepting a connection to the end of its TLS handshake.
    pub handshake_timeout: Duration,
    /// Time from the handshake to a request's whole head.
    pub request_head_timeout: Duration,
}

impl Default for Limits {
    /// 2,048 connections: one waiting for its handshake holds about
    /// 10 KiB, so about 21 MiB at the limit, within the chart's 256 MiB beside the hooks'
    /// 128 MiB budget. A handshake on the aggregator's network takes
    /// milliseconds; 2 s means a client queued behind a full set of idle
    /// sockets waits one turn, well inside the aggregator's 5 s.
    fn default() -> Self {
        Limits {
            max_connections_per_worker: 1024,
            handshake_timeout: Duration::from_secs(2),
            request_head_timeout: Duration::from_secs(5),
        }
    }
}

/// Few clients (the aggregator's pooled connections): two workers.
const WORKERS: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the aggregated API's serving certificate")]
    Tls(#[from] TlsError),
    #[error("connecting to the Kubernetes API server for reviews failed")]
    Client(#[source] kube::Error),
    #[error("listening on {addr} failed")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Everything but the listening socket, ready to serve.
#[derive(Debug)]
pub struct ApiServer {
    listen: SocketAddr,
    limits: Limits,
    state: web::Data<State>,
    tls: rustls::ServerConfig,
}

impl ApiServer {
    /// Reads the certificate, connects a client for reviews and starts the
    /// background tasks on `runtime` (they end with `stop`).
    pub fn start(
        settings: &ApiSettings,
        view: Arc<View>,
        runtime: &tokio::runtime::Runtime,
        stop: CancellationToken,
    ) -> Result<Self, StartError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cert = Arc::new(ServingCert::load(&settings.tls_dir, provider)?);
        let tls = tls::server_config(cert.clone())?;
        // Infers the configuration (no request yet); its connections live
        // on the driver's runtime.
        let client = runtime.block_on(client()).map_err(StartError::Client)?;
        let front_proxy = Arc::new(FrontProxy::default());
        runtime.spawn(watch_request_header(
            client.clone(),
            front_proxy.clone(),
            stop.clone(),
        ));
        runtime.spawn(reload_cert(cert, settings.reload_every, stop));
        let authorizer = Arc::new(Authorizer::new(Box::new(ApiReviewer {
            client,
            runtime: runtime.handle().clone(),
        })));
        Ok(ApiServer {
            listen: settings.listen,
            limits: settings.limits,
            state: web::Data::new(State {
                records: view,
                authenticator: front_proxy,
                authorizer,
            }),
            tls,
        })
    }

    /// The HTTPS server; run it on an actix System.
    pub fn server(&self) -> Result<(actix_web::dev::Server, SocketAddr), StartError> {
        let state = self.state.clone();
        let listen = self.listen;
        let limits = self.limits;
        let server = HttpServer::new(move || {
            let state = state.clone();
            App::new().configure(move |cfg| routes::configure(cfg, state))
        })
        .on_connect(tls::keep_peer_certs)
        .workers(WORKERS)
        .max_connections(limits.max_connections_per_worker)
        // actix-tls's handshake bound is one number for the whole process
        // (a static each worker reads when it starts); the hook server
        // serves plain HTTP and has none.
        .max_connection_rate(limits.max_connections_per_worker)
        .tls_handshake_timeout(limits.handshake_timeout)
        .client_request_timeout(limits.request_head_timeout)
        .bind_rustls_0_23(listen, self.tls.clone())
        .map_err(|source| StartError::Listen {
            addr: listen,
            source,
        })?;
        let addr = server.addrs().first().copied().unwrap_or(listen);
        // Signals are the caller's: it stops this server with the others.
        Ok((server.disable_signals().run(), addr))
    }
}

#[cfg(test)]
mod tests;

/// The kubeconfig found the usual way, saying `User-Agent: metahook/<version>`
/// as the driver's clients do (the audit log tells its requests apart).
/// Outside the driver's `--kube-qps` budget: a review queued behind the
/// driver's writes would hold up a user's `kubectl get`.
async fn client() -> Result<Client, kube::Error> {
    let mut config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(metahook_driver::client::connect::USER_AGENT),
    ));
    Client::try_from(config)
}

/// Keeps the front proxy's settings as kube-apiserver publishes them.
async fn watch_request_header(
    client: Client,
    front_proxy: Arc<FrontProxy>,
    stop: CancellationToken,
) {
    let api: Api<ConfigMap> = Api::namespaced(client, CONFIG_MAP_NAMESPACE);
    let config = watcher::Config::default().fields(&format!("metadata.name={CONFIG_MAP_NAME}"));
    let mut events = watcher(api, config).default_backoff().boxed();
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = events.next() => event,
        };
        match event {
            None => return,
            Some(Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm))) => {
                match RequestHeader::from_data(&cm.data.unwrap_or_default()) {
                    Ok(settings) => {
                        tracing::info!(
                            ?settings,
                            "front-proxy settings read from {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}"
                        );
                        front_proxy.update(settings);
                    }
                    Err(err) => {
                        tracing::error!(error = %metahook_driver::api_error_chain(&err), "the front proxy's settings are unusable; requests stay unauthenticated")
                    }
                }
            }
            Some(Ok(_)) => {}
            Some(Err(err)) => {
                tracing::warn!(error = %metahook_driver::api_error_chain(&err), "watching {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} failed; retrying")
            }
        }
    }
}

/// Re-reads the certificate files every `every`.
async fn reload_cert(cert: Arc<ServingCert>, every: Duration, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        match cert.reload() {
            Ok(true) => tracing::info!(
                "the aggregated API's serving certificate changed; new connections use it"
            ),
            Ok(false) => {}
            Err(err) => {
                tracing::warn!(error = %metahook_driver::api_error_chain(&err), "re-reading the serving certificate failed; the one in use stays")
            }
        }
    }
}
