// Tests of rnicd's run: usage, exit statuses, and (as root) the daemon
// itself on a TAP in a namespace of the test's own, pinged from there.

package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/pcap"
)

// rnicd runs the command line with a stop channel and returns stdout,
// stderr and the status.
func rnicd(t *testing.T, stop <-chan os.Signal, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb, stop)
	return out.String(), errb.String(), code
}

func TestRunUsage(t *testing.T) {
	out, errOut, code := rnicd(t, nil, "--help")
	if code != 0 || errOut != "" || strings.Count(out, "usage: rnicd") != 1 || !strings.Contains(out, "--device") {
		t.Errorf("--help: status %d, stderr %q, stdout:\n%s\nwant 0, the usage once on stdout", code, errOut, out)
	}
	for _, args := range [][]string{
		nil,
		{"--tap", "t0"},
		{"--tap", "t0", "--ip", "nonsense"},
		{"--bogus"},
	} {
		out, errOut, code := rnicd(t, nil, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "rnicd: ") || !strings.Contains(errOut, "(rnicd --help)") {
			t.Errorf("rnicd %q: status %d, stdout %q, stderr %q; want 2 and one line on stderr", args, code, out, errOut)
		}
	}
}

// TestRunOpenFailure: a device that cannot open exits 1 with the reason,
// before waiting for any signal (a nil stop channel would block forever).
func TestRunOpenFailure(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "no-such-dir", "x.pcap")
	out, errOut, code := rnicd(t, nil, "--tap", "t0", "--ip", "10.0.0.2/24", "--pcap", pcap)
	if code != 1 || out != "" || !strings.Contains(errOut, "rnic0: pcap: ") || !strings.Contains(errOut, "no-such-dir") {
		t.Errorf("status %d, stdout %q, stderr %q; want 1 and the pcap error", code, out, errOut)
	}
}

// requireRoot skips unless the test can create namespaces and TAPs.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to create a network namespace and TAP devices")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("needs /dev/net/tun to create TAP devices: %v", err)
	}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs the %s command (iproute2, iputils-ping)", tool)
		}
	}
}

// newNetns creates a namespace with a bridge br0 holding 10.88.0.1/24 and
// fd00:88::1/64, deleted when the test ends, and returns its name.
func newNetns(t *testing.T) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	ns := "rnic-dev-" + hex.EncodeToString(b[:])
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "set", "lo", "up")
	ip("-n", ns, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
	ip("-n", ns, "addr", "add", "10.88.0.1/24", "dev", "br0")
	ip("-n", ns, "addr", "add", "fd00:88::1/64", "dev", "br0", "nodad")
	ip("-n", ns, "link", "set", "br0", "up")
	return ns
}

func linkExists(t *testing.T, ns, name string) bool {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", name).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "does not exist") {
		t.Fatalf("ip -n %s link show dev %s: %v: %s", ns, name, err, out)
	}
	return err == nil
}

// buildRnicd builds the daemon into a temporary directory.
func buildRnicd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rnicd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// TestDaemon starts rnicd with two NICs on TAPs it creates in a fresh
// namespace, pings both from there (IPv4 and IPv6), stops it with SIGTERM
// and checks it exits 0, removed its TAPs and captured the ping.
func TestDaemon(t *testing.T) {
	requireRoot(t)
	bin := buildRnicd(t)
	ns := newNetns(t)
	pcap := filepath.Join(t.TempDir(), "rt0.pcap")
	sock := filepath.Join(t.TempDir(), "rnicd.sock")

	cmd := exec.Command(bin, "--socket", sock, "--tap", "rt0", "--ip", "10.88.0.50/24", "--netns", ns, "--bridge", "br0", "--pcap", pcap,
		"--device", "tap=rt1,ip6=fd00:88::51/64,mac=02:00:00:00:88:51,mtu=9000,netns="+ns+",bridge=br0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rnicd: %v", err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		// Only if the test failed before stopping it: kill the one we started.
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	wantReady := []struct{ prefix, suffix string }{
		{"rnic0: tap rt0 netns " + ns + " bridge br0 mac ", " ip 10.88.0.50/24 mtu 1500 ready"},
		{"rnic1: tap rt1 netns " + ns + " bridge br0 mac 02:00:00:00:88:51 ip6 fd00:88::51/64 mtu 9000 ready", ""},
		{"rnicd: serving rnic0, rnic1 on " + sock, ""},
	}
	for _, want := range wantReady {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("rnicd exited before it was ready: %v\nstderr: %s", <-exited, stderr.String())
			}
			if !strings.HasPrefix(line, want.prefix) || !strings.HasSuffix(line, want.suffix) {
				t.Fatalf("ready line %q, want %q...%q", line, want.prefix, want.suffix)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("rnicd not ready within 20s\nstderr: %s", stderr.String())
		}
	}
	for _, tap := range []string{"rt0", "rt1"} {
		if !linkExists(t, ns, tap) {
			t.Fatalf("rnicd is ready but %s does not exist", tap)
		}
	}

	for _, addr := range []string{"10.88.0.50", "fd00:88::51"} {
		ping := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "2", "-W", "2", addr)
		if out, err := ping.CombinedOutput(); err != nil {
			t.Errorf("ping %s from %s: %v\n%s", addr, ns, err, out)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	var rest []string
	for line := range lines {
		rest = append(rest, line)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("rnicd after SIGTERM: %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rnicd did not exit within 10s of SIGTERM")
	}
	if len(rest) != 1 || rest[0] != "rnicd: stopped" {
		t.Errorf("output after SIGTERM %q, want \"rnicd: stopped\"", rest)
	}
	for _, tap := range []string{"rt0", "rt1"} {
		if linkExists(t, ns, tap) {
			t.Errorf("the TAP %s rnicd created survived it", tap)
		}
	}
	if n := countEchoReplies(t, pcap); n < 2 {
		t.Errorf("the pcap holds %d ICMP echo replies, want the 2 answers to ping", n)
	}
}

// TestDaemonOpenFailureClosesOthers: when the second NIC cannot open (its
// bridge is missing), rnicd closes the first, which it created, and exits 1.
func TestDaemonOpenFailureClosesOthers(t *testing.T) {
	requireRoot(t)
	bin := buildRnicd(t)
	ns := newNetns(t)
	cmd := exec.Command(bin, "--socket", filepath.Join(t.TempDir(), "rnicd.sock"),
		"--tap", "rt0", "--ip", "10.88.0.50/24", "--netns", ns, "--bridge", "br0",
		"--device", "tap=rt1,ip=10.88.0.51/24,netns="+ns+",bridge=nobr")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("rnicd: %v, want exit status 1\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "rnic1 on tap rt1") || !strings.Contains(stderr.String(), "nobr") {
		t.Errorf("stderr does not say which device failed and why:\n%s", stderr.String())
	}
	for _, tap := range []string{"rt0", "rt1"} {
		if linkExists(t, ns, tap) {
			t.Errorf("%s survived a failed start", tap)
		}
	}
}

// countEchoReplies counts the IPv4 ICMP echo replies in a pcap file.
func countEchoReplies(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open pcap: %v", err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatalf("read pcap: %v", err)
	}
	n := 0
	for {
		fr, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("read pcap: %v", err)
		}
		b := fr.Data
		if len(b) >= 14+20+8 && binary.BigEndian.Uint16(b[12:]) == 0x0800 && b[14+9] == 1 {
			ihl := int(b[14]&0x0f) * 4
			if len(b) > 14+ihl && b[14+ihl] == 0 {
				n++
			}
		}
	}
}
