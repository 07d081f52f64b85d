package main

// End-to-end TAP mode, as a user runs it: rnic processes, each NIC on its
// own TAP on one bridge in a namespace the test creates, talking through
// real Ethernet frames; ping from the namespace's kernel reaches them; the
// captures decode (every ICRC and MPA CRC good) and pass the tshark oracle.

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/tsharktest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// rnicBinary builds the rnic command once per test run.
func rnicBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rnic-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "rnic")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is an rnic process the test started.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // its exit, once done is closed
	exited time.Time     // when it exited, once done is closed
}

// syncBuffer is a bytes.Buffer the process writes while the test reads,
// with the time each write came.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes []writeAt
}

// writeAt says the buffer held end bytes at t.
type writeAt struct {
	end int
	t   time.Time
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	s.writes = append(s.writes, writeAt{s.b.Len(), time.Now()})
	return n, err
}

// When returns when the first text matching re was written; false if
// none was.
func (s *syncBuffer) When(re *regexp.Regexp) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc := re.FindIndex(s.b.Bytes())
	if loc == nil {
		return time.Time{}, false
	}
	for _, w := range s.writes {
		if w.end > loc[0] {
			return w.t, true
		}
	}
	return time.Time{}, false
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(rnicBinary(t), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill() // only the process this test started
			<-p.done
		}
	})
	return p
}

// wait waits for p to exit and fails t unless it exited 0.
func (p *proc) wait(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%s: %v\n%s", p.name, p.err, p.out.String())
		}
	case <-time.After(within):
		p.quit()
		t.Fatalf("%s did not finish within %v\n%s", p.name, within, p.out.String())
	}
	return p.out.String()
}

