// Client processes against one daemon: the test binary re-executes itself
// in a role (RNICD_TEST_ROLE), as a daemon or as a client that exchanges
// its QP's address with a peer through the parent test (one line out on
// stdout, one line in on stdin) and then acts.

package client_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestMain(m *testing.M) {
	switch role := os.Getenv("RNICD_TEST_ROLE"); role {
	case "":
		os.Exit(m.Run())
	case "daemon":
		roleDaemon()
	case "squatter":
		roleSquatter()
	case "peer":
		if err := rolePeer(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		os.Exit(2)
	}
}

// roleDaemon serves one NIC on RNICD_TEST_SOCKET until killed or until
// its stdin closes.
func roleDaemon() {
	var opt rnicdtest.Options
	if n, err := strconv.Atoi(os.Getenv("RNICD_TEST_MAXQPS")); err == nil {
		opt.Limits.MaxQPs = n
	}
	d, err := rnicdtest.New(os.Getenv("RNICD_TEST_SOCKET"), opt)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	d.Close()
	os.Exit(0)
}

// pattern is the data a writer writes and a checker expects.
func pattern(i int) byte { return byte(i*7 + 3) }

// peerInfo is what two clients exchange to connect their QPs.
type peerInfo struct {
	QPN, RKey uint32
	Addr      uint64
	GID       netip.Addr
}

func (p peerInfo) String() string { return fmt.Sprintf("%d %d %d %s", p.QPN, p.RKey, p.Addr, p.GID) }

func parsePeer(s string) (peerInfo, error) {
	var p peerInfo
	var gid string
	if _, err := fmt.Sscanf(s, "%d %d %d %s", &p.QPN, &p.RKey, &p.Addr, &gid); err != nil {
		return p, fmt.Errorf("peer line %q: %w", s, err)
	}
	var err error
	p.GID, err = netip.ParseAddr(gid)
	return p, err
}

// connectTo takes e's QP to RTS aimed at p.
func connectTo(e *end, p peerInfo, timeout, retry uint8) error {
	mask := verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags
	if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: allAccess &^ 1}, mask); err != nil {
		return err
	}
	if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: p.QPN, RQPSN: 1,
		AV: verbs.AddressVector{DGID: p.GID, HopLimit: 64, PortNum: 1}, MaxDestRdAtomic: 1, MinRNRTimer: 1},
		verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return err
	}
	return e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1, Timeout: timeout, RetryCnt: retry, RNRRetry: 7, MaxRdAtomic: 1},
		verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic)
}

// fatalTB lets the test helpers run in a child process: Fatal panics,
// and rolePeer turns the panic into an error.
type fatalTB struct{ testing.TB }

