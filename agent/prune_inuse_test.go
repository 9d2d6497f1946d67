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

package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// TestPruneWaitsForTheMountSidesReport: in the split pod, the agent learns what published volumes
// show from the mount container (csi.AgentSide). Until the first report, InUse answers nil and the
// agent removes nothing, not even a copy no DatasetReplica asks for: a pod may still read it. Once a
// report names no copy, the copy goes.
func TestPruneWaitsForTheMountSidesReport(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := datav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	copies, err := OpenCopies(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = copies.Close() }()
	orphan := filepath.Join(copies.root, "team-a", "events-uid")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	var report map[string]bool // nil: the mount container has not reported
	a := &Agent{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Node: "node-1", Copies: copies,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), InUse: func() map[string]bool { return report }}
	a.prune(context.Background())
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("pruned before the mount side reported what pods read: %v", err)
	}
	report = map[string]bool{orphan: true}
	a.prune(context.Background())
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("pruned a copy a published volume shows: %v", err)
	}
	report = map[string]bool{}
	a.prune(context.Background())
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("a copy nobody asks for or reads was kept: %v", err)
	}
}
