// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The connection environment several suites share: an adapter with a PD,
 * a CQ and a listener on the adapter's address, and helpers that connect
 * NDK QP pairs through it; and the posting environment of the QP and
 * ring suites (struct ndk_penv), a connection with a DMA-mapped buffer.
 */
#include <linux/delay.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>
#include "ndk_tests.h"

void ndk_conn_event_cb(PVOID ConnectEventContext,
		       NDK_CONNECTOR *pNdkConnector)
{
	struct ndk_cenv *e = ConnectEventContext;

	e->incoming = pNdkConnector;
	if (e->reject)
		pNdkConnector->Dispatch->NdkReject(pNdkConnector, "no thanks",
						   10);
	else if (e->accept_qp)
		e->accept_st = pNdkConnector->Dispatch->NdkAccept(pNdkConnector,
								  e->accept_qp,
								  4, 4, NULL, 0,
								  NULL, NULL,
								  ndk_test_request_cb,
								  e->accept_w);
	complete(&e->incoming_done);
}

void ndk_disc_cb(PVOID DisconnectEventContext)
{
	struct ndk_cenv *e = DisconnectEventContext;

	e->disconnects++;
}

NDK_OBJECT_HEADER *ndk_create_with(struct kunit *test, NTSTATUS st,
				   struct ndk_wait *w)
{
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(w));
	KUNIT_ASSERT_EQ(test, w->status, STATUS_SUCCESS);
	return w->obj;
}

/*
 * The object of a create that may complete inline (every type):
 * @obj, what the call stored through its object argument, if it returned
 * STATUS_SUCCESS, whose callback must then never run; else as
 * ndk_create_with().
 */
NDK_OBJECT_HEADER *ndk_created(struct kunit *test, NTSTATUS st,
			       struct ndk_wait *w, void *obj)
{
	if (st == STATUS_PENDING)
		return ndk_create_with(test, st, w);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, obj);
	KUNIT_EXPECT_EQ(test, atomic_read(&w->calls), 0);
	/* The header is the first member of every NDK object. */
	return obj;
}

/* A QP on the suite's PD and CQ with @sge SGEs per request each way. */
NDK_QP *ndk_cenv_qp_sge(struct kunit *test, struct ndk_cenv *e, ULONG sge,
			ULONG inline_size)
{
	NDK_QP *qp = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, e, 8, 8, sge, sge,
					  inline_size, ndk_test_create_cb, &w,
					  &qp);
	return container_of(ndk_created(test, st, &w, qp), NDK_QP, Header);
}

NDK_QP *ndk_cenv_qp(struct kunit *test, struct ndk_cenv *e)
{
	return ndk_cenv_qp_sge(test, e, 1, 32);
}

NDK_CONNECTOR *ndk_cenv_connector(struct kunit *test,
				  struct ndk_cenv *e)
{
	NDK_CONNECTOR *c = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateConnector(e->a, ndk_test_create_cb, &w,
						&c);
	return container_of(ndk_created(test, st, &w, c), NDK_CONNECTOR,
			    Header);
}

/* A memory window on @e's PD. */
NDK_MW *ndk_cenv_mw(struct kunit *test, struct ndk_cenv *e)
{
	NDK_MW *mw = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateMw(e->pd, ndk_test_create_cb, &w, &mw);
	return container_of(ndk_created(test, st, &w, mw), NDK_MW, Header);
}

