//! The client's certificate chain of a TLS connection, kept for its
//! requests (actix-web's `on_connect`).

use rustls_pki_types::CertificateDer;

/// The client's certificate chain, leaf first, kept with its connection.
/// Present only when the client sent one and the server's client verifier
/// accepted it.
#[derive(Debug, Clone)]
pub struct PeerCerts(pub Vec<CertificateDer<'static>>);

/// actix-web's `on_connect`: keeps the client certificate chain of a TLS
/// connection for its requests.
pub fn keep_peer_certs(connection: &dyn std::any::Any, data: &mut actix_web::dev::Extensions) {
    type Tls = actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;
    if let Some(tls) = connection.downcast_ref::<Tls>()
        && let Some(chain) = tls.get_ref().1.peer_certificates()
    {
        data.insert(PeerCerts(
            chain.iter().map(|c| c.clone().into_owned()).collect(),
        ));
    }
}
