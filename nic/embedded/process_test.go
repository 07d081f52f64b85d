package embedded

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// Two NICs in two processes over real loopback UDP sockets: this test's
// process and a child (the test binary run again with RNIC_PEER set). Each
// side creates an RC, a UC and a UD QP, they swap their numbers over the
// child's stdin/stdout as an out-of-band channel would, and the parent
// drives SEND, WRITE, READ and atomics on RC, SEND and WRITE with immediate
// on UC, and SEND on UD. The child echoes every message it receives back on
// the same transport. Both write captures, which must pass rnic decode and
// the tshark oracle.

func TestMain(m *testing.M) {
	if os.Getenv("RNIC_PEER") != "" {
		os.Exit(peerMain())
	}
	os.Exit(m.Run())
}

// ends is one process's NIC and objects.
type ends struct {
	nic      *NIC
	pd       *nic.PD
	buf      []byte
	mr       *nic.MR
	cq       *nic.CQ
	rc       *nic.QP
	uc       *nic.QP
	ud       *nic.QP
	psn      uint32
	peerAddr netip.Addr
}

const (
	procBuf  = 2 << 20 // receive slots in [0, 768K), then the areas below
	procQKey = 0x4242
	recvSlot = 16 << 10
)

func openEnds(addr netip.Addr, port, peerPort uint16, peer netip.Addr, pcap *pcap.Writer) (*ends, error) {
	n, err := Open(UDPConfig{Addr: addr, Port: port, PeerPorts: map[netip.Addr]uint16{peer: peerPort}, MTU: 9000, Pcap: pcap})
	if err != nil {
		return nil, err
	}
	e := &ends{nic: n, buf: make([]byte, procBuf), peerAddr: peer, psn: uint32(time.Now().UnixNano()) & 0xFFFFFF}
	if e.pd, err = n.AllocPD(); err != nil {
		return nil, err
	}
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if e.mr, err = n.RegMR(e.pd, e.buf, all); err != nil {
		return nil, err
	}
	if e.cq, err = n.CreateCQ(256); err != nil {
		return nil, err
	}
	cp := verbs.QPCap{MaxSendWR: 32, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	for _, q := range []struct {
		t  verbs.QPType
		qp **nic.QP
	}{{verbs.QPTypeRC, &e.rc}, {verbs.QPTypeUC, &e.uc}, {verbs.QPTypeUD, &e.ud}} {
		if *q.qp, err = n.CreateQP(e.pd, nic.QPInit{Type: q.t, SendCQ: e.cq, RecvCQ: e.cq, Cap: cp}); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// postAll posts the receive buffers: slot i of each QP at (type*16+i)*16 KiB.
func (e *ends) postAll() error {
	for t, qp := range []*nic.QP{e.rc, e.uc, e.ud} {
		for i := 0; i < 16; i++ {
			if err := e.postRecv(qp, t*16+i); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *ends) postRecv(qp *nic.QP, slot int) error {
	return qp.PostRecv(&verbs.RecvWR{ID: uint64(slot), SGL: []verbs.SGE{{Addr: e.mr.Addr() + uint64(slot*recvSlot), Length: recvSlot, LKey: e.mr.LKey()}}})
}

// info is what the out-of-band channel carries.
func (e *ends) info() string {
	return fmt.Sprintf("INFO %d %d %d %d %d %d\n", e.rc.QPN(), e.uc.QPN(), e.ud.QPN(), e.psn, e.mr.RKey(), e.mr.Addr())
}

type peerInfo struct {
	rc, uc, ud, psn, rkey uint32
	va                    uint64
}

func parseInfo(line string) (peerInfo, error) {
	f := strings.Fields(line)
	if len(f) != 7 || f[0] != "INFO" {
		return peerInfo{}, fmt.Errorf("bad info line %q", line)
	}
	var v [6]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return peerInfo{}, err
		}
		v[i] = n
	}
	return peerInfo{uint32(v[0]), uint32(v[1]), uint32(v[2]), uint32(v[3]), uint32(v[4]), v[5]}, nil
}

func (e *ends) connect(p peerInfo) error {
	av := verbs.AddressVector{DGID: verbs.GIDFromAddr(e.peerAddr), HopLimit: 64, PortNum: 1}
	all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	for _, c := range []struct {
		qp   *nic.QP
		dest uint32
		rc   bool
	}{{e.rc, p.rc, true}, {e.uc, p.uc, false}} {
		acc := all
		if !c.rc {
			acc = memory.RemoteWrite
		}
		if err := c.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: acc},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return err
		}
		rtr := verbs.QPAttr{State: verbs.QPSRTR, AV: av, PathMTU: verbs.MTU4096, DestQPN: c.dest, RQPSN: p.psn, MaxDestRdAtomic: 4, MinRNRTimer: 1}
		m := verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN
		if c.rc {
			m |= verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
		}
		if err := c.qp.Modify(&rtr, m); err != nil {
			return err
		}
		rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: e.psn, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 4}
		m = verbs.AttrState | verbs.AttrSQPSN
		if c.rc {
			m |= verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic
		}
		if err := c.qp.Modify(&rts, m); err != nil {
			return err
		}
	}
	if err := e.ud.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: procQKey},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrQKey); err != nil {
		return err
	}
	if err := e.ud.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
		return err
	}
	if err := e.ud.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: e.psn}, verbs.AttrState|verbs.AttrSQPSN); err != nil {
		return err
	}
	return e.postAll()
}

