package main

// The real node: containerd (with Debian's runc), the kubelet and
// kube-proxy in the node's network namespace (node_network.go), and
// kube-scheduler beside the API server. Pods are scheduled, pulled from
// containerd's image store (images are loaded there by
// tests/cluster/images.sh and scripts/image.sh: no registry is reachable),
// started, probed and given addresses on the node's bridge; Service names
// resolve through CoreDNS (coredns.yaml).

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criclient "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
)

//go:embed coredns.yaml
var corednsManifest string

type node struct {
	c     *cluster
	paths nodePaths
	// images are archives to import into containerd before the kubelet
	// starts (the sandbox's and CoreDNS's at least).
	images []string

	containerd *process
	kubelet    *process
	proxy      *process
	scheduler  *process
}

func newNode(c *cluster, nodeBuild string, images []string, unexpected chan<- string) *node {
	n := &node{c: c, paths: newNodePaths(c.dir, nodeBuild), images: images}
	n.containerd = &process{name: "containerd", logPath: c.logFile("containerd"), netns: netnsPath,
		exe:  filepath.Join(n.paths.bin, "containerd"),
		args: func() []string { return []string{"--config", n.paths.file("containerd", "config.toml")} },
		// Its shims are found next to it.
		env:        []string{"PATH=" + n.paths.bin + ":" + os.Getenv("PATH")},
		unexpected: unexpected}
	n.kubelet = &process{name: "kubelet", logPath: c.logFile("kubelet"), netns: netnsPath,
		args: n.kubeletArgs, unexpected: unexpected}
	n.proxy = &process{name: "kube-proxy", logPath: c.logFile("kube-proxy"), netns: netnsPath,
		args: func() []string {
			return []string{"--config=" + n.paths.file("kube-proxy.yaml"), fmt.Sprintf("--v=%d", c.logLevel)}
		},
		unexpected: unexpected}
	n.scheduler = &process{name: "kube-scheduler", logPath: c.logFile("kube-scheduler"),
		args: func() []string { return schedulerArgs(c) }, unexpected: unexpected}
	return n
}

func (n *node) kubeletArgs() []string {
	return []string{
		"--config=" + n.paths.file("kubelet", "config.yaml"),
		"--kubeconfig=" + n.c.file("kubelet.kubeconfig"),
		"--hostname-override=" + nodeName,
		"--node-ip=" + nodeLinkIP,
		"--root-dir=" + n.paths.file("kubelet", "root"),
		"--cert-dir=" + n.paths.file("kubelet", "pki"),
		fmt.Sprintf("--v=%d", n.c.logLevel),
	}
}

func schedulerArgs(c *cluster) []string {
	return controlPlaneArgs(c, "kube-scheduler")
}

// start brings the node up: network, containerd, the images, kubelet,
// kube-proxy and the scheduler; it returns once the Node is Ready and
// CoreDNS answers (its pod Ready).
func (n *node) start(ctx context.Context) error {
	if err := setUpNodeNetwork(); err != nil {
		return fmt.Errorf("the node's network: %w", err)
	}
	if err := writeNodeConfig(n.c, n.paths); err != nil {
		return fmt.Errorf("the node's configuration: %w", err)
	}
	if err := makeCgroupRoot(); err != nil {
		return fmt.Errorf("the pods' cgroup root: %w", err)
	}
	if err := n.containerd.start(nil); err != nil {
		return err
	}
	if err := n.waitForContainerd(ctx); err != nil {
		return err
	}
	for _, archive := range n.images {
		if err := n.importImage(archive); err != nil {
			return err
		}
	}
	for _, p := range []*process{n.scheduler, n.kubelet, n.proxy} {
		if err := p.start(nil); err != nil {
			return err
		}
	}
	if err := n.waitForReady(ctx); err != nil {
		return err
	}
	return n.startCoreDNS(ctx)
}

// makeCgroupRoot creates the kubelet's cgroupRoot (/metahook, see
// kubeletConfig) in every cgroup hierarchy mounted under /sys/fs/cgroup:
// the kubelet refuses to start when it is missing ("cgroup [\"metahook\"]
// has some missing paths") and creates only the cgroups below it. A new
// cpuset cgroup starts with no CPUs and no memory nodes: given its
// parent's. down.sh kills what is left in them.
func makeCgroupRoot() error {
	const base = "/sys/fs/cgroup"
	entries, err := os.ReadDir(base)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		parent := filepath.Join(base, entry.Name())
		if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
			continue // not a hierarchy
		}
		dir := filepath.Join(parent, cgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			own, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || strings.TrimSpace(string(own)) != "" {
				continue
			}
			inherited, err := os.ReadFile(filepath.Join(parent, file))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file), inherited, 0o644); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
			}
		}
	}
	return nil
}

