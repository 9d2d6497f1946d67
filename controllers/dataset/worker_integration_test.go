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

package dataset_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/internal/cli"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestWorkerJobRunsAndReportsEndToEnd runs the worker exactly as the controller specifies it — the
// container args and the environment from the Secret references of the Job it builds — against a real
// versitygw, as the kubelet would (the claim mounted at /data, a termination-log file), then feeds the
// real termination message back through the controller's own parsing and recording.
func TestWorkerJobRunsAndReportsEndToEnd(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	big := make([]byte, 2<<20+123)
	for i := range big {
		big[i] = byte(rand.IntN(256))
	}
	srv.PutObject(t, "lake", "sales/2026/11.bin", big)
	srv.PutObject(t, "lake", "sales/2026/12.bin", []byte("december"))
	srv.PutObject(t, "lake", "sales/_SUCCESS", nil)

	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Name: "sales", Namespace: "team", UID: "uid-1", Generation: 3},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{
				Bucket: "lake", Prefix: "sales/", Region: s3test.Region, Endpoint: srv.Endpoint, ForcePathStyle: true,
				Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "creds"}},
			}},
			Exclude: []string{"_SUCCESS"},
			Sync:    datav1alpha1.SyncOptions{Parallelism: 4, PartSize: ptr.To(resource.MustParse("1Mi")), Prune: ptr.To(true)},
		},
	}
	hash := syncspec.SourceHash(&ds.Spec)
	job := dataset.BuildSyncJob(ds, jobs.DefaultWorkerOptions(), dataset.TriggerInitial, hash)
	c := job.Spec.Template.Spec.Containers[0]

	// The kubelet's part: environment from the Secret, the claim, the termination-log file.
	secret := map[string]string{wire.EnvAccessKeyID: s3test.AccessKey, wire.EnvSecretAccessKey: s3test.SecretKey}
	for _, e := range c.Env {
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil {
			continue // the downward API's pod name and namespace: not in a pod here, so no live progress
		}
		if ref.Name != "creds" {
			t.Fatalf("env %s refers to Secret %q", e.Name, ref.Name)
		}
		v, ok := secret[ref.Key]
		if !ok && !ptr.Deref(ref.Optional, false) {
			t.Fatalf("the Job needs key %s, which the Secret lacks", ref.Key)
		}
		if ok {
			t.Setenv(e.Name, v)
		}
	}
	volume := t.TempDir()
	termination := filepath.Join(t.TempDir(), "termination-log")
	stderr, err := runWorker(c, map[string]string{c.VolumeMounts[0].MountPath: volume, c.TerminationMessagePath: termination})
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr)
	}
	if !strings.Contains(stderr, `"filesDone"`) {
		t.Errorf("the worker wrote no JSON progress lines on stderr:\n%s", stderr)
	}
	message, err := os.ReadFile(termination)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(volume, "2026", "11.bin")); !bytes.Equal(got, big) {
		t.Fatal("the worker did not publish the large object intact")
	}

	// The controller's part, through its own code.
	now := time.Now()
	job.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	pod := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: c.Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: string(message), FinishedAt: metav1.NewTime(now)}},
	}}}}
	outcome := dataset.OutcomeFromPods([]corev1.Pod{pod})
	if outcome.Report == nil {
		t.Fatalf("the controller could not read the worker's report: %s", outcome.Problem)
	}
	ok, summary := dataset.RecordSync(ds, job, jobs.State{Finished: true, At: now}, outcome)
	if !ok {
		t.Fatalf("recorded as failed: %s", summary)
	}
	dataset.SetDatasetConditions(ds, dataset.DatasetFacts{})
	ls := ds.Status.LastSync
	if ls.FilesCopied != 2 || ls.BytesCopied != int64(len(big)+len("december")) || ls.GetRequests != 4 || ls.ListRequests != 1 || ls.SpecGeneration != 3 || ls.Trigger != dataset.TriggerInitial {
		t.Fatalf("lastSync: %+v", ls)
	}
	if m := ds.Status.Manifest; m == nil || m.Files != 2 || m.Generation != 1 || m.SourceHash != hash {
		t.Fatalf("manifest: %+v", m)
	}
	if meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionDegraded).Status != metav1.ConditionFalse {
		t.Fatalf("conditions: %+v", ds.Status.Conditions)
	}
}

