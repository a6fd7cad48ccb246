// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_mr, ndk_lam, ndk_mw: memory over a loopback connection. One side
 * registers memory, the other reads and writes it through the token with
 * NdkRead/NdkWrite; access rights, bounds and dead tokens must make the
 * request fail and leave the memory alone. Fast registration and
 * invalidation (local and remote) go through the consumer's QPs, logical
 * address mappings through the privileged token.
 */
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include "ndk_tests.h"

#define NDK_MEM_PAGES	4

/**
 * struct ndk_mem - test memory in one of the forms an MDL describes
 * @kind: NDK_MDL_* (KVA memory from kmalloc or vmalloc, see @vmalloc)
 * @vmalloc: KVA memory comes from vmalloc
 * @chain: describe it as two MDLs split at a page boundary
 * @base: KVA memory
 * @pages: page-backed memory
 * @bv: bio_vecs of @pages
 * @sg: scatterlist of @pages
 * @mdl: the MDL chain
 * @off: where the region starts in the memory
 * @len: region length
 */
struct ndk_mem {
	enum ndk_mdl_kind kind;
	bool vmalloc;
	bool chain;
	u8 *base;
	struct page *pages[NDK_MEM_PAGES];
	struct bio_vec bv[NDK_MEM_PAGES];
	struct scatterlist sg[NDK_MEM_PAGES];
	struct ndk_mdl mdl[2];
	u32 off;
	u32 len;
};

/* The CPU address of byte @i of the region. */
static u8 *ndk_mem_byte(struct ndk_mem *m, u32 i)
{
	u32 pos = m->off + i;

	if (m->kind == NDK_MDL_KVA)
		return m->base + pos;
	return (u8 *)page_address(m->pages[pos / PAGE_SIZE]) +
	       pos % PAGE_SIZE;
}

static void ndk_mem_fill(struct ndk_mem *m, u32 from, u32 n, u8 seed)
{
	u32 i;

	for (i = 0; i < n; i++)
		*ndk_mem_byte(m, from + i) = (u8)(seed + i * 7);
}

static bool ndk_mem_check(struct ndk_mem *m, u32 from, u32 n, u8 seed)
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
static void ndk_mem_init(struct kunit *test, struct ndk_mem *m,
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

static void ndk_mem_free(struct ndk_mem *m)
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

static u64 ndk_mem_va(struct ndk_mem *m)
{
	return m->mdl[0].va;
}

static NDK_MR *ndk_test_mr(struct kunit *test, struct ndk_cenv *e, bool fast)
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
static NTSTATUS ndk_test_register(struct kunit *test, NDK_MR *mr,
				  struct ndk_mem *m, u64 len, ULONG flags)
{
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = mr->Dispatch->NdkRegisterMr(mr, m->mdl, len, flags,
					 ndk_test_request_cb, &w);
	return ndk_test_outcome(test, &w, st);
}

static NTSTATUS ndk_test_deregister(struct kunit *test, NDK_MR *mr)
{
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = mr->Dispatch->NdkDeregisterMr(mr, ndk_test_request_cb, &w);
	return ndk_test_outcome(test, &w, st);
}

static void ndk_test_close_mr(struct kunit *test, NDK_MR *mr)
{
	ndk_test_close(test, &mr->Header, mr->Dispatch->NdkCloseMr);
}

/**
 * struct ndk_menv - a connection and a local buffer to move data with
 * @p: the connection; the active QP initiates, the passive one owns the
 *	target memory
 * @lmem: local buffer of the active side
 * @lmr: @lmem registered for local write
 * @early: results that arrived before their wait
 * @nearly: how many
 */
struct ndk_menv {
	struct ndk_pair p;
	struct ndk_mem lmem;
	NDK_MR *lmr;
	NDK_RESULT_EX early[8];
	int nearly;
};

static void *ndk_kzalloc_test(struct kunit *test, size_t size)
{
	void *p = kunit_kzalloc(test, size, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	return p;
}

/*
 * The result of @ctx on @cq (both QPs share it), or a failure. Results
 * of other requests that arrive first are kept for their own wait.
 */
static NTSTATUS ndk_test_result(struct kunit *test, struct ndk_menv *me,
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

static void ndk_menv_init(struct kunit *test, struct ndk_cenv *e,
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

static void ndk_menv_free(struct kunit *test, struct ndk_menv *me)
{
	ndk_test_close_mr(test, me->lmr);
	ndk_mem_free(&me->lmem);
	ndk_pair_close(test, &me->p);
}

/*
 * NdkWrite (or NdkRead) of @len bytes between the local buffer and
 * @raddr under @token; the completion status.
 */
static NTSTATUS ndk_menv_rdma_on(struct kunit *test, struct ndk_cenv *e,
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
static NTSTATUS ndk_menv_rdma(struct kunit *test, struct ndk_cenv *e,
			      struct ndk_menv *me, bool write, u64 raddr,
			      u32 token, u32 len)
{
	return ndk_menv_rdma_on(test, e, me, me->p.aqp, write, raddr, token,
				len);
}

struct ndk_mem_case {
	const char *name;
	enum ndk_mdl_kind kind;
	bool vmalloc;
	bool chain;
};

static const struct ndk_mem_case ndk_mem_cases[] = {
	{ "kmalloc", NDK_MDL_KVA, false, false },
	{ "vmalloc", NDK_MDL_KVA, true, false },
	{ "vmalloc chain", NDK_MDL_KVA, true, true },
	{ "page array", NDK_MDL_PAGES, false, false },
	{ "bio_vec", NDK_MDL_BVEC, false, false },
	{ "scatterlist", NDK_MDL_SG, false, false },
};

static void ndk_mem_case_desc(const struct ndk_mem_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mr_rdma, ndk_mem_cases, ndk_mem_case_desc);

/* Region spanning three pages from an odd offset. */
#define NDK_REGION_OFF	333
#define NDK_REGION_LEN	(3 * PAGE_SIZE - 2 * NDK_REGION_OFF)

/*
 * Register each form of memory, write into it and read it back through
 * the remote token, then deregister: the token is dead
 * (nd_mr_deregister covers the same for one form).
 */
static void ndk_mr_rdma_test(struct kunit *test)
{
	const struct ndk_mem_case *mc = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	NDK_MR *mr;
	u32 rkey, len = NDK_REGION_LEN;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, mc->kind, mc->vmalloc, mc->chain,
		     NDK_REGION_OFF, len);
	mr = ndk_test_mr(test, e, false);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetRemoteTokenFromMr(mr), 0U);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, len,
						NDK_MR_FLAG_ALLOW_REMOTE_READ |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	KUNIT_EXPECT_NE(test, mr->Dispatch->NdkGetLocalTokenFromMr(mr), 0U);

	ndk_mem_fill(&me->lmem, 0, len, 1);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, 1));

	ndk_mem_fill(t, 0, len, 9);
	memset(me->lmem.base, 0, len);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, false,
					    ndk_mem_va(t), rkey, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, len, 9));

	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetRemoteTokenFromMr(mr), 0U);
	ndk_mem_fill(&me->lmem, 0, 64, 50);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, 9));
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/* The region's bytes written by the peer through @rkey, or not. */
static NTSTATUS ndk_mr_write_to(struct kunit *test, struct ndk_cenv *e,
				struct ndk_menv *me, struct ndk_mem *t,
				u32 rkey, u8 seed)
{
	ndk_mem_fill(&me->lmem, 0, t->len, seed);
	return ndk_menv_rdma(test, e, me, true, ndk_mem_va(t), rkey, t->len);
}

