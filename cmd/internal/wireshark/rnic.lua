-- SPDX-License-Identifier: MIT
-- rnic.lua: rnic's verdicts in Wireshark's own tree.
--
-- Wireshark decodes RoCEv2 but does not check its invariant CRC, and
-- checks the MPA CRC of iWARP only where it saw the connection negotiate
-- one. This postdissector adds, as filterable fields:
--
--   rnic.icrc            the ICRC computed over the frame (IBTA Annex A17.3.3)
--   rnic.icrc.status     "good" or "bad"
--   rnic.icrc.bad        present only on a frame whose ICRC is wrong
--   rnic.mpa.crc         the MPA CRC computed over an FPDU (RFC 5044 4.4)
--   rnic.mpa.crc.status  "good", "bad" or "unused" (zero, as when not negotiated)
--   rnic.mpa.crc.bad     present only on an FPDU whose CRC is wrong
--   rnic.note and rnic.{lost,duplicate,corrupted,delayed}:
--                        what a simulated link did to a frame, from the
--                        packet comment rnic writes in a pcapng capture
--                        ("rnic: lost,corrupted"; rnic sim --pcap F.pcapng)
--   rnic.retransmission  a RoCEv2 request packet sent again: one whose
--                        addresses, destination QP and PSN an earlier frame
--                        carried (a link's noted duplicate is not one)
--
-- Load it with  tshark -X lua_script:rnic.lua  or install it in Wireshark's
-- plugin folder (make install does).

local rnic = Proto("rnic", "rnic verdicts")

local f = {
	icrc = ProtoField.uint32("rnic.icrc", "ICRC (computed)", base.HEX),
	icrc_status = ProtoField.string("rnic.icrc.status", "ICRC status"),
	icrc_bad = ProtoField.bool("rnic.icrc.bad", "ICRC is wrong"),
	mpa_crc = ProtoField.uint32("rnic.mpa.crc", "MPA CRC (computed)", base.HEX),
	mpa_status = ProtoField.string("rnic.mpa.crc.status", "MPA CRC status"),
	mpa_bad = ProtoField.bool("rnic.mpa.crc.bad", "MPA CRC is wrong"),
	note = ProtoField.string("rnic.note", "rnic's note"),
	retransmission = ProtoField.bool("rnic.retransmission", "Retransmission"),
	duplicate = ProtoField.bool("rnic.duplicate", "Duplicate"),
	lost = ProtoField.bool("rnic.lost", "Lost on the link"),
	corrupted = ProtoField.bool("rnic.corrupted", "Corrupted on the link"),
	delayed = ProtoField.bool("rnic.delayed", "Delayed on the link"),
}
rnic.fields = { f.icrc, f.icrc_status, f.icrc_bad, f.mpa_crc, f.mpa_status, f.mpa_bad,
	f.note, f.retransmission, f.duplicate, f.lost, f.corrupted, f.delayed }

local e_icrc = ProtoExpert.new("rnic.icrc.bad.expert", "RoCEv2 ICRC is wrong",
	expert.group.CHECKSUM, expert.severity.ERROR)
local e_mpa = ProtoExpert.new("rnic.mpa.crc.bad.expert", "MPA CRC is wrong",
	expert.group.CHECKSUM, expert.severity.ERROR)
rnic.experts = { e_icrc, e_mpa }

local band, bxor, rshift, bnot = bit32.band, bit32.bxor, bit32.rshift, bit32.bnot
local wireMarkerLen = 4 -- an MPA marker: reserved half, FPDUPTR

-- crcTable is the byte table of a reflected CRC-32 with polynomial poly.
local function crcTable(poly)
	local t = {}
	for i = 0, 255 do
		local c = i
		for _ = 1, 8 do
			if band(c, 1) == 1 then c = bxor(rshift(c, 1), poly) else c = rshift(c, 1) end
		end
		t[i] = c
	end
	return t
end
local ieee = crcTable(0xEDB88320)       -- RoCEv2 ICRC: CRC-32 of IEEE 802.3
local castagnoli = crcTable(0x82F63B78) -- MPA: CRC-32C

-- update runs the (un-inverted) CRC register r over the bytes of s.
local function update(t, r, s)
	for i = 1, #s do
		r = bxor(t[band(bxor(r, s:byte(i)), 0xFF)], rshift(r, 8))
	end
	return r
end

local function le32(s, i)
	local a, b, c, d = s:byte(i, i + 3)
	return a + b * 0x100 + c * 0x10000 + d * 0x1000000
end

-- setByte returns s with byte i (1-based) replaced by v.
local function setBytes(s, i, n, v)
	return s:sub(1, i - 1) .. string.rep(string.char(v), n) .. s:sub(i + n)
end

-- roceOffsets finds, in an Ethernet frame, the IP header, the UDP header of
-- a RoCEv2 packet (destination port 4791) and its end (by the UDP length:
-- Ethernet padding is not part of it). nil when the frame is not RoCEv2.
local function roceOffsets(s)
	local off, etype = 13, s:byte(13) * 256 + s:byte(14)
	while etype == 0x8100 or etype == 0x88A8 do -- VLAN tags
		off = off + 4
		if #s < off + 1 then return nil end
		etype = s:byte(off) * 256 + s:byte(off + 1)
	end
	local ip = off + 2 -- 1-based start of the IP header
	local iplen, proto
	if etype == 0x0800 and #s >= ip + 19 then
		iplen, proto = band(s:byte(ip), 0x0F) * 4, s:byte(ip + 9)
	elseif etype == 0x86DD and #s >= ip + 39 then
		iplen, proto = 40, s:byte(ip + 6)
	else
		return nil
	end
	local udp = ip + iplen
	if proto ~= 17 or #s < udp + 7 then return nil end
	if s:byte(udp + 2) * 256 + s:byte(udp + 3) ~= 4791 then return nil end
	local udplen = s:byte(udp + 4) * 256 + s:byte(udp + 5)
	local stop = udp + udplen -- one past the ICRC
	if udplen < 8 + 12 + 4 or stop - 1 > #s then return nil end
	return ip, udp, stop, etype == 0x86DD
end

-- icrc computes the invariant CRC of a RoCEv2 frame: 8 bytes of ones (the
-- LRH RoCEv2 lacks), then IP, UDP and BTH with the fields routers may change
-- set to ones, then the rest of the packet up to the ICRC.
local function icrc(s, ip, udp, stop, v6)
	local hdr = s:sub(ip, udp + 8 + 12 - 1)
	if v6 then
		hdr = string.char(bit32.bor(hdr:byte(1), 0x0F)) .. "\255\255\255" .. hdr:sub(5, 7) .. "\255" .. hdr:sub(9)
	else
		hdr = setBytes(hdr, 2, 1, 0xFF)  -- TOS
		hdr = setBytes(hdr, 9, 1, 0xFF)  -- TTL
		hdr = setBytes(hdr, 11, 2, 0xFF) -- header checksum
	end
	local u = udp - ip + 1
	hdr = setBytes(hdr, u + 6, 2, 0xFF)  -- UDP checksum
	hdr = setBytes(hdr, u + 8 + 4, 1, 0xFF) -- BTH byte 4: FECN, BECN, reserved
	local r = update(ieee, 0xFFFFFFFF, "\255\255\255\255\255\255\255\255")
	r = update(ieee, r, hdr)
	r = update(ieee, r, s:sub(udp + 8 + 12, stop - 5))
	return bnot(r)
end

local function checkICRC(s, tree, ip, udp, stop, v6)
	local want, got = icrc(s, ip, udp, stop, v6), le32(s, stop - 4)
	local t = tree:add(rnic, "rnic: RoCEv2 ICRC")
	t:add(f.icrc, want)
	if want == got then
		t:add(f.icrc_status, "good")
	else
		t:add(f.icrc_status, "bad")
		t:add(f.icrc_bad, true):add_proto_expert_info(e_icrc,
			string.format("ICRC 0x%08x on the wire, 0x%08x computed", got, want))
	end
end

local commentField = Field.new("frame.comment")

-- rnicNotes is the frame's rnic packet comment ("rnic: lost,corrupted",
-- written by a simulated link into a pcapng capture) without its prefix,
-- or nil.
local function rnicNotes()
	for _, fi in ipairs({ commentField() }) do
		local notes = tostring(fi.value):match("^rnic: (.*)$")
		if notes then return notes end
	end
	return nil
