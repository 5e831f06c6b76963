// Command hello-server is the program in the test Hellos' pods: a minimal
// HTTP server answering like nginxdemos/hello's plain-text variant. GET (or
// HEAD) on any path answers 200 text/plain:
//
//	Server address: 10.88.0.5:80
//	Server name: hello-7d4b9c-x2x4q
//	Date: 23/Nov/2026:03:00:00 +0000
//	URI: /some/path?x=1
//	Request ID: 5f0c...(32 hex digits)
//
// with the address the request came in on, the host's (the pod's) name, the
// time in nginx's $time_local form, the request URI as sent and a random
// request ID. /healthz answers "ok". Other methods get 405.
//
// It listens on :80, or on :$PORT when PORT is set (or on the address of
// -listen), and shuts down cleanly on SIGTERM or SIGINT.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// timeLocal is nginx's $time_local layout.
const timeLocal = "02/Jan/2006:15:04:05 -0700"

func main() {
	log.SetFlags(0)
	log.SetPrefix("hello-server: ")
	listen := flag.String("listen", defaultListen(os.Getenv("PORT")), "address to listen on")
	flag.Parse()

	hostname, err := os.Hostname()
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Handler:           handler(hostname, time.Now),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("listening on %s", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	log.Print("stopped")
}

// defaultListen is :80 unless the environment names a port.
func defaultListen(port string) string {
	if port == "" {
		port = "80"
	}
	return ":" + port
}

// handler answers every path; now gives the Date line's time.
func handler(hostname string, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !allowed(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !allowed(w, r) {
			return
		}
		addr := "unknown"
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			addr = a.String()
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprintf(w, "Server address: %s\nServer name: %s\nDate: %s\nURI: %s\nRequest ID: %s\n",
			addr, hostname, now().Format(timeLocal), r.RequestURI, requestID())
	})
	return mux
}

// allowed answers 405 to anything but GET and HEAD.
func allowed(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// requestID is 16 random bytes in hex, like nginx's $request_id.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
