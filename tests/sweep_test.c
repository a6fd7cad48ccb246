// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_sweep, the tests of ndk/sweep.c: every request a consumer posted
 * comes back exactly once, whoever tears the connection down and
 * whatever the driver reports. Each case fills the initiator queue of
 * one side with sends, writes and reads and the receive queues of both
 * sides, tears the connection down one way while they run, and polls
 * until every request is back: none lost, none twice, none foreign.
 * The same again with the poll path dropping every flushed completion,
 * as a driver that loses them would: ndk's sweep must report them.
 */
#include <kunit/resource.h>
#include <linux/delay.h>
#include "ndk_tests.h"
#include "sweep.h"

/* The ways a connection is torn down under its requests. */
enum ndk_sweep_way {
	NDK_SWEEP_FLUSH,		/* NdkFlush on both QPs */
	NDK_SWEEP_DISCONNECT,		/* NdkDisconnect, the implicit flush */
	NDK_SWEEP_PEER_FIRST,		/* the peer's, then the local one */
	NDK_SWEEP_CLOSE_CONNECTOR,	/* NdkCloseConnector, connected */
	NDK_SWEEP_CLOSE_QP,		/* NdkCloseQp with requests posted */
};

/**
 * struct ndk_sweep_case - one way, with the device's flushes or without
 * @name: the case
 * @way: how the connection ends
 * @lose: the poll path drops the device's flushed completions
 */
struct ndk_sweep_case {
	const char *name;
	enum ndk_sweep_way way;
	bool lose;
};

static const struct ndk_sweep_case ndk_sweep_cases_p[] = {
	{ "NdkFlush", NDK_SWEEP_FLUSH, false },
	{ "NdkDisconnect", NDK_SWEEP_DISCONNECT, false },
	{ "peer disconnect, then NdkDisconnect", NDK_SWEEP_PEER_FIRST, false },
	{ "NdkCloseConnector", NDK_SWEEP_CLOSE_CONNECTOR, false },
	{ "NdkCloseQp, then NdkCloseConnector", NDK_SWEEP_CLOSE_QP, false },
	{ "NdkFlush, flushes lost", NDK_SWEEP_FLUSH, true },
	{ "NdkDisconnect, flushes lost", NDK_SWEEP_DISCONNECT, true },
	{ "peer disconnect, then NdkDisconnect, flushes lost",
	  NDK_SWEEP_PEER_FIRST, true },
	{ "NdkCloseConnector, flushes lost", NDK_SWEEP_CLOSE_CONNECTOR, true },
	{ "NdkCloseQp, then NdkCloseConnector, flushes lost",
	  NDK_SWEEP_CLOSE_QP, true },
};

static void ndk_sweep_desc(const struct ndk_sweep_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_sweep, ndk_sweep_cases_p, ndk_sweep_desc);

#define NDK_SWEEP_DEPTH		16
/* Rounds of each case: all with ndk_check.thorough=1, else a few. */
#define NDK_SWEEP_ROUNDS	50
#define NDK_SWEEP_FEW_ROUNDS	3
#define NDK_SWEEP_CTX		0x50000
/* Requests per round: active initiator, active receive, passive receive. */
#define NDK_SWEEP_N		(3 * NDK_SWEEP_DEPTH)
/* The sweep's wait while flushes are lost, short for many rounds. */
#define NDK_SWEEP_LOST_MS	20

/**
 * struct ndk_sweep_env - the objects of a case, and one round's count
 * @e: the connection environment
 * @acq: CQ of the active QP
 * @pcq: CQ of the passive QP
 * @l: local buffer: receive targets, read sinks, send and write sources
 * @rm: the remote buffer of the writes and reads
 * @p: this round's connection
 * @qp_closed: the active QP's close completed (NdkCloseQp case)
 * @seen: results of this round, by request
 */
struct ndk_sweep_env {
	struct ndk_cenv *e;
	NDK_CQ *acq, *pcq;
	struct ndk_pmem *l, *rm;
	struct ndk_pair p;
	struct ndk_wait qp_closed;
	u8 seen[NDK_SWEEP_N];
};

/* QPContext of each side: a byte of the environment each, never NULL. */
static void *ndk_sweep_qpctx(struct ndk_sweep_env *se, bool active)
{
	return (u8 *)se + !active;
}

static NDK_QP *ndk_sweep_qp(struct kunit *test, struct ndk_sweep_env *se,
			    bool active)
{
	NDK_CQ *cq = active ? se->acq : se->pcq;
	NDK_QP *qp = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = se->e->pd->Dispatch->NdkCreateQp(se->e->pd, cq, cq,
					      ndk_sweep_qpctx(se, active),
					      NDK_SWEEP_DEPTH, NDK_SWEEP_DEPTH,
					      1, 1, 0, ndk_test_create_cb, &w,
					      &qp);
	return container_of(ndk_created(test, st, &w, qp), NDK_QP, Header);
}

static NDK_CQ *ndk_sweep_cq(struct kunit *test, struct ndk_cenv *e)
{
	return container_of(ndk_test_create_cq(test, e->a, 4 * NDK_SWEEP_N),
			    NDK_CQ, Header);
}

/* Request @i's context; 0..15 initiator, 16..31 and 32..47 receives. */
static void *ndk_sweep_ctx(int i)
{
	return (void *)(uintptr_t)(NDK_SWEEP_CTX + i);
}

