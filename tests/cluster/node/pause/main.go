// Command pause is the process of a pod's sandbox: the first process of the
// pod's namespaces, which holds them while the pod's containers come and go.
// It does nothing but wait: SIGINT or SIGTERM end it with status 0, and as
// PID 1 of the pod's PID namespace (a shared process namespace) it reaps
// the orphaned processes the kernel hands it, so no zombie stays behind.
//
// It does what Kubernetes' build/pause/linux/pause.c does, in Go, so that
// the node's binaries all come from pinned Go modules: `-v` prints the
// version, and a warning goes to stderr when it is not PID 1 (it still
// works then; it is used outside sandboxes too).
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is what `pause -v` prints after "pause.go ".
var version = "metahook"

// waiting, when set, is called once the signal handlers are in place (the
// tests wait for it before they signal).
var waiting func()

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run waits for SIGINT or SIGTERM, reaping children as they exit, and
// returns the process's exit status.
func run(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if strings.EqualFold(a, "-v") {
			fmt.Fprintf(stdout, "pause.go %s\n", version)
			return 0
		}
	}
	if os.Getpid() != 1 {
		// Not an error: pause is also used outside a sandbox.
		fmt.Fprintln(stderr, "Warning: pause should be the first process")
	}

	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// A child that exited before the handler was installed would send no
	// SIGCHLD that reaches us: reap once now.
	reap()
	if waiting != nil {
		waiting()
	}
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(stderr, "Shutting down, got signal: %v\n", sig)
		return 0
	}
	return 42 // not reached: the channel is never closed
}

// reap collects every child that has exited. SIGCHLD signals coalesce, so
// one signal may stand for many exits: wait until none is left.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
