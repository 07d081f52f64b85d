package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestDemoUDP runs `rnic demo` over real loopback UDP sockets, IPv4 and
// IPv6: every step must behave, and the capture must pass rnic decode
// (every ICRC) and the tshark oracle.
func TestDemoUDP(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		ports []uint16
	}{
		{"ipv4", []string{"--addr-a", "127.0.0.12", "--addr-b", "127.0.0.13"}, []uint16{4791}},
		{"ipv6", []string{"--ipv6", "--port", "4793"}, []uint16{4793, 4794}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pcap := filepath.Join(t.TempDir(), "demo.pcap")
			var out, errOut bytes.Buffer
			if code := run(append([]string{"demo", "--pcap", pcap}, c.args...), &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), "demo: 8 steps, 8 behaved as specified") {
				t.Fatalf("output:\n%s", out.String())
			}
			var dec bytes.Buffer
			sum, err := decode.Run(&dec, []string{pcap}, decode.Options{Ports: c.ports})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Problems() || !strings.Contains(dec.String(), "icrc_bad=0 iwarp=0 crc_bad=0 unknown=0") || strings.Contains(dec.String(), "roce=0 ") {
				t.Fatalf("decode:\n%s", dec.String())
			}
			var extra []string
			for _, p := range c.ports {
				extra = append(extra, "-d", "udp.port=="+itoa(int(p))+",infiniband")
			}
			tsharktest.Check(t, pcap, tsharktest.Options{Args: extra})
		})
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestDemoNonRoot: the demo needs no privilege. Run as root (as CI is), it
// builds rnic and runs the demo as the unprivileged user nobody.
func TestDemoNonRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("already unprivileged: TestDemoUDP covers it")
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot drop privileges to run the demo as nobody")
	}
	dir := t.TempDir()
	// nobody must reach the directory: open it and its 0700 parent.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "rnic")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups",
		bin, "demo", "--addr-a", "127.0.0.14", "--addr-b", "127.0.0.15", "--pcap", filepath.Join(dir, "demo.pcap"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "8 behaved as specified") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestDemoIWARP runs `rnic demo --iwarp` over kernel TCP on loopback: every
// step must behave, and tshark must dissect every TCP payload of the
// capture as MPA.
func TestDemoIWARP(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "demo.pcap")
	var out, errOut bytes.Buffer
	if code := run([]string{"demo", "--iwarp", "--pcap", pcap, "--addr-a", "127.0.0.54", "--addr-b", "127.0.0.55"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"demo: 6 steps, 6 behaved as specified", "tshark -r " + pcap + " -Y iwarp_ddp_rdmap"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	tsharktest.Check(t, pcap, tsharktest.Options{RequireMPA: true})
}
