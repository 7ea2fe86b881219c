// Checks the cached cluster binaries (scripts/build-cluster): each reports the version pinned in the
// tools/*/go.mod files, and was really compiled from that module version (Go build info).
package cluster_test

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// pinnedVersion reads the version of module mod from a go.mod file of this directory.
func pinnedVersion(t *testing.T, gomod, mod string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == mod && strings.HasPrefix(f[1], "v") {
			return f[1]
		}
	}
	t.Fatalf("%s does not require %s", gomod, mod)
	return ""
}

// binDir is where scripts/build-cluster puts the binaries.
func binDir(t *testing.T) string {
	cache := os.Getenv("PHALANX_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "phalanx")
	}
	return filepath.Join(cache, "k8s-"+pinnedVersion(t, "tools/k8s/go.mod", "k8s.io/kubernetes"), "bin")
}

// moduleVersion returns the version of module mod compiled into binary: the module of its main
// package or a dependency (after replace directives).
func moduleVersion(t *testing.T, binary, mod string) string {
	t.Helper()
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if d.Path == mod {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	t.Fatalf("%s was not built from %s", binary, mod)
	return ""
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestBinaryVersions(t *testing.T) {
	bin := binDir(t)
	k8s := pinnedVersion(t, "tools/k8s/go.mod", "k8s.io/kubernetes")
	staging := "v0." + strings.TrimPrefix(k8s, "v1.") // k8s.io/client-go etc. of the same release

	for _, c := range []struct{ binary, flag, want string }{
		{"kube-apiserver", "--version", "Kubernetes " + k8s},
		{"kube-scheduler", "--version", "Kubernetes " + k8s},
		{"kubectl", "version", "Client Version: " + k8s},
	} {
		path := filepath.Join(bin, c.binary)
		args := []string{c.flag}
		if c.binary == "kubectl" {
			args = append(args, "--client")
		}
		out := run(t, path, args...)
		t.Logf("%s %s: %s", c.binary, c.flag, out)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s %s printed %q, want %q", c.binary, c.flag, out, c.want)
		}
		if got := moduleVersion(t, path, "k8s.io/kubernetes"); got != k8s {
			t.Errorf("%s built from k8s.io/kubernetes %s, want %s", c.binary, got, k8s)
		}
		if got := moduleVersion(t, path, "k8s.io/client-go"); got != staging {
			t.Errorf("%s built with k8s.io/client-go %s, want %s", c.binary, got, staging)
		}
	}

	etcd := pinnedVersion(t, "tools/etcd/go.mod", "go.etcd.io/etcd/server/v3")
	out := run(t, filepath.Join(bin, "etcd"), "--version")
	t.Logf("etcd --version: %s", out)
	if !strings.Contains(out, "etcd Version: "+strings.TrimPrefix(etcd, "v")) {
		t.Errorf("etcd --version printed %q, want %s", out, etcd)
	}

	kwok := pinnedVersion(t, "tools/kwok/go.mod", "sigs.k8s.io/kwok")
	out = run(t, filepath.Join(bin, "kwok"), "--version")
	t.Logf("kwok --version: %s", out)
	if got := moduleVersion(t, filepath.Join(bin, "kwok"), "sigs.k8s.io/kwok"); got != kwok {
		t.Errorf("kwok built from sigs.k8s.io/kwok %s, want %s", got, kwok)
	}
}
