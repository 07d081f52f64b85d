package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The checked-in header is what the generator writes from the package
// as it is now: a change of the protocol without go generate fails here.
func TestHeaderUpToDate(t *testing.T) {
	const path = "../../../dropin/include/rnicd_proto.h"
	want, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./nic/rnicd/proto", path)
	}
}

// Every op, status and marked constant the C libraries use is in the
// header, with the value the Go package gives it.
func TestHeaderValues(t *testing.T) {
	src, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"RNICD_OP_OPEN = 0x0001,", "RNICD_OP_CREATE_CQ_ON = 0x0026,", "RNICD_OP_CM_RESULT = 0x8200,",
		"RNICD_STATUS_OK = 0,", "RNICD_STATUS_VERSION = 17,", "RNICD_STATUS_ADDR_NOT_AVAIL = 21,",
		"RNICD_KIND_NOTICE = 4,", "RNICD_VERSION = 8,", "RNICD_HEADER_LEN = 16,",
		"RNICD_RING_BELL = 448,", "RNICD_CQ_FLAGS = 256,", "RNICD_SEND_AH = 36,", "RNICD_WC_PKEY_INDEX = 36,",
		"#define RNICD_MAX_OWN_CHUNK 274877911040ULL",
	} {
		if !bytes.Contains(src, []byte(line)) {
			t.Errorf("header lacks %q", line)
		}
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"OpCreateCQOn": "OP_CREATE_CQ_ON", "MaxFDs": "MAX_FDS", "OpStatQPs": "OP_STAT_QPS",
		"ringSQProd": "RING_SQ_PROD", "StatusCQOverrun": "STATUS_CQ_OVERRUN", "sendInvRKey": "SEND_INV_RKEY",
		"wcPKeyIndex": "WC_PKEY_INDEX", "OpCMListenUD": "OP_CM_LISTEN_UD", "BellAreaLen": "BELL_AREA_LEN",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%s) = %s, want %s", in, got, want)
		}
	}
}

// A marked block that holds something C cannot carry fails the
// generator rather than vanish from the header.
func TestRejectsNonInteger(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\n// Names.\n//\n//rnicd:cheader\nconst (\n\tA = 1\n\tB = \"b\"\n)\n"
	if err := os.WriteFile(dir+"/p.go", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(dir); err == nil || !strings.Contains(err.Error(), "B is not an integer") {
		t.Fatalf("generate: %v, want B refused", err)
	}
}