func (fatalTB) Helper()                   {}
func (fatalTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (fatalTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (fatalTB) Cleanup(func())            {}

const peerBuf = 1 << 20

// rolePeer is a client process: RNICD_TEST_SPEC names the device,
// RNICD_TEST_ACTION what to do: "write" (an RDMA WRITE of peerBuf bytes
// of pattern, then a SEND with immediate saying so), "check" (wait for
// that SEND, check the data), "stream" (RDMA WRITEs to the peer until
// killed).
func rolePeer() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	spec, err := ibv.ParseSpec(os.Getenv("RNICD_TEST_SPEC"))
	if err != nil {
		return err
	}
	dev, err := ibv.Open(spec)
	if err != nil {
		return err
	}
	defer dev.Close()
	e := newEnd(fatalTB{}, dev, verbs.QPTypeRC, peerBuf)
	action := os.Getenv("RNICD_TEST_ACTION")
	if action == "check" {
		if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: allAccess &^ 1},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return err
		}
		if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1}); err != nil {
			return err
		}
	}
	me := peerInfo{QPN: e.qp.QPN(), RKey: e.mr.RKey(), Addr: e.mr.Addr(), GID: dev.GIDs()[0]}
	fmt.Println("info", me)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return err
	}
	p, err := parsePeer(strings.TrimPrefix(strings.TrimSpace(line), "peer "))
	if err != nil {
		return err
	}
	if action == "check" {
		// INIT already; on to RTR and RTS.
		if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSReset}, verbs.AttrState); err != nil {
			return err
		}
		if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: allAccess &^ 1},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return err
		}
		if err := e.qp.PostRecv(&verbs.RecvWR{ID: 1}); err != nil {
			return err
		}
		e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: p.QPN, RQPSN: 1,
			AV: verbs.AddressVector{DGID: p.GID, HopLimit: 64, PortNum: 1}, MaxDestRdAtomic: 1, MinRNRTimer: 1},
			verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer)
		if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
			return err
		}
		fmt.Println("connected")
		wc, ok := pollWithin(e.cq, 20*time.Second)
		if !ok || wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRecv || wc.Imm != peerBuf {
			return fmt.Errorf("no good completion of the writer's SEND: %+v (%v)", wc, ok)
		}
		for i, b := range e.buf {
			if b != pattern(i) {
				return fmt.Errorf("byte %d is %#x, want %#x", i, b, pattern(i))
			}
		}
		fmt.Println("ok")
		return nil
	}
	if err := connectTo(e, p, 14, 7); err != nil {
		return err
	}
	fmt.Println("connected")
	for i := range e.buf {
		e.buf[i] = pattern(i)
	}
	switch action {
	case "write":
		// Wait for the checker to be connected (it says so through the
		// parent), so the SEND finds its receive WQE.
		bufio.NewReader(os.Stdin).ReadString('\n')
		if err := e.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: sge(e, 0, peerBuf), RemoteAddr: p.Addr, RKey: p.RKey},
			&verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithImm, Imm: peerBuf, Flags: verbs.SendSignaled}); err != nil {
			return err
		}
		if wc, ok := pollWithin(e.cq, 20*time.Second); !ok || wc.Status != verbs.WCSuccess {
			return fmt.Errorf("writer's completion %+v (%v)", wc, ok)
		}
		fmt.Println("done")
	case "stream":
		stream(e, p, nil, func() { fmt.Println("streaming") })
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	return nil
}

// stream writes 64 KiB chunks to the peer, keeping 8 in flight, until a
// completion fails (it returns that) or stop closes; started runs after
// the first completion.
func stream(e *end, p peerInfo, stop <-chan struct{}, started func()) verbs.WC {
	const chunk, window = 64 << 10, 8
	wcs := make([]verbs.WC, window)
	inflight, n := 0, 0
	said := false
	for {
		select {
		case <-stop:
			return verbs.WC{}
		default:
		}
		for inflight < window {
			off := (n % (peerBuf / chunk)) * chunk
			if err := e.qp.PostSend(&verbs.SendWR{ID: uint64(n), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGL: sge(e, off, chunk), RemoteAddr: p.Addr + uint64(off), RKey: p.RKey}); err != nil {
				return verbs.WC{Status: verbs.WCGeneralErr}
			}
			inflight++
			n++
		}
		k := e.cq.Poll(wcs)
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess {
				return wc
			}
			if !said && started != nil {
				started()
			}
			said = true
		}
		inflight -= k
		if k == 0 {
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// child is a client process of the test.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	exit  chan error
}

func startChild(t testing.TB, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, lines: make(chan string, 16), exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill() // only the child this test started
		}
	})
	return c
}

// expect waits for the child's next line and checks its prefix.
func (c *child) expect(t testing.TB, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatalf("child exited (%v) waiting for %q", <-c.exit, prefix)
		}
		if !strings.HasPrefix(l, prefix) {
			t.Fatalf("child said %q, want %q...", l, prefix)
		}
		return strings.TrimSpace(strings.TrimPrefix(l, prefix))
	case <-time.After(30 * time.Second):
		t.Fatalf("child silent for 30s waiting for %q", prefix)
	}
	return ""
}

