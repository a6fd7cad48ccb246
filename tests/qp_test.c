// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_qp: queue pair creation limits, the create/close contract, and the
 * antecedent rules between a QP and its PD and CQs.
 */
#include <linux/delay.h>
#include "ndk_tests.h"

struct ndk_qp_env {
	NDK_ADAPTER *a;
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_ADAPTER_INFO info;
};

static int ndk_qp_init_test(struct kunit *test)
{
	struct ndk_qp_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);
	ULONG size = sizeof(e->info);

	KUNIT_ASSERT_NOT_NULL(test, e);
	test->priv = e;
	e->a = ndk_test_open(test);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkQueryAdapterInfo(e->a, &e->info,
								  &size),
			STATUS_SUCCESS);
	e->pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD, Header);
	e->cq = container_of(ndk_test_create_cq(test, e->a, 64), NDK_CQ, Header);
	return 0;
}

static void ndk_qp_exit_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;

	if (!e || !e->a)
		return;
	if (e->cq)
		ndk_test_close(test, &e->cq->Header, e->cq->Dispatch->NdkCloseCq);
	if (e->pd)
		ndk_test_close(test, &e->pd->Header, e->pd->Dispatch->NdkClosePd);
	ndk_test_close_adapter(test, e->a);
}

/* A QP made inline (STATUS_SUCCESS) is left in @w->obj. */
static NTSTATUS ndk_qp_try(struct ndk_qp_env *e, NDK_CQ *rcq, NDK_CQ *icq,
			   ULONG rdepth, ULONG idepth, ULONG rsge, ULONG isge,
			   ULONG inl, struct ndk_wait *w)
{
	NDK_QP *made = NULL;
	NTSTATUS st;

	st = e->pd->Dispatch->NdkCreateQp(e->pd, rcq, icq, (void *)0x1234,
					  rdepth, idepth, rsge, isge, inl,
					  ndk_test_create_cb, w, &made);
	if (st == STATUS_SUCCESS)
		w->obj = made ? &made->Header : NULL;
	return st;
}

/*
 * The final status of a create that returned @st: a pending one's from
 * its callback; one completed inline never calls back.
 */
static NTSTATUS ndk_qp_done(struct kunit *test, NTSTATUS st,
			    struct ndk_wait *w)
{
	if (st != STATUS_PENDING) {
		KUNIT_EXPECT_EQ(test, atomic_read(&w->calls), 0);
		return st;
	}
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(w));
	return w->status;
}

static NDK_QP *ndk_qp_make(struct kunit *test, struct ndk_qp_env *e)
{
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = ndk_qp_try(e, e->cq, e->cq, 16, 16, 2, 2, 0, &w);
	KUNIT_ASSERT_EQ(test, ndk_qp_done(test, st, &w), STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, w.obj);
	KUNIT_EXPECT_EQ(test, w.obj->ObjectType, NdkObjectTypeQp);
	return container_of(w.obj, NDK_QP, Header);
}

static void ndk_qp_create_close_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	NDK_QP *qp = ndk_qp_make(test, e);
	struct ndk_qp *p = container_of(qp, struct ndk_qp, ndk);
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;

	KUNIT_EXPECT_EQ(test, p->ibqp->qp_type, IB_QPT_RC);
	/* The device granted the depths; ndk checks against those asked. */
	KUNIT_ASSERT_EQ(test, ib_query_qp(p->ibqp, &attr, 0, &init), 0);
	KUNIT_EXPECT_GE(test, init.cap.max_recv_wr, 16U);
	KUNIT_EXPECT_GE(test, init.cap.max_send_wr, 16U);
	KUNIT_EXPECT_EQ(test, p->rq.depth, 16U);
	KUNIT_EXPECT_EQ(test, p->sq.depth, 16U);
	/* Completions of this QP carry the consumer's QPContext. */
	KUNIT_EXPECT_PTR_EQ(test, ndk_qp_context(p->ibqp), (void *)0x1234);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
}

/* Create and close with a spinlock held and interrupts off. */
static void ndk_qp_atomic_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	struct ndk_wait w, c;
	unsigned long flags;
	NTSTATUS status;
	NDK_QP *qp;

	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = ndk_qp_try(e, e->cq, e->cq, 8, 8, 1, 1, 0, &w);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_ASSERT_EQ(test, w.status, STATUS_SUCCESS);
	qp = container_of(w.obj, NDK_QP, Header);

	ndk_wait_init(&c);
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = qp->Dispatch->NdkCloseQp(&qp->Header, ndk_test_close_cb, &c);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c));
}

struct ndk_qp_cic {
	struct ndk_wait create, close;
	NTSTATUS close_status;
};

