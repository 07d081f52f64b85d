// rnic k8s device-plugin against a test kubelet: the real v1beta1
// Registration service on a unix socket receives the registration, then
// the test is the kubelet calling the plugin, with the real protobuf
// types, while an rnicd of the test serves two NICs, stops and restarts.

package main

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/rnic/rnic/cmd/internal/cdispec"
	"github.com/rnic/rnic/cmd/internal/deviceplugin"
	"github.com/rnic/rnic/cmd/internal/deviceplugin/deviceplugintest"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

func TestK8sDevicePlugin(t *testing.T) {
	dir := t.TempDir()
	kubeletSock := deviceplugintest.Socket(dir)
	rnicdSock := filepath.Join(dir, "run", "rnicd.sock")
	libDir := filepath.Join(dir, "lib")
	if err := os.Mkdir(libDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libDir, dropinLib), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := rnicdtest.New(rnicdSock, rnicdtest.Options{NICs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	kubelet := deviceplugintest.Start(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	restore := setRootContext(ctx)
	defer restore()
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run([]string{"k8s", "device-plugin", "--socket", rnicdSock, "--kubelet-socket", kubeletSock,
			"--lib-dir", libDir, "--poll", "100ms", "--watch", "100ms"}, new(syncBuffer), &stderr)
	}()
	defer func() {
		if t.Failed() {
			t.Logf("plugin's log:\n%s", stderr.String())
		}
	}()

	reg := kubelet.Registration(t)
	if reg.Version != api.Version || reg.ResourceName != "rnic.dev/nic" || reg.Endpoint != k8sEndpoint {
		t.Fatalf("registered %v", reg)
	}
	plugin := kubelet.Dial(t, reg)
	opts, err := plugin.GetDevicePluginOptions(ctx, &api.Empty{})
	if err != nil || opts.PreStartRequired || opts.GetPreferredAllocationAvailable {
		t.Fatalf("GetDevicePluginOptions: %v, %v", opts, err)
	}
	watch := deviceplugintest.ListAndWatch(t, ctx, plugin)
	watch.Until(t, "rnic0=Healthy", "rnic1=Healthy")

	t.Run("Allocate", func(t *testing.T) { checkAllocate(t, ctx, plugin, rnicdSock, libDir) })

	// The daemon stops: its NICs stay listed, unhealthy; it comes back.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	watch.Until(t, "rnic0=Unhealthy", "rnic1=Unhealthy")
	d, err = rnicdtest.New(rnicdSock, rnicdtest.Options{NICs: 2})
	if err != nil {
		t.Fatal(err)
	}
	watch.Until(t, "rnic0=Healthy", "rnic1=Healthy")

	// The kubelet restarts as a real one does: its old sockets and the
	// plugins' go, a new Registration socket comes.
	kubelet.Stop()
	for _, name := range []string{"kubelet.sock", reg.Endpoint} {
		os.Remove(filepath.Join(dir, name))
	}
	kubelet = deviceplugintest.Start(t, dir)
	reg = kubelet.Registration(t)
	if reg.ResourceName != "rnic.dev/nic" {
		t.Fatalf("registered again %v", reg)
	}
	deviceplugintest.ListAndWatch(t, ctx, kubelet.Dial(t, reg)).Until(t, "rnic0=Healthy", "rnic1=Healthy")

	cancel()
	select {
	case st := <-exited:
		if st != 0 {
			t.Fatalf("rnic k8s device-plugin exited %d", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("rnic k8s device-plugin still running 20s after its context ended")
	}
	if _, err := os.Stat(filepath.Join(dir, reg.Endpoint)); !os.IsNotExist(err) {
		t.Errorf("the plugin left its socket: %v", err)
	}
}

// checkAllocate allocates both NICs to one container, one to another, and
// a NIC the node does not have.
func checkAllocate(t *testing.T, ctx context.Context, plugin api.DevicePluginClient, rnicdSock, libDir string) {
	resp, err := plugin.Allocate(ctx, &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{
		{DevicesIds: []string{"rnic0", "rnic1"}}, {DevicesIds: []string{"rnic1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ContainerResponses) != 2 {
		t.Fatalf("%d container responses, want 2", len(resp.ContainerResponses))
	}
	for i, want := range [][]string{{"rnic.dev/nic=rnic0", "rnic.dev/nic=rnic1"}, {"rnic.dev/nic=rnic1"}} {
		c := resp.ContainerResponses[i]
		var names []string
		for _, d := range c.CdiDevices {
			names = append(names, d.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("container %d: CDI devices %v, want %v", i, names, want)
		}
		if c.Envs[ibv.SocketEnv] != "/run/rnic/rnicd.sock" || c.Envs["LD_LIBRARY_PATH"] != "/usr/lib/rnic" {
			t.Errorf("container %d: environment %v", i, c.Envs)
		}
		var mounts []string
		for _, m := range c.Mounts {
			mounts = append(mounts, m.HostPath+":"+m.ContainerPath+":"+map[bool]string{true: "ro", false: "rw"}[m.ReadOnly])
		}
		wantMounts := []string{filepath.Dir(rnicdSock) + ":/run/rnic:rw", libDir + ":/usr/lib/rnic:ro"}
		if !slices.Equal(mounts, wantMounts) {
			t.Errorf("container %d: mounts %v, want %v", i, mounts, wantMounts)
		}
	}
	_, err = plugin.Allocate(ctx, &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{{DevicesIds: []string{"rnic9"}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Allocate of rnic9: %v, want InvalidArgument", err)
	}
}

// --install-libs copies the libraries rnic exec would use into --lib-dir
// (made if missing), again over an earlier copy, leaving nothing else.
func TestK8sInstallLibs(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "node", "lib")
	t.Setenv(libDirEnv, src)
	for round, content := range []string{"first", "second"} {
		for _, name := range []string{dropinLib, "librdmacm.so.1"} {
			if err := os.WriteFile(filepath.Join(src, name), []byte(content+name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f := k8sFlags{libDir: dst, installLibs: true}
		if err := f.prepareLibs(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		entries, err := os.ReadDir(dst)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
			if got, _ := os.ReadFile(filepath.Join(dst, e.Name())); string(got) != content+e.Name() {
				t.Errorf("round %d: %s holds %q", round, e.Name(), got)
			}
		}
		if !slices.Equal(names, []string{dropinLib, "librdmacm.so.1"}) {
			t.Errorf("round %d: --lib-dir holds %v", round, names)
		}
	}
	// Without the libraries where rnic exec looks, the plugin does not start.
	t.Setenv(libDirEnv, t.TempDir())
	f := k8sFlags{libDir: dst, installLibs: true}
	if err := f.prepareLibs(); !errors.Is(err, errNoLibrary) {
		t.Errorf("no libraries to install: %v, want errNoLibrary", err)
	}
}

// downPort is a device whose port 1 is DOWN.
type downPort struct{ ibv.Device }

func (d downPort) QueryPort(port uint8) (verbs.PortAttr, error) {
	a, err := d.Device.QueryPort(port)
	a.State = verbs.PortDown
	return a, err
}

// The plugin's inventory: a NIC is healthy while its port is ACTIVE; a
// daemon that does not answer is an error.
func TestK8sInventory(t *testing.T) {
	var devs []ibv.Device
	for i := range 2 {
		n, err := rnicdtest.OpenNIC(fmt.Sprintf("rnic%d", i), 1500)
		if err != nil {
			t.Fatal(err)
		}
		dev := rnicdtest.Device(n)
		t.Cleanup(func() { dev.Close() })
		if i == 1 {
			dev = downPort{dev}
		}
		devs = append(devs, dev)
	}
	srv, err := server.New(server.Config{Devices: devs})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l)
	}()
	defer func() {
		srv.Close()
		<-served
	}()
	got, err := rnicdInventory(sock, false)(context.Background())
	want := []deviceplugin.NIC{{Name: "rnic0", Healthy: true}, {Name: "rnic1", Healthy: false}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("inventory: %v, %v; want %v", got, err, want)
	}
	if got, err := rnicdInventory(filepath.Join(t.TempDir(), "none.sock"), false)(context.Background()); err == nil {
		t.Errorf("inventory of no daemon: %v, no error", got)
	}
}

func TestK8sUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		stderr string
	}{
		{[]string{"k8s"}, 2, "missing subcommand: device-plugin"},
		{[]string{"k8s", "plugin"}, 2, `unknown subcommand "plugin"`},
		{[]string{"k8s", "device-plugin", "x"}, 2, `unexpected argument "x"`},
		{[]string{"k8s", "device-plugin", "--poll", "0"}, 2, "--poll and --watch must be positive"},
		{[]string{"k8s", "device-plugin", "--cdi=false", "--direct=false"}, 2, "leave Allocate nothing to say"},
		{[]string{"k8s", "device-plugin", "--install-libs"}, 1, "--install-libs needs --lib-dir"},
		{[]string{"k8s", "device-plugin", "--lib-dir", t.TempDir()}, 1, "no libibverbs.so.1 there"},
	} {
		var stdout, stderr syncBuffer
		if st := run(c.args, &stdout, &stderr); st != c.status || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("rnic %q: status %d, stderr %q; want %d, %q", c.args, st, stderr.String(), c.status, c.stderr)
		}
	}
}

// TestK8sPathsAreCDIs: the plugin's direct edits put the socket and the
// libraries where rnic cdi generate's spec does, so a container sees the
// same either way.
func TestK8sPathsAreCDIs(t *testing.T) {
	if got, want := containerSocketDir, filepath.Dir(cdispec.ContainerSocket); got != want {
		t.Errorf("socket directory %s, the CDI spec's %s", got, want)
	}
	e, err := nodeDevices{socket: "/run/rnic/rnicd.sock", libDir: "/opt/rnic/lib"}.Edits([]string{"rnic0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Env[ibv.SocketEnv]; got != cdispec.ContainerSocket {
		t.Errorf("%s=%s, the CDI spec's %s", ibv.SocketEnv, got, cdispec.ContainerSocket)
	}
}

// TestK8sSpecKeeper: --cdi-spec writes the node's spec of the NICs the
// daemon lists, numbered as rnic cdi generate numbers them, again when
// they change and not while they stay; a daemon that does not answer
// leaves it alone.
func TestK8sSpecKeeper(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rnic.yaml")
	var answer []deviceplugin.NIC
	var down bool
	inv := func(context.Context) ([]deviceplugin.NIC, error) {
		if down {
			return nil, errors.New("no daemon")
		}
		return answer, nil
	}
	k := &specKeeper{path: path, logf: t.Logf, opts: cdispec.Options{Socket: "/run/rnic/rnicd.sock", LibDir: "/var/lib/rnic/lib",
		Hook: cdispec.HookCommand("/var/lib/rnic/bin/rnic", "/run/rnic/rnicd.sock")}}
	poll := k.wrap(inv)
	devices := func() []string {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var names []string
		for _, l := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(strings.TrimSpace(l), "- name: "); ok {
				names = append(names, n)
			}
		}
		return names
	}
	answer = []deviceplugin.NIC{{Name: "rnic0", Healthy: true}, {Name: "rnic1"}}
	poll(context.Background())
	if got := devices(); !slices.Equal(got, []string{"rnic0", "rnic1", "all"}) {
		t.Fatalf("spec devices %v", got)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "/var/lib/rnic/bin/rnic") || !strings.Contains(string(b), "uverbs1") {
		t.Errorf("spec lacks the hook or rnic1's node:\n%s", b)
	}
	os.Remove(path)
	poll(context.Background()) // same NICs: not written again
	if devices() != nil {
		t.Error("spec rewritten for the same NICs")
	}
	down = true
	poll(context.Background())
	if devices() != nil {
		t.Error("spec written while the daemon did not answer")
	}
	down, answer = false, answer[:1]
	poll(context.Background())
	if got := devices(); !slices.Equal(got, []string{"rnic0", "all"}) {
		t.Errorf("after a NIC went: spec devices %v", got)
	}
}

// TestK8sTenantSockets: with --tenant-sockets the plugin lists every
// tenant's NIC from the host's socket, gives a container the socket of
// its NIC's tenant and no other (that socket shows the NIC alone), refuses
// two NICs for one container, and writes a spec of per-NIC sockets.
func TestK8sTenantSockets(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "rnicd.sock")
	var devs []ibv.Device
	var tenants []server.TenantConfig
	for i := range 2 {
		name := fmt.Sprintf("rnic%d", i)
		n, err := rnicdtest.OpenNIC(name, 1500)
		if err != nil {
			t.Fatal(err)
		}
		dev := rnicdtest.Device(n)
		t.Cleanup(func() { dev.Close() })
		devs = append(devs, dev)
		tenants = append(tenants, server.TenantConfig{Name: name, Devices: []string{name}})
	}
	srv, err := server.New(server.Config{Devices: devs, Tenants: tenants})
	if err != nil {
		t.Fatal(err)
	}
	var served sync.WaitGroup
	t.Cleanup(func() { srv.Close(); served.Wait() })
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	served.Go(func() { srv.Serve(l) })
	for _, tc := range tenants {
		l, err := server.Listen(tenantSocket(sock, tc.Name))
		if err != nil {
			t.Fatal(err)
		}
		served.Go(func() { srv.ServeTenant(tc.Name, l) })
	}

	got, err := rnicdInventory(sock, true)(context.Background())
	if want := []deviceplugin.NIC{{Name: "rnic0", Healthy: true}, {Name: "rnic1", Healthy: true}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("inventory: %v, %v; want %v", got, err, want)
	}
	d := nodeDevices{socket: sock, libDir: "/opt/rnic/lib", tenants: true}
	e, err := d.Edits([]string{"rnic1"})
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "tenants", "rnic1")
	if e.Mounts[0].HostPath != own || e.Mounts[0].ContainerPath != containerSocketDir || e.Env[ibv.SocketEnv] != cdispec.ContainerSocket {
		t.Errorf("edits %+v, want %s at %s", e, own, containerSocketDir)
	}
	st, err := client.QueryStat(filepath.Join(own, "rnicd.sock"))
	if err != nil || len(st.Devices) != 1 || st.Devices[0].Name != "rnic1" {
		t.Errorf("the container's socket shows %+v (%v), want rnic1 alone", st, err)
	}
	if _, err := d.Edits([]string{"rnic0", "rnic1"}); err == nil {
		t.Error("two NICs for one container: no error")
	}
	spec := filepath.Join(dir, "cdi", "rnic.yaml")
	k := &specKeeper{path: spec, logf: t.Logf, opts: cdispec.Options{Socket: sock, LibDir: "/opt/rnic/lib"},
		socketOf: func(nic string) string { return tenantSocket(sock, nic) }}
	k.wrap(rnicdInventory(sock, true))(context.Background())
	b, err := os.ReadFile(spec)
	if err != nil || !strings.Contains(string(b), tenantSocket(sock, "rnic0")) || strings.Contains(string(b), "name: all") {
		t.Errorf("spec (%v):\n%s", err, b)
	}
}
