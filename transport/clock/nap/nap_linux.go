package nap

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Timer naps one goroutine at a time. Its zero value is not usable: see
// New.
type Timer struct {
	f    *os.File
	fd   int
	spec unix.ItimerSpec
	buf  [8]byte
}

// New returns a Timer, holding one file descriptor until Close.
func New() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("nap: timerfd: %w", err)
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller.
	return &Timer{f: os.NewFile(uintptr(fd), "nap-timerfd"), fd: fd}, nil
}

// Nap sleeps for d (at least a microsecond), parking the goroutine in the
// runtime's poller. It returns early only with an error (a closed Timer).
func (t *Timer) Nap(d time.Duration) error {
	d = max(d, time.Microsecond)
	t.spec.Value = unix.NsecToTimespec(int64(d))
	if err := unix.TimerfdSettime(t.fd, 0, &t.spec, nil); err != nil {
		return fmt.Errorf("nap: arm timerfd: %w", err)
	}
	_, err := t.f.Read(t.buf[:])
	return err
}

// Close releases the descriptor.
func (t *Timer) Close() error { return t.f.Close() }

// Yield gives the processor to any other thread that wants it (one
// sched_yield): a loop that spins on memory another process writes lets
// that process run on a busy machine, which runtime.Gosched does not.
func Yield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
