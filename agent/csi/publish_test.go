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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
)

// fakeMounter keeps its mounts in a map: target -> source.
type fakeMounter struct {
	mu     sync.Mutex
	mounts map[string]string
	binds  int
}

func newFakeMounter() *fakeMounter { return &fakeMounter{mounts: map[string]string{}} }

func (m *fakeMounter) BindReadOnly(source, target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := os.Stat(target); err != nil {
		return err
	}
	if strings.HasPrefix(source, "/proc/self/fd/") { // a held directory (split mode): what it names now
		resolved, err := os.Readlink(source)
		if err != nil {
			return err
		}
		source = resolved
	}
	m.mounts[target] = source
	m.binds++
	return nil
}

func (m *fakeMounter) Unmount(target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mounts, target)
	return nil
}

func (m *fakeMounter) IsMounted(target string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.mounts[target]
	return ok, nil
}

func (m *fakeMounter) source(target string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mounts[target]
}

// copyDirs places each Dataset's copy under one directory, as the agent's Copies does.
type copyDirs string

func (c copyDirs) Dir(ds *datav1alpha1.Dataset) string {
	return filepath.Join(string(c), ds.Namespace, ds.Name+"-"+string(ds.UID))
}

const ns = "team-a"

// fixture is a node, node-1, holding a copy of Dataset "events" whose generations the test
// publishes, with node-2 holding one too.
type fixture struct {
	t       *testing.T
	driver  *Driver
	mounter *fakeMounter
	copy    string // the copy's directory
	pods    string // where targets go
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := datav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := dataset("events")
	rep := &datav1alpha1.DatasetReplica{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "events-node-1", Labels: map[string]string{datav1alpha1.LabelReplicaNode: "node-1"}},
		Spec:       datav1alpha1.DatasetReplicaSpec{DatasetName: "events", NodeName: "node-1", Role: datav1alpha1.RoleSeed},
	}
	objs = append(objs, ds, rep)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	root := t.TempDir()
	vols, err := OpenVolumes(filepath.Join(root, "plugin", "volumes"))
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeMounter()
	d := &Driver{Node: "node-1", Reader: c, Copies: copyDirs(filepath.Join(root, "copies")), Mounter: m, Volumes: vols,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return &fixture{t: t, driver: d, mounter: m, copy: d.Copies.Dir(ds), pods: filepath.Join(root, "pods")}
}

func dataset(name string) *datav1alpha1.Dataset {
	return &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       datav1alpha1.DatasetSpec{Replicas: &datav1alpha1.ReplicaPolicy{}},
		Status: datav1alpha1.DatasetStatus{Replicas: &datav1alpha1.ReplicasStatus{Nodes: []datav1alpha1.ReplicaNodeStatus{
			{Node: "node-2", Generation: 2, Ready: true}, {Node: "node-1", Generation: 2, Ready: true}, {Node: "node-3", Generation: 1},
		}}},
	}
}

// publishGeneration makes generation g of the copy hold one file, part.parquet, reading "g<g>",
// keeping the newest keep generations that no reader holds.
func (f *fixture) publishGeneration(g int64, keep int) {
	f.t.Helper()
	body := "g" + strconv.FormatInt(g, 10)
	if err := os.MkdirAll(f.copy, 0o755); err != nil {
		f.t.Fatal(err)
	}
	// A sync renames a new file over the old one, never writes in place: trees link the files.
	tmp := filepath.Join(f.copy, ".staged")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.copy, "part.parquet")); err != nil {
		f.t.Fatal(err)
	}
	entries := func(fn func(manifest.Entry) error) error {
		return fn(manifest.Entry{Key: "part.parquet", Size: int64(len(body)), ETag: `"` + body + `"`})
	}
	if _, err := generations.Publish(context.Background(), f.copy, g, entries, generations.Policy{Keep: keep}, time.Now()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) request(id string, attrs map[string]string) *csipb.NodePublishVolumeRequest {
	ctx := map[string]string{attributePodNamespace: ns, attributePodName: "reader", attributeEphemeral: "true", AttributeDataset: "events"}
	for k, v := range attrs {
		ctx[k] = v
	}
	return &csipb.NodePublishVolumeRequest{VolumeId: id, TargetPath: f.target(id), Readonly: true, VolumeContext: ctx, VolumeCapability: mountCapability()}
}

// mountCapability is what kubelet asks of an inline ephemeral volume: a filesystem, written by one
// node (kubelet's default access mode; the driver mounts read-only whatever the mode).
func mountCapability() *csipb.VolumeCapability {
	return &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}

