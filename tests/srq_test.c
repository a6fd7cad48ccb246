// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_srq: shared receive queues. Limits, a QP whose receives come from
 * an SRQ carrying data over a loopback connection, the notification when
 * the queue falls below its threshold (from the device, and at once from
 * NdkModifySrq), the SRQ as an antecedent of its QPs, several QPs on one
 * SRQ, NdkModifySrq's checks and resizing, a modify issued while the last
 * one completes, and owner ids that come round to an SRQ's.
 */
#include <linux/delay.h>
#include "ndk_tests.h"
#include "sweep.h"

#define NDK_SRQ_SLOT	64

/**
 * struct ndk_senv - an SRQ, a QP on it, and DMA-mapped buffers
 * @srq: the SRQ
 * @qp: a QP whose receives come from @srq
 * @buf: receive slots of NDK_SRQ_SLOT bytes, then the send message
 * @dma: device address of @buf
 * @tok: the privileged token, for @dma
 * @notified: notification callbacks so far
 * @status: status of the last one
 * @driver_ctx: a notification ran outside a workqueue worker
 */
struct ndk_senv {
	NDK_SRQ *srq;
	NDK_QP *qp;
	u8 *buf;
	u64 dma;
	UINT32 tok;
	atomic_t notified;
	NTSTATUS status;
	bool driver_ctx;
};

/*
 * Notifications run on a workqueue, never inside the driver's event
 * handler, which siw calls from its socket callback.
 */
static void ndk_srq_notify_cb(PVOID ctx, NTSTATUS status)
{
	struct ndk_senv *s = ctx;

	if (!in_task() || !(current->flags & PF_WQ_WORKER))
		s->driver_ctx = true;
	s->status = status;
	atomic_inc(&s->notified);
}

static NTSTATUS ndk_senv_srq(struct ndk_cenv *e, struct ndk_senv *s,
			     ULONG depth, ULONG sge, ULONG threshold,
			     struct ndk_wait *w)
{
	NDK_SRQ *unused = NULL;
	unsigned long flags;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, depth, sge, threshold,
					   ndk_srq_notify_cb, s, NULL,
					   ndk_test_create_cb, w, &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	return st;
}

/*
 * An SRQ with @threshold and @sge SGEs per receive, a QP on it whose
 * results go to @cq, and 8 receive slots mapped.
 */
static struct ndk_senv *ndk_senv_new_on(struct kunit *test,
					struct ndk_cenv *e, NDK_CQ *cq,
					ULONG threshold, ULONG sge)
{
	struct ndk_senv *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	struct ib_device *dev;
	NDK_QP *unused = NULL;
	unsigned long flags;
	struct ndk_wait w;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, s);
	ndk_wait_init(&w);
	s->srq = container_of(ndk_create_with(test,
					      ndk_senv_srq(e, s, 16, sge,
							   threshold, &w),
					      &w),
			      NDK_SRQ, Header);
	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, cq, cq, s->srq,
						 (void *)0x5151, 8, 1, 0,
						 ndk_test_create_cb, &w,
						 &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	s->qp = container_of(ndk_create_with(test, st, &w), NDK_QP, Header);
	s->buf = kunit_kzalloc(test, 9 * NDK_SRQ_SLOT, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s->buf);
	dev = container_of(e->pd, struct ndk_pd, ndk)->ibpd->device;
	s->dma = ib_dma_map_single(dev, s->buf, 9 * NDK_SRQ_SLOT,
				   DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, s->dma));
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &s->tok);
	return s;
}

static struct ndk_senv *ndk_senv_new(struct kunit *test, struct ndk_cenv *e,
				     ULONG threshold)
{
	return ndk_senv_new_on(test, e, e->cq, threshold, 1);
}

static void ndk_senv_free(struct kunit *test, struct ndk_cenv *e,
			  struct ndk_senv *s)
{
	struct ib_device *dev = container_of(e->pd, struct ndk_pd,
					     ndk)->ibpd->device;

	ib_dma_unmap_single(dev, s->dma, 9 * NDK_SRQ_SLOT, DMA_BIDIRECTIONAL);
	ndk_test_close(test, &s->srq->Header, s->srq->Dispatch->NdkCloseSrq);
}

/* Post @n receives, contexts 1..@n, slots 0..@n-1, from atomic context. */
static void ndk_senv_post(struct kunit *test, struct ndk_senv *s, int n)
{
	unsigned long flags;
	NDK_SGE sge;
	int i;

	for (i = 0; i < n; i++) {
		sge.LogicalAddress = s->dma + i * NDK_SRQ_SLOT;
		sge.Length = NDK_SRQ_SLOT;
		sge.MemoryRegionToken = s->tok;
		spin_lock_irqsave(&ndk_test_lock, flags);
		KUNIT_EXPECT_EQ(test,
				s->srq->Dispatch->NdkSrqReceive(s->srq,
						(void *)(uintptr_t)(i + 1),
						&sge, 1),
				STATUS_SUCCESS);
		spin_unlock_irqrestore(&ndk_test_lock, flags);
	}
}

/* Connect an ordinary QP to @s->qp and send @n messages from it. */
static void ndk_senv_send(struct kunit *test, struct ndk_cenv *e,
			  struct ndk_senv *s, struct ndk_pair *p, int n)
{
	struct sockaddr_in dst;
	NDK_RESULT r[8];
	NDK_SGE sge;
	int i;

