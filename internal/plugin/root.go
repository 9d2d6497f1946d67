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

// Package plugin is `kubectl pqcache`, the kubectl plugin for day-two work with Datasets and
// BenchRuns: status (root.go, status.go), sync now and follow it (sync.go), why a Dataset is not Ready
// (why.go), a BenchRun's results and report (results.go), and a Dataset's generations. It talks only
// to the API server, with kubectl's flags (--context, --kubeconfig, -n, -A, -o json|yaml).
package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Streams are where a command writes: its output, and what is for people only (progress).
type Streams struct {
	Out, ErrOut io.Writer
}

// options are what every command shares: where the cluster is, which namespaces, what format.
type options struct {
	rules         *clientcmd.ClientConfigLoadingRules
	overrides     *clientcmd.ConfigOverrides
	allNamespaces bool
	output        string
	streams       Streams
	// now is the clock ages and freshness are measured against.
	now func() time.Time
}

// NewCommand returns `kubectl pqcache` and its commands, with kubectl's flags for the cluster
// (--kubeconfig, --context, -n and the others clientcmd knows).
func NewCommand(streams Streams) *cobra.Command {
	o := &options{rules: clientcmd.NewDefaultClientConfigLoadingRules(), overrides: &clientcmd.ConfigOverrides{}, streams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:           "kubectl-pqcache",
		Short:         "Work with pqcache's Datasets and BenchRuns: status, sync, why, results, report, generations",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.PersistentFlags().StringVar(&o.rules.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).")
	clientcmd.BindOverrideFlags(o.overrides, cmd.PersistentFlags(), clientcmd.RecommendedConfigOverrideFlags(""))
	cmd.PersistentFlags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Every namespace.")
	cmd.PersistentFlags().StringVarP(&o.output, "output", "o", "", "Output format: json or yaml (default: a table for people).")
	cmd.AddCommand(o.statusCommand(), o.syncCommand(), o.whyCommand(), o.resultsCommand(), o.reportCommand(), o.generationsCommand())
	return cmd
}

// client is a client for the cluster the flags name, and the namespace to work in ("" with -A).
func (o *options) client() (client.Client, string, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.rules, o.overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the cluster: %w", err)
	}
	if o.allNamespaces {
		return c, "", nil
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// printObject writes v as -o asks (json or yaml), reporting whether it did; a table is the caller's.
func (o *options) printObject(w io.Writer, v any) (bool, error) {
	switch o.output {
	case "":
		return false, nil
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(w, string(data))
		return true, err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(data)
		return true, err
	}
	return true, fmt.Errorf("-o %q: want json or yaml", o.output)
}

// dataset connects and reads the named Dataset in the namespace kubectl's flags choose: the start of
// every command about one Dataset.
func (o *options) dataset(ctx context.Context, arg string) (client.Client, *datav1alpha1.Dataset, error) {
	name, err := objectName(arg, datasetKind)
	if err != nil {
		return nil, nil, err
	}
	c, ns, err := o.namedClient()
	if err != nil {
		return nil, nil, err
	}
	ds, err := getDataset(ctx, c, ns, name)
	return c, ds, err
}

// namedClient is client for a command about one named object, which lives in one namespace: -A, which
// means every namespace, is refused rather than read as the empty one.
func (o *options) namedClient() (client.Client, string, error) {
	if o.allNamespaces {
		return nil, "", errors.New("-A (--all-namespaces) is for status; a command about one object takes -n NAMESPACE")
	}
	return o.client()
}

// getDataset reads one Dataset of the namespace.
func getDataset(ctx context.Context, c client.Client, ns, name string) (*datav1alpha1.Dataset, error) {
	var ds datav1alpha1.Dataset
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds); err != nil {
		return nil, fmt.Errorf("dataset %s/%s: %w", ns, name, err)
	}
	return &ds, nil
}
