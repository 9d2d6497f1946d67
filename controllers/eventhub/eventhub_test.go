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

package eventhub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/notify"
	"github.com/pqcache/pqcache/controllers/benchrun"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/test/sqstest"
)

// The hub runs here with the real Dataset controller in a real manager, against a real kube-apiserver
// and etcd (envtest), a real SQS-compatible server (goaws) and its real webhook endpoint on 127.0.0.1.
// Envtest runs no kubelet: the test finishes the sync Jobs the controller starts, as their workers would.

type env struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	hub *Hub
	ns  string
}

func start(t *testing.T) *env { return startWith(t, envOptions{}) }

// startWithClock runs the Dataset controller on clock (nil: the real one); the hub keeps real time.
func startWithClock(t *testing.T, clock clock.PassiveClock) *env {
	return startWith(t, envOptions{clock: clock})
}

// envOptions change what start runs: the controllers' clock, where the manager serves /metrics
// ("" serves none), and whether it looks for node agents.
type envOptions struct {
	clock   clock.PassiveClock
	metrics string
	// agents makes the manager look for node agents (testAgents).
	agents bool
	// reader wraps the hub's uncached reader (nil: the manager's API reader as it is).
	reader func(client.Reader) client.Reader
}

func startWith(t *testing.T, o envOptions) *env {
	t.Helper()
	clock := o.clock
	metricsAddr := o.metrics
	if metricsAddr == "" {
		metricsAddr = "0"
	}
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: metricsAddr}, Cache: jobs.CacheOptions(nil),
		// Each test runs its own manager in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	reader := mgr.GetAPIReader()
	if o.reader != nil {
		reader = o.reader(reader)
	}
	hub := New(Options{Client: mgr.GetClient(), Reader: reader, Scheme: scheme, BindAddress: "127.0.0.1:0",
		// The tests post as versitygw does: the token in the query string.
		QueryToken: true,
		// Short windows keep the test quick; a batch over three keys overflows into a listing.
		Debounce:         notify.DebounceConfig{Window: 200 * time.Millisecond, MaxDelay: time.Second, FreshDelay: 50 * time.Millisecond, MaxKeys: 3},
		SQSClientOptions: []func(*sqs.Options){sqstest.ClientOptions}})
	if err := mgr.Add(hub); err != nil {
		t.Fatal(err)
	}
	worker := jobs.DefaultWorkerOptions()
	worker.Image = "example.test/pqcache:test"
	opts := dataset.Options{Worker: worker, Events: hub, Clock: clock}
	if o.agents {
		opts.AgentPods = &testAgents
	}
	if err := dataset.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	// The BenchRun side too, as the manager runs it: the metrics test finishes a BenchRun.
	if err := benchrun.Setup(mgr, benchrun.Options{Worker: worker, Clock: clock}); err != nil {
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
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "events-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, c: c, hub: hub, ns: ns.Name}
	e.eventually("the webhook endpoint listens", 10*time.Second, func() error {
		if hub.Addr() == "" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	return e
}

// eventually retries check until it passes or timeout ends (a bounded loop).
func (e *env) eventually(what string, timeout time.Duration, check func() error) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *env) dataset(name string, events datav1alpha1.EventSource) *datav1alpha1.Dataset {
	e.t.Helper()
	return e.scheduledDataset(name, "@daily", events)
}

func (e *env) scheduledDataset(name, schedule string, events datav1alpha1.EventSource) *datav1alpha1.Dataset {
	e.t.Helper()
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: "tpch/", Endpoint: "http://s3.example.test:9000", ForcePathStyle: true,
				Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "s3-creds"}}}},
			Volume:  datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
			Fresh:   []string{"orders/date=2026-12-02/"},
			Refresh: datav1alpha1.RefreshPolicy{Schedule: schedule, Events: &events},
		},
	}
	if err := e.c.Create(e.ctx, ds); err != nil {
		e.t.Fatal(err)
	}
	return ds
}

