// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_mr, the tests of ndk/mr.c: memory over a loopback connection. One
 * side registers memory, the other reads and writes it through the token
 * with NdkRead/NdkWrite; access rights, bounds, dead tokens and tokens
 * the peer was never given must make the request fail and leave the
 * memory alone. Fast registration and invalidation (local and remote) go
 * through the consumer's QPs.
 */
#include <linux/delay.h>
#include <linux/vmalloc.h>
#include "ndk_tests.h"

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

/*
 * The end of a case that left @mr deregistered or dead: registered again
 * over @t's @len bytes, the region takes a peer's write of @seed through
 * its new remote token; then the region, @t and the peer go.
 */
static void ndk_mr_register_again(struct kunit *test, struct ndk_cenv *e,
				  NDK_MR *mr, struct ndk_mem *t, u32 len,
				  u8 seed)
{
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	u32 rkey;

	ndk_menv_init(test, e, me);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	KUNIT_EXPECT_EQ(test, ndk_mr_write_to(test, e, me, t, rkey, seed),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, seed));
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

static void ndk_mr_create_in(struct ndk_test_call *c)
{
	NDK_PD *pd = c->arg;

	c->st = pd->Dispatch->NdkCreateMr(pd, FALSE, ndk_test_create_cb, &c->w,
					  (NDK_MR **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_mr_contexts_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;

	ndk_test_contexts(test, ndk_mr_create_in, e->pd);
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

/* Post one send or receive of @len bytes at @va with @token on @qp. */
static NTSTATUS ndk_mr_post_one(NDK_QP *qp, bool recv, void *ctx, u64 va,
				u32 len, u32 token)
{
	NDK_SGE sge = {
		.VirtualAddress = (PVOID)(uintptr_t)va,
		.Length = len,
		.MemoryRegionToken = token,
	};
	unsigned long irq;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, irq);
	if (recv)
		st = qp->Dispatch->NdkReceive(qp, ctx, &sge, 1);
	else
		st = qp->Dispatch->NdkSend(qp, ctx, &sge, 1, 0);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	return st;
}

/*
 * The peer (active side) sends with invalidate naming @named, a token of
 * the passive side's registered region @mr over @t, into a receive on
 * that region. The receive reports the token, and only once ndk has
 * restored the region: while the restoring cannot run (the case holds
 * the region's lock), the CQ keeps the receive's result back, and once
 * it is polled the region works at once.
 */
static void ndk_mr_peer_invalidates(struct kunit *test, struct ndk_cenv *e,
				    struct ndk_menv *me, struct ndk_mem *t,
				    NDK_MR *mr, u32 named)
{
	u32 lkey = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	u32 ptok = me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	struct ndk_cq *cq = container_of(e->cq, struct ndk_cq, ndk);
	struct ndk_mr *m = container_of(mr, struct ndk_mr, ndk);
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	bool early = false;
	NDK_RESULT_EX r = {};
	NDK_SGE sge = {
		.VirtualAddress = me->lmem.base,
		.Length = 64,
		.MemoryRegionToken = ptok,
	};
	unsigned long irq;
	NTSTATUS st;

	KUNIT_ASSERT_EQ(test, ndk_mr_post_one(me->p.pqp, true, (void *)0x41,
					      ndk_mem_va(t), 64, lkey),
			STATUS_SUCCESS);
	ndk_mem_fill(&me->lmem, 0, 64, 61);
	mutex_lock(&m->lock);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.aqp->Dispatch->NdkSendAndInvalidate(me->p.aqp, (void *)0x42,
						       &sge, 1, 0, named);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	/* Poll until the receive is reported or the CQ holds it back. */
	while (st == STATUS_SUCCESS && !READ_ONCE(cq->held) &&
	       time_before(jiffies, end)) {
		if (!e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1)) {
			usleep_range(2000, 4000);
			continue;
		}
		if (r.RequestContext == (void *)0x41)
			early = true;
		if (me->nearly < ARRAY_SIZE(me->early))
			me->early[me->nearly++] = r;
		if (early)
			break;
	}
	KUNIT_EXPECT_FALSE_MSG(test, early,
			       "the receive came before its region was restored");
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1),
			0U);
	mutex_unlock(&m->lock);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x42,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x41,
					      &r),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r.Type,
			(ULONG)NdkOperationTypeReceiveAndInvalidate);
	KUNIT_EXPECT_EQ(test, (u32)r.TypeSpecificCompletionOutput, named);
	KUNIT_EXPECT_EQ(test, r.BytesTransferred, 64U);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, 64, 61));
}

/*
 * After the peer's NdkSendAndInvalidate named a registered region
 * (@local: by a value equal to its local token, else by its remote
 * token), the region works as before: the same tokens, the consumer's
 * send from it and receive into it, and the peer's write and read
 * through the remote token, with the right data.
 */
