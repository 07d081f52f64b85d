// Tests of access flag values, validation (ibv_reg_mr rules) and String.

package memory

import "testing"

func TestAccessValues(t *testing.T) {
	// libibverbs IBV_ACCESS_* values.
	for _, c := range []struct {
		a    Access
		want uint32
	}{{LocalWrite, 1}, {RemoteWrite, 2}, {RemoteRead, 4}, {RemoteAtomic, 8}, {MWBind, 16}, {ZeroBased, 32}} {
		if uint32(c.a) != c.want {
			t.Errorf("%v = %d, want %d", c.a, uint32(c.a), c.want)
		}
	}
}

func TestAccessValidateRegion(t *testing.T) {
	for _, c := range []struct {
		a  Access
		ok bool
	}{
		{0, true},
		{LocalWrite, true},
		{RemoteRead, true},
		{LocalWrite | RemoteWrite, true},
		{LocalWrite | RemoteAtomic, true},
		{RemoteWrite, false},
		{RemoteAtomic, false},
		{RemoteRead | RemoteWrite, false},
		{MWBind, true},
		{ZeroBased | RemoteRead, true},
		{allRights | ZeroBased, true},
		{1 << 6, false},
		{LocalWrite | 1<<31, false},
	} {
		err := c.a.ValidateRegion()
		if c.ok {
			wantErr(t, c.a.String(), err, nil)
		} else {
			wantErr(t, c.a.String(), err, ErrInvalidAccess)
		}
	}
}

func TestAccessHasAndString(t *testing.T) {
	a := LocalWrite | RemoteRead
	if !a.Has(RemoteRead) || !a.Has(0) || a.Has(RemoteWrite) || a.Has(RemoteRead|RemoteWrite) {
		t.Error("Has wrong")
	}
	for _, c := range []struct {
		a    Access
		want string
	}{
		{0, "0"},
		{LocalWrite | RemoteRead, "LocalWrite|RemoteRead"},
		{allRights | ZeroBased, "LocalWrite|RemoteWrite|RemoteRead|RemoteAtomic|MWBind|ZeroBased"},
		{RemoteAtomic | 1<<6, "RemoteAtomic|0x40"},
		{1 << 6, "0x40"},
		{FlushGlobal | FlushPersistent, "FlushGlobal|FlushPersistent"},
	} {
		if got := c.a.String(); got != c.want {
			t.Errorf("String(%#x) = %q, want %q", uint32(c.a), got, c.want)
		}
	}
}

func TestFaultString(t *testing.T) {
	seen := map[string]bool{}
	for f := Ok; f <= CannotInvalidate; f++ {
		s := f.String()
		if s == "" || seen[s] {
			t.Errorf("Fault %d: String %q empty or duplicate", f, s)
		}
		seen[s] = true
	}
	if got := Fault(200).String(); got != "fault(200)" {
		t.Errorf("unknown fault String = %q", got)
	}
}
