// Package cm is the InfiniBand communication manager (IBTA Vol 1 chapter
// 12) as it runs over RoCEv2: connection establishment and teardown of RC
// QPs by management datagrams (MADs) exchanged between the two ports' QP1
// (roce's GSI), the way Linux's ib_cm does it under rdma_cm.
//
//	active                     passive
//	REQ  ───────────────────▶  (listener: accept or reject)
//	     ◀───────────────────  REP   (or REJ; MRA if it needs time)
//	RTU  ───────────────────▶        both ESTABLISHED
//	DREQ ───────────────────▶
//	     ◀───────────────────  DREP  both in TimeWait, then gone
//
// Files: the codecs live in package mad, which does not import the engine
// (a tester that crafts MADs imports it alone): mad/mad.go (the MAD
// header, §13.4.3), mad/messages.go (the CM messages, §12.6,
// byte-compatible with Linux's cm_msgs.h / ibta_vol1_c12.h and with what
// rxe sends), mad/sidr.go (SIDR_REQ/SIDR_REP, §12.11), mad/cmahdr.go
// (rdma_cm's 36-byte header in the REQ's private data and its service
// IDs); mad_names.go gives them this package's names. Here: manager.go
// and id.go (the state machine of §12.9 with its timers, retries and
// duplicate handling), sidr_manager.go.
//
// The wire is checked against real captures of rxe (testdata/captures,
// decoded by tshark as the oracle).
package cm
