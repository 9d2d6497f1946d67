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
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// A run's workload is settled before its first Job: a built-in one by name, or the user's (from a
// ConfigMap, or inline) checked, its queries selected, and copied into a ConfigMap the run owns, which
// its Jobs mount. A later change to the user's ConfigMap changes nothing in a run that has started.

const (
	// defaultWorkloadKey is the ConfigMap key a workload is read from when configMapRef names none.
	defaultWorkloadKey = "workload.yaml"
	// workloadFile is the key of the run's own copy, and workloadMountPath where Jobs mount it.
	workloadFile      = "workload.json"
	workloadMountPath = "/workload"
	// MaxRunQueries bounds a run's queries: each Job reports every query in its termination message.
	MaxRunQueries = 32
	// maxWorkloadCopy bounds the run's copy of a user's workload: a ConfigMap holds at most 1 MiB,
	// metadata included.
	maxWorkloadCopy = 1000 * 1024
)

// runWorkload is a run's settled workload.
type runWorkload struct {
	w *workload.Workload
	// builtin is the built-in's name, or "" for the user's (which the Jobs read from the run's copy).
	builtin string
	// names are the queries the run runs, in order.
	names []string
}

// loadWorkload settles the run's workload, or says why it cannot yet (wait) or ever (refuse). A
// workload that cannot run is a verdict for the run's status, not an error to retry: the steps below
// turn it into the gate's refuse reason, and err is only a failure to read the user's ConfigMap.
func (r *Reconciler) loadWorkload(ctx context.Context, run *datav1alpha1.BenchRun) (rw runWorkload, g gate, err error) {
	spec := run.Spec.Workload
	switch {
	case spec == nil || spec.Builtin != "":
		rw.builtin = datav1alpha1.WorkloadTPCH
		if spec != nil {
			rw.builtin = spec.Builtin
		}
		rw.w, g.refuse = builtinWorkload(rw.builtin)
	case spec.Inline != nil:
		rw.w = inlineWorkload(spec.Inline)
	default:
		data, wait, err := r.workloadConfigMap(ctx, run.Namespace, spec.ConfigMapRef)
		if err != nil || wait != "" {
			return rw, gate{wait: wait}, err
		}
		rw.w, g.refuse = parseWorkload(spec.ConfigMapRef.Name, data)
	}
	if g.refuse != "" {
		return rw, g, nil
	}
	if rw.names, g.refuse = selectQueries(rw.w, run.Spec.Queries); g.refuse != "" {
		return rw, g, nil
	}
	return rw, gate{refuse: copyTooBig(rw)}, nil
}

// builtinWorkload is the built-in workload of that name, or why there is none (refuse).
func builtinWorkload(name string) (w *workload.Workload, refuse string) {
	w, err := workload.Builtin(name)
	if err != nil {
		return w, err.Error()
	}
	return w, ""
}

// parseWorkload is the workload in the text of the user's ConfigMap, named after the ConfigMap when it
// has no name of its own, or why it cannot be read (refuse).
func parseWorkload(configMap, data string) (w *workload.Workload, refuse string) {
	w, err := workload.Parse([]byte(data))
	if err != nil {
		return w, fmt.Sprintf("ConfigMap %s: %v", configMap, err)
	}
	if w.Name == "" {
		w.Name = configMap
	}
	return w, ""
}

// selectQueries checks the workload and picks the run's queries (all of them when the spec names
// none), or says why the run cannot have them (refuse).
func selectQueries(w *workload.Workload, queries []string) (names []string, refuse string) {
	if err := w.Validate(); err != nil {
		return nil, err.Error()
	}
	names, err := w.ParseSelection(strings.Join(queries, ","))
	if err != nil {
		return nil, "spec.queries: " + err.Error()
	}
	if names == nil {
		names = w.QueryNames()
	}
	if len(names) > MaxRunQueries {
		return nil, fmt.Sprintf("the run has %d queries; a BenchRun runs at most %d (each Job reports every query in its termination message): choose some with spec.queries, or split the workload into several runs", len(names), MaxRunQueries)
	}
	return names, ""
}

