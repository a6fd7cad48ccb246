// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_qp_post: posting over a loopback connection. Gather and scatter
 * with the bytes checked, requests refused before the connection, and
 * the rule that a request that returned STATUS_SUCCESS always completes:
 * receives and sends still outstanding when the QP is flushed or the
 * peer goes away complete with the flush status, as what they were.
 */
#include <linux/delay.h>
#include "ndk_tests.h"

#define NDK_POST_BUF	1024

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

/* The QPs and the buffer; connected only when @connect. */
static struct ndk_penv *ndk_penv_new(struct kunit *test, struct ndk_cenv *e,
				     bool connect)
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
	pe->p.aqp = ndk_cenv_qp_sge(test, e, 4, 0);
	pe->p.pqp = ndk_cenv_qp_sge(test, e, 4, 0);
	if (connect) {
		ndk_listen_addr(e, &dst);
		ndk_establish_pair(test, e, &pe->p,
				   (struct sockaddr *)&e->addr,
				   (struct sockaddr *)&dst, sizeof(dst), false);
	}
	return pe;
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

static struct kunit_case ndk_qp_post_cases[] = {
	KUNIT_CASE(nd_receive_flush_qp),
	KUNIT_CASE(ndk_post_flush_sends_test),
	KUNIT_CASE(nd_receive_conn_closed),
	KUNIT_CASE(ndk_post_gather_scatter_test),
	KUNIT_CASE(ndk_post_not_connected_test),
	{}
};

struct kunit_suite ndk_qp_post_suite = {
	.name = "ndk_qp_post",
	.init = ndk_conn_init_test,
	.exit = ndk_conn_exit_test,
	.test_cases = ndk_qp_post_cases,
};
