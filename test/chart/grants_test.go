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

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/manager"
)

// TestManagerGrantsWithTheChartsRBAC runs the manager as the chart's ServiceAccount, with the chart's
// RBAC in a real API server, the node agent and live progress on. The API server refuses a Role or
// RoleBinding that grants more than its writer holds, so this shows that the chart's manager may grant
// the agents one Secret by name and bind the workers' progress role, and that it needs nothing more:
// a SubjectAccessReview says what the agents may read before and after. Cluster-wide and namespaced.
func TestManagerGrantsWithTheChartsRBAC(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		ns   []string
	}{
		{name: "cluster-wide"},
		{name: "namespaced", sets: []string{"watchNamespaces={data}"}, ns: []string{"data"}},
	} {
		t.Run(tc.name, func(t *testing.T) { grantWithChartRBAC(t, tc.sets, tc.ns) })
	}
}

// chartEnv is an API server holding the rendered chart's CRDs, ServiceAccounts and RBAC.
type chartEnv struct {
	admin   client.Client
	cfg     *rest.Config
	scheme  *runtime.Scheme
	manager string // the manager's ServiceAccount
	agent   types.NamespacedName
}

func startChartEnv(ctx context.Context, t *testing.T, objs rendered) chartEnv {
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
	e := chartEnv{cfg: cfg, scheme: runtime.NewScheme()}
	utilruntime.Must(clientgoscheme.AddToScheme(e.scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(e.scheme))
	if e.admin, err = client.New(cfg, client.Options{Scheme: e.scheme}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"pqcache-system", "data"} {
		if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "NetworkPolicy": // the policies: the API server validates them
			if err := e.admin.Create(ctx, u); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	e.manager, _, _ = unstructured.NestedString(objs.one(t, "Deployment").Object, "spec", "template", "spec", "serviceAccountName")
	e.agent.Name, _, _ = unstructured.NestedString(objs.one(t, "DaemonSet").Object, "spec", "template", "spec", "serviceAccountName")
	e.agent.Namespace = "pqcache-system"
	return e
}

// may asks the API server's authorizer whether ServiceAccount sa may verb resource ns/name.
func (e chartEnv) may(ctx context.Context, t *testing.T, sa types.NamespacedName, verb, res, ns, name string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: res, Name: name},
	}}
	if err := e.admin.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// startManager runs the manager as the chart's ServiceAccount and nothing more, with the options the
// chart's flags give it.
func (e chartEnv) startManager(ctx context.Context, t *testing.T, watch []string, opts manager.Options) *syncWriter {
	logs := &syncWriter{b: &bytes.Buffer{}}
	as := rest.CopyConfig(e.cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:pqcache-system:" + e.manager,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:pqcache-system", "system:authenticated"},
	}
	mgr, err := ctrl.NewManager(as, ctrl.Options{
		Scheme: e.scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: jobs.CacheOptions(watch),
		Logger:     zap.New(zap.WriteTo(logs)),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts.Namespaces = watch
	if err := manager.SetupAll(mgr, opts); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	return logs
}

// eventually retries check every 200 ms for a minute, then fails with what it says and the manager's log.
func eventually(t *testing.T, logs *syncWriter, what string, check func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !check(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %s\nmanager log:\n%s", what, logs.String())
		}
	}
}

func grantWithChartRBAC(t *testing.T, sets, watch []string) {
	objs := render(t, append([]string{"agent.enabled=true", "agent.csi.enabled=false", "worker.progress.enabled=true"}, sets...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := startChartEnv(ctx, t, objs)
	args := objs.managerArgs(t)
	if !hasArg(args, "--agent-service-account="+e.agent.Name) {
		t.Fatalf("manager args %v do not name the agents' account %s", args, e.agent.Name)
	}
	worker := argWithPrefix(args, "--worker-service-account=")
	for _, name := range []string{"s3-creds", "other"} {
		if err := e.admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if e.may(ctx, t, e.agent, "get", "secrets", "data", "s3-creds") {
		t.Fatal("before any Dataset, the chart lets the agents read Secret data/s3-creds")
	}
	logs := e.startManager(ctx, t, watch, manager.Options{AgentAccount: e.agent, Worker: jobs.WorkerOptions{ServiceAccount: worker}})

	copies := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "lake"}, Spec: datav1alpha1.DatasetSpec{
		Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics",
			Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "s3-creds"}}}},
		Replicas: &datav1alpha1.ReplicaPolicy{},
	}}
	synced := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "tpch"}, Spec: datav1alpha1.DatasetSpec{
		Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics"}},
		Volume: datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
	}}
	for _, ds := range []*datav1alpha1.Dataset{copies, synced} {
		if err := e.admin.Create(ctx, ds); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, logs, "the agents may not read data/s3-creds", func() bool { return e.may(ctx, t, e.agent, "get", "secrets", "data", "s3-creds") })
	if e.may(ctx, t, e.agent, "get", "secrets", "data", "other") || e.may(ctx, t, e.agent, "list", "secrets", "data", "") {
		t.Error("the agents may read more of data's Secrets than s3-creds")
	}
	workerSA := types.NamespacedName{Namespace: "data", Name: worker}
	eventually(t, logs, "the workers may not annotate their pods in data", func() bool { return e.may(ctx, t, workerSA, "patch", "pods", "data", "tpch-1") })

	var cur datav1alpha1.Dataset
	if err := e.admin.Get(ctx, client.ObjectKeyFromObject(copies), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{ServiceAccountName: "reader"}
	if err := e.admin.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	eventually(t, logs, "the agents may still read data/s3-creds", func() bool { return !e.may(ctx, t, e.agent, "get", "secrets", "data", "s3-creds") })
	var roles rbacv1.RoleList
	if err := e.admin.List(ctx, &roles, client.InNamespace("data")); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if strings.Contains(r.Name, "pqcache-agent") {
			t.Errorf("Role %s outlives the Secret it granted", r.Name)
		}
	}
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Fatalf("the manager hit a forbidden error with the chart's RBAC:\n%s", logs.String())
	}
}
