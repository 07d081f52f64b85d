package iwarp

import (
	"fmt"
	"time"
)

// TraceEvent is one state change or decision of the engine, in words: QP
// state changes, MPA negotiation, RTR, Terminates, backpressure. Tracing is
// off unless Config.Trace is set, and costs nothing then.
type TraceEvent struct {
	Time time.Duration // the stack's clock
	QPN  uint32        // 0 for connection events before a QP is bound
	Role string        // "cm", "qp", "tx", "rx", "term"
	Msg  string
}

func (e TraceEvent) String() string {
	return fmt.Sprintf("%12v qp=%#06x %-4s %s", e.Time, e.QPN, e.Role, e.Msg)
}

// tracing reports whether a trace hook is installed; call sites check it
// before formatting so that the disabled path allocates nothing.
func (s *Stack) tracing() bool { return s.cfg.Trace != nil }

func (s *Stack) tracef(qpn uint32, role, format string, args ...any) {
	s.cfg.Trace(TraceEvent{Time: s.cfg.Clock.Now(), QPN: qpn, Role: role, Msg: fmt.Sprintf(format, args...)})
}
