// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_object, the tests of ndk/object.c, the lifetime core: the consumer
 * closes objects from inside every kind of callback ndk makes (create,
 * request, close, CQ notification, connect event, disconnect event, SRQ
 * notification). Each close must be accepted, inline (STATUS_SUCCESS, no
 * callback) or with STATUS_PENDING, complete exactly once, deadlock
 * nothing, and no callback of a closed object may run afterwards.
 * Antecedents closed in the same callback as their successors complete
 * after them. A create or close made where the caller may not sleep
 * pends, also where the preempt count does not show it.
 */
#include <linux/delay.h>
#include <ndk/ndk_mdl.h>
#include "ndk_tests.h"
#include "ndk_priv.h"

#define NDK_LT_MAX	3
#define NDK_LT_BUF	256

/**
 * struct ndk_closed - one object a callback closes
 * @obj: the object
 * @st: what its NdkClose* call returned
 * @done: its close completion
 */
struct ndk_closed {
	NDK_OBJECT_HEADER *obj;
	NTSTATUS st;
	struct ndk_wait done;
};

/**
 * struct ndk_closer - what a callback closes, and how that went
 * @o: the objects, closed in this order
 * @n: how many of @o are set
 * @calls: how many times the callback ran
 * @fired: completed once the closes were all called
 * @cb_status: the status the (first) callback reported
 */
struct ndk_closer {
	struct ndk_closed o[NDK_LT_MAX];
	int n;
	atomic_t calls;
	struct completion fired;
	NTSTATUS cb_status;
};

static NDK_FN_CLOSE_OBJECT ndk_lt_close_fn(NDK_OBJECT_HEADER *h)
{
	switch (h->ObjectType) {
	case NdkObjectTypeQp:
		return container_of(h, NDK_QP, Header)->Dispatch->NdkCloseQp;
	case NdkObjectTypeCq:
		return container_of(h, NDK_CQ, Header)->Dispatch->NdkCloseCq;
	case NdkObjectTypeMr:
		return container_of(h, NDK_MR, Header)->Dispatch->NdkCloseMr;
	case NdkObjectTypePd:
		return container_of(h, NDK_PD, Header)->Dispatch->NdkClosePd;
	case NdkObjectTypeSharedEndpoint:
		return container_of(h, NDK_SHARED_ENDPOINT,
				    Header)->Dispatch->NdkCloseSharedEndpoint;
	case NdkObjectTypeConnector:
		return container_of(h, NDK_CONNECTOR,
				    Header)->Dispatch->NdkCloseConnector;
	case NdkObjectTypeListener:
		return container_of(h, NDK_LISTENER,
				    Header)->Dispatch->NdkCloseListener;
	case NdkObjectTypeSrq:
		return container_of(h, NDK_SRQ, Header)->Dispatch->NdkCloseSrq;
	default:
		return NULL;
	}
}

static void ndk_closer_init(struct ndk_closer *c)
{
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NDK_LT_MAX; i++)
		ndk_wait_init(&c->o[i].done);
	init_completion(&c->fired);
}

static void ndk_closer_add(struct ndk_closer *c, NDK_OBJECT_HEADER *h)
{
	c->o[c->n++].obj = h;
}

/* From inside a callback: close everything in @c, the first time only. */
static void ndk_closer_fire(struct ndk_closer *c, NTSTATUS status)
{
	NDK_FN_CLOSE_OBJECT close;
	struct ndk_closed *o;

	if (atomic_inc_return(&c->calls) != 1)
		return;
	c->cb_status = status;
	for (o = c->o; o < c->o + c->n; o++) {
		close = ndk_lt_close_fn(o->obj);
		o->st = close(o->obj, ndk_test_close_cb, &o->done);
	}
	complete(&c->fired);
}

/*
 * Every close was accepted and completed once: inline (STATUS_SUCCESS,
 * never a callback) or through its callback, called once; and the
 * callback that closed them never ran again.
 */
static void ndk_closer_check(struct kunit *test, struct ndk_closer *c)
{
	int i;

	KUNIT_ASSERT_NE_MSG(test, wait_for_completion_timeout(&c->fired,
							      NDK_TEST_TIMEOUT),
			    0UL, "the callback never ran");
	for (i = 0; i < c->n; i++) {
		if (c->o[i].st == STATUS_SUCCESS)
			continue;
		KUNIT_EXPECT_EQ(test, c->o[i].st, STATUS_PENDING);
		KUNIT_ASSERT_TRUE_MSG(test, ndk_wait_for(&c->o[i].done),
				      "close %d never completed", i);
	}
	msleep(50);
	for (i = 0; i < c->n; i++)
		KUNIT_EXPECT_EQ(test, atomic_read(&c->o[i].done.calls),
				c->o[i].st == STATUS_PENDING ? 1 : 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->calls), 1);
}

