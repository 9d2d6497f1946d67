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

package netdev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDev(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    map[string]uint64
		err     string
	}{
		{fixture: "host.txt", want: map[string]uint64{"lo": 270829689537, "ifb0": 0, "ifb1": 0, "eth0": 1293896769, "pqcache0": 15036}},
		{fixture: "pod.txt", want: map[string]uint64{"lo": 4096, "eth0": 52428800}},
		// Long names and counters touch the colon; the largest 64-bit counter parses.
		{fixture: "joined.txt", want: map[string]uint64{"lo": 18446744073709551615, "vethd3f1a2b4c5": 4294967296}},
		{fixture: "broken.txt", err: `receive bytes "lots"`},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ParseDev(f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParseDev (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseInterfaces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Interfaces
		err  bool
	}{
		{in: "", want: Interfaces{}},
		{in: "auto", want: Interfaces{}},
		{in: "none", want: Interfaces{Off: true}},
		{in: "lo", want: Interfaces{Only: []string{"lo"}}},
		{in: "eth0, eth1", want: Interfaces{Only: []string{"eth0", "eth1"}}},
		{in: "eth0,", err: true},
		{in: "eth0:1", err: true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("Parse(%q): error %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, d)
		}
		if !tc.err {
			if again, _ := Parse(got.String()); !cmp.Equal(again, got) {
				t.Errorf("Parse(%q).String() = %q does not parse back", tc.in, got.String())
			}
		}
	}
}

// TestReadAndSince reads fixtures as the namespace's table: the default counts all but lo, "lo" only
// lo, and a delta counts growth only (an interface that appears or is re-created adds nothing).
func TestReadAndSince(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "dev"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := path
	path = filepath.Join(dir, "dev")
	t.Cleanup(func() { path = old })
	const head = "Inter-|   Receive\n face |bytes    packets\n"
	write(head + "    lo: 1000 1 0\n  eth0: 5000 1 0\n  eth1: 700 1 0\n")
	auto, lo, none := Read(Interfaces{}), Read(Interfaces{Only: []string{"lo"}}), Read(Interfaces{Off: true})
	if d := cmp.Diff(Snapshot{"eth0": 5000, "eth1": 700}, auto); d != "" {
		t.Errorf("auto (-want +got):\n%s", d)
	}
	if d := cmp.Diff(Snapshot{"lo": 1000}, lo); d != "" {
		t.Errorf("lo (-want +got):\n%s", d)
	}
	if none != nil {
		t.Errorf("off read %v", none)
	}
	// eth0 grew by 3000, eth1 went back (re-created), eth2 appeared, lo grew by 24.
	write(head + "    lo: 1024 1 0\n  eth0: 8000 1 0\n  eth1: 10 1 0\n  eth2: 99999 1 0\n")
	if got := Read(Interfaces{}).Since(auto); got != 3000 {
		t.Errorf("auto delta %d, want 3000", got)
	}
	if got := Read(Interfaces{Only: []string{"lo"}}).Since(lo); got != 24 {
		t.Errorf("lo delta %d, want 24", got)
	}
	// No counters at all (no procfs): zero, no error.
	path = filepath.Join(dir, "missing")
	if s := Read(Interfaces{}); s != nil || s.Since(auto) != 0 || auto.Since(s) != 0 {
		t.Errorf("without counters: %v", s)
	}
}

// TestReadsThisNamespace: on Linux the process's own table has a loopback.
func TestReadsThisNamespace(t *testing.T) {
	if _, ok := Read(Interfaces{Only: []string{Loopback}})[Loopback]; !ok {
		t.Fatal("no lo in /proc/self/net/dev")
	}
}
