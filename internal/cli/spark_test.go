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

package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
)

// TestSparkIsolation: --engine spark runs sessions. Without --isolation it gets session; with
// --isolation session it keeps it; --isolation process by name is refused, saying why. Other engines
// keep process isolation as their default.
func TestSparkIsolation(t *testing.T) {
	for _, c := range []struct {
		args    []string
		want    string
		refused bool
	}{
		{[]string{"--engine", "spark"}, wire.IsolationSession, false},
		{[]string{"--engine", "spark", "--isolation", "session"}, wire.IsolationSession, false},
		{[]string{"--engine", "spark", "--isolation", "process"}, "", true},
		{[]string{"--engine", "polars"}, wire.IsolationProcess, false},
	} {
		var got wire.BenchArgs
		var err error
		cmd := benchCommand(func(cmd *cobra.Command, a wire.BenchArgs, _ benchLocal) error {
			err = sparkIsolation(cmd, &a)
			got = a
			return nil
		})
		cmd.SetArgs(append([]string{"--data", "/data"}, c.args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if e := cmd.Execute(); e != nil {
			t.Fatalf("%v: %v", c.args, e)
		}
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "one Spark application")):
			t.Errorf("%v: %v, want it refused", c.args, err)
		case !c.refused && (err != nil || got.Isolation != c.want):
			t.Errorf("%v: isolation %q (%v), want %q", c.args, got.Isolation, err, c.want)
		}
	}
}