/* Where ndk_mr_caller_test() makes its requests from. */
struct ndk_mr_caller {
	const char *name;
	bool atomic;		/* with a spinlock held and interrupts off */
};

static const struct ndk_mr_caller ndk_mr_callers[] = {
	{ "thread", false },
	{ "spinlock", true },
};

static void ndk_mr_caller_desc(const struct ndk_mr_caller *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mr_caller, ndk_mr_callers, ndk_mr_caller_desc);

/* Requests ndk_mr_caller_test() makes in one go, and what they return. */
struct ndk_mr_calls {
	NDK_MR *mr;
	struct ndk_mem *t;
	bool atomic;
	struct ndk_wait w, xw;
	NTSTATUS st, again, dereg;
};

/*
 * Register into @w. Under the spinlock, while that is pending, register
 * again and deregister, into @xw.
 */
static void ndk_mr_calls_register(struct ndk_mr_calls *x)
{
	NDK_MR *mr = x->mr;

	x->st = mr->Dispatch->NdkRegisterMr(mr, x->t->mdl, x->t->len,
					    NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
					    ndk_test_request_cb, &x->w);
	if (!x->atomic)
		return;
	x->again = mr->Dispatch->NdkRegisterMr(mr, x->t->mdl, x->t->len,
					       NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
					       ndk_test_request_cb, &x->xw);
	x->dereg = mr->Dispatch->NdkDeregisterMr(mr, ndk_test_request_cb,
						 &x->xw);
}

static void ndk_mr_calls_deregister(struct ndk_mr_calls *x)
{
	x->st = x->mr->Dispatch->NdkDeregisterMr(x->mr, ndk_test_request_cb,
						 &x->w);
}

static void ndk_mr_calls_fast(struct ndk_mr_calls *x)
{
	x->st = x->mr->Dispatch->NdkInitializeFastRegisterMr(x->mr, 4, TRUE,
							     ndk_test_request_cb,
							     &x->w);
}

/* Make @fn's requests, with ndk_test_lock held if @x->atomic. */
static void ndk_mr_calls(struct ndk_mr_calls *x,
			 void (*fn)(struct ndk_mr_calls *x))
{
	unsigned long irq;

	ndk_wait_init(&x->w);
	ndk_wait_init(&x->xw);
	if (!x->atomic) {
		fn(x);
		return;
	}
	spin_lock_irqsave(&ndk_test_lock, irq);
	fn(x);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
}

/*
 * NdkRegisterMr, NdkDeregisterMr and NdkInitializeFastRegisterMr from
 * the test's thread, which may sleep, complete inline: STATUS_SUCCESS,
 * and their callbacks never run. On iWARP registering and deregistering
 * pend instead (ndk_mr_request()): one callback each. With a spinlock
 * held and interrupts off all three pend and call back exactly once,
 * from ndk_wq, and a request on an MR that one is pending on is refused
 * with STATUS_INVALID_DEVICE_STATE and never calls back. Either way the
 * region works in between and its token is dead after.
 */
static void ndk_mr_caller_test(struct kunit *test)
{
	const struct ndk_mr_caller *c = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	struct ndk_mr_calls *x = ndk_kzalloc_test(test, 3 * sizeof(*x));
	struct ndk_mr_calls *reg = &x[0], *dereg = &x[1], *fast = &x[2];
	bool pend = c->atomic || ndk_test_iwarp();
	u32 rkey;

	if (!c->atomic && !IS_ENABLED(CONFIG_PREEMPT_COUNT))
		kunit_skip(test, "no PREEMPT_COUNT: every caller counts as atomic");
	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	reg->mr = ndk_test_mr(test, e, false);
	reg->t = t;
	reg->atomic = c->atomic;
	ndk_mr_calls(reg, ndk_mr_calls_register);
	if (c->atomic) {
		KUNIT_EXPECT_EQ(test, reg->again, STATUS_INVALID_DEVICE_STATE);
		KUNIT_EXPECT_EQ(test, reg->dereg, STATUS_INVALID_DEVICE_STATE);
	}
	KUNIT_ASSERT_EQ(test, reg->st, pend ? STATUS_PENDING : STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &reg->w, reg->st),
			STATUS_SUCCESS);
	rkey = reg->mr->Dispatch->NdkGetRemoteTokenFromMr(reg->mr);
	KUNIT_EXPECT_NE(test, rkey, 0U);
	KUNIT_EXPECT_EQ(test, ndk_mr_write_to(test, e, me, t, rkey, 3),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, t->len, 3));

	dereg->mr = reg->mr;
	dereg->atomic = c->atomic;
	ndk_mr_calls(dereg, ndk_mr_calls_deregister);
	KUNIT_EXPECT_EQ(test, dereg->st,
			pend ? STATUS_PENDING : STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &dereg->w, dereg->st),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, reg->mr->Dispatch->NdkGetRemoteTokenFromMr(reg->mr),
			0U);
	KUNIT_EXPECT_NE(test, ndk_mr_write_to(test, e, me, t, rkey, 4),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, t->len, 3));

	fast->mr = ndk_test_mr(test, e, true);
	fast->atomic = c->atomic;
	ndk_mr_calls(fast, ndk_mr_calls_fast);
	KUNIT_EXPECT_EQ(test, fast->st,
			c->atomic ? STATUS_PENDING : STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &fast->w, fast->st),
			STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test,
			fast->mr->Dispatch->NdkGetRemoteTokenFromMr(fast->mr),
			0U);

	/* A callback that came anyway, or twice, would have come by now. */
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&reg->w.calls), pend ? 1 : 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&dereg->w.calls), pend ? 1 : 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&fast->w.calls), c->atomic ? 1 : 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&reg->xw.calls), 0);
	ndk_test_close_mr(test, fast->mr);
	ndk_test_close_mr(test, reg->mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/*
 * The passive side writes to and reads from the active side's memory:
 * the connecting QP must grant remote access too, which rdma_cm gives it
 * only once its CM id exists.
 */
static void ndk_mr_toward_active_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	NDK_MR *mr;
	u32 rkey;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF, 64);
	mr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, 64,
						NDK_MR_FLAG_ALLOW_REMOTE_READ |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);

	ndk_mem_fill(&me->lmem, 0, 64, 5);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma_on(test, e, me, me->p.pqp, true,
					       ndk_mem_va(t), rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, 64, 5));

	ndk_mem_fill(t, 0, 64, 8);
	memset(me->lmem.base, 0, 64);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma_on(test, e, me, me->p.pqp, false,
					       ndk_mem_va(t), rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, 64, 8));

	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

struct ndk_violation_case {
	const char *name;
	ULONG flags;
	bool write;
	bool bad_token;
	u32 skip;	/* start this far into the region */
	u32 len;
};

