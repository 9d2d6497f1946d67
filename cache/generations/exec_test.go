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

package generations

import (
	"bytes"
	"strings"
	"testing"
)

// TestExecRunsOnTheHeldGeneration runs a shell on a held directory: {data} and $PQCACHE_DATA name
// it, its exit status comes back, and a command killed by a signal reads as a shell reports it.
func TestExecRunsOnTheHeldGeneration(t *testing.T) {
	l := &Lease{Dir: t.TempDir()}
	var out bytes.Buffer
	code, exited, err := l.Exec(t.Context(), []string{"sh", "-c", `echo "$1 $PQCACHE_DATA"; exit 3`, "sh", "{data}"}, Stdio{Out: &out})
	if err != nil || !exited || code != 3 {
		t.Fatalf("exit %d (exited %v): %v", code, exited, err)
	}
	if want := l.Dir + " " + l.Dir; strings.TrimSpace(out.String()) != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if code, exited, err := l.Exec(t.Context(), []string{"sh", "-c", "kill -TERM $$"}, Stdio{}); err != nil || !exited || code != 128+15 {
		t.Errorf("killed by SIGTERM: exit %d (exited %v): %v", code, exited, err)
	}
	if _, exited, err := l.Exec(t.Context(), []string{"/nonexistent/command"}, Stdio{}); err == nil || exited {
		t.Errorf("a command that cannot start: exited %v, %v", exited, err)
	}
}
