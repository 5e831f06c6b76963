package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"
)

// The tests run CoreDNS as a separate process: this test binary, started
// again with COREDNS_TEST_MAIN set, is the coredns command (its flags, such
// as -conf, parse as the command's).
func TestMain(m *testing.M) {
	if os.Getenv("COREDNS_TEST_MAIN") != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// A cluster's Corefile (kubeadm's) uses these; log is for debugging.
var clusterDirectives = []string{
	"errors", "health", "ready", "kubernetes", "prometheus", "forward",
	"cache", "loop", "reload", "loadbalance", "log",
}

func TestDirectivesAreUpstreamsInUpstreamsOrder(t *testing.T) {
	order := compiledIn(dnsserver.Directives, registered())
	for _, d := range append(clusterDirectives, "bind", "hosts", "whoami") {
		if !slices.Contains(order, d) {
			t.Errorf("directive %q not compiled in; have %v", d, order)
		}
	}
	// Upstream's order, only fewer: each directive comes later in
	// upstream's list than the one before it.
	last := -1
	for _, d := range order {
		i := slices.Index(dnsserver.Directives, d)
		if i <= last {
			t.Errorf("%q out of upstream's order in %v", d, order)
		}
		last = i
	}
	// None of the cloud plugins CoreDNS's own main brings.
	for _, d := range []string{"route53", "azure", "clouddns", "etcd", "nomad"} {
		if slices.Contains(order, d) {
			t.Errorf("%q compiled in", d)
		}
	}
}

// freePort is a loopback port free for TCP and UDP a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// startCoreDNS runs coredns with corefile until the test ends.
func startCoreDNS(t *testing.T, corefile string) *bytes.Buffer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-conf", path)
	cmd.Env = append(os.Environ(), "COREDNS_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("coredns output:\n%s", out.String())
		}
	})
	return &out
}

// query asks the server at addr, retrying while it is not up yet (it is
// slow to start on a busy machine; the kubernetes plugin waits 5 s for the
// API).
func query(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, _, err := c.Exchange(m, addr)
		if err == nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer from %s for %s: %v", addr, name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func wantA(t *testing.T, r *dns.Msg, section []dns.RR, ip string) {
	t.Helper()
	if r.Rcode != dns.RcodeSuccess {
		t.Fatalf("rcode %s:\n%v", dns.RcodeToString[r.Rcode], r)
	}
	for _, rr := range section {
		if a, ok := rr.(*dns.A); ok && a.A.String() == ip {
			return
		}
	}
	t.Fatalf("no A %s in the answer:\n%v", ip, r)
}

func TestAnswersFromHostsAndWhoami(t *testing.T) {
	port := freePort(t)
	startCoreDNS(t, fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    errors
    log
    hosts {
        192.0.2.10 hello.metahook.test
        fallthrough
    }
    whoami
}
`, port))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	r := query(t, addr, "hello.metahook.test", dns.TypeA)
	wantA(t, r, r.Answer, "192.0.2.10")
	// Any other name falls through to whoami: the asker's address.
	r = query(t, addr, "who.example", dns.TypeA)
	wantA(t, r, r.Extra, "127.0.0.1")
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				return resp.StatusCode, string(body)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A cluster's Corefile, kubeadm's with loopback ports: every plugin in it
// sets up and the server answers, with the API server (and the upstream)
// unreachable.
func TestRunsAClustersCorefile(t *testing.T) {
	port, health, ready, metrics, dead := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	out := startCoreDNS(t, fmt.Sprintf(`.:%[1]d {
    bind 127.0.0.1
    errors
    health 127.0.0.1:%[2]d {
        lameduck 1s
    }
    ready 127.0.0.1:%[3]d
    hosts {
        192.0.2.10 hello.metahook.test
        fallthrough
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        endpoint https://127.0.0.1:%[5]d
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    prometheus 127.0.0.1:%[4]d
    forward . 127.0.0.1:%[5]d {
        max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`, port, health, ready, metrics, dead))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	r := query(t, addr, "hello.metahook.test", dns.TypeA)
	wantA(t, r, r.Answer, "192.0.2.10")

	if code, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/health", health)); code != http.StatusOK {
		t.Errorf("health: %d %s", code, body)
	}
	// Not ready: the kubernetes plugin has never reached the API.
	if code, _ := get(t, fmt.Sprintf("http://127.0.0.1:%d/ready", ready)); code == http.StatusOK {
		t.Errorf("ready without an API server")
	}
	code, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if code != http.StatusOK || !strings.Contains(body, `coredns_build_info{`) {
		t.Errorf("metrics: %d, no coredns_build_info", code)
	}
	if !strings.Contains(out.String(), "plugin/kubernetes") {
		t.Errorf("the kubernetes plugin logged nothing")
	}
}
