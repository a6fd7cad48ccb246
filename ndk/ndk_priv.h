/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Private structures of the ndk provider. Every NDK object embeds its
 * public NDKPI struct (header + dispatch table) and a struct ndk_obj that
 * carries the lifetime rules common to all objects.
 *
 * The umbrella every ndk/ file, the KUnit tests and tests/selftest
 * include: the subsystem headers, each naming the files that own it,
 * and the few declarations every file shares.
 */
#ifndef _NDK_PRIV_H
#define _NDK_PRIV_H

#include "compat.h"
#include "object.h"
#include "adapter.h"
#include "loopback.h"
#include "reg.h"
#include "pd.h"
#include "cq.h"
#include "ring.h"
#include "qp.h"
#include "mr.h"
#include "mdl.h"
#include "srq.h"
#include "cm.h"

/* ------------------------------------------------------------------ */
/* Slab caches (slab.c); failure injection (fault.c)                  */

extern struct kmem_cache *ndk_conn_cache;
extern struct kmem_cache *ndk_qp_cache;
extern struct kmem_cache *ndk_cq_cache;
extern struct kmem_cache *ndk_mr_cache;
int ndk_slab_init(void);
void ndk_slab_exit(void);

/*
 * Failure injection for the ndk_fault suite: every call on a create,
 * resize, connect or register path that can fail is wrapped, so the suite
 * can make the n-th such call fail (ndk_fault_arm()) and count them.
 * Without KUnit the wrappers are the bare calls (fault.c).
 */
#if IS_ENABLED(CONFIG_KUNIT)
bool ndk_fault(void);
/*
 * An injected failure's value comes from out of line: a constant would
 * let the compiler jump from the injection straight to the error path,
 * past the caller's test of the result, which gcov then counts as never
 * failing.
 */
int ndk_fault_errno(void);
void *ndk_fault_null(void);
void ndk_fault_arm(int nth);
int ndk_fault_disarm(bool *fired);
int ndk_fault_seen(void);
/* The ndk_sweep suite plays a driver that loses its flushes (siw's). */
void ndk_fault_lose(bool on);
extern bool ndk_fault_lose_flushes;
static inline bool ndk_fault_lost(enum ib_wc_status status)
{
	return READ_ONCE(ndk_fault_lose_flushes) &&
	       status == IB_WC_WR_FLUSH_ERR;
}
#else
static inline bool ndk_fault(void)
{
	return false;
}

static inline int ndk_fault_errno(void)
{
	return -ENOMEM;
}

static inline void *ndk_fault_null(void)
{
	return NULL;
}

static inline bool ndk_fault_lost(enum ib_wc_status status)
{
	return false;
}
#endif
#define NDK_FI_NULL(call)	(ndk_fault() ? ndk_fault_null() : (call))
#define NDK_FI_PTR(call)	(ndk_fault() ? ERR_PTR(ndk_fault_errno()) : (call))
#define NDK_FI_ERR(call)	(ndk_fault() ? ndk_fault_errno() : (call))

/* ------------------------------------------------------------------ */
/* Status translation (status.c)                                      */

struct ndk_errno_map {
	int err;
	NTSTATUS status;
};

struct ndk_wc_map {
	enum ib_wc_status wc_status;
	NTSTATUS status;
};

NTSTATUS ndk_status_from_errno(int err);
NTSTATUS ndk_status_from_wc(enum ib_wc_status wc_status);
#if IS_ENABLED(CONFIG_KUNIT)
const struct ndk_errno_map *ndk_errno_map_table(size_t *n);
const struct ndk_wc_map *ndk_wc_map_table(size_t *n);
#endif

#endif /* _NDK_PRIV_H */
