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

package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/pqcache/pqcache/agent"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// TestPruneKeepsACopyStartedAfterItsListing is the race of a pruner and a new copy: the pruner lists
// the node's DatasetReplicas, a copy starts (its DatasetReplica came after the listing) and writes
// into its directory, then the pruner removes what its listing does not name. The new copy's files
// stay; an old copy that nothing keeps goes.
func TestPruneKeepsACopyStartedAfterItsListing(t *testing.T) {
	root := t.TempDir()
	c, err := agent.OpenCopies(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ds := func(name, uid string) *datav1alpha1.Dataset {
		return &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: k8stypes.UID("uid-" + uid)}}
	}
	write := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "part.parquet")
		if err := os.WriteFile(f, []byte("PAR1"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	old := write(c.Dir(ds("old", "1")))

	since := c.Mark()                     // the pruner is about to list
	keep := map[string]bool{}             // ... and its listing names no copy
	fresh := write(c.Dir(ds("new", "2"))) // a copy starts meanwhile

	removed, err := c.Prune(keep, since)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the copy that started after the listing lost its file: %v (removed %v)", err, removed)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the copy that nothing keeps is still there: %v", err)
	}
	if len(removed) != 1 || removed[0] != filepath.Dir(old) {
		t.Errorf("removed %v, want only %s", removed, filepath.Dir(old))
	}
	// The next round, listed after the copy started, removes it once nothing keeps it.
	if removed, err = c.Prune(map[string]bool{}, c.Mark()); err != nil || len(removed) != 1 {
		t.Errorf("a later prune removed %v (%v), want the new copy", removed, err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".agent.lock" && e.Name() != "team" {
			t.Errorf("prune left %s in the cache root", e.Name())
		}
	}
}
