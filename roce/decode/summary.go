package decode

import (
	"strconv"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
)

// Summary counts what a run saw. New protocols add their counters here and
// to Line and Problems; JSON output follows the struct tags.
type Summary struct {
	Frames  int `json:"frames"`   // every frame read
	RoCE    int `json:"roce"`     // frames that decoded as RoCEv2
	ICRCBad int `json:"icrc_bad"` // RoCEv2 frames whose ICRC is wrong
	IWARP   int `json:"iwarp"`    // FPDUs of MPA streams that decoded (iwarp/decode)
	CRCBad  int `json:"crc_bad"`  // FPDUs whose negotiated MPA CRC is wrong
	// Unknown counts the frames to the RoCEv2 port that do not decode,
	// and the iWARP records of kind unknown: payload of an MPA stream that
	// does not decode (iwarp/decode's package comment says exactly what
	// one counts).
	Unknown int `json:"unknown"`
}

// count adds one frame.
func (s *Summary) count(r *Record) {
	s.Frames++
	switch r.Kind {
	case KindRoCE:
		s.RoCE++
		if !r.ICRCOK {
			s.ICRCBad++
		}
	case KindUnknown:
		s.Unknown++
	}
}

// countIWARP adds one iWARP record.
func (s *Summary) countIWARP(r *iwdecode.Record) {
	switch r.Kind {
	case iwdecode.KindFPDU:
		s.IWARP++
	case iwdecode.KindUnknown:
		s.Unknown++
	}
	if r.BadCRC() {
		s.CRCBad++
	}
}

// Problems reports whether any frame was damaged or undecodable: the
// decode command then exits with status 1.
func (s Summary) Problems() bool { return s.ICRCBad > 0 || s.CRCBad > 0 || s.Unknown > 0 }

// Line is the text summary:
// "summary: frames=N roce=N icrc_bad=N iwarp=N crc_bad=N unknown=N".
func (s Summary) Line() string {
	b := []byte("summary:")
	for _, kv := range []struct {
		k string
		v int
	}{{"frames", s.Frames}, {"roce", s.RoCE}, {"icrc_bad", s.ICRCBad}, {"iwarp", s.IWARP}, {"crc_bad", s.CRCBad}, {"unknown", s.Unknown}} {
		b = append(b, ' ')
		b = append(b, kv.k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(kv.v), 10)
	}
	return string(b)
}
