// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_qp_post: posting over a loopback connection. Gather and scatter
 * with the bytes checked, requests refused before the connection, and
 * the rule that a request that returned STATUS_SUCCESS always completes:
 * receives and sends still outstanding when the QP is flushed or the
 * peer goes away complete with the flush status, as what they were.
 * Deferred requests (NDK_OP_FLAG_DEFER) wait in the QP until their
 * chain ends, and reach the device before any inline failure returns.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include "ndk_tests.h"

#define NDK_POST_BUF	PAGE_SIZE

/**
 * struct ndk_penv - a connection whose QPs take four SGEs, and a buffer
 * @p: the connection
 * @buf: NDK_POST_BUF bytes, DMA-mapped
 * @dma: its device address
 * @tok: the privileged token, for @dma
 * @dev: the device that mapped it
 */
struct ndk_penv {
	struct ndk_pair p;
	u8 *buf;
	u64 dma;
	UINT32 tok;
	struct ib_device *dev;
};

/* A QP on the suite's CQ: @depth requests each way, 4 SGEs each. */
static NDK_QP *ndk_post_qp(struct kunit *test, struct ndk_cenv *e,
			   NDK_CQ *cq, ULONG depth, ULONG inline_size)
{
	NDK_QP *unused = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, cq, cq, e, depth, depth, 4, 4,
					  inline_size, ndk_test_create_cb, &w,
					  &unused);
	return container_of(ndk_create_with(test, st, &w), NDK_QP, Header);
}

/*
 * The QPs (@depth deep, the passive one on @pcq) and the buffer;
 * connected only when @connect.
 */
static struct ndk_penv *ndk_penv_new_qp(struct kunit *test,
					struct ndk_cenv *e, bool connect,
					ULONG depth, ULONG inline_size,
					NDK_CQ *pcq)
{
	struct ndk_penv *pe = kunit_kzalloc(test, sizeof(*pe), GFP_KERNEL);
	struct sockaddr_in dst;

	KUNIT_ASSERT_NOT_NULL(test, pe);
	pe->buf = kunit_kzalloc(test, NDK_POST_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pe->buf);
	pe->dev = container_of(e->pd, struct ndk_pd, ndk)->ibpd->device;
	pe->dma = ib_dma_map_single(pe->dev, pe->buf, NDK_POST_BUF,
				    DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(pe->dev, pe->dma));
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &pe->tok);
	pe->p.c = ndk_cenv_connector(test, e);
	pe->p.aqp = ndk_post_qp(test, e, e->cq, depth, inline_size);
	pe->p.pqp = ndk_post_qp(test, e, pcq, depth, inline_size);
	if (connect) {
		ndk_listen_addr(e, &dst);
		ndk_establish_pair(test, e, &pe->p,
				   (struct sockaddr *)&e->addr,
				   (struct sockaddr *)&dst, sizeof(dst), false);
	}
	return pe;
}

static struct ndk_penv *ndk_penv_new(struct kunit *test, struct ndk_cenv *e,
				     bool connect)
{
	return ndk_penv_new_qp(test, e, connect, 8, 0, e->cq);
}

static void ndk_penv_free(struct kunit *test, struct ndk_penv *pe)
{
	ib_dma_unmap_single(pe->dev, pe->dma, NDK_POST_BUF,
			    DMA_BIDIRECTIONAL);
	ndk_close_all(test, pe->p.in, pe->p.pqp);
	ndk_close_all(test, pe->p.c, pe->p.aqp);
}

