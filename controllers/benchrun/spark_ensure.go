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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// The operator binds the chart's SparkDriverRole to each run's driver account, by name
// (docs/security.md, "The Spark driver's grants"), and writes the Job's Spark configuration.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=pqcache-spark-driver
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create

// ensureSparkDriver creates, before a spark Job, what its driver needs: the run's driver
// ServiceAccount and its RoleBinding to SparkDriverRole (once per run) and the Job's ConfigMap of Spark configuration and
// executor pod template, all controlled by the run so that they go with it. The run's spec cannot
// change, so an object that exists already is the one this would create.
func (r *Reconciler) ensureSparkDriver(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob) error {
	sa, binding := sparkDriverObjects(run)
	cm, err := sparkConfigMap(run, ds, j, r.Worker)
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{sa, binding, cm} {
		if err := controllerutil.SetControllerReference(run, obj, r.Scheme()); err != nil {
			return err
		}
		if err := r.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s for the Spark driver of Job %s: %w", obj, obj.GetName(), j.name, err)
		}
	}
	return nil
}

// withSparkExecutors adds to a spark Job's pods its executors, so that an executor that fits no node
// (or cannot start) is reported as the Job's own pod would be. Other Jobs' pods come back as they are.
func (r *Reconciler) withSparkExecutors(ctx context.Context, run *datav1alpha1.BenchRun, j benchJob, pods []corev1.Pod) ([]corev1.Pod, error) {
	if j.engine.Name != datav1alpha1.EngineSpark {
		return pods, nil
	}
	var list corev1.PodList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{LabelSparkApp: sparkApp(run, j)}); err != nil {
		return nil, fmt.Errorf("listing the Spark executors of Job %s: %w", j.name, err)
	}
	return append(pods, list.Items...), nil
}

// sparkUnsupported says why a run's spark engine cannot read the Dataset, or "": a driver runs as
// its own ServiceAccount (the one its Role is bound to), so it cannot take the bucket's identity from
// the Dataset's (IRSA, Pod Identity) at the same time.
func sparkUnsupported(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) string {
	if jobs.CredentialsAccount(ds) == "" {
		return ""
	}
	for _, e := range run.Spec.Engines {
		if e.Name != datav1alpha1.EngineSpark {
			continue
		}
		for _, in := range run.Spec.Inputs {
			if readsS3(in) || run.Spec.DuringRefresh {
				return fmt.Sprintf("engine %s reads the bucket of Dataset %q, whose credentials are a ServiceAccount's (%s): the Spark driver runs as its own ServiceAccount, so give the Dataset a Secret (credentials.secretRef) or leave the s3 inputs out", engineLabel(e), ds.Name, jobs.CredentialsAccount(ds))
			}
		}
	}
	return ""
}
