// Device strings: which backend a program's -d/--ib-dev names.

package ibv

import (
	"fmt"
	"strings"
)

// Backend is the kind of device a Spec names.
type Backend uint8

const (
	// BackendLocal is a NIC in this process (embedded, simulated, TAP).
	BackendLocal Backend = iota
	// BackendDaemon is a NIC served by rnicd over a Unix socket.
	BackendDaemon
	// BackendVerbs is a device driven through libibverbs (passthrough).
	BackendVerbs
)

func (b Backend) String() string {
	switch b {
	case BackendLocal:
		return "local"
	case BackendDaemon:
		return "rnicd"
	case BackendVerbs:
		return "verbs"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// Spec is a parsed device string.
type Spec struct {
	Backend Backend
	// Name is the device name: rnic0, rxe0, mlx5_0.
	Name string
	// Socket is rnicd's control socket (BackendDaemon).
	Socket string
}

func (s Spec) String() string {
	switch s.Backend {
	case BackendDaemon:
		return s.Name + "@" + s.Socket
	case BackendVerbs:
		return "verbs:" + s.Name
	}
	return s.Name
}

// ParseSpec parses a device string:
//
//	NAME             a NIC in this process
//	NAME@SOCKET      NAME served by the rnicd listening on SOCKET
//	NAME@            NAME served by the rnicd on DefaultSocketPath()
//	verbs:NAME       the libibverbs device NAME
func ParseSpec(s string) (Spec, error) {
	if rest, ok := strings.CutPrefix(s, "verbs:"); ok {
		if !validName(rest) {
			return Spec{}, fmt.Errorf("ibv: device string %q: bad device name after the verbs: prefix", s)
		}
		return Spec{Backend: BackendVerbs, Name: rest}, nil
	}
	name, sock, daemon := strings.Cut(s, "@")
	if !validName(name) {
		return Spec{}, fmt.Errorf("ibv: device string %q: bad device name", s)
	}
	if !daemon {
		return Spec{Backend: BackendLocal, Name: name}, nil
	}
	if sock == "" {
		sock = DefaultSocketPath()
	}
	return Spec{Backend: BackendDaemon, Name: name, Socket: sock}, nil
}

// validName: what the kernel accepts as an IB device name (IB_DEVICE_NAME_MAX
// is 64 with the NUL), without separators that would make a string ambiguous.
func validName(n string) bool {
	if n == "" || len(n) > 63 {
		return false
	}
	for _, c := range n {
		if c <= ' ' || c == '/' || c == '@' || c == ':' || c > 0x7e {
			return false
		}
	}
	return true
}
