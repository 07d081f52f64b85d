// The control plane against a client that speaks garbage: every malformed
// message is refused (an error reply when it looks like a request), no
// descriptor it carried leaks, and the daemon goes on serving it and
// others. Also the socket's permissions and peer credentials.

package server_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	_ "github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// raw is a client speaking the protocol by hand.
type raw struct {
	t   *testing.T
	c   *net.UnixConn
	seq uint32
	fds int // descriptors the last reply carried (closed on receipt)
}

func dial(t *testing.T, sock string) *raw {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t: t, c: c}
}

func (r *raw) send(msg []byte, fds ...int) {
	r.t.Helper()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := r.c.WriteMsgUnix(msg, oob, nil); err != nil {
		r.t.Fatal(err)
	}
}

// request sends a request with body m and returns the reply's status and
// body (error message for an error).
func (r *raw) request(op proto.Op, m proto.Message, fds ...int) (proto.Status, []byte) {
	r.t.Helper()
	r.seq++
	r.send(proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindRequest, Seq: r.seq, NFDs: uint8(len(fds))}, m), fds...)
	return r.reply(r.seq)
}

func (r *raw) reply(seq uint32) (proto.Status, []byte) {
	r.t.Helper()
	buf := make([]byte, proto.MaxMessage)
	oob := make([]byte, 128)
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := r.c.ReadMsgUnix(buf, oob)
	if err != nil {
		r.t.Fatalf("no reply: %v", err)
	}
	r.fds = 0
	if oobn > 0 {
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for i := range msgs {
			fds, _ := unix.ParseUnixRights(&msgs[i])
			r.fds += len(fds)
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
	h, body, err := proto.DecodeMessage(buf[:n], r.fds)
	if err != nil && oobn == 0 {
		r.t.Fatalf("reply: %v", err)
	}
	if h.Kind != proto.KindReply || h.Seq != seq {
		r.t.Fatalf("reply %+v to seq %d", h, seq)
	}
	if h.Status != proto.StatusOK {
		rd := proto.NewReader(body)
		return h.Status, []byte(rd.String(proto.MaxErrorLen))
	}
	return h.Status, body
}

func (r *raw) expect(op proto.Op, m proto.Message, want proto.Status, fds ...int) string {
	r.t.Helper()
	st, body := r.request(op, m, fds...)
	if st != want {
		r.t.Errorf("%v: status %d (%s), want %d", op, st, body, want)
	}
	return string(body)
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

func TestMalformedMessages(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)

	// Before OPEN, nothing but OPEN.
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusNoDevice)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: 99, Name: "rnic0"}, proto.StatusVersion)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "nosuch"}, proto.StatusNoDevice)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusInvalid)

	before := d.Server.Stats().BadMessages
	// Garbage that is not even a header: counted, not answered.
	// (An empty datagram would end the session: on SOCK_SEQPACKET it
	// reads as end of file.)
	r.send([]byte{1, 2, 3})
	// A request whose header lies about its body.
	msg := proto.AppendMessage(nil, proto.Header{Op: proto.OpAllocPD, Kind: proto.KindRequest, Seq: 100}, &proto.Empty{})
	msg[12] = 9
	r.send(msg)
	if st, _ := r.reply(100); st != proto.StatusBadMessage {
		t.Errorf("body length lie: status %d", st)
	}
	// A body too short, too long, with a bad field.
	r.expect(proto.OpCreateQP, &proto.Handle{H: 1}, proto.StatusBadMessage)
	r.expect(proto.OpAllocPD, &proto.Handle{H: 1}, proto.StatusBadMessage)
	r.seq++
	bad := proto.AppendMessage(nil, proto.Header{Op: proto.OpGIDIndex, Kind: proto.KindRequest, Seq: r.seq}, &proto.GID{})
	bad[proto.HeaderLen] = 7 // address family 7
	r.send(bad)
	if st, _ := r.reply(r.seq); st != proto.StatusBadMessage {
		t.Errorf("address family 7: status %d", st)
	}
	// Unknown ops, and kinds a client must not send.
	r.expect(proto.Op(0x7777), &proto.Empty{}, proto.StatusUnknownOp)
	r.send(proto.AppendMessage(nil, proto.Header{Op: proto.OpAllocPD, Kind: proto.KindReply, Seq: 1}, &proto.Empty{}))
	r.send(proto.AppendMessage(nil, proto.Header{Op: proto.OpEvent, Kind: proto.KindEvent}, &proto.Event{}))
	// Oversized: the socket truncates it and says so.
	r.seq++
	big := proto.AppendMessage(nil, proto.Header{Op: proto.OpAllocPD, Kind: proto.KindRequest, Seq: r.seq}, &proto.Empty{})
	big = append(big, make([]byte, proto.MaxMessage)...)
	r.send(big)
	if st, _ := r.reply(r.seq); st != proto.StatusBadMessage {
		t.Errorf("oversized message: status %d", st)
	}
	// Handles of nothing.
	r.expect(proto.OpDeallocPD, &proto.Handle{H: 12345}, proto.StatusBadHandle)
	r.expect(proto.OpDestroyQP, &proto.Handle{H: 0}, proto.StatusBadHandle)
	// A notice naming nothing gets no reply, so the next reply is for
	// the next request.
	r.send(proto.AppendMessage(nil, proto.Header{Op: proto.OpKickCQ, Kind: proto.KindNotice}, &proto.Handle{H: 1}))
	_, pdBody := r.request(proto.OpAllocPD, &proto.Empty{})
	var pd proto.Handle
	pd.Decode(proto.NewReader(pdBody))
	r.expect(proto.OpDestroyCQ, &proto.Handle{H: pd.H}, proto.StatusBadHandle) // a PD is no CQ
	if got := d.Server.Stats().BadMessages - before; got != 8 {
		t.Errorf("%d bad messages counted, want 8", got)
	}

	// Memory registrations with bad descriptors, and descriptors sent
	// with requests that take none: every one is closed.
	fdsBefore := openFDs(t)
	pr, pw, _ := os.Pipe()
	r.expect(proto.OpRegMR, &proto.RegMRReq{PD: pd.H, FileSize: 4096, Length: 4096}, proto.StatusBadMessage)
	r.expect(proto.OpRegMR, &proto.RegMRReq{PD: pd.H, FileSize: 4096, Length: 4096}, proto.StatusInvalid, int(pr.Fd()))
	unsealed, _ := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	unix.Ftruncate(unsealed, 4096)
	if msg := r.expect(proto.OpRegMR, &proto.RegMRReq{PD: pd.H, FileSize: 4096, Length: 4096}, proto.StatusInvalid, unsealed); !strings.Contains(msg, "sealed") {
		t.Errorf("unsealed memfd refused with %q, want the seal named", msg)
	}
	sh, _ := memory.NewShared(4096)
	r.expect(proto.OpRegMR, &proto.RegMRReq{PD: pd.H, FileSize: 8192, Length: 4096}, proto.StatusInvalid, sh.Fd())
	r.expect(proto.OpRegMR, &proto.RegMRReq{PD: pd.H, FileSize: 4096, Offset: 4000, Length: 100}, proto.StatusInvalid, sh.Fd())
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK, sh.Fd(), sh.Fd()) // descriptors an op does not take are closed
	r.seq++
	r.send(proto.AppendMessage(nil, proto.Header{Op: proto.OpAllocPD, Kind: proto.KindRequest, Seq: r.seq, NFDs: 4}, &proto.Empty{}),
		sh.Fd(), sh.Fd(), sh.Fd(), sh.Fd(), sh.Fd())
	if st, _ := r.reply(r.seq); st != proto.StatusBadMessage {
		t.Errorf("5 descriptors: status %d", st)
	}
	// A good registration still works on this connection.
	r.expect(proto.OpRegMR, &proto.RegMRReq{PD: pd.H, Access: uint32(memory.LocalWrite), FileSize: 4096, Length: 4096, IOVA: 1 << 20}, proto.StatusOK, sh.Fd())
	pr.Close()
	pw.Close()
	unix.Close(unsealed)
	sh.Close()
	// The registration's mapping holds no descriptor (the daemon closes
	// its dup of the memfd once mapped): nothing more is open than before.
	if after := openFDs(t); after != fdsBefore {
		t.Errorf("%d descriptors open before, %d after: the daemon leaked some", fdsBefore, after)
	}

	// Another client is served as if nothing happened.
	a, err := ibv.Open(d.Spec(0))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.AllocPD(); err != nil {
		t.Errorf("another client after the garbage: %v", err)
	}
}

