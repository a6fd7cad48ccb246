// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Slab caches of the objects a consumer makes many of. Their sizes fall
 * between kmalloc's size classes (a connector of about 300 bytes, a CQ
 * of about 1500), where kmalloc would set aside up to a third more.
 */
#include <linux/slab.h>
#include "ndk_priv.h"

struct kmem_cache *ndk_conn_cache;
struct kmem_cache *ndk_qp_cache;
struct kmem_cache *ndk_cq_cache;
struct kmem_cache *ndk_mr_cache;

void ndk_slab_exit(void)
{
	kmem_cache_destroy(ndk_conn_cache);
	kmem_cache_destroy(ndk_qp_cache);
	kmem_cache_destroy(ndk_cq_cache);
	kmem_cache_destroy(ndk_mr_cache);
}

int ndk_slab_init(void)
{
	ndk_conn_cache = KMEM_CACHE(ndk_connector, 0);
	ndk_qp_cache = KMEM_CACHE(ndk_qp, 0);
	ndk_cq_cache = KMEM_CACHE(ndk_cq, 0);
	ndk_mr_cache = KMEM_CACHE(ndk_mr, 0);
	if (ndk_conn_cache && ndk_qp_cache && ndk_cq_cache && ndk_mr_cache)
		return 0;
	ndk_slab_exit();
	return -ENOMEM;
}