	p->c = ndk_cenv_connector(test, e);
	p->aqp = ndk_cenv_qp(test, e);
	p->pqp = s->qp;
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	memcpy(s->buf + 8 * NDK_SRQ_SLOT, "shared receive", 15);
	sge.LogicalAddress = s->dma + 8 * NDK_SRQ_SLOT;
	sge.Length = 15;
	sge.MemoryRegionToken = s->tok;
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test,
				p->aqp->Dispatch->NdkSend(p->aqp,
							  (void *)(uintptr_t)(0x10 + i),
							  &sge, 1, 0),
				STATUS_SUCCESS);
	/* Both directions' results: n sends and n receives. */
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2 * n), 2U * n);
	for (i = 0; i < 2 * n; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		if ((uintptr_t)r[i].RequestContext >= 0x10)
			continue;
		/* Receives come from the SRQ in order, for the SRQ's QP. */
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, (void *)0x5151);
		KUNIT_EXPECT_EQ(test, r[i].BytesTransferred, 15U);
	}
	for (i = 0; i < n; i++)
		NDK_EXPECT_MEMEQ(test, s->buf + i * NDK_SRQ_SLOT,
				 "shared receive", 15);
}

/* One more message over the established @p, polled on both sides. */
static void ndk_senv_more(struct kunit *test, struct ndk_cenv *e,
			  struct ndk_senv *s, struct ndk_pair *p)
{
	NDK_SGE sge = { .LogicalAddress = s->dma + 8 * NDK_SRQ_SLOT,
			.Length = 15, .MemoryRegionToken = s->tok };
	NDK_RESULT r[2];

	KUNIT_ASSERT_EQ(test, p->aqp->Dispatch->NdkSend(p->aqp, (void *)0x20,
							&sge, 1, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2), 2U);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[1].Status, STATUS_SUCCESS);
}

static void ndk_srq_create_in(struct ndk_test_call *c)
{
	NDK_PD *pd = c->arg;

	c->st = pd->Dispatch->NdkCreateSrq(pd, 16, 1, 0, NULL, NULL, NULL,
					   ndk_test_create_cb, &c->w,
					   (NDK_SRQ **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_srq_contexts_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;

	ndk_test_contexts(test, ndk_srq_create_in, e->pd);
}

/*
 * Depths and SGE counts beyond the adapter's fail inline, and so do a
 * creation without a PD or a completion.
 */
static void ndk_srq_limits_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	struct ndk_senv s = {};
	NDK_SRQ *unused_srq = NULL;
	NDK_QP *unused = NULL;
	struct ndk_wait w;

	KUNIT_ASSERT_GT(test, info->MaxSrqDepth, 16U);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, ndk_senv_srq(e, &s, 0, 1, 0, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_senv_srq(e, &s, info->MaxSrqDepth + 1, 1, 0,
					   &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_senv_srq(e, &s, 16,
					   info->MaxReceiveRequestSge + 1, 0,
					   &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_senv_srq(e, &s, 16, 1, 17, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateSrq(NULL, 16, 1, 0, NULL, NULL,
						      NULL, ndk_test_create_cb,
						      &w, &unused_srq),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateSrq(e->pd, 16, 1, 0, NULL,
						      NULL, NULL, NULL, &w,
						      &unused_srq),
			STATUS_INVALID_PARAMETER);
	/* A QP needs a live SRQ object. */
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, e->cq, e->cq,
							    NULL, NULL, 4, 1, 0,
							    ndk_test_create_cb,
							    &w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, e->cq, e->cq,
							    (NDK_SRQ *)e->cq,
							    NULL, 4, 1, 0,
							    ndk_test_create_cb,
							    &w, &unused),
			STATUS_INVALID_PARAMETER);
	/* No PD, or nothing to call back; checked before the SRQ. */
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateQpWithSrq(NULL, e->cq, e->cq,
							    NULL, NULL, 4, 1, 0,
							    ndk_test_create_cb,
							    &w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, e->cq, e->cq,
							    NULL, NULL, 4, 1, 0,
							    NULL, &w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
}

/*
 * Receives posted on the SRQ serve the QP created on it; the QP's own
 * receive queue does not exist. A modify beyond the limits fails inline.
 */
static void ndk_srq_traffic_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const NDK_ADAPTER_INFO *info =
		&container_of(e->a, struct ndk_adapter, ndk)->info;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ndk_pair p;
	NDK_SGE sge = { .LogicalAddress = s->dma, .Length = 8,
			.MemoryRegionToken = s->tok };
	struct ndk_wait w;

	KUNIT_EXPECT_EQ(test, s->qp->Dispatch->NdkReceive(s->qp, NULL, &sge, 1),
			STATUS_INVALID_PARAMETER);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, s->srq->Dispatch->NdkModifySrq(s->srq,
							     info->MaxSrqDepth + 1,
							     0,
							     ndk_test_request_cb,
							     &w),
			STATUS_INVALID_PARAMETER);
	ndk_senv_post(test, s, 4);
	ndk_senv_send(test, e, s, &p, 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->notified), 0);
	ndk_pair_close(test, &p);
	ndk_senv_free(test, e, s);
}

/*
 * An SRQ receive whose first SGE is empty takes the message whole into
 * its second. siw releases a receive's regions only up to the first it
 * did not look up, the empty SGE's: the second's stayed referenced, a
 * leak kmemleak reports (ndk_sges_packed()).
 */
static void ndk_srq_zero_sge_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new_on(test, e, e->cq, 0, 2);
	NDK_SGE sge[2] = {
		{ .LogicalAddress = s->dma + NDK_SRQ_SLOT, .Length = 0,
		  .MemoryRegionToken = s->tok },
		{ .LogicalAddress = s->dma, .Length = NDK_SRQ_SLOT,
		  .MemoryRegionToken = s->tok },
	};
	struct ndk_pair p;

	KUNIT_ASSERT_EQ(test, s->srq->Dispatch->NdkSrqReceive(s->srq,
							      (void *)1, sge,
							      2),
			STATUS_SUCCESS);
	ndk_senv_send(test, e, s, &p, 1);
	ndk_pair_close(test, &p);
	ndk_senv_free(test, e, s);
}

