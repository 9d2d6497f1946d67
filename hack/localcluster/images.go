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
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images the local cluster runs. No registry is reachable, so each is assembled from files built
// here and imported into containerd; the pqcache.local host exists nowhere, so a missing image can
// never be pulled from somewhere else by accident.
const (
	pauseImage     = "pqcache.local/pause:3.10"
	versitygwImage = "pqcache.local/versitygw:" + versitygwVersion
	pqcacheImage   = "pqcache.local/pqcache:dev"
	polarsImage    = "pqcache.local/pqcache-polars:dev"
	testkitImage   = "pqcache.local/pqcache-testkit:dev"
	sparkImage     = "pqcache.local/pqcache-spark:dev"
	shapeImage     = "pqcache.local/shapeproxy:dev"
	coreDNSImage   = "pqcache.local/coredns:" + coreDNSVersion
	// versitygwVersion matches VERSITYGW_VERSION in the Makefile.
	versitygwVersion = "v1.8.0"
	// coreDNSVersion matches COREDNS_VERSION in the Makefile, which builds bin/coredns-<version>.
	coreDNSVersion = "v1.15.0"
)

func (c *cluster) imagesDir() string { return filepath.Join(c.root, "bin", "images") }

// imageSpec is one image: a root file system directory and how to run it.
type imageSpec struct {
	ref        string
	rootfs     string
	entrypoint []string
	user       string
}

// image is one image the cluster runs: how its file system is filled, and what runs in it.
type image struct {
	title      string // for the step line
	name       string // rootfs directory NAME-rootfs and tarball NAME.tar in imagesDir
	ref        string
	entrypoint []string
	user       string
	fill       func(rootfs string) error
	// inputs, when set, are the files (globs) the image is made of: it is
	// rebuilt only when their contents change or its tarball is missing. The Spark image is large (a
	// JRE, PySpark's jars) and changes only with its programs and pins.
	inputs []string
}

// buildImages builds the images from the working tree and the module proxy into imagesDir as
// docker-archive tarballs (what `ctr images import` reads).
func (c *cluster) buildImages(ctx context.Context) error {
	return writeImages(c.imagesDir(), c.images(ctx))
}

// writeImages fills each image's root file system under dir, from empty, and writes its tarball.
func writeImages(dir string, images []image) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, im := range images {
		stamp, err := inputsStamp(im.inputs)
		if err != nil {
			return fmt.Errorf("the %s: %w", im.title, err)
		}
		if stamp != "" && builtFrom(dir, im.name, stamp) {
			logf("the %s is built already from the same files", im.title)
			continue
		}
		if stamp != "" && fromMachineCache(dir, im.name, stamp) {
			logf("the %s is taken from this machine's cache, built there from the same files", im.title)
			continue
		}
		done := step("building the %s", im.title)
		rootfs := filepath.Join(dir, im.name+"-rootfs")
		if err := emptyDir(rootfs); err != nil {
			return fmt.Errorf("the %s: %w", im.title, err)
		}
		if err := im.fill(rootfs); err != nil {
			return fmt.Errorf("the %s: %w", im.title, err)
		}
		spec := imageSpec{ref: im.ref, rootfs: rootfs, entrypoint: im.entrypoint, user: im.user}
		if err := writeImage(filepath.Join(dir, im.name+".tar"), spec); err != nil {
			return err
		}
		if stamp != "" {
			if err := os.WriteFile(filepath.Join(dir, im.name+".inputs"), []byte(stamp+"\n"), 0o644); err != nil {
				return fmt.Errorf("the %s: %w", im.title, err)
			}
			toMachineCache(dir, im.name, stamp)
		}
		done()
	}
	return nil
}

// images lists the images: the pause container and the shaping proxy built here, CoreDNS and
// versitygw copied from their static bin/ builds (hack/local-cluster runs make coredns versitygw; go
// install's default would link glibc's resolver, which the images do not have), and pqcache and the
// Polars engine assembled from the working tree by the scripts the Dockerfiles mirror (test/image
// checks them).
func (c *cluster) images(ctx context.Context) []image {
	all := c.allImages(ctx)
	if os.Getenv(EnvSparkImage) == "1" {
		return all
	}
	return slices.DeleteFunc(all, func(im image) bool { return im.name == "spark" })
}