static const struct ndk_violation_case ndk_violation_cases[] = {
	{ "nd_write_violation", NDK_MR_FLAG_ALLOW_REMOTE_READ, true, false,
	  0, 64 },
	{ "nd_invalid_write", NDK_MR_FLAG_ALLOW_REMOTE_WRITE, true, true, 0,
	  64 },
	{ "nd_invalid_read", NDK_MR_FLAG_ALLOW_REMOTE_READ, false, true, 0,
	  64 },
	{ "nd_over_write", NDK_MR_FLAG_ALLOW_REMOTE_WRITE, true, false,
	  NDK_REGION_LEN - 32, 64 },
	{ "nd_over_read", NDK_MR_FLAG_ALLOW_REMOTE_READ, false, false,
	  NDK_REGION_LEN - 32, 64 },
};

static void ndk_violation_desc(const struct ndk_violation_case *c,
			       char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mr_violation, ndk_violation_cases, ndk_violation_desc);

static void ndk_mr_violation_run(struct kunit *test,
				 const struct ndk_violation_case *vc)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	NDK_MR *mr;
	u32 rkey;

	ndk_menv_init(test, e, me);
	/* The whole backing store is checked, beyond the region too. */
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	mr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, t->len, vc->flags),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	if (vc->bad_token)
		rkey ^= 0x5a5a00;
	t->off = 0;
	ndk_mem_fill(t, 0, NDK_MEM_PAGES * PAGE_SIZE, 3);
	ndk_mem_fill(&me->lmem, 0, vc->len, 100);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, vc->write,
					    ndk_mem_va(t) + vc->skip, rkey,
					    vc->len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, NDK_MEM_PAGES * PAGE_SIZE,
					      3));
	if (!vc->write)
		KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, vc->len,
						      100));
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

static void ndk_mr_violation_test(struct kunit *test)
{
	ndk_mr_violation_run(test, test->param_value);
}

/*
 * A region without the remote read right refuses a peer's read. Outside
 * the parameter table so that its skip on siw shows: siw answers a read
 * from any valid STag, checking no permission when it sends a read
 * response (siw_qp_sq_process()).
 */
static void ndk_mr_no_remote_read_test(struct kunit *test)
{
	static const struct ndk_violation_case vc = {
		"read without remote read", NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
		false, false, 0, 64
	};

	if (ndk_test_iwarp())
		kunit_skip(test, "siw does not enforce remote read access");
	ndk_mr_violation_run(test, &vc);
}

/* Requests NdkRegisterMr refuses, inline or when it completes. */
static void nd_mr_invalid_buffer(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	NDK_MR *mr = ndk_test_mr(test, e, false);
	NDK_MR *fast = ndk_test_mr(test, e, true);
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));

	ndk_mem_init(test, t, NDK_MDL_KVA, true, true, 100, 3 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr, t, 0, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr, t, t->len, 0x40),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, fast, t, t->len, 0),
			STATUS_INVALID_PARAMETER);
	/* Longer than the chain describes. */
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr, t, t->len + 1, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test,
			ndk_test_register(test, mr, t,
					  info->MaxRegistrationSize + 1, 0),
			STATUS_INVALID_BUFFER_SIZE);
	/* The address must sit where the memory sits in its page. */
	t->mdl[0].va++;
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr, t, t->len, 0),
			STATUS_INVALID_PARAMETER);
	t->mdl[0].va--;
	/* A chain whose first piece ends inside a page is not contiguous. */
	t->mdl[0].length -= 8;
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr, t, t->len - 8, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetLocalTokenFromMr(mr), 0U);
	/* Deregistering what is not registered is refused. */
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr),
			STATUS_INVALID_DEVICE_STATE);
	ndk_test_close_mr(test, fast);
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
}

/* The largest registration the adapter reports works. */
static void ndk_mr_limit_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	u64 max = min_t(u64, info->MaxRegistrationSize, SZ_16M);
	NDK_MR *mr = ndk_test_mr(test, e, false);
	struct ndk_mem m = {};
	void *buf = vmalloc(max + PAGE_SIZE);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_EXPECT_GE(test, info->MaxRegistrationSize, (u64)PAGE_SIZE);
	ndk_mdl_init_kva(&m.mdl[0], buf + 17, max);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkRegisterMr(mr, m.mdl, max, 0,
							  NULL, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr, &m, max, 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	vfree(buf);
}

/* Build a LAM of @m's region into a fresh buffer. */
static NDK_LOGICAL_ADDRESS_MAPPING *ndk_test_lam(struct kunit *test,
						 struct ndk_cenv *e,
						 struct ndk_mem *m, ULONG *fbo)
{
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	ULONG size = 0;

	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, m->mdl, m->len,
							  NULL, NULL, NULL,
							  &size, fbo),
			STATUS_BUFFER_TOO_SMALL);
	lam = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lam);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, m->mdl, m->len,
							  NULL, NULL, lam,
							  &size, fbo),
			STATUS_SUCCESS);
	return lam;
}

/* Fast-register @lam's pages on @qp; the completion status. */
static NTSTATUS ndk_test_fast_register(struct kunit *test,
				       struct ndk_cenv *e,
				       struct ndk_menv *me, NDK_MR *mr,
				       NDK_LOGICAL_ADDRESS_MAPPING *lam,
				       ULONG fbo, struct ndk_mem *m,
				       ULONG flags)
{
	NDK_QP *qp = me->p.pqp;
	NDK_RESULT_EX r = {};
	unsigned long irq;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, irq);
	st = qp->Dispatch->NdkFastRegister(qp, (void *)0x88, mr,
					   lam->AdapterPageCount,
					   lam->AdapterPageArray, fbo, m->len,
					   (PVOID)(uintptr_t)ndk_mem_va(m),
					   flags);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	if (st)
		return st;
	st = ndk_test_result(test, me, e->cq, (void *)0x88, &r);
	KUNIT_EXPECT_EQ(test, r.Type, (ULONG)NdkOperationTypeFastRegister);
	return st;
}

static NDK_MR *ndk_test_fast_mr(struct kunit *test, struct ndk_cenv *e,
				ULONG pages, BOOLEAN remote, NTSTATUS *st)
{
	NDK_MR *mr = ndk_test_mr(test, e, true);
	struct ndk_wait w;

	ndk_wait_init(&w);
	*st = mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, remote,
							ndk_test_request_cb,
							&w);
	*st = ndk_test_outcome(test, &w, *st);
	return mr;
}

/*
 * Fast registration over a LAM, a write through the token, then a local
 * invalidation after which the same write fails.
 */
