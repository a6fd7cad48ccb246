// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_qp, the tests of ndk/qp.c: queue pair creation limits, the
 * create/close contract, and the antecedent rules between a QP and its
 * PD and CQs.
 *
 * Then posting over a loopback connection. Gather and scatter with the
 * bytes checked, requests refused before the connection, and the rule
 * that a request that returned STATUS_SUCCESS always completes: receives
 * and sends still outstanding when the QP is flushed or the peer goes
 * away complete with the flush status, as what they were. Deferred
 * requests (NDK_OP_FLAG_DEFER) wait in the QP until their chain ends,
 * and reach the device before any inline failure returns. The posting
 * cases complete the connection environment (ndk_cenv_need()) the
 * suite's init leaves out.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include "ndk_tests.h"
#include "sweep.h"

/* The objects' environment, and the adapter's limits in @e->info. */
static int ndk_qp_init_test(struct kunit *test)
{
	struct ndk_cenv *e;
	ULONG size = sizeof(e->info);

	ndk_env_objects_init(test);
	e = test->priv;
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkQueryAdapterInfo(e->a, &e->info,
								  &size),
			STATUS_SUCCESS);
	return 0;
}

/* A QP made inline (STATUS_SUCCESS) is left in @w->obj. */
static NTSTATUS ndk_qp_try(struct ndk_cenv *e, NDK_CQ *rcq, NDK_CQ *icq,
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

static NDK_QP *ndk_qp_make(struct kunit *test, struct ndk_cenv *e)
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
	struct ndk_cenv *e = test->priv;
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
	struct ndk_cenv *e = test->priv;
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

	status = ndk_test_close_atomic(&qp->Header, qp->Dispatch->NdkCloseQp,
				       &c);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c));
}

/*
 * Created from atomic context, so that the create pends; the close from
 * inside its callback, which runs where it may sleep, may finish inline
 * (then never calling back) or pend (then calling back once).
 */
static void ndk_qp_close_in_create_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_close_in_create t;
	NDK_QP *unused = NULL;
	unsigned long flags;
	NTSTATUS st;

	ndk_close_in_create_init(&t);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, NULL, 4, 4, 1, 1,
					  0, ndk_close_in_create_cb, &t,
					  &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	ndk_create_with(test, st, &t.create);
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
	struct ndk_cenv *e = test->priv;
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
	struct ndk_cenv *e = test->priv;
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
	/* No PD, or nothing to call back. */
	KUNIT_EXPECT_EQ(test, e->pd->Dispatch->NdkCreateQp(NULL, e->cq, e->cq,
							   NULL, 4, 4, 1, 1, 0,
							   ndk_test_create_cb,
							   &w, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq,
							   NULL, 4, 4, 1, 1, 0,
							   NULL, &w, NULL),
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
	struct ndk_cenv *e = test->priv;
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
	struct ndk_cenv *e = test->priv;
	NDK_QP *qp = ndk_qp_make(test, e);
	struct ndk_order_rec rec = {};
	NDK_OBJECT_HEADER *ante;
	NDK_FN_CLOSE_OBJECT close;
	NTSTATUS st;
	int before;

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
	/*
	 * Finished inline, the QP's close has no completion of its own: its
	 * place in the order is the call, since the antecedent's close
	 * completion, queued on ndk_wq by the QP's destruction, may run on
	 * another CPU before the call returns.
	 */
	before = atomic_inc_return(&rec.seq);
	st = qp->Dispatch->NdkCloseQp(&qp->Header, ndk_order_cb, &rec.qp);
	if (st == STATUS_SUCCESS) {
		rec.qp.at = before;
		complete(&rec.qp.done);
	} else {
		KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	}
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
	struct ndk_cenv *e = test->priv;
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

/*
 * @cq, as receive or initiator CQ, makes NdkCreateQp fail inline with
 * STATUS_INVALID_PARAMETER and no callback.
 */
static void ndk_qp_expect_cq_refused(struct kunit *test, struct ndk_cenv *e,
				     NDK_CQ *cq)
{
	struct ndk_wait w;

	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, cq, e->cq, 4, 4, 1, 1, 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_qp_try(e, e->cq, cq, 4, 4, 1, 1, 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
}

/*
 * A CQ of another adapter, even one opened on the same interface, serves
 * no QP of this PD: as receive or initiator CQ, NdkCreateQp fails inline
 * with STATUS_INVALID_PARAMETER.
 */
static void ndk_qp_other_adapter_cq_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_ADAPTER *a = ndk_test_open(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_cq(test, a, 16);
	NDK_CQ *cq = container_of(hdr, NDK_CQ, Header);

	ndk_qp_expect_cq_refused(test, e, cq);
	ndk_test_close(test, hdr, cq->Dispatch->NdkCloseCq);
	ndk_test_close_adapter(test, a);
}

/*
 * A CQ whose close pends behind a live QP takes no new QP: as receive or
 * initiator CQ, NdkCreateQp fails inline with STATUS_INVALID_PARAMETER.
 * The close completes once the QP is closed.
 */
static void ndk_qp_closing_cq_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_QP *qp = ndk_qp_make(test, e);
	/* Not on the stack: after a failure the close completes later. */
	struct ndk_wait *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	NDK_CQ *cq = e->cq;

	KUNIT_ASSERT_NOT_NULL(test, c);
	ndk_wait_init(c);
	KUNIT_ASSERT_EQ(test, cq->Dispatch->NdkCloseCq(&cq->Header,
						       ndk_test_close_cb, c),
			STATUS_PENDING);
	e->cq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ,
			     Header);
	ndk_qp_expect_cq_refused(test, e, cq);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(c));
}

/*
 * QPs of 4 SGEs each way, @depth deep, the active one on the suite's CQ
 * and the passive one on @pcq.
 */
static struct ndk_penv *ndk_penv_new_qp(struct kunit *test,
					struct ndk_cenv *e, bool connect,
					ULONG depth, ULONG inline_size,
					NDK_CQ *pcq)
{
	struct ndk_qpspec q = { .depth = depth, .sge = { 4, 4 },
				.inline_size = inline_size, .acq = e->cq,
				.pcq = pcq };

	return ndk_penv_new_spec(test, e, connect, &q);
}

static struct ndk_penv *ndk_penv_new(struct kunit *test, struct ndk_cenv *e,
				     bool connect)
{
	return ndk_penv_new_qp(test, e, connect, 8, 0, e->cq);
}

/* Post @n receives of 32 bytes on @qp, contexts @ctx.. and slots 0... */
static void ndk_penv_receives(struct kunit *test, struct ndk_penv *pe,
			      NDK_QP *qp, uintptr_t ctx, int n)
{
	NDK_SGE sge;
	NTSTATUS st;
	int i;

	for (i = 0; i < n; i++) {
		sge = ndk_penv_sge(pe, 32 * i, 32);
		st = qp->Dispatch->NdkReceive(qp, (void *)(ctx + i), &sge, 1);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	}
}

/* Poll @n results and check each is @status, a @type, with @ctx + i. */
static void ndk_penv_expect(struct kunit *test, struct ndk_cenv *e,
			    uintptr_t ctx, int n, NTSTATUS status,
			    NDK_OPERATION_TYPE type)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	NDK_RESULT_EX r[8];
	int got = 0, i;

	while (got < n && time_before(jiffies, end)) {
		got += e->cq->Dispatch->NdkGetCqResultsEx(e->cq, r + got,
							  n - got);
		if (got < n)
			usleep_range(2000, 4000);
	}
	KUNIT_ASSERT_EQ(test, got, n);
	for (i = 0; i < n; i++) {
		/*
		 * iWARP has no receiver-not-ready wait: a send completes
		 * once it is on the wire, before a flush can catch it.
		 */
		if (type != NdkOperationTypeSend || !ndk_test_iwarp() ||
		    r[i].Status != STATUS_SUCCESS)
			KUNIT_EXPECT_EQ(test, r[i].Status, status);
		KUNIT_EXPECT_EQ(test, r[i].Type, (ULONG)type);
		KUNIT_EXPECT_GE(test, (uintptr_t)r[i].RequestContext, ctx);
		KUNIT_EXPECT_LT(test, (uintptr_t)r[i].RequestContext, ctx + n);
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, (void *)e);
	}
	msleep(50);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, r, 1),
			0U);
}

/* nd_receive_flush_qp: every posted receive comes back cancelled. */
static void nd_receive_flush_qp(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	unsigned long flags;

	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 5);
	spin_lock_irqsave(&ndk_test_lock, flags);
	pe->p.pqp->Dispatch->NdkFlush(pe->p.pqp);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	ndk_penv_expect(test, e, 0x100, 5, STATUS_CANCELLED,
			NdkOperationTypeReceive);
	ndk_penv_free(test, pe);
}

/*
 * A second NdkFlush before the first has run adds nothing: each receive
 * is cancelled once. Both calls hold a spinlock with interrupts off, so
 * that the flush work, queued on this CPU, cannot run in between.
 */
static void ndk_qp_flush_twice_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	NDK_QP *qp = pe->p.pqp;
	unsigned long flags;

	ndk_penv_receives(test, pe, qp, 0x100, 5);
	spin_lock_irqsave(&ndk_test_lock, flags);
	qp->Dispatch->NdkFlush(qp);
	qp->Dispatch->NdkFlush(qp);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	ndk_penv_expect(test, e, 0x100, 5, STATUS_CANCELLED,
			NdkOperationTypeReceive);
	ndk_penv_free(test, pe);
}

/*
 * Sends to a peer with no receive posted wait (receiver not ready, retried
 * without end); a flush of the sender completes them as cancelled sends.
 */
static void ndk_post_flush_sends_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	NDK_QP *qp = pe->p.aqp;
	NDK_SGE sge = ndk_penv_sge(pe, 512, 16);
	NTSTATUS st;
	int i;

	for (i = 0; i < 3; i++) {
		st = qp->Dispatch->NdkSend(qp, (void *)(uintptr_t)(0x200 + i),
					   &sge, 1, 0);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	}
	msleep(100);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, NULL, 0),
			0U);
	qp->Dispatch->NdkFlush(qp);
	ndk_penv_expect(test, e, 0x200, 3, STATUS_CANCELLED,
			NdkOperationTypeSend);
	ndk_penv_free(test, pe);
}

/*
 * nd_receive_conn_closed: the peer disconnects while receives are
 * posted; they complete with the flush status and the disconnect event
 * callback runs once.
 */
