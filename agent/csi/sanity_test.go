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
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sanitySkipped are the csi-sanity specs that do not apply to an ephemeral, node-only driver, by a
// regular expression on their full text, each with the reason. Every other spec runs; those that
// skip themselves (their capability is not offered) are listed in sanitySelfSkipped.
var sanitySkipped = map[string]string{
	// The driver has no controller service: nothing to provision or attach (the plugin reports no
	// CONTROLLER_SERVICE capability, so kubelet never calls one). These specs call the controller
	// directly; here the controller endpoint is the test's stand-in for kubelet (ephemeralVolumes),
	// and they would test that stand-in, not the driver.
	`\[Controller Server\]`: "no controller service: CreateVolume, ControllerPublish, snapshots, expansion, modification, health",
}

// sanitySelfSkipped are the specs csi-sanity skips by itself for this driver, from the capabilities
// it reports (none), and why the driver does not offer them. The test checks that nothing else is
// skipped.
var sanitySelfSkipped = map[string]string{
	"GroupController":                   "no group controller service: volume group snapshots need a controller",
	"single node multi writer":          "publishes are read-only: there is no writer",
	"NodeStageVolume":                   "no STAGE_UNSTAGE_VOLUME: an ephemeral bind mount has nothing to stage",
	"NodeUnstageVolume":                 "no STAGE_UNSTAGE_VOLUME",
	"NodeGetVolumeStats":                "no GET_VOLUME_STATS: the copy's figures are in the DatasetReplica's status",
	"NodeExpandVolume":                  "no EXPAND_VOLUME: a copy's size is its Dataset's",
	"NodeGetVolumeHealth":               "no GET_VOLUME_HEALTH",
	"NodeGetStorageHealth":              "no GET_STORAGE_HEALTH",
	"Node Service should work":          "the full lifecycle needs the plugin's CONTROLLER_SERVICE capability (CreateVolume, then publish); NodeUnpublishVolume should remove target path runs the node half of it",
	"Node Service should be idempotent": "the same lifecycle, repeated; publish and unpublish idempotence is TestPublishAndUnpublishAreIdempotent",
}

// ephemeralVolumes stands in for kubelet on the controller endpoint: for an inline ephemeral volume
// kubelet makes up the volume ID and the volume context (the pod's attributes and podInfoOnMount's)
// itself; csi-sanity gets them from CreateVolume. DeleteVolume forgets nothing: an ephemeral
// volume's life is its publish.
type ephemeralVolumes struct {
	csipb.UnimplementedControllerServer
	attrs map[string]string
}

func (e *ephemeralVolumes) CreateVolume(_ context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "csi-" + req.GetName(), VolumeContext: e.attrs}}, nil
}

func (e *ephemeralVolumes) DeleteVolume(context.Context, *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	return &csipb.DeleteVolumeResponse{}, nil
}

func (e *ephemeralVolumes) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	return &csipb.ControllerGetCapabilitiesResponse{}, nil
}

// sanityMounter is the real bind mounter where this process may mount (root, as in CI), and the
// fake one elsewhere.
func sanityMounter(t *testing.T, f *fixture) Mounter {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := (BindMounter{}).BindReadOnly(src, dst); err != nil {
		t.Logf("bind mounts fail here (%v): publishing with a fake mounter", err)
		return f.mounter
	}
	if err := (BindMounter{}).Unmount(dst); err != nil {
		t.Fatal(err)
	}
	return BindMounter{}
}

// TestCSISanity runs csi-sanity (kubernetes-csi/csi-test) against the driver served by Server on a
// Unix socket, with a copy of Dataset "events" on this node: every spec that applies to an ephemeral,
// node-only driver. The driver is the chart's mount container: it asks the agent over the mount
// socket (split.go), so the suite runs against the mount side as deployed.
func TestCSISanity(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 2)
	f.split()
	f.driver.Mounter = sanityMounter(t, f)
	kubelet := t.TempDir()
	srv := &Server{Paths: Paths{KubeletDir: kubelet}, Driver: f.driver, Registration: &Registration{Log: f.driver.Log}, Log: f.driver.Log}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Start(ctx); err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	controller := serveController(t, filepath.Join(kubelet, "controller.sock"), f.driver, map[string]string{
		attributePodNamespace: ns, attributePodName: "sanity", attributeEphemeral: "true", AttributeDataset: "events"})
	waitForSocket(t, srv.Paths.Socket())

	cfg := sanity.NewTestConfig()
	cfg.Address = "unix:" + srv.Paths.Socket()
	cfg.ControllerAddress = "unix:" + controller
	cfg.TargetPath = filepath.Join(t.TempDir(), "target")
	cfg.StagingPath = filepath.Join(t.TempDir(), "staging")
	sc := sanity.GinkgoTest(&cfg)
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	reporter.NoColor = true
	for re := range sanitySkipped {
		suite.SkipStrings = append(suite.SkipStrings, re)
	}
	var mu sync.Mutex
	var selfSkipped []string
	ginkgo.ReportAfterEach(func(r ginkgo.SpecReport) {
		if r.State == types.SpecStateSkipped {
			mu.Lock()
			selfSkipped = append(selfSkipped, r.FullText())
			mu.Unlock()
		}
	})
	ginkgo.RunSpecs(t, "csi-sanity: "+DriverName, suite, reporter)
	sc.Finalize()
	checkSelfSkipped(t, selfSkipped)
}

// checkSelfSkipped fails on a skipped spec that neither sanitySkipped nor sanitySelfSkipped explains.
func checkSelfSkipped(t *testing.T, skipped []string) {
	t.Helper()
	for _, spec := range skipped {
		known := false
		for re := range sanitySkipped {
			if regexp.MustCompile(re).MatchString(spec) {
				known = true // skipped by the suite's configuration
			}
		}
		for part := range sanitySelfSkipped {
			if strings.Contains(strings.ToLower(spec), strings.ToLower(part)) {
				known = true
			}
		}
		if known {
			t.Logf("skipped: %s", spec)
		} else {
			t.Errorf("csi-sanity skipped %q, which sanitySelfSkipped does not explain", spec)
		}
	}
}

// serveController serves ephemeralVolumes on a Unix socket at path.
func serveController(t *testing.T, path string, identity csipb.IdentityServer, attrs map[string]string) string {
	t.Helper()
	l, err := listenUnix(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	csipb.RegisterControllerServer(s, &ephemeralVolumes{attrs: attrs})
	csipb.RegisterIdentityServer(s, identity) // every CSI endpoint serves Identity
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return path
}

func waitForSocket(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	t.Fatalf("%s did not appear", path)
}
