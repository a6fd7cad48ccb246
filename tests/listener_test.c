// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_listener, the tests of ndk/listener.c: creation, close and listen
 * from each context, a second listen on a taken address, a listener's close
 * while it holds connectors, pausing its connect events, and its
 * backlog: a peer's flood of requests to a consumer that answers none
 * of them.
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/wait.h>
#include "ndk_tests.h"

static void ndk_listener_create_in(struct ndk_test_call *c)
{
	struct ndk_cenv *e = c->arg;

	c->st = e->a->Dispatch->NdkCreateListener(e->a, ndk_conn_event_cb, e,
						  ndk_test_create_cb, &c->w,
						  (NDK_LISTENER **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_listener_contexts_test(struct kunit *test)
{
	ndk_test_contexts(test, ndk_listener_create_in, test->priv);
}

/* NdkListen on @c->obj, a listener, at the port in @c->arg. */
static void ndk_listen_in(struct ndk_test_call *c)
{
	struct sockaddr_in *sin = c->arg;
	NDK_LISTENER *l = container_of(c->obj, NDK_LISTENER, Header);

	c->st = l->Dispatch->NdkListen(l, (struct sockaddr *)sin, sizeof(*sin),
				       ndk_test_request_cb, &c->w);
}

/*
 * NdkListen from each context: inline from the test's thread, with no
 * callback, its failure too; pending under a spinlock and in a timer,
 * with one callback each. A second listen on the port fails.
 */
static void ndk_listen_contexts_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_test_call c = {};
	struct sockaddr_in sin;
	enum ndk_test_ctx ctx;
	NDK_LISTENER *l, *l2;
	NTSTATUS want;
	bool inl;
	int i;

	ndk_listen_addr(e, &sin);
	c.arg = &sin;
	c.fn = ndk_listen_in;
	for (ctx = NDK_CTX_THREAD; ctx <= NDK_CTX_TIMER; ctx++) {
		inl = ctx == NDK_CTX_THREAD && NDK_TEST_INLINE == STATUS_SUCCESS;
		sin.sin_port = htons(NDK_TEST_PORT + 1 + ctx);
		l = ndk_cenv_listener(test, e);
		l2 = ndk_cenv_listener(test, e);
		for (i = 0; i < 2; i++) {
			want = i ? STATUS_SHARING_VIOLATION : STATUS_SUCCESS;
			c.obj = i ? &l2->Header : &l->Header;
			ndk_wait_init(&c.w);
			ndk_test_run_in(&c, ctx);
			if (inl) {
				KUNIT_EXPECT_EQ(test, c.st, want);
			} else {
				KUNIT_EXPECT_EQ(test, c.st, STATUS_PENDING);
				KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c.w));
				KUNIT_EXPECT_EQ(test, c.w.status, want);
			}
			/* Time for a wrong callback to show. */
			msleep(20);
			KUNIT_EXPECT_EQ(test, atomic_read(&c.w.calls),
					inl ? 0 : 1);
		}
		ndk_test_close(test, &l2->Header, l2->Dispatch->NdkCloseListener);
		ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
	}
}

/* nd_dual_listen: a second listen on the same address and port fails. */
static void nd_dual_listen(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LISTENER *l = ndk_cenv_listener(test, e);

	KUNIT_EXPECT_EQ(test, ndk_cenv_listen(test, e, l, NDK_TEST_PORT),
			STATUS_SHARING_VIOLATION);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
}

/*
 * nd_conn_listen_closing: a listener's close waits for the connectors it
 * handed out, and requests that arrive while it closes are refused.
 */
static void nd_conn_listen_closing(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_CONNECTOR *c2 = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e), *qp2 = ndk_cenv_qp(test, e);
	struct ndk_wait cw, cw2, lw;

	ndk_cenv_connect_incoming(test, e, c, qp, &cw);

	ndk_wait_init(&lw);
	KUNIT_ASSERT_EQ(test, ndk_listener_close(e->listener, &lw),
			STATUS_PENDING);
	e->listener = NULL;
	/* A new request is refused while the close is pending. */
	reinit_completion(&e->incoming_done);
	ndk_cenv_connect_done(test, e, c2, qp2, NDK_TEST_PORT, &cw2);
	KUNIT_EXPECT_EQ(test, cw2.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_FALSE(test, completion_done(&e->incoming_done));
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&lw.done, HZ / 5),
			0UL);

	/* Closing the unanswered request rejects it. */
	ndk_close_all(test, e->incoming, NULL);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&lw));
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	ndk_close_all(test, c, qp);
	ndk_close_all(test, c2, qp2);
}

/* While paused the listener is as good as absent; resume restores it. */
static void ndk_conn_pause_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	unsigned long flags;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct sockaddr_in dst;
	struct ndk_pair p;
	struct ndk_wait cw;

	spin_lock_irqsave(&ndk_test_lock, flags);
	e->listener->Dispatch->NdkControlConnectEvents(e->listener, TRUE);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	reinit_completion(&e->incoming_done);
	ndk_cenv_connect_done(test, e, c, qp, NDK_TEST_PORT, &cw);
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_FALSE(test, completion_done(&e->incoming_done));
	ndk_close_all(test, c, qp);

	e->listener->Dispatch->NdkControlConnectEvents(e->listener, FALSE);
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_pair_close(test, &p);
}

/* The port of the listeners these cases make besides the environment's. */
#define NDK_BACKLOG_PORT	(NDK_TEST_PORT + 1)

