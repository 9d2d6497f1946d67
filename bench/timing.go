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

package bench

// The timing protocol between an engine process and the runner (docs/bench.md, "Timing protocol"):
// the runner names a file in $PQCACHE_TIMING_FILE, the engine appends lines of space-separated
// key=value pairs to it, and the runner reads it once the process has exited. A file rather than
// stderr, so that an engine's own diagnostics cannot be mistaken for timings, and a line format a
// shell script writes with echo.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/memory"
)

// timings is what one engine process reported.
type timings struct {
	// readyUnixNanos is when the engine was loaded (0: not reported), on the machine's wall clock.
	readyUnixNanos int64
	// readyRSS is the engine's resident memory at ready, in bytes (0: not reported).
	readyRSS int64
	// queryMillis are the reported query times by query name; "" is a line without query=, which
	// in process isolation is the one query the process ran.
	queryMillis map[string]float64
	// spark is what a Spark application's executors used, summed over its lines (nil: none).
	spark *wire.SparkResult
}

// maxTimingFileBytes caps what the runner reads of a timing file: an engine is any command a user
// names, and a few lines per query are all the protocol needs (22 queries take about 2 KiB).
const maxTimingFileBytes = 1 << 20

// maxQueryMillis bounds a reported query time (about 11.6 days): beyond it a figure is nonsense,
// and rounding it to int64 milliseconds would overflow.
const maxQueryMillis = 1e9

// readTimings reads the timing file at path, at most maxTimingFileBytes of it. A missing file or a
// malformed line is no report, not an error: the runner then keeps the wall time, labelled as such.
func readTimings(path string) timings {
	f, err := os.Open(path)
	if err != nil {
		return timings{queryMillis: map[string]float64{}}
	}
	defer func() { _ = f.Close() }() // only read
	return parseTimings(io.LimitReader(f, maxTimingFileBytes))
}

// parseTimings reads timing lines from r as they come; it stops at the first line over the
// scanner's limit (64 KiB), keeping what came before.
func parseTimings(r io.Reader) timings {
	t := timings{queryMillis: map[string]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		kv := map[string]string{}
		for _, f := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		if v, err := strconv.ParseInt(kv["ready_unix_ns"], 10, 64); err == nil && v > 0 {
			t.readyUnixNanos = v
			if rss, err := strconv.ParseInt(kv["rss_bytes"], 10, 64); err == nil && rss > 0 {
				t.readyRSS = rss
			}
		}
		if ms, err := strconv.ParseFloat(kv["query_ms"], 64); err == nil && ms >= 0 && ms <= maxQueryMillis {
			t.queryMillis[kv["query"]] = ms
		}
		if u, ok := parseSparkUsage(kv); ok {
			t.spark = addSparkUsage(t.spark, u)
		}
	}
	return t
}

// query is the reported time of query name: its own line, or in process isolation (single) a line
// that names no query.
func (t timings) query(name string, single bool) (int64, bool) {
	ms, ok := t.queryMillis[name]
	if !ok && single {
		ms, ok = t.queryMillis[""]
	}
	return int64(math.Round(ms)), ok
}

// startupMillis is the time from start (the runner's clock, just before the process started) to
// the engine's ready signal; ok is false when the engine did not report one.
func (t timings) startupMillis(startUnixNanos int64) (int64, bool) {
	if t.readyUnixNanos == 0 {
		return 0, false
	}
	return max(0, t.readyUnixNanos-startUnixNanos) / 1e6, true
}

// digester hashes lines as a multiset: the sum of each line's SHA-256 prefix, so that the same rows
// in another order give the same digest and a changed, missing or repeated row does not.
type digester struct {
	rows int64
	sum  uint64
}

func (d *digester) add(line []byte) {
	if len(line) == 0 {
		return
	}
	h := sha256.Sum256(line)
	d.sum += binary.BigEndian.Uint64(h[:8])
	d.rows++
}

func (d *digester) digest() string { return fmt.Sprintf("%016x-%d", d.sum, d.rows) }

// scanRows digests the lines of r. A wire.QueryDelimiter line ends a query's rows: onEnd, when set,
// is called with that query's rows and digest, and the next query starts from zero (session
// isolation); without onEnd the delimiters are skipped (a process that ran one query may write
// one). It returns the rows after the last delimiter.
func scanRows(r io.Reader, onEnd func(rows int64, digest string)) (int64, string, error) {
	var d digester
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if string(line) == wire.QueryDelimiter {
			if onEnd != nil {
				onEnd(d.rows, d.digest())
				d = digester{}
			}
			continue
		}
		d.add(line)
	}
	if err := sc.Err(); err != nil {
		_, _ = io.Copy(io.Discard, r)
		return d.rows, "", err
	}
	return d.rows, d.digest(), nil
}

// digestRows counts the lines of r and hashes them as a multiset (digester).
func digestRows(r io.Reader) (int64, string, error) { return scanRows(r, nil) }

// TimingWriter is the engine's side of the timing protocol, for engines written in Go (the built-in
// DuckDB): each line is appended as it happens, so a process that dies later still reported what it
// finished. Its methods do nothing when the runner named no file.
type TimingWriter struct{ path string }

// NewTimingWriter writes to the file $PQCACHE_TIMING_FILE names, if any.
func NewTimingWriter() *TimingWriter { return &TimingWriter{path: os.Getenv(wire.EnvTimingFile)} }

// Ready reports that the engine is loaded (connection open, tables mapped), with its resident
// memory now: the baseline of PeakAboveReadyBytes.
func (t *TimingWriter) Ready() error {
	rss, _ := memory.TreeUsage(os.Getpid())
	return t.line(fmt.Sprintf("ready_unix_ns=%d rss_bytes=%d", time.Now().UnixNano(), rss.Total))
}

// Query reports the query time of query name.
func (t *TimingWriter) Query(name string, d time.Duration) error {
	return t.line(fmt.Sprintf("query=%s query_ms=%.3f", name, float64(d.Nanoseconds())/1e6))
}

func (t *TimingWriter) line(s string) error {
	if t == nil || t.path == "" {
		return nil
	}
	f, err := os.OpenFile(t.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("the timing file: %w", err)
	}
	_, err = io.WriteString(f, s+"\n")
	return errors.Join(err, f.Close())
}
