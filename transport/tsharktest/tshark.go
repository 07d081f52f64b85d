package tsharktest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Path returns the tshark executable, or skips the test when there is none.
func Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not found on PATH; install it to run the Wireshark oracle " +
			"(transport/tsharktest/README.md, \"Installing tshark\")")
	}
	return p
}

// Version returns tshark's version, e.g. 4, 0, 17.
func Version(t testing.TB) (major, minor, patch int) {
	t.Helper()
	out := run(t, "--version")
	m := regexp.MustCompile(`TShark \(Wireshark\) (\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("tshark --version: cannot find the version in %q", firstLine(out))
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	patch, _ = strconv.Atoi(m[3])
	return major, minor, patch
}

// run runs tshark with args and returns its standard output. It fails the
// test when tshark exits non-zero, quoting its standard error minus the
// "Running as user root" warning tshark prints whenever it runs as root.
func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := runErr(Path(t), args...)
	if err != nil {
		t.Fatalf("tshark %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func runErr(tshark string, args ...string) (string, error) {
	cmd := exec.Command(tshark, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No personal configuration (a directory that does not exist): a
	// developer's Wireshark preferences must not change what the oracle says.
	cmd.Env = append(os.Environ(), "WIRESHARK_CONFIG_DIR="+filepath.Join(os.TempDir(), "tsharktest-no-config"))
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, cleanStderr(stderr.String()))
	}
	return stdout.String(), nil
}

// cleanStderr drops the harmless root warning.
func cleanStderr(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if l == "" || strings.HasPrefix(l, "Running as user ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// The payload heuristics Wireshark would try on RDMA payloads (README.md,
// "Payload heuristics"), by the short names --disable-heuristic wants.
var payloadHeuristics = []string{
	"rpcrdma_infiniband", "smb_direct_infiniband", "iser_infiniband", "nvme_rdma", "lnet_ib",
	"fc_infiniband", "sdp_infiniband", "smcr_infiniband", "mellanox_eoib", "eth_over_ib",
	"rpcrdma_iwarp", "smb_direct_iwarp",
}

var (
	heurOnce sync.Once
	heurArgs []string
	heurErr  error
)

var noSuchHeuristic = regexp.MustCompile(`No such protocol (\S+), can't disable`)

// disableArgs returns the --disable-heuristic arguments this tshark
// accepts. tshark refuses to start when one names a heuristic it lacks (and
// `-G heuristic-decodes` lists filter names, not these short names), so the
// list is probed once against an empty capture, dropping unknown names.
func disableArgs(t testing.TB) []string {
	t.Helper()
	tshark := Path(t)
	heurOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tsharktest-probe-")
		if err != nil {
			heurErr = err
			return
		}
		defer os.RemoveAll(dir)
		empty := filepath.Join(dir, "empty.pcap")
		if err := writePcapFile(empty, nil); err != nil {
			heurErr = err
			return
		}
		names := slices.Clone(payloadHeuristics)
		for range len(payloadHeuristics) + 1 {
			args := []string{"-r", empty}
			for _, h := range names {
				args = append(args, "--disable-heuristic", h)
			}
			_, err := runErr(tshark, args...)
			if err == nil {
				heurArgs = args[2:]
				return
			}
			m := noSuchHeuristic.FindStringSubmatch(err.Error())
			if m == nil {
				heurErr = err
				return
			}
			names = slices.DeleteFunc(names, func(h string) bool { return h == m[1] })
		}
		heurErr = errors.New("could not settle the heuristics list")
	})
	if heurErr != nil {
		t.Fatalf("tshark: probing payload heuristics: %v", heurErr)
	}
	return heurArgs
}

// WritePcap writes frames to a new classic pcap (Ethernet link type,
// microsecond timestamps one millisecond apart) named name in t.TempDir(),
// and returns its path.
func WritePcap(t testing.TB, name string, frames [][]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := writePcapFile(p, frames); err != nil {
		t.Fatal(err)
	}
	return p
}

func writePcapFile(path string, frames [][]byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		f.Close()
		return err
	}
	for i, b := range frames {
		if err := w.WritePacket(captureInfo(i, len(b)), b); err != nil {
			f.Close()
			return fmt.Errorf("frame %d: %w", i+1, err)
		}
	}
	return f.Close()
}