static void ndk_mr_fast_register_test(struct kunit *test)
{
	unsigned long irq;
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	NDK_RESULT_EX r;
	NTSTATUS st;
	NDK_MR *mr, *local;
	ULONG fbo;
	u32 rkey;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_PAGES, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	lam = ndk_test_lam(test, e, t, &fbo);
	KUNIT_EXPECT_EQ(test, fbo, (ULONG)NDK_REGION_OFF);
	KUNIT_EXPECT_EQ(test, lam->AdapterPageCount, 3U);

	mr = ndk_test_fast_mr(test, e, info->FRMRPageCount + 1, TRUE, &st);
	KUNIT_EXPECT_EQ(test, st, STATUS_IMPLEMENTATION_LIMIT);
	ndk_test_close_mr(test, mr);
	mr = ndk_test_fast_mr(test, e, 4, TRUE, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	local = ndk_test_fast_mr(test, e, 4, FALSE, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);

	/* Remote rights on an MR initialized without remote access. */
	KUNIT_EXPECT_EQ(test, ndk_test_fast_register(test, e, me, local, lam,
						     fbo, t,
						     NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_ACCESS_VIOLATION);
	/* The base address must carry the first byte offset. */
	KUNIT_EXPECT_EQ(test, me->p.pqp->Dispatch->NdkFastRegister(me->p.pqp,
								   NULL, mr, lam->AdapterPageCount,
					lam->AdapterPageArray, fbo, t->len,
					(PVOID)(uintptr_t)(ndk_mem_va(t) + 1),
					0),
			STATUS_INVALID_PARAMETER);

	KUNIT_ASSERT_EQ(test, ndk_test_fast_register(test, e, me, mr, lam, fbo,
						     t,
						     NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
						     NDK_OP_FLAG_ALLOW_REMOTE_READ),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	ndk_mem_fill(&me->lmem, 0, t->len, 20);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, t->len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, t->len, 20));

	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.pqp->Dispatch->NdkInvalidate(me->p.pqp, (void *)0x99,
						&mr->Header, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x99,
					      &r),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r.Type, (ULONG)NdkOperationTypeInvalidate);
	ndk_mem_fill(&me->lmem, 0, 64, 40);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, t->len, 20));

	ndk_test_close_mr(test, local);
	ndk_test_close_mr(test, mr);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/*
 * NdkSendAndInvalidate: the receiver's NdkGetCqResultsEx names the token
 * the send invalidated, and the token is dead afterwards.
 */
static void ndk_mr_send_invalidate_test(struct kunit *test)
{
	unsigned long irq;
	struct ndk_cenv *e = test->priv;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	NDK_RESULT_EX r;
	NDK_SGE rsge, ssge;
	NTSTATUS st;
	NDK_MR *mr;
	ULONG fbo;
	u32 rkey;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_SG, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	lam = ndk_test_lam(test, e, t, &fbo);
	mr = ndk_test_fast_mr(test, e, 4, TRUE, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_test_fast_register(test, e, me, mr, lam, fbo,
						     t,
						     NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);

	/* The passive side receives into its own fast-registered region. */
	rsge.VirtualAddress = (PVOID)(uintptr_t)ndk_mem_va(t);
	rsge.Length = 64;
	rsge.MemoryRegionToken = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	KUNIT_ASSERT_EQ(test, me->p.pqp->Dispatch->NdkReceive(me->p.pqp,
							      (void *)0x31,
							    &rsge, 1),
			STATUS_SUCCESS);
	ndk_mem_fill(&me->lmem, 0, 64, 60);
	ssge.VirtualAddress = me->lmem.base;
	ssge.Length = 64;
	ssge.MemoryRegionToken =
		me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.aqp->Dispatch->NdkSendAndInvalidate(me->p.aqp, (void *)0x32,
						       &ssge, 1, 0, rkey);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x32,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x31,
					      &r),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r.Type,
			(ULONG)NdkOperationTypeReceiveAndInvalidate);
	KUNIT_EXPECT_EQ(test, (u32)r.TypeSpecificCompletionOutput, rkey);
	KUNIT_EXPECT_EQ(test, r.BytesTransferred, 64U);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, 64, 60));

	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, 64),
			STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/* NdkInvalidate of @obj on the passive QP; the completion status. */
static NTSTATUS ndk_test_invalidate(struct kunit *test, struct ndk_cenv *e,
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

/*
 * A fast-register MR keeps the tokens NdkInitializeFastRegisterMr gave it
 * through every registration, as Windows consumers expect (Microsoft's
 * RdmaSample reads the remote token once, after initialization); each
 * registration opens only its own memory. Writes, since siw checks no
 * rights on reads.
 */
static void ndk_mr_fast_token_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t1 = ndk_kzalloc_test(test, sizeof(*t1));
	struct ndk_mem *t2 = ndk_kzalloc_test(test, sizeof(*t2));
	NDK_LOGICAL_ADDRESS_MAPPING *lam1, *lam2;
	u32 rkey, lkey, rkey2, lkey2;
	ULONG fbo1, fbo2;
	unsigned long irq;
	NDK_RESULT_EX r;
	NTSTATUS st;
	NDK_MR *mr;
	u64 va;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t1, NDK_MDL_PAGES, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	ndk_mem_init(test, t2, NDK_MDL_PAGES, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	lam1 = ndk_test_lam(test, e, t1, &fbo1);
	lam2 = ndk_test_lam(test, e, t2, &fbo2);
	mr = ndk_test_fast_mr(test, e, 4, TRUE, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	lkey = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	KUNIT_EXPECT_NE(test, rkey, 0U);

	/* The token of the initialization opens the first registration. */
	KUNIT_ASSERT_EQ(test, ndk_test_fast_register(test, e, me, mr, lam1,
						     fbo1, t1,
						     NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetRemoteTokenFromMr(mr), rkey);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetLocalTokenFromMr(mr), lkey);
	ndk_mem_fill(&me->lmem, 0, 64, 11);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t1),
					    rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t1, 0, 64, 11));
	KUNIT_ASSERT_EQ(test, ndk_test_invalidate(test, e, me, &mr->Header),
			STATUS_SUCCESS);

	/* The next registration: the same tokens, from atomic context too. */
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.pqp->Dispatch->NdkFastRegister(me->p.pqp, (void *)0x89, mr,
						  lam2->AdapterPageCount,
						  lam2->AdapterPageArray, fbo2,
						  t2->len,
						  (PVOID)(uintptr_t)ndk_mem_va(t2),
						  NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
	rkey2 = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	lkey2 = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x89,
					      &r),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, rkey2, rkey);
	KUNIT_EXPECT_EQ(test, lkey2, lkey);

	/* It reaches the new memory... */
	ndk_mem_fill(&me->lmem, 0, 64, 22);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t2),
					    rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t2, 0, 64, 22));
	/*
	 * ...and nothing of the memory registered before. A region of
	 * separate pages goes by its first page's address, so the old
	 * address may fall inside the new range by chance, where a write
	 * reaches the new pages: then the probe goes just past the new
	 * range. Either way it fails and the old memory stays as it was.
	 */
	va = ndk_mem_va(t1);
	if (va < ndk_mem_va(t2) + t2->len && va + 64 > ndk_mem_va(t2))
		va = ndk_mem_va(t2) + t2->len;
	ndk_mem_fill(&me->lmem, 0, 64, 44);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true, va, rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t1, 0, 64, 11));

	ndk_test_close_mr(test, mr);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam2);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam1);
	ndk_mem_free(t2);
	ndk_mem_free(t1);
	ndk_menv_free(test, me);
}

/*
 * NdkRegisterMr on an MR that was registered before gives new tokens
 * too: the 8-bit key advances by one each time and wraps within its
 * byte, and the token of the registration before opens nothing.
 */
