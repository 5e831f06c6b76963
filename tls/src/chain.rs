//! A client certificate chain verified as Go's `crypto/tls` server verifies
//! one with `ClientAuth: VerifyClientCertIfGiven` and `ClientCAs` (the
//! server of Metacontroller's own webhook example, and of most webhooks
//! Metacontroller calls): `x509.Certificate.Verify` with the roots of
//! `ca.crt`, the client's other certificates as intermediates and
//! `KeyUsages: [ClientAuth]`, following `crypto/x509/verify.go`.
//!
//! rustls' WebPKI verifier cannot be used: webpki accepts only X.509 v3
//! certificates, and `openssl x509 -req` without an extensions file (as
//! Metacontroller's example makes its client certificate) makes a v1 one.
//!
//! What is checked, as Go does:
//!
//! - every certificate: no critical extension Go does not handle, and
//!   now within notBefore..=notAfter;
//! - a chain from the leaf to a certificate of `ca.crt` (the leaf itself
//!   if `ca.crt` holds it), each issuer found by its subject's encoded name
//!   equal to the issuer name below it, trying `ca.crt` then the client's
//!   intermediates, at most 100 signature checks in all, no certificate
//!   (same subject, key and subjectAltName) twice;
//! - each signature, with the crypto provider's algorithms (as rustls
//!   verifies; like Go, no SHA-1); an issuer that is v3 must have
//!   basicConstraints, and with basicConstraints it must say cA; with a
//!   keyUsage, it must allow keyCertSign;
//! - an intermediate must have basicConstraints with cA (so a v1
//!   certificate is a CA only as a root of `ca.crt`), and a
//!   pathLenConstraint bounds the intermediates below it;
//! - the chain's extended key usages, nested: every certificate that names
//!   any must name clientAuth or anyExtendedKeyUsage (none named: any);
//! - name constraints (see `name_constraints`).
//!
//! The verdict is Go's: with no chain, `UnknownCa` (Go's
//! `UnknownAuthorityError`), saying why the first issuer of the right name
//! failed (its "possibly because of" hint: expired, not a CA, a signature
//! its key did not make); the leaf's own dates and critical extensions,
//! the chains' key usages and name constraints are their own reasons.
//!
//! Stricter than Go, and said so: a chain whose certificates (other than
//! its root) carry policyConstraints or policyMappings is refused rather
//! than run through RFC 5280's policy graph (the only inputs with which
//! Go's policy check can refuse, given a TLS server's options); email and
//! URI names under name constraints are refused; RSA keys under 2048 bits
//! have no algorithm in the provider. No revocation checks, as Go.

use crate::certificate::Cert;
use crate::name_constraints;
use crate::refusal::ClientCertRefused;
use rustls::pki_types::SignatureVerificationAlgorithm;

/// Go's `maxChainSignatureChecks`.
const MAX_SIGNATURE_CHECKS: usize = 100;

/// A certificate's subject, for messages.
pub(crate) fn subject(cert: &Cert<'_>) -> String {
    x509_parser::parse_x509_certificate(cert.der)
        .map(|(_, c)| c.subject().to_string())
        .unwrap_or_else(|_| "a certificate".to_owned())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Leaf,
    Intermediate,
    Root,
}

