package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run pause as a separate process: this test binary, started
// again with PAUSE_TEST_MAIN set, is pause; it prints "waiting" once its
// signal handlers are in place. With PAUSE_TEST_CHILDREN set it
// first makes itself a child subreaper (what PID 1 is without asking: it
// inherits the orphans below it) and starts a shell that leaves an orphan
// behind, printing the shell's and the orphan's PIDs, one per line.
func TestMain(m *testing.M) {
	if os.Getenv("PAUSE_TEST_MAIN") == "" {
		os.Exit(m.Run())
	}
	if os.Getenv("PAUSE_TEST_CHILDREN") != "" {
		if err := setChildSubreaper(); err != nil {
			panic(err)
		}
		attr := &os.ProcAttr{Files: []*os.File{nil, os.Stdout, os.Stderr}}
		// The shell exits at once; its background sleep outlives it and
		// becomes this process's child when it does.
		p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "sleep 0.3 & echo $!"}, attr)
		if err != nil {
			panic(err)
		}
		os.Stdout.WriteString(strconv.Itoa(p.Pid) + "\n")
		// Not waited for here: pause must reap it.
	}
	waiting = func() { os.Stdout.WriteString("waiting\n") }
	main()
}

func setChildSubreaper() error {
	const prSetChildSubreaper = 36
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// pauseProcess is pause as startPause started it. Wait is called once, by
// startPause: exec.Cmd.Wait must not be called twice, and two calls at once
// (a test's and the cleanup's) both wait for the one result of the stderr
// copy, so one of them never returns.
type pauseProcess struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	err    error         // what Wait returned, once exited is closed
}

// waitExit returns Wait's result, or fails the test if pause is still
// running after timeout.
func (p *pauseProcess) waitExit(t *testing.T, timeout time.Duration, what string) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		t.Fatal(what)
		return nil
	}
}

func startPause(t *testing.T, children bool) (*pauseProcess, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PAUSE_TEST_MAIN=1")
	if children {
		cmd.Env = append(cmd.Env, "PAUSE_TEST_CHILDREN=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &pauseProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	return p, bufio.NewReader(stdout), &stderr
}

// expectLine reads one line of pause's output and fails unless it is want.
func expectLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != want {
		t.Fatalf("pause printed %q (%v), want %q", line, err, want)
	}
}

// waitFor polls until cond holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExitsZeroOnSIGTERMAndSIGINT(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p, stdout, stderr := startPause(t, false)
			expectLine(t, stdout, "waiting")
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := p.waitExit(t, 10*time.Second, "pause did not exit on "+sig.String()); err != nil {
				t.Fatalf("pause exited with %v; stderr:\n%s", err, stderr)
			}
			if !strings.Contains(stderr.String(), "Shutting down, got signal") {
				t.Errorf("stderr does not say why it stopped:\n%s", stderr)
			}
		})
	}
}

func TestKeepsRunningUntilSignalled(t *testing.T) {
	p, stdout, _ := startPause(t, false)
	expectLine(t, stdout, "waiting")
	select {
	case <-p.exited:
		t.Fatalf("pause exited on its own: %v", p.err)
	case <-time.After(500 * time.Millisecond):
	}
}

// state is the process state letter of /proc/PID/stat ("Z" for a zombie),
// or "" when there is no such process.
func state(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces, so cut after the last ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

func TestReapsChildrenAndOrphans(t *testing.T) {
	_, stdout, stderr := startPause(t, true)
	// Two PIDs and "waiting", in no fixed order: the shell writes the
	// orphan's PID itself.
	var pids []int
	waiting := false
	for range 3 {
		line, err := stdout.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the children's PIDs: %v; stderr:\n%s", err, stderr)
		}
		line = strings.TrimSpace(line)
		if line == "waiting" {
			waiting = true
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("pause printed %q", line)
		}
		pids = append(pids, pid)
	}
	if !waiting || len(pids) != 2 {
		t.Fatalf("want two PIDs and \"waiting\", got PIDs %v", pids)
	}
	// Both exit (the shell at once, the orphaned sleep after 0.3 s) and
	// must then be gone, not left as zombies.
	for _, pid := range pids {
		waitFor(t, "process "+strconv.Itoa(pid)+" to be reaped", func() bool { return state(pid) == "" })
	}
}

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-v"}, &out, &errOut); code != 0 {
		t.Fatalf("pause -v: status %d", code)
	}
	if !strings.HasPrefix(out.String(), "pause.go ") {
		t.Errorf("pause -v printed %q", out.String())
	}
}