/* Post every request of a round; each must be taken. */
static void ndk_sweep_post(struct kunit *test, struct ndk_sweep_env *se)
{
	const NDK_QP_DISPATCH *ad = se->p.aqp->Dispatch;
	const NDK_QP_DISPATCH *pd = se->p.pqp->Dispatch;
	UINT32 rtok = ndk_pmem_rtok(se->rm);
	NDK_QP *aqp = se->p.aqp, *pqp = se->p.pqp;
	void *ctx;
	NTSTATUS st;
	NDK_SGE sge;
	u64 raddr;
	int i;

	for (i = 0; i < NDK_SWEEP_DEPTH; i++) {
		sge = ndk_pmem_sge(se->l, 64 * i, 64);
		ctx = ndk_sweep_ctx(2 * NDK_SWEEP_DEPTH + i);
		KUNIT_EXPECT_EQ(test, pd->NdkReceive(pqp, ctx, &sge, 1),
				STATUS_SUCCESS);
		sge = ndk_pmem_sge(se->l, 1024 + 64 * i, 64);
		ctx = ndk_sweep_ctx(NDK_SWEEP_DEPTH + i);
		KUNIT_EXPECT_EQ(test, ad->NdkReceive(aqp, ctx, &sge, 1),
				STATUS_SUCCESS);
	}
	for (i = 0; i < NDK_SWEEP_DEPTH; i++) {
		sge = ndk_pmem_sge(se->l, 2048 + 64 * i, 64);
		raddr = ndk_pmem_va(se->rm, 64 * i);
		ctx = ndk_sweep_ctx(i);
		if (i % 3 == 0)
			st = ad->NdkSend(aqp, ctx, &sge, 1, 0);
		else if (i % 3 == 1)
			st = ad->NdkWrite(aqp, ctx, &sge, 1, raddr, rtok, 0);
		else
			st = ad->NdkRead(aqp, ctx, &sge, 1, raddr, rtok, 0);
		KUNIT_EXPECT_EQ_MSG(test, st, STATUS_SUCCESS, "request %d", i);
	}
}

/*
 * Count the results @cq has now; each must be a request of this round,
 * of the right QP, seen once, with a status a teardown may give.
 *
 * Return: how many it had.
 */
static int ndk_sweep_take(struct kunit *test, struct ndk_sweep_env *se,
			  NDK_CQ *cq, bool active)
{
	NDK_RESULT_EX r[8];
	uintptr_t i;
	int n, k, all = 0;

	while ((n = cq->Dispatch->NdkGetCqResultsEx(cq, r, ARRAY_SIZE(r)))) {
		for (k = 0; k < n; k++) {
			i = (uintptr_t)r[k].RequestContext - NDK_SWEEP_CTX;
			if (i >= NDK_SWEEP_N) {
				KUNIT_FAIL(test, "foreign result %p",
					   r[k].RequestContext);
				continue;
			}
			KUNIT_EXPECT_EQ_MSG(test, active, i < 2 * NDK_SWEEP_DEPTH,
					    "request %lu on the wrong CQ", i);
			KUNIT_EXPECT_PTR_EQ(test, r[k].QPContext,
					    ndk_sweep_qpctx(se, active));
			KUNIT_EXPECT_EQ_MSG(test, se->seen[i], 0,
					    "request %lu reported twice", i);
			KUNIT_EXPECT_TRUE_MSG(test,
					      r[k].Status == STATUS_SUCCESS ||
					      r[k].Status == STATUS_CANCELLED ||
					      r[k].Status == STATUS_CONNECTION_ABORTED ||
					      r[k].Status == STATUS_CONNECTION_RESET,
					      "request %lu: status %#x", i,
					      r[k].Status);
			se->seen[i]++;
		}
		all += n;
	}
	return all;
}

/* Poll both CQs until every request of the round is back, or time out. */
static bool ndk_sweep_collect(struct kunit *test, struct ndk_sweep_env *se,
			      int *got)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	while (*got < NDK_SWEEP_N && time_before(jiffies, end)) {
		*got += ndk_sweep_take(test, se, se->acq, true);
		*got += ndk_sweep_take(test, se, se->pcq, false);
		if (*got < NDK_SWEEP_N)
			usleep_range(2000, 4000);
	}
	return *got >= NDK_SWEEP_N;
}

/* End the round's connection the case's way while its requests run. */
static void ndk_sweep_tear(struct kunit *test, struct ndk_sweep_env *se,
			   enum ndk_sweep_way way, int *got)
{
	NDK_CONNECTOR *c = se->p.c, *in = se->p.in;
	unsigned long end;
	struct ndk_wait dw;
	NTSTATUS st;

	ndk_wait_init(&dw);
	switch (way) {
	case NDK_SWEEP_FLUSH:
		se->p.aqp->Dispatch->NdkFlush(se->p.aqp);
		se->p.pqp->Dispatch->NdkFlush(se->p.pqp);
		return;
	case NDK_SWEEP_DISCONNECT:
		st = c->Dispatch->NdkDisconnect(c, ndk_test_request_cb, &dw);
		ndk_test_outcome(test, &dw, st);
		return;
	case NDK_SWEEP_PEER_FIRST:
		st = in->Dispatch->NdkDisconnect(in, ndk_test_request_cb, &dw);
		ndk_test_outcome(test, &dw, st);
		/* The peer's disconnect reaches this side: it flushes. */
		end = jiffies + NDK_TEST_TIMEOUT;
		while (!*got && time_before(jiffies, end)) {
			*got += ndk_sweep_take(test, se, se->acq, true);
			usleep_range(1000, 2000);
		}
		ndk_wait_init(&dw);
		st = c->Dispatch->NdkDisconnect(c, ndk_test_request_cb, &dw);
		/* Whatever it says now, it says it once. */
		ndk_test_outcome(test, &dw, st);
		return;
	case NDK_SWEEP_CLOSE_CONNECTOR:
		ndk_test_close(test, &c->Header, c->Dispatch->NdkCloseConnector);
		se->p.c = NULL;
		return;
	case NDK_SWEEP_CLOSE_QP:
		/* The QP's close waits for its connector's. */
		ndk_wait_init(&se->qp_closed);
		st = se->p.aqp->Dispatch->NdkCloseQp(&se->p.aqp->Header,
						     ndk_test_close_cb,
						     &se->qp_closed);
		KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
		ndk_test_close(test, &c->Header, c->Dispatch->NdkCloseConnector);
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&se->qp_closed));
		se->p.c = NULL;
		se->p.aqp = NULL;
		return;
	}
}

