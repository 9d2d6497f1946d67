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

package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func TestLint(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
}

func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

// generatedRules are the manager's RBAC rules generated from the controllers' markers.
func generatedRules(t *testing.T) []any {
	t.Helper()
	data, err := os.ReadFile("../../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role map[string]any
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	return role["rules"].([]any)
}

func TestDefaults(t *testing.T) {
	r := render(t)
	args := r.managerArgs(t)
	for _, want := range []string{
		"manager", "--leader-elect=true", "--leader-election-namespace=pqcache-system", "--metrics-bind-address=:8080",
		"--worker-image=ghcr.io/pqcache/pqcache:" + appVersion(t), "--polars-image=ghcr.io/pqcache/pqcache-polars:" + appVersion(t), "--events-bind-address=:8082", "--max-concurrent-syncs=10", "--max-concurrent-bench-jobs=4", "--max-bench-jobs-per-node=1", "--sync-job-ttl=1h",
		"--zap-log-level=info", "--zap-encoder=json",
	} {
		if !hasArg(args, want) {
			t.Errorf("manager args %v lack %q", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--watch-namespaces") || strings.HasPrefix(a, "--worker-service-account") {
			t.Errorf("unexpected %s by default", a)
		}
	}

	dep := r.one(t, "Deployment").Object
	pod, _, _ := unstructured.NestedMap(dep, "spec", "template", "spec")
	if v, _, _ := unstructured.NestedBool(pod, "securityContext", "runAsNonRoot"); !v {
		t.Error("pod does not run as non-root")
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !v {
		t.Error("root filesystem is writable")
	}
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); v {
		t.Error("privilege escalation allowed")
	}
	if drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop"); !reflect.DeepEqual(drop, []string{"ALL"}) {
		t.Errorf("capabilities drop %v", drop)
	}

	// RBAC: exactly the generated rules, cluster-wide; leader election in the release namespace. The
	// other ClusterRoles are the users' aggregated ones (aggregated_roles_test.go), which bind nothing.
	var clusterRoles []string
	for _, cr := range r.all("ClusterRole") {
		clusterRoles = append(clusterRoles, cr.GetName())
	}
	if slices.Sort(clusterRoles); !reflect.DeepEqual(clusterRoles, []string{"pq-pqcache-manager", "pqcache-edit", "pqcache-spark-driver", "pqcache-view"}) {
		t.Errorf("ClusterRoles %v, want the manager's, the Spark drivers' (bound per run) and the users' aggregated view and edit", clusterRoles)
	}
	cr := r.named(t, "ClusterRole", "pq-pqcache-manager")
	if rules := cr.Object["rules"].([]any); !reflect.DeepEqual(rules, generatedRules(t)) {
		t.Errorf("ClusterRole rules differ from config/rbac/role.yaml:\n%v", rules)
	}
	if got := len(r.all("Role")); got != 1 {
		t.Errorf("%d Roles, want the leader-election one", got)
	}
	r.one(t, "ServiceAccount")
	if got := len(r.all("Service")); got != 2 {
		t.Errorf("%d Services, want metrics and events", got)
	}
	if len(r.all("ServiceMonitor")) != 0 {
		t.Error("ServiceMonitor rendered without being asked for")
	}

	// CRDs: present, kept on uninstall, and the same as config/crd/bases.
	crds := r.all("CustomResourceDefinition")
	if len(crds) != 3 {
		t.Fatalf("%d CRDs, want 3 (Dataset, BenchRun, DatasetReplica)", len(crds))
	}
	for _, crd := range crds {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s lacks helm.sh/resource-policy: keep", crd.GetName())
		}
		data, err := os.ReadFile(filepath.Join("../../config/crd/bases", "data.pqcache.dev_"+strings.Split(crd.GetName(), ".")[0]+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var base map[string]any
		if err := yaml.Unmarshal(data, &base); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(base["spec"], crd.Object["spec"]) {
			t.Errorf("the chart's %s differs from config/crd/bases: run make manifests", crd.GetName())
		}
	}
}

func TestNamespacedWatch(t *testing.T) {
	r := render(t, "watchNamespaces={team-a,team-b}", "worker.progress.enabled=true")
	// Cluster-wide, a namespaced install grants only reading nodes (cluster-scoped: no Role can).
	var clusterRoles []string
	for _, cr := range r.all("ClusterRole") {
		clusterRoles = append(clusterRoles, cr.GetName())
	}
	if slices.Sort(clusterRoles); !reflect.DeepEqual(clusterRoles, []string{"pq-pqcache-nodes", "pqcache-edit", "pqcache-spark-driver", "pqcache-view", "pqcache-worker-progress"}) {
		t.Errorf("a namespaced install grants the ClusterRoles %v, want reading nodes, the workers' progress policy and the users' aggregated view and edit (bound by nobody)", clusterRoles)
	}
	nodes := r.named(t, "ClusterRole", "pq-pqcache-nodes")
	want := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get", "list", "patch", "watch"}}}
	if !reflect.DeepEqual(nodes.Object["rules"], want) {
		t.Errorf("pqcache-nodes rules %v", nodes.Object["rules"])
	}
	if got := len(r.all("ClusterRoleBinding")); got != 1 {
		t.Errorf("a namespaced install binds %d ClusterRoles, want only pqcache-nodes", got)
	}
	namespaces := map[string]bool{}
	for _, role := range r.all("Role") {
		if strings.HasSuffix(role.GetName(), "-manager") {
			namespaces[role.GetNamespace()] = true
			if !reflect.DeepEqual(role.Object["rules"], generatedRules(t)) {
				t.Errorf("Role in %s has other rules than config/rbac/role.yaml", role.GetNamespace())
			}
		}
	}
	if !namespaces["team-a"] || !namespaces["team-b"] || len(namespaces) != 2 {
		t.Errorf("manager Roles in %v, want team-a and team-b", namespaces)
	}
	args := r.managerArgs(t)
	if !hasArg(args, "--watch-namespaces=team-a,team-b") || !hasArg(args, "--worker-service-account=pqcache-worker") {
		t.Errorf("manager args %v", args)
	}
	workerSAs := 0
	for _, sa := range r.all("ServiceAccount") {
		if sa.GetName() == "pqcache-worker" {
			workerSAs++
		}
	}
	if workerSAs != 2 || len(r.all("ValidatingAdmissionPolicy")) != 3 {
		t.Errorf("progress: %d worker ServiceAccounts, %d policies (want the workers', the BenchRuns' and the Datasets')", workerSAs, len(r.all("ValidatingAdmissionPolicy")))
	}
	r.named(t, "ValidatingAdmissionPolicy", "pqcache-worker-progress")
}

// TestAgent: the node agent is off by default; on, without its CSI driver, it is a DaemonSet that
// runs as a non-root user without any capability on its hostPath (TestAgentOnlyTheMountIsPrivileged),
// with exactly the permissions templates/agent.yaml explains (its peers' grants are
// templates/peer-tls.yaml's, TestPeerTLS).
func TestAgent(t *testing.T) {
	if n := len(render(t).all("DaemonSet")); n != 0 {
		t.Fatalf("%d DaemonSets by default, want none: the agent is opt-in", n)
	}
	r := render(t, "agent.enabled=true", "agent.csi.enabled=false", "agent.cacheRoot=/mnt/nvme/pqcache", "agent.nodeSelector.pool=cache")
	ds := r.one(t, "DaemonSet").Object
	pod, _, _ := unstructured.NestedMap(ds, "spec", "template", "spec")
	c := pod["containers"].([]any)[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{"agent", "--cache-root=/cache", "--peer-listen=:7480", "--parallelism=16"} {
		if !hasArg(args, want) {
			t.Errorf("agent args %v lack %q", args, want)
		}
	}
	vols, _, _ := unstructured.NestedSlice(pod, "volumes")
	if hp, _, _ := unstructured.NestedString(vols[0].(map[string]any), "hostPath", "path"); hp != "/mnt/nvme/pqcache" {
		t.Errorf("cache root hostPath %q", hp)
	}
	if sel, _, _ := unstructured.NestedStringMap(pod, "nodeSelector"); sel["pool"] != "cache" {
		t.Errorf("nodeSelector %v", sel)
	}
	if drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop"); !reflect.DeepEqual(drop, []string{"ALL"}) {
		t.Errorf("capabilities drop %v", drop)
	}
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !v {
		t.Error("the agent's root filesystem is writable")
	}
	role := r.named(t, "ClusterRole", "pq-pqcache-agent")
	want := []any{
		map[string]any{"apiGroups": []any{"data.pqcache.dev"}, "resources": []any{"datasetreplicas", "datasets"}, "verbs": []any{"get", "list", "watch"}},
		map[string]any{"apiGroups": []any{"data.pqcache.dev"}, "resources": []any{"datasetreplicas/status"}, "verbs": []any{"get", "update", "patch"}},
	}
	if !reflect.DeepEqual(role.Object["rules"], want) {
		t.Errorf("agent rules %v", role.Object["rules"])
	}
	// The agents share no key any more: peers are told apart by their own tokens (TestPeerTLS).
	// No tenant's Secret anywhere: the manager grants each one by name, in its namespace, while a
	// Dataset with replicas names it (docs/security.md, "Secrets the agent can read"). The one Secret
	// the chart lets them read is the readers' master key, by name, in the release's namespace.
	agentRoles := r.rolesBoundTo("pq-pqcache-agent")
	if len(agentRoles) == 0 {
		t.Fatal("no role is bound to the agent's ServiceAccount pq-pqcache-agent: the check below would check nothing")
	}
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, u := range r.all(kind) {
			if !agentRoles[kind+"/"+u.GetName()] {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			for _, rule := range rules {
				res, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "resources")
				names, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "resourceNames")
				verbs, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "verbs")
				masterKey := kind == "Role" && u.GetNamespace() == "pqcache-system" && slices.Equal(names, []string{"pq-pqcache-s3-master"}) &&
					slices.Equal(verbs, []string{"get"}) && slices.Equal(res, []string{"secrets"})
				if (slices.Contains(res, "secrets") || slices.Contains(res, "*")) && !masterKey {
					t.Errorf("%s %s grants %v: the agent reads no Secret by a grant of the chart's but the readers' master key", kind, u.GetName(), rule)
				}
			}
		}
	}
}

