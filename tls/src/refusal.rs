//! Why a TLS handshake failed, as a small fixed set of reasons (the label
//! of a metric, so their number stays bounded whatever clients send), and
//! the client verifier's own refusals, which travel to the acceptor inside
//! rustls' error.

use actix_tls::accept::TlsError;
use rustls::{CertificateError, Error};
use std::convert::Infallible;
use std::io;

/// Why a handshake failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// No chain from the client's certificate to a CA of `ca.crt` (as Go
    /// says when none is found, whatever the issuers it tried lacked: the
    /// log line says what they lacked).
    UnknownCa,
    /// The client's certificate is past its notAfter.
    Expired,
    NotYetValid,
    /// The client's handshake signature does not verify with its
    /// certificate's key (it does not hold the key).
    BadSignature,
    /// An extended key usage without clientAuth in the chain.
    BadUsage,
    /// A name of the chain outside a CA's name constraints.
    NameConstraints,
    /// Unreadable, an unhandled critical extension, an algorithm or a
    /// constraint this server does not support.
    UnsupportedCertificate,
    /// The client ended the handshake with an alert: it refused ours.
    PeerAlert,
    /// No complete handshake within the acceptor's time.
    Timeout,
    /// The connection closed or failed before the handshake completed.
    Closed,
    /// Every other TLS error: no common version or cipher suite, plain
    /// HTTP sent to the TLS port, a malformed message.
    Handshake,
}

impl Refusal {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::UnknownCa => "unknown_ca",
            Refusal::Expired => "expired",
            Refusal::NotYetValid => "not_yet_valid",
            Refusal::BadSignature => "bad_signature",
            Refusal::BadUsage => "bad_usage",
            Refusal::NameConstraints => "name_constraints",
            Refusal::UnsupportedCertificate => "unsupported_certificate",
            Refusal::PeerAlert => "peer_alert",
            Refusal::Timeout => "timeout",
            Refusal::Closed => "closed",
            Refusal::Handshake => "handshake",
        }
    }

    /// Why the acceptor failed a handshake.
    pub fn of(err: &TlsError<io::Error, Infallible>) -> Refusal {
        match err {
            TlsError::Timeout => Refusal::Timeout,
            // tokio-rustls wraps rustls' errors in the I/O error; any other
            // I/O error is the connection's.
            TlsError::Tls(io) => match io.get_ref().and_then(|e| e.downcast_ref::<Error>()) {
                Some(tls) => Refusal::of_rustls(tls),
                None => Refusal::Closed,
            },
            TlsError::Service(never) => match *never {},
        }
    }

    /// What went wrong, for a log line: the client verifier's own words
    /// when it refused the certificate, else rustls' or the connection's.
    pub fn detail(err: &TlsError<io::Error, Infallible>) -> String {
        match err {
            TlsError::Timeout => "no complete handshake in time".to_owned(),
            TlsError::Tls(io) => match io.get_ref().and_then(|e| e.downcast_ref::<Error>()) {
                Some(Error::InvalidCertificate(CertificateError::Other(other))) => other
                    .0
                    .downcast_ref::<ClientCertRefused>()
                    .map_or_else(|| other.0.to_string(), |refused| refused.to_string()),
                Some(tls) => tls.to_string(),
                None => io.to_string(),
            },
            TlsError::Service(never) => match *never {},
        }
    }

    pub(crate) fn of_rustls(err: &Error) -> Refusal {
        match err {
            Error::InvalidCertificate(CertificateError::Other(other)) => other
                .0
                .downcast_ref::<ClientCertRefused>()
                .map_or(Refusal::UnsupportedCertificate, ClientCertRefused::refusal),
            Error::InvalidCertificate(cert) => match cert {
                CertificateError::UnknownIssuer => Refusal::UnknownCa,
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    Refusal::Expired
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    Refusal::NotYetValid
                }
                CertificateError::BadSignature => Refusal::BadSignature,
                CertificateError::InvalidPurpose
                | CertificateError::InvalidPurposeContext { .. } => Refusal::BadUsage,
                _ => Refusal::UnsupportedCertificate,
            },
            Error::AlertReceived(_) => Refusal::PeerAlert,
            _ => Refusal::Handshake,
        }
    }
}

