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

// Package polars is pqcache's built-in Polars engine. Polars is the engine of the studies pqcache
// generalises, and its official Node.js bindings (nodejs-polars, the same Rust engine) install from
// the npm registry with no Python; so the 22 PDS-H queries are written in Polars' lazy API in a small
// Node.js program kept beside this file (run.js, queries.js, tables.js, format.js, with package.json
// and its lockfile; `make polars-modules` installs node_modules with `npm ci`). This package finds
// that program and node, and starts one node process per query as a bench.Engine, so that bench
// times it, samples its memory and digests its rows exactly as it does DuckDB's. It needs no cgo: the
// static pqcache-runner runs Polars too.
package polars

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
)

// Environment variables the engine reads or sets.
const (
	// EnvDir names the directory holding run.js and node_modules.
	EnvDir = "PQCACHE_POLARS_DIR"
	// EnvNode names the node binary.
	EnvNode = "PQCACHE_NODE"
	// EnvEngine is run.js's engine when --engine is not given: in-memory or streaming.
	EnvEngine = "PQCACHE_POLARS_ENGINE"
	// EnvPathStyle is run.js's S3 addressing: true for endpoint/bucket/key.
	EnvPathStyle = "PQCACHE_S3_PATH_STYLE"
)

// Module is the npm package whose presence under node_modules says the modules are installed.
const Module = "nodejs-polars"

// Engine runs each query as `node run.js --query N --data DATA` in a fresh process.
type Engine struct {
	// Node is the node binary; Dir the directory of run.js and its node_modules (see Find).
	Node, Dir string
	// Threads sets POLARS_MAX_THREADS (0: Polars' default, one per CPU it may use).
	Threads int
	// Streaming runs queries on Polars' streaming engine instead of the in-memory one.
	Streaming bool
	// ForceAsync sets POLARS_FORCE_ASYNC=1: the async (object store) reader for local files too.
	ForceAsync bool
	// FreshData (a directory or s3:// URL) replaces the files under FreshPrefixes of the data.
	FreshData     string
	FreshPrefixes []string
	// S3 is how s3:// data is reached; credentials come from the environment (AWS_ACCESS_KEY_ID, ...).
	// Empty fields keep the environment's.
	S3 wire.S3Access
}

// Name is "polars".
func (Engine) Name() string { return "polars" }

// Command returns the node process that runs query over data.
func (e Engine) Command(ctx context.Context, inv bench.Invocation) (*exec.Cmd, error) {
	query, data := strings.TrimPrefix(inv.Query, "q"), inv.Data
	args := []string{filepath.Join(e.Dir, "run.js"), "--query", query, "--data", data}
	if e.Streaming {
		args = append(args, "--engine", "streaming")
	}
	if e.FreshData != "" {
		args = append(args, "--fresh-data", e.FreshData)
		for _, p := range e.FreshPrefixes {
			args = append(args, "--fresh-prefix", p)
		}
	}
	cmd := exec.CommandContext(ctx, e.Node, args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), e.env()...)
	return cmd, nil
}

// env is what the engine adds to the inherited environment.
func (e Engine) env() []string {
	var env []string
	if e.Threads > 0 {
		env = append(env, "POLARS_MAX_THREADS="+strconv.Itoa(e.Threads))
	}
	if e.ForceAsync {
		env = append(env, "POLARS_FORCE_ASYNC=1")
	}
	if e.S3.Endpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL="+e.S3.Endpoint)
	}
	if e.S3.Region != "" {
		env = append(env, "AWS_REGION="+e.S3.Region)
	}
	if e.S3.PathStyle {
		env = append(env, EnvPathStyle+"=true")
	}
	return env
}

// Find locates the Polars program and node: dir (a flag) or $PQCACHE_POLARS_DIR, else the places an
// image or a checkout keeps it relative to this binary (../lib/pqcache/polars, as the tpch
// extension; the repository's bench/polars for bin/pqcache), else /usr/local/lib/pqcache/polars; node
// is $PQCACHE_NODE, else node on PATH, else /usr/bin/node. It fails, saying what to do, when node does
// not run or the modules are not installed.
func Find(dir string) (Engine, error) {
	candidates := []string{dir, os.Getenv(EnvDir)}
	if dir == "" && os.Getenv(EnvDir) == "" {
		if self, err := os.Executable(); err == nil {
			bin := filepath.Dir(self)
			candidates = append(candidates, filepath.Join(bin, "..", "lib", "pqcache", "polars"), filepath.Join(bin, "..", "bench", "polars"))
		}
		candidates = append(candidates, "/usr/local/lib/pqcache/polars")
	}
	var found string
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "run.js")); err == nil {
			found, _ = filepath.Abs(c)
			break
		}
		if c == dir || c == os.Getenv(EnvDir) {
			return Engine{}, fmt.Errorf("the Polars engine %s has no run.js", c)
		}
	}
	if found == "" {
		return Engine{}, fmt.Errorf("the Polars engine (run.js) is not in %s: pass --polars-dir or set %s", strings.Join(nonEmpty(candidates), ", "), EnvDir)
	}
	e := Engine{Dir: found, Node: node()}
	return e, e.Check()
}

func node() string {
	if n := os.Getenv(EnvNode); n != "" {
		return n
	}
	if n, err := exec.LookPath("node"); err == nil {
		return n
	}
	return "/usr/bin/node"
}

// Check says whether node runs and the modules are installed in e.Dir.
func (e Engine) Check() error {
	out, err := exec.Command(e.Node, "--version").Output()
	if err != nil {
		return fmt.Errorf("node (%s) does not run: %w; install Node.js 20 or set %s", e.Node, err, EnvNode)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "node_modules", Module, "package.json")); err != nil {
		return fmt.Errorf("%s is not installed in %s (node %s): run `make polars-modules` (npm ci --prefix %s)", Module, e.Dir, strings.TrimSpace(string(out)), e.Dir)
	}
	return nil
}

// Version is the installed nodejs-polars version, from its package.json.
func (e Engine) Version() (string, error) {
	b, err := os.ReadFile(filepath.Join(e.Dir, "node_modules", Module, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("reading the version of %s: %w", Module, err)
	}
	if pkg.Version == "" {
		return "", errors.New("no version in the package.json of " + Module)
	}
	return pkg.Version, nil
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