func (c *child) say(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// TestClientProcesses: two client processes of one daemon connect RC QPs
// through it (one NIC, loopback) and move a megabyte, checked byte by byte.
func TestClientProcesses(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	spec := "RNICD_TEST_SPEC=" + d.Spec(0).String()
	w := startChild(t, "RNICD_TEST_ROLE=peer", "RNICD_TEST_ACTION=write", spec)
	c := startChild(t, "RNICD_TEST_ROLE=peer", "RNICD_TEST_ACTION=check", spec)
	wi, ci := w.expect(t, "info "), c.expect(t, "info ")
	w.say(t, "peer "+ci)
	c.say(t, "peer "+wi)
	w.expect(t, "connected")
	c.expect(t, "connected")
	w.say(t, "go")
	w.expect(t, "done")
	c.expect(t, "ok")
	for _, p := range []*child{w, c} {
		select {
		case err := <-p.exit:
			if err != nil {
				t.Errorf("client process: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("a client process did not exit")
		}
	}
	if st := d.Server.Stats(); st.ClientsAccepted != 2 {
		t.Errorf("the daemon accepted %d clients, want 2", st.ClientsAccepted)
	}
}

// TestKillClient: a client process is killed (SIGKILL) while it and an
// in-process client stream RDMA WRITEs at each other. The daemon reaps it
// (its QP, MR and mapping counted), the in-process client's QP gets
// RETRY_EXC_ERR once its retries run out, and another pair of clients
// moves data, checked, before and after.
func TestKillClient(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a := newEnd(t, open(t, d, 0), verbs.QPTypeRC, peerBuf)
	b := startChild(t, "RNICD_TEST_ROLE=peer", "RNICD_TEST_ACTION=stream", "RNICD_TEST_SPEC="+d.Spec(0).String())
	bi, err := parsePeer(b.expect(t, "info "))
	if err != nil {
		t.Fatal(err)
	}
	// A short ACK timeout (4 ms) and 2 retries: a dead peer is noticed
	// within tens of milliseconds.
	if err := connectTo(a, bi, 10, 2); err != nil {
		t.Fatal(err)
	}
	b.say(t, "peer "+peerInfo{QPN: a.qp.QPN(), RKey: a.mr.RKey(), Addr: a.mr.Addr(), GID: a.dev.GIDs()[0]}.String())
	b.expect(t, "connected")
	b.expect(t, "streaming")

	// The other pair, running all along.
	x, y := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<16), newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<16)
	connect(t, x, y, nil)
	transfer := func(round int) {
		t.Helper()
		for i := range x.buf {
			x.buf[i] = byte(i + round)
		}
		if err := x.qp.PostSend(&verbs.SendWR{ID: uint64(round), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: sge(x, 0, len(x.buf)), RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, x.cq, verbs.WCSuccess, verbs.WCRDMAWrite)
		for i, v := range y.buf {
			if v != byte(i+round) {
				t.Fatalf("round %d: byte %d is %d, want %d", round, i, v, byte(i+round))
			}
		}
	}

	streamed := make(chan verbs.WC, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { streamed <- stream(a, bi, stop, nil) }()
	transfer(1)
	before := d.Server.Stats()
	time.Sleep(20 * time.Millisecond) // both directions under load
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.exit
	transfer(2)

	select {
	case wc := <-streamed:
		if wc.Status != verbs.WCRetryExcErr {
			t.Errorf("the dead client's peer got %v, want RETRY_EXC_ERR", wc.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dead client's peer got no error completion within 10s")
	}

	// Reaping is asynchronous to the kill: wait for it, bounded.
	deadline := time.Now().Add(10 * time.Second)
	var st = d.Server.Stats()
	for st.ClientsReaped == before.ClientsReaped && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		st = d.Server.Stats()
	}
	if st.ClientsReaped != before.ClientsReaped+1 || st.ReapedQPs < 1 || st.ReapedMRs < 1 || st.ReapedCQs < 1 ||
		st.ReapedPDs < 1 || st.ReapedBytes < peerBuf {
		t.Errorf("after the kill: %+v; want one client reaped with its QP, CQ, MR, PD and ≥ %d bytes", st, peerBuf)
	}
	transfer(3)
	for _, c := range d.Server.Clients() {
		if c.PID == int32(b.cmd.Process.Pid) {
			t.Errorf("the killed client (pid %d) is still listed", c.PID)
		}
	}
}

// waitStopped waits until every thread of process pid is stopped (kill
// returns before the other threads are).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			t.Skipf("cannot see the daemon's threads in /proc: %v", err)
		}
		stopped := true
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			// The state follows the command name in parentheses.
			if i := strings.LastIndexByte(string(b), ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
	}
	t.Fatal("the daemon did not stop within 5s of SIGSTOP")
}

// TestDaemonGone: the daemon process is killed (SIGKILL); a client's
// blocked wait and its call in flight return and its next verbs fail with
// ErrDaemonGone, within a bounded time. A daemon restarted on the same socket serves new
// clients.
func TestDaemonGone(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	start := func() *child {
		c := startChild(t, "RNICD_TEST_ROLE=daemon", "RNICD_TEST_SOCKET="+sock)
		c.expect(t, "ready")
		return c
	}
	daemon := start()
	spec := ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock}
	dev, err := ibv.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	e := newEnd(t, dev, verbs.QPTypeRC, 4096)
	if err := e.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	woke := make(chan time.Time, 1)
	go func() {
		<-e.cq.Notify() // blocks: no completion will come
		woke <- time.Now()
	}()
	// A call in flight: the daemon is stopped, so it cannot answer.
	if err := daemon.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, daemon.cmd.Process.Pid)
	called := make(chan error, 1)
	go func() {
		_, err := e.qp.Query()
		called <- err
	}()
	select {
	case err := <-called:
		t.Fatalf("Query answered by a stopped daemon: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	killed := time.Now()
	if err := daemon.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-daemon.exit
	select {
	case at := <-woke:
		t.Logf("blocked wait returned %v after the kill", at.Sub(killed))
	case <-time.After(5 * time.Second):
		t.Fatal("a wait on Notify still blocks 5s after the daemon died")
	}
	select {
	case err := <-called:
		if !isGone(err) {
			t.Errorf("the call in flight returned %v, want ErrDaemonGone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call in flight still blocks 5s after the daemon died")
	}
	if _, err := dev.AllocPD(); !errors.Is(err, client.ErrDaemonGone) {
		t.Errorf("AllocPD after the daemon died: %v, want ErrDaemonGone", err)
	}
	if err := e.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend}); !isGone(err) {
		t.Errorf("PostSend after the daemon died: %v, want ErrDaemonGone", err)
	}
	if err := e.cq.ReqNotify(false); !isGone(err) {
		t.Errorf("ReqNotify after the daemon died: %v, want ErrDaemonGone", err)
	}
	if n := e.cq.Poll(make([]verbs.WC, 4)); n != 0 {
		t.Errorf("Poll after the daemon died: %d", n)
	}
	if _, ok := <-dev.Events(); ok {
		t.Error("the Events channel is open after the daemon died")
	}

	// A new daemon on the same (now stale) socket.
	restarted := start()
	dev2, err := ibv.Open(spec)
	if err != nil {
		t.Fatalf("open the restarted daemon: %v", err)
	}
	if _, err := dev2.AllocPD(); err != nil {
		t.Errorf("restarted daemon: %v", err)
	}
	dev2.Close()
	restarted.in.Close() // the daemon role ends when its stdin does
	select {
	case err := <-restarted.exit:
		if err != nil {
			t.Errorf("restarted daemon: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the restarted daemon did not stop")
	}
}
