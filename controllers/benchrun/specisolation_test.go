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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// Every spec ends with no BenchRun and no unfinished bench Job left anywhere. The suite's manager caps
// bench Jobs at three across the cluster, and envtest runs no garbage collector or namespace
// controller, so a spec that ends while its Jobs still run (most do: they check a state, not an
// ending) would hold those slots for every later spec. Which specs then wait depends on the random
// order; under a slow machine one held slot too many turned into 17 failures in one CI run.
var _ = AfterEach(func() {
	var runs datav1alpha1.BenchRunList
	Expect(k8sClient.List(ctx, &runs)).To(Succeed())
	for i := range runs.Items {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &runs.Items[i]))).To(Succeed())
	}
	// A reconcile that read a run just before its deletion may still create one Job: delete until none
	// is left.
	Eventually(func() error {
		var found batchv1.JobList
		if err := k8sClient.List(ctx, &found, client.MatchingLabels{jobs.LabelComponent: componentBench}); err != nil {
			return err
		}
		for i := range found.Items {
			err := k8sClient.Delete(ctx, &found.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if len(found.Items) > 0 {
			return fmt.Errorf("%d bench Job(s) were left", len(found.Items))
		}
		return nil
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
})
