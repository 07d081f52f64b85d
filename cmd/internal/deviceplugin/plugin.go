package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Config describes a plugin.
type Config struct {
	// Resource is the extended resource registered (vendor-domain/name).
	Resource string
	// KubeletSocket is the kubelet's Registration socket; the plugin's own
	// socket goes in the same directory, named Endpoint.
	KubeletSocket string
	Endpoint      string
	Inventory     Inventory
	Provider      Provider
	// CDI puts the CDI device names in Allocate's answer, Direct the
	// mounts, environment and device nodes.
	CDI, Direct bool
	// Poll is how often the inventory is asked, Watch how often the
	// sockets are checked for a kubelet restart.
	Poll, Watch time.Duration
	Logf        func(string, ...any)
}

// registerTimeout bounds the Register call: a kubelet that accepts the
// connection and never answers is retried.
const registerTimeout = 10 * time.Second

// retryPause is the wait before serving again after a failure.
const retryPause = time.Second

// Run serves the plugin until ctx ends: it registers with the kubelet,
// and again each time the kubelet restarts.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Resource == "" || cfg.KubeletSocket == "" || cfg.Endpoint == "" || cfg.Inventory == nil || cfg.Provider == nil {
		return errors.New("deviceplugin: incomplete Config")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	nics := newNICSet()
	// The first listing is taken before the kubelet can ask for one.
	c, cancel := context.WithTimeout(ctx, inventoryTimeout)
	nics.update(cfg.Inventory(c))
	cancel()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		nics.poll(ctx, cfg.Inventory, cfg.Poll, cfg.Logf)
	}()
	// Nothing of the plugin's runs once Run returns.
	defer func() { <-polled }()
	for ctx.Err() == nil {
		err := serveOnce(ctx, cfg, nics)
		if ctx.Err() != nil {
			break
		}
		cfg.Logf("%v: serving again", err)
		select {
		case <-ctx.Done():
		case <-time.After(retryPause):
		}
	}
	return nil
}

// errKubeletRestarted ends one registration: the kubelet's socket or
// the plugin's own changed.
var errKubeletRestarted = errors.New("the kubelet restarted")

// serveOnce serves the DevicePlugin service on a fresh socket, registers
// it and returns when the kubelet restarts (or on a failure).
func serveOnce(ctx context.Context, cfg Config, nics *nicSet) error {
	dir := filepath.Dir(cfg.KubeletSocket)
	sock := filepath.Join(dir, cfg.Endpoint)
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ours, err := inodeOf(sock)
	if err != nil {
		l.Close()
		return err
	}
	stop := make(chan struct{})
	gs := grpc.NewServer()
	api.RegisterDevicePluginServer(gs, &server{nics: nics, provider: cfg.Provider, cdi: cfg.CDI, direct: cfg.Direct, stop: stop})
	served := make(chan struct{})
	go func() {
		defer close(served)
		gs.Serve(l)
	}()
	defer func() {
		close(stop) // ends the ListAndWatch streams, or Stop would wait for them
		gs.Stop()
		<-served
		if i, err := inodeOf(sock); err == nil && i == ours {
			os.Remove(sock)
		}
	}()
	kubelet, err := waitForKubelet(ctx, cfg.KubeletSocket, cfg.Watch, sock, ours)
	if err != nil {
		return err
	}
	if err := register(ctx, cfg); err != nil {
		return err
	}
	cfg.Logf("registered %s with the kubelet at %s (endpoint %s)", cfg.Resource, cfg.KubeletSocket, cfg.Endpoint)
	return watchSockets(ctx, cfg.Watch, cfg.KubeletSocket, kubelet, sock, ours)
}

// register calls the kubelet's Registration service.
func register(ctx context.Context, cfg Config) error {
	conn, err := dialUnix(cfg.KubeletSocket)
	if err != nil {
		return fmt.Errorf("dial the kubelet: %w", err)
	}
	defer conn.Close()
	c, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = api.NewRegistrationClient(conn).Register(c, &api.RegisterRequest{
		Version:      api.Version,
		Endpoint:     cfg.Endpoint,
		ResourceName: cfg.Resource,
		Options:      &api.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("register with the kubelet: %w", err)
	}
	return nil
}
