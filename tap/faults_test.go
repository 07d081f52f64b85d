package tap

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
)

// ethFrame is a 64-byte frame of ethertype et whose byte 20 is id.
func ethFrame(et uint16, id byte) []byte {
	f := make([]byte, 64)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	binary.BigEndian.PutUint16(f[12:14], et)
	f[20] = id
	return f
}

// readIDs reads frames from io until none comes for a while.
func readIDs(t *testing.T, io FrameIO, want int) []byte {
	t.Helper()
	got := make(chan byte, 64)
	go func() {
		b := make([]byte, 2048)
		for {
			n, err := io.ReadFrame(b)
			if err != nil {
				close(got)
				return
			}
			if n > 20 {
				got <- b[20]
			}
		}
	}()
	var ids []byte
	for len(ids) < want {
		select {
		case id := <-got:
			ids = append(ids, id)
		case <-time.After(2 * time.Second):
			return ids
		}
	}
	return ids
}

// TestFaultIO: IP frames take the faults of their direction and are
// counted; ARP passes untouched both ways; Close ends ReadFrame.
func TestFaultIO(t *testing.T) {
	host, wire := NewFramePipe()
	f, err := NewFaultIO(host, transport.FaultConfig{Seed: 1, AtoB: transport.Faults{Loss: 1},
		BtoA: transport.Faults{Dup: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, et := range []uint16{0x0800, 0x0806, 0x86DD, 0x0806} {
		if err := f.WriteFrame(ethFrame(et, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	if ids := readIDs(t, wire, 2); string(ids) != "\x01\x03" {
		t.Errorf("sent through total loss: got frames %v, want the two ARP frames 1 and 3", ids)
	}
	if st := f.Stats(transport.AtoB); st.Sent != 2 || st.Dropped != 2 {
		t.Errorf("tx counters %+v, want 2 IP frames sent and lost", st)
	}

	for i, et := range []uint16{0x0800, 0x0806} {
		if err := wire.WriteFrame(ethFrame(et, byte(10+i))); err != nil {
			t.Fatal(err)
		}
	}
	ids := readIDs(t, f, 3)
	if len(ids) != 3 || ids[0] == ids[1] && ids[1] == ids[2] {
		t.Errorf("received under total duplication: %v, want IPv4 frame 10 twice and ARP 11 once", ids)
	}
	if st := f.Stats(transport.BtoA); st.Sent != 1 || st.Duplicated != 1 {
		t.Errorf("rx counters %+v, want 1 IP frame received and duplicated", st)
	}

	f.Close()
	if _, err := f.ReadFrame(make([]byte, 64)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadFrame after Close: %v", err)
	}
}