/* One round: connect, post, tear down, count, close. */
/* A device that loses its flushes, played until the case lets go. */
struct ndk_sweep_lost {
	struct kunit_resource res;
	unsigned int sweep_ms;
};

static int ndk_sweep_lost_init(struct kunit_resource *res, void *data)
{
	struct ndk_sweep_lost *l = container_of(res, struct ndk_sweep_lost,
						res);

	l->sweep_ms = ndk_sweep_set_ms(NDK_SWEEP_LOST_MS);
	ndk_fault_lose(true);
	return 0;
}

static void ndk_sweep_lost_free(struct kunit_resource *res)
{
	struct ndk_sweep_lost *l = container_of(res, struct ndk_sweep_lost,
						res);

	ndk_fault_lose(false);
	ndk_sweep_set_ms(l->sweep_ms);
}

/*
 * Drop every flushed completion and have the sweep due soon, until
 * ndk_sweep_found() or the end of the case: a failed assertion must not
 * leave the rest of the run losing flushes.
 */
static struct ndk_sweep_lost *ndk_sweep_lose(struct kunit *test)
{
	struct ndk_sweep_lost *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, l);
	KUNIT_ASSERT_EQ(test, kunit_add_resource(test, ndk_sweep_lost_init,
						 ndk_sweep_lost_free, &l->res,
						 NULL),
			0);
	return l;
}

/* Flushes are reported again, and the sweep waits as before. */
static void ndk_sweep_found(struct kunit *test, struct ndk_sweep_lost *l)
{
	if (l)
		kunit_remove_resource(test, &l->res);
}

static bool ndk_sweep_round(struct kunit *test, struct ndk_sweep_env *se,
			    const struct ndk_sweep_case *c, int round)
{
	struct sockaddr_in dst;
	int got = 0, i;
	bool ok;

	memset(se->seen, 0, sizeof(se->seen));
	se->p.c = ndk_cenv_connector(test, se->e);
	se->p.aqp = ndk_sweep_qp(test, se, true);
	se->p.pqp = ndk_sweep_qp(test, se, false);
	ndk_listen_addr(se->e, &dst);
	ndk_establish_pair(test, se->e, &se->p, (struct sockaddr *)&se->e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_sweep_post(test, se);
	ndk_sweep_tear(test, se, c->way, &got);
	ok = ndk_sweep_collect(test, se, &got);
	for (i = 0; i < NDK_SWEEP_N; i++)
		KUNIT_EXPECT_EQ_MSG(test, se->seen[i], 1,
				    "round %d: request %d", round, i);
	/* Nothing comes again, not even once the sweep is due. */
	if (c->lose)
		msleep(2 * NDK_SWEEP_LOST_MS);
	KUNIT_EXPECT_EQ(test, ndk_sweep_take(test, se, se->acq, true) +
			ndk_sweep_take(test, se, se->pcq, false), 0);
	ndk_close_all(test, se->p.in, se->p.pqp);
	ndk_close_all(test, se->p.c, se->p.aqp);
	return ok;
}

/*
 * Every request of a connection torn down the case's way comes back
 * once, with its own context and QP, round after round (fifty with
 * ndk_check.thorough=1, three in `make check`); with the device's flushes
 * dropped, ndk's sweep reports them as cancelled.
 */
static void ndk_sweep_teardown_test(struct kunit *test)
{
	const struct ndk_sweep_case *c = test->param_value;
	struct ndk_sweep_env *se = kunit_kzalloc(test, sizeof(*se), GFP_KERNEL);
	struct ndk_sweep_lost *lost = NULL;
	int round, rounds;

	KUNIT_ASSERT_NOT_NULL(test, se);
	se->e = test->priv;
	se->acq = ndk_sweep_cq(test, se->e);
	se->pcq = ndk_sweep_cq(test, se->e);
	se->l = ndk_pmem_new(test, se->e, NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					  NDK_MR_FLAG_RDMA_READ_SINK);
	se->rm = ndk_pmem_new(test, se->e, NDK_MR_FLAG_ALLOW_REMOTE_READ |
					   NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	if (c->lose)
		lost = ndk_sweep_lose(test);
	rounds = ndk_test_rounds(NDK_SWEEP_ROUNDS, NDK_SWEEP_FEW_ROUNDS);
	for (round = 0; round < rounds; round++)
		if (!ndk_sweep_round(test, se, c, round))
			break;
	ndk_sweep_found(test, lost);
	ndk_test_close(test, &se->acq->Header, se->acq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &se->pcq->Header, se->pcq->Dispatch->NdkCloseCq);
	ndk_pmem_free(test, se->l);
	ndk_pmem_free(test, se->rm);
}

/* One CQ and a local buffer, for the cases of one QP at a time. */
static struct ndk_sweep_env *ndk_sweep_env_one(struct kunit *test)
{
	struct ndk_sweep_env *se = kunit_kzalloc(test, sizeof(*se), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, se);
	se->e = test->priv;
	se->acq = ndk_sweep_cq(test, se->e);
	se->l = ndk_pmem_new(test, se->e, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	return se;
}

static void ndk_sweep_env_one_free(struct kunit *test,
				   struct ndk_sweep_env *se)
{
	ndk_test_close(test, &se->acq->Header, se->acq->Dispatch->NdkCloseCq);
	ndk_pmem_free(test, se->l);
}

/*
 * A receive posted to a QP that has failed is taken and comes back
 * cancelled, as one posted before the failure does, also when the device
 * loses both flushes; and a receive on a QP closed before it ever
 * connected still comes back, with the QP's context.
 */
static void ndk_sweep_late_receive_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	struct ndk_sweep_lost *lost = NULL;
	NDK_RESULT_EX r[2];
	NTSTATUS st;
	NDK_SGE sge;
	NDK_QP *qp;
	int lose;

	sge = ndk_pmem_sge(se->l, 0, 64);
	for (lose = 0; lose < 2; lose++) {
		if (lose)
			lost = ndk_sweep_lose(test);
		qp = ndk_sweep_qp(test, se, true);
		st = qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(0), &sge, 1);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
		qp->Dispatch->NdkFlush(qp);
		KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
		KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
		KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(0));
		st = qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(1), &sge, 1);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
		KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
		KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
		KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(1));
		if (lose)
			msleep(2 * NDK_SWEEP_LOST_MS);
		KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq,
									   r, 2),
				0U);
		ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	}
	ndk_sweep_found(test, lost);

	/* Closed with a receive posted: the receive still comes back. */
	qp = ndk_sweep_qp(test, se, true);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(2),
						       &sge, 1),
			STATUS_SUCCESS);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(2));
	KUNIT_EXPECT_PTR_EQ(test, r[0].QPContext, ndk_sweep_qpctx(se, true));
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq,
								   r, 2), 0U);
	ndk_sweep_env_one_free(test, se);
}

