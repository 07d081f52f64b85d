//go:build verbs

package passthrough

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseCounter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0\n", 0, true},
		{"12345\n", 12345, true},
		{" 7 ", 7, true},
		{"18446744073709551615\n", 1<<64 - 1, true},
		{"18446744073709551616\n", 0, false},
		{"", 0, false},
		{"\n", 0, false},
		{"-1\n", 0, false},
		{"1 2\n", 0, false},
		{"0x10\n", 0, false},
		{"N/A\n", 0, false},
	} {
		v, ok := parseCounter([]byte(c.in))
		if v != c.want || ok != c.ok {
			t.Errorf("parseCounter(%q) = %d, %v; want %d, %v", c.in, v, ok, c.want, c.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseCounter([]byte("123456\n")) }); n != 0 {
		t.Errorf("parseCounter allocates %v times", n)
	}
}

// FuzzParseCounter: parseCounter accepts exactly what strconv.ParseUint
// accepts as a plain decimal (after trimming space), with the same value,
// and never panics.
func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "42", " 9 \n", "18446744073709551615", "18446744073709551616", "-1", "+1", "1_0", "", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := parseCounter(b)
		s := strings.Trim(string(b), " \t\r\n")
		plain := s != "" && strings.Trim(s, "0123456789") == ""
		want, err := strconv.ParseUint(s, 10, 64)
		if wantOK := plain && err == nil; ok != wantOK || (ok && v != want) {
			t.Fatalf("parseCounter(%q) = %d, %v; strconv says %d, %v", b, v, ok, want, err)
		}
	})
}
