package iwconform

import (
	"context"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// DUT is the device under test as the iWARP cases drive it: through its
// verbs and its rdma_cm (the agent's steps, or an in-process ibv.Device).
// Calls that wait (Accept, Connect, Poll) are bounded by ctx.
type DUT interface {
	// Kind names the DUT for known deviations ("rnic", "siw", ...).
	Kind() string
	// Addr is the DUT's address, where it listens and connects from.
	Addr() netip.Addr
	// Atomics reports whether the DUT offers RFC 7306 atomics.
	Atomics() bool
	// NewQP creates an RC QP with its own CQ (in the DUT's one PD).
	NewQP(ctx context.Context) (QP, error)
	// RegMR registers size zeroed bytes with access.
	RegMR(ctx context.Context, size int, access memory.Access) (MR, error)
	// Listen listens for connections (rdma_listen) on port (0: any) and
	// returns the port.
	Listen(ctx context.Context, port uint16) (uint16, error)
	// Accept takes the next connection request on the listener and
	// accepts it on qp with the given private data, IRD and ORD,
	// returning once the connection is established, with the private data
	// the request carried.
	Accept(ctx context.Context, qp QP, privateData []byte, ird, ord uint8) ([]byte, error)
	// Connect connects qp to remote and returns once established.
	Connect(ctx context.Context, qp QP, remote netip.AddrPort, privateData []byte, ird, ord uint8) error
	// PostRecv posts a receive of n bytes at mr+off.
	PostRecv(ctx context.Context, qp QP, id uint64, mr MR, off, n int) error
	// PostSend posts one send WR.
	PostSend(ctx context.Context, qp QP, wr SendWR) error
	// Poll waits up to wait for at least one completion of qp's CQ and
	// returns what there is (none: an empty slice, no error).
	Poll(ctx context.Context, qp QP, wait time.Duration) ([]verbs.WC, error)
	// QPState queries the QP's state.
	QPState(ctx context.Context, qp QP) (verbs.QPState, error)
	// ReadMR and WriteMR access the DUT's registered memory.
	ReadMR(ctx context.Context, mr MR, off, n int) ([]byte, error)
	WriteMR(ctx context.Context, mr MR, off int, b []byte) error
	// Close releases everything the cases created.
	Close() error
}

// QP is a DUT QP handle.
type QP struct {
	ID  uint64
	QPN uint32
}

// MR is a DUT memory region.
type MR struct {
	ID         uint64
	LKey, RKey uint32
	Addr       uint64
	Len        int
}

// SendWR is a send WR on a DUT QP: one SGE over MR at Off, Len bytes.
type SendWR struct {
	ID         uint64
	Opcode     verbs.WROpcode
	MR         MR
	Off, Len   int
	RemoteAddr uint64
	RKey       uint32
	InvRKey    uint32
	CompareAdd uint64
	Swap       uint64
}