static void ndk_mr_survive_run(struct kunit *test, bool local)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	u32 lkey, rkey, ptok, len = NDK_REGION_LEN;
	NDK_MR *mr;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF, len);
	mr = ndk_test_mr(test, e, false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						NDK_MR_FLAG_ALLOW_REMOTE_READ |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	lkey = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	ptok = me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);

	ndk_mr_peer_invalidates(test, e, me, t, mr, local ? lkey : rkey);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetLocalTokenFromMr(mr), lkey);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetRemoteTokenFromMr(mr), rkey);

	/* The consumer sends from the region... */
	ndk_mem_fill(t, 0, 64, 62);
	KUNIT_ASSERT_EQ(test, ndk_mr_post_one(me->p.aqp, true, (void *)0x43,
					      (uintptr_t)me->lmem.base, 64,
					      ptok),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_mr_post_one(me->p.pqp, false, (void *)0x44,
					      ndk_mem_va(t), 64, lkey),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x44,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x43,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, 64, 62));

	/* ...and receives into it. */
	ndk_mem_fill(&me->lmem, 0, 64, 63);
	KUNIT_ASSERT_EQ(test, ndk_mr_post_one(me->p.pqp, true, (void *)0x45,
					      ndk_mem_va(t), 64, lkey),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_mr_post_one(me->p.aqp, false, (void *)0x46,
					      (uintptr_t)me->lmem.base, 64,
					      ptok),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x46,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x45,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, 64, 63));

	/* The peer writes and reads through the remote token. */
	ndk_mem_fill(&me->lmem, 0, len, 64);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, true, ndk_mem_va(t),
					    rkey, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, 64));
	ndk_mem_fill(t, 0, len, 65);
	memset(me->lmem.base, 0, len);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, false, ndk_mem_va(t),
					    rkey, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, len, 65));

	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/*
 * A peer's NdkSendAndInvalidate naming a registered region's remote
 * token: the receive reports the token, and the region, its local token
 * and its remote token all keep working. The remote token's verbs MR is
 * the one the device invalidated, so this fails without ndk's restoring.
 */
static void ndk_mr_peer_remote_token_test(struct kunit *test)
{
	ndk_mr_survive_run(test, false);
}

/*
 * The same with a value equal to the region's local token, which the
 * device invalidates as readily: ndk restores that verbs MR too.
 */
static void ndk_mr_peer_local_token_test(struct kunit *test)
{
	ndk_mr_survive_run(test, true);
}

/*
 * A peer's NdkSendAndInvalidate naming the PD's privileged token. On siw
 * that is the key of the PD's DMA MR, which siw invalidates (it checks
 * the PD only): once the receive that carried it is polled, the token
 * works again, for a receive into memory and a send from it.
 */
static void ndk_mr_peer_privileged_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_qpspec q = { .depth = 8, .sge = { 1, 1 } };
	NDK_RESULT_EX r[2];
	struct ndk_penv *pe;
	NDK_CQ *acq, *pcq;
	NDK_QP *aqp, *pqp;
	NDK_SGE sge;

	if (!ndk_test_iwarp())
		kunit_skip(test, "rxe does not invalidate the DMA MR behind the privileged token");
	acq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ, Header);
	pcq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ, Header);
	q.acq = acq;
	q.pcq = pcq;
	pe = ndk_penv_new_spec(test, e, true, &q);
	aqp = pe->p.aqp;
	pqp = pe->p.pqp;
	memset(pe->buf, 0x61, 64);
	sge = ndk_penv_sge(pe, 1024, 64);
	KUNIT_ASSERT_EQ(test, pqp->Dispatch->NdkReceive(pqp, (void *)0x51, &sge,
							1),
			STATUS_SUCCESS);
	sge = ndk_penv_sge(pe, 0, 64);
	KUNIT_ASSERT_EQ(test,
			aqp->Dispatch->NdkSendAndInvalidate(aqp, (void *)0x52,
							    &sge, 1, 0,
							    pe->tok),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(acq, r, 1));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(pcq, r, 1));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[0].Type,
			(ULONG)NdkOperationTypeReceiveAndInvalidate);
	KUNIT_EXPECT_EQ(test, (u32)r[0].TypeSpecificCompletionOutput, pe->tok);

	/* At once: a receive into memory through it, a send from it. */
	memset(pe->buf + 2048, 0x62, 64);
	sge = ndk_penv_sge(pe, 1024, 64);
	KUNIT_ASSERT_EQ(test, pqp->Dispatch->NdkReceive(pqp, (void *)0x53, &sge,
							1),
			STATUS_SUCCESS);
	sge = ndk_penv_sge(pe, 2048, 64);
	KUNIT_ASSERT_EQ(test, aqp->Dispatch->NdkSend(aqp, (void *)0x54, &sge, 1,
						     0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(acq, r, 1));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(pcq, r + 1, 1));
	KUNIT_EXPECT_EQ(test, r[1].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[1].BytesTransferred, 64U);
	KUNIT_EXPECT_EQ(test, pe->buf[1024], 0x62);
	KUNIT_EXPECT_EQ(test, pe->buf[1024 + 63], 0x62);
	ndk_penv_free(test, pe);
	ndk_test_close(test, &acq->Header, acq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &pcq->Header, pcq->Dispatch->NdkCloseCq);
}

/*
 * NdkRegisterMr of more pages than the MR's last registration had: the
 * verbs MRs its deregistration kept map too few, so new ones replace
 * them. The region works through its token, which the peer's write and
 * read reach with the right bytes; the tokens of the small registration
 * open nothing.
 */
static void ndk_mr_grow_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *small = ndk_kzalloc_test(test, sizeof(*small));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	u32 len = NDK_REGION_LEN, old, rkey;
	struct ndk_mr *m;
	NDK_MR *mr;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, small, NDK_MDL_KVA, false, false, 0, 64);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF, len);
	mr = ndk_test_mr(test, e, false);
	m = container_of(mr, struct ndk_mr, ndk);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, small, 64,
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	old = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	KUNIT_EXPECT_EQ(test, m->max_pages, 1U);
	KUNIT_ASSERT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	KUNIT_EXPECT_NOT_NULL(test, m->spare);
	KUNIT_EXPECT_NOT_NULL(test, m->rspare);

	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, len,
						NDK_MR_FLAG_ALLOW_REMOTE_READ |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, m->max_pages, 3U);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	KUNIT_EXPECT_NE(test, rkey, old);
	KUNIT_EXPECT_EQ(test, ndk_mr_write_to(test, e, me, t, rkey, 71),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, 71));
	ndk_mem_fill(t, 0, len, 72);
	memset(me->lmem.base, 0, len);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, me, false, ndk_mem_va(t),
					    rkey, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, len, 72));
	ndk_mem_fill(&me->lmem, 0, 64, 73);
	KUNIT_EXPECT_NE(test, ndk_menv_rdma(test, e, me, true,
					    ndk_mem_va(small), old, 64),
			STATUS_SUCCESS);
	KUNIT_EXPECT_FALSE(test, ndk_mem_check(small, 0, 64, 73));

	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
	ndk_mem_free(small);
	ndk_menv_free(test, me);
}