func (e *env) get(ds *datav1alpha1.Dataset) *datav1alpha1.Dataset {
	e.t.Helper()
	out := &datav1alpha1.Dataset{}
	if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(ds), out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// runningJob waits for the Dataset's unfinished sync Job and returns it.
func (e *env) runningJob(ds *datav1alpha1.Dataset) *batchv1.Job {
	e.t.Helper()
	var job *batchv1.Job
	e.eventually("a running sync Job of "+ds.Name, 15*time.Second, func() error {
		var list batchv1.JobList
		if err := e.c.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{jobs.LabelDataset: ds.Name}); err != nil {
			return err
		}
		for i := range list.Items {
			j := &list.Items[i]
			if !finished(j) {
				job = j
				return nil
			}
		}
		return fmt.Errorf("%d Jobs, none running", len(list.Items))
	})
	return job
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// finish does what the worker and the Job controller would: a pod whose sync container terminated
// with rep as its termination message, and the Job's terminal conditions.
func (e *env) finish(job *batchv1.Job, rep *wire.SyncReport) {
	e.t.Helper()
	e.finishAt(job, rep, time.Now().Add(-time.Second))
}

// finishAt is finish with the Job's start time given (the controller's clock may be a fake one).
func (e *env) finishAt(job *batchv1.Job, rep *wire.SyncReport, started time.Time) {
	e.t.Helper()
	msg, err := rep.Compact(wire.TerminationMessageLimit)
	if err != nil {
		e.t.Fatal(err)
	}
	e.finishContainer(job, "sync", string(msg), started)
}

func report(files int64, changes *wire.ChangeOutcome) *wire.SyncReport {
	return &wire.SyncReport{Result: wire.ResultSucceeded, FilesCopied: files, Changes: changes,
		Manifest: wire.ManifestSummary{Files: 10, Bytes: 1000, Generation: 1, Digest: "sha256:x"}}
}

// s3Event is an S3 event notification as AWS (and, without URL-encoding, versitygw) writes it.
func s3Event(key string, removed bool, at time.Time) string {
	name := "ObjectCreated:Put"
	if removed {
		name = "ObjectRemoved:Delete"
	}
	rec := map[string]any{"eventVersion": "2.1", "eventSource": "aws:s3", "eventName": name, "eventTime": at.UTC().Format(time.RFC3339Nano),
		"s3": map[string]any{"bucket": map[string]any{"name": "lake"}, "object": map[string]any{"key": key, "size": 1234, "eTag": "abc", "sequencer": "0055AED6DCD90281E5"}}}
	b, _ := json.Marshal(map[string]any{"Records": []any{rec}})
	return string(b)
}

func (e *env) condition(ds *datav1alpha1.Dataset, t string) *metav1.Condition {
	return meta.FindStatusCondition(e.get(ds).Status.Conditions, t)
}

func TestEventsDriveTargetedSyncs(t *testing.T) {
	if _, err := sqstest.Binary(); err != nil {
		t.Fatalf("goaws not found (make goaws, or set PQCACHE_GOAWS): %v", err)
	}
	e := start(t)

	t.Run("webhook", func(t *testing.T) {
		e.t = t
		ds := e.dataset("hooked", datav1alpha1.EventSource{Webhook: &datav1alpha1.WebhookEventSource{}})
		e.finish(e.runningJob(ds), report(10, nil)) // the first, listing, sync
		var token string
		e.eventually("the token Secret and the webhook path in status", 10*time.Second, func() error {
			cur := e.get(ds)
			if cur.Status.Events == nil || cur.Status.Events.WebhookPath != "/events/"+e.ns+"/hooked" || cur.Status.Events.TokenSecret != "hooked-events-token" {
				return fmt.Errorf("status.events %+v", cur.Status.Events)
			}
			var sec corev1.Secret
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "hooked-events-token"}, &sec); err != nil {
				return err
			}
			if !metav1.IsControlledBy(&sec, cur) || len(sec.Data["token"]) != 64 {
				return fmt.Errorf("token secret %+v", sec.ObjectMeta)
			}
			token = string(sec.Data["token"])
			if c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionEventSource); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("EventSource %+v", c)
			}
			return nil
		})
		url := "http://" + e.hub.Addr() + "/events/" + e.ns + "/hooked"
		post := func(tok, body string) int {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post(token, s3Event("tpch/orders/date=2026-12-02/part-0.parquet", false, time.Now())); code != http.StatusOK {
			t.Fatalf("webhook answered %d", code)
		}
		job := e.runningJob(ds)
		if job.Annotations[dataset.AnnotationTrigger] != dataset.TriggerEvents || job.Annotations[dataset.AnnotationEventBatch] == "" {
			t.Fatalf("Job annotations %v", job.Annotations)
		}
		c := job.Spec.Template.Spec.Containers[0]
		if !contains(c.Args, "--changes") {
			t.Fatalf("a targeted sync without --changes: %v", c.Args)
		}
		var cm corev1.ConfigMap
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: job.Name}, &cm); err != nil {
			t.Fatalf("change set: %v", err)
		}
		var set wire.ChangeSet
		if err := json.Unmarshal([]byte(cm.Data["changes.json"]), &set); err != nil || len(set.Changes) != 1 || set.Changes[0].Key != "tpch/orders/date=2026-12-02/part-0.parquet" {
			t.Fatalf("change set %s: %v", cm.Data["changes.json"], err)
		}
		e.finish(job, report(1, &wire.ChangeOutcome{Applied: 1, PublishedAt: time.Now()}))
		e.eventually("the change counted as applied, and its change set gone", 10*time.Second, func() error {
			st := e.get(ds).Status.Events
			if st == nil || st.Received != 1 || st.Applied != 1 || st.LastPublishTime == nil {
				return fmt.Errorf("status.events %+v", st)
			}
			if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(&cm), &cm); err == nil {
				return fmt.Errorf("change set %s still there", cm.Name)
			}
			return nil
		})

		// Four changes in one batch: over the hub's limit of three, a listing sync instead.
		for i := range 4 {
			if code := post(token, s3Event(fmt.Sprintf("tpch/lineitem/part-%d.parquet", i), false, time.Now())); code != http.StatusOK {
				t.Fatalf("webhook answered %d", code)
			}
		}
		job = e.runningJob(ds)
		if job.Annotations[dataset.AnnotationTrigger] != dataset.TriggerEventsOverflow || contains(job.Spec.Template.Spec.Containers[0].Args, "--changes") {
			var cm corev1.ConfigMap
			_ = e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: job.Name}, &cm)
			t.Fatalf("an overflow should list: trigger %q, args %v, changes %s", job.Annotations[dataset.AnnotationTrigger], job.Spec.Template.Spec.Containers[0].Args, cm.Data["changes.json"])
		}
		e.finish(job, report(4, nil))

		// A wrong token: refused, and said so, while the Dataset stays Ready.
		if code := post("not-the-token", s3Event("tpch/x.parquet", false, time.Now())); code != http.StatusUnauthorized {
			t.Fatalf("a wrong token got %d", code)
		}
		e.eventually("TokenRejected without leaving Ready", 10*time.Second, func() error {
			c := e.condition(ds, datav1alpha1.ConditionEventSource)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != datav1alpha1.ReasonTokenRejected {
				return fmt.Errorf("EventSource %+v", c)
			}
			if r := e.condition(ds, datav1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
				return fmt.Errorf("Ready %+v", r)
			}
			return nil
		})
	})

	t.Run("sqs", func(t *testing.T) {
		e.t = t
		srv := sqstest.Start(t)
		queue := srv.CreateQueue(t, "lake-events", 30*time.Second)
		if err := e.c.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "s3-creds"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": sqstest.AccessKey, "AWS_SECRET_ACCESS_KEY": sqstest.SecretKey}}); err != nil {
			t.Fatal(err)
		}
		ds := e.dataset("queued", datav1alpha1.EventSource{SQS: &datav1alpha1.SQSEventSource{QueueURL: queue, Region: sqstest.Region, Endpoint: srv.Endpoint}})
		e.finish(e.runningJob(ds), report(10, nil))
		srv.Send(t, queue, s3Event("tpch/orders/date=2026-12-02/part-1.parquet", false, time.Now()))
		job := e.runningJob(ds)
		if job.Annotations[dataset.AnnotationTrigger] != dataset.TriggerEvents {
			t.Fatalf("trigger %q", job.Annotations[dataset.AnnotationTrigger])
		}
		if held := srv.Held(t, queue); held != 1 {
			t.Fatalf("%d messages held while the sync runs, want 1 (deleted only after publication)", held)
		}
		e.finish(job, report(1, &wire.ChangeOutcome{Applied: 1, PublishedAt: time.Now()}))
		e.eventually("the message deleted once its change is published", 15*time.Second, func() error {
			if held := srv.Held(t, queue); held != 0 {
				return fmt.Errorf("%d messages still in the queue", held)
			}
			if st := e.get(ds).Status.Events; st == nil || st.Applied != 1 || st.Source != "sqs" {
				return fmt.Errorf("status.events %+v", st)
			}
			return nil
		})

		// A queue that does not exist: said so, and the Dataset stays Ready on its schedule.
		missing := e.dataset("noqueue", datav1alpha1.EventSource{SQS: &datav1alpha1.SQSEventSource{QueueURL: srv.Endpoint + "/queue/no-such-queue", Region: sqstest.Region, Endpoint: srv.Endpoint}})
		e.finish(e.runningJob(missing), report(10, nil))
		e.eventually("QueueNotFound on the EventSource condition", 30*time.Second, func() error {
			c := e.condition(missing, datav1alpha1.ConditionEventSource)
			if c == nil || c.Reason != wire.ReasonQueueNotFound {
				return fmt.Errorf("EventSource %+v", c)
			}
			if r := e.condition(missing, datav1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
				return fmt.Errorf("Ready %+v", r)
			}
			return nil
		})
	})
}