/*
 * A completion naming a request that has had its result, or a slot that
 * holds another request now, is dropped: a raw QP on the same CQ plays a
 * driver that reports late or twice. The request in the slot keeps it
 * and comes back once, when the QP is flushed.
 */
static void ndk_sweep_stale_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	struct ndk_test_lqp *l;
	struct ndk_qp *q;
	NDK_RESULT_EX r[4];
	NDK_SGE sge;
	NDK_QP *qp;
	u32 turn;

	qp = ndk_sweep_qp(test, se, true);
	q = container_of(qp, struct ndk_qp, ndk);
	turn = q->rq.mask + 1;
	sge = ndk_pmem_sge(se->l, 0, 64);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(0),
						       &sge, 1),
			STATUS_SUCCESS);
	l = ndk_test_loopback_qp(test, container_of(se->e->a,
						    struct ndk_adapter, ndk),
				 container_of(se->acq, struct ndk_cq, ndk)->ibcq);
	/*
	 * The receive's slot one turn later, and a send never posted; then
	 * two completions of the raw QP's own, which come after them.
	 */
	ndk_test_loopback_send(test, l, q->rq.tag | turn, q->sq.tag | 3, false);
	ndk_test_loopback_send(test, l, 0x1001, 0x1002, false);
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(se->acq, r, 2));
	KUNIT_EXPECT_EQ(test, (uintptr_t)r[0].RequestContext +
			(uintptr_t)r[1].RequestContext, 0x1001UL + 0x1002UL);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   4), 0U);
	/* The receive still holds its slot, and comes back once. */
	qp->Dispatch->NdkFlush(qp);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(0));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	/* Now that it has, the same completion again is dropped. */
	ndk_test_loopback_send(test, l, q->rq.tag, 0x1003, false);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_EQ(test, (uintptr_t)r[0].RequestContext, 0x1003UL);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   4), 0U);
	ndk_test_loopback_free(l);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_sweep_env_one_free(test, se);
}

/* A driver double's post_send that takes a request and forgets it. */
static int ndk_sweep_double_send(struct ib_qp *ibqp,
				 const struct ib_send_wr *wr,
				 const struct ib_send_wr **bad)
{
	return 0;
}

/* A driver double's post_recv that hands the request to the real QP. */
static int ndk_sweep_double_recv(struct ib_qp *ibqp,
				 const struct ib_recv_wr *wr,
				 const struct ib_recv_wr **bad)
{
	struct ndk_verbs_double *d = container_of(ibqp, struct ndk_verbs_double,
						  ibqp);

	return d->real->device->ops.post_recv(d->real, wr, bad);
}

/*
 * A QP of its own under a driver double that loses every send, marked
 * connected behind the driver's back, with one send posted and lost.
 */
static NDK_QP *ndk_sweep_lost_send(struct kunit *test,
				   struct ndk_sweep_env *se,
				   struct ndk_verbs_double **dp)
{
	struct ndk_verbs_double *d = kunit_kzalloc(test, sizeof(*d),
						   GFP_KERNEL);
	NDK_QP *qp = ndk_sweep_qp(test, se, true);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	NDK_SGE sge = ndk_pmem_sge(se->l, 0, 64);

	KUNIT_ASSERT_NOT_NULL(test, d);
	ndk_verbs_double_insert(d, q);
	d->dev.ops.post_send = ndk_sweep_double_send;
	d->dev.ops.post_recv = ndk_sweep_double_recv;
	ndk_qp_set_connected(q, true);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, ndk_sweep_ctx(0), &sge,
						    1, 0),
			STATUS_SUCCESS);
	*dp = d;
	return qp;
}

/* The sweep's wait in the repost case: many reposts fit in it. */
#define NDK_SWEEP_REPOST_MS	200

/*
 * A consumer that reposts every receive a failed QP flushes does not put
 * off the sweep of the initiator queue for good: a send the driver took
 * and lost comes back cancelled while the reposts go on, within a few of
 * the sweep's waits; and every repost comes back once.
 */
