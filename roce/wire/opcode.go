package wire

// The BTH opcode table, IBTA Vol 1 §9.2.1 Table 38, with the FLUSH (0x1C)
// and ATOMIC WRITE (0x1D) opcodes of IBTA Vol 1 1.5 and the RoCEv2
// Congestion Notification Packet (0x81) of Annex A17.9.
//
// Bits 7:5 of an opcode select the transport (RC 000, UC 001, RD 010, UD 011,
// CNP 100, XRC 101), bits 4:0 the operation. For every valid opcode the table
// says which extension headers follow the BTH, in which order, whether a
// payload follows, where the packet sits in its message, and whether it is a
// request or a response. RD and XRC are not supported by rnic (nor by rxe)
// and decode as invalid.

// Opcode is a BTH opcode.
type Opcode uint8

// Transport is the service type encoded in an opcode's top three bits.
type Transport uint8

// Transports.
const (
	TransportRC  Transport = 0
	TransportUC  Transport = 1
	TransportRD  Transport = 2
	TransportUD  Transport = 3
	TransportCNP Transport = 4
	TransportXRC Transport = 5
)

func (t Transport) String() string {
	return [...]string{"RC", "UC", "RD", "UD", "CNP", "XRC", "MFR6", "MFR7"}[t&7]
}

// Position is where a packet sits within its message.
type Position uint8

// Positions.
const (
	PosNone   Position = iota // not part of a multi-packet message (ACK, READ request, CNP)
	PosFirst                  // First
	PosMiddle                 // Middle
	PosLast                   // Last
	PosOnly                   // Only
)

// Kind is the operation an opcode belongs to.
type Kind uint8

// Kinds.
const (
	KindInvalid Kind = iota
	KindSend
	KindWrite
	KindReadRequest
	KindReadResponse
	KindAck
	KindAtomicAck
	KindCmpSwap
	KindFetchAdd
	KindFlush
	KindAtomicWrite
	KindCNP
)

// Hdr names an extension header.
type Hdr uint8

// Extension headers, in no particular order.
const (
	HdrRETH Hdr = iota
	HdrAETH
	HdrAtomicETH
	HdrAtomicAckETH
	HdrImmDt
	HdrIETH
	HdrDETH
	HdrFETH
	HdrCNPPad // the 16 reserved bytes of a CNP
	numHdrs
)

var hdrLens = [numHdrs]uint8{
	HdrRETH: RETHLen, HdrAETH: AETHLen, HdrAtomicETH: AtomicETHLen, HdrAtomicAckETH: AtomicAckETHLen,
	HdrImmDt: ImmDtLen, HdrIETH: IETHLen, HdrDETH: DETHLen, HdrFETH: FETHLen, HdrCNPPad: 16,
}

var hdrNames = [numHdrs]string{"RETH", "AETH", "AtomicETH", "AtomicAckETH", "ImmDt", "IETH", "DETH", "FETH", "CNP"}

func (h Hdr) String() string { return hdrNames[h] }

// Len is the header's size in bytes.
func (h Hdr) Len() int { return int(hdrLens[h]) }

// OpInfo describes an opcode.
type OpInfo struct {
	Name      string // as IBTA and Wireshark name it, e.g. "RC SEND Only"
	Valid     bool
	Transport Transport
	Kind      Kind
	Pos       Position
	Hdrs      []Hdr // extension headers after the BTH, in wire order
	HdrLen    int   // their total length
	Payload   bool  // a payload follows the headers
	Imm       bool  // carries ImmDt
	Inv       bool  // carries IETH (SEND with Invalidate)
	Response  bool  // sent by a responder (read response, ACK, atomic ACK)
	// AckRequired is true for RC requests: the responder answers them with
	// an ACK, a NAK or a response (explicitly or coalesced).
	AckRequired bool
	// FixedPayload, when non-zero, is the only valid payload length
	// (ATOMIC WRITE carries exactly one 8-byte word).
	FixedPayload int
	off          [numHdrs]int8 // offset after the BTH, -1 if absent
}

