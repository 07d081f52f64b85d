// The bodies of the core ops' requests, replies and events. Each is a
// struct with Encode and Decode; Decode reads every field and reports the
// first error through the Reader (call Reader.Done after it).

package proto

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/nic/verbs"
)

// The protocol version a client announces in OpOpen. The daemon speaks
// this one version only and refuses a client of any other (StatusVersion):
// client and daemon ship together, so a change of any layout here, in the
// rings or in the C header bumps it, and nothing keeps the old layout.
//
//rnicd:cheader
const Version = 8

// Bounds of OpOpen's and OpCounters' replies.
//
//rnicd:cheader
const (
	// MaxGIDs bounds the GID table sent with OpOpen.
	MaxGIDs = 256
	// MaxCounters bounds the counter list of OpCounters.
	MaxCounters = 512
)

// Message is a message body.
type Message interface {
	Encode(w *Writer)
	Decode(r *Reader)
}

// Empty is a body with no fields.
type Empty struct{}

func (*Empty) Encode(*Writer) {}
func (*Empty) Decode(*Reader) {}

// Handle is a body holding one object handle: the reply of OpAllocPD, the
// request of the destroy ops, OpKickCQ, OpArmCQ, OpQueryQP and OpQPState.
type Handle struct{ H uint32 }

func (m *Handle) Encode(w *Writer) { w.U32(m.H) }
func (m *Handle) Decode(r *Reader) { m.H = r.U32() }

// OpenReq opens a device by name.
type OpenReq struct {
	Version uint32
	Name    string
}

func (m *OpenReq) Encode(w *Writer) { w.U32(m.Version); w.String(m.Name) }
func (m *OpenReq) Decode(r *Reader) { m.Version = r.U32(); m.Name = r.String(MaxName) }

// OpenReply describes the opened device.
type OpenReply struct {
	Version uint32
	Name    string
	Attr    verbs.DeviceAttr
	Port    verbs.PortAttr
	GIDs    []netip.Addr
}

func (m *OpenReply) Encode(w *Writer) {
	w.U32(m.Version)
	w.String(m.Name)
	PutDeviceAttr(w, &m.Attr)
	PutPortAttr(w, &m.Port)
	w.U32(uint32(len(m.GIDs)))
	for _, g := range m.GIDs {
		w.Addr(g)
	}
	w.U8(uint8(m.Attr.Transport))
	w.U8(uint8(m.Attr.NodeType))
}

func (m *OpenReply) Decode(r *Reader) {
	m.Version = r.U32()
	m.Name = r.String(MaxName)
	GetDeviceAttr(r, &m.Attr)
	GetPortAttr(r, &m.Port)
	n := r.U32()
	if n > MaxGIDs {
		r.fail("%d GIDs, at most %d", n, MaxGIDs)
		return
	}
	m.GIDs = make([]netip.Addr, 0, n)
	for range n {
		m.GIDs = append(m.GIDs, r.Addr())
	}
	m.Attr.Transport = verbs.Transport(r.U8())
	m.Attr.NodeType = verbs.NodeType(r.U8())
}

// QueryPortReq asks for a port's attributes.
type QueryPortReq struct{ Port uint8 }

func (m *QueryPortReq) Encode(w *Writer) { w.U8(m.Port) }
func (m *QueryPortReq) Decode(r *Reader) { m.Port = r.U8() }

// PortReply holds a port's attributes.
type PortReply struct{ Attr verbs.PortAttr }

func (m *PortReply) Encode(w *Writer) { PutPortAttr(w, &m.Attr) }
func (m *PortReply) Decode(r *Reader) { GetPortAttr(r, &m.Attr) }

// QueryGIDReq asks for the GID at an index.
type QueryGIDReq struct {
	Port  uint8
	Index uint32
}

func (m *QueryGIDReq) Encode(w *Writer) { w.U8(m.Port); w.U32(m.Index) }
func (m *QueryGIDReq) Decode(r *Reader) { m.Port = r.U8(); m.Index = r.U32() }

// GID is a body holding one address: the reply of OpQueryGID, the
// request of OpGIDIndex.
type GID struct{ Addr netip.Addr }

func (m *GID) Encode(w *Writer) { w.Addr(m.Addr) }
func (m *GID) Decode(r *Reader) { m.Addr = r.Addr() }

// Index is a body holding one index: the reply of OpGIDIndex.
type Index struct{ Index uint32 }

func (m *Index) Encode(w *Writer) { w.U32(m.Index) }
func (m *Index) Decode(r *Reader) { m.Index = r.U32() }

// Counter is a named counter.
type Counter struct {
	Name  string
	Value uint64
}