/*
 * NdkDeregisterMr whose invalidation of the local token's verbs MR never
 * reaches the device (NDK_FI fails the registration QP's post): the
 * deregistration still succeeds, since that verbs MR is destroyed rather
 * than kept, which kills its token as well; the remote token's is
 * invalidated and kept. The remote token opens nothing, and the next
 * registration of the MR works.
 */
static void ndk_mr_deregister_fault_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	u32 len = NDK_REGION_LEN, rkey;
	struct ndk_mr *m;
	bool fired;
	NTSTATUS st;
	NDK_MR *mr;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF, len);
	mr = ndk_test_mr(test, e, false);
	m = container_of(mr, struct ndk_mr, ndk);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);

	ndk_fault_arm(1);
	st = ndk_test_deregister(test, mr);
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, fired);
	KUNIT_EXPECT_NULL(test, m->spare);
	KUNIT_EXPECT_NOT_NULL(test, m->rspare);
	KUNIT_EXPECT_EQ(test, mr->Dispatch->NdkGetRemoteTokenFromMr(mr), 0U);

	/* The remote token reaches the memory no more. */
	ndk_mem_fill(t, 0, len, 81);
	KUNIT_EXPECT_NE(test, ndk_mr_write_to(test, e, me, t, rkey, 82),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, 81));
	ndk_menv_free(test, me);

	/* Registered again, the region works. */
	ndk_mr_register_again(test, e, mr, t, len, 83);
}

/*
 * A peer's NdkSendAndInvalidate naming a registered region's remote
 * token, whose restoring fails (NDK_FI fails the registration QP's post
 * while the case holds the region's lock): the receive is still
 * reported, once, after that attempt, with the token it named; the
 * token stays dead, as ndk warns, until the region is registered again,
 * which works.
 */
static void ndk_mr_restore_fault_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	struct ndk_cq *cq = container_of(e->cq, struct ndk_cq, ndk);
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	u32 len = NDK_REGION_LEN, lkey, rkey, ptok;
	NTSTATUS st, recv = STATUS_PENDING;
	NDK_RESULT_EX r = {};
	bool fired = false;
	struct ndk_mr *m;
	unsigned long irq;
	NDK_SGE sge;
	NDK_MR *mr;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, NDK_REGION_OFF, len);
	mr = ndk_test_mr(test, e, false);
	m = container_of(mr, struct ndk_mr, ndk);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	lkey = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	ptok = me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	sge = (NDK_SGE){ .VirtualAddress = me->lmem.base, .Length = 64,
			 .MemoryRegionToken = ptok };
	KUNIT_ASSERT_EQ(test, ndk_mr_post_one(me->p.pqp, true, (void *)0x49,
					      ndk_mem_va(t), 64, lkey),
			STATUS_SUCCESS);
	ndk_mem_fill(&me->lmem, 0, 64, 91);

	mutex_lock(&m->lock);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = me->p.aqp->Dispatch->NdkSendAndInvalidate(me->p.aqp, (void *)0x4a,
						       &sge, 1, 0, rkey);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	/* Poll until the CQ holds the receive back. */
	while (st == STATUS_SUCCESS && !READ_ONCE(cq->held) &&
	       time_before(jiffies, end)) {
		if (!e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1)) {
			usleep_range(2000, 4000);
			continue;
		}
		if (r.RequestContext == (void *)0x49)
			recv = r.Status;
		if (me->nearly < ARRAY_SIZE(me->early))
			me->early[me->nearly++] = r;
	}
	if (st == STATUS_SUCCESS && READ_ONCE(cq->held)) {
		ndk_fault_arm(1);
		mutex_unlock(&m->lock);
		recv = ndk_test_result(test, me, e->cq, (void *)0x49, &r);
		ndk_fault_disarm(&fired);
	} else {
		mutex_unlock(&m->lock);
	}
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE_MSG(test, fired, "restore not failed: %#x", recv);
	KUNIT_EXPECT_EQ(test, recv, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r.Type,
			(ULONG)NdkOperationTypeReceiveAndInvalidate);
	KUNIT_EXPECT_EQ(test, (u32)r.TypeSpecificCompletionOutput, rkey);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, 64, 91));
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x4a,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1),
			0U);

	/* Not restored: the peer's write through the token fails. */
	ndk_mem_fill(t, 0, len, 92);
	KUNIT_EXPECT_NE(test, ndk_mr_write_to(test, e, me, t, rkey, 93),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, 92));
	ndk_menv_free(test, me);

	/* Deregistered and registered again, the region works. */
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_mr_register_again(test, e, mr, t, len, 94);
}

/*
 * On siw, a peer's NdkSendAndInvalidate naming the privileged token of a
 * PD whose registration path cannot be set up (NDK_FI fails it): the
 * receive that carried it is still reported, once, with the token, after
 * ndk's attempt to restore the token, which warns; the token then stays
 * dead, so that a receive into memory through it fails. The PD is the
 * case's own, so that the environment's token stays alive.
 */
