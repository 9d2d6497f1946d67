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

package csi

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/pqcache/pqcache/agent/mountapi"
	"github.com/pqcache/pqcache/cache/generations"
)

// split turns the fixture's driver into the chart's mount container: it asks an agent, served on a
// Unix socket from the fixture's cache, and confines what it mounts to the copies' root. It returns
// the agent side, to read the in-use reports.
func (f *fixture) split() *AgentSide {
	f.t.Helper()
	agent := &AgentSide{Node: f.driver.Node, Reader: f.driver.Reader, Copies: f.driver.Copies}
	path := filepath.Join(f.t.TempDir(), "mount.sock")
	srv := &mountapi.Server{Path: path, Handler: agent, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Start(ctx); err != nil {
			f.t.Errorf("serving the mount socket: %v", err)
		}
	})
	f.t.Cleanup(func() { cancel(); wg.Wait() })
	waitForSocket(f.t, path)
	f.driver.Locator = &mountapi.Client{Path: path}
	f.driver.CacheRoot = filepath.Dir(filepath.Dir(f.copy))
	f.driver.Reader, f.driver.Copies = nil, nil // the mount side reads no API and names no directory
	return agent
}

// TestSplitPublishHoldsTheGenerationAndReportsIt: through the socket, the mount side publishes the
// current generation, holds it while the agent refreshes, and reports the copy in use.
func TestSplitPublishHoldsTheGenerationAndReportsIt(t *testing.T) {
	f := newFixture(t)
	agent := f.split()
	if agent.Dirs() != nil {
		t.Fatal("the agent knows what is in use before any report: it would prune under readers")
	}
	rep := &InUseReporter{Volumes: f.driver.Volumes, Client: f.driver.Locator.(*mountapi.Client), Log: f.driver.Log}
	f.driver.OnChange = rep.Notify
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rep.Run(ctx) }()
	defer func() { cancel(); <-done }()

	f.publishGeneration(1, 1)
	if err := f.publish("csi-a", nil); err != nil {
		t.Fatal(err)
	}
	f.publishGeneration(2, 1)
	if got := f.shown("csi-a"); got != "g1" || !f.treeExists(1) {
		t.Fatalf("the pod reads %q; generation 1 kept: %v", got, f.treeExists(1))
	}
	waitFor(t, func() bool { return agent.Dirs()[f.copy] })
	wantCode(t, f.publish("csi-b", map[string]string{AttributeDataset: "absent"}), codes.NotFound, "absent")
	f.unpublish("csi-a")
	// The copy was answered lately, so it counts as in use for locatedFor whatever the reports say
	// (TestSplitAnsweredCopiesCountAsInUse); past that, only the reports count.
	agent.mu.Lock()
	agent.now = func() time.Time { return time.Now().Add(locatedFor + time.Second) }
	agent.mu.Unlock()
	waitFor(t, func() bool { d := agent.Dirs(); return d != nil && !d[f.copy] })
}

// TestSplitAnsweredCopiesCountAsInUse: between the agent's answer and the mount side's next report,
// a copy being published is in use although no report names it yet; a DatasetReplica deleted in
// that moment does not get its copy pruned under the new reader.
func TestSplitAnsweredCopiesCountAsInUse(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 1)
	agent := &AgentSide{Node: f.driver.Node, Reader: f.driver.Reader, Copies: f.driver.Copies}
	now := time.Now()
	agent.now = func() time.Time { return now }
	agent.InUse(nil) // a report: nothing published
	if resp := agent.Locate(context.Background(), ns, "events", 0); resp.Dir != f.copy {
		t.Fatalf("locate: %+v", resp)
	}
	agent.InUse(nil) // a report composed before the publish finished
	if !agent.Dirs()[f.copy] {
		t.Fatal("a copy answered a moment ago is not in use: the pruner could remove it under its new reader")
	}
	now = now.Add(locatedFor + time.Second)
	if agent.Dirs()[f.copy] {
		t.Fatal("an answer outlives locatedFor: a publish that failed would keep its copy for ever")
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}

// lyingAgent answers every locate with one directory.
type lyingAgent struct{ dir string }

func (l lyingAgent) Locate(context.Context, string, string, int64) (mountapi.Response, error) {
	return mountapi.Response{Dir: l.dir}, nil
}

// TestSplitRefusesDirectoriesOutsideTheCacheRoot: whatever the agent answers, the mount side binds
// only a generation beneath its cache root, reached without a link: a path outside, a copy that is
// a symlink, and a generations directory that is one are all refused before anything is mounted.
func TestSplitRefusesDirectoriesOutsideTheCacheRoot(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 1)
	root := filepath.Dir(filepath.Dir(f.copy))
	f.driver.CacheRoot = root
	// Elsewhere on the node, a tree that looks like a copy with a current generation.
	outside := filepath.Join(t.TempDir(), "secrets")
	if err := os.MkdirAll(filepath.Join(outside, filepath.FromSlash(generations.Dir), "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("1", filepath.Join(outside, filepath.FromSlash(generations.Dir), "current")); err != nil {
		t.Fatal(err)
	}
	linkedCopy := filepath.Join(root, ns, "linked-uid")
	if err := os.Symlink(outside, linkedCopy); err != nil {
		t.Fatal(err)
	}
	plantedCopy := filepath.Join(root, ns, "planted-uid")
	if err := os.MkdirAll(plantedCopy, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, ".pqcache"), filepath.Join(plantedCopy, ".pqcache")); err != nil {
		t.Fatal(err)
	}
	for i, dir := range []string{outside, root + "/../x/y", filepath.Join(root, ns), f.copy + "/sub", linkedCopy, plantedCopy} {
		f.driver.Locator = lyingAgent{dir: dir}
		id := "csi-lie-" + string(rune('a'+i))
		err := f.publish(id, nil)
		if err == nil || !strings.Contains(err.Error(), "cache root") && !strings.Contains(err.Error(), "link") {
			t.Errorf("the agent named %s: %v, want a refusal", dir, err)
		}
		if ok, _ := f.mounter.IsMounted(f.target(id)); ok {
			t.Errorf("the agent named %s and the target was mounted", dir)
		}
	}
	f.driver.Locator = lyingAgent{dir: f.copy} // the honest answer still works
	if err := f.publish("csi-ok", nil); err != nil || f.shown("csi-ok") != "g1" {
		t.Fatalf("the copy itself: %v", err)
	}
}
