package deviceplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/rnic/rnic/cmd/internal/deviceplugin"
	"github.com/rnic/rnic/cmd/internal/deviceplugin/deviceplugintest"
)

// inventory is a node whose NICs the test sets.
type inventory struct {
	mu   sync.Mutex
	nics []deviceplugin.NIC
	err  error
}

func (v *inventory) set(err error, nics ...deviceplugin.NIC) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.nics, v.err = nics, err
}

func (v *inventory) list(context.Context) ([]deviceplugin.NIC, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.nics), v.err
}

// provider describes NICs with names that show what it was asked.
type provider struct{ fail bool }

func (p provider) CDIDevices(nics []string) ([]string, error) {
	if p.fail {
		return nil, errors.New("no spec")
	}
	out := make([]string, len(nics))
	for i, n := range nics {
		out[i] = "example.com/nic=" + n
	}
	return out, nil
}

func (p provider) Edits(nics []string) (deviceplugin.Edits, error) {
	if p.fail {
		return deviceplugin.Edits{}, errors.New("no spec")
	}
	return deviceplugin.Edits{
		Env:     map[string]string{"NICS": strings.Join(nics, ",")},
		Mounts:  []deviceplugin.Mount{{HostPath: "/node/run", ContainerPath: "/run/x", ReadOnly: true}},
		Devices: []deviceplugin.DeviceNode{{HostPath: "/dev/node0", ContainerPath: "/dev/x0", Permissions: "rw"}},
	}, nil
}

func nic(name string, healthy bool) deviceplugin.NIC {
	return deviceplugin.NIC{Name: name, Healthy: healthy}
}

// plugin is a plugin the test runs.
type plugin struct {
	cancel context.CancelFunc
	done   chan error
}

func startPlugin(t *testing.T, dir string, inv *inventory, p provider, cdi, direct bool) *plugin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pl := &plugin{cancel: cancel, done: make(chan error, 1)}
	go func() {
		pl.done <- deviceplugin.Run(ctx, deviceplugin.Config{
			Resource: "example.com/nic", KubeletSocket: deviceplugintest.Socket(dir), Endpoint: "example.sock",
			Inventory: inv.list, Provider: p, CDI: cdi, Direct: direct,
			Poll: 20 * time.Millisecond, Watch: 20 * time.Millisecond, Logf: t.Logf,
		})
	}()
	t.Cleanup(func() { pl.stop(t) })
	return pl
}

func (p *plugin) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case err, ok := <-p.done:
		if ok && err != nil {
			t.Errorf("Run: %v", err)
		}
		close(p.done)
	case <-time.After(deviceplugintest.Wait):
		t.Fatal("Run still running after its context ended")
	}
}

// A plugin that starts before the kubelet registers once it comes.
func TestRegistersWithALateKubelet(t *testing.T) {
	dir := t.TempDir()
	inv := &inventory{}
	inv.set(nil, nic("n0", true))
	startPlugin(t, dir, inv, provider{}, true, true)
	time.Sleep(100 * time.Millisecond) // a few of the plugin's checks with no kubelet
	k := deviceplugintest.Start(t, dir)
	r := k.Registration(t)
	if r.Version != api.Version || r.ResourceName != "example.com/nic" || r.Endpoint != "example.sock" ||
		r.Options == nil || r.Options.PreStartRequired || r.Options.GetPreferredAllocationAvailable {
		t.Fatalf("registered %v", r)
	}
	deviceplugintest.ListAndWatch(t, context.Background(), k.Dial(t, r)).Until(t, "n0=Healthy")
}

// ListAndWatch follows the node: a port that goes down, a NIC that comes
// or goes, a daemon that stops answering.
func TestListFollowsTheNode(t *testing.T) {
	dir := t.TempDir()
	inv := &inventory{}
	inv.set(nil, nic("n1", true), nic("n0", true))
	k := deviceplugintest.Start(t, dir)
	startPlugin(t, dir, inv, provider{}, true, true)
	w := deviceplugintest.ListAndWatch(t, context.Background(), k.Dial(t, k.Registration(t)))
	w.Until(t, "n0=Healthy", "n1=Healthy") // in order of name
	inv.set(nil, nic("n0", true), nic("n1", false))
	w.Until(t, "n0=Healthy", "n1=Unhealthy")
	inv.set(nil, nic("n0", true), nic("n1", true), nic("n2", true))
	w.Until(t, "n0=Healthy", "n1=Healthy", "n2=Healthy")
	inv.set(nil, nic("n2", true))
	w.Until(t, "n2=Healthy")
	inv.set(errors.New("no daemon"))
	w.Until(t, "n2=Unhealthy")
	inv.set(nil, nic("n2", true))
	w.Until(t, "n2=Healthy")
}