/*
 * Threshold 3 with 4 receives queued: the second message leaves 2, and
 * the device notifies once. A new threshold above what is queued
 * notifies as soon as the modify has completed.
 */
static void ndk_srq_notify_test(struct kunit *test)
{
	unsigned long flags;
	NTSTATUS st;
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 3);
	unsigned long end;
	struct ndk_pair p;
	struct ndk_wait w;

	ndk_senv_post(test, s, 4);
	ndk_senv_send(test, e, s, &p, 2);
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!atomic_read(&s->notified) && time_before(jiffies, end))
		usleep_range(5000, 10000);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->notified), 1);
	KUNIT_EXPECT_EQ(test, s->status, STATUS_SUCCESS);
	KUNIT_EXPECT_FALSE(test, s->driver_ctx);

	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = s->srq->Dispatch->NdkModifySrq(s->srq, 0, 5, ndk_test_request_cb,
					    &w);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->notified), 2);
	/*
	 * That notification used up the arming: a message taken while the
	 * queue is still below 5 does not notify again.
	 */
	ndk_senv_post(test, s, 1);
	ndk_senv_more(test, e, s, &p);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->notified), 2);
	KUNIT_EXPECT_FALSE(test, s->driver_ctx);
	ndk_pair_close(test, &p);
	ndk_senv_free(test, e, s);
}

/*
 * The SRQ's failure (IB_EVENT_SRQ_ERR, raised by the test as the device
 * would) reaches the consumer's notification callback as
 * STATUS_INTERNAL_ERROR, from ndk's workqueue, once; an event of no
 * concern to an SRQ (a QP's) reaches nothing.
 */
static void ndk_srq_error_event_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ib_srq *ibsrq = container_of(s->srq, struct ndk_srq,
					    ndk)->ibsrq;
	struct ib_event ev = { .device = ibsrq->device,
			       .element.srq = ibsrq,
			       .event = IB_EVENT_QP_FATAL };
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	ibsrq->event_handler(&ev, ibsrq->srq_context);
	ev.event = IB_EVENT_SRQ_ERR;
	ibsrq->event_handler(&ev, ibsrq->srq_context);
	while (!atomic_read(&s->notified) && time_before(jiffies, end))
		usleep_range(2000, 4000);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->notified), 1);
	KUNIT_EXPECT_EQ(test, s->status, STATUS_INTERNAL_ERROR);
	KUNIT_EXPECT_FALSE(test, s->driver_ctx);
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	ndk_senv_free(test, e, s);
}

/* Closing the SRQ first pends until its QP is closed. */
static void ndk_srq_close_first_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ndk_wait c;

	ndk_wait_init(&c);
	KUNIT_ASSERT_EQ(test, s->srq->Dispatch->NdkCloseSrq(&s->srq->Header,
							    ndk_test_close_cb,
							    &c),
			STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&c.done, HZ / 5),
			0UL);
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c));
	ib_dma_unmap_single(container_of(e->pd, struct ndk_pd,
					 ndk)->ibpd->device,
			    s->dma, 9 * NDK_SRQ_SLOT, DMA_BIDIRECTIONAL);
}

/*
 * NdkCreateQpWithSrq refuses an SRQ it cannot use, inline with
 * STATUS_INVALID_PARAMETER: one of another PD of the same adapter, and
 * one whose close pends behind the QP it already serves.
 */
static void ndk_srq_qp_refused_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_pd(test, e->a);
	NDK_PD *pd = container_of(hdr, NDK_PD, Header);
	/* Not on the stack: after a failure the close completes later. */
	struct ndk_wait *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	NDK_QP *unused = NULL;
	struct ndk_wait w;

	KUNIT_ASSERT_NOT_NULL(test, c);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test,
			pd->Dispatch->NdkCreateQpWithSrq(pd, e->cq, e->cq,
							 s->srq, NULL, 4, 1, 0,
							 ndk_test_create_cb,
							 &w, &unused),
			STATUS_INVALID_PARAMETER);
	ndk_wait_init(c);
	KUNIT_ASSERT_EQ(test, s->srq->Dispatch->NdkCloseSrq(&s->srq->Header,
							    ndk_test_close_cb,
							    c),
			STATUS_PENDING);
	KUNIT_EXPECT_EQ(test,
			e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, e->cq, e->cq,
							    s->srq, NULL, 4, 1,
							    0,
							    ndk_test_create_cb,
							    &w, &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(c));
	ib_dma_unmap_single(container_of(e->pd, struct ndk_pd,
					 ndk)->ibpd->device,
			    s->dma, 9 * NDK_SRQ_SLOT, DMA_BIDIRECTIONAL);
	ndk_test_close(test, hdr, pd->Dispatch->NdkClosePd);
}

/*
 * Several QPs on one SRQ: each connection's messages take receives from
 * the shared queue in order, and each result names the QP that received.
 */
