package ladder

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"testing"
)

// FuzzLadder feeds any bytes as a capture: Load and both renderers never
// panic, and whatever is drawn is well-formed XML.
func FuzzLadder(f *testing.F) {
	for _, p := range []string{"testdata/sim-loss.pcap", "../../../testdata/captures/siw-rping-mpacrc.pcap", "../../../testdata/captures/rxe-rping.pcap"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 6000)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _, err := LoadReader(bytes.NewReader(data), "fuzz", Options{ByQP: len(data)%2 == 0})
		if err != nil && len(evs) == 0 {
			return
		}
		var svg, page bytes.Buffer
		if err := WriteSVG(&svg, evs, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&page, evs, Options{ByQP: true}); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&svg)
		for {
			if _, err := d.Token(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("SVG is not well-formed: %v", err)
				}
				return
			}
		}
	})
}