#define NDK_BACKLOG_PARAM	"/sys/module/ndk/parameters/listen_backlog"

/* listen_backlog before a case changed it, restored by the suite's exit. */
static char ndk_backlog_saved[16];

/* Set ndk.ko's listen_backlog as root would; return what the write gave. */
static int ndk_backlog_write(struct kunit *test, const char *val)
{
	char buf[16];

	if (!ndk_backlog_saved[0])
		KUNIT_ASSERT_EQ(test, ndk_rw_file(NDK_BACKLOG_PARAM,
						  ndk_backlog_saved,
						  sizeof(ndk_backlog_saved),
						  false),
				0);
	strscpy(buf, val, sizeof(buf));
	return ndk_rw_file(NDK_BACKLOG_PARAM, buf, 0, true);
}

static void ndk_backlog_set(struct kunit *test, unsigned int n)
{
	char val[16];

	snprintf(val, sizeof(val), "%u", n);
	KUNIT_ASSERT_EQ(test, ndk_backlog_write(test, val), 0);
}

static void ndk_listener_exit_test(struct kunit *test)
{
	ndk_conn_exit_test(test);
	if (ndk_backlog_saved[0]) {
		ndk_rw_file(NDK_BACKLOG_PARAM, ndk_backlog_saved, 0, true);
		ndk_backlog_saved[0] = '\0';
	}
}

/* listen_backlog takes 1 to SOMAXCONN (4096); anything else is refused. */
static void ndk_listen_backlog_param_test(struct kunit *test)
{
	static const char *const bad[] = { "0", "4097", "-1", "many" };
	char got[16];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test, ndk_backlog_write(test, bad[i]),
				    -EINVAL, "listen_backlog=%s", bad[i]);
	KUNIT_EXPECT_EQ(test, ndk_backlog_write(test, "1"), 0);
	KUNIT_EXPECT_EQ(test, ndk_backlog_write(test, "4096"), 0);
	KUNIT_ASSERT_EQ(test, ndk_rw_file(NDK_BACKLOG_PARAM, got, sizeof(got),
					  false),
			0);
	KUNIT_EXPECT_STREQ(test, got, "4096\n");
}

/* The flood: the backlog, and how many requests more than it holds. */
#define NDK_FLOOD_LIMIT		16
#define NDK_FLOOD_EXTRA		64
#define NDK_FLOOD_ALL		(NDK_FLOOD_LIMIT + NDK_FLOOD_EXTRA)

/**
 * struct ndk_flood - a listener whose consumer answers nothing by itself
 * @lock: protects @in, @n and @most; the callback runs in rdma_cm's handler
 * @in: the connectors handed over, in order: room for every request of a
 *	case, so that none is lost to the cleanup even if ndk broke the limit
 * @n: how many
 * @most: the most unanswered requests the listener counted at a handover
 * @l: the listener
 * @wq: woken at each handover
 */
struct ndk_flood {
	spinlock_t lock; /* see above */
	NDK_CONNECTOR *in[NDK_FLOOD_ALL + 1];
	int n;
	int most;
	struct ndk_listener *l;
	wait_queue_head_t wq;
};

static void ndk_flood_cb(PVOID ConnectEventContext,
			 NDK_CONNECTOR *pNdkConnector)
{
	struct ndk_flood *f = ConnectEventContext;
	unsigned long flags;

	spin_lock_irqsave(&f->lock, flags);
	if (f->n < ARRAY_SIZE(f->in))
		f->in[f->n++] = pNdkConnector;
	f->most = max(f->most, atomic_read(&f->l->unanswered));
	spin_unlock_irqrestore(&f->lock, flags);
	wake_up(&f->wq);
}

static int ndk_flood_count(struct ndk_flood *f)
{
	unsigned long flags;
	int n;

	spin_lock_irqsave(&f->lock, flags);
	n = f->n;
	spin_unlock_irqrestore(&f->lock, flags);
	return n;
}

/* Wait until @n requests were handed over; false if they were not. */
static bool ndk_flood_wait(struct ndk_flood *f, int n)
{
	return wait_event_timeout(f->wq, ndk_flood_count(f) >= n,
				  NDK_TEST_TIMEOUT) != 0;
}

/* A listener on NDK_BACKLOG_PORT that hands its requests to @f. */
static NDK_LISTENER *ndk_flood_listener(struct kunit *test,
					struct ndk_cenv *e,
					struct ndk_flood *f)
{
	NDK_LISTENER *made = NULL, *l;
	struct ndk_wait w;
	NTSTATUS st;

	spin_lock_init(&f->lock);
	init_waitqueue_head(&f->wq);
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateListener(e->a, ndk_flood_cb, f,
					       ndk_test_create_cb, &w, &made);
	l = container_of(ndk_created(test, st, &w, made), NDK_LISTENER,
			 Header);
	f->l = container_of(l, struct ndk_listener, ndk);
	KUNIT_ASSERT_EQ(test, ndk_cenv_listen(test, e, l, NDK_BACKLOG_PORT),
			STATUS_SUCCESS);
	return l;
}

/* NdkConnect of @c and @qp to the listener at NDK_BACKLOG_PORT. */
static void ndk_backlog_connect(struct kunit *test, struct ndk_cenv *e,
				NDK_CONNECTOR *c, NDK_QP *qp,
				struct ndk_wait *w)
{
	ndk_wait_init(w);
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect(e, c, qp, NDK_BACKLOG_PORT,
					       NULL, 0, w),
			STATUS_PENDING);
}