static void ndk_srq_shared_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	NDK_SGE sge = { .LogicalAddress = s->dma + 8 * NDK_SRQ_SLOT + 32,
			.Length = 12, .MemoryRegionToken = s->tok };
	struct ndk_pair p1, p2;
	struct sockaddr_in dst;
	NDK_QP *unused = NULL;
	struct ndk_wait w;
	NDK_RESULT r[4];
	int i, seen = 0;
	NTSTATUS st;

	ndk_senv_post(test, s, 4);
	ndk_senv_send(test, e, s, &p1, 2);
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, e->cq, e->cq, s->srq,
						 (void *)0x5252, 8, 1, 0,
						 ndk_test_create_cb, &w,
						 &unused);
	p2.pqp = container_of(ndk_created(test, st, &w, unused), NDK_QP,
			      Header);
	p2.c = ndk_cenv_connector(test, e);
	p2.aqp = ndk_cenv_qp(test, e);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p2, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	memcpy(s->buf + 8 * NDK_SRQ_SLOT + 32, "second peer", 12);
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_EQ(test,
				p2.aqp->Dispatch->NdkSend(p2.aqp,
							  (void *)(uintptr_t)(0x30 + i),
							  &sge, 1, 0),
				STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 4), 4U);
	for (i = 0; i < 4; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		if ((uintptr_t)r[i].RequestContext >= 0x30)
			continue;
		/* The SRQ's third and fourth receives, for the second QP. */
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, (void *)0x5252);
		KUNIT_EXPECT_EQ(test, r[i].BytesTransferred, 12U);
		KUNIT_EXPECT_EQ(test, (uintptr_t)r[i].RequestContext,
				(uintptr_t)(3 + seen++));
	}
	KUNIT_EXPECT_EQ(test, seen, 2);
	NDK_EXPECT_MEMEQ(test, s->buf + 2 * NDK_SRQ_SLOT, "second peer", 12);
	NDK_EXPECT_MEMEQ(test, s->buf + 3 * NDK_SRQ_SLOT, "second peer", 12);
	ndk_pair_close(test, &p1);
	ndk_pair_close(test, &p2);
	ndk_senv_free(test, e, s);
}

/*
 * NdkModifySrq: a threshold above the depth is refused inline; a second
 * modify while one is pending is refused; a new depth takes effect where
 * the device can resize (rxe), and is refused by siw, which cannot.
 */
static void ndk_srq_modify_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ndk_wait w, w2;
	unsigned long flags;
	NTSTATUS st, st2;
	NDK_SGE sge = { .LogicalAddress = s->dma, .Length = NDK_SRQ_SLOT,
			.MemoryRegionToken = s->tok };
	int i;

	ndk_wait_init(&w);
	ndk_wait_init(&w2);
	KUNIT_EXPECT_EQ(test, s->srq->Dispatch->NdkModifySrq(s->srq, 0, 17,
							     ndk_test_request_cb,
							     &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, s->srq->Dispatch->NdkModifySrq(s->srq, 8, 9,
							     ndk_test_request_cb,
							     &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, s->srq->Dispatch->NdkModifySrq(s->srq, 0, 2, NULL,
							     &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	/* Neither a new depth nor a threshold: done, and nothing changed. */
	st = s->srq->Dispatch->NdkModifySrq(s->srq, 0, 0, ndk_test_request_cb,
					    &w);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	ndk_wait_init(&w);
	/* ndk_wq is per CPU: with interrupts off the first cannot finish. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = s->srq->Dispatch->NdkModifySrq(s->srq, 0, 2, ndk_test_request_cb,
					    &w);
	st2 = s->srq->Dispatch->NdkModifySrq(s->srq, 0, 3, ndk_test_request_cb,
					     &w2);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, st2, STATUS_INVALID_DEVICE_STATE);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&w2.calls), 0);

	ndk_wait_init(&w);
	st = s->srq->Dispatch->NdkModifySrq(s->srq, 32, 0, ndk_test_request_cb,
					    &w);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	if (ndk_test_iwarp()) {
		KUNIT_EXPECT_EQ(test, w.status, STATUS_NOT_SUPPORTED);
		for (i = 0; i < 32; i++) {
			st = s->srq->Dispatch->NdkSrqReceive(s->srq, NULL,
							     &sge, 1);
			if (st)
				break;
		}
		KUNIT_EXPECT_EQ(test, i, 16);
		KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	} else {
		KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
		for (i = 0; i < 32; i++)
			KUNIT_EXPECT_EQ(test,
					s->srq->Dispatch->NdkSrqReceive(s->srq,
									NULL,
									&sge,
									1),
					STATUS_SUCCESS);
		/* A threshold up to the new depth is now accepted. */
		ndk_wait_init(&w);
		KUNIT_EXPECT_EQ(test,
				s->srq->Dispatch->NdkModifySrq(s->srq, 0, 20,
							       ndk_test_request_cb,
							       &w),
				STATUS_PENDING);
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	}
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	ndk_senv_free(test, e, s);
}

/* The second modify, which the hook issues inside the first's completion. */
static struct {
	struct ndk_wait w;
	NTSTATUS st;
} ndk_srq_gap;

static void ndk_srq_gap_hook(NDK_SRQ *srq)
{
	/* Once: the second modify's completion comes this way too. */
	ndk_srq_set_modify_hook(NULL);
	ndk_srq_gap.st = srq->Dispatch->NdkModifySrq(srq, 32, 0,
						     ndk_test_request_cb,
						     &ndk_srq_gap.w);
}

/*
 * A modify's completion lets the SRQ take the next NdkModifySrq before it
 * calls back. One issued right then is a request of its own: each
 * completion reports its own context, once, with its own status (the new
 * depth is one siw cannot take).
 */
static void ndk_srq_modify_gap_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_wait_init(&ndk_srq_gap.w);
	ndk_srq_gap.st = STATUS_UNSUCCESSFUL;
	ndk_srq_set_modify_hook(ndk_srq_gap_hook);
	st = s->srq->Dispatch->NdkModifySrq(s->srq, 0, 2, ndk_test_request_cb,
					    &w);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&ndk_srq_gap.w));
	ndk_srq_set_modify_hook(NULL);
	/* Time for a callback reported twice to come twice. */
	msleep(100);
	KUNIT_EXPECT_EQ(test, ndk_srq_gap.st, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&ndk_srq_gap.w.calls), 1);
	KUNIT_EXPECT_EQ(test, ndk_srq_gap.w.status,
			ndk_test_iwarp() ? STATUS_NOT_SUPPORTED :
					   STATUS_SUCCESS);
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	ndk_senv_free(test, e, s);
}

