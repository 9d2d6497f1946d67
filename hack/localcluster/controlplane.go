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
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler, each
// waited for before the next. It runs in the network supervisor, in the cluster network namespace:
// etcd and the controllers listen on that namespace's loopback, the API server on its address on the
// bridge too, where the nodes and pods reach it.
func (c *cluster) startControlPlane(ctx context.Context) error {
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClientPort)
	if err := c.startEtcd(ctx, etcdURL); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	return c.startControllers(ctx)
}

// startEtcd starts etcd serving clients on etcdURL and waits until it is healthy.
func (c *cluster) startEtcd(ctx context.Context, etcdURL string) error {
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	done := step("starting etcd on %s", etcdURL)
	if err := c.startProcess("etcd", c.bin("etcd"), []string{
		"--name=" + clusterName,
		"--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + clusterName + "=" + peerURL,
		// The cluster is disposable: fsync buys nothing here and costs seconds per test.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, procOpts{}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "etcd health", "etcd", 30*time.Second, httpOK(etcdURL+"/health", false)); err != nil {
		return err
	}
	done()
	return nil
}

// startAPIServer starts kube-apiserver on etcd at etcdURL and waits until it is ready.
func (c *cluster) startAPIServer(ctx context.Context, etcdURL string) error {
	pki := func(f string) string { return c.path("pki", f) }
	done := step("starting kube-apiserver on %s:%d", controlPlaneIP, apiserverPort)
	if err := c.startProcess("kube-apiserver", c.bin("kube-apiserver"), []string{
		"--etcd-servers=" + etcdURL,
		// Every address of the cluster namespace: its loopback (the forwarder, the controllers) and its
		// address on the bridge (nodes, pods through the kubernetes Service). The namespace has no other.
		"--bind-address=0.0.0.0", "--advertise-address=" + controlPlaneIP, fmt.Sprintf("--secure-port=%d", apiserverPort),
		"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + pki("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		// Webhooks and aggregated APIs are called at their Service's endpoints (pod IPs, routed to the
		// nodes from this namespace) rather than at the ClusterIP: the control plane is no node, and
		// kube-proxy's rules live in the nodes' namespaces.
		"--enable-aggregator-routing=true",
		"--allow-privileged=true",
		"--profiling=false",
		"--cert-dir=" + c.path("apiserver"),
	}, procOpts{}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "kube-apiserver /readyz", "kube-apiserver", 90*time.Second,
		httpOK(fmt.Sprintf("https://127.0.0.1:%d/readyz", apiserverPort), true)); err != nil {
		return err
	}
	done()
	return nil
}

// startControllers starts kube-controller-manager and kube-scheduler and waits until both are healthy.
func (c *cluster) startControllers(ctx context.Context) error {
	pki := func(f string) string { return c.path("pki", f) }
	done := step("starting kube-controller-manager and kube-scheduler")
	kcm := pki("controller-manager.kubeconfig")
	if err := c.startProcess("kube-controller-manager", c.bin("kube-controller-manager"), []string{
		"--kubeconfig=" + kcm, "--authentication-kubeconfig=" + kcm, "--authorization-kubeconfig=" + kcm,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", controllerHealth),
		"--leader-elect=false",
		"--cluster-name=" + clusterName,
		"--service-account-private-key-file=" + pki("sa.key"),
		"--root-ca-file=" + pki("ca.crt"),
		"--use-service-account-credentials=true",
		// Each node's pod CIDR is fixed by the address plan (topology.go) and set by up.
		"--allocate-node-cidrs=false",
		"--cluster-cidr=" + clusterCIDR,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--cluster-signing-cert-file=" + pki("ca.crt"), "--cluster-signing-key-file=" + pki("ca.key"),
		"--profiling=false",
		// A stopped node is NotReady after 25 s instead of Kubernetes' 50: the e2e suite stops nodes
		// and waits for that. kubelet renews its lease every 10 s, so a loaded node still has two
		// renewals' slack before it is taken for lost.
		"--node-monitor-grace-period=25s",
	}, procOpts{}); err != nil {
		return err
	}
	sched := pki("scheduler.kubeconfig")
	if err := c.startProcess("kube-scheduler", c.bin("kube-scheduler"), []string{
		"--kubeconfig=" + sched, "--authentication-kubeconfig=" + sched, "--authorization-kubeconfig=" + sched,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedulerHealth),
		"--leader-elect=false",
		"--profiling=false",
	}, procOpts{}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "kube-controller-manager /healthz", "kube-controller-manager", 60*time.Second,
		httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", controllerHealth), true)); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "kube-scheduler /healthz", "kube-scheduler", 60*time.Second,
		httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", schedulerHealth), true)); err != nil {
		return err
	}
	done()
	return nil
}

// httpOK returns a check that GETs url (on 127.0.0.1) and wants a 200. The components' health
// endpoints serve self-signed certificates, hence insecure; no credentials are sent.
func httpOK(url string, insecure bool) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure},
	}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }() // only read
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
