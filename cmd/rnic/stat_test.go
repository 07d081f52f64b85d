package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

// statEnd is a client's QP with what it needs for a WRITE.
type statEnd struct {
	dev ibv.Device
	pd  ibv.PD
	cq  ibv.CQ
	qp  ibv.QP
	buf []byte
	mr  ibv.MR
}

func newStatEnd(t *testing.T, dev ibv.Device) *statEnd {
	t.Helper()
	e := &statEnd{dev: dev}
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	b, err := dev.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	e.buf = b.Bytes()
	if e.mr, err = dev.RegMR(e.pd, e.buf, memory.LocalWrite|memory.RemoteWrite); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = dev.CreateCQ(16); err != nil {
		t.Fatal(err)
	}
	e.qp = e.newQP(t)
	return e
}

func (e *statEnd) newQP(t *testing.T) ibv.QP {
	t.Helper()
	qp, err := e.dev.CreateQP(e.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

func toInit(t *testing.T, qp ibv.QP) {
	t.Helper()
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		t.Fatalf("INIT: %v", err)
	}
}

// connectStat takes a's and b's QPs to RTS, each aimed at the other.
func connectStat(t *testing.T, a, b *statEnd) {
	t.Helper()
	for _, p := range [][2]*statEnd{{a, b}, {b, a}} {
		me, peer := p[0], p[1]
		toInit(t, me.qp)
		if err := me.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: 1,
			AV: verbs.AddressVector{DGID: peer.dev.GIDs()[0], HopLimit: 64, PortNum: 1}, MaxDestRdAtomic: 1, MinRNRTimer: 1},
			verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
			t.Fatalf("RTR: %v", err)
		}
		if err := me.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
			t.Fatalf("RTS: %v", err)
		}
	}
}

// statJSON is rnic stat --json as a test reads it.
type statJSON struct {
	Daemon *struct {
		PID  uint32 `json:"pid"`
		View string `json:"view"`
	} `json:"daemon"`
	Links []struct {
		Dev   string   `json:"dev"`
		State string   `json:"state"`
		MTU   int      `json:"mtu"`
		GIDs  []string `json:"gids"`
	} `json:"links"`
	Clients []struct {
		ID      uint64 `json:"id"`
		PID     int32  `json:"pid"`
		Comm    string `json:"comm"`
		Dev     string `json:"dev"`
		QPs     int    `json:"qps"`
		MRs     int    `json:"mrs"`
		Objects int    `json:"objects"`
		MRBytes uint64 `json:"mr_bytes"`
	} `json:"clients"`
	QPs []struct {
		LQPN   uint32 `json:"lqpn"`
		RQPN   uint32 `json:"rqpn"`
		Type   string `json:"type"`
		State  string `json:"state"`
		Client uint64 `json:"client"`
		PID    int32  `json:"pid"`
	} `json:"qps"`
	Counters []struct {
		Scope    string            `json:"scope"`
		Dev      string            `json:"dev"`
		Counters map[string]uint64 `json:"counters"`
	} `json:"counters"`
}

