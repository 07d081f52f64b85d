// SIGINT and SIGTERM: a command stops what it waits for, closes its NIC
// (and removes a TAP it created), and exits as a shell expects of a
// program a signal stopped: 128 + the signal's number (130 for Ctrl-C),
// saying so in one line instead of "context canceled".

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// rootContext is what every command's context derives from; tests bound
// it with a deadline (setRootContext). A command reads it once, as it
// starts, under rootMu: tests may start commands from several goroutines.
var (
	rootMu      sync.Mutex
	rootContext = context.Background()
)

// setRootContext makes ctx the root of the commands started from now on;
// restore makes it context.Background() again — never an earlier
// context, which an overlapping caller may have cancelled meanwhile.
func setRootContext(ctx context.Context) (restore func()) {
	rootMu.Lock()
	rootContext = ctx
	rootMu.Unlock()
	return func() {
		rootMu.Lock()
		rootContext = context.Background()
		rootMu.Unlock()
	}
}

// interrupted is the cause of a context a signal cancelled.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalContext is cancelled by SIGINT or SIGTERM with an interrupted
// cause. Its stop function restores the signals' default action.
func signalContext() (context.Context, context.CancelFunc) {
	rootMu.Lock()
	root := rootContext
	rootMu.Unlock()
	ctx, cancel := context.WithCancelCause(root)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(interrupted{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// signalStatus reports whether a signal cancelled ctx; if so it says so
// on stderr for command name and returns the exit status, 128 + signal.
func signalStatus(ctx context.Context, stderr io.Writer, name string) (int, bool) {
	var in interrupted
	if !errors.As(context.Cause(ctx), &in) {
		return 0, false
	}
	fmt.Fprintf(stderr, "rnic %s: %v\n", name, in)
	return 128 + int(in.sig), true
}