static void ndk_mr_reregister_token_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	u32 first, prev, rkey;
	NDK_MR *mr;
	int i;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	mr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, t->len,
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	first = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	prev = first;
	/* Once round the key byte and one more. */
	for (i = 0; i < 257; i++) {
		KUNIT_ASSERT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
		KUNIT_ASSERT_EQ(test,
				ndk_test_register(test, mr, t, t->len,
						  NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
				STATUS_SUCCESS);
		rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
		KUNIT_ASSERT_EQ(test, rkey & ~0xffU, prev & ~0xffU);
		KUNIT_ASSERT_EQ(test, rkey & 0xff, (prev + 1) & 0xff);
		KUNIT_ASSERT_EQ(test, mr->Dispatch->NdkGetLocalTokenFromMr(mr) &
				0xff, rkey & 0xff);
		if (i == 255)
			KUNIT_EXPECT_EQ(test, rkey, first);
		prev = rkey;
	}

	ndk_mem_fill(&me->lmem, 0, 64, 12);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, 64, 12));
	ndk_mem_fill(t, 0, t->len, 34);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    first, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, t->len, 34));
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/*
 * Read with local invalidate: refused where the adapter lacks it (RoCE);
 * on iWARP the read fills the sink and invalidates the sink's token.
 */
static void ndk_mr_read_invalidate_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *src = ndk_kzalloc_test(test, sizeof(*src));
	struct ndk_mem *sink = ndk_kzalloc_test(test, sizeof(*sink));
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	NDK_RESULT_EX r = {};
	NDK_MR *smr, *fmr;
	unsigned long irq;
	NDK_SGE sge;
	ULONG fbo;
	NTSTATUS st;
	u32 rkey;

	ndk_menv_init(test, e, me);
	sge.VirtualAddress = me->lmem.base;
	sge.Length = 8;
	sge.MemoryRegionToken =
		me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	if (!(info->AdapterFlags &
	      NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED)) {
		KUNIT_EXPECT_EQ(test,
				me->p.aqp->Dispatch->NdkRead(me->p.aqp, NULL,
					&sge, 1, 0, 0,
					NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
				STATUS_INVALID_PARAMETER);
		ndk_menv_free(test, me);
		return;
	}

	/* The peer's source region, and our sink fast-registered for it. */
	ndk_mem_init(test, src, NDK_MDL_KVA, false, false, NDK_REGION_OFF, 64);
	ndk_mem_fill(src, 0, 64, 31);
	smr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, smr, src, 64,
						NDK_MR_FLAG_ALLOW_REMOTE_READ),
			STATUS_SUCCESS);
	rkey = smr->Dispatch->NdkGetRemoteTokenFromMr(smr);
	ndk_mem_init(test, sink, NDK_MDL_PAGES, false, false, NDK_REGION_OFF,
		     64);
	lam = ndk_test_lam(test, e, sink, &fbo);
	fmr = ndk_test_fast_mr(test, e, 4, TRUE, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_test_fast_register(test, e, me, fmr, lam, fbo,
						     sink,
						     NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
						     NDK_OP_FLAG_RDMA_READ_SINK),
			STATUS_SUCCESS);

	/* The read fills the sink and invalidates its token... */
	sge.VirtualAddress = (void *)(uintptr_t)ndk_mem_va(sink);
	sge.Length = 64;
	sge.MemoryRegionToken = fmr->Dispatch->NdkGetLocalTokenFromMr(fmr);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.aqp->Dispatch->NdkRead(me->p.aqp, (void *)0x66, &sge, 1,
					  ndk_mem_va(src), rkey,
					  NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x66,
					      &r),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r.Type, (ULONG)NdkOperationTypeRead);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(sink, 0, 64, 31));

	/* ...so the same read into it fails and leaves it alone. */
	ndk_mem_fill(src, 0, 64, 90);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.aqp->Dispatch->NdkRead(me->p.aqp, (void *)0x67, &sge, 1,
					  ndk_mem_va(src), rkey, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test, ndk_test_result(test, me, e->cq, (void *)0x67,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(sink, 0, 64, 31));

	ndk_test_close_mr(test, fmr);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam);
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, smr), STATUS_SUCCESS);
	ndk_test_close_mr(test, smr);
	ndk_mem_free(sink);
	ndk_mem_free(src);
	ndk_menv_free(test, me);
}

/*
 * Failed and flushed requests still report their own RequestContext and
 * operation type, which devices need not put in the completion: a silent
 * write with a bad token completes in error as a write, and the receive
 * it leaves behind is flushed as a receive.
 */
static void ndk_mr_failed_type_test(struct kunit *test)
{
	bool iwarp = ndk_test_iwarp();
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	NDK_RESULT_EX r = {};
	unsigned long irq;
	NDK_SGE sge;
	NTSTATUS st;
	NDK_QP *qp;

	ndk_menv_init(test, e, me);
	qp = me->p.aqp;
	sge.VirtualAddress = me->lmem.base;
	sge.Length = 64;
	sge.MemoryRegionToken =
		me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	KUNIT_ASSERT_EQ(test, qp->Dispatch->NdkReceive(qp, (void *)0x61, &sge,
						       1),
			STATUS_SUCCESS);
	/* An iWARP write fails only at the peer, so a read stands in. */
	spin_lock_irqsave(&ndk_test_lock, irq);
	if (iwarp)
		st = qp->Dispatch->NdkRead(qp, (void *)0x62, &sge, 1,
					   (uintptr_t)me->lmem.base, 0x5a5a5a,
					   NDK_OP_FLAG_SILENT_SUCCESS);
	else
		st = qp->Dispatch->NdkWrite(qp, (void *)0x62, &sge, 1,
					    (uintptr_t)me->lmem.base, 0x5a5a5a,
					    NDK_OP_FLAG_SILENT_SUCCESS);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test, ndk_test_result(test, me, e->cq, (void *)0x62,
					      &r),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r.Type, iwarp ? (ULONG)NdkOperationTypeRead :
			(ULONG)NdkOperationTypeWrite);
	KUNIT_EXPECT_EQ(test, r.BytesTransferred, 0U);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x61,
					      &r),
			STATUS_CANCELLED);
	KUNIT_EXPECT_EQ(test, r.Type, (ULONG)NdkOperationTypeReceive);
	KUNIT_EXPECT_PTR_EQ(test, r.QPContext, (void *)e);
	ndk_menv_free(test, me);
}

static struct kunit_case ndk_mr_cases[] = {
	KUNIT_CASE_PARAM(ndk_mr_rdma_test, ndk_mr_rdma_gen_params),
	KUNIT_CASE_PARAM(ndk_mr_caller_test, ndk_mr_caller_gen_params),
	KUNIT_CASE_PARAM(ndk_mr_violation_test, ndk_mr_violation_gen_params),
	KUNIT_CASE(ndk_mr_no_remote_read_test),
	KUNIT_CASE(ndk_mr_toward_active_test),
	KUNIT_CASE(nd_mr_invalid_buffer),
	KUNIT_CASE(ndk_mr_limit_test),
	KUNIT_CASE(ndk_mr_fast_register_test),
	KUNIT_CASE(ndk_mr_send_invalidate_test),
	KUNIT_CASE(ndk_mr_fast_token_test),
	KUNIT_CASE(ndk_mr_reregister_token_test),
	KUNIT_CASE(ndk_mr_read_invalidate_test),
	KUNIT_CASE(ndk_mr_failed_type_test),
	{}
};

struct kunit_suite ndk_mr_suite = {
	.name = "ndk_mr",
	.init = ndk_conn_init_test,
	.exit = ndk_conn_exit_test,
	.test_cases = ndk_mr_cases,
};

/*
 * A LAM of page-array memory from an odd offset: the size protocol, the
 * first byte offset, page-aligned addresses, and a send from the mapped
 * pages through the privileged token, built from atomic context.
 */
