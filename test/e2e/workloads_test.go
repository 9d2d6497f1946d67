//go:build e2e

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

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The S3 server's credentials: test values, in a Secret as a user would keep them.
const (
	s3AccessKey = "e2e-access"
	s3SecretKey = "e2e-secret-value-never-logged"
	s3Secret    = "s3-credentials"
	s3Port      = 7070
	s3QuietPort = 7071
)

// restricted returns the security settings the restricted Pod Security profile asks of a pod and its
// containers.
func restricted() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	return &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), FSGroup: ptr.To(int64(65532)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
}

// startS3 runs versitygw as a pod in ns, with the credentials Secret, and returns its endpoint: the
// Service in front of it, by DNS name.
func startS3(ns string) string {
	Expect(c.Create(ctx, &corev1.Secret{
		ObjectMeta: objectMeta(ns, s3Secret),
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey},
	})).To(Succeed())
	return startS3Pod(ns, "versitygw")
}

// startS3Pod runs one more versitygw pod (the credentials Secret must exist), with extra global
// flags before its posix backend (e.g. --event-webhook-url), behind a Service of the same name, and
// returns its endpoint by the Service's DNS name. A pod started with flags also runs a quiet gateway
// (quietEndpoint): a second versitygw over the same directory without them, for changes whose
// notifications never arrive.
func startS3Pod(ns, name string, flags ...string) string {
	return startS3PodOn(ns, name, nil, flags...)
}

// startS3PodOn is startS3Pod with the pod bound to nodes that match nodeSelector (nil: any node).
func startS3PodOn(ns, name string, nodeSelector map[string]string, flags ...string) string {
	podSec, _ := restricted()
	containers := []corev1.Container{s3Gateway("versitygw", s3Port, flags...)}
	ports := []int32{s3Port}
	if len(flags) > 0 {
		containers = append(containers, s3Gateway("quiet", s3QuietPort))
		ports = append(ports, s3QuietPort)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector:    nodeSelector,
			SecurityContext: podSec,
			Containers:      containers,
			Volumes:         []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	Expect(c.Create(ctx, pod)).To(Succeed())
	return exposeReady(pod, ports...)
}

// exposeReady puts a Service named like pod in front of it (selecting its app label) on ports, waits
// until the pod is Ready, and returns the Service's URL on the first port by its DNS name.
func exposeReady(pod *corev1.Pod, ports ...int32) string {
	GinkgoHelper()
	svc := &corev1.Service{
		ObjectMeta: objectMeta(pod.Namespace, pod.Name),
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": pod.Labels["app"]}},
	}
	for _, port := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("s3-%d", port), Port: port, TargetPort: intstr.FromInt32(port)})
	}
	Expect(c.Create(ctx, svc)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(podReady(pod)).To(BeTrue(), "pod %s is not Ready", pod.Name)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", svc.Name, svc.Namespace, ports[0])
}

// s3Gateway is a versitygw container serving the pod's data volume on port, with extra global flags;
// it is Ready (and its Service sends it traffic) once the server answers.
func s3Gateway(name string, port int32, flags ...string) corev1.Container {
	_, sec := restricted()
	args := append([]string{"--port", fmt.Sprintf(":%d", port), "--health", "/health"}, flags...)
	return corev1.Container{
		Name: name, Image: s3Image, ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            append(args, "posix", "/data"),
		Env:             []corev1.EnvVar{{Name: "ROOT_ACCESS_KEY", Value: s3AccessKey}, {Name: "ROOT_SECRET_KEY", Value: s3SecretKey}},
		SecurityContext: sec,
		VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(port)}},
			PeriodSeconds: 1,
		},
	}
}

// quietEndpoint is the endpoint of the quiet gateway of the S3 pod at endpoint (see startS3Pod):
// the same bucket, changed without notifications.
func quietEndpoint(endpoint string) string {
	return strings.Replace(endpoint, fmt.Sprintf(":%d", s3Port), fmt.Sprintf(":%d", s3QuietPort), 1)
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// pqcacheContainer runs the pqcache image with args, with the S3 credentials in its environment.
// testkitContainer is pqcacheContainer running the test kit (test/cmd/pqcache-testkit) instead: the
// servers and probes that the shipped binary does not hold.
func testkitContainer(name string, args ...string) corev1.Container {
	c := pqcacheContainer(name, args...)
	c.Image = testkitImage
	return c
}

func pqcacheContainer(name string, args ...string) corev1.Container {
	_, sec := restricted()
	secretEnv := func(key string) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s3Secret}, Key: key}}}
	}
	return corev1.Container{
		Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: args,
		Env: []corev1.EnvVar{
			secretEnv("AWS_ACCESS_KEY_ID"), secretEnv("AWS_SECRET_ACCESS_KEY"),
			{Name: "AWS_REGION", Value: "us-east-1"}, {Name: "AWS_EC2_METADATA_DISABLED", Value: "true"},
		},
		SecurityContext: sec,
		VolumeMounts:    []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")}},
	}
}

