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

// Command datasets measures the Dataset controller at scale on envtest (a real kube-apiserver and
// etcd, no kubelet): it applies N Datasets, measures the time from each create to its sync Job, then
// idles and counts reconciles per second at steady state, and reports the process's memory. The
// manager runs in this process, so RSS covers the manager plus the benchmark's own client.
// -unrelated-jobs N first creates N Jobs that are not pqcache's (in another namespace), as a busy
// cluster has; -unfiltered runs the manager with an unfiltered Job cache, as before it kept only its
// own, to compare the two.
//
//	go run ./hack/bench/datasets -n 1000   (needs `make envtest`; KUBEBUILDER_ASSETS defaults to bin/k8s/...)
//	go run ./hack/bench/datasets -n 1000 -unrelated-jobs 10000 [-unfiltered]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/manager"
)

func main() {
	n := flag.Int("n", 1000, "Datasets to apply")
	idle := flag.Duration("idle", 30*time.Second, "steady-state window over which reconciles are counted")
	unrelated := flag.Int("unrelated-jobs", 0, "Jobs of other workloads to create first")
	unfiltered := flag.Bool("unfiltered", false, "cache every Job in the cluster, not only pqcache's")
	flag.Parse()
	if err := run(*n, *idle, *unrelated, *unfiltered); err != nil {
		fmt.Fprintln(os.Stderr, "datasets:", err)
		os.Exit(1)
	}
}

func run(n int, idle time.Duration, unrelated int, unfiltered bool) (err error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	cfg, stop, err := startEnv()
	if err != nil {
		return err
	}
	// A control plane left running would outlive the benchmark: say so in the exit status.
	defer func() { err = errors.Join(err, stop()) }()

	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	if err := createUnrelatedJobs(cfg, scheme, unrelated); err != nil {
		return err
	}
	runtime.GC()
	beforeManager := rss()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := startManager(ctx, cfg, scheme, unfiltered)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	watch, err := watchJobs(ctx, c)
	if err != nil {
		return err
	}

	start := time.Now()
	created, err := createDatasets(ctx, c, n)
	if err != nil {
		return err
	}
	r := result{n: n, unrelated: unrelated, unfiltered: unfiltered, beforeManager: beforeManager, applied: time.Since(start)}
	if err := watch.waitFor(n, 5*time.Minute); err != nil {
		return err
	}
	r.allJobs = time.Since(start)
	r.latencies = watch.latencies(created)
	r.perSec = steadyReconciles(idle)
	if err := oneMore(ctx, c, watch); err != nil {
		return err
	}
	r.print()
	return nil
}

// startEnv starts envtest's kube-apiserver and etcd with pqcache's CRDs, and returns how to stop them.
func startEnv() (*rest.Config, func() error, error) {
	root, _ := os.Getwd()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s", "1.37.2-linux-amd64")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, env.Stop, nil
}

// startManager runs pqcache's controllers in this process until ctx ends (with the Job cache
// filtered as the operator's, or not), and returns a client of the benchmark's own.
func startManager(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme, unfiltered bool) (client.WithWatch, error) {
	cacheOpts := jobs.CacheOptions(nil)
	if unfiltered {
		cacheOpts = crcache.Options{}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: cacheOpts})
	if err != nil {
		return nil, err
	}
	if err := manager.SetupAll(mgr, manager.Options{}); err != nil {
		return nil, err
	}
	go func() { _ = mgr.Start(ctx) }()
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// jobWatch is when the first Job of each Dataset appeared, seen by a watch on the namespace.
type jobWatch struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// watchJobs watches the Jobs in namespace bench until ctx ends, to see when each appears.
func watchJobs(ctx context.Context, c client.WithWatch) (*jobWatch, error) {
	w, err := c.Watch(ctx, &batchv1.JobList{}, client.InNamespace("bench"))
	if err != nil {
		return nil, err
	}
	watch := &jobWatch{seen: map[string]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			if j, ok := ev.Object.(*batchv1.Job); ok {
				watch.mu.Lock()
				if _, ok := watch.seen[j.Labels[jobs.LabelDataset]]; !ok {
					watch.seen[j.Labels[jobs.LabelDataset]] = time.Now()
				}
				watch.mu.Unlock()
			}
		}
	}()
	return watch, nil
}

// at is when the Job of Dataset name appeared, if it has.
func (j *jobWatch) at(name string) (time.Time, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	at, ok := j.seen[name]
	return at, ok
}