// TestPublishRefusesRequestsWithoutAFilesystemCapability: the CSI spec requires a volume capability
// in NodePublishVolume, and the driver can only offer a filesystem. csi-sanity's "should fail when no
// volume capability is provided" passed before this check only because its request also had no
// Dataset attribute; a request with every attribute and no capability, or a block capability, was
// mounted.
func TestPublishRefusesRequestsWithoutAFilesystemCapability(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 2)
	req := f.request("csi-nocap", nil)
	req.VolumeCapability = nil
	_, err := f.driver.NodePublishVolume(context.Background(), req)
	wantCode(t, err, codes.InvalidArgument, "volume capability")
	req = f.request("csi-block", nil)
	req.VolumeCapability.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
	_, err = f.driver.NodePublishVolume(context.Background(), req)
	wantCode(t, err, codes.InvalidArgument, "block")
	if n := len(f.mounter.mounts); n != 0 {
		t.Errorf("%d mounts after refused publishes", n)
	}
}

func (f *fixture) target(id string) string { return filepath.Join(f.pods, id, "mount") }

func (f *fixture) publish(id string, attrs map[string]string) error {
	_, err := f.driver.NodePublishVolume(context.Background(), f.request(id, attrs))
	return err
}

func (f *fixture) unpublish(id string) {
	f.t.Helper()
	if _, err := f.driver.NodeUnpublishVolume(context.Background(), &csipb.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: f.target(id)}); err != nil {
		f.t.Fatalf("unpublishing %s: %v", id, err)
	}
}

// shown is what the pod reads at its target: the mounted tree's file.
func (f *fixture) shown(id string) string {
	f.t.Helper()
	src := f.mounter.source(f.target(id))
	if src == "" {
		f.t.Fatalf("volume %s is not mounted", id)
	}
	b, err := os.ReadFile(filepath.Join(src, "part.parquet"))
	if err != nil {
		f.t.Fatalf("reading volume %s: %v", id, err)
	}
	return string(b)
}

func (f *fixture) treeExists(g int64) bool {
	_, err := os.Stat(filepath.Join(f.copy, filepath.FromSlash(generations.Dir), strconv.FormatInt(g, 10)))
	return err == nil
}

func wantCode(t *testing.T, err error, code codes.Code, words ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
	for _, w := range words {
		if !strings.Contains(status.Convert(err).Message(), w) {
			t.Errorf("message %q does not say %q", status.Convert(err).Message(), w)
		}
	}
}

func TestPublishHoldsTheCurrentGenerationUntilUnpublish(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 1)
	if err := f.publish("csi-a", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.shown("csi-a"); got != "g1" {
		t.Fatalf("the pod reads %q, want generation 1", got)
	}
	// The Dataset refreshes twice, keeping one generation: the pod's stays, and it still reads it.
	f.publishGeneration(2, 1)
	f.publishGeneration(3, 1)
	if !f.treeExists(1) || f.shown("csi-a") != "g1" {
		t.Fatal("generation 1 was collected under a published volume")
	}
	if f.treeExists(2) {
		t.Fatal("generation 2, held by nobody, should have been collected")
	}
	// A new pod gets the new current generation.
	if err := f.publish("csi-b", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.shown("csi-b"); got != "g3" {
		t.Fatalf("a new pod reads %q, want generation 3", got)
	}
	f.unpublish("csi-a")
	if ok, _ := f.mounter.IsMounted(f.target("csi-a")); ok {
		t.Fatal("the target is still mounted after unpublish")
	}
	if _, err := os.Stat(f.target("csi-a")); !os.IsNotExist(err) {
		t.Fatalf("the target directory is left behind: %v", err)
	}
	f.publishGeneration(4, 1)
	if f.treeExists(1) {
		t.Fatal("generation 1 outlived its last reader")
	}
}

func TestPublishAndUnpublishAreIdempotent(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 1)
	for range 3 { // kubelet retries a publish whose answer it lost
		if err := f.publish("csi-a", nil); err != nil {
			t.Fatal(err)
		}
	}
	if f.mounter.binds != 1 {
		t.Fatalf("%d bind mounts for one volume, want 1", f.mounter.binds)
	}
	// Someone unmounted the target under the record: the retry mounts it again.
	_ = f.mounter.Unmount(f.target("csi-a"))
	if err := f.publish("csi-a", nil); err != nil {
		t.Fatal(err)
	}
	if f.shown("csi-a") != "g1" {
		t.Fatal("the retry did not mount the held generation again")
	}
	// The same volume ID at another target is a conflict, not a second mount.
	req := f.request("csi-a", nil)
	req.TargetPath = f.target("elsewhere")
	_, err := f.driver.NodePublishVolume(context.Background(), req)
	wantCode(t, err, codes.AlreadyExists)

	f.unpublish("csi-a")
	f.unpublish("csi-a")     // a retried unpublish
	f.unpublish("csi-never") // a volume this agent never published (a node rebooted)
	if len(f.driver.Volumes.Dirs()) != 0 {
		t.Fatal("a volume is still recorded after unpublish")
	}
}

