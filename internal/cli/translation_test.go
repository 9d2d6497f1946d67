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

package cli

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/pqcache/pqcache/agent"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/worker"
)

// The Dataset fields that are not the sync's options: a Job's deadline and its container's
// resources, which the node agent has no use for.
var jobOnlySyncFields = map[string]bool{"Timeout": true, "Resources": true}

// TestJobAndAgentSyncADatasetAlike runs Datasets, each with one spec field set (every spec.sync field,
// and the source's fields and globs), through the two places that sync a Dataset: a sync Job (the
// controller's worker command line, parsed back by the worker's flags and turned into options as
// `pqcache sync` does) and a node agent (in-process). The engine's options and the bucket's address
// must be the same, but for what is the node's or the process's (see ignore), so a field one path
// forgets makes it fail.
func TestJobAndAgentSyncADatasetAlike(t *testing.T) {
	cases := map[string]func(*datav1alpha1.Dataset){
		"defaults":          func(*datav1alpha1.Dataset) {},
		"parallelism":       func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Parallelism = 3 },
		"partSize binary":   func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.PartSize = ptr.To(resource.MustParse("8Mi")) },
		"partSize fraction": func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.PartSize = ptr.To(resource.MustParse("1.5Mi")) },
		"partSize decimal":  func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.PartSize = ptr.To(resource.MustParse("20M")) },
		"partSize bytes":    func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.PartSize = ptr.To(resource.MustParse("16777216")) },
		"verify Checksum":   func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Verify = datav1alpha1.VerifyChecksum },
		"verify SHA256":     func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Verify = datav1alpha1.VerifySHA256 },
		"verify Size":       func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Verify = datav1alpha1.VerifySize },
		"prune false":       func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Prune = ptr.To(false) },
		"prune true":        func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Prune = ptr.To(true) },
		"keepGenerations 0": func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.KeepGenerations = ptr.To[int32](0) },
		"keepGenerations 5": func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.KeepGenerations = ptr.To[int32](5) },
		"include":           func(ds *datav1alpha1.Dataset) { ds.Spec.Include = []string{"**/*.parquet", "lineitem/**"} },
		"exclude":           func(ds *datav1alpha1.Dataset) { ds.Spec.Exclude = []string{"**/_SUCCESS"} },
		"bucket":            func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Bucket = "warehouse" },
		"prefix":            func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "tpch/sf100/" },
		"no prefix":         func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Prefix = "" },
		"endpoint":          func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Endpoint = "http://s3.example.test:9000" },
		"region":            func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Region = "eu-west-1" },
		"forcePathStyle":    func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.ForcePathStyle = true },
		"a Delta table": func(ds *datav1alpha1.Dataset) {
			ds.Spec.Source.Table = &datav1alpha1.TableSource{Format: datav1alpha1.TableDelta}
		},
		"credentials (by Secret)": func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Credentials = secretCredentials() },
		"replicas.maxBytes":       func(ds *datav1alpha1.Dataset) { ds.Spec.Replicas = maxBytes("50Gi") },
		"replicas.maxBytes 0":     func(ds *datav1alpha1.Dataset) { ds.Spec.Replicas = maxBytes("0") },
		"replicas.maxBytes milli": func(ds *datav1alpha1.Dataset) { ds.Spec.Replicas = maxBytes("1500m") },
	}
	set := map[string]bool{}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			ds := translationDataset()
			change(ds)
			markSet(set, ds.Spec.Sync)
			jobCfg, jobOpts := jobPath(t, ds)
			nodeCfg, nodeOpts, err := agent.SyncOptions(ds, "/var/lib/pqcache/team/sales")
			if err != nil {
				t.Fatalf("agent: %v", err)
			}
			if d := cmp.Diff(jobCfg, nodeCfg, cmpopts.IgnoreFields(s3store.Config{}, "Credentials", "HTTPClient", "Client")); d != "" {
				t.Errorf("the bucket's address (-Job +agent):\n%s", d)
			}
			if d := cmp.Diff(forANode(jobOpts), nodeOpts, ignore); d != "" {
				t.Errorf("the engine's options (-Job +agent):\n%s", d)
			}
		})
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[datav1alpha1.SyncOptions]()) {
		if !set[f.Name] && !jobOnlySyncFields[f.Name] {
			t.Errorf("spec.sync's %s is set in no case: add one", f.Name)
		}
	}
}

