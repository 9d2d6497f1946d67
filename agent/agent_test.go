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
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/peer"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/notify"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/eventhub"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/manager"
	"github.com/pqcache/pqcache/test/s3test"
	"github.com/pqcache/pqcache/test/testfiles"
)

var peerKey = peer.Key{ID: "agents", Secret: "agents-secret"}

// cluster is a real kube-apiserver (envtest) with the operator's controllers, a real S3 server
// behind a proxy that counts the bytes it sends, and node agents run in this process, each with its
// own cache root and peer endpoint on 127.0.0.1, as each node's DaemonSet pod would.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	cfg    *rest.Config
	scheme *runtime.Scheme
	c      client.Client
	srv    *s3test.Server
	bytes  atomic.Int64 // body bytes the bucket sent
	bucket string       // the counting proxy's URL
	roots  map[string]string
	hub    *eventhub.Hub
	// peerDelay slows every object request to the peers, in nanoseconds (0: none).
	peerDelay atomic.Int64
	// bucketHTTP, when set, is every agent's client to the bucket.
	bucketHTTP aws.HTTPClient
	// budget, when set, is every agent's number of GET slots (default 8); reserve its node reserve.
	budget  int
	reserve int64
	// trickleSlow makes the bucket send the bodies of objects under slow/ at 40 KiB/s; trickled counts
	// what it sent so.
	trickleSlow atomic.Bool
	trickled    atomic.Int64
	// deadline is every agent's sync deadline (zero: the defaults).
	deadline cache.Deadline
	// secure, when set, runs the agents as the DaemonSet does between peers: TLS and their pods' own
	// tokens (peer_tls_test.go); otherwise they sign with peerKey over plain HTTP.
	secure *security
	// peerForge, when set, wraps every agent's peer server: a forging peer (forging_peer_test.go).
	peerForge atomic.Pointer[func(http.Handler) http.Handler]
	// ambient is every agent's AmbientNamespaces.
	ambient []string
	// datasetWatchLag, when set, delays what every agent's watch of Datasets receives
	// (late_dataset_test.go).
	datasetWatchLag time.Duration
}

// startCluster starts the control plane and the operator; with debounce, also the event hub (its
// webhook on 127.0.0.1) that S3 event notifications reach the operator through.
func startCluster(t *testing.T, debounce *notify.DebounceConfig) *cluster {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "bin", "k8s", "1.37.2-linux-amd64")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest (make envtest builds it): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{t: t, ctx: ctx, cfg: cfg, scheme: scheme, c: c, roots: map[string]string{}}
	// The proxy finds the S3 server when a request comes: with event notifications, the server starts
	// after the Dataset it notifies about exists.
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target, _ := url.Parse(cl.srv.Endpoint)
		if cl.trickleSlow.Load() && strings.Contains(r.URL.Path, "/slow/") && !r.URL.Query().Has("list-type") {
			w = &trickleWriter{ResponseWriter: w, ctx: r.Context(), n: &cl.trickled}
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(&countingWriter{ResponseWriter: w, n: &cl.bytes}, r)
	}))
	t.Cleanup(counting.Close)
	cl.bucket = counting.URL

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: jobs.CacheOptions(nil),
		// Each test runs the operator's controllers again in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	opts := manager.Options{Worker: jobs.DefaultWorkerOptions()}
	if debounce != nil {
		// versitygw posts its events with the token in the query string.
		cl.hub = eventhub.New(eventhub.Options{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Scheme: scheme, BindAddress: "127.0.0.1:0",
			QueryToken: true, Debounce: *debounce, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "events")})
		if err := mgr.Add(cl.hub); err != nil {
			t.Fatal(err)
		}
		opts.Events = cl.hub
	}
	if err := manager.SetupAll(mgr, opts); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	return cl
}

// startS3 starts the S3 server with args and creates the bucket.
func (cl *cluster) startS3(args ...string) {
	cl.srv = s3test.StartWithArgs(cl.t, args...)
	cl.srv.CreateBucket(cl.t, "lake")
}