// cgroupRoot holds every pod's cgroup (the kubelet's cgroupRoot), so
// down.sh can find what a killed node left running.
const cgroupRoot = "metahook"

func (n *node) ctr(args ...string) *exec.Cmd {
	return exec.Command(filepath.Join(n.paths.bin, "ctr"),
		append([]string{"--address", n.paths.socket, "--namespace", "k8s.io"}, args...)...)
}

func (n *node) waitForContainerd(ctx context.Context) error {
	return poll(ctx, time.Minute, n.containerd.done(), "containerd", func() error {
		out, err := n.ctr("version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
}

func (n *node) importImage(archive string) error {
	out, err := n.ctr("images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s into containerd: %v: %s", archive, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// waitForReady waits for the kubelet to register the Node and report it
// Ready (the runtime and its network are up).
func (n *node) waitForReady(ctx context.Context) error {
	return poll(ctx, 3*time.Minute, n.kubelet.done(), "the kubelet", func() error {
		node, err := n.c.adminClient.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s not Ready: %s", nodeName, cond.Message)
			}
		}
		return fmt.Errorf("node %s reports no Ready condition yet", nodeName)
	})
}

// startCoreDNS applies coredns.yaml with this binary's kubectl and waits
// for its pod to be Ready.
func (n *node) startCoreDNS(ctx context.Context) error {
	manifest := n.paths.file("coredns.yaml")
	text := strings.NewReplacer("@IMAGE@", corednsImage, "@DNS_IP@", clusterDNSIP).Replace(corednsManifest)
	if err := os.WriteFile(manifest, []byte(text), 0o644); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	out, err := exec.Command(self, "kubectl", "--kubeconfig", n.c.file("admin.kubeconfig"),
		"apply", "--server-side", "-f", manifest).CombinedOutput()
	if err != nil {
		return fmt.Errorf("applying %s: %v: %s", manifest, err, strings.TrimSpace(string(out)))
	}
	return poll(ctx, 3*time.Minute, nil, "CoreDNS", func() error {
		pods, err := n.c.adminClient.CoreV1().Pods(metav1.NamespaceSystem).List(ctx,
			metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			return err
		}
		for _, pod := range pods.Items {
			for _, cond := range pod.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		return fmt.Errorf("no CoreDNS pod is Ready (%d pods)", len(pods.Items))
	})
}

// stop stops the pods' containers (through the kubelet's own runtime: no
// container outlives the node), then the components, then the network.
func (n *node) stop() {
	_ = n.proxy.stop(10 * time.Second)
	_ = n.kubelet.stop(10 * time.Second)
	_ = n.scheduler.stop(10 * time.Second)
	n.removeContainers()
	_ = n.containerd.stop(10 * time.Second)
	tearDownNodeNetwork()
}

// removeContainers stops and removes every pod sandbox through the CRI,
// as the kubelet would: containerd kills the pods' containers and the
// CNI plugins release their addresses and network namespaces, so no
// process and no namespace of a pod outlives the node.
func (n *node) removeContainers() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runtime, err := criclient.NewRemoteRuntimeService(ctx, "unix://"+n.paths.socket, 10*time.Second,
		noop.NewTracerProvider(), false)
	if err != nil {
		klog.ErrorS(err, "connecting to containerd to remove the pods")
		return
	}
	sandboxes, err := runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		klog.ErrorS(err, "listing the pods' sandboxes")
		return
	}
	for _, sandbox := range sandboxes {
		if err := runtime.StopPodSandbox(ctx, sandbox.Id); err != nil {
			klog.ErrorS(err, "stopping a pod sandbox", "id", sandbox.Id)
		}
		if err := runtime.RemovePodSandbox(ctx, sandbox.Id); err != nil {
			klog.ErrorS(err, "removing a pod sandbox", "id", sandbox.Id)
		}
	}
}

// poll calls check until it succeeds, the component exits (exited closes)
// or limit passes; the last error says why it gave up.
func poll(ctx context.Context, limit time.Duration, exited <-chan struct{}, what string, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not ready after %s: %w", what, limit, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited while starting (last: %v)", what, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
