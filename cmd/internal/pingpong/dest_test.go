package pingpong

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
)

// The client's message from testdata/captures/logs/rxe-rc-pingpong.log: LID
// 0, QPN 0x11, PSN 0x977ee4, GID ::ffff:10.77.0.12, as rc_pingpong writes
// it.
var goldenMsg = []byte("0000:000011:977ee4:00000000000000000000ffff0a4d000c\x00")

func TestDestGolden(t *testing.T) {
	if len(goldenMsg) != MsgSize {
		t.Fatalf("golden message has %d bytes, want %d", len(goldenMsg), MsgSize)
	}
	d, err := ParseDest(goldenMsg)
	if err != nil {
		t.Fatal(err)
	}
	want := Dest{QPN: 0x11, PSN: 0x977ee4, GID: netip.MustParseAddr("::ffff:10.77.0.12").As16()}
	if d != want {
		t.Fatalf("parsed %+v, want %+v", d, want)
	}
	if got := d.Marshal(); !bytes.Equal(got[:], goldenMsg) {
		t.Fatalf("marshalled %q, want %q", got[:], goldenMsg)
	}
	if got := describe(d); got != "LID 0x0000, QPN 0x000011, PSN 0x977ee4, GID ::ffff:10.77.0.12" {
		t.Errorf("described as %q", got)
	}
	// No GID (rc_pingpong without -g): 32 zeros, printed as "::".
	z := Dest{LID: 0xbeef, QPN: 0xffffff, PSN: 1}
	m := z.Marshal()
	if string(m[:]) != "beef:ffffff:000001:00000000000000000000000000000000\x00" {
		t.Errorf("marshalled %q", m[:])
	}
	if describe(z) != "LID 0xbeef, QPN 0xffffff, PSN 0x000001, GID ::" {
		t.Errorf("described as %q", describe(z))
	}
}

func TestParseDestErrors(t *testing.T) {
	for _, msg := range []string{
		"",
		"0000:000011:977ee4", // no GID
		"0000:000011:977ee4:00000000000000000000ffff0a4d00",        // short GID
		"0000:000011:977ee4:00000000000000000000ffff0a4d000c00",    // long GID
		"0000:1000000:977ee4:00000000000000000000ffff0a4d000c",     // QPN > 24 bits
		"10000:000011:977ee4:00000000000000000000ffff0a4d000c",     // LID > 16 bits
		"0000:00001g:977ee4:00000000000000000000ffff0a4d000c",      // not hex
		"0000:0x0011:977ee4:00000000000000000000ffff0a4d000c",      // prefix
		"0000::977ee4:00000000000000000000ffff0a4d000c",            // empty field
		"0000:000011:977ee4:0000000000000000000zffff0a4d000c",      // GID not hex
		"0000:000011:977ee4:00000000000000000000ffff0a4d000c:done", // extra field
	} {
		if _, err := ParseDest([]byte(msg)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseDest(%q) = %v, want ErrMalformed", msg, err)
		}
	}
	// Bytes after the NUL are ignored, as by C string functions.
	junk := append(append([]byte(nil), goldenMsg...), "junk"...)
	if _, err := ParseDest(junk); err != nil {
		t.Errorf("trailing bytes after the NUL: %v", err)
	}
}

func FuzzParseDest(f *testing.F) {
	f.Add(goldenMsg)
	f.Add([]byte("beef:ffffff:000001:00000000000000000000000000000000\x00"))
	f.Add([]byte("0:1:2:00000000000000000000ffff0a4d000c"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		d, err := ParseDest(msg)
		if err != nil {
			return
		}
		// Whatever parses re-parses to the same address from its canonical
		// form.
		m := d.Marshal()
		d2, err := ParseDest(m[:])
		if err != nil || d2 != d {
			t.Fatalf("%q parsed to %+v; its canonical form %q to %+v, %v", msg, d, m[:], d2, err)
		}
	})
}

// TestExchangeOrder checks the byte stream of the side channel: the client
// writes 52 bytes, the server answers 52 once it has connected, the client
// connects and writes "done\0".
func TestExchangeOrder(t *testing.T) {
	c, s := net.Pipe()
	client := Dest{QPN: 0x11, PSN: 0x977ee4, GID: netip.MustParseAddr("::ffff:10.77.0.12").As16()}
	server := Dest{QPN: 0x12, PSN: 0xe6faa3, GID: netip.MustParseAddr("::ffff:10.77.0.11").As16()}
	var order []string
	type res struct {
		d   Dest
		err error
	}
	done := make(chan res)
	go func() {
		d, err := ServerExchange(s, server, func(remote Dest) error {
			order = append(order, "server connects")
			return nil
		})
		done <- res{d, err}
	}()
	got, err := ClientExchange(c, client, func(remote Dest) error {
		order = append(order, "client connects")
		return nil
	})
	sr := <-done
	if err != nil || sr.err != nil {
		t.Fatalf("client %v, server %v", err, sr.err)
	}
	if got != server || sr.d != client {
		t.Fatalf("client got %+v, server got %+v", got, sr.d)
	}
	if len(order) != 2 || order[0] != "server connects" {
		t.Fatalf("order %q", order)
	}
}

// TestExchangeBadDone: a server refuses anything but "done\0".
func TestExchangeBadDone(t *testing.T) {
	c, s := net.Pipe()
	done := make(chan error)
	go func() {
		_, err := ServerExchange(s, Dest{QPN: 2}, func(Dest) error { return nil })
		done <- err
	}()
	m := Dest{QPN: 3}.Marshal()
	c.Write(m[:])
	var in [MsgSize]byte
	if _, err := c.Read(in[:]); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("nope\x00"))
	if err := <-done; !errors.Is(err, ErrMalformed) {
		t.Fatalf("server: %v, want ErrMalformed", err)
	}
}