// TestLimitsNameTheFlag: a limit error says which rnicd flag raises it.
func TestLimitsNameTheFlag(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxObjects: 1}})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK)
	if msg := r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 4}, proto.StatusLimit); !strings.Contains(msg, "--max-objects") {
		t.Errorf("limit error %q does not name the flag", msg)
	}
}

func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "rnic")
	sock := filepath.Join(dir, "rnicd.sock")
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, sock: 0o600 | os.ModeSocket} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
	if _, err := server.Listen(sock); err == nil || !strings.Contains(err.Error(), "another daemon") {
		t.Errorf("second Listen on a served socket: %v", err)
	}
	// A stale socket (its daemon died without removing it) is taken over.
	f, _ := l.File()
	l.SetUnlinkOnClose(false)
	l.Close()
	f.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the stale socket should still exist: %v", err)
	}
	l2, err := server.Listen(sock)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Listen(sock); err == nil {
		t.Error("Listen over a regular file succeeded")
	}
}

func TestPeerCredentials(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev, err := ibv.Open(d.Spec(0))
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	pd, _ := dev.AllocPD()
	cq, _ := dev.CreateCQ(8)
	if _, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	cs := d.Server.Clients()
	if len(cs) != 1 || cs[0].PID != int32(os.Getpid()) || cs[0].UID != uint32(os.Getuid()) || cs[0].Device != "rnic0" || cs[0].QPs != 1 {
		t.Errorf("clients %+v, want this process with one QP on rnic0", cs)
	}
	if err := d.Server.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.AllocPD(); err == nil {
		t.Error("a verb after the server closed succeeded")
	}
	st := d.Server.Stats()
	if st.ClientsReaped != 1 || st.ReapedQPs != 1 || st.ReapedCQs != 1 || st.ReapedPDs != 1 {
		t.Errorf("after Close: %+v", st)
	}
	if !errors.Is(d.Server.Close(), server.ErrServerClosed) {
		t.Error("second Close did not say the server is closed")
	}
}

func TestStatsCounters(t *testing.T) {
	st := server.Stats{ClientsAccepted: 1, AcceptErrors: 15}
	cs := st.Counters()
	names := map[string]bool{}
	for _, c := range cs {
		if c.Name == "" || names[c.Name] {
			t.Errorf("counter name %q empty or repeated", c.Name)
		}
		names[c.Name] = true
	}
	if cs[0] != (ibv.Counter{Name: "clients_accepted", Value: 1}) || cs[len(cs)-1] != (ibv.Counter{Name: "accept_errors", Value: 15}) {
		t.Errorf("counters %v", cs)
	}
}