// TestAgentNodeReserve: agent.nodeReserve reaches the agent's --node-reserve, 10Gi unless set, and a
// value that is not a size is refused when the chart is rendered, not when the agent starts.
func TestAgentNodeReserve(t *testing.T) {
	for want, sets := range map[string][]string{
		"--node-reserve=10Gi": {"agent.enabled=true"},
		"--node-reserve=50Gi": {"agent.enabled=true", "agent.nodeReserve=50Gi"},
		"--node-reserve=0":    {"agent.enabled=true", "agent.nodeReserve=0"},
	} {
		c := render(t, sets...).one(t, "DaemonSet").Object
		containers, _, _ := unstructured.NestedSlice(c, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		if !hasArg(args, want) {
			t.Errorf("--set %v: agent args %v lack %q", sets, args, want)
		}
	}
	if _, err := helm(t, "template", "pq", chartDir, "--set", "agent.enabled=true", "--set", "agent.nodeReserve=lots"); err == nil || !strings.Contains(err.Error(), "/agent/nodeReserve") {
		t.Errorf("agent.nodeReserve=lots: %v, want the schema to refuse it", err)
	}
}

// TestManagerFindsTheAgents: with the agent, the manager is told where its pods are, by a selector that
// matches the DaemonSet's pods and nothing else the chart runs, and it may list pods there.
func TestManagerFindsTheAgents(t *testing.T) {
	if args := render(t).managerArgs(t); argWithPrefix(args, "--agent-selector=") != "" {
		t.Errorf("manager args %v name agents the chart does not run", args)
	}
	r := render(t, "agent.enabled=true")
	args := r.managerArgs(t)
	if !hasArg(args, "--agent-namespace=pqcache-system") {
		t.Errorf("manager args %v lack --agent-namespace=pqcache-system", args)
	}
	agentSA, _, _ := unstructured.NestedString(r.one(t, "DaemonSet").Object, "spec", "template", "spec", "serviceAccountName")
	if agentSA == "" || !hasArg(args, "--agent-service-account="+agentSA) {
		t.Errorf("manager args %v do not name the agents' ServiceAccount %q, which it grants Secrets to", args, agentSA)
	}
	sel, err := labels.Parse(argWithPrefix(args, "--agent-selector="))
	if err != nil || sel.Empty() {
		t.Fatalf("--agent-selector in %v: %v", args, err)
	}
	agentPod, _, _ := unstructured.NestedStringMap(r.one(t, "DaemonSet").Object, "spec", "template", "metadata", "labels")
	if !sel.Matches(labels.Set(agentPod)) {
		t.Errorf("--agent-selector %s does not match the agent's pods %v", sel, agentPod)
	}
	managerPod, _, _ := unstructured.NestedStringMap(r.one(t, "Deployment").Object, "spec", "template", "metadata", "labels")
	if sel.Matches(labels.Set(managerPod)) {
		t.Errorf("--agent-selector %s matches the manager's pods %v", sel, managerPod)
	}
	role := r.named(t, "Role", "pq-pqcache-agent-pods")
	want := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"list"}}}
	if !reflect.DeepEqual(role.Object["rules"], want) || role.GetNamespace() != "pqcache-system" {
		t.Errorf("Role %s/%s rules %v", role.GetNamespace(), role.GetName(), role.Object["rules"])
	}
	binding := r.named(t, "RoleBinding", "pq-pqcache-agent-pods")
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != "pq-pqcache" {
		t.Errorf("RoleBinding subjects %v, want the manager's ServiceAccount pq-pqcache", subjects)
	}
}