// CountersReply lists the port counters.
type CountersReply struct{ Counters []Counter }

func (m *CountersReply) Encode(w *Writer) {
	w.U32(uint32(len(m.Counters)))
	for _, c := range m.Counters {
		w.String(c.Name)
		w.U64(c.Value)
	}
}

func (m *CountersReply) Decode(r *Reader) {
	n := r.U32()
	if n > MaxCounters {
		r.fail("%d counters, at most %d", n, MaxCounters)
		return
	}
	m.Counters = make([]Counter, 0, n)
	for range n {
		name := r.String(MaxName)
		m.Counters = append(m.Counters, Counter{Name: name, Value: r.U64()})
	}
}

// RegMRReq registers Length bytes at Offset of the memfd sent with it
// (FileSize bytes, all of which the daemon maps) at address IOVA.
type RegMRReq struct {
	PD       uint32
	Access   uint32
	FileSize uint64
	Offset   uint64
	Length   uint64
	IOVA     uint64
}

func (m *RegMRReq) Encode(w *Writer) {
	w.U32(m.PD)
	w.U32(m.Access)
	w.U64(m.FileSize)
	w.U64(m.Offset)
	w.U64(m.Length)
	w.U64(m.IOVA)
}

func (m *RegMRReq) Decode(r *Reader) {
	m.PD = r.U32()
	m.Access = r.U32()
	m.FileSize = r.U64()
	m.Offset = r.U64()
	m.Length = r.U64()
	m.IOVA = r.U64()
}

// RegMRReply describes the registered MR.
type RegMRReply struct {
	MR         uint32
	LKey, RKey uint32
	Addr, Len  uint64
}

func (m *RegMRReply) Encode(w *Writer) {
	w.U32(m.MR)
	w.U32(m.LKey)
	w.U32(m.RKey)
	w.U64(m.Addr)
	w.U64(m.Len)
}
func (m *RegMRReply) Decode(r *Reader) {
	m.MR = r.U32()
	m.LKey = r.U32()
	m.RKey = r.U32()
	m.Addr = r.U64()
	m.Len = r.U64()
}

// CreateCQReply describes a CQ: its ring lies at Place of the session's
// arena; the chunk's memfd comes with the first reply that names the
// chunk (arena.go). It begins CREATE_CQ_ON's reply (CreateCQOnReply).
type CreateCQReply struct {
	CQ    uint32
	Ring  CQLayout
	Place RingPlace
}

func (m *CreateCQReply) Encode(w *Writer) {
	w.U32(m.CQ)
	m.Ring.Encode(w)
	m.Place.Encode(w)
}

func (m *CreateCQReply) Decode(r *Reader) {
	m.CQ = r.U32()
	m.Ring.Decode(r)
	m.Place.Decode(r)
}

// CreateSRQReq creates an SRQ.
type CreateSRQReq struct{ PD, MaxWR, MaxSGE uint32 }

func (m *CreateSRQReq) Encode(w *Writer) { w.U32(m.PD); w.U32(m.MaxWR); w.U32(m.MaxSGE) }
func (m *CreateSRQReq) Decode(r *Reader) { m.PD = r.U32(); m.MaxWR = r.U32(); m.MaxSGE = r.U32() }

// CreateSRQReply describes the SRQ: its ring lies at Place of the
// session's arena (the chunk's memfd comes with it as with
// CreateCQReply); the drainer is woken through the session doorbell.
type CreateSRQReply struct {
	SRQ   uint32
	Ring  RingLayout
	Place RingPlace
}

func (m *CreateSRQReply) Encode(w *Writer) {
	w.U32(m.SRQ)
	m.Ring.Encode(w)
	m.Place.Encode(w)
}

func (m *CreateSRQReply) Decode(r *Reader) {
	m.SRQ = r.U32()
	m.Ring.Decode(r)
	m.Place.Decode(r)
}

// CreateQPReq creates a QP; SRQ is 0 for none.
type CreateQPReq struct {
	PD, SendCQ, RecvCQ, SRQ uint32
	Type                    verbs.QPType
	SigAll                  bool
	Cap                     verbs.QPCap
}

func (m *CreateQPReq) Encode(w *Writer) {
	w.U32(m.PD)
	w.U32(m.SendCQ)
	w.U32(m.RecvCQ)
	w.U32(m.SRQ)
	w.U8(uint8(m.Type))
	w.Bool(m.SigAll)
	PutQPCap(w, &m.Cap)
}

func (m *CreateQPReq) Decode(r *Reader) {
	m.PD = r.U32()
	m.SendCQ = r.U32()
	m.RecvCQ = r.U32()
	m.SRQ = r.U32()
	m.Type = verbs.QPType(r.U8())
	m.SigAll = r.Bool()
	GetQPCap(r, &m.Cap)
}

