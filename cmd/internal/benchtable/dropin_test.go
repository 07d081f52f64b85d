package main

import "testing"

// TestParsePerftest reads the client's result row of perftest's latency
// and bandwidth tests as they print them.
func TestParsePerftest(t *testing.T) {
	lat := `---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       3000          13.37          1937.75      21.42    	       24.54       	35.29  		48.05   		812.81 
---------------------------------------------------------------------------------------
`
	r, err := parsePerftest(lat, "8", "3000")
	if err != nil || r.lat != 21.42 || r.p99 != 48.05 || r.bw != 0 {
		t.Errorf("latency row: %+v, %v", r, err)
	}
	bw := ` #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      1000             2851.46            2338.88		   0.037422
`
	r, err = parsePerftest(bw, "65536", "1000")
	if err != nil || r.bw != 2338.88 || r.lat != 0 {
		t.Errorf("bandwidth row: %+v, %v", r, err)
	}
	if _, err := parsePerftest(bw, "65536", "2000"); err == nil {
		t.Error("a row of another iteration count was taken")
	}
}