// TestAgentCSI: with the agent comes its CSI driver by default: a CSIDriver for inline volumes with
// the pod's namespace passed on, and a mount container, beside the agent's, that can make mounts
// kubelet and pods see.
func TestAgentCSI(t *testing.T) {
	if n := len(render(t).all("CSIDriver")); n != 0 {
		t.Fatalf("%d CSIDrivers without the agent", n)
	}
	if n := len(render(t, "agent.enabled=true", "agent.csi.enabled=false").all("CSIDriver")); n != 0 {
		t.Fatalf("%d CSIDrivers with agent.csi.enabled=false", n)
	}
	r := render(t, "agent.enabled=true", "agent.csi.kubeletDir=/data/kubelet")
	driver := r.named(t, "CSIDriver", "data.pqcache.dev").Object
	spec, _, _ := unstructured.NestedMap(driver, "spec")
	if spec["podInfoOnMount"] != true || spec["attachRequired"] != false || spec["fsGroupPolicy"] != "None" ||
		!reflect.DeepEqual(spec["volumeLifecycleModes"], []any{"Ephemeral"}) {
		t.Errorf("CSIDriver spec %v", spec)
	}
	pod, _, _ := unstructured.NestedMap(r.one(t, "DaemonSet").Object, "spec", "template", "spec")
	c := container(t, pod, "initContainers", "mount")
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if !hasArg(args, "mount") || !hasArg(args, "--kubelet-dir=/data/kubelet") {
		t.Errorf("mount container args %v", args)
	}
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "privileged"); !v {
		t.Error("the mount container is not privileged: Bidirectional mount propagation needs it")
	}
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	found := false
	for _, m := range mounts {
		m := m.(map[string]any)
		if m["mountPath"] == "/data/kubelet" && m["mountPropagation"] == "Bidirectional" {
			found = true
		}
	}
	if !found {
		t.Errorf("kubelet's directory is not mounted Bidirectional at its own path: %v", mounts)
	}
}

