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

package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/manager"
	"github.com/pqcache/pqcache/internal/plugin"
	"github.com/pqcache/pqcache/test/s3test"
)

// cluster is a real API server with the real controllers, a real versitygw, and this test in the
// kubelet's and the Job controller's place (kubelet.go): sync Jobs run the real worker.
type cluster struct {
	t          *testing.T
	ctx        context.Context
	c          client.Client
	ns         string
	kubeconfig string
	srv        *s3test.Server
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin", "k8s", "1.37.2-linux-amd64")
	}
	te := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("starting envtest (run `make envtest`): %v", err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: jobs.CacheOptions(nil),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := manager.SetupAll(mgr, manager.Options{Worker: jobs.DefaultWorkerOptions()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	user, err := te.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	k := &cluster{t: t, ctx: ctx, c: c, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), srv: s3test.Start(t)}
	if err := os.WriteFile(k.kubeconfig, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	k.ns = ns.Name
	k.srv.CreateBucket(t, "lake")
	stopped := make(chan struct{})
	go func() { defer close(stopped); newKubelet(k).run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return k
}

// kubectl runs `kubectl pqcache args...` against the cluster, in its namespace unless args say -A.
func (k *cluster) kubectl(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := plugin.NewCommand(plugin.Streams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", k.kubeconfig, "-n", k.ns}, args...))
	err = cmd.ExecuteContext(k.ctx)
	return out.String(), errOut.String(), err
}

// dataset creates a Dataset of the bucket's prefix whose credentials are the Secret secret (with
// the keys given), refreshed daily.
func (k *cluster) dataset(name, prefix, accessKey, secretKey string) *datav1alpha1.Dataset {
	k.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name + "-creds"},
		StringData: map[string]string{wire.EnvAccessKeyID: accessKey, wire.EnvSecretAccessKey: secretKey}}
	if err := k.c.Create(k.ctx, secret); err != nil {
		k.t.Fatal(err)
	}
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: prefix, Region: s3test.Region, Endpoint: k.srv.Endpoint, ForcePathStyle: true,
				Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: secret.Name}}}},
			Volume:  datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
			Refresh: datav1alpha1.RefreshPolicy{Schedule: "@daily"},
		},
	}
	if err := k.c.Create(k.ctx, ds); err != nil {
		k.t.Fatal(err)
	}
	return ds
}

