package ibv

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// ErrForeign is returned when an object from another Device is given to a
// Device.
var ErrForeign = errors.New("ibv: object belongs to another device")

// Device is an open RDMA device with one port (struct ibv_context). All
// methods, and those of the objects it creates, are safe for concurrent use.
type Device interface {
	// Name is the device name (ibv_get_device_name).
	Name() string
	// Query returns the device attributes (ibv_query_device).
	Query() verbs.DeviceAttr
	// QueryPort returns port 1's attributes (ibv_query_port).
	QueryPort(port uint8) (verbs.PortAttr, error)
	// QueryGID returns the GID at index (ibv_query_gid).
	QueryGID(port uint8, index int) (netip.Addr, error)
	// GIDs returns the GID table of port 1.
	GIDs() []netip.Addr
	// GIDIndex returns the index of addr's GID (IPv4 addresses map to
	// ::ffff:a.b.c.d).
	GIDIndex(addr netip.Addr) (int, error)

	// AllocBuffer returns n bytes of zeroed memory this device can DMA
	// into once registered.
	AllocBuffer(n int) (Buffer, error)

	AllocPD() (PD, error)
	// RegMR registers buf (ibv_reg_mr); the MR's address is buf's
	// address in this process.
	RegMR(pd PD, buf []byte, access memory.Access) (MR, error)
	// RegMRIOVA registers buf at address iova (ibv_reg_mr_iova): SGEs and
	// remote accesses name its bytes from iova on. rnicd registers a
	// client's memory at the client's own addresses this way.
	RegMRIOVA(pd PD, buf []byte, iova uint64, access memory.Access) (MR, error)
	CreateCQ(cqe int) (CQ, error)
	CreateSRQ(pd PD, maxWR, maxSGE int) (SRQ, error)
	CreateQP(pd PD, init QPInit) (QP, error)
	CreateAH(pd PD, av verbs.AddressVector) (AH, error)

	// Events delivers asynchronous events (ibv_get_async_event); the
	// channel closes with the device.
	Events() <-chan Event

	// Close releases the device and every object still open on it.
	Close() error
}

// Buffer is memory from Device.AllocBuffer.
type Buffer interface {
	// Bytes is the memory; nil after Close.
	Bytes() []byte
	// Close frees the memory; MRs over it keep it mapped until
	// deregistered.
	Close() error
}

// PD is a protection domain (struct ibv_pd).
type PD interface {
	// Dealloc frees the PD (ibv_dealloc_pd); it fails while objects use it.
	Dealloc() error
}

// MR is a memory region (struct ibv_mr).
type MR interface {
	LKey() uint32
	RKey() uint32
	// Addr is the MR's start address, the address SGEs and remote
	// accesses use.
	Addr() uint64
	Len() uint64
	// Dereg deregisters the MR (ibv_dereg_mr).
	Dereg() error
}

// CQ is a completion queue (struct ibv_cq).
type CQ interface {
	// Poll moves up to len(wcs) completions into wcs and returns how many
	// (ibv_poll_cq).
	Poll(wcs []verbs.WC) int
	// ReqNotify arms the CQ (ibv_req_notify_cq): the next completion (the
	// next solicited one if solicitedOnly) signals Notify once.
	ReqNotify(solicitedOnly bool) error
	// Notify receives a value when an armed CQ gets a completion
	// (ibv_get_cq_event).
	Notify() <-chan struct{}
	// Err is non-nil once the CQ overran (IBV_EVENT_CQ_ERR) or its device
	// is gone.
	Err() error
	Destroy() error
}

// SRQ is a shared receive queue (struct ibv_srq).
type SRQ interface {
	PostRecv(wrs ...*verbs.RecvWR) error
	Destroy() error
}

// AH is an address handle (struct ibv_ah).
type AH interface {
	// AV is the handle's address vector: a UD SendWR names its
	// destination by setting SendWR.AH to it.
	AV() *verbs.AddressVector
	Destroy() error
}

// QPInit are the creation attributes of a QP (struct ibv_qp_init_attr).
type QPInit struct {
	Type   verbs.QPType
	SendCQ CQ
	RecvCQ CQ
	// SRQ, if set, is where receives come from.
	SRQ SRQ
	Cap verbs.QPCap
	// SigAll makes every send WR generate a completion (sq_sig_all).
	SigAll bool
}

// QP is a queue pair (struct ibv_qp).
type QP interface {
	QPN() uint32
	Type() verbs.QPType
	// Cap is the QP's capabilities as created (they may exceed what was
	// asked).
	Cap() verbs.QPCap
	// State is the QP's current state; the NIC may move it to SQE or ERR
	// on its own.
	State() verbs.QPState
	// Modify applies attr's fields named by mask (ibv_modify_qp).
	Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error
	// Query returns the current attributes (ibv_query_qp).
	Query() (verbs.QPAttr, error)
	// PostSend posts send WRs in order (ibv_post_send); on an error the
	// WRs before the failing one were posted.
	PostSend(wrs ...*verbs.SendWR) error
	// PostRecv posts receive WRs to the QP's own receive queue.
	PostRecv(wrs ...*verbs.RecvWR) error
	Destroy() error
}

// Event is an asynchronous event (struct ibv_async_event): its type and
// the object it concerns. At most one of QP, CQ and SRQ is set; none for a
// port or device event.
type Event struct {
	Type verbs.AsyncEvent
	QP   QP
	CQ   CQ
	SRQ  SRQ
	Port uint8
}

// Network is implemented by a Device whose addresses belong to a TCP/IP
// stack a program can use for its side channels (the out-of-band exchange
// of ibv_rc_pingpong, perftest): the host's kernel for a hardware NIC, the
// daemon's stack for an rnicd NIC.
type Network interface {
	// Listen listens for TCP connections on addr (an address of the
	// device, or unspecified).
	Listen(addr netip.AddrPort) (net.Listener, error)
	// Dial connects from local (an address of the device, or invalid for
	// any) to remote.
	Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error)
}

// Counter is one named port counter.
type Counter struct {
	Name  string
	Value uint64
}

// Counters is implemented by a Device that reports its port counters (rdma
// statistic).
type Counters interface {
	Counters() []Counter
}
