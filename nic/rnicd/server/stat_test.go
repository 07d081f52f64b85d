// The stat ops: asked before OPEN, listings complete and in order however
// they are paged, and another user's clients hidden from an unprivileged
// client.

package server_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// openWithCQ opens the NIC of spec as a client (closed when the test
// ends) with a PD and a CQ of cqe entries.
func openWithCQ(t *testing.T, spec ibv.Spec, cqe int) (ibv.Device, ibv.PD, ibv.CQ) {
	t.Helper()
	dev, err := ibv.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(cqe)
	if err != nil {
		t.Fatal(err)
	}
	return dev, pd, cq
}

// clientWithQPs opens NIC i of d and creates n RC QPs (in RESET).
func clientWithQPs(t *testing.T, spec ibv.Spec, n int) (ibv.Device, []uint32) {
	t.Helper()
	dev, pd, cq := openWithCQ(t, spec, 8)
	var qpns []uint32
	for range n {
		qp, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		qpns = append(qpns, qp.QPN())
	}
	return dev, qpns
}

func TestStatBeforeOpen(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	r := dial(t, d.Socket)
	var rep proto.StatDaemonReply
	st, body := r.request(proto.OpStatDaemon, &proto.Empty{})
	if st != proto.StatusOK {
		t.Fatalf("STAT_DAEMON before OPEN: status %d (%s)", st, body)
	}
	rd := proto.NewReader(body)
	rep.Decode(rd)
	if err := rd.Done(); err != nil || rep.PID != uint32(os.Getpid()) || len(rep.Counters) == 0 {
		t.Errorf("STAT_DAEMON reply %+v, %v", rep, err)
	}
	// Admin ops only: the verbs still need a device.
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusNoDevice)
	// A malformed page is refused as such.
	r.send(proto.AppendMessage(nil, proto.Header{Op: proto.OpStatQPs, Kind: proto.KindRequest, Seq: 99}, &proto.StatPage{}))
	if st, _ := r.reply(99); st != proto.StatusBadMessage {
		t.Errorf("STAT_QPS with a short body: status %d, want %d", st, proto.StatusBadMessage)
	}
}

// TestStatPages: pages of one entry give the same listing as one page,
// complete, in order, without the asking connection.
func TestStatPages(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	var all []uint32
	for _, nic := range []int{0, 1, 0} {
		_, qpns := clientWithQPs(t, d.Spec(nic), 3)
		all = append(all, qpns...)
	}
	whole, err := client.QueryStat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	// The first query's connection is reaped after it hangs up; until
	// then a second listing shows it as a client of no device. Ask again
	// (for up to 5 s) while it is still there.
	var paged *client.Stat
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		restore := server.SetStatBudget(0)
		paged, err = client.QueryStat(d.Socket)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if len(paged.Clients) == len(whole.Clients) || time.Now().After(deadline) {
			break
		}
	}
	if !reflect.DeepEqual(whole.Devices, paged.Devices) || !reflect.DeepEqual(whole.Clients, paged.Clients) || !reflect.DeepEqual(whole.QPs, paged.QPs) {
		t.Errorf("paged listing differs:\n whole %+v\n paged %+v", whole, paged)
	}
	if len(whole.Devices) != 2 || whole.Devices[0].Name != "rnic0" || whole.Devices[1].Name != "rnic1" || len(whole.Devices[0].Counters) == 0 {
		t.Errorf("devices %+v, want rnic0 and rnic1 with counters", whole.Devices)
	}
	if len(whole.Clients) != 3 || whole.Clients[0].Device != "rnic0" || whole.Clients[1].Device != "rnic1" || whole.Clients[2].QPs != 3 {
		t.Errorf("clients %+v, want the three, by ID, with 3 QPs each", whole.Clients)
	}
	var got []uint32
	for i, q := range whole.QPs {
		got = append(got, q.QPN)
		if i > 0 {
			p := whole.QPs[i-1]
			if p.Client > q.Client || (p.Client == q.Client && p.QPN >= q.QPN) {
				t.Errorf("QPs out of order at %d: %+v after %+v", i, q, p)
			}
		}
		if q.State != verbs.QPSReset || q.Type != verbs.QPTypeRC || q.DestQPN != 0 {
			t.Errorf("QP %+v, want RC in RESET with no peer", q)
		}
	}
	slices.Sort(got)
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Errorf("QPNs listed %v, want %v", got, all)
	}
}

// statChildEnv names the socket a TestStatChild run asks.
const statChildEnv = "RNICD_STAT_CHILD_SOCKET"

// TestStatChild is TestStatUnprivileged's other process: it opens rnic0
// with one QP, asks for the statistics and prints them as JSON.
func TestStatChild(t *testing.T) {
	sock := os.Getenv(statChildEnv)
	if sock == "" {
		t.Skip("run by TestStatUnprivileged as another user")
	}
	clientWithQPs(t, ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock}, 1)
	st, err := client.QueryStat(sock)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	os.Stdout.Write(append(append([]byte("STAT "), b...), '\n'))
}

// TestStatUnprivileged: a client of another uid (not root) sees its own
// client and QP only, and is told so; the daemon's uid sees both.
func TestStatUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs a client as uid 65534")
	}
	d := rnicdtest.Start(t, rnicdtest.Options{})
	_, mine := clientWithQPs(t, d.Spec(0), 1)
	// Let the other user reach the socket (rnicd makes it owner-only).
	for dir := filepath.Dir(d.Socket); dir != filepath.Dir(dir) && strings.HasPrefix(dir, os.TempDir()+"/"); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d.Socket, 0o666); err != nil {
		t.Fatal(err)
	}
	// A copy of this test binary the other user may run.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(d.Socket), "stat.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestStatChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), statChildEnv+"="+d.Socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	var seen client.Stat
	for line := range strings.SplitSeq(string(out), "\n") {
		if js, ok := strings.CutPrefix(line, "STAT "); ok {
			if err := json.Unmarshal([]byte(js), &seen); err != nil {
				t.Fatal(err)
			}
		}
	}
	if seen.Daemon.All || seen.Daemon.PID != uint32(os.Getpid()) || len(seen.Daemon.Counters) == 0 || len(seen.Devices) != 1 {
		t.Errorf("the other user's view of the daemon: %+v, %d devices; want view own, the daemon's counters, rnic0",
			seen.Daemon, len(seen.Devices))
	}
	if len(seen.Clients) != 1 || seen.Clients[0].UID != 65534 || seen.Clients[0].QPs != 1 {
		t.Errorf("the other user sees clients %+v, want only its own", seen.Clients)
	}
	if len(seen.QPs) != 1 || seen.QPs[0].QPN == mine[0] {
		t.Errorf("the other user sees QPs %+v, want only its own (not %#x)", seen.QPs, mine[0])
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
