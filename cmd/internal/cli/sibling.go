package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// KuraBinaryEnv names the environment variable through which `kura bench` tells
// kura-bench which kura binary ran it, so that a bench starting `kura server` processes
// (peers) runs that very binary's nodes, as it did when the benches were part of it.
const KuraBinaryEnv = "KURA_BIN"

// Sibling finds the program name the way kura's two binaries find each other: beside
// the running executable first, so that binaries built or installed together run
// together, else on PATH.
func Sibling(name string) (string, error) {
	self, err := os.Executable()
	if err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if info, err := os.Stat(beside); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return beside, nil
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if self == "" {
			return "", fmt.Errorf("no %s on PATH", name)
		}
		return "", fmt.Errorf("no %s beside %s or on PATH", name, self)
	}
	return path, nil
}