static void ndk_sweep_reposts_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	NDK_SGE sge = ndk_pmem_sge(se->l, 0, 64);
	int sends = 0, reposts = 0, i, n;
	struct ndk_verbs_double *d;
	NDK_RESULT_EX r[8];
	unsigned long end;
	unsigned int ms;
	NTSTATUS st;
	NDK_QP *qp;

	qp = ndk_sweep_lost_send(test, se, &d);
	ms = ndk_sweep_set_ms(NDK_SWEEP_REPOST_MS);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(1),
						       &sge, 1),
			STATUS_SUCCESS);
	qp->Dispatch->NdkFlush(qp);
	end = jiffies + msecs_to_jiffies(15 * NDK_SWEEP_REPOST_MS);
	while (!sends && time_before(jiffies, end)) {
		n = se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
							 ARRAY_SIZE(r));
		for (i = 0; i < n; i++) {
			if (r[i].RequestContext == ndk_sweep_ctx(0)) {
				sends++;
				continue;
			}
			KUNIT_EXPECT_EQ(test, r[i].Type,
					NdkOperationTypeReceive);
			st = qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(1),
						      &sge, 1);
			KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
			reposts++;
		}
		usleep_range(1000, 2000);
	}
	KUNIT_EXPECT_EQ_MSG(test, sends, 1, "after %d reposts", reposts);
	KUNIT_EXPECT_GT(test, reposts, 0);
	/* The last repost comes back, and nothing after it. */
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(1));
	msleep(2 * NDK_SWEEP_REPOST_MS);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   1), 0U);
	ndk_verbs_double_remove(d, container_of(qp, struct ndk_qp, ndk));
	ndk_sweep_set_ms(ms);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_sweep_env_one_free(test, se);
}

/*
 * A QP the device moves to the error state by itself (a fatal error
 * event, as a CQ overflow or a protocol error raises) needs no call of
 * the consumer's: a send the driver took and lost comes back cancelled,
 * and the initiator calls are refused from then on. The event comes
 * from the test, as the device would raise it.
 */
static void ndk_sweep_qp_fatal_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	struct ndk_sweep_lost *lost = ndk_sweep_lose(test);
	NDK_SGE sge = ndk_pmem_sge(se->l, 0, 64);
	struct ndk_verbs_double *d;
	struct ib_event ev;
	NDK_RESULT_EX r[2];
	NDK_QP *qp;

	qp = ndk_sweep_lost_send(test, se, &d);
	KUNIT_ASSERT_NOT_NULL(test, d->real->event_handler);
	ev = (struct ib_event){ .device = d->real->device,
				.element.qp = d->real,
				.event = IB_EVENT_QP_FATAL };
	d->real->event_handler(&ev, d->real->qp_context);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(0));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkSend(qp, ndk_sweep_ctx(1), &sge,
						    1, 0),
			STATUS_CONNECTION_INVALID);
	msleep(2 * NDK_SWEEP_LOST_MS);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   2), 0U);
	ndk_verbs_double_remove(d, container_of(qp, struct ndk_qp, ndk));
	ndk_sweep_found(test, lost);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_sweep_env_one_free(test, se);
}

/*
 * A request the device keeps while the ones behind it complete, as siw
 * keeps a read until its answer comes, after the writes and sends posted
 * behind it: the queue takes requests as long as fewer than its depth
 * wait, however many turns of its ring the others make past the old
 * one's slot; and when the QP fails the sweep still finds the old one,
 * and reports it once. A driver double loses every send; a raw QP on the
 * CQ completes each but the first.
 */
static void ndk_sweep_straggler_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	struct ndk_sweep_lost *lost = ndk_sweep_lose(test);
	NDK_SGE sge = ndk_pmem_sge(se->l, 0, 64);
	struct ndk_verbs_double *d;
	struct ndk_test_lqp *l;
	u32 turns, i, seq, got;
	NDK_RESULT_EX r[2];
	struct ndk_qp *q;
	NTSTATUS st;
	NDK_QP *qp;

	qp = ndk_sweep_lost_send(test, se, &d);
	q = container_of(qp, struct ndk_qp, ndk);
	turns = 3 * (q->sq.mask + 1);
	l = ndk_test_loopback_qp(test, container_of(se->e->a,
						    struct ndk_adapter, ndk),
				 container_of(se->acq, struct ndk_cq, ndk)->ibcq);
	for (i = 1; i <= turns; i++) {
		st = qp->Dispatch->NdkSend(qp, ndk_sweep_ctx(1), &sge, 1, 0);
		if (st != STATUS_SUCCESS) {
			KUNIT_FAIL(test, "send %u of %u behind the first: 0x%08x",
				   i, turns, st);
			break;
		}
		/* The send's completion, then one of the raw QP's own. */
		seq = q->sq.head - 1;
		ndk_test_loopback_send(test, l, q->sq.tag | seq, 0x1000 + i,
				       false);
		KUNIT_ASSERT_TRUE(test, ndk_penv_poll(se->acq, r, 2));
		got = r[0].RequestContext == ndk_sweep_ctx(1) ? 0 : 1;
		KUNIT_EXPECT_PTR_EQ(test, r[got].RequestContext,
				    ndk_sweep_ctx(1));
		KUNIT_EXPECT_EQ(test, r[got].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_EQ(test, (uintptr_t)r[!got].RequestContext,
				(uintptr_t)0x1000 + i);
	}
	qp->Dispatch->NdkFlush(qp);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(0));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	msleep(2 * NDK_SWEEP_LOST_MS);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   2), 0U);
	ndk_test_loopback_free(l);
	ndk_verbs_double_remove(d, q);
	ndk_sweep_found(test, lost);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_sweep_env_one_free(test, se);
}

