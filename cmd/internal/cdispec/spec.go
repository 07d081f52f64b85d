// Package cdispec builds the Container Device Interface spec that gives a
// container rnicd's NICs (kind rnic.dev/nic): the daemon's socket and the
// drop-in libraries mounted read-only, the environment that points a
// program at them, the /dev/infiniband nodes, and an OCI hook that adds
// the NICs to the container's /sys/class as a kernel driver would.
// rnic cdi generate writes it; the kubelet device plugin names its devices.
package cdispec

import (
	"errors"
	"fmt"
	"path/filepath"

	"tags.cncf.io/container-device-interface/pkg/parser"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Vendor and Class make the spec's kind; a device is Kind=NAME.
const (
	Vendor = "rnic.dev"
	Class  = "nic"
	Kind   = Vendor + "/" + Class
)

// AllDevice names the device that gives every NIC at once.
const AllDevice = "all"

// Where the spec puts things inside the container. The socket keeps
// rnicd's own default path, so a program that is told nothing finds it.
const (
	ContainerSocket = "/run/rnic/rnicd.sock"
	ContainerLibDir = "/usr/lib/rnic"
)

// socketEnv tells a program (the drop-ins, rnic's Go client) where the
// daemon is. The daemon's socket is its owner's alone, as outside: root's
// rnicd serves rootful containers, a user's own rnicd the user's rootless
// ones (where the user is the container's root, so the drop-in's check of
// who serves the socket passes as it does outside).
const socketEnv = "RNIC_SOCKET"

// NIC is one NIC of the daemon as the spec names it.
type NIC struct {
	// Index is the NIC's place in the device list of the socket that
	// serves it: the N of its /dev/infiniband/uverbsN, as the drop-in
	// numbers devices (0 for a NIC with a socket of its own).
	Index int
	// Name is the daemon's name of the NIC and the CDI device's name.
	Name string
	// Socket, if set, is the host socket that serves this NIC alone (an
	// rnicd tenant's, rnicd --tenant-per-nic): the device then mounts it
	// instead of Options.Socket, with the hook on it, and the spec has no
	// "all" (one process talks to one socket).
	Socket string
}

// Options say where the host's parts are.
type Options struct {
	// Socket is the daemon's control socket on the host (absolute).
	Socket string
	// LibDir is the host directory holding the drop-in libibverbs.so.1
	// and librdmacm.so.1 (absolute).
	LibDir string
	// Hook is the command line of the createContainer hook that adds the
	// NICs to the container's /sys/class (rnic cdi hook ...), its first
	// element an absolute path; empty: no hook, no sysfs entries.
	Hook []string
}

// HookCommand is the command line of the sysfs hook for Options.Hook:
// rnic (the absolute path of an rnic binary the runtime can run) asked to
// show the NICs of the daemon on socket.
func HookCommand(rnic, socket string) []string {
	return []string{rnic, "cdi", "hook", "--socket", socket}
}

// Spec returns the spec for nics, at the lowest CDI version that carries
// what it uses (so that older runtimes, podman 4.3's, read it), checked
// with the CDI module's validation.
func Spec(nics []NIC, o Options) (*specs.Spec, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if len(nics) == 0 {
		return nil, errors.New("cdispec: the daemon has no NICs")
	}
	perNIC := nics[0].Socket != ""
	s := &specs.Spec{Kind: Kind, ContainerEdits: o.commonEdits(!perNIC)}
	all := specs.Device{Name: AllDevice}
	for _, n := range nics {
		if err := parser.ValidateDeviceName(n.Name); err != nil || n.Name == AllDevice {
			return nil, fmt.Errorf("cdispec: NIC %q cannot be a CDI device name: %w", n.Name, errors.Join(err, errReservedName(n.Name)))
		}
		if (n.Socket != "") != perNIC || (perNIC && !filepath.IsAbs(n.Socket)) {
			return nil, fmt.Errorf("cdispec: NIC %q: every NIC or none has a socket of its own, an absolute path", n.Name)
		}
		d := specs.Device{Name: n.Name, ContainerEdits: specs.ContainerEdits{Mounts: []*specs.Mount{uverbsNode(n.Index)}}}
		if perNIC {
			own := o
			own.Socket = n.Socket
			if len(o.Hook) > 0 {
				own.Hook = HookCommand(o.Hook[0], n.Socket)
			}
			appendEdits(&d.ContainerEdits, own.socketEdits())
		}
		s.Devices = append(s.Devices, d)
		all.ContainerEdits.Mounts = append(all.ContainerEdits.Mounts, uverbsNode(n.Index))
	}
	if !perNIC {
		s.Devices = append(s.Devices, all)
	}
	v, err := specs.MinimumRequiredVersion(s)
	if err != nil {
		return nil, fmt.Errorf("cdispec: %w", err)
	}
	s.Version = v
	if err := Validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

func errReservedName(name string) error {
	if name == AllDevice {
		return fmt.Errorf("%q is the device of every NIC", AllDevice)
	}
	return nil
}

func (o *Options) check() error {
	for what, p := range map[string]string{"socket": o.Socket, "library directory": o.LibDir} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("cdispec: the %s %q is not an absolute path", what, p)
		}
	}
	if len(o.Hook) > 0 && !filepath.IsAbs(o.Hook[0]) {
		return fmt.Errorf("cdispec: the hook %q is not an absolute path", o.Hook[0])
	}
	return nil
}

