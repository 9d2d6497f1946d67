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
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// The Spark engine on Kubernetes: a spark Job's pod is the driver, in client mode, and Spark's own
// Kubernetes scheduler starts the executors as pods from the Spark image. What the driver needs that the
// other engines do not is here: its ServiceAccount and Role, the Spark configuration and the
// executors' pod template (a ConfigMap per Job), and the driver's environment.

const (
	// componentSparkExecutor labels the executors' pods (the driver's is a bench pod like any other).
	componentSparkExecutor = "spark-executor"
	// LabelSparkApp holds, on a spark Job's executor pods, a name unique to the Job (their pod name
	// prefix): their spread and the controller's search for an executor that fits no node select on it.
	LabelSparkApp = "data.pqcache.dev/spark-app"
	// sparkProgramDir is where the Spark image holds run.py, executor.py and the venv.
	sparkProgramDir = "/usr/local/lib/pqcache/spark"
	// sparkJavaHome is the Spark image's JRE.
	sparkJavaHome = "/usr/lib/jvm/java-17-openjdk-amd64"
	// sparkConfDir is where the driver mounts its Job's ConfigMap.
	sparkConfDir = "/etc/pqcache/spark"
	// sparkConfKey and sparkExecutorPodKey are the ConfigMap's keys.
	sparkConfKey        = "spark.conf"
	sparkExecutorPodKey = "executor-pod.yaml"
	// sparkDriverPort and sparkBlockManagerPort are fixed so that a NetworkPolicy can name them; the
	// executors connect back to the driver's pod IP on them.
	sparkDriverPort       = 7078
	sparkBlockManagerPort = 7079
	// sparkExecutorContainer names the executor's container in the pod template.
	sparkExecutorContainer = "executor"
	// defaultSparkExecutors is how many executors an engine gets that does not say.
	defaultSparkExecutors = 2
	// maxSparkPodNamePrefix is the longest executor pod name prefix Spark takes (it appends
	// "-exec-<id>" and wants a DNS label).
	maxSparkPodNamePrefix = 47
)

// sparkDriverAccount names the ServiceAccount, Role and RoleBinding of a run's Spark drivers: one set
// per run, shared by its spark Jobs.
func sparkDriverAccount(run *datav1alpha1.BenchRun) string {
	return jobs.FitName(run.Name, "-spark-"+jobs.HashOf(8, string(run.UID)), jobs.MaxJobName)
}

// sparkConfigMapName names a spark Job's ConfigMap: the Job's own name, unique to the run.
func sparkConfigMapName(j benchJob) string { return j.name }

// sparkApp is the value of LabelSparkApp and the executors' pod name prefix for one Job.
// A run's name may hold dots, which a pod name's prefix in Spark's eyes (a DNS label) may not.
func sparkApp(run *datav1alpha1.BenchRun, j benchJob) string {
	return jobs.FitName(strings.ReplaceAll(run.Name, ".", "-"), "-"+jobs.HashOf(10, j.name), maxSparkPodNamePrefix)
}

// SparkDriverRole is the ClusterRole (charts/pqcache/templates/spark-driver.yaml) that a Spark
// driver needs in its run's namespace: Spark's Kubernetes scheduler creates, watches and deletes its
// executor pods and their ConfigMap, and looks up claims. The operator binds it, per run, to the run's
// driver ServiceAccount with a RoleBinding in the run's namespace. It may bind that one ClusterRole and
// no other (`bind` by name), so the manager itself holds no right to create pods: it never could grant
// more than the chart's ClusterRole says, and a rule added there shows in review.
const SparkDriverRole = "pqcache-spark-driver"

// sparkDriverObjects are the driver's ServiceAccount and its RoleBinding to SparkDriverRole for a run
// (the caller makes the run their controller, so that they go with it).
func sparkDriverObjects(run *datav1alpha1.BenchRun) (*corev1.ServiceAccount, *rbacv1.RoleBinding) {
	name := sparkDriverAccount(run)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: run.Namespace, Labels: map[string]string{
			jobs.LabelName: "pqcache", jobs.LabelComponent: componentBench, jobs.LabelManagedBy: "pqcache", LabelBenchRun: datav1alpha1.LabelValue(run.Name)}}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta(), AutomountServiceAccountToken: ptr.To(false)}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SparkDriverRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: run.Namespace}}}
	return sa, binding
}

