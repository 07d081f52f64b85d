package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// pipeDevice is an rnic NIC on an in-memory pipe: real verbs, no sockets.
func pipeDevice(t testing.TB) ibv.Device {
	t.Helper()
	a, b := transport.NewPipe()
	n, err := embedded.Open(embedded.UDPConfig{Name: "rnic0", Addr: netip.MustParseAddr("127.0.0.2"), Link: a})
	if err != nil {
		t.Fatal(err)
	}
	d := n.Verbs(nic.IBVOptions{})
	t.Cleanup(func() { d.Close(); b.Close() })
	return d
}

func startAgent(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Device == nil {
		cfg.Device = pipeDevice(t)
	}
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRefusesOtherAddresses: with --tester set, a connection from any
// other address is closed before a byte is answered; from the tester's
// address it is served.
func TestRefusesOtherAddresses(t *testing.T) {
	s := startAgent(t, Config{Tester: netip.MustParseAddr("127.0.0.9")})
	dial := func(from string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
		return d.Dial("tcp", s.Addr().String())
	}
	c, err := dial("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(`{"id":1,"op":"hello","args":{"version":1}}` + "\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 100)); n != 0 || err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stranger got %d bytes (%v), want the connection closed", n, err)
	}
	c.Close()
	c, err = dial("127.0.0.9")
	if err != nil {
		t.Fatal(err)
	}
	cl := agentproto.NewClient(c)
	defer cl.Close()
	if err := cl.Call(agentproto.OpHello, agentproto.Hello{Version: agentproto.Version}, nil); err != nil {
		t.Fatalf("the tester was refused: %v", err)
	}
}