// Offset returns where h starts after the BTH, or -1 if the opcode lacks it.
func (o *OpInfo) Offset(h Hdr) int { return int(o.off[h]) }

// Has reports whether the opcode carries h.
func (o *OpInfo) Has(h Hdr) bool { return o.off[h] >= 0 }

// First reports whether the packet starts a message (First or Only).
func (o *OpInfo) First() bool { return o.Pos == PosFirst || o.Pos == PosOnly }

// Last reports whether the packet ends a message (Last or Only).
func (o *OpInfo) Last() bool { return o.Pos == PosLast || o.Pos == PosOnly }

// Opcodes by name. RC is 0x00-0x1D, UC 0x20-0x2B, UD 0x64-0x65, CNP 0x81.
const (
	RCSendFirst          Opcode = 0x00
	RCSendMiddle         Opcode = 0x01
	RCSendLast           Opcode = 0x02
	RCSendLastImm        Opcode = 0x03
	RCSendOnly           Opcode = 0x04
	RCSendOnlyImm        Opcode = 0x05
	RCWriteFirst         Opcode = 0x06
	RCWriteMiddle        Opcode = 0x07
	RCWriteLast          Opcode = 0x08
	RCWriteLastImm       Opcode = 0x09
	RCWriteOnly          Opcode = 0x0A
	RCWriteOnlyImm       Opcode = 0x0B
	RCReadRequest        Opcode = 0x0C
	RCReadResponseFirst  Opcode = 0x0D
	RCReadResponseMiddle Opcode = 0x0E
	RCReadResponseLast   Opcode = 0x0F
	RCReadResponseOnly   Opcode = 0x10
	RCAck                Opcode = 0x11
	RCAtomicAck          Opcode = 0x12
	RCCmpSwap            Opcode = 0x13
	RCFetchAdd           Opcode = 0x14
	RCSendLastInv        Opcode = 0x16
	RCSendOnlyInv        Opcode = 0x17
	RCFlush              Opcode = 0x1C
	RCAtomicWrite        Opcode = 0x1D
	UCSendFirst          Opcode = 0x20
	UCSendMiddle         Opcode = 0x21
	UCSendLast           Opcode = 0x22
	UCSendLastImm        Opcode = 0x23
	UCSendOnly           Opcode = 0x24
	UCSendOnlyImm        Opcode = 0x25
	UCWriteFirst         Opcode = 0x26
	UCWriteMiddle        Opcode = 0x27
	UCWriteLast          Opcode = 0x28
	UCWriteLastImm       Opcode = 0x29
	UCWriteOnly          Opcode = 0x2A
	UCWriteOnlyImm       Opcode = 0x2B
	UDSendOnly           Opcode = 0x64
	UDSendOnlyImm        Opcode = 0x65
	CNP                  Opcode = 0x81
)

type opDef struct {
	op      Opcode
	name    string
	kind    Kind
	pos     Position
	payload bool
	hdrs    []Hdr
}

