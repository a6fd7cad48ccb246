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
 * Let the last @n requests complete without polling them: receives get
 * a message each (the sends are polled), initiator requests need
 * nothing but time.
 *
 * Return: false if a send did not complete; the test ends then.
 */
static bool ndk_ring_complete(struct kunit *test, struct ndk_ring_env *re,
			      int n)
{
	struct ndk_cenv *e = test->priv;
	NDK_RESULT_EX r[NDK_RING_DEPTH];
	int k, i;

	while (re->c->queue != NDK_RING_SQ && n > 0) {
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
	msleep(300);
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

static struct kunit_case ndk_ring_cases[] = {
	KUNIT_CASE_PARAM(ndk_post_ring_test, ndk_ring_gen_params),
	KUNIT_CASE(ndk_ring_stress_test),
	{}
};

NDK_SUITE(ring, ndk_conn_init_test, ndk_conn_exit_test);