/* The owner id that @srq's receives carry in their wr_ids. */
static u32 ndk_srq_owner(NDK_SRQ *srq)
{
	return (container_of(srq, struct ndk_srq, ndk)->ring.tag >>
		NDK_WR_ID_SHIFT) & NDK_WR_ID_MASK;
}

/*
 * Owner ids come round again, past a live SRQ's (a long-lived one's, once
 * enough objects came and went): the SRQ created then is created all the
 * same, under an id of its own.
 */
static void ndk_srq_id_wrap_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	NDK_SRQ *srq = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wr_owner_set_next(ndk_srq_owner(s->srq));
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, 16, 1, 0, NULL, NULL, NULL,
					   ndk_test_create_cb, &w, &srq);
	srq = container_of(ndk_created(test, st, &w, srq), NDK_SRQ, Header);
	KUNIT_EXPECT_NE(test, ndk_srq_owner(srq), ndk_srq_owner(s->srq));
	ndk_test_close(test, &srq->Header, srq->Dispatch->NdkCloseSrq);
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	ndk_senv_free(test, e, s);
}

/*
 * An SRQ whose QP has its own CQ, armed to signal @notified, @n receives
 * posted and a connection @p to the QP, over which one message came: its
 * receive's result is in *@cqp, unpolled.
 */
static struct ndk_senv *ndk_srq_unpolled(struct kunit *test,
					 struct ndk_cenv *e, int n,
					 struct ndk_wait *notified,
					 NDK_CQ **cqp, struct ndk_pair *p)
{
	NDK_SGE sge = { .Length = 15 };
	struct sockaddr_in dst;
	struct ndk_senv *s;
	NDK_CQ *cq = NULL;
	struct ndk_wait w;
	NDK_RESULT r;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_wait_init(notified);
	st = e->a->Dispatch->NdkCreateCq(e->a, 16, ndk_test_request_cb,
					 notified, NULL, ndk_test_create_cb,
					 &w, &cq);
	cq = container_of(ndk_created(test, st, &w, cq), NDK_CQ, Header);
	*cqp = cq;
	s = ndk_senv_new_on(test, e, cq, 0, 1);
	ndk_senv_post(test, s, n);
	p->c = ndk_cenv_connector(test, e);
	p->aqp = ndk_cenv_qp(test, e);
	p->pqp = s->qp;
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	sge.LogicalAddress = s->dma + 8 * NDK_SRQ_SLOT;
	sge.MemoryRegionToken = s->tok;
	KUNIT_ASSERT_EQ(test, p->aqp->Dispatch->NdkSend(p->aqp, (void *)0x10,
							&sge, 1, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, &r, 1), 1U);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(notified));
	return s;
}

/*
 * A receive's result left in a CQ after its SRQ is closed names an owner
 * id that a QP created later may take. Polled then, it is dropped as the
 * result of a closed SRQ (counted as polled, once), never read as the
 * QP's.
 */
static void ndk_srq_stale_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_wait w, notified;
	char *before, *after;
	struct ndk_senv *s;
	NDK_QP *qp = NULL;
	NDK_CQ *cq = NULL;
	struct ndk_pair p;
	NDK_RESULT r[4];
	NTSTATUS st;
	u32 id;

	s = ndk_srq_unpolled(test, e, 1, &notified, &cq, &p);
	id = ndk_srq_owner(s->srq);
	ndk_pair_close(test, &p);
	ndk_senv_free(test, e, s);

	ndk_wr_owner_set_next(id);
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, cq, cq, (void *)0x5353, 8, 8,
					  1, 1, 0, ndk_test_create_cb, &w,
					  &qp);
	qp = container_of(ndk_created(test, st, &w, qp), NDK_QP, Header);
	before = ndk_obs_read(test, e, "stats");
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResults(cq, r,
							    ARRAY_SIZE(r)),
			0U);
	after = ndk_obs_read(test, e, "stats");
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "requests_completed"),
			ndk_obs_stat(test, before, "requests_completed") + 1);
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/* The closed QP's verbs QP, and whether ndk destroyed it. */
static struct ib_qp *ndk_srq_watched;
static bool ndk_srq_watched_gone;

static void ndk_srq_destroying(struct ib_qp *ibqp)
{
	if (ibqp == READ_ONCE(ndk_srq_watched))
		WRITE_ONCE(ndk_srq_watched_gone, true);
}

/*
 * A receive a QP took from the SRQ, still in the CQ when the QP closed,
 * is polled after QPs were created on the SRQ in its place: it names no
 * QP, never one of them. The driver's completion carries the closed QP's
 * verbs QP, so ndk keeps that until the CQ is polled: destroyed, its
 * memory could be the next QP's, and the completion would name that one.
 */
