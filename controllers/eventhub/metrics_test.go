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
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/benchrun"
	"github.com/pqcache/pqcache/test/testproc"
)

// TestMetricsTheChartNamesExist drives the manager through what every pqcache metric records (a
// listing sync, a targeted one applying an event, a listing that finds unannounced changes, a failed
// sync, a finished BenchRun, a copy whose node's agent is down), scrapes its real /metrics endpoint, and fails when the chart's alerting
// rules or its Grafana dashboard name a metric, or a label of one, that the manager does not serve.
func TestMetricsTheChartNamesExist(t *testing.T) {
	addr := freeAddress(t)
	e := startWith(t, envOptions{metrics: addr, agents: true})
	ds := e.dataset("watched", datav1alpha1.EventSource{Webhook: &datav1alpha1.WebhookEventSource{}})
	e.finish(e.runningJob(ds), report(10, nil))
	url := "http://" + e.hub.Addr() + "/events/" + e.ns + "/watched?token=" + e.webhookToken(ds)
	resp, err := postJSON(t, url, s3Event("tpch/lineitem/part-9.parquet", false, time.Now().Add(-time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	e.finish(e.runningJob(ds), report(1, &wire.ChangeOutcome{Applied: 1, PublishedAt: time.Now()}))
	e.eventually("the event applied", 10*time.Second, func() error {
		if st := e.get(ds).Status.Events; st == nil || st.Applied != 1 {
			return fmt.Errorf("status.events %+v", st)
		}
		return nil
	})
	// A manual listing that copies what no notification announced.
	cur := e.get(ds)
	cur.Spec.Refresh.Manual = "now"
	if err := e.c.Update(e.ctx, cur); err != nil {
		t.Fatal(err)
	}
	e.finish(e.runningJob(ds), report(3, nil))
	// A sync that fails.
	broken := e.dataset("broken", datav1alpha1.EventSource{Webhook: &datav1alpha1.WebhookEventSource{}})
	e.finish(e.runningJob(broken), &wire.SyncReport{Result: wire.ResultFailed, Reason: wire.ReasonAccessDenied, Message: "denied"})
	// A BenchRun that finishes.
	e.finishedBenchRun(ds)
	// A copy whose node's agent is not Ready.
	copied, agent := e.copyWithoutAgent("copied")

	// The manager observes a finished sync or run just after its status write lands, so a scrape may
	// come before the counter it names: scrape until every name is served, or report what is missing.
	queries := chartQueries(t)
	e.eventually("every metric and label the chart names is served", 15*time.Second, func() error {
		families := scrape(t, addr)
		var problems []string
		for _, q := range queries {
			problems = append(problems, unserved(q, families)...)
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "\n"))
		}
		return nil
	})

	// The copy counts as without an agent, though its agent reported on it, until the agent's pod is
	// Ready again; the agent's next report wakes the Dataset (the manager polls agents every 30 s).
	e.expectCopiesWithoutAgent(addr, copied, 1)
	e.setPodReady(agent)
	e.agentReports(copied, 1)
	e.expectCopiesWithoutAgent(addr, copied, 0)
}

// finishedBenchRun runs a one-Job BenchRun over ds to its end, as its runner and the Job controller
// would.
func (e *env) finishedBenchRun(ds *datav1alpha1.Dataset) {
	e.t.Helper()
	run := &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "run"}, Spec: datav1alpha1.BenchRunSpec{
		DatasetRef: datav1alpha1.DatasetReference{Name: ds.Name}, Queries: []string{"q1"}, Iterations: 1, Warmups: ptr.To[int32](0),
		Inputs:  []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}},
		Configs: []datav1alpha1.ResourceConfig{{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")}}}}
	if err := e.c.Create(e.ctx, run); err != nil {
		e.t.Fatal(err)
	}
	var job batchv1.Job
	e.eventually("the BenchRun's Job", 15*time.Second, func() error {
		var list batchv1.JobList
		if err := e.c.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{benchrun.LabelBenchRun: "run"}); err != nil {
			return fmt.Errorf("listing the BenchRun's Jobs: %w", err)
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Jobs", len(list.Items))
		}
		job = list.Items[0]
		return nil
	})
	res := &wire.BenchResult{Engine: "duckdb", Workload: "tpch", Queries: []wire.QueryResult{{Name: "q1", Status: wire.StatusSucceeded,
		QueryMeasurements: wire.QueryMeasurements{MedianMillis: 10, Digest: "abc-4", Rows: 4}}}}
	msg, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	if err != nil {
		e.t.Fatal(err)
	}
	e.finishContainer(&job, "bench", string(msg), time.Now().Add(-time.Second))
	e.eventually("the BenchRun finished", 15*time.Second, func() error {
		var cur datav1alpha1.BenchRun
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(run), &cur); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionSucceeded); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Succeeded %+v", c)
		}
		return nil
	})
}