static void ndk_lt_create_cb(PVOID ctx, NTSTATUS status,
			     NDK_OBJECT_HEADER *obj)
{
	struct ndk_closer *c = ctx;

	if (!status)
		ndk_closer_add(c, obj);
	ndk_closer_fire(c, status);
}

static void ndk_lt_request_cb(PVOID ctx, NTSTATUS status)
{
	ndk_closer_fire(ctx, status);
}

static void ndk_lt_close_cb(PVOID ctx)
{
	ndk_closer_fire(ctx, STATUS_SUCCESS);
}

static void ndk_lt_event_cb(PVOID ctx)
{
	ndk_closer_fire(ctx, STATUS_SUCCESS);
}

/* The handed-over connector is closed along with what @c holds. */
static void ndk_lt_connect_event_cb(PVOID ctx, NDK_CONNECTOR *conn)
{
	struct ndk_closer *c = ctx;

	c->o[0].obj = &conn->Header;
	ndk_closer_fire(c, STATUS_SUCCESS);
}

static void ndk_lt_cq_cb(PVOID ctx, NTSTATUS status)
{
	ndk_closer_fire(ctx, status);
}

static void ndk_lt_nop_cq_cb(PVOID ctx, NTSTATUS status)
{
}

static void ndk_lt_srq_cb(PVOID ctx, NTSTATUS status)
{
	ndk_closer_fire(ctx, status);
}

/* ---- closing from inside the create completion, per object type ---- */

struct ndk_lt_create {
	const char *name;
	NTSTATUS (*create)(struct ndk_cenv *e, struct ndk_closer *c);
};

static NTSTATUS ndk_lt_create_pd(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_PD *unused = NULL;

	return e->a->Dispatch->NdkCreatePd(e->a, ndk_lt_create_cb, c,
					   &unused);
}

static NTSTATUS ndk_lt_create_cq(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_CQ *unused = NULL;

	return e->a->Dispatch->NdkCreateCq(e->a, 16, ndk_lt_nop_cq_cb, NULL,
					   NULL, ndk_lt_create_cb, c, &unused);
}

static NTSTATUS ndk_lt_create_qp(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_QP *unused = NULL;

	return e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, NULL, 4, 4, 1,
					    1, 0, ndk_lt_create_cb, c,
					    &unused);
}

static NTSTATUS ndk_lt_create_srq(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_SRQ *unused = NULL;

	return e->pd->Dispatch->NdkCreateSrq(e->pd, 8, 1, 0, ndk_lt_nop_cq_cb,
					     NULL, NULL, ndk_lt_create_cb, c,
					     &unused);
}

static NTSTATUS ndk_lt_create_mr(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_MR *unused = NULL;

	return e->pd->Dispatch->NdkCreateMr(e->pd, FALSE, ndk_lt_create_cb, c,
					    &unused);
}

static NTSTATUS ndk_lt_create_fr_mr(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_MR *unused = NULL;

	return e->pd->Dispatch->NdkCreateMr(e->pd, TRUE, ndk_lt_create_cb, c,
					    &unused);
}

static NTSTATUS ndk_lt_create_conn(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_CONNECTOR *unused = NULL;

	return e->a->Dispatch->NdkCreateConnector(e->a, ndk_lt_create_cb, c,
						  &unused);
}

static NTSTATUS ndk_lt_create_listener(struct ndk_cenv *e,
				       struct ndk_closer *c)
{
	NDK_LISTENER *unused = NULL;

	return e->a->Dispatch->NdkCreateListener(e->a, ndk_conn_event_cb, e,
						 ndk_lt_create_cb, c,
						 &unused);
}

static NTSTATUS ndk_lt_create_sep(struct ndk_cenv *e, struct ndk_closer *c)
{
	NDK_SHARED_ENDPOINT *unused = NULL;
	struct sockaddr_in sin = e->addr;

	return e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
						       (struct sockaddr *)&sin,
						       sizeof(sin),
						       ndk_lt_create_cb, c,
						       &unused);
}

static const struct ndk_lt_create ndk_lt_creates[] = {
	{ "pd", ndk_lt_create_pd },
	{ "cq", ndk_lt_create_cq },
	{ "qp", ndk_lt_create_qp },
	{ "srq", ndk_lt_create_srq },
	{ "mr", ndk_lt_create_mr },
	{ "fast_register_mr", ndk_lt_create_fr_mr },
	{ "connector", ndk_lt_create_conn },
	{ "listener", ndk_lt_create_listener },
	{ "shared_endpoint", ndk_lt_create_sep },
};

