package decode

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/decode")

// goldenDir is absolute because TestGolden changes directory.
var goldenDir = func() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "../../testdata/decode")
}()

// golden compares got with the named golden file, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got %q\nwant %q\n(go test -update rewrites it)", name, i+1, g, w)
			}
		}
	}
}

// TestGolden: the output for real captures (RoCEv2 from rxe, iWARP with
// MPA CRCs from siw) and for the synthetic one, text and JSON, is what
// testdata/decode holds.
func TestGolden(t *testing.T) {
	synth := writeSynth(t)
	for _, c := range []struct {
		name, path string
		json       bool
		problems   bool
	}{
		{"rxe-rc-pingpong.txt", "../../testdata/captures/rxe-rc-pingpong.pcap", false, false},
		{"rxe-rc-pingpong.jsonl", "../../testdata/captures/rxe-rc-pingpong.pcap", true, false},
		{"siw-rping-mpacrc.txt", "../../testdata/captures/siw-rping-mpacrc.pcap", false, false},
		{"siw-rping-mpacrc.jsonl", "../../testdata/captures/siw-rping-mpacrc.pcap", true, false},
		{"synthetic.txt", synth, false, true},
		{"synthetic.jsonl", synth, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			// Run with a relative name so the output does not depend on
			// where t.TempDir is.
			dir, base := filepath.Split(c.path)
			t.Chdir(dir)
			sum, err := Run(&out, []string{base}, Options{JSON: c.json})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Problems() != c.problems {
				t.Errorf("summary %+v: problems=%v, want %v", sum, sum.Problems(), c.problems)
			}
			golden(t, c.name, out.Bytes())
		})
	}
}
