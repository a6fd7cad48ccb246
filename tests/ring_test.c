// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_ring, the tests of ndk/ring.c: the work-request ring and its owner
 * table. A request occupies its queue until its result is polled; each
 * result comes back once with its own context and type, silent successes
 * never, for the initiator queue, the receive queue and an SRQ.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include "ndk_tests.h"
#include "sweep.h"

/* The queues ndk_post_ring_test() fills. */
enum ndk_ring_queue {
	NDK_RING_SQ,
	NDK_RING_RQ,
	NDK_RING_SRQ,
};

/**
 * struct ndk_ring_case - a queue ndk_post_ring_test() fills and drains
 * @name: the case
 * @queue: the queue
 * @interleave: rounds of posting until refused, polling half of what is
 *	waiting in between; otherwise one full queue
 */
struct ndk_ring_case {
	const char *name;
	enum ndk_ring_queue queue;
	bool interleave;
};

static const struct ndk_ring_case ndk_ring_queues[] = {
	{ "initiator queue full", NDK_RING_SQ, false },
	{ "initiator queue interleaved", NDK_RING_SQ, true },
	{ "receive queue full", NDK_RING_RQ, false },
	{ "receive queue interleaved", NDK_RING_RQ, true },
	{ "SRQ full", NDK_RING_SRQ, false },
	{ "SRQ interleaved", NDK_RING_SRQ, true },
};

static void ndk_ring_desc(const struct ndk_ring_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_ring, ndk_ring_queues, ndk_ring_desc);

#define NDK_RING_DEPTH	8
#define NDK_RING_ROUNDS	6
#define NDK_RING_MAX	128
#define NDK_RING_CTX	0x30000

/*
 * Initiator requests by index modulo 5, silent ones between the others;
 * reads may complete out of order with the rest (siw), never lost.
 */
static const struct {
	NDK_OPERATION_TYPE type;
	ULONG flags;
} ndk_ring_ops[] = {
	{ NdkOperationTypeWrite, 0 },
	{ NdkOperationTypeWrite, NDK_OP_FLAG_SILENT_SUCCESS },
	{ NdkOperationTypeRead, 0 },
	{ NdkOperationTypeRead, NDK_OP_FLAG_SILENT_SUCCESS },
	{ NdkOperationTypeWrite, NDK_OP_FLAG_SILENT_SUCCESS },
};

/**
 * struct ndk_ring_env - a connection with the queue of a case
 * @c: the case
 * @pe: the connection; the passive QP on @rcq, on @srq if there is one
 * @l: local buffer of the initiator requests
 * @rm: their remote buffer
 * @rcq: CQ of the passive QP
 * @srq: the SRQ of the SRQ cases
 * @posted: requests taken so far, by index
 * @pending: results expected and not polled yet
 * @seen: results polled, by index
 */
struct ndk_ring_env {
	const struct ndk_ring_case *c;
	struct ndk_penv *pe;
	struct ndk_pmem *l, *rm;
	NDK_CQ *rcq;
	NDK_SRQ *srq;
	int posted;
	int pending;
	u8 seen[NDK_RING_MAX];
};

/* Request @i has a result: all do except the silent successes. */
static bool ndk_ring_result(struct ndk_ring_env *re, int i)
{
	return re->c->queue != NDK_RING_SQ ||
	       !(ndk_ring_ops[i % 5].flags & NDK_OP_FLAG_SILENT_SUCCESS);
}

static NDK_OPERATION_TYPE ndk_ring_type(struct ndk_ring_env *re, int i)
{
	return re->c->queue == NDK_RING_SQ ? ndk_ring_ops[i % 5].type :
					     NdkOperationTypeReceive;
}

/* Post request @re->posted on the case's queue; count it if taken. */
static NTSTATUS ndk_ring_post(struct kunit *test, struct ndk_ring_env *re)
{
	int i = re->posted;
	void *ctx = (void *)(uintptr_t)(NDK_RING_CTX + i);
	NDK_SGE sge = ndk_penv_sge(re->pe, 32 * (i % 64), 32);
	NDK_QP *qp = re->pe->p.aqp;
	ULONG flags = ndk_ring_ops[i % 5].flags;
	NTSTATUS st;

	if (i >= NDK_RING_MAX) {
		KUNIT_FAIL(test, "more than %d requests taken", NDK_RING_MAX);
		return STATUS_INTERNAL_ERROR;
	}
	switch (re->c->queue) {
	case NDK_RING_SQ:
		sge = ndk_pmem_sge(re->l, 64 * (i % 32), 64);
		if (ndk_ring_ops[i % 5].type == NdkOperationTypeRead)
			st = qp->Dispatch->NdkRead(qp, ctx, &sge, 1,
						   ndk_pmem_va(re->rm, 64 * (i % 32)),
						   ndk_pmem_rtok(re->rm), flags);
		else
			st = qp->Dispatch->NdkWrite(qp, ctx, &sge, 1,
						    ndk_pmem_va(re->rm, 64 * (i % 32)),
						    ndk_pmem_rtok(re->rm), flags);
		break;
	case NDK_RING_RQ:
		qp = re->pe->p.pqp;
		st = qp->Dispatch->NdkReceive(qp, ctx, &sge, 1);
		break;
	default:
		st = re->srq->Dispatch->NdkSrqReceive(re->srq, ctx, &sge, 1);
		break;
	}
	if (st == STATUS_SUCCESS) {
		re->posted++;
		re->pending += ndk_ring_result(re, i);
	}
	return st;
}

/*
 * Let the last @n requests complete without polling them. Receives get
 * a message each, then an RDMA read of the receiving side's memory
 * follows the messages: its responder takes requests in order, so once
 * the read is back every receive's result is in its CQ (siw completes a
 * send as soon as TCP has its data, before the peer took it). Initiator
 * requests, whose queue is full, need nothing but time.
 *
 * Return: false if a send or the read did not complete; the test ends
 * then.
 */