// waitFor waits until n Datasets have their Job, or fails after timeout.
func (j *jobWatch) waitFor(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		j.mu.Lock()
		got := len(j.seen)
		j.mu.Unlock()
		if got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d Jobs appeared", got, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// latencies are the times from each Dataset's create to its Job, shortest first.
func (j *jobWatch) latencies(created map[string]time.Time) []time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	var lat []time.Duration
	for name, at := range created {
		lat = append(lat, j.seen[name].Sub(at))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// createDatasets creates n Datasets with a daily refresh and returns when each was created.
func createDatasets(ctx context.Context, c client.Client, n int) (map[string]time.Time, error) {
	created := map[string]time.Time{}
	for i := range n {
		name := fmt.Sprintf("ds-%04d", i)
		ds := &datav1alpha1.Dataset{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
			Spec: datav1alpha1.DatasetSpec{
				Source:  datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics", Prefix: name + "/"}},
				Volume:  datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
				Refresh: datav1alpha1.RefreshPolicy{Schedule: "@daily"},
			},
		}
		created[name] = time.Now()
		if err := c.Create(ctx, ds); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// steadyReconciles is the dataset controller's reconciles per second over idle, once every Dataset
// has its Job running and nothing changes.
func steadyReconciles(idle time.Duration) float64 {
	time.Sleep(5 * time.Second)
	before := reconciles()
	time.Sleep(idle)
	return (reconciles() - before) / idle.Seconds()
}

// oneMore applies one more Dataset to the idle controller and prints how long its Job took to
// appear: the latency a person sees after kubectl apply.
func oneMore(ctx context.Context, c client.Client, jobs *jobWatch) error {
	single := time.Now()
	one := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "one-more"},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics", Prefix: "one/"}},
			Volume: datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
		},
	}
	if err := c.Create(ctx, one); err != nil {
		return err
	}
	for {
		if at, ok := jobs.at("one-more"); ok {
			fmt.Printf("idle controller: create→Job %s\n", at.Sub(single).Round(time.Millisecond))
			return nil
		}
		if time.Since(single) > time.Minute {
			return fmt.Errorf("no Job for one-more")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// result is what one run measured, printed as a Markdown table row.
type result struct {
	n, unrelated     int
	unfiltered       bool
	beforeManager    int64
	applied, allJobs time.Duration
	latencies        []time.Duration
	perSec           float64
}

// print prints the table, with the memory of the process as it is now.
func (r result) print() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	cache := "pqcache's Jobs only"
	if r.unfiltered {
		cache = "every Job"
	}
	lat := r.latencies
	fmt.Printf("| Datasets | unrelated Jobs | Job cache | apply all | all Jobs created | create→Job p50 | p90 | p99 | max | steady reconciles/s | RSS | RSS growth since the manager started | heap in use |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %.2f | %d MiB | %d MiB | %d MiB |\n", r.n, r.unrelated, cache,
		r.applied.Round(time.Millisecond), r.allJobs.Round(time.Millisecond),
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		r.perSec, rss()>>20, (rss()-r.beforeManager)>>20, ms.HeapInuse>>20)
}

// createUnrelatedJobs creates n Jobs of some other workload (suspended, so that nothing would run them
// on a real cluster either), 16 at a time, in namespace "others".
func createUnrelatedJobs(cfg *rest.Config, scheme *k8sruntime.Scheme, n int) error {
	if n == 0 {
		return nil
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "others"}}); err != nil {
		return err
	}
	start := time.Now()
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				j := &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Namespace: "others", Name: fmt.Sprintf("etl-%05d", i),
						Labels: map[string]string{"app": "etl", "team": "data"}, Annotations: map[string]string{"owner": "someone-else"}},
					Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "etl", Image: "example.test/etl:1.0", Args: []string{"--input", "s3://lake/raw", "--output", "s3://lake/curated"},
							Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}}},
					}}},
				}
				if err := c.Create(ctx, j); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("creating unrelated jobs: %w", err)
	default:
	}
	fmt.Fprintf(os.Stderr, "created %d unrelated Jobs in %s\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// reconciles reads controller-runtime's reconcile counter for the dataset controller.
func reconciles() float64 {
	families, _ := metrics.Registry.Gather()
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == "dataset" {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rss is this process's resident set size in bytes.
func rss() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &kb); err != nil {
				return 0 // no figure rather than a wrong one
			}
			return kb << 10
		}
	}
	return 0
}
