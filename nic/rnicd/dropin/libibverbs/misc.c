/* SPDX-License-Identifier: BSD-2-Clause */
/* The calls that need no daemon: names of enums, rate conversions, and
 * the public calls rnic does not implement, each failing as libibverbs
 * documents (EOPNOTSUPP; NULL with errno for constructors). */
#include "rnic.h"

#include <stdio.h>
#include <string.h>

RNIC_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
		"success", "local length error", "local QP operation error", "local EE context operation error",
		"local protection error", "Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error", "transport retry counter exceeded",
		"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
		"aborted error", "invalid EE context number", "invalid EE context state", "fatal error",
		"response timeout error", "general error", "TM error", "TM software rendezvous",
	};
	if ((unsigned)status < sizeof(s) / sizeof(s[0]))
		return s[status];
	return "unknown";
}

RNIC_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
		"CQ error", "local work queue catastrophic error", "invalid request local work queue error",
		"local access violation work queue error", "communication established", "send queue drained",
		"path migrated", "path migration request error", "local catastrophic error", "port active",
		"port error", "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
		"SRQ limit reached", "last WQE reached", "client reregistration", "GID table change",
		"WQ fatal",
	};
	if ((unsigned)event < sizeof(s) / sizeof(s[0]))
		return s[event];
	return "unknown";
}

RNIC_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const s[] = {"unknown", "InfiniBand channel adapter", "InfiniBand switch",
					"InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP", "unspecified"};
	if (node_type < IBV_NODE_CA || node_type > IBV_NODE_UNSPECIFIED)
		return s[0];
	return s[node_type];
}

RNIC_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const s[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
					"PORT_ACTIVE_DEFER"};
	if ((unsigned)port_state < sizeof(s) / sizeof(s[0]))
		return s[port_state];
	return "unknown";
}

/* enum ibv_rate → Mbit/s; the enum is not in speed order. */
static const struct {
	enum ibv_rate rate;
	int mbps;
} rates[] = {
	{IBV_RATE_2_5_GBPS, 2500}, {IBV_RATE_5_GBPS, 5000}, {IBV_RATE_10_GBPS, 10000},
	{IBV_RATE_20_GBPS, 20000}, {IBV_RATE_30_GBPS, 30000}, {IBV_RATE_40_GBPS, 40000},
	{IBV_RATE_60_GBPS, 60000}, {IBV_RATE_80_GBPS, 80000}, {IBV_RATE_120_GBPS, 120000},
	{IBV_RATE_14_GBPS, 14062}, {IBV_RATE_56_GBPS, 56250}, {IBV_RATE_112_GBPS, 112500},
	{IBV_RATE_168_GBPS, 168750}, {IBV_RATE_25_GBPS, 25781}, {IBV_RATE_100_GBPS, 103125},
	{IBV_RATE_200_GBPS, 206250}, {IBV_RATE_300_GBPS, 309375}, {IBV_RATE_28_GBPS, 28125},
	{IBV_RATE_50_GBPS, 53125}, {IBV_RATE_400_GBPS, 425000}, {IBV_RATE_600_GBPS, 637500},
	{IBV_RATE_800_GBPS, 850000}, {IBV_RATE_1200_GBPS, 1275000},
};
#define NRATES (sizeof(rates) / sizeof(rates[0]))

RNIC_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

RNIC_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* Multiples of 2.5 Gbit/s: only the rates that are such multiples. */
static const int mults[][2] = {
	{IBV_RATE_2_5_GBPS, 1}, {IBV_RATE_5_GBPS, 2}, {IBV_RATE_10_GBPS, 4}, {IBV_RATE_20_GBPS, 8},
	{IBV_RATE_30_GBPS, 12}, {IBV_RATE_40_GBPS, 16}, {IBV_RATE_60_GBPS, 24}, {IBV_RATE_80_GBPS, 32},
	{IBV_RATE_120_GBPS, 48}, {IBV_RATE_14_GBPS, 6}, {IBV_RATE_56_GBPS, 22}, {IBV_RATE_112_GBPS, 45},
	{IBV_RATE_168_GBPS, 67}, {IBV_RATE_25_GBPS, 10}, {IBV_RATE_100_GBPS, 40}, {IBV_RATE_200_GBPS, 80},
	{IBV_RATE_300_GBPS, 120}, {IBV_RATE_28_GBPS, 11}, {IBV_RATE_50_GBPS, 20}, {IBV_RATE_400_GBPS, 160},
	{IBV_RATE_600_GBPS, 240}, {IBV_RATE_800_GBPS, 320}, {IBV_RATE_1200_GBPS, 480},
};

RNIC_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < sizeof(mults) / sizeof(mults[0]); i++)
		if (mults[i][0] == (int)rate)
			return mults[i][1];
	return -1;
}

RNIC_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < sizeof(mults) / sizeof(mults[0]); i++)
		if (mults[i][1] == mult)
			return (enum ibv_rate)mults[i][0];
	return IBV_RATE_MAX;
}

/* sysfs: rnic's devices have none. */
RNIC_EXPORT const char *ibv_get_sysfs_path(void) { return "/sys"; }

RNIC_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir, (void)file, (void)buf, (void)size;
	errno = ENOENT;
	return -1;
}

RNIC_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, const char *sysfs_dev, const char *fnfmt, ...)
{
	(void)buf, (void)size, (void)sysfs_dev, (void)fnfmt;
	errno = ENOENT;
	return -1;
}

/* The kernel-ABI copies (struct ib_user_*): rnic has no kernel ABI; the
 * structures they convert from never exist here. */
RNIC_EXPORT void ibv_copy_qp_attr_from_kern(void *dst, void *src) { (void)dst, (void)src; }
RNIC_EXPORT void ibv_copy_ah_attr_from_kern(void *dst, void *src) { (void)dst, (void)src; }
RNIC_EXPORT void ibv_copy_path_rec_from_kern(void *dst, void *src) { (void)dst, (void)src; }
RNIC_EXPORT void ibv_copy_path_rec_to_kern(void *dst, void *src) { (void)dst, (void)src; }

/* Import/export, ECE, dma-buf: not in rnicd. */
RNIC_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

RNIC_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context, (void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

RNIC_EXPORT void ibv_unimport_pd(struct ibv_pd *pd) { (void)pd; }

RNIC_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd, (void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

RNIC_EXPORT void ibv_unimport_mr(struct ibv_mr *mr) { (void)mr; }

RNIC_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context, (void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

RNIC_EXPORT void ibv_unimport_dm(struct ibv_dm *dm) { (void)dm; }

RNIC_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

RNIC_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

RNIC_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
					     int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* rnic writes a message's data in order as its packets arrive (in PSN
 * order), like rxe: data is in order once its completion is seen. */
RNIC_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;
}

/* Resolving a GID to a MAC needs the neighbour table of the daemon's
 * network, which the library cannot see. */
RNIC_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					    uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context, (void)attr, (void)eth_mac, (void)vid;
	return EOPNOTSUPP;
}