static bool ndk_ring_complete(struct kunit *test, struct ndk_ring_env *re,
			      int n)
{
	struct ndk_cenv *e = test->priv;
	NDK_RESULT_EX r[NDK_RING_DEPTH];
	NDK_QP *qp = re->pe->p.aqp;
	NDK_SGE sge;
	int k, i;

	if (re->c->queue == NDK_RING_SQ) {
		msleep(300);
		return true;
	}
	while (n > 0) {
		k = min(n, NDK_RING_DEPTH);
		for (i = 0; i < k; i++)
			KUNIT_EXPECT_EQ(test, ndk_penv_send(re->pe, 0x7000, i,
							    2048, 0),
					STATUS_SUCCESS);
		if (!ndk_penv_poll(e->cq, r, k)) {
			KUNIT_FAIL(test, "sends did not complete");
			return false;
		}
		for (i = 0; i < k; i++)
			KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		n -= k;
	}
	sge = ndk_pmem_sge(re->l, 0, 64);
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkRead(qp, NULL, &sge, 1,
						    ndk_pmem_va(re->rm, 0),
						    ndk_pmem_rtok(re->rm), 0),
			STATUS_SUCCESS);
	if (!ndk_penv_poll(e->cq, r, 1)) {
		KUNIT_FAIL(test, "the read behind the sends did not complete");
		return false;
	}
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[0].Type, (ULONG)NdkOperationTypeRead);
	return true;
}

/* The CQ of the case's queue. */
static NDK_CQ *ndk_ring_cq(struct kunit *test, struct ndk_ring_env *re)
{
	return re->c->queue == NDK_RING_SQ ?
	       ((struct ndk_cenv *)test->priv)->cq : re->rcq;
}

/*
 * Poll @n results; each is a request's own, once, with its own type.
 *
 * Return: false if one is missing or unknown; the test ends then, with
 * its objects closed for the suites after it.
 */
static bool ndk_ring_poll(struct kunit *test, struct ndk_ring_env *re, int n)
{
	NDK_CQ *cq = ndk_ring_cq(test, re);
	NDK_RESULT_EX x;
	uintptr_t i;

	for (; n > 0; n--) {
		if (!ndk_penv_poll(cq, &x, 1)) {
			KUNIT_FAIL(test, "%d results missing", n);
			return false;
		}
		i = (uintptr_t)x.RequestContext - NDK_RING_CTX;
		if (i >= (uintptr_t)re->posted) {
			KUNIT_FAIL(test, "unknown result %p", x.RequestContext);
			return false;
		}
		KUNIT_EXPECT_TRUE_MSG(test, ndk_ring_result(re, i),
				      "silent request %lu has a result", i);
		KUNIT_EXPECT_EQ_MSG(test, re->seen[i], 0,
				    "request %lu polled twice", i);
		KUNIT_EXPECT_EQ_MSG(test, x.Type, (ULONG)ndk_ring_type(re, i),
				    "request %lu", i);
		KUNIT_EXPECT_EQ_MSG(test, x.Status, STATUS_SUCCESS,
				    "request %lu", i);
		KUNIT_EXPECT_PTR_EQ(test, x.QPContext, test->priv);
		re->seen[i]++;
		re->pending--;
	}
	return true;
}

/*
 * Post until the queue refuses: it takes at most its depth, exactly its
 * depth when @empty, and refuses with STATUS_INSUFFICIENT_RESOURCES.
 *
 * Return: how many it took.
 */
static int ndk_ring_fill(struct kunit *test, struct ndk_ring_env *re,
			 bool empty)
{
	NTSTATUS st;
	int k;

	for (k = 0; k < 2 * NDK_RING_DEPTH; k++) {
		st = ndk_ring_post(test, re);
		if (st)
			break;
	}
	KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_LE(test, k, NDK_RING_DEPTH);
	if (empty)
		KUNIT_EXPECT_EQ(test, k, NDK_RING_DEPTH);
	else
		KUNIT_EXPECT_GE(test, k, 1);
	return k;
}

static struct ndk_ring_env *ndk_ring_env_new(struct kunit *test,
					     const struct ndk_ring_case *c)
{
	struct ndk_ring_env *re = kunit_kzalloc(test, sizeof(*re), GFP_KERNEL);
	struct ndk_cenv *e = test->priv;
	struct ndk_qpspec q = { .depth = NDK_RING_DEPTH, .sge = { 1, 1 },
				.acq = e->cq };
	NDK_SRQ *unused_srq = NULL;
	NDK_CQ *unused_cq = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, re);
	re->c = c;
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateCq(e->a, 4 * NDK_RING_DEPTH, NULL, NULL,
					 NULL, ndk_test_create_cb, &w,
					 &unused_cq);
	re->rcq = container_of(ndk_created(test, st, &w, unused_cq), NDK_CQ,
			       Header);
	if (c->queue == NDK_RING_SRQ) {
		ndk_wait_init(&w);
		st = e->pd->Dispatch->NdkCreateSrq(e->pd, NDK_RING_DEPTH, 1, 0,
						   NULL, NULL, NULL,
						   ndk_test_create_cb, &w,
						   &unused_srq);
		re->srq = container_of(ndk_created(test, st, &w, unused_srq),
				       NDK_SRQ, Header);
	}
	q.pcq = re->rcq;
	q.srq = re->srq;
	re->pe = ndk_penv_new_spec(test, e, true, &q);
	re->l = ndk_pmem_new(test, e, NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				      NDK_MR_FLAG_RDMA_READ_SINK);
	re->rm = ndk_pmem_new(test, e, NDK_MR_FLAG_ALLOW_REMOTE_READ |
				       NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
	return re;
}