static void nd_receive_conn_closed(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	unsigned long end;
	struct ndk_wait dw;

	e->disconnects = 0;
	ndk_penv_receives(test, pe, pe->p.pqp, 0x300, 4);
	ndk_wait_init(&dw);
	KUNIT_ASSERT_EQ(test, pe->p.c->Dispatch->NdkDisconnect(pe->p.c,
							       ndk_test_request_cb,
							       &dw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	ndk_penv_expect(test, e, 0x300, 4, STATUS_CANCELLED,
			NdkOperationTypeReceive);
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!e->disconnects && time_before(jiffies, end))
		usleep_range(2000, 4000);
	KUNIT_EXPECT_EQ(test, e->disconnects, 1);
	ndk_penv_free(test, pe);
}

/*
 * A send gathered from three SGEs lands scattered over two receive SGEs,
 * byte for byte; more SGEs than the QP takes are refused inline.
 */
static void ndk_post_gather_scatter_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	NDK_SGE rs[2] = { ndk_penv_sge(pe, 600, 10), ndk_penv_sge(pe, 700, 40) };
	NDK_SGE ss[5] = { ndk_penv_sge(pe, 0, 7), ndk_penv_sge(pe, 100, 20),
			  ndk_penv_sge(pe, 300, 13) };
	NDK_RESULT r[2], *x;
	u8 want[40];
	int i;

	for (i = 0; i < NDK_POST_BUF / 2; i++)
		pe->buf[i] = (u8)(i * 13 + 5);
	ib_dma_sync_single_for_device(pe->dev, pe->dma, NDK_POST_BUF,
				      DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_EQ(test, pe->p.aqp->Dispatch->NdkSend(pe->p.aqp, NULL, ss,
							   5, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x401,
							      rs, 2),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, pe->p.aqp->Dispatch->NdkSend(pe->p.aqp,
							   (void *)0x402, ss,
							   3, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2), 2U);
	x = ndk_find_result(r, 2, 0x401);
	KUNIT_ASSERT_NOT_NULL(test, x);
	KUNIT_EXPECT_EQ(test, x->Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, x->BytesTransferred, 40U);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	memcpy(want, pe->buf, 7);
	memcpy(want + 7, pe->buf + 100, 20);
	memcpy(want + 27, pe->buf + 300, 13);
	NDK_EXPECT_MEMEQ(test, pe->buf + 600, want, 10);
	NDK_EXPECT_MEMEQ(test, pe->buf + 700, want + 10, 30);
	ndk_penv_free(test, pe);
}

/*
 * Zero-length SGEs before data, which NDKPI allows: a send of 24 bytes
 * from { 0, 16, 0, 8 } and an RDMA write of 32 from { 0, 32 } arrive
 * whole. siw (6.1 to 7.3) looks no region up for a zero-length SGE and
 * then walks it to send what follows: its transmit thread oopsed. Then
 * requests of no bytes: a read and a write without SGEs, a write of two
 * empty SGEs and an inline send of one empty SGE succeed (siw refuses a
 * read of other than one SGE and an inline send of nothing), and a read
 * after a read of none gets its bytes.
 */
static void ndk_post_zero_sge_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	struct ndk_pmem *rm = ndk_pmem_new(test, e,
					   NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					   NDK_MR_FLAG_ALLOW_REMOTE_READ |
					   NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
					   NDK_MR_FLAG_RDMA_READ_SINK);
	NDK_SGE rs[2] = { ndk_penv_sge(pe, 600, 0), ndk_penv_sge(pe, 700, 40) };
	NDK_SGE ss[4] = { ndk_penv_sge(pe, 0, 0), ndk_penv_sge(pe, 100, 16),
			  ndk_penv_sge(pe, 200, 0), ndk_penv_sge(pe, 300, 8) };
	NDK_SGE ws[2] = { ndk_penv_sge(pe, 400, 0), ndk_penv_sge(pe, 0, 32) };
	NDK_QP *qp = pe->p.aqp;
	NDK_RESULT r[4], *x;
	u8 want[24];
	int i;

	for (i = 0; i < NDK_POST_BUF / 2; i++)
		pe->buf[i] = (u8)(i * 7 + 3);
	ib_dma_sync_single_for_device(pe->dev, pe->dma, NDK_POST_BUF,
				      DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x401,
							      rs, 2),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x402, ss, 4,
						    0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, qp->Dispatch->NdkWrite(qp, (void *)0x403, ws, 2,
						     ndk_pmem_va(rm, 64),
						     ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 3), 3U);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
	x = ndk_find_result(r, 3, 0x401);
	KUNIT_ASSERT_NOT_NULL(test, x);
	KUNIT_EXPECT_EQ(test, x->BytesTransferred, 24U);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	memcpy(want, pe->buf + 100, 16);
	memcpy(want + 16, pe->buf + 300, 8);
	NDK_EXPECT_MEMEQ(test, pe->buf + 700, want, 24);
	NDK_EXPECT_MEMEQ(test, rm->buf + 64, pe->buf, 32);

	/* Requests of no bytes: a read, two writes, an inline send. */
	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x404,
							      rs, 2),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, (void *)0x405, NULL, 0,
						    ndk_pmem_va(rm, 64),
						    ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, (void *)0x406, NULL, 0,
						     ndk_pmem_va(rm, 64),
						     ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	/* Only empty SGEs: the write goes to the device with none. */
	ws[0] = ndk_penv_sge(pe, 400, 0);
	ws[1] = ndk_penv_sge(pe, 500, 0);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, (void *)0x40a, ws, 2,
						     ndk_pmem_va(rm, 64),
						     ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	ws[0] = ndk_pmem_sge(rm, 0, 0);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x407, ws, 1,
						    NDK_OP_FLAG_INLINE),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 4), 4U);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ_MSG(test, r[i].Status, STATUS_SUCCESS,
				    "request %p", r[i].RequestContext);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 1), 1U);
	KUNIT_EXPECT_EQ_MSG(test, r[0].Status, STATUS_SUCCESS,
			    "request %p", r[0].RequestContext);

	/* A read of 16 bytes after one of none gets its bytes. */
	ws[0] = ndk_pmem_sge(rm, 2048, 0);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, (void *)0x408, ws, 1,
						    ndk_pmem_va(rm, 64),
						    ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	ws[0] = ndk_pmem_sge(rm, 1024, 16);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, (void *)0x409, ws, 1,
						    ndk_pmem_va(rm, 64),
						    ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2), 2U);
	for (i = 0; i < 2; i++)
		KUNIT_EXPECT_EQ_MSG(test, r[i].Status, STATUS_SUCCESS,
				    "request %p", r[i].RequestContext);
	NDK_EXPECT_MEMEQ(test, rm->buf + 1024, pe->buf, 16);
	ndk_penv_free(test, pe);
	ndk_pmem_free(test, rm);
}

/* Before the connection no initiator request is taken, and none completes. */
static void ndk_post_not_connected_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, false);
	NDK_QP *qp = pe->p.aqp;
	NDK_SGE sge = ndk_penv_sge(pe, 0, 8);
	NDK_RESULT r;

	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, NULL, &sge, 1, 0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, NULL, &sge, 1, 0, 0,
						     0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, NULL, &sge, 1, 0, 0, 0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSendAndInvalidate(qp, NULL,
								 &sge, 1, 0,
								 0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkInvalidate(qp, NULL, NULL, 0),
			STATUS_CONNECTION_INVALID);
	/* Receives may be posted before the connection. */
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, NULL, &sge, 1),
			STATUS_SUCCESS);
	msleep(50);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, &r, 1),
			0U);
	ndk_penv_free(test, pe);
}

/* The QP behind an NDK_QP, to see what it holds. */
static struct ndk_qp *ndk_post_priv(NDK_QP *qp)
{
	return container_of(qp, struct ndk_qp, ndk);
}

static void ndk_penv_fill(struct ndk_penv *pe)
{
	int i;

	for (i = 0; i < NDK_POST_BUF; i++)
		pe->buf[i] = (u8)(i * 13 + 5);
	ib_dma_sync_single_for_device(pe->dev, pe->dma, NDK_POST_BUF,
				      DMA_BIDIRECTIONAL);
}

/* Copy the results of @type among @r[0..@n) to @out, in order; count. */
static int ndk_results_of(const NDK_RESULT_EX *r, int n,
			  NDK_OPERATION_TYPE type, NDK_RESULT_EX *out)
{
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (r[i].Type == type)
			out[k++] = r[i];
	return k;
}

/* No result of @type arrives within 50 ms. */
static void ndk_penv_expect_none(struct kunit *test, struct ndk_cenv *e,
				 NDK_OPERATION_TYPE type)
{
	NDK_RESULT_EX r;

	msleep(50);
	while (e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1))
		KUNIT_EXPECT_NE_MSG(test, r.Type, (ULONG)type,
				    "unexpected result %p",
				    r.RequestContext);
}

/*
 * Check that sends @ctx.. and the receives 0x100.. they filled (16
 * bytes each from source offsets @src + 16 * i into 32-byte slots from
 * @slot) completed in order, with their bytes.
 */
static void ndk_penv_expect_sends(struct kunit *test, struct ndk_cenv *e,
				  struct ndk_penv *pe, uintptr_t ctx, int n,
				  int slot, u32 src)
{
	NDK_RESULT_EX *all = kunit_kcalloc(test, 3 * n, sizeof(*all),
					   GFP_KERNEL);
	NDK_RESULT_EX *r = all + 2 * n;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, all);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, all, 2 * n));
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 2 * n, NdkOperationTypeSend,
					     r), n);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    (void *)(ctx + i));
	}
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 2 * n,
					     NdkOperationTypeReceive, r), n);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    (void *)(uintptr_t)(0x100 + slot + i));
		KUNIT_EXPECT_EQ(test, r[i].BytesTransferred, 16U);
		NDK_EXPECT_MEMEQ(test, pe->buf + 32 * (slot + i),
				 pe->buf + src + 16 * i, 16);
	}
}

/* Post @n deferred 16-byte sends from 2048, contexts 0x200 on; all taken. */
static void ndk_penv_defer(struct kunit *test, struct ndk_penv *pe, int n)
{
	int i;

	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, i, 2048,
						    NDK_OP_FLAG_DEFER),
				STATUS_SUCCESS);
}

/*
 * Deferred sends wait in the QP: nothing reaches the peer or the CQ until
 * a request without NDK_OP_FLAG_DEFER ends the chain; then all complete
 * in order, with their contexts and bytes. From atomic context.
 */
static void ndk_post_defer_chain_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 16, 0, e->cq);
	unsigned long flags;
	NDK_RESULT r;

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 4);
	spin_lock_irqsave(&ndk_test_lock, flags);
	ndk_penv_defer(test, pe, 3);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(pe->p.aqp)->nheld, 3U);
	msleep(100);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, &r, 1),
			0U);
	spin_lock_irqsave(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 3, 2048, 0),
			STATUS_SUCCESS);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(pe->p.aqp)->nheld, 0U);
	ndk_penv_expect_sends(test, e, pe, 0x200, 4, 0, 2048);
	ndk_penv_free(test, pe);
}

/*
 * NdkFlush of a full initiator queue of page-sized writes and sends,
 * right after posting them: each comes back once, executed or cancelled,
 * never with a failure of the connection, in two rounds; the request the
 * device was working on is cancelled too.
 */
static void ndk_post_flush_busy_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	NDK_CQ *pcq = container_of(ndk_test_create_cq(test, e->a, 64), NDK_CQ,
				   Header);
	struct ndk_pmem *rm = ndk_pmem_new(test, e,
					   NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	NDK_RESULT_EX r[16];
	struct ndk_penv *pe;
	NDK_SGE sge;
	NTSTATUS st;
	int round, i;

	for (round = 0; round < 2; round++) {
		pe = ndk_penv_new_qp(test, e, true, 16, 0, pcq);
		ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 8);
		for (i = 0; i < 16; i++) {
			sge = ndk_penv_sge(pe, 0, i % 2 ? 16 : PAGE_SIZE);
			if (i % 2)
				st = pe->p.aqp->Dispatch->NdkSend(pe->p.aqp,
						(void *)(0x200UL + i), &sge, 1,
						0);
			else
				st = pe->p.aqp->Dispatch->NdkWrite(pe->p.aqp,
						(void *)(0x200UL + i), &sge, 1,
						ndk_pmem_va(rm, PAGE_SIZE *
							    (i % 4)),
						ndk_pmem_rtok(rm), 0);
			KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
		}
		pe->p.aqp->Dispatch->NdkFlush(pe->p.aqp);
		KUNIT_EXPECT_TRUE(test, ndk_penv_poll(e->cq, r, 16));
		for (i = 0; i < 16; i++)
			KUNIT_EXPECT_TRUE_MSG(test,
					      r[i].Status == STATUS_SUCCESS ||
					      r[i].Status == STATUS_CANCELLED,
					      "round %d, request %#lx: %#x",
					      round,
					      (uintptr_t)r[i].RequestContext,
					      r[i].Status);
		ndk_penv_free(test, pe);
		ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	}
	ndk_pmem_free(test, rm);
	ndk_test_close(test, &pcq->Header, pcq->Dispatch->NdkCloseCq);
}

/*
 * A request posted while the QP's failure hands the held requests to the
 * device (ndk_qp_set_error() owns them, which the test plays by holding
 * the claim) never passes them: it is refused, as the connection is
 * going, or it queues behind them. Each request has one outcome.
 */
static void ndk_post_defer_teardown_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	/* The peer's receives, flushed when siw's connection goes, apart. */
	NDK_CQ *pcq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ,
				   Header);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 16, 0, pcq);
	struct ndk_qp *q = ndk_post_priv(pe->p.aqp);
	NDK_RESULT_EX r[8];
	NTSTATUS st;
	int i, want;

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 4);
	ndk_penv_defer(test, pe, 3);
	KUNIT_EXPECT_EQ(test, q->nheld, 3U);
	atomic_set(&q->held_owner, 1);
	st = ndk_penv_send(pe, 0x200, 3, 2048, 0);
	KUNIT_EXPECT_TRUE_MSG(test, st != STATUS_SUCCESS || q->nheld == 4,
			      "posted past %u held requests", q->nheld);
	atomic_set(&q->held_owner, 0);
	want = 3 + (st == STATUS_SUCCESS);
	pe->p.aqp->Dispatch->NdkFlush(pe->p.aqp);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(e->cq, r, want));
	for (i = 0; i < want; i++)
		KUNIT_EXPECT_EQ(test, (uintptr_t)r[i].RequestContext,
				0x200UL + i);
	ndk_penv_free(test, pe);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_test_close(test, &pcq->Header, pcq->Dispatch->NdkCloseCq);
}

/*
 * A request that fails inline first sends what was deferred before it:
 * those complete, the failed one never does. Failures of the SGE check,
 * of the flag check and of NdkInvalidate's own checks.
 */
static void ndk_post_defer_fail_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 16, 0, e->cq);
	NDK_SGE five[5] = { ndk_penv_sge(pe, 2048, 4),
			    ndk_penv_sge(pe, 2052, 4),
			    ndk_penv_sge(pe, 2056, 4),
			    ndk_penv_sge(pe, 2060, 4),
			    ndk_penv_sge(pe, 2064, 4) };
	NDK_QP *qp = pe->p.aqp;

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 4);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 0, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 1, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x2ff, five, 5,
						    NDK_OP_FLAG_DEFER),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(qp)->nheld, 0U);
	ndk_penv_expect_sends(test, e, pe, 0x200, 2, 0, 2048);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);

	/* A flag NdkWrite does not take. */
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x202, 0, 2048 + 32,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, (void *)0x2fe,
						     five, 1, 0, 0,
						     NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
			STATUS_INVALID_PARAMETER);
	ndk_penv_expect_sends(test, e, pe, 0x202, 1, 2, 2048 + 32);

	/* NdkInvalidate of no MR, itself deferred. */
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x203, 0, 2048 + 48,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkInvalidate(qp, (void *)0x2fd,
							  NULL,
							  NDK_OP_FLAG_DEFER),
			STATUS_INVALID_PARAMETER);
	ndk_penv_expect_sends(test, e, pe, 0x203, 1, 3, 2048 + 48);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_expect_none(test, e, NdkOperationTypeInvalidate);
	ndk_penv_free(test, pe);
}

/*
 * A full batch goes to the device without waiting for the end of its
 * chain; the next deferred requests start a new one.
 */