// TestWorkerTrustsAPrivateCA runs the worker of a Job built with a CA bundle against an S3-compatible
// store that serves TLS with a private CA: with the bundle mounted where the Job says, the sync works;
// with only the system's CAs, it fails on the certificate.
func TestWorkerTrustsAPrivateCA(t *testing.T) {
	srv, ca := s3test.StartTLS(t)
	srv.CreateBucket(t, "secure")
	srv.PutObject(t, "secure", "data/x.bin", []byte("over TLS"))

	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Name: "secure", Namespace: "team", UID: "uid-2", Generation: 1},
		Spec: datav1alpha1.DatasetSpec{Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{
			Bucket: "secure", Prefix: "data/", Region: s3test.Region, Endpoint: srv.Endpoint, ForcePathStyle: true,
			Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "creds"}},
		}}},
	}
	opts := jobs.DefaultWorkerOptions()
	opts.CABundle = &jobs.ConfigMapKey{Name: "corp-ca", Key: "ca.crt"}
	job := dataset.BuildSyncJob(ds, opts, dataset.TriggerInitial, syncspec.SourceHash(&ds.Spec))
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]

	// The kubelet's part: the ConfigMap's key as a file under the mount path, the env var as the Job says.
	var mountPath, bundleEnv string
	for _, m := range c.VolumeMounts {
		if m.Name == "ca-bundle" {
			mountPath = m.MountPath
		}
	}
	for _, e := range c.Env {
		if e.Name == "AWS_CA_BUNDLE" {
			bundleEnv = e.Value
		}
	}
	var cmName string
	for _, v := range pod.Volumes {
		if v.Name == "ca-bundle" && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	if mountPath == "" || cmName != "corp-ca" || bundleEnv != mountPath+"/ca.crt" {
		t.Fatalf("the Job does not mount the CA bundle: mount %q, ConfigMap %q, AWS_CA_BUNDLE %q", mountPath, cmName, bundleEnv)
	}
	mounted := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(mounted, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(wire.EnvAccessKeyID, s3test.AccessKey)
	t.Setenv(wire.EnvSecretAccessKey, s3test.SecretKey)

	runWorker := func(bundle string) error {
		t.Setenv("AWS_CA_BUNDLE", bundle)
		volume := t.TempDir()
		_, err := runWorker(c, map[string]string{"/data": volume, c.TerminationMessagePath: filepath.Join(t.TempDir(), "termination-log")})
		if err == nil {
			if got, _ := os.ReadFile(filepath.Join(volume, "x.bin")); string(got) != "over TLS" {
				return fmt.Errorf("synced %q", got)
			}
		}
		return err
	}
	if err := runWorker(mounted); err != nil {
		t.Fatalf("with the CA bundle: %v", err)
	}
	system := "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(system); err != nil {
		t.Fatalf("no system CA bundle at %s: %v", system, err)
	}
	if err := runWorker(system); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the private CA the sync should fail on the certificate, got %v", err)
	}
}