static void ndk_ring_env_free(struct kunit *test, struct ndk_ring_env *re)
{
	ndk_penv_free(test, re->pe);
	if (re->srq)
		ndk_test_close(test, &re->srq->Header,
			       re->srq->Dispatch->NdkCloseSrq);
	ndk_test_close(test, &re->rcq->Header, re->rcq->Dispatch->NdkCloseCq);
	ndk_pmem_free(test, re->l);
	ndk_pmem_free(test, re->rm);
}

/*
 * A request occupies its queue until its result is polled, however long
 * it has been complete in the device: a queue full of completed, unpolled
 * requests refuses the next one with STATUS_INSUFFICIENT_RESOURCES
 * rather than overwrite what they will report. Every result then comes
 * back once, with its own RequestContext and Type; silent successes
 * never do, each retired by its own completion, which the poll drops. For
 * the initiator queue, the receive queue and an SRQ, full at once and in
 * rounds that poll half of what waits.
 */
static void ndk_post_ring_test(struct kunit *test)
{
	const struct ndk_ring_case *c = test->param_value;
	struct ndk_ring_env *re = ndk_ring_env_new(test, c);
	NDK_CQ *cq = ndk_ring_cq(test, re);
	NDK_RESULT_EX x;
	int k, round, i;

	if (!c->interleave) {
		k = ndk_ring_fill(test, re, true);
		if (!ndk_ring_complete(test, re, k))
			goto out;
		KUNIT_EXPECT_EQ(test, ndk_ring_post(test, re),
				STATUS_INSUFFICIENT_RESOURCES);
		if (!ndk_ring_poll(test, re, re->pending))
			goto out;
		/*
		 * A silent read may complete after the results behind it
		 * (siw): a poll that returns nothing retires it.
		 */
		msleep(50);
		KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResultsEx(cq, &x, 1),
				0U);
		/* Everything is retired: the queue takes its depth again. */
		k = ndk_ring_fill(test, re, true);
		if (!ndk_ring_complete(test, re, k))
			goto out;
	} else {
		for (round = 0; round < NDK_RING_ROUNDS; round++) {
			k = ndk_ring_fill(test, re, !round);
			if (!ndk_ring_complete(test, re, k) ||
			    (re->pending &&
			     !ndk_ring_poll(test, re, (re->pending + 1) / 2)))
				goto out;
		}
	}
	if (!ndk_ring_poll(test, re, re->pending))
		goto out;
	msleep(50);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResultsEx(cq, &x, 1), 0U);
	for (i = 0; i < re->posted; i++)
		KUNIT_EXPECT_EQ_MSG(test, re->seen[i],
				    (u8)ndk_ring_result(re, i),
				    "request %d", i);
out:
	ndk_ring_env_free(test, re);
}

/* Requests the ring stress posts: all of them with ndk_check.thorough=1. */
#define NDK_RING_STRESS		200000
#define NDK_RING_STRESS_FEW	20000
/* Completions the double remembers, to replay one late or twice. */
#define NDK_RING_HISTORY	64
/* Requests the double's device queue holds: more than a QP may post. */
#define NDK_RING_DEVQ		64

/**
 * struct ndk_ring_double - a driver double under an NDK QP and its CQ
 * @vd: the double; its post_send queues the request, and completions
 *	name its real QP
 * @lock: serializes the poster's CPU and the poller's in the double
 *	(the device's own lock)
 * @queue: wr_ids posted and not completed yet, in order
 * @head: where the next posted wr_id goes in @queue
 * @tail: the next to complete
 * @done: wr_ids completed lately, in a circle
 * @ndone: how many were ever completed
 * @polls: calls of the poll double
 * @replays: completions replayed late or twice
 */
struct ndk_ring_double {
	struct ndk_verbs_double vd;
	/* The device's own: the poster's CPU and the poller's. */
	spinlock_t lock;
	u64 queue[NDK_RING_DEVQ];
	u32 head, tail;
	u64 done[NDK_RING_HISTORY];
	u32 ndone, polls, replays;
};

/* The double of the running case: the poll double has only the ib_cq. */
static struct ndk_ring_double *ndk_ring_dbl;

static int ndk_ring_double_send(struct ib_qp *ibqp,
				const struct ib_send_wr *wr,
				const struct ib_send_wr **bad)
{
	struct ndk_ring_double *d = container_of(ibqp, struct ndk_ring_double,
						 vd.ibqp);
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&d->lock, flags);
	if (d->head - d->tail == NDK_RING_DEVQ) {
		*bad = wr;
		err = -ENOMEM;
	} else {
		d->queue[d->head++ % NDK_RING_DEVQ] = wr->wr_id;
	}
	spin_unlock_irqrestore(&d->lock, flags);
	return err;
}

static void ndk_ring_double_wc(struct ndk_ring_double *d, struct ib_wc *wc,
			       u64 wr_id, enum ib_wc_status status)
{
	*wc = (struct ib_wc){ .wr_id = wr_id, .status = status,
			      .opcode = IB_WC_SEND, .qp = d->vd.real };
}

/*
 * Complete what was posted, in order; every third poll also replays one
 * of the last completions, now a success and now a flush, as a driver
 * that reports a request late or twice would.
 */
static int ndk_ring_double_poll(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct ndk_ring_double *d = ndk_ring_dbl;
	unsigned long flags;
	u64 wr_id;
	int i = 0;

	spin_lock_irqsave(&d->lock, flags);
	while (i < n && d->tail != d->head) {
		wr_id = d->queue[d->tail++ % NDK_RING_DEVQ];
		d->done[d->ndone++ % NDK_RING_HISTORY] = wr_id;
		ndk_ring_double_wc(d, &wc[i++], wr_id, IB_WC_SUCCESS);
	}
	if (i < n && d->ndone && ++d->polls % 3 == 0) {
		wr_id = d->done[(d->ndone - 1 - d->polls % 17) %
				min_t(u32, d->ndone, NDK_RING_HISTORY)];
		ndk_ring_double_wc(d, &wc[i++], wr_id, d->polls % 2 ?
				   IB_WC_SUCCESS : IB_WC_WR_FLUSH_ERR);
		d->replays++;
	}
	spin_unlock_irqrestore(&d->lock, flags);
	return i;
}