static void ndk_post_defer_full_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 32, 0, e->cq);
	int i;

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, NDK_DEFER_MAX + 3);
	ndk_penv_defer(test, pe, NDK_DEFER_MAX);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(pe->p.aqp)->nheld, 0U);
	ndk_penv_expect_sends(test, e, pe, 0x200, NDK_DEFER_MAX, 0, 2048);
	for (i = 0; i < 2; i++)
		KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x300, i, 2048,
						    NDK_OP_FLAG_DEFER),
				STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(pe->p.aqp)->nheld, 2U);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x300, 2, 2048, 0),
			STATUS_SUCCESS);
	ndk_penv_expect_sends(test, e, pe, 0x300, 3, NDK_DEFER_MAX, 2048);
	ndk_penv_free(test, pe);
}

/*
 * On a queue shallower than a batch, the batch is full at the queue's
 * depth: the request that fills the queue sends the chain.
 */
static void ndk_post_defer_shallow_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 4, 0, e->cq);

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 4);
	ndk_penv_defer(test, pe, 3);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(pe->p.aqp)->nheld, 3U);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 3, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(pe->p.aqp)->nheld, 0U);
	ndk_penv_expect_sends(test, e, pe, 0x200, 4, 0, 2048);
	ndk_penv_free(test, pe);
}

/*
 * NdkFlush with deferred requests held: they go to the device before the
 * QP stops and complete like every outstanding send (cancelled, or on
 * iWARP possibly sent); afterwards nothing is taken.
 */
static void ndk_post_defer_flush_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	NDK_QP *qp = pe->p.aqp;
	NDK_RESULT_EX r[2];
	int n;

	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 0, 512,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 1, 512,
					    NDK_OP_FLAG_DEFER |
					    NDK_OP_FLAG_SILENT_SUCCESS),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(qp)->nheld, 2U);
	qp->Dispatch->NdkFlush(qp);
	/* Both wait for a receive on RoCE, so both are cancelled. */
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x200);
	if (!ndk_test_iwarp() || r[0].Status != STATUS_SUCCESS)
		KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	msleep(100);
	n = 0;
	while (e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r[1], 1)) {
		KUNIT_EXPECT_PTR_EQ(test, r[1].RequestContext, (void *)0x201);
		KUNIT_EXPECT_EQ(test, r[1].Status, STATUS_CANCELLED);
		n++;
	}
	/*
	 * The silent one completes only with an error; iWARP may have sent
	 * it successfully before the flush (no receiver-not-ready wait).
	 */
	if (ndk_test_iwarp())
		KUNIT_EXPECT_LE(test, n, 1);
	else
		KUNIT_EXPECT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(qp)->nheld, 0U);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x210, 0, 512,
					    NDK_OP_FLAG_DEFER),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x210, 1, 512, 0),
			STATUS_CONNECTION_INVALID);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_free(test, pe);
}

/* A fast-register MR of @pages pages, initialized for local access. */
static NDK_MR *ndk_post_fast_mr(struct kunit *test, struct ndk_cenv *e,
				ULONG pages)
{
	NDK_MR *unused = NULL, *mr;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateMr(e->pd, TRUE, ndk_test_create_cb, &w,
					  &unused);
	mr = container_of(ndk_created(test, st, &w, unused), NDK_MR, Header);
	ndk_wait_init(&w);
	st = mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, FALSE,
						       ndk_test_request_cb,
						       &w);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	return mr;
}

/*
 * The deferral scheme's own example: a fast registration deferred, and
 * the send that gathers from the new region ending the chain. The send
 * carries the region's bytes only if the registration went first.
 */
static void ndk_post_defer_fast_register_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	NDK_RESULT_EX all[3], r[1];
	NDK_QP *qp = pe->p.aqp;
	ULONG size = 0, fbo = 0;
	struct ndk_mdl mdl;
	NDK_SGE sge;
	NDK_MR *mr;
	u8 *va;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, page);
	va = page_address(page);
	for (i = 0; i < 32; i++)
		va[100 + i] = (u8)(i * 3 + 1);
	ndk_mdl_init_pages(&mdl, &page, 1, 100, 32);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, &mdl, 32, NULL,
							  NULL, NULL, &size,
							  &fbo),
			STATUS_BUFFER_TOO_SMALL);
	lam = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lam);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, &mdl, 32, NULL,
							  NULL, lam, &size,
							  &fbo),
			STATUS_SUCCESS);
	mr = ndk_post_fast_mr(test, e, 1);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 1);

	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkFastRegister(qp, (void *)0x31,
							    mr,
							    lam->AdapterPageCount,
							    lam->AdapterPageArray,
							    fbo, 32,
							    (PVOID)(uintptr_t)mdl.va,
							    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(qp)->nheld, 1U);
	sge.VirtualAddress = (PVOID)(uintptr_t)mdl.va;
	sge.Length = 32;
	sge.MemoryRegionToken = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x32, &sge, 1,
						    0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, all, 3));
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 3,
					     NdkOperationTypeFastRegister, r),
			1);
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x31);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 3, NdkOperationTypeSend, r),
			1);
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x32);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 3, NdkOperationTypeReceive,
					     r), 1);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[0].BytesTransferred, 32U);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	NDK_EXPECT_MEMEQ(test, pe->buf, va + 100, 32);

	ndk_penv_free(test, pe);
	ndk_test_close(test, &mr->Header, mr->Dispatch->NdkCloseMr);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam);
	__free_page(page);
}

static void ndk_pattern(u8 *p, u32 n, u8 seed)
{
	u32 i;

	for (i = 0; i < n; i++)
		p[i] = (u8)(seed + i * 7);
}

/* The result with context @ctx among @r[0..@n), or NULL. */
static NDK_RESULT_EX *ndk_result_ex(NDK_RESULT_EX *r, int n, uintptr_t ctx)
{
	int i;

	for (i = 0; i < n; i++)
		if (r[i].RequestContext == (void *)ctx)
			return &r[i];
	return NULL;
}

/* The result of @ctx among @r[0..@n) has @status and @type. */
static void ndk_expect_result(struct kunit *test, NDK_RESULT_EX *r, int n,
			      uintptr_t ctx, NTSTATUS status,
			      NDK_OPERATION_TYPE type)
{
	NDK_RESULT_EX *x = ndk_result_ex(r, n, ctx);

	KUNIT_ASSERT_NOT_NULL_MSG(test, x, "no result for %lx", ctx);
	KUNIT_EXPECT_EQ_MSG(test, x->Status, status, "result %lx", ctx);
	KUNIT_EXPECT_EQ_MSG(test, x->Type, (ULONG)type, "result %lx", ctx);
}

/*
 * Inline sends and writes take their bytes at the call: the source is
 * overwritten as soon as the call returns and the peer still gets the
 * original. An inline request is never held for NDK_OP_FLAG_DEFER,
 * since its bytes could not wait; one beyond the QP's inline size is
 * refused.
 */
static void ndk_post_inline_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 8, 64, e->cq);
	struct ndk_pmem *src = ndk_pmem_new(test, e, 0);
	struct ndk_pmem *dst = ndk_pmem_new(test, e,
					    NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	NDK_SGE two[2] = { ndk_pmem_sge(src, 0, 20), ndk_pmem_sge(src, 40, 10) };
	NDK_SGE sge;
	NDK_QP *qp = pe->p.aqp;
	NDK_RESULT_EX r[7];
	u8 want[256];

	ndk_penv_fill(pe);
	ndk_pattern(src->buf, 256, 9);
	memcpy(want, src->buf, sizeof(want));
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 3);

	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x201, two, 2,
						    NDK_OP_FLAG_INLINE),
			STATUS_SUCCESS);
	memset(src->buf, 0xee, 64);
	sge = ndk_pmem_sge(src, 64, 48);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, (void *)0x202, &sge, 1,
						     ndk_pmem_va(dst, 100),
						     ndk_pmem_rtok(dst),
						     NDK_OP_FLAG_INLINE),
			STATUS_SUCCESS);
	memset(src->buf + 64, 0xee, 48);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x203, 0, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	sge = ndk_pmem_sge(src, 128, 16);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x204, &sge, 1,
						    NDK_OP_FLAG_INLINE |
						    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	memset(src->buf + 128, 0xee, 16);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(qp)->nheld, 0U);
	sge = ndk_pmem_sge(src, 0, 65);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x2ff, &sge, 1,
						    NDK_OP_FLAG_INLINE),
			STATUS_INVALID_PARAMETER);

	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 7));
	ndk_expect_result(test, r, 7, 0x201, STATUS_SUCCESS,
			  NdkOperationTypeSend);
	ndk_expect_result(test, r, 7, 0x202, STATUS_SUCCESS,
			  NdkOperationTypeWrite);
	ndk_expect_result(test, r, 7, 0x203, STATUS_SUCCESS,
			  NdkOperationTypeSend);
	ndk_expect_result(test, r, 7, 0x204, STATUS_SUCCESS,
			  NdkOperationTypeSend);
	ndk_expect_result(test, r, 7, 0x100, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	ndk_expect_result(test, r, 7, 0x101, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	ndk_expect_result(test, r, 7, 0x102, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	KUNIT_EXPECT_EQ(test, ndk_result_ex(r, 7, 0x100)->BytesTransferred,
			30U);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	NDK_EXPECT_MEMEQ(test, pe->buf, want, 20);
	NDK_EXPECT_MEMEQ(test, pe->buf + 20, want + 40, 10);
	NDK_EXPECT_MEMEQ(test, pe->buf + 32, pe->buf + 2048, 16);
	NDK_EXPECT_MEMEQ(test, pe->buf + 64, want + 128, 16);
	/* The write was placed before the send behind it arrived. */
	NDK_EXPECT_MEMEQ(test, dst->buf + 100, want + 64, 48);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);

	ndk_penv_free(test, pe);
	ndk_pmem_free(test, src);
	ndk_pmem_free(test, dst);
}

/*
 * Send @len bytes from the privileged buffer at @src to a receive at
 * @dst, and wait for both: behind RDMA writes on the same QP, the
 * receive completes only once they are placed.
 */
static void ndk_penv_roundtrip(struct kunit *test, struct ndk_cenv *e,
			       struct ndk_penv *pe, u32 src, u32 dst, u32 len)
{
	NDK_SGE rs = ndk_penv_sge(pe, dst, len), ss = ndk_penv_sge(pe, src, len);
	NDK_RESULT_EX r[2];

	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x7001,
							      &rs, 1),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, pe->p.aqp->Dispatch->NdkSend(pe->p.aqp,
							   (void *)0x7002,
							   &ss, 1, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 2));
	ndk_expect_result(test, r, 2, 0x7001, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	ndk_expect_result(test, r, 2, 0x7002, STATUS_SUCCESS,
			  NdkOperationTypeSend);
}

/*
 * RDMA write gathered from three SGEs, and RDMA read scattered into two
 * where the adapter allows that many (MaxReadRequestSge; siw reads into
 * one SGE only, so there the read is refused inline and never
 * completes).
 */
static void ndk_post_rdma_sge_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	struct ndk_pmem *l = ndk_pmem_new(test, e,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					  NDK_MR_FLAG_RDMA_READ_SINK);
	struct ndk_pmem *rm = ndk_pmem_new(test, e,
					   NDK_MR_FLAG_ALLOW_REMOTE_READ |
					   NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	NDK_SGE ws[3] = { ndk_pmem_sge(l, 0, 100), ndk_pmem_sge(l, 200, 100),
			  ndk_pmem_sge(l, 500, 56) };
	NDK_SGE rs[2] = { ndk_pmem_sge(l, 2000, 100),
			  ndk_pmem_sge(l, 2200, 100) };
	NDK_QP *qp = pe->p.aqp;
	NDK_RESULT_EX r[1];
	u8 want[256];
	NTSTATUS st;

	ndk_pattern(l->buf, 1024, 3);
	memcpy(want, l->buf, 100);
	memcpy(want + 100, l->buf + 200, 100);
	memcpy(want + 200, l->buf + 500, 56);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, (void *)0x401, ws, 3,
						     ndk_pmem_va(rm, 1000),
						     ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
	ndk_expect_result(test, r, 1, 0x401, STATUS_SUCCESS,
			  NdkOperationTypeWrite);
	ndk_penv_roundtrip(test, e, pe, 0, 512, 16);
	NDK_EXPECT_MEMEQ(test, rm->buf + 1000, want, 256);

	if (ndk_test_iwarp())
		KUNIT_EXPECT_EQ(test, info->MaxReadRequestSge, 1U);
	else
		KUNIT_EXPECT_GE(test, info->MaxReadRequestSge, 2U);
	st = qp->Dispatch->NdkRead(qp, (void *)0x402, rs, 2,
				   ndk_pmem_va(rm, 1000), ndk_pmem_rtok(rm), 0);
	if (info->MaxReadRequestSge < 2) {
		KUNIT_EXPECT_EQ(test, st, STATUS_INVALID_PARAMETER);
		ndk_penv_expect_none(test, e, NdkOperationTypeRead);
	} else {
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
		KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
		ndk_expect_result(test, r, 1, 0x402, STATUS_SUCCESS,
				  NdkOperationTypeRead);
		KUNIT_EXPECT_EQ(test, r[0].BytesTransferred, 200U);
		NDK_EXPECT_MEMEQ(test, l->buf + 2000, want, 100);
		NDK_EXPECT_MEMEQ(test, l->buf + 2200, want + 100, 100);
	}
	ndk_penv_free(test, pe);
	ndk_pmem_free(test, l);
	ndk_pmem_free(test, rm);
}

/*
 * A read with NDK_OP_FLAG_READ_FENCE, on an idle queue and behind a read,
 * gets its bytes; siw refused it at once on an idle queue, and failed the
 * connection when it came to it behind another. An inline send that
 * invalidates is refused at once where the device cannot send it (siw),
 * rather than failing the connection later.
 */
