// What a container needs to use an rnicd's NICs, as rnic k8s
// device-plugin tells the kubelet: the seam between the device plugin and
// the description of rnic's devices to container runtimes (CDI). It is
// kept in this one file so that the CDI spec's own package can take its
// place: the names and edits here must stay those of that spec.

package main

import (
	"fmt"
	"path/filepath"

	"github.com/rnic/rnic/cmd/internal/cdispec"
	"github.com/rnic/rnic/cmd/internal/deviceplugin"
	"github.com/rnic/rnic/nic/ibv"
)

// cdiKind is the CDI kind of an rnic NIC: a device is rnic.dev/nic=NAME.
const cdiKind = cdispec.Kind

// Where a container finds the daemon's socket and the drop-in libraries:
// where the CDI spec puts them (the socket's directory, TestK8sPathsAreCDIs).
const (
	containerSocketDir = "/run/rnic"
	containerLibDir    = cdispec.ContainerLibDir
)

// nodeDevices describes the NICs of the rnicd on socket, with the
// drop-in libraries in libDir, both paths of the node.
// With tenants, each NIC has a socket of its own (rnicd
// --tenant-per-nic), and a container gets that one alone.
type nodeDevices struct {
	socket, libDir string
	tenants        bool
}

// tenantSocket is the socket rnicd --tenant-per-nic gives nic, beside the
// daemon's own socket.
func tenantSocket(socket, nic string) string {
	return filepath.Join(filepath.Dir(socket), "tenants", nic, filepath.Base(cdispec.ContainerSocket))
}

var _ deviceplugin.Provider = nodeDevices{}

func (d nodeDevices) CDIDevices(nics []string) ([]string, error) {
	out := make([]string, len(nics))
	for i, n := range nics {
		out[i] = cdiKind + "=" + n
	}
	return out, nil
}

// Edits mount the socket's directory, not the socket (a daemon that
// restarts makes its socket anew, which a bind mount of the old one would
// not show), and the libraries read-only; the environment is rnic exec's.
// The NICs need no device node: the libraries reach them over the socket.
func (d nodeDevices) Edits(nics []string) (deviceplugin.Edits, error) {
	if len(nics) == 0 {
		return deviceplugin.Edits{}, fmt.Errorf("no NIC")
	}
	host := d.socket
	if d.tenants {
		if len(nics) != 1 {
			return deviceplugin.Edits{}, fmt.Errorf("%d NICs for one container: with a socket per NIC, a process reaches one", len(nics))
		}
		host = tenantSocket(d.socket, nics[0])
	}
	sock := filepath.Join(containerSocketDir, filepath.Base(host))
	return deviceplugin.Edits{
		Env: map[string]string{
			"LD_LIBRARY_PATH": containerLibDir,
			ibv.SocketEnv:     sock,
		},
		Mounts: []deviceplugin.Mount{
			{HostPath: filepath.Dir(host), ContainerPath: containerSocketDir},
			{HostPath: d.libDir, ContainerPath: containerLibDir, ReadOnly: true},
		},
	}, nil
}