/// Verifies `signature` over `message` by the key `key` of algorithm
/// `key_algorithm`, with the first of `algorithms` for that key; `None`
/// when none is.
pub(crate) fn verify_signature(
    algorithms: &[&dyn SignatureVerificationAlgorithm],
    key_algorithm: &[u8],
    key: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Option<bool> {
    let algorithm = algorithms
        .iter()
        .find(|a| a.public_key_alg_id().as_ref() == key_algorithm)?;
    Some(algorithm.verify_signature(key, message, signature).is_ok())
}

/// Go's `Certificate.isValid`: what a certificate must be to take its
/// place in a chain (`below` is the chain under it, leaf first).
fn is_valid(
    cert: &Cert<'_>,
    kind: Kind,
    below: &[&Cert<'_>],
    now: i64,
) -> Result<(), ClientCertRefused> {
    if let Some(oid) = &cert.unhandled_critical {
        return Err(ClientCertRefused::Unsupported(format!(
            "{} has critical extension {oid}, which is not handled",
            subject(cert)
        )));
    }
    if now < cert.not_before {
        return Err(ClientCertRefused::NotYetValid(subject(cert)));
    }
    if now > cert.not_after {
        return Err(ClientCertRefused::Expired(subject(cert)));
    }
    if kind == Kind::Intermediate && !matches!(cert.basic_constraints, Some((true, _))) {
        return Err(ClientCertRefused::NotAuthorized(format!(
            "{} is not a CA (basicConstraints cA), so it cannot be an intermediate",
            subject(cert)
        )));
    }
    if let Some((_, Some(max))) = cert.basic_constraints {
        let intermediates = below.len().saturating_sub(1);
        if kind != Kind::Leaf && intermediates > max as usize {
            return Err(ClientCertRefused::NotAuthorized(format!(
                "{} allows {max} intermediates below it, the chain has {intermediates}",
                subject(cert)
            )));
        }
    }
    Ok(())
}

/// Go's `Certificate.CheckSignatureFrom`: `parent` may sign and signed
/// `child`.
fn signed_by(
    child: &Cert<'_>,
    parent: &Cert<'_>,
    algorithms: &[&dyn SignatureVerificationAlgorithm],
) -> Result<(), ClientCertRefused> {
    let may_sign = match parent.basic_constraints {
        Some((ca, _)) => ca,
        None => parent.version != 3,
    };
    if !may_sign {
        return Err(ClientCertRefused::NotAuthorized(format!(
            "{} is not a CA (basicConstraints)",
            subject(parent)
        )));
    }
    if parent.key_cert_sign == Some(false) {
        return Err(ClientCertRefused::NotAuthorized(format!(
            "{} may not sign certificates (keyUsage without keyCertSign)",
            subject(parent)
        )));
    }
    let candidates: Vec<_> = algorithms
        .iter()
        .copied()
        .filter(|a| a.signature_alg_id().as_ref() == child.signature_algorithm)
        .collect();
    match verify_signature(
        &candidates,
        parent.key_algorithm,
        parent.key,
        child.tbs,
        child.signature,
    ) {
        Some(true) => Ok(()),
        Some(false) => Err(ClientCertRefused::BadSignature(format!(
            "the signature of {} does not verify with the key of {}",
            subject(child),
            subject(parent)
        ))),
        None => Err(ClientCertRefused::Unsupported(format!(
            "the signature algorithm of {} with the key of {} is not supported",
            subject(child),
            subject(parent)
        ))),
    }
}

/// Go's `alreadyInChain`: the same subject, key and subjectAltName.
fn already_in(candidate: &Cert<'_>, chain: &[&Cert<'_>]) -> bool {
    chain.iter().any(|c| {
        c.subject == candidate.subject
            && c.spki == candidate.spki
            && c.san.as_ref().map(|s| s.0) == candidate.san.as_ref().map(|s| s.0)
    })
}

/// What a verification looks at.
struct Search<'c, 'a> {
    roots: &'c [Cert<'a>],
    intermediates: &'c [Cert<'a>],
    algorithms: &'c [&'c dyn SignatureVerificationAlgorithm],
    now: i64,
    signature_checks: usize,
}