static void ndk_qp_cic_cb(PVOID Context, NTSTATUS Status,
			  NDK_OBJECT_HEADER *pNdkObject)
{
	struct ndk_qp_cic *t = Context;
	NDK_QP *qp = container_of(pNdkObject, NDK_QP, Header);

	t->create.status = Status;
	if (Status == STATUS_SUCCESS)
		t->close_status = qp->Dispatch->NdkCloseQp(pNdkObject,
							   ndk_test_close_cb,
							   &t->close);
	complete(&t->create.done);
}

/*
 * Created from atomic context, so that the create pends; the close from
 * inside its callback, which runs where it may sleep, may finish inline
 * (then never calling back) or pend (then calling back once).
 */
static void ndk_qp_close_in_create_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	struct ndk_qp_cic t;
	NDK_QP *unused = NULL;
	unsigned long flags;
	NTSTATUS st;

	ndk_wait_init(&t.create);
	ndk_wait_init(&t.close);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, NULL, 4, 4, 1, 1,
					  0, ndk_qp_cic_cb, &t, &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&t.create));
	KUNIT_ASSERT_EQ(test, t.create.status, STATUS_SUCCESS);
	if (t.close_status == STATUS_SUCCESS) {
		msleep(50);
		KUNIT_EXPECT_EQ(test, atomic_read(&t.close.calls), 0);
		return;
	}
	KUNIT_EXPECT_EQ(test, t.close_status, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&t.close));
}

/*
 * Where the kernel can tell that the caller may sleep, QP creation and
 * close complete inline: STATUS_SUCCESS, the QP stored for the caller,
 * and neither callback ever runs; so does a connector's creation. Without
 * a place to store the object, the creation pends.
 */
static void ndk_qp_inline_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	NDK_CONNECTOR *conn = NULL;
	struct ndk_wait w, c;
	NDK_QP *qp;

	if (!IS_ENABLED(CONFIG_PREEMPT_COUNT))
		kunit_skip(test, "no PREEMPT_COUNT: every caller counts as atomic");
	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test, ndk_qp_try(e, e->cq, e->cq, 8, 8, 1, 1, 0, &w),
			STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, w.obj);
	KUNIT_EXPECT_EQ(test, w.obj->ObjectType, NdkObjectTypeQp);
	qp = container_of(w.obj, NDK_QP, Header);
	ndk_wait_init(&c);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkCloseQp(&qp->Header,
						       ndk_test_close_cb, &c),
			STATUS_SUCCESS);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&c.calls), 0);

	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test,
			e->a->Dispatch->NdkCreateConnector(e->a,
							   ndk_test_create_cb,
							   &w, &conn),
			STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, conn);
	KUNIT_EXPECT_EQ(test, conn->Header.ObjectType, NdkObjectTypeConnector);
	ndk_test_close(test, &conn->Header, conn->Dispatch->NdkCloseConnector);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);

	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test,
			e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, NULL,
						     4, 4, 1, 1, 0,
						     ndk_test_create_cb, &w,
						     NULL),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_ASSERT_EQ(test, w.status, STATUS_SUCCESS);
	qp = container_of(w.obj, NDK_QP, Header);
	ndk_test_close(test, w.obj, qp->Dispatch->NdkCloseQp);
}

/* Each limit of NDK_ADAPTER_INFO, one past it, fails inline. */
static void ndk_qp_limits_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	const NDK_ADAPTER_INFO *i = &e->info;
	struct ndk_wait w;

	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, e->cq,
					 i->MaxReceiveQueueDepth + 1, 4, 1, 1,
					 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, e->cq, 4,
					 i->MaxInitiatorQueueDepth + 1, 1, 1,
					 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, e->cq, 4, 4,
					 i->MaxReceiveRequestSge + 1, 1, 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, e->cq, 4, 4, 1,
					 i->MaxInitiatorRequestSge + 1, 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, e->cq, 4, 4, 1, 1,
					 i->MaxInlineDataSize + 1, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, NULL, e->cq, 4, 4, 1, 1, 0, &w),
			STATUS_INVALID_PARAMETER);
	/* A PD is not a CQ. */
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, (NDK_CQ *)e->pd, 4, 4, 1, 1,
					 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
}

/*
 * The largest value the adapter reports for each limit is accepted by the
 * device. The limits are independent maxima, as in verbs: a QP with all
 * of them at once may exceed the device's memory.
 */