static void ndk_srq_closed_qp_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_wait w, notified;
	struct ndk_senv *s;
	NDK_QP *qps[4];
	NDK_CQ *cq = NULL;
	struct ndk_pair p;
	NDK_RESULT r[4];
	NTSTATUS st;
	bool gone;
	int i;

	s = ndk_srq_unpolled(test, e, 2, &notified, &cq, &p);
	WRITE_ONCE(ndk_srq_watched_gone, false);
	WRITE_ONCE(ndk_srq_watched,
		   container_of(s->qp, struct ndk_qp, ndk)->ibqp);
	ndk_qp_set_destroy_hook(ndk_srq_destroying);
	ndk_pair_close(test, &p);

	for (i = 0; i < ARRAY_SIZE(qps); i++) {
		ndk_wait_init(&w);
		qps[i] = NULL;
		st = e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, cq, cq, s->srq,
							 (void *)0x5454, 8, 1,
							 0, ndk_test_create_cb,
							 &w, &qps[i]);
		qps[i] = container_of(ndk_created(test, st, &w, qps[i]),
				      NDK_QP, Header);
	}
	gone = READ_ONCE(ndk_srq_watched_gone);
	KUNIT_EXPECT_FALSE_MSG(test, gone,
			       "the verbs QP went with its receive unpolled");
	ndk_qp_set_destroy_hook(NULL);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(cq, r, 1), 1U);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)1);
	KUNIT_EXPECT_PTR_EQ(test, r[0].QPContext, NULL);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResults(cq, r, 4), 0U);
	for (i = 0; i < ARRAY_SIZE(qps); i++)
		ndk_test_close(test, &qps[i]->Header,
			       qps[i]->Dispatch->NdkCloseQp);
	ndk_senv_free(test, e, s);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/*
 * Connect an ordinary QP to @s->qp and send @n messages from it, then
 * poll both directions: each of @ctx[0..@n-1] comes back once, in that
 * order, a receive for the SRQ's QP with the whole message.
 */
static void ndk_srq_expect(struct kunit *test, struct ndk_cenv *e,
			   struct ndk_senv *s, struct ndk_pair *p,
			   const uintptr_t *ctx, int n)
{
	NDK_SGE sge = { .LogicalAddress = s->dma + 8 * NDK_SRQ_SLOT,
			.Length = 15, .MemoryRegionToken = s->tok };
	NDK_RESULT r[8];
	int i, k = 0;
	ULONG got;

	ndk_senv_send(test, e, s, p, 0);
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test,
				p->aqp->Dispatch->NdkSend(p->aqp,
							  (void *)(uintptr_t)(0x10 + i),
							  &sge, 1, 0),
				STATUS_SUCCESS);
	got = ndk_poll_results(e->cq, r, 2 * n);
	KUNIT_EXPECT_EQ(test, got, 2U * n);
	for (i = 0; i < got; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_SUCCESS);
		if ((uintptr_t)r[i].RequestContext >= 0x10 &&
		    (uintptr_t)r[i].RequestContext < 0x10 + n)
			continue;
		KUNIT_EXPECT_LT(test, k, n);
		if (k < n)
			KUNIT_EXPECT_EQ(test, (uintptr_t)r[i].RequestContext,
					ctx[k]);
		KUNIT_EXPECT_PTR_EQ(test, r[i].QPContext, (void *)0x5151);
		KUNIT_EXPECT_EQ(test, r[i].BytesTransferred, 15U);
		k++;
	}
	KUNIT_EXPECT_EQ(test, k, n);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, r, 8),
			0U);
}

/*
 * Receives leave an SRQ in the order its QPs' CQs are polled, so one may
 * stay while the ring's other slots go round: the poster then passes
 * over its slot, and over the next one if that is held too, to a free
 * one. The SRQ's ring has slots for twice MaxSrqDepth (millions on rxe
 * and siw): the case moves the head on by a turn less the two receives
 * it posted, as if that many had come and gone, rather than post them.
 * The three receives then come back once each, in order, with their
 * own contexts.
 */
static void ndk_srq_skip_test(struct kunit *test)
{
	static const uintptr_t ctx[] = { 1, 2, 3 };
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ndk_wr_ring *ring = &container_of(s->srq, struct ndk_srq,
						 ndk)->ring;
	NDK_SGE sge = { .LogicalAddress = s->dma + 2 * NDK_SRQ_SLOT,
			.Length = NDK_SRQ_SLOT, .MemoryRegionToken = s->tok };
	struct ndk_pair p;

	ndk_senv_post(test, s, 2);
	KUNIT_ASSERT_EQ(test, ring->head, 2U);
	ring->head = ring->mask + 1;
	KUNIT_EXPECT_EQ(test, s->srq->Dispatch->NdkSrqReceive(s->srq,
							      (void *)ctx[2],
							      &sge, 1),
			STATUS_SUCCESS);
	/* Slots 0 and 1 passed over; the receive took slot 2. */
	KUNIT_EXPECT_EQ(test, ring->head, ring->mask + 1 + 3);
	ndk_srq_expect(test, e, s, &p, ctx, ARRAY_SIZE(ctx));
	NDK_EXPECT_MEMEQ(test, s->buf + 2 * NDK_SRQ_SLOT, "shared receive", 15);
	ndk_pair_close(test, &p);
	ndk_senv_free(test, e, s);
}

/**
 * struct ndk_srq_double - a driver double under an SRQ
 * @dev: the real device's operations, post_srq_recv replaced
 * @ibsrq: stands in for the verbs SRQ, on @dev
 * @real: the real verbs SRQ
 */
struct ndk_srq_double {
	struct ib_device dev;
	struct ib_srq ibsrq;
	struct ib_srq *real;
};

/* A driver whose SRQ is full, as rxe's and siw's say. */
static int ndk_srq_double_refuse(struct ib_srq *ibsrq,
				 const struct ib_recv_wr *wr,
				 const struct ib_recv_wr **bad)
{
	*bad = wr;
	return -ENOMEM;
}

/*
 * A receive the device refuses is refused with the device's status, and
 * leaves nothing behind: not counted as queued, its slot free, the head
 * where it was. The next receive takes that slot and comes back once;
 * the refused one never does.
 */