func contains(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}

// webhookToken waits for the token the operator generated for a webhook Dataset.
func (e *env) webhookToken(ds *datav1alpha1.Dataset) string {
	e.t.Helper()
	var token string
	e.eventually("the webhook's token Secret", 10*time.Second, func() error {
		var sec corev1.Secret
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: ds.Name + "-events-token"}, &sec); err != nil {
			return err
		}
		token = string(sec.Data["token"])
		return nil
	})
	return token
}

// A notified PUT every 25 s (of the controller's clock) starts a targeted sync each time; none of them
// moves the next listing, which runs once its minute is up and counts what it found unannounced. Once
// is a Normal event; the next listing finding unannounced changes again is a Warning.
func TestNotifiedPutsNeverPostponeTheListing(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	e := startWithClock(t, clk)
	ds := e.scheduledDataset("busy", "@every 1m", datav1alpha1.EventSource{Webhook: &datav1alpha1.WebhookEventSource{}})
	listedAt := clk.Now()
	e.finishAt(e.runningJob(ds), report(10, nil), listedAt)
	nextListing := listedAt.Add(time.Minute)
	url := "http://" + e.hub.Addr() + "/events/" + e.ns + "/busy?token=" + e.webhookToken(ds)

	put := func(i int) {
		resp, err := postJSON(t, url, s3Event(fmt.Sprintf("tpch/lineitem/part-%d.parquet", i), false, clk.Now()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	var listing *batchv1.Job
	for i := 1; i <= 3 && listing == nil; i++ { // the third comes 75 s after the listing
		clk.Step(25 * time.Second)
		put(i)
		job := e.runningJob(ds)
		trigger := job.Annotations[dataset.AnnotationTrigger]
		if clk.Now().Before(nextListing) {
			if trigger != dataset.TriggerEvents {
				t.Fatalf("notified PUT %d, %s before the listing is due: trigger %q, want a targeted sync", i, nextListing.Sub(clk.Now()), trigger)
			}
			e.finishAt(job, report(1, &wire.ChangeOutcome{Applied: 1, PublishedAt: time.Now()}), clk.Now())
			e.eventually("the targeted sync recorded, the next listing unmoved", 10*time.Second, func() error {
				st := e.get(ds).Status
				if st.LastTargetedSyncTime == nil || !st.LastTargetedSyncTime.Time.Equal(clk.Now()) {
					return fmt.Errorf("lastTargetedSyncTime %v, want %s", st.LastTargetedSyncTime, clk.Now())
				}
				if st.NextSyncTime == nil || !st.NextSyncTime.Time.Equal(nextListing) {
					return fmt.Errorf("nextSyncTime %v after a targeted sync, want %s", st.NextSyncTime, nextListing)
				}
				return nil
			})
			continue
		}
		if trigger != dataset.TriggerScheduled {
			t.Fatalf("notified PUT %d, %s past the listing due at %s: trigger %q, want the scheduled listing", i, clk.Now().Sub(nextListing), nextListing, trigger)
		}
		// The listing applies the notified change and finds two that no notification announced.
		e.finishAt(job, report(3, nil), clk.Now())
		e.eventually("the listing recorded with the changes it found unannounced", 10*time.Second, func() error {
			st := e.get(ds).Status
			if st.LastListingSyncTime == nil || !st.LastListingSyncTime.Time.Equal(clk.Now()) {
				return fmt.Errorf("lastListingSyncTime %v, want %s", st.LastListingSyncTime, clk.Now())
			}
			if st.NextSyncTime == nil || !st.NextSyncTime.Time.Equal(clk.Now().Add(time.Minute)) {
				return fmt.Errorf("nextSyncTime %v, want a minute after the listing", st.NextSyncTime)
			}
			// Three copied, one of them the notified PUT still held by the source (whether the listing
			// took its batch or a reconcile started it just before the batch flushed).
			if st.Events == nil || st.Events.FoundByListing != 2 {
				return fmt.Errorf("status.events %+v, want 2 changes found by listing", st.Events)
			}
			return nil
		})
		listing = job
	}
	if listing == nil {
		t.Fatalf("no listing sync in 75 s of targeted syncs, with a schedule of a minute")
	}
	if ev := e.eventFor(ds, listing, datav1alpha1.EventChangesFoundByListing); ev.Type != corev1.EventTypeNormal {
		t.Fatalf("the first listing that found unannounced changes: a %s event (%q), want Normal", ev.Type, ev.Note)
	}

	// The next listing, a minute later, finds changes no notification announced again.
	clk.Step(time.Minute)
	put(4)
	job := e.runningJob(ds)
	if job.Annotations[dataset.AnnotationTrigger] == dataset.TriggerEvents {
		// The third PUT's batch, if the listing started before it flushed: applied by a targeted sync.
		e.finishAt(job, report(1, &wire.ChangeOutcome{Applied: 1, PublishedAt: time.Now()}), clk.Now())
		job = e.runningJob(ds)
	}
	if trigger := job.Annotations[dataset.AnnotationTrigger]; trigger != dataset.TriggerScheduled {
		t.Fatalf("a minute after the listing: trigger %q, want the scheduled listing", trigger)
	}
	// Four copied: more than the notified changes the source can still hold.
	e.finishAt(job, report(4, nil), clk.Now())
	e.eventually("the second listing recorded with the changes it found unannounced", 10*time.Second, func() error {
		st := e.get(ds).Status.Events
		if st == nil || st.FoundByListing <= 2 || st.LastFoundByListingTime == nil || !st.LastFoundByListingTime.Time.Equal(clk.Now()) {
			return fmt.Errorf("status.events %+v, want more changes found by the listing at %s", st, clk.Now())
		}
		return nil
	})
	if ev := e.eventFor(ds, job, datav1alpha1.EventChangesFoundByListing); ev.Type != corev1.EventTypeWarning {
		t.Fatalf("the second listing in a row that found unannounced changes: a %s event (%q), want a Warning", ev.Type, ev.Note)
	}
}

// eventFor waits for the event with reason that the controller recorded about ds, related to the
// sync Job job, and returns it.
func (e *env) eventFor(ds *datav1alpha1.Dataset, job *batchv1.Job, reason string) eventsv1.Event {
	e.t.Helper()
	var found eventsv1.Event
	e.eventually(fmt.Sprintf("a %s event for Job %s", reason, job.Name), 10*time.Second, func() error {
		var list eventsv1.EventList
		if err := e.c.List(e.ctx, &list, client.InNamespace(e.ns)); err != nil {
			return err
		}
		var reasons []string
		for _, ev := range list.Items {
			if ev.Regarding.Name == ds.Name && ev.Related != nil && ev.Related.Name == job.Name {
				if ev.Reason == reason {
					found = ev
					return nil
				}
				reasons = append(reasons, ev.Reason)
			}
		}
		return fmt.Errorf("events about %s for Job %s: %v", ds.Name, job.Name, reasons)
	})
	return found
}
