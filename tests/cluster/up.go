package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/version"
)

// ports are kept in DIR/ports.json so that a control plane started again
// on the same directory answers where it did (etcd's peer address is part
// of its data; kubeconfigs name the API server's port).
type ports struct {
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
	APIServer  int `json:"apiServer"`
	Control    int `json:"control"`
}

type cluster struct {
	dir      string
	logLevel int
	pki      *pki
	ports    ports
	etcd     *etcdServer

	// realNode: a kubelet, containerd and the rest run pods for real
	// (node.go); otherwise the stand-in (standin.go) pretends to.
	realNode bool
	node     *node

	apiserver         *process
	controllerManager *process
	// standIn runs when realNode is false; restartable like the processes.
	standIn *runningStandIn
	// adminClient talks to the API server as the admin.
	adminClient kubernetes.Interface
}

func (c *cluster) file(name string) string { return filepath.Join(c.dir, name) }
func (c *cluster) logFile(name string) string {
	return filepath.Join(c.dir, "logs", name+".log")
}
func (c *cluster) auditLog() string { return c.logFile("audit") }
func (c *cluster) serverURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.ports.APIServer)
}

// nodeServerURL is the API server as the node and its pods reach it: at
// this machine's end of the node's link.
func (c *cluster) nodeServerURL() string {
	return fmt.Sprintf("https://%s:%d", hostLinkIP, c.ports.APIServer)
}

