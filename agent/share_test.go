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
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/test/testfiles"
)

// slowGets is a bucket client whose object GETs take at least delay (listings do not): a bucket far
// away, so that a sync's GETs overlap another's. The delay is in the transport's proxy function, which
// runs for every request in the caller's goroutine.
func slowGets(delay time.Duration) aws.HTTPClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.Proxy = func(r *http.Request) (*url.URL, error) {
			if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" {
				time.Sleep(delay)
			}
			return nil, nil
		}
	})
}

// putUnder writes objects from..to-1 of size bytes under prefix.
func (cl *cluster) putUnder(prefix string, from, to, size int) {
	for i := from; i < to; i++ {
		cl.srv.PutObject(cl.t, "lake", fmt.Sprintf("%sday=%d/part-0.bin", prefix, i), bytes.Repeat([]byte{byte(i), 7, 9}, size/3))
	}
}

// currentGeneration is the generation node's copy of ds publishes, and its files.
func (cl *cluster) currentGeneration(ds *datav1alpha1.Dataset, node string) (int64, int64) {
	var cur datav1alpha1.Dataset
	if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(ds), &cur); err != nil {
		cl.t.Fatal(err)
	}
	kept, g, err := generations.List(filepath.Join(cl.roots[node], ds.Namespace, ds.Name+"-"+string(cur.UID)))
	if err != nil {
		return 0, 0
	}
	for _, k := range kept {
		if k.Generation == g {
			return g, k.Files
		}
	}
	return g, 0
}

// lastSync is the last sync of node's copy of ds, as its DatasetReplica reports it.
func (cl *cluster) lastSync(ds *datav1alpha1.Dataset, node string) *datav1alpha1.SyncResult {
	var reps datav1alpha1.DatasetReplicaList
	if err := cl.c.List(cl.ctx, &reps, client.InNamespace(ds.Namespace)); err != nil {
		cl.t.Fatal(err)
	}
	for _, r := range reps.Items {
		if r.Spec.DatasetName == ds.Name && r.Spec.NodeName == node {
			return r.Status.LastSync
		}
	}
	return nil
}

// TestABigDatasetDoesNotStarveASmallOne: a Dataset that asks for many GETs at once, on a node with
// few, does not hold them for its whole sync: a second Dataset that comes while the first copies gets
// its share as GETs end, and publishes long before the first is done. (Before slots were taken per
// GET, the first held the whole budget from its listing to its end, and the second waited for it.)
func TestABigDatasetDoesNotStarveASmallOne(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	const bigFiles = 60
	cl.putUnder("big/", 0, bigFiles, 1<<15)
	cl.putUnder("small/", 0, 2, 1<<15)
	cl.budget = 2
	cl.bucketHTTP = slowGets(100 * time.Millisecond)
	cl.addNode("node-a")
	big := cl.dataset("big", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "big/"; ds.Spec.Sync.Parallelism = 64 })
	cl.waitFor("the big Dataset copies", 30*time.Second, func() (bool, string) {
		var cur datav1alpha1.Dataset
		if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(big), &cur); err != nil {
			return false, err.Error()
		}
		_, err := os.Stat(filepath.Join(cl.roots["node-a"], "default", "big-"+string(cur.UID), "day=0", "part-0.bin"))
		return err == nil, fmt.Sprint(err)
	})
	start := time.Now()
	small := cl.dataset("small", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "small/"; ds.Spec.Sync.Parallelism = 1 })
	cl.waitFor("the small Dataset publishes", time.Minute, func() (bool, string) {
		g, _ := cl.currentGeneration(small, "node-a")
		return g == 1, fmt.Sprintf("generation %d", g)
	})
	t.Logf("the small Dataset published %s after it was created, while the big one copied", time.Since(start).Round(time.Millisecond))
	if g, _ := cl.currentGeneration(big, "node-a"); g != 0 {
		t.Fatalf("the big Dataset published generation %d before the small one did: the small one waited for the big one's whole sync", g)
	}
	cl.waitFor("the big Dataset publishes all its files", 2*time.Minute, func() (bool, string) {
		g, files := cl.currentGeneration(big, "node-a")
		return g == 1 && files == bigFiles, fmt.Sprintf("generation %d, %d files", g, files)
	})
}

