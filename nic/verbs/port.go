// A port as ibv_query_port reports it: its logical and physical state, link
// layer and MTUs.

package verbs

import "fmt"

// PortAttr is what a device's QueryPort reports (struct ibv_port_attr, the fields that
// mean something on RoCE).
type PortAttr struct {
	State      PortState
	MaxMTU     MTU // largest path MTU the port supports at all: 4096
	ActiveMTU  MTU // largest path MTU the link allows: ≤ link MTU − 80
	GIDTblLen  int
	MaxMsgSize uint64
	PKeyTblLen int
	PhysState  uint8
	LinkLayer  LinkLayer
	LinkMTU    int // the Ethernet MTU the port was configured with
	// BadPKeyCntr and QKeyViolCntr count the packets the port dropped
	// for a P_Key that does not match its table and, on UD QPs, for a
	// Q_Key other than the QP's (IBTA 16-bit counters: they stop at
	// 0xFFFF, as rxe's do).
	BadPKeyCntr  uint32
	QKeyViolCntr uint32
}

// MaxPortCounter is where BadPKeyCntr and QKeyViolCntr stop.
const MaxPortCounter = 0xFFFF

// PortState is a port's logical state (enum ibv_port_state).
type PortState uint8

// Port states.
const (
	PortDown   PortState = 1
	PortInit   PortState = 2
	PortArmed  PortState = 3
	PortActive PortState = 4
)

// String names the state as iproute2's rdma link show does (DOWN, INIT,
// ARMED, ACTIVE).
func (s PortState) String() string {
	switch s {
	case PortDown:
		return "DOWN"
	case PortInit:
		return "INIT"
	case PortArmed:
		return "ARMED"
	case PortActive:
		return "ACTIVE"
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint8(s))
}

// LinkLayer is a port's link layer (IBV_LINK_LAYER_*).
type LinkLayer uint8

// Link layers.
const (
	LinkLayerInfiniBand LinkLayer = 1
	LinkLayerEthernet   LinkLayer = 2
)

// Physical port states (IBTA §14.2.5.6) a port reports.
const (
	PhysStateDisabled = 3 // the link is down (rxe's state without carrier)
	PhysStateLinkUp   = 5
)
