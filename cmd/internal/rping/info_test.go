package rping

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// The client's read advert of testdata/captures/siw-rping.pcap frame 10
// (the SEND's payload after the 18-byte untagged DDP/RDMAP header).
const captureAdvert = "00005590b240b43068637c0000000040"

func TestInfoFromCapture(t *testing.T) {
	b, _ := hex.DecodeString(captureAdvert)
	i, err := ParseInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Addr: 0x00005590b240b430, RKey: 0x68637c00, Size: 64}
	if i != want {
		t.Fatalf("ParseInfo = %+v, want %+v", i, want)
	}
	var out [InfoLen]byte
	i.Put(out[:])
	if !bytes.Equal(out[:], b) {
		t.Fatalf("Put = %x, want %x", out, b)
	}
}

func TestInfoBogus(t *testing.T) {
	for _, n := range []int{0, 1, 15, 17, 64} {
		if _, err := ParseInfo(make([]byte, n)); !errors.Is(err, ErrBogus) {
			t.Errorf("ParseInfo(%d bytes) = %v, want ErrBogus", n, err)
		}
	}
}

func FuzzParseInfo(f *testing.F) {
	b, _ := hex.DecodeString(captureAdvert)
	f.Add(b)
	f.Add([]byte{})
	f.Add(make([]byte, 15))
	f.Fuzz(func(t *testing.T, b []byte) {
		i, err := ParseInfo(b)
		if err != nil {
			if len(b) == InfoLen {
				t.Fatalf("16 bytes refused: %v", err)
			}
			return
		}
		var out [InfoLen]byte
		i.Put(out[:])
		if !bytes.Equal(out[:], b) {
			t.Fatalf("round trip %x -> %x", b, out)
		}
	})
}

func TestInfoParseAllocs(t *testing.T) {
	b, _ := hex.DecodeString(captureAdvert)
	if n := testing.AllocsPerRun(100, func() { ParseInfo(b) }); n != 0 {
		t.Fatalf("ParseInfo allocates %v times", n)
	}
}