static void ndk_post_fenced_read_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 8, 64, e->cq);
	struct ndk_pmem *m = ndk_pmem_new(test, e,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					  NDK_MR_FLAG_ALLOW_REMOTE_READ |
					  NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
					  NDK_MR_FLAG_RDMA_READ_SINK);
	NDK_QP *qp = pe->p.aqp;
	NDK_RESULT r[3];
	NTSTATUS st;
	NDK_SGE sge;
	int i;

	ndk_pattern(m->buf, 256, 9);
	for (i = 0; i < 3; i++) {
		sge = ndk_pmem_sge(m, 1024 + 64 * i, 64);
		st = qp->Dispatch->NdkRead(qp, (void *)(uintptr_t)(0x501 + i),
					   &sge, 1, ndk_pmem_va(m, 64 * i),
					   ndk_pmem_rtok(m),
					   i ? NDK_OP_FLAG_READ_FENCE : 0);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
		if (!i) {
			KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 1),
					1U);
			KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
		}
	}
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2), 2U);
	for (i = 0; i < 2; i++)
		KUNIT_EXPECT_EQ_MSG(test, r[i].Status, STATUS_SUCCESS,
				    "read %p", r[i].RequestContext);
	NDK_EXPECT_MEMEQ(test, m->buf + 1024, m->buf, 192);

	sge = ndk_pmem_sge(m, 0, 8);
	if (ndk_test_iwarp()) {
		st = qp->Dispatch->NdkSendAndInvalidate(qp, NULL, &sge, 1,
							NDK_OP_FLAG_INLINE,
							ndk_pmem_rtok(m));
		KUNIT_EXPECT_EQ(test, st, STATUS_NOT_SUPPORTED);
	}
	ndk_penv_free(test, pe);
	ndk_pmem_free(test, m);
}

/*
 * NDK_OP_FLAG_READ_FENCE: a send that gathers from the sink of the read
 * before it waits for the read's data, so the peer receives what was
 * read, not what the sink held before.
 */
static void ndk_post_read_fence_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	struct ndk_pmem *l = ndk_pmem_new(test, e,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					  NDK_MR_FLAG_RDMA_READ_SINK);
	struct ndk_pmem *rm = ndk_pmem_new(test, e,
					   NDK_MR_FLAG_ALLOW_REMOTE_READ);
	NDK_SGE sink = ndk_pmem_sge(l, 0, 256);
	NDK_SGE rcv = ndk_penv_sge(pe, 0, 256);
	NDK_QP *qp = pe->p.aqp;
	NDK_RESULT_EX r[3];

	ndk_pattern(rm->buf, 256, 77);
	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x100,
							      &rcv, 1),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, (void *)0x501, &sink, 1,
						    ndk_pmem_va(rm, 0),
						    ndk_pmem_rtok(rm), 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x502, &sink, 1,
						    NDK_OP_FLAG_READ_FENCE),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 3));
	ndk_expect_result(test, r, 3, 0x501, STATUS_SUCCESS,
			  NdkOperationTypeRead);
	ndk_expect_result(test, r, 3, 0x502, STATUS_SUCCESS,
			  NdkOperationTypeSend);
	ndk_expect_result(test, r, 3, 0x100, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	NDK_EXPECT_MEMEQ(test, pe->buf, rm->buf, 256);
	ndk_penv_free(test, pe);
	ndk_pmem_free(test, l);
	ndk_pmem_free(test, rm);
}

/*
 * MaxTransferLength and MaxReadRequestSge are checked inline, for
 * receives and SRQ receives too: STATUS_INVALID_BUFFER_SIZE or
 * STATUS_INVALID_PARAMETER, and no completion.
 */
static void ndk_post_limits_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	NDK_QP *qp = pe->p.aqp;
	u32 half = info->MaxTransferLength / 2 + 1;
	NDK_SGE big[3] = { ndk_penv_sge(pe, 0, half), ndk_penv_sge(pe, 0, half),
			   ndk_penv_sge(pe, 0, 8) };
	NDK_SGE small[4] = { ndk_penv_sge(pe, 0, 8), ndk_penv_sge(pe, 8, 8),
			     ndk_penv_sge(pe, 16, 8), ndk_penv_sge(pe, 24, 8) };
	NDK_SRQ *srq, *unused = NULL;
	struct ndk_wait w;
	NDK_RESULT r;
	NTSTATUS st;

	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, NULL, big, 2, 0),
			STATUS_INVALID_BUFFER_SIZE);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, NULL, big, 2, 0, 0,
						     NDK_OP_FLAG_DEFER),
			STATUS_INVALID_BUFFER_SIZE);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSendAndInvalidate(qp, NULL, big,
								 2, 0, 1),
			STATUS_INVALID_BUFFER_SIZE);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, NULL, big, 2),
			STATUS_INVALID_BUFFER_SIZE);
	if (info->MaxReadRequestSge >= 2)
		KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, NULL, big, 2, 0,
							    0, 0),
				STATUS_INVALID_BUFFER_SIZE);
	/*
	 * One SGE more than the read limit, where the QP takes that many;
	 * rxe's limit is above the QP's four.
	 */
	if (info->MaxReadRequestSge < 4)
		KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, NULL, small,
							    info->MaxReadRequestSge + 1,
							    0, 0, 0),
				STATUS_INVALID_PARAMETER);
	else
		KUNIT_EXPECT_FALSE(test, ndk_test_iwarp());

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, 4, 2, 0, NULL, NULL, NULL,
					   ndk_test_create_cb, &w, &unused);
	srq = container_of(ndk_created(test, st, &w, unused), NDK_SRQ,
			   Header);
	KUNIT_EXPECT_EQ(test, srq->Dispatch->NdkSrqReceive(srq, NULL, big, 2),
			STATUS_INVALID_BUFFER_SIZE);
	KUNIT_EXPECT_EQ(test, srq->Dispatch->NdkSrqReceive(srq, NULL, big, 3),
			STATUS_INVALID_PARAMETER);
	msleep(50);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, &r, 1),
			0U);
	ndk_test_close(test, &srq->Header, srq->Dispatch->NdkCloseSrq);
	ndk_penv_free(test, pe);
}

/* After NdkDisconnect no initiator request is taken, deferred or not. */
static void ndk_post_disconnected_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	NDK_SGE sge = ndk_penv_sge(pe, 0, 8);
	NDK_QP *qp = pe->p.aqp;
	struct ndk_wait dw;

	ndk_wait_init(&dw);
	KUNIT_ASSERT_EQ(test, pe->p.c->Dispatch->NdkDisconnect(pe->p.c,
							       ndk_test_request_cb,
							       &dw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, NULL, &sge, 1, 0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, NULL, &sge, 1,
						    NDK_OP_FLAG_DEFER),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkWrite(qp, NULL, &sge, 1, 0, 0,
						     0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, NULL, &sge, 1, 0, 0,
						    NDK_OP_FLAG_DEFER),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(qp)->nheld, 0U);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_expect_none(test, e, NdkOperationTypeWrite);
	ndk_penv_expect_none(test, e, NdkOperationTypeRead);
	ndk_penv_free(test, pe);
}

struct ndk_post_notify {
	atomic_t count;
	struct completion done;
};

static void ndk_post_notify_cb(PVOID Context, NTSTATUS CqStatus)
{
	struct ndk_post_notify *n = Context;

	atomic_inc(&n->count);
	complete(&n->done);
}

/*
 * NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT with the receiver's CQ armed for
 * solicited completions: an ordinary send's receive does not notify,
 * the solicited one does, once. siw never notifies for a receive under
 * a solicited arm.
 */
static void ndk_post_solicited_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_post_notify n;
	struct ndk_penv *pe;
	NDK_CQ *cq, *unused = NULL;
	NDK_RESULT_EX r[1];
	struct ndk_wait w;
	NTSTATUS st;

	atomic_set(&n.count, 0);
	init_completion(&n.done);
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateCq(e->a, 16, ndk_post_notify_cb, &n,
					 NULL, ndk_test_create_cb, &w, &unused);
	cq = container_of(ndk_created(test, st, &w, unused), NDK_CQ, Header);
	pe = ndk_penv_new_qp(test, e, true, 8, 0, cq);
	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 2);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_SOLICITED);

	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 0, 2048, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(cq, r, 1));
	ndk_expect_result(test, r, 1, 0x100, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&n.count), 0);

	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 1, 2048,
					    NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
			STATUS_SUCCESS);
	/* siw ignores the solicited bit of receives (see deviations.rst). */
	if (!ndk_test_iwarp())
		KUNIT_EXPECT_NE(test,
				wait_for_completion_timeout(&n.done,
							    NDK_TEST_TIMEOUT),
				0UL);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(cq, r, 1));
	ndk_expect_result(test, r, 1, 0x101, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&n.count), ndk_test_iwarp() ? 0 : 1);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	NDK_EXPECT_MEMEQ(test, pe->buf + 32, pe->buf + 2048 + 16, 16);
	ndk_penv_free(test, pe);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/*
 * A CQ armed with NDK_CQ_NOTIFY_ERRORS is notified, once, for an error
 * completion, here of an unsignaled (SILENT_SUCCESS) RDMA request to a
 * token the peer never gave out: unsignaled, it still completes, with an
 * error. An iWARP write fails only at the peer, so a read stands in.
 * (ERRORS also wakes for successes: see deviations.rst.)
 */
static void ndk_post_errors_arm_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_qpspec q = { .depth = 8, .sge = { 4, 4 }, .pcq = e->cq };
	struct ndk_post_notify n;
	NDK_CQ *cq, *unused = NULL;
	struct ndk_penv *pe;
	NDK_RESULT_EX r[2];
	struct ndk_wait w;
	NDK_SGE sge;
	NTSTATUS st;
	NDK_QP *qp;

	atomic_set(&n.count, 0);
	init_completion(&n.done);
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateCq(e->a, 16, ndk_post_notify_cb, &n,
					 NULL, ndk_test_create_cb, &w, &unused);
	cq = container_of(ndk_created(test, st, &w, unused), NDK_CQ, Header);
	q.acq = cq;
	pe = ndk_penv_new_spec(test, e, true, &q);
	qp = pe->p.aqp;
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ERRORS);
	sge = ndk_penv_sge(pe, 0, 64);
	if (ndk_test_iwarp())
		st = qp->Dispatch->NdkRead(qp, (void *)0x300, &sge, 1,
					   pe->dma + 512, 0x5a5a5a,
					   NDK_OP_FLAG_SILENT_SUCCESS);
	else
		st = qp->Dispatch->NdkWrite(qp, (void *)0x300, &sge, 1,
					    pe->dma + 512, 0x5a5a5a,
					    NDK_OP_FLAG_SILENT_SUCCESS);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&n.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(cq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x300);
	KUNIT_EXPECT_NE(test, r[0].Status, STATUS_SUCCESS);
	/* siw flushes a read that the peer's TERMINATE ended. */
	if (!ndk_test_iwarp())
		KUNIT_EXPECT_NE(test, r[0].Status, STATUS_CANCELLED);
	KUNIT_EXPECT_EQ(test, r[0].Type, ndk_test_iwarp() ?
			(ULONG)NdkOperationTypeRead :
			(ULONG)NdkOperationTypeWrite);
	/*
	 * Once per arm: a send on the failed QP is refused, or completes
	 * flushed, without another notification.
	 */
	st = qp->Dispatch->NdkSend(qp, (void *)0x301, &sge, 1, 0);
	if (st == STATUS_SUCCESS) {
		KUNIT_ASSERT_TRUE(test, ndk_penv_poll(cq, r, 1));
		KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x301);
		KUNIT_EXPECT_NE(test, r[0].Status, STATUS_SUCCESS);
	}
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&n.count), 1);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResultsEx(cq, r, 2), 0UL);
	ndk_penv_free(test, pe);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

#define NDK_RACE_POSTS	24

/**
 * struct ndk_race - a poster on another CPU racing with NdkFlush
 * @pe: the connection
 * @ok: which posts returned STATUS_SUCCESS
 * @posted: how many did
 * @started: the poster runs
 * @done: the poster is finished
 */
struct ndk_race {
	struct ndk_penv *pe;
	bool ok[NDK_RACE_POSTS];
	int posted;
	struct completion started;
	struct completion done;
};

/* Every fourth send ends a deferred chain; a failure ends one as well. */
static int ndk_race_poster(void *arg)
{
	struct ndk_race *race = arg;
	NTSTATUS st;
	int i;

	complete(&race->started);
	for (i = 0; i < NDK_RACE_POSTS; i++) {
		st = ndk_penv_send(race->pe, 0x1000, i, 2048,
				   i % 4 == 3 ? 0 : NDK_OP_FLAG_DEFER);
		if (st == STATUS_SUCCESS) {
			race->ok[i] = true;
			race->posted++;
		} else if (st == STATUS_CONNECTION_INVALID) {
			break;
		}
		usleep_range(200, 400);
	}
	complete(&race->done);
	return 0;
}

/*
 * NdkFlush from one CPU while another posts deferred and ordinary sends:
 * every send that returned STATUS_SUCCESS completes exactly once, with
 * success or as cancelled, and no other does.
 */
