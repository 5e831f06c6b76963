package main

// The real node's network: a network namespace of its own, joined to this
// machine's by one veth pair, so that everything the node does to the
// network (the CNI bridge, kube-proxy's iptables rules, the pods' own
// namespaces) happens inside namespaces the cluster created and goes away
// with them. Nothing routes out of it: the node's namespace has no default
// route and this machine forwards nothing into it but the cluster's own
// ranges, so a pod can reach the API server, other pods and Services, and
// nothing else.
//
//	this machine (root namespace)        node namespace (metahook-node)
//	kube-apiserver, etcd, scheduler      containerd, kubelet, kube-proxy
//	mh-host 10.200.0.1/30  <-- veth -->  mh-node 10.200.0.2/30
//	routes 10.244.0.0/16, 10.96.0.0/16   cni0 10.244.0.1/24 -> pods
//	  via 10.200.0.2

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

const (
	nodeName   = "metahook-node"
	netnsName  = "metahook-node"
	netnsPath  = "/run/netns/" + netnsName
	hostVeth   = "mh-host"
	nodeVeth   = "mh-node"
	hostLinkIP = "10.200.0.1"
	nodeLinkIP = "10.200.0.2"
	linkPrefix = "/30"
	// Pods get addresses from podCIDR (host-local IPAM on the node's
	// bridge); clusterCIDR is what kube-proxy counts as in-cluster.
	podCIDR     = "10.244.0.0/24"
	clusterCIDR = "10.244.0.0/16"
	// kube-dns's ClusterIP, in serviceCIDR: the kubelet writes it into
	// every pod's resolv.conf.
	clusterDNSIP = "10.96.0.10"
)

// run runs a command and returns its error with what it printed.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNode runs a command inside the node's network namespace.
func inNode(name string, args ...string) error {
	return run("nsenter", append([]string{"--net=" + netnsPath, "--", name}, args...)...)
}

// setUpNodeNetwork makes the node's namespace and its link afresh (a
// namespace left by a run that was killed is removed first).
func setUpNodeNetwork() error {
	tearDownNodeNetwork()
	steps := [][]string{
		{"ip", "netns", "add", netnsName},
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", nodeVeth, "netns", netnsName},
		{"ip", "addr", "add", hostLinkIP + linkPrefix, "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		// This machine reaches pods and Services through the node (the
		// aggregator and the tests do; kube-proxy's rules are in there).
		{"ip", "route", "add", clusterCIDR, "via", nodeLinkIP, "dev", hostVeth},
		{"ip", "route", "add", serviceCIDR, "via", nodeLinkIP, "dev", hostVeth},
	}
	for _, step := range steps {
		if err := run(step[0], step[1:]...); err != nil {
			return err
		}
	}
	inside := [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "addr", "add", nodeLinkIP + linkPrefix, "dev", nodeVeth},
		{"ip", "link", "set", nodeVeth, "up"},
		// The node routes between its pods and this machine.
		{"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"},
		// Traffic between two pods on the bridge passes iptables, so a
		// Service's DNAT is undone on the reply (kube-proxy expects it).
		{"sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"},
	}
	for _, step := range inside {
		if err := inNode(step[0], step[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// tearDownNodeNetwork removes the namespace (and with it the veth pair,
// the bridge and kube-proxy's rules) and the routes towards it. Quiet:
// what is not there is already gone.
func tearDownNodeNetwork() {
	_ = run("ip", "route", "del", clusterCIDR)
	_ = run("ip", "route", "del", serviceCIDR)
	_ = run("ip", "link", "del", hostVeth)
	if _, err := os.Stat(netnsPath); err == nil {
		_ = run("ip", "netns", "del", netnsName)
	}
}