/// The client verifier refused the client's certificate, or (inside
/// `UnknownCa`) a certificate that might have issued it.
#[derive(Debug, thiserror::Error)]
pub enum ClientCertRefused {
    #[error("no certificate of ca.crt issued {subject}{}", because.as_ref().map_or_else(String::new, |b| format!(" (one of that name failed: {b})")))]
    UnknownCa {
        subject: String,
        /// Why the first issuer of that name failed (Go's "possibly
        /// because of" hint).
        because: Option<Box<ClientCertRefused>>,
    },
    #[error("{0} has expired")]
    Expired(String),
    #[error("{0} is not valid yet")]
    NotYetValid(String),
    #[error("{0}")]
    BadSignature(String),
    #[error("{0} is not for client authentication (extended key usage)")]
    BadUsage(String),
    /// An issuer that may not issue: not a CA, no keyCertSign, its path
    /// length exceeded.
    #[error("{0}")]
    NotAuthorized(String),
    #[error("{0}")]
    NameConstraints(String),
    #[error("{0}")]
    Unsupported(String),
}

impl ClientCertRefused {
    pub fn refusal(&self) -> Refusal {
        match self {
            // NotAuthorized is only ever why an issuer failed.
            ClientCertRefused::UnknownCa { .. } | ClientCertRefused::NotAuthorized(_) => {
                Refusal::UnknownCa
            }
            ClientCertRefused::Expired(_) => Refusal::Expired,
            ClientCertRefused::NotYetValid(_) => Refusal::NotYetValid,
            ClientCertRefused::BadSignature(_) => Refusal::BadSignature,
            ClientCertRefused::BadUsage(_) => Refusal::BadUsage,
            ClientCertRefused::NameConstraints(_) => Refusal::NameConstraints,
            ClientCertRefused::Unsupported(_) => Refusal::UnsupportedCertificate,
        }
    }
}

impl From<ClientCertRefused> for Error {
    /// rustls' error for it, which the client is told as a
    /// certificate_unknown alert and the acceptor reads the reason from.
    fn from(refused: ClientCertRefused) -> Self {
        Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(
            std::sync::Arc::new(refused),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handshake(err: Error) -> TlsError<io::Error, Infallible> {
        TlsError::Tls(io::Error::new(io::ErrorKind::InvalidData, err))
    }

    #[test]
    fn a_failed_handshake_is_told_by_its_reason() {
        let refused = |r: ClientCertRefused| Refusal::of(&handshake(r.into()));
        assert_eq!(
            refused(ClientCertRefused::UnknownCa {
                subject: "CN=x".into(),
                because: None
            }),
            Refusal::UnknownCa
        );
        assert_eq!(
            refused(ClientCertRefused::BadUsage("CN=x".into())),
            Refusal::BadUsage
        );
        assert_eq!(
            Refusal::of(&handshake(Error::AlertReceived(
                rustls::AlertDescription::UnknownCA
            ))),
            Refusal::PeerAlert
        );
        assert_eq!(
            Refusal::of(&handshake(Error::InvalidMessage(
                rustls::InvalidMessage::InvalidContentType
            ))),
            Refusal::Handshake
        );
        assert_eq!(
            Refusal::of(&TlsError::Tls(io::ErrorKind::UnexpectedEof.into())),
            Refusal::Closed
        );
        assert_eq!(Refusal::of(&TlsError::Timeout), Refusal::Timeout);
        assert_eq!(
            Refusal::detail(&handshake(
                ClientCertRefused::Expired("CN=metacontroller".into()).into()
            )),
            "CN=metacontroller has expired",
            "the verifier's words, not rustls' Debug of them"
        );
        // The labels the docs list, one each.
        let labels: std::collections::HashSet<_> = [
            Refusal::UnknownCa,
            Refusal::Expired,
            Refusal::NotYetValid,
            Refusal::BadSignature,
            Refusal::BadUsage,
            Refusal::NameConstraints,
            Refusal::UnsupportedCertificate,
            Refusal::PeerAlert,
            Refusal::Timeout,
            Refusal::Closed,
            Refusal::Handshake,
        ]
        .map(Refusal::label)
        .into();
        assert_eq!(labels.len(), 11);
    }
}