/* How many queues @cq's sweep list holds; stops counting past @max. */
static int ndk_sweep_listed(NDK_CQ *cq, int max)
{
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	struct list_head *pos;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&c->sweep_lock, flags);
	list_for_each(pos, &c->sweeps)
		if (++n > max)
			break;
	spin_unlock_irqrestore(&c->sweep_lock, flags);
	return n;
}

/*
 * A QP closed unpolled after the sweep listed its queues: its retirement
 * sweeps them again (ndk_qp_sweep_now()) while they are still on the
 * CQ's list, which must leave them listed once. A send the driver took
 * and lost and a receive whose flush is lost each come back once,
 * cancelled, with the QP's context, and nothing after them.
 */
static void ndk_sweep_relisted_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	struct ndk_sweep_lost *lost = ndk_sweep_lose(test);
	NDK_SGE sge = ndk_pmem_sge(se->l, 0, 64);
	struct ndk_verbs_double *d;
	unsigned long end;
	NDK_RESULT_EX r[4];
	struct ndk_qp *q;
	NDK_QP *qp;
	int i, seen = 0;

	qp = ndk_sweep_lost_send(test, se, &d);
	q = container_of(qp, struct ndk_qp, ndk);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(1),
						       &sge, 1),
			STATUS_SUCCESS);
	qp->Dispatch->NdkFlush(qp);
	/* The sweep work lists both queues, then nothing polls them. */
	end = jiffies + NDK_TEST_TIMEOUT;
	while (ndk_sweep_listed(se->acq, 2) < 2 && time_before(jiffies, end))
		usleep_range(1000, 2000);
	ndk_verbs_double_remove(d, q);
	KUNIT_ASSERT_EQ(test, ndk_sweep_listed(se->acq, 2), 2);
	KUNIT_ASSERT_FALSE(test, list_empty(&q->sq.sweep));
	KUNIT_ASSERT_FALSE(test, list_empty(&q->rq.sweep));

	/*
	 * The close queues the retirement's sweep before it returns; it
	 * runs once flushed, and the QP is kept until its queues are swept.
	 */
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	KUNIT_EXPECT_EQ(test, atomic_read(&q->retire), (int)NDK_RETIRE_WAIT);
	flush_delayed_work(&q->sweep_work);
	KUNIT_EXPECT_EQ(test, ndk_sweep_listed(se->acq, 2), 2);

	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 2));
	for (i = 0; i < 2; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext,
				    ndk_sweep_qpctx(se, true));
		if (r[i].RequestContext == ndk_sweep_ctx(0))
			seen |= BIT(0);
		else if (r[i].RequestContext == ndk_sweep_ctx(1))
			seen |= BIT(1);
	}
	KUNIT_EXPECT_EQ(test, seen, (int)(BIT(0) | BIT(1)));
	msleep(2 * NDK_SWEEP_LOST_MS);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   4), 0U);
	ndk_sweep_found(test, lost);
	ndk_sweep_env_one_free(test, se);
}

/* What ndk_sweep_double_refuse() returns. */
static int ndk_sweep_refusal = -ENOTCONN;

/*
 * A driver double's post_recv that refuses, by default as siw does while
 * another thread holds its QP's state lock to change the state.
 */
static int ndk_sweep_double_refuse(struct ib_qp *ibqp,
				   const struct ib_recv_wr *wr,
				   const struct ib_recv_wr **bad)
{
	*bad = wr;
	return READ_ONCE(ndk_sweep_refusal);
}

/*
 * A receive the driver refuses as not connected, as siw does while its
 * QP leaves RTS, on a QP that was connected or that NdkFlush is failing:
 * the connection is ending, so the receive is taken and comes back
 * cancelled once, after the receive posted before it. Before the QP has
 * ever been connected that refusal stands, as any other refusal does
 * (out of memory), and nothing completes for it.
 */
static void ndk_sweep_refused_receive_test(struct kunit *test)
{
	struct ndk_sweep_env *se = ndk_sweep_env_one(test);
	struct ndk_sweep_lost *lost = ndk_sweep_lose(test);
	NDK_SGE sge = ndk_pmem_sge(se->l, 0, 64);
	struct ndk_verbs_double *d;
	int i, got, recvs = 0, sends = 0;
	NDK_RESULT_EX r[4];
	struct ndk_qp *q;
	NTSTATUS st;
	NDK_QP *qp;

	qp = ndk_sweep_lost_send(test, se, &d);
	q = container_of(qp, struct ndk_qp, ndk);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(1),
						       &sge, 1),
			STATUS_SUCCESS);
	d->dev.ops.post_recv = ndk_sweep_double_refuse;
	/* Any other refusal stands: nothing completes for it. */
	WRITE_ONCE(ndk_sweep_refusal, -ENOMEM);
	st = qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(5), &sge, 1);
	KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	WRITE_ONCE(ndk_sweep_refusal, -ENOTCONN);
	st = qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(2), &sge, 1);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	d->dev.ops.post_recv = ndk_sweep_double_recv;
	qp->Dispatch->NdkFlush(qp);
	/* Not an assertion: the double must leave before the QP closes. */
	got = ndk_penv_poll(se->acq, r, 3) ? 3 : 0;
	KUNIT_EXPECT_EQ(test, got, 3);
	for (i = 0; i < got; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
		if (r[i].Type != NdkOperationTypeReceive) {
			KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
					    ndk_sweep_ctx(0));
			sends++;
			continue;
		}
		KUNIT_EXPECT_PTR_EQ(test, r[i].RequestContext,
				    ndk_sweep_ctx(1 + recvs));
		recvs++;
	}
	KUNIT_EXPECT_EQ(test, sends, 1);
	msleep(2 * NDK_SWEEP_LOST_MS);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   4), 0U);
	ndk_verbs_double_remove(d, q);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);

	/* Never connected: refused; after NdkFlush: taken, cancelled. */
	qp = ndk_sweep_qp(test, se, true);
	q = container_of(qp, struct ndk_qp, ndk);
	d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d);
	ndk_verbs_double_insert(d, q);
	d->dev.ops.post_recv = ndk_sweep_double_refuse;
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(3),
						       &sge, 1),
			STATUS_CONNECTION_INVALID);
	qp->Dispatch->NdkFlush(qp);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ndk_sweep_ctx(4),
						       &sge, 1),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_penv_poll(se->acq, r, 1));
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, ndk_sweep_ctx(4));
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	msleep(2 * NDK_SWEEP_LOST_MS);
	KUNIT_EXPECT_EQ(test, se->acq->Dispatch->NdkGetCqResultsEx(se->acq, r,
								   4), 0U);
	ndk_verbs_double_remove(d, q);
	ndk_sweep_found(test, lost);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_sweep_env_one_free(test, se);
}