/**
 * struct ndk_ring_stress - the poster's side of the ring stress
 * @qp: the QP it posts to
 * @n: requests to post
 * @failed: a post failed otherwise than with a full queue
 * @done: the poster is finished
 */
struct ndk_ring_stress {
	NDK_QP *qp;
	int n;
	NTSTATUS failed;
	struct completion done;
};

/* Every fifth request is silent; contexts count from 1. */
static int ndk_ring_stress_poster(void *arg)
{
	struct ndk_ring_stress *rs = arg;
	NDK_SGE sge = { .Length = 0 };
	const NDK_QP_DISPATCH *d = rs->qp->Dispatch;
	ULONG flags;
	NTSTATUS st;
	int i;

	for (i = 0; i < rs->n && !rs->failed; i++) {
		flags = i % 5 == 4 ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
		while ((st = d->NdkSend(rs->qp, (void *)(uintptr_t)(i + 1),
					&sge, 1, flags)) ==
		       STATUS_INSUFFICIENT_RESOURCES)
			cond_resched();
		if (st)
			rs->failed = st;
	}
	complete(&rs->done);
	return 0;
}

/*
 * The ring's memory ordering under load: a poster on one CPU and the
 * poller on another share an 8-deep initiator queue (16 slots, each
 * refilled every 16 requests), over a driver double that completes in
 * order and replays lately completed requests, late or twice, as a
 * success or a flush. Every signaled request comes back once, in order,
 * with its own context; no silent success, no replay, no foreign result
 * (ndk_check.thorough=1 posts ten times as many).
 */
static void ndk_ring_stress_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	struct ndk_cq *cq = container_of(e->cq, struct ndk_cq, ndk);
	int (*poll)(struct ib_cq *ibcq, int n, struct ib_wc *wc);
	struct ndk_ring_double *d = kzalloc(sizeof(*d), GFP_KERNEL);
	struct ndk_ring_stress rs = { .qp = qp };
	unsigned long end = jiffies + 10 * NDK_TEST_TIMEOUT;
	int want, got = 0, last = 0, idx, i, k;
	struct task_struct *t;
	NDK_RESULT_EX r[4];

	KUNIT_ASSERT_NOT_NULL(test, d);
	rs.n = ndk_test_rounds(NDK_RING_STRESS, NDK_RING_STRESS_FEW);
	want = rs.n - rs.n / 5;
	init_completion(&rs.done);
	spin_lock_init(&d->lock);
	ndk_verbs_double_insert(&d->vd, q);
	d->vd.dev.ops.post_send = ndk_ring_double_send;
	ndk_ring_dbl = d;
	poll = cq->poll_cq;
	cq->poll_cq = ndk_ring_double_poll;
	WRITE_ONCE(q->connected, true);
	t = kthread_create(ndk_ring_stress_poster, &rs, "ndk_ring_stress");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	kthread_bind(t, ndk_test_other_cpu(test));
	wake_up_process(t);
	while (got < want && time_before(jiffies, end)) {
		k = e->cq->Dispatch->NdkGetCqResultsEx(e->cq, r, ARRAY_SIZE(r));
		for (i = 0; i < k; i++, got++) {
			idx = (uintptr_t)r[i].RequestContext;
			if (idx <= last || idx > rs.n || idx % 5 == 0 ||
			    r[i].Status != STATUS_SUCCESS) {
				KUNIT_FAIL(test, "result %d: context %d after %d, status %#x",
					   got, idx, last, r[i].Status);
				goto out;
			}
			last = idx;
		}
		if (!k)
			cond_resched();
	}
out:
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&rs.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, rs.failed, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, got, want);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResultsEx(e->cq, r, 1),
			0U);
	KUNIT_EXPECT_GT(test, d->replays, 0U);
	KUNIT_EXPECT_EQ(test, q->sq.retired, q->sq.posted);
	kunit_info(test, "%d results, %u replays dropped\n", got, d->replays);
	WRITE_ONCE(q->connected, false);
	ndk_verbs_double_remove(&d->vd, q);
	cq->poll_cq = poll;
	ndk_ring_dbl = NULL;
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	kfree(d);
}

/* Contexts of the requests of the skip and fast-check cases. */
#define NDK_SKIP_CTX	0x40000
/* Requests each queue of the skip case holds: 8 slots a ring. */
#define NDK_SKIP_DEPTH	4
/* The raw QP's own wr_ids. */
#define NDK_SKIP_RAW	0x1000
/* Requests a queue of the skip case takes at most. */
#define NDK_SKIP_MAX	128

/**
 * struct ndk_skip_env - a QP whose driver takes every request and
 *	forgets it, and a raw QP on its CQ that completes them by wr_id
 * @cq: the QP's CQ, and the raw QP's
 * @qp: the QP, marked connected behind the driver's back; its QPContext
 *	is the environment
 * @q: its ndk side
 * @d: the driver double under it
 * @l: the raw QP: a message it receives under a request's wr_id is that
 *	request's completion
 * @m: a registered buffer, the requests' SGEs
 * @mr: an initialized fast-register MR, for NdkFastRegister and
 *	NdkInvalidate
 * @mw: a memory window, for NdkBind
 * @page: device address of @m's first page
 * @tok: the privileged token
 * @raw: the raw QP's sends so far
 */
