package perf

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/rnic/rnic/cmd/internal/loopback"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// Side-channel payloads of perftest 4.5 (bookworm's) in
// testdata/captures/rxe-write-bw-64.pcap: ib_write_bw -s 64 -n 100, client
// 10.77.0.12, server 10.77.0.11 (tshark -Y 'tcp.port==18515 &&
// tcp.len>0' -e tcp.payload).
const (
	capVersion   = "362e3036000000000000000000000000"
	capCycle     = "00001000"
	capCacheLine = "00000040"
	capMTU       = "3300"
	capClientKey = "303030303a303030313a3030303031333a3133376535633a30303030303438623a303030303535646464383566393030303a30303a30303a30303a30303a30303a30303a30303a30303a30303a30303a66663a66663a30613a34643a30303a30633a30303030303030303a00"
	capServerKey = "303030303a303030313a3030303031333a3133376535633a30303030303431363a303030303535633830613062613030303a30303a30303a30303a30303a30303a30303a30303a30303a30303a30303a66663a66663a30613a34643a30303a30623a30303030303030303a00"
	// The client's bw report, field by field, and the server's (whatever
	// its unset report held).
	capClientReport = "0000000000000040" + "0000000000000064" + "3fe73e46e15ca326" + "3fe60c21910cf704" + "3f871e4ce92a26ea"
	capServerReport = "00007ffed6e8df74" + "00007fcac41f711a" + "0000000000000006" + "00007ffed6f74300" + "00007ffed6e8df74"
	capDone         = "646f6e6500"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPerftestMessagesGolden: rnic's messages are perftest's bytes (the
// version up to its NUL; after it rnic's mark, which perftest's atof
// ignores), and rnic reads perftest's.
func TestPerftestMessagesGolden(t *testing.T) {
	v := versionMsg()
	if capV := unhex(t, capVersion); !bytes.Equal(v[:5], capV[:5]) || len(v) != len(capV) {
		t.Errorf("version %x, perftest's %x", v, capV)
	}
	if ver, rnic, err := ParseVersion(unhex(t, capVersion)); err != nil || rnic || ver != 6.06 {
		t.Errorf("perftest's version: %v %v %v", ver, rnic, err)
	}
	if ver, rnic, err := ParseVersion(v[:]); err != nil || !rnic || ver != 6.06 {
		t.Errorf("rnic's version: %v %v %v", ver, rnic, err)
	}
	if c, l := sysDataMsg(cycleBuffer), sysDataMsg(cacheLineSize); hex.EncodeToString(c[:]) != capCycle || hex.EncodeToString(l[:]) != capCacheLine {
		t.Errorf("system data %x %x", c, l)
	}
	if m := mtuMsg(verbs.MTU1024); hex.EncodeToString(m[:]) != capMTU {
		t.Errorf("MTU message %x, want %s", m, capMTU)
	}
	if m, err := ParseMTU(unhex(t, capMTU)); err != nil || m != verbs.MTU1024 {
		t.Errorf("ParseMTU: %v %v", m, err)
	}
	for _, capKey := range []string{capClientKey, capServerKey} {
		k, err := ParseKey(unhex(t, capKey))
		if err != nil {
			t.Fatal(err)
		}
		if m := k.MarshalGID(); hex.EncodeToString(m[:]) != capKey {
			t.Errorf("key %+v marshals to %x, perftest sent %s", k, m, capKey)
		}
	}
	rep, err := ParseBWReport(unhex(t, capClientReport))
	if err != nil || rep.Size != 64 || rep.Iters != 100 || math.Abs(rep.PeakMBps-0.73) > 0.005 || math.Abs(rep.AvgMBps-0.69) > 0.005 {
		t.Errorf("client's report %+v %v (the log says 64 100 0.73 0.69)", rep, err)
	}
	var got []byte
	for _, f := range rep.fields() {
		got = append(got, f[:]...)
	}
	if hex.EncodeToString(got) != capClientReport {
		t.Errorf("report fields %x, want %s", got, capClientReport)
	}
	if hex.EncodeToString(doneMsg[:]) != capDone {
		t.Errorf("done %x", doneMsg)
	}
	// Bad input is an error, never a panic.
	for _, b := range [][]byte{nil, []byte("6.06"), []byte("x.yz\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
		[]byte("5.60\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")} {
		if _, _, err := ParseVersion(b); err == nil {
			t.Errorf("ParseVersion(%q) accepted", b)
		}
	}
	for _, b := range []string{"", "3", "6\x00", "0\x00", "33"} {
		if _, err := ParseMTU([]byte(b)); err == nil {
			t.Errorf("ParseMTU(%q) accepted", b)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	f.Add(unhex(f, capVersion))
	v := versionMsg()
	f.Add(v[:])
	f.Fuzz(func(t *testing.T, b []byte) { ParseVersion(b) })
}

func FuzzParseMTU(f *testing.F) {
	f.Add(unhex(f, capMTU))
	f.Fuzz(func(t *testing.T, b []byte) { ParseMTU(b) })
}

func FuzzParseBWReport(f *testing.F) {
	f.Add(unhex(f, capClientReport))
	f.Fuzz(func(t *testing.T, b []byte) { ParseBWReport(b) })
}

// fakePerftestServer plays ib_write_bw's server on conn, byte for byte
// as in the capture, except its key messages, which name the QP of s (a
// real NIC's, so that the client's WRITEs land). Every message of the
// client is checked as it arrives; the first difference is returned.
func fakePerftestServer(conn net.Conn, s *side, size, iters int) error {
	read := func(what string, n int) ([]byte, error) {
		b := make([]byte, n)
		if _, err := io.ReadFull(conn, b); err != nil {
			return nil, errors.New(what + ": " + err.Error())
		}
		return b, nil
	}
	expect := func(what, want string) error {
		b, err := read(what, len(want)/2)
		if err == nil && hex.EncodeToString(b) != want {
			err = errors.New(what + ": got " + hex.EncodeToString(b) + ", want " + want)
		}
		return err
	}
	write := func(h string) error {
		_, err := conn.Write(unhex(nopTB{}, h))
		return err
	}
	key := s.key(0).MarshalGID()
	var clientKey []byte
	keyStep := func(what string, first bool) error {
		b, err := read(what, KeyMsgSizeGID)
		if err != nil {
			return err
		}
		k, err := ParseKey(b)
		if err != nil {
			return errors.New(what + ": " + err.Error())
		}
		if first {
			clientKey = b
			if k.GID != netip.MustParseAddr("::ffff:127.0.0.3").As16() || k.OutReads != 1 || k.LID != 0 {
				return errors.New(what + ": key " + string(b))
			}
			if err := s.connect(0, k); err != nil {
				return err
			}
		} else if !bytes.Equal(b, clientKey) {
			return errors.New(what + ": a hand shake must repeat QP 0's key: " + string(b))
		}
		_, err = conn.Write(key[:])
		return err
	}
	// The client's version: perftest's "6.06", its NUL, then rnic's mark.
	b, err := read("version", versionSize)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte("6.06\x00")) {
		return errors.New("version " + hex.EncodeToString(b))
	}
	steps := []func() error{
		func() error { return write(capVersion) },
		func() error { return expect("cycle buffer", capCycle) },
		func() error { return write(capCycle) },
		func() error { return expect("cache line", capCacheLine) },
		func() error { return write(capCacheLine) },
		func() error { return expect("MTU", capMTU) },
		func() error { return write(capMTU) },
		func() error { return keyStep("key", true) },
		func() error { return keyStep("hand shake 1", false) },
		func() error { return keyStep("hand shake 2", false) },
		// ... the client's WRITEs ...
		func() error { return keyStep("the end's hand shake", false) },
	}
	for i := 0; i < reportFields; i++ {
		steps = append(steps, func() error {
			f, err := read("report field", reportField)
			if err != nil {
				return err
			}
			v := uint64(0)
			for _, c := range f {
				v = v<<8 | uint64(c)
			}
			switch {
			case i == 0 && v != uint64(size), i == 1 && v != uint64(iters), i >= 2 && (math.Float64frombits(v) <= 0 || math.IsNaN(math.Float64frombits(v))):
				return errors.New("report field " + hex.EncodeToString(f))
			}
			return write(capServerReport[16*i : 16*i+16])
		})
	}
	steps = append(steps,
		func() error { return keyStep("the last hand shake", false) },
		func() error { return write(capDone) }, // perftest writes it without waiting
		func() error { return expect("done", capDone) },
	)
	for _, st := range steps {
		if err := st(); err != nil {
			return err
		}
	}
	return nil
}

type nopTB struct{ testing.TB }

func (nopTB) Helper()           {}
func (nopTB) Fatal(args ...any) { panic(args) }

// TestAgainstFakePerftestServer: rnic's client runs ib_write_bw's
// exchange with a server that sends exactly what perftest's did in the
// golden capture; the WRITEs land on a real NIC behind it.
func TestAgainstFakePerftestServer(t *testing.T) {
	ctx := testCtx(t)
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, b := transport.NewPipe()
	const size, iters = 64, 100
	sr, err := Config{Op: OpWrite, Mode: ModeBW, Size: size, Iters: iters, MTU: 1024, Serve: true, Link: a, Listener: l}.resolve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sr.testDefaults(); err != nil {
		t.Fatal(err)
	}
	h, err := openHost(sr, hostSpec{name: "perftest", addr: loopback.Server, link: a})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := openSide(sr, h.Device(), loopback.Server, sideSpec{name: "perftest", seed: serverSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	srvErr := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer conn.Close()
		srvErr <- fakePerftestServer(conn, s, size, iters)
	}()
	var out bytes.Buffer
	res, err := Run(ctx, Config{Op: OpWrite, Mode: ModeBW, Size: size, Iters: iters, MTU: 1024,
		Server: "127.0.0.2", Port: l.Addr().(*net.TCPAddr).Port, Link: b, Out: &out})
	if serr := <-srvErr; serr != nil {
		t.Fatalf("the fake perftest server: %v (client: %v)", serr, err)
	}
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out.String())
	}
	if res.BW == nil || res.BW.AvgMBps <= 0 || res.Check.Skipped == "" || res.MTU != 1024 {
		t.Errorf("result %+v", res)
	}
	// The WRITEs landed where the key message said: the first message's
	// bytes are the client's pattern.
	if got := s.qps[0].dst[:size]; got[1] != pattern(clientSeed, 0, 1) {
		t.Errorf("target holds %x", got[:8])
	}
	if !strings.Contains(out.String(), "data check: skipped: the peer is perftest") {
		t.Errorf("report:\n%s", out.String())
	}
}

// TestUD: SEND bw and lat over UD QPs, both sides rnic, in one process
// and in two: every message arrives whole behind its GRH's room.
func TestUD(t *testing.T) {
	for _, mode := range []Mode{ModeBW, ModeLat} {
		t.Run(string(mode), func(t *testing.T) {
			a, b := transport.NewPipe()
			var out bytes.Buffer
			cfg := Config{Op: OpSend, Mode: mode, UD: true, Size: 1000, QPs: 2, Iters: 100, MTU: 1024,
				TxDepth: 16, CQMod: 4, RxDepth: 128, Link: b, ServerLink: a, Out: &out}
			res, err := Run(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			checkResult(t, cfg, res)
			if !res.UD || !strings.Contains(out.String(), "Connection type : UD") {
				t.Errorf("not a UD run:\n%s", out.String())
			}
		})
	}
	_, err := Run(testCtx(t), Config{Op: OpSend, UD: true, Size: 2000, MTU: 1024})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("a 2000-byte UD message at MTU 1024: %v", err)
	}
	_, err = Run(testCtx(t), Config{Op: OpWrite, UD: true, MTU: 1024})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("UD WRITE: %v", err)
	}
}
