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

package spark

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pqcache/pqcache/test/s3test"
)

// sessionConf runs run.py's session_conf for a workload's s3 block and an environment, without
// starting Spark, and returns the settings the application would get.
func sessionConf(t *testing.T, e Engine, s3 any, env map[string]string) map[string]string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"w": map[string]any{"workload": "w", "s3": s3}, "env": env})
	cmd := exec.CommandContext(t.Context(), e.Python, "-B", "-c",
		"import json, sys, tempfile, run; v = json.load(sys.stdin); print(json.dumps(run.session_conf(v['w'], v['env'], tempfile.mkdtemp())))")
	cmd.Dir = e.Dir
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("session_conf: %v: %s", err, stderr.String())
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return got
}

// TestSessionConf: what run.py tells Spark. The master and jars from the environment the engine
// sets; s3a's endpoint, region, addressing and credentials from the workload and the AWS environment
// (TLS off only for an http:// endpoint, the session-token provider only with a token); and every
// line of $PQCACHE_SPARK_CONF, the Kubernetes runner's executor settings, applied last so that it
// overrides run.py's own, with ${env:NAME} references expanded.
func TestSessionConf(t *testing.T) {
	e := engine(t)
	jars := t.TempDir()
	conf := filepath.Join(t.TempDir(), "spark.conf")
	lines := "# executors\nspark.executor.instances = 3\nspark.kubernetes.namespace=bench\n\nspark.ui.enabled=true\nspark.executor.extraJavaOptions=-Da=b=c\nspark.driver.host=${env:POD_IP}\n"
	if err := os.WriteFile(conf, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got := sessionConf(t, e, map[string]any{"Endpoint": "http://127.0.0.1:7070", "Region": "eu-west-1", "PathStyle": true}, map[string]string{
		EnvMaster: "k8s://https://kubernetes.default.svc", EnvJars: jars, EnvConf: conf,
		"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok", "POD_IP": "10.1.2.3",
	})
	want := map[string]string{
		"spark.app.name": "pqcache-w", "spark.master": "k8s://https://kubernetes.default.svc",
		"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "true", "spark.ui.showConsoleProgress": "false", "spark.sql.ansi.enabled": "false",
		"spark.driver.extraClassPath": filepath.Join(jars, "*"), "spark.executor.extraClassPath": filepath.Join(jars, "*"),
		"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:7070", "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
		"spark.hadoop.fs.s3a.connection.ssl.enabled": "false", "spark.hadoop.fs.s3a.path.style.access": "true",
		"spark.hadoop.fs.s3a.access.key": "k", "spark.hadoop.fs.s3a.secret.key": "s", "spark.hadoop.fs.s3a.session.token": "tok",
		"spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
		"spark.executor.instances":                     "3", "spark.kubernetes.namespace": "bench", "spark.executor.extraJavaOptions": "-Da=b=c",
		// ${env:NAME} expanded by run.py: Spark left the driver's host unexpanded for its executors.
		"spark.driver.host": "10.1.2.3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}

	// AWS itself: virtual-hosted addressing, TLS, the region from the environment, and s3a's own
	// credential chain when no keys are given; local mode by default.
	got = sessionConf(t, e, map[string]any{"PathStyle": false}, map[string]string{"AWS_REGION": "us-west-2"})
	for k, w := range map[string]string{"spark.master": "local[*]", "spark.hadoop.fs.s3a.path.style.access": "false", "spark.hadoop.fs.s3a.endpoint.region": "us-west-2"} {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	for _, k := range []string{"spark.hadoop.fs.s3a.endpoint", "spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.aws.credentials.provider", "spark.driver.extraClassPath"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %q, want it unset", k, v)
		}
	}

	// No region anywhere: us-east-1, as pqcache's sync, DuckDB and Polars sign (s3a's own guess got a
	// 400 from versitygw).
	got = sessionConf(t, e, map[string]any{"PathStyle": true, "Endpoint": "http://s3.example:7070"}, map[string]string{})
	if r := got["spark.hadoop.fs.s3a.endpoint.region"]; r != "us-east-1" {
		t.Errorf("region %q without one anywhere, want us-east-1", r)
	}
}

// TestUsageErrors: mistakes of invocation exit with status 2 before Spark starts: an unknown query,
// a missing workload file or argument, a query with only a Polars form, a malformed or missing
// settings file, a jars directory that is not one.
func TestUsageErrors(t *testing.T) {
	e := engine(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "workload.json")
	body := `{"workload": "w", "tables": {}, "queries": [{"name": "q", "sql": "SELECT 1"}, {"name": "p", "polars": "def query(t): pass"}]}`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("spark.executor.instances 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runPy := filepath.Join(e.Dir, "run.py")
	for name, c := range map[string]struct {
		args []string
		env  string
		want string
	}{
		"an unknown query":       {[]string{"--workload", file, "--query", "q99"}, "", "no query 'q99'"},
		"no workload file":       {[]string{"--workload", filepath.Join(dir, "missing.json"), "--query", "q"}, "", "missing.json"},
		"a missing argument":     {[]string{"--workload", file}, "", "required"},
		"a Polars-only query":    {[]string{"--workload", file, "--query", "p"}, "", "has no sql"},
		"a malformed conf file":  {[]string{"--workload", file, "--query", "q"}, EnvConf + "=" + bad, "want key=value"},
		"a missing conf file":    {[]string{"--workload", file, "--query", "q"}, EnvConf + "=" + filepath.Join(dir, "none.conf"), "none.conf"},
		"a jars file, not a dir": {[]string{"--workload", file, "--query", "q"}, EnvJars + "=" + bad, "not a directory"},
	} {
		cmd := exec.CommandContext(t.Context(), e.Python, append([]string{"-B", runPy}, c.args...)...)
		cmd.Env = append(os.Environ(), "AWS_CA_BUNDLE=", c.env)
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %v, want exit status 2 saying %q: %s", name, err, c.want, out)
		}
	}
}

// TestTrustStore: AWS_CA_BUNDLE becomes a PKCS12 trust store for the JVM holding the JDK's CAs and
// the bundle's private CA, imported once, while a certificate the JDK already trusts (here the
// system's whole bundle, as this machine's AWS_CA_BUNDLE names it) is not imported again.
func TestTrustStore(t *testing.T) {
	e := engine(t)
	_, ca := s3test.StartTLS(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.pem")
	system, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt") // absent: the private CA alone
	if err := os.WriteFile(bundle, append(append(slices.Clone(system), ca...), ca...), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "import sys, run; store, pw = run.trust_store(sys.argv[1], None, sys.argv[2]); print(store, pw)"
	out, err := exec.CommandContext(t.Context(), e.Python, "-B", "-c", script, bundle, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("trust_store: %v: %s", err, out)
	}
	store, password, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	list, err := exec.CommandContext(t.Context(), "keytool", "-list", "-keystore", store, "-storepass", password).CombinedOutput()
	if err != nil {
		t.Fatalf("keytool -list: %v: %s", err, list)
	}
	if n := strings.Count(string(list), "pqcache-ca-"); n != 1 {
		t.Errorf("the trust store has %d certificates imported from the bundle, want the private CA once:\n%s", n, list)
	}
}
