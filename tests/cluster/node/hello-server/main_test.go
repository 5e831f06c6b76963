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
	srv := httptest.NewServer(handler("hello-abc", func() time.Time { return at }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, path := range []string{"/", "/some/path?x=1&y=%20z"} {
		resp, body := get(t, http.MethodGet, srv.URL+path)
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

	resp, body := get(t, http.MethodHead, srv.URL+"/x")
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD: %s with %q", resp.Status, body)
	}
}

func TestHealthz(t *testing.T) {
	srv := httptest.NewServer(handler("h", time.Now))
	defer srv.Close()
	resp, body := get(t, http.MethodGet, srv.URL+"/healthz")
	if resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %s %q", resp.Status, body)
	}
}

func TestOtherMethodsRefused(t *testing.T) {
	srv := httptest.NewServer(handler("h", time.Now))
	defer srv.Close()
	for _, path := range []string{"/", "/healthz"} {
		resp, _ := get(t, http.MethodPost, srv.URL+path)
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
