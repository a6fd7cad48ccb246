// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_mw, the tests of ndk/mw.c: memory windows bound over a loopback
 * connection, the rights and bounds a bind gives, refused binds, and
 * revocation by invalidation (local and remote) and by closing.
 */
#include "ndk_tests.h"

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

static void ndk_mw_create_in(struct ndk_test_call *c)
{
	NDK_PD *pd = c->arg;

	c->st = pd->Dispatch->NdkCreateMw(pd, ndk_test_create_cb, &c->w,
					  (NDK_MW **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_mw_contexts_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;

	ndk_test_contexts(test, ndk_mw_create_in, e->pd);
}

/*
 * The adapter reports windows as large as a registration; a window made
 * from atomic context pends, and its token changes with each bind.
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
	struct ndk_cenv other = *e;
	NDK_MR *romr, *fast, *omr;
	u32 before, token;
	NDK_MW *omw;
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
	/*
	 * No window, a window for a region, or a region that is none, one
	 * for fast registration, or one not registered.
	 */
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr,
					    (NDK_MW *)w->mr, va, 64, NDK_MW_RW,
					    NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, NULL, va,
					    64, NDK_MW_RW, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, (NDK_MR *)w->mw,
					    w->mw, va, 64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	fast = ndk_test_mr(test, e, true);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, fast, w->mw, va,
					    64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	ndk_test_close_mr(test, fast);
	fast = ndk_test_mr(test, e, false);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, fast, w->mw, va,
					    64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	ndk_test_close_mr(test, fast);
	/* A region or a window of another PD. */
	other.pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD, Header);
	omr = ndk_test_mr(test, &other, false);
	omw = ndk_test_mw(test, &other);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, omr, w->mw, va,
					    64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, w->mr, omw, va,
					    64, NDK_MW_RW, &token),
			STATUS_INVALID_PARAMETER);
	ndk_test_close_mw(test, omw);
	ndk_test_close_mr(test, omr);
	ndk_test_close(test, &other.pd->Header, other.pd->Dispatch->NdkClosePd);
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

/*
 * A bind the device flushed (its QP failed before it ran) still changed
 * the window's token on ndk's side, to a key the device never held: the
 * region's deregistration then invalidates the key of the last bind
 * that ran, and the window's old token opens nothing afterwards, tried
 * over a second connection. The test moves the binding QP to the error
 * state itself, behind ndk's back, as a device would on a fatal error.
 * siw refuses the bind's post instead while its QP is still closing
 * (6.12 did each time, 6.1 flushed it once), and the window keeps its
 * token.
 */
static void ndk_mw_flushed_bind_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mwenv *w = ndk_mwenv_init(test, e);
	struct ndk_menv *me2 = ndk_kzalloc_test(test, sizeof(*me2));
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_qp *ibqp;
	u32 token, flushed;
	NTSTATUS st;

	KUNIT_ASSERT_EQ(test, ndk_mwenv_bind(test, e, w, NDK_MW_RW, &token),
			STATUS_SUCCESS);
	ibqp = container_of(w->me.p.pqp, struct ndk_qp, ndk)->ibqp;
	KUNIT_ASSERT_EQ(test, ib_modify_qp(ibqp, &attr, IB_QP_STATE), 0);
	st = ndk_mwenv_bind(test, e, w, NDK_MW_RW, &flushed);
	/*
	 * siw refuses the post while its QP is still closing, and flushes it
	 * once the QP is in error: refused, the window keeps its key.
	 */
	if (ndk_test_iwarp() && st == STATUS_CONNECTION_INVALID) {
		KUNIT_EXPECT_EQ(test, flushed, token);
	} else {
		KUNIT_EXPECT_EQ(test, st, STATUS_CANCELLED);
		KUNIT_EXPECT_NE(test, flushed, token);
	}
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, w->mr),
			STATUS_SUCCESS);

	ndk_menv_init(test, e, me2);
	ndk_mem_fill(&w->t, 0, w->t.len, 6);
	ndk_mem_fill(&me2->lmem, 0, 64, 8);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me2, true,
					    ndk_mwenv_va(w, 0), token, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&w->t, 0, w->t.len, 6));
	ndk_menv_free(test, me2);
	ndk_mwenv_free(test, w);
}