// quit ends a process that hangs with SIGQUIT, so that its output ends
// with the Go runtime's dump of every goroutine: where it hung; it is
// killed if it has not gone a few seconds later.
func (p *proc) quit() {
	p.cmd.Process.Signal(syscall.SIGQUIT) // only the process this test started
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// checkCapture decodes a capture (no bad ICRC/CRC, nothing unknown) and
// runs the tshark oracle over it.
func checkCapture(t *testing.T, path string, minRoCE, minIWARP int) {
	t.Helper()
	checkCaptureWith(t, path, minRoCE, minIWARP, tsharktest.Options{})
}

// checkCaptureWith is checkCapture with the oracle's options.
func checkCaptureWith(t *testing.T, path string, minRoCE, minIWARP int, o tsharktest.Options) {
	t.Helper()
	var out strings.Builder
	sum, err := decode.Run(&out, []string{path}, decode.Options{})
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if sum.ICRCBad != 0 || sum.CRCBad != 0 || sum.Unknown != 0 || sum.RoCE < minRoCE || sum.IWARP < minIWARP {
		t.Errorf("decode %s: %s", filepath.Base(path), sum.Line())
	}
	tsharktest.Check(t, path, o)
}

type tapNIC struct {
	tap       string
	addrs     []netip.Prefix
	noOffload bool
}

func (n tapNIC) flags(tn *taptest.Net) []string {
	f := []string{"--tap", n.tap, "--netns", tn.Name, "--bridge", tn.Bridge}
	if n.noOffload {
		f = append(f, "--tap-offload=false")
	}
	for _, a := range n.addrs {
		f = append(f, "--ip", a.String())
	}
	return f
}

// Two rnic processes on two TAPs: rnic pingpong and rnic perf --iwarp, each
// as server on one TAP and client on the other; ping reaches the server's
// NIC while it waits; both captures pass.
func TestTAPTools(t *testing.T) {
	tn := taptest.New(t, 71)
	a := tapNIC{tap: "t-a", addrs: []netip.Prefix{tn.Addr4(2), tn.Addr6(2)}}
	b := tapNIC{tap: "t-b", addrs: []netip.Prefix{tn.Addr4(3)}}
	runToolPair(t, tn, a, b, tn.Addr4(2).Addr())
}

// The same with the client's NIC on IPv6 only: ND instead of ARP, IPv6
// GIDs, the side channel and iWARP over IPv6.
func TestTAPToolsIPv6Only(t *testing.T) {
	tn := taptest.New(t, 72)
	a := tapNIC{tap: "t-a", addrs: []netip.Prefix{tn.Addr4(2), tn.Addr6(2)}}
	b := tapNIC{tap: "t-b", addrs: []netip.Prefix{tn.Addr6(3)}}
	runToolPair(t, tn, a, b, tn.Addr6(2).Addr())
}

// The same between a NIC with segmentation offload (the default) and one
// without (--tap-offload=false): the kernel cuts the first one's TCP
// super-segments for the second, whose capture shows wire segments, and
// the second's segments reach the first as they are.
func TestTAPToolsMixedOffload(t *testing.T) {
	tn := taptest.New(t, 88)
	a := tapNIC{tap: "t-a", addrs: []netip.Prefix{tn.Addr4(2)}}
	b := tapNIC{tap: "t-b", addrs: []netip.Prefix{tn.Addr4(3)}, noOffload: true}
	runToolPair(t, tn, a, b, tn.Addr4(2).Addr())
}

func runToolPair(t *testing.T, tn *taptest.Net, a, b tapNIC, server netip.Addr) {
	dir := t.TempDir()
	for i, role := range [][2]tapNIC{{a, b}, {b, a}} {
		srvNIC, cliNIC := role[0], role[1]
		srvAddr := server
		if i == 1 { // b serves: reach it at its own address of the family
			srvAddr = b.addrs[0].Addr()
		}
		// rnic pingpong.
		spcap := filepath.Join(dir, fmt.Sprintf("pingpong-%d-server.pcap", i))
		srv := start(t, "pingpong server", append([]string{"pingpong", "-n", "100", "-s", "4096",
			"--chk", "--pcap", spcap}, srvNIC.flags(tn)...)...)
		if out, ok := tn.Ping(srvAddr, 10*time.Second); !ok {
			t.Fatalf("ping %v: %s\nserver: %s", srvAddr, out, srv.out.String())
		}
		cli := start(t, "pingpong client", append(append([]string{"pingpong", "-n", "100", "-s", "4096",
			"--chk"}, cliNIC.flags(tn)...), srvAddr.String())...)
		for _, p := range []*proc{cli, srv} {
			if out := p.wait(t, 60*time.Second); !strings.Contains(out, "100 iters in") {
				t.Errorf("%s: %s", p.name, out)
			}
		}
		checkCapture(t, spcap, 200, 0)

		// rnic perf --iwarp, write bandwidth.
		ppcap := filepath.Join(dir, fmt.Sprintf("perf-%d-server.pcap", i))
		srv = start(t, "perf --iwarp server", append([]string{"perf", "--iwarp", "--serve", "--pcap", ppcap}, srvNIC.flags(tn)...)...)
		if out, ok := tn.Ping(srvAddr, 10*time.Second); !ok {
			t.Fatalf("ping %v: %s\nserver: %s", srvAddr, out, srv.out.String())
		}
		cli = start(t, "perf --iwarp client", append(append([]string{"perf", "--iwarp", "--op", "write", "--mode", "bw",
			"-s", "65536", "-n", "200"}, cliNIC.flags(tn)...), srvAddr.String())...)
		for _, p := range []*proc{cli, srv} {
			p.wait(t, 90*time.Second)
		}
		if !strings.Contains(cli.out.String(), "65536") {
			t.Errorf("perf client report: %s", cli.out.String())
		}
		checkCaptureWith(t, ppcap, 0, 200, tsharktest.Options{KernelChecksums: kernelChecksummed(srvNIC, cliNIC)})
	}
}

// kernelChecksummed selects the TCP segments from peer that the kernel
// checksummed before rcv's TAP: those of a peer with offload, which leaves
// the checksum to the kernel, reaching a TAP without (the kernel cuts the
// super-segment and sums each piece). "" when there are none.
func kernelChecksummed(rcv, peer tapNIC) string {
	if !rcv.noOffload || peer.noOffload {
		return ""
	}
	var from []string
	for _, a := range peer.addrs {
		if a.Addr().Is4() {
			from = append(from, "ip.src == "+a.Addr().String())
		} else {
			from = append(from, "ipv6.src == "+a.Addr().String())
		}
	}
	return strings.Join(from, " || ")
}

// rnic demo on two TAPs: every RoCE step (SEND, SEND with immediate, WRITE,
// WRITE with immediate, READ, both atomics, UD SEND, a bad rkey) and every
// iWARP step, over the real bridge.
func TestTAPDemo(t *testing.T) {
	tn := taptest.New(t, 73)
	dir := t.TempDir()
	for _, iw := range []bool{false, true} {
		pcap := filepath.Join(dir, fmt.Sprintf("demo-%v.pcap", iw))
		args := []string{"demo", "--tap", "t-a", "--tap", "t-b", "--ip", tn.Addr4(2).String(), "--ip", tn.Addr4(3).String(),
			"--netns", tn.Name, "--bridge", tn.Bridge, "--pcap", pcap}
		if iw {
			args = append(args, "--iwarp")
		}
		out := start(t, "demo", args...).wait(t, 60*time.Second)
		if !strings.Contains(out, "step") {
			t.Errorf("demo output: %s", out)
		}
		if iw {
			checkCapture(t, pcap, 0, 5)
		} else {
			checkCapture(t, pcap, 15, 0)
		}
	}
}
