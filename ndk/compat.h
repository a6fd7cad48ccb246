/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What differs between the kernel series ndk builds on (6.1, 6.12, 7.3),
 * in one place: ndk's code is written against the newest API, and each
 * entry below gives an older kernel that API, or a newer kernel what it
 * removed. Each names the kernel that changed it and is chosen by
 * feature, from a macro the kernel defines or from compat/probe.sh's
 * answers (HAVE_*), never by version number. The tests' own entries are
 * in tests/compat.h.
 */
#ifndef _NDK_COMPAT_H
#define _NDK_COMPAT_H

#include <linux/mm.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <ndk_compat_config.h>

/*
 * 6.13 (commit cdd30ebb1b9f, "module: Convert symbol namespace to string
 * literal"): EXPORT_SYMBOL_NS_GPL() and MODULE_IMPORT_NS() take a string;
 * before, a bare name they stringify (which expands this macro first).
 */
#ifdef HAVE_SYMBOL_NS_IDENT
#define NDK_KUNIT_NS	NDK_KUNIT
#else
#define NDK_KUNIT_NS	"NDK_KUNIT"
#endif

/*
 * 6.16 ("treewide, timers: Rename from_timer() to timer_container_of()");
 * 7.3 has no from_timer(). Both are macros.
 */
#ifndef timer_container_of
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

/*
 * 6.18 ("mm: remove nth_page()"): callers are to know their pages are
 * contiguous in the memmap. An MDL's pages need not be (SPARSEMEM
 * without VMEMMAP), so keep going through the PFN as nth_page() did
 * there; a macro while it existed.
 */
#ifndef nth_page
#define nth_page(page, n)	pfn_to_page(page_to_pfn(page) + (n))
#endif

/*
 * Between 6.12 and 7.3 the resize op became resize_user_cq(cq, cqe,
 * udata) and the kernel-CQ wrapper ib_resize_cq() went away; the drivers
 * that resize a kernel CQ (rxe, mlx5...) still do when udata is NULL, so
 * NdkResizeCq keeps calling the op as ib_resize_cq() did.
 */
#ifdef HAVE_IB_OPS_RESIZE_USER_CQ
static inline bool ndk_ib_can_resize_cq(struct ib_device *dev)
{
	return dev->ops.resize_user_cq;
}
#else
static inline bool ndk_ib_can_resize_cq(struct ib_device *dev)
{
	return dev->ops.resize_cq;
}
#endif

#ifndef HAVE_IB_RESIZE_CQ
#ifndef HAVE_IB_OPS_RESIZE_USER_CQ
#error "neither ib_resize_cq() nor ib_device_ops.resize_user_cq: see compat/probe.sh"
#endif
/* ib_resize_cq() as 6.12 had it. */
static inline int ib_resize_cq(struct ib_cq *cq, int cqe)
{
	if (cq->shared)
		return -EOPNOTSUPP;
	return cq->device->ops.resize_user_cq ?
		cq->device->ops.resize_user_cq(cq, cqe, NULL) : -EOPNOTSUPP;
}
#endif

/*
 * Between 6.12 and 7.3 ib_get_vector_affinity() went away with the
 * get_vector_affinity op. What it returned for a device without the op:
 * no affinity known, so ndk_cq_pick_vector() spreads CPUs over vectors.
 */
#ifndef HAVE_IB_GET_VECTOR_AFFINITY
static inline const struct cpumask *
ib_get_vector_affinity(struct ib_device *device, int comp_vector)
{
	return NULL;
}
#endif

/*
 * 6.17 ("workqueue: Add new WQ_PERCPU flag"), and Debian's 6.12.117 has
 * it too: a workqueue bound to CPUs says so, as the default is to become
 * unbound; 7.3 warns at alloc_workqueue() when a caller gives neither
 * WQ_PERCPU nor WQ_UNBOUND. Before, no WQ_UNBOUND meant per-CPU.
 */
#ifndef HAVE_WQ_PERCPU
#define WQ_PERCPU	0
#endif

#endif /* _NDK_COMPAT_H */
