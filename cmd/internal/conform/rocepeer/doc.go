// Package rocepeer is the tester's side of the RoCEv2 conversations in
// rnic conform's requester, UC/UD and rdma_cm cases: the packets a
// conforming (or deliberately misbehaving) peer sends to the device under
// test (DUT), and the checks on what the DUT sends back.
//
// When the DUT is the requester, the tester plays its responder: it
// answers the DUT's requests with ACKs, NAKs, RNR NAKs, READ responses
// and atomic acknowledgements built here (answer.go), or stays silent, and
// measures when the DUT retransmits (timing.go, sends.go). When the DUT is
// a UC or UD responder, the tester sends it requests (request.go) and
// checks the GRH a UD receive carries (grh.go). For rdma_cm it speaks the
// IB CM on QP1 (mad.go, with roce/cm's codecs).
//
// Everything here builds wire.Headers and payloads or reads decoded
// packets: no I/O, so the conform cases decide where frames go.
// Breaks (faults.go) are frame rewrites a case uses to show, against an
// in-process rnic, that it can FAIL.
package rocepeer