/* Accept @p->in on @p->pqp, and confirm @p->c's connect that succeeded. */
static void ndk_backlog_accept(struct kunit *test, struct ndk_pair *p,
			       struct ndk_wait *cw)
{
	struct ndk_wait aw, ccw;
	NTSTATUS st;

	ndk_wait_init(&aw);
	KUNIT_ASSERT_EQ(test, p->in->Dispatch->NdkAccept(p->in, p->pqp, 4, 4,
							 NULL, 0, NULL, NULL,
							 ndk_test_request_cb,
							 &aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(cw));
	KUNIT_ASSERT_EQ(test, cw->status, STATUS_SUCCESS);
	ndk_wait_init(&ccw);
	st = p->c->Dispatch->NdkCompleteConnect(p->c, NULL, NULL,
						ndk_test_request_cb, &ccw);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &ccw, st), STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&aw));
	KUNIT_ASSERT_EQ(test, aw.status, STATUS_SUCCESS);
}

/* How the consumer answers the request that holds the only place. */
enum ndk_answer {
	NDK_ANSWER_ACCEPT,
	NDK_ANSWER_REJECT,
	NDK_ANSWER_CLOSE,
};

static const struct ndk_answer_case {
	const char *name;
	enum ndk_answer how;
} ndk_answer_cases[] = {
	{ "accept", NDK_ANSWER_ACCEPT },
	{ "reject", NDK_ANSWER_REJECT },
	{ "close", NDK_ANSWER_CLOSE },
};

static void ndk_answer_desc(const struct ndk_answer_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_answer, ndk_answer_cases, ndk_answer_desc);

/*
 * With a backlog of one, a second request while the first is unanswered
 * is refused on the wire (STATUS_CONNECTION_REFUSED), counted in
 * listen_overflows, and never reaches the consumer; once the consumer
 * has answered the first (per case: NdkAccept, NdkReject or its close),
 * the next request is handed over again.
 */
static void ndk_listen_answer_test(struct kunit *test)
{
	const struct ndk_answer_case *ac = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_flood *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	NDK_CONNECTOR *c1, *c2;
	NDK_QP *qp1, *qp2;
	struct ndk_wait cw, cw1, cw2, lw;
	struct ndk_pair p;
	NDK_LISTENER *l;
	unsigned long end;
	u64 overflows;
	unsigned int own;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, f);
	ndk_backlog_set(test, 1);
	l = ndk_flood_listener(test, e, f);
	ndk_pair_init(test, e, &p);
	c1 = ndk_cenv_connector(test, e);
	c2 = ndk_cenv_connector(test, e);
	qp1 = ndk_cenv_qp(test, e);
	qp2 = ndk_cenv_qp(test, e);
	overflows = ndk_obs_stat(test, ndk_obs_read(test, e, "stats"),
				 "listen_overflows");
	own = refcount_read(&f->l->obj.refs);

	ndk_backlog_connect(test, e, p.c, p.aqp, &cw);
	KUNIT_ASSERT_TRUE(test, ndk_flood_wait(f, 1));
	p.in = f->in[0];

	ndk_backlog_connect(test, e, c1, qp1, &cw1);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw1));
	KUNIT_EXPECT_EQ(test, cw1.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_EQ(test, ndk_flood_count(f), 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, ndk_obs_read(test, e, "stats"),
					   "listen_overflows"),
			overflows + 1);

	switch (ac->how) {
	case NDK_ANSWER_ACCEPT:
		ndk_backlog_accept(test, &p, &cw);
		break;
	case NDK_ANSWER_REJECT:
		KUNIT_ASSERT_EQ(test, p.in->Dispatch->NdkReject(p.in, NULL, 0),
				STATUS_SUCCESS);
		break;
	case NDK_ANSWER_CLOSE:
		ndk_close_all(test, p.in, NULL);
		p.in = NULL;
		break;
	}
	if (ac->how != NDK_ANSWER_ACCEPT) {
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
		KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&f->l->unanswered), 0);

	ndk_backlog_connect(test, e, c2, qp2, &cw2);
	KUNIT_ASSERT_TRUE(test, ndk_flood_wait(f, 2));
	KUNIT_EXPECT_EQ(test, f->most, 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, ndk_obs_read(test, e, "stats"),
					   "listen_overflows"),
			overflows + 1);

	/* The unanswered request goes with its connector's close. */
	ndk_close_all(test, f->in[1], NULL);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw2));
	KUNIT_EXPECT_EQ(test, cw2.status, STATUS_CONNECTION_REFUSED);
	/*
	 * A closed connector drops its reference on the listener just after
	 * its close callback returns, on ndk_wq: wait for that, bounded.
	 */
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!p.in && refcount_read(&f->l->obj.refs) != own &&
	       time_before(jiffies, end))
		usleep_range(1000, 2000);
	if (!p.in)
		KUNIT_EXPECT_EQ(test, refcount_read(&f->l->obj.refs), own);
	ndk_wait_init(&lw);
	st = ndk_listener_close(l, &lw);
	/* Only a connector it handed out and that is still open holds it. */
	KUNIT_EXPECT_EQ(test, st, p.in ? STATUS_PENDING : STATUS_SUCCESS);
	ndk_pair_close(test, &p);
	if (st == STATUS_PENDING)
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&lw));
	ndk_close_all(test, c1, qp1);
	ndk_close_all(test, c2, qp2);
}

