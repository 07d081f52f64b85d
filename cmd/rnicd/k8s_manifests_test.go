// rnicd as the Kubernetes manifests (cmd/rnic/k8s) run it: its arguments,
// $(VAR) expanded as the kubelet does, parse with rnicd's own flag set,
// serve one NIC, rnic0, on the node's address, and put the socket on a
// path the node shares with the device plugin.

package main

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/rnic/rnic/cmd/internal/k8smanifest"
)

func TestK8sManifestsRnicd(t *testing.T) {
	const nodeIP = "192.0.2.10" // the downward API's status.podIP on a hostNetwork pod
	objs, err := k8smanifest.Read("../rnic/k8s")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8smanifest.Containers(objs, map[string]string{"status.podIP": nodeIP, "status.hostIP": nodeIP})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		if filepath.Base(c.Argv[0]) != "rnicd" {
			continue
		}
		n++
		where := c.Object.File + ": " + c.Object.Name + "/" + c.Name
		opts, err := parseArgs(c.Argv[1:])
		if err != nil {
			t.Errorf("%s: rnicd %q: %v", where, c.Argv[1:], err)
			continue
		}
		if len(opts.devices) != 1 || opts.devices[0].Name != "rnic0" || opts.devices[0].UDP.Addr() != netip.MustParseAddr(nodeIP) {
			t.Errorf("%s: serves %+v, want rnic0 on UDP at the node's address", where, opts.devices)
		}
		if !c.Object.Pod.HostNetwork {
			t.Errorf("%s: a UDP-mode rnicd on the node's address needs hostNetwork", where)
		}
		if got := c.MountFor(opts.socket); got != opts.socket {
			t.Errorf("%s: socket %s is not the node's (mounted from %q)", where, opts.socket, got)
		}
	}
	if n == 0 {
		t.Error("no manifest runs rnicd")
	}
}
