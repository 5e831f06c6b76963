//! The hook service's HTTPS listener, built as actix-web's
//! `listen_rustls_0_23` builds one (actix-server, a rustls acceptor,
//! actix-http's HTTP/1.1 service with the app), except for the acceptor:
//! `metahook_tls::acceptor` knows the peer of each connection, so a failed
//! handshake is counted and logged with who and why ([`TlsRefusals`])
//! instead of dropped without a word by actix-web's own.

use crate::tls_refusals::TlsRefusals;
use actix_http::{HttpService, Protocol, Request};
use actix_service::{IntoServiceFactory, ServiceFactoryExt, map_config};
use actix_tls::accept::TlsError;
use actix_web::Error;
use actix_web::body::MessageBody;
use actix_web::dev::{AppConfig, Server, ServiceFactory, ServiceResponse};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

/// The server's bounds, as `start` sets them on actix-web's `HttpServer`
/// for plain HTTP.
pub struct Bounds {
    pub workers: usize,
    /// Connections per worker.
    pub max_connections: usize,
    pub request_timeout: Duration,
    pub shutdown_timeout: Duration,
    pub stop_on_signals: bool,
}

/// Serves the app that `app` builds (once per worker) over TLS with
/// `config` on `listener`.
pub fn serve<F, I, S, B>(
    listener: TcpListener,
    config: rustls::ServerConfig,
    app: F,
    bounds: &Bounds,
    refusals: Arc<TlsRefusals>,
) -> std::io::Result<Server>
where
    F: Fn() -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, Request>,
    S: ServiceFactory<
            Request,
            Config = AppConfig,
            Response = ServiceResponse<B>,
            Error = Error,
            InitError = (),
        > + 'static,
    S::Service: 'static,
    <S::Service as actix_web::dev::Service<Request>>::Future: 'static,
    B: MessageBody + 'static,
{
    let addr = listener.local_addr()?;
    let mut builder = Server::build()
        .workers(bounds.workers)
        .max_concurrent_connections(bounds.max_connections)
        .shutdown_timeout(bounds.shutdown_timeout.as_secs());
    if !bounds.stop_on_signals {
        builder = builder.disable_signals();
    }
    let shutdown = builder.graceful_shutdown_signal();
    let request_timeout = bounds.request_timeout;
    builder
        .listen("metahook-hooks-https", listener, move || {
            let shutdown = shutdown.clone();
            let http = HttpService::build()
                // Keep-alive connections close when the server stops.
                .graceful_shutdown_signal(move || {
                    let shutdown = shutdown.clone();
                    async move { shutdown.notified().await }
                })
                .client_request_timeout(request_timeout)
                // actix-web's HttpServer default (actix-http's is none).
                .client_disconnect_timeout(Duration::from_secs(1))
                .on_connect_ext(|io: &metahook_tls::TlsStream, data| {
                    metahook_tls::keep_peer_certs(io, data)
                })
                .finish(map_config(
                    app()
                        .into_factory()
                        .map_err(|err: Error| err.error_response()),
                    // actix-web builds this for its own listeners with a
                    // crate-private constructor; this is its public twin
                    // (hidden, kept for actix-test). The app is told HTTPS.
                    move |()| AppConfig::__priv_test_new(true, addr.to_string(), addr),
                ));
            let report = refusals.clone();
            metahook_tls::acceptor(config.clone(), move |peer, err| report.report(peer, err))
                .map_err(TlsError::into_service_error)
                // ALPN offers HTTP/1.1 only (`Https::server_config`).
                .map(|(io, peer): (_, Option<SocketAddr>)| (io, Protocol::Http1, peer))
                .and_then(http.map_err(TlsError::Service))
        })
        .map(|builder| builder.run())
}