/* One side of the flood: a connector, its QP and its request. */
struct ndk_flood_conn {
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	struct ndk_wait w;
	bool handed;
};

/* The port of @c's address, local or peer; 0 without one. */
static u16 ndk_conn_port(NDK_CONNECTOR *c, bool local)
{
	struct sockaddr_storage ss = {};
	struct sockaddr *sa = (struct sockaddr *)&ss;
	ULONG len = sizeof(ss);
	NTSTATUS st;

	st = local ? c->Dispatch->NdkGetLocalAddress(c, sa, &len) :
		     c->Dispatch->NdkGetPeerAddress(c, sa, &len);
	/* sin_port and sin6_port share their offset. */
	return st ? 0 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Mark the active connectors whose requests the listener handed over. */
static int ndk_flood_match(struct ndk_flood *f, struct ndk_flood_conn *fc,
			   int from)
{
	int i, j, matched = 0;
	u16 port;

	for (i = from; i < ndk_flood_count(f); i++) {
		port = ndk_conn_port(f->in[i], false);
		for (j = 0; j < NDK_FLOOD_ALL; j++) {
			if (fc[j].handed || !port ||
			    ndk_conn_port(fc[j].c, true) != port)
				continue;
			fc[j].handed = true;
			matched++;
			break;
		}
	}
	return matched;
}

/*
 * A message of 16 bytes from @from to @to through NdkReceive and NdkSend,
 * the round's number in its bytes; both results polled from the CQ.
 */
static void ndk_flood_message(struct kunit *test, struct ndk_cenv *e,
			      NDK_QP *from, NDK_QP *to, u8 round)
{
	struct ib_device *dev = container_of(e->pd, struct ndk_pd,
					     ndk)->ibpd->device;
	u8 *buf = kunit_kzalloc(test, 32, GFP_KERNEL);
	NDK_SGE ss, rs;
	NDK_RESULT r[2];
	UINT32 tok;
	u64 dma;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(buf, round, 16);
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &tok);
	dma = ib_dma_map_single(dev, buf, 32, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, dma));
	ss = (NDK_SGE){ .LogicalAddress = dma, .Length = 16,
			.MemoryRegionToken = tok };
	rs = (NDK_SGE){ .LogicalAddress = dma + 16, .Length = 16,
			.MemoryRegionToken = tok };
	KUNIT_EXPECT_EQ(test, to->Dispatch->NdkReceive(to, (void *)1, &rs, 1),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, from->Dispatch->NdkSend(from, (void *)2, &ss, 1,
						      0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_poll_results(e->cq, r, 2), 2U);
	ib_dma_unmap_single(dev, dma, 32, DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[1].Status, STATUS_SUCCESS);
	NDK_EXPECT_MEMEQ(test, buf + 16, buf, 16);
}

/* The kernel's unreclaimable slab memory, in KiB. */
static unsigned long ndk_slab_kib(void)
{
	return global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B) *
	       (PAGE_SIZE / 1024);
}

/*
 * A peer floods a listener whose consumer answers nothing: with
 * listen_backlog at 16, 80 requests at once. Exactly 16 reach the
 * consumer, whose listener never counts more than 16 unanswered; the
 * other 64 are refused on the wire (STATUS_CONNECTION_REFUSED) without
 * any callback and counted in listen_overflows. A connection the
 * consumer accepted on the same listener before the flood moves data
 * during it and at its peak. The listener's close waits for the
 * connectors it handed out, which the consumer closes unanswered (their
 * peers are refused then, or have timed out on a slow run); afterwards
 * ndk's open objects are as before. ndk's memory (its connectors) and
 * the kernel's unreclaimable slab before, at the peak and after are
 * logged; kmemleak and KASAN watch the rest.
 */