func statOf(t *testing.T, args ...string) statJSON {
	t.Helper()
	out, errOut, code := rnic(t, append([]string{"stat", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("rnic stat --json %q: status %d: %s", args, code, errOut)
	}
	var s statJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("rnic stat --json does not parse: %v\n%s", err, out)
	}
	return s
}

func (s statJSON) counter(scope, name string) (uint64, bool) {
	for _, c := range s.Counters {
		if c.Scope == scope {
			v, ok := c.Counters[name]
			return v, ok
		}
	}
	return 0, false
}

// TestStat: a daemon with two clients holding RC QPs; rnic stat lists the
// link, both clients, their QPs in their states with their peers, and
// port counters that move with traffic; the daemon's counters count a
// client that leaves.
func TestStat(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{MTU: 9000})
	sock := d.Socket
	// client.Open, not ibv.Open: other tests of this package swap the
	// registered daemon backend.
	devA, err := client.Open(d.Spec(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { devA.Close() })
	devB, err := client.Open(d.Spec(0))
	if err != nil {
		t.Fatal(err)
	}
	defer devB.Close()
	a, b := newStatEnd(t, devA), newStatEnd(t, devB)
	connectStat(t, a, b)
	idle := b.newQP(t) // B's second QP stays in INIT
	toInit(t, idle)

	before := statOf(t, "--socket", sock)
	if before.Daemon == nil || before.Daemon.PID != uint32(os.Getpid()) || before.Daemon.View != "all" {
		t.Errorf("daemon: %+v, want this process's pid and view all (the test runs as the daemon's uid)", before.Daemon)
	}
	if len(before.Links) != 1 || before.Links[0].Dev != "rnic0" || before.Links[0].State != "ACTIVE" ||
		before.Links[0].MTU != 4096 || len(before.Links[0].GIDs) == 0 || before.Links[0].GIDs[0] != devA.GIDs()[0].String() {
		t.Errorf("links: %+v, want rnic0 ACTIVE mtu 4096 gid %v", before.Links, devA.GIDs()[0])
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	wantComm := strings.TrimSpace(string(comm))
	if len(before.Clients) != 2 {
		t.Fatalf("%d clients listed, want 2 (the asking connection is not one): %+v", len(before.Clients), before.Clients)
	}
	qpsOf := map[uint64]int{}
	for _, c := range before.Clients {
		if c.PID != int32(os.Getpid()) || c.Comm != wantComm || c.Dev != "rnic0" || c.MRs != 1 || c.MRBytes < 4096 {
			t.Errorf("client %+v: want pid %d comm %q dev rnic0, 1 MR of at least 4096 bytes", c, os.Getpid(), wantComm)
		}
		qpsOf[c.ID] = c.QPs
	}
	// Both clients' QPs, each RC in its state, connected ones with their
	// peer's QPN.
	want := map[uint32]struct {
		rqpn  uint32
		state string
		qps   int
	}{
		a.qp.QPN(): {b.qp.QPN(), "RTS", 1},
		b.qp.QPN(): {a.qp.QPN(), "RTS", 2},
		idle.QPN(): {0, "INIT", 2},
	}
	if len(before.QPs) != len(want) {
		t.Errorf("%d QPs listed, want %d: %+v", len(before.QPs), len(want), before.QPs)
	}
	for _, q := range before.QPs {
		w, ok := want[q.LQPN]
		if !ok || q.RQPN != w.rqpn || q.State != w.state || q.Type != "RC" || qpsOf[q.Client] != w.qps || q.PID != int32(os.Getpid()) {
			t.Errorf("QP %+v: want rqpn %d state %s type RC of the client with %d QPs", q, w.rqpn, w.state, w.qps)
		}
	}

	// Traffic: a WRITE from A into B moves the port's packet counters.
	copy(a.buf, "stat me")
	if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 7, LKey: a.mr.LKey()}}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	wc := make([]verbs.WC, 1)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if a.cq.Poll(wc) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no WRITE completion within 10 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
	if wc[0].Status != verbs.WCSuccess {
		t.Fatalf("WRITE: %v", wc[0].Status)
	}
	after := statOf(t, "--socket", sock, "counters")
	if after.Daemon != nil || after.Clients != nil || after.QPs != nil || after.Links != nil {
		t.Errorf("rnic stat counters printed more than counters: %+v", after)
	}
	for _, name := range []string{"sent_pkts", "rcvd_pkts"} {
		v0, ok0 := before.counter("link", name)
		v1, ok1 := after.counter("link", name)
		if !ok0 || !ok1 || v1 <= v0 {
			t.Errorf("link counter %s: %d (%v) before the WRITE, %d (%v) after; want it to grow", name, v0, ok0, v1, ok1)
		}
	}

	// The text form, line by line as the rdma tool prints.
	out, errOut, code := rnic(t, "stat", "-d", "rnic0@"+sock)
	if code != 0 {
		t.Fatalf("rnic stat -d: status %d: %s", code, errOut)
	}
	for _, re := range []string{
		fmt.Sprintf(`(?m)^daemon pid %d uid \d+ view all$`, os.Getpid()),
		fmt.Sprintf(`(?m)^link rnic0/1 state ACTIVE mtu 4096 link_mtu 9000 gid %s$`, regexp.QuoteMeta(devA.GIDs()[0].String())),
		// objects: the PD, the CQ and the completion channel the Go
		// client puts its CQs on (protocol version 6).
		fmt.Sprintf(`(?m)^client \d+ pid %d uid \d+ comm %s dev rnic0 qps 2 mrs 1 objects 3 mr_bytes \d+ wrs 0 completions 0 doorbells 0 errors 0$`, os.Getpid(), regexp.QuoteMeta(wantComm)),
		// The writer: one WRITE, one completion.
		fmt.Sprintf(`(?m)^client \d+ pid %d uid \d+ comm %s dev rnic0 qps 1 mrs 1 objects 3 mr_bytes \d+ wrs 1 completions 1 doorbells \d+ errors 0$`, os.Getpid(), regexp.QuoteMeta(wantComm)),
		`(?m)^counter client \d+ requests \d+ request_errors 0 limit_rejections 0 send_wrs 1 recv_wrs 0 completions 1 `,
		fmt.Sprintf(`(?m)^qp link rnic0/1 lqpn %d rqpn %d type RC state RTS pid %d comm %s client \d+$`, a.qp.QPN(), b.qp.QPN(), os.Getpid(), regexp.QuoteMeta(wantComm)),
		fmt.Sprintf(`(?m)^qp link rnic0/1 lqpn %d type RC state INIT pid \d+ comm \S+ client \d+$`, idle.QPN()),
		`(?m)^counter link rnic0/1 sent_pkts [1-9]\d* rcvd_pkts [1-9]\d* `,
		`(?m)^counter rnicd clients_accepted \d+ clients_reaped \d+ `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("rnic stat output has no line matching %s:\n%s", re, out)
		}
	}

	// A client that leaves is reaped and counted.
	devB.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := statOf(t, "--socket", sock)
		v, _ := s.counter("rnicd", "reaped_qps")
		if len(s.Clients) == 1 && len(s.QPs) == 1 && v == 2 {
			if r, _ := s.counter("rnicd", "clients_reaped"); r < 1 {
				t.Errorf("clients_reaped %d after a client left", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after client B left: %d clients, %d QPs, reaped_qps %d; want 1, 1, 2", len(s.Clients), len(s.QPs), v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStatUsage(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--help"}, 0, "uid is 0 or the daemon's sees every client", ""},
		{[]string{"--socket", d.Socket, "bogus"}, 2, "", `unknown listing "bogus"`},
		{[]string{"--socket", d.Socket, "qp", "link"}, 2, "", `unexpected argument "link"`},
		{[]string{"-d", "rnic0"}, 2, "", "give NAME@SOCKET"},
		{[]string{"-d", "rnic0@" + d.Socket, "--socket", "/elsewhere"}, 2, "", "name two daemons"},
		{[]string{"-d", "rnic7@" + d.Socket}, 1, "", "serves no device rnic7"},
		{[]string{"--socket", d.Socket + ".none"}, 1, "", "rnicd at " + d.Socket + ".none"},
		{[]string{"--socket", d.Socket, "link"}, 0, "link rnic0/1 state ACTIVE", ""},
		{[]string{"--socket", d.Socket, "clients"}, 0, "", ""},
	} {
		out, errOut, code := rnic(t, append([]string{"stat"}, c.args...)...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
			t.Errorf("rnic stat %q: status %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out, errOut, c.code, c.stdout, c.stderr)
		}
	}
	// No clients: the listing is empty, not an error. The daemon reaps
	// the connections of the stat runs above once it reads their end,
	// which may come after the next run connects.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, _, _ := rnic(t, "stat", "--socket", d.Socket, "clients")
		if out == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("rnic stat clients with no clients printed %q", out)
			break
		}
	}
}
