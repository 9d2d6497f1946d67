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

package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestWriteImageIsReproducibleAndRunnable: the same tree gives the same image digest (so an unchanged
// build is recognisably unchanged), and the image carries what containerd needs to run it.
func TestWriteImageIsReproducibleAndRunnable(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/local/bin/tool"), []byte("#!binary"), 0o755))
	must(t, os.Symlink("usr/local/bin/tool", filepath.Join(root, "tool")))
	must(t, os.MkdirAll(filepath.Join(root, "tmp"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777))

	spec := imageSpec{ref: "pqcache.local/test:dev", rootfs: root, entrypoint: []string{"/usr/local/bin/tool"}, user: "65532:65532"}
	first, second := filepath.Join(t.TempDir(), "a.tar"), filepath.Join(t.TempDir(), "b.tar")
	must(t, writeImage(first, spec))
	// Touch the files: times must not leak into the image.
	must(t, os.Chtimes(filepath.Join(root, "usr/local/bin/tool"), time0(), time0()))
	must(t, writeImage(second, spec))

	tag, err := name.NewTag(spec.ref)
	must(t, err)
	imgA, err := tarball.ImageFromPath(first, &tag)
	must(t, err)
	imgB, err := tarball.ImageFromPath(second, &tag)
	must(t, err)
	digestA, err := imgA.Digest()
	must(t, err)
	digestB, err := imgB.Digest()
	must(t, err)
	if digestA != digestB {
		t.Errorf("two builds of the same tree differ: %s vs %s", digestA, digestB)
	}

	cfg, err := imgA.ConfigFile()
	must(t, err)
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || cfg.Config.User != "65532:65532" ||
		len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/usr/local/bin/tool" {
		t.Errorf("config %+v", cfg)
	}
	layers, err := imgA.Layers()
	must(t, err)
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	must(t, err)
	defer rc.Close()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		entries[hdr.Name] = hdr
	}
	var names []string
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"tmp/", "tool", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/tool"}
	if len(names) != len(want) {
		t.Fatalf("layer holds %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("layer holds %v, want %v", names, want)
		}
	}
	if h := entries["tool"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/local/bin/tool" {
		t.Errorf("symlink %+v", h)
	}
	if h := entries["usr/local/bin/tool"]; h.Mode&0o111 == 0 || h.Uid != 0 || !h.ModTime.Equal(time0()) {
		t.Errorf("binary header %+v", h)
	}
	if h := entries["tmp/"]; os.FileMode(h.Mode)&os.ModeSticky == 0 && h.Mode&0o1000 == 0 {
		t.Errorf("/tmp lost its sticky bit: %o", h.Mode)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func time0() time.Time { return time.Unix(0, 0) }

// TestWriteImagesStartsEachRootFromEmpty: on a fresh checkout no root file system exists yet, so a
// fill that copies one file into it must find the directory (CI failed on exactly that); on a warm one
// the last build's files must not leak into the new image.
func TestWriteImagesStartsEachRootFromEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	write := func(content string) []image {
		return []image{{title: "test image", name: "tool", ref: "pqcache.local/tool:dev", entrypoint: []string{"/tool"}, user: "65532:65532",
			fill: func(rootfs string) error {
				return os.WriteFile(filepath.Join(rootfs, "tool"), []byte(content), 0o755)
			}}}
	}
	must(t, writeImages(dir, write("first")))
	stale := filepath.Join(dir, "tool-rootfs", "stale")
	must(t, os.WriteFile(stale, []byte("from the last build"), 0o644))
	must(t, writeImages(dir, write("second")))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a file of the last build survived into the new root file system (stat: %v)", err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "tool-rootfs", "tool"))
	must(t, err)
	if string(got) != "second" {
		t.Errorf("root file system holds %q, want the second fill", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "tool.tar")); err != nil {
		t.Errorf("no image tarball: %v", err)
	}
}

// TestAnImageWithInputsIsRebuiltOnlyWhenTheyChange: the Spark image (a JRE, PySpark's jars) is built
// when its tarball is missing or its programs changed and kept otherwise, while the other images are
// built every time.
func TestAnImageWithInputsIsRebuiltOnlyWhenTheyChange(t *testing.T) {
	machineCache := t.TempDir()
	t.Setenv(envCacheDir, machineCache)
	root := t.TempDir()
	dir := filepath.Join(root, "images")
	program := filepath.Join(root, "run.py")
	must(t, os.WriteFile(program, []byte("print(1)"), 0o644))
	fills := map[string]int{}
	images := func() []image {
		var out []image
		for _, name := range []string{"big", "small"} {
			im := image{title: name + " image", name: name, ref: "pqcache.local/" + name + ":dev", entrypoint: []string{"/tool"},
				user: "65532:65532",
				fill: func(rootfs string) error {
					fills[name]++
					return os.WriteFile(filepath.Join(rootfs, "tool"), []byte(name), 0o755)
				}}
			if name == "big" {
				im.inputs = []string{filepath.Join(root, "*.py")}
			}
			out = append(out, im)
		}
		return out
	}
	must(t, writeImages(dir, images()))
	must(t, writeImages(dir, images()))
	if fills["big"] != 1 || fills["small"] != 2 {
		t.Errorf("fills %v: want the image with inputs built once and the other twice", fills)
	}
	must(t, os.WriteFile(program, []byte("print(2)"), 0o644))
	must(t, writeImages(dir, images()))
	if fills["big"] != 2 {
		t.Errorf("fills %v: a changed input must rebuild the image", fills)
	}
	// Another checkout, or this one with its tarball gone: the machine's cache has the image built from
	// these inputs, and nothing is built.
	other := filepath.Join(root, "other-checkout")
	must(t, writeImages(other, images()))
	must(t, os.Remove(filepath.Join(dir, "big.tar")))
	must(t, writeImages(dir, images()))
	if fills["big"] != 2 {
		t.Errorf("fills %v: an image the machine's cache holds from the same inputs must not be built again", fills)
	}
	for _, d := range []string{dir, other} {
		if !builtFrom(d, "big", mustStamp(t, filepath.Join(root, "*.py"))) {
			t.Errorf("%s has no big.tar of the current inputs after taking it from the machine's cache", d)
		}
	}
	// Gone from both: built again.
	must(t, os.RemoveAll(machineCache))
	must(t, os.Remove(filepath.Join(dir, "big.tar")))
	must(t, writeImages(dir, images()))
	if fills["big"] != 3 {
		t.Errorf("fills %v: a deleted tarball the machine's cache does not hold must be built again", fills)
	}
}

// mustStamp is inputsStamp of glob.
func mustStamp(t *testing.T, glob string) string {
	t.Helper()
	stamp, err := inputsStamp([]string{glob})
	must(t, err)
	return stamp
}