static void ndk_lam_roundtrip_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	NDK_SGE ssge[3], rsge;
	unsigned long irq;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	UINT32 priv;
	ULONG size = 0, fbo, i, left;
	NTSTATUS st;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_PAGES, false, false, 3000,
		     2 * PAGE_SIZE + 100);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len,
							  NULL, NULL, NULL,
							  &size, &fbo),
			STATUS_BUFFER_TOO_SMALL);
	/* As a Windows consumer computes it: sizeof() holds the first page. */
	KUNIT_EXPECT_EQ(test, size,
			(ULONG)(sizeof(*lam) + 2 * sizeof(NDK_LOGICAL_ADDRESS)));
	lam = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lam);
	size--;
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len,
							  NULL, NULL, lam,
							  &size, &fbo),
			STATUS_BUFFER_TOO_SMALL);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len, NULL, NULL, lam,
					 &size, &fbo);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, fbo, 3000U);
	KUNIT_ASSERT_EQ(test, lam->AdapterPageCount, 3U);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, lam->AdapterPageArray[i] & ~PAGE_MASK,
				0ULL);

	/* Send the region from its logical addresses to the local buffer. */
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &priv);
	ndk_mem_fill(t, 0, t->len, 77);
	left = t->len;
	for (i = 0; i < 3; i++) {
		ssge[i].LogicalAddress = lam->AdapterPageArray[i] +
					 (i ? 0 : fbo);
		ssge[i].Length = min_t(ULONG, left,
				       PAGE_SIZE - (i ? 0 : fbo));
		ssge[i].MemoryRegionToken = priv;
		left -= ssge[i].Length;
	}
	rsge.VirtualAddress = me->lmem.base;
	rsge.Length = t->len;
	rsge.MemoryRegionToken =
		me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	KUNIT_ASSERT_EQ(test, me->p.aqp->Dispatch->NdkReceive(me->p.aqp,
							      (void *)0x41,
							    &rsge, 1),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, me->p.pqp->Dispatch->NdkSend(me->p.pqp,
							   (void *)0x42, ssge,
							 3, 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x42,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x41,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, t->len, 77));
	spin_lock_irqsave(&ndk_test_lock, irq);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, lam->AdapterPageCount, 0U);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/* Memory that is not virtually contiguous maps nothing. */
static void ndk_lam_invalid_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct {
		NDK_LOGICAL_ADDRESS_MAPPING lam;
		NDK_LOGICAL_ADDRESS pages[8];
	} buf = {};
	ULONG size = sizeof(buf), fbo;
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));

	ndk_mem_init(test, t, NDK_MDL_KVA, true, true, 100, 3 * PAGE_SIZE);
	t->mdl[0].length -= 8;
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl,
							  t->len - 8, NULL,
							  NULL, &buf.lam,
							  &size, &fbo),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, buf.lam.AdapterPageCount, 0U);
	t->mdl[0].length += 8;
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl,
							  t->len + 1, NULL,
							  NULL, &buf.lam,
							  &size, &fbo),
			STATUS_INVALID_PARAMETER);
	ndk_mem_free(t);
}

static struct kunit_case ndk_lam_cases[] = {
	KUNIT_CASE(ndk_lam_roundtrip_test),
	KUNIT_CASE(ndk_lam_invalid_test),
	{}
};

struct kunit_suite ndk_lam_suite = {
	.name = "ndk_lam",
	.init = ndk_conn_init_test,
	.exit = ndk_conn_exit_test,
	.test_cases = ndk_lam_cases,
};

static NDK_MW *ndk_test_mw(struct kunit *test, struct ndk_cenv *e)
{
	NDK_MW *unused = NULL;
	unsigned long irq;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = e->pd->Dispatch->NdkCreateMw(e->pd, ndk_test_create_cb, &w,
					  &unused);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	return container_of(ndk_create_with(test, st, &w), NDK_MW, Header);
}

static void ndk_test_close_mw(struct kunit *test, NDK_MW *mw)
{
	ndk_test_close(test, &mw->Header, mw->Dispatch->NdkCloseMw);
}

/*
 * NdkBind of @len bytes of @mr from @off into the region at @va, on the
 * passive QP: the inline status if it failed, else the completion's,
 * which must say it was a bind. *@token receives the window's token as
 * soon as the call returns.
 */
static NTSTATUS ndk_test_bind(struct kunit *test, struct ndk_cenv *e,
			      struct ndk_menv *me, NDK_MR *mr, NDK_MW *mw,
			      u64 va, u64 len, ULONG flags, u32 *token)
{
	NDK_QP *qp = me->p.pqp;
	NDK_RESULT_EX r = {};
	unsigned long irq;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, irq);
	st = qp->Dispatch->NdkBind(qp, (void *)0x5b, mr, mw,
				   (PVOID)(uintptr_t)va, len, flags);
	if (token)
		*token = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	if (st)
		return st;
	st = ndk_test_result(test, me, e->cq, (void *)0x5b, &r);
	KUNIT_EXPECT_EQ(test, r.Type, (ULONG)NdkOperationTypeBind);
	KUNIT_EXPECT_PTR_EQ(test, r.QPContext, (void *)e);
	return st;
}

/* Where windows go in the region of an ndk_mwenv. */
#define NDK_MW_OFF	1000
#define NDK_MW_LEN	(PAGE_SIZE + 200)

/**
 * struct ndk_mwenv - a region of the passive side and a window over it
 * @me: connection and local buffer
 * @t: the memory, NDK_MEM_PAGES pages; the region is all of it
 * @mr: @t registered for local write only: peers reach it only through
 *	the window
 * @mw: the window
 */
struct ndk_mwenv {
	struct ndk_menv me;
	struct ndk_mem t;
	NDK_MR *mr;
	NDK_MW *mw;
};

static struct ndk_mwenv *ndk_mwenv_init(struct kunit *test,
					struct ndk_cenv *e)
{
	struct ndk_mwenv *w = ndk_kzalloc_test(test, sizeof(*w));

	ndk_menv_init(test, e, &w->me);
	ndk_mem_init(test, &w->t, NDK_MDL_KVA, true, false, 0,
		     NDK_MEM_PAGES * PAGE_SIZE);
	w->mr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, w->mr, &w->t, w->t.len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
			STATUS_SUCCESS);
	w->mw = ndk_test_mw(test, e);
	return w;
}

/* The window's range, from @skip bytes into it. */
static u64 ndk_mwenv_va(struct ndk_mwenv *w, u32 skip)
{
	return ndk_mem_va(&w->t) + NDK_MW_OFF + skip;
}

static NTSTATUS ndk_mwenv_bind(struct kunit *test, struct ndk_cenv *e,
			       struct ndk_mwenv *w, ULONG flags, u32 *token)
{
	return ndk_test_bind(test, e, &w->me, w->mr, w->mw,
			     ndk_mwenv_va(w, 0), NDK_MW_LEN, flags, token);
}

static void ndk_mwenv_free(struct kunit *test, struct ndk_mwenv *w)
{
	if (w->mw)
		ndk_test_close_mw(test, w->mw);
	if (w->mr)
		ndk_test_close_mr(test, w->mr);
	ndk_mem_free(&w->t);
	ndk_menv_free(test, &w->me);
}

