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

// Package netdev reads the receive byte counters of the process's network namespace
// (/proc/self/net/dev), which is how the study pqcache generalises measured what a query read from
// S3: in a pod the namespace is the pod's own, and while a query runs its only traffic is the query's
// reads. Reading the counters is one small file read, cheap enough for before and after every query
// iteration, and a machine without them (no procfs) measures zero rather than failing a run.
package netdev

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Loopback is the loopback interface's name.
const Loopback = "lo"

// Interfaces says whose receive counters count. The zero value counts every interface but the
// loopback: in a pod, loopback traffic stays inside the pod, and S3 reads arrive on its other
// interfaces. Standalone against a server on 127.0.0.1, only the loopback carries the reads.
type Interfaces struct {
	// Only, when not empty, names the interfaces to count, and nothing else.
	Only []string
	// Off turns measuring off: every snapshot is empty and every delta zero.
	Off bool
}

// Parse reads a selection as a flag spells it: "auto" (or empty) for every interface but lo, "none"
// to measure nothing, or a comma-separated list of interface names such as "lo" or "eth0,eth1".
func Parse(s string) (Interfaces, error) {
	switch strings.TrimSpace(s) {
	case "", "auto":
		return Interfaces{}, nil
	case "none":
		return Interfaces{Off: true}, nil
	}
	var names []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" || strings.ContainsAny(n, ": \t/") {
			return Interfaces{}, fmt.Errorf("network interfaces %q: %q is not an interface name (want auto, none, or names such as lo,eth0)", s, n)
		}
		names = append(names, n)
	}
	return Interfaces{Only: names}, nil
}

// String spells the selection as Parse reads it.
func (s Interfaces) String() string {
	switch {
	case s.Off:
		return "none"
	case len(s.Only) == 0:
		return "auto"
	}
	return strings.Join(s.Only, ",")
}

func (s Interfaces) counts(name string) bool {
	if len(s.Only) > 0 {
		return slices.Contains(s.Only, name)
	}
	return name != Loopback
}

// Snapshot is the receive byte counter of each selected interface at one moment.
type Snapshot map[string]uint64

// path is the network namespace's device table; a variable for tests.
var path = "/proc/self/net/dev"

// Read takes a snapshot of the selected interfaces. Without readable counters it returns nil, whose
// deltas are zero.
func Read(sel Interfaces) Snapshot {
	if sel.Off {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // only read
	all, err := ParseDev(f)
	if err != nil {
		return nil
	}
	snap := Snapshot{}
	for name, rx := range all {
		if sel.counts(name) {
			snap[name] = rx
		}
	}
	return snap
}

// Since is what the interfaces of s received after before was taken: the sum of each interface's
// growth. An interface that is in only one snapshot, or whose counter went back (it was re-created),
// adds nothing, so a changing set of interfaces never makes a figure up.
func (s Snapshot) Since(before Snapshot) int64 {
	var total uint64
	for name, rx := range s {
		if b, ok := before[name]; ok && rx > b {
			total += rx - b
		}
	}
	return int64(min(total, 1<<63-1))
}

// ParseDev reads /proc/net/dev: two header lines, then one line per interface, "name: rx-bytes
// rx-packets ...". It returns each interface's received bytes. The name and the first counter may
// touch ("veth0123:4294967296") when both are long.
func ParseDev(r io.Reader) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			if line <= 2 {
				continue // the headers ("Inter-|   Receive ...", " face |bytes ...")
			}
			return nil, fmt.Errorf("/proc/net/dev line %d has no interface name: %q", line, sc.Text())
		}
		fields := strings.Fields(string(rest))
		if len(fields) == 0 {
			return nil, fmt.Errorf("/proc/net/dev line %d has no counters: %q", line, sc.Text())
		}
		rx, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/net/dev line %d: receive bytes %q: %w", line, fields[0], err)
		}
		out[strings.TrimSpace(string(name))] = rx
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
