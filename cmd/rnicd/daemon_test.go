// rnicd as a daemon of co-located processes: NICs served on a control
// socket to clients of this test. Without root, a NIC on kernel UDP; as
// root, NICs on TAPs in a namespace of the test's, across two daemons.

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	_ "github.com/rnic/rnic/nic/rnicd/client" // NAME@SOCKET
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// daemonProc is an rnicd process of the test.
type daemonProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	lines  chan string
	exited chan error
}

// startDaemon starts bin with args and waits for want, its first lines.
func startDaemon(t *testing.T, bin string, want []string, args ...string) *daemonProc {
	t.Helper()
	return startDaemonCmd(t, exec.Command(bin, args...), want)
}

// startDaemonCmd starts cmd, an rnicd, and waits for want, its first lines.
func startDaemonCmd(t *testing.T, cmd *exec.Cmd, want []string) *daemonProc {
	t.Helper()
	d := &daemonProc{cmd: cmd, stderr: new(bytes.Buffer), lines: make(chan string, 8), exited: make(chan error, 1)}
	d.cmd.Stderr = d.stderr
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		d.exited <- d.cmd.Wait()
	}()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill() // the one this test started
			<-d.exited
		}
	})
	for _, w := range want {
		select {
		case l, ok := <-d.lines:
			if !ok || !strings.HasPrefix(l, w) {
				t.Fatalf("rnicd said %q (open %v), want %q...\nstderr: %s", l, ok, w, d.stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("rnicd not ready within 20s\nstderr: %s", d.stderr.String())
		}
	}
	return d
}

// stop stops the daemon with SIGTERM and checks it exits 0 saying so.
func (d *daemonProc) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range d.lines {
		rest = append(rest, l)
	}
	if err := <-d.exited; err != nil {
		t.Fatalf("rnicd after SIGTERM: %v\nstderr: %s", err, d.stderr.String())
	}
	if len(rest) != 1 || rest[0] != "rnicd: stopped" {
		t.Errorf("output after SIGTERM %q", rest)
	}
}

// openDev opens a device string, closed when the test ends.
func openDev(t *testing.T, s string) ibv.Device {
	t.Helper()
	spec, err := ibv.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ibv.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// rcSide is one end of an RC connection of rcConnect: a 64 KiB buffer
// registered for remote writes, a CQ and the QP.
type rcSide struct {
	dev ibv.Device
	gid int
	buf []byte
	mr  ibv.MR
	cq  ibv.CQ
	qp  ibv.QP
}

// rcWrite connects an RC QP of a to one of b (b's GID gidB, a's gidA, as
// indices into their GID tables) and RDMA WRITEs 64 KiB of a pattern,
// checked at b.
func rcWrite(t *testing.T, a, b ibv.Device, gidA, gidB int) {
	t.Helper()
	x, y := rcConnect(t, a, b, gidA, gidB)
	x.write(t, y, len(x.buf))
}

// rcConnect connects an RC QP of a to one of b (b's GID gidB, a's gidA).
func rcConnect(t *testing.T, a, b ibv.Device, gidA, gidB int) (x, y *rcSide) {
	t.Helper()
	sides := [2]rcSide{{dev: a, gid: gidA}, {dev: b, gid: gidB}}
	var err error
	for i := range sides {
		s := &sides[i]
		pd, _ := s.dev.AllocPD()
		mem, _ := s.dev.AllocBuffer(1 << 16)
		s.buf = mem.Bytes()
		if s.mr, err = s.dev.RegMR(pd, s.buf, memory.LocalWrite|memory.RemoteWrite); err != nil {
			t.Fatal(err)
		}
		s.cq, _ = s.dev.CreateCQ(16)
		if s.qp, err = s.dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range sides {
		me, peer := &sides[i], &sides[1-i]
		mtu, _ := me.dev.QueryPort(1)
		steps := []struct {
			a verbs.QPAttr
			m verbs.QPAttrMask
		}{
			{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite}, verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
			{verbs.QPAttr{State: verbs.QPSRTR, PathMTU: mtu.ActiveMTU, DestQPN: peer.qp.QPN(), RQPSN: 1, MaxDestRdAtomic: 1, MinRNRTimer: 1,
				AV: verbs.AddressVector{DGID: peer.dev.GIDs()[peer.gid], SGIDIndex: uint8(me.gid), HopLimit: 64, PortNum: 1}},
				verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
			{verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
				verbs.AttrState | verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic},
		}
		for _, s := range steps {
			if err := me.qp.Modify(&s.a, s.m); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &sides[0], &sides[1]
}

// write RDMA WRITEs the first n bytes of x's buffer, filled with a
// pattern, to y's, waits for the completion and checks them at y.
func (x *rcSide) write(t *testing.T, y *rcSide, n int) {
	t.Helper()
	for i := range x.buf[:n] {
		x.buf[i] = byte(i*13 + n)
	}
	if err := x.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: x.mr.Addr(), Length: uint32(n), LKey: x.mr.LKey()}}, RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	wcs := make([]verbs.WC, 1)
	for deadline := time.Now().Add(10 * time.Second); x.cq.Poll(wcs) == 0; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("no completion within 10s")
		}
	}
	if wcs[0].Status != verbs.WCSuccess || !bytes.Equal(x.buf[:n], y.buf[:n]) {
		t.Fatalf("RDMA WRITE of %d bytes through rnicd: %v, data equal %v", n, wcs[0].Status, bytes.Equal(x.buf[:n], y.buf[:n]))
	}
}

// TestDaemonUDP starts rnicd (the binary) with an embedded UDP NIC on a
// socket of the test's, moves data between two of its clients (loopback on
// the one NIC), reads the port counters through it, stops it with SIGTERM
// and checks it exits 0 and removes its socket.
func TestDaemonUDP(t *testing.T) {
	bin := buildRnicd(t)
	sock := filepath.Join(t.TempDir(), "run", "rnicd.sock")
	addr := rnicdtest.LoopbackAddr()
	d := startDaemon(t, bin, []string{"rnic0: udp " + addr.String() + ":4791 mtu 9000 ready", "rnicd: serving rnic0 on " + sock},
		"--udp", addr.String(), "--mtu", "9000", "--socket", sock, "--max-qps", "8")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v (%v), want mode 0600", fi.Mode(), err)
	}
	a, b := openDev(t, "rnic0@"+sock), openDev(t, "rnic0@"+sock)
	rcWrite(t, a, b, 0, 0)
	var sent uint64
	for _, c := range a.(ibv.Counters).Counters() {
		if c.Name == "sent_pkts" {
			sent = c.Value
		}
	}
	if sent < 16 { // 64 KiB in 4 KiB packets
		t.Errorf("the daemon's NIC counts %d packets sent, want ≥ 16", sent)
	}
	d.stop(t)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket survived rnicd: %v", err)
	}
	// Its clients see it gone.
	if _, err := a.AllocPD(); err == nil {
		t.Error("a verb after rnicd stopped succeeded")
	}
}