static void ndk_lt_create_desc(const struct ndk_lt_create *p, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", p->name);
}

KUNIT_ARRAY_PARAM(ndk_lt_create, ndk_lt_creates, ndk_lt_create_desc);

static void ndk_lt_close_in_create_test(struct kunit *test)
{
	const struct ndk_lt_create *p = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_closer c;
	unsigned long flags;
	NTSTATUS st;

	ndk_closer_init(&c);
	/* Creation is callable from atomic context; so is the close. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = p->create(e, &c);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	ndk_closer_check(test, &c);
	KUNIT_EXPECT_EQ(test, c.cb_status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, c.n, 1);
}

/* ---- closing from inside the other callbacks ---- */

/**
 * struct ndk_lt - one callback case's objects
 * @e: the suite's connection environment
 * @p: a connection
 * @cq: a CQ of the case's own
 * @buf: NDK_LT_BUF bytes, DMA-mapped at @dma
 * @dma: its device address
 * @tok: the privileged token
 * @dev: the device that mapped @buf
 */
struct ndk_lt {
	struct ndk_cenv *e;
	struct ndk_pair p;
	NDK_CQ *cq;
	u8 *buf;
	u64 dma;
	UINT32 tok;
	struct ib_device *dev;
};

static void ndk_lt_map(struct kunit *test, struct ndk_lt *t)
{
	t->buf = kunit_kzalloc(test, NDK_LT_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->buf);
	t->dev = container_of(t->e->pd, struct ndk_pd, ndk)->ibpd->device;
	t->dma = ib_dma_map_single(t->dev, t->buf, NDK_LT_BUF,
				   DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(t->dev, t->dma));
	t->e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(t->e->pd,
							       &t->tok);
}

static void ndk_lt_unmap(struct ndk_lt *t)
{
	ib_dma_unmap_single(t->dev, t->dma, NDK_LT_BUF, DMA_BIDIRECTIONAL);
}

static NDK_SGE ndk_lt_sge(struct ndk_lt *t, u32 off, u32 len)
{
	return (NDK_SGE){ .LogicalAddress = t->dma + off, .Length = len,
			  .MemoryRegionToken = t->tok };
}

static NDK_QP *ndk_lt_qp(struct kunit *test, struct ndk_cenv *e, NDK_CQ *cq)
{
	NDK_QP *qp = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, cq, cq, e, 8, 8, 1, 1, 0,
					  ndk_test_create_cb, &w, &qp);
	return container_of(ndk_created(test, st, &w, qp), NDK_QP, Header);
}

static void ndk_lt_dst(struct ndk_cenv *e, struct sockaddr_in *dst, u16 port)
{
	*dst = e->addr;
	dst->sin_port = htons(port);
}

static NTSTATUS ndk_lt_connect(struct ndk_lt *t, u16 port,
			       NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
	struct sockaddr_in src = t->e->addr, dst;

	ndk_lt_dst(t->e, &dst, port);
	return t->p.c->Dispatch->NdkConnect(t->p.c, t->p.aqp, (struct sockaddr *)&src,
					    sizeof(src), (struct sockaddr *)&dst,
					    sizeof(dst), 4, 4, NULL, 0, cb,
					    ctx);
}

/* The listener's connector, accepted with @disc as its disconnect event. */
static NTSTATUS ndk_lt_accept(struct kunit *test, struct ndk_lt *t,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK disc,
			      void *disc_ctx, struct ndk_wait *aw)
{
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&t->e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	t->p.in = t->e->incoming;
	ndk_wait_init(aw);
	return t->p.in->Dispatch->NdkAccept(t->p.in, t->p.pqp, 4, 4, NULL, 0,
					    disc, disc_ctx,
					    ndk_test_request_cb, aw);
}

/* Connect through the suite's listener; the passive side's disconnect
 * event is @disc.
 */
static void ndk_lt_establish(struct kunit *test, struct ndk_lt *t,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK disc,
			     void *disc_ctx)
{
	struct sockaddr_in dst;

	ndk_lt_dst(t->e, &dst, NDK_TEST_PORT);
	ndk_establish_pair_disc(test, t->e, &t->p,
				(struct sockaddr *)&t->e->addr,
				(struct sockaddr *)&dst, sizeof(dst), false,
				disc, disc_ctx);
}

static void ndk_lt_pair(struct kunit *test, struct ndk_lt *t)
{
	t->p.c = ndk_cenv_connector(test, t->e);
	t->p.aqp = ndk_cenv_qp(test, t->e);
	t->p.pqp = ndk_cenv_qp(test, t->e);
}

