package proto

// A page of a stat listing (devices, clients, QPs, clients' counters,
// tenants) is the entry count, the entries, and More (another page
// follows). putPage and getPage are that layout for every listing.

// pageEntry is the codec of a listing's entry, on its pointer.
type pageEntry[T any] interface {
	*T
	Encode(w *Writer)
	Decode(r *Reader)
}

// putPage writes entries and more as a page.
func putPage[T any, P pageEntry[T]](w *Writer, entries []T, more bool) {
	w.U32(uint32(len(entries)))
	for i := range entries {
		P(&entries[i]).Encode(w)
	}
	w.Bool(more)
}

// getPage reads a page of at most MaxStatEntries entries of what (named in
// the error) into *entries and returns More. minLen is the fewest bytes an
// entry takes: a lie about the count cannot make the decoder allocate more
// than the message could hold.
func getPage[T any, P pageEntry[T]](r *Reader, entries *[]T, what string, minLen int) (more bool) {
	n := r.U32()
	if n > MaxStatEntries {
		r.fail("%d %s, at most %d", n, what, MaxStatEntries)
		return false
	}
	*entries = make([]T, 0, min(n, uint32(r.Remaining()/minLen)))
	for range n {
		var e T
		P(&e).Decode(r)
		if r.Err() != nil {
			return false
		}
		*entries = append(*entries, e)
	}
	return r.Bool()
}
