// SPDX-License-Identifier: GPL-2.0
/*
 * ndk's memory per object beyond the verbs objects: the one place of
 * ndkperf that looks inside ndk's private structures, for sizeof and
 * ksize() of what ndk allocated. The workloads never do.
 */
#define pr_fmt(fmt) "ndkperf: " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include "../../ndk/ndk_priv.h"
#include "ndkperf.h"

/* Bytes the allocator really set aside for @p, if allocated. */
static size_t perf_alloc(const void *p, size_t asked)
{
	if (!p)
		return 0;
	return is_vmalloc_addr(p) ? PAGE_ALIGN(asked) : ksize(p);
}

/* One block holds a ring's four arrays (ndk_ring_init()). */
static size_t perf_ring(const struct ndk_wr_ring *ring)
{
	size_t n = ring->ctx ? ring->mask + 1 : 0;

	return perf_alloc(ring->ctx, n * NDK_RING_SLOT_BYTES);
}

/*
 * A connector: the structure, its own private data and the peer's
 * (what is kept of @rds, see ndk_peer_pdata_set()). Returns the bytes;
 * *@allocs is set to the number of allocations.
 */
static size_t perf_print_conn(const char *name, NDK_CONNECTOR *conn,
			      unsigned int *allocs)
{
	struct ndk_connector *n = container_of(conn, struct ndk_connector, ndk);
	size_t alloc = perf_alloc(n, sizeof(*n));
	size_t extra = perf_alloc(n->pdata, n->pdata_len) +
		       perf_alloc(n->peer_pdata, n->peer_len);

	*allocs = 1 + !!n->pdata + !!n->peer_pdata;
	pr_info("size object=%s struct=%zu alloc=%zu allocs=%u extra=%zu rds=%u kept=%u addresses=%zu\n",
		name, sizeof(*n), alloc, *allocs, extra, n->rds, n->peer_len,
		sizeof(n->src) + sizeof(n->dst));
	return alloc + extra;
}

/*
 * A QP: the structure from its cache, the two rings, the DEFER batch and
 * its SGE arrays (ndk_qp_create()). Returns the bytes; *@allocs is set
 * to the number of allocations.
 */
static size_t perf_print_qp(NDK_QP *qp, unsigned int *allocs)
{
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	size_t alloc = perf_alloc(q, sizeof(*q));
	size_t sq = perf_ring(&q->sq), rq = perf_ring(&q->rq);
	size_t held = perf_alloc(q->held, q->max_held * sizeof(*q->held));
	size_t sge = perf_alloc(q->isge, (q->max_held + 1) *
				max(q->max_isge, 1U) *
				sizeof(*q->isge));

	*allocs = 1 + !!q->sq.ctx + !!q->rq.ctx + !!q->held + !!q->isge;
	pr_info("size object=qp struct=%zu alloc=%zu allocs=%u extra=%zu held=%zu sge=%zu rings=%zu sq_ring=%zu rq_ring=%zu sq_slots=%u rq_slots=%u\n",
		sizeof(*q), alloc, *allocs, held + sge + sq + rq, held, sge,
		sq + rq, sq, rq, q->sq.mask + 1, q->rq.mask + 1);
	return alloc + held + sge + sq + rq;
}

void perf_print_sizes(NDK_PD *pd, NDK_CQ *cq, NDK_QP *qp, NDK_MR *mr,
		      NDK_CONNECTOR *active, NDK_CONNECTOR *passive)
{
	struct ndk_pd *p = container_of(pd, struct ndk_pd, ndk);
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	struct ndk_mr *m = container_of(mr, struct ndk_mr, ndk);
	unsigned int allocs, n;
	size_t bytes;

	pr_info("size object=pd struct=%zu alloc=%zu extra=0\n",
		sizeof(*p), perf_alloc(p, sizeof(*p)));
	pr_info("size object=cq struct=%zu alloc=%zu extra=0 poll_buffer=%zu\n",
		sizeof(*c), perf_alloc(c, sizeof(*c)), sizeof(c->wc));
	bytes = perf_print_qp(qp, &n);
	allocs = n;
	pr_info("size object=mr struct=%zu alloc=%zu extra=%zu\n",
		sizeof(*m), perf_alloc(m, sizeof(*m)),
		perf_alloc(m->sgt.sgl,
			   m->sgt.orig_nents * sizeof(struct scatterlist)));
	bytes += perf_print_conn("connector", active, &n);
	allocs += n;
	perf_print_conn("connector_passive", passive, &n);
	/* One end of a connection: its QP and the active connector. */
	pr_info("size object=connection bytes=%zu allocs=%u\n", bytes, allocs);
}