/* Listen on the adapter's address at @port; returns the listen status. */
/* NdkListen on @l at @sin, from atomic context; its outcome. */
NTSTATUS ndk_listen_at(struct kunit *test, NDK_LISTENER *l,
		       const struct sockaddr_in *sin)
{
	struct sockaddr_in at = *sin;
	unsigned long flags;
	struct ndk_wait w;
	NTSTATUS status;

	ndk_wait_init(&w);
	/* Listen is callable from atomic context; every listen checks it. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = l->Dispatch->NdkListen(l, (struct sockaddr *)&at, sizeof(at),
					ndk_test_request_cb, &w);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	return w.status;
}

NTSTATUS ndk_cenv_listen(struct kunit *test, struct ndk_cenv *e,
			 NDK_LISTENER *l, u16 port)
{
	struct sockaddr_in sin = e->addr;

	sin.sin_port = htons(port);
	return ndk_listen_at(test, l, &sin);
}

NDK_LISTENER *ndk_cenv_listener(struct kunit *test, struct ndk_cenv *e)
{
	NDK_LISTENER *made = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateListener(e->a, ndk_conn_event_cb, e,
					       ndk_test_create_cb, &w, &made);
	return container_of(ndk_created(test, st, &w, made), NDK_LISTENER,
			    Header);
}

/* The first global IPv6 address of @ndev (fd00::15 in the test VM). */
void ndk_find_addr6(struct net_device *ndev, struct sockaddr_in6 *sin6)
{
	struct inet6_dev *idev = in6_dev_get(ndev);
	struct inet6_ifaddr *ifa;

	if (!idev)
		return;
	read_lock_bh(&idev->lock);
	list_for_each_entry(ifa, &idev->addr_list, if_list) {
		if (ipv6_addr_type(&ifa->addr) & IPV6_ADDR_LINKLOCAL)
			continue;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = ifa->addr;
		break;
	}
	read_unlock_bh(&idev->lock);
	in6_dev_put(idev);
}

/*
 * The environment is built in layers, each on the one before, in this
 * order: the adapter (ndk_env_adapter_init()), its PD and CQ
 * (ndk_env_objects_init()), then its addresses and the listener
 * (ndk_cenv_need()); ndk_conn_init_test() builds all three. A suite
 * whose init builds less lets a case that needs the whole environment
 * complete it with ndk_cenv_need(); ndk_conn_exit_test() tears down
 * whatever was built.
 */
int ndk_env_adapter_init(struct kunit *test)
{
	struct ndk_cenv *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	test->priv = e;
	init_completion(&e->incoming_done);
	e->a = ndk_test_open(test);
	return 0;
}

int ndk_env_objects_init(struct kunit *test)
{
	struct ndk_cenv *e;

	ndk_env_adapter_init(test);
	e = test->priv;
	e->pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD, Header);
	e->cq = container_of(ndk_test_create_cq(test, e->a, 64), NDK_CQ,
			     Header);
	return 0;
}

/* The adapter of the case's environment. */
NDK_ADAPTER *ndk_env_adapter(struct kunit *test)
{
	return ((struct ndk_cenv *)test->priv)->a;
}

struct ndk_cenv *ndk_cenv_need(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct net_device *ndev;

	if (!e->pd)
		e->pd = container_of(ndk_test_create_pd(test, e->a), NDK_PD,
				     Header);
	if (!e->cq)
		e->cq = container_of(ndk_test_create_cq(test, e->a, 64),
				     NDK_CQ, Header);
	if (e->listener)
		return e;
	ndev = dev_get_by_index(&init_net, ndk_test_ifindex(test));
	KUNIT_ASSERT_NOT_NULL(test, ndev);
	e->addr.sin_family = AF_INET;
	e->addr.sin_addr.s_addr = inet_select_addr(ndev, 0, RT_SCOPE_UNIVERSE);
	ndk_find_addr6(ndev, &e->addr6);
	dev_put(ndev);
	KUNIT_ASSERT_NE(test, (__force u32)e->addr.sin_addr.s_addr, 0U);
	e->listener = ndk_cenv_listener(test, e);
	KUNIT_ASSERT_EQ(test, ndk_cenv_listen(test, e, e->listener,
					      NDK_TEST_PORT),
			STATUS_SUCCESS);
	return e;
}

int ndk_conn_init_test(struct kunit *test)
{
	ndk_env_objects_init(test);
	ndk_cenv_need(test);
	return 0;
}

void ndk_conn_exit_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;

	if (!e || !e->a)
		return;
	/*
	 * After a failure the suite's own objects may wait for what the
	 * case left open: ndk_test_close_adapter() closes all of it.
	 */
	if (READ_ONCE(test->status) == KUNIT_FAILURE)
		goto adapter;
	if (e->listener)
		ndk_test_close(test, &e->listener->Header,
			       e->listener->Dispatch->NdkCloseListener);
	if (e->cq)
		ndk_test_close(test, &e->cq->Header, e->cq->Dispatch->NdkCloseCq);
	if (e->pd)
		ndk_test_close(test, &e->pd->Header, e->pd->Dispatch->NdkClosePd);
adapter:
	ndk_test_close_adapter(test, e->a);
}

/* NdkConnect from @src to @dst, optionally with a spinlock held. */
/* One handshake call, for ndk_maybe_atomic(). */
struct ndk_hs_call {
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	const struct sockaddr *src;
	const struct sockaddr *dst;
	ULONG len;
	NDK_FN_DISCONNECT_EVENT_CALLBACK disc;
	void *disc_ctx;
	struct ndk_wait *w;
};