static void ndk_listen_flood_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_flood *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct ndk_flood_conn *fc = kunit_kcalloc(test, NDK_FLOOD_ALL,
						  sizeof(*fc), GFP_KERNEL);
	unsigned long slab[3];
	char *before, *peak, *after;
	int i, refused = 0;
	struct ndk_wait cw, lw, dw;
	struct ndk_pair p;
	NDK_LISTENER *l;

	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_ASSERT_NOT_NULL(test, fc);
	before = ndk_obs_read(test, e, "stats");
	slab[0] = ndk_slab_kib();
	ndk_backlog_set(test, NDK_FLOOD_LIMIT);
	l = ndk_flood_listener(test, e, f);

	/* Accepted before the flood: an answered request takes no place. */
	ndk_pair_init(test, e, &p);
	ndk_backlog_connect(test, e, p.c, p.aqp, &cw);
	KUNIT_ASSERT_TRUE(test, ndk_flood_wait(f, 1));
	p.in = f->in[0];
	ndk_backlog_accept(test, &p, &cw);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->l->unanswered), 0);

	for (i = 0; i < NDK_FLOOD_ALL; i++) {
		fc[i].c = ndk_cenv_connector(test, e);
		fc[i].qp = ndk_cenv_qp(test, e);
	}
	for (i = 0; i < NDK_FLOOD_ALL; i++)
		ndk_backlog_connect(test, e, fc[i].c, fc[i].qp, &fc[i].w);
	ndk_flood_message(test, e, p.aqp, p.pqp, 1);

	KUNIT_ASSERT_TRUE(test, ndk_flood_wait(f, 1 + NDK_FLOOD_LIMIT));
	KUNIT_ASSERT_EQ(test, ndk_flood_match(f, fc, 1), NDK_FLOOD_LIMIT);
	for (i = 0; i < NDK_FLOOD_ALL; i++) {
		if (fc[i].handed)
			continue;
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&fc[i].w));
		KUNIT_EXPECT_EQ(test, fc[i].w.status,
				STATUS_CONNECTION_REFUSED);
		refused += fc[i].w.status == STATUS_CONNECTION_REFUSED;
	}
	KUNIT_EXPECT_EQ(test, refused, NDK_FLOOD_EXTRA);
	/* All requests are decided: none more reached the consumer. */
	KUNIT_EXPECT_EQ(test, ndk_flood_count(f), 1 + NDK_FLOOD_LIMIT);
	KUNIT_EXPECT_EQ(test, f->most, NDK_FLOOD_LIMIT);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->l->unanswered), NDK_FLOOD_LIMIT);
	peak = ndk_obs_read(test, e, "stats");
	slab[1] = ndk_slab_kib();
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, peak, "listen_overflows"),
			ndk_obs_stat(test, before, "listen_overflows") +
			NDK_FLOOD_EXTRA);
	ndk_flood_message(test, e, p.pqp, p.aqp, 2);

	/* The consumer closes the listener first: that waits for the rest. */
	ndk_wait_init(&lw);
	KUNIT_ASSERT_EQ(test, ndk_listener_close(l, &lw), STATUS_PENDING);
	for (i = 1; i <= NDK_FLOOD_LIMIT; i++)
		ndk_close_all(test, f->in[i], NULL);
	for (i = 0; i < NDK_FLOOD_ALL; i++) {
		if (!fc[i].handed)
			continue;
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&fc[i].w));
		/* siw gives up waiting for the MPA reply after 10 s. */
		KUNIT_EXPECT_TRUE_MSG(test,
				      fc[i].w.status == STATUS_CONNECTION_REFUSED ||
				      fc[i].w.status == STATUS_IO_TIMEOUT,
				      "status %#x", fc[i].w.status);
	}
	KUNIT_EXPECT_FALSE(test, completion_done(&lw.done));
	ndk_wait_init(&dw);
	KUNIT_ASSERT_EQ(test, p.c->Dispatch->NdkDisconnect(p.c,
							   ndk_test_request_cb,
							   &dw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	ndk_pair_close(test, &p);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&lw));
	for (i = 0; i < NDK_FLOOD_ALL; i++)
		ndk_close_all(test, fc[i].c, fc[i].qp);

	after = ndk_obs_read(test, e, "stats");
	slab[2] = ndk_slab_kib();
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "open_connectors"),
			ndk_obs_stat(test, before, "open_connectors"));
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "open_qps"),
			ndk_obs_stat(test, before, "open_qps"));
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "open_listeners"),
			ndk_obs_stat(test, before, "open_listeners"));
	kunit_info(test,
		   "ndk connectors (%zu bytes each): %llu before, %llu at the peak (%d of them handed out, unanswered), %llu after; unreclaimable slab: %lu KiB, %lu KiB, %lu KiB\n",
		   sizeof(struct ndk_connector),
		   ndk_obs_stat(test, before, "open_connectors"),
		   ndk_obs_stat(test, peak, "open_connectors"),
		   NDK_FLOOD_LIMIT,
		   ndk_obs_stat(test, after, "open_connectors"),
		   slab[0], slab[1], slab[2]);
}

/*
 * A listener refuses inline, with no callback, a creation without its
 * connect event or completion, and an NdkListen without a completion or
 * an address, or a second one; the first still listens.
 */
static void ndk_listener_args_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LISTENER *l = ndk_cenv_listener(test, e), *unused = NULL;
	struct sockaddr_in sin = e->addr;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkCreateListener(e->a, NULL, e,
								ndk_test_create_cb,
								&w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkCreateListener(e->a,
								ndk_conn_event_cb,
								e, NULL, &w,
								&unused),
			STATUS_INVALID_PARAMETER);
	sin.sin_port = htons(NDK_TEST_PORT + 6);
	KUNIT_EXPECT_EQ(test, l->Dispatch->NdkListen(l, (struct sockaddr *)&sin,
						     sizeof(sin), NULL, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, l->Dispatch->NdkListen(l, (struct sockaddr *)&sin,
						     sizeof(sin) - 1,
						     ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, l->Dispatch->NdkListen(l, NULL, sizeof(sin),
						     ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	KUNIT_ASSERT_EQ(test, ndk_cenv_listen(test, e, l, NDK_TEST_PORT + 6),
			STATUS_SUCCESS);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, l->Dispatch->NdkListen(l, (struct sockaddr *)&sin,
						     sizeof(sin),
						     ndk_test_request_cb, &w),
			STATUS_INVALID_DEVICE_STATE);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);

	/* The wildcard address binds no device, and is taken. */
	l = ndk_cenv_listener(test, e);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	sin.sin_port = htons(NDK_TEST_PORT + 7);
	ndk_wait_init(&w);
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&sin, sizeof(sin),
				    ndk_test_request_cb, &w);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
}

/* Which local address a row of ndk_listen_bind_status_test names. */
enum ndk_bind_addr {
	NDK_BIND_OWN,		/* the adapter's */
	NDK_BIND_ANY,		/* the wildcard */
	NDK_BIND_FOREIGN,	/* a documentation prefix's, owned by none */
};