struct ndk_skip_env {
	NDK_CQ *cq;
	NDK_QP *qp;
	struct ndk_qp *q;
	struct ndk_verbs_double *d;
	struct ndk_test_lqp *l;
	struct ndk_pmem *m;
	NDK_MR *mr;
	NDK_MW *mw;
	u64 page;
	UINT32 tok;
	u32 raw;
};

/* A driver double's post_send that takes the requests and forgets them. */
static int ndk_skip_double_send(struct ib_qp *ibqp,
				const struct ib_send_wr *wr,
				const struct ib_send_wr **bad)
{
	return 0;
}

/* A driver double's post_recv that takes the receive and forgets it. */
static int ndk_skip_double_recv(struct ib_qp *ibqp,
				const struct ib_recv_wr *wr,
				const struct ib_recv_wr **bad)
{
	return 0;
}

static struct ndk_skip_env *ndk_skip_env_new(struct kunit *test)
{
	struct ndk_skip_env *se = kunit_kzalloc(test, sizeof(*se), GFP_KERNEL);
	struct ndk_cenv *e = test->priv;
	struct ndk_adapter *a = container_of(e->a, struct ndk_adapter, ndk);
	NDK_MR *unused_mr = NULL;
	NDK_QP *unused = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, se);
	se->cq = container_of(ndk_test_create_cq(test, e->a, 64), NDK_CQ,
			      Header);
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, se->cq, se->cq, se,
					  NDK_SKIP_DEPTH, NDK_SKIP_DEPTH, 2, 2,
					  32, ndk_test_create_cb, &w, &unused);
	se->qp = container_of(ndk_created(test, st, &w, unused), NDK_QP,
			      Header);
	se->q = container_of(se->qp, struct ndk_qp, ndk);
	se->m = ndk_pmem_new(test, e, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateMr(e->pd, TRUE, ndk_test_create_cb, &w,
					  &unused_mr);
	se->mr = container_of(ndk_created(test, st, &w, unused_mr), NDK_MR,
			      Header);
	ndk_wait_init(&w);
	st = se->mr->Dispatch->NdkInitializeFastRegisterMr(se->mr, 1, FALSE,
							   ndk_test_request_cb,
							   &w);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	se->mw = ndk_cenv_mw(test, e);
	se->page = ib_dma_map_single(a->ibdev, se->m->buf, PAGE_SIZE,
				     DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(a->ibdev, se->page));
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &se->tok);
	se->l = ndk_test_loopback_qp(test, a,
				     container_of(se->cq, struct ndk_cq,
						  ndk)->ibcq);
	se->d = kunit_kzalloc(test, sizeof(*se->d), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, se->d);
	/* From here on no assertion: the double must leave before the close. */
	ndk_verbs_double_insert(se->d, se->q);
	se->d->dev.ops.post_send = ndk_skip_double_send;
	se->d->dev.ops.post_recv = ndk_skip_double_recv;
	ndk_qp_set_connected(se->q, true);
	return se;
}

static void ndk_skip_env_free(struct kunit *test, struct ndk_skip_env *se)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_adapter *a = container_of(e->a, struct ndk_adapter, ndk);
	NDK_RESULT_EX r[2];

	/* Nothing came that the case did not poll. */
	KUNIT_EXPECT_EQ(test, se->cq->Dispatch->NdkGetCqResultsEx(se->cq, r, 2),
			0U);
	ndk_verbs_double_remove(se->d, se->q);
	ndk_test_loopback_free(se->l);
	ndk_test_close(test, &se->qp->Header, se->qp->Dispatch->NdkCloseQp);
	ib_dma_unmap_single(a->ibdev, se->page, PAGE_SIZE, DMA_BIDIRECTIONAL);
	ndk_test_close(test, &se->mw->Header, se->mw->Dispatch->NdkCloseMw);
	ndk_test_close_mr(test, se->mr);
	ndk_pmem_free(test, se->m);
	ndk_test_close(test, &se->cq->Header, se->cq->Dispatch->NdkCloseCq);
}

/*
 * Complete request @seq of @ring as its device would, through the raw
 * QP, and poll that result and the raw QP's own: @ctx's, once, of @type.
 *
 * Return: false if a result is missing; the case ends then.
 */
