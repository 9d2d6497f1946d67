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
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// policyMessage is what the chart's policy says to a user it refuses (benchrun-policy.yaml).
const policyMessage = "which only a user who may create pods in namespace data may ask for, and alice may not"

// TestBenchRunsRunOnlyWhatTheirCreatorMay installs the rendered chart's CRDs, its BenchRun admission
// policy and its aggregated edit role into a real API server (envtest authorises with RBAC and runs
// ValidatingAdmissionPolicies), and creates BenchRuns as two users: alice, bound to pqcache-edit
// only (she may create BenchRuns but not pods), and bob, who may also create pods. A command engine
// or a ServiceAccount of the run's own is refused to alice with the policy's message and admitted
// for bob; a built-in engine is admitted for both; a Secret in env is refused to both by the CRD.
func TestBenchRunsRunOnlyWhatTheirCreatorMay(t *testing.T) {
	objs := render(t)
	cfg := startWithCRDs(t, objs)
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "data"}})
	for _, o := range []*unstructured.Unstructured{
		objs.named(t, "ValidatingAdmissionPolicy", "pqcache-benchrun-pods"),
		objs.named(t, "ValidatingAdmissionPolicyBinding", "pqcache-benchrun-pods"),
		objs.named(t, "ClusterRole", "pqcache-edit"),
	} {
		mustCreate(ctx, t, admin, o)
	}
	bind := func(user, role, kind string) {
		mustCreate(ctx, t, admin, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		})
	}
	mustCreate(ctx, t, admin, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "pod-creator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}})
	bind("alice", "pqcache-edit", "ClusterRole")
	bind("bob", "pqcache-edit", "ClusterRole")
	bind("bob", "pod-creator", "Role")
	alice, bob := impersonate(t, cfg, scheme, "alice"), impersonate(t, cfg, scheme, "bob")

	// The API server loads policies asynchronously: wait until a probe is refused.
	waitForPolicy(ctx, t, alice)

	for _, tc := range []struct {
		name        string
		run         *datav1alpha1.BenchRun
		alice, bob  string // "" admitted, else a substring of the refusal
		aliceForbid bool
	}{
		{name: "command engine", run: benchRun("command", commandEngine()),
			alice: "BenchRun command " + ownImage + ", " + policyMessage, aliceForbid: true},
		{name: "own service account", run: withAccount(benchRun("account", datav1alpha1.BenchEngine{Name: datav1alpha1.EngineDuckDB}), "bucket-reader"),
			alice: "BenchRun account runs as ServiceAccount bucket-reader, " + policyMessage, aliceForbid: true},
		{name: "both", run: withAccount(benchRun("both", commandEngine()), "bucket-reader"),
			alice: ownImage + " and runs as ServiceAccount bucket-reader, " + policyMessage, aliceForbid: true},
		{name: "built-in engines", run: benchRun("builtin", datav1alpha1.BenchEngine{Name: datav1alpha1.EngineDuckDB}, datav1alpha1.BenchEngine{Name: datav1alpha1.EnginePolars},
			datav1alpha1.BenchEngine{Name: datav1alpha1.EngineSpark})},
		{name: "env on engine spark", run: benchRun("spark-env", datav1alpha1.BenchEngine{Name: datav1alpha1.EngineSpark,
			Env: []corev1.EnvVar{{Name: "PYSPARK_SUBMIT_ARGS", Value: "--conf spark.kubernetes.container.image=example.test/mine pyspark-shell"}}}),
			alice: "BenchRun spark-env " + ownImage + ", " + policyMessage, aliceForbid: true},
		{name: "env on a built-in engine", run: benchRun("polars-env", datav1alpha1.BenchEngine{Name: datav1alpha1.EnginePolars,
			Env: []corev1.EnvVar{{Name: "POLARS_MAX_THREADS", Value: "2"}}})},
		{name: "secret in env", run: benchRun("secret", withSecretEnv(datav1alpha1.BenchEngine{Name: datav1alpha1.EngineDuckDB})),
			alice: "env may not reference a Secret (valueFrom.secretKeyRef)", bob: "env may not reference a Secret (valueFrom.secretKeyRef)"},
		{name: "secret in a command engine's env", run: benchRun("secret-cmd", withSecretEnv(commandEngine())),
			alice: "env may not reference a Secret", bob: "env may not reference a Secret"},
	} {
		for _, as := range []struct {
			user   string
			c      client.Client
			expect string
		}{{"alice", alice, tc.alice}, {"bob", bob, tc.bob}} {
			run := tc.run.DeepCopy()
			run.Name = as.user + "-" + run.Name
			err := as.c.Create(ctx, run)
			switch {
			case as.expect == "" && err != nil:
				t.Errorf("%s, as %s: refused: %v", tc.name, as.user, err)
			case as.expect != "" && err == nil:
				t.Errorf("%s, as %s: admitted, want refused with %q", tc.name, as.user, as.expect)
			case as.expect != "" && !strings.Contains(strings.ReplaceAll(err.Error(), run.Name, tc.run.Name), as.expect):
				t.Errorf("%s, as %s: refused with %v, want %q", tc.name, as.user, err, as.expect)
			case as.expect != "" && as.user == "alice" && tc.aliceForbid && !apierrors.IsForbidden(err):
				t.Errorf("%s, as %s: refused with %v, want Forbidden", tc.name, as.user, err)
			}
		}
	}
}

