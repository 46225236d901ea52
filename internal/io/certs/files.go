package certs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The CA's files in a certificates directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// NodeFiles returns the paths of node id's certificate and key in dir: ID.crt and ID.key.
func NodeFiles(dir, id string) (certFile, keyFile string) {
	return filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key")
}

// Request says which certificates Generate writes.
type Request struct {
	// Dir receives the files; it is created if missing.
	Dir string
	// Nodes are the ids to issue certificates for.
	Nodes []string
	// Hosts are the IP addresses and DNS names every node certificate also names: those
	// under which clients dial the nodes.
	Hosts []string
	// ValidFor is how long the certificates (and a new CA) are valid.
	ValidFor time.Duration
	// Force overwrites node certificates and keys that exist.
	Force bool
}

// Generated is what Generate did.
type Generated struct {
	// CAReused is true when Dir held a CA already, which signed the new certificates.
	CAReused bool
	// Files are the files written, in order.
	Files []string
}

// Generate writes a CA (unless Dir has one, which it then reuses, so that nodes added
// later join the cluster's trust) and a certificate and key for every node. It refuses
// to overwrite a node's files unless Force, and checks every file before writing any,
// so that a refusal leaves Dir as it was.
func Generate(req Request) (Generated, error) {
	if err := req.validate(); err != nil {
		return Generated{}, err
	}
	if err := os.MkdirAll(req.Dir, 0o755); err != nil {
		return Generated{}, fmt.Errorf("certs: %w", err)
	}
	caCert, caKey := filepath.Join(req.Dir, CACertFile), filepath.Join(req.Dir, CAKeyFile)
	certExists, keyExists := exists(caCert), exists(caKey)
	if certExists != keyExists {
		return Generated{}, fmt.Errorf("certs: %s has one of %s and %s but not the other: restore it, or remove both to make a new CA",
			req.Dir, CACertFile, CAKeyFile)
	}
	if !req.Force {
		var taken []string
		for _, id := range req.Nodes {
			certFile, keyFile := NodeFiles(req.Dir, id)
			for _, f := range []string{certFile, keyFile} {
				if exists(f) {
					taken = append(taken, f)
				}
			}
		}
		if len(taken) > 0 {
			return Generated{}, fmt.Errorf("certs: %s already exist; pass --force to overwrite them", strings.Join(taken, ", "))
		}
	}

	var done Generated
	var ca *Authority
	var err error
	if certExists {
		if ca, err = LoadAuthority(caCert, caKey); err != nil {
			return done, err
		}
		done.CAReused = true
	} else {
		if ca, err = NewAuthority(req.ValidFor); err != nil {
			return done, err
		}
		keyPEM, err := ca.KeyPEM()
		if err != nil {
			return done, err
		}
		if err := done.write(caKey, keyPEM, 0o600, false); err != nil {
			return done, err
		}
		if err := done.write(caCert, ca.CertPEM(), 0o644, false); err != nil {
			return done, err
		}
	}
	for _, id := range req.Nodes {
		certPEM, keyPEM, err := ca.Issue(id, req.Hosts, req.ValidFor)
		if err != nil {
			return done, err
		}
		certFile, keyFile := NodeFiles(req.Dir, id)
		if err := done.write(keyFile, keyPEM, 0o600, req.Force); err != nil {
			return done, err
		}
		if err := done.write(certFile, certPEM, 0o644, req.Force); err != nil {
			return done, err
		}
	}
	return done, nil
}

// validate refuses a request Generate cannot fulfil, before it touches the disk.
func (req Request) validate() error {
	if req.Dir == "" {
		return errors.New("certs: no directory to write to")
	}
	if len(req.Nodes) == 0 {
		return errors.New("certs: no node to issue a certificate for")
	}
	if req.ValidFor <= 0 {
		return fmt.Errorf("certs: validity %v is not positive", req.ValidFor)
	}
	seen := map[string]bool{}
	for _, id := range req.Nodes {
		if err := ValidateNodeID(id); err != nil {
			return err
		}
		if certFile, _ := NodeFiles("", id); strings.EqualFold(certFile, CACertFile) {
			return fmt.Errorf("certs: node id %s would share its files with the CA; choose another", id)
		}
		if seen[id] {
			return fmt.Errorf("certs: node %s is listed twice", id)
		}
		seen[id] = true
	}
	_, _, err := splitHosts(req.Hosts, nil)
	return err
}

// write writes one file, creating it, or overwriting it only when overwrite is set
// (O_EXCL, so that a file that appeared since the check is not clobbered either).
func (g *Generated) write(path string, data []byte, perm os.FileMode, overwrite bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, perm)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if overwrite {
		// O_CREATE's permissions apply to new files only; an overwritten key must not
		// keep looser ones.
		if err := os.Chmod(path, perm); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	g.Files = append(g.Files, path)
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
