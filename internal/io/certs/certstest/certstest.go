// Package certstest issues throwaway certificates for tests, so that tests of every
// package that speaks TLS set up a cluster's trust the same way.
package certstest

import (
	"testing"
	"time"

	"github.com/kuradb/kura/internal/io/certs"
)

// validity outlasts any test.
const validity = 24 * time.Hour

// NewCA makes a certificate authority, or fails the test.
func NewCA(t testing.TB) *certs.Authority {
	t.Helper()
	ca, err := certs.NewAuthority(validity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Identity issues node id's identity under ca, with hosts as further names, or fails
// the test.
func Identity(t testing.TB, ca *certs.Authority, id string, hosts ...string) *certs.Identity {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(id, hosts, validity)
	if err != nil {
		t.Fatal(err)
	}
	identity, err := certs.NewIdentity(certPEM, keyPEM, ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	return identity
}
