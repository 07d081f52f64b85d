/* SPDX-License-Identifier: BSD-2-Clause */
/* rn_container_of: from a public structure the program holds (an ibv_qp,
 * an rdma_cm_id) to the library's object that embeds it. Both libraries
 * use it instead of casts, so an embedded member need not be the first
 * and a pointer of the wrong type does not compile quietly. NULL stays
 * NULL. */
#ifndef RN_CONTAINER_H
#define RN_CONTAINER_H

#include <stddef.h>

#define rn_container_of(ptr, type, member) \
	((ptr) ? (type *)(void *)((char *)(ptr) - offsetof(type, member)) : (type *)NULL)

#endif