// sparkExecutors is how many executors an engine asks for.
func sparkExecutors(e datav1alpha1.BenchEngine) int {
	return int(min(max(ptr.Deref(e.Executors, defaultSparkExecutors), 1), wire.MaxSparkExecutors))
}

// sparkExecutorResources are one executor's CPU request and limit and its memory (Spark gives an
// executor pod equal memory request and limit: the limit, else the request): the engine's
// executorResources, else the configuration's.
func sparkExecutorResources(j benchJob) (cpuRequest, cpuLimit, memory resource.Quantity) {
	cpuRequest, cpuLimit, memory = j.config.CPU, j.config.CPU, j.config.Memory
	r := j.engine.ExecutorResources
	if r == nil {
		return cpuRequest, cpuLimit, memory
	}
	switch {
	case r.CPURequest != nil && r.CPULimit != nil:
		cpuRequest, cpuLimit = *r.CPURequest, *r.CPULimit
	case r.CPURequest != nil:
		cpuRequest, cpuLimit = *r.CPURequest, *r.CPURequest
	case r.CPULimit != nil:
		cpuRequest, cpuLimit = *r.CPULimit, *r.CPULimit
	}
	switch {
	case r.MemoryLimit != nil:
		memory = *r.MemoryLimit
	case r.MemoryRequest != nil:
		memory = *r.MemoryRequest
	}
	return cpuRequest, cpuLimit, memory
}

// sparkMemory splits a pod's memory into the JVM's heap and Spark's overhead (off-heap, the Python
// worker, the JVM itself), both in MiB, so that Spark asks for exactly the pod's memory: a quarter
// for the overhead, at least Spark's own minimum of 384 MiB.
func sparkMemory(memory resource.Quantity) (heapMiB, overheadMiB int64) {
	total := memory.Value() >> 20
	overheadMiB = max(384, total/4)
	return max(total-overheadMiB, 128), overheadMiB
}

// sparkConf is the Spark configuration of one Job, as the key=value lines run.py sets on its
// SparkSession: the scheduler's namespace, image and executors, the driver's address for executors to
// connect back to (the pod's IP and name, which Spark reads from the driver's environment), the
// executors' pod template, and for inputs that read the bucket s3a's endpoint and addressing. Never a
// credential: the executors take those from the Dataset's Secret through their environment.
func sparkConf(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, opts jobs.WorkerOptions) string {
	cpuRequest, cpuLimit, memory := sparkExecutorResources(j)
	heap, overhead := sparkMemory(memory)
	conf := map[string]string{
		"spark.submit.deployMode":                            "client",
		"spark.kubernetes.namespace":                         run.Namespace,
		"spark.kubernetes.container.image":                   opts.SparkImage,
		"spark.kubernetes.container.image.pullPolicy":        string(corev1.PullIfNotPresent),
		"spark.kubernetes.driver.pod.name":                   "${env:POD_NAME}",
		"spark.kubernetes.executor.podNamePrefix":            sparkApp(run, j),
		"spark.kubernetes.executor.podTemplateFile":          sparkConfDir + "/" + sparkExecutorPodKey,
		"spark.kubernetes.executor.podTemplateContainerName": sparkExecutorContainer,
		"spark.kubernetes.executor.deleteOnTermination":      "true",
		// In client mode Spark makes no driver Service, and the executors claim no volumes: without
		// these, its stop deletes both by label, which the driver's Role does not grant (two 403s).
		"spark.kubernetes.driver.service.deleteOnTermination": "false",
		"spark.kubernetes.driver.ownPersistentVolumeClaim":    "false",
		"spark.kubernetes.authenticate.caCertFile":            "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
		"spark.kubernetes.authenticate.oauthTokenFile":        "/var/run/secrets/kubernetes.io/serviceaccount/token",
		"spark.driver.host": "${env:POD_IP}",
		// Spark 4.1 and later tell executors the driver's bind address, not its host
		// (spark.kubernetes.executor.useDriverPodIP): 0.0.0.0 there sent every executor to itself.
		"spark.driver.bindAddress": "${env:POD_IP}",
		"spark.driver.port":        strconv.Itoa(sparkDriverPort),
		"spark.blockManager.port":  strconv.Itoa(sparkBlockManagerPort),
		"spark.executor.instances": strconv.Itoa(sparkExecutors(j.engine)),
		// Task slots per executor: its CPU limit, rounded up.
		"spark.executor.cores":                              strconv.FormatInt(max(1, (cpuLimit.MilliValue()+999)/1000), 10),
		"spark.kubernetes.executor.request.cores":           cpuRequest.String(),
		"spark.kubernetes.executor.limit.cores":             cpuLimit.String(),
		"spark.executor.memory":                             strconv.FormatInt(heap, 10) + "m",
		"spark.executor.memoryOverhead":                     strconv.FormatInt(overhead, 10) + "m",
		"spark.ui.enabled":                                  "false",
		"spark.dynamicAllocation.enabled":                   "false",
		"spark.scheduler.minRegisteredResourcesRatio":       "1.0",
		"spark.scheduler.maxRegisteredResourcesWaitingTime": "600s",
	}
	if readsS3(j.input) {
		for k, v := range s3aConf(ds) {
			conf[k] = v
		}
	}
	if j.input.Type == datav1alpha1.InputEndpoint {
		for k, v := range readersS3AConf(opts.ReadersEndpoint) {
			conf[k] = v
		}
	}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, conf[k])
	}
	return b.String()
}

