// Package tsharktest runs tshark as a test oracle over pcap files (its
// README.md, "The checks", gives the command lines): it fails a test on any
// malformed frame, any expert info of severity warning or above (with IP,
// UDP and TCP checksum checks on; TCP's window-full and zero-window
// warnings excepted, which are flow control doing its work on a busy
// machine), any UDP frame on the RoCEv2 port that was
// not dissected as an InfiniBand BTH, any "Bad CRC32" MPA label and,
// optionally, any TCP payload not dissected as MPA; and it extracts chosen
// fields per frame for comparison with what a test encoded.
//
// tshark checks structure only: it never verifies the RoCEv2 ICRC (rnic
// checks that itself). The payload heuristics (README.md, "Payload
// heuristics") are disabled, so arbitrary payload bytes are not mistaken
// for RPC-over-RDMA and the like.
//
// Every entry point calls t.Skip when tshark is not on PATH, so tests using
// this package pass (skipped) on machines without it; CI installs it
// (README.md, "Installing tshark").
package tsharktest