// TestLocalityWebhook: with the agent comes the locality webhook, asked only about pods that opted in
// (by their own label or their namespace's), never blocking one, and served with a certificate whose
// names are its Service's and whose CA the API server is given.
func TestLocalityWebhook(t *testing.T) {
	if n := len(render(t).all("MutatingWebhookConfiguration")); n != 0 {
		t.Fatalf("%d webhooks without the agent", n)
	}
	r := render(t, "agent.enabled=true")
	cfg := r.named(t, "MutatingWebhookConfiguration", "pq-pqcache-locality")
	hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	if len(hooks) != 3 {
		t.Fatalf("%d webhooks, want 3 (labelled pods, required and preferred namespaces)", len(hooks))
	}
	caBundle := ""
	for _, h := range hooks {
		h := h.(map[string]any)
		if h["failurePolicy"] != "Ignore" || h["sideEffects"] != "None" {
			t.Errorf("%s: failurePolicy %v, sideEffects %v", h["name"], h["failurePolicy"], h["sideEffects"])
		}
		if _, ok := h["objectSelector"]; !ok {
			t.Errorf("%s has no objectSelector: it would be asked about every pod", h["name"])
		}
		path, _, _ := unstructured.NestedString(h, "clientConfig", "service", "path")
		ns, _, _ := unstructured.NestedStringMap(h, "namespaceSelector", "matchLabels")
		switch path {
		case "/place-pods":
			if len(ns) != 0 {
				t.Errorf("labelled pods' webhook selects namespaces %v", ns)
			}
		case "/place-pods/required", "/place-pods/preferred":
			if ns["data.pqcache.dev/locality"] != strings.TrimPrefix(path, "/place-pods/") {
				t.Errorf("%s: namespaceSelector %v", path, ns)
			}
		default:
			t.Errorf("unexpected path %q", path)
		}
		caBundle, _, _ = unstructured.NestedString(h, "clientConfig", "caBundle")
	}
	if caBundle != "" {
		t.Error("the chart renders a caBundle: a GitOps sync would take back the one the manager or cainjector wrote")
	}
	if len(r.all("Secret")) != 0 {
		t.Error("the chart renders a Secret: the webhook's key would be in every render, and new on every `helm template`")
	}
	args := r.managerArgs(t)
	for _, want := range []string{"--webhook-cert-secret=pqcache-system/pq-pqcache-webhook-cert", "--webhook-service=pq-pqcache-webhook", "--webhook-configuration=pq-pqcache-locality"} {
		if !hasArg(args, want) {
			t.Errorf("manager args %v lack %s", args, want)
		}
	}
	r.named(t, "Service", "pq-pqcache-webhook")
	if !hasArg(r.managerArgs(t), "--locality-webhook-port=9443") {
		t.Errorf("manager args %v", r.managerArgs(t))
	}
	if off := render(t, "agent.enabled=true", "locality.webhook.enabled=false"); len(off.all("MutatingWebhookConfiguration")) != 0 || hasArg(off.managerArgs(t), "--locality-webhook-port=9443") {
		t.Error("locality.webhook.enabled=false still serves the webhook")
	}
}

