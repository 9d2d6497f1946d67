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

package admission

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestAdmissionForgetsEveryKeyOfAnOwner(t *testing.T) {
	a := NewQueue(1)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	k := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
	a.Admit(k("run/job-1"), 1, now)
	a.Admit(k("run/job-2"), 1, now)
	a.Admit(k("runner/job-1"), 1, now) // a run whose name starts like the other's
	a.Admit(k("dataset"), 1, now)
	a.ForgetOwner(k("run"))
	if got := a.Waiting(); len(got) != 2 {
		t.Fatalf("after ForgetOwner(run): waiting %v, want runner/job-1 and dataset", got)
	}
	// A missed delete event: the sweep drops the keys of owners that are gone, and only those.
	gone := map[string]bool{"runner": true}
	n := a.Sweep(context.Background(), func(_ context.Context, o types.NamespacedName) bool { return !gone[o.Name] })
	if n != 1 || a.Len() != 1 || a.Waiting()[0] != k("dataset") {
		t.Fatalf("sweep dropped %d, left %v", n, a.Waiting())
	}
}

func TestAdmissionIsFairAndCapped(t *testing.T) {
	a := NewQueue(2)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	k := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
	// Three Datasets become due one second apart while one sync already runs: one slot is free.
	if a.Admit(k("old"), 1, now) != true {
		t.Fatal("the first waiter was refused a free slot")
	}
	if a.Admit(k("mid"), 1, now.Add(time.Second)) {
		t.Fatal("admitted past the cap (the just-admitted sync holds a slot until its Job shows up)")
	}
	if a.Admit(k("new"), 1, now.Add(2*time.Second)) {
		t.Fatal("admitted past the cap")
	}
	// old's Job is now visible (active 2), then one finishes (active 1): mid waited longer than new.
	a.Running(k("old"))
	if a.Admit(k("new"), 1, now.Add(3*time.Second)) {
		t.Fatal("a later waiter overtook an earlier one")
	}
	if !a.Admit(k("mid"), 1, now.Add(3*time.Second)) {
		t.Fatal("the longest waiter was refused a free slot")
	}
	a.Forget(k("new"))
	if len(a.waiting) != 0 {
		t.Fatalf("waiting left: %v", a.waiting)
	}
	if NewQueue(0).Admit(k("x"), 1000, now) != true {
		t.Fatal("no cap must admit everything")
	}
}
