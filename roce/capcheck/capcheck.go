// Package capcheck checks that a capture reads causally: its timestamps
// never decrease, and no RoCEv2 response precedes the request it answers.
// A Wireshark user or a student reads cause and effect from the order of a
// capture; a capture point that records a frame after it has already
// crossed the port (so that the answer, recorded by a faster goroutine, comes
// first) breaks that, as does a timestamp taken outside the lock that orders
// the records. Tests run it over every capture rnic writes.
//
// The rules, for each RC response sent from B to A (reliable connections
// only; UC and UD have no responses):
//
//   - an ACK, an RNR NAK, a NAK other than a PSN sequence error, or an
//     atomic ACK with PSN p: a request from A to B whose PSNs cover p was
//     recorded earlier;
//   - a NAK for a PSN sequence error carries the expected PSN p, which the
//     responder never saw: a request from A to B at p or after it (within
//     half the PSN space) was recorded earlier;
//   - a READ response First or Only with PSN p: a READ request from A to B
//     with PSN p was recorded earlier; a Middle or Last one: a READ request
//     whose PSN range covers p (its length over the smallest path MTU, 256
//     bytes, bounds the range).
//
// Requests are told apart by the addresses of their two ends, not by QP
// (requests carry the responder's QPN, responses the requester's); with
// PSNs chosen at random per QP, as rnic's tools do, this confuses two QPs
// between the same addresses only by a 2^-24 chance per check.
package capcheck

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// Violation is one frame that breaks causality.
type Violation struct {
	Frame int // 1-based, as Wireshark numbers frames
	Why   string
}

func (v Violation) String() string { return fmt.Sprintf("frame %d: %s", v.Frame, v.Why) }

// psnRange is the PSNs a recorded request covers.
type psnRange struct {
	first uint32
	n     uint32
	read  bool
}

func (r psnRange) covers(p uint32) bool {
	d := wire.PSNDiff(p, r.first)
	return d >= 0 && uint32(d) < r.n
}

type dir struct{ src, dst netip.Addr }

// checker holds the requests recorded so far, per direction.
type checker struct {
	reqs map[dir][]psnRange
}

// Result is what Check found.
type Result struct {
	Requests, Responses int // RC requests and responses seen
	Violations          []Violation
}

// Check returns the frames of a capture that break causality. port is the
// RoCEv2 UDP port (0: 4791). Frames that are not RoCEv2 only have their
// timestamps checked.
func Check(frames []pcap.Frame, port uint16) Result {
	c := &checker{reqs: map[dir][]psnRange{}}
	var res Result
	out := &res.Violations
	for i, fr := range frames {
		if i > 0 && fr.Timestamp.Before(frames[i-1].Timestamp) {
			*out = append(*out, Violation{i + 1, fmt.Sprintf("timestamp %v before the previous frame's %v",
				fr.Timestamp.Format("15:04:05.000000000"), frames[i-1].Timestamp.Format("15:04:05.000000000"))})
		}
		var f wire.Frame
		if f.Decode(fr.Data, port) != nil || f.Packet.Info().Transport != wire.TransportRC {
			continue
		}
		if f.Packet.Info().Response {
			res.Responses++
		} else {
			res.Requests++
		}
		if why := c.frame(&f); why != "" {
			*out = append(*out, Violation{i + 1, why})
		}
	}
	return res
}

// frame records a request or checks a response; it returns why a response
// has no earlier request, or "".
func (c *checker) frame(f *wire.Frame) string {
	p := &f.Packet
	info := p.Info()
	psn := p.BTH().PSN()
	if !info.Response {
		r := psnRange{first: psn, n: 1}
		if info.Kind == wire.KindReadRequest {
			r.n, r.read = max(1, (p.RETH().DMALength()+255)/256), true
		}
		d := dir{f.SrcAddr(), f.DstAddr()}
		c.reqs[d] = append(c.reqs[d], r)
		return ""
	}
	reqs := c.reqs[dir{f.DstAddr(), f.SrcAddr()}]
	found := false
	switch {
	case info.Kind == wire.KindReadResponse && info.First():
		found = anyReq(reqs, func(r psnRange) bool { return r.read && r.first == psn })
	case info.Kind == wire.KindReadResponse:
		found = anyReq(reqs, func(r psnRange) bool { return r.read && r.covers(psn) })
	case info.Kind == wire.KindAck && p.AETH().Syndrome() == wire.NAKSyndrome(wire.NAKPSNSeqError):
		found = anyReq(reqs, func(r psnRange) bool { return wire.PSNDiff(wire.PSNAdd(r.first, int(r.n)-1), psn) >= 0 })
	default:
		found = anyReq(reqs, func(r psnRange) bool { return r.covers(psn) })
	}
	if found {
		return ""
	}
	return fmt.Sprintf("%s psn=%d from %v to %v answers no request recorded before it",
		info.Name, psn, f.SrcAddr(), f.DstAddr())
}

// anyReq reports whether a recorded request satisfies ok, newest first.
func anyReq(reqs []psnRange, ok func(psnRange) bool) bool {
	for i := len(reqs) - 1; i >= 0; i-- {
		if ok(reqs[i]) {
			return true
		}
	}
	return false
}