// opDefs is the source of opTable. Per-transport names are prefixed below.
var opDefs = []opDef{
	{RCSendFirst, "SEND First", KindSend, PosFirst, true, nil},
	{RCSendMiddle, "SEND Middle", KindSend, PosMiddle, true, nil},
	{RCSendLast, "SEND Last", KindSend, PosLast, true, nil},
	{RCSendLastImm, "SEND Last with Immediate", KindSend, PosLast, true, []Hdr{HdrImmDt}},
	{RCSendOnly, "SEND Only", KindSend, PosOnly, true, nil},
	{RCSendOnlyImm, "SEND Only with Immediate", KindSend, PosOnly, true, []Hdr{HdrImmDt}},
	{RCWriteFirst, "RDMA WRITE First", KindWrite, PosFirst, true, []Hdr{HdrRETH}},
	{RCWriteMiddle, "RDMA WRITE Middle", KindWrite, PosMiddle, true, nil},
	{RCWriteLast, "RDMA WRITE Last", KindWrite, PosLast, true, nil},
	{RCWriteLastImm, "RDMA WRITE Last with Immediate", KindWrite, PosLast, true, []Hdr{HdrImmDt}},
	{RCWriteOnly, "RDMA WRITE Only", KindWrite, PosOnly, true, []Hdr{HdrRETH}},
	{RCWriteOnlyImm, "RDMA WRITE Only with Immediate", KindWrite, PosOnly, true, []Hdr{HdrRETH, HdrImmDt}},
	{RCReadRequest, "RDMA READ Request", KindReadRequest, PosNone, false, []Hdr{HdrRETH}},
	{RCReadResponseFirst, "RDMA READ Response First", KindReadResponse, PosFirst, true, []Hdr{HdrAETH}},
	{RCReadResponseMiddle, "RDMA READ Response Middle", KindReadResponse, PosMiddle, true, nil},
	{RCReadResponseLast, "RDMA READ Response Last", KindReadResponse, PosLast, true, []Hdr{HdrAETH}},
	{RCReadResponseOnly, "RDMA READ Response Only", KindReadResponse, PosOnly, true, []Hdr{HdrAETH}},
	{RCAck, "Acknowledge", KindAck, PosNone, false, []Hdr{HdrAETH}},
	{RCAtomicAck, "ATOMIC Acknowledge", KindAtomicAck, PosNone, false, []Hdr{HdrAETH, HdrAtomicAckETH}},
	{RCCmpSwap, "CmpSwap", KindCmpSwap, PosNone, false, []Hdr{HdrAtomicETH}},
	{RCFetchAdd, "FetchAdd", KindFetchAdd, PosNone, false, []Hdr{HdrAtomicETH}},
	{RCSendLastInv, "SEND Last with Invalidate", KindSend, PosLast, true, []Hdr{HdrIETH}},
	{RCSendOnlyInv, "SEND Only with Invalidate", KindSend, PosOnly, true, []Hdr{HdrIETH}},
	{RCFlush, "FLUSH", KindFlush, PosNone, false, []Hdr{HdrFETH, HdrRETH}},
	{RCAtomicWrite, "ATOMIC WRITE", KindAtomicWrite, PosNone, true, []Hdr{HdrRETH}},
	{UDSendOnly, "SEND Only", KindSend, PosOnly, true, []Hdr{HdrDETH}},
	{UDSendOnlyImm, "SEND Only with Immediate", KindSend, PosOnly, true, []Hdr{HdrDETH, HdrImmDt}},
	{CNP, "Congestion Notification", KindCNP, PosNone, false, []Hdr{HdrCNPPad}},
}

var opTable [256]OpInfo

func init() {
	for i := range opTable {
		opTable[i].Name = "Unknown"
		for h := range opTable[i].off {
			opTable[i].off[h] = -1
		}
	}
	add := func(op Opcode, d opDef) {
		o := &opTable[op]
		o.Valid = true
		o.Transport = Transport(op >> 5)
		o.Name = o.Transport.String() + " " + d.name
		o.Kind, o.Pos, o.Payload, o.Hdrs = d.kind, d.pos, d.payload, d.hdrs
		for _, h := range d.hdrs {
			o.off[h] = int8(o.HdrLen)
			o.HdrLen += h.Len()
		}
		o.Imm = o.Has(HdrImmDt)
		o.Inv = o.Has(HdrIETH)
		o.Response = d.kind == KindReadResponse || d.kind == KindAck || d.kind == KindAtomicAck
		o.AckRequired = o.Transport == TransportRC && !o.Response
		if d.kind == KindAtomicWrite {
			o.FixedPayload = 8
		}
	}
	for _, d := range opDefs {
		add(d.op, d)
		// UC carries the SEND and RDMA WRITE opcodes of RC, 0x20 higher.
		if d.op <= RCWriteOnlyImm {
			add(d.op|0x20, d)
		}
	}
}

// Info returns the opcode's table entry. It never returns nil; check Valid.
func (o Opcode) Info() *OpInfo { return &opTable[o] }

// Valid reports whether rnic knows the opcode.
func (o Opcode) Valid() bool { return opTable[o].Valid }

func (o Opcode) String() string { return opTable[o].Name }

// Transport returns the service type of the opcode.
func (o Opcode) Transport() Transport { return Transport(o >> 5) }