// eventually retries check until it passes or timeout ends (a bounded loop).
func (k *cluster) eventually(what string, timeout time.Duration, check func() error) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready waits for the Dataset's Ready condition to be True.
func (k *cluster) ready(ds *datav1alpha1.Dataset) {
	k.t.Helper()
	k.eventually(ds.Name+" Ready", time.Minute, func() error {
		var got datav1alpha1.Dataset
		if err := k.c.Get(k.ctx, client.ObjectKeyFromObject(ds), &got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, datav1alpha1.ConditionReady) {
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		return nil
	})
}

// humanSize is a size as kubectl writes capacities.
var humanSize = regexp.MustCompile(`^[0-9]+(\.[0-9])?(B|Ki|Mi|Gi)$`)

// parquetFile is a real Parquet file of rows rows (the worker checks what it copies).
func parquetFile(t *testing.T, rows int) []byte {
	t.Helper()
	type row struct {
		ID   int64  `parquet:"id"`
		Name string `parquet:"name"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	for i := range rows {
		if _, err := w.Write([]row{{ID: int64(i), Name: fmt.Sprint("name-", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestStatusShowsDatasetsAndTheirFreshness(t *testing.T) {
	k := startCluster(t)
	nov, dec := parquetFile(t, 50000), parquetFile(t, 10)
	k.srv.PutObject(t, "lake", "sales/2026/11.parquet", nov)
	k.srv.PutObject(t, "lake", "sales/2026/12.parquet", dec)
	ds := k.dataset("sales", "sales/", s3test.AccessKey, s3test.SecretKey)
	k.ready(ds)

	out, _, err := k.kubectl("status")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	// One row for the Dataset: ready, two files, their size, synced seconds ago, one generation.
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "sales ") {
			row = line
		}
	}
	fields := strings.Fields(row)
	if len(fields) < 9 || fields[1] != "True" || fields[2] != "2" || !humanSize.MatchString(fields[3]) || !strings.HasSuffix(fields[4], "s") || fields[5] != "ago" {
		t.Fatalf("status row %q in:\n%s", row, out)
	}
	if !strings.Contains(row, "1 (current 1)") || !strings.Contains(out, "No BenchRuns.") {
		t.Errorf("generations or BenchRuns missing:\n%s", out)
	}

	// -A adds the namespace; -o json is the objects themselves.
	if out, _, err := k.kubectl("status", "-A"); err != nil || !strings.Contains(out, k.ns+"  ") || !strings.HasPrefix(out, "NAMESPACE") {
		t.Errorf("status -A: %v\n%s", err, out)
	}
	out, _, err = k.kubectl("status", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var objs struct {
		Datasets []datav1alpha1.Dataset `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs.Datasets) != 1 || objs.Datasets[0].Status.Manifest.Bytes != int64(len(nov)+len(dec)) {
		t.Errorf("status -o json: %v\n%s", err, out)
	}
	if _, _, err := k.kubectl("status", "-o", "wide"); err == nil || !strings.Contains(err.Error(), "json or yaml") {
		t.Errorf("-o wide: %v", err)
	}
	// A command about one object refuses -A rather than look in no namespace.
	for _, args := range [][]string{{"generations", "sales", "-A"}, {"results", "some-run", "-A"}} {
		if _, _, err := k.kubectl(args...); err == nil || !strings.Contains(err.Error(), "-n NAMESPACE") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestSyncWaitFollowsTheSyncToItsEnd(t *testing.T) {
	k := startCluster(t)
	k.srv.PutObject(t, "lake", "events/day=1/part-0.parquet", parquetFile(t, 100))
	ds := k.dataset("events", "events/", s3test.AccessKey, s3test.SecretKey)
	k.ready(ds)

	k.srv.PutObject(t, "lake", "events/day=2/part-0.parquet", parquetFile(t, 1000))
	out, progress, err := k.kubectl("sync", "events", "--wait", "--timeout", "2m")
	if err != nil {
		t.Fatalf("sync --wait: %v\nstdout:\n%s\nstderr:\n%s", err, out, progress)
	}
	if !strings.Contains(out, "sync requested (spec.refresh.manual: kubectl-pqcache-") || !strings.Contains(out, "synced in") || !strings.Contains(out, "1 copied (") || !strings.Contains(out, "), 0 deleted, 1 unchanged") {
		t.Errorf("sync --wait printed:\n%s", out)
	}
	// Progress goes to stderr, so that stdout stays the result a script reads.
	if !strings.Contains(progress, "waiting") || strings.Contains(out, "waiting") {
		t.Errorf("progress on stderr %q, stdout %q", progress, out)
	}
	var got datav1alpha1.Dataset
	if err := k.c.Get(k.ctx, client.ObjectKeyFromObject(ds), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Manifest.Files != 2 || got.Status.LastSync.Trigger != dataset.TriggerManual || got.Status.LastManualSync != got.Spec.Refresh.Manual {
		t.Errorf("after sync --wait: manifest %+v, last sync %+v", got.Status.Manifest, got.Status.LastSync)
	}

	// A sync that fails is the command's failure, with the reason.
	secret := &corev1.Secret{}
	if err := k.c.Get(k.ctx, client.ObjectKey{Namespace: k.ns, Name: "events-creds"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[wire.EnvSecretAccessKey] = []byte("not-the-secret")
	if err := k.c.Update(k.ctx, secret); err != nil {
		t.Fatal(err)
	}
	_, _, err = k.kubectl("sync", "events", "--wait", "--timeout", "2m")
	if err == nil || !strings.Contains(err.Error(), "InvalidCredentials") || !strings.Contains(err.Error(), "kubectl pqcache why events") {
		t.Errorf("a failed sync: %v", err)
	}

	if _, _, err := k.kubectl("sync", "absent"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("sync of a Dataset that does not exist: %v", err)
	}

	// A suspended Dataset starts no sync: the command says so at once and leaves the spec alone.
	if err := k.c.Get(k.ctx, client.ObjectKeyFromObject(ds), &got); err != nil {
		t.Fatal(err)
	}
	token := got.Spec.Refresh.Manual
	got.Spec.Refresh.Suspend = true
	if err := k.c.Update(k.ctx, &got); err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.kubectl("sync", "events", "--wait", "--timeout", "2m"); err == nil || !strings.Contains(err.Error(), "spec.refresh.suspend") {
		t.Errorf("sync of a suspended Dataset: %v", err)
	}
	if err := k.c.Get(k.ctx, client.ObjectKeyFromObject(ds), &got); err != nil || got.Spec.Refresh.Manual != token {
		t.Errorf("sync of a suspended Dataset changed spec.refresh.manual from %q to %q (%v)", token, got.Spec.Refresh.Manual, err)
	}
}

func TestWhyNamesTheReasonAndTheFix(t *testing.T) {
	k := startCluster(t)
	k.srv.PutObject(t, "lake", "orders/part-0.parquet", parquetFile(t, 10))
	ds := k.dataset("orders", "orders/", s3test.AccessKey, "wrong-secret")
	k.eventually("orders degraded", time.Minute, func() error {
		var got datav1alpha1.Dataset
		if err := k.c.Get(k.ctx, client.ObjectKeyFromObject(ds), &got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, datav1alpha1.ConditionDegraded); c == nil || c.Reason != wire.ReasonInvalidCredentials {
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		return nil
	})

	// An event of the namespace about something else stays out.
	other := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: "someone-else.1"}, Type: corev1.EventTypeWarning,
		Reason: "Unrelated", Message: "about another object", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: k.ns, Name: "someone-else"}}
	if err := k.c.Create(k.ctx, other); err != nil {
		t.Fatal(err)
	}

	out, _, err := k.kubectl("why", "orders")
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	if strings.Contains(out, "about another object") {
		t.Errorf("why shows an event about another object:\n%s", out)
	}
	for _, want := range []string{
		"Dataset " + k.ns + "/orders: Ready=False",
		"Degraded", "InvalidCredentials",
		"Last sync: Job ", // the failed Job, by name
		"exited 1",        // its pod
		"What to do: check the Secret's `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`", // docs/troubleshooting.md's fix
		"Recent events:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("why lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wrong-secret") {
		t.Errorf("why shows the secret:\n%s", out)
	}
	// kubectl's TYPE/NAME names the same Dataset.
	if typed, _, err := k.kubectl("why", "dataset/orders"); err != nil || !strings.Contains(typed, "Dataset "+k.ns+"/orders: Ready=False") {
		t.Errorf("why dataset/orders: %v\n%s", err, typed)
	}
	out, _, err = k.kubectl("why", "orders", "-o", "yaml")
	if err != nil || !strings.Contains(out, "advice:") || !strings.Contains(out, "reason: InvalidCredentials") {
		t.Errorf("why -o yaml: %v\n%s", err, out)
	}
}
