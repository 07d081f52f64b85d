// Unit tests of how records are grouped into one endpoint Write behind an
// offload NIC (batch).

package netstack

import "testing"

func TestBatch(t *testing.T) {
	const sp = 100
	type rec struct {
		size  int
		whole bool
	}
	full, short, long, plain := rec{sp, true}, rec{40, true}, rec{250, true}, rec{sp, false}
	for _, tc := range []struct {
		name  string
		recs  []rec
		limit int
		want  int // records in the first batch
	}{
		{"a run of full records", []rec{full, full, full}, 1000, 3},
		{"closed by a short one, which it carries", []rec{full, full, short, full}, 1000, 3},
		{"a short one first goes alone", []rec{short, full, full}, 1000, 1},
		{"a longer one ends the run before it", []rec{full, full, long}, 1000, 2},
		{"a longer one first goes alone", []rec{long, full}, 1000, 1},
		{"plain bytes end the run before them", []rec{full, plain, full}, 1000, 1},
		{"plain bytes first go alone", []rec{plain, full}, 1000, 1},
		{"at most limit bytes", []rec{full, full, full, full}, 250, 2},
		{"a short one past the limit waits", []rec{full, full, short}, 200, 2},
		{"no limit: one record", []rec{full, full}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const start = 7 // batches begin anywhere in a queue
			ends := make([]int, len(tc.recs))
			off := start
			for i, r := range tc.recs {
				off += r.size
				ends[i] = off
			}
			k, end := batch(start, len(tc.recs), sp, tc.limit, func(i int) (int, bool) { return ends[i], tc.recs[i].whole })
			if k != tc.want || end != ends[k-1] {
				t.Errorf("batch = %d records ending at %d, want %d ending at %d", k, end, tc.want, ends[tc.want-1])
			}
		})
	}
}