// addNode creates a Ready node and starts its agent; stop ends the agent (its node stays).
func (cl *cluster) addNode(name string) (stop func()) {
	return cl.addNodeAt(name, filepath.Join(cl.t.TempDir(), name))
}

// addNodeAt is addNode with the agent's cache root at root.
func (cl *cluster) addNodeAt(name, root string) (stop func()) {
	t := cl.t
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pqcache.dev/cache": "true"}}}
	if err := cl.c.Create(cl.ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := cl.c.Status().Update(cl.ctx, n); err != nil {
		t.Fatal(err)
	}
	cl.roots[name] = root
	return cl.startAgent(name, root)
}

func (cl *cluster) startAgent(node, root string) (stop func()) {
	t := cl.t
	copies, err := agent.OpenCopies(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cl.agentConfig(), ctrl.Options{Scheme: cl.scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: agent.CacheOptions(node)})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", node)
	srv := &peer.Server{Auth: peerKey, Roots: copies.Lookup, Log: log}
	ps := agent.PeerServer{Listener: l}
	endpoint, auth := "http://"+l.Addr().String(), peer.ClientAuth(peerKey)
	if cl.secure != nil {
		endpoint, auth = cl.secure.agent(cl, node, mgr, srv, &ps, log)
	}
	a := &agent.Agent{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: node, Endpoint: endpoint, PeerAuth: auth,
		Copies: copies, Budget: agent.NewBudget(cmp.Or(cl.budget, 8)), Reserve: cl.reserve, Log: log, PruneEvery: time.Second, Deadline: cl.deadline,
		AmbientNamespaces: cl.ambient}
	if cl.bucketHTTP != nil {
		a.BucketHTTP = cl.bucketHTTP
	}
	if err := a.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := cl.peerDelay.Load(); d > 0 && r.URL.Query().Get("list-type") == "" {
			time.Sleep(time.Duration(d))
		}
		if f := cl.peerForge.Load(); f != nil {
			(*f)(srv).ServeHTTP(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	})
	ps.Server = slow
	if err := mgr.Add(ps); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(cl.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			copies.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// put writes an object of n bytes into the bucket.
func (cl *cluster) put(key string, n int, seed byte) {
	cl.srv.PutObject(cl.t, "lake", "sales/"+key, bytes.Repeat([]byte{seed, seed + 1, seed + 2}, n/3))
}

func (cl *cluster) dataset(name string, minReady int32, mutate ...func(*datav1alpha1.Dataset)) *datav1alpha1.Dataset {
	t := cl.t
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-creds"}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": s3test.AccessKey, "AWS_SECRET_ACCESS_KEY": s3test.SecretKey}}
	if err := cl.c.Create(cl.ctx, sec); err != nil {
		t.Fatal(err)
	}
	ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: datav1alpha1.DatasetSpec{
		Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: "sales/", Region: s3test.Region, Endpoint: cl.bucket, ForcePathStyle: true,
			Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: sec.Name}}}},
		Replicas: &datav1alpha1.ReplicaPolicy{NodeSelector: map[string]string{"pqcache.dev/cache": "true"}, MinReady: minReady},
	}}
	for _, m := range mutate {
		m(ds)
	}
	if err := cl.c.Create(cl.ctx, ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

// waitFor polls cond until it holds, or fails the test with what it last said.
func (cl *cluster) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	cl.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(100 * time.Millisecond)
	}
	cl.t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
}

// copiesAt says whether every node in nodes publishes generation g of ds, with the same files.
func (cl *cluster) copiesAt(ds *datav1alpha1.Dataset, g int64, nodes ...string) (bool, string) {
	var cur datav1alpha1.Dataset
	if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(ds), &cur); err != nil {
		return false, err.Error()
	}
	for _, n := range nodes {
		dir := filepath.Join(cl.roots[n], ds.Namespace, ds.Name+"-"+string(cur.UID))
		_, c, err := generations.List(dir)
		if err != nil || c != g {
			return false, fmt.Sprintf("node %s publishes generation %d (%v); status %+v", n, c, err, cur.Status.Replicas)
		}
	}
	return true, ""
}

