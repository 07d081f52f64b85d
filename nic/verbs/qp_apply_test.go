package verbs

import (
	"reflect"
	"testing"
)

// TestQPAttrApply: each mask bit copies its own field and nothing else;
// the state, capabilities and PSNs are never copied.
func TestQPAttrApply(t *testing.T) {
	src := QPAttr{State: QPSRTS, CurState: QPSRTR, PathMTU: MTU4096, QKey: 7, RQPSN: 8, SQPSN: 9, DestQPN: 10,
		AccessFlags: 3, Cap: QPCap{MaxSendWR: 5}, AV: AddressVector{HopLimit: 64}, PKeyIndex: 2, SQDrainNotify: true,
		MaxRdAtomic: 4, MaxDestRdAtomic: 5, MinRNRTimer: 6, PortNum: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 6}
	var all QPAttr
	for bit := QPAttrMask(1); bit != 0; bit <<= 1 {
		var got QPAttr
		got.Apply(&src, bit)
		all.Apply(&src, bit)
		changed := 0
		gv, sv := reflect.ValueOf(got), reflect.ValueOf(src)
		for i := 0; i < gv.NumField(); i++ {
			if !gv.Field(i).IsZero() {
				changed++
				if !reflect.DeepEqual(gv.Field(i).Interface(), sv.Field(i).Interface()) {
					t.Errorf("mask %#x: %s = %v, not the source's", uint32(bit), gv.Type().Field(i).Name, gv.Field(i))
				}
			}
		}
		if changed > 1 {
			t.Errorf("mask %#x copied %d fields", uint32(bit), changed)
		}
	}
	want := src
	want.State, want.CurState, want.Cap, want.RQPSN, want.SQPSN = 0, 0, QPCap{}, 0, 0
	if all != want {
		t.Errorf("every bit: %+v\nwant %+v", all, want)
	}
}
