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

package chart

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/manager"
)

// TestManagerRunsWithTheChartsRBAC installs the rendered chart's CRDs, ServiceAccount and RBAC into a
// real API server (envtest authorises with RBAC), runs the manager impersonating the chart's
// ServiceAccount, and checks that a Dataset gets its claim, its Job and its events with no forbidden
// error: the chart grants what the code needs. Cluster-wide and namespaced installs both.
func TestManagerRunsWithTheChartsRBAC(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		ns   []string
	}{
		{name: "cluster-wide"},
		{name: "namespaced", sets: []string{"watchNamespaces={data}"}, ns: []string{"data"}},
	} {
		t.Run(tc.name, func(t *testing.T) { runWithChartRBAC(t, tc.sets, tc.ns) })
	}
}

func runWithChartRBAC(t *testing.T, sets, watch []string) {
	objs := render(t, sets...)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, u := range objs.all("CustomResourceDefinition") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin", "k8s", "1.37.2-linux-amd64")
	}
	env := &envtest.Environment{CRDs: crds, BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest (run `make envtest`): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range []string{"pqcache-system", "data"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	sa := ""
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if u.GetKind() == "ServiceAccount" {
				sa = u.GetName()
			}
			if err := admin.Create(ctx, u); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}

	// The manager, as the chart's ServiceAccount and nothing more.
	logs := &syncWriter{b: &bytes.Buffer{}}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:pqcache-system:" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:pqcache-system", "system:authenticated"},
	}
	cacheOpts := crcache.Options{}
	if len(watch) > 0 {
		cacheOpts.DefaultNamespaces = map[string]crcache.Config{}
		for _, ns := range watch {
			cacheOpts.DefaultNamespaces[ns] = crcache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(as, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: cacheOpts,
		Logger:         zap.New(zap.WriteTo(logs)),
		LeaderElection: true, LeaderElectionNamespace: "pqcache-system", LeaderElectionID: "pqcache-test",
		// Each case runs its own manager in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := manager.SetupAll(mgr, manager.Options{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "tpch"},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics"}},
			Volume: datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
		},
	}
	if err := admin.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var jobs batchv1.JobList
		var events eventsv1.EventList
		_ = admin.List(ctx, &jobs, client.InNamespace("data"))
		_ = admin.List(ctx, &events, client.InNamespace("data"))
		var cur datav1alpha1.Dataset
		_ = admin.Get(ctx, client.ObjectKeyFromObject(ds), &cur)
		if len(jobs.Items) == 1 && len(events.Items) >= 2 && cur.Status.ObservedGeneration == cur.Generation && cur.Status.ClaimName != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Job, events or status after a minute (jobs %d, events %d, status %+v)\nmanager log:\n%s", len(jobs.Items), len(events.Items), cur.Status, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Fatalf("the manager hit a forbidden error with the chart's RBAC:\n%s", logs.String())
	}
}