// copyTooBig says why a user's workload cannot be copied for the run's Jobs: its copy would not fit
// a ConfigMap. Said before any Job starts, instead of a run that fails at its first step.
func copyTooBig(rw runWorkload) string {
	if rw.builtin != "" {
		return ""
	}
	data, err := json.Marshal(rw.w)
	if err != nil || len(data) <= maxWorkloadCopy {
		return ""
	}
	return fmt.Sprintf("the workload is %d KiB once encoded for the run's Jobs, and its copy must fit a ConfigMap (%d KiB): split it into several workloads", len(data)/1024, maxWorkloadCopy/1024)
}

// workloadConfigMap reads the workload text from the user's ConfigMap: wait says what is missing.
func (r *Reconciler) workloadConfigMap(ctx context.Context, ns string, ref *datav1alpha1.WorkloadConfigMapRef) (data, wait string, err error) {
	key := ref.Key
	if key == "" {
		key = defaultWorkloadKey
	}
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Sprintf("the workload's ConfigMap %q does not exist", ref.Name), nil
		}
		return "", "", fmt.Errorf("reading the workload's ConfigMap %s: %w", ref.Name, err)
	}
	data, ok := cm.Data[key]
	if !ok {
		return "", fmt.Sprintf("the workload's ConfigMap %q has no key %q", ref.Name, key), nil
	}
	return data, "", nil
}

// inlineWorkload is a BenchRun's inline workload in the runner's terms.
func inlineWorkload(in *datav1alpha1.InlineWorkload) *workload.Workload {
	w := &workload.Workload{Name: in.Name, Tables: map[string]workload.Table{}}
	if w.Name == "" {
		w.Name = "inline"
	}
	for _, t := range in.Tables {
		w.Tables[t.Name] = workload.Table{Path: t.Path, Hive: t.Hive, FileRowNumber: t.FileRowNumber}
	}
	for _, q := range in.Queries {
		w.Queries = append(w.Queries, workload.Query{Name: q.Name, SQL: q.SQL, Polars: q.Polars})
	}
	return w
}

// workloadCopyName is the ConfigMap holding a run's copy of a user's workload.
func workloadCopyName(run *datav1alpha1.BenchRun) string {
	return jobs.FitName(run.Name, "-workload", jobs.MaxObjectName)
}

// copyWorkload writes the run's copy of a user's workload (the run owns it); a copy written by an
// earlier reconcile stays as it is.
func (r *Reconciler) copyWorkload(ctx context.Context, run *datav1alpha1.BenchRun, rw runWorkload) error {
	if rw.builtin != "" {
		return nil
	}
	data, err := json.Marshal(rw.w)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: workloadCopyName(run),
			Labels: map[string]string{jobs.LabelName: "pqcache", jobs.LabelManagedBy: "pqcache", LabelBenchRun: datav1alpha1.LabelValue(run.Name), jobs.LabelComponent: componentBench}},
		Data: map[string]string{workloadFile: string(data)},
	}
	if err := controllerutil.SetControllerReference(run, cm, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("copying the workload into ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

// workloadArg is what a Job's runner is told to run: the built-in's name, or the run's copy.
func workloadArg(run *datav1alpha1.BenchRun) string {
	if w := run.Spec.Workload; w == nil || w.Builtin != "" {
		if w == nil {
			return datav1alpha1.WorkloadTPCH
		}
		return w.Builtin
	}
	return workloadMountPath + "/" + workloadFile
}

// mountWorkload mounts the run's copy of a user's workload into the bench container.
func mountWorkload(pod *corev1.PodSpec, c *corev1.Container, run *datav1alpha1.BenchRun) {
	if w := run.Spec.Workload; w == nil || w.Builtin != "" {
		return
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "workload", MountPath: workloadMountPath, ReadOnly: true})
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "workload", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: workloadCopyName(run)}}}})
}
