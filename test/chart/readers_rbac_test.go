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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/readeraccess"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// TestReadersKeysWithTheChartsRBAC runs the readers' key issuer as the chart's manager, with the
// chart's RBAC in a real API server: it makes the master key and issues a namespace's Secret and
// ConfigMap with no more than the chart grants. SubjectAccessReviews then show that the agents may
// read the master key and their Nodes and no tenant's key, and that the manager may update the
// readers' Secret by its name only.
func TestReadersKeysWithTheChartsRBAC(t *testing.T) {
	objs := render(t, "agent.enabled=true", "agent.csi.enabled=false")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := startChartEnv(ctx, t, objs)
	args := objs.managerArgs(t)
	service, _ := strings.CutPrefix(argWithPrefix(args, "--readers-service="), "pqcache-system/")
	masterName, _ := strings.CutPrefix(argWithPrefix(args, "--readers-master-key="), "pqcache-system/")
	if service != "pq-pqcache-s3" || masterName != "pq-pqcache-s3-master" || objs.named(t, "Service", service) == nil {
		t.Fatalf("manager args %v: readers' Service %q, master key %q", args, service, masterName)
	}
	ca := types.NamespacedName{Namespace: "pqcache-system", Name: "pq-pqcache-peer-ca"}
	if err := e.admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ca.Namespace, Name: ca.Name},
		Data: map[string]string{readeraccess.CAKey: "ca"}}); err != nil {
		t.Fatal(err)
	}
	master := types.NamespacedName{Namespace: "pqcache-system", Name: masterName}
	logs := e.startIssuer(ctx, t, master, ca, service)
	ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "lake"}, Spec: datav1alpha1.DatasetSpec{
		Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics"}}, Replicas: &datav1alpha1.ReplicaPolicy{}}}
	if err := e.admin.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	eventually(t, logs, "the namespace's readers' Secret and ConfigMap are issued", func() bool {
		errS := e.admin.Get(ctx, client.ObjectKey{Namespace: "data", Name: s3creds.SecretName}, &corev1.Secret{})
		errC := e.admin.Get(ctx, client.ObjectKey{Namespace: "data", Name: s3creds.ConfigMapName}, &corev1.ConfigMap{})
		return errS == nil && errC == nil
	})
	for _, c := range []struct {
		who                 types.NamespacedName
		verb, res, ns, name string
		want                bool
	}{
		{e.agent, "get", "secrets", "pqcache-system", masterName, true},
		{e.agent, "get", "secrets", "data", s3creds.SecretName, false},
		{e.agent, "list", "secrets", "pqcache-system", "", false},
		{e.agent, "get", "nodes", "", "node-a", true},
		{e.agent, "list", "nodes", "", "", false},
		{e.managerAccount(), "update", "secrets", "data", s3creds.SecretName, true},
		{e.managerAccount(), "update", "secrets", "data", "s3-creds", false},
		{e.managerAccount(), "update", "configmaps", "data", s3creds.ConfigMapName, true},
		{e.managerAccount(), "update", "configmaps", "data", "other", false},
	} {
		if got := e.may(ctx, t, c.who, c.verb, c.res, c.ns, c.name); got != c.want {
			t.Errorf("%s may %s %s %s/%s: %v, want %v", c.who.Name, c.verb, c.res, c.ns, c.name, got, c.want)
		}
	}
}

func (e chartEnv) managerAccount() types.NamespacedName {
	return types.NamespacedName{Namespace: "pqcache-system", Name: e.manager}
}

// startIssuer runs the readers' key issuer as the chart's manager ServiceAccount.
func (e chartEnv) startIssuer(ctx context.Context, t *testing.T, master, ca types.NamespacedName, service string) *syncWriter {
	logs := &syncWriter{b: &bytes.Buffer{}}
	as := rest.CopyConfig(e.cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:pqcache-system:" + e.manager,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:pqcache-system", "system:authenticated"},
	}
	mgr, err := ctrl.NewManager(as, ctrl.Options{Scheme: e.scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: jobs.CacheOptions(nil), Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	issuer := &readeraccess.Issuer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Master: master, CA: ca,
		Endpoint: "https://" + service + ".pqcache-system.svc", Log: slog.New(slog.NewTextHandler(logs, nil))}
	if err := issuer.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	return logs
}