// CreateQPReply describes the QP: its rings lie at Place of the
// session's arena (as CreateSRQReply's).
type CreateQPReply struct {
	QP, QPN uint32
	Cap     verbs.QPCap
	Ring    RingLayout
	Place   RingPlace
}

func (m *CreateQPReply) Encode(w *Writer) {
	w.U32(m.QP)
	w.U32(m.QPN)
	PutQPCap(w, &m.Cap)
	m.Ring.Encode(w)
	m.Place.Encode(w)
}

func (m *CreateQPReply) Decode(r *Reader) {
	m.QP = r.U32()
	m.QPN = r.U32()
	GetQPCap(r, &m.Cap)
	m.Ring.Decode(r)
	m.Place.Decode(r)
}

// ModifyQPReq modifies a QP.
type ModifyQPReq struct {
	QP   uint32
	Mask verbs.QPAttrMask
	Attr verbs.QPAttr
}

func (m *ModifyQPReq) Encode(w *Writer) { w.U32(m.QP); w.U32(uint32(m.Mask)); PutQPAttr(w, &m.Attr) }
func (m *ModifyQPReq) Decode(r *Reader) {
	m.QP = r.U32()
	m.Mask = verbs.QPAttrMask(r.U32())
	GetQPAttr(r, &m.Attr)
}

// QPStateReply holds a QP's state: the reply of OpModifyQP and OpQPState.
type QPStateReply struct{ State verbs.QPState }

func (m *QPStateReply) Encode(w *Writer) { w.U8(uint8(m.State)) }
func (m *QPStateReply) Decode(r *Reader) { m.State = verbs.QPState(r.U8()) }

// QueryQPReply holds a QP's attributes.
type QueryQPReply struct{ Attr verbs.QPAttr }

func (m *QueryQPReply) Encode(w *Writer) { PutQPAttr(w, &m.Attr) }
func (m *QueryQPReply) Decode(r *Reader) { GetQPAttr(r, &m.Attr) }

// CreateAHReq creates an address handle.
type CreateAHReq struct {
	PD uint32
	AV verbs.AddressVector
}

func (m *CreateAHReq) Encode(w *Writer) { w.U32(m.PD); PutAV(w, &m.AV) }
func (m *CreateAHReq) Decode(r *Reader) { m.PD = r.U32(); GetAV(r, &m.AV) }

// CreateAHReply describes the AH: its handle and its address vector as
// the NIC normalised it.
type CreateAHReply struct {
	AH uint32
	AV verbs.AddressVector
}

func (m *CreateAHReply) Encode(w *Writer) { w.U32(m.AH); PutAV(w, &m.AV) }
func (m *CreateAHReply) Decode(r *Reader) { m.AH = r.U32(); GetAV(r, &m.AV) }

// ObjectKind says what an event's handle names.
type ObjectKind uint8

// Object kinds of events.
const (
	ObjectNone ObjectKind = iota // a port or device event
	ObjectQP
	ObjectCQ
	ObjectSRQ
)

// Event is an asynchronous event.
type Event struct {
	Type   verbs.AsyncEvent
	Object ObjectKind
	Handle uint32
	Port   uint8
}

func (m *Event) Encode(w *Writer) {
	w.U8(uint8(m.Type))
	w.U8(uint8(m.Object))
	w.U32(m.Handle)
	w.U8(m.Port)
}
func (m *Event) Decode(r *Reader) {
	m.Type = verbs.AsyncEvent(r.U8())
	m.Object = ObjectKind(r.U8())
	if m.Object > ObjectSRQ {
		r.fail("event object kind %d", m.Object)
	}
	m.Handle = r.U32()
	m.Port = r.U8()
}

// Bodies makes the request and reply (or, for an event, the event) body
// of an op.
type Bodies struct {
	Request, Reply func() Message
}

