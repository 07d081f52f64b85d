package perf

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// The client's QP of testdata/captures/logs/rxe-write-bw-4096.log: LID 0,
// QPN 0x14, PSN 0x147ede, RKey 0x544, VAddr 0x5583d975a000, GID
// ::ffff:10.77.0.12; out_reads 0x80 and SRQN 0, as perftest fills them.
var goldenKey = Key{OutReads: 0x80, QPN: 0x14, PSN: 0x147ede, RKey: 0x544, VAddr: 0x5583d975a000,
	GID: netip.MustParseAddr("::ffff:10.77.0.12").As16()}

const goldenKeyMsg = "0000:0080:000014:147ede:00000544:00005583d975a000:" +
	"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:0c:00000000:\x00"

func TestKeyGolden(t *testing.T) {
	if len(goldenKeyMsg) != KeyMsgSizeGID {
		t.Fatalf("golden message has %d bytes", len(goldenKeyMsg))
	}
	m := goldenKey.MarshalGID()
	if !bytes.Equal(m[:], []byte(goldenKeyMsg)) {
		t.Fatalf("marshalled\n%q\nwant\n%q", m[:], goldenKeyMsg)
	}
	k, err := ParseKey([]byte(goldenKeyMsg))
	if err != nil || k != goldenKey {
		t.Fatalf("parsed %+v, %v", k, err)
	}
	// Without GID: 59 bytes.
	k2 := Key{LID: 1, OutReads: 2, QPN: 0xabcdef, PSN: 0x123456, RKey: 0xdeadbeef, VAddr: 0x0123456789abcdef, SRQN: 7}
	m2 := k2.Marshal()
	const want = "0001:0002:abcdef:123456:deadbeef:0123456789abcdef:00000007\x00"
	if len(want) != KeyMsgSize || string(m2[:]) != want {
		t.Fatalf("marshalled %q, want %q", m2[:], want)
	}
	if got, err := ParseKey(m2[:]); err != nil || got != k2 {
		t.Fatalf("parsed %+v, %v", got, err)
	}
}

func TestKeyErrors(t *testing.T) {
	good := []byte(goldenKeyMsg)
	for name, mut := range map[string]func([]byte) []byte{
		"short":        func(b []byte) []byte { return b[:50] },
		"no colon":     func(b []byte) []byte { b[4] = '-'; return b },
		"not hex":      func(b []byte) []byte { b[10] = 'x'; return b },
		"bad GID":      func(b []byte) []byte { b[51] = 'z'; return b },
		"no final ':'": func(b []byte) []byte { b[106] = 'x'; return b },
		"empty":        func(b []byte) []byte { return nil },
	} {
		m := mut(append([]byte(nil), good...))
		if _, err := ParseKey(m); !errors.Is(err, ErrKeyMsg) {
			t.Errorf("%s: %v, want ErrKeyMsg", name, err)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add([]byte(goldenKeyMsg))
	m := Key{QPN: 1}.Marshal()
	f.Add(m[:])
	f.Fuzz(func(t *testing.T, msg []byte) {
		k, err := ParseKey(msg)
		if err != nil {
			return
		}
		// A parsed key re-parses to itself from its canonical form.
		var canon []byte
		if i := bytes.IndexByte(msg, 0); i >= 0 {
			msg = msg[:i]
		}
		if g := k.MarshalGID(); len(msg) == KeyMsgSizeGID-1 {
			canon = g[:]
		} else {
			m := k.Marshal()
			canon = m[:]
		}
		if k2, err := ParseKey(canon); err != nil || k2 != k {
			t.Fatalf("%q → %+v → %q → %+v, %v", msg, k, canon, k2, err)
		}
	})
}

func TestCHex(t *testing.T) {
	for _, c := range []struct {
		v     uint64
		width int
		want  string
	}{
		{0, 4, "0000"}, {0x14, 6, "0x0014"}, {0x147ede, 6, "0x147ede"}, {0x544, 8, "0x000544"},
		{0x5583d975a000, 16, "0x005583d975a000"}, {0x80, 4, "0x80"}, {0x38cfc, 6, "0x38cfc"},
	} {
		if got := cHex(c.v, c.width); got != c.want {
			t.Errorf("cHex(%#x, %d) = %q, want %q", c.v, c.width, got, c.want)
		}
	}
}
