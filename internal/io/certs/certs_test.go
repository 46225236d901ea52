package certs

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const year = 365 * 24 * time.Hour

// issue makes a CA and the identity of node id under it, or fails the test.
func issue(t *testing.T, id string, hosts ...string) (*Authority, *Identity) {
	t.Helper()
	ca, err := NewAuthority(year)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(id, hosts, year)
	if err != nil {
		t.Fatal(err)
	}
	identity, err := NewIdentity(certPEM, keyPEM, ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	return ca, identity
}

func TestIssuedCertificateNamesTheNode(t *testing.T) {
	_, identity := issue(t, "n1", "127.0.0.1", "localhost", "n1")
	leaf := identity.Certificate.Leaf
	if identity.NodeID != "n1" || leaf.Subject.CommonName != "n1" {
		t.Errorf("NodeID %q, CN %q; want n1", identity.NodeID, leaf.Subject.CommonName)
	}
	if want := []string{"n1", "localhost"}; !slices.Equal(leaf.DNSNames, want) {
		t.Errorf("DNS names %v, want %v (the id once, then the hosts)", leaf.DNSNames, want)
	}
	for _, host := range []string{"n1", "localhost", "127.0.0.1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("VerifyHostname(%s): %v", host, err)
		}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: identity.CA, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
}

// TestNodeIDsTLSCanMatch: every id ValidateNodeID accepts is matched by TLS's host-name
// check against the certificate that names it, which is what a dialing node relies on.
func TestNodeIDsTLSCanMatch(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"n1", true},
		{"dc1-a", true},
		{"node_1", true},
		{"Tokyo.1", true},
		{"", false},
		{"a b", false},
		{"a/b", false},
		{"10.0.0.1", false},
		{"::1", false},
		{".a", false},
		{"a..b", false},
		{"ü", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := ValidateNodeID(tt.id)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateNodeID(%q) = %v, want ok %t", tt.id, err, tt.ok)
			}
			if !tt.ok {
				return
			}
			_, identity := issue(t, tt.id)
			if err := identity.Certificate.Leaf.VerifyHostname(tt.id); err != nil {
				t.Errorf("VerifyHostname(%q): %v", tt.id, err)
			}
		})
	}
}

func TestNewIdentityRefusesACertificateOfAnotherCA(t *testing.T) {
	ca, _ := issue(t, "n1")
	other, err := NewAuthority(year)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := other.Issue("n1", nil, year)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewIdentity(certPEM, keyPEM, ca.CertPEM()); err == nil || !strings.Contains(err.Error(), "does not chain to the CA") {
		t.Fatalf("NewIdentity with another CA's certificate: err = %v", err)
	}
}

func TestIssueRefusesBadHosts(t *testing.T) {
	ca, err := NewAuthority(year)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Issue("n1", []string{"not a host"}, year); err == nil || !strings.Contains(err.Error(), "neither an IP address nor a DNS name") {
		t.Fatalf("Issue with a bad host: err = %v", err)
	}
}

// TestGenerateRoundTrip writes a cluster's files, loads every node's identity from
// them, refuses to overwrite without Force, and reuses the CA for a node added later.
func TestGenerateRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	req := Request{Dir: dir, Nodes: []string{"n1", "n2"}, Hosts: []string{"127.0.0.1"}, ValidFor: year}
	done, err := Generate(req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ca.key", "ca.crt", "n1.key", "n1.crt", "n2.key", "n2.crt"}
	var got []string
	for _, f := range done.Files {
		got = append(got, filepath.Base(f))
	}
	if done.CAReused || !slices.Equal(got, want) {
		t.Fatalf("Generate wrote %v (CA reused %t), want %v and a new CA", got, done.CAReused, want)
	}
	for _, name := range []string{"ca.key", "n1.key"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, info.Mode().Perm())
		}
	}
	caFile := filepath.Join(dir, CACertFile)
	for _, id := range req.Nodes {
		certFile, keyFile := NodeFiles(dir, id)
		identity, err := Load(certFile, keyFile, caFile)
		if err != nil {
			t.Fatal(err)
		}
		if identity.NodeID != id {
			t.Errorf("%s names node %q", certFile, identity.NodeID)
		}
	}
	if _, err := LoadCA(caFile); err != nil {
		t.Errorf("LoadCA: %v", err)
	}

	before, err := os.ReadFile(filepath.Join(dir, "n1.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(req); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Generate over existing files: err = %v, want a refusal naming --force", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "n1.crt"))
	if string(before) != string(after) {
		t.Fatal("a refused Generate changed n1.crt")
	}

	req.Force = true
	if done, err = Generate(req); err != nil || !done.CAReused {
		t.Fatalf("Generate --force: %v (CA reused %t)", err, done.CAReused)
	}
	done, err = Generate(Request{Dir: dir, Nodes: []string{"n3"}, ValidFor: year})
	if err != nil || !done.CAReused {
		t.Fatalf("Generate for a new node: %v (CA reused %t)", err, done.CAReused)
	}
	certFile, keyFile := NodeFiles(dir, "n3")
	if _, err := Load(certFile, keyFile, caFile); err != nil {
		t.Fatalf("the node added later does not chain to the first CA: %v", err)
	}
}

func TestGenerateRefusesBadRequests(t *testing.T) {
	dir := t.TempDir()
	onlyCert := t.TempDir()
	if err := os.WriteFile(filepath.Join(onlyCert, CACertFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"no dir", Request{Nodes: []string{"n1"}, ValidFor: year}, "no directory"},
		{"no nodes", Request{Dir: dir, ValidFor: year}, "no node"},
		{"no validity", Request{Dir: dir, Nodes: []string{"n1"}}, "not positive"},
		{"bad id", Request{Dir: dir, Nodes: []string{"n/1"}, ValidFor: year}, "cannot be named"},
		{"id of the CA's files", Request{Dir: dir, Nodes: []string{"ca"}, ValidFor: year}, "share its files with the CA"},
		{"twice", Request{Dir: dir, Nodes: []string{"n1", "n1"}, ValidFor: year}, "listed twice"},
		{"empty host", Request{Dir: dir, Nodes: []string{"n1"}, Hosts: []string{""}, ValidFor: year}, `host "" is neither`},
		{"bad host", Request{Dir: dir, Nodes: []string{"n1"}, Hosts: []string{"a host"}, ValidFor: year}, `host "a host" is neither`},
		{"half a CA", Request{Dir: onlyCert, Nodes: []string{"n1"}, ValidFor: year}, "but not the other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Generate(tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused requests wrote %d files", len(entries))
	}
}