static bool ndk_skip_complete(struct kunit *test, struct ndk_skip_env *se,
			      struct ndk_wr_ring *ring, u32 seq, uintptr_t ctx,
			      NDK_OPERATION_TYPE type)
{
	NDK_RESULT_EX r[2];
	int mine;

	ndk_test_loopback_send(test, se->l, ring->tag | seq,
			       NDK_SKIP_RAW + se->raw++, false);
	if (!ndk_penv_poll(se->cq, r, 2)) {
		KUNIT_FAIL(test, "request %#lx: no result", ctx);
		return false;
	}
	mine = (uintptr_t)r[0].RequestContext == ctx ? 0 : 1;
	KUNIT_EXPECT_EQ(test, (uintptr_t)r[mine].RequestContext, ctx);
	KUNIT_EXPECT_EQ_MSG(test, r[mine].Type, type, "request %#lx", ctx);
	KUNIT_EXPECT_EQ(test, r[mine].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_PTR_EQ(test, r[mine].QPContext, (void *)se);
	KUNIT_EXPECT_EQ(test, (uintptr_t)r[!mine].RequestContext,
			(uintptr_t)NDK_SKIP_RAW + se->raw - 1);
	return true;
}

/* The initiator calls the skip case makes where the head's slot is held. */
enum ndk_skip_op {
	NDK_SKIP_SEND,
	NDK_SKIP_WRITE,
	NDK_SKIP_READ,
	NDK_SKIP_SEND_INV,
	NDK_SKIP_INVALIDATE,
	NDK_SKIP_FAST_REGISTER,
	NDK_SKIP_BIND,
	NDK_SKIP_DEFER,
	NDK_SKIP_OPS,
};

/* Post initiator request @op with context @ctx; *@type is its type. */
static NTSTATUS ndk_skip_post(struct ndk_skip_env *se, int op, uintptr_t ctx,
			      NDK_OPERATION_TYPE *type)
{
	const NDK_QP_DISPATCH *d = se->qp->Dispatch;
	NDK_SGE sge = ndk_pmem_sge(se->m, 0, 64);
	u64 raddr = ndk_pmem_va(se->m, 2048);
	UINT32 rtok = ndk_pmem_rtok(se->m);
	void *c = (void *)ctx;

	*type = NdkOperationTypeSend;
	switch (op) {
	case NDK_SKIP_WRITE:
		*type = NdkOperationTypeWrite;
		return d->NdkWrite(se->qp, c, &sge, 1, raddr, rtok, 0);
	case NDK_SKIP_READ:
		*type = NdkOperationTypeRead;
		return d->NdkRead(se->qp, c, &sge, 1, raddr, rtok, 0);
	case NDK_SKIP_SEND_INV:
		return d->NdkSendAndInvalidate(se->qp, c, &sge, 1, 0, rtok);
	case NDK_SKIP_INVALIDATE:
		*type = NdkOperationTypeInvalidate;
		return d->NdkInvalidate(se->qp, c, &se->mr->Header, 0);
	case NDK_SKIP_FAST_REGISTER:
		*type = NdkOperationTypeFastRegister;
		return d->NdkFastRegister(se->qp, c, se->mr, 1, &se->page, 0,
					  PAGE_SIZE, se->m->buf, 0);
	case NDK_SKIP_BIND:
		*type = NdkOperationTypeBind;
		return d->NdkBind(se->qp, c, se->m->mr, se->mw, se->m->buf, 64,
				  NDK_OP_FLAG_ALLOW_REMOTE_READ);
	case NDK_SKIP_DEFER:
		return d->NdkSend(se->qp, c, &sge, 1, NDK_OP_FLAG_DEFER);
	default:
		return d->NdkSend(se->qp, c, &sge, 1, 0);
	}
}

/*
 * Post on the initiator queue until each call of enum ndk_skip_op has
 * found the head's slot held by the first of the two kept requests.
 * Every other request is completed at once; the deferred one with the
 * send after it, which takes it to the device.
 *
 * Return: how many requests were posted, or -1 if the case ends.
 */
static int ndk_skip_sq(struct kunit *test, struct ndk_skip_env *se, int n)
{
	struct ndk_wr_ring *sq = &se->q->sq;
	NDK_OPERATION_TYPE type, t2;
	uintptr_t ctx;
	u32 head, seq;
	int op = 0;
	NTSTATUS st;
	bool busy;

	for (; op < NDK_SKIP_OPS && n < NDK_SKIP_MAX; n++) {
		head = sq->head;
		busy = !(head & sq->mask);
		ctx = NDK_SKIP_CTX + n;
		st = ndk_skip_post(se, busy ? op : NDK_SKIP_SEND, ctx, &type);
		if (st != STATUS_SUCCESS) {
			KUNIT_FAIL(test, "request %d (%d): 0x%08x", n,
				   busy ? op : NDK_SKIP_SEND, st);
			return -1;
		}
		seq = sq->head - 1;
		if (!busy) {
			if (!ndk_skip_complete(test, se, sq, seq, ctx, type))
				return -1;
			continue;
		}
		/* It passed the two slots the kept requests hold. */
		KUNIT_EXPECT_EQ_MSG(test, seq, head + 2, "call %d", op);
		if (op++ != NDK_SKIP_DEFER) {
			if (!ndk_skip_complete(test, se, sq, seq, ctx, type))
				return -1;
			continue;
		}
		/* Held until the next request, which takes it along. */
		n++;
		st = ndk_skip_post(se, NDK_SKIP_SEND, ctx + 1, &t2);
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
		if (st || !ndk_skip_complete(test, se, sq, seq, ctx, type) ||
		    !ndk_skip_complete(test, se, sq, sq->head - 1, ctx + 1, t2))
			return -1;
	}
	KUNIT_EXPECT_EQ(test, op, NDK_SKIP_OPS);
	return n;
}

/*
 * The same on the receive queue, for a receive with an SGE and one
 * without.
 */
static int ndk_skip_rq(struct kunit *test, struct ndk_skip_env *se, int n)
{
	struct ndk_wr_ring *rq = &se->q->rq;
	NDK_SGE sge = ndk_pmem_sge(se->m, 1024, 64);
	uintptr_t ctx;
	u32 head, seq;
	int op = 0;
	NTSTATUS st;
	bool busy;

	for (; op < 2 && n < NDK_SKIP_MAX; n++) {
		head = rq->head;
		busy = !(head & rq->mask);
		ctx = NDK_SKIP_CTX + n;
		if (busy && op == 1)
			st = se->qp->Dispatch->NdkReceive(se->qp, (void *)ctx,
							  NULL, 0);
		else
			st = se->qp->Dispatch->NdkReceive(se->qp, (void *)ctx,
							  &sge, 1);
		if (st != STATUS_SUCCESS) {
			KUNIT_FAIL(test, "receive %d: 0x%08x", n, st);
			return -1;
		}
		seq = rq->head - 1;
		if (busy) {
			KUNIT_EXPECT_EQ_MSG(test, seq, head + 2, "receive %d", op);
			op++;
		}
		if (!ndk_skip_complete(test, se, rq, seq, ctx,
				       NdkOperationTypeReceive))
			return -1;
	}
	KUNIT_EXPECT_EQ(test, op, 2);
	return n;
}

/*
 * Two requests the device keeps while the ones behind them complete, as
 * siw keeps a read until its answer comes: once the others have gone
 * round the ring, the poster passes over both held slots to the next
 * free one, whichever call posts there (each initiator call, a bind, a
 * deferred send, a receive with an SGE and one without), as long as
 * fewer than the depth wait. Every request comes back once, with its own
 * context and type; the two kept on each queue, when the QP is flushed,
 * as cancelled, to a poll for NDK_RESULTs. A driver double forgets every
 * request; a raw QP on the CQ completes each but the kept ones.
 */
static void ndk_ring_skip_test(struct kunit *test)
{
	struct ndk_skip_env *se = ndk_skip_env_new(test);
	NDK_SGE sge = ndk_pmem_sge(se->m, 0, 64);
	const NDK_QP_DISPATCH *d = se->qp->Dispatch;
	u8 seen[4] = {};
	unsigned long end;
	NDK_RESULT r[4];
	unsigned int ms;
	ULONG got = 0, i;
	uintptr_t k;
	int n;

	/* The kept ones: sends 0 and 1, receives 2 and 3. */
	for (n = 0; n < 4; n++)
		KUNIT_EXPECT_EQ(test, n < 2 ?
				d->NdkSend(se->qp, (void *)(uintptr_t)(NDK_SKIP_CTX + n),
					   &sge, 1, 0) :
				d->NdkReceive(se->qp,
					      (void *)(uintptr_t)(NDK_SKIP_CTX + n),
					      &sge, 1),
				STATUS_SUCCESS);
	n = ndk_skip_sq(test, se, n);
	if (n >= 0)
		n = ndk_skip_rq(test, se, n);
	if (n < 0)
		goto out;
	ms = ndk_sweep_set_ms(20);
	d->NdkFlush(se->qp);
	end = jiffies + NDK_TEST_TIMEOUT;
	while (got < ARRAY_SIZE(r) && time_before(jiffies, end)) {
		got += se->cq->Dispatch->NdkGetCqResults(se->cq, r + got,
							  ARRAY_SIZE(r) - got);
		if (got < ARRAY_SIZE(r))
			usleep_range(2000, 4000);
	}
	ndk_sweep_set_ms(ms);
	KUNIT_EXPECT_EQ(test, got, (ULONG)ARRAY_SIZE(r));
	for (i = 0; i < got; i++) {
		k = (uintptr_t)r[i].RequestContext - NDK_SKIP_CTX;
		if (k >= ARRAY_SIZE(seen)) {
			KUNIT_FAIL(test, "result %p", r[i].RequestContext);
			continue;
		}
		seen[k]++;
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, (void *)se);
	}
	for (i = 0; i < ARRAY_SIZE(seen); i++)
		KUNIT_EXPECT_EQ_MSG(test, seen[i], 1, "kept request %u", i);
	msleep(40);
out:
	ndk_skip_env_free(test, se);
}