func TestAllocate(t *testing.T) {
	for _, c := range []struct {
		name        string
		cdi, direct bool
	}{{"both", true, true}, {"cdi", true, false}, {"direct", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			inv := &inventory{}
			inv.set(nil, nic("n0", true), nic("n1", true))
			k := deviceplugintest.Start(t, dir)
			startPlugin(t, dir, inv, provider{}, c.cdi, c.direct)
			p := k.Dial(t, k.Registration(t))
			resp, err := p.Allocate(context.Background(), &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{{DevicesIds: []string{"n0", "n1"}}}})
			if err != nil || len(resp.ContainerResponses) != 1 {
				t.Fatalf("Allocate: %v, %v", resp, err)
			}
			r := resp.ContainerResponses[0]
			var cdi []string
			for _, d := range r.CdiDevices {
				cdi = append(cdi, d.Name)
			}
			wantCDI := []string{"example.com/nic=n0", "example.com/nic=n1"}
			if !c.cdi {
				wantCDI = nil
			}
			if !slices.Equal(cdi, wantCDI) {
				t.Errorf("CDI devices %v, want %v", cdi, wantCDI)
			}
			direct := r.Envs["NICS"] == "n0,n1" && len(r.Mounts) == 1 && r.Mounts[0].HostPath == "/node/run" &&
				r.Mounts[0].ContainerPath == "/run/x" && r.Mounts[0].ReadOnly && len(r.Devices) == 1 &&
				r.Devices[0].HostPath == "/dev/node0" && r.Devices[0].ContainerPath == "/dev/x0" && r.Devices[0].Permissions == "rw"
			empty := len(r.Envs) == 0 && len(r.Mounts) == 0 && len(r.Devices) == 0
			if (c.direct && !direct) || (!c.direct && !empty) {
				t.Errorf("direct %v: envs %v, mounts %v, devices %v", c.direct, r.Envs, r.Mounts, r.Devices)
			}
			_, err = p.Allocate(context.Background(), &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{{DevicesIds: []string{"n0", "n7"}}}})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("Allocate of n7: %v, want InvalidArgument", err)
			}
		})
	}
}

// A provider that fails fails Allocate, saying so.
func TestAllocateProviderFails(t *testing.T) {
	dir := t.TempDir()
	inv := &inventory{}
	inv.set(nil, nic("n0", true))
	k := deviceplugintest.Start(t, dir)
	startPlugin(t, dir, inv, provider{fail: true}, true, true)
	_, err := k.Dial(t, k.Registration(t)).Allocate(context.Background(), &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{{DevicesIds: []string{"n0"}}}})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "no spec") {
		t.Errorf("Allocate: %v, want Internal saying why", err)
	}
}

// A kubelet whose socket is made anew is registered with again, even
// when the plugin's own socket is left in place.
func TestRegistersAgainWhenOnlyTheKubeletSocketChanges(t *testing.T) {
	dir := t.TempDir()
	inv := &inventory{}
	inv.set(nil, nic("n0", true))
	k := deviceplugintest.Start(t, dir)
	startPlugin(t, dir, inv, provider{}, true, true)
	r := k.Registration(t)
	w := deviceplugintest.ListAndWatch(t, context.Background(), k.Dial(t, r))
	w.Until(t, "n0=Healthy")
	k.Stop()
	os.Remove(deviceplugintest.Socket(dir))
	k = deviceplugintest.Start(t, dir)
	r = k.Registration(t)
	w.Ended(t) // the old server's streams end with it
	deviceplugintest.ListAndWatch(t, context.Background(), k.Dial(t, r)).Until(t, "n0=Healthy")
}

// Stopping ends the kubelet's streams and removes the plugin's socket.
func TestStop(t *testing.T) {
	dir := t.TempDir()
	inv := &inventory{}
	inv.set(nil, nic("n0", true))
	k := deviceplugintest.Start(t, dir)
	p := startPlugin(t, dir, inv, provider{}, true, true)
	r := k.Registration(t)
	w := deviceplugintest.ListAndWatch(t, context.Background(), k.Dial(t, r))
	w.Until(t, "n0=Healthy")
	p.cancel()
	w.Ended(t)
	deadline := time.Now().Add(deviceplugintest.Wait)
	for {
		if _, err := os.Stat(filepath.Join(dir, r.Endpoint)); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin's socket is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An incomplete configuration is refused at once.
func TestRunRefusesAnIncompleteConfig(t *testing.T) {
	if err := deviceplugin.Run(context.Background(), deviceplugin.Config{Resource: "example.com/nic"}); err == nil {
		t.Error("Run with no socket, inventory or provider: no error")
	}
}