/*
 * The adapter reports windows as large as a registration; a window is
 * created asynchronously and its token changes with each bind.
 */
static void ndk_mw_info_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	NDK_MW *mw;

	KUNIT_EXPECT_GT(test, info->MaxWindowSize, 0ULL);
	KUNIT_EXPECT_EQ(test, info->MaxWindowSize, info->MaxRegistrationSize);
	KUNIT_EXPECT_EQ(test, e->pd->Dispatch->NdkCreateMw(e->pd, NULL, NULL,
							   &mw),
			STATUS_INVALID_PARAMETER);
	mw = ndk_test_mw(test, e);
	KUNIT_ASSERT_NOT_NULL(test, mw);
	KUNIT_EXPECT_EQ(test, mw->Header.ObjectType, (ULONG)NdkObjectTypeMw);
	ndk_test_close_mw(test, mw);
}

/*
 * Through a window over a region that grants peers nothing itself, a
 * peer writes and reads inside the window's range.
 */
static void ndk_mw_rdma_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mwenv *w = ndk_mwenv_init(test, e);
	u32 token, mrtoken;

	mrtoken = w->mr->Dispatch->NdkGetRemoteTokenFromMr(w->mr);
	KUNIT_ASSERT_EQ(test, ndk_mwenv_bind(test, e, w,
					     NDK_OP_FLAG_ALLOW_REMOTE_READ |
					     NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
					     &token),
			STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test, token, mrtoken);
	KUNIT_EXPECT_EQ(test, token,
			w->mw->Dispatch->NdkGetRemoteTokenFromMw(w->mw));

	/* The whole range, which spans a page boundary. */
	ndk_mem_fill(&w->t, 0, w->t.len, 1);
	ndk_mem_fill(&w->me.lmem, 0, NDK_MW_LEN, 5);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, &w->me, true,
					    ndk_mwenv_va(w, 0), token,
					    NDK_MW_LEN),
			STATUS_SUCCESS);
	w->t.off = NDK_MW_OFF;
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->t, 0, NDK_MW_LEN, 5));
	w->t.off = 0;
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->t, 0, NDK_MW_OFF, 1));

	w->t.off = NDK_MW_OFF;
	ndk_mem_fill(&w->t, 100, 64, 9);
	w->t.off = 0;
	memset(w->me.lmem.base, 0, 64);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, &w->me, false,
					    ndk_mwenv_va(w, 100), token, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->me.lmem, 0, 64, 9));
	ndk_mwenv_free(test, w);
}

/**
 * struct ndk_mw_bad_case - one access through a window that must fail
 * @name: case name
 * @flags: rights of the bind
 * @write: the access is a write, else a read
 * @skip: where it starts, from the window's start (negative: before it)
 * @len: bytes
 * @reads_unchecked: siw does not enforce this (reads without the right)
 */
struct ndk_mw_bad_case {
	const char *name;
	ULONG flags;
	bool write;
	int skip;
	u32 len;
	bool reads_unchecked;
};

#define NDK_MW_RW	(NDK_OP_FLAG_ALLOW_REMOTE_READ | \
			 NDK_OP_FLAG_ALLOW_REMOTE_WRITE)

static const struct ndk_mw_bad_case ndk_mw_bad_cases[] = {
	{ "write beyond the end", NDK_MW_RW, true, NDK_MW_LEN - 32, 64 },
	{ "write before the start", NDK_MW_RW, true, -32, 64 },
	{ "read beyond the end", NDK_MW_RW, false, NDK_MW_LEN - 32, 64 },
	{ "read before the start", NDK_MW_RW, false, -32, 64 },
	{ "write without the right", NDK_OP_FLAG_ALLOW_REMOTE_READ, true, 0,
	  64 },
	{ "read without the right", NDK_OP_FLAG_ALLOW_REMOTE_WRITE, false, 0,
	  64, true },
};

static void ndk_mw_bad_desc(const struct ndk_mw_bad_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mw_bad, ndk_mw_bad_cases, ndk_mw_bad_desc);

/*
 * Outside its range or beyond its rights the window opens nothing: the
 * request fails and the memory, inside the region or not, stays.
 */
static void ndk_mw_bad_access_test(struct kunit *test)
{
	const struct ndk_mw_bad_case *c = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_mwenv *w;
	u32 token;

	if (c->reads_unchecked && ndk_test_iwarp())
		kunit_skip(test, "siw does not enforce remote read access");
	w = ndk_mwenv_init(test, e);
	KUNIT_ASSERT_EQ(test, ndk_mwenv_bind(test, e, w, c->flags, &token),
			STATUS_SUCCESS);
	ndk_mem_fill(&w->t, 0, w->t.len, 3);
	ndk_mem_fill(&w->me.lmem, 0, c->len, 100);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, &w->me, c->write,
					    ndk_mwenv_va(w, 0) + c->skip,
					    token, c->len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->t, 0, w->t.len, 3));
	if (!c->write)
		KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->me.lmem, 0, c->len,
						      100));
	ndk_mwenv_free(test, w);
}

/* Binds NdkBind refuses inline, with the status the reference names. */
static void ndk_mw_bind_refused_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	struct ndk_mwenv *w = ndk_mwenv_init(test, e);
	struct ndk_mem *ro = ndk_kzalloc_test(test, sizeof(*ro));
	u64 va = ndk_mem_va(&w->t), len = w->t.len;
	NDK_QP *idle = ndk_cenv_qp(test, e);
	NDK_MR *romr, *fast;
	u32 before, token;
	NTSTATUS st;

	before = w->mw->Dispatch->NdkGetRemoteTokenFromMw(w->mw);
	/* Outside the region, on either side, or empty. */
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, w->mw,
					    va - 1, 64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, w->mw,
					    va + len - 63, 64, NDK_MW_RW,
					    &token),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, w->mw,
					    va + len, 1, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, w->mw,
					    va, 0, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, w->mw,
					    va, info->MaxWindowSize + 1,
					    NDK_MW_RW, &token),
			STATUS_INVALID_BUFFER_SIZE);
	/* Flags a bind does not take. */
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, w->mw,
					    va, 64, NDK_OP_FLAG_INLINE, &token),
			STATUS_INVALID_PARAMETER);
	/* No window, or a region that is none or not registered. */
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr,
					    (NDK_MW *)w->mr, va, 64, NDK_MW_RW,
					    NULL),
			STATUS_INVALID_PARAMETER);
	fast = ndk_test_mr(test, e, true);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, fast, w->mw, va,
					    64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	ndk_test_close_mr(test, fast);
	/* A writable window needs a region the adapter may write. */
	ndk_mem_init(test, ro, NDK_MDL_KVA, false, false, 0, PAGE_SIZE);
	romr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, romr, ro, ro->len,
						NDK_MR_FLAG_ALLOW_REMOTE_READ),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, romr, w->mw,
					    ndk_mem_va(ro), 64, NDK_MW_RW,
					    &token),
			STATUS_ACCESS_VIOLATION);
	/* A QP that is not connected. */
	st = idle->Dispatch->NdkBind(idle, NULL, w->mr, w->mw,
				     (PVOID)(uintptr_t)va, 64, NDK_MW_RW);
	KUNIT_EXPECT_EQ(test, st, STATUS_CONNECTION_INVALID);
	/* None of them took a key. */
	KUNIT_EXPECT_EQ(test, w->mw->Dispatch->NdkGetRemoteTokenFromMw(w->mw),
			before);
	/* A read-only window of that region works. */
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, romr, w->mw,
					    ndk_mem_va(ro), 64,
					    NDK_OP_FLAG_ALLOW_REMOTE_READ,
					    &token),
			STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test, token, before);
	ndk_test_close(test, &idle->Header, idle->Dispatch->NdkCloseQp);
	ndk_test_close_mw(test, w->mw);
	w->mw = NULL;
	ndk_test_close_mr(test, romr);
	ndk_mem_free(ro);
	ndk_mwenv_free(test, w);
}