/* The SGE lists of the fast-check case. */
enum ndk_fast_sges {
	NDK_FAST_TWO,		/* two SGEs of data */
	NDK_FAST_PRIV_FIRST,	/* the privileged token in the first */
	NDK_FAST_PRIV_LAST,	/* the privileged token in the second */
	NDK_FAST_EMPTY,		/* one SGE of no bytes */
	NDK_FAST_SGES,
};

/* Post initiator call @op (send, send and invalidate, write) of @sges. */
static NTSTATUS ndk_fast_post(struct ndk_skip_env *se, int op, int sges,
			      uintptr_t ctx, ULONG flags)
{
	const NDK_QP_DISPATCH *d = se->qp->Dispatch;
	NDK_SGE priv = { .LogicalAddress = se->page + 256, .Length = 16,
			 .MemoryRegionToken = se->tok };
	NDK_SGE sge[2] = { ndk_pmem_sge(se->m, 0, 16),
			   ndk_pmem_sge(se->m, 64, 16) };
	ULONG n = 2;

	if (sges == NDK_FAST_PRIV_FIRST)
		sge[0] = priv;
	else if (sges == NDK_FAST_PRIV_LAST)
		sge[1] = priv;
	else if (sges == NDK_FAST_EMPTY)
		sge[0].Length = 0, n = 1;
	if (op == NDK_SKIP_SEND_INV)
		return d->NdkSendAndInvalidate(se->qp, (void *)ctx, sge, n,
					       flags, ndk_pmem_rtok(se->m));
	if (op == NDK_SKIP_WRITE)
		return d->NdkWrite(se->qp, (void *)ctx, sge, n,
				   ndk_pmem_va(se->m, 2048),
				   ndk_pmem_rtok(se->m), flags);
	return d->NdkSend(se->qp, (void *)ctx, sge, n, flags);
}

/*
 * NdkSend, NdkSendAndInvalidate and NdkWrite check a request the same
 * whether it takes the one-pass path or, deferred, the slow one: inline
 * data under the privileged token, in any SGE, is refused with
 * STATUS_INVALID_PARAMETER and takes no slot; inline data of two SGEs
 * is taken, and so is inline data of no bytes, which is no inline data
 * (deferred, it is held until the next request); siw sends no inline
 * data with an invalidation: STATUS_NOT_SUPPORTED. A send and invalidate
 * without an SGE list but with a count is refused; one with an empty SGE
 * before its data is taken. Every request taken comes back once, with
 * its own context; none refused does. A driver double forgets every
 * request; a raw QP on the CQ completes them once they reached it.
 */