// EnvSparkImage, set to 1, makes `up` build and load the Spark engine image too (make
// test-e2e-local sets it, for the Spark spec). It is off by default: 1.2 GB, and about 5 GB of disk
// once three nodes hold it, which only BenchRuns of engine spark need.
const EnvSparkImage = "PQCACHE_LOCAL_CLUSTER_SPARK"

// allImages lists every image the cluster can load.
func (c *cluster) allImages(ctx context.Context) []image {
	const nonRoot = "65532:65532"
	return []image{
		{title: "pause image", name: "pause", ref: pauseImage, entrypoint: []string{"/pause"}, user: "65535:65535",
			fill: func(rootfs string) error {
				return c.goBuildStatic(ctx, filepath.Join(rootfs, "pause"), "./hack/localcluster/pause")
			}},
		// The shaping proxy makes the in-cluster S3 server behave like a bucket in a region.
		{title: "shapeproxy image", name: "shapeproxy", ref: shapeImage, entrypoint: []string{"/shapeproxy"}, user: nonRoot,
			fill: func(rootfs string) error {
				return c.goBuildStatic(ctx, filepath.Join(rootfs, "shapeproxy"), "./hack/shapeproxy")
			}},
		{title: "CoreDNS " + coreDNSVersion + " image", name: "coredns", ref: coreDNSImage, entrypoint: []string{"/coredns"}, user: nonRoot,
			fill: func(rootfs string) error {
				return builtBy("make coredns", copyExecutable(filepath.Join(c.root, "bin", "coredns-"+coreDNSVersion), filepath.Join(rootfs, "coredns")))
			}},
		{title: "versitygw " + versitygwVersion + " image", name: "versitygw", ref: versitygwImage, entrypoint: []string{"/versitygw"}, user: nonRoot,
			fill: func(rootfs string) error {
				tmp := filepath.Join(rootfs, "tmp")
				if err := os.MkdirAll(tmp, 0o755); err != nil {
					return err
				}
				if err := os.Chmod(tmp, os.ModeSticky|0o777); err != nil {
					return err
				}
				return builtBy("make versitygw", copyExecutable(filepath.Join(c.root, "bin", "versitygw-"+versitygwVersion), filepath.Join(rootfs, "versitygw")))
			}},
		{title: "pqcache image from the working tree", name: "pqcache", ref: pqcacheImage, entrypoint: []string{"/usr/local/bin/pqcache"}, user: nonRoot,
			fill: func(rootfs string) error { return c.runScript(ctx, "image-rootfs.sh", rootfs) }},
		// The tests' servers and probes (test/cmd/pqcache-testkit), which the pqcache image does not hold.
		{title: "test kit image from the working tree", name: "testkit", ref: testkitImage, entrypoint: []string{"/usr/local/bin/pqcache-testkit"}, user: nonRoot,
			fill: func(rootfs string) error { return c.runScript(ctx, "image-rootfs-testkit.sh", rootfs) }},
		// Python Polars: a venv beside bench/polars's run.py; BenchRun Jobs inject the runner into it.
		{title: "Polars engine image from the working tree", name: "polars", ref: polarsImage, user: nonRoot,
			entrypoint: []string{"/usr/local/lib/pqcache/polars/venv/bin/python", "/usr/local/lib/pqcache/polars/run.py"},
			fill:       func(rootfs string) error { return c.runScript(ctx, "image-rootfs-polars.sh", rootfs) }},
		// PySpark with a JRE: BenchRuns' spark driver (the runner injected) and its executors, which
		// start by executor.py as the pod template says, so the entrypoint is the driver's program.
		{title: "Spark engine image", name: "spark", ref: sparkImage, user: nonRoot, inputs: c.fromRoot(sparkImageInputs),
			entrypoint: []string{"/usr/local/lib/pqcache/spark/venv/bin/python", "/usr/local/lib/pqcache/spark/run.py"},
			fill:       func(rootfs string) error { return c.runScript(ctx, "image-rootfs-spark.sh", rootfs) }},
	}
}

