// Test helpers: endpoint pairs on loopback and RoCEv2 frames built with
// roce/wire, so that the tests check the link against the real encoder and
// decoder (the ICRC in particular).
//
// Tests use only loopback. Each test takes its own IPv4 address pair in
// 127.77.0.0/16, so tests of this package and of others that run at the
// same time never compete for an address and port; IPv6 loopback has only
// ::1, so IPv6 pairs take two ports there.

package udp

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/wire"
)

// pairSeq numbers the IPv4 address pairs handed out to tests.
var pairSeq atomic.Uint32

// openPair opens two endpoints that can talk: on fresh 127.77.x.y
// addresses at the RoCEv2 port for IPv4, on ::1 with two ports for IPv6.
// Ports in use are skipped.
func openPair(t testing.TB, v6 bool, tweak func(*Config)) (a, b *Endpoint) {
	t.Helper()
	for try := 0; try < 50; try++ {
		var ca, cb Config
		if v6 {
			p := uint16(4791 + 2*try)
			ca = Config{Addr: netip.IPv6Loopback(), Port: p}
			cb = Config{Addr: netip.IPv6Loopback(), Port: p + 1}
		} else {
			n := pairSeq.Add(1)
			ca = Config{Addr: netip.AddrFrom4([4]byte{127, 77, byte(n >> 6), byte(n<<2) | 2})}
			cb = Config{Addr: netip.AddrFrom4([4]byte{127, 77, byte(n >> 6), byte(n<<2) | 3})}
			if try > 0 {
				ca.Port = uint16(14791 + try)
				cb.Port = ca.Port
			}
		}
		if tweak != nil {
			tweak(&ca)
			tweak(&cb)
		}
		var err error
		if a, err = Open(ca); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			t.Fatal(err)
		}
		if b, err = Open(cb); err != nil {
			a.Close()
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
	t.Fatal("no free address and port on loopback")
	return nil, nil
}

// frameOpts varies the frames roceFrame builds.
type frameOpts struct {
	srcPort  uint16
	tos, ttl uint8
	psn      uint32
	payload  []byte
}

// roceFrame builds an RC SEND-only frame from a to b, as the engine would:
// DF, ID 0, synthetic MACs, the destination port of b.
func roceFrame(a, b *Endpoint, o frameOpts) []byte {
	if o.srcPort == 0 {
		o.srcPort = 0xC123
	}
	if o.ttl == 0 {
		o.ttl = 64
	}
	e := wire.Encap{
		SrcMAC: a.MAC(), DstMAC: SyntheticMAC(b.Addr()),
		Src: a.Addr(), Dst: b.Addr(),
		TOS: o.tos, TTL: o.ttl, DF: true,
		SrcPort: o.srcPort, DstPort: b.Port(),
	}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0xFFFF, DestQP: 0x11, PSN: o.psn}}
	return wire.AppendFrame(nil, &e, &h, o.payload)
}

// collector gathers copies of the frames an endpoint receives.
type collector struct {
	ch chan []byte
}

func collect(ep *Endpoint, n int) *collector {
	c := &collector{ch: make(chan []byte, n)}
	ep.SetReceiver(func(f []byte) { c.ch <- append([]byte(nil), f...) })
	return c
}

func (c *collector) next(t testing.TB) []byte {
	t.Helper()
	select {
	case f := <-c.ch:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame arrived")
		return nil
	}
}

// decode decodes a received frame and checks its ICRC.
func decode(t testing.TB, frame []byte, port uint16) *wire.Frame {
	t.Helper()
	var f wire.Frame
	if err := f.Decode(frame, port); err != nil {
		t.Fatalf("received frame does not decode: %v\n% x", err, frame)
	}
	if !f.VerifyICRC() {
		t.Fatalf("received frame's ICRC does not verify\n% x", frame)
	}
	return &f
}