/* Run @fn(@call), with ndk_test_lock held when @atomic. */
static NTSTATUS ndk_maybe_atomic(bool atomic,
				 NTSTATUS (*fn)(struct ndk_hs_call *call),
				 struct ndk_hs_call *call)
{
	unsigned long flags;
	NTSTATUS status;

	if (!atomic)
		return fn(call);
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = fn(call);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	return status;
}

static NTSTATUS ndk_hs_connect(struct ndk_hs_call *x)
{
	return x->c->Dispatch->NdkConnect(x->c, x->qp, (PSOCKADDR)x->src,
					  x->len, (PSOCKADDR)x->dst, x->len,
					  4, 4, "hi", 3, ndk_test_request_cb,
					  x->w);
}

static NTSTATUS ndk_hs_accept(struct ndk_hs_call *x)
{
	return x->c->Dispatch->NdkAccept(x->c, x->qp, 4, 4, NULL, 0,
					 x->disc, x->disc_ctx,
					 ndk_test_request_cb, x->w);
}

static NTSTATUS ndk_hs_complete(struct ndk_hs_call *x)
{
	return x->c->Dispatch->NdkCompleteConnect(x->c, NULL, NULL,
						  ndk_test_request_cb, x->w);
}

/* NdkConnect from @src to @dst, optionally with a spinlock held. */
NTSTATUS ndk_connect_to(NDK_CONNECTOR *c, NDK_QP *qp,
			const struct sockaddr *src,
			const struct sockaddr *dst, ULONG len,
			bool atomic, struct ndk_wait *w)
{
	struct ndk_hs_call x = { .c = c, .qp = qp, .src = src, .dst = dst,
				 .len = len, .w = w };

	return ndk_maybe_atomic(atomic, ndk_hs_connect, &x);
}

/* Start NdkConnect to the test listener from the adapter's address. */
NTSTATUS ndk_cenv_connect(struct ndk_cenv *e, NDK_CONNECTOR *c,
			  NDK_QP *qp, u16 port, const void *pdata,
			  ULONG len, struct ndk_wait *w)
{
	struct sockaddr_in src = e->addr, dst = e->addr;

	dst.sin_port = htons(port);
	return c->Dispatch->NdkConnect(c, qp, (struct sockaddr *)&src, sizeof(src),
				       (struct sockaddr *)&dst, sizeof(dst), 4, 4,
				       (PVOID)pdata, len, ndk_test_request_cb,
				       w);
}

/*
 * NdkConnect of @c and @qp to @port of the adapter's address, without
 * private data: it must pend and complete. Return: its status.
 */
NTSTATUS ndk_cenv_connect_done(struct kunit *test, struct ndk_cenv *e,
			       NDK_CONNECTOR *c, NDK_QP *qp, u16 port,
			       struct ndk_wait *w)
{
	ndk_wait_init(w);
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect(e, c, qp, port, NULL, 0, w),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(w));
	return w->status;
}

/*
 * NdkConnect of @c and @qp to the listener, without private data: it
 * must pend, and the listener must hand over the request.
 */
void ndk_cenv_connect_incoming(struct kunit *test, struct ndk_cenv *e,
			       NDK_CONNECTOR *c, NDK_QP *qp,
			       struct ndk_wait *w)
{
	ndk_wait_init(w);
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect(e, c, qp, NDK_TEST_PORT, NULL,
					       0, w),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
}

NTSTATUS ndk_listener_close(NDK_LISTENER *l, struct ndk_wait *w)
{
	return l->Dispatch->NdkCloseListener(&l->Header, ndk_test_close_cb, w);
}

void ndk_close_all(struct kunit *test, NDK_CONNECTOR *c, NDK_QP *qp)
{
	if (c)
		ndk_test_close(test, &c->Header, c->Dispatch->NdkCloseConnector);
	if (qp)
		ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
}

/* Create the connector and the two QPs of a pair. */
void ndk_pair_init(struct kunit *test, struct ndk_cenv *e,
		   struct ndk_pair *p)
{
	p->c = ndk_cenv_connector(test, e);
	p->aqp = ndk_cenv_qp(test, e);
	p->pqp = ndk_cenv_qp(test, e);
}

/*
 * Start @p's NdkConnect from @src to the listener at @dst, completing into
 * @cw, and wait for the listener to hand over @p->in.
 */