// commonEdits are what any of the spec's devices brings: the libraries,
// rdma_cm and, with socket, the daemon's socket, its environment and the
// sysfs hook.
func (o *Options) commonEdits(socket bool) specs.ContainerEdits {
	e := specs.ContainerEdits{
		Env: []string{"LD_LIBRARY_PATH=" + ContainerLibDir},
		Mounts: []*specs.Mount{
			{HostPath: o.LibDir, ContainerPath: ContainerLibDir, Type: "bind", Options: readOnly()},
			devNull("/dev/infiniband/rdma_cm"),
		},
	}
	if socket {
		appendEdits(&e, o.socketEdits())
	}
	return e
}

// socketEdits mount o.Socket where programs look for it, and run the hook
// on it.
func (o *Options) socketEdits() *specs.ContainerEdits {
	e := &specs.ContainerEdits{
		Env:    []string{socketEnv + "=" + ContainerSocket},
		Mounts: []*specs.Mount{{HostPath: o.Socket, ContainerPath: ContainerSocket, Type: "bind", Options: readOnly()}},
	}
	if len(o.Hook) > 0 {
		e.Hooks = []*specs.Hook{{HookName: "createContainer", Path: o.Hook[0], Args: o.Hook}}
	}
	return e
}

// appendEdits adds b's environment, mounts and hooks to a.
func appendEdits(a *specs.ContainerEdits, b *specs.ContainerEdits) {
	a.Env = append(a.Env, b.Env...)
	a.Mounts = append(a.Mounts, b.Mounts...)
	a.Hooks = append(a.Hooks, b.Hooks...)
}

func readOnly() []string { return []string{"bind", "ro", "nosuid", "nodev"} }

// uverbsNode is /dev/infiniband/uverbsN.
func uverbsNode(index int) *specs.Mount {
	return devNull(fmt.Sprintf("/dev/infiniband/uverbs%d", index))
}

// devNull puts /dev/null at path: the drop-in never opens the node, but
// UCX and libfabric want one they may open read-write before they use a
// device, as rnic exec's view gives. A bind mount rather than a CDI device
// node: a rootless runtime cannot make nodes and binds a device from the
// host path the container sees, which has no /dev/infiniband; a bind of
// /dev/null works rootful and rootless alike, and every container may use
// /dev/null.
func devNull(path string) *specs.Mount {
	return &specs.Mount{HostPath: "/dev/null", ContainerPath: path, Type: "bind", Options: []string{"bind", "rw", "nosuid", "noexec"}}
}
