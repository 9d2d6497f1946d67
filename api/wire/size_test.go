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

package wire

import (
	"testing"

	"github.com/spf13/pflag"
)

// A size prints as the quantity its flag reads back, the same number of bytes.
func TestSizeStringRoundTrips(t *testing.T) {
	for _, n := range []int64{1, 1000, 1024, 1536 << 10, 16 << 20, 3 << 30, 5<<40 + 1, 1 << 60} {
		s := Size(n).String()
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("Size(%d) prints %q, read back as %d (%v)", n, s, got, err)
		}
	}
	if got := Size(16 << 20).String(); got != "16Mi" {
		t.Errorf("16 MiB prints %q, want 16Mi", got)
	}
}

// The typed flags take their defaults when absent, read quantities, and refuse what is not one.
func TestTypedFlags(t *testing.T) {
	parse := func(args ...string) (SyncOptions, error) {
		var o SyncOptions
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.Bind(fs)
		return o, fs.Parse(args)
	}
	o, err := parse()
	if err != nil || o.PartSize != DefaultPartSize || o.Verify != VerifyChecksum || o.MaxBytes != nil {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = parse("--part-size", "1.5Mi", "--max-bytes", "2G", "--verify", "size")
	if err != nil || o.PartSize != 1536<<10 || o.MaxBytes == nil || *o.MaxBytes != 2_000_000_000 || o.Verify != VerifySize {
		t.Fatalf("parsed: %+v %v", o, err)
	}
	for _, bad := range [][]string{{"--part-size", "lots"}, {"--verify", "md5"}, {"--max-bytes", "-1"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}
