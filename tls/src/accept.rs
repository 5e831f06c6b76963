//! The TLS handshake of each connection, by actix-tls' rustls acceptor
//! (its handshake timeout and its bound on handshakes at once), with the
//! peer's address: handed on with the stream, and told with every failed
//! handshake. A rustls verifier is not told whom it verifies, and actix-web
//! drops a failed handshake without a word.

use actix_tls::accept::rustls_0_23::{Acceptor, AcceptorService};
use actix_web::dev::{Service, ServiceFactory};
use actix_web::rt::net::TcpStream;
use std::convert::Infallible;
use std::net::SocketAddr;

/// The stream after the handshake: what `keep_peer_certs` reads.
pub type TlsStream = actix_tls::accept::rustls_0_23::TlsStream<TcpStream>;

/// Why the acceptor failed a handshake ([`crate::Refusal::of`] names it).
pub type HandshakeError = actix_tls::accept::TlsError<std::io::Error, Infallible>;

/// A service factory for actix-server: each TCP connection's handshake
/// with `config`, answered with the stream and the peer's address;
/// `failed` is told of each handshake that fails, with the peer's address.
pub fn acceptor<F>(
    config: rustls::ServerConfig,
    failed: F,
) -> impl ServiceFactory<
    TcpStream,
    Config = (),
    Response = (TlsStream, Option<SocketAddr>),
    Error = HandshakeError,
    InitError = (),
> + Clone
where
    F: Fn(Option<SocketAddr>, &HandshakeError) + Clone + 'static,
{
    actix_service::apply_fn_factory::<_, _, _, _, _, TcpStream, _, _>(
        Acceptor::new(config),
        move |tcp: TcpStream, tls: &AcceptorService| {
            let peer = tcp.peer_addr().ok();
            let handshake = tls.call(tcp);
            let failed = failed.clone();
            async move {
                match handshake.await {
                    Ok(stream) => Ok((stream, peer)),
                    Err(err) => {
                        failed(peer, &err);
                        Err(err)
                    }
                }
            }
        },
    )
}
