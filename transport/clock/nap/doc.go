// Package nap gives a goroutine short sleeps that end on time, and a yield
// of its thread.
//
// A Go program that waits with time.Sleep (or any runtime timer) for less
// than a millisecond often waits a whole one: when every processor is
// idle, the runtime blocks in epoll_wait, whose timeout is in
// milliseconds, and rounds a shorter wait up to 1 ms (golang/go#44343).
// Only a file descriptor becoming ready ends that wait early. A loop that
// watches shared memory, which another process writes, therefore learns
// of the write up to a millisecond late; in-process it is rescued only
// when some socket happens to wake the runtime.
//
// A Timer is a timerfd the goroutine reads through the runtime's poller:
// the kernel's high-resolution timer makes the descriptor ready after the
// nap, which wakes epoll_wait on time, while the processor stays free to
// poll the network and run other goroutines meanwhile. A nap costs two
// system calls (arming and reading the timerfd) and allocates nothing.
package nap
