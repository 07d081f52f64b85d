// perftest's receive credits in a SEND bw test over iWARP (rdma_cm mode):
// an iWARP SEND that finds no receive posted ends the connection, so the
// receiver tells the sender how many messages it has taken. Each side's
// record then names, instead of a data buffer, a 4-byte credit word per QP
// (perftest_resources.c, ctx_alloc_credit); the receiver RDMA WRITEs its
// count of completed receives there, little-endian as perftest's host order
// on x86, whenever the count modulo the receive depth is a multiple of a
// third of it (run_iter_bw_server: 6, 12, 18, 20 for 20 messages, as
// testdata/captures/siw-send-bw-4096.pcap shows); the sender keeps fewer
// than the receive depth of SENDs beyond the last credit (run_iter_bw:
// swindow).

package perf

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/rnic/rnic/nic/verbs"
)

// usesCredits says whether the test trades perftest's credits.
func (c *Config) usesCredits() bool {
	return c.IWARP && c.Op == OpSend && c.Mode == ModeBW
}

// creditDepth is the receive depth perftest's credits count with: its
// rx_depth, which it caps at the iterations.
func (c *Config) creditDepth() int { return max(1, min(c.RxDepth, c.Iters)) }

// creditWord is the offset of QP i's word the peer's credits land in.
func (c *cmChannel) creditWord(i int) int { return cmCreditOff + 4*i }

// creditSrc is the offset of QP i's word this side's credits go from.
func (c *cmChannel) creditSrc(i, qps int) int { return cmCreditOff + 4*qps + 4*i }

// creditKey is k with the rkey and address of QP i's credit word.
func (c *cmChannel) creditKey(k Key, i int) Key {
	k.RKey, k.VAddr = c.mr.RKey(), c.mr.Addr()+uint64(c.creditWord(i))
	return k
}

// credit is the last credit the peer wrote for QP i.
func (c *cmChannel) credit(i int) int {
	w := c.mem[c.creditWord(i) : c.creditWord(i)+4]
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&w[0])))
	var x [4]byte
	binary.NativeEndian.PutUint32(x[:], v)
	return int(binary.LittleEndian.Uint32(x[:]))
}

// sendCredits is a sender's side.sendCredit: SENDs on QP i may go up to
// one short of the receive depth past the peer's credit.
func (c *cmChannel) sendCredits(r *resolved) func(i int) int {
	depth := r.creditDepth()
	return func(i int) int { return c.credit(i) + depth - 1 }
}

// creditWriter is a receiver's side.recvDone: it writes the count of QP
// i's completed receives to the peer's credit word when perftest does.
func (c *cmChannel) creditWriter(s *side) func(i, n int) error {
	depth := s.cfg.creditDepth()
	step := max(1, depth/3)
	var wcs [16]verbs.WC
	return func(i, n int) error {
		if (n%depth)%step != 0 {
			return nil
		}
		// Reap earlier credit WRITEs, so the send queue never fills.
		if _, err := s.drainSend(wcs[:]); err != nil {
			return err
		}
		q := s.qps[i]
		off := c.creditSrc(i, len(s.qps))
		binary.LittleEndian.PutUint32(c.mem[off:], uint32(n))
		wr := verbs.SendWR{ID: wrID(i, n), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			RemoteAddr: q.peer.VAddr, RKey: q.peer.RKey,
			SGL: []verbs.SGE{{Addr: c.mr.Addr() + uint64(off), Length: 4, LKey: c.mr.LKey()}}}
		return q.qp.PostSend(&wr)
	}
}
