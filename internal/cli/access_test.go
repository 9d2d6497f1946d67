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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestWorkerWithoutAmbientCredentials: a worker whose pod the manager marked (no credentials named,
// namespace not allowed ambient ones) reads the bucket anonymously although its environment holds
// credentials (here the test server's, standing for the pod's own identity), and the store's refusal
// gives AmbientCredentialsNotAllowed with a message naming the setting. Unmarked, the same worker
// syncs with those credentials.
func TestWorkerWithoutAmbientCredentials(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "sales/a.csv", []byte("a,b\n1,2\n"))
	useTestCredentials(t)
	sync := func() (wire.SyncReport, error) {
		report := filepath.Join(t.TempDir(), "report.json")
		_, err := run(t, "sync", "s3://lake/sales/", filepath.Join(t.TempDir(), "cache"), "--endpoint", srv.Endpoint, "--path-style",
			"--progress", "none", "--report-file", report)
		var rep wire.SyncReport
		b, rerr := os.ReadFile(report)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if jerr := json.Unmarshal(b, &rep); jerr != nil {
			t.Fatalf("report %s: %v", b, jerr)
		}
		return rep, err
	}

	t.Setenv(wire.EnvNoAmbientCredentials, "true")
	rep, err := sync()
	if err == nil {
		t.Fatal("the sync read the bucket with the worker's own credentials")
	}
	if rep.Reason != wire.ReasonAmbientCredentialsNotAllowed {
		t.Errorf("reason %q, want %s (%s)", rep.Reason, wire.ReasonAmbientCredentialsNotAllowed, rep.Message)
	}
	if !strings.Contains(rep.Message, "ambientCredentials.namespaces") || !strings.Contains(rep.Message, "secretRef") {
		t.Errorf("the message does not say what would allow it: %s", rep.Message)
	}

	t.Setenv(wire.EnvNoAmbientCredentials, "")
	if rep, err := sync(); err != nil || rep.FilesCopied != 1 {
		t.Errorf("with ambient credentials allowed: %v, %+v", err, rep)
	}
}

// TestWorkerRefusesADeniedEndpoint: the ranges the manager denies in a worker's environment stop the
// sync before it connects, with an error naming the setting; an allowed range passes.
func TestWorkerRefusesADeniedEndpoint(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "sales/a.csv", []byte("a,b\n1,2\n"))
	useTestCredentials(t)
	sync := func() error {
		_, err := run(t, "sync", "s3://lake/sales/", filepath.Join(t.TempDir(), "cache"), "--endpoint", srv.Endpoint, "--path-style", "--progress", "none")
		return err
	}
	t.Setenv(wire.EnvDeniedCIDRs, "169.254.0.0/16,127.0.0.0/8,::1/128")
	if err := sync(); err == nil || !strings.Contains(err.Error(), "endpoints.deniedCIDRs") || !strings.Contains(err.Error(), "endpoints.allowedCIDRs") {
		t.Errorf("a sync from a denied range: %v, want a refusal naming the setting", err)
	}
	t.Setenv(wire.EnvAllowedCIDRs, "127.0.0.1/32,::1/128")
	if err := sync(); err != nil {
		t.Errorf("a sync from an allowed range: %v", err)
	}
}
