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
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerpb "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/pqcache/pqcache/agent/csi"
	"github.com/pqcache/pqcache/agent/mountapi"
)

// noCopies is an agent side that keeps no copy.
type noCopies struct {
	mu    sync.Mutex
	heard bool
}

func (n *noCopies) Locate(_ context.Context, namespace, dataset string, _ int64) mountapi.Response {
	return mountapi.Response{Code: 5, Message: "Dataset " + namespace + "/" + dataset + " not found"}
}

func (n *noCopies) InUse([]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.heard = true
}

// TestAgentMountCommand runs the chart's mount container in-process: it serves the CSI socket, its
// liveness probe passes, its readiness probe waits for kubelet's registration (sent here as kubelet
// would), and it reports to the agent's socket. `--csi` with `--mount-socket` is refused.
func TestAgentMountCommand(t *testing.T) {
	dir, err := os.MkdirTemp("", "mnt") // short: Unix socket paths are at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	kubelet, cache, sock := filepath.Join(dir, "k"), filepath.Join(dir, "c"), filepath.Join(dir, "m.sock")
	for _, d := range []string{kubelet, cache} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	side := &noCopies{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	srv := &mountapi.Server{Path: sock, Handler: side, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wg.Go(func() { _ = srv.Start(ctx) })
	wg.Go(func() {
		cmd := NewRootCommand()
		cmd.SetArgs([]string{"agent", "mount", "--node-name=n1", "--cache-root=" + cache, "--kubelet-dir=" + kubelet, "--socket=" + sock, "--log-level=error"})
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Errorf("agent mount: %v", err)
		}
	})
	defer func() { cancel(); wg.Wait() }()

	eventually(t, func() error {
		_, err := run(t, "agent", "mount", "probe", "--live", "--kubelet-dir="+kubelet)
		return err
	})
	if _, err := run(t, "agent", "mount", "probe", "--kubelet-dir="+kubelet); err == nil || !strings.Contains(err.Error(), "registered") {
		t.Errorf("readiness before kubelet registered the driver: %v", err)
	}
	notifyRegistered(t, csi.Paths{KubeletDir: kubelet}.RegistrationSocket())
	eventually(t, func() error { _, err := run(t, "agent", "mount", "probe", "--kubelet-dir="+kubelet); return err })
	eventually(t, func() error {
		side.mu.Lock()
		defer side.mu.Unlock()
		if !side.heard {
			return io.ErrNoProgress
		}
		return nil
	})
	if _, err := run(t, "agent", "--node-name=n1", "--csi", "--mount-socket="+sock); err == nil || !strings.Contains(err.Error(), "exclude") {
		t.Errorf("--csi with --mount-socket: %v", err)
	}
}

// notifyRegistered tells the plugin it is registered, as kubelet's plugin watcher does.
func notifyRegistered(t *testing.T, socket string) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := registerpb.NewRegistrationClient(conn).NotifyRegistrationStatus(ctx, &registerpb.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("not within 10s: %v", err)
}
