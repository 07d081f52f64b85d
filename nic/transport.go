// What a device's QPs speak on the wire, as libibverbs tells it to a
// program (struct ibv_device's transport_type and node_type): a RoCEv2
// device is an IB channel adapter, an iWARP device an RNIC. Programs that
// must act differently (an iWARP QP connects only through rdma_cm, carries
// no UD or atomics without RFC 7306) look here, as on real hardware.

package nic

import "fmt"

// Transport is a device's transport (enum ibv_transport_type: the values
// are libibverbs').
type Transport uint8

// Transports.
const (
	// TransportIB is InfiniBand transport; RoCEv2 carries it over UDP.
	TransportIB Transport = 0 // IBV_TRANSPORT_IB
	// TransportIWARP is RDMAP/DDP/MPA over TCP.
	TransportIWARP Transport = 1 // IBV_TRANSPORT_IWARP
)

func (t Transport) String() string {
	switch t {
	case TransportIB:
		return "InfiniBand"
	case TransportIWARP:
		return "iWARP"
	}
	return fmt.Sprintf("transport(%d)", uint8(t))
}

// NodeType is a device's node type (enum ibv_node_type: the values are
// libibverbs').
type NodeType uint8

// Node types rnic's devices have.
const (
	NodeCA   NodeType = 1 // IBV_NODE_CA: an IB (here RoCE) channel adapter
	NodeRNIC NodeType = 4 // IBV_NODE_RNIC: an iWARP RDMA NIC
)

func (n NodeType) String() string {
	switch n {
	case NodeCA:
		return "CA"
	case NodeRNIC:
		return "RNIC"
	}
	return fmt.Sprintf("node(%d)", uint8(n))
}

// NodeType is the node type of a device with transport t.
func (t Transport) NodeType() NodeType {
	if t == TransportIWARP {
		return NodeRNIC
	}
	return NodeCA
}
