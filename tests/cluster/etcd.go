package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdServer is etcd, embedded in this process, on loopback.
type etcdServer struct {
	etcd *embed.Etcd
	url  string
}

// startEtcd starts etcd with its data in dataDir: an existing directory
// is reused, so a control plane started again keeps every object.
func startEtcd(dataDir, logPath string, clientPort, peerPort int) (*etcdServer, error) {
	cfg := embed.NewConfig()
	cfg.Name = "metahook"
	cfg.Dir = dataDir
	clientURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	peerURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logPath}
	// A test cluster's data is disposable; fsync on every write would make
	// the shared disk the bottleneck of every test.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd was not ready after 60 s")
	}
	return &etcdServer{etcd: e, url: clientURL.String()}, nil
}

// compact discards every revision before the current one, as the API
// server's periodic compaction would: watches from older resource versions
// then get 410 Gone.
func (s *etcdServer) compact(ctx context.Context) (int64, error) {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{s.url}, DialTimeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer client.Close()
	got, err := client.Get(ctx, "/registry", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	revision := got.Header.Revision
	if _, err := client.Compact(ctx, revision, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return revision, nil
}

func (s *etcdServer) close() { s.etcd.Close() }
