package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func serve(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	for name, code := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := loadHooks(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHookGetsTheRequestAndAnswersJSON(t *testing.T) {
	s := serve(t, map[string]string{
		"sync-label.jsonnet": `function(request) { labels: { [request.object.metadata.annotations.key]: request.object.metadata.name } }`,
		"notes.txt":          "not a hook",
	})
	code, body := post(t, s.URL+"/sync-label", `{"object": {"metadata": {"name": "nginx-2", "annotations": {"key": "pod-name"}}}}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var got map[string]map[string]string
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got["labels"]["pod-name"] != "nginx-2" {
		t.Fatalf("labels: %v", got)
	}
	if code, _ := post(t, s.URL+"/notes", `{}`); code != http.StatusNotFound {
		t.Fatalf("a file that is not .jsonnet served: %d", code)
	}
}

func TestErrorsAreNotAnswers(t *testing.T) {
	s := serve(t, map[string]string{"fail.jsonnet": `function(request) error "no " + request.why`})
	if code, body := post(t, s.URL+"/fail", `{"why": "Services"}`); code != http.StatusInternalServerError || !strings.Contains(body, "no Services") {
		t.Fatalf("status %d: %s", code, body)
	}
	if code, _ := post(t, s.URL+"/fail", `{not json`); code != http.StatusInternalServerError {
		t.Fatalf("a request that is not Jsonnet: %d", code)
	}
	resp, err := http.Get(s.URL + "/fail")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
}

func TestNoHooksIsAnError(t *testing.T) {
	if _, err := loadHooks(t.TempDir()); err == nil {
		t.Fatal("an empty directory loaded")
	}
}
