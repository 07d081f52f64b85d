// --tenant: the syntax and its checks, and a daemon serving a tenant's NIC
// on the tenant's socket, owned and moded as asked, its other NIC on its
// own socket only.

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
)

func TestParseTenant(t *testing.T) {
	opts, err := parseArgs([]string{"--udp", "127.0.0.2", "--device", "udp=127.0.0.3", "--device", "udp=127.0.0.4",
		"--socket", "/run/rnic/rnicd.sock",
		"--tenant", "name=pod-a,nics=rnic1+rnic2,uid=1000,gid=2000,max-qps=64,max-mapped-bytes=1073741824",
		"--tenant", "name=pod-b,nics=rnic0,socket=/tmp/b.sock,mode=0666,max-clients=3,max-mrs=5,max-queue-bytes=4096"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := opts.tenants[0], opts.tenants[1]
	if a.Name != "pod-a" || !slices.Equal(a.Devices, []string{"rnic1", "rnic2"}) || a.socket != "/run/rnic/tenants/pod-a/rnicd.sock" ||
		a.access != (server.SocketAccess{Mode: 0o660, UID: 1000, GID: 2000}) || !slices.Equal(a.UIDs, []uint32{1000}) ||
		!slices.Equal(a.GIDs, []uint32{2000}) || a.Limits != (server.TenantLimits{MaxQPs: 64, MaxMappedBytes: 1 << 30}) {
		t.Errorf("tenant a: %+v", a)
	}
	if b.socket != "/tmp/b.sock" || b.access != (server.SocketAccess{Mode: 0o666, UID: -1, GID: -1}) || len(b.UIDs)+len(b.GIDs) != 0 ||
		b.Limits != (server.TenantLimits{MaxClients: 3, MaxMRs: 5, MaxQueueBytes: 4096}) {
		t.Errorf("tenant b: %+v", b)
	}
}

// TestTenantPerNIC: every NIC a --tenant does not name becomes a tenant of
// its own, with the keys given.
func TestTenantPerNIC(t *testing.T) {
	opts, err := parseArgs([]string{"--udp", "127.0.0.2", "--device", "udp=127.0.0.3", "--device", "udp=127.0.0.4",
		"--socket", "/run/rnic/rnicd.sock", "--tenant", "name=big,nics=rnic1", "--tenant-per-nic=uid=7,max-qps=9"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range opts.tenants {
		got = append(got, fmt.Sprintf("%s:%s:%s:%v:%d", tn.Name, strings.Join(tn.Devices, "+"), tn.socket, tn.UIDs, tn.Limits.MaxQPs))
	}
	want := []string{"big:rnic1:/run/rnic/tenants/big/rnicd.sock:[]:0", "rnic0:rnic0:/run/rnic/tenants/rnic0/rnicd.sock:[7]:9",
		"rnic2:rnic2:/run/rnic/tenants/rnic2/rnicd.sock:[7]:9"}
	if !slices.Equal(got, want) {
		t.Errorf("tenants %q, want %q", got, want)
	}
	if opts, err := parseArgs([]string{"--udp", "127.0.0.2", "--tenant-per-nic"}); err != nil || len(opts.tenants) != 1 || opts.tenants[0].Name != "rnic0" {
		t.Errorf("--tenant-per-nic alone: %+v, %v; want tenant rnic0", opts, err)
	}
	if _, err := parseArgs([]string{"--udp", "127.0.0.2", "--tenant-per-nic=socket=/x"}); err == nil || !strings.Contains(err.Error(), "socket=") {
		t.Errorf("--tenant-per-nic socket=: %v, want refused", err)
	}
}

func TestParseTenantErrors(t *testing.T) {
	base := []string{"--udp", "127.0.0.2", "--device", "udp=127.0.0.3", "--socket", "/run/rnic/rnicd.sock"}
	for _, tc := range []struct {
		name, want string
		tenants    []string
	}{
		{"no name", "name=", []string{"nics=rnic1"}},
		{"slash in name", "name=", []string{"name=a/b,nics=rnic1"}},
		{"no nics", "nics=", []string{"name=a"}},
		{"unknown NIC", "no NIC named rnic7", []string{"name=a,nics=rnic7"}},
		{"NIC twice", "rnic1 is tenant a's already", []string{"name=a,nics=rnic1", "name=b,nics=rnic1"}},
		{"name twice", "two tenants are named a", []string{"name=a,nics=rnic0", "name=a,nics=rnic1"}},
		{"socket twice", "socket /tmp/x.sock is another's", []string{"name=a,nics=rnic0,socket=/tmp/x.sock", "name=b,nics=rnic1,socket=/tmp/x.sock"}},
		{"host's socket", "is another's", []string{"name=a,nics=rnic0,socket=/run/rnic/rnicd.sock"}},
		{"bad mode", "mode=", []string{"name=a,nics=rnic1,mode=0400"}},
		{"bad uid", "uid=", []string{"name=a,nics=rnic1,uid=nobody"}},
		{"zero limit", "max-qps=", []string{"name=a,nics=rnic1,max-qps=0"}},
		{"unknown key", "unknown key \"qps\"", []string{"name=a,nics=rnic1,qps=3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := slices.Clone(base)
			for _, s := range tc.tenants {
				args = append(args, "--tenant", s)
			}
			_, err := parseArgs(args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseArgs(%q): %v, want an error containing %q", args, err, tc.want)
			}
		})
	}
}

// TestDaemonTenant: rnicd serves rnic1 on tenant t1's socket (mode 0660,
// group 65534, in a directory it makes 0711) and rnic0 on its own; each
// socket lists and opens its own NIC only; the tenant refuses a peer it
// does not name.
func TestDaemonTenant(t *testing.T) {
	bin := buildRnicd(t)
	dir := t.TempDir()
	sock, tsock := filepath.Join(dir, "rnicd.sock"), filepath.Join(dir, "t1", "rnicd.sock")
	a0, a1 := rnicdtest.LoopbackAddr(), rnicdtest.LoopbackAddr()
	gid := os.Getgid()
	if os.Getuid() == 0 {
		gid = 65534
	}
	d := startDaemon(t, bin, []string{"rnic0: udp ", "rnic1: udp ", "rnicd: serving rnic0 on " + sock,
		"rnicd: tenant t1: serving rnic1 on " + tsock},
		"--udp", a0.String(), "--device", "udp="+a1.String(), "--socket", sock,
		"--tenant", "name=t1,nics=rnic1,socket="+tsock+",gid="+strconv.Itoa(gid)+",max-qps=2")
	fi, err := os.Stat(tsock)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || int(st.Gid) != gid {
		t.Errorf("tenant socket mode %v group %d, want 0660 group %d", fi.Mode().Perm(), st.Gid, gid)
	}
	if fi, err := os.Stat(filepath.Dir(tsock)); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("tenant socket directory %v (%v), want mode 0711", fi.Mode(), err)
	}
	st, err := client.QueryStat(sock)
	if err != nil || len(st.Devices) != 1 || st.Devices[0].Name != "rnic0" {
		t.Errorf("the host's socket lists %+v (%v), want rnic0 only", st, err)
	}
	if _, err := ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic1", Socket: sock}); !errors.Is(err, proto.ErrNoDevice) {
		t.Errorf("opening the tenant's rnic1 on the host's socket: %v, want ErrNoDevice", err)
	}
	// This test's process has the tenant's gid only when it runs as it.
	_, err = client.QueryStat(tsock)
	if gid == os.Getgid() && err != nil {
		t.Errorf("the tenant's gid on its socket: %v", err)
	}
	if gid != os.Getgid() && (err == nil || !strings.Contains(err.Error(), "tenant t1 serves no client")) {
		t.Errorf("uid %d gid %d on the socket of a tenant of gid %d: %v, want refused", os.Getuid(), os.Getgid(), gid, err)
	}
	d.stop(t)
	if _, err := os.Stat(tsock); !os.IsNotExist(err) {
		t.Errorf("the tenant's socket survived rnicd: %v", err)
	}
}
