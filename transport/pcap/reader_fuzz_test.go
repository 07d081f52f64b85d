package pcap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// FuzzReader: no input makes the capture reader panic or loop forever,
// and no frame exceeds the largest snapshot length a capture may declare.
// (Inputs may be gzip-compressed, so output can outgrow input.)
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/captures/*.pcap")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	var buf bytes.Buffer
	if w, err := pcap.NewWriter(&buf); err == nil {
		_ = w.WriteFrame(transport.PcapEpoch, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00})
		_ = w.Flush()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 0; i < 1<<20; i++ {
			fr, err := r.Next()
			if err != nil {
				return
			}
			if len(fr.Data) > 1<<24 {
				t.Fatalf("frame of %d bytes", len(fr.Data))
			}
		}
		t.Fatal("the reader never reached the end of the input")
	})
}