// startWithCRDs starts envtest with the rendered chart's CRDs and returns the admin's config.
func startWithCRDs(t *testing.T, objs rendered) *rest.Config {
	t.Helper()
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
	return cfg
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(ctx, o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// impersonate is a client acting as an authenticated user of that name and no group of its own.
func impersonate(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, user string) client.Client {
	t.Helper()
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(as, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ownImage is how the policy names a run that brings an image, or a Spark environment, of its own.
const ownImage = "runs an image of its own (engine command, an engine image, or env on engine spark, whose driver may create pods and whose environment can name the executors' image)"

// waitForPolicy polls, with a dry run that stores nothing, until the policy refuses alice's command
// engine: the API server's policy informer picks new policies and bindings up a little later.
func waitForPolicy(ctx context.Context, t *testing.T, alice client.Client) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := alice.Create(ctx, benchRun("probe", commandEngine()), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), policyMessage) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy did not take effect within a minute; last probe: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func benchRun(name string, engines ...datav1alpha1.BenchEngine) *datav1alpha1.BenchRun {
	return &datav1alpha1.BenchRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: name},
		Spec: datav1alpha1.BenchRunSpec{
			DatasetRef: datav1alpha1.DatasetReference{Name: "tpch"},
			Engines:    engines,
			Configs:    []datav1alpha1.ResourceConfig{{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")}},
		},
	}
}

func commandEngine() datav1alpha1.BenchEngine {
	return datav1alpha1.BenchEngine{Name: datav1alpha1.EngineCommand, Label: "mine", Image: "example.test/engine:1", Command: []string{"run", "{query}"}}
}

func withAccount(run *datav1alpha1.BenchRun, sa string) *datav1alpha1.BenchRun {
	run.Spec.ServiceAccountName = sa
	return run
}

func withSecretEnv(e datav1alpha1.BenchEngine) datav1alpha1.BenchEngine {
	e.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}, Key: "password"}}}}
	return e
}

// TestBenchRunPolicyBinding: cluster-wide, the BenchRun policy binds everywhere; a namespaced install
// binds it in the watched namespaces only, where pqcache creates pods.
func TestBenchRunPolicyBinding(t *testing.T) {
	all := render(t).named(t, "ValidatingAdmissionPolicyBinding", "pqcache-benchrun-pods")
	if _, found, _ := unstructured.NestedMap(all.Object, "spec", "matchResources"); found {
		t.Errorf("a cluster-wide install limits the BenchRun policy: %v", all.Object["spec"])
	}
	if actions, _, _ := unstructured.NestedStringSlice(all.Object, "spec", "validationActions"); len(actions) != 1 || actions[0] != "Deny" {
		t.Errorf("validationActions %v, want [Deny]", actions)
	}
	some := render(t, "watchNamespaces={team-a,team-b}").named(t, "ValidatingAdmissionPolicyBinding", "pqcache-benchrun-pods")
	exprs, _, _ := unstructured.NestedSlice(some.Object, "spec", "matchResources", "namespaceSelector", "matchExpressions")
	want := []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{"team-a", "team-b"}}}
	if !reflect.DeepEqual(exprs, want) {
		t.Errorf("namespaced install's binding selects %v, want %v", exprs, want)
	}
}
