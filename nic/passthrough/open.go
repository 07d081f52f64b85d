//go:build verbs

// Opening a libibverbs device: the opener registered for verbs: device
// strings, the device list, and the goroutines that read the device's
// completion and asynchronous event channels.

package passthrough

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	ibv.Register(ibv.BackendVerbs, func(s ibv.Spec) (ibv.Device, error) { return Open(s.Name) })
}

// Built reports whether this program has the libibverbs backend.
const Built = true

// Devices lists the names of the RDMA devices libibverbs sees
// (ibv_get_device_list); none is not an error.
func Devices() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if err == syscall.ENOSYS || err == syscall.ENOENT {
			return nil, nil // no RDMA subsystem at all: no devices
		}
		return nil, fmt.Errorf("passthrough: ibv_get_device_list: %w", err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	return names, nil
}

// Open opens the libibverbs device name (rxe0, siw0, mlx5_0).
func Open(name string) (ibv.Device, error) {
	d, err := open(name)
	if err != nil {
		return nil, fmt.Errorf("passthrough: open %s: %w", name, err)
	}
	return d, nil
}

func open(name string) (*device, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	ctx, err := C.rn_open_device(cname)
	if ctx == nil {
		if err == syscall.ENODEV || err == syscall.ENOSYS {
			// ENOSYS: no RDMA support in the kernel, so no device at all.
			names, _ := Devices()
			return nil, fmt.Errorf("no such device (libibverbs lists %q): %w", names, syscall.ENODEV)
		}
		return nil, err
	}
	d := &device{
		name:   name,
		ctx:    ctx,
		iwarp:  ctx.device.transport_type == C.IBV_TRANSPORT_IWARP,
		objs:   make(map[uintptr]object),
		bufs:   make(map[*buffer]struct{}),
		events: make(chan ibv.Event, verbs.DefaultEventQueueLen),
	}
	if err := d.queryDevice(); err != nil {
		C.ibv_close_device(ctx)
		return nil, err
	}
	if err := d.startEvents(); err != nil {
		d.stopEvents()
		C.ibv_close_device(ctx)
		return nil, err
	}
	return d, nil
}

// startEvents creates the device's completion channel and starts the
// goroutines reading it and the asynchronous event descriptor. Both
// descriptors become non-blocking and are watched through a dup in Go's
// poller, so closing the dup is what stops a goroutine.
func (d *device) startEvents() error {
	ch, err := C.ibv_create_comp_channel(d.ctx)
	if ch == nil {
		return fmt.Errorf("ibv_create_comp_channel: %w", err)
	}
	d.compCh = ch
	if d.compFile, err = pollable(int(ch.fd), "comp-channel"); err != nil {
		return err
	}
	if d.asyncFile, err = pollable(int(d.ctx.async_fd), "async-events"); err != nil {
		return err
	}
	d.wg.Add(2)
	go readEvents(&d.wg, d.compFile, d.cqEvent)
	go func() {
		readEvents(&d.wg, d.asyncFile, d.asyncEvent)
		close(d.events)
	}()
	return nil
}

// stopEvents stops the event goroutines and destroys the completion
// channel (every CQ must be gone).
func (d *device) stopEvents() {
	for _, f := range []*os.File{d.compFile, d.asyncFile} {
		if f != nil {
			f.Close()
		}
	}
	d.wg.Wait()
	if d.compCh != nil {
		C.ibv_destroy_comp_channel(d.compCh)
		d.compCh = nil
	}
}

// pollable makes fd non-blocking and returns a dup of it that Go's poller
// watches; closing the dup leaves fd open for its owner (libibverbs).
func pollable(fd int, name string) (*os.File, error) {
	if r, err := C.rn_set_nonblock(C.int(fd)); r != 0 {
		return nil, fmt.Errorf("%s: set non-blocking: %w", name, err)
	}
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("%s: dup: %w", name, err)
	}
	syscall.CloseOnExec(nfd)
	return os.NewFile(uintptr(nfd), name), nil
}

// readEvents calls next until it reports EAGAIN, then waits in the poller
// for f to become readable again; it returns when f is closed or next
// fails otherwise.
func readEvents(wg *sync.WaitGroup, f *os.File, next func() error) {
	defer wg.Done()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var failed error
		err := rc.Read(func(uintptr) bool {
			for {
				err := next()
				if err == syscall.EAGAIN || err == syscall.EINTR {
					return false
				}
				if err != nil {
					failed = err
					return true
				}
			}
		})
		if err != nil || failed != nil {
			return
		}
	}
}

// cqEvent takes one completion event and signals its CQ.
func (d *device) cqEvent() error {
	var id C.uintptr_t
	if r, err := C.rn_get_cq_event(d.compCh, &id); r != 0 {
		return err
	}
	if c, ok := d.lookup(uintptr(id)).(*cq); ok {
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

// asyncEvent takes one asynchronous event and delivers it on Events; like
// nic, it drops events a reader does not take.
func (d *device) asyncEvent() error {
	var ev C.struct_rn_async
	if r, err := C.rn_get_async_event(d.ctx, &ev); r != 0 {
		return err
	}
	out := ibv.Event{Type: verbs.AsyncEvent(ev._type), Port: uint8(ev.port)}
	if q, ok := d.lookup(uintptr(ev.qp)).(*qp); ok && ev.qp != 0 {
		out.QP = q
	}
	if c, ok := d.lookup(uintptr(ev.cq)).(*cq); ok && ev.cq != 0 {
		c.setErr(verbs.ErrCQOverrun)
		out.CQ = c
	}
	if s, ok := d.lookup(uintptr(ev.srq)).(*srq); ok && ev.srq != 0 {
		out.SRQ = s
	}
	select {
	case d.events <- out:
	default:
	}
	return nil
}

// lookup returns the live object with id, or nil.
func (d *device) lookup(id uintptr) object {
	if id == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.objs[id]
}
