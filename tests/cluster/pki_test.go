package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: not PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestPKIChainsAndIsReused(t *testing.T) {
	dir := t.TempDir()
	p, err := loadOrCreatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.cluster.cert)
	serving := readCert(t, filepath.Join(dir, "apiserver.crt"))
	for _, name := range []string{"localhost", "kubernetes.default.svc", "127.0.0.1", serviceIP} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	admin := readCert(t, filepath.Join(dir, "admin.crt"))
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin client certificate: %v", err)
	}
	if admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin groups: %v", admin.Subject.Organization)
	}
	proxyRoots := x509.NewCertPool()
	proxyRoots.AddCert(p.frontProxy.cert)
	proxy := readCert(t, filepath.Join(dir, "front-proxy-client.crt"))
	if _, err := proxy.Verify(x509.VerifyOptions{Roots: proxyRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("front-proxy client certificate: %v", err)
	}
	if _, err := proxy.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the front-proxy certificate must not chain to the cluster CA")
	}

	again, err := loadOrCreatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.cluster.cert.Equal(p.cluster.cert) || !readCert(t, filepath.Join(dir, "apiserver.crt")).Equal(serving) {
		t.Error("a second start must reuse the certificates")
	}
}
