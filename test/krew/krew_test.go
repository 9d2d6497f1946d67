/*
Copyright 2026 The pqcache Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package krew tests hack/krew-release.sh: the krew manifest it writes installs what it says, as
// krew checks it (each platform's archive at its URL has the sha256 given and holds the bin), and the
// bin it installs is the plugin.
package krew

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// manifest is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2) it checks.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Homepage         string `json:"homepage"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

func TestTheKrewManifestInstallsThePlugin(t *testing.T) {
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join("..", "..", "hack", "krew-release.sh"), "v1.2.3", "https://downloads.example.test/pqcache/v1.2.3/", out)
	cmd.Env = append(os.Environ(), "KREW_PLATFORMS=linux/amd64 darwin/arm64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("krew-release.sh: %v\n%s", err, b)
	}
	data, err := os.ReadFile(filepath.Join(out, "pqcache.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("the manifest is not YAML: %v\n%s", err, data)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "pqcache" || m.Spec.Version != "v1.2.3" || m.Spec.ShortDescription == "" {
		t.Fatalf("manifest header: %+v", m)
	}
	if len(m.Spec.Platforms) != 2 {
		t.Fatalf("%d platforms, want 2", len(m.Spec.Platforms))
	}
	for _, p := range m.Spec.Platforms {
		labels := p.Selector.MatchLabels
		if !strings.HasPrefix(p.URI, "https://downloads.example.test/pqcache/v1.2.3/kubectl-pqcache_v1.2.3_"+labels["os"]+"_"+labels["arch"]) {
			t.Errorf("uri %s for %v", p.URI, labels)
		}
		archive := filepath.Join(out, path.Base(p.URI))
		body, err := os.ReadFile(archive)
		if err != nil {
			t.Fatalf("the archive of %v: %v", labels, err)
		}
		if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != p.SHA256 {
			t.Errorf("%s: sha256 %x, the manifest says %s", archive, sum, p.SHA256)
		}
		bin := extract(t, archive, p.Bin)
		if labels["os"] != "linux" {
			continue
		}
		help, err := exec.CommandContext(t.Context(), bin, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(help), "status") || !strings.Contains(string(help), "--context") {
			t.Errorf("the installed bin's --help: %v\n%s", err, help)
		}
	}
}

// extract writes the archive's member name to a temporary file and returns its path.
func extract(t *testing.T, archive, name string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s holds no %s", archive, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != name {
			continue
		}
		dst := filepath.Join(t.TempDir(), name)
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, body, 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
}