static void ndk_post_flush_race_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_race *race = kunit_kzalloc(test, sizeof(*race), GFP_KERNEL);
	NDK_RESULT_EX *r = kunit_kcalloc(test, NDK_RACE_POSTS, sizeof(*r),
					 GFP_KERNEL);
	struct task_struct *t;
	unsigned long flags;
	int i, k, seen[NDK_RACE_POSTS] = {};

	KUNIT_ASSERT_NOT_NULL(test, race);
	KUNIT_ASSERT_NOT_NULL(test, r);
	race->pe = ndk_penv_new_qp(test, e, true, 64, 0, e->cq);
	ndk_penv_fill(race->pe);
	ndk_penv_receives(test, race->pe, race->pe->p.pqp, 0x100,
			  NDK_RACE_POSTS);
	init_completion(&race->started);
	init_completion(&race->done);
	t = kthread_create(ndk_race_poster, race, "ndk_race");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	kthread_bind(t, ndk_test_other_cpu(test));
	wake_up_process(t);
	wait_for_completion(&race->started);
	usleep_range(5000, 6000);
	spin_lock_irqsave(&ndk_test_lock, flags);
	race->pe->p.aqp->Dispatch->NdkFlush(race->pe->p.aqp);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&race->done,
							  NDK_TEST_TIMEOUT),
			0UL);

	k = 0;
	while (k < race->posted) {
		NDK_RESULT_EX x;

		if (!ndk_penv_poll(e->cq, &x, 1))
			break;
		if (x.Type == NdkOperationTypeSend)
			r[k++] = x;
	}
	KUNIT_EXPECT_EQ(test, k, race->posted);
	for (i = 0; i < k; i++) {
		uintptr_t c = (uintptr_t)r[i].RequestContext - 0x1000;

		KUNIT_ASSERT_LT(test, c, (uintptr_t)NDK_RACE_POSTS);
		KUNIT_EXPECT_TRUE(test, race->ok[c]);
		seen[c]++;
		if (r[i].Status != STATUS_SUCCESS)
			KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
	}
	for (i = 0; i < NDK_RACE_POSTS; i++)
		KUNIT_EXPECT_LE(test, seen[i], 1);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	KUNIT_EXPECT_EQ(test, ndk_post_priv(race->pe->p.aqp)->nheld, 0U);
	ndk_penv_free(test, race->pe);
}

/*
 * A request the driver refuses fails with the driver's status and leaves
 * nothing behind: its slot is free, the queue's head where it was, the
 * posted count as it was. The QP is marked connected behind the
 * driver's back, which refuses to send on a QP that is not.
 */
static void ndk_post_refused_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	NDK_SGE sge = { .Length = 0 };
	u64 posted = 0;
	u32 head;
	int cpu;

	for_each_possible_cpu(cpu)
		posted += per_cpu_ptr(q->stats, cpu)->v[NDK_STAT_POSTED];
	head = q->sq.head;
	WRITE_ONCE(q->connected, true);
	KUNIT_EXPECT_NE(test, qp->Dispatch->NdkSend(qp, (void *)1, &sge, 1, 0),
			STATUS_SUCCESS);
	WRITE_ONCE(q->connected, false);
	KUNIT_EXPECT_EQ(test, q->sq.head, head);
	KUNIT_EXPECT_EQ(test, q->sq.state[head & q->sq.mask], NDK_SLOT_FREE);
	for_each_possible_cpu(cpu)
		posted -= per_cpu_ptr(q->stats, cpu)->v[NDK_STAT_POSTED];
	KUNIT_EXPECT_EQ(test, posted, 0ULL);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
}

/* A driver double's post_send that takes every request and runs none. */
static int ndk_post_swallow(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad)
{
	return 0;
}

/* One that refuses every request. */
static int ndk_post_refuse(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad)
{
	*bad = wr;
	return -ENOMEM;
}

/* The queue fills up last: a full queue refuses before anything else. */
enum { NDK_REFUSE_GOING, NDK_REFUSE_DRIVER, NDK_REFUSE_FULL, NDK_REFUSALS };

/* Post initiator request @op (send, send-and-invalidate, write, read). */
static NTSTATUS ndk_post_op(NDK_QP *qp, int op, void *ctx, NDK_SGE *sge,
			    struct ndk_pmem *m)
{
	switch (op) {
	case 0:
		return qp->Dispatch->NdkSend(qp, ctx, sge, 1, 0);
	case 1:
		return qp->Dispatch->NdkSendAndInvalidate(qp, ctx, sge, 1, 0,
							  ndk_pmem_rtok(m));
	case 2:
		return qp->Dispatch->NdkWrite(qp, ctx, sge, 1,
					      ndk_pmem_va(m, 64),
					      ndk_pmem_rtok(m), 0);
	default:
		return qp->Dispatch->NdkRead(qp, ctx, sge, 1,
					     ndk_pmem_va(m, 64),
					     ndk_pmem_rtok(m), 0);
	}
}

/*
 * Every kind of initiator request meets the same refusals, each with its
 * status, and takes nothing: a driver being unloaded
 * (STATUS_DEVICE_REMOVED), a driver that refuses the request (its
 * errno's status) and a queue full of requests a driver double took and
 * never ran (STATUS_INSUFFICIENT_RESOURCES). The requests the double took come back cancelled
 * when the QP closes, once each. The QP is marked connected behind the
 * driver's back, as in ndk_post_refused_test().
 */
static void ndk_post_refusals_test(struct kunit *test)
{
	static const NTSTATUS want[NDK_REFUSALS] = {
		STATUS_DEVICE_REMOVED, STATUS_INSUFFICIENT_RESOURCES,
		STATUS_INSUFFICIENT_RESOURCES,
	};
	static const char * const ops[] = {
		"send", "send-and-invalidate", "write", "read",
	};
	static const enum module_state going = MODULE_STATE_GOING;
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_pmem *m = ndk_pmem_new(test, e,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					  NDK_MR_FLAG_ALLOW_REMOTE_READ |
					  NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	struct ndk_verbs_double *vd = kunit_kzalloc(test, sizeof(*vd),
						    GFP_KERNEL);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	const enum module_state *driver = q->driver;
	NDK_SGE sge = ndk_pmem_sge(m, 0, 16);
	u32 taken = 0, head, got;
	int cond, op;
	NDK_RESULT_EX r;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, vd);
	ndk_verbs_double_insert(vd, q);
	WRITE_ONCE(q->connected, true);
	for (cond = 0; cond < NDK_REFUSALS; cond++) {
		vd->dev.ops.post_send = cond == NDK_REFUSE_DRIVER ?
					ndk_post_refuse : ndk_post_swallow;
		if (cond == NDK_REFUSE_FULL) {
			while (ndk_post_op(qp, 0, (void *)(uintptr_t)(taken + 1),
					   &sge, m) == STATUS_SUCCESS)
				taken++;
			KUNIT_EXPECT_GE(test, taken, 8U);
		}
		if (cond == NDK_REFUSE_GOING)
			q->driver = &going;
		head = q->sq.head;
		for (op = 0; op < ARRAY_SIZE(ops); op++) {
			st = ndk_post_op(qp, op, (void *)0xbad, &sge, m);
			KUNIT_EXPECT_EQ_MSG(test, st, want[cond], "%s, refusal %d",
					    ops[op], cond);
		}
		KUNIT_EXPECT_EQ(test, q->sq.head, head);
		q->driver = driver;
	}
	WRITE_ONCE(q->connected, false);
	ndk_verbs_double_remove(vd, q);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	for (got = 0; got < taken && ndk_penv_poll(e->cq, &r, 1); got++) {
		KUNIT_EXPECT_PTR_EQ(test, r.RequestContext,
				    (void *)(uintptr_t)(got + 1));
		KUNIT_EXPECT_EQ(test, r.Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, got, taken);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1),
			0U);
	ndk_pmem_free(test, m);
}

/**
 * struct ndk_post_window - a driver double that answers a send late
 * @vd: the double; its post_send is ndk_post_window_send()
 * @qp: the NDK QP posting through it
 * @cq: its CQ
 * @r: what the CQ reported while the driver held the send
 * @got: how many results @r holds
 */
struct ndk_post_window {
	struct ndk_verbs_double vd;
	NDK_QP *qp;
	NDK_CQ *cq;
	NDK_RESULT_EX r[2];
	ULONG got;
};

/*
 * Refuse the send, but only after the QP failed (NdkFlush) and the CQ
 * had every chance to report what ndk's sweep holds for it.
 */
static int ndk_post_window_send(struct ib_qp *ibqp,
				const struct ib_send_wr *wr,
				const struct ib_send_wr **bad)
{
	struct ndk_post_window *w = container_of(ibqp, struct ndk_post_window,
						 vd.ibqp);
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	w->qp->Dispatch->NdkFlush(w->qp);
	while (!w->got && time_before(jiffies, end)) {
		w->got = w->cq->Dispatch->NdkGetCqResultsEx(w->cq, w->r,
							    ARRAY_SIZE(w->r));
		if (!w->got)
			usleep_range(1000, 2000);
	}
	*bad = wr;
	return -ENOMEM;
}

/*
 * A send that the QP's failure catches between taking its slot and the
 * driver's refusal still has one outcome: the refusal, or the result the
 * sweep reported for it meanwhile, never both. The sweep runs at once
 * (sweep_ms 0) while the driver double holds the send.
 */
static void ndk_post_refused_swept_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	struct ndk_post_window *w = kzalloc(sizeof(*w), GFP_KERNEL);
	NDK_SGE sge = { .Length = 0 };
	unsigned int ms;
	NDK_RESULT_EX r;
	NTSTATUS st;
	ULONG later;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->qp = qp;
	w->cq = e->cq;
	ms = ndk_sweep_set_ms(0);
	ndk_verbs_double_insert(&w->vd, q);
	w->vd.dev.ops.post_send = ndk_post_window_send;
	WRITE_ONCE(q->connected, true);
	st = qp->Dispatch->NdkSend(qp, (void *)0x5e4d, &sge, 1, 0);
	ndk_verbs_double_remove(&w->vd, q);
	/* The sweep has nothing more to give. */
	msleep(20);
	later = e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1);
	ndk_sweep_set_ms(ms);
	KUNIT_EXPECT_EQ(test, later, 0U);
	KUNIT_EXPECT_LE(test, w->got, 1U);
	KUNIT_EXPECT_EQ_MSG(test, w->got + (st != STATUS_SUCCESS), 1U,
			    "post returned %#x, %u results", st, w->got);
	if (w->got) {
		KUNIT_EXPECT_PTR_EQ(test, w->r[0].RequestContext,
				    (void *)0x5e4d);
		KUNIT_EXPECT_EQ(test, w->r[0].Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, q->sq.retired, q->sq.posted);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	kfree(w);
}

/*
 * A full receive queue, SRQ or initiator queue refuses the next request
 * with STATUS_INSUFFICIENT_RESOURCES, which never completes; every
 * request taken before it does.
 */
static void ndk_post_queue_full_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	struct ndk_pmem *rm = ndk_pmem_new(test, e,
					   NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	NDK_SGE four[4] = { ndk_penv_sge(pe, 0, PAGE_SIZE),
			    ndk_penv_sge(pe, 0, PAGE_SIZE),
			    ndk_penv_sge(pe, 0, PAGE_SIZE),
			    ndk_penv_sge(pe, 0, PAGE_SIZE) };
	NDK_SGE sge = ndk_penv_sge(pe, 0, 32);
	NDK_QP *qp = pe->p.aqp;
	NDK_SRQ *srq, *unused = NULL;
	unsigned long flags;
	NDK_RESULT_EX x;
	struct ndk_wait w;
	NTSTATUS st;
	int n, k, got;

	/* Receives on the active QP, to which nothing is sent. */
	for (n = 0; n < 4096; n++) {
		st = qp->Dispatch->NdkReceive(qp, (void *)(uintptr_t)(0x10000 + n),
					      &sge, 1);
		if (st)
			break;
	}
	KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_GE(test, n, 8);

	/*
	 * 16 KiB writes, posted with interrupts off faster than the
	 * device can send them.
	 */
	spin_lock_irqsave(&ndk_test_lock, flags);
	for (k = 0; k < 1024; k++) {
		st = qp->Dispatch->NdkWrite(qp, (void *)(uintptr_t)(0x20000 + k),
					    four, 4, ndk_pmem_va(rm, 0),
					    ndk_pmem_rtok(rm), 0);
		if (st)
			break;
	}
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_GE(test, k, 8);
	for (got = 0; got < k && ndk_penv_poll(e->cq, &x, 1); got++) {
		KUNIT_EXPECT_EQ(test, x.Type, (ULONG)NdkOperationTypeWrite);
		KUNIT_EXPECT_EQ(test, x.Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, x.RequestContext,
				    (void *)(uintptr_t)(0x20000 + got));
	}
	KUNIT_EXPECT_EQ(test, got, k);

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, 4, 1, 0, NULL, NULL, NULL,
					   ndk_test_create_cb, &w, &unused);
	srq = container_of(ndk_created(test, st, &w, unused), NDK_SRQ,
			   Header);
	for (k = 0; k < 4096; k++) {
		st = srq->Dispatch->NdkSrqReceive(srq, NULL, &sge, 1);
		if (st)
			break;
	}
	KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_GE(test, k, 4);
	ndk_test_close(test, &srq->Header, srq->Dispatch->NdkCloseSrq);

	/* The receives the queue took complete when it is flushed. */
	qp->Dispatch->NdkFlush(qp);
	for (got = 0; got < n && ndk_penv_poll(e->cq, &x, 1); got++) {
		KUNIT_EXPECT_EQ(test, x.Type, (ULONG)NdkOperationTypeReceive);
		KUNIT_EXPECT_EQ(test, x.Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, got, n);
	ndk_penv_expect_none(test, e, NdkOperationTypeReceive);
	ndk_penv_free(test, pe);
	ndk_pmem_free(test, rm);
}

