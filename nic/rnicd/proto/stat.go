// Administration and statistics (rnic stat): what the daemon serves, who
// its clients are, their QPs, and the counters. Any connection may ask,
// before or without OPEN; the daemon shows another client's pid, comm and
// QPs only to a client whose uid is 0 or the daemon's own.
//
// A listing can outgrow one message (MaxMessage): the daemon fills a
// reply up to a budget and sets More; the client asks again from the
// cursor of the last entry it got (After), so a listing of any size comes
// in pages and none is cut silently.
//
//	STAT_DAEMON   request Empty         reply StatDaemonReply
//	STAT_DEVICES  request StatPage      reply StatDevicesReply  (After: devices already got)
//	STAT_CLIENTS  request StatPage      reply StatClientsReply  (After: last client ID)
//	STAT_QPS      request StatQPsPage   reply StatQPsReply      (After: last client ID and QPN)

package proto

import (
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
)

// Admin ops.
const (
	OpStatDaemon  Op = 0x0301
	OpStatDevices Op = 0x0302
	OpStatClients Op = 0x0303
	OpStatQPs     Op = 0x0304
)

// Bounds of stat replies: each decoder refuses more, whatever the
// message's size.
const (
	// MaxStatEntries bounds the devices, clients or QPs of one page.
	MaxStatEntries = 4096
	// MaxComm bounds a process name (the kernel's TASK_COMM_LEN is 16
	// with the NUL).
	MaxComm = 16
	// StatBudget is how many body bytes the daemon fills a page to
	// before it stops and sets More; one entry more stays under
	// MaxMessage (the biggest, a device with MaxGIDs GIDs and
	// MaxCounters counters, is under 44 KiB).
	StatBudget = 16 << 10
)

func init() {
	registerOps([]opDecl{
		{OpStatDaemon, "STAT_DAEMON", Bodies{func() Message { return new(Empty) }, func() Message { return new(StatDaemonReply) }}},
		{OpStatDevices, "STAT_DEVICES", Bodies{func() Message { return new(StatPage) }, func() Message { return new(StatDevicesReply) }}},
		{OpStatClients, "STAT_CLIENTS", Bodies{func() Message { return new(StatPage) }, func() Message { return new(StatClientsReply) }}},
		{OpStatQPs, "STAT_QPS", Bodies{func() Message { return new(StatQPsPage) }, func() Message { return new(StatQPsReply) }}},
	})
}

// StatDaemonReply describes the daemon and its counters (server.Stats).
type StatDaemonReply struct {
	PID uint32
	UID uint32
	// All reports whether the asking client sees every client's
	// objects (its uid is 0 or the daemon's) or only its own.
	All      bool
	Counters []Counter
}

func (m *StatDaemonReply) Encode(w *Writer) {
	w.U32(m.PID)
	w.U32(m.UID)
	w.Bool(m.All)
	putCounters(w, m.Counters)
}

func (m *StatDaemonReply) Decode(r *Reader) {
	m.PID = r.U32()
	m.UID = r.U32()
	m.All = r.Bool()
	m.Counters = getCounters(r)
}

// StatPage asks for the page after a cursor.
type StatPage struct{ After uint64 }

func (m *StatPage) Encode(w *Writer) { w.U64(m.After) }
func (m *StatPage) Decode(r *Reader) { m.After = r.U64() }

// StatDevice is a served device: port 1's state and MTUs, its GIDs and
// its port counters.
type StatDevice struct {
	Name      string
	State     verbs.PortState
	ActiveMTU verbs.MTU
	LinkMTU   uint32
	GIDs      []netip.Addr
	Counters  []Counter
}

func (m *StatDevice) Encode(w *Writer) {
	w.String(m.Name)
	w.U8(uint8(m.State))
	w.U8(uint8(m.ActiveMTU))
	w.U32(m.LinkMTU)
	w.U32(uint32(len(m.GIDs)))
	for _, g := range m.GIDs {
		w.Addr(g)
	}
	putCounters(w, m.Counters)
}

func (m *StatDevice) Decode(r *Reader) {
	m.Name = r.String(MaxName)
	m.State = verbs.PortState(r.U8())
	m.ActiveMTU = verbs.MTU(r.U8())
	m.LinkMTU = r.U32()
	n := r.U32()
	if n > MaxGIDs {
		r.fail("%d GIDs, at most %d", n, MaxGIDs)
		return
	}
	m.GIDs = make([]netip.Addr, 0, min(n, uint32(r.Remaining()/17)))
	for range n {
		m.GIDs = append(m.GIDs, r.Addr())
	}
	m.Counters = getCounters(r)
}

