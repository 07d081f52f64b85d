// rping's options and their checks.

package rping

import (
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
)

// rping's defaults and limits.
const (
	DefaultPort = 7174
	DefaultSize = 64
	// MinSize is RPING_MIN_BUFSIZE: sizeof "2147483647" + sizeof
	// "rdma-ping-%d: ", room for any ping's prefix.
	MinSize = 26
	// MaxSize is RPING_BUFSIZE − 1.
	MaxSize = 64*1024 - 1
)

// Config is one rping run.
type Config struct {
	// Server selects the role (-s; -c otherwise).
	Server bool
	// Addr is, for a server, the address it listens on (-a; the zero Addr:
	// every address) and, for a client, the server's address (-a).
	Addr netip.Addr
	// Source is the client's own address (-I; the zero Addr lets the
	// network choose): over RoCEv2 in the embedded mode, the address of
	// the client's NIC. In the TAP mode the NIC's address is used.
	Source netip.Addr
	// Port is the TCP port (-p, DefaultPort if 0).
	Port uint16
	// Size is the ping buffer's size (-S, DefaultSize if 0).
	Size int
	// Count is the number of pings (-C; 0: until interrupted). The server
	// ignores it, as rping's does.
	Count int
	// Verbose prints the ping data (-v), Validate compares it (-V), Debug
	// prints rping's debug lines (-d).
	Verbose, Validate, Debug bool

	// Device is the RDMA device rping runs on (--ib-dev): a local one
	// (the zero Spec, or a NAME alone, which names the NIC) is the NIC
	// this process builds, in the embedded or the TAP mode; any other is
	// opened with ibv.Open and must offer rdma_cm (ibv.ConnManager). The
	// mode's options (TAP, Pcap, Trace, IWARP) are the local NIC's.
	Device ibv.Spec

	// IWARP runs rping over iWARP; RoCEv2 (rdma_cm's IB CM on QP1) is
	// the default.
	IWARP bool
	// MPACRC asks the peer for MPA CRCs (siw: mpa_crc_required).
	MPACRC bool
	// TAP, if set, runs the NIC in the TAP mode; the connection then
	// runs on the NIC's own TCP from its own address.
	TAP *tapnic.Config
	// Pcap, if set, records the frames: every frame on the TAP, or in the
	// embedded mode the connection as Ethernet/IP/TCP frames.
	Pcap *embedded.PcapWriter
	// Trace, if set, receives the engine's trace.
	Trace io.Writer
	// Out gets what rping prints on stdout (the ping data), Err what it
	// prints on stderr (events, failures).
	Out, Err io.Writer

	// Connector, if set, is used instead of one Run opens (tests).
	Connector Connector
	// Ready, if set, is called with the server's address once it listens.
	Ready func(netip.AddrPort)

	// fill, if set, replaces FillPing (tests).
	fill func(buf []byte, n int)
}

// ErrConfig is wrapped by configuration errors (usage errors).
var ErrConfig = errors.New("rping: bad configuration")

// kit words the shared plumbing's errors as rping's.
var kit = progkit.Program{Name: "rping", ErrConfig: ErrConfig}

func (c *Config) check() error {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Err == nil {
		c.Err = io.Discard
	}
	switch {
	case c.Size < MinSize || c.Size > MaxSize:
		return fmt.Errorf("%w: Invalid size %d (valid range is %d to %d)", ErrConfig, c.Size, MinSize, MaxSize+1)
	case c.Count < 0:
		return fmt.Errorf("%w: Invalid count %d", ErrConfig, c.Count)
	case !c.Server && !c.Addr.IsValid():
		return fmt.Errorf("%w: a client needs the server's address (-a)", ErrConfig)
	case !c.Server && c.Addr.IsUnspecified():
		return fmt.Errorf("%w: %v is not a server address", ErrConfig, c.Addr)
	case c.Server && c.Source.IsValid():
		return fmt.Errorf("%w: -I is the client's source address", ErrConfig)
	case c.MPACRC && !c.IWARP:
		return fmt.Errorf("%w: MPA CRCs are iWARP's (--iwarp)", ErrConfig)
	case c.Device.Backend != ibv.BackendLocal && c.IWARP:
		return fmt.Errorf("%w: --iwarp runs on this process's NIC, not on %v", ErrConfig, c.Device)
	case c.Device.Backend != ibv.BackendLocal && c.TAP != nil:
		return fmt.Errorf("%w: the TAP mode is this process's NIC, not %v", ErrConfig, c.Device)
	case c.Device.Backend != ibv.BackendLocal && (c.Pcap != nil || c.Trace != nil):
		return fmt.Errorf("%w: the capture and the trace are of this process's NIC, not of %v", ErrConfig, c.Device)
	}
	return nil
}