/*
 * nd_send_no_receive: a send the peer has no receive for. RoCE retries
 * it without end (ndk connects with an RNR retry count of 7), so it
 * waits and completes, bytes and all, once a receive is posted. iWARP
 * has no such wait: the send completes once it is on the wire, the
 * peer finds no receive and ends the connection, and a receive posted
 * there afterwards is flushed.
 */
static void nd_send_no_receive(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	unsigned long end;
	NDK_RESULT_EX r[2];
	NDK_RESULT one;

	ndk_penv_fill(pe);
	e->disconnects = 0;
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 0, 2048, 0),
			STATUS_SUCCESS);
	if (ndk_test_iwarp()) {
		KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
		ndk_expect_result(test, r, 1, 0x200, STATUS_SUCCESS,
				  NdkOperationTypeSend);
		end = jiffies + NDK_TEST_TIMEOUT;
		while (!e->disconnects && time_before(jiffies, end))
			usleep_range(2000, 4000);
		KUNIT_EXPECT_EQ(test, e->disconnects, 1);
		ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 1);
		KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 1));
		ndk_expect_result(test, r, 1, 0x100, STATUS_CANCELLED,
				  NdkOperationTypeReceive);
	} else {
		msleep(300);
		KUNIT_EXPECT_EQ(test,
				e->cq->Dispatch->NdkGetCqResults(e->cq, &one, 1),
				0U);
		ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 1);
		KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 2));
		ndk_expect_result(test, r, 2, 0x200, STATUS_SUCCESS,
				  NdkOperationTypeSend);
		ndk_expect_result(test, r, 2, 0x100, STATUS_SUCCESS,
				  NdkOperationTypeReceive);
		ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
					   DMA_BIDIRECTIONAL);
		NDK_EXPECT_MEMEQ(test, pe->buf, pe->buf + 2048, 16);
		KUNIT_EXPECT_EQ(test, e->disconnects, 0);
	}
	ndk_penv_free(test, pe);
}

/*
 * nd_qp_max: QPs with the adapter's largest SGE counts and inline size
 * carry a send gathered from every initiator SGE into every receive SGE,
 * and an inline send of the full inline size.
 */
static void nd_qp_max(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	u32 ns = info->MaxInitiatorRequestSge, nr = info->MaxReceiveRequestSge;
	u32 inl = min_t(u32, info->MaxInlineDataSize, 2048);
	NDK_SGE *ss = kunit_kcalloc(test, ns, sizeof(*ss), GFP_KERNEL);
	NDK_SGE *rs = kunit_kcalloc(test, nr, sizeof(*rs), GFP_KERNEL);
	u8 *want = kunit_kzalloc(test, 8 * ns, GFP_KERNEL);
	struct ndk_pmem *src = ndk_pmem_new(test, e, 0);
	struct ndk_qpspec q = { .depth = 8, .sge = { nr, ns },
				.inline_size = info->MaxInlineDataSize,
				.acq = e->cq, .pcq = e->cq };
	u32 i, base, last, off;
	struct ndk_penv *pe;
	NDK_RESULT_EX r[4];
	NDK_SGE sge;

	KUNIT_ASSERT_NOT_NULL(test, ss);
	KUNIT_ASSERT_NOT_NULL(test, rs);
	KUNIT_ASSERT_NOT_NULL(test, want);
	KUNIT_ASSERT_LE(test, ns, 32U);
	KUNIT_ASSERT_LE(test, nr, 32U);
	pe = ndk_penv_new_spec(test, e, true, &q);
	ndk_penv_fill(pe);
	for (i = 0; i < ns; i++) {
		ss[i] = ndk_penv_sge(pe, 64 * i, 8);
		memcpy(want + 8 * i, pe->buf + 64 * i, 8);
	}
	base = 8 * ns / nr;
	last = 8 * ns - base * (nr - 1);
	for (i = 0; i < nr; i++)
		rs[i] = ndk_penv_sge(pe, 2048 + 64 * i, i + 1 < nr ? base : last);
	KUNIT_ASSERT_LE(test, last, 64U);
	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x100,
							      rs, nr),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, pe->p.aqp->Dispatch->NdkSend(pe->p.aqp,
							   (void *)0x200,
							   ss, ns, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 2));
	ndk_expect_result(test, r, 2, 0x100, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	ndk_expect_result(test, r, 2, 0x200, STATUS_SUCCESS,
			  NdkOperationTypeSend);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	for (i = 0, off = 0; i < nr; off += rs[i].Length, i++)
		NDK_EXPECT_MEMEQ(test, pe->buf + 2048 + 64 * i, want + off,
				 rs[i].Length);

	ndk_pattern(src->buf, inl, 1);
	sge = ndk_penv_sge(pe, 0, 2048);
	KUNIT_ASSERT_EQ(test, pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
							      (void *)0x101,
							      &sge, 1),
			STATUS_SUCCESS);
	sge = ndk_pmem_sge(src, 0, inl);
	KUNIT_ASSERT_EQ(test, pe->p.aqp->Dispatch->NdkSend(pe->p.aqp,
							   (void *)0x201, &sge,
							   1,
							   NDK_OP_FLAG_INLINE),
			STATUS_SUCCESS);
	memset(src->buf, 0, inl);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 2));
	ndk_expect_result(test, r, 2, 0x101, STATUS_SUCCESS,
			  NdkOperationTypeReceive);
	ndk_expect_result(test, r, 2, 0x201, STATUS_SUCCESS,
			  NdkOperationTypeSend);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	ndk_pattern(src->buf, inl, 1);
	NDK_EXPECT_MEMEQ(test, pe->buf, src->buf, inl);
	ndk_penv_free(test, pe);
	ndk_pmem_free(test, src);
}

/*
 * nd_large_qp_depth: QPs as deep as the adapter allows (up to 4096)
 * take that many receives and sends at once, all outstanding together,
 * and every one completes in order with its bytes.
 */
static void nd_large_qp_depth(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	u32 d = min3(info->MaxInitiatorQueueDepth, info->MaxReceiveQueueDepth,
		     4096U);
	NDK_RESULT_EX *r = kunit_kcalloc(test, 64, sizeof(*r), GFP_KERNEL);
	struct ndk_qpspec q = { .depth = d, .sge = { 1, 1 } };
	u32 sends = 0, recvs = 0, i, n;
	NDK_CQ *cq, *unused = NULL;
	struct ndk_penv *pe;
	struct ndk_wait w;
	NDK_SGE sge;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_ASSERT_GE(test, info->MaxCqDepth, 2 * d);
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateCq(e->a, 2 * d, NULL, NULL, NULL,
					 ndk_test_create_cb, &w, &unused);
	cq = container_of(ndk_created(test, st, &w, unused), NDK_CQ, Header);
	q.acq = cq;
	q.pcq = cq;
	pe = ndk_penv_new_spec(test, e, true, &q);
	ndk_penv_fill(pe);
	for (i = 0; i < d; i++) {
		sge = ndk_penv_sge(pe, 16 * (i % 128), 16);
		KUNIT_ASSERT_EQ(test,
				pe->p.pqp->Dispatch->NdkReceive(pe->p.pqp,
								(void *)(uintptr_t)(0x100000 + i),
								&sge, 1),
				STATUS_SUCCESS);
	}
	for (i = 0; i < d; i++)
		KUNIT_ASSERT_EQ(test, ndk_penv_send(pe, 0x200000, i % 128,
						    2048, 0),
				STATUS_SUCCESS);
	while (sends < d || recvs < d) {
		if (!ndk_penv_poll(cq, r, 1))
			break;
		n = r[0].Type == NdkOperationTypeSend ? sends++ : recvs++;
		KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
		if (r[0].Type == NdkOperationTypeReceive)
			KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext,
					    (void *)(uintptr_t)(0x100000 + n));
		else
			KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext,
					    (void *)(uintptr_t)(0x200000 +
								n % 128));
	}
	KUNIT_EXPECT_EQ(test, sends, d);
	KUNIT_EXPECT_EQ(test, recvs, d);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	NDK_EXPECT_MEMEQ(test, pe->buf, pe->buf + 2048, 2048);
	ndk_penv_free(test, pe);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/*
 * The memory requests name a region they can act on: a fast-register
 * region of the QP's PD, initialized, for NdkFastRegister; that or a
 * window for NdkInvalidate, with the flags it takes. Anything else is
 * refused before the device sees it (a double stands in for the
 * device, and the QP counts as connected).
 */
static void ndk_post_memory_args_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_verbs_double *vd = kunit_kzalloc(test, sizeof(*vd),
						    GFP_KERNEL);
	NDK_MR *plain = ndk_test_mr(test, e, false);
	NDK_MR *fast = ndk_test_mr(test, e, true);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	const NDK_QP_DISPATCH *d = qp->Dispatch;
	NDK_LOGICAL_ADDRESS page = 0, pages[5];
	struct ndk_wait w;
	NTSTATUS st;
	u32 head, i;

	KUNIT_ASSERT_NOT_NULL(test, vd);
	ndk_verbs_double_insert(vd, q);
	vd->dev.ops.post_send = ndk_post_swallow;
	WRITE_ONCE(q->connected, true);
	head = q->sq.head;
	/* A region that is not a fast one, and a fast one not initialized. */
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, plain, 1, &page, 0,
						 64, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, &page, 0,
						 64, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, NULL, 1, &page, 0,
						 64, NULL, 0),
			STATUS_INVALID_PARAMETER);
	/* Nothing to invalidate, or an object that is neither. */
	KUNIT_EXPECT_EQ(test, d->NdkInvalidate(qp, NULL, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkInvalidate(qp, NULL, &e->cq->Header, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkInvalidate(qp, NULL, &plain->Header, 0),
			STATUS_INVALID_PARAMETER);
	/* Initialized, the fast region still takes only its flags. */
	ndk_wait_init(&w);
	st = fast->Dispatch->NdkInitializeFastRegisterMr(fast, 4, TRUE,
							 ndk_test_request_cb,
							 &w);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, d->NdkInvalidate(qp, NULL, &fast->Header,
					       NDK_OP_FLAG_INLINE),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, &page, 0,
						 64, NULL, NDK_OP_FLAG_INLINE),
			STATUS_INVALID_PARAMETER);
	/*
	 * Pages: none, no array, more than the region was set up for; an
	 * offset past the first page; no bytes, more than the pages hold;
	 * an address whose offset in its page is not the offset given.
	 */
	for (i = 0; i < ARRAY_SIZE(pages); i++)
		pages[i] = (i + 1) * PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 0, pages, 0,
						 64, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, NULL, 0,
						 64, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 5, pages, 0,
						 64, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, pages,
						 PAGE_SIZE, 64,
						 (void *)PAGE_SIZE, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, pages, 0,
						 0, NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, pages, 64,
						 PAGE_SIZE, (void *)64, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, pages, 64,
						 64, (void *)128, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, q->sq.head, head);
	WRITE_ONCE(q->connected, false);
	ndk_verbs_double_remove(vd, q);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_test_close_mr(test, fast);
	ndk_test_close_mr(test, plain);
}

/**
 * struct ndk_post_gate - a driver double that takes part of a chain
 * @vd: the double; its post_send is ndk_post_gate_send()
 * @q: the QP it stands under
 * @pass: requests of each chain it takes before refusing the rest
 *	(-ENOMEM), or -1 for all
 * @real: it hands the requests it takes to the real QP; else it keeps
 *	them and runs none
 * @flush: on its first call it fails @q (NdkFlush), waits until the
 *	error move is done, and refuses the whole chain
 * @calls: post_send calls it had
 * @held_then: what @q held when the error move was done
 * @access: the access of the last fast registration it took
 */
struct ndk_post_gate {
	struct ndk_verbs_double vd;
	struct ndk_qp *q;
	int pass;
	bool real;
	bool flush;
	int calls;
	u32 held_then;
	int access;
};

/* Hand @wr alone to the real QP of @g. */
static int ndk_post_gate_real(struct ndk_post_gate *g,
			      const struct ib_send_wr *wr)
{
	union {
		struct ib_send_wr wr;
		struct ib_rdma_wr rdma;
		struct ib_reg_wr reg;
	} one;

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		one.rdma = *rdma_wr(wr);
		break;
	case IB_WR_REG_MR:
		one.reg = *reg_wr(wr);
		break;
	default:
		one.wr = *wr;
	}
	one.wr.next = NULL;
	return ib_post_send(g->vd.real, &one.wr, NULL);
}

static int ndk_post_gate_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad)
{
	struct ndk_post_gate *g = container_of(ibqp, struct ndk_post_gate,
					       vd.ibqp);
	int i, err;

	if (g->flush && !g->calls++) {
		g->q->ndk.Dispatch->NdkFlush(&g->q->ndk);
		flush_work(&g->q->flush_work);
		g->held_then = READ_ONCE(g->q->nheld);
		*bad = wr;
		return -ENOMEM;
	}
	if (!g->flush)
		g->calls++;
	for (i = 0; wr; i++, wr = wr->next) {
		if (i == g->pass) {
			*bad = wr;
			return -ENOMEM;
		}
		if (wr->opcode == IB_WR_REG_MR)
			g->access = reg_wr(wr)->access;
		err = g->real ? ndk_post_gate_real(g, wr) : 0;
		if (err) {
			*bad = wr;
			return err;
		}
	}
	return 0;
}

/* Put @g under @q, taking @pass requests of each chain (see above). */
static void ndk_post_gate_insert(struct ndk_post_gate *g, struct ndk_qp *q,
				 int pass, bool real)
{
	g->q = q;
	g->pass = pass;
	g->real = real;
	ndk_verbs_double_insert(&g->vd, q);
	g->vd.dev.ops.post_send = ndk_post_gate_send;
}

