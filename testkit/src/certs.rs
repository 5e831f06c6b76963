//! Certificates for TLS tests: a CA, server and client pairs it signs,
//! written as a `kubernetes.io/tls` Secret would mount them.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};
use std::path::Path;

/// A certificate authority.
pub struct Ca {
    /// Its certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct Pair {
    pub cert: String,
    pub key: String,
}

impl Ca {
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("CA");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    fn sign(&self, mut params: CertificateParams, name: &str) -> Pair {
        let key = KeyPair::generate().expect("key");
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    /// A serving certificate for DNS names and IP addresses.
    pub fn server(&self, names: &[&str]) -> Pair {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = names
            .iter()
            .map(|n| match n.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*n).try_into().expect("a DNS name")),
            })
            .collect();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params, names.first().copied().unwrap_or("server"))
    }

    /// A client certificate with common name `name`.
    pub fn client(&self, name: &str) -> Pair {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params, name)
    }
}

impl Pair {
    /// Writes `tls.crt` and `tls.key` into `dir`, each replaced at once
    /// (a rename), as the kubelet swaps a Secret's files.
    pub fn write(&self, dir: &Path) {
        for (name, text) in [("tls.crt", &self.cert), ("tls.key", &self.key)] {
            let tmp = dir.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, text).expect("write");
            std::fs::rename(&tmp, dir.join(name)).expect("rename");
        }
    }
}

/// Certificates made exactly as Metacontroller v4.17.2's
/// `examples/webhook-auth/test.sh` makes them, with `openssl`: a CA from
/// `req -x509` (v3), a server certificate signed with an extensions file
/// naming its subjectAltNames (v3), and a client certificate signed by
/// `x509 -req` with no extensions file: **X.509 v1**. Only the server's
/// names differ (the example's are its Service's). Panics when `openssl`
/// cannot be run: these tests are about what openssl makes.
pub struct OpensslRecipe {
    /// `ca.crt`, PEM.
    pub ca_pem: String,
    pub server: Pair,
    /// CN=metacontroller, v1.
    pub client: Pair,
}

impl OpensslRecipe {
    /// Makes them in `dir` (which it creates); `server_names` is the
    /// extensions file's `subjectAltName` value, e.g.
    /// `DNS:localhost,IP:127.0.0.1`.
    pub fn new(dir: &Path, server_names: &str) -> Self {
        std::fs::create_dir_all(dir).expect("a directory");
        // Each command as test.sh runs it (no argument has a space).
        let openssl = |command: &str| {
            let out = std::process::Command::new("openssl")
                .args(command.split_whitespace())
                .current_dir(dir)
                .output()
                .unwrap_or_else(|e| {
                    panic!(
                        "running openssl (needed: these certificates are made as \
                         Metacontroller's example makes them): {e}"
                    )
                });
            assert!(
                out.status.success(),
                "openssl {command}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256";
        let sign = "x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650";
        openssl(&format!(
            "req -x509 {ec} -keyout ca.key -out ca.crt -days 3650 -nodes -subj /CN=webhook-auth-test-ca"
        ));
        openssl(&format!(
            "req {ec} -keyout server.key -out server.csr -nodes -subj /CN=webhook-auth-controller.metacontroller"
        ));
        std::fs::write(
            dir.join("server-ext.cnf"),
            format!("subjectAltName = {server_names}\n"),
        )
        .expect("server-ext.cnf");
        openssl(&format!(
            "{sign} -in server.csr -out server.crt -extfile server-ext.cnf"
        ));
        openssl(&format!(
            "req {ec} -keyout client.key -out client.csr -nodes -subj /CN=metacontroller"
        ));
        // No extensions file: X.509 v1.
        openssl(&format!("{sign} -in client.csr -out client.crt"));
        let text = std::process::Command::new("openssl")
            .args(["x509", "-in", "client.crt", "-noout", "-text"])
            .current_dir(dir)
            .output()
            .expect("openssl x509 -text");
        assert!(
            String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"),
            "the example's client certificate is X.509 v1"
        );
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect(name);
        OpensslRecipe {
            ca_pem: read("ca.crt"),
            server: Pair {
                cert: read("server.crt"),
                key: read("server.key"),
            },
            client: Pair {
                cert: read("client.crt"),
                key: read("client.key"),
            },
        }
    }
}