// StatDevicesReply is a page of devices, in name order.
type StatDevicesReply struct {
	Devices []StatDevice
	More    bool
}

func (m *StatDevicesReply) Encode(w *Writer) { putPage(w, m.Devices, m.More) }

// An entry takes at least 18 bytes (an empty name, state, MTUs, no GIDs).
func (m *StatDevicesReply) Decode(r *Reader) { m.More = getPage(r, &m.Devices, "devices", 18) }

// StatClient is a connected client: its peer credentials, its process
// name when it connected, the device it opened and what it holds.
type StatClient struct {
	ID      uint64
	PID     int32
	UID     uint32
	Comm    string
	Device  string // "" before OPEN
	QPs     uint32
	MRs     uint32
	Objects uint32 // PDs, CQs, SRQs and AHs
	MRBytes uint64 // client memory mapped for its MRs
}

func (m *StatClient) Encode(w *Writer) {
	w.U64(m.ID)
	w.U32(uint32(m.PID))
	w.U32(m.UID)
	w.String(m.Comm)
	w.String(m.Device)
	w.U32(m.QPs)
	w.U32(m.MRs)
	w.U32(m.Objects)
	w.U64(m.MRBytes)
}

func (m *StatClient) Decode(r *Reader) {
	m.ID = r.U64()
	m.PID = int32(r.U32())
	m.UID = r.U32()
	m.Comm = r.String(MaxComm)
	m.Device = r.String(MaxName)
	m.QPs = r.U32()
	m.MRs = r.U32()
	m.Objects = r.U32()
	m.MRBytes = r.U64()
}

// StatClientsReply is a page of clients, in ID order.
type StatClientsReply struct {
	Clients []StatClient
	More    bool
}

func (m *StatClientsReply) Encode(w *Writer) { putPage(w, m.Clients, m.More) }

func (m *StatClientsReply) Decode(r *Reader) { m.More = getPage(r, &m.Clients, "clients", 44) }

// StatQPsPage asks for the QPs after (AfterClient, AfterQPN).
type StatQPsPage struct {
	AfterClient uint64
	AfterQPN    uint32
}

func (m *StatQPsPage) Encode(w *Writer) { w.U64(m.AfterClient); w.U32(m.AfterQPN) }
func (m *StatQPsPage) Decode(r *Reader) { m.AfterClient = r.U64(); m.AfterQPN = r.U32() }

// StatQP is a client's QP. DestQPN is the RC or UC peer's QPN once the
// QP was given one (RTR and later), else 0, which no connected QP has.
type StatQP struct {
	Client  uint64
	QPN     uint32
	Type    verbs.QPType
	State   verbs.QPState
	DestQPN uint32
}

func (m *StatQP) Encode(w *Writer) {
	w.U64(m.Client)
	w.U32(m.QPN)
	w.U8(uint8(m.Type))
	w.U8(uint8(m.State))
	w.U32(m.DestQPN)
}

func (m *StatQP) Decode(r *Reader) {
	m.Client = r.U64()
	m.QPN = r.U32()
	m.Type = verbs.QPType(r.U8())
	m.State = verbs.QPState(r.U8())
	m.DestQPN = r.U32()
}

// statQPLen is the encoded size of a StatQP.
const statQPLen = 8 + 4 + 1 + 1 + 4

// StatQPsReply is a page of QPs, ordered by client ID, then QPN. A client
// named by a QP is in the clients listing (unless it left in between).
type StatQPsReply struct {
	QPs  []StatQP
	More bool
}

func (m *StatQPsReply) Encode(w *Writer) { putPage(w, m.QPs, m.More) }

func (m *StatQPsReply) Decode(r *Reader) { m.More = getPage(r, &m.QPs, "QPs", statQPLen) }

func putCounters(w *Writer, cs []Counter) {
	w.U32(uint32(len(cs)))
	for _, c := range cs {
		w.String(c.Name)
		w.U64(c.Value)
	}
}

func getCounters(r *Reader) []Counter {
	n := r.U32()
	if n > MaxCounters {
		r.fail("%d counters, at most %d", n, MaxCounters)
		return nil
	}
	cs := make([]Counter, 0, min(n, uint32(r.Remaining()/12)))
	for range n {
		name := r.String(MaxName)
		cs = append(cs, Counter{Name: name, Value: r.U64()})
	}
	return cs
}
