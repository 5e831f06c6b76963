package main

// The certificates and keys of the test control plane: a cluster CA (the
// API server's serving certificate and every client certificate), a
// front-proxy CA (the aggregation layer's client certificate, trusted by
// aggregated API servers through the request-header CA), and the service
// account signing key. ECDSA P-256 throughout: quick to generate, accepted
// everywhere Kubernetes checks.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// A certificate's validity: long enough for any test run, short enough to
// be obviously a test certificate.
const validity = 30 * 24 * time.Hour

// authority signs certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPath is the CA certificate's PEM file.
	certPath string
}

// pki is where the control plane's files are.
type pki struct {
	dir        string
	cluster    *authority
	frontProxy *authority
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// loadOrCreatePKI reuses what dir holds (a restarted control plane keeps
// its identity, so kubeconfigs written before stay valid) and creates what
// is missing.
func loadOrCreatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	var err error
	if p.cluster, err = loadOrCreateCA(dir, "ca", "metahook-cluster-ca"); err != nil {
		return nil, err
	}
	if p.frontProxy, err = loadOrCreateCA(dir, "front-proxy-ca", "metahook-front-proxy-ca"); err != nil {
		return nil, err
	}
	serving := leaf{
		commonName: "kube-apiserver",
		server:     true,
		dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		// The host's end of the node's link: pods reach the API server there.
		ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP), net.ParseIP(hostLinkIP)},
	}
	if err := p.ensureLeaf(p.cluster, "apiserver", serving); err != nil {
		return nil, err
	}
	// The aggregator presents this to aggregated API servers; they accept
	// it if it chains to the front-proxy CA and its name is allowed.
	if err := p.ensureLeaf(p.frontProxy, "front-proxy-client", leaf{commonName: frontProxyClientName}); err != nil {
		return nil, err
	}
	for _, id := range append(append([]identity{}, builtinIdentities...), nodeIdentities...) {
		if err := p.ensureLeaf(p.cluster, id.file, leaf{commonName: id.user, organizations: id.groups}); err != nil {
			return nil, err
		}
	}
	// The kubelet's own server (logs, exec, port-forward), reached by the
	// API server at the node's address.
	kubeletServing := leaf{commonName: nodeName, server: true, dnsNames: []string{nodeName},
		ips: []net.IP{net.ParseIP(nodeLinkIP)}}
	if err := p.ensureLeaf(p.cluster, "kubelet-serving", kubeletServing); err != nil {
		return nil, err
	}
	if _, err := os.Stat(p.path("sa.key")); errors.Is(err, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		if err := writeKey(p.path("sa.key"), key); err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			return nil, err
		}
		if err := writePEM(p.path("sa.pub"), "PUBLIC KEY", der); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// identity is a client certificate made at start.
type identity struct {
	file   string
	user   string
	groups []string
}

const frontProxyClientName = "front-proxy-client"

var (
	adminIdentity = identity{file: "admin", user: "metahook-admin", groups: []string{"system:masters"}}
	// The controller-manager's own user, bound by Kubernetes' bootstrap
	// RBAC policy; each controller then uses its own service account.
	controllerManagerIdentity = identity{file: "kube-controller-manager", user: "system:kube-controller-manager"}
	// A user of its own so that its writes can be told apart in the audit
	// log; no container runs, so it needs no node identity.
	kubeletIdentity   = identity{file: "kubelet-standin", user: "metahook:kubelet-standin", groups: []string{"system:masters"}}
	builtinIdentities = []identity{adminIdentity, controllerManagerIdentity, kubeletIdentity}

	// The real node's components, each as the user Kubernetes' bootstrap
	// RBAC policy binds (system:kube-scheduler, system:node-proxier's
	// system:kube-proxy, the Node authorizer's system:node:<name>).
	schedulerIdentity   = identity{file: "kube-scheduler", user: "system:kube-scheduler"}
	nodeKubeletIdentity = identity{file: "kubelet", user: "system:node:" + nodeName, groups: []string{"system:nodes"}}
	proxyIdentity       = identity{file: "kube-proxy", user: "system:kube-proxy"}
	// The API server's client certificate towards the kubelet (logs, exec).
	apiserverKubeletIdentity = identity{file: "apiserver-kubelet-client", user: "kube-apiserver-kubelet-client",
		groups: []string{"system:masters"}}
	nodeIdentities = []identity{schedulerIdentity, nodeKubeletIdentity, proxyIdentity, apiserverKubeletIdentity}
)

type leaf struct {
	commonName    string
	organizations []string
	server        bool
	dnsNames      []string
	ips           []net.IP
}

// ensureLeaf writes name.crt and name.key signed by ca, unless they exist.
func (p *pki) ensureLeaf(ca *authority, name string, l leaf) error {
	if _, err := os.Stat(p.path(name + ".crt")); err == nil {
		return nil
	}
	certPEM, keyPEM, err := ca.issue(l)
	if err != nil {
		return fmt.Errorf("issuing %s: %w", name, err)
	}
	if err := os.WriteFile(p.path(name+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.path(name+".crt"), certPEM, 0o644)
}

// issue makes a key and a certificate for l, both PEM.
func (ca *authority) issue(l leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if l.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: l.commonName, Organization: l.organizations},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     l.dnsNames,
		IPAddresses:  l.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func loadOrCreateCA(dir, name, commonName string) (*authority, error) {
	certPath := filepath.Join(dir, name+".crt")
	keyPath := filepath.Join(dir, name+".key")
	if _, err := os.Stat(certPath); err == nil {
		return loadCA(certPath, keyPath)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return loadCA(certPath, keyPath)
}

func loadCA(certPath, keyPath string) (*authority, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s holds no signing key", keyPath)
	}
	return &authority{cert: cert, key: signer, certPath: certPath}, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, blockType string, der []byte) error {
	mode := os.FileMode(0o644)
	if blockType == "PRIVATE KEY" {
		mode = 0o600
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), mode)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still
		// make a valid (if not unique) certificate.
		return big.NewInt(1)
	}
	return n.Add(n, big.NewInt(1))
}
