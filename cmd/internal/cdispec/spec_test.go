package cdispec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

var testOpts = Options{Socket: "/run/rnic/rnicd.sock", LibDir: "/opt/rnic/lib",
	Hook: HookCommand("/usr/local/bin/rnic", "/run/rnic/rnicd.sock")}

// inject writes the spec for nics into a spec directory and injects
// devices into an empty OCI spec through the CDI module's cache, as a
// runtime does.
func inject(t *testing.T, nics []NIC, devices ...string) *oci.Spec {
	t.Helper()
	s, err := Spec(nics, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(s, filepath.Join(dir, "rnic.yaml")); err != nil {
		t.Fatal(err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	o := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if _, err := cache.InjectDevices(o, devices...); err != nil {
		t.Fatal(err)
	}
	return o
}

// nodePaths are the /dev/infiniband entries o gives: binds of /dev/null.
func nodePaths(o *oci.Spec) []string {
	var out []string
	for _, m := range o.Mounts {
		if strings.HasPrefix(m.Destination, "/dev/infiniband/") && m.Source == "/dev/null" {
			out = append(out, m.Destination)
		}
	}
	slices.Sort(out)
	return out
}

func TestSpecGivesOneNIC(t *testing.T) {
	o := inject(t, []NIC{{Index: 0, Name: "rnic0"}, {Index: 1, Name: "rnic1"}}, Kind+"=rnic1")
	if got, want := nodePaths(o), []string{"/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs1"}; !slices.Equal(got, want) {
		t.Errorf("device nodes %v, want %v", got, want)
	}
	for _, e := range []string{"RNIC_SOCKET=" + ContainerSocket, "LD_LIBRARY_PATH=" + ContainerLibDir} {
		if !slices.Contains(o.Process.Env, e) {
			t.Errorf("env %v lacks %s", o.Process.Env, e)
		}
	}
	mounts := map[string]oci.Mount{}
	for _, m := range o.Mounts {
		mounts[m.Destination] = m
	}
	for dst, src := range map[string]string{ContainerSocket: testOpts.Socket, ContainerLibDir: testOpts.LibDir} {
		m, ok := mounts[dst]
		if !ok || m.Source != src || !slices.Contains(m.Options, "ro") {
			t.Errorf("mount at %s: %+v, want %s read-only", dst, m, src)
		}
	}
	if o.Hooks == nil || len(o.Hooks.CreateContainer) != 1 || !slices.Equal(o.Hooks.CreateContainer[0].Args, testOpts.Hook) {
		t.Errorf("hooks %+v, want one createContainer hook %v", o.Hooks, testOpts.Hook)
	}
}

func TestSpecAllGivesEveryNIC(t *testing.T) {
	o := inject(t, []NIC{{Index: 0, Name: "rnic0"}, {Index: 1, Name: "rnic1"}}, Kind+"="+AllDevice)
	want := []string{"/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"}
	if got := nodePaths(o); !slices.Equal(got, want) {
		t.Errorf("device nodes %v, want %v", got, want)
	}
}

// Podman 4.3 reads CDI specs up to version 0.5.0: the spec must not ask
// for more.
func TestSpecVersionOldRuntimesRead(t *testing.T) {
	s, err := Spec([]NIC{{Index: 0, Name: "rnic0"}}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains([]string{"0.3.0", "0.4.0", "0.5.0"}, s.Version) {
		t.Errorf("cdiVersion %s, want 0.5.0 or older", s.Version)
	}
	b, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "kind: rnic.dev/nic") {
		t.Errorf("spec lacks its kind:\n%s", b)
	}
}

func TestSpecRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		nics []NIC
		o    Options
	}{
		"no NICs":        {nil, testOpts},
		"bad name":       {[]NIC{{Index: 0, Name: "rnic 0"}}, testOpts},
		"reserved name":  {[]NIC{{Index: 0, Name: AllDevice}}, testOpts},
		"relative lib":   {[]NIC{{Index: 0, Name: "rnic0"}}, Options{Socket: "/s", LibDir: "lib"}},
		"relative sock":  {[]NIC{{Index: 0, Name: "rnic0"}}, Options{Socket: "s", LibDir: "/lib"}},
		"one own socket": {[]NIC{{Index: 0, Name: "rnic0", Socket: "/t/0.sock"}, {Index: 1, Name: "rnic1"}}, testOpts},
		"relative own":   {[]NIC{{Index: 0, Name: "rnic0", Socket: "t.sock"}}, testOpts},
		"relative hook":  {[]NIC{{Index: 0, Name: "rnic0"}}, Options{Socket: "/s", LibDir: "/lib", Hook: []string{"rnic"}}},
	} {
		if _, err := Spec(c.nics, c.o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Validate rejects what a runtime would: a spec edited by hand into an
// invalid one.
func TestValidateRejects(t *testing.T) {
	s, err := Spec([]NIC{{Index: 0, Name: "rnic0"}}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	s.ContainerEdits.Mounts[0].HostPath = ""
	if err := Validate(s); err == nil {
		t.Error("a mount without a container path validated")
	}
}

func TestWriteIsReadable(t *testing.T) {
	s, err := Spec([]NIC{{Index: 0, Name: "rnic0"}}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sub", "rnic.yaml")
	if err := Write(s, path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("written spec: %v %v", fi, err)
	}
}

// TestSpecTenantSockets: NICs each served by a socket of their own (rnicd
// tenants) give a container the socket of the NIC it asked for, with the
// hook on it, and never another NIC's; there is no "all".
func TestSpecTenantSockets(t *testing.T) {
	nics := []NIC{{Index: 0, Name: "rnic0", Socket: "/run/rnic/tenants/rnic0/rnicd.sock"},
		{Index: 0, Name: "rnic1", Socket: "/run/rnic/tenants/rnic1/rnicd.sock"}}
	s, err := Spec(nics, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Devices {
		if d.Name == AllDevice {
			t.Error("a spec of per-NIC sockets has all")
		}
	}
	o := inject(t, nics, Kind+"=rnic1")
	var sockets []string
	for _, m := range o.Mounts {
		if m.Destination == ContainerSocket {
			sockets = append(sockets, m.Source)
		}
	}
	if !slices.Equal(sockets, []string{nics[1].Socket}) {
		t.Errorf("the container's sockets %v, want rnic1's alone", sockets)
	}
	if got := nodePaths(o); !slices.Equal(got, []string{"/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0"}) {
		t.Errorf("device nodes %v, want uverbs0: the tenant's socket lists its NIC alone", got)
	}
	if o.Hooks == nil || len(o.Hooks.CreateContainer) != 1 || !slices.Equal(o.Hooks.CreateContainer[0].Args, HookCommand(testOpts.Hook[0], nics[1].Socket)) {
		t.Errorf("hooks %+v, want the hook on rnic1's socket", o.Hooks)
	}
	if !slices.Contains(o.Process.Env, "RNIC_SOCKET="+ContainerSocket) {
		t.Errorf("env %v", o.Process.Env)
	}
}
