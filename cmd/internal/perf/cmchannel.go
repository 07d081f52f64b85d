// The side channel of perftest's rdma_cm mode (-R): instead of TCP, the
// two sides trade their fixed-size messages as SENDs on a control QP, the
// first rdma_cm connection of a run (perftest_communication.c,
// ctx_xchg_data over rdma_write_data/rdma_read_data). Each message is one
// SEND into one posted receive, in lock-step as over TCP: the client
// sends, then receives; the server receives, then sends.

package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// The control QP's buffers: cmSlots receive slots and one send slot of
// cmSlot bytes each (perftest's largest message is the 56-byte record).
const (
	cmSlots = 8
	cmSlot  = 64
)

// cmCreditOff is where the credit words start in a control channel's
// memory: per QP, the word the peer's credits land in, then the word this
// side's credits are written from.
const cmCreditOff = (cmSlots + 1) * cmSlot

// cmRecordSize is perftest's struct pingpong_dest as rdma_cm mode sends
// it: lid, out_reads, qpn, psn, rkey, 4 bytes of padding, vaddr, GID,
// srqn and gid_index, every field big-endian.
const cmRecordSize = 56

// cmMTUSize is the MTU message in rdma_cm mode: the ASCII digit padded to
// a 4-byte int (testdata/captures/rxe-write-bw-cm-4096.pcap: 33 00 00 00).
const cmMTUSize = 4

// cmChannel is one side's control QP and its memory.
type cmChannel struct {
	ctx      context.Context
	dev      ibv.Device
	qp       ibv.QP
	scq, rcq ibv.CQ
	mr       ibv.MR
	buf      *buffer
	mem      []byte // cmSlots receive slots, the send slot, the credit words
	wcs      [cmSlots]verbs.WC
	// loose lets readFixed take a shorter message (the MTU's: perftest
	// sends it as 2 or 4 bytes); got is the last message's length.
	loose bool
	got   int
}

// newCMChannel creates the control QP on s's device and PD with its own CQs
// (so its completions never mix with the test's), takes it to INIT and
// posts its receives, which rdma_cm's INIT→INIT keeps.
func newCMChannel(ctx context.Context, s *side) (_ *cmChannel, err error) {
	n := s.device()
	// Shared memory, as the test's buffers (mem.go): the peer's credit
	// writes land in it while the sender polls its words. c is not the
	// result, which is nil on failure: the deferred close needs it.
	c := &cmChannel{ctx: ctx, dev: n}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.buf, err = newBuffer(n, cmCreditOff+2*4*len(s.qps)); err != nil {
		return nil, fmt.Errorf("perf: control QP memory: %w", err)
	}
	c.mem = c.buf.b
	// Remote write: perftest's SEND bw receiver over iWARP writes its
	// credits into the credit words (cm_credit.go).
	if c.mr, err = n.RegMR(s.pd, c.mem, memory.LocalWrite|memory.RemoteWrite); err != nil {
		return nil, fmt.Errorf("perf: control QP memory: %w", err)
	}
	if c.scq, err = n.CreateCQ(cmSlots + 1); err != nil {
		return nil, fmt.Errorf("perf: control QP send CQ: %w", err)
	}
	if c.rcq, err = n.CreateCQ(cmSlots + 1); err != nil {
		return nil, fmt.Errorf("perf: control QP receive CQ: %w", err)
	}
	caps := verbs.QPCap{MaxSendWR: 2, MaxRecvWR: cmSlots, MaxSendSGE: 1, MaxRecvSGE: 1}
	if c.qp, err = n.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: c.scq, RecvCQ: c.rcq, Cap: caps}); err != nil {
		return nil, fmt.Errorf("perf: create control QP: %w", err)
	}
	init := verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead}
	if err := c.qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return nil, fmt.Errorf("perf: control QP to INIT: %w", err)
	}
	for i := range cmSlots {
		if err := c.postRecv(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cmChannel) postRecv(slot int) error {
	wr := verbs.RecvWR{ID: uint64(slot), SGL: []verbs.SGE{{Addr: c.mr.Addr() + uint64(slot*cmSlot), Length: cmSlot, LKey: c.mr.LKey()}}}
	if err := c.qp.PostRecv(&wr); err != nil {
		return fmt.Errorf("perf: control QP: post receive: %w", err)
	}
	return nil
}

func (c *cmChannel) close() {
	if c.qp != nil {
		c.qp.Destroy()
	}
	for _, cq := range []ibv.CQ{c.scq, c.rcq} {
		if cq != nil {
			cq.Destroy()
		}
	}
	if c.mr != nil {
		c.mr.Dereg()
	}
	if c.buf != nil {
		c.buf.close()
	}
}

// errSendFlushed: a control SEND completed with WR_FLUSH_ERR (the QP went
// to ERR before its ACK came).
var errSendFlushed = errors.New("flushed")

// write SENDs b and waits for its completion (the peer's ACK), so the
// send slot is free again.
func (c *cmChannel) write(b []byte) error {
	if len(b) > cmSlot {
		return fmt.Errorf("perf: control message of %d bytes", len(b))
	}
	off := cmSlots * cmSlot
	copy(c.mem[off:], b)
	wr := verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: c.mr.Addr() + uint64(off), Length: uint32(len(b)), LKey: c.mr.LKey()}}}
	if err := c.qp.PostSend(&wr); err != nil {
		return fmt.Errorf("perf: control QP: post send: %w", err)
	}
	wc, err := c.waitOne(c.scq)
	if err != nil {
		return err
	}
	if wc.Status != verbs.WCSuccess {
		if wc.Status == verbs.WCWRFlushErr {
			return fmt.Errorf("perf: control QP: send completed with %v: %w", wc.Status, errSendFlushed)
		}
		return fmt.Errorf("perf: control QP: send completed with %v", wc.Status)
	}
	return nil
}