var bodies = struct {
	sync.RWMutex
	m map[Op]Bodies
}{m: map[Op]Bodies{
	OpOpen:       {func() Message { return new(OpenReq) }, func() Message { return new(OpenReply) }},
	OpQueryPort:  {func() Message { return new(QueryPortReq) }, func() Message { return new(PortReply) }},
	OpQueryGID:   {func() Message { return new(QueryGIDReq) }, func() Message { return new(GID) }},
	OpGIDIndex:   {func() Message { return new(GID) }, func() Message { return new(Index) }},
	OpCounters:   {func() Message { return new(Empty) }, func() Message { return new(CountersReply) }},
	OpAllocPD:    {func() Message { return new(Empty) }, func() Message { return new(Handle) }},
	OpDeallocPD:  {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpRegMR:      {func() Message { return new(RegMRReq) }, func() Message { return new(RegMRReply) }},
	OpDeregMR:    {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpDestroyCQ:  {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpKickCQ:     {func() Message { return new(Handle) }, nil},
	OpCreateSRQ:  {func() Message { return new(CreateSRQReq) }, func() Message { return new(CreateSRQReply) }},
	OpDestroySRQ: {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpCreateQP:   {func() Message { return new(CreateQPReq) }, func() Message { return new(CreateQPReply) }},
	OpDestroyQP:  {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpModifyQP:   {func() Message { return new(ModifyQPReq) }, func() Message { return new(QPStateReply) }},
	OpQueryQP:    {func() Message { return new(Handle) }, func() Message { return new(QueryQPReply) }},
	OpQPState:    {func() Message { return new(Handle) }, func() Message { return new(QPStateReply) }},
	OpCreateAH:   {func() Message { return new(CreateAHReq) }, func() Message { return new(CreateAHReply) }},
	OpDestroyAH:  {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpArmCQ:      {func() Message { return new(Handle) }, func() Message { return new(Empty) }},
	OpEvent:      {func() Message { return new(Event) }, nil},
}}

// opDecl is an op declared in a file of its own: its number, name and
// bodies (registerOps).
type opDecl struct {
	op   Op
	name string
	b    Bodies
}

// registerOps names each op and registers its bodies.
func registerOps(ops []opDecl) {
	for _, o := range ops {
		NameOp(o.op, o.name)
		RegisterBodies(o.op, o.b)
	}
}

// RegisterBodies declares the bodies of an op defined in another file, so
// that generic code (the fuzz target, logs) can decode it. It panics if
// the op has bodies already.
func RegisterBodies(op Op, b Bodies) {
	bodies.Lock()
	defer bodies.Unlock()
	if _, ok := bodies.m[op]; ok {
		panic(fmt.Sprintf("rnicd proto: bodies of %v registered twice", op))
	}
	bodies.m[op] = b
}

// BodiesOf returns the bodies of op.
func BodiesOf(op Op) (Bodies, bool) {
	bodies.RLock()
	defer bodies.RUnlock()
	b, ok := bodies.m[op]
	return b, ok
}

// Ops returns every op with registered bodies.
func Ops() []Op {
	bodies.RLock()
	defer bodies.RUnlock()
	ops := make([]Op, 0, len(bodies.m))
	for op := range bodies.m {
		ops = append(ops, op)
	}
	return ops
}

// DecodeBody decodes the body of a message with header h: the request
// (or event) body for requests, notices and events, the reply body for an
// OK reply. An error reply's body is its message, which DecodeBody returns
// as an error.
func DecodeBody(h Header, body []byte) (Message, error) {
	b, ok := BodiesOf(h.Op)
	if !ok {
		return nil, fmt.Errorf("%w: unknown op %v", ErrMalformed, h.Op)
	}
	mk := b.Request
	if h.Kind == KindReply {
		if h.Status != StatusOK {
			r := NewReader(body)
			msg := r.String(MaxErrorLen)
			if err := r.Done(); err != nil {
				return nil, err
			}
			return nil, ErrorOf(h.Op, h.Status, msg)
		}
		mk = b.Reply
	}
	if mk == nil {
		return nil, fmt.Errorf("%w: %v has no %v", ErrMalformed, h.Op, h.Kind)
	}
	m := mk()
	r := NewReader(body)
	m.Decode(r)
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("%v %v: %w", h.Op, h.Kind, err)
	}
	return m, nil
}

// AppendMessage appends a whole message (header and body) to b.
func AppendMessage(b []byte, h Header, body Message) []byte {
	start := len(b)
	b = h.Append(b)
	w := Writer{b: b}
	if body != nil {
		body.Encode(&w)
	}
	b = w.b
	le.PutUint32(b[start+hdrBodyLen:], uint32(len(b)-start-HeaderLen))
	return b
}

// AppendError appends an error reply with status st and message msg
// (cut to MaxErrorLen) to b.
func AppendError(b []byte, op Op, seq uint32, st Status, msg string) []byte {
	if len(msg) > MaxErrorLen {
		msg = msg[:MaxErrorLen]
	}
	h := Header{Op: op, Kind: KindReply, Seq: seq, Status: st}
	start := len(b)
	b = h.Append(b)
	w := Writer{b: b}
	w.String(msg)
	b = w.b
	le.PutUint32(b[start+hdrBodyLen:], uint32(len(b)-start-HeaderLen))
	return b
}
