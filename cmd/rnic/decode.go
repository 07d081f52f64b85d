package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/roce/decode"
)

const decodeHelp = `usage: rnic decode [--json] [--port N[,N...]] FILE...

FILE "-" is the standard input (tcpdump -w - ... | rnic decode -).

Prints one line per RoCEv2 frame and per iWARP MPA frame and FPDU of each
capture (classic pcap, µs or ns, either byte order, or pcapng; Ethernet link
type), then a summary line:

  #N T SRC > DST [vlan=V] OPCODE qp=0xQQQQQQ psn=P [se] [ackreq] [migreq]
     [fecn] [becn] [pad=N] [pkey=0xKKKK] [headers...] payload=N icrc=ok|BAD
  #N T SRC > DST MPA Request|MPA Reply rev=R flags=MCRS [res=0xN]
     [ird=N ord=N [p2p] [rtr=send,write,read]] pd=N
  #N T SRC > DST RDMAP-OPCODE (stag=0x.. to=0x.. | qn=N msn=N mo=N) [last]
     [inv_stag=0x..] [header...] payload=N crc=ok|BAD|off
  summary: frames=N roce=N icrc_bad=N iwarp=N crc_bad=N unknown=N

N is the frame number in the file (as Wireshark counts), T the seconds since
the file's first frame (microseconds), PSN decimal, QP and keys hex. RoCEv2
headers: reth va= rkey= len=, aeth ACK|RNR NAK timer=|NAK <code> msn=, atomic
va= rkey= swap= cmp= (or add=), orig=, imm=, inv rkey=, deth qkey= srcqp=,
feth placement= selectivity=. Frames to the RoCEv2 port that do not decode are
shown as "unknown: REASON".

iWARP: TCP connections are reassembled; one whose first payload in a
direction is an MPA Request or Reply is MPA, and its FPDUs are decoded with
the framing the Request and Reply negotiated (CRC-32C checked when either
side asked for it: crc=ok|BAD; crc=off otherwise). An FPDU is shown at the
frame that completed it. RDMAP headers: sink_stag= sink_to= size= src_stag=
src_to= (Read Request), term=0xLECC (text) [m] [d seglen=N] [r] (Terminate),
atomic=, req_id=, orig=, imm= (RFC 7306). Payload of an MPA stream that does
not decode is shown as "unknown: iwarp REASON seq=N ..." (seq: the relative
TCP sequence number): an FPDU that does not decode, octets missing from the
capture (tcp_gap), a stream ending inside an FPDU (incomplete_fpdu), a failed
MPA setup; each broken stream position counts once, and decoding resumes at
the next FPDU found at a TCP segment start. A capture that starts after a
connection's handshake cannot place its payload: it is neither iwarp nor
unknown (as in Wireshark). Other traffic is only counted in frames. With
several files each line starts with "FILE: ".

--json prints JSON Lines instead: one object per line ("type":"roce",
"mpa", "iwarp" or "unknown"), then {"type":"summary",...}.

Exit status: 0 all good; 1 some ICRC or MPA CRC is bad, or something is
unknown; 2 a file could not be read (missing, not a capture, unsupported link
type, cut short) or bad usage.

flags:
`

func runDecode(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic decode", pflag.ContinueOnError)
	// pflag prints the usage itself on --help before returning ErrHelp;
	// it is printed once, below, on stdout, and errors once on stderr.
	fs.SetOutput(io.Discard)
	jsonOut := fs.Bool("json", false, "print JSON Lines instead of text")
	ports := fs.UintSlice("port", []uint{4791}, "RoCEv2 UDP destination port(s), comma-separated")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), decodeHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic %s (rnic help decode)\n", withPrefix("decode: ", err))
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "rnic decode: no capture file given (rnic help decode)")
		return 2
	}
	var ps []uint16
	for _, p := range *ports {
		if p == 0 || p > 65535 {
			fmt.Fprintf(stderr, "rnic decode: bad port %d (rnic help decode)\n", p)
			return 2
		}
		ps = append(ps, uint16(p))
	}
	sum, err := decode.Run(stdout, fs.Args(), decode.Options{JSON: *jsonOut, Ports: ps, Stdin: stdin})
	if err != nil {
		for _, e := range unjoin(err) {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("decode: ", e))
		}
		return 2
	}
	if sum.Problems() {
		return 1
	}
	return 0
}

// stdin is the capture "-" names (tests set their own).
var stdin io.Reader = os.Stdin

// unjoin splits an errors.Join result so each file's error gets its line.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