func readyCondition(cl *cluster, ds *datav1alpha1.Dataset) (*metav1.Condition, *datav1alpha1.ReplicasStatus) {
	var cur datav1alpha1.Dataset
	if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(ds), &cur); err != nil {
		return nil, nil
	}
	return meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionReady), cur.Status.Replicas
}

// TestAgentsKeepACopyOnEveryNode: three agents keep a Dataset's copies; the bucket sends the data
// once; a change reaches every node; a stopped agent's node lags while the Dataset stays Ready at
// minReady 2, and catches up when it returns; copies no DatasetReplica asks for are removed.
func TestAgentsKeepACopyOnEveryNode(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	for i := range 6 {
		cl.put(fmt.Sprintf("day=%d/part-0.bin", i), 1<<20, byte(i))
	}
	dataBytes := int64(6 * (1 << 20) / 3 * 3)
	cl.addNode("node-a")
	stopB := cl.addNode("node-b")
	cl.addNode("node-c")
	ds := cl.dataset("sales", 2)

	cl.waitFor("every node holds generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a", "node-b", "node-c") })
	cl.waitFor("the Dataset is Ready with 3 of 3 copies", 30*time.Second, func() (bool, string) {
		c, st := readyCondition(cl, ds)
		return c != nil && c.Status == metav1.ConditionTrue && st.ReadyOfDesired == "3/3", fmt.Sprintf("%+v %+v", c, st)
	})
	if sent := cl.bytes.Load(); sent < dataBytes || sent > dataBytes+dataBytes/10 {
		t.Errorf("the bucket sent %d bytes to fill 3 nodes; want the data set once (%d) plus listings", sent, dataBytes)
	}

	By := func(s string) { t.Log(s) }
	By("a stopped agent's node lags; the Dataset stays Ready with minReady 2")
	stopB()
	cl.put("day=6/part-0.bin", 1<<20, 60)
	requestSync(cl, ds, "one")
	cl.waitFor("nodes a and c hold generation 2", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 2, "node-a", "node-c") })
	if ok, _ := cl.copiesAt(ds, 2, "node-b"); ok {
		t.Fatal("node b moved on without its agent")
	}
	cl.waitFor("the Dataset is Ready at generation 2 with 2 copies", 30*time.Second, func() (bool, string) {
		c, st := readyCondition(cl, ds)
		return c != nil && c.Status == metav1.ConditionTrue && st.Generation == 2, fmt.Sprintf("%+v %+v", c, st)
	})

	By("the agent comes back and catches up")
	cl.startAgent("node-b", cl.roots["node-b"])
	cl.waitFor("node b holds generation 2", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 2, "node-b") })

	By("two agents never write one directory")
	if _, err := agent.OpenCopies(cl.roots["node-a"]); err == nil || !strings.Contains(err.Error(), "another agent") {
		t.Errorf("a second agent on node a's cache root: %v", err)
	}

	By("a copy no DatasetReplica asks for is removed")
	var reps datav1alpha1.DatasetReplicaList
	if err := cl.c.List(cl.ctx, &reps); err != nil {
		t.Fatal(err)
	}
	var cur datav1alpha1.Dataset
	if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(ds), &cur); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Delete(cl.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	for i := range reps.Items { // envtest runs no garbage collector: do what it does for owned objects
		_ = cl.c.Delete(cl.ctx, &reps.Items[i])
	}
	cl.waitFor("every node's copy is gone", 30*time.Second, func() (bool, string) {
		for n, root := range cl.roots {
			if _, err := os.Stat(filepath.Join(root, "default", "sales-"+string(cur.UID))); err == nil {
				return false, n + " still has its copy"
			}
		}
		return true, ""
	})
}

