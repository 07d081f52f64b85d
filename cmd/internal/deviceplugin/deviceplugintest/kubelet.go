// Package deviceplugintest is the kubelet's side of the device-plugin API
// for tests: the real v1beta1 Registration service on a unix socket, and
// a client of a registered plugin's socket, with the real protobuf types.
package deviceplugintest

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Wait bounds every wait of a test kubelet: long, for a busy machine.
const Wait = 30 * time.Second

// Kubelet is a test kubelet's Registration service.
type Kubelet struct {
	api.UnimplementedRegistrationServer
	// Dir holds the kubelet's socket and the plugins'.
	Dir      string
	srv      *grpc.Server
	requests chan *api.RegisterRequest
}

// Socket is the Registration socket's path in dir.
func Socket(dir string) string { return filepath.Join(dir, "kubelet.sock") }

// Start serves Registration on Socket(dir) until Stop or the test's end.
func Start(t testing.TB, dir string) *Kubelet {
	t.Helper()
	l, err := net.Listen("unix", Socket(dir))
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{Dir: dir, srv: grpc.NewServer(), requests: make(chan *api.RegisterRequest, 4)}
	api.RegisterRegistrationServer(k.srv, k)
	go k.srv.Serve(l)
	t.Cleanup(k.srv.Stop)
	return k
}

// Stop stops serving (and removes the socket, as closing a listener does).
func (k *Kubelet) Stop() { k.srv.Stop() }

// Register is the Registration service: it records the request.
func (k *Kubelet) Register(_ context.Context, r *api.RegisterRequest) (*api.Empty, error) {
	k.requests <- r
	return &api.Empty{}, nil
}

// Registration waits for a plugin to register.
func (k *Kubelet) Registration(t testing.TB) *api.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.requests:
		return r
	case <-time.After(Wait):
		t.Fatalf("no plugin registered within %v", Wait)
		return nil
	}
}

// Dial connects to the plugin r registered, as the kubelet does.
func (k *Kubelet) Dial(t testing.TB, r *api.RegisterRequest) api.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(k.Dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewDevicePluginClient(conn)
}

// Watch is a ListAndWatch stream, its responses on a channel (closed
// when the stream ends).
type Watch chan *api.ListAndWatchResponse

// ListAndWatch opens a stream of c's device lists.
func ListAndWatch(t testing.TB, ctx context.Context, c api.DevicePluginClient) Watch {
	t.Helper()
	stream, err := c.ListAndWatch(ctx, &api.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	w := make(Watch, 16)
	go func() {
		defer close(w)
		for {
			r, err := stream.Recv()
			if err != nil {
				return
			}
			w <- r
		}
	}()
	return w
}

// Until waits for a list that is want, each device as ID=Health, in order.
func (w Watch) Until(t testing.TB, want ...string) {
	t.Helper()
	var last []string
	deadline := time.After(Wait)
	for {
		select {
		case r, ok := <-w:
			if !ok {
				t.Fatalf("ListAndWatch ended; last list %v, want %v", last, want)
			}
			last = last[:0]
			for _, d := range r.Devices {
				last = append(last, d.ID+"="+d.Health)
			}
			if slices.Equal(last, want) {
				return
			}
		case <-deadline:
			t.Fatalf("ListAndWatch said %v, not %v, within %v", last, want, Wait)
		}
	}
}

// Ended waits for the stream to end.
func (w Watch) Ended(t testing.TB) {
	t.Helper()
	deadline := time.After(Wait)
	for {
		select {
		case _, ok := <-w:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("ListAndWatch still open after %v", Wait)
		}
	}
}
