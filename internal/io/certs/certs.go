// Package certs makes and loads the certificates with which kura nodes prove who they are:
// a cluster's certificate authority (CA), and one certificate per node, signed by the CA,
// that names the node's id. Keys are ECDSA P-256.
//
// A node certificate names its node id twice:
//   - as the subject's common name (CN), the one place a peer reads the id from (NodeID);
//   - as a DNS subject alternative name, so that TLS's own host-name check, given the id
//     as the server name, accepts the certificate too.
//
// The hosts given when it is issued (kura certs --hosts) are further DNS or IP names,
// under which clients reach the node's client API and verify it. Every node certificate
// serves as both a server and a client certificate, since a node both dials and accepts.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// clockSkew backdates every certificate, so that a node whose clock is a little behind
// the machine that issued it does not find it not yet valid.
const clockSkew = time.Hour

// Authority is a cluster's CA: the certificate every node and client trusts, and the key
// that signs the node certificates.
type Authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// NewAuthority makes a self-signed CA valid for validFor from now.
func NewAuthority(validFor time.Duration) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kura cluster CA"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validFor),
		IsCA:                  true,
		BasicConstraintsValid: true,
		// It signs node certificates only, never another CA.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	return &Authority{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// LoadAuthority reads a CA that NewAuthority made (kura certs) from its PEM files, so
// that more nodes can be issued certificates the cluster already trusts.
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA certificate: %w", err)
	}
	cert, err := parseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate %s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: %s is not a CA certificate", certFile)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA key: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key %s: %w", keyFile, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("certs: CA key %s does not belong to the certificate %s", keyFile, certFile)
	}
	return &Authority{cert: cert, certPEM: certPEM, key: key}, nil
}

// CertPEM returns the CA's certificate, PEM encoded: what nodes and clients trust.
func (a *Authority) CertPEM() []byte { return a.certPEM }

// KeyPEM returns the CA's private key, PEM encoded (PKCS #8).
func (a *Authority) KeyPEM() ([]byte, error) { return encodeKey(a.key) }

// Issue makes the certificate of node id, valid for validFor from now and at most as
// long as the CA, with hosts (IP addresses or DNS names) as further names. It returns
// the certificate and its private key, PEM encoded.
func (a *Authority) Issue(id string, hosts []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	if err := ValidateNodeID(id); err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: key of %s: %w", id, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	notAfter := now.Add(validFor)
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter // a certificate outliving its CA would fail verification anyway
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: id},
		DNSNames:     []string{id},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if template.IPAddresses, template.DNSNames, err = splitHosts(hosts, template.DNSNames); err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: certificate of %s: %w", id, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// splitHosts sorts hosts into IP addresses and DNS names, the latter appended to
// dnsNames unless already there.
func splitHosts(hosts, dnsNames []string) ([]net.IP, []string, error) {
	var ips []net.IP
	for _, host := range hosts {
		switch ip := net.ParseIP(host); {
		case ip != nil:
			ips = append(ips, ip)
		case slices.Contains(dnsNames, host):
		case validDNSName(host):
			dnsNames = append(dnsNames, host)
		default:
			return nil, nil, fmt.Errorf("certs: host %q is neither an IP address nor a DNS name", host)
		}
	}
	return ips, dnsNames, nil
}

// ValidateNodeID accepts the node ids a certificate can name: letters, digits, '-', '_'
// and '.', not starting or ending with '.', and not an IP address, since TLS would then
// look for the id among the certificate's IP addresses rather than its DNS names.
func ValidateNodeID(id string) error {
	if !validDNSName(id) || net.ParseIP(id) != nil {
		return fmt.Errorf("certs: node id %q cannot be named in a certificate: use letters, digits, '-', '_' and '.' (and not an IP address)", id)
	}
	return nil
}

// validDNSName accepts what ValidateNodeID describes, the names TLS's host-name check
// matches reliably.
func validDNSName(name string) bool {
	if name == "" || len(name) > 253 || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return false
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// NodeID returns the node id a certificate names: its subject's common name. A peer's
// certificate must have been verified against the CA before its id means anything.
func NodeID(cert *x509.Certificate) (string, error) {
	if cert.Subject.CommonName == "" {
		return "", errors.New("certs: the certificate names no node (empty common name)")
	}
	return cert.Subject.CommonName, nil
}

// newSerial returns a random 128-bit serial number, unique without bookkeeping.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return serial, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCertificate reads the first certificate of a PEM file.
func parseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate in it")
	}
	return x509.ParseCertificate(block.Bytes)
}

// parseKey reads an ECDSA private key from a PEM file (PKCS #8, as encodeKey writes).
func parseKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("no PEM private key (PKCS #8) in it")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ecKey, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, want ECDSA", key)
	}
	return ecKey, nil
}

// Identity is what a node presents and whom it trusts: its certificate and key, the node
// id the certificate names, and the cluster's CA, to which every peer's certificate must
// chain.
type Identity struct {
	// NodeID is the node the certificate names.
	NodeID string
	// Certificate is the node's certificate and private key.
	Certificate tls.Certificate
	// CA holds the cluster's CA certificate.
	CA *x509.CertPool
}

// Load reads a node's identity from PEM files (kura server --tls-cert, --tls-key,
// --tls-ca).
func Load(certFile, keyFile, caFile string) (*Identity, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read node certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read node key: %w", err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA certificate: %w", err)
	}
	id, err := NewIdentity(certPEM, keyPEM, caPEM)
	if err != nil {
		return nil, fmt.Errorf("%w (files %s, %s, %s)", err, certFile, keyFile, caFile)
	}
	return id, nil
}

// NewIdentity builds an identity from PEM bytes. It checks that the certificate chains
// to the CA as both a server and a client certificate, so that a node given the wrong
// files fails when it starts, not at its first connection.
func NewIdentity(certPEM, keyPEM, caPEM []byte) (*Identity, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: node certificate and key: %w", err)
	}
	ca, err := parseCertificate(caPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return nil, fmt.Errorf("certs: the node certificate does not chain to the CA: %w", err)
		}
	}
	id, err := NodeID(pair.Leaf)
	if err != nil {
		return nil, err
	}
	return &Identity{NodeID: id, Certificate: pair, CA: pool}, nil
}

// LoadCA reads a CA certificate file into a pool, for clients that verify the nodes
// (kura --tls-ca).
func LoadCA(caFile string) (*x509.CertPool, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA certificate: %w", err)
	}
	ca, err := parseCertificate(data)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, nil
}

// ServerConfig returns the TLS configuration of a server presenting the identity: TLS
// 1.3 only, and client certificates verified against the CA as clientAuth says (required
// between nodes, optional on the client API).
func (id *Identity) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{id.Certificate},
		ClientCAs:    id.CA,
		ClientAuth:   clientAuth,
		MinVersion:   tls.VersionTLS13,
	}
}
