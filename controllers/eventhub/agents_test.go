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
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/dataset"
)

// testAgents is where the managers of these tests look for node agents (envOptions.agents): no
// kubelet runs in envtest, so the tests create the agents' pods and set their readiness themselves.
var testAgents = dataset.AgentPods{Namespace: "pqcache-system", Selector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/component": "agent"})}

// copyWithoutAgent creates a Ready node, an agent pod on it that is not Ready, and a Dataset with a
// copy on that node whose DatasetReplica the agent has reported on (it has an endpoint): only the
// pod's readiness says the agent is gone.
func (e *env) copyWithoutAgent(name string) (*datav1alpha1.Dataset, *corev1.Pod) {
	e.t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + name, Labels: map[string]string{corev1.LabelHostname: "node-" + name}}}
	e.create(node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	if err := e.c.Status().Update(e.ctx, node); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: testAgents.Namespace}, &corev1.Namespace{}); err != nil {
		e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testAgents.Namespace}})
	}
	agent := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testAgents.Namespace, Name: "agent-" + name, Labels: map[string]string{"app.kubernetes.io/component": "agent"}},
		Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "agent", Image: "example.test/pqcache:test"}}},
	}
	e.create(agent)
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: datav1alpha1.DatasetSpec{
			Source:   datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "lake", Prefix: "tpch/", Endpoint: "http://s3.example.test:9000", ForcePathStyle: true}},
			Replicas: &datav1alpha1.ReplicaPolicy{NodeSelector: map[string]string{corev1.LabelHostname: node.Name}},
			Refresh:  datav1alpha1.RefreshPolicy{Schedule: "@daily"},
		},
	}
	e.create(ds)
	e.agentReports(ds, 0)
	return ds, agent
}

// agentReports writes the Dataset's one DatasetReplica's status as its agent would: its endpoint,
// and generation g.
func (e *env) agentReports(ds *datav1alpha1.Dataset, g int64) {
	e.t.Helper()
	e.eventually("the DatasetReplica of "+ds.Name+" reported", 15*time.Second, func() error {
		var list datav1alpha1.DatasetReplicaList
		if err := e.c.List(e.ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(ds.Name)}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d DatasetReplicas", len(list.Items))
		}
		r := &list.Items[0]
		r.Status.Endpoint, r.Status.Generation = "http://10.0.0.1:7480", g
		return e.c.Status().Update(e.ctx, r)
	})
}

// setPodReady sets the pod's Ready condition, as its kubelet would.
func (e *env) setPodReady(pod *corev1.Pod) {
	e.t.Helper()
	if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		e.t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := e.c.Status().Update(e.ctx, pod); err != nil {
		e.t.Fatal(err)
	}
}

// expectCopiesWithoutAgent waits until the Dataset's status and pqcache_dataset_copies_without_agent,
// scraped from the manager's /metrics on addr, both say n copies have no agent.
func (e *env) expectCopiesWithoutAgent(addr string, ds *datav1alpha1.Dataset, n int) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%d copies of %s without an agent", n, ds.Name), 15*time.Second, func() error {
		st := e.get(ds).Status.Replicas
		if st == nil {
			return fmt.Errorf("no status.replicas")
		}
		inStatus := 0
		for _, c := range st.Nodes {
			if c.Reason == datav1alpha1.ReasonNoAgent {
				inStatus++
			}
		}
		got, ok := gaugeOf(scrape(e.t, addr), "pqcache_dataset_copies_without_agent", ds)
		if inStatus != n || !ok || got != float64(n) {
			return fmt.Errorf("status.replicas.nodes %+v, metric %v (served: %v)", st.Nodes, got, ok)
		}
		return nil
	})
}

// gaugeOf is the value of the Dataset's series of a gauge, and whether it is served.
func gaugeOf(families map[string]*dto.MetricFamily, name string, ds *datav1alpha1.Dataset) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["namespace"] == ds.Namespace && l["dataset"] == ds.Name {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(e.ctx, obj); err != nil {
		e.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