static void ndk_mr_privileged_fault_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ib_device *dev = container_of(e->pd, struct ndk_pd,
					     ndk)->ibpd->device;
	NDK_RESULT_EX r[2] = {};
	struct sockaddr_in dst;
	struct ndk_pair p = {};
	NDK_QP *uqp = NULL;
	NDK_CQ *acq, *pcq;
	struct ndk_wait w;
	bool fired = false;
	NDK_SGE sge;
	NTSTATUS st;
	UINT32 tok;
	NDK_PD *pd;
	bool got;
	u8 *buf;
	u64 dma;

	if (!ndk_test_iwarp())
		kunit_skip(test, "rxe does not invalidate the DMA MR behind the privileged token");
	buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	dma = ib_dma_map_single(dev, buf, PAGE_SIZE, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, dma));
	pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD, Header);
	pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &tok);
	acq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ, Header);
	pcq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ, Header);
	ndk_wait_init(&w);
	st = pd->Dispatch->NdkCreateQp(pd, acq, acq, e, 8, 8, 1, 1, 0,
				       ndk_test_create_cb, &w, &uqp);
	p.aqp = container_of(ndk_created(test, st, &w, uqp), NDK_QP, Header);
	ndk_wait_init(&w);
	uqp = NULL;
	st = pd->Dispatch->NdkCreateQp(pd, pcq, pcq, e, 8, 8, 1, 1, 0,
				       ndk_test_create_cb, &w, &uqp);
	p.pqp = container_of(ndk_created(test, st, &w, uqp), NDK_QP, Header);
	p.c = ndk_cenv_connector(test, e);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);

	memset(buf + 2048, 0x71, 64);
	sge = (NDK_SGE){ .LogicalAddress = dma, .Length = 64,
			 .MemoryRegionToken = tok };
	KUNIT_ASSERT_EQ(test, p.pqp->Dispatch->NdkReceive(p.pqp, (void *)0x55,
							  &sge, 1),
			STATUS_SUCCESS);
	sge.LogicalAddress = dma + 2048;
	KUNIT_ASSERT_EQ(test,
			p.aqp->Dispatch->NdkSendAndInvalidate(p.aqp,
							      (void *)0x56,
							      &sge, 1, 0, tok),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(acq, r, 1));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	/* The receive's poll asks for the restoring, which fails. */
	ndk_fault_arm(1);
	got = ndk_penv_poll(pcq, r, 1);
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_TRUE(test, fired);
	KUNIT_ASSERT_TRUE(test, got);
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x55);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[0].Type,
			(ULONG)NdkOperationTypeReceiveAndInvalidate);
	KUNIT_EXPECT_EQ(test, (u32)r[0].TypeSpecificCompletionOutput, tok);
	ib_dma_sync_single_for_cpu(dev, dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_EQ(test, buf[0], 0x71);
	KUNIT_EXPECT_EQ(test, buf[63], 0x71);
	KUNIT_EXPECT_EQ(test, pcq->Dispatch->NdkGetCqResultsEx(pcq, r, 1), 0U);

	/* Not restored: a receive through the token fails. */
	memset(buf + 2048, 0x72, 64);
	sge.LogicalAddress = dma + 1024;
	KUNIT_ASSERT_EQ(test, p.pqp->Dispatch->NdkReceive(p.pqp, (void *)0x57,
							  &sge, 1),
			STATUS_SUCCESS);
	sge.LogicalAddress = dma + 2048;
	KUNIT_ASSERT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)0x58,
						       &sge, 1, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(pcq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x57);
	KUNIT_EXPECT_NE(test, r[0].Status, STATUS_SUCCESS);
	ib_dma_sync_single_for_cpu(dev, dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_EQ(test, buf[1024], 0);

	ndk_pair_close(test, &p);
	ndk_test_close(test, &acq->Header, acq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &pcq->Header, pcq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &pd->Header, pd->Dispatch->NdkClosePd);
	ib_dma_unmap_single(dev, dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
}

/* Bytes each guess reads or writes, from the start of the region. */
#define NDK_GUESS_LEN	64

#define NDK_GUESS_RW	(NDK_MR_FLAG_ALLOW_REMOTE_READ | \
			 NDK_MR_FLAG_ALLOW_REMOTE_WRITE)

/* Where the tokens a peer tries come from (ndk_guess_cases[]). */
enum ndk_guess_kind {
	NDK_GUESS_KEY_BYTE,
	NDK_GUESS_NEIGHBOUR,
	NDK_GUESS_DEREGISTERED,
	NDK_GUESS_INVALIDATED,
	NDK_GUESS_PRIVILEGED,
	NDK_GUESS_LOCAL_ONLY,
	NDK_GUESS_LOCAL_TOKEN,
};

/**
 * struct ndk_guess_case - tokens a peer was never given, and what it tries
 * @name: case name
 * @kind: where the tokens come from
 * @read: the peer tries an RDMA read through each
 * @write: and an RDMA write
 * @iwarp_skip: why the tries prove nothing on iWARP, where they do not
 */
struct ndk_guess_case {
	const char *name;
	enum ndk_guess_kind kind;
	bool read;
	bool write;
	const char *iwarp_skip;
};

static const struct ndk_guess_case ndk_guess_cases[] = {
	{ "other key byte", NDK_GUESS_KEY_BYTE, true, true },
	{ "neighbouring index", NDK_GUESS_NEIGHBOUR, true, true },
	{ "deregistered region", NDK_GUESS_DEREGISTERED, true, true },
	{ "invalidated fast-register MR", NDK_GUESS_INVALIDATED, true, true },
	{ "privileged token, write", NDK_GUESS_PRIVILEGED, false, true },
	{ "privileged token, read", NDK_GUESS_PRIVILEGED, true, false,
	  "siw answers reads through any valid key of the PD, its DMA MR's too (deviations.rst)" },
	{ "local-only region, write", NDK_GUESS_LOCAL_ONLY, false, true },
	{ "local-only region, read", NDK_GUESS_LOCAL_ONLY, true, false,
	  "siw does not enforce remote read access" },
	{ "local token of a remote region", NDK_GUESS_LOCAL_TOKEN, true, true,
	  "an iWARP local token keeps the region's remote write, for read sinks" },
};