/*
 * Revocation: NdkInvalidate of the window, or (@remote) the peer's
 * NdkSendAndInvalidate with its token; the token is dead afterwards. A
 * new bind after it gives a new token, which works, while the old one
 * still opens nothing.
 */
static void ndk_mw_revoke_run(struct kunit *test, bool remote)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mwenv *w = ndk_mwenv_init(test, e);
	struct ndk_menv *me = &w->me;
	u32 token, token2;
	NDK_RESULT_EX r;
	NDK_SGE rsge, ssge;
	unsigned long irq;
	NTSTATUS st;

	KUNIT_ASSERT_EQ(test, ndk_mwenv_bind(test, e, w, NDK_MW_RW, &token),
			STATUS_SUCCESS);
	ndk_mem_fill(&me->lmem, 0, 64, 7);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true,
					    ndk_mwenv_va(w, 0), token, 64),
			STATUS_SUCCESS);
	if (!remote) {
		KUNIT_EXPECT_EQ(test, ndk_test_invalidate(test, e, me,
							  &w->mw->Header),
				STATUS_SUCCESS);
	} else {
		rsge.VirtualAddress = (PVOID)(uintptr_t)ndk_mem_va(&w->t);
		rsge.Length = 64;
		rsge.MemoryRegionToken =
			w->mr->Dispatch->NdkGetLocalTokenFromMr(w->mr);
		KUNIT_ASSERT_EQ(test,
				me->p.pqp->Dispatch->NdkReceive(me->p.pqp,
								(void *)0x51,
								&rsge, 1),
				STATUS_SUCCESS);
		ssge.VirtualAddress = me->lmem.base;
		ssge.Length = 8;
		ssge.MemoryRegionToken =
			me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
		spin_lock_irqsave(&ndk_test_lock, irq);
		st = me->p.aqp->Dispatch->NdkSendAndInvalidate(me->p.aqp,
							       (void *)0x52,
							       &ssge, 1, 0,
							       token);
		spin_unlock_irqrestore(&ndk_test_lock, irq);
		KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
		KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq,
						      (void *)0x52, NULL),
				STATUS_SUCCESS);
		KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq,
						      (void *)0x51, &r),
				STATUS_SUCCESS);
		KUNIT_EXPECT_EQ(test, r.Type,
				(ULONG)NdkOperationTypeReceiveAndInvalidate);
		KUNIT_EXPECT_EQ(test, (u32)r.TypeSpecificCompletionOutput,
				token);
	}

	/* Bound again, somewhere else, under a new token that works. */
	KUNIT_ASSERT_EQ(test, ndk_test_bind(test, e, me, w->mr, w->mw,
					    ndk_mwenv_va(w, 2 * PAGE_SIZE), 64,
					    NDK_MW_RW, &token2),
			STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test, token2, token);
	ndk_mem_fill(&me->lmem, 0, 64, 8);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true,
					    ndk_mwenv_va(w, 2 * PAGE_SIZE),
					    token2, 64),
			STATUS_SUCCESS);
	/* The old token opens neither the old range nor the new one. */
	ndk_mem_fill(&w->t, 0, w->t.len, 4);
	ndk_mem_fill(&me->lmem, 0, 64, 9);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true,
					    ndk_mwenv_va(w, 2 * PAGE_SIZE),
					    token, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->t, 0, w->t.len, 4));
	ndk_mwenv_free(test, w);
}

static void ndk_mw_invalidate_test(struct kunit *test)
{
	ndk_mw_revoke_run(test, false);
}

static void ndk_mw_remote_invalidate_test(struct kunit *test)
{
	ndk_mw_revoke_run(test, true);
}

/* How a bound window loses its region or itself. */
enum ndk_mw_end {
	NDK_MW_CLOSE_MW,
	NDK_MW_CLOSE_MR,
	NDK_MW_DEREGISTER_MR,
};

static const enum ndk_mw_end ndk_mw_ends[] = {
	NDK_MW_CLOSE_MW, NDK_MW_CLOSE_MR, NDK_MW_DEREGISTER_MR,
};

static void ndk_mw_end_desc(const enum ndk_mw_end *c, char *desc)
{
	static const char *const names[] = {
		"close the window", "close the region", "deregister the region",
	};

	strscpy(desc, names[*c], KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mw_end, ndk_mw_ends, ndk_mw_end_desc);

/*
 * Closing a bound window completes and kills its token. Closing or
 * deregistering the region under a bound window completes too (the
 * window is no successor of the region) and kills the window's token
 * first, so that no peer reaches memory that is no longer registered.
 */
static void ndk_mw_lifetime_test(struct kunit *test)
{
	enum ndk_mw_end end = *(const enum ndk_mw_end *)test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_mwenv *w = ndk_mwenv_init(test, e);
	u32 token;

	KUNIT_ASSERT_EQ(test, ndk_mwenv_bind(test, e, w, NDK_MW_RW, &token),
			STATUS_SUCCESS);
	ndk_mem_fill(&w->me.lmem, 0, 64, 7);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, &w->me, true,
					    ndk_mwenv_va(w, 0), token, 64),
			STATUS_SUCCESS);
	switch (end) {
	case NDK_MW_CLOSE_MW:
		ndk_test_close_mw(test, w->mw);
		w->mw = NULL;
		break;
	case NDK_MW_CLOSE_MR:
		ndk_test_close_mr(test, w->mr);
		w->mr = NULL;
		break;
	case NDK_MW_DEREGISTER_MR:
		KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, w->mr),
				STATUS_SUCCESS);
		break;
	}
	ndk_mem_fill(&w->t, 0, w->t.len, 6);
	ndk_mem_fill(&w->me.lmem, 0, 64, 8);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, &w->me, true,
					    ndk_mwenv_va(w, 0), token, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->t, 0, w->t.len, 6));
	ndk_mwenv_free(test, w);
}

static struct kunit_case ndk_mw_cases[] = {
	KUNIT_CASE(ndk_mw_info_test),
	KUNIT_CASE(ndk_mw_rdma_test),
	KUNIT_CASE_PARAM(ndk_mw_bad_access_test, ndk_mw_bad_gen_params),
	KUNIT_CASE(ndk_mw_bind_refused_test),
	KUNIT_CASE(ndk_mw_invalidate_test),
	KUNIT_CASE(ndk_mw_remote_invalidate_test),
	KUNIT_CASE_PARAM(ndk_mw_lifetime_test, ndk_mw_end_gen_params),
	{}
};

struct kunit_suite ndk_mw_suite = {
	.name = "ndk_mw",
	.init = ndk_conn_init_test,
	.exit = ndk_conn_exit_test,
	.test_cases = ndk_mw_cases,
};
