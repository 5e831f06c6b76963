package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one control-plane component running as a child of this
// process (this binary, started with the component's name). It can be
// stopped and started again, which the fault tests do to kube-apiserver.
type process struct {
	name    string
	logPath string
	// args gives the component's flags; extra flags of a start come after
	// them and win.
	args func() []string
	// exe is the program to run; empty means this binary with the
	// component's name as its first argument.
	exe string
	// netns, when set, is the network namespace (a path under
	// /run/netns) the component runs in: the real node's components run
	// in the node's namespace, entered with nsenter, which (unlike `ip
	// netns exec`) leaves the mounts alone: /sys/fs/cgroup stays as it is.
	netns string
	// env is added to this process's environment.
	env []string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool
	// unexpected receives the component's name when it exits without
	// having been asked to.
	unexpected chan<- string
}

func (p *process) start(extra []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "==== %s: starting %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.name)
	args := append([]string{self, p.name}, p.args()...)
	if p.exe != "" {
		args = append([]string{p.exe}, p.args()...)
	}
	args = append(args, extra...)
	if p.netns != "" {
		args = append([]string{"nsenter", "--net=" + p.netns, "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// If this process dies, however it dies, the component dies with it:
	// no control plane is left running after a test run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.stopping = cmd, exited, false
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "==== %s: %s exited: %v\n", time.Now().UTC().Format(time.RFC3339Nano), p.name, err)
		logFile.Close()
		p.mu.Lock()
		asked := p.stopping
		p.cmd = nil
		p.mu.Unlock()
		close(exited)
		if !asked && p.unexpected != nil {
			p.unexpected <- p.name
		}
	}()
	return nil
}

// stop sends SIGTERM, and SIGKILL if the component has not exited after
// grace. It returns once the component is gone.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil {
		p.mu.Unlock()
		return nil
	}
	p.stopping = true
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	return nil
}

// running says whether the component has been started and not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// done is closed when the current run exits (nil when not running).
func (p *process) done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	return p.exited
}
