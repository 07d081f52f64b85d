package dropin

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkDropinSetup: an unmodified C program (bench/setup.c, linked
// against the system's libibverbs and run on the drop-in library by rnic
// exec) creates b.N RC QPs on one rnicd NIC, takes each to RTS and
// destroys them: what QP setup costs every C program through rnicd (issue
// 19 asks for 10,000 QPs in a second). ns/op is per QP, create and
// connect; the steps are reported apart, in µs per QP.
func BenchmarkDropinSetup(b *testing.B) {
	needLibrary(b)
	n := max(b.N, 2)
	bin := buildSetup(b, "setup_bench", "-O2")
	d, err := startDaemon(b.Cleanup, nicUDP, "--max-qps", strconv.Itoa(n))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	p := d.run(b, "setup", "", nil, bin, strconv.Itoa(n))
	p.wait(time.After(10 * time.Minute))
	b.StopTimer()
	if !p.ok() {
		b.Fatal(p.report())
	}
	steps, err := parseSetup(p.out.String())
	if err != nil {
		b.Fatalf("%v\n%s", err, p.report())
	}
	b.ReportMetric((steps["create_us"]+steps["connect_us"])*1e3*float64(n)/float64(b.N), "ns/op")
	for _, k := range []string{"create_us", "connect_us", "destroy_us"} {
		b.ReportMetric(steps[k], strings.TrimSuffix(k, "_us")+"-µs/QP")
	}
	b.ReportMetric(steps["connect_sleeps"], "connect-sleeps/QP")
	b.ReportMetric(steps["connect_cpu_us"], "connect-cpu-µs/QP")
}

// TestSetupProgram runs the benchmark's program on 200 QPs, it and the
// library under AddressSanitizer: the figures make bench reports come
// from a program that does what it says without faults.
func TestSetupProgram(t *testing.T) {
	needLibrary(t)
	bin := buildSetup(t, "setup_asan", "-O1", "-fsanitize=address", "-fno-omit-frame-pointer")
	d := sharedDaemon(t)
	p := start(t, "setup", []string{"RNIC_LIBDIR=" + filepath.Join(build.dir, "lib", "asan"), asanOptions("setup")},
		nil, build.rnic, "exec", "-S", d.socket, "--", bin, "200")
	p.wait(time.After(programTimeout))
	if !p.ok() {
		t.Fatal(p.report())
	}
	steps, err := parseSetup(p.out.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, p.report())
	}
	for _, k := range []string{"create_us", "connect_us", "destroy_us"} {
		if !(steps[k] > 0) {
			t.Errorf("%s = %v; want a time per QP\n%s", k, steps[k], p.report())
		}
	}
	if steps["qps"] != 200 {
		t.Errorf("qps = %v, want 200", steps["qps"])
	}
}

// buildSetup compiles bench/setup.c into the build directory, runnable
// by the programs' user.
func buildSetup(tb testing.TB, name string, flags ...string) string {
	tb.Helper()
	bin := filepath.Join(build.dir, name)
	args := append(append([]string{"-std=gnu11", "-g", "-Wall", "-Wextra", "-Werror"}, flags...),
		"-o", bin, "nic/rnicd/dropin/bench/setup.c", "-libverbs")
	if out, err := command(build.root, "gcc", args...); err != nil {
		tb.Fatalf("building bench/setup.c: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, 0o755); err != nil { // whatever the umask
		tb.Fatal(err)
	}
	return bin
}

// parseSetup reads setup.c's line: "qps N create_us X connect_us Y
// destroy_us Z".
func parseSetup(out string) (map[string]float64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || len(f)%2 != 0 || f[0] != "qps" {
			continue
		}
		m := map[string]float64{}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				return nil, fmt.Errorf("setup's %s: %w", f[i], err)
			}
			m[f[i]] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("no figures in setup's output")
}
