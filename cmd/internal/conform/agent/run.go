package agent

import "context"

// Run serves until ctx ends, then closes the server.
func (s *Server) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	select {
	case <-ctx.Done():
		s.Close()
		<-done
		return nil
	case err := <-done:
		s.Close()
		return err
	}
}
