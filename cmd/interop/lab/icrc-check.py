#!/usr/bin/env python3
"""Checks the RoCEv2 ICRC of every UDP/4791 frame in classic pcap files.

tshark shows the ICRC field but does not verify it; this checker, which
needs nothing but the standard library, does. It is independent of rnic's
own decoder, so the two can be held against each other.

The ICRC is the Ethernet CRC-32 (as zlib.crc32 computes it) over:
  8 bytes of 0xff, standing in for the LRH a RoCEv2 packet does not carry;
  the IP header with the fields routers change set to all ones
    (IPv4: DSCP/ECN byte, TTL, header checksum;
     IPv6: traffic class, flow label, hop limit);
  the UDP header with its checksum set to all ones;
  the BTH with its reserved byte (byte 4) set to all ones;
  the rest of the packet up to the ICRC itself.
The four ICRC bytes on the wire hold that value least significant first.

usage: icrc-check.py FILE.pcap...   (exit status 1 if any frame is wrong)
"""
import struct
import sys
import zlib

ROCE_PORT = 4791


def frames(path):
    """Yields (number, bytes) for each record of an Ethernet classic pcap."""
    with open(path, 'rb') as f:
        head = f.read(24)
        order = {b'\xd4\xc3\xb2\xa1': '<', b'\x4d\x3c\xb2\xa1': '<',
                 b'\xa1\xb2\xc3\xd4': '>', b'\xa1\xb2\x3c\x4d': '>'}.get(head[:4])
        if order is None:
            sys.exit(f'{path}: not a classic pcap file')
        if struct.unpack(order + 'I', head[20:24])[0] != 1:
            sys.exit(f'{path}: not an Ethernet capture')
        n = 0
        while len(rec := f.read(16)) == 16:
            n += 1
            yield n, f.read(struct.unpack(order + 'IIII', rec)[2])


def masked_ip(frame, off, ethertype):
    """Returns (masked IP header, UDP offset, end of IP payload) or None."""
    if ethertype == 0x0800 and frame[off + 9] == 17:
        hlen = (frame[off] & 0x0f) * 4
        ip = bytearray(frame[off:off + hlen])
        ip[1] = ip[8] = 0xff
        ip[10:12] = b'\xff\xff'
        return ip, off + hlen, off + struct.unpack('>H', frame[off + 2:off + 4])[0]
    if ethertype == 0x86dd and frame[off + 6] == 17:
        ip = bytearray(frame[off:off + 40])
        ip[0] |= 0x0f
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xff
        return ip, off + 40, off + 40 + struct.unpack('>H', frame[off + 4:off + 6])[0]
    return None


def icrc(frame):
    """Returns (computed, on the wire) for a RoCEv2 frame, None for others."""
    off, ethertype = 14, struct.unpack('>H', frame[12:14])[0]
    while ethertype in (0x8100, 0x88a8):  # VLAN tags
        ethertype = struct.unpack('>H', frame[off + 2:off + 4])[0]
        off += 4
    ip = masked_ip(frame, off, ethertype)
    if ip is None:
        return None
    header, udp, end = ip
    if struct.unpack('>H', frame[udp + 2:udp + 4])[0] != ROCE_PORT or end - udp < 8 + 12 + 4:
        return None
    udp_header = frame[udp:udp + 6] + b'\xff\xff'
    ib = bytearray(frame[udp + 8:end - 4])
    ib[4] = 0xff
    crc = zlib.crc32(b'\xff' * 8 + bytes(header) + udp_header + bytes(ib))
    return crc, struct.unpack('<I', frame[end - 4:end])[0]


def main(paths):
    bad_anywhere = False
    for path in paths:
        good = bad = 0
        for n, frame in frames(path):
            r = icrc(frame)
            if r is None:
                continue
            if r[0] == r[1]:
                good += 1
                continue
            bad += 1
            if bad <= 5:
                print(f'{path}: frame {n}: ICRC {r[1]:08x} on the wire, {r[0]:08x} computed')
        print(f'{path}: RoCEv2 packets={good + bad} icrc_ok={good} icrc_bad={bad}')
        bad_anywhere |= bad > 0
    return 1 if bad_anywhere else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