static void ndk_guess_desc(const struct ndk_guess_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mr_guess, ndk_guess_cases, ndk_guess_desc);

/**
 * struct ndk_guess - the consumer's side of a guessed-token case
 * @me: a connection of the consumer's that takes no part in the guesses,
 *	and the buffer every guess reads into or writes from
 * @v: memory of a region with remote rights whose tokens only @me uses
 * @vmr: that region
 * @vtok: its remote token
 * @x: memory of the case's other region, where it has one
 * @xmr: that region
 * @lam: the pages of @x, for a fast registration
 * @target: the memory the guesses aim at
 * @tokens: the guesses
 * @n: how many
 */
struct ndk_guess {
	struct ndk_menv me;
	struct ndk_mem v, x;
	NDK_MR *vmr, *xmr;
	u32 vtok;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	struct ndk_mem *target;
	u32 tokens[8];
	int n;
};

/* Fill all of @m's memory, the region and what lies around it. */
static void ndk_guess_fill(struct ndk_mem *m, u8 seed)
{
	u32 off = m->off;

	m->off = 0;
	ndk_mem_fill(m, 0, NDK_MEM_PAGES * PAGE_SIZE, seed);
	m->off = off;
}

static bool ndk_guess_intact(struct ndk_mem *m, u8 seed)
{
	u32 off = m->off;
	bool ok;

	m->off = 0;
	ok = ndk_mem_check(m, 0, NDK_MEM_PAGES * PAGE_SIZE, seed);
	m->off = off;
	return ok;
}

/* The consumer's own connection writes @len bytes through @token. */
static void ndk_guess_real_write(struct kunit *test, struct ndk_cenv *e,
				 struct ndk_guess *g, struct ndk_mem *t,
				 u32 token, u32 len, u8 seed)
{
	ndk_mem_fill(&g->me.lmem, 0, len, seed);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, &g->me, true,
					    ndk_mem_va(t), token, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(t, 0, len, seed));
}

/* A region of @flags over fresh memory @m, and its tokens. */
static NDK_MR *ndk_guess_region(struct kunit *test, struct ndk_cenv *e,
				struct ndk_mem *m, ULONG flags, u32 *rtok,
				u32 *ltok)
{
	NDK_MR *mr = ndk_test_mr(test, e, false);

	ndk_mem_init(test, m, NDK_MDL_KVA, false, false, NDK_REGION_OFF,
		     NDK_REGION_LEN);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, m, m->len, flags),
			STATUS_SUCCESS);
	*rtok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	*ltok = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	return mr;
}

/*
 * The tokens of @kind, and the memory they aim at. Each real token is
 * shown to work first, through the consumer's own connection, before
 * its region goes; a guess near it is then near something that opened.
 */
static void ndk_guess_setup(struct kunit *test, struct ndk_cenv *e,
			    struct ndk_guess *g, enum ndk_guess_kind kind)
{
	static const int steps[] = { -2, -1, 1, 2 };
	u32 idx = g->vtok >> 8, key = g->vtok & 0xff, rtok, ltok, next;
	unsigned int i;
	NTSTATUS st;
	ULONG fbo;

	g->target = &g->v;
	switch (kind) {
	case NDK_GUESS_KEY_BYTE:
		/* The next and the last registration's, and one far off. */
		g->tokens[g->n++] = idx << 8 | ((key + 1) & 0xff);
		g->tokens[g->n++] = idx << 8 | ((key - 1) & 0xff);
		g->tokens[g->n++] = idx << 8 | (key ^ 0x80);
		break;
	case NDK_GUESS_NEIGHBOUR:
		/*
		 * rxe hands out indexes in order, so index - 1 with the key
		 * byte is the region's local token there (no remote rights);
		 * siw draws them at random, so nothing lives around them.
		 */
		for (i = 0; i < ARRAY_SIZE(steps); i++) {
			next = (idx + steps[i]) & 0xffffff;
			g->tokens[g->n++] = next << 8 | key;
			g->tokens[g->n++] = next << 8 | (key ^ 0x5a);
		}
		break;
	case NDK_GUESS_DEREGISTERED:
		g->xmr = ndk_guess_region(test, e, &g->x, NDK_GUESS_RW, &rtok,
					  &ltok);
		ndk_guess_real_write(test, e, g, &g->x, rtok, NDK_GUESS_LEN, 5);
		KUNIT_ASSERT_EQ(test, ndk_test_deregister(test, g->xmr),
				STATUS_SUCCESS);
		g->tokens[g->n++] = rtok;
		g->tokens[g->n++] = ltok;
		g->target = &g->x;
		break;
	case NDK_GUESS_INVALIDATED:
		ndk_mem_init(test, &g->x, NDK_MDL_PAGES, false, false,
			     NDK_REGION_OFF, NDK_REGION_LEN);
		g->lam = ndk_test_lam(test, e, &g->x, &fbo);
		g->xmr = ndk_test_fast_mr(test, e, 4, TRUE, &st);
		KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
		KUNIT_ASSERT_EQ(test, ndk_test_fast_register(test, e, &g->me,
							     g->xmr, g->lam,
							     fbo, &g->x,
							     NDK_OP_FLAG_ALLOW_REMOTE_READ |
							     NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
				STATUS_SUCCESS);
		rtok = g->xmr->Dispatch->NdkGetRemoteTokenFromMr(g->xmr);
		ndk_guess_real_write(test, e, g, &g->x, rtok, NDK_GUESS_LEN, 6);
		KUNIT_ASSERT_EQ(test, ndk_test_invalidate(test, e, &g->me,
							  &g->xmr->Header),
				STATUS_SUCCESS);
		g->tokens[g->n++] = rtok;
		g->target = &g->x;
		break;
	case NDK_GUESS_PRIVILEGED:
		e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd,
								   &g->tokens[g->n++]);
		break;
	case NDK_GUESS_LOCAL_ONLY:
		g->xmr = ndk_guess_region(test, e, &g->x,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &rtok,
					  &ltok);
		/* Its one verbs MR's key, both its tokens on rxe and siw. */
		g->tokens[g->n++] = ltok;
		g->target = &g->x;
		break;
	case NDK_GUESS_LOCAL_TOKEN:
		g->tokens[g->n++] =
			g->vmr->Dispatch->NdkGetLocalTokenFromMr(g->vmr);
		break;
	}
}