static const struct ndk_bind_case {
	const char *name;
	bool v6;
	enum ndk_bind_addr addr;
	u16 port;
	int err;
	NTSTATUS want;
} ndk_bind_cases[] = {
	{ "in use", false, NDK_BIND_OWN, 5000, -EADDRINUSE,
	  STATUS_SHARING_VIOLATION },
	{ "own, no port free", false, NDK_BIND_OWN, 0, -EADDRNOTAVAIL,
	  STATUS_TOO_MANY_ADDRESSES },
	{ "own, port given", false, NDK_BIND_OWN, 5000, -EADDRNOTAVAIL,
	  STATUS_INVALID_ADDRESS },
	{ "wildcard, no port free", false, NDK_BIND_ANY, 0, -EADDRNOTAVAIL,
	  STATUS_TOO_MANY_ADDRESSES },
	{ "foreign", false, NDK_BIND_FOREIGN, 0, -EADDRNOTAVAIL,
	  STATUS_INVALID_ADDRESS },
	{ "foreign, port given", false, NDK_BIND_FOREIGN, 5000, -EADDRNOTAVAIL,
	  STATUS_INVALID_ADDRESS },
	{ "IPv6 own, no port free", true, NDK_BIND_OWN, 0, -EADDRNOTAVAIL,
	  STATUS_TOO_MANY_ADDRESSES },
	{ "IPv6 wildcard, no port free", true, NDK_BIND_ANY, 0, -EADDRNOTAVAIL,
	  STATUS_TOO_MANY_ADDRESSES },
	{ "IPv6 foreign", true, NDK_BIND_FOREIGN, 0, -EADDRNOTAVAIL,
	  STATUS_INVALID_ADDRESS },
	{ "IPv6 own, port given", true, NDK_BIND_OWN, 5000, -EADDRNOTAVAIL,
	  STATUS_INVALID_ADDRESS },
	{ "another device", false, NDK_BIND_OWN, 0, -ENODEV,
	  STATUS_INVALID_ADDRESS },
	{ "no memory", false, NDK_BIND_OWN, 0, -ENOMEM,
	  STATUS_INSUFFICIENT_RESOURCES },
};

static void ndk_bind_desc(const struct ndk_bind_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_bind, ndk_bind_cases, ndk_bind_desc);

/*
 * rdma_bind_addr()'s EADDRNOTAVAIL means two things: an address this
 * host does not own, or no ephemeral port left. NdkListen, NdkConnect
 * and a shared endpoint's bind tell them apart (ndk_bind_status()): only
 * a wildcard or own address with port 0 can have run out of ports.
 */
static void ndk_listen_bind_status_test(struct kunit *test)
{
	const struct ndk_bind_case *bc = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct sockaddr_storage ss = {};
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

	if (bc->v6) {
		if (bc->addr == NDK_BIND_OWN) {
			if (!e->addr6.sin6_family)
				kunit_skip(test, "the adapter has no IPv6 address");
			*s6 = e->addr6;
		}
		s6->sin6_family = AF_INET6;
		if (bc->addr == NDK_BIND_FOREIGN)
			s6->sin6_addr.s6_addr32[0] = htonl(0x20010db8);
		s6->sin6_port = htons(bc->port);
	} else {
		if (bc->addr == NDK_BIND_OWN)
			*s4 = e->addr;
		s4->sin_family = AF_INET;
		if (bc->addr == NDK_BIND_ANY)
			s4->sin_addr.s_addr = htonl(INADDR_ANY);
		if (bc->addr == NDK_BIND_FOREIGN)
			s4->sin_addr.s_addr = htonl(0xc0000201);
		s4->sin_port = htons(bc->port);
	}
	KUNIT_EXPECT_EQ(test, ndk_bind_status((struct sockaddr *)&ss, bc->err),
			bc->want);
}

/*
 * Two RDMA devices, the test's and a second one on an interface of its
 * own. A listen on the other device's address is refused, and so is one
 * on the loopback address, which rdma_cm binds on every device as it
 * does the wildcard; after either, the same listener can listen again.
 * A wildcard listen hears every device but takes only its own adapter's
 * requests: a connect through the other device is refused on the wire,
 * and the consumer hears nothing of it. A connector cannot use a QP of
 * the other device.
 */
static void ndk_listen_other_device_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_cenv *o = kunit_kzalloc(test, sizeof(*o), GFP_KERNEL);
	struct ndk_wait *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	u16 port = NDK_TEST_PORT + 10;
	struct ndk_test_dev2 *d;
	NDK_CONNECTOR *c, *oc;
	struct sockaddr_in sin;
	NDK_LISTENER *l;
	NDK_QP *oqp;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, o);
	KUNIT_ASSERT_NOT_NULL(test, w);
	d = ndk_test_dev2_add(test);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, ndk_open_adapter(d->ifindex, v, &d->a),
			STATUS_SUCCESS);
	o->a = d->a;
	o->pd = container_of(ndk_test_create_pd(test, o->a), NDK_PD, Header);
	o->cq = container_of(ndk_test_create_cq(test, o->a, 64), NDK_CQ,
			     Header);
	o->addr = d->addr;

	l = ndk_cenv_listener(test, e);
	sin = d->addr;
	sin.sin_port = htons(port);
	KUNIT_EXPECT_EQ(test, ndk_listen_at(test, l, &sin),
			STATUS_INVALID_ADDRESS);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	KUNIT_EXPECT_EQ(test, ndk_listen_at(test, l, &sin),
			STATUS_INVALID_ADDRESS);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	KUNIT_ASSERT_EQ(test, ndk_listen_at(test, l, &sin), STATUS_SUCCESS);

	oqp = ndk_cenv_qp(test, o);
	c = ndk_cenv_connector(test, e);
	ndk_wait_init(w);
	KUNIT_EXPECT_EQ(test, ndk_cenv_connect(e, c, oqp, port, NULL, 0, w),
			STATUS_INVALID_PARAMETER);
	ndk_test_close(test, &c->Header, c->Dispatch->NdkCloseConnector);

	oc = ndk_cenv_connector(test, o);
	reinit_completion(&e->incoming_done);
	ndk_wait_init(w);
	st = ndk_cenv_connect(o, oc, oqp, port, NULL, 0, w);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, w, st),
			STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_FALSE(test, completion_done(&e->incoming_done));

	ndk_close_all(test, oc, oqp);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
	ndk_test_close(test, &o->cq->Header, o->cq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &o->pd->Header, o->pd->Dispatch->NdkClosePd);
	ndk_test_dev2_del(test, d);
}

