package tap

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/transport/pcap"
)

// TestDivert: a diverter sees frames from the wire before the host stack
// and takes the ones it wants (counted as received, never answered); the
// rest reach the stack as before; removed, it sees nothing. WriteWire puts
// a frame on the wire unchanged and refuses what the wire cannot carry.
func TestDivert(t *testing.T) {
	h, w := newTestHost(t, false)
	var seen, taken atomic.Int32
	h.SetDivert(func(f []byte, v VnetHdr) bool {
		seen.Add(1)
		if v != (VnetHdr{}) {
			t.Errorf("a plain wire's frame came with %+v", v)
		}
		if len(f) > 20 && bytes.Contains(f, []byte("divert me")) {
			taken.Add(1)
			return false
		}
		return true
	})
	before := h.Counters()
	// To a UDP port that is not RoCE's: the host would answer port
	// unreachable, but the diverter takes it first.
	w.send(udpFrame4(t, hostMAC, host4, 9999, []byte("divert me")))
	w.barrier() // an echo request the diverter lets through: the reply is the next frame
	after := h.Counters()
	if taken.Load() != 1 || seen.Load() != 2 {
		t.Errorf("diverter saw %d frames and took %d, want 2 and 1", seen.Load(), taken.Load())
	}
	if after.RxFrames-before.RxFrames != 2 || after.PortUnreachableTx != before.PortUnreachableTx {
		t.Errorf("counters before %+v after %+v: want both frames received, no port unreachable", before, after)
	}

	h.SetDivert(nil)
	w.send(udpFrame4(t, hostMAC, host4, 9999, []byte("divert me")))
	w.drainUntilEcho()
	if seen.Load() != 2 || h.Counters().PortUnreachableTx != before.PortUnreachableTx+1 {
		t.Errorf("without the diverter: it saw %d frames, port unreachables %d", seen.Load(), h.Counters().PortUnreachableTx)
	}

	f := udpFrame4(t, peerMAC, peer4, 7, []byte("from the host port"))
	f2 := append([]byte(nil), f...)
	if err := h.WriteWire(f, VnetHdr{}); err != nil {
		t.Fatal(err)
	}
	if got := w.next(); !bytes.Equal(got[:len(f2)], f2) {
		t.Errorf("WriteWire changed the frame:\n%x\n%x", got, f2)
	}
	if err := h.WriteWire(make([]byte, 1600), VnetHdr{}); !errors.Is(err, ErrFrameTooBig) {
		t.Errorf("a frame over the MTU: %v", err)
	}
	if err := h.WriteWire(f, VnetHdr{GSOType: vnetGSOTCPv4, GSOSize: 1000, HdrLen: 54}); err == nil {
		t.Error("a super-segment on a plain wire was sent")
	}
	if err := h.WriteWire([]byte{1, 2}, VnetHdr{}); !errors.Is(err, ErrBadFrame) {
		t.Errorf("a runt: %v", err)
	}
}

// TestDivertCapturesBeforeTheAnswer: a frame the diverter forwards is in
// the capture before anything sent in answer to it. A host port's kernel
// may answer at once (its ACK of a FIN, say), from inside the diverter as
// here; recorded after the diverter returned, the frame would follow its
// answer, and Wireshark would report a segment ACKed before it was seen.
func TestDivertCapturesBeforeTheAnswer(t *testing.T) {
	var capture bytes.Buffer
	pw, err := pcap.NewWriter(&capture)
	if err != nil {
		t.Fatal(err)
	}
	h, w := newTestHost(t, false, func(c *HostConfig) { c.Pcap = pw })
	answer := udpFrame4(t, peerMAC, peer4, 7, []byte("the answer"))
	h.SetDivert(func(f []byte, v VnetHdr) bool {
		if !bytes.Contains(f, []byte("the question")) {
			return true
		}
		if err := h.WriteWire(append([]byte(nil), answer...), VnetHdr{}); err != nil {
			t.Error(err)
		}
		return false
	})
	w.send(udpFrame4(t, hostMAC, host4, 9999, []byte("the question")))
	w.next() // the answer reached the wire
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
	frames, err := pcap.ReadFrom(&capture)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, f := range frames {
		switch {
		case bytes.Contains(f.Data, []byte("the question")):
			order = append(order, "question")
		case bytes.Contains(f.Data, []byte("the answer")):
			order = append(order, "answer")
		}
	}
	if len(order) != 2 || order[0] != "question" {
		t.Errorf("capture order %v, want [question answer]", order)
	}
}