// readFixed receives the next message, which must be len(b) bytes, into b.
func (c *cmChannel) readFixed(b []byte) error {
	wc, err := c.waitOne(c.rcq)
	if err != nil {
		return err
	}
	if wc.Status != verbs.WCSuccess {
		return fmt.Errorf("perf: control QP: receive completed with %v", wc.Status)
	}
	slot := int(wc.WRID)
	if slot < 0 || slot >= cmSlots {
		return fmt.Errorf("perf: control QP: receive wr_id %d", wc.WRID)
	}
	if int(wc.ByteLen) != len(b) && !(c.loose && int(wc.ByteLen) <= len(b)) {
		return fmt.Errorf("%w: control message of %d bytes, want %d", ErrPerftestMsg, wc.ByteLen, len(b))
	}
	clear(b)
	copy(b, c.mem[slot*cmSlot:slot*cmSlot+int(wc.ByteLen)])
	c.got = int(wc.ByteLen)
	return c.postRecv(slot)
}

// waitOne waits for one completion on cq.
func (c *cmChannel) waitOne(cq ibv.CQ) (verbs.WC, error) {
	sp := newSpinner(c.ctx)
	for {
		if cq.Poll(c.wcs[:1]) == 1 {
			return c.wcs[0], nil
		}
		if err := cq.Err(); err != nil {
			return verbs.WC{}, fmt.Errorf("perf: control QP: %w", err)
		}
		if err := sp.wait(cq); err != nil {
			return verbs.WC{}, err
		}
	}
}

// exchange is ctx_xchg_data: the client writes first, the server reads
// first.
func (c *cmChannel) exchange(client bool, out, in []byte) error {
	if client {
		if err := c.write(out); err != nil {
			return err
		}
		return c.readFixed(in)
	}
	if err := c.readFixed(in); err != nil {
		return err
	}
	return c.write(out)
}

// marshalCMRecord is k as rdma_cm mode's 56-byte record.
func marshalCMRecord(k Key, gidIndex int) [cmRecordSize]byte {
	var m [cmRecordSize]byte
	be := binary.BigEndian
	be.PutUint32(m[0:], uint32(k.LID))
	be.PutUint32(m[4:], uint32(k.OutReads))
	be.PutUint32(m[8:], k.QPN)
	be.PutUint32(m[12:], k.PSN)
	be.PutUint32(m[16:], k.RKey)
	be.PutUint64(m[24:], k.VAddr)
	copy(m[32:48], k.GID[:])
	be.PutUint32(m[48:], k.SRQN)
	be.PutUint32(m[52:], uint32(gidIndex))
	return m
}

// ParseCMRecord reads a 56-byte rdma_cm mode record.
func ParseCMRecord(m []byte) (Key, error) {
	if len(m) != cmRecordSize {
		return Key{}, fmt.Errorf("%w: record of %d bytes, want %d", ErrPerftestMsg, len(m), cmRecordSize)
	}
	be := binary.BigEndian
	k := Key{LID: uint16(be.Uint32(m[0:])), OutReads: uint16(be.Uint32(m[4:])), QPN: be.Uint32(m[8:]) & 0xFFFFFF,
		PSN: be.Uint32(m[12:]) & 0xFFFFFF, RKey: be.Uint32(m[16:]), VAddr: be.Uint64(m[24:]), SRQN: be.Uint32(m[48:])}
	copy(k.GID[:], m[32:48])
	return k, nil
}

// xchgRecord trades records and returns the peer's.
func (c *cmChannel) xchgRecord(client bool, k Key, gidIndex int) (Key, error) {
	out := marshalCMRecord(k, gidIndex)
	var in [cmRecordSize]byte
	if err := c.exchange(client, out[:], in[:]); err != nil {
		return Key{}, err
	}
	return ParseCMRecord(in[:])
}
