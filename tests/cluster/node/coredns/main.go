// Command coredns is CoreDNS (github.com/coredns/coredns, the version
// go.mod pins) with only the plugins a Kubernetes cluster's Corefile uses:
// CoreDNS's own main compiles in every plugin, and its cloud ones (route53,
// azure, clouddns, ...) bring whole cloud SDKs.
//
// The plugins compiled in are the imports below (and what they import
// themselves, such as dnstap and metadata for forward). They run in
// CoreDNS's own order: upstream's generated directive list
// (core/dnsserver/zdirectives.go, from plugin.cfg) keeps its order and
// loses only the directives not compiled in, so the order cannot drift
// from upstream's when CoreDNS is updated.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// A cluster's Corefile (kubeadm's, CoreDNS's deployment's):
	// errors, health, ready, kubernetes, prometheus, forward, cache, loop,
	// reload, loadbalance, and log for debugging.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	// Small, and useful to test with and to serve fixed names: bind
	// (listen on chosen addresses), hosts, whoami.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() {
	if err := dnsserver.SetDirectives(compiledIn(dnsserver.Directives, registered())); err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	coremain.Run()
}

// registered is the set of directives of the plugins compiled in: those
// registered with Caddy for CoreDNS's server type ("dns").
func registered() map[string]bool {
	names := map[string]bool{}
	for _, p := range caddy.ListPlugins()["others"] {
		if name, ok := strings.CutPrefix(p, "dns."); ok {
			names[name] = true
		}
	}
	return names
}

// compiledIn is upstream's directives, in upstream's order, without those
// not compiled in.
func compiledIn(upstream []string, registered map[string]bool) []string {
	var order []string
	for _, d := range upstream {
		if registered[d] {
			order = append(order, d)
		}
	}
	return order
}
