package wire

import "strconv"

// The RDMAP opcode table: RFC 5040 §4.2 (Table "RDMA Usage of DDP Fields")
// for opcodes 0-7 and RFC 7306 §4.2 for 8-11 (immediate data and atomics).
// Opcodes 12-15 are reserved.
//
// For every opcode the table says whether the message travels in tagged or
// untagged DDP segments, on which untagged queue, which RDMAP header follows
// the DDP header, whether a ULP payload follows, and whether RsvdULP carries
// an STag to invalidate.
//
//	op  message                       model     QN  RDMAP header        payload
//	 0  RDMA Write                    tagged    -   -                   yes
//	 1  RDMA Read Request             untagged  1   Read Request (28)   no
//	 2  RDMA Read Response            tagged    -   -                   yes
//	 3  Send                          untagged  0   -                   yes
//	 4  Send with Invalidate          untagged  0   -                   yes
//	 5  Send with SE                  untagged  0   -                   yes
//	 6  Send with SE and Invalidate   untagged  0   -                   yes
//	 7  Terminate                     untagged  2   Terminate (4+)      no
//	 8  Immediate Data                untagged  0   Immediate Data (8)  no
//	 9  Immediate Data with SE        untagged  0   Immediate Data (8)  no
//	10  Atomic Request                untagged  1   Atomic Request (52) no
//	11  Atomic Response               untagged  3   Atomic Response(12) no
//
// Atomic Requests share queue 1 with Read Requests; Atomic Responses get a
// queue of their own, 3 (RFC 7306 §4.2; urdma uses the same numbers).
// Immediate Data goes on the Send queue. Linux siw implements 0-7 only, and
// RFC 7306 §1.1 leaves discovering whether a peer knows 8-11 outside the
// protocol.

// Opcode is an RDMAP opcode (4 bits).
type Opcode uint8

// Opcodes.
const (
	OpWrite            Opcode = 0
	OpReadRequest      Opcode = 1
	OpReadResponse     Opcode = 2
	OpSend             Opcode = 3
	OpSendInvalidate   Opcode = 4
	OpSendSE           Opcode = 5
	OpSendSEInvalidate Opcode = 6
	OpTerminate        Opcode = 7
	OpImmediate        Opcode = 8
	OpImmediateSE      Opcode = 9
	OpAtomicRequest    Opcode = 10
	OpAtomicResponse   Opcode = 11
	numOpcodes                = 16
	firstReservedOp    Opcode = 12
)

// Untagged queue numbers (RFC 5040 §4.2, RFC 7306 §4.2).
const (
	QNSend           = 0 // Send variants and Immediate Data
	QNReadRequest    = 1 // RDMA Read Requests and Atomic Requests
	QNTerminate      = 2
	QNAtomicResponse = 3
)

// Body names the RDMAP header that follows the DDP header.
type Body uint8

// Bodies.
const (
	BodyNone Body = iota
	BodyReadRequest
	BodyTerminate
	BodyImmediate
	BodyAtomicRequest
	BodyAtomicResponse
)

var bodyNames = [...]string{"none", "Read Request", "Terminate", "Immediate Data", "Atomic Request", "Atomic Response"}

func (b Body) String() string {
	if int(b) < len(bodyNames) {
		return bodyNames[b]
	}
	return "body " + strconv.Itoa(int(b))
}

// bodyLens are the fixed sizes of the bodies; the Terminate's is variable
// (4 bytes at least) and checked by ParseTerminate.
var bodyLens = [...]int{
	BodyReadRequest:    ReadRequestLen,
	BodyTerminate:      0,
	BodyImmediate:      ImmediateLen,
	BodyAtomicRequest:  AtomicRequestLen,
	BodyAtomicResponse: AtomicResponseLen,
}

// OpInfo describes an opcode.
type OpInfo struct {
	Name       string // as RFC 5040 and RFC 7306 name the message
	Valid      bool
	Tagged     bool   // travels in tagged segments; untagged otherwise
	QN         uint32 // untagged queue number
	Body       Body   // RDMAP header after the DDP header
	BodyLen    int    // its size; 0 for none, minimum 4 for Terminate
	Payload    bool   // a ULP payload follows (Write, Read Response, Sends)
	Invalidate bool   // RsvdULP carries the STag to invalidate
	Solicited  bool   // Solicited Event
	Response   bool   // answers a request (Read Response, Atomic Response)
	RFC        int    // the RFC that defines it
}

var opTable [numOpcodes]OpInfo

func init() {
	def := func(op Opcode, name string, tagged bool, qn uint32, body Body, payload bool, rfc int) *OpInfo {
		o := &opTable[op]
		*o = OpInfo{Name: name, Valid: true, Tagged: tagged, QN: qn, Body: body, Payload: payload, RFC: rfc}
		o.BodyLen = bodyLens[body]
		if body == BodyTerminate {
			o.BodyLen = TermControlLen
		}
		return o
	}
	def(OpWrite, "RDMA Write", true, 0, BodyNone, true, 5040)
	def(OpReadRequest, "RDMA Read Request", false, QNReadRequest, BodyReadRequest, false, 5040)
	def(OpReadResponse, "RDMA Read Response", true, 0, BodyNone, true, 5040).Response = true
	def(OpSend, "Send", false, QNSend, BodyNone, true, 5040)
	def(OpSendInvalidate, "Send with Invalidate", false, QNSend, BodyNone, true, 5040).Invalidate = true
	def(OpSendSE, "Send with Solicited Event", false, QNSend, BodyNone, true, 5040).Solicited = true
	o := def(OpSendSEInvalidate, "Send with Solicited Event and Invalidate", false, QNSend, BodyNone, true, 5040)
	o.Invalidate, o.Solicited = true, true
	def(OpTerminate, "Terminate", false, QNTerminate, BodyTerminate, false, 5040)
	def(OpImmediate, "Immediate Data", false, QNSend, BodyImmediate, false, 7306)
	def(OpImmediateSE, "Immediate Data with Solicited Event", false, QNSend, BodyImmediate, false, 7306).Solicited = true
	def(OpAtomicRequest, "Atomic Request", false, QNReadRequest, BodyAtomicRequest, false, 7306)
	def(OpAtomicResponse, "Atomic Response", false, QNAtomicResponse, BodyAtomicResponse, false, 7306).Response = true
	for op := firstReservedOp; op < numOpcodes; op++ {
		opTable[op].Name = "Reserved " + strconv.Itoa(int(op))
	}
}

// Info returns the opcode's table entry. It never returns nil; check Valid.
func (o Opcode) Info() *OpInfo { return &opTable[o&rdmapOpMask] }

// Valid reports whether the opcode is defined.
func (o Opcode) Valid() bool { return o < numOpcodes && opTable[o].Valid }

func (o Opcode) String() string {
	if o >= numOpcodes {
		return "Opcode " + strconv.Itoa(int(o))
	}
	return opTable[o].Name
}
