// The holder's mounts, in its own mount namespace: nothing propagates out,
// /sys shows the view's network namespace, /sys/class and /dev gain the
// devices.

package view

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountView makes the mount namespace the view. freshSysfs: a sysfs of
// the view's network namespace replaces the host's (its /sys/class/net
// lists the view's interfaces).
func mountView(devs []Device, netdev map[string]string, freshSysfs bool) error {
	// A mount made here must never reach the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("view: make / private: %w", err)
	}
	if freshSysfs {
		if err := remountSysfs(); err != nil {
			return err
		}
	}
	if err := shadow("/sys/class", SysClass(devs, netdev, cpusAllowed())); err != nil {
		return err
	}
	add := dir()
	add.Dir["infiniband"] = DevInfiniband(devs, "/dev/null")
	return shadow("/dev", add)
}

// remountSysfs mounts a new sysfs on /sys, then binds back what was
// mounted under the old one (cgroups, debugfs, ...) from the old.
func remountSysfs() error {
	subs, err := subMounts("/sys")
	if err != nil {
		return err
	}
	fd, err := unix.Open("/sys", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("view: /sys: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("view: sysfs on /sys: %w", err)
	}
	for _, rel := range subs {
		dst := filepath.Join("/sys", rel)
		if _, err := os.Stat(dst); err != nil {
			continue // the new sysfs has no such directory
		}
		src := filepath.Join(fmt.Sprintf("/proc/self/fd/%d", fd), rel)
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("view: bind %s back: %w", dst, err)
		}
	}
	return nil
}

// subMounts returns the mount points directly under top (relative to it),
// outermost only: binding each with MS_REC brings what is below it.
func subMounts(top string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if rel, ok := strings.CutPrefix(mp, top+"/"); ok && rel != "" {
			all = append(all, rel)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(all)
	all = slices.Compact(all)
	var out []string
	for _, rel := range all {
		if len(out) > 0 && strings.HasPrefix(rel, out[len(out)-1]+"/") {
			continue
		}
		out = append(out, rel)
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cpusAllowed is this process's CPU mask as the kernel prints masks
// (/proc/self/status Cpus_allowed, the format of device/local_cpus).
func cpusAllowed() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