// TestWebhookCertificateFromCertManager: with certManager.enabled, a Certificate for the Service's
// names from a self-signed Issuer (or the one named), cainjector's annotation, and the manager reading
// the Secret cert-manager writes; the manager keeps no certificate of its own.
func TestWebhookCertificateFromCertManager(t *testing.T) {
	r := render(t, "agent.enabled=true", "certManager.enabled=true")
	cfg := r.named(t, "MutatingWebhookConfiguration", "pq-pqcache-locality")
	if got := cfg.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "pqcache-system/pq-pqcache-webhook" {
		t.Errorf("inject-ca-from %q", got)
	}
	crt := r.named(t, "Certificate", "pq-pqcache-webhook")
	secret, _, _ := unstructured.NestedString(crt.Object, "spec", "secretName")
	names, _, _ := unstructured.NestedStringSlice(crt.Object, "spec", "dnsNames")
	issuer, _, _ := unstructured.NestedString(crt.Object, "spec", "issuerRef", "name")
	if secret != "pq-pqcache-webhook-cert" || !slices.Contains(names, "pq-pqcache-webhook.pqcache-system.svc") || issuer != "pq-pqcache-webhook" {
		t.Errorf("Certificate: secret %q, names %v, issuer %q", secret, names, issuer)
	}
	r.named(t, "Issuer", "pq-pqcache-webhook")
	args := r.managerArgs(t)
	if !hasArg(args, "--webhook-cert-dir=/etc/pqcache/webhook") || argWithPrefix(args, "--webhook-cert-secret") != "" {
		t.Errorf("manager args %v", args)
	}
	for _, role := range r.all("ClusterRole") {
		if role.GetName() == "pq-pqcache-webhook-cert" {
			t.Error("the manager may update the webhook configuration though cert-manager keeps it")
		}
	}
	own := render(t, "agent.enabled=true", "certManager.enabled=true", "certManager.issuerRef.name=corp-ca", "certManager.issuerRef.kind=ClusterIssuer")
	if len(own.all("Issuer")) != 0 {
		t.Error("a self-signed Issuer beside the one named")
	}
	kind, _, _ := unstructured.NestedString(own.named(t, "Certificate", "pq-pqcache-webhook").Object, "spec", "issuerRef", "kind")
	if kind != "ClusterIssuer" {
		t.Errorf("issuerRef kind %q", kind)
	}
}

