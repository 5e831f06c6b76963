// Command metahook-cluster is the real single-node Kubernetes metahook's
// tests run against: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, the kubelet and kube-proxy built from Kubernetes' own Go
// modules, with containerd, runc, CNI and CoreDNS (node.go); or, for
// workloads larger than two cores can run, the control plane with a
// stand-in for kubelets (standin.go). It is a test tool, not a way to run a
// cluster.
//
//	metahook-cluster up --dir DIR        start everything; DIR/env says where
//	metahook-cluster kube-apiserver ...  (started by up)
//	metahook-cluster kube-controller-manager ...  (started by up)
//	kubectl ...                          when invoked through a link named kubectl
//
// One binary, several processes: kube-apiserver and kube-controller-manager
// each register process-wide flags, metrics and feature gates, so `up` runs
// each in a child process of its own (this binary again) and keeps etcd and
// the kubelet stand-in in its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	_ "k8s.io/component-base/logs/json/register"          // the components' --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as the real binaries have
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as the real binaries have
)

const usage = `usage:
  metahook-cluster up --dir DIR [--kubernetes-log-level N]
  metahook-cluster kube-apiserver FLAGS...
  metahook-cluster kube-controller-manager FLAGS...
  metahook-cluster kube-scheduler|kubelet|kube-proxy FLAGS...   (the real node's, started by up)
  metahook-cluster kubectl ARGS...   (or through a link named kubectl)
`

func main() {
	if filepath.Base(os.Args[0]) == "kubectl" {
		runKubectl()
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	command, rest := os.Args[1], os.Args[2:]
	switch command {
	case "up":
		if err := up(rest); err != nil {
			fmt.Fprintf(os.Stderr, "metahook-cluster: %v\n", err)
			os.Exit(1)
		}
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy":
		cmd := components[command]()
		cmd.SetArgs(rest)
		os.Exit(cli.Run(cmd))
	case "kubectl":
		// kubectl reads os.Args itself (plugins, verbosity): make it look
		// as if it had been called directly.
		os.Args = os.Args[1:]
		runKubectl()
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
}

// components are the Kubernetes commands this binary runs as child
// processes of `up`, each with its own process-wide flags and metrics.
var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"kube-proxy":              proxy.NewProxyCommand,
}

func runKubectl() {
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck // as kubectl's own main does
	command := kubectl.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
}
