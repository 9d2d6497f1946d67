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

// Package monitoring checks the chart's alerting rules with Prometheus' own promtool: they parse, and
// every alert fires on series that should fire it and stays quiet on series that should not
// (testdata/alerts_test.yaml). That the metrics and labels they name exist is checked against the
// manager's real /metrics (controllers/eventhub's TestMetricsTheChartNamesExist).
package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pqcache/pqcache/test/testproc"
)

// RenderRules renders the chart's PrometheusRule with its default thresholds and returns its rule
// groups as a Prometheus rules file.
func renderRules(t *testing.T) []byte {
	t.Helper()
	helm, err := testproc.Binary("PQCACHE_HELM", "helm")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), helm, "template", "pqcache", "../../charts/pqcache", "--set", "monitoring.prometheusRule.enabled=true",
		"--show-only", "templates/prometheusrule.yaml").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &rule); err != nil || rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		t.Fatalf("the chart's PrometheusRule: %v\n%s", err, out)
	}
	groups, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

func TestAlertingRules(t *testing.T) {
	promtool, err := testproc.Binary("PQCACHE_PROMTOOL", "promtool")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), renderRules(t), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out.String())
	}
}

// Every alert of the rules has a test in testdata/alerts_test.yaml.
func TestEveryAlertIsTested(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(renderRules(t), &rules); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
				t.Errorf("alert %s has no test in testdata/alerts_test.yaml", r.Alert)
			}
		}
	}
}