/*
 * NdkBind refuses a region that is none, one whose NdkDeregisterMr is
 * still pending, one whose close is pending, and a window whose close is
 * pending (so does NdkInvalidate). The pending requests are made under a
 * spinlock, with the bind right after them: the work they queued on this
 * CPU cannot run in between. Each still completes once.
 */
static void ndk_mw_bind_pending_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mwenv *w = ndk_mwenv_init(test, e);
	struct ndk_wait *done = ndk_kzalloc_test(test, 3 * sizeof(*done));
	u64 va = ndk_mwenv_va(w, 0);
	NDK_QP *qp = w->me.p.pqp;
	NTSTATUS st, bst, ist;
	unsigned long irq;
	NDK_MR *mr2;

	KUNIT_EXPECT_EQ(test, ndk_test_bind(test, e, &w->me, NULL, w->mw, va,
					    64, NDK_MW_RW, NULL),
			STATUS_INVALID_PARAMETER);

	ndk_wait_init(&done[0]);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = w->mr->Dispatch->NdkDeregisterMr(w->mr, ndk_test_request_cb,
					      &done[0]);
	bst = qp->Dispatch->NdkBind(qp, (void *)0x5c, w->mr, w->mw,
				    (PVOID)(uintptr_t)va, 64, NDK_MW_RW);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, bst, STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&done[0]));
	KUNIT_EXPECT_EQ(test, done[0].status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&done[0].calls), 1);

	KUNIT_ASSERT_EQ(test, ndk_test_register(test, w->mr, &w->t, w->t.len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
			STATUS_SUCCESS);
	ndk_wait_init(&done[1]);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = w->mr->Dispatch->NdkCloseMr(&w->mr->Header, ndk_test_close_cb,
					 &done[1]);
	bst = qp->Dispatch->NdkBind(qp, (void *)0x5c, w->mr, w->mw,
				    (PVOID)(uintptr_t)va, 64, NDK_MW_RW);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, bst, STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&done[1]));
	KUNIT_EXPECT_EQ(test, atomic_read(&done[1].calls), 1);
	w->mr = NULL;

	mr2 = ndk_test_mr(test, e, false);
	KUNIT_EXPECT_EQ(test, ndk_test_register(test, mr2, &w->t, w->t.len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
			STATUS_SUCCESS);
	ndk_wait_init(&done[2]);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = w->mw->Dispatch->NdkCloseMw(&w->mw->Header, ndk_test_close_cb,
					 &done[2]);
	bst = qp->Dispatch->NdkBind(qp, (void *)0x5c, mr2, w->mw,
				    (PVOID)(uintptr_t)va, 64, NDK_MW_RW);
	ist = qp->Dispatch->NdkInvalidate(qp, (void *)0x5d, &w->mw->Header, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, bst, STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ist, STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&done[2]));
	KUNIT_EXPECT_EQ(test, atomic_read(&done[2].calls), 1);
	w->mw = NULL;
	ndk_test_close_mr(test, mr2);
	ndk_mwenv_free(test, w);
}

static struct kunit_case ndk_mw_cases[] = {
	KUNIT_CASE(ndk_mw_contexts_test),
	KUNIT_CASE(ndk_mw_info_test),
	KUNIT_CASE(ndk_mw_rdma_test),
	KUNIT_CASE_PARAM(ndk_mw_bad_access_test, ndk_mw_bad_gen_params),
	KUNIT_CASE(ndk_mw_bind_refused_test),
	KUNIT_CASE(ndk_mw_bind_pending_test),
	KUNIT_CASE(ndk_mw_flushed_bind_test),
	KUNIT_CASE(ndk_mw_invalidate_test),
	KUNIT_CASE(ndk_mw_remote_invalidate_test),
	KUNIT_CASE_PARAM(ndk_mw_lifetime_test, ndk_mw_end_gen_params),
	{}
};

NDK_SUITE(mw, ndk_conn_init_test, ndk_conn_exit_test);