static void ndk_srq_refused_test(struct kunit *test)
{
	static const uintptr_t ctx[] = { 1 };
	struct ndk_cenv *e = test->priv;
	struct ndk_senv *s = ndk_senv_new(test, e, 0);
	struct ndk_srq *srq = container_of(s->srq, struct ndk_srq, ndk);
	struct ndk_srq_double *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	NDK_SGE sge = { .LogicalAddress = s->dma, .Length = NDK_SRQ_SLOT,
			.MemoryRegionToken = s->tok };
	struct ndk_pair p;
	u32 head;

	KUNIT_ASSERT_NOT_NULL(test, d);
	d->real = srq->ibsrq;
	d->dev.ops = d->real->device->ops;
	d->dev.ops.post_srq_recv = ndk_srq_double_refuse;
	d->ibsrq = *d->real;
	d->ibsrq.device = &d->dev;
	head = srq->ring.head;
	srq->ibsrq = &d->ibsrq;
	KUNIT_EXPECT_EQ(test, s->srq->Dispatch->NdkSrqReceive(s->srq,
							      (void *)9, &sge,
							      1),
			STATUS_INSUFFICIENT_RESOURCES);
	srq->ibsrq = d->real;
	KUNIT_EXPECT_EQ(test, srq->ring.head, head);
	KUNIT_EXPECT_EQ(test, srq->ring.state[head & srq->ring.mask],
			NDK_SLOT_FREE);
	KUNIT_EXPECT_EQ(test, atomic_read(&srq->queued), 0);
	ndk_senv_post(test, s, 1);
	KUNIT_EXPECT_EQ(test, srq->ring.head, head + 1);
	ndk_srq_expect(test, e, s, &p, ctx, ARRAY_SIZE(ctx));
	ndk_pair_close(test, &p);
	ndk_senv_free(test, e, s);
}

/* An SRQ without a QP, notifying @s, or nobody if @s is NULL. */
static NDK_SRQ *ndk_srq_bare(struct kunit *test, struct ndk_cenv *e,
			     struct ndk_senv *s)
{
	NDK_SRQ *srq = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	if (s)
		return container_of(ndk_create_with(test,
						    ndk_senv_srq(e, s, 16, 1, 0,
								 &w),
						    &w),
				    NDK_SRQ, Header);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, 16, 1, 0, NULL, NULL, NULL,
					   ndk_test_create_cb, &w, &srq);
	return container_of(ndk_created(test, st, &w, srq), NDK_SRQ, Header);
}

/* Raise @event on @srq, as its device would. */
static void ndk_srq_raise(NDK_SRQ *srq, enum ib_event_type event)
{
	struct ib_srq *ibsrq = container_of(srq, struct ndk_srq, ndk)->ibsrq;
	struct ib_event ev = { .device = ibsrq->device,
			       .element.srq = ibsrq, .event = event };

	ibsrq->event_handler(&ev, ibsrq->srq_context);
}

/*
 * The SRQ limit disarms itself when it fires, so two limit events before
 * the first has reached the consumer are one notification (the
 * workqueue is per CPU: with interrupts off neither runs). An event that
 * comes while the SRQ's close drops its last reference notifies nobody,
 * and the close still completes once.
 */
static void ndk_srq_event_twice_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_senv s = {};
	NDK_SRQ *srq = ndk_srq_bare(test, e, &s);
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	unsigned long flags;
	struct ndk_wait c;
	NTSTATUS st;

	spin_lock_irqsave(&ndk_test_lock, flags);
	ndk_srq_raise(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	ndk_srq_raise(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	while (!atomic_read(&s.notified) && time_before(jiffies, end))
		usleep_range(2000, 4000);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.notified), 1);
	KUNIT_EXPECT_EQ(test, s.status, STATUS_SUCCESS);
	KUNIT_EXPECT_FALSE(test, s.driver_ctx);

	ndk_wait_init(&c);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = srq->Dispatch->NdkCloseSrq(&srq->Header, ndk_test_close_cb, &c);
	/* The close's work, on this CPU, waits: the SRQ is still there. */
	ndk_srq_raise(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c));
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&c.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.notified), 1);
}

/**
 * struct ndk_srq_closer - a modify whose completion closes its SRQ
 * @srq: the SRQ
 * @w: the modify's completion
 * @closed: the close's
 * @close_st: what the close returned
 */
struct ndk_srq_closer {
	NDK_SRQ *srq;
	struct ndk_wait w;
	struct ndk_wait closed;
	NTSTATUS close_st;
};

static void ndk_srq_close_cb(PVOID ctx, NTSTATUS status)
{
	struct ndk_srq_closer *x = ctx;

	x->close_st = x->srq->Dispatch->NdkCloseSrq(&x->srq->Header,
						    ndk_test_close_cb,
						    &x->closed);
	ndk_test_request_cb(&x->w, status);
}

/*
 * No notification without a callback: an SRQ created without one takes
 * its device's limit event and a modify to a threshold above what is
 * queued, which notify nobody; the modify completes once, and the close
 * (which waits for the event's reference) completes. Nor once the
 * consumer has closed the SRQ: a modify whose completion closes it does
 * not notify after that, and the close completes once.
 */
static void ndk_srq_unnotified_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_SRQ *srq = ndk_srq_bare(test, e, NULL);
	struct ndk_srq_closer x = {};
	struct ndk_senv s = {};
	struct ndk_wait w;
	NTSTATUS st;

	ndk_srq_raise(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	ndk_wait_init(&w);
	st = srq->Dispatch->NdkModifySrq(srq, 0, 5, ndk_test_request_cb, &w);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	ndk_test_close(test, &srq->Header, srq->Dispatch->NdkCloseSrq);

	x.srq = ndk_srq_bare(test, e, &s);
	ndk_wait_init(&x.w);
	ndk_wait_init(&x.closed);
	st = x.srq->Dispatch->NdkModifySrq(x.srq, 0, 5, ndk_srq_close_cb, &x);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&x.w));
	KUNIT_EXPECT_EQ(test, x.w.status, STATUS_SUCCESS);
	/* The modify's work holds the SRQ: the close pends. */
	KUNIT_EXPECT_EQ(test, x.close_st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&x.closed));
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&x.closed.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.notified), 0);
}

