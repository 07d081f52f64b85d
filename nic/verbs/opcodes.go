// Which send WR opcodes each transport service carries, for the verbs
// layers that check WRs before they reach an engine (nic, and rnicd's
// client, which checks what nic checks so that only a broken client sends
// the daemon a WR nic refuses).

package verbs

// OpcodeSet is a set of send WR opcodes.
type OpcodeSet uint32

// Opcodes returns the set of o.
func Opcodes(o ...WROpcode) OpcodeSet {
	var s OpcodeSet
	for _, x := range o {
		s |= 1 << x
	}
	return s
}

// Has reports whether o is in s.
func (s OpcodeSet) Has(o WROpcode) bool { return o < 32 && s&(1<<o) != 0 }

// The operations each transport service supports (IBTA Vol 1 chapter 9,
// the BTH opcode table): UC has no READ, atomics or SEND with Invalidate
// (UC opcodes 0x36/0x37 are reserved); UD has only SEND, with or without
// immediate. Memory-window binds and local invalidation are RC and UC
// operations (IBTA 10.6.7: a window is bound through an RC or UC QP).
var (
	RCOpcodes = Opcodes(WRSend, WRSendWithImm, WRSendWithInv, WRRDMAWrite,
		WRRDMAWriteWithImm, WRRDMARead, WRAtomicCmpSwp, WRAtomicFetchAdd, WRLocalInv, WRBindMW,
		WRFlush, WRAtomicWrite)
	UCOpcodes = Opcodes(WRSend, WRSendWithImm, WRRDMAWrite, WRRDMAWriteWithImm, WRLocalInv, WRBindMW)
	UDOpcodes = Opcodes(WRSend, WRSendWithImm)

	// UnsupportedOpcodes are valid verbs opcodes rnic does not offer: none
	// now (a device may still refuse some: an iWARP one has no FLUSH or
	// ATOMIC WRITE).
	UnsupportedOpcodes = Opcodes()

	// LocalOpcodes act on the local NIC's keys and send nothing: the send
	// queue executes them in order, after every earlier WR completed.
	LocalOpcodes = Opcodes(WRLocalInv, WRBindMW)

	AtomicOpcodes = Opcodes(WRAtomicCmpSwp, WRAtomicFetchAdd)
	// IBTA15Opcodes are IBTA 1.5's RC operations, FLUSH and ATOMIC WRITE:
	// a device offers them only with the matching DeviceCapEx flags (the
	// RoCE device does; iWARP's RFCs have neither).
	IBTA15Opcodes = Opcodes(WRFlush, WRAtomicWrite)
	// InlineOpcodes may carry SendInline data.
	InlineOpcodes = Opcodes(WRSend, WRSendWithImm, WRSendWithInv, WRRDMAWrite, WRRDMAWriteWithImm)
)

// OpcodesOf returns the opcodes a QP of type t may post.
func OpcodesOf(t QPType) OpcodeSet {
	switch t {
	case QPTypeRC:
		return RCOpcodes
	case QPTypeUC:
		return UCOpcodes
	}
	return UDOpcodes
}

// KnownSendFlags are the send flags verbs defines; any other bit in a WR's
// flags is an error.
const KnownSendFlags = SendFence | SendSignaled | SendSolicited | SendInline