static NDK_SGE ndk_penv_sge(struct ndk_penv *pe, u32 off, u32 len)
{
	return (NDK_SGE){ .LogicalAddress = pe->dma + off, .Length = len,
			  .MemoryRegionToken = pe->tok };
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
	struct ndk_cenv *e = test->priv;
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
 * Sends to a peer with no receive posted wait (receiver not ready, retried
 * without end); a flush of the sender completes them as cancelled sends.
 */
static void ndk_post_flush_sends_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
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
	struct ndk_cenv *e = test->priv;
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
	struct ndk_cenv *e = test->priv;
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

/* Before the connection no initiator request is taken, and none completes. */
static void ndk_post_not_connected_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
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

/* Poll until @n results arrived; false on a timeout. */
static bool ndk_penv_poll(NDK_CQ *cq, NDK_RESULT_EX *out, int n)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	int got = 0;

	while (got < n && time_before(jiffies, end)) {
		got += cq->Dispatch->NdkGetCqResultsEx(cq, out + got, n - got);
		if (got < n)
			usleep_range(2000, 4000);
	}
	return got == n;
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

/* NdkSend of 16 bytes from @src + 16 * @i, context @ctx + @i. */
static NTSTATUS ndk_penv_send(struct ndk_penv *pe, uintptr_t ctx, int i,
			      u32 src, ULONG flags)
{
	NDK_SGE sge = ndk_penv_sge(pe, src + 16 * i, 16);
	NDK_QP *qp = pe->p.aqp;

	return qp->Dispatch->NdkSend(qp, (void *)(ctx + i), &sge, 1, flags);
}

/*
 * Deferred sends wait in the QP: nothing reaches the peer or the CQ until
 * a request without NDK_OP_FLAG_DEFER ends the chain; then all complete
 * in order, with their contexts and bytes. From atomic context.
 */
static void ndk_post_defer_chain_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 16, 0, e->cq);
	unsigned long flags;
	NDK_RESULT r;
	int i;

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, 4);
	spin_lock_irqsave(&ndk_test_lock, flags);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, i, 2048,
						    NDK_OP_FLAG_DEFER),
				STATUS_SUCCESS);
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
 * A request that fails inline first sends what was deferred before it:
 * those complete, the failed one never does. Failures of the SGE check,
 * of the flag check and of NdkInvalidate's own checks.
 */
static void ndk_post_defer_fail_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
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
	struct ndk_cenv *e = test->priv;
	struct ndk_penv *pe = ndk_penv_new_qp(test, e, true, 32, 0, e->cq);
	int i;

	ndk_penv_fill(pe);
	ndk_penv_receives(test, pe, pe->p.pqp, 0x100, NDK_DEFER_MAX + 3);
	for (i = 0; i < NDK_DEFER_MAX; i++)
		KUNIT_EXPECT_EQ(test, ndk_penv_send(pe, 0x200, i, 2048,
						    NDK_OP_FLAG_DEFER),
				STATUS_SUCCESS);
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
 * NdkFlush with deferred requests held: they go to the device before the
 * QP stops and complete like every outstanding send (cancelled, or on
 * iWARP possibly sent); afterwards nothing is taken.
 */
static void ndk_post_defer_flush_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
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
	mr = container_of(ndk_create_with(test, st, &w), NDK_MR, Header);
	ndk_wait_init(&w);
	st = mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, FALSE,
						       ndk_test_request_cb,
						       &w);
	if (st == STATUS_PENDING)
		st = ndk_wait_for(&w) ? w.status : STATUS_IO_TIMEOUT;
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	return mr;
}

/*
 * The deferral scheme's own example: a fast registration deferred, and
 * the send that gathers from the new region ending the chain. The send
 * carries the region's bytes only if the registration went first.
 */
static void ndk_post_defer_fast_register_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
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

static struct kunit_case ndk_qp_post_cases[] = {
	KUNIT_CASE(nd_receive_flush_qp),
	KUNIT_CASE(ndk_post_flush_sends_test),
	KUNIT_CASE(nd_receive_conn_closed),
	KUNIT_CASE(ndk_post_gather_scatter_test),
	KUNIT_CASE(ndk_post_not_connected_test),
	KUNIT_CASE(ndk_post_defer_chain_test),
	KUNIT_CASE(ndk_post_defer_fail_test),
	KUNIT_CASE(ndk_post_defer_full_test),
	KUNIT_CASE(ndk_post_defer_flush_test),
	KUNIT_CASE(ndk_post_defer_fast_register_test),
	{}
};

struct kunit_suite ndk_qp_post_suite = {
	.name = "ndk_qp_post",
	.init = ndk_conn_init_test,
	.exit = ndk_conn_exit_test,
	.test_cases = ndk_qp_post_cases,
};
