// UD: SEND through an address handle, the 40-byte GRH area at the head of
// every receive buffer (IBTA §11.4.1.1; on RoCEv2 the IPv6 header, or 20
// undefined bytes and the IPv4 header, as rxe and libibverbs'
// ibv_init_ah_from_wc read it), and the Q_Key check.

package ibvtest

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// grhLen is the GRH area of a UD receive buffer.
const grhLen = 40

func testUDSend(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	qa, qb := a.qp(verbs.QPTypeUD, verbs.QPCap{}, nil), b.qp(verbs.QPTypeUD, verbs.QPCap{}, nil)
	a.toRTSUD(t, qa)
	b.toRTSUD(t, qb)
	ah, err := a.dev.CreateAH(a.pd, a.av(b))
	if err != nil {
		t.Fatalf("CreateAH: %v", err)
	}
	cleanup(t, "destroy AH", ah.Destroy)
	mtu := pathMTU(a, b).Bytes()

	// send sends n bytes (with imm if not 0) under qk and returns the
	// sender's completion.
	send := func(id uint64, n, seed int, imm, qk uint32) {
		t.Helper()
		fill(a.mem[srcOff:srcOff+n], seed)
		op := verbs.WRSend
		if imm != 0 {
			op = verbs.WRSendWithImm
		}
		a.postSend(qa, &verbs.SendWR{ID: id, Opcode: op, Flags: verbs.SendSignaled, Imm: imm,
			SGL: []verbs.SGE{a.sge(srcOff, n)}, AH: ah.AV(), RemoteQPN: qb.QPN(), RemoteQKey: qk})
		// UD completes a send once it is out, whatever the receiver does.
		checkWC(t, "UD send", waitOne(t, a.scq), id, verbs.WCSuccess, verbs.WCSend)
	}
	// recv checks the next receive: n bytes of pattern seed after the GRH.
	recv := func(id uint64, n, seed int, imm uint32) {
		t.Helper()
		wc := waitOne(t, b.rcq)
		checkWC(t, "UD receive", wc, id, verbs.WCSuccess, verbs.WCRecv)
		if wc.ByteLen != uint32(grhLen+n) || wc.Flags&verbs.WCFlagGRH == 0 || wc.SrcQP != qa.QPN() || wc.QPN != qb.QPN() {
			t.Fatalf("UD receive: byte_len %d, flags %#x, src_qp %#x, qp_num %#x; want %d, GRH, %#x, %#x",
				wc.ByteLen, wc.Flags, wc.SrcQP, wc.QPN, grhLen+n, qa.QPN(), qb.QPN())
		}
		if (wc.Flags&verbs.WCFlagWithImm != 0) != (imm != 0) || wc.Imm != imm {
			t.Fatalf("UD receive: flags %#x imm %#x, want imm %#x", wc.Flags, wc.Imm, imm)
		}
		off := dstOff + int(id)*(grhLen+mtu+64)
		checkGRH(t, b.mem[off:off+grhLen], p.AddrA, p.AddrB)
		checkBytes(t, "UD message", b.mem[off+grhLen:off+grhLen+n], pattern(n, seed))
		checkFilled(t, "receive buffer past the message", b.mem[off+grhLen+n:off+grhLen+mtu+64], untouch)
	}
	memset(b.mem[dstOff:], untouch)
	for id := range uint64(4) {
		b.postRecv(qb, id, dstOff+int(id)*(grhLen+mtu+64), grhLen+mtu)
	}

	send(10, 100, 1, 0x0BADF00D, qkey)
	recv(0, 100, 1, 0x0BADF00D)
	send(11, mtu, 2, 0, qkey) // a full path MTU
	recv(1, mtu, 2, 0)
	// A wrong Q_Key is dropped without a trace: the next receive WR gets
	// the next good message.
	send(12, 50, 3, 0, qkey^0x00FF0000)
	send(13, 60, 4, 0, qkey)
	recv(2, 60, 4, 0)
}

// checkGRH checks the GRH area of a UD receive sent from src to dst.
func checkGRH(t *testing.T, grh []byte, src, dst netip.Addr) {
	t.Helper()
	src, dst = src.Unmap(), dst.Unmap()
	if src.Is4() {
		ip := grh[20:]
		got := fmt.Sprintf("version/IHL %#02x, protocol %d, %v -> %v", ip[0], ip[9],
			netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20])))
		want := fmt.Sprintf("version/IHL 0x45, protocol 17, %v -> %v", src, dst)
		if got != want {
			t.Fatalf("GRH area: IPv4 header at byte 20 has %s; want %s", got, want)
		}
		return
	}
	got := fmt.Sprintf("version %d, next header %d, %v -> %v", grh[0]>>4, grh[6],
		netip.AddrFrom16([16]byte(grh[8:24])), netip.AddrFrom16([16]byte(grh[24:40])))
	want := fmt.Sprintf("version 6, next header 17, %v -> %v", src, dst)
	if got != want {
		t.Fatalf("GRH area: IPv6 header has %s; want %s", got, want)
	}
}