// TestTargetedWorkerJobAppliesTheChangeSet runs a targeted sync Job as the controller builds it: the
// change set written into its ConfigMap by the controller's own code, mounted where the Job says, and
// the worker run with the Job's args against versitygw. It lists nothing, applies the new key and the
// delete, and its report carries the outcome the controller records.
func TestTargetedWorkerJobAppliesTheChangeSet(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "sales/2026/11.bin", []byte("november"))
	srv.PutObject(t, "lake", "sales/2026/12.bin", []byte("december"))
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Name: "sales", Namespace: "team", UID: "uid-3", Generation: 1},
		Spec: datav1alpha1.DatasetSpec{Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{
			Bucket: "lake", Prefix: "sales/", Region: s3test.Region, Endpoint: srv.Endpoint, ForcePathStyle: true,
			Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "creds"}},
		}}},
	}
	t.Setenv(wire.EnvAccessKeyID, s3test.AccessKey)
	t.Setenv(wire.EnvSecretAccessKey, s3test.SecretKey)
	volume := t.TempDir()
	run := func(job *batchv1.Job, files map[string]string) []byte {
		t.Helper()
		c := job.Spec.Template.Spec.Containers[0]
		termination := filepath.Join(t.TempDir(), "termination-log")
		paths := map[string]string{"/data": volume, c.TerminationMessagePath: termination}
		maps.Copy(paths, files)
		if stderr, err := runWorker(c, paths); err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, stderr)
		}
		msg, err := os.ReadFile(termination)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	run(dataset.BuildSyncJob(ds, jobs.DefaultWorkerOptions(), dataset.TriggerInitial, syncspec.SourceHash(&ds.Spec)), nil)

	srv.PutObject(t, "lake", "sales/2026/13.bin", []byte("the thirteenth month"))
	if err := os.Remove(filepath.Join(srv.Root, "lake", "sales/2026/11.bin")); err != nil {
		t.Fatal(err)
	}
	job := dataset.BuildSyncJob(ds, jobs.DefaultWorkerOptions(), dataset.TriggerEvents, syncspec.SourceHash(&ds.Spec))
	batch := &dataset.EventBatch{ID: "b1", Changes: []wire.Change{
		{Key: "sales/2026/13.bin", EventTime: time.Now().Add(-2 * time.Second)},
		{Key: "sales/2026/11.bin", Removed: true, EventTime: time.Now().Add(-3 * time.Second)},
		{Key: "other/2026/1.bin"},
	}}
	cm, err := dataset.ChangesConfigMap(ds, job.Name, batch)
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet's part: the ConfigMap's key as a file under the mount.
	c := job.Spec.Template.Spec.Containers[0]
	mounted := map[string]string{}
	for key, value := range cm.Data {
		path := filepath.Join(t.TempDir(), key)
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range c.VolumeMounts {
			if m.Name == "changes" {
				mounted[m.MountPath+"/"+key] = path
			}
		}
	}
	if len(mounted) != 1 || !slices.Contains(c.Args, "--changes") {
		t.Fatalf("the Job does not mount its change set: args %v, mounts %v", c.Args, c.VolumeMounts)
	}
	msg := run(job, mounted)

	now := time.Now()
	job.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	pod := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: c.Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: string(msg), FinishedAt: metav1.NewTime(now)}},
	}}}}
	outcome := dataset.OutcomeFromPods([]corev1.Pod{pod})
	if outcome.Report == nil || outcome.Report.Changes == nil {
		t.Fatalf("no change outcome in the worker's report: %s", msg)
	}
	if ch := outcome.Report.Changes; ch.Applied != 2 || ch.Ignored != 1 || ch.Stale != 0 || ch.PublishedAt.IsZero() {
		t.Fatalf("change outcome %+v, want 2 applied and 1 ignored", ch)
	}
	if ok, summary := dataset.RecordSync(ds, job, jobs.State{Finished: true, At: now}, outcome); !ok {
		t.Fatalf("recorded as failed: %s", summary)
	}
	if ls := ds.Status.LastSync; ls.ListRequests != 0 || ls.FilesCopied != 1 || ls.FilesDeleted != 1 || ls.Trigger != dataset.TriggerEvents {
		t.Fatalf("lastSync %+v: want no LIST, 1 copied, 1 deleted", ls)
	}
	if got, _ := os.ReadFile(filepath.Join(volume, "2026", "13.bin")); string(got) != "the thirteenth month" {
		t.Fatalf("13.bin not published: %q", got)
	}
	if _, err := os.Stat(filepath.Join(volume, "2026", "11.bin")); !os.IsNotExist(err) {
		t.Fatalf("11.bin not deleted: %v", err)
	}
}

// runWorker runs a worker container's command line in-process, as the kubelet would run the
// container: every argument that names a path of the pod (the volume's mount path, the
// termination-log file, a mounted file) is replaced by its local stand-in from paths. It returns
// what the worker wrote to stderr and the command's error.
func runWorker(c corev1.Container, paths map[string]string) (string, error) {
	args := slices.Clone(c.Args)
	for i, a := range args {
		if local, ok := paths[a]; ok {
			args[i] = local
		}
	}
	cmd := cli.NewRootCommand()
	var stderr bytes.Buffer
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		err = fmt.Errorf("worker %v: %w", args, err)
	}
	return stderr.String(), err
}