/*
 * NdkRegisterMr's completion closes the MR. From atomic context, so that
 * the registration pends rather than completing inline.
 */
static void ndk_lt_register_mr(struct kunit *test, struct ndk_lt *t,
			       struct ndk_closer *c)
{
	NDK_MR *unused = NULL, *mr;
	unsigned long flags;
	struct ndk_mdl mdl;
	struct ndk_wait w;
	NTSTATUS st;
	void *mem;

	mem = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mem);
	ndk_mdl_init_kva(&mdl, mem, PAGE_SIZE);
	ndk_wait_init(&w);
	st = t->e->pd->Dispatch->NdkCreateMr(t->e->pd, FALSE,
					     ndk_test_create_cb, &w, &unused);
	mr = container_of(ndk_created(test, st, &w, unused), NDK_MR, Header);
	ndk_closer_add(c, &mr->Header);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = mr->Dispatch->NdkRegisterMr(mr, &mdl, PAGE_SIZE,
					 NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					 NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
					 ndk_lt_request_cb, c);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_EQ(test, c->cb_status, STATUS_SUCCESS);
}

/*
 * NdkConnect's completion closes the active connector and its QP instead
 * of completing the connection; the passive side's accept still ends.
 */
static void ndk_lt_connect_done(struct kunit *test, struct ndk_lt *t,
				struct ndk_closer *c)
{
	struct ndk_wait aw;

	ndk_lt_pair(test, t);
	ndk_closer_add(c, &t->p.c->Header);
	ndk_closer_add(c, &t->p.aqp->Header);
	reinit_completion(&t->e->incoming_done);
	KUNIT_ASSERT_EQ(test, ndk_lt_connect(t, NDK_TEST_PORT,
					     ndk_lt_request_cb, c),
			STATUS_PENDING);
	KUNIT_ASSERT_EQ(test, ndk_lt_accept(test, t, ndk_disc_cb, t->e, &aw),
			STATUS_PENDING);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_EQ(test, c->cb_status, STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
	ndk_close_all(test, t->p.in, t->p.pqp);
}

/* NdkCompleteConnect's completion closes the active side. */
static void ndk_lt_complete_done(struct kunit *test, struct ndk_lt *t,
				 struct ndk_closer *c)
{
	struct ndk_wait cw, aw;
	unsigned long flags;
	NTSTATUS st;