// s3aConf reaches the Dataset's bucket through s3a: its endpoint, region and addressing. The
// credentials are the standard AWS variables in the driver's and executors' environment, which s3a's
// default chain reads; a CA bundle is turned into a trust store by the programs in the image.
func s3aConf(ds *datav1alpha1.Dataset) map[string]string {
	s3 := ds.Spec.Source.S3
	conf := map[string]string{
		"spark.hadoop.fs.s3a.impl":              "org.apache.hadoop.fs.s3a.S3AFileSystem",
		"spark.hadoop.fs.s3a.path.style.access": strconv.FormatBool(s3.ForcePathStyle),
	}
	if s3.Endpoint != "" {
		conf["spark.hadoop.fs.s3a.endpoint"] = s3.Endpoint
		conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = strconv.FormatBool(strings.HasPrefix(s3.Endpoint, "https://"))
	}
	if s3.Region != "" {
		conf["spark.hadoop.fs.s3a.endpoint.region"] = s3.Region
	}
	return conf
}

// readersS3AConf reaches the node's S3 endpoint for readers through s3a: by path, over TLS; the key
// and the pin token are the standard AWS variables (AWS_SESSION_TOKEN included), which s3a's default
// chain reads, and the endpoint's CA a trust store the programs in the image make from AWS_CA_BUNDLE.
func readersS3AConf(endpoint string) map[string]string {
	return map[string]string{
		"spark.hadoop.fs.s3a.impl":                   "org.apache.hadoop.fs.s3a.S3AFileSystem",
		"spark.hadoop.fs.s3a.path.style.access":      "true",
		"spark.hadoop.fs.s3a.endpoint":               endpoint,
		"spark.hadoop.fs.s3a.connection.ssl.enabled": "true",
		"spark.hadoop.fs.s3a.endpoint.region":        readersRegion,
	}
}