static void ndk_qp_max_limits_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	const NDK_ADAPTER_INFO *i = &e->info;
	const ULONG v[][5] = {
		{ i->MaxReceiveQueueDepth, 4, 1, 1, 0 },
		{ 4, i->MaxInitiatorQueueDepth, 1, 1, 0 },
		{ 4, 4, i->MaxReceiveRequestSge, 1, 0 },
		{ 4, 4, 1, i->MaxInitiatorRequestSge, 0 },
		{ 4, 4, 1, 1, i->MaxInlineDataSize },
	};
	struct ndk_wait w;
	NTSTATUS st;
	NDK_QP *qp;
	size_t k;

	for (k = 0; k < ARRAY_SIZE(v); k++) {
		ndk_wait_init(&w);
		st = ndk_qp_try(e, e->cq, e->cq, v[k][0], v[k][1], v[k][2],
				v[k][3], v[k][4], &w);
		st = ndk_qp_done(test, st, &w);
		KUNIT_EXPECT_EQ_MSG(test, st, STATUS_SUCCESS,
				    "limit %zu at its maximum", k);
		if (st != STATUS_SUCCESS)
			continue;
		qp = container_of(w.obj, NDK_QP, Header);
		ndk_test_close(test, w.obj, qp->Dispatch->NdkCloseQp);
	}
}

struct ndk_order_rec {
	atomic_t seq;
	struct ndk_order_slot {
		struct completion done;
		int at;
		struct ndk_order_rec *rec;
	} qp, ante;
};

static void ndk_order_cb(PVOID Context)
{
	struct ndk_order_slot *s = Context;

	s->at = atomic_inc_return(&s->rec->seq);
	complete(&s->done);
}

/*
 * Closing an antecedent first pends; it completes only after the QP's
 * own close completion, and nothing else about the QP changes.
 */
static void ndk_qp_antecedent_test(struct kunit *test, bool close_pd)
{
	struct ndk_qp_env *e = test->priv;
	NDK_QP *qp = ndk_qp_make(test, e);
	struct ndk_order_rec rec = {};
	NDK_OBJECT_HEADER *ante;
	NDK_FN_CLOSE_OBJECT close;
	NTSTATUS st;

	ante = close_pd ? &e->pd->Header : &e->cq->Header;
	close = close_pd ? e->pd->Dispatch->NdkClosePd :
			   e->cq->Dispatch->NdkCloseCq;
	rec.qp.rec = &rec;
	rec.ante.rec = &rec;
	init_completion(&rec.qp.done);
	init_completion(&rec.ante.done);

	KUNIT_ASSERT_EQ(test, close(ante, ndk_order_cb, &rec.ante),
			STATUS_PENDING);
	if (close_pd)
		e->pd = NULL;
	else
		e->cq = NULL;
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&rec.ante.done,
							  HZ / 5), 0UL);
	st = qp->Dispatch->NdkCloseQp(&qp->Header, ndk_order_cb, &rec.qp);
	/* Finished inline, the QP's close is over when the call returns. */
	if (st == STATUS_SUCCESS)
		ndk_order_cb(&rec.qp);
	else
		KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&rec.ante.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_TRUE(test, completion_done(&rec.qp.done));
	KUNIT_EXPECT_LT(test, rec.qp.at, rec.ante.at);
}

static void ndk_qp_close_pd_first_test(struct kunit *test)
{
	ndk_qp_antecedent_test(test, true);
}

static void ndk_qp_close_cq_first_test(struct kunit *test)
{
	ndk_qp_antecedent_test(test, false);
}

/* Separate receive and initiator CQs each stay referenced. */
static void ndk_qp_two_cqs_test(struct kunit *test)
{
	struct ndk_qp_env *e = test->priv;
	NDK_CQ *rcq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ,
				   Header);
	struct ndk_wait w, c;
	NTSTATUS st;
	NDK_QP *qp;

	ndk_wait_init(&w);
	st = ndk_qp_try(e, rcq, e->cq, 4, 4, 1, 1, 0, &w);
	KUNIT_ASSERT_EQ(test, ndk_qp_done(test, st, &w), STATUS_SUCCESS);
	qp = container_of(w.obj, NDK_QP, Header);

	ndk_wait_init(&c);
	KUNIT_ASSERT_EQ(test, rcq->Dispatch->NdkCloseCq(&rcq->Header,
							ndk_test_close_cb, &c),
			STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&c.done, HZ / 5),
			0UL);
	ndk_test_close(test, w.obj, qp->Dispatch->NdkCloseQp);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c));
}

static struct kunit_case ndk_qp_cases[] = {
	KUNIT_CASE(ndk_qp_create_close_test),
	KUNIT_CASE(ndk_qp_atomic_test),
	KUNIT_CASE(ndk_qp_close_in_create_test),
	KUNIT_CASE(ndk_qp_inline_test),
	KUNIT_CASE(ndk_qp_limits_test),
	KUNIT_CASE(ndk_qp_max_limits_test),
	KUNIT_CASE(ndk_qp_close_pd_first_test),
	KUNIT_CASE(ndk_qp_close_cq_first_test),
	KUNIT_CASE(ndk_qp_two_cqs_test),
	{}
};

struct kunit_suite ndk_qp_suite = {
	.name = "ndk_qp",
	.init = ndk_qp_init_test,
	.exit = ndk_qp_exit_test,
	.test_cases = ndk_qp_cases,
};
