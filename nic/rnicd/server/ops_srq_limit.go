// SRQ_LIMIT (proto/srq_limit.go): the limit is armed on the daemon's SRQ;
// its event reaches the client through the device's event routing like
// any SRQ event.

package server

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() { Register(proto.OpSRQLimit, handleSRQLimit) }

func handleSRQLimit(s *Session, req *Request, rep *Reply) error {
	var m proto.SRQLimitReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	o, err := lookup[*srqObj](s, m.SRQ, kindSRQ)
	if err != nil {
		return err
	}
	mod, ok := o.srq.(ibv.SRQModifier)
	if !ok {
		return fmt.Errorf("rnicd: SRQ limit on %s: %w", s.dev.dev.Name(), verbs.ErrNotSupported)
	}
	if m.Limit > 1<<31-1 {
		return fmt.Errorf("rnicd: SRQ limit %d: %w", m.Limit, verbs.ErrInvalid)
	}
	if err := mod.ModifySRQ(verbs.SRQAttr{Limit: int(m.Limit)}, verbs.SRQLimit); err != nil {
		return err
	}
	rep.Set(&proto.Empty{})
	return nil
}