// peerMain is the child process: it echoes every message back.
func peerMain() int {
	addr := netip.MustParseAddr(os.Getenv("RNIC_PEER_ADDR"))
	peer := netip.MustParseAddr(os.Getenv("RNIC_PEER_OF"))
	port, _ := strconv.Atoi(os.Getenv("RNIC_PEER_PORT"))
	peerPort, _ := strconv.Atoi(os.Getenv("RNIC_PEER_PEERPORT"))
	pw, err := pcap.Create(os.Getenv("RNIC_PEER_PCAP"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pw.Close()
	e, err := openEnds(addr, uint16(port), uint16(peerPort), peer, pw)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	defer e.nic.Close()
	fmt.Print(e.info())
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		return 1
	}
	p, err := parseInfo(line)
	if err == nil {
		err = e.connect(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	fmt.Println("READY")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, in); close(done) }()
	h, err := e.nic.CreateAH(e.pd, verbs.AddressVector{DGID: verbs.GIDFromAddr(peer), HopLimit: 64, PortNum: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	ah := h.AV()
	wcs := make([]verbs.WC, 16)
	for {
		select {
		case <-done:
			return 0
		default:
		}
		n := e.cq.Poll(wcs)
		if n == 0 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for _, wc := range wcs[:n] {
			if wc.Opcode != verbs.WCRecv && wc.Opcode != verbs.WCRecvRDMAWithImm {
				continue // our echoes' send completions
			}
			if wc.Status != verbs.WCSuccess {
				fmt.Fprintf(os.Stderr, "peer: receive %+v\n", wc)
				return 1
			}
			slot := int(wc.WRID)
			var qp *nic.QP
			off, length := slot*recvSlot, int(wc.ByteLen)
			wr := verbs.SendWR{ID: uint64(1000 + slot), Opcode: verbs.WRSend, Flags: verbs.SendSignaled}
			switch slot / 16 {
			case 0:
				qp = e.rc
			case 1:
				qp = e.uc
				if wc.Opcode == verbs.WCRecvRDMAWithImm {
					// Echo the immediate as a SEND with immediate.
					wr.Opcode, wr.Imm, length = verbs.WRSendWithImm, wc.Imm, 0
				}
			case 2:
				qp = e.ud
				off, length = off+40, length-40 // skip the GRH area
				wr.AH, wr.RemoteQPN, wr.RemoteQKey = ah, p.ud, procQKey
			}
			wr.SGL = []verbs.SGE{{Addr: e.mr.Addr() + uint64(off), Length: uint32(length), LKey: e.mr.LKey()}}
			if err := qp.PostSend(&wr); err != nil {
				fmt.Fprintln(os.Stderr, "peer: echo:", err)
				return 1
			}
			if err := e.postRecv(qp, slot); err != nil {
				fmt.Fprintln(os.Stderr, "peer: repost:", err)
				return 1
			}
		}
	}
}

func TestTwoProcesses(t *testing.T) {
	for _, c := range []struct {
		name             string
		me, peer         netip.Addr
		myPort, peerPort uint16
	}{
		{"ipv4", netip.MustParseAddr("127.0.0.22"), netip.MustParseAddr("127.0.0.23"), 4791, 4791},
		{"ipv6", netip.IPv6Loopback(), netip.IPv6Loopback(), 4795, 4796},
	} {
		t.Run(c.name, func(t *testing.T) { twoProcesses(t, c.me, c.peer, c.myPort, c.peerPort) })
	}
}

func twoProcesses(t *testing.T, me, peer netip.Addr, myPort, peerPort uint16) {
	dir := t.TempDir()
	myPcap, peerPcap := filepath.Join(dir, "parent.pcap"), filepath.Join(dir, "child.pcap")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RNIC_PEER=1", "RNIC_PEER_ADDR="+peer.String(), "RNIC_PEER_OF="+me.String(),
		fmt.Sprintf("RNIC_PEER_PORT=%d", peerPort), fmt.Sprintf("RNIC_PEER_PEERPORT=%d", myPort), "RNIC_PEER_PCAP="+peerPcap)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	childDone := false
	defer func() {
		if !childDone {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	pw, err := pcap.Create(myPcap)
	if err != nil {
		t.Fatal(err)
	}
	e, err := openEnds(me, myPort, peerPort, peer, pw)
	if err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	p, err := parseInfo(line)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.connect(p); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(stdin, e.info())
	if l, err := out.ReadString('\n'); err != nil || l != "READY\n" {
		t.Fatalf("child not ready: %q %v\n%s", l, err, stderr.String())
	}
	sge := func(off, n int) []verbs.SGE {
		return []verbs.SGE{{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
	}
	// Areas past the 48 receive slots (768 KiB): source data, READ sink,
	// atomic results here; WRITE target, atomic word, UC target at the peer.
	const src, sink, atomRes, rWrite, rWord, rUC = 0x100000, 0x120000, 0x140000, 0x160000, 0x180000, 0x190000
	for i := 0; i < 64<<10; i++ {
		e.buf[src+i] = byte(i*13 + 7)
	}
	wait := func(want int) []verbs.WC {
		t.Helper()
		var got []verbs.WC
		wcs := make([]verbs.WC, 16)
		deadline := time.Now().Add(5 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			n := e.cq.Poll(wcs)
			got = append(got, wcs[:n]...)
			if n == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		if len(got) < want {
			t.Fatalf("%d of %d completions: %+v\nchild: %s", len(got), want, got, stderr.String())
		}
		for _, wc := range got {
			if wc.Status != verbs.WCSuccess {
				t.Fatalf("completion %+v", wc)
			}
		}
		return got
	}
	post := func(qp *nic.QP, wr verbs.SendWR) {
		t.Helper()
		wr.Flags |= verbs.SendSignaled
		if err := qp.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
	}
	// RC: a 15000-byte SEND (4 packets at MTU 4096) comes back echoed.
	post(e.rc, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: sge(src, 15000)})
	wait(2) // our send, and the echo into RC receive slot 0
	if !bytes.Equal(e.buf[0:15000], e.buf[src:src+15000]) {
		t.Fatal("RC SEND echo differs")
	}
	// RC: WRITE into the child, READ it back, atomics.
	post(e.rc, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: sge(src, 30000), RemoteAddr: p.va + rWrite, RKey: p.rkey})
	post(e.rc, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: sge(sink, 30000), RemoteAddr: p.va + rWrite, RKey: p.rkey})
	post(e.rc, verbs.SendWR{ID: 4, Opcode: verbs.WRAtomicFetchAdd, SGL: sge(atomRes, 8), RemoteAddr: p.va + rWord, RKey: p.rkey, CompareAdd: 5})
	post(e.rc, verbs.SendWR{ID: 5, Opcode: verbs.WRAtomicCmpSwp, SGL: sge(atomRes+8, 8), RemoteAddr: p.va + rWord, RKey: p.rkey, CompareAdd: 5, Swap: 77})
	wait(4)
	if !bytes.Equal(e.buf[sink:sink+30000], e.buf[src:src+30000]) {
		t.Fatal("RC WRITE then READ differs")
	}
	if a, b := binary.NativeEndian.Uint64(e.buf[atomRes:]), binary.NativeEndian.Uint64(e.buf[atomRes+8:]); a != 0 || b != 5 {
		t.Fatalf("atomics returned %d and %d, want 0 and 5", a, b)
	}
	// UC: a SEND and a WRITE with immediate come back (the latter as a SEND
	// with immediate).
	post(e.uc, verbs.SendWR{ID: 6, Opcode: verbs.WRSend, SGL: sge(src+100, 9000)})
	got := wait(2)
	if !bytes.Equal(e.buf[16*recvSlot:16*recvSlot+9000], e.buf[src+100:src+9100]) {
		t.Fatalf("UC SEND echo differs: %+v", got)
	}
	post(e.uc, verbs.SendWR{ID: 7, Opcode: verbs.WRRDMAWriteWithImm, Imm: 0xBEEF, SGL: sge(src, 100), RemoteAddr: p.va + rUC, RKey: p.rkey})
	got = wait(2)
	imm := false
	for _, wc := range got {
		imm = imm || wc.Flags&verbs.WCFlagWithImm != 0 && wc.Imm == 0xBEEF
	}
	if !imm {
		t.Fatalf("UC immediate did not come back: %+v", got)
	}
	// UD: a datagram comes back; its GRH area holds the child's IP header.
	h, err := e.nic.CreateAH(e.pd, verbs.AddressVector{DGID: verbs.GIDFromAddr(peer), HopLimit: 64, PortNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	ah := h.AV()
	wr := verbs.SendWR{ID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(src, 1000), AH: ah, RemoteQPN: p.ud, RemoteQKey: procQKey}
	if err := e.ud.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
	got = wait(2)
	for _, wc := range got {
		if wc.Opcode == verbs.WCRecv && (wc.ByteLen != 1040 || wc.SrcQP != p.ud) {
			t.Fatalf("UD echo %+v", wc)
		}
	}
	if !bytes.Equal(e.buf[32*recvSlot+40:32*recvSlot+1040], e.buf[src:src+1000]) {
		t.Fatalf("UD echo differs: %+v", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	childDone = true
	e.nic.Close()
	pw.Close()
	ports := []uint16{myPort, peerPort}
	for _, pcap := range []string{myPcap, peerPcap} {
		var dec bytes.Buffer
		sum, err := decode.Run(&dec, []string{pcap}, decode.Options{Ports: ports})
		if err != nil || sum.Problems() {
			t.Fatalf("%s: %v\n%s", pcap, err, dec.String())
		}
		last := dec.String()[strings.LastIndex(strings.TrimSpace(dec.String()), "\n")+1:]
		if strings.Contains(last, "roce=0 ") {
			t.Fatalf("%s: no RoCEv2 frames: %s", pcap, last)
		}
		var args []string
		for _, p := range ports {
			args = append(args, "-d", fmt.Sprintf("udp.port==%d,infiniband", p))
		}
		tsharktest.Check(t, pcap, tsharktest.Options{Args: args})
	}
}
