//! Starting the server: binding, HTTPS or not, the workers and their
//! bounds, and re-reading the certificate and token files while it runs.

use crate::routes::app;
use crate::settings::Settings;
use crate::state::AppState;
use crate::token::{TokenError, TokenFile};
use crate::{auth, tls, tls_listener, tls_refusals};
use actix_web::{HttpServer, web};
use metahook_core::Controller;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("binding {addr} failed")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the HTTP server stopped with an error")]
    Server(#[source] std::io::Error),
    #[error("the hook service's certificates (--tls-dir)")]
    Tls(#[from] metahook_tls::TlsError),
    #[error("the hook service's token (--auth-token-file)")]
    Token(#[from] TokenError),
}

/// Binds `settings.listen` and starts serving `state`; the returned server
/// runs until stopped (SIGTERM or SIGINT stop it gracefully, unless
/// `settings.stop_on_signals` is off).
pub fn start(
    settings: &Settings,
    state: web::Data<AppState>,
) -> Result<(actix_web::dev::Server, SocketAddr), ServeError> {
    let listener = TcpListener::bind(settings.listen).map_err(|source| ServeError::Bind {
        addr: settings.listen,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: settings.listen,
        source,
    })?;
    let https = settings.tls.as_ref().map(tls::Https::load).transpose()?;
    let token = settings
        .auth_token_file
        .as_deref()
        .map(TokenFile::load)
        .transpose()?
        .map(Arc::new);
    let callers = Arc::new(auth::Callers::of(
        state.controllers,
        settings.tls.as_ref().is_some_and(|t| t.client_auth),
        token.clone(),
    ));
    let workers = settings
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    // actix counts connections per worker.
    let max_connections = settings.max_connections.div_ceil(workers).max(1);
    let app_state = state.clone();
    let new_app = move || app(app_state.clone(), callers.clone());
    let bind_err = |source| ServeError::Bind {
        addr: settings.listen,
        source,
    };
    let server = match &https {
        Some(https) => tls_listener::serve(
            listener,
            https.server_config()?,
            new_app,
            &tls_listener::Bounds {
                workers,
                max_connections,
                request_timeout: settings.request_timeout,
                shutdown_timeout: settings.shutdown_timeout,
                stop_on_signals: settings.stop_on_signals,
            },
            Arc::new(tls_refusals::TlsRefusals::new(state.clone())),
        )
        .map_err(bind_err)?,
        None => {
            let mut server = HttpServer::new(new_app)
                .client_request_timeout(settings.request_timeout)
                .shutdown_timeout(settings.shutdown_timeout.as_secs())
                .workers(workers)
                .max_connections(max_connections);
            if !settings.stop_on_signals {
                server = server.disable_signals();
            }
            server.listen(listener).map_err(bind_err)?.run()
        }
    };
    if https.is_some() || token.is_some() {
        actix_web::rt::spawn(reload(https, token, settings.reload_every));
    }
    state.set_ready(true);
    Ok((server, addr))
}

/// Re-reads the certificate and token files every `every`, for as long as
/// the actix System runs.
async fn reload(https: Option<tls::Https>, token: Option<Arc<TokenFile>>, every: Duration) {
    let mut ticks = actix_web::rt::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Some(https) = &https {
            https.reload();
        }
        if let Some(token) = &token {
            token.reload_logged();
        }
    }
}

/// Serves until SIGTERM or SIGINT, then drains requests in flight.
pub fn run_blocking(
    settings: Settings,
    controllers: &'static [Controller],
) -> Result<(), ServeError> {
    actix_web::rt::System::new().block_on(async move {
        let state = web::Data::new(AppState::new(controllers, &settings));
        let (server, addr) = start(&settings, state)?;
        tracing::info!(%addr, https = settings.tls.is_some(), "serving hooks");
        server.await.map_err(ServeError::Server)
    })
}