#define NDK_LO_DEV	"ndksiwlo"

/*
 * A loopback address belongs to the loopback interface's adapter alone:
 * ::1 is refused on the case's own adapter, and 127.0.0.1 is taken on an
 * adapter of the loopback interface, which siw can give. rdma_cm listens
 * on such an address on every device, and siw binds it for each of its
 * devices: beside the siw run's own device the second bind fails
 * (deviations.rst), so that part runs beside rxe only. The guest has no
 * /sbin/modprobe for the kernel to load siw on demand: the case loads it.
 */
static void ndk_listen_loopback_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_cenv *o = kunit_kzalloc(test, sizeof(*o), GFP_KERNEL);
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_LOOPBACK_INIT,
		.sin6_port = htons(NDK_TEST_PORT + 14),
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		.sin_port = htons(NDK_TEST_PORT + 14),
	};
	NDK_LISTENER *l;
	struct ndk_wait w;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, o);
	l = ndk_cenv_listener(test, e);
	ndk_wait_init(&w);
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&sin6, sizeof(sin6),
				    ndk_test_request_cb, &w);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, st),
			STATUS_INVALID_ADDRESS);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);

	if (ndk_test_iwarp())
		return;
	KUNIT_ASSERT_EQ(test, ndk_test_shell("modprobe siw"), 0);
	KUNIT_ASSERT_EQ(test, ndk_test_shell("rdma link add " NDK_LO_DEV
					     " type siw netdev lo"), 0);
	KUNIT_EXPECT_EQ(test, ndk_open_adapter(init_net.loopback_dev->ifindex,
					       v, &o->a),
			STATUS_SUCCESS);
	if (o->a) {
		init_completion(&o->incoming_done);
		l = ndk_cenv_listener(test, o);
		KUNIT_EXPECT_EQ(test, ndk_listen_at(test, l, &sin),
				STATUS_SUCCESS);
		ndk_test_close(test, &l->Header,
			       l->Dispatch->NdkCloseListener);
		ndk_close_adapter(o->a);
	}
	KUNIT_EXPECT_EQ(test, ndk_test_shell("rdma link delete " NDK_LO_DEV),
			0);
}

/* A raw rdma_cm active side, which connects without a QP of its own. */
struct ndk_raw_active {
	struct completion done;
	enum rdma_cm_event_type event;	/* the one that ended the connect */
	int status;
};

static void ndk_raw_active_end(struct ndk_raw_active *r,
			       enum rdma_cm_event_type event, int status)
{
	if (completion_done(&r->done))
		return;
	r->event = event;
	r->status = status;
	complete(&r->done);
}

static int ndk_raw_active_handler(struct rdma_cm_id *id,
				  struct rdma_cm_event *ev)
{
	struct ndk_raw_active *r = id->context;
	struct rdma_conn_param param = {
		.qp_num = 0x79,
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	int err;

