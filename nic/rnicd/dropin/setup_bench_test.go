package dropin

import (
	"bufio"
	"fmt"
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
	bin := filepath.Join(build.dir, "setup_bench")
	if out, err := command(build.root, "gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin,
		"nic/rnicd/dropin/bench/setup.c", "-libverbs"); err != nil {
		b.Fatalf("building bench/setup.c: %v\n%s", err, out)
	}
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
}

// parseSetup reads setup.c's line: "qps N create_us X connect_us Y
// destroy_us Z".
func parseSetup(out string) (map[string]float64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 8 || f[0] != "qps" {
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
