// Command jsonnet-hooks serves each .jsonnet file of its working directory
// as a Metacontroller webhook, for the examples whose hook Deployment runs
// the image metacontroller/jsonnetd:0.1 (service-per-pod and
// service-per-pod-v2): POST /NAME evaluates NAME.jsonnet, a function of
// one argument, with the request body as the Jsonnet code of its
// top-level argument `request`, and answers the result as JSON; an
// evaluation error is a 500 with the error's text. That is jsonnetd's
// contract as its README states it, on the port its image exposes (8080).
// jsonnetd itself is not on the Go module proxy this project builds from
// (github.com/metacontroller/jsonnetd: 403), so this is written here, not
// copied; the hooks run as written in go-jsonnet, the Go implementation
// of Jsonnet (pin.sh pins it).
//
//	jsonnet-hooks [--listen 127.0.0.1:8080]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-jsonnet"
)

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	flag.Parse()
	hooks, err := loadHooks(".")
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %s on %s", strings.Join(hooks.paths(), " "), *listen)
	log.Fatal(http.ListenAndServe(*listen, hooks))
}

// hook is one .jsonnet file: its path (for error messages and relative
// imports) and its code, read once at start as jsonnetd does.
type hook struct {
	file string
	code string
}

// hooks maps each URL path (/NAME) to the hook NAME.jsonnet.
type hooks map[string]hook

// loadHooks reads every DIR/*.jsonnet (a ConfigMap volume's files are
// links to its data directory: followed).
func loadHooks(dir string) (hooks, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonnet"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .jsonnet file in %s", dir)
	}
	h := hooks{}
	for _, f := range files {
		code, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		h["/"+strings.TrimSuffix(filepath.Base(f), ".jsonnet")] = hook{file: f, code: string(code)}
	}
	return h, nil
}

func (h hooks) paths() []string {
	paths := make([]string, 0, len(h))
	for p := range h {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

func (h hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	found, ok := h[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := found.evaluate(body)
	if err != nil {
		log.Printf("%s: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	log.Printf("%s: answered %d bytes", r.URL.Path, len(out))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, out)
}

// evaluate calls the hook's function with the request as `request`.
func (k hook) evaluate(request []byte) (string, error) {
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{})
	vm.TLACode("request", string(request))
	return vm.EvaluateAnonymousSnippet(k.file, k.code)
}