/*
 * One guess, on a connection of its own: a refused request moves the
 * peer's QP to the error state. The request fails, the memory around the
 * target stays as it was, and a read brings nothing back.
 */
static void ndk_guess_try(struct kunit *test, struct ndk_cenv *e,
			  struct ndk_guess *g, bool write, u32 token)
{
	const char *op = write ? "write" : "read";
	struct ndk_pair p = {};
	struct sockaddr_in dst;
	NTSTATUS st;

	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_guess_fill(g->target, 3);
	ndk_mem_fill(&g->me.lmem, 0, NDK_GUESS_LEN, 100);
	st = ndk_menv_rdma_on(test, e, &g->me, p.aqp, write,
			      ndk_mem_va(g->target), token, NDK_GUESS_LEN);
	ndk_pair_close(test, &p);
	/* On iWARP the peer's TERMINATE flushes the request instead. */
	if (ndk_test_iwarp())
		KUNIT_EXPECT_NE_MSG(test, st, STATUS_SUCCESS, "%s through %#x",
				    op, token);
	else
		KUNIT_EXPECT_EQ_MSG(test, st, STATUS_ACCESS_VIOLATION,
				    "%s through %#x", op, token);
	KUNIT_EXPECT_TRUE_MSG(test, ndk_guess_intact(g->target, 3),
			      "%s through %#x changed the memory", op, token);
	if (!write)
		KUNIT_EXPECT_TRUE_MSG(test, ndk_mem_check(&g->me.lmem, 0,
							  NDK_GUESS_LEN, 100),
				      "read through %#x brought data", token);
}

/*
 * A peer tries tokens it was never given, near the real ones, each
 * through an RDMA read and an RDMA write on a connection of its own: the
 * region's remote token with another key byte (the low 8 bits), the
 * indexes (the upper 24 bits) one and two away with the key byte and
 * another, both tokens of a deregistered region, the token of a
 * fast-register MR after NdkInvalidate, the PD's privileged token, the
 * token of a region without remote rights, and the local token of one
 * with them (a verbs MR of its own). Every request fails, on RoCE with
 * STATUS_ACCESS_VIOLATION, and leaves the memory as it was; afterwards
 * the consumer's own connection, which was up throughout, still writes
 * and reads the region through its remote token. On siw, which answers
 * reads through any valid key, the reads through the privileged token
 * and a local-only region are skipped, and so is the local token of a
 * region with remote write, which iWARP keeps for read sinks.
 */
static void ndk_mr_guessed_token_test(struct kunit *test)
{
	const struct ndk_guess_case *c = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_guess *g;
	u32 ltok, len;
	int i;

	if (c->iwarp_skip && ndk_test_iwarp())
		kunit_skip(test, "%s", c->iwarp_skip);
	g = ndk_kzalloc_test(test, sizeof(*g));
	ndk_menv_init(test, e, &g->me);
	g->vmr = ndk_guess_region(test, e, &g->v, NDK_GUESS_RW, &g->vtok,
				  &ltok);
	ndk_guess_real_write(test, e, g, &g->v, g->vtok, NDK_GUESS_LEN, 4);
	ndk_guess_setup(test, e, g, c->kind);

	for (i = 0; i < g->n; i++) {
		if (c->read)
			ndk_guess_try(test, e, g, false, g->tokens[i]);
		if (c->write)
			ndk_guess_try(test, e, g, true, g->tokens[i]);
	}

	len = g->v.len;
	ndk_guess_real_write(test, e, g, &g->v, g->vtok, len, 40);
	ndk_mem_fill(&g->v, 0, len, 41);
	memset(g->me.lmem.base, 0, len);
	KUNIT_EXPECT_EQ(test, ndk_menv_rdma(test, e, &g->me, false,
					    ndk_mem_va(&g->v), g->vtok, len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&g->me.lmem, 0, len, 41));

	if (g->xmr)
		ndk_test_close_mr(test, g->xmr);
	if (g->lam)
		e->a->Dispatch->NdkReleaseLAM(e->a, g->lam);
	ndk_mem_free(&g->x);
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, g->vmr), STATUS_SUCCESS);
	ndk_test_close_mr(test, g->vmr);
	ndk_mem_free(&g->v);
	ndk_menv_free(test, &g->me);
}

/*
 * The region calls refuse inline, with no callback, what NDKPI does not
 * allow: NdkCreateMr without a PD or a completion; NdkRegisterMr without
 * a completion, an MDL, a length or an address, or on a region made for
 * fast registration; NdkDeregisterMr without a completion, on a fast
 * region or on one not registered; NdkInitializeFastRegisterMr without a
 * completion, on a region for NdkRegisterMr, or for no page at all.
 */
