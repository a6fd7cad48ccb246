// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The memory environment the MR, MDL and MW suites share: test memory in
 * each form an MDL describes, MRs registered over it, and a connection
 * with a local buffer that reads and writes it through a token; and the
 * registered buffers of the posting environment (struct ndk_pmem).
 */
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include "ndk_tests.h"

/* The CPU address of byte @i of the region. */
u8 *ndk_mem_byte(struct ndk_mem *m, u32 i)
{
	u32 pos = m->off + i;

	if (m->kind == NDK_MDL_KVA)
		return m->base + pos;
	return (u8 *)page_address(m->pages[pos / PAGE_SIZE]) +
	       pos % PAGE_SIZE;
}

void ndk_mem_fill(struct ndk_mem *m, u32 from, u32 n, u8 seed)
{
	u32 i;

	for (i = 0; i < n; i++)
		*ndk_mem_byte(m, from + i) = (u8)(seed + i * 7);
}

bool ndk_mem_check(struct ndk_mem *m, u32 from, u32 n, u8 seed)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (*ndk_mem_byte(m, from + i) != (u8)(seed + i * 7))
			return false;
	return true;
}

/*
 * Memory of NDK_MEM_PAGES pages in the form @kind, a region from @off of
 * @len bytes, and its MDL chain.
 */
void ndk_mem_init(struct kunit *test, struct ndk_mem *m,
		  enum ndk_mdl_kind kind, bool vmalloc, bool chain,
		  u32 off, u32 len)
{
	u32 total = NDK_MEM_PAGES * PAGE_SIZE, split, i;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->vmalloc = vmalloc;
	m->chain = chain;
	m->off = off;
	m->len = len;
	if (kind == NDK_MDL_KVA) {
		m->base = vmalloc ? vzalloc(total) : kzalloc(total, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, m->base);
		if (!chain) {
			ndk_mdl_init_kva(&m->mdl[0], m->base + off, len);
			return;
		}
		/* Two pieces meeting at the second page boundary. */
		split = 2 * PAGE_SIZE - off;
		ndk_mdl_init_kva(&m->mdl[0], m->base + off, split);
		ndk_mdl_init_kva(&m->mdl[1], m->base + 2 * PAGE_SIZE,
				 len - split);
		m->mdl[0].next = &m->mdl[1];
		return;
	}
	sg_init_table(m->sg, NDK_MEM_PAGES);
	for (i = 0; i < NDK_MEM_PAGES; i++) {
		m->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, m->pages[i]);
		m->bv[i] = (struct bio_vec){ .bv_page = m->pages[i],
					     .bv_len = PAGE_SIZE };
		sg_set_page(&m->sg[i], m->pages[i], PAGE_SIZE, 0);
	}
	if (kind == NDK_MDL_PAGES) {
		ndk_mdl_init_pages(&m->mdl[0], m->pages, NDK_MEM_PAGES, off,
				   len);
		return;
	}
	/* bio_vecs and scatterlists start the region inside the first one. */
	m->bv[0].bv_offset = off;
	m->bv[0].bv_len = PAGE_SIZE - off;
	m->sg[0].offset = off;
	m->sg[0].length = PAGE_SIZE - off;
	if (kind == NDK_MDL_BVEC)
		ndk_mdl_init_bvec(&m->mdl[0], m->bv, NDK_MEM_PAGES, len);
	else
		ndk_mdl_init_sg(&m->mdl[0], m->sg, NDK_MEM_PAGES, len);
}

void ndk_mem_free(struct ndk_mem *m)
{
	u32 i;

	if (m->vmalloc)
		vfree(m->base);
	else
		kfree(m->base);
	for (i = 0; i < NDK_MEM_PAGES; i++)
		if (m->pages[i])
			__free_page(m->pages[i]);
}

u64 ndk_mem_va(struct ndk_mem *m)
{
	return m->mdl[0].va;
}

NDK_MR *ndk_test_mr(struct kunit *test, struct ndk_cenv *e, bool fast)
{
	NDK_MR *unused = NULL;
	unsigned long flags;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->pd->Dispatch->NdkCreateMr(e->pd, fast, ndk_test_create_cb, &w,
					  &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	return container_of(ndk_create_with(test, st, &w), NDK_MR, Header);
}

/*
 * NdkRegisterMr from the test's thread, which may sleep: the final
 * status, whether the request completed inline or through its callback
 * (ndk_test_outcome()). ndk_mr_caller_test() covers atomic callers.
 */
NTSTATUS ndk_test_register(struct kunit *test, NDK_MR *mr,
			   struct ndk_mem *m, u64 len, ULONG flags)
{
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = mr->Dispatch->NdkRegisterMr(mr, m->mdl, len, flags,
					 ndk_test_request_cb, &w);
	return ndk_test_outcome(test, &w, st);
}

NTSTATUS ndk_test_deregister(struct kunit *test, NDK_MR *mr)
{
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = mr->Dispatch->NdkDeregisterMr(mr, ndk_test_request_cb, &w);
	return ndk_test_outcome(test, &w, st);
}

void ndk_test_close_mr(struct kunit *test, NDK_MR *mr)
{
	ndk_test_close(test, &mr->Header, mr->Dispatch->NdkCloseMr);
}

void *ndk_kzalloc_test(struct kunit *test, size_t size)
{
	void *p = kunit_kzalloc(test, size, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	return p;
}

/*
 * The result of @ctx on @cq (both QPs share it), or a failure. Results
 * of other requests that arrive first are kept for their own wait.
 */
NTSTATUS ndk_test_result(struct kunit *test, struct ndk_menv *me,
			 NDK_CQ *cq, void *ctx, NDK_RESULT_EX *out)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	NDK_RESULT_EX r;
	int i;

	for (i = 0; i < me->nearly; i++) {
		if (me->early[i].RequestContext != ctx)
			continue;
		r = me->early[i];
		me->early[i] = me->early[--me->nearly];
		goto found;
	}
	while (time_before(jiffies, end)) {
		if (!cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1)) {
			usleep_range(2000, 4000);
			continue;
		}
		if (r.RequestContext == ctx)
			goto found;
		if (me->nearly < ARRAY_SIZE(me->early))
			me->early[me->nearly++] = r;
	}
	KUNIT_FAIL(test, "no completion for %p", ctx);
	return STATUS_IO_TIMEOUT;
found:
	if (out)
		*out = r;
	return r.Status;
}

