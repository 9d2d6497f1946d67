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
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/sqstest"
)

// TestAQueueWithoutASecretIsPolledOnlyWhereAllowed: an SQS source that names no Secret would be polled
// with the manager's own identity. Outside ambientCredentials.namespaces it is not polled, and the
// Dataset's EventSource condition says why and what would allow it; inside, it is polled.
func TestAQueueWithoutASecretIsPolledOnlyWhereAllowed(t *testing.T) {
	srv := sqstest.Start(t)
	queue := srv.CreateQueue(t, "lake-events", 30*time.Second)
	ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "sales"}, Spec: datav1alpha1.DatasetSpec{
		Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: "sales/"}},
		Refresh: datav1alpha1.RefreshPolicy{Events: &datav1alpha1.EventSource{SQS: &datav1alpha1.SQSEventSource{
			QueueURL: queue, Region: sqstest.Region, Endpoint: srv.Endpoint}}},
	}}
	key := types.NamespacedName{Namespace: "team", Name: "sales"}
	for _, allowed := range [][]string{nil, {"other"}, {"team"}} {
		h := New(Options{AmbientNamespaces: allowed, SQSClientOptions: []func(*sqs.Options){sqstest.ClientOptions}})
		if err := h.Watch(t.Context(), ds); err != nil {
			t.Fatal(err)
		}
		w := h.watched[key]
		_, problem := h.Status(key)
		if allowed == nil || allowed[0] != "team" {
			if w.sqs != nil {
				t.Errorf("allowed %v: the queue is polled with the manager's identity", allowed)
			}
			if problem == nil || problem.Reason != wire.ReasonAmbientCredentialsNotAllowed || !strings.Contains(problem.Message, "ambientCredentials.namespaces") {
				t.Errorf("allowed %v: EventSource problem %+v, want %s naming the setting", allowed, problem, wire.ReasonAmbientCredentialsNotAllowed)
			}
		} else if w.sqs == nil || (problem != nil && problem.Reason == wire.ReasonAmbientCredentialsNotAllowed) {
			t.Errorf("allowed %v: the queue is not polled (%+v)", allowed, problem)
		}
		h.Forget(key)
	}
}
