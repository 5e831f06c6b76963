package main

// The real node's configuration files: containerd's, the CNI network's,
// the kubelet's and kube-proxy's, written into DIR/node/ at every start.

import (
	"fmt"
	"os"
	"path/filepath"
)

// The images the node needs before anything can run, built on this
// machine by tests/cluster/images.sh (no registry is reachable): the pod
// sandbox and the cluster's DNS.
const (
	pauseImage   = "localhost/metahook-test/pause:v1"
	corednsImage = "localhost/metahook-test/coredns:v1"
)

// nodePaths are where the node keeps its state, all under DIR.
type nodePaths struct {
	dir string // DIR/node
	// socket is containerd's: DIR/containerd/containerd.sock, which
	// scripts/image.sh and tests/cluster/load-image.sh load images into.
	socket string
	// bin holds containerd, its shim and ctr; cni the CNI plugins
	// (tests/cluster/node/build.sh builds both).
	bin, cni string
}

func newNodePaths(clusterDir, nodeBuild string) nodePaths {
	return nodePaths{
		dir:    filepath.Join(clusterDir, "node"),
		socket: filepath.Join(clusterDir, "containerd", "containerd.sock"),
		bin:    filepath.Join(nodeBuild, "bin"),
		cni:    filepath.Join(nodeBuild, "cni"),
	}
}

func (n nodePaths) file(parts ...string) string {
	return filepath.Join(append([]string{n.dir}, parts...)...)
}

// registryHosts is containerd's registry configuration directory: one
// HOST/hosts.toml per registry (containerd reads it at each pull).
func (n nodePaths) registryHosts() string {
	return n.file("containerd", "certs.d")
}

// containerdConfig is containerd 2's configuration (version 3): CRI with
// Debian's runc and cgroupfs (the kubelet's driver here), overlayfs (the
// default snapshotter, which `ctr images import` unpacks into too), and
// the sandbox image built on this machine, and registries configured only
// by hosts.toml files under DIR/node/containerd/certs.d (the
// machine's /etc/containerd/certs.d is not read; with none there a pull
// goes to the registry the image names, unreachable here: tests/examples
// points docker.io at a registry of its own there). restrict_oom_score_adj: no
// process here may lower an oom_score_adj below its own (the machine's
// bounding set lacks CAP_SYS_RESOURCE), and runc fails every sandbox the
// CRI asks -998 for ("failed to update /proc/self/oom_score_adj:
// Permission denied", seen as "can't get final child's PID from pipe");
// containerd then keeps the pods' scores at or above its own.
func containerdConfig(n nodePaths) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
`, n.file("containerd", "root"), n.file("containerd", "state"), n.socket, n.socket+".ttrpc",
		pauseImage, n.registryHosts(), n.cni, n.file("cni", "net.d"))
}

// cniConfig is the pods' network: one bridge in the node's namespace,
// addresses from podCIDR, host ports through portmap. No masquerading:
// nothing beyond the node is reachable, nor meant to be.
func cniConfig(n nodePaths) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "metahook",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, podCIDR, n.file("cni", "ipam"))
}

// kubeletConfig: cgroup v1 (this machine mounts v1 controllers with a
// cgroup2 mount beside them; kubelet 1.37 runs there only when told not
// to fail), cgroupfs, pods under their own cgroup root so the node's
// cgroups are told apart and removed by down.sh; client certificates of
// the cluster CA only, and any such client allowed (the API server's for
// logs and exec; a test cluster has no other). Image garbage collection
// is off: an image removed here cannot be pulled back.
func kubeletConfig(c *cluster, n nodePaths) string {
	p := c.pki.path
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: /%s
failCgroupV1: false
failSwapOn: false
clusterDNS: [%s]
clusterDomain: cluster.local
resolvConf: %s
podLogsDir: %s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
`, nodeLinkIP, p("kubelet-serving.crt"), p("kubelet-serving.key"), p("ca.crt"), n.socket, cgroupRoot,
		clusterDNSIP, n.file("resolv.conf"), n.file("pod-logs"))
}

// proxyConfig: iptables mode inside the node's namespace. Service traffic
// is masqueraded whatever its source, so a reply always comes back through
// the node; conntrack limits are left as they are (they are this
// machine's, not the namespace's).
func proxyConfig(c *cluster) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: %s:10256
metricsBindAddress: 127.0.0.1:10249
iptables:
  masqueradeAll: true
  syncPeriod: 10s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.file("kube-proxy.kubeconfig"), clusterCIDR, nodeName, nodeLinkIP, nodeLinkIP)
}

// writeNodeConfig writes every file the node's components read.
func writeNodeConfig(c *cluster, n nodePaths) error {
	for _, d := range []string{n.file("containerd"), n.registryHosts(), n.file("cni", "net.d"), n.file("cni", "ipam"),
		n.file("kubelet"), n.file("pod-logs"), filepath.Dir(n.socket)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		n.file("containerd", "config.toml"):            containerdConfig(n),
		n.file("cni", "net.d", "10-metahook.conflist"): cniConfig(n),
		n.file("kubelet", "config.yaml"):               kubeletConfig(c, n),
		n.file("kube-proxy.yaml"):                      proxyConfig(c),
		// Pods inherit no nameserver from this machine: the only DNS they
		// have is the cluster's.
		n.file("resolv.conf"): "",
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
