//go:build !linux

// The embedded-mode link needs Linux (recvmmsg, sendmmsg and the IP
// ancillary data it relies on); elsewhere the package compiles, so that
// programs importing it build, and Open says errors.ErrUnsupported.

package udp

import (
	"errors"
	"net/netip"
)

type sysState struct{}

func (e *Endpoint) open() error              { return errors.ErrUnsupported }
func (e *Endpoint) send([]byte) error        { return errors.ErrUnsupported }
func (e *Endpoint) sendBatch([][]byte) error { return errors.ErrUnsupported }
func (e *Endpoint) close() error             { return nil }
func (e *Endpoint) loopDrops() uint64        { return 0 }

// RecvBufferBytes implements transport.RecvBufferSizer.
func (e *Endpoint) RecvBufferBytes() int { return 0 }

// JoinGroup implements transport.GroupMember.
func (e *Endpoint) JoinGroup(netip.Addr) error { return errors.ErrUnsupported }

// LeaveGroup implements transport.GroupMember.
func (e *Endpoint) LeaveGroup(netip.Addr) error { return nil }

// LoopsGroups implements transport.GroupMember.
func (e *Endpoint) LoopsGroups() bool { return false }

// WatchAddrLink needs Linux's link reports.
func WatchAddrLink(netip.Addr, func(bool)) (func(), error) { return nil, errors.ErrUnsupported }
