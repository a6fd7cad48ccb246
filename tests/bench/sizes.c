// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
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

/* Bytes the allocator really set aside for @p. */
static size_t perf_alloc(const void *p, size_t asked)
{
	if (!p)
		return 0;
	return is_vmalloc_addr(p) ? PAGE_ALIGN(asked) : ksize(p);
}

static size_t perf_ring(const struct ndk_wr_ring *ring)
{
	size_t n = ring->ctx ? ring->mask + 1 : 0;

	/* One block holds the slots' four arrays (ndk_ring_init()). */
	return perf_alloc(ring->ctx, n * NDK_RING_SLOT_BYTES);
}

static void perf_print_conn(const char *name, NDK_CONNECTOR *conn)
{
	struct ndk_connector *n = container_of(conn, struct ndk_connector, ndk);

	/* extra: the private data buffers, the peer's being what it sent */
	pr_info("size object=%s struct=%zu alloc=%zu extra=%zu rds=%u addresses=%zu\n",
		name, sizeof(*n), perf_alloc(n, sizeof(*n)),
		perf_alloc(n->pdata, 1) + perf_alloc(n->peer_pdata, n->peer_len),
		n->rds, sizeof(n->src) + sizeof(n->dst));
}

void perf_print_sizes(NDK_PD *pd, NDK_CQ *cq, NDK_QP *qp, NDK_MR *mr,
		      NDK_CONNECTOR *active, NDK_CONNECTOR *passive)
{
	struct ndk_pd *p = container_of(pd, struct ndk_pd, ndk);
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	struct ndk_mr *m = container_of(mr, struct ndk_mr, ndk);
	size_t rings = perf_ring(&q->sq) + perf_ring(&q->rq);
	/* The SGE arrays of the held DEFER requests, in one block */
	size_t sge = perf_alloc(q->isge, q->max_held * max(q->max_isge, 1U) *
				sizeof(*q->isge));
	size_t held = perf_alloc(q->held, q->max_held * sizeof(*q->held));

	pr_info("size object=pd struct=%zu alloc=%zu extra=0\n",
		sizeof(*p), perf_alloc(p, sizeof(*p)));
	pr_info("size object=cq struct=%zu alloc=%zu extra=0 poll_buffer=%zu\n",
		sizeof(*c), perf_alloc(c, sizeof(*c)), sizeof(c->wc));
	pr_info("size object=qp struct=%zu alloc=%zu extra=%zu held=%zu sge=%zu rings=%zu sq_slots=%u rq_slots=%u\n",
		sizeof(*q), perf_alloc(q, sizeof(*q)), held + sge + rings,
		held, sge, rings, q->sq.mask + 1, q->rq.mask + 1);
	pr_info("size object=mr struct=%zu alloc=%zu extra=%zu\n",
		sizeof(*m), perf_alloc(m, sizeof(*m)),
		perf_alloc(m->sgt.sgl,
			   m->sgt.orig_nents * sizeof(struct scatterlist)));
	perf_print_conn("connector", active);
	perf_print_conn("connector_passive", passive);
}
