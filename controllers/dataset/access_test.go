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

package dataset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// TestWorkersReadWithoutAmbientCredentialsUnlessAllowed: the sync and sizing workers of a Dataset
// that names no credentials are told to read anonymously, unless its namespace is allowed ambient
// credentials; a Dataset with a Secret or a service account is read with those, as before.
func TestWorkersReadWithoutAmbientCredentialsUnlessAllowed(t *testing.T) {
	ds := func(creds *datav1alpha1.S3Credentials) *datav1alpha1.Dataset {
		return &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "sales", UID: "u1"},
			Spec: datav1alpha1.DatasetSpec{Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: "sales/", Credentials: creds}}}}
	}
	secret := &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "creds"}}
	account := &datav1alpha1.S3Credentials{ServiceAccountName: "reader"}
	for _, tc := range []struct {
		name      string
		ds        *datav1alpha1.Dataset
		allowed   []string
		anonymous bool
	}{
		{"no credentials, no namespace allowed", ds(nil), nil, true},
		{"no credentials, another namespace allowed", ds(&datav1alpha1.S3Credentials{}), []string{"other"}, true},
		{"no credentials, its namespace allowed", ds(nil), []string{"other", "team"}, false},
		{"no credentials, every namespace allowed", ds(nil), []string{"*"}, false},
		{"a Secret", ds(secret), nil, false},
		{"a service account", ds(account), nil, false},
	} {
		opts := jobs.DefaultWorkerOptions()
		opts.Access.AmbientNamespaces = tc.allowed
		for kind, job := range map[string]*corev1.PodSpec{
			"sync":   &buildSyncJob(tc.ds, opts, TriggerInitial, "h").Spec.Template.Spec,
			"sizing": &buildSizeJob(tc.ds, opts, "h").Spec.Template.Spec,
		} {
			v, ok := envValue(job.Containers[0], wire.EnvNoAmbientCredentials)
			if got := ok && v == "true"; got != tc.anonymous {
				t.Errorf("%s, %s worker: anonymous %v, want %v", tc.name, kind, got, tc.anonymous)
			}
		}
	}
}

// TestWorkersGetTheEndpointRanges: the manager's denied and allowed ranges reach every worker.
func TestWorkersGetTheEndpointRanges(t *testing.T) {
	d := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "sales", UID: "u1"},
		Spec: datav1alpha1.DatasetSpec{Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: "sales/",
			Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "creds"}}}}}}
	opts := jobs.DefaultWorkerOptions()
	if _, ok := envValue(buildSyncJob(d, opts, TriggerInitial, "h").Spec.Template.Spec.Containers[0], wire.EnvDeniedCIDRs); ok {
		t.Error("no ranges denied, yet the worker got some")
	}
	opts.Access = jobs.AccessPolicy{DeniedCIDRs: []string{"169.254.0.0/16", "10.96.0.0/12"}, AllowedCIDRs: []string{"10.96.0.10/32"}}
	c := buildSyncJob(d, opts, TriggerInitial, "h").Spec.Template.Spec.Containers[0]
	if v, _ := envValue(c, wire.EnvDeniedCIDRs); v != "169.254.0.0/16,10.96.0.0/12" {
		t.Errorf("%s = %q", wire.EnvDeniedCIDRs, v)
	}
	if v, _ := envValue(c, wire.EnvAllowedCIDRs); v != "10.96.0.10/32" {
		t.Errorf("%s = %q", wire.EnvAllowedCIDRs, v)
	}
	if _, ok := envValue(c, wire.EnvNoAmbientCredentials); ok {
		t.Error("a Dataset with a Secret was told to read anonymously")
	}
}