impl<'c, 'a> Search<'c, 'a> {
    /// Go's `buildChains`: every chain from `chain`'s last certificate up
    /// to a root; or why there is none.
    fn chains(
        &mut self,
        chain: &[&'c Cert<'a>],
    ) -> Result<Vec<Vec<&'c Cert<'a>>>, ClientCertRefused> {
        let Some(child) = chain.last() else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        // Why the first candidate failed, and (as Go returns) the failure
        // of the last intermediate tried, if it came to nothing.
        let (mut hint, mut last) = (None, None);
        let candidates = self
            .roots
            .iter()
            .map(|c| (Kind::Root, c))
            .chain(self.intermediates.iter().map(|c| (Kind::Intermediate, c)))
            .filter(|(_, c)| c.subject == child.issuer);
        for (kind, candidate) in candidates {
            self.signature_checks += 1;
            if self.signature_checks > MAX_SIGNATURE_CHECKS {
                return Err(ClientCertRefused::Unsupported(format!(
                    "more than {MAX_SIGNATURE_CHECKS} signature checks to build the chain"
                )));
            }
            if already_in(candidate, chain) {
                continue;
            }
            let valid = signed_by(child, candidate, self.algorithms)
                .and_then(|()| is_valid(candidate, kind, chain, self.now));
            if let Err(why) = valid {
                hint.get_or_insert(why);
                continue;
            }
            let mut longer = chain.to_vec();
            longer.push(candidate);
            match kind {
                Kind::Root => found.push(longer),
                _ => match self.chains(&longer) {
                    Ok(chains) => {
                        last = None;
                        found.extend(chains);
                    }
                    Err(why) => last = Some(why),
                },
            }
        }
        if !found.is_empty() {
            return Ok(found);
        }
        Err(last.unwrap_or_else(|| ClientCertRefused::UnknownCa {
            subject: subject(child),
            because: hint.map(Box::new),
        }))
    }
}

/// Go's `checkChainForKeyUsage` for clientAuth alone.
fn client_auth_allowed(chain: &[&Cert<'_>]) -> Result<(), ClientCertRefused> {
    match chain
        .iter()
        .find(|c| c.ext_key_usage.is_some_and(|(any, client)| !any && !client))
    {
        Some(cert) => Err(ClientCertRefused::BadUsage(subject(cert))),
        None => Ok(()),
    }
}

/// Refuses what Go's policy check would have to look into.
fn policies_supported(chain: &[&Cert<'_>]) -> Result<(), ClientCertRefused> {
    let below_root = &chain[..chain.len().saturating_sub(1)];
    match below_root.iter().find(|c| c.policy_rules) {
        Some(cert) => Err(ClientCertRefused::Unsupported(format!(
            "{} has policyConstraints or policyMappings, which this server does not evaluate",
            subject(cert)
        ))),
        None => Ok(()),
    }
}

/// Verifies the client's `leaf` and `intermediates` (DER) against `roots`
/// (`ca.crt`, DER) at `now` (Unix seconds) with `algorithms` (the crypto
/// provider's): `Ok` when Go's server would accept them.
pub(crate) fn verify(
    roots: &[Vec<u8>],
    leaf: &[u8],
    intermediates: &[&[u8]],
    now: i64,
    algorithms: &[&dyn SignatureVerificationAlgorithm],
) -> Result<(), ClientCertRefused> {
    let leaf = Cert::parse(leaf)?;
    let intermediates = intermediates
        .iter()
        .map(|der| Cert::parse(der))
        .collect::<Result<Vec<_>, _>>()?;
    // ca.crt was read when loaded; one that fails now counts as absent,
    // as Go's pool skips what it cannot parse.
    let roots: Vec<_> = roots
        .iter()
        .filter_map(|der| Cert::parse(der).ok())
        .collect();
    is_valid(&leaf, Kind::Leaf, &[], now)?;
    let chains = if roots.iter().any(|r| r.der == leaf.der) {
        vec![vec![&leaf]]
    } else {
        Search {
            roots: &roots,
            intermediates: &intermediates,
            algorithms,
            now,
            signature_checks: 0,
        }
        .chains(&[&leaf])?
    };
    // Go keeps the chains that pass and, with none, prefers a name
    // constraint's error to the others.
    let mut refused = None;
    for chain in &chains {
        let checked = if chain.len() > 1 {
            policies_supported(chain)
        } else {
            Ok(())
        }
        .and_then(|()| client_auth_allowed(chain))
        .and_then(|()| name_constraints::check_chain(chain));
        match checked {
            Ok(()) => return Ok(()),
            Err(why @ ClientCertRefused::NameConstraints(_)) => refused = Some(why),
            Err(why) => {
                refused.get_or_insert(why);
            }
        }
    }
    Err(refused.unwrap_or_else(|| ClientCertRefused::UnknownCa {
        subject: subject(&leaf),
        because: None,
    }))
}

#[cfg(test)]
mod tests;
