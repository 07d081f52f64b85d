// --tenant: more sockets, each serving its own NICs to its own clients
// (a pod, a container, a user), within limits of its own.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rnic/rnic/nic/rnicd/server"
)

// tenantHelp is --tenant's line in rnicd --help.
const tenantHelp = "a tenant: 'name=NAME,nics=rnic1+rnic2[,socket=PATH][,uid=N][,gid=N][,mode=0660]" +
	"[,max-clients=N][,max-qps=N][,max-mrs=N][,max-mapped-bytes=N][,max-queue-bytes=N]' (repeatable): " +
	"its socket (default DIR/tenants/NAME/rnicd.sock, DIR that of --socket) serves only its NICs, " +
	"which no other socket serves, and lists only its own clients; uid= and gid= own the socket " +
	"(mode 0600 with uid=, 0660 with gid=) and are the only peers it serves (SO_PEERCRED); the max-* bound all its clients together"

// perNICHelp is --tenant-per-nic's line in rnicd --help.
const perNICHelp = "(--tenant-per-nic[=KEYS]) make every NIC no --tenant names a tenant of its own, named after it, on DIR/tenants/NIC/rnicd.sock " +
	"(a device plugin gives a pod a NIC by mounting that directory); KEYS are --tenant's (uid, gid, mode, max-*) for each"

// perNICAlone is --tenant-per-nic's value without KEYS.
const perNICAlone = "-"

// tenantKeys are the keys of a --tenant spec.
var tenantKeys = []string{"name", "nics", "socket", "uid", "gid", "mode",
	"max-clients", "max-qps", "max-mrs", "max-mapped-bytes", "max-queue-bytes"}

// tenantSpec is one --tenant.
type tenantSpec struct {
	server.TenantConfig
	socket string
	access server.SocketAccess
}

// parseTenant parses a --tenant spec; hostSocket places its default
// socket.
func parseTenant(spec, hostSocket string) (tenantSpec, error) {
	kv, err := splitKeys(spec, tenantKeys)
	if err != nil {
		return tenantSpec{}, err
	}
	t := tenantSpec{access: server.SocketAccess{Mode: 0o600, UID: -1, GID: -1}}
	t.Name = kv["name"]
	if t.Name == "" || strings.ContainsAny(t.Name, "/ \t\n") || t.Name == "." || t.Name == ".." {
		return t, fmt.Errorf("name=: give the tenant a name (no '/' or white space)")
	}
	if kv["nics"] == "" {
		return t, fmt.Errorf("nics=: name the tenant's NICs (nics=rnic1+rnic2)")
	}
	t.Devices = strings.Split(kv["nics"], "+")
	if t.socket = kv["socket"]; t.socket == "" {
		if hostSocket == "" {
			return t, fmt.Errorf("socket=: give the tenant's socket (there is no --socket to put it beside)")
		}
		t.socket = filepath.Join(filepath.Dir(hostSocket), "tenants", t.Name, "rnicd.sock")
	}
	if err := t.parseAccess(kv); err != nil {
		return t, err
	}
	return t, t.parseLimits(kv)
}

// parseAccess reads uid, gid and mode: the socket's owner, group and
// mode, and the peers the tenant serves.
func (t *tenantSpec) parseAccess(kv map[string]string) error {
	for _, k := range []string{"uid", "gid"} {
		v, ok := kv[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return fmt.Errorf("%s=: %q is not a numeric id", k, v)
		}
		if k == "uid" {
			t.access.UID, t.UIDs = int(n), []uint32{uint32(n)}
		} else {
			t.access.GID, t.GIDs = int(n), []uint32{uint32(n)}
			t.access.Mode = 0o660
		}
	}
	if v, ok := kv["mode"]; ok {
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil || m > 0o777 || m&0o600 != 0o600 {
			return fmt.Errorf("mode=: %q is not an octal mode that lets the owner connect (0600..0777)", v)
		}
		t.access.Mode = os.FileMode(m)
	}
	return nil
}

// parseLimits reads the max-* keys.
func (t *tenantSpec) parseLimits(kv map[string]string) error {
	l := &t.Limits
	ints := map[string]*int{"max-clients": &l.MaxClients, "max-qps": &l.MaxQPs, "max-mrs": &l.MaxMRs}
	u64s := map[string]*uint64{"max-mapped-bytes": &l.MaxMappedBytes, "max-queue-bytes": &l.MaxQueueBytes}
	for k, v := range kv {
		if p, ok := ints[k]; ok {
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil || n == 0 {
				return fmt.Errorf("%s=: %q is not a positive number", k, v)
			}
			*p = int(n)
		}
		if p, ok := u64s[k]; ok {
			n, err := strconv.ParseUint(v, 10, 62)
			if err != nil || n == 0 {
				return fmt.Errorf("%s=: %q is not a positive number", k, v)
			}
			*p = n
		}
	}
	return nil
}

// addPerNIC adds --tenant-per-nic's tenants: one per NIC no --tenant
// has, with its keys.
func (o *options) addPerNIC() error {
	if o.perNIC == "" {
		return nil
	}
	keys := ""
	if o.perNIC != perNICAlone {
		keys = "," + o.perNIC
		for _, k := range []string{"name", "nics", "socket"} {
			if strings.Contains(","+o.perNIC, ","+k+"=") {
				return fmt.Errorf("--tenant-per-nic: %s= is the NIC's own", k)
			}
		}
	}
	taken := map[string]bool{}
	for _, t := range o.tenants {
		for _, n := range t.Devices {
			taken[n] = true
		}
	}
	for _, d := range o.devices {
		if taken[d.Name] {
			continue
		}
		t, err := parseTenant("name="+d.Name+",nics="+d.Name+keys, o.socket)
		if err != nil {
			return fmt.Errorf("--tenant-per-nic: %w", err)
		}
		o.tenants = append(o.tenants, t)
	}
	return nil
}

// splitKeys splits "k=v,k=v" into its keys, refusing unknown, repeated
// and empty ones.
func splitKeys(s string, keys []string) (map[string]string, error) {
	kv := map[string]string{}
	for field := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(field, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not key=value", field)
		case !contains(keys, k):
			return nil, fmt.Errorf("unknown key %q (keys: %s)", k, strings.Join(keys, ", "))
		case v == "":
			return nil, fmt.Errorf("empty %s", k)
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		kv[k] = v
	}
	return kv, nil
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// checkTenants refuses a tenant naming a NIC that does not exist or that
// another tenant has, two tenants of one name, and two sockets alike.
func checkTenants(ts []tenantSpec, devices []deviceSpec, hostSocket string) error {
	nics := map[string]bool{}
	for _, d := range devices {
		nics[d.Name] = true
	}
	owner := map[string]string{}
	names := map[string]bool{}
	sockets := map[string]bool{filepath.Clean(hostSocket): hostSocket != ""}
	for _, t := range ts {
		if names[t.Name] {
			return fmt.Errorf("two tenants are named %s", t.Name)
		}
		names[t.Name] = true
		if sockets[filepath.Clean(t.socket)] {
			return fmt.Errorf("tenant %s: socket %s is another's", t.Name, t.socket)
		}
		sockets[filepath.Clean(t.socket)] = true
		for _, n := range t.Devices {
			if !nics[n] {
				return fmt.Errorf("tenant %s: no NIC named %s", t.Name, n)
			}
			if o, ok := owner[n]; ok {
				return fmt.Errorf("tenant %s: %s is tenant %s's already (a NIC has one tenant)", t.Name, n, o)
			}
			owner[n] = t.Name
		}
	}
	return nil
}
