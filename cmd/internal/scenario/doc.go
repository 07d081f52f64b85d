// Package scenario holds rnic's teaching scenarios (rnic lab): short runs
// of two NICs that each show one protocol behaviour, the same every time.
//
// A scenario runs on a stage (stage.go): two RoCEv2 NICs on the simulated
// link, or two iWARP NICs on simulated TCP, driven by one virtual clock, so
// that timers, retries and waits take no wall time and every line, trace
// and capture byte repeats. Its faults are a script (script.go) rather than
// chance: "lose the second packet of the WRITE", "lose the first ATOMIC
// ACKNOWLEDGE", "flip one payload bit". A run (Run) yields the narration
// (every post and completion with its virtual time, the QPs' states, the
// counters that moved), the engines' trace, both interleaved, a pcapng
// capture whose changed frames carry the link's note, and a ladder diagram.
// Each scenario has a handout, handouts/NAME.md, whose quoted answers the
// tests check against the run.
//
// A RoCEv2 scenario also has a TAP form (RunTAP, tapstage.go): the same
// steps between two TAP-mode NICs on a bridge in a namespace of their own,
// the script applied to the frames on rnic0's TAP, on the real clock. Its
// times differ from run to run, so it has no golden output; its tests
// check it shows the simulated form's verdicts (the same completions and
// states, the same NAKs, retries and replays in the counters).
//
// The scenarios and the rules they show:
//
//	rc-basics      IBTA Vol 1 §9.7.1, §9.7.5.1.1-2      roce.go (its iWARP form: RFC 5040 §4-5, RFC 5041 §5, iwarp.go)
//	loss-timeout   IBTA Vol 1 §9.7.6.1.3-4              roce.go
//	seq-nak        IBTA Vol 1 §9.7.5.2.1, §9.7.5.1.3    roce.go
//	dup-request    IBTA Vol 1 §9.7.5.1.4                roce.go
//	rnr            IBTA Vol 1 §9.7.5.2.8, §9.7.6.1.5    roce.go
//	read-retry     IBTA Vol 1 §9.7.5.3, §9.7.6.1.4      roce.go
//	atomic-replay  IBTA Vol 1 §9.4.5, §9.7.5.1.4        roce.go
//	retry-exc      IBTA Vol 1 §9.7.6.1.3, §10.7.3.1     roce.go
//	ud             IBTA Vol 1 §9.8, Annex A17.4.5.1     roce.go
//	uc-gap         IBTA Vol 1 §9.7.7.2                  roce.go
//	icrc           IBTA Vol 1 Annex A17.3.3             roce.go, script.go (flipPayloadBit)
//	mpa            RFC 5044 §4.3, §4.4, §7.1; RFC 6581  iwarp.go, iwarp_pair.go
//	terminate      RFC 5040 §7.3.2, §8; RFC 5041 §7.2   iwarp.go
package scenario