// rawCall sends one line and returns the decoded response.
func rawCall(t *testing.T, c net.Conn, sc *bufio.Scanner, line string) agentproto.Response {
	t.Helper()
	c.Write([]byte(line + "\n"))
	if !sc.Scan() {
		t.Fatalf("%s: connection ended: %v", line, sc.Err())
	}
	var r agentproto.Response
	if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestProtocolErrors walks the protocol's error codes.
func TestProtocolErrors(t *testing.T) {
	s := startAgent(t, Config{})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := agentproto.NewScanner(bufio.NewReader(c))
	code := func(line string) string {
		r := rawCall(t, c, sc, line)
		if r.Error == nil {
			return ""
		}
		return r.Error.Code
	}
	steps := []struct{ line, want string }{
		{`{"id":1,"op":"create_pd"}`, agentproto.CodeVersion}, // hello first
		{`not json`, agentproto.CodeBadRequest},
		{`{"id":2,"op":"hello","args":{"version":1}}`, ""},
		{`{"id":3,"op":"frobnicate"}`, agentproto.CodeUnknownOp},
		{`{"id":4,"op":"destroy_qp","args":{"h":42}}`, agentproto.CodeNoObject},
		{`{"id":5,"op":"reg_mr","args":{"pd":"x"}}`, agentproto.CodeBadRequest},
		{`{"id":6,"op":"create_pd"}`, ""},
		{`{"id":7,"op":"reg_mr","args":{"pd":1,"len":0}}`, agentproto.CodeBadRequest},
		{`{"id":8,"op":"create_cq","args":{"cqe":-5}}`, agentproto.CodeVerbs},
		{`{"id":9,"op":"query_qp","args":{"h":1}}`, agentproto.CodeNoObject}, // handle 1 is the PD
		{`{"id":10,"op":"cm_listen","args":{"port":0}}`, agentproto.CodeUnsupported},
	}
	for _, s := range steps {
		if got := code(s.line); got != s.want {
			t.Errorf("%s: code %q, want %q", s.line, got, s.want)
		}
	}
	// A hello with another version ends the session.
	if got := code(`{"id":11,"op":"hello","args":{"version":99}}`); got != agentproto.CodeVersion {
		t.Errorf("hello version 99: %q", got)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if sc.Scan() {
		t.Errorf("the connection stayed open after a version mismatch: %q", sc.Text())
	}
}

// TestSession drives a QP's life through the client: objects, attributes
// in and out, memory, an empty poll, a send that fails, events, reset.
func TestSession(t *testing.T) {
	s := startAgent(t, Config{})
	cl, err := agentproto.Dial(context.Background(), s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	info, err := cl.DeviceInfo()
	if err != nil || info.Kind != "rnic" || info.Transport != "roce" || len(info.GIDs) != 1 || !info.Atomics {
		t.Fatalf("device_info: %+v %v", info, err)
	}
	pd, _ := cl.CreatePD()
	mr, err := cl.RegMR(agentproto.RegMR{PD: pd, Len: 256, Access: 0xF})
	if err != nil || mr.Len != 256 || mr.RKey == 0 {
		t.Fatalf("reg_mr: %+v %v", mr, err)
	}
	if err := cl.WriteMR(mr.H, 250, []byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.ReadMR(mr.H, 250, 6); err != nil || string(got) != "abcdef" {
		t.Fatalf("read_mr: %q %v", got, err)
	}
	if err := cl.WriteMR(mr.H, 251, []byte("abcdef")); err == nil {
		t.Fatal("write_mr past the end succeeded")
	}
	cq, _ := cl.CreateCQ(16)
	qp, err := cl.CreateQP(agentproto.CreateQP{PD: pd, Type: uint8(verbs.QPTypeRC), SendCQ: cq, RecvCQ: cq,
		Cap: agentproto.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil || qp.QPN == 0 {
		t.Fatalf("create_qp: %+v %v", qp, err)
	}
	if err := cl.ModifyQP(qp.H, agentproto.QPAttr{State: agentproto.U8(1), PKeyIndex: agentproto.U16(0),
		Port: agentproto.U8(1), Access: agentproto.U32(0xE)}); err != nil {
		t.Fatal(err)
	}
	a, err := cl.QueryQP(qp.H)
	if err != nil || *a.State != 1 || *a.Access != 0xE {
		t.Fatalf("query_qp: state %v access %v %v", a.State, a.Access, err)
	}
	// RTR without its required attributes is the device's error.
	err = cl.ModifyQP(qp.H, agentproto.QPAttr{State: agentproto.U8(2)})
	var pe *agentproto.Error
	if !errors.As(err, &pe) || pe.Code != agentproto.CodeVerbs {
		t.Fatalf("INIT→RTR without attributes: %v", err)
	}
	if err := cl.ModifyQP(qp.H, agentproto.QPAttr{PathMTU: agentproto.Int(1000)}); err == nil {
		t.Fatal("path_mtu 1000 accepted")
	}
	if wcs, err := cl.PollCQ(cq, 4, 20*time.Millisecond); err != nil || len(wcs) != 0 {
		t.Fatalf("poll: %v %v", wcs, err)
	}
	// Receives posted in INIT flush when the QP goes to ERR.
	if err := cl.PostRecv(qp.H, agentproto.RecvWR{ID: 7, SGL: []agentproto.SGE{{Addr: mr.Addr, Len: 16, LKey: mr.LKey}}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ModifyQP(qp.H, agentproto.QPAttr{State: agentproto.U8(uint8(verbs.QPSErr))}); err != nil {
		t.Fatal(err)
	}
	wcs, err := cl.PollCQ(cq, 1, 2*time.Second)
	if err != nil || len(wcs) != 1 || wcs[0].ID != 7 || wcs[0].StatusName != "WR_FLUSH_ERR" {
		t.Fatalf("the flushed receive: %+v %v", wcs, err)
	}
	if err := cl.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.QueryQP(qp.H); !errors.As(err, &pe) || pe.Code != agentproto.CodeNoObject {
		t.Fatalf("the QP outlived reset: %v", err)
	}
}

// FuzzSession feeds arbitrary lines to a session on a real device: every
// line gets a response with an id or a bad_request, never a panic.
func FuzzSession(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"op":"hello","args":{"version":1}}`,
		`{"id":2,"op":"create_pd"}`,
		`{"id":3,"op":"reg_mr","args":{"pd":2,"len":64,"access":15}}`,
		`{"id":4,"op":"create_cq","args":{"cqe":8}}`,
		`{"id":5,"op":"create_qp","args":{"pd":2,"type":2,"send_cq":4,"recv_cq":4,"cap":{"max_send_wr":2,"max_recv_wr":2,"max_send_sge":1,"max_recv_sge":1}}}`,
		`{"id":6,"op":"modify_qp","args":{"qp":5,"attr":{"state":1,"qp_access_flags":14,"ah_attr":{"dgid":"zz"}}}}`,
		`{"id":7,"op":"post_send","args":{"qp":5,"wrs":[{"opcode":2,"sg_list":[{"addr":0,"length":99999,"lkey":1}]}]}}`,
		`{"id":8,"op":"read_mr","args":{"mr":3,"offset":18446744073709551615,"len":8}}`,
		`{"id":9,"op":"poll_cq","args":{"cq":4,"max":-1}}`,
		`{"id":10,"op":"events","args":{"wait_ms":-3}}`,
		`{"id":11,"op":"attach_mcast","args":{"qp":5,"gid":"239.1.2.3"}}`,
		`{"id":12,"op":"detach_mcast","args":{"qp":5,"gid":"ff02::1"}}`,
		`{"id":13,"op":"reset"}`,
	} {
		f.Add(s)
	}
	dev := pipeDevice(f)
	defer func(d time.Duration) { maxPollWait = d }(maxPollWait)
	maxPollWait = 10 * time.Millisecond // waits the fuzzer asks for stay short
	srv := &Server{cfg: Config{Device: dev}, events: newEventLog(dev)}
	defer srv.events.close()
	f.Fuzz(func(t *testing.T, lines string) {
		s := &session{srv: srv, dev: dev, objs: map[uint32]any{}}
		defer s.reset()
		for _, l := range strings.Split(lines, "\n") {
			resp, _ := s.handle([]byte(l))
			if resp.Error != nil && (resp.Error.Code == "" || resp.Error.Message == "") {
				t.Fatalf("%q: an error without a code or message: %+v", l, resp.Error)
			}
		}
	})
}

// namedDevice is a device with another name and vendor, for kindOf.
type namedDevice struct {
	ibv.Device
	name   string
	vendor uint32
}

func (d namedDevice) Name() string { return d.name }

func (d namedDevice) Query() verbs.DeviceAttr {
	a := d.Device.Query()
	a.VendorID = d.vendor
	return a
}

func TestKindOf(t *testing.T) {
	base := pipeDevice(t)
	if k := kindOf(base); k != "rnic" {
		t.Errorf("an in-process NIC is %q", k)
	}
	for _, c := range []struct {
		name   string
		vendor uint32
		want   string
	}{
		{"rnic0", vendorRXE, "rnic"}, // an rnicd NIC: rnic's name, rxe's vendor ID
		{"rxe0", vendorRXE, "rxe"},
		{"rxe_eth0", vendorRXE, "rxe"},
		{"siw_lo", vendorSIW, "siw"},
		{"mlx5_0", 0x02c9, "mlx5"},
		{"irdma1", 0x8086, "irdma"},
	} {
		if k := kindOf(namedDevice{base, c.name, c.vendor}); k != c.want {
			t.Errorf("%s (vendor %#x) is %q, want %q", c.name, c.vendor, k, c.want)
		}
	}
}
