// Ops: what a control message asks for. Each concern owns a range of op
// numbers, so a new concern (a file of its own here, in the server and in
// the client) adds ops without renumbering anything:
//
//	0x0001–0x00ff  core verbs: device, PD, MR, CQ, SRQ, QP, AH (this file)
//	0x0100–0x01ff  the TCP/IP side channel through the daemon (ibv.Network)
//	0x0200–0x02ff  rdma_cm through the daemon (ibv.ConnManager)
//	0x0300–0x03ff  administration and statistics (rnic stat)
//	0x0400–0x04ff  host ports of TAP-mode NICs (hostport.go)
//	0x8000–0x80ff  core events, daemon → client
//	0x8100–0x81ff  side-channel events
//	0x8200–0x82ff  rdma_cm events
//
// Numbers once used are never reused for something else.

package proto

import (
	"fmt"
	"sync"
)

// Op is a control message's operation.
type Op uint16

// Op ranges.
const (
	OpRangeCore    Op = 0x0000
	OpRangeNetwork Op = 0x0100
	OpRangeCM      Op = 0x0200
	OpRangeAdmin   Op = 0x0300

	OpRangeCoreEvents    Op = 0x8000
	OpRangeNetworkEvents Op = 0x8100
	OpRangeCMEvents      Op = 0x8200
)

// Core ops.
const (
	OpOpen      Op = 0x0001 // open a device by name: first message of a connection
	OpQueryPort Op = 0x0002
	OpQueryGID  Op = 0x0003
	OpGIDIndex  Op = 0x0004
	OpCounters  Op = 0x0005

	OpAllocPD   Op = 0x0010
	OpDeallocPD Op = 0x0011
	OpRegMR     Op = 0x0012 // + the memfd
	OpDeregMR   Op = 0x0013
	// 0x0014 was CREATE_CQ, a CQ with an eventfd of its own: CQs are
	// made by OpCreateCQOn (chanevents.go).
	OpDestroyCQ  Op = 0x0015
	OpKickCQ     Op = 0x0016 // notice: the CQ's mover should look at its ring header (room made)
	OpCreateSRQ  Op = 0x0017 // reply + the ring chunk's memfd, the first time
	OpDestroySRQ Op = 0x0018
	OpCreateQP   Op = 0x0019 // reply + the ring chunk's memfd, the first time
	OpDestroyQP  Op = 0x001a
	OpModifyQP   Op = 0x001b
	OpQueryQP    Op = 0x001c
	OpQPState    Op = 0x001d
	OpCreateAH   Op = 0x001e
	OpDestroyAH  Op = 0x001f
	OpArmCQ      Op = 0x0020 // the client's arm word changed kind: the mover re-arms before the reply

	// OpEvent is an asynchronous event (ibv_get_async_event).
	OpEvent Op = 0x8001
)

// IsEvent reports whether op is in an event range.
func (op Op) IsEvent() bool { return op&0x8000 != 0 }

var opNames = struct {
	sync.RWMutex
	m map[Op]string
}{m: map[Op]string{
	OpOpen: "OPEN", OpQueryPort: "QUERY_PORT", OpQueryGID: "QUERY_GID", OpGIDIndex: "GID_INDEX",
	OpCounters: "COUNTERS", OpAllocPD: "ALLOC_PD", OpDeallocPD: "DEALLOC_PD", OpRegMR: "REG_MR",
	OpDeregMR: "DEREG_MR", OpDestroyCQ: "DESTROY_CQ", OpKickCQ: "KICK_CQ",
	OpCreateSRQ: "CREATE_SRQ", OpDestroySRQ: "DESTROY_SRQ", OpCreateQP: "CREATE_QP",
	OpDestroyQP: "DESTROY_QP", OpModifyQP: "MODIFY_QP", OpQueryQP: "QUERY_QP", OpQPState: "QP_STATE",
	OpCreateAH: "CREATE_AH", OpDestroyAH: "DESTROY_AH", OpArmCQ: "ARM_CQ", OpEvent: "EVENT",
}}

// NameOp names an op defined in another file (for String and logs); it
// panics if the number is taken, which is a programming error.
func NameOp(op Op, name string) {
	opNames.Lock()
	defer opNames.Unlock()
	if old, ok := opNames.m[op]; ok {
		panic(fmt.Sprintf("rnicd proto: op %#04x named %s and %s", uint16(op), old, name))
	}
	opNames.m[op] = name
}

func (op Op) String() string {
	opNames.RLock()
	n, ok := opNames.m[op]
	opNames.RUnlock()
	if ok {
		return n
	}
	return fmt.Sprintf("Op(%#04x)", uint16(op))
}
