package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
)

// TestCDIGenerate: generate asks a real daemon for its NICs and writes a
// spec the CDI module reads, with a device per NIC named as the daemon
// names it, the hook being this binary; list shows what each gives.
func TestCDIGenerate(t *testing.T) {
	d := startRnicd(t, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "rnic.yaml")
	out, errOut, code := rnic(t, "cdi", "generate", "-S", d.Socket, "--libdir", fakeLibDir(t), "-o", path)
	if code != 0 {
		t.Fatalf("generate: %d %s %s", code, out, errOut)
	}
	spec, err := cdi.ReadSpec(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, dev := range spec.Devices {
		names = append(names, dev.Name)
	}
	want := []string{d.Devices[0].Name(), d.Devices[1].Name(), "all"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("devices %v, want %v", names, want)
	}
	hooks := spec.ContainerEdits.Hooks
	if len(hooks) != 1 || !strings.HasSuffix(hooks[0].Args[1], "cdi") || hooks[0].Args[len(hooks[0].Args)-1] != d.Socket {
		t.Errorf("hook %+v, want this rnic's cdi hook on %s", hooks, d.Socket)
	}
	out, errOut, code = rnic(t, "cdi", "list", "--spec-dir", dir)
	for _, w := range []string{"rnic.dev/nic=" + want[1] + "\n", "mount   /dev/infiniband/uverbs1 from /dev/null", "mount   /run/rnic/rnicd.sock from " + d.Socket} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("list lacks %q (status %d):\n%s%s", w, code, out, errOut)
		}
	}
}

// TestCDIGenerateNoDaemon: no daemon, no spec, and a message saying why.
func TestCDIGenerateNoDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rnic.yaml")
	_, errOut, code := rnic(t, "cdi", "generate", "-S", filepath.Join(t.TempDir(), "none.sock"), "--libdir", fakeLibDir(t), "-o", path)
	if code != 1 || !strings.Contains(errOut, "no rnicd at") {
		t.Errorf("status %d, stderr %s", code, errOut)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a spec was written")
	}
}

// TestCDIListEmpty: no spec in the directories is an error that says what
// writes one.
func TestCDIListEmpty(t *testing.T) {
	_, errOut, code := rnic(t, "cdi", "list", "--spec-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "rnic cdi generate") {
		t.Errorf("status %d, stderr %s", code, errOut)
	}
}

// TestContainerRoot: the hook finds the container's root from the OCI
// state's bundle, relative to it or absolute.
func TestContainerRoot(t *testing.T) {
	bundle := t.TempDir()
	for cfg, want := range map[string]string{
		`{"root":{"path":"rootfs"}}`:    filepath.Join(bundle, "rootfs"),
		`{"root":{"path":"/abs/root"}}`: "/abs/root",
	} {
		if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := containerRoot(strings.NewReader(`{"ociVersion":"1.0.2","id":"x","pid":1,"bundle":"` + bundle + `"}`))
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", cfg, got, err, want)
		}
	}
	for _, state := range []string{``, `{"id":"x"}`, `{"bundle":"/nonexistent"}`} {
		if _, err := containerRoot(strings.NewReader(state)); err == nil {
			t.Errorf("state %q: no error", state)
		}
	}
}

// TestCDIGenerateTenant: a spec generated on a tenant's socket names only
// that tenant's NIC, as the container's uverbs0, and mounts that socket,
// so a container given it cannot reach the other NICs of the daemon.
func TestCDIGenerateTenant(t *testing.T) {
	ibv.Register(ibv.BackendDaemon, func(s ibv.Spec) (ibv.Device, error) {
		d, err := client.Open(s)
		if err != nil {
			return nil, err
		}
		return d.WithCapabilities(), nil
	})
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, Tenants: []server.TenantConfig{{Name: "pod1", Devices: []string{"rnic1"}}}})
	sock := d.TenantSockets["pod1"]
	path := filepath.Join(t.TempDir(), "rnic-pod1.yaml")
	if out, errOut, code := rnic(t, "cdi", "generate", "-S", sock, "--libdir", fakeLibDir(t), "-o", path); code != 0 {
		t.Fatalf("generate: %d %s %s", code, out, errOut)
	}
	spec, err := cdi.ReadSpec(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, dev := range spec.Devices {
		names = append(names, dev.Name)
	}
	if strings.Join(names, " ") != "rnic1 all" {
		t.Errorf("devices %v, want the tenant's rnic1 and all", names)
	}
	b, _ := os.ReadFile(path)
	for _, w := range []string{"hostPath: " + sock, "/dev/infiniband/uverbs0"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("spec lacks %q:\n%s", w, b)
		}
	}
	if strings.Contains(string(b), "hostPath: "+d.Socket+"\n") || strings.Contains(string(b), "uverbs1") {
		t.Errorf("spec names the host's socket or a second NIC:\n%s", b)
	}
}