// TestTemplateIsTheSameEveryTime renders the chart twice, as Argo CD and Flux do on every sync, with
// everything that renders certificates or RBAC turned on: the bytes must not differ.
func TestTemplateIsTheSameEveryTime(t *testing.T) {
	for _, sets := range [][]string{{"agent.enabled=true"}, {"agent.enabled=true", "certManager.enabled=true"}} {
		args := []string{"template", "pq", chartDir, "--namespace", "pqcache-system"}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		first, err := helm(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		second, err := helm(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if first != second {
			t.Errorf("%v: two renders differ", sets)
		}
	}
}

func TestMetrics(t *testing.T) {
	r := render(t, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom", "metrics.port=9090")
	sm := r.one(t, "ServiceMonitor")
	if sm.GetLabels()["release"] != "prom" {
		t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
	}
	ports, _, _ := unstructured.NestedSlice(r.named(t, "Service", "pq-pqcache-metrics").Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "9090" {
		t.Errorf("metrics Service ports %v", ports)
	}
	if !hasArg(r.managerArgs(t), "--metrics-bind-address=:9090") {
		t.Errorf("args %v", r.managerArgs(t))
	}

	if len(r.all("PodMonitor")) != 0 {
		t.Error("PodMonitor of the agents rendered without agents")
	}

	off := render(t, "metrics.enabled=false", "metrics.serviceMonitor.enabled=true", "events.enabled=false", "agent.enabled=true")
	if slices.ContainsFunc(off.all("Service"), func(u *unstructured.Unstructured) bool { return strings.HasSuffix(u.GetName(), "-metrics") }) || !hasArg(off.managerArgs(t), "--events-bind-address=0") || len(off.all("ServiceMonitor")) != 0 || !hasArg(off.managerArgs(t), "--metrics-bind-address=0") {
		t.Error("metrics.enabled=false still exposes metrics")
	}
	if len(off.all("PodMonitor")) != 0 || !hasArg(off.agentArgs(t), "--metrics-bind-address=0") {
		t.Error("metrics.enabled=false still exposes the agents' metrics")
	}
}

// TestAgentMetrics: the agents serve their metrics on a port of their own, which a PodMonitor
// scrapes per agent and the agents' NetworkPolicy opens to networkPolicy.metricsFrom only.
func TestAgentMetrics(t *testing.T) {
	r := render(t, "agent.enabled=true", "agent.metricsPort=9099", "metrics.serviceMonitor.enabled=true",
		"metrics.serviceMonitor.labels.release=prom", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring")
	if !hasArg(r.agentArgs(t), "--metrics-bind-address=:9099") {
		t.Errorf("agent args %v", r.agentArgs(t))
	}
	pm := r.one(t, "PodMonitor")
	if pm.GetLabels()["release"] != "prom" {
		t.Errorf("PodMonitor labels %v", pm.GetLabels())
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if sel["app.kubernetes.io/component"] != "agent" {
		t.Errorf("PodMonitor selects %v, not the agents", sel)
	}
	containers, _, _ := unstructured.NestedSlice(r.one(t, "DaemonSet").Object, "spec", "template", "spec", "containers")
	ports := fmt.Sprint(containers[0].(map[string]any)["ports"])
	if !strings.Contains(ports, "name:metrics") || !strings.Contains(ports, "containerPort:9099") {
		t.Errorf("agent ports %s", ports)
	}
	policy := fmt.Sprint(r.named(t, "NetworkPolicy", "pq-pqcache-agent").Object["spec"])
	if !strings.Contains(policy, "port:9099") || !strings.Contains(policy, "name:monitoring") {
		t.Errorf("the agents' NetworkPolicy does not open 9099 to metricsFrom: %s", policy)
	}
}

func TestEventsEndpoint(t *testing.T) {
	r := render(t, "events.port=9443")
	ports, _, _ := unstructured.NestedSlice(r.named(t, "Service", "pq-pqcache-events").Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "9443" || !hasArg(r.managerArgs(t), "--events-bind-address=:9443") {
		t.Errorf("events Service ports %v, args %v", ports, r.managerArgs(t))
	}
	// On the node's network, only loopback, or the address given (the local cluster's bridge).
	if !hasArg(render(t, "hostNetwork=true").managerArgs(t), "--events-bind-address=127.0.0.1:8082") ||
		!hasArg(render(t, "hostNetwork=true", "events.bindHost=10.244.77.1").managerArgs(t), "--events-bind-address=10.244.77.1:8082") {
		t.Error("events bind address with hostNetwork")
	}
	// A token in the query string only when asked for: access logs keep URLs.
	if hasArg(r.managerArgs(t), "--events-query-token") || !hasArg(render(t, "events.queryToken=true").managerArgs(t), "--events-query-token") {
		t.Error("--events-query-token must follow events.queryToken, off by default")
	}
}

// TestHostNetwork: in the node's network namespace the manager's ports bind to loopback only and the
// kubelet probes them there (hack/local-cluster installs the chart so).
func TestHostNetwork(t *testing.T) {
	r := render(t, "hostNetwork=true", "healthPort=18081", "metrics.port=18080")
	args := r.managerArgs(t)
	if !hasArg(args, "--health-probe-bind-address=127.0.0.1:18081") || !hasArg(args, "--metrics-bind-address=127.0.0.1:18080") {
		t.Errorf("args %v", args)
	}
	if strategy, _, _ := unstructured.NestedString(r.one(t, "Deployment").Object, "spec", "strategy", "type"); strategy != "Recreate" {
		t.Errorf("strategy %q: a rolling update would wait forever for the old pod's host ports", strategy)
	}
	spec, _, _ := unstructured.NestedMap(r.one(t, "Deployment").Object, "spec", "template", "spec")
	if spec["hostNetwork"] != true || spec["dnsPolicy"] != "ClusterFirstWithHostNet" {
		t.Errorf("pod spec hostNetwork=%v dnsPolicy=%v", spec["hostNetwork"], spec["dnsPolicy"])
	}
	container := spec["containers"].([]any)[0].(map[string]any)
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		get := container[probe].(map[string]any)["httpGet"].(map[string]any)
		if get["host"] != "127.0.0.1" || get["port"] != "probes" {
			t.Errorf("%s %v", probe, get)
		}
	}
	ports := container["ports"].([]any)
	if fmt.Sprint(ports[0].(map[string]any)["containerPort"]) != "18081" {
		t.Errorf("ports %v", ports)
	}

	// Off by default: the pod network, all interfaces, no probe host.
	def := render(t)
	if !hasArg(def.managerArgs(t), "--health-probe-bind-address=:8081") {
		t.Errorf("default args %v", def.managerArgs(t))
	}
	defSpec, _, _ := unstructured.NestedMap(def.one(t, "Deployment").Object, "spec", "template", "spec")
	if _, set := defSpec["hostNetwork"]; set {
		t.Error("hostNetwork set by default")
	}
}

func TestCustomImagesAndWorkerResources(t *testing.T) {
	r := render(t, "image.repository=registry.example/pq", "image.tag=1.2.3", "image.pullSecrets={regcred}",
		"worker.image.repository=registry.example/pq-worker", "worker.resources.limits.memory=2Gi", "worker.caBundle.configMap=corp-ca",
		"polars.image.repository=registry.example/pq-polars", "polars.image.tag=0.25")
	args := r.managerArgs(t)
	if !hasArg(args, "--worker-image=registry.example/pq-worker:1.2.3") || !hasArg(args, `--worker-resources={"limits":{"memory":"2Gi"}}`) ||
		!hasArg(args, "--worker-ca-bundle=corp-ca/ca.crt") || !hasArg(args, "--polars-image=registry.example/pq-polars:0.25") {
		t.Errorf("args %v", args)
	}
	dep := r.one(t, "Deployment").Object
	containers, _, _ := unstructured.NestedSlice(dep, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "registry.example/pq:1.2.3" {
		t.Errorf("image %v", img)
	}
	secrets, _, _ := unstructured.NestedSlice(dep, "spec", "template", "spec", "imagePullSecrets")
	if len(secrets) != 1 || secrets[0].(map[string]any)["name"] != "regcred" {
		t.Errorf("imagePullSecrets %v", secrets)
	}
}

// The per-node cap on bench Jobs reaches the manager: 1 by default (TestDefaults), 0 to lift it.
func TestBenchJobsPerNode(t *testing.T) {
	args := render(t, "worker.maxBenchJobsPerNode=0", "worker.maxConcurrentBenchJobs=2").managerArgs(t)
	if !hasArg(args, "--max-bench-jobs-per-node=0") || !hasArg(args, "--max-concurrent-bench-jobs=2") {
		t.Errorf("args %v", args)
	}
}

func TestCRDsDisabled(t *testing.T) {
	r := render(t, "crds.enabled=false")
	if n := len(r.all("CustomResourceDefinition")); n != 0 {
		t.Fatalf("%d CRDs rendered with crds.enabled=false", n)
	}
	r = render(t, "crds.keep=false")
	for _, crd := range r.all("CustomResourceDefinition") {
		if _, ok := crd.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("%s keeps its resource policy with crds.keep=false", crd.GetName())
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	for set, want := range map[string]string{
		"replicas=two":                  "/replicas",
		"replicaCount=2":                "additional properties 'replicaCount' not allowed",
		"logFormat=xml":                 "/logFormat",
		"watchNamespaces={Team_A}":      "/watchNamespaces/0",
		"worker.jobTTL=soon":            "/worker/jobTTL",
		"worker.maxBenchJobsPerNode=-1": "/worker/maxBenchJobsPerNode",
		"image.pullPolicy=Sometimes":    "/image/pullPolicy",
		// A Go duration Prometheus' for: refuses.
		"monitoring.prometheusRule.alerts.notReadyFor=1.5h": "/monitoring/prometheusRule/alerts/notReadyFor",
	} {
		_, err := helm(t, "template", "pq", chartDir, "--set", set)
		if err == nil {
			t.Errorf("--set %s was accepted", set)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: error does not point at %q:\n%v", set, want, err)
		}
	}
}

// The install notes point at documentation that exists in this repository, not at an invented site.
func TestNotesPointAtDocsThatExist(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	docs := regexp.MustCompile(`docs/[a-z-]+\.md`).FindAllString(string(data), -1)
	if len(docs) == 0 {
		t.Fatal("NOTES.txt names no document")
	}
	for _, d := range docs {
		if _, err := os.Stat(filepath.Join(chartDir, "..", "..", d)); err != nil {
			t.Errorf("NOTES.txt points at %s: %v", d, err)
		}
	}
	if strings.Contains(string(data), "pqcache.dev/docs") {
		t.Error("NOTES.txt points at a site that does not exist")
	}
}