func TestPublishARequestedGeneration(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 2)
	f.publishGeneration(2, 2)
	if err := f.publish("csi-old", map[string]string{AttributeGeneration: "1"}); err != nil {
		t.Fatal(err)
	}
	if got := f.shown("csi-old"); got != "g1" {
		t.Fatalf("the pod asked for generation 1 and reads %q", got)
	}
	err := f.publish("csi-gone", map[string]string{AttributeGeneration: "7"})
	wantCode(t, err, codes.FailedPrecondition, "team-a/events", "no generation 7", "node-1", "no node holds generation 7")
	err = f.publish("csi-bad", map[string]string{AttributeGeneration: "latest"})
	wantCode(t, err, codes.InvalidArgument, `"latest" is not a generation number`)
	if _, ok := f.driver.Volumes.Get("csi-gone"); ok {
		t.Fatal("a refused publish was recorded")
	}
}

func TestPublishRefusalsNameTheNodesWithACopy(t *testing.T) {
	other := dataset("elsewhere") // a Dataset with no copy on node-1
	claim := dataset("on-a-claim")
	claim.Spec.Replicas = nil
	f := newFixture(t, other, claim)

	err := f.publish("csi-a", nil) // node-1 should hold a copy, but none was published yet
	wantCode(t, err, codes.FailedPrecondition, "team-a/events", "no ready copy on node node-1", "nodes with a ready copy: node-1, node-2")

	err = f.publish("csi-b", map[string]string{AttributeDataset: "elsewhere"})
	wantCode(t, err, codes.FailedPrecondition, "team-a/elsewhere has no copy on node node-1", "nodes with a ready copy: node-1, node-2")

	err = f.publish("csi-c", map[string]string{AttributeDataset: "on-a-claim"})
	wantCode(t, err, codes.FailedPrecondition, "keeps its data on a claim")

	err = f.publish("csi-d", map[string]string{AttributeDataset: "missing"})
	wantCode(t, err, codes.NotFound, "Dataset team-a/missing not found")

	err = f.publish("csi-e", map[string]string{AttributeDataset: ""})
	wantCode(t, err, codes.InvalidArgument, "volumeAttributes.dataset is required")

	err = f.publish("csi-f", map[string]string{attributePodNamespace: ""})
	wantCode(t, err, codes.InvalidArgument, "podInfoOnMount")
}

// An agent restarted under running readers takes their generations again before anything syncs;
// records of targets no longer mounted are dropped.
func TestRestoreHoldsPublishedGenerationsAgain(t *testing.T) {
	f := newFixture(t)
	f.publishGeneration(1, 1)
	for _, id := range []string{"csi-a", "csi-b"} {
		if err := f.publish(id, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The agent dies: its leases go with its process. kubelet unmounts csi-b meanwhile.
	for _, id := range []string{"csi-a", "csi-b"} {
		vol, _ := f.driver.Volumes.Get(id)
		vol.lease.Release()
	}
	_ = f.mounter.Unmount(f.target("csi-b"))

	vols, err := OpenVolumes(f.driver.Volumes.dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := vols.Restore(f.mounter)
	if err != nil || n != 1 {
		t.Fatalf("restored %d volumes (%v), want 1", n, err)
	}
	if _, ok := vols.Get("csi-b"); ok {
		t.Fatal("the record of an unmounted target was kept")
	}
	f.publishGeneration(2, 1)
	if !f.treeExists(1) {
		t.Fatal("generation 1 was collected under a volume restored after a restart")
	}
	if err := vols.Remove("csi-a"); err != nil {
		t.Fatal(err)
	}
	f.publishGeneration(3, 1)
	if f.treeExists(1) {
		t.Fatal("generation 1 outlived its restored reader")
	}
}
