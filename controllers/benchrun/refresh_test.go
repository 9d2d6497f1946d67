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

package benchrun

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/dataset"
)

// TestRefreshRequestDue: one request outstanding at a time, a period apart, none for a Dataset that
// events or a suspension keep out of it.
func TestRefreshRequestDue(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	ds := func(requested string, lastStart *metav1.Time, mut ...func(*datav1alpha1.Dataset)) *datav1alpha1.Dataset {
		d := &datav1alpha1.Dataset{}
		if requested != "" {
			d.Annotations = map[string]string{dataset.AnnotationRefreshRequested: requested}
		}
		if lastStart != nil {
			d.Status.LastSync = &datav1alpha1.SyncResult{StartTime: lastStart}
		}
		for _, m := range mut {
			m(d)
		}
		return d
	}
	req := now.Add(-10 * time.Second).Format(time.RFC3339)
	for name, tc := range map[string]struct {
		ds      *datav1alpha1.Dataset
		last    *metav1.Time
		due     bool
		wait    time.Duration
		pending bool
	}{
		"first request":           {ds: ds("", at(-time.Hour)), due: true},
		"not served yet":          {ds: ds(req, at(-time.Hour)), last: at(-10 * time.Second), pending: true},
		"served, period not over": {ds: ds(req, at(-5*time.Second)), last: at(-10 * time.Second), wait: 20 * time.Second},
		"served, period over":     {ds: ds(req, at(-5*time.Second)), last: at(-40 * time.Second), due: true},
		"events bring the changes": {ds: ds("", nil, func(d *datav1alpha1.Dataset) {
			d.Spec.Refresh.Events = &datav1alpha1.EventSource{}
		})},
		"suspended": {ds: ds("", nil, func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Suspend = true })},
	} {
		due, wait := refreshRequestDue(tc.ds, tc.last, 30*time.Second, now)
		if due != tc.due || wait != tc.wait || dataset.RefreshRequested(tc.ds) != tc.pending {
			t.Errorf("%s: due %v wait %v pending %v, want %v %v %v", name, due, wait, dataset.RefreshRequested(tc.ds), tc.due, tc.wait, tc.pending)
		}
	}
}