static void ndk_mr_args_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_MR *mr = ndk_test_mr(test, e, false), *fast = ndk_test_mr(test, e, true);
	const NDK_MR_DISPATCH *d = mr->Dispatch;
	const ULONG rw = NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
	struct ndk_mdl mdl, empty = {};
	NDK_MR *unused = NULL;
	struct ndk_wait w, w2;
	unsigned long flags;
	NTSTATUS st, st2;
	u8 *buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	ndk_mdl_init_kva(&mdl, buf, PAGE_SIZE);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, e->pd->Dispatch->NdkCreateMr(NULL, FALSE,
							   ndk_test_create_cb,
							   &w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->pd->Dispatch->NdkCreateMr(e->pd, FALSE, NULL,
							   &w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkRegisterMr(mr, &mdl, PAGE_SIZE, rw, NULL,
					       &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkRegisterMr(mr, NULL, PAGE_SIZE, rw,
					       ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkRegisterMr(mr, &mdl, 0, rw,
					       ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkRegisterMr(mr, &empty, PAGE_SIZE, rw,
					       ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkRegisterMr(fast, &mdl, PAGE_SIZE, rw,
					       ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkDeregisterMr(mr, NULL, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkDeregisterMr(fast, ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkDeregisterMr(mr, ndk_test_request_cb, &w),
			STATUS_INVALID_DEVICE_STATE);
	KUNIT_EXPECT_EQ(test, d->NdkInitializeFastRegisterMr(fast, 4, TRUE,
							     NULL, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkInitializeFastRegisterMr(mr, 4, TRUE,
							     ndk_test_request_cb,
							     &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkInitializeFastRegisterMr(fast, 0, TRUE,
							     ndk_test_request_cb,
							     &w),
			STATUS_IMPLEMENTATION_LIMIT);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);

	/* A region registered, or a fast one being set up, takes no second. */
	ndk_wait_init(&w2);
	KUNIT_ASSERT_EQ(test,
			ndk_test_outcome(test, &w2,
					 d->NdkRegisterMr(mr, &mdl, PAGE_SIZE,
							  rw,
							  ndk_test_request_cb,
							  &w2)),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, d->NdkRegisterMr(mr, &mdl, PAGE_SIZE, rw,
					       ndk_test_request_cb, &w),
			STATUS_INVALID_DEVICE_STATE);
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_wait_init(&w2);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = d->NdkInitializeFastRegisterMr(fast, 4, TRUE, ndk_test_request_cb,
					    &w2);
	st2 = d->NdkInitializeFastRegisterMr(fast, 4, TRUE,
					     ndk_test_request_cb, &w);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st2, STATUS_INVALID_DEVICE_STATE);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w2, st), STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	ndk_test_close_mr(test, fast);
	ndk_test_close_mr(test, mr);
}

/* What a disconnect event callback does. */
enum {
	NDK_IH_CLOSE_MR = BIT(0),	/* close a registered region */
	NDK_IH_CLOSE_PD = BIT(1),	/* close the PD, its path set up */
	NDK_IH_CLOSE_MW = BIT(2),	/* close a window */
	NDK_IH_CREATE_MW = BIT(3),	/* create a window */
	NDK_IH_REGISTER = BIT(4),	/* register a region */
	NDK_IH_DEREGISTER = BIT(5),	/* deregister a region */
	NDK_IH_INIT_FAST = BIT(6),	/* initialize a fast-register MR */
};

struct ndk_in_handler_case {
	const char *name;
	unsigned int ops;
};

static const struct ndk_in_handler_case ndk_in_handler_cases[] = {
	{ "close region", NDK_IH_CLOSE_MR },
	{ "close PD", NDK_IH_CLOSE_PD },
	{ "close region and PD", NDK_IH_CLOSE_MR | NDK_IH_CLOSE_PD },
	{ "close window", NDK_IH_CLOSE_MW },
	{ "create window", NDK_IH_CREATE_MW },
	{ "register", NDK_IH_REGISTER },
	{ "deregister", NDK_IH_DEREGISTER },
	{ "initialize fast", NDK_IH_INIT_FAST },
};

static void ndk_in_handler_desc(const struct ndk_in_handler_case *c,
				char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_mr_in_handler, ndk_in_handler_cases,
		  ndk_in_handler_desc);

/*
 * The calls a disconnect event callback makes, on @mr, @pd and @mw, and
 * what each returned and reported: the region's in @mst and @rw, the
 * PD's in @pst and @pw, the window's in @wst and @ww.
 */
struct ndk_in_handler {
	unsigned int ops;
	NDK_MR *mr;
	NDK_PD *pd;
	NDK_MW *mw, *new_mw;
	struct ndk_mem *mem;
	struct ndk_wait rw, pw, ww;
	NTSTATUS mst, pst, wst;
	struct completion entered;
};

static void ndk_in_handler_disc_cb(PVOID DisconnectEventContext)
{
	struct ndk_in_handler *h = DisconnectEventContext;
	NDK_MR *mr = h->mr;

	if (h->ops & NDK_IH_REGISTER)
		h->mst = mr->Dispatch->NdkRegisterMr(mr, h->mem->mdl, PAGE_SIZE,
						     NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
						     ndk_test_request_cb,
						     &h->rw);
	if (h->ops & NDK_IH_DEREGISTER)
		h->mst = mr->Dispatch->NdkDeregisterMr(mr, ndk_test_request_cb,
						       &h->rw);
	if (h->ops & NDK_IH_INIT_FAST)
		h->mst = mr->Dispatch->NdkInitializeFastRegisterMr(mr, 1, TRUE,
								   ndk_test_request_cb,
								   &h->rw);
	if (h->ops & NDK_IH_CREATE_MW)
		h->wst = h->pd->Dispatch->NdkCreateMw(h->pd, ndk_test_create_cb,
						      &h->ww, &h->new_mw);
	if (h->ops & NDK_IH_CLOSE_MW)
		h->wst = h->mw->Dispatch->NdkCloseMw(&h->mw->Header,
						     ndk_test_close_cb, &h->ww);
	if (h->ops & NDK_IH_CLOSE_MR)
		h->mst = mr->Dispatch->NdkCloseMr(&mr->Header,
						  ndk_test_close_cb, &h->rw);
	if (h->ops & NDK_IH_CLOSE_PD)
		h->pst = h->pd->Dispatch->NdkClosePd(&h->pd->Header,
						     ndk_test_close_cb, &h->pw);
	complete(&h->entered);
}

/* The call pended and reported success exactly once. */
static void ndk_in_handler_check(struct kunit *test, struct ndk_wait *w,
				 NTSTATUS st)
{
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, w, st), STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&w->calls),
			st == STATUS_PENDING ? 1 : 0);
}

/*
 * Region, window and PD calls made from a disconnect event callback,
 * which ndk runs inside its rdma_cm handler, pend and complete once each
 * on every transport, though the handler may sleep: they take the PD's
 * window or registration mutex or the MR's, which on iWARP are held
 * across rdma_cm calls of the registration path (ndk_reg_may_run()).
 * Finishing them inline on RoCE made lockdep report the cycle handler
 * lock, window mutex, registration mutex, handler lock once both
 * transports had run.
 */
static void ndk_mr_in_handler_test(struct kunit *test)
{
	const struct ndk_in_handler_case *hc = test->param_value;
	struct ndk_cenv *e = test->priv;
	/* Not on the stack: a call may still report after a failure. */
	struct ndk_in_handler *h = ndk_kzalloc_test(test, sizeof(*h));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	struct sockaddr_in dst;
	struct ndk_pair p;
	struct ndk_wait w;
	NDK_MR *mr = NULL;
	NDK_MW *mw = NULL;
	NDK_PD *pd;
	NTSTATUS st;

	h->ops = hc->ops;
	pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD, Header);
	ndk_wait_init(&w);
	st = pd->Dispatch->NdkCreateMr(pd, h->ops & NDK_IH_INIT_FAST,
				       ndk_test_create_cb, &w, &mr);
	mr = container_of(ndk_created(test, st, &w, mr), NDK_MR, Header);
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, 0, PAGE_SIZE);
	/* Registered once, which sets up the PD's registration path. */
	if (!(h->ops & NDK_IH_INIT_FAST))
		KUNIT_ASSERT_EQ(test,
				ndk_test_register(test, mr, t, PAGE_SIZE,
						  NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
				STATUS_SUCCESS);
	if (h->ops & NDK_IH_REGISTER)
		KUNIT_ASSERT_EQ(test, ndk_test_deregister(test, mr),
				STATUS_SUCCESS);
	/* A PD closed alone has no region left, but its path. */
	if ((h->ops & NDK_IH_CLOSE_PD) && !(h->ops & NDK_IH_CLOSE_MR)) {
		ndk_test_close_mr(test, mr);
		mr = NULL;
	}
	if (h->ops & NDK_IH_CLOSE_MW) {
		ndk_wait_init(&w);
		st = pd->Dispatch->NdkCreateMw(pd, ndk_test_create_cb, &w,
					       &mw);
		mw = container_of(ndk_created(test, st, &w, mw), NDK_MW,
				  Header);
	}
	h->mr = mr;
	h->pd = pd;
	h->mw = mw;
	h->mem = t;
	ndk_wait_init(&h->rw);
	ndk_wait_init(&h->pw);
	ndk_wait_init(&h->ww);
	init_completion(&h->entered);

	ndk_listen_addr(e, &dst);
	ndk_pair_init(test, e, &p);
	ndk_establish_pair_disc(test, e, &p, (struct sockaddr *)&e->addr,
				(struct sockaddr *)&dst, sizeof(dst), false,
				ndk_in_handler_disc_cb, h);
	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test, p.c->Dispatch->NdkDisconnect(p.c,
							   ndk_test_request_cb,
							   &w),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&h->entered,
							  NDK_TEST_TIMEOUT),
			0UL);
	if (h->ops & (NDK_IH_CLOSE_MR | NDK_IH_REGISTER | NDK_IH_DEREGISTER |
		      NDK_IH_INIT_FAST))
		ndk_in_handler_check(test, &h->rw, h->mst);
	if (h->ops & (NDK_IH_CLOSE_MW | NDK_IH_CREATE_MW))
		ndk_in_handler_check(test, &h->ww, h->wst);
	if (h->ops & NDK_IH_CLOSE_PD)
		ndk_in_handler_check(test, &h->pw, h->pst);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
	ndk_pair_close(test, &p);
	/* The window made inline, had the creation not pended. */
	mw = h->ww.obj ? container_of(h->ww.obj, NDK_MW, Header) : h->new_mw;
	if ((h->ops & NDK_IH_CREATE_MW) && mw)
		ndk_test_close(test, &mw->Header, mw->Dispatch->NdkCloseMw);
	if (mr && !(h->ops & NDK_IH_CLOSE_MR))
		ndk_test_close_mr(test, mr);
	if (!(h->ops & NDK_IH_CLOSE_PD))
		ndk_test_close(test, &pd->Header, pd->Dispatch->NdkClosePd);
	ndk_mem_free(t);
}

static struct kunit_case ndk_mr_cases[] = {
	KUNIT_CASE(ndk_mr_contexts_test),
	KUNIT_CASE(ndk_mr_args_test),
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
	KUNIT_CASE(ndk_mr_peer_remote_token_test),
	KUNIT_CASE(ndk_mr_peer_local_token_test),
	KUNIT_CASE(ndk_mr_peer_privileged_test),
	KUNIT_CASE(ndk_mr_grow_test),
	KUNIT_CASE(ndk_mr_deregister_fault_test),
	KUNIT_CASE(ndk_mr_restore_fault_test),
	KUNIT_CASE(ndk_mr_privileged_fault_test),
	KUNIT_CASE_PARAM(ndk_mr_guessed_token_test, ndk_mr_guess_gen_params),
	KUNIT_CASE_PARAM(ndk_mr_in_handler_test, ndk_mr_in_handler_gen_params),
	{}
};

NDK_SUITE(mr, ndk_conn_init_test, ndk_conn_exit_test);
