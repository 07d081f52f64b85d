package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// bound is the range of an integer flag. The packages take 0 to mean
// "the default", so a flag given on the command line is checked here,
// where 0 is what the user typed: a value out of range is a usage error
// naming the flag and the range, before anything is allocated.
type bound struct {
	flag     string
	min, max int64
}

// checkBounds checks every flag of bounds that the command line set.
func checkBounds(fs *pflag.FlagSet, bounds ...bound) error {
	for _, b := range bounds {
		f := fs.Lookup(b.flag)
		if f == nil || !f.Changed {
			continue
		}
		v, err := strconv.ParseInt(f.Value.String(), 0, 64)
		if err != nil {
			return fmt.Errorf("%s %s: not an integer", flagName(f), f.Value)
		}
		if v < b.min || v > b.max {
			return fmt.Errorf("%s %d: must be %d..%d", flagName(f), v, b.min, b.max)
		}
	}
	return nil
}

// flagName is how the help shows a flag: "-s/--size" or "--ops".
func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// probability is a float flag holding a probability in [0, 1), or
// [0, 1] if certain is allowed: NaN and anything outside are usage errors.
type probability struct {
	flag    string
	certain bool
}

// checkProbabilities checks every flag of ps that the command line set.
func checkProbabilities(fs *pflag.FlagSet, ps ...probability) error {
	for _, p := range ps {
		f := fs.Lookup(p.flag)
		if f == nil || !f.Changed {
			continue
		}
		v, err := fs.GetFloat64(p.flag)
		if err != nil {
			return err
		}
		switch {
		case p.certain && !(v >= 0 && v <= 1): // NaN fails every comparison
			return fmt.Errorf("%s %v: must be a probability in [0, 1]", flagName(f), v)
		case !p.certain && !(v >= 0 && v < 1):
			return fmt.Errorf("%s %v: must be a probability in [0, 1)", flagName(f), v)
		}
	}
	return nil
}

// checkPathMTU checks a path MTU flag the command line set: one of the
// IB MTUs.
func checkPathMTU(fs *pflag.FlagSet, name string) error {
	f := fs.Lookup(name)
	if f == nil || !f.Changed {
		return nil
	}
	switch v, _ := fs.GetInt(name); v {
	case 256, 512, 1024, 2048, 4096:
		return nil
	default:
		return fmt.Errorf("%s %d: must be 256, 512, 1024, 2048 or 4096", flagName(f), v)
	}
}
