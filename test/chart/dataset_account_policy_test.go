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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// datasetPolicyMessage is what the chart's Dataset policy says to alice (dataset-account-policy.yaml).
const datasetPolicyMessage = "which only a user who may create pods in namespace data may ask for, and alice may not: give credentials.secretRef instead"

// TestDatasetsBorrowNoAccount installs the rendered chart's CRDs, its Dataset account policy and its
// aggregated edit role into a real API server and acts as alice (pqcache-edit only: she may create
// Datasets, not pods) and bob (who may also create pods). A Dataset naming a ServiceAccount, or an
// update that names one, is refused to alice with the policy's message and admitted for bob; a
// Dataset with a Secret is admitted for both, and alice may still edit a Dataset bob gave an account
// as long as she leaves the account as it is.
func TestDatasetsBorrowNoAccount(t *testing.T) {
	objs := render(t)
	cfg, admin := startWithCRDsAndAdmin(t, objs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "data"}})
	for _, o := range []*unstructured.Unstructured{
		objs.named(t, "ValidatingAdmissionPolicy", "pqcache-dataset-accounts"),
		objs.named(t, "ValidatingAdmissionPolicyBinding", "pqcache-dataset-accounts"),
		objs.named(t, "ClusterRole", "pqcache-edit"),
	} {
		mustCreate(ctx, t, admin, o)
	}
	mustCreate(ctx, t, admin, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "pod-creator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}})
	for _, b := range [][3]string{{"alice", "pqcache-edit", "ClusterRole"}, {"bob", "pqcache-edit", "ClusterRole"}, {"bob", "pod-creator", "Role"}} {
		mustCreate(ctx, t, admin, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: b[0] + "-" + b[1]},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: b[2], Name: b[1]},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: b[0]}},
		})
	}
	scheme := chartScheme()
	alice, bob := impersonate(t, cfg, scheme, "alice"), impersonate(t, cfg, scheme, "bob")
	waitForDatasetPolicy(ctx, t, alice)

	if err := alice.Create(ctx, datasetAs("alice-account", "bucket-reader")); err == nil || !strings.Contains(err.Error(), datasetPolicyMessage) {
		t.Errorf("alice named an account: %v, want refused with %q", err, datasetPolicyMessage)
	}
	if err := alice.Create(ctx, datasetAs("alice-secret", "")); err != nil {
		t.Errorf("alice's Dataset with a Secret: %v", err)
	}
	shared := datasetAs("shared", "bucket-reader")
	if err := bob.Create(ctx, shared); err != nil {
		t.Fatalf("bob, who may create pods, named an account: %v", err)
	}
	// alice edits the Dataset bob gave an account, leaving the account: admitted.
	shared.Spec.Source.S3.Prefix = "tpch/sf1/"
	if err := alice.Update(ctx, shared); err != nil {
		t.Errorf("alice's edit that keeps the account: %v", err)
	}
	// alice moves it to another account: refused.
	shared.Spec.Source.S3.Credentials.ServiceAccountName = "admin-reader"
	if err := alice.Update(ctx, shared); err == nil || !strings.Contains(err.Error(), datasetPolicyMessage) {
		t.Errorf("alice changed the account: %v, want refused with %q", err, datasetPolicyMessage)
	}
	// alice gives her own Dataset an account: refused.
	var mine datav1alpha1.Dataset
	// (read as the admin: envtest runs no aggregation controller, so pqcache-edit holds no read of its own)
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "data", Name: "alice-secret"}, &mine); err != nil {
		t.Fatal(err)
	}
	mine.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{ServiceAccountName: "bucket-reader"}
	if err := alice.Update(ctx, &mine); err == nil || !strings.Contains(err.Error(), datasetPolicyMessage) {
		t.Errorf("alice gave her Dataset an account: %v, want refused with %q", err, datasetPolicyMessage)
	}
}

// waitForDatasetPolicy polls, with dry runs that store nothing, until the policy refuses alice an
// account: the API server picks new policies up a little later.
func waitForDatasetPolicy(ctx context.Context, t *testing.T, alice client.Client) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := alice.Create(ctx, datasetAs("probe", "bucket-reader"), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), datasetPolicyMessage) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy did not take effect within a minute; last probe: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// datasetAs is a Dataset in namespace data that reads its bucket as account, or with a Secret when
// account is "".
func datasetAs(name, account string) *datav1alpha1.Dataset {
	creds := &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "s3-creds"}}
	if account != "" {
		creds = &datav1alpha1.S3Credentials{ServiceAccountName: account}
	}
	return &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: name},
		Spec: datav1alpha1.DatasetSpec{Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{
			Bucket: "analytics", Prefix: "tpch/", Credentials: creds}}},
	}
}
