//! A raw HTTPS/1.1 client for the hook service on a real socket: the CA it
//! trusts, the client certificate it presents (if any), and the server
//! certificate it was shown.

use crate::certs::Pair;
use crate::server::Response;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// Who the client is.
pub struct HttpsClient {
    config: Arc<rustls::ClientConfig>,
}

impl HttpsClient {
    /// Trusts `ca_pem`; presents `identity` when given.
    pub fn new(ca_pem: &str, identity: Option<&Pair>) -> Self {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.expect("a CA certificate")).expect("a CA");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots);
        let config = match identity {
            // Not `with_client_auth_cert`: its check that the key fits
            // reads the certificate with webpki, which refuses X.509 v1
            // (what Metacontroller's webhook-auth example makes).
            Some(pair) => {
                let key = provider
                    .key_provider
                    .load_private_key(
                        PrivateKeyDer::from_pem_slice(pair.key.as_bytes()).expect("a key"),
                    )
                    .expect("a usable key");
                let chain = CertificateDer::pem_slice_iter(pair.cert.as_bytes())
                    .collect::<Result<_, _>>()
                    .expect("a certificate");
                builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(
                    CertifiedKey::new(chain, key),
                )))
            }
            None => builder.with_no_client_auth(),
        };
        HttpsClient {
            config: Arc::new(config),
        }
    }

    /// Sends `request` to `addr` as `localhost` over a new connection and
    /// reads the whole answer; with the server's certificate. A refused
    /// handshake is the error.
    pub fn send(
        &self,
        addr: SocketAddr,
        request: &[u8],
    ) -> std::io::Result<(Response, CertificateDer<'static>)> {
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(Duration::from_secs(30)))?;
        let name = ServerName::try_from("localhost").map_err(std::io::Error::other)?;
        let connection = rustls::ClientConnection::new(self.config.clone(), name)
            .map_err(std::io::Error::other)?;
        let mut tls = rustls::StreamOwned::new(connection, tcp);
        tls.write_all(request)?;
        tls.flush()?;
        let mut raw = Vec::new();
        match tls.read_to_end(&mut raw) {
            Ok(_) => {}
            // The server closed without close_notify after answering.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
            Err(e) => return Err(e),
        }
        let server_cert = tls
            .conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.clone().into_owned())
            .ok_or_else(|| std::io::Error::other("no server certificate"))?;
        if raw.is_empty() {
            return Err(std::io::Error::other("the server sent nothing"));
        }
        Ok((Response::parse(&raw), server_cert))
    }

    /// `POST path` with a JSON body and `extra` header lines.
    pub fn post(
        &self,
        addr: SocketAddr,
        path: &str,
        body: &[u8],
        extra: &str,
    ) -> std::io::Result<(Response, CertificateDer<'static>)> {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.send(addr, &request)
    }

    pub fn get(&self, addr: SocketAddr, path: &str) -> std::io::Result<Response> {
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        Ok(self.send(addr, request.as_bytes())?.0)
    }
}
