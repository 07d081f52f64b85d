// Package rnicdtest runs an rnicd in a test (or in a child process of
// one): a server of embedded NICs on kernel UDP, on loopback addresses of
// their own (no root), listening on a socket in a temporary directory.
package rnicdtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/rnicd/server"
)

// Options describe a test daemon.
type Options struct {
	// NICs is how many NICs it serves (1 if zero), named rnic0, rnic1, ...
	NICs int
	// MTU is their link MTU (loopback takes 9000; 1500 if zero).
	MTU int
	// Limits bound each client.
	Limits server.Limits
	// Logf, if set, receives the server's log.
	Logf func(string, ...any)
	// IWARP makes them iWARP NICs on kernel TCP (IWARPNICs), each with
	// its own rdma_cm (MPA), in place of RoCEv2 NICs.
	IWARP bool
	// HostPorts stand in for TAP-mode NICs' host ports, by device name
	// (server.Config.HostPorts).
	HostPorts map[string]server.HostPortFunc
	// Tenants serve some of the NICs on sockets of their own, beside
	// the daemon's (tenant-NAME.sock in its directory, with the access
	// of TenantAccess, else the daemon's socket's).
	Tenants      []server.TenantConfig
	TenantAccess map[string]server.SocketAccess
}

// Daemon is a running test daemon.
type Daemon struct {
	Server *server.Server
	// Socket is the control socket.
	Socket string
	NICs   []*embedded.NIC
	// IWARPNICs are the NICs of Options.IWARP (NICs is then empty).
	IWARPNICs []*embedded.IWARPNIC
	// Devices are the NICs as the server serves them.
	Devices []ibv.Device
	// TenantSockets are the sockets of Options.Tenants, by name.
	TenantSockets map[string]string
	served        sync.WaitGroup
}

// LoopbackAddr returns a random address of 127/8 (not 127.0.0.1), so
// that tests running in parallel, in this package or others, do not share
// a RoCEv2 port.
func LoopbackAddr() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
}

// OpenNIC opens an embedded NIC named name on a fresh loopback address.
func OpenNIC(name string, mtu int) (*embedded.NIC, error) {
	var err error
	for range 20 {
		var n *embedded.NIC
		if n, err = embedded.Open(embedded.UDPConfig{Name: name, Addr: LoopbackAddr(), MTU: mtu, NoPoll: true}); err == nil {
			return n, nil
		}
	}
	return nil, fmt.Errorf("open embedded NIC: %w", err)
}

// Device wraps an embedded NIC as rnicd serves it: nic.AsIBV with its
// counters and its Close.
func Device(n *embedded.NIC) ibv.Device { return n.Verbs(nic.IBVOptions{}) }

// ServedDevice wraps an embedded NIC as rnicd serves it: Device, with
// rdma_cm on its QP1 and the kernel's TCP on its address for side
// channels. Closing it closes the CM, then the NIC.
func ServedDevice(n *embedded.NIC) (ibv.Device, error) {
	return rdmacm.LocalWith(n, rdmacm.Config{}, nic.IBVOptions{Network: server.KernelNetwork(n.Addr)})
}

// OpenIWARPNIC opens an iWARP NIC named name on kernel TCP at a fresh
// loopback address (its listeners take free ports of their own).
func OpenIWARPNIC(name string) (*embedded.IWARPNIC, error) {
	n, err := embedded.OpenIWARP(embedded.IWARPConfig{Name: name, Addr: LoopbackAddr(), MSS: 65483})
	if err != nil {
		return nil, fmt.Errorf("open iWARP NIC: %w", err)
	}
	return n, nil
}

// ServedIWARPDevice wraps an iWARP NIC as rnicd serves it: its ibv
// device with its own rdma_cm, and the kernel's TCP on its address for
// side channels.
func ServedIWARPDevice(n *embedded.IWARPNIC) ibv.Device {
	return n.Verbs(nic.IBVOptions{Network: server.KernelNetwork(n.Addr)})
}

// New starts a daemon listening on socket: its devices are ServedDevices.
func New(socket string, opt Options) (*Daemon, error) {
	if opt.NICs == 0 {
		opt.NICs = 1
	}
	d := &Daemon{Socket: socket, TenantSockets: map[string]string{}}
	fail := func(err error) (*Daemon, error) {
		for _, dev := range d.Devices {
			dev.Close()
		}
		return nil, err
	}
	for i := range opt.NICs {
		if opt.IWARP {
			n, err := OpenIWARPNIC(fmt.Sprintf("rnic%d", i))
			if err != nil {
				return fail(err)
			}
			d.IWARPNICs = append(d.IWARPNICs, n)
			d.Devices = append(d.Devices, ServedIWARPDevice(n))
			continue
		}
		n, err := OpenNIC(fmt.Sprintf("rnic%d", i), opt.MTU)
		if err != nil {
			return fail(err)
		}
		d.NICs = append(d.NICs, n)
		dev, err := ServedDevice(n)
		if err != nil {
			n.Close()
			return fail(err)
		}
		d.Devices = append(d.Devices, dev)
	}
	srv, err := server.New(server.Config{Devices: d.Devices, Limits: opt.Limits, Logf: opt.Logf, HostPorts: opt.HostPorts,
		Tenants: opt.Tenants})
	if err != nil {
		return fail(err)
	}
	d.Server = srv
	l, err := server.Listen(socket)
	if err != nil {
		return fail(err)
	}
	d.served.Go(func() { srv.Serve(l) })
	for _, t := range opt.Tenants {
		path := filepath.Join(filepath.Dir(socket), "tenant-"+t.Name+".sock")
		a, ok := opt.TenantAccess[t.Name]
		if !ok {
			a = server.SocketAccess{Mode: 0o600, UID: -1, GID: -1}
		}
		l, err := server.ListenAs(path, a)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.TenantSockets[t.Name] = path
		d.served.Go(func() { srv.ServeTenant(t.Name, l) })
	}
	return d, nil
}

// Close stops the daemon: its clients are reaped, its NICs closed.
func (d *Daemon) Close() error {
	err := d.Server.Close()
	d.served.Wait()
	for _, dev := range d.Devices {
		err = errors.Join(err, dev.Close())
	}
	return err
}

// Start starts a daemon on a socket in t's temporary directory; it stops
// when the test ends.
func Start(t testing.TB, opt Options) *Daemon {
	t.Helper()
	d, err := New(filepath.Join(t.TempDir(), "rnicd.sock"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Spec returns the device string of NIC i.
func (d *Daemon) Spec(i int) ibv.Spec {
	return ibv.Spec{Backend: ibv.BackendDaemon, Name: d.Devices[i].Name(), Socket: d.Socket}
}

// Addr returns the address of NIC i, RoCEv2 or iWARP.
func (d *Daemon) Addr(i int) netip.Addr {
	if len(d.IWARPNICs) > 0 {
		return d.IWARPNICs[i].Addr
	}
	return d.NICs[i].Addr
}