/* Whether @cq has a closed QP waiting for a poll that finds it empty. */
static bool ndk_srq_retiring(NDK_CQ *cq)
{
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	unsigned long flags;
	bool waits;

	spin_lock_irqsave(&c->sweep_lock, flags);
	waits = !list_empty(&c->retires);
	spin_unlock_irqrestore(&c->sweep_lock, flags);
	return waits;
}

/*
 * Close @s's QP, which is on an SRQ and receives into @cq, and wait until
 * it retires; its verbs QP is watched to go (ndk_srq_watched_gone).
 */
static void ndk_srq_close_to_retire(struct kunit *test, NDK_CQ *cq,
				    struct ndk_senv *s)
{
	unsigned long end;
	unsigned int ms;

	WRITE_ONCE(ndk_srq_watched_gone, false);
	WRITE_ONCE(ndk_srq_watched,
		   container_of(s->qp, struct ndk_qp, ndk)->ibqp);
	ndk_qp_set_destroy_hook(ndk_srq_destroying);
	ms = ndk_sweep_set_ms(20);
	ndk_test_close(test, &s->qp->Header, s->qp->Dispatch->NdkCloseQp);
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!ndk_srq_retiring(cq) && time_before(jiffies, end))
		usleep_range(2000, 4000);
	ndk_sweep_set_ms(ms);
	KUNIT_EXPECT_TRUE(test, ndk_srq_retiring(cq));
}

/*
 * The retiring QP's verbs QP is still there; a poll of @cq that asks for
 * results ends the retirement, and the verbs QP goes. Then @s and @cq
 * close.
 */
static void ndk_srq_end_retiring(struct kunit *test, struct ndk_cenv *e,
				 NDK_CQ *cq, struct ndk_senv *s)
{
	unsigned long end;
	NDK_RESULT r[4];

	msleep(50);
	KUNIT_EXPECT_TRUE(test, ndk_srq_retiring(cq));
	KUNIT_EXPECT_FALSE(test, READ_ONCE(ndk_srq_watched_gone));
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResults(cq, r, 4), 0U);
	KUNIT_EXPECT_FALSE(test, ndk_srq_retiring(cq));
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!READ_ONCE(ndk_srq_watched_gone) && time_before(jiffies, end))
		usleep_range(2000, 4000);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(ndk_srq_watched_gone));
	ndk_qp_set_destroy_hook(NULL);
	ndk_senv_free(test, e, s);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/*
 * A QP closed on an SRQ keeps its verbs QP until a poll of its receive
 * CQ finds it empty. A poll that asks for no results finds nothing, and
 * lets it go no more than no poll would; the next that asks for results
 * does.
 */
static void ndk_srq_zero_poll_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CQ *cq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ,
				  Header);
	struct ndk_senv *s = ndk_senv_new_on(test, e, cq, 0, 1);

	ndk_srq_close_to_retire(test, cq, s);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResults(cq, NULL, 0), 0U);
	ndk_srq_end_retiring(test, e, cq, s);
}

/*
 * A device's error event for a QP that is closed and still retiring (its
 * verbs QP waits for a poll of its receive CQ) finds no reference left to
 * take: ndk leaves the QP alone, and the retirement ends with the poll as
 * it would have.
 */
static void ndk_srq_retiring_event_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CQ *cq = container_of(ndk_test_create_cq(test, e->a, 16), NDK_CQ,
				  Header);
	struct ndk_senv *s = ndk_senv_new_on(test, e, cq, 0, 1);
	struct ndk_qp *q = container_of(s->qp, struct ndk_qp, ndk);
	struct ib_qp *ibqp = q->ibqp;
	struct ib_event ev = { .device = ibqp->device, .element.qp = ibqp,
			       .event = IB_EVENT_QP_FATAL };

	ndk_srq_close_to_retire(test, cq, s);
	/* The verbs QP, and so @q, lives until the retirement ends. */
	KUNIT_EXPECT_EQ(test, refcount_read(&q->obj.refs), 0U);
	ibqp->event_handler(&ev, ibqp->qp_context);
	KUNIT_EXPECT_EQ(test, refcount_read(&q->obj.refs), 0U);
	ndk_srq_end_retiring(test, e, cq, s);
}

static struct kunit_case ndk_srq_cases[] = {
	KUNIT_CASE(ndk_srq_contexts_test),
	KUNIT_CASE(ndk_srq_limits_test),
	KUNIT_CASE(ndk_srq_traffic_test),
	KUNIT_CASE(ndk_srq_zero_sge_test),
	KUNIT_CASE(ndk_srq_notify_test),
	KUNIT_CASE(ndk_srq_error_event_test),
	KUNIT_CASE(ndk_srq_close_first_test),
	KUNIT_CASE(ndk_srq_qp_refused_test),
	KUNIT_CASE(ndk_srq_shared_test),
	KUNIT_CASE(ndk_srq_modify_test),
	KUNIT_CASE(ndk_srq_modify_gap_test),
	KUNIT_CASE(ndk_srq_id_wrap_test),
	KUNIT_CASE(ndk_srq_stale_test),
	KUNIT_CASE(ndk_srq_closed_qp_test),
	KUNIT_CASE(ndk_srq_skip_test),
	KUNIT_CASE(ndk_srq_refused_test),
	KUNIT_CASE(ndk_srq_event_twice_test),
	KUNIT_CASE(ndk_srq_unnotified_test),
	KUNIT_CASE(ndk_srq_zero_poll_test),
	KUNIT_CASE(ndk_srq_retiring_event_test),
	{}
};

NDK_SUITE(srq, ndk_conn_init_test, ndk_conn_exit_test);
