// Command cheader writes the C header of rnicd's protocol from the Go
// package that defines it (nic/rnicd/proto), so that the drop-in C
// libraries and the daemon cannot disagree about a number: go generate in
// that package runs it, and a test here fails when the checked-in header
// differs from what it would write.
//
// What goes in is read from the Go declarations themselves, values
// included (go/types evaluates them, iota and expressions alike):
//
//   - every constant of type Op, Status or Kind, named after its Go
//     identifier (OpCreateQP becomes RNICD_OP_CREATE_QP);
//   - every constant of a const block whose doc comment carries the
//     directive //rnicd:cheader (ring offsets, slot layouts, sizes,
//     the version), named the same way (ringSQProd: RNICD_RING_SQ_PROD).
//
// Usage: cheader [-pkg DIR] [-o FILE]; without -o it writes to stdout.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	pkg := flag.String("pkg", ".", "the directory of the Go protocol package")
	out := flag.String("o", "", "the header to write (stdout if empty)")
	flag.Parse()
	src, err := generate(*pkg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cheader:", err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(src)
	} else {
		err = os.WriteFile(*out, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cheader:", err)
		os.Exit(1)
	}
}