end

-- checkNotes turns the notes into fields.
local function checkNotes(tree, notes)
	local t = tree:add(rnic, "rnic: " .. notes)
	t:add(f.note, notes)
	for word in notes:gmatch("[^,]+") do
		if f[word] then t:add(f[word], true) end
	end
end

-- firstSeen maps a RoCEv2 request packet's identity (addresses, destination
-- QP, PSN) to the frame that carried it first: a later frame with the same
-- identity is a retransmission, unless the link noted it as its duplicate.
local firstSeen = {}

local function checkRetransmission(s, tree, frameNumber, noted, ip, udp, v6)
	local op = s:byte(udp + 8)
	if band(op, 0x1F) >= 0x0D and band(op, 0x1F) <= 0x12 then return end -- responses and ACKs
	local addrs = v6 and s:sub(ip + 8, ip + 39) or s:sub(ip + 12, ip + 19)
	local key = addrs .. s:sub(udp + 8 + 5, udp + 8 + 7) .. s:sub(udp + 8 + 9, udp + 8 + 11)
	local first = firstSeen[key]
	if not first then
		firstSeen[key] = frameNumber
	elseif first < frameNumber and not noted then
		tree:add(rnic, "rnic: retransmission"):add(f.retransmission, true)
	end
end

local fpduField = Field.new("iwarp_mpa.fpdu")
local markersField = Field.new("iwarp_mpa.markers")