/* What the sweep has reported on @cq so far. */
static u64 ndk_sweep_swept(NDK_CQ *cq)
{
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += per_cpu_ptr(c->stats, cpu)->v[NDK_STAT_CQ_SWEPT];
	return n;
}

/*
 * Silent requests the device executed have no result, also at the tail
 * of a queue that fails with nothing posted after them: the sweep must
 * not report a request that succeeded as cancelled. The peer's receives
 * show that the sends arrived; any result of them must then be the
 * device's own (a send whose acknowledgment the failure overtook),
 * never the sweep's.
 */
static void ndk_sweep_silent_tail_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	NDK_CQ *acq = ndk_sweep_cq(test, e), *pcq = ndk_sweep_cq(test, e);
	struct ndk_qpspec q = { .depth = 8, .sge = { 1, 1 }, .acq = acq,
				.pcq = pcq };
	struct ndk_penv *pe = ndk_penv_new_spec(test, e, true, &q);
	NDK_QP *aqp = pe->p.aqp, *pqp = pe->p.pqp;
	NDK_RESULT_EX r[8];
	unsigned int ms;
	NTSTATUS st;
	ULONG got;
	NDK_SGE sge;
	u64 swept;
	int i;

	for (i = 0; i < 4; i++) {
		sge = ndk_penv_sge(pe, 64 * i, 16);
		st = pqp->Dispatch->NdkReceive(pqp,
					       ndk_sweep_ctx(NDK_SWEEP_DEPTH + i),
					       &sge, 1);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	}
	for (i = 0; i < 4; i++) {
		sge = ndk_penv_sge(pe, 1024 + 64 * i, 16);
		st = aqp->Dispatch->NdkSend(aqp, ndk_sweep_ctx(i), &sge, 1,
					    NDK_OP_FLAG_SILENT_SUCCESS);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	}
	KUNIT_ASSERT_TRUE(test, ndk_penv_poll(pcq, r, 4));
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
	swept = ndk_sweep_swept(acq);
	ms = ndk_sweep_set_ms(NDK_SWEEP_LOST_MS);
	aqp->Dispatch->NdkFlush(aqp);
	msleep(5 * NDK_SWEEP_LOST_MS);
	got = acq->Dispatch->NdkGetCqResultsEx(acq, r, ARRAY_SIZE(r));
	ndk_sweep_set_ms(ms);
	KUNIT_EXPECT_EQ_MSG(test, ndk_sweep_swept(acq) - swept, 0ULL,
			    "%u results", got);
	for (i = 0; i < got; i++)
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
	ndk_penv_free(test, pe);
	ndk_test_close(test, &acq->Header, acq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &pcq->Header, pcq->Dispatch->NdkCloseCq);
}

/* The QP a cleaning driver's case closes: one of its own, or on an SRQ. */
static const bool ndk_sweep_cleaner_p[] = { false, true };

static void ndk_sweep_cleaner_desc(const bool *srq, char *desc)
{
	strscpy(desc, *srq ? "QP on an SRQ" : "QP", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_sweep_cleaner, ndk_sweep_cleaner_p,
		  ndk_sweep_cleaner_desc);

/* An armed CQ whose notification signals @w. */
static noinline NDK_CQ *ndk_sweep_armed_cq(struct kunit *test,
					   struct ndk_cenv *e,
					   struct ndk_wait *w)
{
	struct ndk_wait cw;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	ndk_wait_init(w);
	ndk_wait_init(&cw);
	st = e->a->Dispatch->NdkCreateCq(e->a, 16, ndk_test_request_cb, w,
					 NULL, ndk_test_create_cb, &cw, &cq);
	cq = container_of(ndk_created(test, st, &cw, cq), NDK_CQ, Header);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	return cq;
}

/*
 * Poll @a and @b, which must have no result left, until @done; false if
 * it does not come.
 */
static noinline bool ndk_sweep_poll_until(struct kunit *test, NDK_CQ *a,
					  NDK_CQ *b, struct completion *done)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	NDK_RESULT r[4];

	while (!try_wait_for_completion(done)) {
		KUNIT_EXPECT_EQ(test, a->Dispatch->NdkGetCqResults(a, r, 4), 0U);
		KUNIT_EXPECT_EQ(test, b->Dispatch->NdkGetCqResults(b, r, 4), 0U);
		if (time_after(jiffies, end))
			return false;
		usleep_range(5000, 10000);
	}
	return true;
}

/*
 * A driver that deletes a destroyed QP's completions from its CQs (mlx5,
 * mlx4; played here by the suites' cleaner) takes no result from the
 * consumer: a QP closed while its CQs still hold the results of a
 * receive it took (from its own queue, or from an SRQ) and of a send
 * the peer got keeps its verbs QP until they are polled. Each comes back
 * once, as the device reported it, and the verbs QP goes once the CQs
 * were polled empty.
 */