// TestADatasetOverItsByteCapKeepsItsCopy: a Dataset whose data grows past spec.replicas.maxBytes
// fails with OverByteCap and keeps its last published generation whole, while another Dataset on the
// same agent goes on refreshing.
func TestADatasetOverItsByteCapKeepsItsCopy(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	cl.putUnder("capped/", 0, 4, 1<<16)
	cl.putUnder("sales/", 0, 1, 1<<16)
	cl.addNode("node-a")
	capped := cl.dataset("capped", 1, func(ds *datav1alpha1.Dataset) {
		ds.Spec.Source.S3.Prefix = "capped/"
		ds.Spec.Replicas.MaxBytes = ptr.To(resource.MustParse("300Ki"))
	})
	other := cl.dataset("other", 1)
	cl.waitFor("both Datasets publish generation 1", time.Minute, func() (bool, string) {
		a, _ := cl.currentGeneration(capped, "node-a")
		b, _ := cl.currentGeneration(other, "node-a")
		return a == 1 && b == 1, fmt.Sprintf("capped %d, other %d", a, b)
	})
	before := cl.bytes.Load()
	cl.putUnder("capped/", 4, 10, 1<<16) // 6 more of 64 KiB: over 300Ki
	requestSync(cl, capped, "grown")
	cl.waitFor("the capped Dataset's copy fails with OverByteCap", time.Minute, func() (bool, string) {
		ls := cl.lastSync(capped, "node-a")
		return ls != nil && ls.Reason == wire.ReasonOverByteCap, fmt.Sprintf("%+v", ls)
	})
	if ls := cl.lastSync(capped, "node-a"); !strings.Contains(ls.Message, "maxBytes") {
		t.Errorf("the message does not say which cap: %q", ls.Message)
	}
	if g, files := cl.currentGeneration(capped, "node-a"); g != 1 || files != 4 {
		t.Errorf("the capped copy publishes generation %d with %d files, want its last good one: 1 with 4", g, files)
	}
	// Copies start only while the generation fits: with the 4 files it keeps, the first new one
	// (320 KiB in all) is already over, so no file is fetched; the listings are a few KiB.
	if sent := cl.bytes.Load() - before; sent > 1<<16 {
		t.Errorf("the bucket sent %d bytes for a sync over its cap, want no file", sent)
	}
	cl.srv.PutObject(t, "lake", "sales/day=9/part-0.bin", []byte("PAR1 more"))
	requestSync(cl, other, "more")
	cl.waitFor("the other Dataset publishes generation 2", time.Minute, func() (bool, string) {
		g, files := cl.currentGeneration(other, "node-a")
		return g == 2 && files == 2, fmt.Sprintf("generation %d, %d files", g, files)
	})
}

// TestTheNodeReserveIsHonoured: a copy that would leave less free space on the cache root than the
// agent's node reserve fails with NodeReserve before it takes it; a Dataset that fits syncs on the
// same node.
func TestTheNodeReserveIsHonoured(t *testing.T) {
	disk := testfiles.SmallDisk(t, "8m")
	const reserve = 6 << 20
	cl := startCluster(t, nil)
	cl.startS3()
	cl.putUnder("big/", 0, 4, 1<<20)
	cl.putUnder("tiny/", 0, 1, 1<<16)
	cl.reserve = reserve
	cl.addNodeAt("node-a", disk)
	big := cl.dataset("big", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "big/" })
	tiny := cl.dataset("tiny", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "tiny/" })
	cl.waitFor("the tiny Dataset publishes", time.Minute, func() (bool, string) {
		g, _ := cl.currentGeneration(tiny, "node-a")
		return g == 1, fmt.Sprintf("generation %d", g)
	})
	cl.waitFor("the big Dataset's copy fails with NodeReserve", time.Minute, func() (bool, string) {
		ls := cl.lastSync(big, "node-a")
		return ls != nil && ls.Reason == wire.ReasonNodeReserve, fmt.Sprintf("%+v", ls)
	})
	if g, _ := cl.currentGeneration(big, "node-a"); g != 0 {
		t.Errorf("the big copy published generation %d", g)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	// The manifests and staging directories take some room beside the files: a few pages each.
	if free := int64(st.Bavail) * st.Bsize; free < reserve-(256<<10) {
		t.Errorf("%d bytes free on the cache root, want at least the reserve (%d) but for the manifests", free, reserve)
	}
}
