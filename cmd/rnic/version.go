package main

import (
	"fmt"
	"io"

	"github.com/rnic/rnic/cmd/internal/version"
)

// printVersion prints rnic's version and the build's details in one line.
func printVersion(w io.Writer) { fmt.Fprintln(w, version.Line("rnic")) }