	if (ev->event == RDMA_CM_EVENT_ADDR_RESOLVED)
		err = rdma_resolve_route(id, 2000);
	else if (ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED)
		err = rdma_connect_locked(id, &param);
	else
		err = ev->status;
	if (err || (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED &&
		    ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED))
		ndk_raw_active_end(r, ev->event, err);
	return 0;
}

/*
 * Holds the removal of one device in ndk's NDK_ADAPTER_REMOVED news: ndk
 * has marked its adapters dead, and rdma_cm, whose client goes after
 * ndk's, still listens on it until @go.
 */
struct ndk_removal_hold {
	struct notifier_block nb;
	int ifindex;
	struct completion held;
	struct completion go;
};

static int ndk_removal_hold_notify(struct notifier_block *nb,
				   unsigned long event, void *data)
{
	struct ndk_removal_hold *h = container_of(nb, struct ndk_removal_hold,
						  nb);
	const struct ndk_adapter_desc *desc = data;

	if (event != NDK_ADAPTER_REMOVED || desc->ifindex != h->ifindex)
		return NOTIFY_DONE;
	complete(&h->held);
	/* Bounded: a case that failed must not hold the removal for good. */
	wait_for_completion_timeout(&h->go, NDK_TEST_TIMEOUT);
	return NOTIFY_OK;
}

/*
 * A request that reaches a listener whose adapter is dead is refused:
 * the device's removal has begun and the consumer has not closed the
 * adapter yet. The removal is held in ndk's news of it, while rdma_cm
 * still listens on the device. The peer, a raw rdma_cm id on the same
 * device, gets a reject; the consumer hears of no request.
 */
static void ndk_listen_removed_test(struct kunit *test)
{
	struct ndk_cenv *o = kunit_kzalloc(test, sizeof(*o), GFP_KERNEL);
	struct ndk_removal_hold h = { .nb.notifier_call =
				      ndk_removal_hold_notify };
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct ndk_raw_active r = {};
	struct ndk_test_removal rm;
	struct sockaddr_in src, dst;
	struct ndk_test_dev2 *d;
	struct rdma_cm_id *id;
	NDK_LISTENER *l;
	bool held;
	int err;

	KUNIT_ASSERT_NOT_NULL(test, o);
	d = ndk_test_dev2_add(test);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, ndk_open_adapter(d->ifindex, v, &d->a),
			STATUS_SUCCESS);
	o->a = d->a;
	init_completion(&o->incoming_done);
	l = ndk_cenv_listener(test, o);
	src = d->addr;
	dst = d->addr;
	dst.sin_port = htons(NDK_TEST_PORT + 13);
	KUNIT_ASSERT_EQ(test, ndk_listen_at(test, l, &dst), STATUS_SUCCESS);
	init_completion(&r.done);
	id = rdma_create_id(&init_net, ndk_raw_active_handler, &r, RDMA_PS_TCP,
			    IB_QPT_RC);
	KUNIT_ASSERT_FALSE(test, IS_ERR(id));
	h.ifindex = d->ifindex;
	init_completion(&h.held);
	init_completion(&h.go);
	err = ndk_register_adapter_notifier(&h.nb);
	if (err)
		rdma_destroy_id(id);
	KUNIT_ASSERT_EQ(test, err, 0);

	/* No assertion until the device is gone: @rm and @h are on the stack. */
	ndk_test_dev2_remove(d, &rm);
	held = wait_for_completion_timeout(&h.held, NDK_TEST_TIMEOUT);
	KUNIT_EXPECT_TRUE(test, held);
	KUNIT_EXPECT_TRUE(test,
			  ndk_adapter_dead(container_of(d->a, struct ndk_adapter,
							ndk)));
	err = held ? rdma_resolve_addr(id, (struct sockaddr *)&src,
				       (struct sockaddr *)&dst, 2000) : -EIO;
	KUNIT_EXPECT_EQ(test, err, 0);
	if (!err) {
		KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&r.done,
								  NDK_TEST_TIMEOUT),
				0UL);
		KUNIT_EXPECT_EQ_MSG(test, r.event, RDMA_CM_EVENT_REJECTED,
				    "event %d status %d", r.event, r.status);
	}
	complete(&h.go);
	rdma_destroy_id(id);
	KUNIT_EXPECT_FALSE(test, completion_done(&o->incoming_done));
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
	ndk_close_adapter(d->a);
	d->a = NULL;
	KUNIT_EXPECT_EQ(test, ndk_test_dev2_removed(&rm), 0);
	ndk_unregister_adapter_notifier(&h.nb);
	ndk_test_dev2_del(test, d);
}

/*
 * Without memory for the fresh id a listen that failed past the bind
 * needs, the listener keeps its bound one and the next NdkListen makes
 * it first: that listen fails with STATUS_INSUFFICIENT_RESOURCES while
 * memory is still short, and the one after succeeds.
 */
static void ndk_listen_renew_fault_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_test_dev2 *d;
	struct sockaddr_in sin;
	NDK_LISTENER *l;
	bool fired;

	d = ndk_test_dev2_add(test);
	KUNIT_ASSERT_NOT_NULL(test, d);
	l = ndk_cenv_listener(test, e);
	sin = d->addr;
	sin.sin_port = htons(NDK_TEST_PORT + 10);
	/* The bind's call is the first, the fresh id's creation the second. */
	ndk_fault_arm(2);
	KUNIT_EXPECT_EQ(test, ndk_listen_at(test, l, &sin),
			STATUS_INVALID_ADDRESS);
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_TRUE(test, fired);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	ndk_fault_arm(1);
	KUNIT_EXPECT_EQ(test, ndk_listen_at(test, l, &sin),
			STATUS_INSUFFICIENT_RESOURCES);
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_TRUE(test, fired);
	KUNIT_EXPECT_EQ(test, ndk_listen_at(test, l, &sin), STATUS_SUCCESS);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
	ndk_test_dev2_del(test, d);
}

static struct kunit_case ndk_listener_cases[] = {
	KUNIT_CASE(ndk_listener_contexts_test),
	KUNIT_CASE(ndk_listener_args_test),
	KUNIT_CASE(ndk_listen_contexts_test),
	KUNIT_CASE(nd_dual_listen),
	KUNIT_CASE(nd_conn_listen_closing),
	KUNIT_CASE(ndk_conn_pause_test),
	KUNIT_CASE(ndk_listen_backlog_param_test),
	KUNIT_CASE_PARAM(ndk_listen_answer_test, ndk_answer_gen_params),
	KUNIT_CASE(ndk_listen_flood_test),
	KUNIT_CASE_PARAM(ndk_listen_bind_status_test, ndk_bind_gen_params),
	KUNIT_CASE(ndk_listen_other_device_test),
	KUNIT_CASE(ndk_listen_loopback_test),
	KUNIT_CASE(ndk_listen_removed_test),
	KUNIT_CASE(ndk_listen_renew_fault_test),
	{}
};

NDK_SUITE(listener, ndk_conn_init_test, ndk_listener_exit_test);
