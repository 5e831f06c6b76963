package main

// The control endpoint: what fault tests do to the control plane, over
// HTTP on loopback (DIR/env names it as METAHOOK_CLUSTER_CONTROL).
//
//	POST /apiserver/stop[?grace=SECONDS]  stop kube-apiserver (SIGTERM, SIGKILL after grace, default 5; 0 kills at once)
//	POST /apiserver/start[?arg=--flag=value...]  start it again (extra flags for this run), wait for /readyz,
//	                                      then restart kube-controller-manager and the kubelet stand-in
//	POST /etcd/compact                    compact etcd to its current revision (older watches get 410 Gone)
//	POST /kubeconfig?user=NAME[&group=G...]  a kubeconfig for a new client certificate
//	GET  /healthz

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func (c *cluster) serveControl(ctx context.Context) (*http.Server, error) {
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.ports.Control))
	if err != nil {
		return nil, fmt.Errorf("the control endpoint: %w", err)
	}
	// One fault at a time: a stop racing a start would leave no telling
	// what runs.
	var serial sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /apiserver/stop", func(w http.ResponseWriter, r *http.Request) {
		serial.Lock()
		defer serial.Unlock()
		// kube-apiserver finishes its graceful termination within
		// milliseconds here, but its process can linger for 15 s after;
		// nothing is lost by not waiting for that.
		grace := 5 * time.Second
		if g := r.URL.Query().Get("grace"); g != "" {
			seconds, err := strconv.Atoi(g)
			if err != nil || seconds < 0 {
				http.Error(w, "grace: a number of seconds", http.StatusBadRequest)
				return
			}
			grace = time.Duration(seconds) * time.Second
		}
		if err := c.apiserver.stop(grace); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, map[string]any{"stopped": "kube-apiserver"})
	})
	mux.HandleFunc("POST /apiserver/start", func(w http.ResponseWriter, r *http.Request) {
		serial.Lock()
		defer serial.Unlock()
		start := time.Now()
		if err := c.startAPIServer(ctx, r.URL.Query()["arg"]); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		ready := time.Since(start)
		if err := c.restartClients(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, map[string]any{"started": "kube-apiserver", "readyAfterSeconds": ready.Seconds(),
			"clientsRestartedAfterSeconds": time.Since(start).Seconds()})
	})
	mux.HandleFunc("POST /etcd/compact", func(w http.ResponseWriter, r *http.Request) {
		serial.Lock()
		defer serial.Unlock()
		revision, err := c.etcd.compact(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, map[string]any{"compactedTo": revision})
	})
	mux.HandleFunc("POST /kubeconfig", func(w http.ResponseWriter, r *http.Request) {
		user := r.URL.Query().Get("user")
		if user == "" {
			http.Error(w, "user: required", http.StatusBadRequest)
			return
		}
		certPEM, keyPEM, err := c.pki.cluster.issue(leaf{commonName: user, organizations: r.URL.Query()["group"]})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		caPEM, err := os.ReadFile(c.pki.cluster.certPath)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		text, err := clientcmd.Write(kubeconfigFor(c.serverURL(), caPEM, certPEM, keyPEM, user))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(text)
	})
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(listener) }()
	return server, nil
}

// restartClients restarts what the fault tests do not test but later tests
// need: kube-controller-manager and the kubelet stand-in. Left running, they
// come back from an API server restart at client-go's backoff pace, and
// measured in CI runs, a one-replica Deployment then took from 16 s to over
// 2 minutes to become available (tests/e2e/support.rs
// control_plane_runs_pods). The real node's components are left as they are:
// no fault test runs on it.
func (c *cluster) restartClients(ctx context.Context) error {
	if err := c.controllerManager.stop(10 * time.Second); err != nil {
		return fmt.Errorf("stopping kube-controller-manager: %w", err)
	}
	if err := c.controllerManager.start(nil); err != nil {
		return err
	}
	if c.standIn == nil {
		return nil
	}
	c.standIn.stop()
	standIn, err := startStandIn(ctx, c.file("kubelet-standin.kubeconfig"))
	if err != nil {
		return fmt.Errorf("the kubelet stand-in: %w", err)
	}
	c.standIn = standIn
	return nil
}

func reply(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}
