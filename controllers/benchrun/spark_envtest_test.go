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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// sparkSummary is a spark runner's summary: the real runner's for two queries, with what run.py
// reports of the executors added.
func sparkSummary(label string, spark *wire.SparkResult) string {
	GinkgoHelper()
	res, err := wire.DecodeBenchSummary(runnerSummary(label, "answer"))
	Expect(err).NotTo(HaveOccurred())
	res.CgroupPeakBytes, res.Spark = 1<<30, spark
	enc, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	Expect(err).NotTo(HaveOccurred())
	return string(enc)
}

var _ = Describe("BenchRun controller, engine spark", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("runs the driver as a Job with its own ServiceAccount bound to the chart's driver role, and the executors from a pod template, all owned by the run", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "spark", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1] // small: 1 CPU, 2Gi
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineSpark, Executors: ptr.To[int32](3),
				ExecutorResources: &datav1alpha1.ExecutorResources{CPURequest: ptr.To(resource.MustParse("500m")), CPULimit: ptr.To(resource.MustParse("2")),
					MemoryLimit: ptr.To(resource.MustParse("4Gi"))}}}
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputS3}, {Type: datav1alpha1.InputVolume}}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		run = getRun(run)
		owned := func(obj client.Object) {
			GinkgoHelper()
			Expect(metav1.IsControlledBy(obj, run)).To(BeTrue(), "%T %s is controlled by the run", obj, obj.GetName())
		}

		// One ServiceAccount and one RoleBinding per run, to the chart's ClusterRole for Spark drivers
		// (its rules: test/chart TestSparkDriverRole): the manager grants no rule of its own.
		account := sparkDriverAccount(run)
		var sa corev1.ServiceAccount
		var binding rbacv1.RoleBinding
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: account}, &sa)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: account}, &binding)).To(Succeed())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: account}, &rbacv1.Role{}))).To(BeTrue(), "no Role of the manager's own")
		owned(&sa)
		owned(&binding)
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SparkDriverRole}))
		Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}}))

		for i := range found {
			j := &found[i]
			owned(j)
			pod := j.Spec.Template.Spec
			Expect(pod.ServiceAccountName).To(Equal(account))
			Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(true)), "the driver's token is the scheduler's credential")
			Expect(pod.InitContainers[0].Args).To(Equal([]string{"install-runner", "/pqcache"}))
			c := pod.Containers[0]
			Expect(c.Image).To(Equal(jobs.DefaultWorkerOptions().SparkImage))
			Expect(c.Command).To(Equal([]string{"/pqcache/pqcache-runner"}))
			Expect(c.Args).To(ContainElements("--engine", "spark"))
			Expect(c.Env).To(ContainElements(
				corev1.EnvVar{Name: wire.EnvSparkMaster, Value: "k8s://https://kubernetes.default.svc"},
				corev1.EnvVar{Name: wire.EnvSparkConf, Value: "/etc/pqcache/spark/spark.conf"},
				corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
				corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}))
			Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))

			// The Job's ConfigMap: the configuration run.py applies and the executors' pod template.
			var cm corev1.ConfigMap
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: j.Name}, &cm)).To(Succeed())
			owned(&cm)
			conf := cm.Data[sparkConfKey]
			Expect(strings.Split(strings.TrimSpace(conf), "\n")).To(ContainElements(
				"spark.executor.instances=3", "spark.executor.cores=2",
				"spark.kubernetes.executor.request.cores=500m", "spark.kubernetes.executor.limit.cores=2",
				"spark.executor.memory=3072m", "spark.executor.memoryOverhead=1024m",
				"spark.kubernetes.driver.pod.name=${env:POD_NAME}", "spark.driver.host=${env:POD_IP}",
				"spark.driver.bindAddress=${env:POD_IP}", "spark.driver.port=7078", "spark.blockManager.port=7079",
				"spark.kubernetes.driver.service.deleteOnTermination=false", "spark.kubernetes.driver.ownPersistentVolumeClaim=false",
				"spark.kubernetes.namespace="+ns,
				"spark.kubernetes.executor.podTemplateFile=/etc/pqcache/spark/executor-pod.yaml"))
			for _, key := range []string{"fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token", "AWS_SECRET"} {
				Expect(conf).NotTo(ContainSubstring(key), "no credential in the ConfigMap")
			}
			var tmpl corev1.Pod
			Expect(yaml.Unmarshal([]byte(cm.Data[sparkExecutorPodKey]), &tmpl)).To(Succeed())
			Expect(tmpl.Labels).To(HaveKeyWithValue(jobs.LabelComponent, componentSparkExecutor))
			Expect(tmpl.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			Expect(tmpl.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)), "executors talk to no API server")
			Expect(tmpl.Spec.TopologySpreadConstraints).To(HaveLen(1))
			Expect(tmpl.Spec.TopologySpreadConstraints[0].TopologyKey).To(Equal(corev1.LabelHostname))
			Expect(tmpl.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels).To(Equal(map[string]string{LabelSparkApp: sparkApp(run, benchJob{name: j.Name})}))
			ec := tmpl.Spec.Containers[0]
			Expect(ec.Name).To(Equal(sparkExecutorContainer))
			Expect(ec.Command).To(Equal([]string{"/usr/local/lib/pqcache/spark/venv/bin/python", "/usr/local/lib/pqcache/spark/executor.py"}))
			Expect(ec.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
			switch j.Annotations[annotationInput] {
			case "s3":
				Expect(conf).To(ContainSubstring("spark.hadoop.fs.s3a.endpoint=http://s3.example.test:9000\n"))
				Expect(conf).To(ContainSubstring("spark.hadoop.fs.s3a.path.style.access="))
				var secretKeys []string
				for _, e := range ec.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						secretKeys = append(secretKeys, e.ValueFrom.SecretKeyRef.Key)
					}
				}
				Expect(secretKeys).To(ContainElements(wire.EnvAccessKeyID, wire.EnvSecretAccessKey), "executors take the credentials by reference")
			case "volume":
				Expect(conf).NotTo(ContainSubstring("s3a"))
				Expect(tmpl.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeTrue(), "each executor mounts the input as the driver does")
				Expect(ec.VolumeMounts[0]).To(Equal(corev1.VolumeMount{Name: "data", MountPath: "/data", ReadOnly: true}))
			default:
				Fail("unexpected input " + j.Annotations[annotationInput])
			}
		}

		// An executor that fits no node is reported as a driver that fits none would be.
		s3Job, volumeJob := found[0], found[1]
		if s3Job.Annotations[annotationInput] != "s3" {
			s3Job, volumeJob = volumeJob, s3Job
		}
		executor := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sparkApp(run, benchJob{name: s3Job.Name}) + "-exec-1",
			Labels: map[string]string{LabelSparkApp: sparkApp(run, benchJob{name: s3Job.Name})}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "executor", Image: jobs.DefaultWorkerOptions().SparkImage}}}}
		Expect(k8sClient.Create(ctx, executor)).To(Succeed())
		executor.Status.Phase = corev1.PodPending
		executor.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 3 Insufficient memory.", LastTransitionTime: metav1.Now()}}
		Expect(k8sClient.Status().Update(ctx, executor)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonUnschedulable))
			g.Expect(c.Message).To(ContainSubstring("spark/small/s3: 0/3 nodes are available: 3 Insufficient memory."))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// The results carry the driver's and executors' peaks, the bucket's bytes and the pods' compute.
		finishBenchJob(&s3Job, sparkSummary("s3", &wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{1 << 30, 2 << 30, 3 << 30},
			S3ReadBytes: 123456789, ExecutorMillis: 30_000}), false)
		finishBenchJob(&volumeJob, sparkSummary("volume", &wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{1 << 30, 1 << 30, 1 << 30},
			ExecutorMillis: 30_000}), false)
		Eventually(func(g Gomega) {
			cur := getRun(run)
			g.Expect(cur.Status.CompletionTime).NotTo(BeNil())
			g.Expect(cur.Status.Results).To(HaveLen(2))
			for _, r := range cur.Status.Results {
				g.Expect(r.Spark).NotTo(BeNil())
				g.Expect(r.Spark.Executors).To(Equal(int32(3)))
				g.Expect(r.Spark.DriverPeakBytes).To(Equal(int64(1 << 30)))
				g.Expect(r.Spark.ExecutorSeconds).To(Equal(int64(30)))
				// 3 executors × 10 s × 2 CPUs and × 4 GiB, plus the driver's 1 CPU and 2 GiB for its wall time.
				driverSeconds := (r.WallMillis + 500) / 1000
				g.Expect(r.Spark.CoreSeconds).To(BeNumerically("~", 60+driverSeconds, 1))
				g.Expect(r.Spark.GiBSeconds).To(BeNumerically("~", 120+2*driverSeconds, 1))
				g.Expect(r.CostMicros).NotTo(BeNil())
				switch r.Input {
				case "s3":
					g.Expect(r.Spark.ExecutorPeakMaxBytes).To(Equal(int64(3 << 30)))
					g.Expect(r.Spark.PeakBytesSum).To(Equal(int64(7 << 30)))
					g.Expect(r.Spark.S3ReadBytes).To(Equal(int64(123456789)))
				case "volume":
					g.Expect(r.Spark.ExecutorPeakMaxBytes).To(Equal(int64(1 << 30)))
					g.Expect(r.Spark.PeakBytesSum).To(Equal(int64(4 << 30)))
					g.Expect(r.Spark.S3ReadBytes).To(BeZero())
				}
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("refuses a Spark driver that would need the Dataset's ServiceAccount to read the bucket", func() {
		testenv.ReadyDataset(ns, "irsa", func(ds *datav1alpha1.Dataset) {
			ds.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{ServiceAccountName: "reader"}
		})
		run := newBenchRun(ns, "spark-irsa", "irsa", func(r *datav1alpha1.BenchRun) {
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineSpark}}
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputS3}}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonUnsupported))
			g.Expect(c.Message).To(ContainSubstring("the Spark driver runs as its own ServiceAccount"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, run)).To(BeEmpty())
	})
})
