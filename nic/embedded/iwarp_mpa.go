// What an iWARP connection settled beyond ibv's CMRequest and CMConn: the
// MPA fields (RFC 5044 §7.1, RFC 6581) and why a connection ended, for
// tools that narrate them (the demo) without reaching into the engine.

package embedded

import (
	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic/ibv"
)

// MPAParams are an MPA Request's or Reply's fields.
type MPAParams struct {
	Rev uint8
	// IRD and ORD are the peer's: the initiator's in a request, the
	// responder's in an established connection of the initiator.
	IRD, ORD   uint16
	CRC        bool   // CRCs asked for (request) or in use (connection)
	Markers    bool   // markers asked for (request) or sent (connection)
	PeerToPeer bool   // the initiator asked for an RTR
	RTR        string // the RTR settled: "write", "read", "send" or "none"
}

// TerminateError is why an iWARP connection ended with a Terminate
// (ConnErr's error, for errors.As).
type TerminateError = iwarp.TerminateError

// MPA returns the MPA fields of x, an ibv.CMRequest or ibv.CMConn of an
// iWARP NIC's ConnManager; false for any other.
func MPA(x any) (MPAParams, bool) {
	switch v := x.(type) {
	case *iwarpRequest:
		return requestMPA(v.r), true
	case *iwarpConn:
		return v.mpa, true
	}
	return MPAParams{}, false
}

// ConnErr is why an iWARP NIC's connection ended, once its Done is
// closed: nil for an orderly close by either side (and for a connection of
// another ConnManager), a *TerminateError after a Terminate.
func ConnErr(c ibv.CMConn) error {
	if cn, ok := c.(*iwarpConn); ok {
		select {
		case <-cn.done:
			return cn.err
		default:
		}
	}
	return nil
}

func requestMPA(r *iwarp.ConnRequest) MPAParams {
	return MPAParams{Rev: r.Rev, IRD: r.IRD, ORD: r.ORD, CRC: r.CRC, Markers: r.Markers, PeerToPeer: r.PeerToPeer}
}

func resultMPA(r iwarp.ConnectResult) MPAParams {
	return MPAParams{Rev: r.Rev, IRD: r.IRD, ORD: r.ORD, CRC: r.CRC, Markers: r.Markers, RTR: r.RTR}
}