static void ndk_sweep_cleaner_test(struct kunit *test)
{
	const bool *on_srq = test->param_value;
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_pmem *m = ndk_pmem_new(test, e,
					  NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	void *qpctx = (void *)0x5c5c;
	struct ndk_wait rw, iw, w;
	NDK_CQ *rcq = ndk_sweep_armed_cq(test, e, &rw);
	NDK_CQ *icq = ndk_sweep_armed_cq(test, e, &iw);
	struct ndk_cleaner *cl = kunit_kzalloc(test, sizeof(*cl), GFP_KERNEL);
	struct sockaddr_in dst;
	NDK_SRQ *srq = NULL;
	NDK_QP *qp = NULL;
	struct ndk_pair p;
	NDK_RESULT r[4];
	NDK_SGE sge;
	NTSTATUS st;
	ULONG got;

	KUNIT_ASSERT_NOT_NULL(test, cl);
	ndk_wait_init(&w);
	if (*on_srq) {
		st = e->pd->Dispatch->NdkCreateSrq(e->pd, 8, 1, 0, NULL, NULL,
						   NULL, ndk_test_create_cb,
						   &w, &srq);
		srq = container_of(ndk_created(test, st, &w, srq), NDK_SRQ,
				   Header);
		ndk_wait_init(&w);
		st = e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, rcq, icq, srq,
							 qpctx, 8, 1, 0,
							 ndk_test_create_cb,
							 &w, &qp);
	} else {
		st = e->pd->Dispatch->NdkCreateQp(e->pd, rcq, icq, qpctx, 8, 8,
						  1, 1, 0, ndk_test_create_cb,
						  &w, &qp);
	}
	qp = container_of(ndk_created(test, st, &w, qp), NDK_QP, Header);
	sge = ndk_pmem_sge(m, 0, 64);
	st = srq ? srq->Dispatch->NdkSrqReceive(srq, (void *)0x31, &sge, 1) :
		   qp->Dispatch->NdkReceive(qp, (void *)0x31, &sge, 1);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	p.c = ndk_cenv_connector(test, e);
	p.aqp = ndk_cenv_qp(test, e);
	p.pqp = qp;
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	memcpy(m->buf + 128, "to the closed QP", 17);
	memcpy(m->buf + 256, "from the closed QP", 19);
	sge = ndk_pmem_sge(m, 192, 64);
	KUNIT_ASSERT_EQ(test, p.aqp->Dispatch->NdkReceive(p.aqp, (void *)0x21,
							  &sge, 1),
			STATUS_SUCCESS);
	sge = ndk_pmem_sge(m, 128, 17);
	KUNIT_ASSERT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)0x20,
						       &sge, 1, 0),
			STATUS_SUCCESS);
	sge = ndk_pmem_sge(m, 256, 19);
	KUNIT_ASSERT_EQ(test, qp->Dispatch->NdkSend(qp, (void *)0x30, &sge, 1,
						    0),
			STATUS_SUCCESS);
	/* The peer's results; each notification: the CQ holds its result. */
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2), 2U);
	KUNIT_ASSERT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, r[1].Status, STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&rw));
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&iw));
	ndk_cleaner_start(cl, rcq, icq, qp);
	ndk_pair_close(test, &p);

	got = ndk_poll_results(rcq, r, 1);
	KUNIT_EXPECT_EQ_MSG(test, got, 1U, "the receive the QP took");
	if (got) {
		KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x31);
		KUNIT_EXPECT_EQ(test, r[0].BytesTransferred, 17U);
		/* An SRQ's receive names a closed QP no more. */
		KUNIT_EXPECT_PTR_EQ(test, r[0].QPContext, srq ? NULL : qpctx);
	}
	got = ndk_poll_results(icq, r, 1);
	KUNIT_EXPECT_EQ_MSG(test, got, 1U, "the send the peer got");
	if (got) {
		KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)0x30);
		KUNIT_EXPECT_PTR_EQ(test, r[0].QPContext, qpctx);
	}
	KUNIT_EXPECT_TRUE_MSG(test,
			      ndk_sweep_poll_until(test, rcq, icq,
						   &cl->destroyed),
			      "the verbs QP outlived the polls");
	ndk_cleaner_stop(cl);
	NDK_EXPECT_MEMEQ(test, m->buf, "to the closed QP", 17);
	NDK_EXPECT_MEMEQ(test, m->buf + 192, "from the closed QP", 19);
	if (srq)
		ndk_test_close(test, &srq->Header, srq->Dispatch->NdkCloseSrq);
	ndk_test_close(test, &rcq->Header, rcq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &icq->Header, icq->Dispatch->NdkCloseCq);
	ndk_pmem_free(test, m);
}

static struct kunit_case ndk_sweep_cases[] = {
	KUNIT_CASE_PARAM(ndk_sweep_teardown_test, ndk_sweep_gen_params),
	KUNIT_CASE(ndk_sweep_late_receive_test),
	KUNIT_CASE(ndk_sweep_stale_test),
	KUNIT_CASE(ndk_sweep_reposts_test),
	KUNIT_CASE(ndk_sweep_qp_fatal_test),
	KUNIT_CASE(ndk_sweep_straggler_test),
	KUNIT_CASE(ndk_sweep_relisted_test),
	KUNIT_CASE(ndk_sweep_refused_receive_test),
	KUNIT_CASE(ndk_sweep_silent_tail_test),
	KUNIT_CASE_PARAM(ndk_sweep_cleaner_test, ndk_sweep_cleaner_gen_params),
	{}
};

NDK_SUITE(sweep, ndk_conn_init_test, ndk_conn_exit_test);
