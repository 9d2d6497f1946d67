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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/internal/s3creds"
)

const testEndpoint = "https://pqcache-s3.pqcache-system.svc"

// copiesDataset keeps per-node copies, generation 4 held on node-a and node-b, with a credentials
// Secret an endpoint reader must not get.
func copiesDataset() *datav1alpha1.Dataset {
	ds := irsaDataset()
	ds.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "bucket-keys"}}
	ds.Spec.Source.S3.Prefix = "tpch/sf1/"
	ds.Spec.Replicas = &datav1alpha1.ReplicaPolicy{}
	ds.Status.Replicas = &datav1alpha1.ReplicasStatus{Nodes: []datav1alpha1.ReplicaNodeStatus{
		{Node: "node-a", Generation: 4}, {Node: "node-b", Generation: 4}, {Node: "node-c", Generation: 3}}}
	return ds
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// An endpoint input's bench pod reads the Dataset's own s3:// URL through the readers' endpoint,
// with the namespace's readers' key by reference and a pin of the run's generation, trusts the
// endpoint's CA, runs on a node that holds that generation, and gets no Dataset credential and no
// volume.
func TestEndpointInputJob(t *testing.T) {
	opts := jobs.DefaultWorkerOptions()
	opts.ReadersEndpoint = testEndpoint
	run := accountRun("", datav1alpha1.InputEndpoint)
	run.UID, run.Status.DatasetGeneration = "0b1c", 4
	cfg := datav1alpha1.ResourceConfig{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")}
	for _, engine := range []datav1alpha1.EngineName{datav1alpha1.EngineDuckDB, datav1alpha1.EnginePolars, datav1alpha1.EngineSpark} {
		j := benchJob{engine: datav1alpha1.BenchEngine{Name: engine}, config: cfg, input: run.Spec.Inputs[0], name: "r-small"}
		pod := buildBenchJob(run, copiesDataset(), j, opts, time.Hour).Spec.Template.Spec
		c := pod.Containers[0]
		env := envOf(c)
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "--data s3://analytics/tpch/sf1/ --endpoint "+testEndpoint+" ") || !strings.Contains(args, "--path-style") {
			t.Errorf("%s: args %q do not read the Dataset's URL through the endpoint", engine, args)
		}
		if ref := env["AWS_ACCESS_KEY_ID"].ValueFrom; ref == nil || ref.SecretKeyRef.Name != s3creds.SecretName {
			t.Errorf("%s: access key %+v, want from Secret %s", engine, env["AWS_ACCESS_KEY_ID"], s3creds.SecretName)
		}
		if got := env["AWS_SESSION_TOKEN"].Value; got != "pqcache-pin/v1;s=0b1c;g=tpch:4" {
			t.Errorf("%s: pin %q", engine, got)
		}
		if !strings.HasSuffix(env["AWS_CA_BUNDLE"].Value, "/ca.crt") || !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.ConfigMap != nil && v.ConfigMap.Name == s3creds.ConfigMapName
		}) {
			t.Errorf("%s: the endpoint's CA is not mounted: %v", engine, env["AWS_CA_BUNDLE"])
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "bucket-keys" {
				t.Errorf("%s: the bench pod gets the Dataset's credentials (%s)", engine, e.Name)
			}
		}
		if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.CSI != nil || v.PersistentVolumeClaim != nil }) {
			t.Errorf("%s: an endpoint input mounts a volume", engine)
		}
		terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		var nodes []string
		for _, term := range terms {
			nodes = append(nodes, term.MatchFields[0].Values...)
		}
		if !slices.Equal(nodes, []string{"node-a", "node-b"}) {
			t.Errorf("%s: placed on %v, want the nodes holding generation 4", engine, nodes)
		}
	}
}

// The executors of a Spark run over the endpoint read it as its driver does: key, pin and CA, on
// nodes holding the generation.
func TestEndpointInputSparkExecutors(t *testing.T) {
	opts := jobs.DefaultWorkerOptions()
	opts.ReadersEndpoint = testEndpoint
	run := accountRun("", datav1alpha1.InputEndpoint)
	run.UID, run.Status.DatasetGeneration = "0b1c", 4
	cfg := datav1alpha1.ResourceConfig{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")}
	j := benchJob{engine: datav1alpha1.BenchEngine{Name: datav1alpha1.EngineSpark}, config: cfg, input: run.Spec.Inputs[0], name: "r-small"}
	pod := sparkExecutorPod(run, copiesDataset(), j, opts).Spec
	env := envOf(pod.Containers[0])
	if env["AWS_SESSION_TOKEN"].Value != "pqcache-pin/v1;s=0b1c;g=tpch:4" || env["AWS_ACCESS_KEY_ID"].ValueFrom == nil || env["AWS_CA_BUNDLE"].Value == "" {
		t.Errorf("executor env %v", env)
	}
	conf := sparkConf(run, copiesDataset(), j, opts)
	for _, want := range []string{"spark.hadoop.fs.s3a.endpoint=" + testEndpoint, "spark.hadoop.fs.s3a.path.style.access=true", "spark.hadoop.fs.s3a.connection.ssl.enabled=true"} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("Spark conf lacks %q:\n%s", want, conf)
		}
	}
}

// An endpoint input is refused, before any Job, where it cannot read: no endpoint served, a Dataset
// without copies on nodes, a run during refreshes.
func TestEndpointInputRefusals(t *testing.T) {
	run := accountRun("", datav1alpha1.InputVolume, datav1alpha1.InputEndpoint)
	during := accountRun("", datav1alpha1.InputEndpoint)
	during.Spec.DuringRefresh = true
	for _, tc := range []struct {
		name, endpoint, says string
		run                  *datav1alpha1.BenchRun
		ds                   *datav1alpha1.Dataset
	}{
		{"no endpoint served", "", "does not serve", run, copiesDataset()},
		{"a Dataset on a claim", testEndpoint, "keeps no copies on nodes", run, irsaDataset()},
		{"during refreshes", testEndpoint, "during refreshes", during, copiesDataset()},
		{"all well", testEndpoint, "", run, copiesDataset()},
	} {
		got := endpointUnsupported(tc.run, tc.ds, tc.endpoint)
		if tc.says == "" && got != "" || tc.says != "" && !strings.Contains(got, tc.says) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.says)
		}
	}
	if got := endpointUnsupported(accountRun("", datav1alpha1.InputVolume), irsaDataset(), ""); got != "" {
		t.Errorf("a run without an endpoint input: %q", got)
	}
}
