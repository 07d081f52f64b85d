// The steps both transports perform: a SEND, an RDMA WRITE, an RDMA READ
// and the two atomics, from rnic0 to rnic1, each checked against what
// rnic1's memory (or rnic0's) must hold afterwards.

package demo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/rnic/rnic/nic/verbs"
)

// send SENDs msg (WR 1) into the receive WR 100 rnic1 posted first.
func (d *demo) send(text string) error {
	a, b := d.a, d.b
	msg := []byte(text)
	copy(a.buf, msg)
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 100, SGL: b.sge(0x100, 256)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: a.sge(0, len(msg))}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 1, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	if _, err := d.expect(b, b.rcq, verbs.WC{WRID: 100, Opcode: verbs.WCRecv, ByteLen: uint32(len(msg))}); err != nil {
		return err
	}
	if !bytes.Equal(b.buf[0x100:0x100+len(msg)], msg) {
		return errors.New("the received bytes differ")
	}
	fmt.Fprintf(d.out, "  %s received: %q\n", b.name, b.buf[0x100:0x100+len(msg)])
	return nil
}

// write WRITEs 10000 bytes (WR id) into rnic1's memory.
func (d *demo) write(id uint64) error {
	a, b := d.a, d.b
	for i := 0; i < 10000; i++ {
		a.buf[0x1000+i] = byte(i * 7)
	}
	if err := d.post(a, verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, SGL: a.sge(0x1000, 10000),
		RemoteAddr: b.va(0x4000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: id, Opcode: verbs.WCRDMAWrite}); err != nil {
		return err
	}
	if !d.landed(b.buf[0x4000:0x4000+10000], a.buf[0x1000:0x1000+10000]) {
		return errors.New("the written bytes differ")
	}
	fmt.Fprintf(d.out, "  %s's memory at %#x now holds %s's 10000 bytes\n", b.name, b.va(0x4000), a.name)
	return nil
}

// landed waits until want is at got: over iWARP an RDMA WRITE completes at
// the requester once the stream took it, before rnic1 placed it (over
// RoCEv2 the ACK came after the placement: it is there at once).
func (d *demo) landed(got, want []byte) bool {
	deadline := time.Now().Add(d.cfg.Timeout)
	for !bytes.Equal(got, want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

// read READs 5000 bytes (WR id) of rnic1's memory; tell says where they
// landed.
func (d *demo) read(id uint64, tell bool) error {
	a, b := d.a, d.b
	for i := 0; i < 5000; i++ {
		b.buf[0x8000+i] = byte(255 - i)
	}
	if err := d.post(a, verbs.SendWR{ID: id, Opcode: verbs.WRRDMARead, SGL: a.sge(0x6000, 5000),
		RemoteAddr: b.va(0x8000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: id, Opcode: verbs.WCRDMARead, ByteLen: 5000}); err != nil {
		return err
	}
	if !bytes.Equal(a.buf[0x6000:0x6000+5000], b.buf[0x8000:0x8000+5000]) {
		return errors.New("the bytes read differ")
	}
	if tell {
		fmt.Fprintf(d.out, "  %s's buffer at %#x now holds %s's 5000 bytes\n", a.name, a.va(0x6000), b.name)
	}
	return nil
}

// atomics runs a CmpSwap (WR id) and a FetchAdd (WR id+1) on a word of
// rnic1's memory.
func (d *demo) atomics(id uint64) error {
	a, b := d.a, d.b
	binary.NativeEndian.PutUint64(b.buf[0xF000:], 0)
	if err := d.post(a, verbs.SendWR{ID: id, Opcode: verbs.WRAtomicCmpSwp, SGL: a.sge(0xE000, 8),
		RemoteAddr: b.va(0xF000), RKey: b.mr.RKey(), CompareAdd: 0, Swap: 42}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: id, Opcode: verbs.WCCompSwap}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: id + 1, Opcode: verbs.WRAtomicFetchAdd, SGL: a.sge(0xE008, 8),
		RemoteAddr: b.va(0xF000), RKey: b.mr.RKey(), CompareAdd: 8}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: id + 1, Opcode: verbs.WCFetchAdd}); err != nil {
		return err
	}
	o1, o2 := binary.NativeEndian.Uint64(a.buf[0xE000:]), binary.NativeEndian.Uint64(a.buf[0xE008:])
	v := binary.NativeEndian.Uint64(b.buf[0xF000:])
	fmt.Fprintf(d.out, "  CmpSwap(compare 0, swap 42) returned %d; FetchAdd(+8) returned %d; the word is now %d\n", o1, o2, v)
	if o1 != 0 || o2 != 42 || v != 50 {
		return fmt.Errorf("returned %d and %d, word %d; want 0, 42, 50", o1, o2, v)
	}
	return nil
}