	ndk_lt_pair(test, t);
	ndk_closer_add(c, &t->p.c->Header);
	ndk_closer_add(c, &t->p.aqp->Header);
	reinit_completion(&t->e->incoming_done);
	ndk_wait_init(&cw);
	KUNIT_ASSERT_EQ(test, ndk_lt_connect(t, NDK_TEST_PORT,
					     ndk_test_request_cb, &cw),
			STATUS_PENDING);
	KUNIT_ASSERT_EQ(test, ndk_lt_accept(test, t, ndk_disc_cb, t->e, &aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_ASSERT_EQ(test, cw.status, STATUS_SUCCESS);
	/* From atomic context: in a thread it would complete inline. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = t->p.c->Dispatch->NdkCompleteConnect(t->p.c, NULL, NULL,
						  ndk_lt_request_cb, c);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_EQ(test, c->cb_status, STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
	ndk_close_all(test, t->p.in, t->p.pqp);
}

/* NdkDisconnect's completion closes the connector and its QP. */
static void ndk_lt_disconnect_done(struct kunit *test, struct ndk_lt *t,
				   struct ndk_closer *c)
{
	ndk_lt_pair(test, t);
	ndk_lt_establish(test, t, ndk_disc_cb, t->e);
	ndk_closer_add(c, &t->p.c->Header);
	ndk_closer_add(c, &t->p.aqp->Header);
	KUNIT_ASSERT_EQ(test,
			t->p.c->Dispatch->NdkDisconnect(t->p.c,
							ndk_lt_request_cb, c),
			STATUS_PENDING);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_EQ(test, c->cb_status, STATUS_SUCCESS);
	ndk_close_all(test, t->p.in, t->p.pqp);
}

/*
 * A QP's close completion closes its CQ and PD, which are antecedents of
 * nothing else by then.
 */
static void ndk_lt_close_done(struct kunit *test, struct ndk_lt *t,
			      struct ndk_closer *c)
{
	NDK_OBJECT_HEADER *pd = ndk_test_create_pd(test, t->e->a);
	NDK_CQ *cq = container_of(ndk_test_create_cq(test, t->e->a, 16),
				  NDK_CQ, Header);
	NDK_PD *npd = container_of(pd, NDK_PD, Header);
	NDK_QP *made = NULL, *qp;
	unsigned long flags;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = npd->Dispatch->NdkCreateQp(npd, cq, cq, NULL, 4, 4, 1, 1, 0,
					ndk_test_create_cb, &w, &made);
	qp = container_of(ndk_created(test, st, &w, made), NDK_QP, Header);
	ndk_closer_add(c, &cq->Header);
	ndk_closer_add(c, pd);
	/* Atomic, so that the close pends and its callback runs. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = qp->Dispatch->NdkCloseQp(&qp->Header, ndk_lt_close_cb, c);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	ndk_closer_check(test, c);
}

/*
 * A connection whose passive QP has a CQ of its own, @t->cq, notifying
 * @c, and the mapped buffer.
 */
static void ndk_lt_own_cq_pair(struct kunit *test, struct ndk_lt *t,
			       struct ndk_closer *c)
{
	NDK_CQ *unused = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_lt_map(test, t);
	ndk_wait_init(&w);
	st = t->e->a->Dispatch->NdkCreateCq(t->e->a, 16, ndk_lt_cq_cb, c,
					    NULL, ndk_test_create_cb, &w,
					    &unused);
	t->cq = container_of(ndk_created(test, st, &w, unused), NDK_CQ,
			     Header);
	t->p.c = ndk_cenv_connector(test, t->e);
	t->p.aqp = ndk_cenv_qp(test, t->e);
	t->p.pqp = ndk_lt_qp(test, t->e, t->cq);
	ndk_lt_establish(test, t, ndk_disc_cb, t->e);
}

/*
 * The CQ notification (softirq) closes the receiving connector, its QP
 * and the CQ itself: the CQ's close completes after the QP's.
 */
static void ndk_lt_cq_notification(struct kunit *test, struct ndk_lt *t,
				   struct ndk_closer *c)
{
	NDK_SGE sge;
	NDK_RESULT r;

	ndk_lt_own_cq_pair(test, t, c);
	ndk_closer_add(c, &t->p.in->Header);
	ndk_closer_add(c, &t->p.pqp->Header);
	ndk_closer_add(c, &t->cq->Header);
	sge = ndk_lt_sge(t, 0, 16);
	KUNIT_ASSERT_EQ(test, t->p.pqp->Dispatch->NdkReceive(t->p.pqp,
							     (void *)1, &sge,
							     1),
			STATUS_SUCCESS);
	t->cq->Dispatch->NdkArmCq(t->cq, NDK_CQ_NOTIFY_ANY);
	sge = ndk_lt_sge(t, 64, 16);
	KUNIT_ASSERT_EQ(test, t->p.aqp->Dispatch->NdkSend(t->p.aqp, (void *)2,
							  &sge, 1, 0),
			STATUS_SUCCESS);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_EQ(test, c->cb_status, STATUS_SUCCESS);
	/* The send completed, whatever became of the closed receiver. */
	KUNIT_EXPECT_EQ(test, ndk_poll_results(t->e->cq, &r, 1), 1U);
	ndk_close_all(test, t->p.c, t->p.aqp);
	ndk_lt_unmap(t);
}

/*
 * A listener's connect event closes the handed-over connector and the
 * listener: the connecting side is refused, and nothing else arrives.
 */
static void ndk_lt_connect_event(struct kunit *test, struct ndk_lt *t,
				 struct ndk_closer *c)
{
	NDK_LISTENER *unused = NULL, *l;
	struct sockaddr_in sin;
	struct ndk_wait w, cw;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = t->e->a->Dispatch->NdkCreateListener(t->e->a,
						  ndk_lt_connect_event_cb, c,
						  ndk_test_create_cb, &w,
						  &unused);
	l = container_of(ndk_created(test, st, &w, unused), NDK_LISTENER,
			 Header);
	/* o[0] is the incoming connector, filled in by the callback. */
	c->n = 2;
	c->o[1].obj = &l->Header;
	ndk_lt_dst(t->e, &sin, NDK_TEST_PORT + 1);
	ndk_wait_init(&w);
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&sin, sizeof(sin),
				    ndk_test_request_cb, &w);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	t->p.c = ndk_cenv_connector(test, t->e);
	t->p.aqp = ndk_cenv_qp(test, t->e);
	ndk_wait_init(&cw);
	KUNIT_ASSERT_EQ(test, ndk_lt_connect(t, NDK_TEST_PORT + 1,
					     ndk_test_request_cb, &cw),
			STATUS_PENDING);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_EXPECT_NE(test, cw.status, STATUS_SUCCESS);
	ndk_close_all(test, t->p.c, t->p.aqp);
}

/* The passive side's disconnect event closes its connector and QP. */
static void ndk_lt_disconnect_event(struct kunit *test, struct ndk_lt *t,
				    struct ndk_closer *c)
{
	struct ndk_wait w;

	ndk_lt_pair(test, t);
	ndk_lt_establish(test, t, ndk_lt_event_cb, c);
	ndk_closer_add(c, &t->p.in->Header);
	ndk_closer_add(c, &t->p.pqp->Header);
	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test,
			t->p.c->Dispatch->NdkDisconnect(t->p.c,
							ndk_test_request_cb,
							&w),
			STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	ndk_closer_check(test, c);
	ndk_close_all(test, t->p.c, t->p.aqp);
}

/*
 * The SRQ's notification closes the SRQ. NdkModifySrq raising the
 * threshold above what is posted notifies at once; its own completion
 * still comes, and the receives die with the SRQ.
 */
static void ndk_lt_srq_notification(struct kunit *test, struct ndk_lt *t,
				    struct ndk_closer *c)
{
	NDK_SRQ *unused = NULL, *srq;
	struct ndk_wait w;
	NDK_SGE sge;
	NTSTATUS st;
	int i;

	ndk_lt_map(test, t);
	ndk_wait_init(&w);
	st = t->e->pd->Dispatch->NdkCreateSrq(t->e->pd, 16, 1, 0,
					      ndk_lt_srq_cb, c, NULL,
					      ndk_test_create_cb, &w, &unused);
	srq = container_of(ndk_created(test, st, &w, unused), NDK_SRQ,
			   Header);
	ndk_closer_add(c, &srq->Header);
	for (i = 0; i < 2; i++) {
		sge = ndk_lt_sge(t, 32 * i, 32);
		KUNIT_ASSERT_EQ(test,
				srq->Dispatch->NdkSrqReceive(srq,
						(void *)(uintptr_t)(i + 1),
						&sge, 1),
				STATUS_SUCCESS);
	}
	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test, srq->Dispatch->NdkModifySrq(srq, 0, 5,
							  ndk_test_request_cb,
							  &w),
			STATUS_PENDING);
	ndk_closer_check(test, c);
	KUNIT_EXPECT_EQ(test, c->cb_status, STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	ndk_lt_unmap(t);
}

/*
 * Completions of a QP the consumer closed before polling them still come
 * back, each once, cancelled, with the QP's context: the QP stays the
 * owner of its requests until they are reported (sweep.c). The CQ's
 * notification shows they were there before the close.
 */
static void ndk_lt_close_unpolled(struct kunit *test, struct ndk_lt *t,
				  struct ndk_closer *c)
{
	NDK_RESULT r[8];
	unsigned long seen = 0;
	NDK_SGE sge;
	ULONG n, i;
	void *qpctx;

	ndk_lt_own_cq_pair(test, t, c);
	for (i = 0; i < 3; i++) {
		sge = ndk_lt_sge(t, 32 * i, 32);
		KUNIT_ASSERT_EQ(test,
				t->p.pqp->Dispatch->NdkReceive(t->p.pqp,
						(void *)(uintptr_t)(i + 1),
						&sge, 1),
				STATUS_SUCCESS);
	}
	qpctx = container_of(t->p.pqp, struct ndk_qp, ndk)->context;
	t->cq->Dispatch->NdkArmCq(t->cq, NDK_CQ_NOTIFY_ANY);
	t->p.pqp->Dispatch->NdkFlush(t->p.pqp);
	ndk_closer_check(test, c);
	ndk_close_all(test, t->p.in, t->p.pqp);
	n = ndk_poll_results(t->cq, r, 3);
	KUNIT_EXPECT_EQ(test, n, 3UL);
	KUNIT_EXPECT_EQ(test, t->cq->Dispatch->NdkGetCqResults(t->cq, r + n,
							       ARRAY_SIZE(r) - n),
			0UL);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, qpctx);
		seen |= BIT((uintptr_t)r[i].RequestContext & 7);
	}
	KUNIT_EXPECT_EQ(test, seen, BIT(1) | BIT(2) | BIT(3));
	ndk_close_all(test, t->p.c, t->p.aqp);
	ndk_test_close(test, &t->cq->Header, t->cq->Dispatch->NdkCloseCq);
	ndk_lt_unmap(t);
}

struct ndk_lt_case {
	const char *name;
	void (*run)(struct kunit *test, struct ndk_lt *t,
		    struct ndk_closer *c);
};

static const struct ndk_lt_case ndk_lt_cases[] = {
	{ "request_register_mr", ndk_lt_register_mr },
	{ "request_connect", ndk_lt_connect_done },
	{ "request_complete_connect", ndk_lt_complete_done },
	{ "request_disconnect", ndk_lt_disconnect_done },
	{ "close", ndk_lt_close_done },
	{ "cq_notification", ndk_lt_cq_notification },
	{ "connect_event", ndk_lt_connect_event },
	{ "disconnect_event", ndk_lt_disconnect_event },
	{ "srq_notification", ndk_lt_srq_notification },
	{ "cq_notification_then_close_unpolled", ndk_lt_close_unpolled },
};

static void ndk_lt_case_desc(const struct ndk_lt_case *p, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", p->name);
}

KUNIT_ARRAY_PARAM(ndk_lt_case, ndk_lt_cases, ndk_lt_case_desc);

static void ndk_lt_close_in_callback_test(struct kunit *test)
{
	const struct ndk_lt_case *p = test->param_value;
	struct ndk_closer c;
	struct ndk_lt t = { .e = test->priv };

	ndk_closer_init(&c);
	p->run(test, &t, &c);
}

/* A header of no object, laid out as ndk's objects are. */
struct ndk_lt_fake {
	NDK_PD ndk;
	struct ndk_obj obj;
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_lt_fake);

/*
 * NdkCloseObject refuses, with no callback, a header of a type beyond
 * the last, a header of a valid type that is no object of ndk's (its
 * object does not point back at it, even where it looks live), and a
 * second close of an object whose first close is pending; that first
 * close still completes once, when the region under the PD is closed.
 */
static void ndk_lt_close_refused_test(struct kunit *test)
{
	struct ndk_lt_fake *fake = ndk_kzalloc_test(test, sizeof(*fake));
	struct ndk_wait *w = ndk_kzalloc_test(test, 2 * sizeof(*w));
	struct ndk_cenv *e = test->priv, other = *e;
	NDK_FN_CLOSE_OBJECT close = e->pd->Dispatch->NdkClosePd;
	NDK_MR *mr;

	ndk_wait_init(&w[0]);
	fake->ndk.Header.ObjectType = NdkObjectTypeMax;
	KUNIT_EXPECT_EQ(test, close(&fake->ndk.Header, ndk_test_close_cb,
				    &w[0]),
			STATUS_INVALID_PARAMETER);
	fake->ndk.Header.ObjectType = NdkObjectTypePd;
	fake->obj.hdr = &e->pd->Header;
	fake->obj.state = NDK_OBJ_LIVE;
	KUNIT_EXPECT_EQ(test, close(&fake->ndk.Header, ndk_test_close_cb,
				    &w[0]),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w[0].calls), 0);

