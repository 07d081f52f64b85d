//go:build !linux

package nap

import (
	"runtime"
	"time"
)

// Timer naps with time.Sleep where there is no timerfd.
type Timer struct{}

// New returns a Timer.
func New() (*Timer, error) { return &Timer{}, nil }

// Nap sleeps for d.
func (t *Timer) Nap(d time.Duration) error {
	time.Sleep(d)
	return nil
}

// Close does nothing.
func (t *Timer) Close() error { return nil }

// Yield yields the goroutine.
func Yield() { runtime.Gosched() }