// runJob runs a Job of the given containers in order (all but the last as init containers) on a
// scratch volume, waits for it to succeed, and returns the last container's termination message.
func runJob(ns, name string, steps ...corev1.Container) string {
	return runJobOn(ns, name, nil, steps...)
}

// runJobOn is runJob with the pod bound to nodes that match nodeSelector (nil: any node).
func runJobOn(ns, name string, nodeSelector map[string]string, steps ...corev1.Container) string {
	return runJobOnWith(ns, name, nodeSelector, nil, steps...)
}

// runJobOnWith is runJobOn with more volumes beside the steps' work directory.
func runJobOnWith(ns, name string, nodeSelector map[string]string, volumes []corev1.Volume, steps ...corev1.Container) string {
	podSec, _ := restricted()
	last := steps[len(steps)-1]
	job := &batchv1.Job{
		ObjectMeta: objectMeta(ns, name),
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(2)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeSelector:    nodeSelector,
				RestartPolicy:   corev1.RestartPolicyNever,
				SecurityContext: podSec,
				InitContainers:  steps[:len(steps)-1],
				Containers:      []corev1.Container{last},
				Volumes:         append([]corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, volumes...),
			}},
		},
	}
	Expect(c.Create(ctx, job)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Failed).To(BeZero(), "Job %s failed: %s", name, describePods(ns, name))
		g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return terminationMessage(ns, name, last.Name)
}

// terminationMessage returns what the named container of the Job's succeeded pod wrote to
// /dev/termination-log.
func terminationMessage(ns, job, container string) string {
	var pods corev1.PodList
	Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": job})).To(Succeed())
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == container && s.State.Terminated != nil {
				return s.State.Terminated.Message
			}
		}
	}
	Fail(fmt.Sprintf("no succeeded pod of Job %s/%s: %s", ns, job, describePods(ns, job)))
	return ""
}

// describePods summarises a Job's pods' container states and the end of each container's log, for
// failure messages.
func describePods(ns, job string) string {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": job}); err != nil {
		return err.Error()
	}
	var out []map[string]any
	for _, p := range pods.Items {
		for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			entry := map[string]any{"pod": p.Name, "container": s.Name, "state": s.State}
			if log, err := podLog(ns, p.Name, s.Name, 20); err == nil {
				entry["log"] = log
			}
			out = append(out, entry)
		}
	}
	data, _ := json.Marshal(out)
	return string(data)
}

// podLog returns the last lines of a container's log, as kubectl logs reads it: through the API
// server, from the kubelet of the pod's node. tail 0 returns all of it.
func podLog(ns, pod, container string, tail int64) (string, error) {
	opts := &corev1.PodLogOptions{Container: container}
	if tail > 0 {
		opts.TailLines = &tail
	}
	data, err := cs.CoreV1().Pods(ns).GetLogs(pod, opts).DoRaw(ctx)
	return string(data), err
}

// putReport is what `pqcache s3 put --report-file` writes.
type putReport struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

func parsePutReport(msg string) putReport {
	var r putReport
	Expect(json.Unmarshal([]byte(msg), &r)).To(Succeed(), "put report %q", msg)
	return r
}

// claimReaderJob is a Job of one container that mounts claim read-only at mountPath, beside the
// scratch volume pqcacheContainer expects: a reader of a Dataset's volume, as a user would run one.
func claimReaderJob(ns, name, claim, mountPath string, c corev1.Container) *batchv1.Job {
	podSec, _ := restricted()
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: mountPath, ReadOnly: true})
	return &batchv1.Job{
		ObjectMeta: objectMeta(ns, name),
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, SecurityContext: podSec, Containers: []corev1.Container{c},
			Volumes: []corev1.Volume{
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}},
			},
		}}},
	}
}

// e2eQueries are the TPC-H queries the suite's BenchRuns run where their point is the cluster (input
// paths, engines side by side, isolations, streams, Spark's executors), not the answers of all 22:
// those every engine gives digest for digest in bench/enginetest, off the cluster. A scan (q1, q6),
// joins across orders and lineitem (q3) and part (q14, q19), which the mixed inputs' fresh
// partitions touch. The refresh spec still runs all 22.
const e2eQueries = "[q1, q3, q6, q14, q19]"

// e2eQueryCount is how many e2eQueries names.
const e2eQueryCount = 5

// sparkQueries are the queries of the Spark spec, whose every query costs seconds of three executors'
// JVMs on this machine's two cores: a join whose shuffle crosses the executors (q3) and a scan (q6).
const sparkQueries = "[q3, q6]"