void ndk_pair_request(struct kunit *test, struct ndk_cenv *e,
		      struct ndk_pair *p, const struct sockaddr *src,
		      const struct sockaddr *dst, ULONG len, bool atomic,
		      struct ndk_wait *cw)
{
	reinit_completion(&e->incoming_done);
	ndk_wait_init(cw);
	KUNIT_ASSERT_EQ(test, ndk_connect_to(p->c, p->aqp, src, dst, len,
					     atomic, cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	p->in = e->incoming;
}

/*
 * As ndk_establish_pair(), with @disc and @disc_ctx as the passive side's
 * disconnect event.
 */
void ndk_establish_pair_disc(struct kunit *test, struct ndk_cenv *e,
			     struct ndk_pair *p, const struct sockaddr *src,
			     const struct sockaddr *dst, ULONG len, bool atomic,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK disc,
			     void *disc_ctx)
{
	/*
	 * Not on the stack: after a failed assertion the exit hook closes
	 * the pair, and the requests still pending complete into these.
	 */
	struct ndk_wait *w = kunit_kcalloc(test, 3, sizeof(*w), GFP_KERNEL);
	struct ndk_wait *cw = &w[0], *aw = &w[1], *ccw = &w[2];
	struct ndk_hs_call x;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, w);
	ndk_pair_request(test, e, p, src, dst, len, atomic, cw);

	ndk_wait_init(aw);
	x = (struct ndk_hs_call){ .c = p->in, .qp = p->pqp, .disc = disc,
				  .disc_ctx = disc_ctx, .w = aw };
	KUNIT_ASSERT_EQ(test, ndk_maybe_atomic(atomic, ndk_hs_accept, &x),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(cw));
	if (cw->status != STATUS_SUCCESS) {
		/*
		 * Refused after the request was handed over: what the accept
		 * saw tells which side's socket went first.
		 */
		bool done = ndk_wait_for(aw);

		kunit_err(test, "the accept %s 0x%08x\n",
			  done ? "completed with" : "is still pending, status",
			  aw->status);
	}
	KUNIT_ASSERT_EQ(test, cw->status, STATUS_SUCCESS);

	/* Where the caller may sleep, the confirmation completes inline. */
	ndk_wait_init(ccw);
	x = (struct ndk_hs_call){ .c = p->c, .w = ccw };
	st = ndk_maybe_atomic(atomic, ndk_hs_complete, &x);
	KUNIT_ASSERT_EQ(test, st, atomic ? STATUS_PENDING : NDK_TEST_INLINE);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, ccw, st), STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(aw));
	KUNIT_ASSERT_EQ(test, aw->status, STATUS_SUCCESS);
}

/* As ndk_establish(), with the objects of @p already created. */
void ndk_establish_pair(struct kunit *test, struct ndk_cenv *e,
			struct ndk_pair *p, const struct sockaddr *src,
			const struct sockaddr *dst, ULONG len,
			bool atomic)
{
	ndk_establish_pair_disc(test, e, p, src, dst, len, atomic,
				ndk_disc_cb, e);
}

/*
 * Connect @src to the listener at @dst and accept: every NDK call of the
 * handshake made with a spinlock held when @atomic.
 */
void ndk_establish(struct kunit *test, struct ndk_cenv *e,
		   struct ndk_pair *p, const struct sockaddr *src,
		   const struct sockaddr *dst, ULONG len, bool atomic)
{
	ndk_pair_init(test, e, p);
	ndk_establish_pair(test, e, p, src, dst, len, atomic);
}

void ndk_pair_close(struct kunit *test, struct ndk_pair *p)
{
	ndk_close_all(test, p->in, p->pqp);
	ndk_close_all(test, p->c, p->aqp);
}

void ndk_listen_addr(struct ndk_cenv *e, struct sockaddr_in *sin)
{
	*sin = e->addr;
	sin->sin_port = htons(NDK_TEST_PORT);
}

/* Poll until @n results arrived or the timeout passed; returns how many. */
ULONG ndk_poll_results(NDK_CQ *cq, NDK_RESULT *r, ULONG n)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	ULONG got = 0;

	while (got < n && time_before(jiffies, end)) {
		got += cq->Dispatch->NdkGetCqResults(cq, r + got, n - got);
		if (got < n)
			usleep_range(5000, 10000);
	}
	return got;
}

NDK_RESULT *ndk_find_result(NDK_RESULT *r, ULONG n, uintptr_t ctx)
{
	ULONG i;

	for (i = 0; i < n; i++)
		if (r[i].RequestContext == (void *)ctx)
			return &r[i];
	return NULL;
}

