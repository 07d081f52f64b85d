package transport

import "strings"

// LinkNote says what a simulated link's faults did to one captured frame:
// the ground truth a capture cannot show (see SimConfig.Notes).
type LinkNote uint8

// Link notes; a frame may carry several.
const (
	NoteLost      LinkNote = 1 << iota // recorded when sent; it never arrived
	NoteDuplicate                      // the second copy of a duplicated frame
	NoteCorrupted                      // its bytes were changed on the wire (a flipped bit, a script's replacement)
	NoteHeld                           // delayed or held back (reordered) on the wire
)

// String lists the notes, comma-separated ("lost,corrupted").
func (n LinkNote) String() string {
	var s []string
	for _, x := range [...]struct {
		bit  LinkNote
		name string
	}{{NoteLost, "lost"}, {NoteDuplicate, "duplicate"}, {NoteCorrupted, "corrupted"}, {NoteHeld, "delayed"}} {
		if n&x.bit != 0 {
			s = append(s, x.name)
		}
	}
	return strings.Join(s, ",")
}

// notes are the link notes common to every copy of a frame.
func (f *fate) notes() LinkNote {
	var n LinkNote
	if f.corrupted {
		n |= NoteCorrupted
	}
	if f.stall > 0 {
		n |= NoteHeld
	}
	return n
}
