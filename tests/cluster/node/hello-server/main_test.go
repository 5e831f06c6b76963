package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestAnswersAnyPathLikeNginxdemosHello(t *testing.T) {
	at := time.Date(2026, 11, 23, 3, 4, 5, 0, time.UTC)
	url := serve(t, "hello-abc", func() time.Time { return at })
	addr := strings.TrimPrefix(url, "http://")

	for _, path := range []string{"/", "/some/path?x=1&y=%20z"} {
		resp, body := get(t, http.MethodGet, url+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		want := "Server address: " + addr + "\n" +
			"Server name: hello-abc\n" +
			"Date: 23/Nov/2026:03:04:05 +0000\n" +
			"URI: " + path + "\n"
		if !strings.HasPrefix(body, want) {
			t.Errorf("GET %s answered\n%s\nwant it to start with\n%s", path, body, want)
		}
		if !regexp.MustCompile(`\nRequest ID: [0-9a-f]{32}\n$`).MatchString(body) {
			t.Errorf("GET %s: no request ID line at the end:\n%s", path, body)
		}
	}

	resp, body := get(t, http.MethodHead, url+"/x")
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD: %s with %q", resp.Status, body)
	}
}

// serve starts the handler for a test, stopped when the test ends; its URL.
func serve(t *testing.T, hostname string, now func() time.Time) string {
	srv := httptest.NewServer(handler(hostname, now))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHealthz(t *testing.T) {
	resp, body := get(t, http.MethodGet, serve(t, "h", time.Now)+"/healthz")
	if resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %s %q", resp.Status, body)
	}
}

func TestOtherMethodsRefused(t *testing.T) {
	url := serve(t, "h", time.Now)
	for _, path := range []string{"/", "/healthz"} {
		resp, _ := get(t, http.MethodPost, url+path)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %s, Allow %q", path, resp.Status, resp.Header.Get("Allow"))
		}
	}
}

func TestDefaultListen(t *testing.T) {
	if got := defaultListen(""); got != ":80" {
		t.Errorf("no PORT: %q", got)
	}
	if got := defaultListen("8080"); got != ":8080" {
		t.Errorf("PORT=8080: %q", got)
	}
}