/*
 * The device takes part of the held chain and refuses the rest: what it
 * took runs, the rest stays held, moved to the front of the held arrays
 * with its own SGEs, and the request that ended the chain is refused.
 * (A held send of nothing has no SGEs to move.) Then it takes the held
 * ones and refuses only the new request: nothing stays held. Held
 * requests are not handed to a driver being unloaded
 * (STATUS_DEVICE_REMOVED for the request ending the chain). In the end
 * every request accepted completes once, in order, with its bytes, and
 * no refused one does.
 */
static void ndk_post_held_partial_test(struct kunit *test)
{
	static const enum module_state going = MODULE_STATE_GOING;
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 16, 0, e->cq);
	struct ndk_post_gate *g = kunit_kzalloc(test, sizeof(*g), GFP_KERNEL);
	struct ndk_qp *q = ndk_post_priv(pe->p.aqp);
	const enum module_state *driver = q->driver;
	struct ib_sge *second = q->isge + max(q->max_isge, 1U);
	NDK_RESULT_EX *all = kunit_kcalloc(test, 18, sizeof(*all), GFP_KERNEL);
	NDK_RESULT_EX *r = all + 12;
	NDK_QP *qp = pe->p.aqp;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, g);
	KUNIT_ASSERT_NOT_NULL(test, all);
	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 6);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, i == 2 ?
				qp->Dispatch->NdkSend(qp, (void *)0x202, NULL,
						      0, NDK_OP_FLAG_DEFER) :
				ndk_penv_send(pe, 0x200, i, 2048,
					      NDK_OP_FLAG_DEFER),
				STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, q->nheld, 4U);
	ndk_post_gate_insert(g, q, 2, true);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f0, 0, 2048, 0),
			STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, g->calls, 1);
	KUNIT_EXPECT_EQ(test, q->nheld, 2U);
	/* Requests 2 and 3, in the first two held slots. */
	KUNIT_EXPECT_PTR_EQ(test, q->held[0].wr.next, &q->held[1].wr);
	KUNIT_EXPECT_PTR_EQ(test, q->held[1].wr.next, NULL);
	KUNIT_EXPECT_EQ(test, q->held[0].wr.num_sge, 0);
	KUNIT_EXPECT_EQ(test, q->held[1].wr.num_sge, 1);
	KUNIT_EXPECT_PTR_EQ(test, q->held[1].wr.sg_list, second);
	KUNIT_EXPECT_EQ(test, second[0].addr, pe->dma + 2048 + 48);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f1, 0, 2048, 0),
			STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, g->calls, 2);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);

	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 4, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	q->driver = &going;
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f2, 0, 2048, 0),
			STATUS_DEVICE_REMOVED);
	q->driver = driver;
	KUNIT_EXPECT_EQ(test, g->calls, 2);
	KUNIT_EXPECT_EQ(test, q->nheld, 1U);
	ndk_verbs_double_remove(&g->vd, q);

	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 5, 2048, 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, all, 12));
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 12, NdkOperationTypeSend,
					     r), 6);
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    (void *)(0x200UL + i));
	}
	KUNIT_ASSERT_EQ(test, ndk_results_of(all, 12, NdkOperationTypeReceive,
					     r), 6);
	ib_dma_sync_single_for_cpu(pe->dev, pe->dma, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    (void *)(0x100UL + i));
		KUNIT_EXPECT_EQ(test, r[i].BytesTransferred, i == 2 ? 0U : 16U);
		if (i != 2)
			NDK_EXPECT_MEMEQ(test, pe->buf + 32 * i,
					 pe->buf + 2048 + 16 * i, 16);
	}
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_free(test, pe);
}

/*
 * A full chain of held requests the device refuses stays full: the next
 * request is refused (STATUS_INSUFFICIENT_RESOURCES), deferred or not,
 * as long as the device refuses the chain; once it takes it, the request
 * after it goes too. On a queue no deeper than a batch the held requests
 * fill the queue itself: a request is refused for the full queue, and
 * still hands the held ones over. Each accepted request completes once,
 * in order; the queue takes requests again afterwards.
 */
static void ndk_post_held_full_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_post_gate *g = kunit_kzalloc(test, sizeof(*g), GFP_KERNEL);
	struct ndk_penv *pe;
	struct ndk_qp *q;
	NDK_QP *pqp;
	NDK_SGE sge;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, g);
	/* 32 deep: a batch is NDK_DEFER_MAX, the queue has room. */
	pe = ndk_penv_new_qp(test, e, true, 32, 0, e->cq);
	q = ndk_post_priv(pe->p.aqp);
	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, NDK_DEFER_MAX + 1);
	ndk_post_gate_insert(g, q, 0, true);
	ndk_penv_defer(test, pe, NDK_DEFER_MAX);
	KUNIT_EXPECT_EQ(test, g->calls, 1);
	KUNIT_EXPECT_EQ(test, q->nheld, (u32)NDK_DEFER_MAX);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f0, 0, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f1, 0, 2048, 0),
			STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, g->calls, 3);
	KUNIT_EXPECT_EQ(test, q->nheld, (u32)NDK_DEFER_MAX);
	g->pass = -1;
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, NDK_DEFER_MAX, 2048, 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, g->calls, 5);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	ndk_verbs_double_remove(&g->vd, q);
	ndk_penv_expect_sends(test, e, pe, 0x200, NDK_DEFER_MAX + 1, 0, 2048);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_free(test, pe);

	/* As deep as a batch: the held requests fill the queue. */
	memset(g, 0, sizeof(*g));
	pe = ndk_penv_new_qp(test, e, true, NDK_DEFER_MAX, 0, e->cq);
	q = ndk_post_priv(pe->p.aqp);
	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, NDK_DEFER_MAX);
	ndk_post_gate_insert(g, q, 0, true);
	ndk_penv_defer(test, pe, NDK_DEFER_MAX);
	KUNIT_EXPECT_EQ(test, q->nheld, (u32)NDK_DEFER_MAX);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f0, 0, 2048, 0),
			STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, g->calls, 2);
	KUNIT_EXPECT_EQ(test, q->nheld, (u32)NDK_DEFER_MAX);
	g->pass = -1;
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2f1, 0, 2048, 0),
			STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, g->calls, 3);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	ndk_verbs_double_remove(&g->vd, q);
	ndk_penv_expect_sends(test, e, pe, 0x200, NDK_DEFER_MAX, 0, 2048);
	sge = ndk_penv_sge(pe, 32 * NDK_DEFER_MAX, 32);
	pqp = pe->p.pqp;
	st = pqp->Dispatch->NdkReceive(pqp, (void *)(0x100UL + NDK_DEFER_MAX),
				       &sge, 1);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x300, 0, 2048 + 512, 0),
			STATUS_SUCCESS);
	ndk_penv_expect_sends(test, e, pe, 0x300, 1, NDK_DEFER_MAX,
			      2048 + 512);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_free(test, pe);
}

/*
 * The QP fails (NdkFlush) while a poster is handing the held requests to
 * the device: the error move finds them claimed and leaves them (both
 * times it looks), the device refuses the chain, and the poster, seeing
 * the connection gone when it lets go, hands them over itself. They come
 * back cancelled, once each, in order; the refused request never does.
 */
static void ndk_post_held_release_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new(test, e, true);
	struct ndk_post_gate *g = kunit_kzalloc(test, sizeof(*g), GFP_KERNEL);
	struct ndk_qp *q = ndk_post_priv(pe->p.aqp);
	NDK_RESULT_EX r[3];
	int i;

	KUNIT_ASSERT_NOT_NULL(test, g);
	ndk_penv_defer(test, pe, 3);
	KUNIT_EXPECT_EQ(test, q->nheld, 3U);
	g->flush = true;
	ndk_post_gate_insert(g, q, -1, true);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2ff, 0, 2048, 0),
			STATUS_INSUFFICIENT_RESOURCES);
	ndk_verbs_double_remove(&g->vd, q);
	KUNIT_EXPECT_EQ(test, g->held_then, 3U);
	KUNIT_EXPECT_EQ(test, g->calls, 2);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	KUNIT_EXPECT_EQ(test, atomic_read(&q->held_owner), 0);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, r, 3));
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    (void *)(0x200UL + i));
		KUNIT_EXPECT_EQ(test, r[i].Type, (ULONG)NdkOperationTypeSend);
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2fe, 0, 2048, 0),
			STATUS_CONNECTION_INVALID);
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_free(test, pe);
}

/*
 * Bind, fast registration and invalidation wait behind a deferred
 * request like any request, deferred themselves, and a send ends the
 * chain; a bind or a fast registration that does not defer ends one
 * too. All complete, in order. While a failure owns the held requests (the
 * test holds the claim), a request that fails its own checks returns its
 * status; a valid one is refused as the connection is going.
 */
static void ndk_post_held_memory_test(struct kunit *test)
{
	static const NDK_OPERATION_TYPE type[] = {
		NdkOperationTypeSend, NdkOperationTypeFastRegister,
		NdkOperationTypeInvalidate, NdkOperationTypeBind,
		NdkOperationTypeSend, NdkOperationTypeInvalidate,
		NdkOperationTypeBind, NdkOperationTypeSend,
		NdkOperationTypeFastRegister,
	};
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 16, 0, e->cq);
	struct ndk_pmem *m = ndk_pmem_new(test, e,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					  NDK_MR_FLAG_ALLOW_REMOTE_READ);
	NDK_MR *fast = ndk_post_fast_mr(test, e, 1);
	NDK_MW *mw = ndk_cenv_mw(test, e);
	struct ndk_qp *q = ndk_post_priv(pe->p.aqp);
	NDK_SGE five[5] = { ndk_penv_sge(pe, 2048, 4),
			    ndk_penv_sge(pe, 2052, 4),
			    ndk_penv_sge(pe, 2056, 4),
			    ndk_penv_sge(pe, 2060, 4),
			    ndk_penv_sge(pe, 2064, 4) };
	NDK_LOGICAL_ADDRESS page = pe->dma & PAGE_MASK;
	NDK_RESULT_EX *all = kunit_kcalloc(test, 21, sizeof(*all), GFP_KERNEL);
	NDK_RESULT_EX *r = all + 12;
	NDK_QP *qp = pe->p.aqp;
	int i, k = 0;

	KUNIT_ASSERT_NOT_NULL(test, all);
	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 3);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 0, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	atomic_set(&q->held_owner, 1);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x2ff, five, 5,
						    NDK_OP_FLAG_DEFER),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkInvalidate(qp, (void *)0x2fe,
							  NULL, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x2fd, 0, 2048, 0),
			STATUS_CONNECTION_INVALID);
	atomic_set(&q->held_owner, 0);
	KUNIT_EXPECT_EQ(test, q->nheld, 1U);

	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkFastRegister(qp, (void *)0x201,
							    fast, 1, &page, 0,
							    64,
							    (PVOID)(uintptr_t)page,
							    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkInvalidate(qp, (void *)0x202,
							  &fast->Header,
							  NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkBind(qp, (void *)0x203, m->mr,
						    mw,
						    (PVOID)(uintptr_t)ndk_pmem_va(m, 0),
						    64,
						    NDK_OP_FLAG_ALLOW_REMOTE_READ |
						    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, q->nheld, 4U);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 4, 2048, 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	/* A bind, then a fast registration, ending the chain. */
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkInvalidate(qp, (void *)0x205,
							  &mw->Header,
							  NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkBind(qp, (void *)0x206, m->mr,
						    mw,
						    (PVOID)(uintptr_t)ndk_pmem_va(m, 0),
						    64,
						    NDK_OP_FLAG_ALLOW_REMOTE_READ),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, 7, 2048,
					    NDK_OP_FLAG_DEFER),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkFastRegister(qp, (void *)0x208,
							    fast, 1, &page, 0,
							    64,
							    (PVOID)(uintptr_t)page,
							    0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, q->nheld, 0U);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(e->cq, all, 12));
	/* The initiator's results, in the order they came. */
	for (i = 0; i < 12; i++)
		if (all[i].Type != NdkOperationTypeReceive &&
		    k < ARRAY_SIZE(type))
			r[k++] = all[i];
	KUNIT_EXPECT_EQ(test, k, (int)ARRAY_SIZE(type));
	for (i = 0; i < k; i++) {
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    (void *)(0x200UL + i));
		KUNIT_EXPECT_EQ(test, r[i].Type, (ULONG)type[i]);
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
	}
	ndk_penv_expect_none(test, e, NdkOperationTypeSend);
	ndk_penv_free(test, pe);
	ndk_test_close(test, &mw->Header, mw->Dispatch->NdkCloseMw);
	ndk_test_close_mr(test, fast);
	ndk_pmem_free(test, m);
}

/* The initiator requests that go to the device by ndk_qp_post_wr(). */
enum {
	NDK_MEMOP_BIND, NDK_MEMOP_FR, NDK_MEMOP_INVALIDATE, NDK_MEMOP_EMPTY,
	NDK_MEMOP_PACKED, NDK_MEMOPS
};

/**
 * struct ndk_post_memops - what the requests of ndk_post_memop() use
 * @qp: the QP they go to
 * @m: a registered region, which the window is bound over
 * @fast: an initialized fast-register region
 * @mw: a window
 * @sge: an empty SGE before one of 16 bytes, both in @m
 * @page: a page of memory
 */
struct ndk_post_memops {
	NDK_QP *qp;
	struct ndk_pmem *m;
	NDK_MR *fast;
	NDK_MW *mw;
	NDK_SGE sge[2];
	NDK_LOGICAL_ADDRESS page;
};