/* Send @len bytes from @from's QP to @to's QP with raw verbs and reap. */
void ndk_conn_traffic(struct kunit *test, struct ndk_cenv *e,
		      NDK_QP *from, NDK_QP *to)
{
	struct ib_qp *sq = container_of(from, struct ndk_qp, ndk)->ibqp;
	struct ib_qp *rq = container_of(to, struct ndk_qp, ndk)->ibqp;
	struct ib_device *dev = sq->device;
	u8 *buf = kunit_kzalloc(test, 64, GFP_KERNEL);
	struct ib_sge ssge, rsge;
	struct ib_send_wr swr = {};
	struct ib_recv_wr rwr = {};
	unsigned long end;
	NDK_RESULT r[2];
	u64 dma;
	ULONG n = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, "ndk says hi", 12);
	dma = ib_dma_map_single(dev, buf, 64, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, dma));
	rsge = (struct ib_sge){ dma + 32, 32, sq->pd->local_dma_lkey };
	ssge = (struct ib_sge){ dma, 12, sq->pd->local_dma_lkey };
	rwr.wr_id = 1;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	swr.wr_id = 2;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IB_WR_SEND;
	swr.send_flags = IB_SEND_SIGNALED;
	KUNIT_ASSERT_EQ(test, ib_post_recv(rq, &rwr, NULL), 0);
	KUNIT_ASSERT_EQ(test, ib_post_send(sq, &swr, NULL), 0);
	end = jiffies + NDK_TEST_TIMEOUT;
	while (n < 2 && time_before(jiffies, end)) {
		n += e->cq->Dispatch->NdkGetCqResults(e->cq, r + n, 2 - n);
		if (n < 2)
			usleep_range(5000, 10000);
	}
	ib_dma_unmap_single(dev, dma, 64, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_EQ(test, n, 2U);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, r[1].Status, STATUS_SUCCESS);
	NDK_EXPECT_MEMEQ(test, buf + 32, "ndk says hi", 12);
}

static NDK_QP *ndk_post_qp(struct kunit *test, struct ndk_cenv *e,
			   const struct ndk_qpspec *q, NDK_CQ *cq, NDK_SRQ *srq)
{
	NDK_QP *qp = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	if (srq)
		st = e->pd->Dispatch->NdkCreateQpWithSrq(e->pd, cq, cq, srq,
							 e, q->depth,
							 q->sge[1],
							 q->inline_size,
							 ndk_test_create_cb,
							 &w, &qp);
	else
		st = e->pd->Dispatch->NdkCreateQp(e->pd, cq, cq, e, q->depth,
						  q->depth, q->sge[0],
						  q->sge[1], q->inline_size,
						  ndk_test_create_cb, &w, &qp);
	return container_of(ndk_created(test, st, &w, qp), NDK_QP, Header);
}

/* The QPs as @q says and the buffer; connected only when @connect. */
struct ndk_penv *ndk_penv_new_spec(struct kunit *test,
				   struct ndk_cenv *e, bool connect,
				   const struct ndk_qpspec *q)
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
	pe->p.aqp = ndk_post_qp(test, e, q, q->acq, NULL);
	pe->p.pqp = ndk_post_qp(test, e, q, q->pcq, q->srq);
	if (connect) {
		ndk_listen_addr(e, &dst);
		ndk_establish_pair(test, e, &pe->p,
				   (struct sockaddr *)&e->addr,
				   (struct sockaddr *)&dst, sizeof(dst), false);
	}
	return pe;
}

void ndk_penv_free(struct kunit *test, struct ndk_penv *pe)
{
	ib_dma_unmap_single(pe->dev, pe->dma, NDK_POST_BUF,
			    DMA_BIDIRECTIONAL);
	ndk_close_all(test, pe->p.in, pe->p.pqp);
	ndk_close_all(test, pe->p.c, pe->p.aqp);
}

NDK_SGE ndk_penv_sge(struct ndk_penv *pe, u32 off, u32 len)
{
	return (NDK_SGE){ .LogicalAddress = pe->dma + off, .Length = len,
			  .MemoryRegionToken = pe->tok };
}

/* Poll until @n results arrived; false on a timeout. */
bool ndk_penv_poll(NDK_CQ *cq, NDK_RESULT_EX *out, int n)
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

/* NdkSend of 16 bytes from @src + 16 * @i, context @ctx + @i. */
NTSTATUS ndk_penv_send(struct ndk_penv *pe, uintptr_t ctx, int i,
		       u32 src, ULONG flags)
{
	NDK_SGE sge = ndk_penv_sge(pe, src + 16 * i, 16);
	NDK_QP *qp = pe->p.aqp;

	return qp->Dispatch->NdkSend(qp, (void *)(ctx + i), &sge, 1, flags);
}