// ignore leaves out of the comparison what is the process's or the node's, not the Dataset's: the
// directory (the claim's mount in a Job, the node's cache root for an agent), the logger, the
// progress and dry-run callbacks and the request counters (each process reports its own way). The
// parallelism is compared: it is what the agent asks its node's budget for, before the grant.
var ignore = cmpopts.IgnoreFields(cache.Options{}, "Dir", "Log", "Progress", "OnPlan", "Requests")

// forANode is what a node copy adds to a Job's options: it always publishes at least one generation,
// indexed, since readers on the node mount generations and followers copy them from its agent.
func forANode(o cache.Options) cache.Options {
	g := generations.Policy{Keep: 1, MinAge: wire.DefaultGenerationMinAge}
	if o.Generations != nil {
		g = *o.Generations
	}
	g.Index = true
	o.Generations = &g
	return o
}

// jobPath is the sync Job's worker: the controller's command line, parsed by `pqcache sync`'s flags
// and turned into options as the command does.
func jobPath(t *testing.T, ds *datav1alpha1.Dataset) (s3store.Config, cache.Options) {
	t.Helper()
	var (
		a     wire.SyncArgs
		local localSyncFlags
	)
	parse(t, syncCommand(func(_ *cobra.Command, got wire.SyncArgs, l localSyncFlags) error { a, local = got, l; return nil }), dataset.SyncJobArgs(ds))
	f := syncFlags{SyncOptions: a.SyncOptions, GenerationOptions: a.GenerationOptions, changes: a.Changes, local: local}
	req := syncRequest(&cobra.Command{}, f, a.Source, a.Dir, nil)
	cfg, opts, err := worker.SyncOptions(req.SyncArgs, req.Prefixes, req.Ephemeral)
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	return cfg, opts
}

func translationDataset() *datav1alpha1.Dataset {
	ds := &datav1alpha1.Dataset{}
	ds.Namespace, ds.Name = "team", "sales"
	ds.Spec.Source.S3 = datav1alpha1.S3Source{Bucket: "lake", Prefix: "sales/"}
	return ds
}

func maxBytes(q string) *datav1alpha1.ReplicaPolicy {
	return &datav1alpha1.ReplicaPolicy{MaxBytes: ptr.To(resource.MustParse(q))}
}

func secretCredentials() *datav1alpha1.S3Credentials {
	return &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "s3-creds"}}
}

// markSet records the spec.sync fields that are not zero.
func markSet(set map[string]bool, sy datav1alpha1.SyncOptions) {
	v := reflect.ValueOf(sy)
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			set[v.Type().Field(i).Name] = true
		}
	}
}

// spec.replicas.maxBytes reaches the engine in bytes (a fraction of a byte rounds up), and an
// omitted one is no cap: the comparison above would pass if both paths dropped it.
func TestMaxBytesReachesTheEngine(t *testing.T) {
	for q, want := range map[string]int64{"50Gi": 50 << 30, "0": 0, "1500m": 2, "500M": 500e6} {
		ds := translationDataset()
		ds.Spec.Replicas = maxBytes(q)
		_, opts, err := agent.SyncOptions(ds, "/cache")
		if err != nil || opts.MaxBytes == nil || *opts.MaxBytes != want {
			t.Errorf("maxBytes %s: %v (%v), want %d", q, opts.MaxBytes, err, want)
		}
	}
	if _, opts, err := agent.SyncOptions(translationDataset(), "/cache"); err != nil || opts.MaxBytes != nil {
		t.Errorf("no maxBytes: %v (%v), want no cap", opts.MaxBytes, err)
	}
}