static void ndk_ring_fast_checks_test(struct kunit *test)
{
	static const int ops[] = { NDK_SKIP_SEND, NDK_SKIP_SEND_INV,
				   NDK_SKIP_WRITE };
	static const ULONG how[] = { NDK_OP_FLAG_INLINE,
				     NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER };
	struct ndk_skip_env *se = ndk_skip_env_new(test);
	NDK_SGE sge[2] = { ndk_pmem_sge(se->m, 0, 0),
			   ndk_pmem_sge(se->m, 64, 16) };
	const NDK_QP_DISPATCH *d = se->qp->Dispatch;
	struct ndk_wr_ring *sq = &se->q->sq;
	bool iwarp = ndk_test_iwarp();
	NDK_OPERATION_TYPE type, t2;
	uintptr_t ctx = NDK_SKIP_CTX;
	NTSTATUS st, want;
	u32 head, seq;
	int o, h, k;

	KUNIT_EXPECT_EQ(test, d->NdkSendAndInvalidate(se->qp, (void *)ctx++,
						      NULL, 1, 0, 0),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, sq->head, 0U);
	KUNIT_EXPECT_EQ(test, d->NdkSendAndInvalidate(se->qp, (void *)ctx, sge,
						      2, 0,
						      ndk_pmem_rtok(se->m)),
			STATUS_SUCCESS);
	if (!ndk_skip_complete(test, se, sq, sq->head - 1, ctx++,
			       NdkOperationTypeSend))
		goto out;
	for (o = 0; o < ARRAY_SIZE(ops); o++) {
		type = ops[o] == NDK_SKIP_WRITE ? NdkOperationTypeWrite :
						  NdkOperationTypeSend;
		for (h = 0; h < ARRAY_SIZE(how); h++) {
			for (k = 0; k < NDK_FAST_SGES; k++, ctx++) {
				want = k == NDK_FAST_PRIV_FIRST ||
				       k == NDK_FAST_PRIV_LAST ?
				       STATUS_INVALID_PARAMETER : STATUS_SUCCESS;
				if (ops[o] == NDK_SKIP_SEND_INV && iwarp)
					want = STATUS_NOT_SUPPORTED;
				head = sq->head;
				st = ndk_fast_post(se, ops[o], k, ctx, how[h]);
				KUNIT_EXPECT_EQ_MSG(test, st, want,
						    "call %d, flags %#x, SGEs %d",
						    ops[o], how[h], k);
				if (st) {
					KUNIT_EXPECT_EQ(test, sq->head, head);
					continue;
				}
				seq = sq->head - 1;
				if (!READ_ONCE(se->q->nheld)) {
					if (!ndk_skip_complete(test, se, sq, seq,
							       ctx, type))
						goto out;
					continue;
				}
				/* Held: the next request takes it along. */
				KUNIT_EXPECT_EQ(test, k, NDK_FAST_EMPTY);
				st = ndk_skip_post(se, NDK_SKIP_SEND, ++ctx,
						   &t2);
				KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
				KUNIT_EXPECT_EQ(test, se->q->nheld, 0U);
				if (st ||
				    !ndk_skip_complete(test, se, sq, seq,
						       ctx - 1, type) ||
				    !ndk_skip_complete(test, se, sq,
						       sq->head - 1, ctx, t2))
					goto out;
			}
		}
	}
out:
	ndk_skip_env_free(test, se);
}

/* The CQ's driver poll, under the poll double of the foreign case. */
static int (*ndk_ring_foreign_poll)(struct ib_cq *ibcq, int n,
				    struct ib_wc *wc);

/* A driver whose completions name no QP. */
static int ndk_ring_no_qp_poll(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	int got = ndk_ring_foreign_poll(ibcq, n, wc), i;

	for (i = 0; i < got; i++)
		wc[i].qp = NULL;
	return got;
}

/*
 * Poll the raw QP's receive @id and send @id + 1: each comes back once,
 * with its own wr_id as its context and with @qpctx.
 */
static void ndk_ring_foreign_pair(struct kunit *test, NDK_CQ *cq,
				  struct ndk_test_lqp *l, uintptr_t id,
				  void *qpctx)
{
	NDK_RESULT_EX r[2];
	int i;

	ndk_test_loopback_send(test, l, id, id + 1, false);
	if (!ndk_penv_poll(cq, r, 2)) {
		KUNIT_FAIL(test, "%#lx: results missing", id);
		return;
	}
	KUNIT_EXPECT_EQ(test, (uintptr_t)r[0].RequestContext +
			(uintptr_t)r[1].RequestContext, 2 * id + 1);
	for (i = 0; i < 2; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, qpctx);
	}
}

/*
 * A result of a request ndk did not post (a raw QP's on an NDK CQ) has
 * its verbs QP's context as its QPContext: none where that QP was given
 * none, and none where the driver's completion names no QP.
 */
static void ndk_ring_foreign_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CQ *cq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ,
				  Header);
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];

	l = ndk_test_loopback_qp(test, container_of(e->a, struct ndk_adapter,
						    ndk), c->ibcq);
	ndk_ring_foreign_pair(test, cq, l, 0x2000, l);
	l->loop.qp->qp_context = NULL;
	l->rqp->qp_context = NULL;
	ndk_ring_foreign_pair(test, cq, l, 0x2010, NULL);
	l->loop.qp->qp_context = &l->fake;
	l->rqp->qp_context = &l->fake;
	ndk_ring_foreign_poll = c->poll_cq;
	WRITE_ONCE(c->poll_cq, ndk_ring_no_qp_poll);
	ndk_ring_foreign_pair(test, cq, l, 0x2020, NULL);
	WRITE_ONCE(c->poll_cq, ndk_ring_foreign_poll);
	ndk_ring_foreign_pair(test, cq, l, 0x2030, l);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResultsEx(cq, r, 2), 0U);
	ndk_test_loopback_free(l);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

static struct kunit_case ndk_ring_cases[] = {
	KUNIT_CASE_PARAM(ndk_post_ring_test, ndk_ring_gen_params),
	KUNIT_CASE(ndk_ring_stress_test),
	KUNIT_CASE(ndk_ring_skip_test),
	KUNIT_CASE(ndk_ring_fast_checks_test),
	KUNIT_CASE(ndk_ring_foreign_test),
	{}
};

NDK_SUITE(ring, ndk_conn_init_test, ndk_conn_exit_test);
