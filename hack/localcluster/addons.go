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

package main

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// CoreDNS is the cluster's DNS add-on, as kubeadm installs it: a Deployment in kube-system behind the
// Service kube-dns at dnsIP, which every kubelet gives its pods as their name server. It answers for
// cluster.local (Services, pods) and the reverse zones, and forwards nothing: no name server outside
// the cluster is reachable, so other names fail at once. It listens on an unprivileged port as a
// non-root user; the Service maps port 53 to it.

const (
	dnsName = "coredns"
	dnsPort = 1053
)

const corefile = `.:1053 {
    errors
    health :8080 {
        lameduck 5s
    }
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    prometheus :9153
    cache 30
    loop
    reload
    loadbalance
}
`

// applyCoreDNS creates CoreDNS's ServiceAccount, RBAC, ConfigMap, Deployment (two replicas spread over
// nodes when there are several, so that one lost node leaves DNS up) and the kube-dns Service.
func applyCoreDNS(ctx context.Context, cs *kubernetes.Clientset, nodes int) error {
	ns := metav1.NamespaceSystem
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := metav1.ObjectMeta{Name: dnsName, Namespace: ns, Labels: labels}
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	if err := create("ServiceAccount coredns", ignore(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns", Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if err := create("ClusterRole system:coredns", ignore(cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}))); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns", Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: dnsName, Namespace: ns}},
	}
	if err := create("ClusterRoleBinding system:coredns", ignore(cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}))); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"Corefile": corefile}}
	if err := create("ConfigMap coredns", ignore(cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}))); err != nil {
		return err
	}
	if err := create("Deployment coredns", ignore(cs.AppsV1().Deployments(ns).Create(ctx, coreDNSDeployment(labels, nodes), metav1.CreateOptions{}))); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector:  labels,
			ClusterIP: dnsIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(dnsPort)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(dnsPort)},
			},
		},
	}
	return create("Service kube-dns", ignore(cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})))
}

// ignore drops the object a Create returns, keeping its error.
func ignore[T any](_ T, err error) error { return err }

func coreDNSDeployment(labels map[string]string, nodes int) *appsv1.Deployment {
	replicas := int32(min(nodes, 2))
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: dnsName, Namespace: metav1.NamespaceSystem, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: dnsName,
					PriorityClassName:  "system-cluster-critical",
					// CoreDNS answers the cluster; it must not ask itself.
					DNSPolicy: corev1.DNSDefault,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
					}},
					Containers: []corev1.Container{{
						Name:            dnsName,
						Image:           coreDNSImage,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: dnsPort, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: dnsPort, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")},
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}},
							InitialDelaySeconds: 60, PeriodSeconds: 10, FailureThreshold: 5,
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 2,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: dnsName},
					}}}},
				},
			},
		},
	}
}

// coreDNSReady checks that the kube-dns Service has a ready endpoint.
func coreDNSReady(ctx context.Context, cs *kubernetes.Clientset) error {
	slices, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
	if err != nil {
		return err
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				return nil
			}
		}
	}
	return errors.New("no ready CoreDNS endpoint yet")
}