// stringList is a repeated flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// up starts etcd, kube-apiserver, kube-controller-manager and the kubelet
// stand-in, writes DIR/env once all are ready, and runs until SIGTERM or
// SIGINT (or until a component fails).
func up(args []string) error {
	flags := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := flags.String("dir", "", "directory for the data, certificates, kubeconfigs and logs (kept, and reused if it exists)")
	logLevel := flags.Int("kubernetes-log-level", 1, "--v of kube-apiserver and kube-controller-manager")
	nodeKind := flags.String("node", "real", "real: a kubelet, kube-proxy, kube-scheduler and containerd run pods; "+
		"standin: a stand-in marks pods Ready and runs nothing (for workloads of more pods than two cores can run)")
	nodeBuild := flags.String("node-build", "", "with --node=real: the directory tests/cluster/node/build.sh printed")
	var images stringList
	flags.Var(&images, "image", "with --node=real: an image archive to load into containerd before the kubelet starts (repeated)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	switch *nodeKind {
	case "real":
		if *nodeBuild == "" {
			return errors.New("--node=real needs --node-build")
		}
	case "standin":
	default:
		return fmt.Errorf("--node=%s: real or standin", *nodeKind)
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	c := &cluster{dir: absDir, logLevel: *logLevel, realNode: *nodeKind == "real"}
	for _, sub := range []string{"logs", "etcd", "pki"} {
		if err := os.MkdirAll(c.file(sub), 0o700); err != nil {
			return err
		}
	}
	// A previous run's files say nothing about this one.
	_ = os.Remove(c.file("env"))
	if c.pki, err = loadOrCreatePKI(c.file("pki")); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := c.choosePorts(); err != nil {
		return err
	}
	if err := c.writeKubeconfigs(); err != nil {
		return fmt.Errorf("kubeconfigs: %w", err)
	}
	if err := writeAuditPolicy(c.file("audit-policy.yaml")); err != nil {
		return err
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()

	if c.etcd, err = startEtcd(c.file("etcd"), c.logFile("etcd"), c.ports.EtcdClient, c.ports.EtcdPeer); err != nil {
		return err
	}
	defer c.etcd.close()

	unexpected := make(chan string, 6)
	c.apiserver = &process{name: "kube-apiserver", logPath: c.logFile("kube-apiserver"),
		args: func() []string { return apiserverArgs(c) }, unexpected: unexpected}
	c.controllerManager = &process{name: "kube-controller-manager", logPath: c.logFile("kube-controller-manager"),
		args: func() []string { return controllerManagerArgs(c) }, unexpected: unexpected}
	defer func() {
		_ = c.controllerManager.stop(10 * time.Second)
		_ = c.apiserver.stop(20 * time.Second)
	}()

	admin, err := restConfig(c.file("admin.kubeconfig"))
	if err != nil {
		return err
	}
	if c.adminClient, err = kubernetes.NewForConfig(admin); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, nil); err != nil {
		return err
	}
	if err := c.controllerManager.start(nil); err != nil {
		return err
	}
	if c.realNode {
		c.node = newNode(c, *nodeBuild, images, unexpected)
		defer c.node.stop()
		if err := c.node.start(ctx); err != nil {
			return fmt.Errorf("the node: %w", err)
		}
	} else {
		if c.standIn, err = startStandIn(ctx, c.file("kubelet-standin.kubeconfig")); err != nil {
			return err
		}
		// The one running at the end: the control endpoint may have replaced it.
		defer func() { c.standIn.stop() }()
	}

	control, err := c.serveControl(ctx)
	if err != nil {
		return err
	}
	defer control.Close()

	if err := c.waitForControllerManager(ctx); err != nil {
		return err
	}
	if err := c.writeEnv(); err != nil {
		return err
	}
	fmt.Printf("control plane %s ready: KUBECONFIG=%s\n", version.Get().GitVersion, c.file("admin.kubeconfig"))

	select {
	case <-ctx.Done():
		fmt.Println("stopping the control plane")
		return nil
	case name := <-unexpected:
		return fmt.Errorf("%s exited on its own; see %s", name, c.logFile(name))
	}
}

// startAPIServer starts kube-apiserver (extra flags after the usual ones)
// and waits until /readyz answers ok.
func (c *cluster) startAPIServer(ctx context.Context, extra []string) error {
	if err := c.apiserver.start(extra); err != nil {
		return err
	}
	exited := c.apiserver.done()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		body, err := c.adminClient.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("kube-apiserver exited while starting; see %s", c.logFile("kube-apiserver"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver was not ready after 3 minutes (last: %v); see %s", err, c.logFile("kube-apiserver"))
		}
	}
}

// waitForControllerManager waits for what its controllers do first: the
// default ServiceAccount of the default namespace (pods cannot be created
// in a namespace without one).
func (c *cluster) waitForControllerManager(ctx context.Context) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := c.adminClient.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && time.Now().After(deadline) {
			return fmt.Errorf("kube-controller-manager: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-controller-manager made no default ServiceAccount in 3 minutes; see %s",
				c.logFile("kube-controller-manager"))
		}
		select {
		case <-c.controllerManager.done():
			return fmt.Errorf("kube-controller-manager exited while starting; see %s", c.logFile("kube-controller-manager"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) choosePorts() error {
	if data, err := os.ReadFile(c.file("ports.json")); err == nil {
		if err := json.Unmarshal(data, &c.ports); err != nil {
			return fmt.Errorf("%s: %w", c.file("ports.json"), err)
		}
	}
	for _, port := range []*int{&c.ports.EtcdClient, &c.ports.EtcdPeer, &c.ports.APIServer, &c.ports.Control} {
		if *port != 0 && portFree(*port) {
			continue
		}
		free, err := freePort()
		if err != nil {
			return err
		}
		*port = free
	}
	data, err := json.MarshalIndent(c.ports, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.file("ports.json"), data, 0o644)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func (c *cluster) writeKubeconfigs() error {
	caPEM, err := os.ReadFile(c.pki.path("ca.crt"))
	if err != nil {
		return err
	}
	for _, id := range append(append([]identity{}, builtinIdentities...), nodeIdentities...) {
		server := c.serverURL()
		if id.file == nodeKubeletIdentity.file || id.file == proxyIdentity.file {
			// They run in the node's network namespace.
			server = c.nodeServerURL()
		}
		certPEM, err := os.ReadFile(c.pki.path(id.file + ".crt"))
		if err != nil {
			return err
		}
		keyPEM, err := os.ReadFile(c.pki.path(id.file + ".key"))
		if err != nil {
			return err
		}
		if err := writeKubeconfig(c.file(id.file+".kubeconfig"), server, caPEM, certPEM, keyPEM, id.user); err != nil {
			return err
		}
	}
	return nil
}

// writeEnv writes DIR/env, shell assignments saying where everything is;
// its presence means the control plane is ready.
func (c *cluster) writeEnv() error {
	lines := []string{
		"KUBECONFIG=" + c.file("admin.kubeconfig"),
		"METAHOOK_CLUSTER_DIR=" + c.dir,
		"METAHOOK_CLUSTER_SERVER=" + c.serverURL(),
		"METAHOOK_CLUSTER_VERSION=" + version.Get().GitVersion,
		fmt.Sprintf("METAHOOK_CLUSTER_CONTROL=http://127.0.0.1:%d", c.ports.Control),
		"METAHOOK_CLUSTER_AUDIT_LOG=" + c.auditLog(),
		fmt.Sprintf("METAHOOK_CLUSTER_PID=%d", os.Getpid()),
		"METAHOOK_CLUSTER_NODE=" + map[bool]string{true: "real", false: "standin"}[c.realNode],
	}
	if c.realNode {
		lines = append(lines,
			"METAHOOK_CLUSTER_NODE_NAME="+nodeName,
			"METAHOOK_CLUSTER_CONTAINERD="+c.node.paths.socket,
			"METAHOOK_CLUSTER_NODE_NETNS="+netnsName)
	}
	tmp := c.file("env.tmp")
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.file("env"))
}
