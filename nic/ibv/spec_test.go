package ibv

import "testing"

func TestParseSpec(t *testing.T) {
	good := []struct {
		in   string
		want Spec
	}{
		{"rnic0", Spec{Backend: BackendLocal, Name: "rnic0"}},
		{"rnic0@/tmp/r.sock", Spec{Backend: BackendDaemon, Name: "rnic0", Socket: "/tmp/r.sock"}},
		{"rnic1@", Spec{Backend: BackendDaemon, Name: "rnic1", Socket: DefaultSocketPath()}},
		{"verbs:rxe0", Spec{Backend: BackendVerbs, Name: "rxe0"}},
		{"verbs:mlx5_0", Spec{Backend: BackendVerbs, Name: "mlx5_0"}},
	}
	for _, g := range good {
		got, err := ParseSpec(g.in)
		if err != nil || got != g.want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", g.in, got, err, g.want)
		}
		if got.String() != g.in && g.in != "rnic1@" {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), g.in)
		}
	}
	for _, bad := range []string{"", "@/x", "verbs:", "verbs:a/b", "a b", "x:y", "r\x00"} {
		if s, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) = %+v, want an error", bad, s)
		}
	}
}