static NTSTATUS ndk_post_memop(struct ndk_post_memops *o, int op, void *ctx)
{
	const NDK_QP_DISPATCH *d = o->qp->Dispatch;

	switch (op) {
	case NDK_MEMOP_BIND:
		return d->NdkBind(o->qp, ctx, o->m->mr, o->mw,
				  (PVOID)(uintptr_t)ndk_pmem_va(o->m, 0), 64,
				  NDK_OP_FLAG_ALLOW_REMOTE_READ);
	case NDK_MEMOP_FR:
		return d->NdkFastRegister(o->qp, ctx, o->fast, 1, &o->page, 0,
					  64, (PVOID)(uintptr_t)o->page, 0);
	case NDK_MEMOP_INVALIDATE:
		return d->NdkInvalidate(o->qp, ctx, &o->fast->Header, 0);
	case NDK_MEMOP_EMPTY:
		return d->NdkSend(o->qp, ctx, NULL, 0, 0);
	default:
		return d->NdkSend(o->qp, ctx, o->sge, 2, 0);
	}
}

/*
 * The refusals of ndk_post_refusals_test() for the requests that do not
 * take the send fast path: bind, fast registration, invalidation, a send
 * of nothing and one whose empty SGE is dropped. Each is refused with
 * the same status, takes nothing, and a refused bind leaves the window
 * its token. Each kind the double takes once comes back cancelled when
 * the QP closes, as do the sends that filled the queue.
 */
static void ndk_post_wr_refusals_test(struct kunit *test)
{
	static const NTSTATUS want[NDK_REFUSALS] = {
		STATUS_DEVICE_REMOVED, STATUS_INSUFFICIENT_RESOURCES,
		STATUS_INSUFFICIENT_RESOURCES,
	};
	static const NDK_OPERATION_TYPE type[NDK_MEMOPS] = {
		NdkOperationTypeBind, NdkOperationTypeFastRegister,
		NdkOperationTypeInvalidate, NdkOperationTypeSend,
		NdkOperationTypeSend,
	};
	static const char * const ops[NDK_MEMOPS] = {
		"bind", "fast-register", "invalidate", "empty send",
		"packed send",
	};
	static const enum module_state going = MODULE_STATE_GOING;
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_post_gate *g = kunit_kzalloc(test, sizeof(*g), GFP_KERNEL);
	NDK_OPERATION_TYPE *took = kunit_kcalloc(test, 64, sizeof(*took),
						 GFP_KERNEL);
	struct page *page = alloc_page(GFP_KERNEL);
	struct ndk_post_memops o = {
		.qp = ndk_cenv_qp_sge(test, e, 2, 32),
		.m = ndk_pmem_new(test, e, NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				  NDK_MR_FLAG_ALLOW_REMOTE_READ),
		.fast = ndk_post_fast_mr(test, e, 1),
		.mw = ndk_cenv_mw(test, e),
	};
	struct ndk_qp *q = ndk_post_priv(o.qp);
	const enum module_state *driver = q->driver;
	u32 taken = 0, head, got, token;
	NDK_RESULT_EX r;
	int cond, op;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, g);
	KUNIT_ASSERT_NOT_NULL(test, took);
	KUNIT_ASSERT_NOT_NULL(test, page);
	o.sge[0] = ndk_pmem_sge(o.m, 0, 0);
	o.sge[1] = ndk_pmem_sge(o.m, 0, 16);
	o.page = (uintptr_t)page_address(page);
	ndk_post_gate_insert(g, q, -1, false);
	WRITE_ONCE(q->connected, true);
	for (op = 0; op < NDK_MEMOPS; op++) {
		st = ndk_post_memop(&o, op, (void *)(uintptr_t)(taken + 1));
		KUNIT_EXPECT_EQ_MSG(test, st, STATUS_SUCCESS, "%s", ops[op]);
		if (!st)
			took[taken++] = type[op];
	}
	for (cond = 0; cond < NDK_REFUSALS; cond++) {
		g->pass = cond == NDK_REFUSE_DRIVER ? 0 : -1;
		if (cond == NDK_REFUSE_FULL) {
			while (taken < 64 &&
			       ndk_post_memop(&o, NDK_MEMOP_EMPTY,
					      (void *)(uintptr_t)(taken + 1)) ==
			       STATUS_SUCCESS)
				took[taken++] = NdkOperationTypeSend;
			KUNIT_EXPECT_GE(test, taken, 8U);
			KUNIT_EXPECT_LT(test, taken, 64U);
		}
		if (cond == NDK_REFUSE_GOING)
			q->driver = &going;
		head = q->sq.head;
		for (op = 0; op < NDK_MEMOPS; op++) {
			token = o.mw->Dispatch->NdkGetRemoteTokenFromMw(o.mw);
			st = ndk_post_memop(&o, op, (void *)0xbad);
			KUNIT_EXPECT_EQ_MSG(test, st, want[cond],
					    "%s, refusal %d", ops[op], cond);
			KUNIT_EXPECT_EQ_MSG(test,
					    o.mw->Dispatch->NdkGetRemoteTokenFromMw(o.mw),
					    token, "%s, refusal %d", ops[op],
					    cond);
		}
		KUNIT_EXPECT_EQ(test, q->sq.head, head);
		q->driver = driver;
	}
	WRITE_ONCE(q->connected, false);
	ndk_verbs_double_remove(&g->vd, q);
	ndk_test_close(test, &o.qp->Header, o.qp->Dispatch->NdkCloseQp);
	for (got = 0; got < taken && ndk_penv_poll(e->cq, &r, 1); got++) {
		KUNIT_EXPECT_PTR_EQ(test, r.RequestContext,
				    (void *)(uintptr_t)(got + 1));
		KUNIT_EXPECT_EQ(test, r.Type, (ULONG)took[got]);
		KUNIT_EXPECT_EQ(test, r.Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, got, taken);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1),
			0U);
	ndk_test_close(test, &o.mw->Header, o.mw->Dispatch->NdkCloseMw);
	ndk_test_close_mr(test, o.fast);
	ndk_pmem_free(test, o.m);
	__free_page(page);
}

/*
 * NdkFastRegister's last refusals: on a QP not connected
 * (STATUS_CONNECTION_INVALID); of a fast region of another PD, which
 * NdkInvalidate refuses too, and over pages the device cannot map as
 * one (an entry off a page boundary, after a gap):
 * STATUS_INVALID_PARAMETER; with remote rights on a region initialized
 * without them: STATUS_ACCESS_VIOLATION. None takes a slot. A
 * registration taken asks the device for the rights its flags name: a
 * read sink is locally writable, and on iWARP remotely writable too,
 * as the peer writes the read's data. Those taken come back cancelled
 * when the QP closes (a double takes them and runs none).
 */
static void ndk_post_wr_fast_register_test(struct kunit *test)
{
	static const struct {
		ULONG flags;
		int access;
	} rights[] = {
		{ 0, 0 },
		{ NDK_OP_FLAG_ALLOW_LOCAL_WRITE, IB_ACCESS_LOCAL_WRITE },
		{ NDK_OP_FLAG_ALLOW_REMOTE_READ, IB_ACCESS_REMOTE_READ },
		{ NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
		  IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE },
		{ NDK_OP_FLAG_RDMA_READ_SINK, IB_ACCESS_LOCAL_WRITE },
	};
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_post_gate *g = kunit_kzalloc(test, sizeof(*g), GFP_KERNEL);
	struct page *four = alloc_pages(GFP_KERNEL, 2);
	NDK_MR *fast = ndk_test_mr(test, e, true);
	NDK_MR *local = ndk_post_fast_mr(test, e, 1);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_qp *q = ndk_post_priv(qp);
	const NDK_QP_DISPATCH *d = qp->Dispatch;
	struct ndk_cenv other = *e;
	NDK_LOGICAL_ADDRESS pages[2];
	NDK_MR *ofast;
	struct ndk_wait w;
	NDK_RESULT_EX r;
	u32 head, got;
	PVOID va;
	NTSTATUS st;
	int i, want;

	KUNIT_ASSERT_NOT_NULL(test, g);
	KUNIT_ASSERT_NOT_NULL(test, four);
	pages[0] = (uintptr_t)page_address(four);
	pages[1] = pages[0] + 2 * PAGE_SIZE + 8;
	va = (PVOID)(uintptr_t)pages[0];
	ndk_wait_init(&w);
	st = fast->Dispatch->NdkInitializeFastRegisterMr(fast, 4, TRUE,
							 ndk_test_request_cb,
							 &w);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	other.pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD,
				Header);
	ofast = ndk_post_fast_mr(test, &other, 1);

	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 1, pages, 0,
						 64, va, 0),
			STATUS_CONNECTION_INVALID);
	ndk_post_gate_insert(g, q, -1, false);
	WRITE_ONCE(q->connected, true);
	head = q->sq.head;
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, fast, 2, pages, 0,
						 2 * PAGE_SIZE, va, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, ofast, 1, pages, 0,
						 64, va, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkInvalidate(qp, NULL, &ofast->Header, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp, NULL, local, 1, pages, 0,
						 64, va,
						 NDK_OP_FLAG_ALLOW_REMOTE_READ),
			STATUS_ACCESS_VIOLATION);
	KUNIT_EXPECT_EQ(test, q->sq.head, head);
	KUNIT_EXPECT_EQ(test, g->calls, 0);
	for (i = 0; i < ARRAY_SIZE(rights); i++) {
		want = rights[i].access;
		if (rights[i].flags == NDK_OP_FLAG_RDMA_READ_SINK &&
		    ndk_test_iwarp())
			want |= IB_ACCESS_REMOTE_WRITE;
		g->access = -1;
		KUNIT_EXPECT_EQ(test, d->NdkFastRegister(qp,
							 (void *)(uintptr_t)(i + 1),
							 fast, 1, pages, 0, 64,
							 va, rights[i].flags),
				STATUS_SUCCESS);
		KUNIT_EXPECT_EQ_MSG(test, g->access, want, "flags %#x",
				    rights[i].flags);
	}
	WRITE_ONCE(q->connected, false);
	ndk_verbs_double_remove(&g->vd, q);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	for (got = 0; got < ARRAY_SIZE(rights) &&
	     ndk_penv_poll(e->cq, &r, 1); got++) {
		KUNIT_EXPECT_PTR_EQ(test, r.RequestContext,
				    (void *)(uintptr_t)(got + 1));
		KUNIT_EXPECT_EQ(test, r.Type,
				(ULONG)NdkOperationTypeFastRegister);
		KUNIT_EXPECT_EQ(test, r.Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, got, (u32)ARRAY_SIZE(rights));
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, &r, 1),
			0U);
	ndk_test_close_mr(test, ofast);
	ndk_test_close(test, &other.pd->Header, other.pd->Dispatch->NdkClosePd);
	ndk_test_close_mr(test, local);
	ndk_test_close_mr(test, fast);
	__free_pages(four, 2);
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
	KUNIT_CASE(ndk_qp_other_adapter_cq_test),
	KUNIT_CASE(ndk_qp_closing_cq_test),
	/* Posting: these complete the connection environment. */
	KUNIT_CASE(nd_receive_flush_qp),
	KUNIT_CASE(ndk_qp_flush_twice_test),
	KUNIT_CASE(ndk_post_flush_sends_test),
	KUNIT_CASE(ndk_post_flush_busy_test),
	KUNIT_CASE(nd_receive_conn_closed),
	KUNIT_CASE(ndk_post_gather_scatter_test),
	KUNIT_CASE(ndk_post_zero_sge_test),
	KUNIT_CASE(ndk_post_fenced_read_test),
	KUNIT_CASE(ndk_post_not_connected_test),
	KUNIT_CASE(ndk_post_defer_chain_test),
	KUNIT_CASE(ndk_post_defer_teardown_test),
	KUNIT_CASE(ndk_post_defer_fail_test),
	KUNIT_CASE(ndk_post_defer_full_test),
	KUNIT_CASE(ndk_post_defer_shallow_test),
	KUNIT_CASE(ndk_post_defer_flush_test),
	KUNIT_CASE(ndk_post_defer_fast_register_test),
	KUNIT_CASE(ndk_post_inline_test),
	KUNIT_CASE(ndk_post_rdma_sge_test),
	KUNIT_CASE(ndk_post_read_fence_test),
	KUNIT_CASE(ndk_post_limits_test),
	KUNIT_CASE(ndk_post_disconnected_test),
	KUNIT_CASE(ndk_post_solicited_test),
	KUNIT_CASE(ndk_post_errors_arm_test),
	KUNIT_CASE(ndk_post_flush_race_test),
	KUNIT_CASE(ndk_post_refused_test),
	KUNIT_CASE(ndk_post_refused_swept_test),
	KUNIT_CASE(ndk_post_refusals_test),
	KUNIT_CASE(ndk_post_memory_args_test),
	KUNIT_CASE(ndk_post_held_partial_test),
	KUNIT_CASE(ndk_post_held_full_test),
	KUNIT_CASE(ndk_post_held_release_test),
	KUNIT_CASE(ndk_post_held_memory_test),
	KUNIT_CASE(ndk_post_wr_refusals_test),
	KUNIT_CASE(ndk_post_wr_fast_register_test),
	KUNIT_CASE(ndk_post_queue_full_test),
	KUNIT_CASE(nd_send_no_receive),
	KUNIT_CASE(nd_qp_max),
	KUNIT_CASE(nd_large_qp_depth),
	{}
};

NDK_SUITE(qp, ndk_qp_init_test, ndk_conn_exit_test);