// TestDaemonsTAP: two rnicd processes, each with a NIC on a TAP on one
// bridge of a namespace; RDMA between clients of the two daemons (RoCEv2
// on the wire, link-local, IPv4 and IPv6 GIDs), and between two clients of
// one daemon (the NIC loops its own traffic back).
func TestDaemonsTAP(t *testing.T) {
	requireRoot(t)
	bin := buildRnicd(t)
	ns := newNetns(t)
	var socks [2]string
	var daemons [2]*daemonProc
	for i := range daemons {
		socks[i] = filepath.Join(t.TempDir(), "rnicd.sock")
		tap := fmt.Sprintf("rd%d", i)
		ip, ip6 := fmt.Sprintf("10.88.0.%d/24", 60+i), fmt.Sprintf("fd00:88::%d/64", 60+i)
		daemons[i] = startDaemon(t, bin, []string{"rnic0: tap " + tap, "rnicd: serving rnic0 on " + socks[i]},
			"--socket", socks[i], "--tap", tap, "--ip", ip, "--ip6", ip6, "--netns", ns, "--bridge", "br0")
	}
	a, b := openDev(t, "rnic0@"+socks[0]), openDev(t, "rnic0@"+socks[1])
	// A TAP-mode NIC's GID table is Linux's: 0 link-local, 1 --ip, 2 --ip6.
	t.Run("across daemons link-local", func(t *testing.T) { rcWrite(t, a, b, 0, 0) })
	t.Run("across daemons IPv4", func(t *testing.T) { rcWrite(t, a, b, 1, 1) })
	t.Run("across daemons IPv6", func(t *testing.T) { rcWrite(t, b, a, 2, 2) })
	t.Run("one daemon", func(t *testing.T) { rcWrite(t, a, openDev(t, "rnic0@"+socks[0]), 1, 1) })
	t.Run("one daemon link-local", func(t *testing.T) { rcWrite(t, a, openDev(t, "rnic0@"+socks[0]), 0, 0) })
	for _, d := range daemons {
		d.stop(t)
	}
}

// TestRunSocketFailure: a control socket that cannot be made exits 1 with
// the reason, after closing the NIC it opened.
func TestRunSocketFailure(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := rnicdtest.LoopbackAddr()
	out, errOut, code := rnicd(t, nil, "--udp", addr.String(), "--socket", file)
	if code != 1 || !strings.Contains(errOut, "not a socket") || !strings.Contains(out, "ready") {
		t.Fatalf("status %d, stdout %q, stderr %q; want 1, the NIC ready, then the socket error", code, out, errOut)
	}
	// The NIC was closed: its address is free again.
	_, errOut, code = rnicd(t, nil, "--udp", addr.String(), "--socket", file)
	if code != 1 || strings.Contains(errOut, "address already in use") {
		t.Errorf("second run: status %d, stderr %q: the first left its NIC open", code, errOut)
	}
}