-- fpduBytes are the octets an FPDU's CRC covers, the CRC field included.
-- Wireshark's FPDU item covers the markers inside an FPDU, but not one
-- that sits in front of the FPDU's ULPDU_Length (at a 512-octet boundary of
-- the stream), which the CRC covers too (RFC 5044 §4.4): then its markers
-- item starts four octets before the FPDU's, and those octets are added.
local function fpduBytes(fi, tvb)
	local s = fi.range:bytes():raw()
	local at = fi.offset - wireMarkerLen
	if at < 0 or tvb:len() < fi.offset + fi.len or tvb:raw(fi.offset, fi.len) ~= s then
		return s -- not the frame's own bytes (a reassembled FPDU)
	end
	for _, m in ipairs({ markersField() }) do
		if m.offset == at then return tvb:raw(at, wireMarkerLen) .. s end
	end
	return s
end
local crcFlagField = Field.new("iwarp_mpa.crc_flag")
local streamField = Field.new("tcp.stream")

-- crcInUse[stream] is true once an MPA Request or Reply of that TCP stream
-- asked for CRCs: then both directions carry them (RFC 5044 7.1).
local crcInUse = {}

local function noteNegotiation()
	local flag, stream = crcFlagField(), streamField()
	if flag and stream and flag.value then crcInUse[stream.value] = true end
end

-- checkMPA checks the CRC of every FPDU Wireshark's MPA dissector found in
-- this frame: CRC-32C over the FPDU (length field, ULPDU, pad and any
-- markers among them), stored least significant byte first in its last four
-- bytes. A zero CRC is what a sender writes when no CRC was negotiated, and
-- wrong only on a connection seen to negotiate one.
local function checkMPA(tvb, tree)
	noteNegotiation()
	local stream = streamField()
	local inUse = stream and crcInUse[stream.value]
	for _, fi in ipairs({ fpduField() }) do
		local s = fpduBytes(fi, tvb)
		if #s >= 6 then
			local got = le32(s, #s - 3)
			local want = bnot(update(castagnoli, 0xFFFFFFFF, s:sub(1, #s - 4)))
			local t = tree:add(rnic, "rnic: MPA CRC")
			t:add(f.mpa_crc, want)
			if got == want then
				t:add(f.mpa_status, "good")
			elseif got == 0 and not inUse then
				t:add(f.mpa_status, "unused")
			else
				t:add(f.mpa_status, "bad")
				t:add(f.mpa_bad, true):add_proto_expert_info(e_mpa,
					string.format("MPA CRC 0x%08x on the wire, 0x%08x computed", got, want))
			end
		end
	end
end

-- init runs before each (re)dissection of a capture: what one file taught
-- the plugin must not leak into the next.
function rnic.init()
	firstSeen, crcInUse = {}, {}
end

function rnic.dissector(tvb, pinfo, tree)
	local notes = rnicNotes()
	if notes then checkNotes(tree, notes) end
	if tvb:len() >= 14 then
		local s = tvb:raw()
		local ip, udp, stop, v6 = roceOffsets(s)
		if ip then
			local duplicate = notes ~= nil and notes:find("duplicate", 1, true) ~= nil
			checkICRC(s, tree, ip, udp, stop, v6)
			checkRetransmission(s, tree, pinfo.number, duplicate, ip, udp, v6)
		end
	end
	checkMPA(tvb, tree)
end

register_postdissector(rnic, true)
