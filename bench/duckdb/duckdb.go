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

// Package duckdb is the DuckDB side of pqcache's benchmarks: an embedded DuckDB (github.com/duckdb/
// duckdb-go) to run PDS-H queries over Parquet, and the TPC-H data generator. DuckDB's tpch extension
// is not in the static build and cannot be downloaded offline, but its static library ships with the
// bindings: BuildTPCHExtension links it into a loadable extension, whose DuckDB symbols resolve
// against this binary (hence -rdynamic below).
package duckdb

/*
#cgo LDFLAGS: -rdynamic
*/
import "C"

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// Version is the DuckDB release linked in; an extension must be built for exactly it.
const Version = "v1.5.5"

// Platform is the extension platform this build loads.
const Platform = "linux_amd64"

// bindingsModule holds the static libraries, including libtpch_extension.a.
const bindingsModule = "github.com/duckdb/duckdb-go-bindings/lib/linux-amd64"

// BuildTPCHExtension links the tpch extension's static library, from the Go module cache, into a
// loadable extension at dst (a C++ compiler is needed: this runs at build time, `make
// tpch-extension`, or in tests), and appends DuckDB's metadata footer.
func BuildTPCHExtension(ctx context.Context, dst string) error {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", bindingsModule).Output()
	if err != nil {
		return fmt.Errorf("locating %s (go list): %w", bindingsModule, err)
	}
	lib := filepath.Join(strings.TrimSpace(string(out)), "libtpch_extension.a")
	if _, err := os.Stat(lib); err != nil {
		return fmt.Errorf("the bindings have no tpch extension: %w", err)
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	tmp := dst + ".tmp"
	cmd := exec.CommandContext(ctx, cxx, "-shared", "-o", tmp, "-Wl,--whole-archive", lib, "-Wl,--no-whole-archive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("linking the tpch extension: %w\n%s", err, out)
	}
	if err := appendMetadata(tmp, Platform, Version, "CPP"); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// appendMetadata appends the footer DuckDB checks before loading an extension: a WebAssembly-style
// custom section named duckdb_signature holding eight 32-byte fields in reverse order (magic "4",
// platform, DuckDB version, extension version, ABI type, three unused) and a 256-byte signature,
// zero here: the extension is unsigned, and loaded with allow_unsigned_extensions.
func appendMetadata(path, platform, version, abi string) error {
	field := func(s string) []byte {
		b := make([]byte, 32)
		copy(b, s)
		return b
	}
	var footer bytes.Buffer
	footer.Write([]byte{0x00, 0x93, 0x04, 0x10})
	footer.WriteString("duckdb_signature")
	footer.Write([]byte{0x80, 0x04})
	for _, f := range []string{"", "", "", abi, version, version, platform, "4"} {
		footer.Write(field(f))
	}
	footer.Write(make([]byte, 256))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(footer.Bytes())
	// The footer is part of the extension being built: a failed close may have lost it.
	return errors.Join(err, f.Close())
}

// Open opens an in-memory DuckDB with threads threads (0: DuckDB's default) that may load the
// unsigned tpch extension.
func Open(threads int) (*sql.DB, error) { return OpenConfig(Config{Threads: threads}) }

// Config sets up the DuckDB of one query process.
type Config struct {
	// Threads is DuckDB's thread count; 0 keeps its default (every CPU of the machine).
	Threads int
	// MemoryLimit is DuckDB's memory_limit in bytes, past which it spills to TempDir or fails with
	// an out-of-memory error; 0 keeps its default, 80% of the machine's RAM (in a container, the
	// host's: the kernel's OOM killer then acts first).
	MemoryLimit int64
	// TempDir is where DuckDB spills; "" keeps its default (.tmp in the working directory).
	TempDir string
}

// MemoryLimitFor is the memory_limit for a query process in a container limited to limit bytes:
// three quarters of it less 24 MiB (at least 16 MiB). The rest is for what DuckDB's limit does not
// count: allocations outside its buffer manager (a share that grows with the query) and the fixed
// part, the bench runner beside it and the process itself. Measured on SF 1 and SF 4 q9/q18/q21 in
// cgroups of 96 MiB to 512 MiB (docs/benchmarks.md): the largest limit that was never OOM-killed was
// 72 MiB of 128 and 288 MiB of 384; 80 and 320 were killed.
func MemoryLimitFor(limit int64) int64 { return max(limit/4*3-24<<20, 16<<20) }

// OpenConfig opens an in-memory DuckDB set up by c that may load the unsigned tpch extension.
func OpenConfig(c Config) (*sql.DB, error) {
	q := url.Values{"allow_unsigned_extensions": {"true"}}
	if c.Threads > 0 {
		q.Set("threads", strconv.Itoa(c.Threads))
	}
	if c.MemoryLimit > 0 {
		q.Set("memory_limit", strconv.FormatInt(max(c.MemoryLimit>>10, 1), 10)+"KiB")
	}
	if c.TempDir != "" {
		q.Set("temp_directory", c.TempDir)
	}
	connector, err := duckdb.NewConnector("?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("opening duckdb: %w", err)
	}
	return sql.OpenDB(connector), nil
}