void ndk_menv_init(struct kunit *test, struct ndk_cenv *e,
		   struct ndk_menv *me)
{
	struct sockaddr_in dst;

	me->p.c = ndk_cenv_connector(test, e);
	me->p.aqp = ndk_cenv_qp_sge(test, e, 4, 32);
	me->p.pqp = ndk_cenv_qp_sge(test, e, 4, 32);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &me->p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	me->nearly = 0;
	ndk_mem_init(test, &me->lmem, NDK_MDL_KVA, false, false, 0,
		     NDK_MEM_PAGES * PAGE_SIZE);
	me->lmr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, me->lmr, &me->lmem,
						me->lmem.len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
			STATUS_SUCCESS);
}

void ndk_menv_free(struct kunit *test, struct ndk_menv *me)
{
	ndk_test_close_mr(test, me->lmr);
	ndk_mem_free(&me->lmem);
	ndk_pair_close(test, &me->p);
}

/*
 * NdkWrite (or NdkRead) of @len bytes between the local buffer and
 * @raddr under @token; the completion status.
 */
NTSTATUS ndk_menv_rdma_on(struct kunit *test, struct ndk_cenv *e,
			  struct ndk_menv *me, NDK_QP *qp, bool write,
			  u64 raddr, u32 token, u32 len)
{
	NDK_SGE sge = {
		.VirtualAddress = me->lmem.base,
		.Length = len,
		.MemoryRegionToken =
			me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr),
	};
	unsigned long irq;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, irq);
	if (write)
		st = qp->Dispatch->NdkWrite(qp, (void *)0x77, &sge, 1, raddr,
					    token, 0);
	else
		st = qp->Dispatch->NdkRead(qp, (void *)0x77, &sge, 1, raddr,
					   token, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	if (st)
		return st;
	st = ndk_test_result(test, me, e->cq, (void *)0x77, NULL);
	if (st || !write || !ndk_test_iwarp())
		return st;
	/*
	 * An iWARP write completes once sent: neither placed nor checked
	 * yet. A zero-length read behind it returns only after the peer
	 * has placed it, and fails if the peer refused it, since the
	 * peer's TERMINATE ends the connection.
	 */
	sge.Length = 0;
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = qp->Dispatch->NdkRead(qp, (void *)0x78, &sge, 1, raddr, token, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	if (st)
		return st;
	return ndk_test_result(test, me, e->cq, (void *)0x78, NULL);
}

/* From the active side, which the other cases read and write from. */
NTSTATUS ndk_menv_rdma(struct kunit *test, struct ndk_cenv *e,
		       struct ndk_menv *me, bool write, u64 raddr,
		       u32 token, u32 len)
{
	return ndk_menv_rdma_on(test, e, me, me->p.aqp, write, raddr, token,
				len);
}

/* NdkInvalidate of @obj on the passive QP; the completion status. */
NTSTATUS ndk_test_invalidate(struct kunit *test, struct ndk_cenv *e,
			     struct ndk_menv *me,
			     NDK_OBJECT_HEADER *obj)
{
	NDK_QP *qp = me->p.pqp;
	NDK_RESULT_EX r = {};
	unsigned long irq;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, irq);
	st = qp->Dispatch->NdkInvalidate(qp, (void *)0x98, obj, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	if (st)
		return st;
	st = ndk_test_result(test, me, e->cq, (void *)0x98, &r);
	KUNIT_EXPECT_EQ(test, r.Type, (ULONG)NdkOperationTypeInvalidate);
	return st;
}

struct ndk_pmem *ndk_pmem_new(struct kunit *test, struct ndk_cenv *e,
			      ULONG flags)
{
	struct ndk_pmem *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	NDK_MR *unused = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, m);
	m->buf = kunit_kzalloc(test, NDK_PMEM_LEN, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m->buf);
	ndk_mdl_init_kva(&m->mdl, m->buf, NDK_PMEM_LEN);
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateMr(e->pd, FALSE, ndk_test_create_cb, &w,
					  &unused);
	m->mr = container_of(ndk_created(test, st, &w, unused), NDK_MR,
			     Header);
	ndk_wait_init(&w);
	st = m->mr->Dispatch->NdkRegisterMr(m->mr, &m->mdl, NDK_PMEM_LEN, flags,
					    ndk_test_request_cb, &w);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	return m;
}

void ndk_pmem_free(struct kunit *test, struct ndk_pmem *m)
{
	ndk_test_close(test, &m->mr->Header, m->mr->Dispatch->NdkCloseMr);
}

NDK_SGE ndk_pmem_sge(struct ndk_pmem *m, u32 off, u32 len)
{
	return (NDK_SGE){
		.VirtualAddress = m->buf + off,
		.Length = len,
		.MemoryRegionToken =
			m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr),
	};
}

u64 ndk_pmem_va(struct ndk_pmem *m, u32 off)
{
	return (uintptr_t)m->buf + off;
}

UINT32 ndk_pmem_rtok(struct ndk_pmem *m)
{
	return m->mr->Dispatch->NdkGetRemoteTokenFromMr(m->mr);
}