// requestSync sets a new manual token.
func requestSync(cl *cluster, ds *datav1alpha1.Dataset, token string) {
	cl.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"refresh":{"manual":%q}}}`, token)
	if err := cl.c.Patch(cl.ctx, ds, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		cl.t.Fatal(err)
	}
}

// countingWriter counts the body bytes of a response.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// TestAPutReachesEveryCopy: a PUT's notification goes from the S3 server to the operator's webhook,
// which asks the seed's agent for a sync (no Job); the followers copy the generation it publishes.
// Every PUT must reach every node; the lag from the PUT to the file in the current generation of all
// three copies is logged, at about 1 and 20 PUTs per second (docs/benchmarks.md quotes it).
func TestAPutReachesEveryCopy(t *testing.T) {
	// The hub's own defaults (2s, 10s): a Dataset with spec.replicas batches by its own (200ms, 1s).
	cl := startCluster(t, &notify.DebounceConfig{})
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		cl.addNode(n)
	}
	const token = "webhook-token-for-tests"
	if err := cl.c.Create(cl.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hook"},
		StringData: map[string]string{dataset.EventTokenKey: token}}); err != nil {
		t.Fatal(err)
	}
	ds := cl.dataset("stream", 3, func(ds *datav1alpha1.Dataset) {
		ds.Spec.Refresh = datav1alpha1.RefreshPolicy{OnCreate: ptr.To(false), Events: &datav1alpha1.EventSource{
			Webhook: &datav1alpha1.WebhookEventSource{TokenSecretRef: &datav1alpha1.SecretReference{Name: "hook"}}}}
	})
	cl.waitFor("the event hub listens", 30*time.Second, func() (bool, string) { return cl.hub.Addr() != "", "" })
	time.Sleep(time.Second) // the Dataset's source is registered on its first reconcile
	cl.startS3("--event-webhook-url", "http://"+cl.hub.Addr()+"/events/default/stream?token="+token)
	cl.put("day=0/part-0.bin", 1<<16, 1)
	requestSync(cl, ds, "first")
	cl.waitFor("every node holds generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a", "node-b", "node-c") })

	for _, rate := range []int{1, 20} {
		var (
			mu   sync.Mutex
			lags []time.Duration
		)
		n := 10 * max(rate/5, 1)
		for i := range n {
			key := fmt.Sprintf("rate=%d/part-%d.bin", rate, i)
			start := time.Now()
			cl.put(key, 1<<12, byte(i))
			go func() {
				lag, ok := cl.waitEverywhere(ds, key, start)
				if !ok {
					t.Errorf("%s never reached every node", key)
				}
				mu.Lock()
				lags = append(lags, lag)
				mu.Unlock()
			}()
			time.Sleep(time.Second / time.Duration(rate))
		}
		cl.waitFor(fmt.Sprintf("all %d PUTs at %d/s reach every node", n, rate), time.Minute, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return len(lags) == n, fmt.Sprintf("%d of %d", len(lags), n)
		})
		slices.Sort(lags)
		t.Logf("%d PUTs at %d/s: from the PUT to the file on all 3 nodes: p50 %s, p99 %s, max %s", n, rate,
			lags[len(lags)/2].Round(time.Millisecond), lags[(len(lags)*99)/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	}
}

// waitEverywhere waits, up to a minute, until key is in the current generation of ds on every node,
// and returns how long after start that was; ok is false if it never was.
func (cl *cluster) waitEverywhere(ds *datav1alpha1.Dataset, key string, start time.Time) (lag time.Duration, ok bool) {
	var cur datav1alpha1.Dataset
	for cl.c.Get(cl.ctx, client.ObjectKeyFromObject(ds), &cur) != nil {
		time.Sleep(10 * time.Millisecond)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		all := true
		for _, root := range cl.roots {
			p := filepath.Join(root, ds.Namespace, ds.Name+"-"+string(cur.UID), filepath.FromSlash(generations.Dir), "current", filepath.FromSlash(key))
			if _, err := os.Stat(p); err != nil {
				all = false
				break
			}
		}
		if all {
			return time.Since(start), true
		}
	}
	return time.Minute, false
}

// TestAFullCacheRootMarksOnlyItsCopy: a node whose cache root cannot hold the data reports its copy
// InsufficientCapacity; the other copies are Ready, and so is the Dataset at minReady 2.
func TestAFullCacheRootMarksOnlyItsCopy(t *testing.T) {
	small := testfiles.SmallDisk(t, "1m")
	cl := startCluster(t, nil)
	cl.startS3()
	for i := range 4 {
		cl.put(fmt.Sprintf("day=%d/part-0.bin", i), 1<<20, byte(i))
	}
	cl.addNode("node-a")
	cl.addNode("node-b")
	cl.addNodeAt("node-c", small)
	ds := cl.dataset("sales", 2)
	cl.waitFor("nodes a and b hold generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a", "node-b") })
	cl.waitFor("node c's copy reports InsufficientCapacity, the Dataset is Ready", 30*time.Second, func() (bool, string) {
		c, st := readyCondition(cl, ds)
		if c == nil || st == nil || c.Status != metav1.ConditionTrue || st.ReadyOfDesired != "2/3" {
			return false, fmt.Sprintf("%+v %+v", c, st)
		}
		for _, n := range st.Nodes {
			if n.Node == "node-c" {
				return n.Reason == wire.ReasonInsufficientCapacity, fmt.Sprintf("%+v", n)
			}
		}
		return false, "no line for node-c"
	})
}

// TestAnAgentStoppedMidCopyLosesNothing: an agent stopped while it copies a generation from a peer
// (its pod killed, its node lost) publishes nothing partial, and the other copies carry on untouched;
// restarted, it resumes with what it had verified and publishes the generation whole.
func TestAnAgentStoppedMidCopyLosesNothing(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	const files = 8
	for i := range files {
		cl.put(fmt.Sprintf("day=%d/part-0.bin", i), 1<<18, byte(i))
	}
	cl.addNode("node-a")
	ds := cl.dataset("sales", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Parallelism = 1 })
	cl.waitFor("the seed holds generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a") })

	cl.peerDelay.Store(int64(300 * time.Millisecond)) // one file at a time, 300 ms each
	stopB := cl.addNode("node-b")
	cl.addNode("node-c")
	dirB := ""
	cl.waitFor("node b has copied some files", 30*time.Second, func() (bool, string) {
		var cur datav1alpha1.Dataset
		if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(ds), &cur); err != nil {
			return false, err.Error()
		}
		dirB = filepath.Join(cl.roots["node-b"], ds.Namespace, ds.Name+"-"+string(cur.UID))
		n := 0
		for i := range files {
			if _, err := os.Stat(filepath.Join(dirB, fmt.Sprintf("day=%d", i), "part-0.bin")); err == nil {
				n++
			}
		}
		return n >= 2 && n < files, fmt.Sprintf("%d files", n)
	})
	stopB()
	if _, cur, err := generations.List(dirB); err != nil || cur != 0 {
		t.Fatalf("node b, stopped mid-copy, publishes generation %d (%v): a partial generation", cur, err)
	}
	cl.peerDelay.Store(0)
	cl.waitFor("node c holds generation 1 regardless", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a", "node-c") })

	cl.startAgent("node-b", cl.roots["node-b"])
	cl.waitFor("node b, restarted, holds generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-b") })
	var rep datav1alpha1.DatasetReplicaList
	if err := cl.c.List(cl.ctx, &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Items {
		if r.Spec.NodeName == "node-b" && (r.Status.LastSync == nil || r.Status.LastSync.FilesCopied >= files) {
			t.Errorf("node b's resumed copy copied %+v files again, want only those it had not verified", r.Status.LastSync)
		}
	}
}

// panickyBucketClient is a bucket client whose transport panics on every listing of the prefix
// boom/ (in its proxy function, which runs in the caller's goroutine): a bug that one Dataset's
// source reaches and no other's.
func panickyBucketClient() aws.HTTPClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.Proxy = func(r *http.Request) (*url.URL, error) {
			if strings.Contains(r.URL.RawQuery, "prefix=boom") {
				panic("a bug that only boom/ reaches")
			}
			return nil, nil
		}
	})
}

// TestAPanicInOneSyncMarksOnlyItsCopy: a panic while syncing one Dataset is recovered, reported on
// that Dataset's copy as Panicked and counted; the agent lives on and the other Dataset syncs.
func TestAPanicInOneSyncMarksOnlyItsCopy(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	cl.put("day=0/part-0.bin", 1<<16, 1)
	cl.srv.PutObject(t, "lake", "boom/day=0/part-0.bin", []byte("boom"))
	cl.bucketHTTP = panickyBucketClient()
	cl.addNode("node-a")
	boom := cl.dataset("boom", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "boom/" })
	calm := cl.dataset("calm", 1)
	cl.waitFor("the calm Dataset's copy is published", time.Minute, func() (bool, string) { return cl.copiesAt(calm, 1, "node-a") })
	cl.waitFor("the boom Dataset's copy reports Panicked", 30*time.Second, func() (bool, string) {
		_, st := readyCondition(cl, boom)
		if st == nil || len(st.Nodes) == 0 {
			return false, fmt.Sprintf("%+v", st)
		}
		return st.Nodes[0].Reason == wire.ReasonPanicked, fmt.Sprintf("%+v", st.Nodes[0])
	})
	if n := panicsCounted(t, "boom"); n < 1 {
		t.Errorf("pqcache_agent_sync_panics_total{dataset=boom} = %v, want at least 1", n)
	}
	// The panic's message carries its stack, longer than an Event's note may be: the operator cuts the
	// note, else the API server refuses the Event and the user never sees it.
	cl.waitFor("an Event says boom's seed failed with Panicked", 30*time.Second, func() (bool, string) {
		var evs eventsv1.EventList
		if err := cl.c.List(cl.ctx, &evs, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "boom" && e.Reason == datav1alpha1.EventSyncFailed {
				return strings.Contains(e.Note, wire.ReasonPanicked), e.Note
			}
		}
		return false, fmt.Sprintf("no SyncFailed Event about boom among %d", len(evs.Items))
	})
}

// panicsCounted is the agent's panic counter for the Dataset named name.
func panicsCounted(t *testing.T, name string) float64 {
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pqcache_agent_sync_panics_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "dataset" && l.GetValue() == name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// trickleWriter writes 4 KiB every 100 ms, and counts it.
type trickleWriter struct {
	http.ResponseWriter
	ctx context.Context
	n   *atomic.Int64
}

func (t *trickleWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.ctx.Done():
			return written, t.ctx.Err()
		}
		n, err := t.ResponseWriter.Write(p[:min(len(p), 4<<10)])
		written += n
		t.n.Add(int64(n))
		if err != nil {
			return written, err
		}
		if f, ok := t.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		p = p[n:]
	}
	return written, nil
}

// TestASlowBucketGivesBackItsSlots: a Dataset whose bucket trickles its objects (1 MiB at 40 KiB/s,
// 25 s) holds every transfer slot of the node (its parallelism is the whole budget) only until its
// sync's deadline (1 s here): it then fails with SyncDeadlineExceeded, gives the slots back, and
// another Dataset on the node, waiting for them, syncs.
func TestASlowBucketGivesBackItsSlots(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	cl.put("day=0/part-0.bin", 1<<16, 1)
	cl.srv.PutObject(t, "lake", "slow/day=0/part-0.bin", bytes.Repeat([]byte("slow"), 1<<18))
	cl.trickleSlow.Store(true)
	cl.deadline = cache.Deadline{TransferFloor: time.Second, MinBytesPerSecond: 1 << 20}
	cl.addNode("node-a")
	slow := cl.dataset("slow", 1, func(ds *datav1alpha1.Dataset) {
		ds.Spec.Source.S3.Prefix = "slow/"
		ds.Spec.Sync.Parallelism = 8
	})
	cl.waitFor("the slow Dataset's copy has started", 30*time.Second, func() (bool, string) {
		return cl.trickled.Load() > 0, "no byte trickled yet"
	})
	calm := cl.dataset("calm", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Parallelism = 8 })
	cl.waitFor("the calm Dataset's copy is published", 15*time.Second, func() (bool, string) { return cl.copiesAt(calm, 1, "node-a") })
	cl.waitFor("the slow Dataset's copy reports SyncDeadlineExceeded", 15*time.Second, func() (bool, string) {
		_, st := readyCondition(cl, slow)
		if st == nil || len(st.Nodes) == 0 {
			return false, fmt.Sprintf("%+v", st)
		}
		return st.Nodes[0].Reason == wire.ReasonSyncDeadlineExceeded, fmt.Sprintf("%+v", st.Nodes[0])
	})
}