// freeAddress is a 127.0.0.1 address no one listens on (for the manager's metrics server, whose
// port cannot be learnt after it starts).
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// postJSON posts body to url as an S3 event notification's sender does (a JSON body), bound to the
// test.
func postJSON(t *testing.T, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// scrape reads the manager's /metrics as Prometheus would.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// query is one place in the chart that names metrics: an alert (its expression and annotations) or a
// dashboard panel (its expressions and legends).
type query struct {
	where string
	text  string
}

// chartQueries renders the chart's PrometheusRule and dashboard and returns what they query.
func chartQueries(t *testing.T) []query {
	t.Helper()
	helm, err := testproc.Binary("PQCACHE_HELM", "helm")
	if err != nil {
		t.Fatal(err)
	}
	render := func(template string) []byte {
		out, err := exec.CommandContext(t.Context(), helm, "template", "pqcache", "../../charts/pqcache", "--set", "monitoring.prometheusRule.enabled=true",
			"--set", "monitoring.dashboard.enabled=true", "--show-only", template).Output()
		if err != nil {
			t.Fatalf("helm template %s: %v", template, err)
		}
		return out
	}
	var out []query
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(render("templates/prometheusrule.yaml"), &rule); err != nil {
		t.Fatal(err)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			text, _ := json.Marshal(r)
			out = append(out, query{where: fmt.Sprint("alert ", r["alert"]), text: string(text)})
		}
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(render("templates/dashboard.yaml"), &cm); err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []map[string]any `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["pqcache.json"]), &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	for _, p := range dash.Panels {
		text, _ := json.Marshal(p["targets"])
		out = append(out, query{where: fmt.Sprint("panel ", p["title"]), text: string(text)})
	}
	if len(out) < 10 {
		t.Fatalf("only %d alerts and panels found in the chart", len(out))
	}
	return out
}

var (
	metricName = regexp.MustCompile(`\b(pqcache_[a-z0-9_]+|controller_runtime_[a-z0-9_]+)\b`)
	// Labels a query names: matchers, aggregation clauses, $labels in annotations, {{label}} legends.
	labelUses = []*regexp.Regexp{
		regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)\s*\\?"`),
		regexp.MustCompile(`\bby\s*\(([^)]*)\)`),
		regexp.MustCompile(`\$labels\.([a-z_]+)`),
		regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`),
	}
)

// unserved says, for each metric q names that the manager does not serve and each label q names that
// none of its metrics has, what is wrong.
func unserved(q query, families map[string]*dto.MetricFamily) []string {
	var problems []string
	labels := map[string]bool{}
	names := slices.Compact(slices.Sorted(slices.Values(metricName.FindAllString(q.text, -1))))
	for _, name := range names {
		f := family(families, name)
		if f == nil {
			problems = append(problems, fmt.Sprintf("%s names metric %s, which the manager does not serve", q.where, name))
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		if f.GetType() == dto.MetricType_HISTOGRAM {
			labels["le"] = true
		}
	}
	if len(names) == 0 {
		problems = append(problems, fmt.Sprintf("%s names no metric", q.where))
	}
	for _, re := range labelUses {
		for _, m := range re.FindAllStringSubmatch(q.text, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					problems = append(problems, fmt.Sprintf("%s uses label %q, which none of %v has", q.where, l, names))
				}
			}
		}
	}
	return problems
}

// family is the metric family a series name belongs to: a histogram's _bucket, _sum and _count
// series are its family's.
func family(families map[string]*dto.MetricFamily, name string) *dto.MetricFamily {
	if f := families[name]; f != nil {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[base] != nil && families[base].GetType() == dto.MetricType_HISTOGRAM {
			return families[base]
		}
	}
	return nil
}

// finishContainer finishes a Job whose pod's container terminated with message, as the kubelet and
// the Job controller would.
func (e *env) finishContainer(job *batchv1.Job, container, message string, started time.Time) {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, GenerateName: job.Name + "-", Labels: map[string]string{"batch.kubernetes.io/controller-uid": string(job.UID)}},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: container, Image: "example.test/pqcache:test"}}},
	}
	if err := e.c.Create(e.ctx, pod); err != nil {
		e.t.Fatal(err)
	}
	now := metav1.NewTime(started.Add(time.Second))
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Image: "example.test/pqcache:test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", Message: message, FinishedAt: now}}}}
	if err := e.c.Status().Update(e.ctx, pod); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(job), job); err != nil {
		e.t.Fatal(err)
	}
	start := metav1.NewTime(started)
	job.Status.StartTime, job.Status.CompletionTime, job.Status.Succeeded = &start, &now, 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	if err := e.c.Status().Update(e.ctx, job); err != nil {
		e.t.Fatal(err)
	}
}