// sparkExecutorPod is the executors' pod template: the Spark image started by its executor program,
// the run's placement, spread over the nodes one executor at a time, the restricted security profile,
// and the input as the driver has it (each executor mounts its own node's copy through the CSI driver;
// an input that reads the bucket gets the Dataset's credentials by reference and its CA bundle; a
// mixed-staged input stages its fresh prefixes in each executor). Spark sets the container's
// resources, ports and arguments itself.
func sparkExecutorPod(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, opts jobs.WorkerOptions) *corev1.Pod {
	app := sparkApp(run, j)
	labels := map[string]string{jobs.LabelName: "pqcache", jobs.LabelComponent: componentSparkExecutor, jobs.LabelManagedBy: "pqcache",
		LabelBenchRun: datav1alpha1.LabelValue(run.Name), LabelSparkApp: app}
	c := corev1.Container{
		Name: sparkExecutorContainer, Image: opts.SparkImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{sparkProgramDir + "/venv/bin/python", sparkProgramDir + "/executor.py"},
		SecurityContext: jobs.WorkerContainerSecurity(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		Env: []corev1.EnvVar{{Name: "TMPDIR", Value: "/tmp"}, {Name: "HOME", Value: "/tmp"},
			{Name: "JAVA_HOME", Value: sparkJavaHome}, {Name: "PYSPARK_PYTHON", Value: sparkProgramDir + "/venv/bin/python"}},
	}
	spec := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		NodeSelector:                 run.Spec.NodeSelector,
		Affinity:                     run.Spec.Affinity,
		Tolerations:                  run.Spec.Tolerations,
		SecurityContext:              jobs.WorkerPodSecurity(),
		Volumes:                      []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	mountInput(&spec, &c, run, ds, j.input)
	// The executors spread over the nodes by their own Job's label (mountCopy spreads the run's bench
	// pods, which the executors are not).
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelSparkApp: app}},
	}}
	if readsS3(j.input) {
		withBucket(&c, ds, j.input)
	}
	if j.input.Type == datav1alpha1.InputEndpoint {
		withReadersEndpoint(&c, run, ds, opts.ReadersEndpoint)
	}
	spec.Containers = []corev1.Container{c}
	if readsS3(j.input) {
		jobs.WithCABundle(&spec, opts.CABundle)
	}
	if j.input.Type == datav1alpha1.InputEndpoint {
		jobs.WithCABundle(&spec, readersCA)
	}
	if j.input.Type == datav1alpha1.InputMixedStaged {
		withStageStep(&spec, ds, opts)
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       spec,
	}
}

// sparkConfigMap holds one Job's Spark configuration and executor pod template, for the driver to
// mount (the caller makes the run its controller).
func sparkConfigMap(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, opts jobs.WorkerOptions) (*corev1.ConfigMap, error) {
	tmpl, err := yaml.Marshal(sparkExecutorPod(run, ds, j, opts))
	if err != nil {
		return nil, fmt.Errorf("encoding the executor pod template of Job %s: %w", j.name, err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: sparkConfigMapName(j), Namespace: run.Namespace, Labels: map[string]string{
			jobs.LabelName: "pqcache", jobs.LabelComponent: componentBench, jobs.LabelManagedBy: "pqcache", LabelBenchRun: datav1alpha1.LabelValue(run.Name)}},
		Data: map[string]string{sparkConfKey: sparkConf(run, ds, j, opts), sparkExecutorPodKey: string(tmpl)},
	}, nil
}

// withSparkDriver makes a bench pod Spark's driver: the run's driver ServiceAccount and its token (the
// scheduler's only credential), the pod's IP and name for the executors to connect back to and to be
// owned by, the in-cluster master and the Job's configuration.
func withSparkDriver(pod *corev1.PodSpec, c *corev1.Container, run *datav1alpha1.BenchRun, j benchJob) {
	pod.ServiceAccountName = sparkDriverAccount(run)
	pod.AutomountServiceAccountToken = ptr.To(true)
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	c.Env = append(c.Env, field("POD_IP", "status.podIP"), field("POD_NAME", "metadata.name"),
		corev1.EnvVar{Name: "JAVA_HOME", Value: sparkJavaHome},
		corev1.EnvVar{Name: wire.EnvSparkMaster, Value: wire.SparkMasterInCluster},
		corev1.EnvVar{Name: wire.EnvSparkConf, Value: sparkConfDir + "/" + sparkConfKey})
	c.Ports = append(c.Ports,
		corev1.ContainerPort{Name: "spark-driver", ContainerPort: sparkDriverPort, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{Name: "spark-blocks", ContainerPort: sparkBlockManagerPort, Protocol: corev1.ProtocolTCP})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "spark-conf", MountPath: sparkConfDir, ReadOnly: true})
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "spark-conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: sparkConfigMapName(j)}}}})
}
