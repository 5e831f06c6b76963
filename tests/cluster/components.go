package main

import (
	"fmt"
	"os"
	"strings"
)

// Services get addresses from here (no kube-proxy routes them).
const serviceCIDR = "10.96.0.0/16"

// serviceIP is the first address of serviceCIDR: the kubernetes Service's,
// in the serving certificate as on a real cluster.
const serviceIP = "10.96.0.1"

// ServiceAccount tokens name this issuer, as kubeadm clusters do.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// The controllers the tests rely on: garbage collection (owner
// references), namespace deletion, Deployments down to ReplicaSets and
// pods, DaemonSets (Metacontroller's daemonjob example), StatefulSets
// (its service-per-pod examples decorate one and wait for its pods), each
// namespace's default ServiceAccount (pods need it) and its
// kube-root-ca.crt, and the aggregated admin/edit/view ClusterRoles.
var controllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"deployment-controller",
	"replicaset-controller",
	"daemonset-controller",
	"statefulset-controller",
	"serviceaccount-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	// Services' endpoints, which kube-proxy and CoreDNS follow on the
	// real node.
	"endpoints-controller",
	"endpointslice-controller",
}

// An audit record for every request but the API server's own and
// discovery's, at Metadata level (who, what, which object, the answer):
// tests count the writes a user made. In the leader-election test's
// namespace, writes of the kinds its replicas write are recorded with the
// objects written too: a write's resourceVersion is when it was committed,
// which orders it against the Lease's holders (tests/e2e/leader_terms.rs).
// Not the Pods and ReplicaSets its Deployments make: those were 100 MB of
// log every few minutes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
omitManagedFields: true
rules:
- level: None
  users: ["system:apiserver"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*", "/api", "/api/*", "/apis", "/apis/*", "/metrics"]
- level: RequestResponse
  namespaces: ["` + leaderTermsNamespace + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["events"]
  - group: "events.k8s.io"
    resources: ["events"]
  - group: "apps"
    resources: ["deployments", "deployments/status"]
  - group: "fraim.co.jp"
    resources: ["helloes", "helloes/status"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: Metadata
`

// The namespace whose writes the audit log records in full.
const leaderTermsNamespace = "e2e-leader-terms"

func apiserverArgs(c *cluster) []string {
	p := c.pki.path
	args := []string{
		fmt.Sprintf("--secure-port=%d", c.ports.APIServer),
		"--etcd-servers=" + c.etcd.url,
		"--tls-cert-file=" + p("apiserver.crt"),
		"--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		// Added to the default admission plugins: NodeRestriction as
		// kubeadm does; OwnerReferencesPermissionEnforcement as hardened
		// clusters (OpenShift among them) do. With it, an owner reference
		// that blocks its owner's deletion needs `update` on the owner's
		// finalizers: the driver's RBAC must say so.
		"--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
		// The aggregation layer.
		"--requestheader-client-ca-file=" + p("front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p("front-proxy-client.key"),
		"--audit-policy-file=" + c.file("audit-policy.yaml"),
		"--audit-log-path=" + c.auditLog(),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--profiling=false",
		fmt.Sprintf("--v=%d", c.logLevel),
	}
	if !c.realNode {
		// Loopback only. The kubernetes Service's endpoint would be a
		// loopback address, which Endpoints may not hold: keep it
		// unmanaged, as Kubernetes' own test API server does.
		return append(args, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--endpoint-reconciler-type=none")
	}
	return append(args,
		// On loopback for this machine and at its end of the node's link
		// for the node and its pods (the kubernetes Service's endpoint).
		// One address or all: all, with client certificates required
		// for anything but health.
		"--bind-address=0.0.0.0",
		"--advertise-address="+hostLinkIP,
		// kubectl logs/exec reach the kubelet with this certificate.
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		// The aggregator and webhooks go to an endpoint's address (a
		// pod's, routed to the node) rather than to a Service's
		// ClusterIP, which only kube-proxy inside the node knows.
		"--enable-aggregator-routing=true",
	)
}

// controllerList: on the real node also the node lifecycle controller.
// The kubelet registers its Node with the taint
// node.kubernetes.io/not-ready:NoSchedule, which only that controller
// removes once the Node is Ready: without it nothing is ever scheduled
// (CoreDNS stays Pending, "1 node(s) had untolerated taint(s)"). The
// stand-in keeps no Lease for its Node, which the controller would then
// mark unreachable: not there.
func controllerList(c *cluster) []string {
	if !c.realNode {
		return controllers
	}
	return append(append([]string(nil), controllers...), "node-lifecycle-controller")
}

// controlPlaneArgs are what kube-controller-manager and kube-scheduler
// share: their own kubeconfig for everything, no serving port, one
// instance (no leader election), the cluster's log level.
func controlPlaneArgs(c *cluster, component string) []string {
	kubeconfig := c.file(component + ".kubeconfig")
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		fmt.Sprintf("--v=%d", c.logLevel),
	}
}

func controllerManagerArgs(c *cluster) []string {
	return append(controlPlaneArgs(c, "kube-controller-manager"),
		"--controllers="+strings.Join(controllerList(c), ","),
		"--use-service-account-credentials=true",
		"--root-ca-file="+c.pki.path("ca.crt"),
		"--service-account-private-key-file="+c.pki.path("sa.key"),
		// Fast enough that a thousand Deployments do not wait on the
		// controller-manager's own client-side rate limit.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	)
}

func writeAuditPolicy(path string) error {
	return os.WriteFile(path, []byte(auditPolicy), 0o644)
}