	other.pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD,
				Header);
	mr = ndk_test_mr(test, &other, false);
	KUNIT_EXPECT_EQ(test, close(&other.pd->Header, ndk_test_close_cb,
				    &w[0]),
			STATUS_PENDING);
	ndk_wait_init(&w[1]);
	KUNIT_EXPECT_EQ(test, close(&other.pd->Header, ndk_test_close_cb,
				    &w[1]),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_FALSE(test, completion_done(&w[0].done));
	ndk_test_close_mr(test, mr);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w[0]));
	KUNIT_EXPECT_EQ(test, atomic_read(&w[0].calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&w[1].calls), 0);
}

/* Contexts where a caller may not sleep that the preempt count misses. */
static const enum ndk_test_ctx ndk_lt_hidden_p[] = {
	NDK_CTX_RCU, NDK_CTX_IRQS_OFF,
};

static void ndk_lt_hidden_desc(const enum ndk_test_ctx *ctx, char *desc)
{
	strscpy(desc, *ctx == NDK_CTX_RCU ? "rcu_read_lock" :
					    "local_irq_disable",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_lt_hidden, ndk_lt_hidden_p, ndk_lt_hidden_desc);

/**
 * struct ndk_lt_probe - what a context looks like from inside
 * @c: the call that looks
 * @count: preempt_count()
 * @rcu: inside a read-side section of preemptible RCU
 * @irqs_off: interrupts disabled
 */
struct ndk_lt_probe {
	struct ndk_test_call c;
	unsigned int count;
	bool rcu;
	bool irqs_off;
};

static void ndk_lt_probe_in(struct ndk_test_call *c)
{
	struct ndk_lt_probe *p = container_of(c, struct ndk_lt_probe, c);

	p->count = preempt_count();
	p->rcu = rcu_preempt_depth() > 0;
	p->irqs_off = irqs_disabled();
}

static void ndk_lt_cq_create_in(struct ndk_test_call *c)
{
	NDK_ADAPTER *a = c->arg;

	c->st = a->Dispatch->NdkCreateCq(a, 8, NULL, NULL, NULL,
					 ndk_test_create_cb, &c->w,
					 (NDK_CQ **)&c->out);
}

/*
 * Under rcu_read_lock() of preemptible RCU and with interrupts disabled
 * alone the preempt count is 0, yet the caller may not sleep: NdkCreateCq
 * given a place for the CQ still pends, and calls back once with
 * success; the CQ's close from there pends and calls back once too.
 */
static void ndk_lt_hidden_atomic_test(struct kunit *test)
{
	const enum ndk_test_ctx *ctx = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct ndk_lt_probe p = { .c.fn = ndk_lt_probe_in };

	/* The context is what the case means: only the count misses it. */
	ndk_test_run_in(&p.c, *ctx);
	if (*ctx == NDK_CTX_IRQS_OFF) {
		KUNIT_EXPECT_TRUE(test, p.irqs_off);
		KUNIT_EXPECT_EQ(test, p.count, 0U);
	} else if (IS_ENABLED(CONFIG_PREEMPT_RCU)) {
		KUNIT_EXPECT_TRUE(test, p.rcu);
		KUNIT_EXPECT_EQ(test, p.count, 0U);
	}
	ndk_test_context(test, *ctx, ndk_lt_cq_create_in, e->a);
}

/* The pending window create has made its buffer and verbs MR. */
static bool ndk_lt_at_lock(void *arg)
{
	return ndk_fault_seen() >= 3;
}

/*
 * A create already past its check of the device when the device's
 * removal begins fails with STATUS_DEVICE_REMOVED once made, through its
 * callback: the removal has walked the device's objects, so the new one
 * must not go live unseen. The case holds that window open on the second
 * device: a window's create takes its PD's window lock last, which the
 * case holds from before the create until the removal has begun. The
 * create pends (it is made where the caller may not sleep) and its
 * progress shows in the failure points it passes: the window's own
 * allocation in the call, then, on ndk_wq, its buffer and its verbs MR.
 */
static void ndk_lt_create_removed_test(struct kunit *test)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct ndk_test_dev2 *d = ndk_test_dev2_add(test);
	struct ndk_test_removal r;
	NDK_OBJECT_HEADER *hdr;
	struct ndk_adapter *a;
	struct ndk_pd *pd;
	struct ndk_wait w;
	NDK_MW *mw = NULL;
	bool fired;
	NTSTATUS st;

	if (!d)
		return;
	KUNIT_ASSERT_EQ(test, ndk_open_adapter(d->ifindex, v, &d->a),
			STATUS_SUCCESS);
	a = container_of(d->a, struct ndk_adapter, ndk);
	hdr = ndk_test_create_pd(test, d->a);
	pd = container_of(hdr, struct ndk_pd, ndk.Header);
	ndk_wait_init(&w);

	/* No assertion until the lock is released and the device gone. */
	mutex_lock(&pd->mw_lock);
	ndk_fault_arm(INT_MAX);
	preempt_disable();
	st = pd->ndk.Dispatch->NdkCreateMw(&pd->ndk, ndk_test_create_cb, &w,
					   &mw);
	preempt_enable();
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_test_until(ndk_lt_at_lock, NULL));
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);

	ndk_test_dev2_remove(d, &r);
	KUNIT_EXPECT_TRUE(test, ndk_test_until(ndk_test_adapter_dead, a));
	mutex_unlock(&pd->mw_lock);

	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, w.status, STATUS_DEVICE_REMOVED);
	KUNIT_EXPECT_NULL(test, w.obj);
	KUNIT_EXPECT_NULL(test, mw);
	ndk_test_close(test, hdr, pd->ndk.Dispatch->NdkClosePd);
	ndk_close_adapter(d->a);
	d->a = NULL;
	KUNIT_EXPECT_EQ(test, ndk_test_dev2_removed(&r), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	ndk_test_dev2_del(test, d);
}

static struct kunit_case ndk_object_cases[] = {
	KUNIT_CASE_PARAM(ndk_lt_close_in_create_test,
			 ndk_lt_create_gen_params),
	KUNIT_CASE_PARAM(ndk_lt_close_in_callback_test,
			 ndk_lt_case_gen_params),
	KUNIT_CASE(ndk_lt_close_refused_test),
	KUNIT_CASE_PARAM(ndk_lt_hidden_atomic_test, ndk_lt_hidden_gen_params),
	KUNIT_CASE(ndk_lt_create_removed_test),
	{}
};

NDK_SUITE(object, ndk_conn_init_test, ndk_conn_exit_test);