// sparkImageInputs are what the Spark image is made of: its programs, its pins and the scripts that
// assemble it (the JRE is Debian's, which the pins do not name).
var sparkImageInputs = []string{"bench/spark/*.py", "bench/canon/canon.py", "bench/spark/*.txt", "hack/image-rootfs-spark.sh", "hack/spark-env.sh", "hack/spark-jars.sh"}

// fromRoot is the globs from the checkout's root.
func (c *cluster) fromRoot(globs []string) []string {
	out := make([]string, len(globs))
	for i, g := range globs {
		out[i] = filepath.Join(c.root, g)
	}
	return out
}

// inputsStamp is a digest of the base names and contents of the files the globs match; "" without
// globs.
func inputsStamp(globs []string) (string, error) {
	if len(globs) == 0 {
		return "", nil
	}
	h := sha256.New()
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			return "", fmt.Errorf("the image's inputs %s: %w", g, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("the image's inputs: %w", err)
			}
			_, _ = fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
			_, _ = h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// builtFrom reports whether dir holds image name's tarball, built from the inputs of stamp.
func builtFrom(dir, name, stamp string) bool {
	if _, err := os.Stat(filepath.Join(dir, name+".tar")); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".inputs"))
	return err == nil && strings.TrimSpace(string(b)) == stamp
}

// emptyDir makes dir an empty directory, so an image holds only what its fill put there this time,
// on a fresh checkout (no directory yet) and on a warm one (last build's files) alike.
func emptyDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// builtBy says which command builds the binary a failed copy missed.
func builtBy(command string, err error) error {
	if err != nil {
		return fmt.Errorf("%w (%s builds it)", err, command)
	}
	return nil
}

// goBuildStatic builds pkg into out as a static, trimmed binary.
func (c *cluster) goBuildStatic(ctx context.Context, out, pkg string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// runScript runs hack/NAME ARGS from the repository's root, its output on stderr.
func (c *cluster) runScript(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "hack", name), args...)
	cmd.Dir = c.root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/%s: %w", name, err)
	}
	return nil
}

// copyExecutable copies the executable src to dst.
func copyExecutable(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := mustBeStatic(src); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// mustBeStatic refuses a dynamically linked binary: the images have no C library to load it with (a
// bin/ tool built by an older hack/install-tool.sh is one; delete it and make it again).
func mustBeStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // only read
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: delete it and build it again (make builds bin/ tools static)", path)
		}
	}
	return nil
}

// writeImage writes a one-layer linux/amd64 image of spec.rootfs to path. The layer is reproducible
// (sorted entries, zero times, root ownership), so an unchanged tree gives the same digest.
func writeImage(path string, spec imageSpec) error {
	layerPath := path + ".layer.tgz"
	if err := writeLayer(spec.rootfs, layerPath); err != nil {
		return fmt.Errorf("layer of %s: %w", spec.ref, err)
	}
	// A temporary file: the image holds the layer once written, and a leftover one is rewritten next time.
	defer func() { _ = os.Remove(layerPath) }()
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		RootFS:       v1.RootFS{Type: "layers", DiffIDs: mustDiffIDs(layer)},
		Config: v1.Config{
			Entrypoint: spec.entrypoint,
			User:       spec.user,
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			WorkingDir: "/",
		},
	})
	if err != nil {
		return err
	}
	tag, err := name.NewTag(spec.ref)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func mustDiffIDs(layer v1.Layer) []v1.Hash {
	h, err := layer.DiffID()
	if err != nil {
		panic(err)
	}
	return []v1.Hash{h}
}

// writeLayer writes dir as a gzip-compressed tar with reproducible headers.
func writeLayer(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	// For the error paths; the success path closes it last and returns Close's error.
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			src, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			_ = src.Close() // only read
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}
