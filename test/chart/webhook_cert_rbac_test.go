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
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pqcache/pqcache/controllers/webhookcert"
)

// TestWebhookCertificateWithTheChartsRBAC installs the rendered chart's RBAC and webhook configuration
// into a real API server and runs the manager's certificate rotator as the chart's manager
// ServiceAccount: it makes its Secret and writes the caBundle with no forbidden error, and may update
// no other Secret and no other webhook configuration.
func TestWebhookCertificateWithTheChartsRBAC(t *testing.T) {
	const ns, manager = "pqcache-system", "system:serviceaccount:pqcache-system:pq-pqcache"
	objs := render(t, "agent.enabled=true")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin", "k8s", "1.37.2-linux-amd64")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest (run `make envtest`): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	install(ctx, t, admin, objs, []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}},
		objs.named(t, "MutatingWebhookConfiguration", "pq-pqcache-locality"))

	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: manager,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	mc, err := client.New(as, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r := &webhookcert.Rotator{Client: mc, Reader: mc, Secret: types.NamespacedName{Namespace: ns, Name: "pq-pqcache-webhook-cert"},
		Service: "pq-pqcache-webhook", WebhookConfig: "pq-pqcache-locality", Log: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := r.Step(ctx); err != nil {
		t.Fatalf("the rotator with the chart's RBAC: %v\n%s", err, logs.String())
	}
	var hook admissionregistrationv1.MutatingWebhookConfiguration
	if err := admin.Get(ctx, types.NamespacedName{Name: "pq-pqcache-locality"}, &hook); err != nil {
		t.Fatal(err)
	}
	var sec corev1.Secret
	if err := admin.Get(ctx, r.Secret, &sec); err != nil {
		t.Fatal(err)
	}
	for _, h := range hook.Webhooks {
		if !bytes.Equal(h.ClientConfig.CABundle, sec.Data["ca.crt"]) {
			t.Fatalf("%s: caBundle is not the CA in the Secret", h.Name)
		}
	}
	for _, deny := range []authzv1.ResourceAttributes{
		{Namespace: ns, Verb: "update", Resource: "secrets", Name: "some-other-secret"},
		{Namespace: "tenant", Verb: "update", Resource: "secrets", Name: "pq-pqcache-webhook-cert"},
		{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "someone-elses"},
		{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
		{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "pq-pqcache-locality"},
	} {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: manager, ResourceAttributes: &deny,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}}
		if err := admin.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed {
			t.Errorf("the manager may %s %s %q in %q", deny.Verb, deny.Resource, deny.Name, deny.Namespace)
		}
	}
}
