// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_connector, ndk_listener, ndk_endpoint: connections over rdma_cm
 * between two QPs of the same adapter (loopback through rxe or siw): the NDK
 * handshake, private data and read limits, reject, refusal, statuses,
 * disconnect; listeners; and the reference counting of endpoints.
 */
#include <linux/debug_locks.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/net.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include "ndk_tests.h"
#include "connector.h"

/*
 * The whole NDK handshake: Connect completes when the peer accepted,
 * both sides read the other's private data and the effective limits,
 * CompleteConnect and Accept complete, data flows, and a disconnect
 * from the active side reaches the passive side's callback once.
 */
static void ndk_conn_connect_accept_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *aqp = ndk_cenv_qp(test, e), *pqp = ndk_cenv_qp(test, e);
	struct ndk_wait cw, aw, ccw, dw;
	struct sockaddr_in local, peer;
	ULONG ird = 0, ord = 0, len;
	NDK_CONNECTOR *in;
	u8 *pdata = kunit_kzalloc(test, 256, GFP_KERNEL);
	NTSTATUS st;

	ndk_wait_init(&cw);
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect(e, c, aqp, NDK_TEST_PORT,
					       "hello", 6, &cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	in = e->incoming;
	KUNIT_EXPECT_EQ(test, in->Header.ObjectType, NdkObjectTypeConnector);

	/* The request's private data, padded to what the CM REQ carries. */
	KUNIT_ASSERT_NOT_NULL(test, pdata);
	memset(pdata, 0xa5, 256);
	len = 256;
	KUNIT_ASSERT_EQ(test, in->Dispatch->NdkGetConnectionData(in, &ird,
								 &ord, pdata,
								 &len),
			STATUS_SUCCESS);
	/* IB pads to what the CM REQ carries; MPA keeps the exact length. */
	KUNIT_EXPECT_EQ(test, len, ndk_test_iwarp() ? 6U : 56U);
	NDK_EXPECT_MEMEQ(test, pdata, "hello", 6);
	/* Only "hello" is kept: its NUL and the padding come back as zeros. */
	KUNIT_EXPECT_EQ(test, container_of(in, struct ndk_connector,
					   ndk)->peer_len, 5);
	if (len >= 6 && len < 256) {
		KUNIT_EXPECT_NULL(test, memchr_inv(pdata + 6, 0, len - 6));
		KUNIT_EXPECT_EQ(test, pdata[len], 0xa5);
	}
	KUNIT_EXPECT_EQ(test, ird, 4U);
	KUNIT_EXPECT_EQ(test, ord, 4U);

	ndk_wait_init(&aw);
	KUNIT_ASSERT_EQ(test, in->Dispatch->NdkAccept(in, pqp, 2, 8, "world", 6,
						      ndk_disc_cb, e,
						      ndk_test_request_cb, &aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_ASSERT_EQ(test, cw.status, STATUS_SUCCESS);

	len = 256;
	KUNIT_ASSERT_EQ(test, c->Dispatch->NdkGetConnectionData(c, &ird, &ord,
								pdata, &len),
			STATUS_SUCCESS);
	NDK_EXPECT_MEMEQ(test, pdata, "world", 6);
	/*
	 * Our ORD is capped by the peer's IRD of 2, our IRD by its ORD. siw
	 * negotiates IRD leniently: the responder raises its IRD to the
	 * initiator's ORD of 4 rather than refuse it.
	 */
	KUNIT_EXPECT_EQ(test, ord, ndk_test_iwarp() ? 4U : 2U);
	KUNIT_EXPECT_EQ(test, ird, 4U);

	/* From a thread the confirmation completes in the call. */
	ndk_wait_init(&ccw);
	st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, ndk_test_request_cb,
					     &ccw);
	KUNIT_ASSERT_EQ(test, st, NDK_TEST_INLINE);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &ccw, st), STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&aw));
	KUNIT_EXPECT_EQ(test, aw.status, STATUS_SUCCESS);

	len = sizeof(local);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetLocalAddress(c,
							      (struct sockaddr *)&local,
							      &len),
			STATUS_SUCCESS);
	len = sizeof(peer);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetPeerAddress(c,
							     (struct sockaddr *)&peer,
							     &len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ntohs(peer.sin_port), NDK_TEST_PORT);
	KUNIT_EXPECT_NE(test, ntohs(local.sin_port), 0);

	ndk_conn_traffic(test, e, aqp, pqp);
	ndk_conn_traffic(test, e, pqp, aqp);

	ndk_wait_init(&dw);
	KUNIT_ASSERT_EQ(test, c->Dispatch->NdkDisconnect(c, ndk_test_request_cb,
							 &dw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	KUNIT_EXPECT_EQ(test, dw.status, STATUS_SUCCESS);
	msleep(200);
	KUNIT_EXPECT_EQ(test, e->disconnects, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&ccw.calls), st == STATUS_PENDING);

	ndk_close_all(test, in, pqp);
	ndk_close_all(test, c, aqp);
}

/* A disconnect event with a reason (the Ex callbacks): calls and reason. */
struct ndk_disc_ex {
	atomic_t calls;
	ULONG reason;
};

static void ndk_disc_ex_cb(PVOID ctx, ULONG ProviderDisconnectReason)
{
	struct ndk_disc_ex *d = ctx;

	d->reason = ProviderDisconnectReason;
	atomic_inc(&d->calls);
}

/*
 * The handshake through NdkAcceptEx and NdkCompleteConnectEx: both
 * complete, data flows, and the passive side's disconnect reaches the
 * active side's Ex callback once, with a reason, and never the passive
 * side's own.
 */
static void ndk_conn_ex_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_disc_ex *dx = kunit_kcalloc(test, 2, sizeof(*dx),
					       GFP_KERNEL);
	struct ndk_wait *w = kunit_kcalloc(test, 4, sizeof(*w), GFP_KERNEL);
	struct ndk_wait *cw = &w[0], *aw = &w[1], *ccw = &w[2], *dw = &w[3];
	unsigned long end;
	struct ndk_pair p;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, dx);
	KUNIT_ASSERT_NOT_NULL(test, w);
	ndk_pair_init(test, e, &p);
	reinit_completion(&e->incoming_done);
	ndk_cenv_connect_incoming(test, e, p.c, p.aqp, cw);
	p.in = e->incoming;
	ndk_wait_init(aw);
	st = p.in->Dispatch->NdkAcceptEx(p.in, p.pqp, 4, 4, NULL, 0,
					 ndk_disc_ex_cb, &dx[1],
					 ndk_test_request_cb, aw);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(cw));
	KUNIT_ASSERT_EQ(test, cw->status, STATUS_SUCCESS);
	ndk_wait_init(ccw);
	st = p.c->Dispatch->NdkCompleteConnectEx(p.c, ndk_disc_ex_cb, &dx[0],
						 ndk_test_request_cb, ccw);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, ccw, st), STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(aw));
	KUNIT_EXPECT_EQ(test, aw->status, STATUS_SUCCESS);
	ndk_conn_traffic(test, e, p.aqp, p.pqp);

	ndk_wait_init(dw);
	st = p.in->Dispatch->NdkDisconnect(p.in, ndk_test_request_cb, dw);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, dw, st), STATUS_SUCCESS);
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!atomic_read(&dx[0].calls) && time_before(jiffies, end))
		usleep_range(2000, 4000);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&dx[0].calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&dx[1].calls), 0);
	kunit_info(test, "disconnect reason %u\n", dx[0].reason);
	ndk_pair_close(test, &p);
}

/*
 * The tries the reject case gets over iWARP, where siw can lose the
 * reject's private data (deviations.rst): each loss is logged, and one try
 * in NDK_REJECT_TRIES must bring the data.
 */
#define NDK_REJECT_TRIES	3

/*
 * Run @try_once until a try brings the reject's private data, at most
 * NDK_REJECT_TRIES times; only over iWARP may a try lose it. @try_once
 * returns true when the refusal came without the data.
 */
static void ndk_reject_tries(struct kunit *test,
			     bool (*try_once)(struct kunit *test))
{
	int try;

	for (try = 1; try <= NDK_REJECT_TRIES; try++) {
		if (!try_once(test))
			return;
		kunit_info(test, "device defect: the reject's private data was lost (try %d)\n",
			   try);
		KUNIT_ASSERT_TRUE_MSG(test, ndk_test_iwarp(),
				      "the reject's private data was lost");
	}
	KUNIT_FAIL(test, "the reject's private data was lost on every try");
}

/*
 * nd_conn_reject: the active side reads the reject's private data; true
 * if the refusal came without any.
 */
static bool nd_conn_reject_try(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_wait cw;
	u8 pdata[256];
	ULONG len = sizeof(pdata);
	bool lost = false;

	e->reject = true;
	ndk_cenv_connect_done(test, e, c, qp, NDK_TEST_PORT, &cw);
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetConnectionData(c, NULL, NULL,
								pdata, &len),
			STATUS_SUCCESS);
	if (cw.status == STATUS_CONNECTION_REFUSED && !len)
		lost = true;
	else
		NDK_EXPECT_MEMEQ(test, pdata, "no thanks", 10);
	ndk_close_all(test, e->incoming, NULL);
	ndk_close_all(test, c, qp);
	return lost;
}

/*
 * nd_conn_reject: the active side reads the reject's private data, in
 * one of NDK_REJECT_TRIES tries over iWARP, where siw can lose it.
 */
static void nd_conn_reject(struct kunit *test)
{
	ndk_reject_tries(test, nd_conn_reject_try);
}

/* Nobody listens on the port: the peer's CM refuses. */
static void ndk_conn_refused_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_wait cw;

	ndk_cenv_connect_done(test, e, c, qp, NDK_TEST_PORT + 1, &cw);
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	ndk_close_all(test, c, qp);
}

/* nd_large_private_data: the largest allowed is sent; one more fails. */
static void nd_large_private_data(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	NDK_ADAPTER_INFO info;
	ULONG size = sizeof(info), len;
	struct ndk_wait cw;
	NDK_CONNECTOR *in;
	NTSTATUS st;
	u8 *big = kunit_kzalloc(test, 300, GFP_KERNEL);
	u8 *got = kunit_kzalloc(test, 300, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, big);
	KUNIT_ASSERT_NOT_NULL(test, got);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkQueryAdapterInfo(e->a, &info,
								  &size),
			STATUS_SUCCESS);
	memset(big, 0x5a, 300);
	ndk_wait_init(&cw);
	KUNIT_EXPECT_EQ(test, ndk_cenv_connect(e, c, qp, NDK_TEST_PORT, big,
					       info.MaxCallerData + 1, &cw),
			STATUS_INVALID_BUFFER_SIZE);
	e->reject = true;
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect(e, c, qp, NDK_TEST_PORT, big,
					       info.MaxCallerData, &cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	in = e->incoming;
	len = 0;
	/* RDS first: NULL buffer, zero length. */
	st = in->Dispatch->NdkGetConnectionData(in, NULL, NULL, NULL, &len);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, len, info.MaxCallerData);
	len = 8;
	st = in->Dispatch->NdkGetConnectionData(in, NULL, NULL, got, &len);
	KUNIT_EXPECT_EQ(test, st, STATUS_BUFFER_TOO_SMALL);
	KUNIT_EXPECT_EQ(test, len, info.MaxCallerData);
	NDK_EXPECT_MEMEQ(test, got, big, 8);
	len = 300;
	st = in->Dispatch->NdkGetConnectionData(in, NULL, NULL, got, &len);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	NDK_EXPECT_MEMEQ(test, got, big, info.MaxCallerData);
	ndk_close_all(test, e->incoming, NULL);
	ndk_close_all(test, c, qp);
}

/*
 * ndk_pdata_used(), which trims the zeros IB pads private data with,
 * against the answer a byte-at-a-time scan gives: every length across
 * the word loop's edges, the last non-zero byte anywhere, the data at
 * every alignment, and non-zero bytes on both sides of it, which a scan
 * that reads past either end would count.
 */
static void ndk_pdata_used_test(struct kunit *test)
{
	u8 buf[96];
	u32 off, len, last, got;

	for (off = 0; off < 8; off++) {
		for (len = 0; len <= 80; len++) {
			for (last = 0; last <= len; last++) {
				memset(buf, 0x5a, sizeof(buf));
				memset(buf + off, 0, len);
				if (last)
					buf[off + last - 1] = BIT(last % 8);
				got = ndk_pdata_used(buf + off, len);
				if (got != last) {
					KUNIT_FAIL(test, "offset %u, length %u: %u used, not %u",
						   off, len, got, last);
					return;
				}
			}
		}
	}
}

/* Private data buffers: twice the most any transport carries. */
#define NDK_PDATA_BUF	(2 * RDMA_MAX_PRIVATE_DATA)

/* The call of an ndk_conn_pdata_len_test case that sends private data. */
enum ndk_pdata_call {
	NDK_PDATA_CONNECT,
	NDK_PDATA_ACCEPT,
	NDK_PDATA_REJECT,
};

/**
 * struct ndk_pdata_case - a length of private data one call sends
 * @name: the case's name
 * @call: the call
 * @from_max: @delta counts from the call's limit (MaxCallerData for
 *	NdkConnect, MaxCalleeData for NdkAccept and NdkReject), not from 0
 * @delta: the length
 * @over: first every length past the limit, each refused, then none
 */
struct ndk_pdata_case {
	const char *name;
	enum ndk_pdata_call call;
	bool from_max;
	int delta;
	bool over;
};

/*
 * The lengths nd_large_private_data, ndk_conn_zero_pdata_test and
 * ndk_conn_connect_accept_test leave out: connect 0, the limit and one
 * past it, and accept 0, are theirs.
 */
static const struct ndk_pdata_case ndk_pdata_cases[] = {
	{ "connect 1", NDK_PDATA_CONNECT, false, 1 },
	{ "connect limit-1", NDK_PDATA_CONNECT, true, -1 },
	{ "connect over the limit", NDK_PDATA_CONNECT, .over = true },
	{ "accept 1", NDK_PDATA_ACCEPT, false, 1 },
	{ "accept limit-1", NDK_PDATA_ACCEPT, true, -1 },
	{ "accept limit", NDK_PDATA_ACCEPT, true, 0 },
	{ "accept over the limit", NDK_PDATA_ACCEPT, .over = true },
	{ "reject 0", NDK_PDATA_REJECT, false, 0 },
	{ "reject 1", NDK_PDATA_REJECT, false, 1 },
	{ "reject limit-1", NDK_PDATA_REJECT, true, -1 },
	{ "reject limit", NDK_PDATA_REJECT, true, 0 },
	{ "reject over the limit", NDK_PDATA_REJECT, .over = true },
};

static void ndk_pdata_desc(const struct ndk_pdata_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_pdata, ndk_pdata_cases, ndk_pdata_desc);

/* The two sides of an ndk_conn_pdata_len_test try. */
struct ndk_pdata_try {
	struct ndk_cenv *e;
	NDK_CONNECTOR *c, *in;
	NDK_QP *aqp, *pqp;
	struct ndk_wait cw, aw;
};

/* Send @len bytes of @buf with @call; return what the call returned. */
static NTSTATUS ndk_pdata_send(struct ndk_pdata_try *t,
			       enum ndk_pdata_call call, const u8 *buf,
			       ULONG len)
{
	switch (call) {
	case NDK_PDATA_CONNECT:
		return ndk_cenv_connect(t->e, t->c, t->aqp, NDK_TEST_PORT, buf,
					len, &t->cw);
	case NDK_PDATA_ACCEPT:
		return t->in->Dispatch->NdkAccept(t->in, t->pqp, 4, 4,
						  (PVOID)buf, len, NULL, NULL,
						  ndk_test_request_cb, &t->aw);
	default:
		return t->in->Dispatch->NdkReject(t->in, (PVOID)buf, len);
	}
}

/*
 * Every length past @max up to NDK_PDATA_BUF, MAXULONG, and a length
 * without a buffer: @call refuses each inline with
 * STATUS_INVALID_BUFFER_SIZE, calls nothing back and counts nothing.
 */
static void ndk_pdata_over(struct kunit *test, struct ndk_pdata_try *t,
			   enum ndk_pdata_call call, const u8 *buf, ULONG max)
{
	static const char *const counter[] = {
		[NDK_PDATA_CONNECT] = "connects",
		[NDK_PDATA_ACCEPT] = "accepts",
		[NDK_PDATA_REJECT] = "rejects",
	};
	char *before = ndk_obs_read(test, t->e, "stats");
	ULONG len;

	for (len = max + 1; len <= NDK_PDATA_BUF; len++)
		KUNIT_EXPECT_EQ_MSG(test, ndk_pdata_send(t, call, buf, len),
				    STATUS_INVALID_BUFFER_SIZE, "length %u",
				    len);
	KUNIT_EXPECT_EQ(test, ndk_pdata_send(t, call, buf, U32_MAX),
			STATUS_INVALID_BUFFER_SIZE);
	KUNIT_EXPECT_EQ(test, ndk_pdata_send(t, call, NULL, 1),
			STATUS_INVALID_BUFFER_SIZE);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->cw.calls), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->aw.calls), 0);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test,
					   ndk_obs_read(test, t->e, "stats"),
					   counter[call]),
			ndk_obs_stat(test, before, counter[call]));
}

/*
 * @c's NdkGetConnectionData: @len bytes of @sent, then zeros up to the
 * RDS @rds, and nothing written past it.
 */
static void ndk_expect_pdata(struct kunit *test, NDK_CONNECTOR *c,
			     const u8 *sent, ULONG len, ULONG rds)
{
	u8 *got = kunit_kmalloc(test, NDK_PDATA_BUF, GFP_KERNEL);
	ULONG n = NDK_PDATA_BUF - 1;

	KUNIT_ASSERT_NOT_NULL(test, got);
	memset(got, 0xa5, NDK_PDATA_BUF);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetConnectionData(c, NULL, NULL,
								got, &n),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, n, rds);
	NDK_EXPECT_MEMEQ(test, got, sent, len);
	KUNIT_EXPECT_NULL(test, memchr_inv(got + len, 0, rds - len));
	KUNIT_EXPECT_EQ(test, got[rds], 0xa5);
}

/*
 * One try of ndk_conn_pdata_len_test; true if siw lost a reject's
 * private data (see ndk_reject_tries()).
 */
static bool ndk_pdata_try_once(struct kunit *test)
{
	const struct ndk_pdata_case *pc = test->param_value;
	struct ndk_pdata_try t = { .e = test->priv };
	bool iwarp = ndk_test_iwarp();
	ULONG size = sizeof(t.e->info), max, len, rds = 0;
	u8 *buf = kunit_kmalloc(test, NDK_PDATA_BUF, GFP_KERNEL);
	bool lost = false;
	NTSTATUS st;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < NDK_PDATA_BUF; i++)
		buf[i] = i + 1;
	KUNIT_ASSERT_EQ(test, t.e->a->Dispatch->NdkQueryAdapterInfo(t.e->a,
								    &t.e->info,
								    &size),
			STATUS_SUCCESS);
	max = pc->call == NDK_PDATA_CONNECT ? t.e->info.MaxCallerData :
					      t.e->info.MaxCalleeData;
	len = (pc->from_max ? max : 0) + pc->delta;
	t.c = ndk_cenv_connector(test, t.e);
	t.aqp = ndk_cenv_qp(test, t.e);
	t.pqp = ndk_cenv_qp(test, t.e);
	ndk_wait_init(&t.cw);
	ndk_wait_init(&t.aw);
	/* The environment's listener answers a connect at once. */
	t.e->reject = pc->call == NDK_PDATA_CONNECT;
	reinit_completion(&t.e->incoming_done);
	if (pc->call != NDK_PDATA_CONNECT) {
		ndk_cenv_connect_incoming(test, t.e, t.c, t.aqp, &t.cw);
		t.in = t.e->incoming;
	}
	if (pc->over) {
		ndk_pdata_over(test, &t, pc->call, buf, max);
		len = 0;
	}

	st = ndk_pdata_send(&t, pc->call, len ? buf : NULL, len);
	switch (pc->call) {
	case NDK_PDATA_CONNECT:
		KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&t.e->incoming_done,
							    NDK_TEST_TIMEOUT),
				0UL);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&t.cw));
		KUNIT_EXPECT_EQ(test, t.cw.status, STATUS_CONNECTION_REFUSED);
		t.in = t.e->incoming;
		/* IB's REQ carries MaxCallerData bytes of it. */
		ndk_expect_pdata(test, t.in, buf, len, iwarp ? len : max);
		break;
	case NDK_PDATA_ACCEPT:
		KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&t.cw));
		KUNIT_ASSERT_EQ(test, t.cw.status, STATUS_SUCCESS);
		ndk_expect_pdata(test, t.c, buf, len,
				 iwarp ? len : IB_CM_REP_PRIVATE_DATA_SIZE);
		ndk_wait_init(&t.cw);
		st = t.c->Dispatch->NdkCompleteConnect(t.c, NULL, NULL,
						       ndk_test_request_cb,
						       &t.cw);
		KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &t.cw, st),
				STATUS_SUCCESS);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&t.aw));
		KUNIT_EXPECT_EQ(test, t.aw.status, STATUS_SUCCESS);
		break;
	case NDK_PDATA_REJECT:
		KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&t.cw));
		KUNIT_EXPECT_EQ(test, t.cw.status, STATUS_CONNECTION_REFUSED);
		KUNIT_EXPECT_EQ(test,
				t.c->Dispatch->NdkGetConnectionData(t.c, NULL,
								    NULL, NULL,
								    &rds),
				STATUS_SUCCESS);
		lost = iwarp && len && !rds;
		if (!lost)
			ndk_expect_pdata(test, t.c, buf, len,
					 iwarp ? len :
					 IB_CM_REJ_PRIVATE_DATA_SIZE);
		break;
	}
	ndk_close_all(test, t.in, t.pqp);
	ndk_close_all(test, t.c, t.aqp);
	return lost;
}

/*
 * Private data of the lengths the other cases leave out: NdkConnect's 1
 * and limit - 1, NdkAccept's 1, limit - 1 and the limit, NdkReject's 0,
 * 1, limit - 1 and the limit (the limits: MaxCallerData, MaxCalleeData).
 * The call goes through and the peer's NdkGetConnectionData returns
 * exactly those bytes, padded with zeros to the RDS the transport
 * delivers (IB and RoCE: the CM message's field, 56, 196 or 148 bytes;
 * iWARP: the length sent). Past its limit each call refuses every length
 * up to 512, MAXULONG and a length without a buffer inline with
 * STATUS_INVALID_BUFFER_SIZE, calls nothing back, counts nothing in the
 * stats and leaves the connector as it was, which the same call without
 * data then shows. A reject's data that siw loses is tried again as in
 * nd_conn_reject.
 */
static void ndk_conn_pdata_len_test(struct kunit *test)
{
	ndk_reject_tries(test, ndk_pdata_try_once);
}

struct ndk_cic {
	struct ndk_wait close;
	NDK_CONNECTOR *c;
	NTSTATUS status, close_status;
	struct completion done;
};

static void ndk_cic_cb(PVOID Context, NTSTATUS Status)
{
	struct ndk_cic *t = Context;

	t->status = Status;
	t->close_status = t->c->Dispatch->NdkCloseConnector(&t->c->Header,
							    ndk_test_close_cb,
							    &t->close);
	complete(&t->done);
}

/* The consumer may close the connector inside its connect completion. */
static void ndk_conn_close_in_connect_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct sockaddr_in src = e->addr, dst = e->addr;
	struct ndk_cic t = {};

	t.c = ndk_cenv_connector(test, e);
	ndk_wait_init(&t.close);
	init_completion(&t.done);
	dst.sin_port = htons(NDK_TEST_PORT + 1);
	KUNIT_ASSERT_EQ(test, t.c->Dispatch->NdkConnect(t.c, qp,
							(struct sockaddr *)&src,
							sizeof(src),
							(struct sockaddr *)&dst,
							sizeof(dst), 1, 1,
							NULL, 0, ndk_cic_cb,
							&t),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&t.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, t.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_EQ(test, t.close_status, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&t.close));
	ndk_close_all(test, NULL, qp);
}

/* Every call of the handshake and the teardown from atomic context. */
static void ndk_conn_atomic_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in dst;
	struct ndk_pair p;
	struct ndk_wait dw;
	unsigned long flags;
	NTSTATUS status;
	ULONG len = 0;

	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), true);
	ndk_conn_traffic(test, e, p.aqp, p.pqp);

	ndk_wait_init(&dw);
	spin_lock_irqsave(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, p.c->Dispatch->NdkGetConnectionData(p.c, NULL,
								  NULL, NULL,
								  &len),
			STATUS_SUCCESS);
	status = p.in->Dispatch->NdkDisconnect(p.in, ndk_test_request_cb, &dw);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	KUNIT_EXPECT_EQ(test, dw.status, STATUS_SUCCESS);
	ndk_pair_close(test, &p);
}

/* NdkConnect of @c with @qp from @src to @dst, completing into @w. */
static NTSTATUS ndk_conn_try(NDK_CONNECTOR *c, NDK_QP *qp, void *src,
			     ULONG slen, void *dst, ULONG dlen,
			     struct ndk_wait *w)
{
	return c->Dispatch->NdkConnect(c, qp, src, slen, dst, dlen, 1, 1, NULL,
				       0, w ? ndk_test_request_cb : NULL, w);
}

/*
 * NdkGetLocalAddress and NdkGetPeerAddress: a connector with no address
 * yet says so; a missing length is refused; a buffer missing or too
 * small gets the size it needs, and nothing written to it.
 */
static void ndk_conn_address_args_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *fresh = ndk_cenv_connector(test, e);
	struct sockaddr_in dst, sin;
	struct ndk_pair p;
	int i, side;

	for (i = 0; i < 2; i++) {
		ULONG len = sizeof(sin);
		NDK_FN_GET_LOCAL_ADDRESS get = i ?
			fresh->Dispatch->NdkGetPeerAddress :
			fresh->Dispatch->NdkGetLocalAddress;

		KUNIT_EXPECT_EQ(test, get(fresh, (struct sockaddr *)&sin, &len),
				STATUS_INVALID_DEVICE_STATE);
	}
	ndk_close_all(test, fresh, NULL);
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	for (side = 0; side < 2; side++) {
		NDK_CONNECTOR *c = side ? p.in : p.c;

		for (i = 0; i < 2; i++) {
			NDK_FN_GET_LOCAL_ADDRESS get = i ?
				c->Dispatch->NdkGetPeerAddress :
				c->Dispatch->NdkGetLocalAddress;
			ULONG len = sizeof(sin) - 1;

			KUNIT_EXPECT_EQ(test, get(c, (struct sockaddr *)&sin,
						  NULL),
					STATUS_INVALID_PARAMETER);
			memset(&sin, 0xa5, sizeof(sin));
			KUNIT_EXPECT_EQ(test, get(c, (struct sockaddr *)&sin,
						  &len),
					STATUS_BUFFER_TOO_SMALL);
			KUNIT_EXPECT_EQ(test, len, sizeof(sin));
			KUNIT_EXPECT_EQ(test, sin.sin_family, 0xa5a5);
			len = 0;
			KUNIT_EXPECT_EQ(test, get(c, NULL, &len),
					STATUS_BUFFER_TOO_SMALL);
			KUNIT_EXPECT_EQ(test, len, sizeof(sin));
			KUNIT_EXPECT_EQ(test, get(c, (struct sockaddr *)&sin,
						  &len),
					STATUS_SUCCESS);
			KUNIT_EXPECT_EQ(test, sin.sin_family, AF_INET);
		}
	}
	ndk_pair_close(test, &p);
}

/*
 * A consumer may open the same interface more than once, and Microsoft's
 * RdmaSample does, once per socket: QPs of a second instance serve the
 * connector of the first on the active side and the listener's connector
 * on the passive side; the handshake's calls made with a spinlock held.
 */
static void ndk_conn_other_instance_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv, e2 = *e;
	struct sockaddr_in dst;
	struct ndk_pair p;

	e2.a = ndk_test_open(test);
	e2.pd = container_of(ndk_test_create_pd(test, e2.a), NDK_PD, Header);
	e2.cq = container_of(ndk_test_create_cq(test, e2.a, 64), NDK_CQ,
			     Header);
	p.c = ndk_cenv_connector(test, e);
	p.aqp = ndk_cenv_qp(test, &e2);
	p.pqp = ndk_cenv_qp(test, &e2);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), true);
	ndk_conn_traffic(test, &e2, p.aqp, p.pqp);
	ndk_pair_close(test, &p);
	ndk_test_close(test, &e2.cq->Header, e2.cq->Dispatch->NdkCloseCq);
	ndk_test_close(test, &e2.pd->Header, e2.pd->Dispatch->NdkClosePd);
	ndk_test_close_adapter(test, e2.a);
}

/* nd_dual_connection: two connections between the same pair of ports. */
static void nd_dual_connection(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in dst;
	struct ndk_pair p1, p2;

	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p1, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_establish(test, e, &p2, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_conn_traffic(test, e, p1.aqp, p1.pqp);
	ndk_conn_traffic(test, e, p2.pqp, p2.aqp);
	ndk_conn_traffic(test, e, p1.pqp, p1.aqp);
	ndk_pair_close(test, &p1);
	ndk_conn_traffic(test, e, p2.aqp, p2.pqp);
	ndk_pair_close(test, &p2);
}

/* The same handshake and traffic over IPv6. */
static void ndk_conn_ipv6_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LISTENER *l;
	struct sockaddr_in6 dst = e->addr6;
	struct ndk_pair p;
	struct ndk_wait w;
	NTSTATUS st;

	KUNIT_ASSERT_EQ_MSG(test, e->addr6.sin6_family, AF_INET6,
			    "no global IPv6 address on the adapter");
	l = ndk_cenv_listener(test, e);
	dst.sin6_port = htons(NDK_TEST_PORT);
	ndk_wait_init(&w);
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&dst, sizeof(dst),
				    ndk_test_request_cb, &w);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &w, st), STATUS_SUCCESS);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr6,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_conn_traffic(test, e, p.aqp, p.pqp);
	ndk_pair_close(test, &p);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
}

/* A receive outstanding at disconnect completes with the flush status. */
static void ndk_conn_disconnect_flush_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in dst;
	struct ib_recv_wr rwr = { .wr_id = 77 };
	struct ndk_pair p;
	struct ndk_wait dw;
	unsigned long end;
	NDK_RESULT r;
	ULONG n = 0;

	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	KUNIT_ASSERT_EQ(test, ib_post_recv(container_of(p.aqp, struct ndk_qp,
							ndk)->ibqp,
					   &rwr, NULL),
			0);
	ndk_wait_init(&dw);
	KUNIT_ASSERT_EQ(test, p.c->Dispatch->NdkDisconnect(p.c,
							   ndk_test_request_cb,
							   &dw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!n && time_before(jiffies, end)) {
		n = e->cq->Dispatch->NdkGetCqResults(e->cq, &r, 1);
		if (!n)
			usleep_range(5000, 10000);
	}
	KUNIT_ASSERT_EQ(test, n, 1U);
	KUNIT_EXPECT_PTR_EQ(test, r.RequestContext, (void *)77);
	KUNIT_EXPECT_EQ(test, r.Status, STATUS_CANCELLED);
	/* The peer saw the disconnect exactly once. */
	msleep(100);
	KUNIT_EXPECT_EQ(test, e->disconnects, 1);
	ndk_pair_close(test, &p);
}

/*
 * The NDK data path over a connection: receives posted before the
 * connection exists, sends after it, a silent send that completes
 * nothing, the inline checks, and NdkFlush cancelling a receive.
 */
static void ndk_conn_send_receive_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	u8 *buf = kunit_kzalloc(test, 128, GFP_KERNEL);
	struct sockaddr_in dst;
	struct ib_device *dev;
	NDK_RESULT r[4], *x;
	NDK_SGE rs[3], ss, two[2];
	struct ndk_pair p;
	unsigned long flags;
	NTSTATUS st;
	UINT32 tok;
	u64 dma;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &tok);
	dev = container_of(e->pd, struct ndk_pd, ndk)->ibpd->device;
	memcpy(buf, "ndk data path", 14);
	dma = ib_dma_map_single(dev, buf, 128, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, dma));
	ss.LogicalAddress = dma;
	ss.Length = 14;
	ss.MemoryRegionToken = tok;
	for (i = 0; i < 3; i++) {
		rs[i].LogicalAddress = dma + 32 * (i + 1);
		rs[i].Length = 32;
		rs[i].MemoryRegionToken = tok;
	}

	ndk_pair_init(test, e, &p);
	KUNIT_EXPECT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)1, &ss,
						       1, 0),
			STATUS_CONNECTION_INVALID);
	for (i = 0; i < 3; i++) {
		/* Posting is callable from atomic context. */
		spin_lock_irqsave(&ndk_test_lock, flags);
		st = p.pqp->Dispatch->NdkReceive(p.pqp,
						 (void *)(uintptr_t)(10 + i),
						 &rs[i], 1);
		spin_unlock_irqrestore(&ndk_test_lock, flags);
		KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	}
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);

	two[0] = ss;
	two[1] = ss;
	KUNIT_EXPECT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)1, two,
						       2, 0),
			STATUS_INVALID_PARAMETER);
	/*
	 * The QP takes 32 inline bytes, but inline data is read by the CPU
	 * and a privileged-token SGE holds a device address: refused.
	 */
	KUNIT_EXPECT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)1, &ss,
						       1, NDK_OP_FLAG_INLINE),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)1, &ss,
						       1, 0x100000),
			STATUS_INVALID_PARAMETER);

	spin_lock_irqsave(&ndk_test_lock, flags);
	st = p.aqp->Dispatch->NdkSend(p.aqp, (void *)20, &ss, 1, 0);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, p.aqp->Dispatch->NdkSend(p.aqp, (void *)21, &ss,
						       1,
						       NDK_OP_FLAG_SILENT_SUCCESS),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 3), 3U);
	msleep(100);
	/* The silent send completes nothing. */
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, &r[3], 1),
			0U);
	KUNIT_EXPECT_NULL(test, ndk_find_result(r, 3, 21));
	x = ndk_find_result(r, 3, 20);
	KUNIT_ASSERT_NOT_NULL(test, x);
	KUNIT_EXPECT_EQ(test, x->Status, STATUS_SUCCESS);
	KUNIT_EXPECT_PTR_EQ(test, x->QPContext, (void *)e);
	for (i = 0; i < 2; i++) {
		x = ndk_find_result(r, 3, 10 + i);
		KUNIT_ASSERT_NOT_NULL(test, x);
		KUNIT_EXPECT_EQ(test, x->Status, STATUS_SUCCESS);
		KUNIT_EXPECT_EQ(test, x->BytesTransferred, 14U);
	}
	ib_dma_sync_single_for_cpu(dev, dma, 128, DMA_BIDIRECTIONAL);
	NDK_EXPECT_MEMEQ(test, buf + 32, "ndk data path", 14);
	NDK_EXPECT_MEMEQ(test, buf + 64, "ndk data path", 14);

	/* The third receive is still outstanding: a flush cancels it. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	p.pqp->Dispatch->NdkFlush(p.pqp);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 1), 1U);
	KUNIT_EXPECT_PTR_EQ(test, r[0].RequestContext, (void *)12);
	KUNIT_EXPECT_EQ(test, r[0].Status, STATUS_CANCELLED);
	ib_dma_unmap_single(dev, dma, 128, DMA_BIDIRECTIONAL);
	ndk_pair_close(test, &p);
}

struct ndk_status_case {
	const char *name;
	const char *src;	/* source IPv4, NULL for the adapter's */
	const char *dst;	/* destination IPv4, NULL for the adapter's */
	u16 src_port;
	NTSTATUS status;
};

static const struct ndk_status_case ndk_status_cases[] = {
	{ "source not on the adapter", "127.0.0.1", NULL, 0,
	  STATUS_INVALID_ADDRESS },
	{ "source port in use", NULL, NULL, NDK_TEST_PORT,
	  STATUS_SHARING_VIOLATION },
	{ "no route to the network", NULL, "192.0.2.1", 0,
	  STATUS_NETWORK_UNREACHABLE },
	{ "nobody listens", NULL, NULL, 0, STATUS_CONNECTION_REFUSED },
	/* nd_invalid_ip: on the subnet, but no such host answers. */
	{ "nd_invalid_ip", NULL, "10.0.2.99", 0, STATUS_HOST_UNREACHABLE },
};

static void ndk_status_case_desc(const struct ndk_status_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_conn_status, ndk_status_cases, ndk_status_case_desc);

static const struct ndk_cm_status_case {
	const char *name;
	enum rdma_cm_event_type event;
	int err;
	NTSTATUS status;
} ndk_cm_status_cases[] = {
	{ "rejected", RDMA_CM_EVENT_REJECTED, -ECONNREFUSED,
	  STATUS_CONNECTION_REFUSED },
	{ "unreachable, timed out", RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT,
	  STATUS_IO_TIMEOUT },
	{ "unreachable", RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET,
	  STATUS_HOST_UNREACHABLE },
	{ "connect error, timed out", RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT,
	  STATUS_IO_TIMEOUT },
	{ "connect error", RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET,
	  STATUS_HOST_UNREACHABLE },
	{ "address, no network", RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH,
	  STATUS_NETWORK_UNREACHABLE },
	{ "address, no device", RDMA_CM_EVENT_ADDR_ERROR, -ENODEV,
	  STATUS_NETWORK_UNREACHABLE },
	{ "address, no neighbour", RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH,
	  STATUS_HOST_UNREACHABLE },
	{ "route, no network", RDMA_CM_EVENT_ROUTE_ERROR, -ENETUNREACH,
	  STATUS_NETWORK_UNREACHABLE },
	{ "route, timed out", RDMA_CM_EVENT_ROUTE_ERROR, -ETIMEDOUT,
	  STATUS_HOST_UNREACHABLE },
	{ "device removed", RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
	  STATUS_CONNECTION_ABORTED },
};

static void ndk_cm_status_desc(const struct ndk_cm_status_case *c,
			       char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_cm_status, ndk_cm_status_cases, ndk_cm_status_desc);

/*
 * The status an rdma_cm event that ends a connect gives NdkConnect's
 * completion, on every path, including the ones a soft device's run does
 * not take (a CM that times out, an iWARP peer's broken MPA reply): only
 * a CM that never answered is a timeout, and an address or route that
 * found no neighbour is the host's, not the network's.
 */
static void ndk_conn_cm_status_test(struct kunit *test)
{
	const struct ndk_cm_status_case *sc = test->param_value;
	struct rdma_cm_event ev = { .event = sc->event, .status = sc->err };

	KUNIT_EXPECT_EQ(test, ndk_cm_status(&ev), sc->status);
}

/* NdkConnect's statuses, each from the real situation. */
static void ndk_conn_status_test(struct kunit *test)
{
	const struct ndk_status_case *sc = test->param_value;
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in src = e->addr, dst = e->addr;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_wait w;
	NTSTATUS status;

	if (sc->src)
		src.sin_addr.s_addr = in_aton(sc->src);
	if (sc->dst)
		dst.sin_addr.s_addr = in_aton(sc->dst);
	src.sin_port = htons(sc->src_port);
	dst.sin_port = htons(NDK_TEST_PORT + 2);
	ndk_wait_init(&w);
	status = ndk_connect_to(c, qp, (struct sockaddr *)&src,
				(struct sockaddr *)&dst, sizeof(src), false,
				&w);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, status), sc->status);
	ndk_close_all(test, c, qp);
}

/*
 * A connector refuses, inline and without a callback, what NDKPI does
 * not allow: a missing completion, a local or remote address missing,
 * too short or of another family than the other, no QP or another
 * object in its place, or a QP another connector has; the handshake's
 * later steps before a request went out; NdkAccept without a request;
 * NdkGetConnectionData without a length, with a length but no buffer,
 * or before a connection has data; NdkDisconnect without a completion.
 * The connector still connects afterwards.
 */
static void ndk_conn_bad_args_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in6 six = e->addr6;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	const NDK_CONNECTOR_DISPATCH *d = c->Dispatch;
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct sockaddr_in dst, src = e->addr;
	struct ndk_wait w;
	struct ndk_pair p;
	ULONG len = 4;
	u8 buf[4];

	ndk_wait_init(&w);
	six.sin6_family = AF_INET6;
	ndk_listen_addr(e, &dst);
	src.sin_port = 0;
	KUNIT_EXPECT_EQ(test, ndk_connect_to(c, qp, (struct sockaddr *)&e->addr,
					     (struct sockaddr *)&e->addr, 4,
					     false, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, qp, &src, sizeof(src), &dst,
					   sizeof(dst), NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, qp, &src, 2, &dst, sizeof(dst),
					   &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, qp, &src, sizeof(src), &dst,
					   sizeof(dst) - 1, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, qp, &src, sizeof(src), &six,
					   sizeof(six), &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, NULL, &src, sizeof(src), &dst,
					   sizeof(dst), &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, (NDK_QP *)e->cq, &src,
					   sizeof(src), &dst, sizeof(dst), &w),
			STATUS_INVALID_PARAMETER);
	/* Nothing was sent: the handshake steps are refused too. */
	KUNIT_EXPECT_EQ(test, d->NdkCompleteConnect(c, NULL, NULL,
						    ndk_test_request_cb, &w),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, d->NdkCompleteConnect(c, NULL, NULL, NULL, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkCompleteConnectEx(c, NULL, NULL, NULL, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkDisconnect(c, ndk_test_request_cb, &w),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, d->NdkDisconnect(c, NULL, NULL),
			STATUS_INVALID_PARAMETER);
	/* No request to reject on a connector that made none. */
	KUNIT_EXPECT_EQ(test, d->NdkReject(c, NULL, 0),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, d->NdkAccept(c, qp, 1, 1, NULL, 0, NULL, NULL,
					   NULL, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkAccept(c, qp, 1, 1, NULL, 0, NULL, NULL,
					   ndk_test_request_cb, &w),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, d->NdkGetConnectionData(c, NULL, NULL, buf, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkGetConnectionData(c, NULL, NULL, NULL, &len),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, d->NdkGetConnectionData(c, NULL, NULL, buf, &len),
			STATUS_CONNECTION_INVALID);
	/* A connector needs an adapter and a callback. */
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkCreateConnector(NULL,
								 ndk_test_create_cb,
								 &w, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkCreateConnector(e->a, NULL,
								 &w, NULL),
			STATUS_INVALID_PARAMETER);

	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, p.aqp, &src, sizeof(src), &dst,
					   sizeof(dst), &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(c, p.pqp, &src, sizeof(src), &dst,
					   sizeof(dst), &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	ndk_pair_close(test, &p);

	/* Nothing stuck: the same connector and QP connect. */
	p.c = c;
	p.aqp = qp;
	p.pqp = ndk_cenv_qp(test, e);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_pair_close(test, &p);
}

/*
 * NdkGetConnectionData on the active side while its NdkConnect is in
 * flight (the listener holds the request, unanswered): the connection has
 * no data yet, so STATUS_CONNECTION_INVALID and nothing written; the
 * passive side has the request's already.
 */
static void ndk_conn_data_in_flight_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_wait *cw = kunit_kzalloc(test, sizeof(*cw), GFP_KERNEL);
	ULONG ird = 99, ord = 99, len = 4;
	struct sockaddr_in dst;
	struct ndk_pair p;
	u8 buf[4] = { 0xa5 };

	KUNIT_ASSERT_NOT_NULL(test, cw);
	ndk_listen_addr(e, &dst);
	ndk_pair_init(test, e, &p);
	ndk_pair_request(test, e, &p, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, cw);
	KUNIT_ASSERT_EQ(test, READ_ONCE(container_of(p.c, struct ndk_connector,
						     ndk)->state),
			NDK_CONN_CONNECTING);
	KUNIT_EXPECT_EQ(test, p.c->Dispatch->NdkGetConnectionData(p.c, &ird,
								  &ord, buf,
								  &len),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, ird, 99U);
	KUNIT_EXPECT_EQ(test, ord, 99U);
	KUNIT_EXPECT_EQ(test, len, 4U);
	KUNIT_EXPECT_EQ(test, buf[0], 0xa5);
	len = 0;
	KUNIT_EXPECT_EQ(test, p.in->Dispatch->NdkGetConnectionData(p.in, NULL,
								   NULL, NULL,
								   &len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_GT(test, len, 0U);
	ndk_pair_close(test, &p);
	KUNIT_EXPECT_EQ(test, atomic_read(&cw->calls), 1);
}

/*
 * NdkReject answers only a request a listener handed out. On the active
 * side once its NdkConnect completed (NDKPI would let it reject there; see
 * deviations.rst, "NdkReject only answers incoming requests") and on
 * either side of the established connection, with private data or
 * without, it returns STATUS_CONNECTION_INVALID and the connection stays
 * up.
 */
static void ndk_conn_reject_answered_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_wait *w = kunit_kcalloc(test, 3, sizeof(*w), GFP_KERNEL);
	struct ndk_wait *cw = &w[0], *aw = &w[1], *ccw = &w[2];
	struct sockaddr_in dst;
	struct ndk_pair p;
	NDK_CONNECTOR *c;
	NTSTATUS st;
	int side;

	KUNIT_ASSERT_NOT_NULL(test, w);
	ndk_listen_addr(e, &dst);
	ndk_pair_init(test, e, &p);
	ndk_pair_request(test, e, &p, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, cw);
	ndk_wait_init(aw);
	KUNIT_ASSERT_EQ(test, p.in->Dispatch->NdkAccept(p.in, p.pqp, 4, 4, NULL,
							0, NULL, NULL,
							ndk_test_request_cb,
							aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(cw));
	KUNIT_ASSERT_EQ(test, cw->status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, p.c->Dispatch->NdkReject(p.c, "no", 3),
			STATUS_CONNECTION_INVALID);
	ndk_wait_init(ccw);
	st = p.c->Dispatch->NdkCompleteConnect(p.c, NULL, NULL,
					       ndk_test_request_cb, ccw);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, ccw, st), STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(aw));
	KUNIT_ASSERT_EQ(test, aw->status, STATUS_SUCCESS);
	for (side = 0; side < 2; side++) {
		c = side ? p.in : p.c;
		KUNIT_EXPECT_EQ(test, c->Dispatch->NdkReject(c, NULL, 0),
				STATUS_CONNECTION_INVALID);
		KUNIT_EXPECT_EQ(test, c->Dispatch->NdkReject(c, "no", 3),
				STATUS_CONNECTION_INVALID);
	}
	ndk_conn_traffic(test, e, p.aqp, p.pqp);
	ndk_conn_traffic(test, e, p.pqp, p.aqp);
	ndk_pair_close(test, &p);
}

/*
 * NdkReject whose copy of the private data fails (the ndk_fault
 * injection) returns STATUS_INSUFFICIENT_RESOURCES and leaves the request
 * unanswered: a second NdkReject refuses it.
 */
static void ndk_conn_reject_nomem_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_wait *cw = kunit_kzalloc(test, sizeof(*cw), GFP_KERNEL);
	struct sockaddr_in dst;
	struct ndk_pair p;
	bool fired;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, cw);
	ndk_listen_addr(e, &dst);
	ndk_pair_init(test, e, &p);
	ndk_pair_request(test, e, &p, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, cw);
	ndk_fault_arm(1);
	st = p.in->Dispatch->NdkReject(p.in, "no thanks", 10);
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_TRUE(test, fired);
	KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
	KUNIT_EXPECT_EQ(test, p.in->Dispatch->NdkReject(p.in, "no thanks", 10),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(cw));
	KUNIT_EXPECT_EQ(test, cw->status, STATUS_CONNECTION_REFUSED);
	ndk_pair_close(test, &p);
}

/*
 * NdkConnect and NdkAccept refuse a QP whose close is pending because the
 * connector of an earlier, refused connect still holds it: inline
 * STATUS_INVALID_PARAMETER, no callback, and the request can still be
 * answered. The QP's close completes once that connector is closed.
 */
static void ndk_conn_closing_qp_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_CONNECTOR *idle = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct ndk_wait *w = kunit_kcalloc(test, 4, sizeof(*w), GFP_KERNEL);
	struct ndk_wait *cw = &w[0], *qw = &w[1], *pcw = &w[2], *xw = &w[3];
	struct sockaddr_in dst;
	struct ndk_pair p;

	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect_done(test, e, c, qp,
						    NDK_TEST_PORT + 1, cw),
			STATUS_CONNECTION_REFUSED);
	ndk_wait_init(qw);
	KUNIT_ASSERT_EQ(test, qp->Dispatch->NdkCloseQp(&qp->Header,
						       ndk_test_close_cb, qw),
			STATUS_PENDING);
	ndk_listen_addr(e, &dst);
	ndk_pair_init(test, e, &p);
	ndk_pair_request(test, e, &p, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, pcw);
	ndk_wait_init(xw);
	KUNIT_EXPECT_EQ(test, ndk_conn_try(idle, qp, &e->addr, sizeof(e->addr),
					   &dst, sizeof(dst), xw),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, p.in->Dispatch->NdkAccept(p.in, qp, 4, 4, NULL, 0,
							NULL, NULL,
							ndk_test_request_cb,
							xw),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&xw->calls), 0);
	KUNIT_EXPECT_EQ(test, p.in->Dispatch->NdkReject(p.in, NULL, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(pcw));
	KUNIT_EXPECT_EQ(test, pcw->status, STATUS_CONNECTION_REFUSED);
	ndk_pair_close(test, &p);
	ndk_close_all(test, idle, NULL);
	KUNIT_EXPECT_FALSE(test, completion_done(&qw->done));
	ndk_close_all(test, c, NULL);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(qw));
}

/*
 * nd_conn_close: the active side closes its connector while the request
 * waits for an answer; the passive side's accept reports the abort.
 */
static void nd_conn_close(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *aqp = ndk_cenv_qp(test, e), *pqp = ndk_cenv_qp(test, e);
	struct ndk_wait cw, aw;
	NTSTATUS status;

	ndk_cenv_connect_incoming(test, e, c, aqp, &cw);
	ndk_close_all(test, c, NULL);
	/* The connect completed (aborted) before the close did. */
	KUNIT_EXPECT_TRUE(test, completion_done(&cw.done));
	msleep(200);
	ndk_wait_init(&aw);
	status = e->incoming->Dispatch->NdkAccept(e->incoming, pqp, 1, 1, NULL,
						  0, NULL, NULL,
						  ndk_test_request_cb, &aw);
	if (status == STATUS_PENDING) {
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&aw));
		status = aw.status;
	}
	KUNIT_EXPECT_EQ(test, status, STATUS_CONNECTION_ABORTED);
	ndk_close_all(test, e->incoming, pqp);
	ndk_close_all(test, NULL, aqp);
}

/* A kernel TCP socket listening on @addr:@port that never accepts. */
static struct socket *ndk_tcp_listener(struct kunit *test,
				       const struct sockaddr_in *addr, u16 port)
{
	struct sockaddr_in sin = *addr;
	struct socket *sock;

	KUNIT_ASSERT_EQ(test, sock_create_kern(&init_net, AF_INET, SOCK_STREAM,
					       IPPROTO_TCP, &sock),
			0);
	sin.sin_port = htons(port);
	if (kernel_bind(sock, NDK_KERNEL_SOCKADDR(&sin), sizeof(sin)) ||
	    kernel_listen(sock, 4)) {
		sock_release(sock);
		KUNIT_ASSERT_TRUE_MSG(test, false, "no TCP listener on port %u", port);
	}
	return sock;
}

/*
 * Close a listener from ndk_tcp_listener(), after the connections it
 * never accepted: closing it with them still queued would take their
 * callback locks under its own, which lockdep reports against siw's
 * use of the same locks.
 */
static void ndk_tcp_listener_release(struct socket *sock)
{
	struct socket *child;

	while (!kernel_accept(sock, &child, O_NONBLOCK))
		sock_release(child);
	sock_release(sock);
}

/*
 * The ports ndk_tcp_time_wait() takes, below the local port range that
 * rdma_cm (and TCP) pick ports from: one left in TIME_WAIT by a socket
 * that refused reuse fails any connect over siw bound to it, so it must
 * not be one that a later case's connect may draw. Several, since a
 * run within the last minute may have left the first ones in TIME_WAIT.
 */
#define NDK_TW_PORT_FIRST	(NDK_TEST_PORT + 100)
#define NDK_TW_PORTS		64

/*
 * A TCP connection of the host's own on @addr that this side closes
 * first, so that its port stays in TIME_WAIT, made by a socket that
 * allows its port's reuse (SO_REUSEADDR) if @reuse; its port.
 */
static u16 ndk_tcp_time_wait(struct kunit *test,
			     const struct sockaddr_in *addr, u16 port,
			     bool reuse)
{
	struct sockaddr_in sin = *addr, me = *addr;
	struct socket *l, *c, *child;
	int ret, low, high, got, i;

	inet_get_local_port_range(&init_net, &low, &high);
	KUNIT_ASSERT_LT(test, NDK_TW_PORT_FIRST + NDK_TW_PORTS, low);
	l = ndk_tcp_listener(test, addr, port);
	sin.sin_port = htons(port);
	for (i = 0; i < NDK_TW_PORTS; i++) {
		ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM,
				       IPPROTO_TCP, &c);
		if (ret) {
			c = NULL;
			break;
		}
		if (reuse)
			sock_set_reuseaddr(c->sk);
		me.sin_port = htons(NDK_TW_PORT_FIRST + i);
		ret = kernel_bind(c, NDK_KERNEL_SOCKADDR(&me), sizeof(me));
		if (!ret)
			ret = kernel_connect(c, NDK_KERNEL_SOCKADDR(&sin),
					     sizeof(sin), 0);
		/* Taken, or in TIME_WAIT from an earlier run: the next. */
		if (ret != -EADDRINUSE && ret != -EADDRNOTAVAIL)
			break;
		sock_release(c);
		c = NULL;
	}
	if (!ret)
		ret = kernel_accept(l, &child, 0);
	if (ret) {
		if (c)
			sock_release(c);
		ndk_tcp_listener_release(l);
		KUNIT_ASSERT_EQ(test, ret, 0);
	}
	KUNIT_EXPECT_GE(test, kernel_getsockname(c, (struct sockaddr *)&me), 0);
	got = ntohs(me.sin_port);
	KUNIT_EXPECT_LT_MSG(test, got, low,
			    "port %d in the local port range %d-%d", got, low,
			    high);
	/* Ours closes first; once the other's FIN is in, TIME_WAIT. */
	sock_release(c);
	msleep(50);
	sock_release(child);
	msleep(50);
	ndk_tcp_listener_release(l);
	return got;
}

/*
 * A local port that a TCP connection of the host left in TIME_WAIT: on
 * IB and RoCE no TCP port is involved, and the connect goes out (to no
 * listener: STATUS_CONNECTION_REFUSED). siw binds its TCP socket to
 * the port, asking for reuse, which a port in TIME_WAIT refuses unless
 * its old socket allowed reuse too: the connect then fails with the
 * status of an address in use (deviations.rst). rdma_cm does not know
 * the host's TCP ports, so it may pick such a port for a connect from
 * port 0 as well.
 */
static void ndk_conn_time_wait_port_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in src = e->addr, dst = e->addr;
	NDK_CONNECTOR *c;
	struct ndk_wait w;
	NTSTATUS status;
	NDK_QP *qp;
	int reuse;

	dst.sin_port = htons(NDK_TEST_PORT + 2);
	for (reuse = 0; reuse < 2; reuse++) {
		src.sin_port = htons(ndk_tcp_time_wait(test, &e->addr,
						       NDK_TEST_PORT + 9 + reuse,
						       reuse));
		c = ndk_cenv_connector(test, e);
		qp = ndk_cenv_qp(test, e);
		ndk_wait_init(&w);
		status = ndk_connect_to(c, qp, (struct sockaddr *)&src,
					(struct sockaddr *)&dst, sizeof(src),
					false, &w);
		status = ndk_test_outcome(test, &w, status);
		kunit_info(test, "port %u in TIME_WAIT%s: 0x%08x\n",
			   ntohs(src.sin_port), reuse ? ", reusable" : "",
			   status);
		if (ndk_test_iwarp() && !reuse)
			KUNIT_EXPECT_EQ(test, status,
					STATUS_SHARING_VIOLATION);
		else
			KUNIT_EXPECT_EQ(test, status,
					STATUS_CONNECTION_REFUSED);
		ndk_close_all(test, c, qp);
	}
}

/*
 * The active side of iWARP speaking for itself: a TCP connection to
 * @dst carrying an MPA request (revision 1, no CRC, no markers, no
 * private data), then silence.
 */
static struct socket *ndk_mpa_mute_connect(struct kunit *test,
					   const struct sockaddr_in *dst)
{
	struct ndk_mpa_req req = { .bits = cpu_to_be16(1), .pd_len = 0 };
	struct socket *sock;
	int ret;

	memcpy(req.key, "MPA ID Req Frame", sizeof(req.key));
	ret = ndk_mpa_connect(dst, &req, sizeof(req), &sock);
	KUNIT_ASSERT_EQ_MSG(test, ret, 0, "MPA request not sent");
	return sock;
}

/*
 * An MPA v2 request that asks for RTR, a zero-length RDMA write as the
 * initiator's first frame, and then silence. The accept cannot complete
 * before that frame, nor can iw_cm destroy the id: the connector's close
 * must not wait for it. With @expire the accept's bound ends it first
 * (STATUS_IO_TIMEOUT), else the close does (STATUS_CANCELLED); either
 * way once. The QP, which iw_cm holds until then, closes once the frame
 * has come.
 */
static void ndk_rtr_silent(struct kunit *test, struct ndk_cenv *e,
			   bool expire)
{
	struct {
		struct ndk_mpa_req req;
		__be16 ird;
		__be16 ord;
	} __packed f = {
		.req.bits = cpu_to_be16(0x1002),	/* enhanced, revision 2 */
		.req.pd_len = cpu_to_be16(4),
		.ird = cpu_to_be16(0x8000 | 1),		/* peer to peer */
		.ord = cpu_to_be16(0x8000 | 1),		/* RTR: an RDMA write */
	};
	struct ndk_wait aw, cw;
	struct sockaddr_in dst;
	struct socket *sock;
	bool closed = true;
	NDK_QP *qp;
	NTSTATUS st;

	if (!ndk_test_iwarp())
		kunit_skip(test, "MPA is iWARP's");
	/*
	 * siw takes a socket lock for writing in softirq on the first frame
	 * of RTR, which lockdep reports (deviations.rst): the case runs
	 * without lockdep, `make check NDK_SANITIZER=none`.
	 */
	if (IS_ENABLED(CONFIG_PROVE_LOCKING))
		kunit_skip(test, "siw's RTR path trips lockdep");
	qp = ndk_cenv_qp(test, e);
	memcpy(f.req.key, "MPA ID Req Frame", sizeof(f.req.key));
	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	KUNIT_ASSERT_EQ(test, ndk_mpa_connect(&dst, &f, sizeof(f), &sock), 0);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	ndk_wait_init(&aw);
	KUNIT_EXPECT_EQ(test,
			e->incoming->Dispatch->NdkAccept(e->incoming, qp, 1, 1,
							 NULL, 0, NULL, NULL,
							 ndk_test_request_cb,
							 &aw),
			STATUS_PENDING);
	if (expire)
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
	ndk_wait_init(&cw);
	st = e->incoming->Dispatch->NdkCloseConnector(&e->incoming->Header,
						       ndk_test_close_cb, &cw);
	if (st == STATUS_PENDING)
		closed = wait_for_completion_timeout(&cw.done,
						     NDK_TEST_TIMEOUT);
	else
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE_MSG(test, closed,
			      "the close waits for the peer's first frame");
	KUNIT_EXPECT_EQ(test, atomic_read(&aw.calls), 1);
	KUNIT_EXPECT_EQ(test, aw.status,
			expire ? STATUS_IO_TIMEOUT : STATUS_CANCELLED);
	KUNIT_EXPECT_EQ(test, ndk_mpa_send_rtr(sock), 20);
	if (!closed)
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&cw));
	e->incoming = NULL;
	ndk_close_all(test, NULL, qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&aw.calls), 1);
	sock_release(sock);
}

static void ndk_conn_rtr_silent_test(struct kunit *test)
{
	ndk_rtr_silent(test, test->priv, false);
}

/* An active side speaking ib_cm directly, so it can stay silent. */
struct ndk_mute_peer {
	struct rdma_cm_id *route;	/* resolves the path only */
	struct completion resolved;
	int event;
	struct ib_cm_id *cm;
};

static int ndk_mute_route_handler(struct rdma_cm_id *id,
				  struct rdma_cm_event *ev)
{
	struct ndk_mute_peer *m = id->context;

	m->event = ev->event;
	complete(&m->resolved);
	return 0;
}

static int ndk_mute_cm_handler(struct ib_cm_id *cm_id,
			       const struct ib_cm_event *ev)
{
	return 0;
}

/* rdma_cm's private-data header, which its listeners match requests by. */
struct ndk_cma_hdr {
	u8 version;
	u8 ip_version;
	__be16 port;
	__be32 src_pad[3];
	__be32 src;
	__be32 dst_pad[3];
	__be32 dst;
};

/*
 * Send a REQ to @dst and then never answer: no MRA, no RTU. When @quick,
 * the REQ asks for an answer to the REP within 4 ms and one retry, so the
 * passive side's CM gives up at once; otherwise it asks for rdma_cm's own
 * 4.3 s and 15 retries, over a minute.
 */
static void ndk_mute_connect(struct kunit *test, struct ndk_mute_peer *m,
			     const struct sockaddr_in *src,
			     const struct sockaddr_in *dst, bool quick)
{
	struct ndk_cma_hdr hdr = {};
	struct ib_cm_req_param req = {};
	struct sockaddr_in *bound;

	init_completion(&m->resolved);
	m->route = rdma_create_id(&init_net, ndk_mute_route_handler, m,
				  RDMA_PS_TCP, IB_QPT_RC);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m->route));
	KUNIT_ASSERT_EQ(test, rdma_resolve_addr(m->route,
						(struct sockaddr *)src,
						(struct sockaddr *)dst, 2000),
			0);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&m->resolved,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_EQ(test, m->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	reinit_completion(&m->resolved);
	KUNIT_ASSERT_EQ(test, rdma_resolve_route(m->route, 2000), 0);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&m->resolved,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_EQ(test, m->event, RDMA_CM_EVENT_ROUTE_RESOLVED);

	m->cm = ib_create_cm_id(m->route->device, ndk_mute_cm_handler, m);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m->cm));
	bound = (struct sockaddr_in *)&m->route->route.addr.src_addr;
	hdr.ip_version = 4 << 4;
	hdr.port = bound->sin_port;
	hdr.src = bound->sin_addr.s_addr;
	hdr.dst = dst->sin_addr.s_addr;
	req.primary_path = &m->route->route.path_rec[0];
	req.ppath_sgid_attr = m->route->route.addr.dev_addr.sgid_attr;
	req.service_id = rdma_get_service_id(m->route,
					     (struct sockaddr *)dst);
	req.qp_num = 0x77;
	req.qp_type = IB_QPT_RC;
	req.starting_psn = 1;
	req.private_data = &hdr;
	req.private_data_len = sizeof(hdr);
	req.responder_resources = 1;
	req.initiator_depth = 1;
	req.remote_cm_response_timeout = 20;
	req.local_cm_response_timeout = quick ? 10 : 20;
	req.retry_count = 7;
	req.rnr_retry_count = 7;
	req.max_cm_retries = quick ? 1 : 15;
	KUNIT_ASSERT_EQ(test, ib_send_cm_req(m->cm, &req), 0);
}

static void ndk_mute_free(struct ndk_mute_peer *m)
{
	if (!IS_ERR_OR_NULL(m->cm))
		ib_destroy_cm_id(m->cm);
	if (!IS_ERR_OR_NULL(m->route))
		rdma_destroy_id(m->route);
}

/*
 * The peer never completes the handshake: no RTU, no MRA. The accept
 * reports STATUS_IO_TIMEOUT once the REP has run out of retries.
 */
static void ndk_conn_accept_timeout_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mute_peer m = {};
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct socket *tcp = NULL;
	struct sockaddr_in dst;
	struct ndk_wait aw;
	unsigned long got;

	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	if (ndk_test_iwarp())
		tcp = ndk_mpa_mute_connect(test, &dst);
	else
		ndk_mute_connect(test, &m, &e->addr, &dst, true);
	got = wait_for_completion_timeout(&e->incoming_done, NDK_TEST_TIMEOUT);
	KUNIT_EXPECT_NE(test, got, 0UL);
	ndk_wait_init(&aw);
	if (got) {
		KUNIT_EXPECT_EQ(test,
				e->incoming->Dispatch->NdkAccept(e->incoming,
								 qp, 1, 1,
								 NULL, 0, NULL,
								 NULL,
								 ndk_test_request_cb,
								 &aw),
				STATUS_PENDING);
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
		/*
		 * iWARP has no RTU to wait for: the passive side is
		 * connected once its MPA reply is out.
		 */
		KUNIT_EXPECT_EQ(test, aw.status, ndk_test_iwarp() ?
				STATUS_SUCCESS : STATUS_IO_TIMEOUT);
		ndk_close_all(test, e->incoming, NULL);
	}
	ndk_close_all(test, NULL, qp);
	if (tcp)
		sock_release(tcp);
	else
		ndk_mute_free(&m);
}

/* Whether the CM id has taken a reject: it gives no RTR state. */
static bool ndk_cm_took_rej(struct rdma_cm_id *id)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	int mask;

	return rdma_init_qp_attr(id, &attr, &mask) == -EINVAL;
}

/*
 * Take @id's handler lock, so that rdma_cm holds back the reject's event,
 * then give up the peer's @peer (its CM sends the reject) and wait until
 * @id's CM has taken the reject. The caller unlocks the handler.
 */
static void ndk_cm_reject_held(struct kunit *test, struct rdma_cm_id *id,
			       struct ib_cm_id *peer)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	rdma_lock_handler(id);
	ib_destroy_cm_id(peer);
	while (!ndk_cm_took_rej(id) && time_before(jiffies, end))
		usleep_range(1000, 2000);
	KUNIT_EXPECT_TRUE(test, ndk_cm_took_rej(id));
}

/*
 * The peer gives up its connect (its CM sends a reject) just before the
 * accept moves the QP: the CM id, which took the reject, refuses the
 * QP's attributes before rdma_cm has told ndk. The accept ends with
 * STATUS_CONNECTION_ABORTED, as when rdma_accept() itself finds the
 * reject, not with the refusal's -EINVAL as an invalid parameter. The
 * case holds the id's handler lock so that the reject's event waits, and
 * accepts from atomic context, so that the accept runs on ndk_wq. IB and
 * RoCE only: iWARP has no CM id state to refuse.
 */
static void ndk_conn_accept_rejected_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mute_peer m = {};
	struct ndk_connector *in;
	struct sockaddr_in dst;
	struct ndk_wait aw;
	unsigned long flags;
	NTSTATUS st;
	NDK_QP *qp;

	if (ndk_test_iwarp())
		kunit_skip(test, "the race is IB CM's");
	qp = ndk_cenv_qp(test, e);
	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	ndk_mute_connect(test, &m, &e->addr, &dst, false);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	in = container_of(e->incoming, struct ndk_connector, ndk);

	ndk_cm_reject_held(test, in->id, m.cm);
	m.cm = NULL;
	ndk_wait_init(&aw);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->incoming->Dispatch->NdkAccept(e->incoming, qp, 1, 1, NULL, 0,
					      NULL, NULL, ndk_test_request_cb,
					      &aw);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	if (st == STATUS_PENDING) {
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
		KUNIT_EXPECT_EQ(test, aw.status, STATUS_CONNECTION_ABORTED);
	}
	rdma_unlock_handler(in->id);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&aw.calls), 1);
	ndk_close_all(test, e->incoming, qp);
	ndk_mute_free(&m);
}

/* A passive side speaking ib_cm directly: it replies, then may give up. */
struct ndk_rep_peer {
	struct ib_cm_id *listen;
	struct ib_cm_id *conn;		/* the request's id, once replied */
	struct completion replied;
	int err;
};

static int ndk_rep_cm_handler(struct ib_cm_id *cm_id,
			      const struct ib_cm_event *ev)
{
	struct ndk_rep_peer *r = cm_id->context;
	struct ib_cm_rep_param rep = {
		.qp_num = 0x78,
		.starting_psn = 1,
		.responder_resources = 1,
		.initiator_depth = 1,
		.rnr_retry_count = 7,
	};

	if (ev->event != IB_CM_REQ_RECEIVED || r->conn)
		return 0;
	r->err = ib_send_cm_rep(cm_id, &rep);
	r->conn = cm_id;
	complete(&r->replied);
	return 0;
}

/*
 * The peer replies and then gives up (its CM sends a reject) just before
 * the consumer confirms: the CM id, which took the reject, refuses the
 * QP's attributes before rdma_cm has told ndk. NdkCompleteConnect ends
 * with STATUS_CONNECTION_ABORTED, as when rdma_accept() itself finds the
 * reject, and the QP is not connected. The case holds the id's handler
 * lock so that the reject's event waits, and confirms from atomic
 * context, so that the confirmation runs on ndk_wq. IB and RoCE only.
 */
static void ndk_conn_complete_rejected_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_rep_peer r = {};
	struct sockaddr_in dst = e->addr;
	struct ndk_connector *conn;
	struct ndk_wait cw, ccw;
	struct ndk_qp *nqp;
	unsigned long flags;
	struct ib_device *ibdev;
	NDK_CONNECTOR *c;
	NTSTATUS st;
	NDK_QP *qp;

	if (ndk_test_iwarp())
		kunit_skip(test, "the race is IB CM's");
	qp = ndk_cenv_qp(test, e);
	nqp = container_of(qp, struct ndk_qp, ndk);
	c = ndk_cenv_connector(test, e);
	conn = container_of(c, struct ndk_connector, ndk);
	ibdev = conn->obj.adapter->ibdev;
	init_completion(&r.replied);
	dst.sin_port = htons(NDK_TEST_PORT + 12);
	r.listen = ib_create_cm_id(ibdev, ndk_rep_cm_handler, &r);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r.listen));
	/* rdma_cm's service ID of a TCP port (the IBTA's IP CM annex). */
	if (ib_cm_listen(r.listen, cpu_to_be64(((u64)RDMA_PS_TCP << 16) +
					       NDK_TEST_PORT + 12))) {
		ib_destroy_cm_id(r.listen);
		KUNIT_FAIL(test, "ib_cm_listen failed");
		ndk_close_all(test, c, qp);
		return;
	}

	ndk_wait_init(&cw);
	st = ndk_conn_try(c, qp, &e->addr, sizeof(e->addr), &dst, sizeof(dst),
			  &cw);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	if (st == STATUS_PENDING) {
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&cw));
		KUNIT_EXPECT_EQ(test, cw.status, STATUS_SUCCESS);
	}
	if (st != STATUS_PENDING || cw.status != STATUS_SUCCESS) {
		ib_destroy_cm_id(r.listen);
		ndk_close_all(test, c, qp);
		return;
	}
	KUNIT_EXPECT_EQ(test, r.err, 0);

	ndk_cm_reject_held(test, conn->id, r.conn);
	ndk_wait_init(&ccw);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, ndk_test_request_cb,
					     &ccw);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	if (st == STATUS_PENDING) {
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&ccw));
		KUNIT_EXPECT_EQ(test, ccw.status, STATUS_CONNECTION_ABORTED);
	}
	KUNIT_EXPECT_FALSE(test, READ_ONCE(nqp->connected));
	rdma_unlock_handler(conn->id);
	ib_destroy_cm_id(r.listen);
	/* The reject's event, now delivered, reports nothing more. */
	ndk_close_all(test, c, qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&ccw.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&cw.calls), 1);
}

/* NdkConnect's completion confirms at once, as ndk_conn_chain_test's. */
struct ndk_chain {
	NDK_CONNECTOR *c;
	struct ndk_wait ccw;
	NTSTATUS connected;
	NTSTATUS complete;
	struct completion done;
};

static void ndk_chain_connected(PVOID Context, NTSTATUS Status)
{
	struct ndk_chain *ch = Context;

	ch->connected = Status;
	if (!Status)
		ch->complete = ch->c->Dispatch->NdkCompleteConnect(ch->c, NULL,
								   NULL,
								   ndk_test_request_cb,
								   &ch->ccw);
	complete(&ch->done);
}

/*
 * The handshake driven from the callbacks, as a consumer opening many
 * connections writes it: the connect event accepts, NdkConnect's
 * completion confirms. Both callbacks run inside rdma_cm's event handler
 * of the connector's own id, whose lock rdma_cm holds there and the
 * accept and the confirmation need: they run in the call without taking
 * it again, as a ULP's handler calls rdma_accept().
 */
static void ndk_conn_chain_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_QP *aqp = ndk_cenv_qp(test, e), *pqp = ndk_cenv_qp(test, e);
	struct sockaddr_in dst = e->addr;
	struct ndk_chain ch = {};
	struct ndk_wait aw;
	NTSTATUS st;

	ch.c = ndk_cenv_connector(test, e);
	init_completion(&ch.done);
	ndk_wait_init(&ch.ccw);
	ndk_wait_init(&aw);
	e->accept_qp = pqp;
	e->accept_w = &aw;
	reinit_completion(&e->incoming_done);
	dst.sin_port = htons(NDK_TEST_PORT);
	st = ch.c->Dispatch->NdkConnect(ch.c, aqp, (struct sockaddr *)&e->addr,
					sizeof(e->addr), (struct sockaddr *)&dst,
					sizeof(dst), 4, 4, NULL, 0,
					ndk_chain_connected, &ch);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	e->accept_qp = NULL;
	KUNIT_EXPECT_EQ(test, e->accept_st, STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&ch.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_EQ(test, ch.connected, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ch.complete, NDK_TEST_INLINE);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &ch.ccw, ch.complete),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &aw, e->accept_st),
			STATUS_SUCCESS);
	ndk_conn_traffic(test, e, aqp, pqp);
	ndk_close_all(test, ch.c, aqp);
	ndk_close_all(test, e->incoming, pqp);
}

/* A disconnect event callback that waits until the test lets it go. */
struct ndk_held_cb {
	struct completion entered;
	struct completion release;
};

static void ndk_held_disc_cb(PVOID DisconnectEventContext)
{
	struct ndk_held_cb *h = DisconnectEventContext;

	complete(&h->entered);
	wait_for_completion_timeout(&h->release, NDK_TEST_TIMEOUT);
}

/*
 * Connect @p with @disc(@ctx) as the passive side's disconnect event,
 * start the active side's disconnect, completing into @dw, and wait for
 * @entered, which @disc completes.
 */
static void ndk_disconnect_into(struct kunit *test, struct ndk_cenv *e,
				struct ndk_pair *p,
				NDK_FN_DISCONNECT_EVENT_CALLBACK disc, void *ctx,
				struct completion *entered, struct ndk_wait *dw)
{
	struct sockaddr_in dst;

	ndk_listen_addr(e, &dst);
	ndk_pair_init(test, e, p);
	ndk_establish_pair_disc(test, e, p, (struct sockaddr *)&e->addr,
				(struct sockaddr *)&dst, sizeof(dst), false,
				disc, ctx);
	ndk_wait_init(dw);
	KUNIT_ASSERT_EQ(test, p->c->Dispatch->NdkDisconnect(p->c,
							    ndk_test_request_cb,
							    dw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(entered,
							  NDK_TEST_TIMEOUT),
			0UL);
}

/*
 * A connector whose connection is over closes inline from a thread: no
 * callback of it can run any more. One whose disconnect event callback is
 * still running closes later instead, so that the close never waits for
 * consumer code, which may be waiting for the closing thread.
 */
static void ndk_conn_close_inline_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_held_cb h;
	struct ndk_wait dw, cw;
	struct ndk_pair p;
	NTSTATUS st;

	init_completion(&h.entered);
	init_completion(&h.release);
	ndk_disconnect_into(test, e, &p, ndk_held_disc_cb, &h, &h.entered,
			    &dw);
	ndk_wait_init(&cw);
	st = p.in->Dispatch->NdkCloseConnector(&p.in->Header,
					       ndk_test_close_cb, &cw);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	complete(&h.release);
	KUNIT_EXPECT_TRUE(test, ndk_test_outcome(test, &cw, st) ==
			  STATUS_SUCCESS);

	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
	KUNIT_EXPECT_EQ(test, dw.status, STATUS_SUCCESS);
	/* Let the completion's handler return. */
	msleep(200);
	ndk_wait_init(&cw);
	st = p.c->Dispatch->NdkCloseConnector(&p.c->Header, ndk_test_close_cb,
					      &cw);
	KUNIT_EXPECT_EQ(test, st, NDK_TEST_INLINE);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &cw, st), STATUS_SUCCESS);
	ndk_close_all(test, NULL, p.aqp);
	ndk_close_all(test, NULL, p.pqp);
}

/* @c received @rds bytes of private data, all zeros, and keeps no copy. */
static void ndk_expect_zero_pdata(struct kunit *test, NDK_CONNECTOR *c,
				  ULONG rds)
{
	u8 buf[256];
	ULONG len = sizeof(buf);

	memset(buf, 0xa5, sizeof(buf));
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetConnectionData(c, NULL, NULL,
								buf, &len),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, len, rds);
	KUNIT_EXPECT_NULL(test, memchr_inv(buf, 0, len));
	KUNIT_EXPECT_EQ(test, buf[len], 0xa5);
	KUNIT_EXPECT_NULL(test, container_of(c, struct ndk_connector,
					     ndk)->peer_pdata);
}

/*
 * Neither side sends private data. IB and RoCE still deliver their CM
 * messages' fields, all zeros: no buffer is kept for them, and
 * NdkGetConnectionData returns them all the same. iWARP delivers none.
 */
static void ndk_conn_zero_pdata_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *aqp = ndk_cenv_qp(test, e), *pqp = ndk_cenv_qp(test, e);
	bool iwarp = ndk_test_iwarp();
	struct ndk_wait cw, aw, ccw;
	NDK_CONNECTOR *in;
	NTSTATUS st;

	reinit_completion(&e->incoming_done);
	ndk_cenv_connect_incoming(test, e, c, aqp, &cw);
	in = e->incoming;
	ndk_expect_zero_pdata(test, in, iwarp ? 0 : 56);

	ndk_wait_init(&aw);
	KUNIT_ASSERT_EQ(test, in->Dispatch->NdkAccept(in, pqp, 4, 4, NULL, 0,
						      NULL, NULL,
						      ndk_test_request_cb,
						      &aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_ASSERT_EQ(test, cw.status, STATUS_SUCCESS);
	ndk_expect_zero_pdata(test, c, iwarp ? 0 : 196);

	ndk_wait_init(&ccw);
	st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, ndk_test_request_cb,
					     &ccw);
	KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &ccw, st), STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&aw));
	KUNIT_EXPECT_EQ(test, aw.status, STATUS_SUCCESS);
	ndk_close_all(test, in, pqp);
	ndk_close_all(test, c, aqp);
}

/*
 * Three requests about other connectors, made inside one connector's
 * disconnect event: a disconnect of @dc, the confirmation of @cc (whose
 * NdkConnect has completed) and the accept of @ac's request on @aqp.
 */
struct ndk_foreign_cb {
	NDK_CONNECTOR *dc, *cc, *ac;
	NDK_QP *aqp;
	struct ndk_wait dw, cw, aw;
	NTSTATUS disc, complete, accept;
	struct completion entered;
	/* the test's own: too large for its stack in a debug kernel */
	struct ndk_wait pdw, rcw, raw, scw, sccw;
};

static void ndk_foreign_disc_cb(PVOID DisconnectEventContext)
{
	struct ndk_foreign_cb *f = DisconnectEventContext;

	f->disc = f->dc->Dispatch->NdkDisconnect(f->dc, ndk_test_request_cb,
						 &f->dw);
	f->complete = f->cc->Dispatch->NdkCompleteConnect(f->cc, NULL, NULL,
							  ndk_test_request_cb,
							  &f->cw);
	f->accept = f->ac->Dispatch->NdkAccept(f->ac, f->aqp, 4, 4, NULL, 0,
					       NULL, NULL, ndk_test_request_cb,
					       &f->aw);
	complete(&f->entered);
}

/*
 * A request about a connector made inside another connector's event
 * callback pends and completes later, from the work item: running its
 * step there would take a second rdma_cm handler lock inside the first,
 * or call rdma_accept() without the lock it needs. The confirmation
 * shows it: from a thread or the connector's own handler it completes in
 * the call. lockdep, if built in, must not have found a problem either.
 */
static void ndk_conn_foreign_handler_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_foreign_cb *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	bool locks = debug_locks;
	struct sockaddr_in dst;
	struct ndk_pair p, q, r, s;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, f);
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &q, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	/* r: accepted and connected, not yet confirmed; s: a request. */
	ndk_pair_init(test, e, &r);
	ndk_pair_request(test, e, &r, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, &f->rcw);
	ndk_wait_init(&f->raw);
	KUNIT_ASSERT_EQ(test, r.in->Dispatch->NdkAccept(r.in, r.pqp, 4, 4,
							NULL, 0, NULL, NULL,
							ndk_test_request_cb,
							&f->raw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->rcw));
	KUNIT_ASSERT_EQ(test, f->rcw.status, STATUS_SUCCESS);
	ndk_pair_init(test, e, &s);
	ndk_pair_request(test, e, &s, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, &f->scw);

	f->dc = q.c;
	f->cc = r.c;
	f->ac = s.in;
	f->aqp = s.pqp;
	ndk_wait_init(&f->dw);
	ndk_wait_init(&f->cw);
	ndk_wait_init(&f->aw);
	init_completion(&f->entered);
	ndk_disconnect_into(test, e, &p, ndk_foreign_disc_cb, f, &f->entered,
			    &f->pdw);
	KUNIT_EXPECT_EQ(test, f->disc, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, f->complete, STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, f->accept, STATUS_PENDING);

	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->dw));
	KUNIT_EXPECT_EQ(test, f->dw.status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->dw.calls), 1);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->cw));
	KUNIT_EXPECT_EQ(test, f->cw.status, STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->raw));
	KUNIT_EXPECT_EQ(test, f->raw.status, STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->scw));
	KUNIT_ASSERT_EQ(test, f->scw.status, STATUS_SUCCESS);
	ndk_wait_init(&f->sccw);
	st = s.c->Dispatch->NdkCompleteConnect(s.c, NULL, NULL,
					       ndk_test_request_cb, &f->sccw);
	KUNIT_EXPECT_EQ(test, st, NDK_TEST_INLINE);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &f->sccw, st),
			STATUS_SUCCESS);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->aw));
	KUNIT_EXPECT_EQ(test, f->aw.status, STATUS_SUCCESS);
	ndk_conn_traffic(test, e, r.aqp, r.pqp);
	ndk_conn_traffic(test, e, s.aqp, s.pqp);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&f->pdw));
	KUNIT_EXPECT_EQ(test, f->pdw.status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, debug_locks, locks);
	ndk_pair_close(test, &p);
	ndk_pair_close(test, &q);
	ndk_pair_close(test, &r);
	ndk_pair_close(test, &s);
}

/* Connections in a row: all with ndk_check.thorough=1, else a few. */
#define NDK_CYCLES	100
#define NDK_FEW_CYCLES	20

/* Many full connection lifetimes in a row; kmemleak checks the rest. */
static void ndk_conn_cycles_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in dst;
	struct ndk_pair p;
	struct ndk_wait dw;
	int i, n = ndk_test_rounds(NDK_CYCLES, NDK_FEW_CYCLES);

	ndk_listen_addr(e, &dst);
	for (i = 0; i < n; i++) {
		ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
			      (struct sockaddr *)&dst, sizeof(dst), false);
		ndk_conn_traffic(test, e, p.aqp, p.pqp);
		ndk_wait_init(&dw);
		KUNIT_ASSERT_EQ(test, p.c->Dispatch->NdkDisconnect(p.c,
								   ndk_test_request_cb,
								   &dw),
				STATUS_PENDING);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&dw));
		ndk_pair_close(test, &p);
	}
}

/*
 * ndk's own bounds of a connect's and an accept's wait for the peer, set
 * short through ndk.ko's module parameters by the ndk_tmo cases, and its
 * ACK timeout, set by ndk_conn_ack_timeout_test.
 */

/* The bounds the suite runs with: short, yet far above a handshake. */
#define NDK_TMO_MS	2000U
/* How much later than its bound a request may end under TCG. */
#define NDK_TMO_SLACK	(5 * HZ)

static const char *const ndk_tmo_params[] = {
	"connect_timeout_ms", "accept_timeout_ms", "ack_timeout",
};

/* The values before a case changed them, restored by the suite's exit. */
static char ndk_tmo_saved[ARRAY_SIZE(ndk_tmo_params)][16];

/* Read or write ndk.ko's parameter @name as root would, through sysfs. */
static int ndk_tmo_param(const char *name, char *buf, size_t len, bool write)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/module/ndk/parameters/%s", name);
	return ndk_rw_file(path, buf, len, write);
}

/* Set the connect bound to @connect_ms and the accept bound to @accept_ms. */
static void ndk_tmo_set(struct kunit *test, unsigned int connect_ms,
			unsigned int accept_ms)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", connect_ms);
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[0], buf, 0, true),
			0);
	snprintf(buf, sizeof(buf), "%u", accept_ms);
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[1], buf, 0, true),
			0);
}

/*
 * The connection environment of a ndk_tmo case, with the bounds saved
 * and set to NDK_TMO_MS; ndk_connector_exit_test() restores them. ndk
 * reads them when a connect or accept starts.
 */
static struct ndk_cenv *ndk_tmo_env(struct kunit *test)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ndk_tmo_params); i++)
		KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[i],
						    ndk_tmo_saved[i],
						    sizeof(ndk_tmo_saved[i]),
						    false),
				0);
	ndk_tmo_set(test, NDK_TMO_MS, NDK_TMO_MS);
	return test->priv;
}

static void ndk_connector_exit_test(struct kunit *test)
{
	size_t i;

	ndk_conn_exit_test(test);
	for (i = 0; i < ARRAY_SIZE(ndk_tmo_params); i++)
		if (ndk_tmo_saved[i][0]) {
			ndk_tmo_param(ndk_tmo_params[i], ndk_tmo_saved[i], 0,
				      true);
			ndk_tmo_saved[i][0] = '\0';
		}
}

/*
 * Wait for the request of @w, started at @start, to fail with
 * STATUS_IO_TIMEOUT once its bound of @ms is over: not before it, and
 * not much later. Return: whether it completed at all.
 */
static bool ndk_tmo_expect(struct kunit *test, struct ndk_wait *w,
			   unsigned long start, unsigned int ms)
{
	unsigned long bound = msecs_to_jiffies(ms), took;
	bool done;

	done = wait_for_completion_timeout(&w->done, bound + NDK_TMO_SLACK);
	took = jiffies - start;
	KUNIT_EXPECT_TRUE_MSG(test, done,
			      "still pending %u ms after the request began, bound %u ms",
			      jiffies_to_msecs(took), ms);
	if (!done)
		return false;
	KUNIT_EXPECT_EQ(test, w->status, STATUS_IO_TIMEOUT);
	KUNIT_EXPECT_GE_MSG(test, took, bound, "timed out after %u ms",
			    jiffies_to_msecs(took));
	return true;
}

/*
 * After a timeout the connector has ended its attempt like any failed
 * one, also once its id is gone: it still reports its addresses and the
 * private data, refuses the handshake steps, and its disconnect is a
 * no-op. Nothing completes twice.
 */
static void ndk_tmo_check_done(struct kunit *test, struct ndk_cenv *e,
			       NDK_CONNECTOR *c, NDK_QP *qp, u16 peer_port)
{
	struct sockaddr_in local, peer;
	struct ndk_wait w;
	ULONG len;

	ndk_wait_init(&w);
	len = sizeof(local);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetLocalAddress(c,
							      (struct sockaddr *)&local,
							      &len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, (__force u32)local.sin_addr.s_addr,
			(__force u32)e->addr.sin_addr.s_addr);
	KUNIT_EXPECT_NE(test, ntohs(local.sin_port), 0);
	len = sizeof(peer);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetPeerAddress(c,
							     (struct sockaddr *)&peer,
							     &len),
			STATUS_SUCCESS);
	if (peer_port)
		KUNIT_EXPECT_EQ(test, ntohs(peer.sin_port), peer_port);
	len = 0;
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetConnectionData(c, NULL, NULL,
								NULL, &len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkCompleteConnect(c, NULL, NULL,
							      ndk_test_request_cb,
							      &w),
			STATUS_CONNECTION_ABORTED);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkAccept(c, qp, 1, 1, NULL, 0, NULL,
						     NULL, ndk_test_request_cb,
						     &w),
			STATUS_CONNECTION_ABORTED);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkReject(c, NULL, 0),
			STATUS_CONNECTION_ABORTED);
	KUNIT_EXPECT_EQ(test, ndk_connect_to(c, qp, (struct sockaddr *)&e->addr,
					     (struct sockaddr *)&e->addr,
					     sizeof(e->addr), false, &w),
			STATUS_CONNECTION_INVALID);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkDisconnect(c, ndk_test_request_cb,
							 &w),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
}

/* A receive on @qp's RQ, for seeing the QP flushed; returns its buffer. */
static u64 ndk_tmo_post_receive(struct kunit *test, struct ndk_cenv *e,
				NDK_QP *qp, void *ctx, u8 *buf)
{
	struct ib_device *dev = container_of(e->pd, struct ndk_pd,
					     ndk)->ibpd->device;
	NDK_SGE sge;
	UINT32 tok;
	u64 dma;

	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &tok);
	dma = ib_dma_map_single(dev, buf, 64, DMA_FROM_DEVICE);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, dma));
	sge.LogicalAddress = dma;
	sge.Length = 64;
	sge.MemoryRegionToken = tok;
	KUNIT_EXPECT_EQ(test, qp->Dispatch->NdkReceive(qp, ctx, &sge, 1),
			STATUS_SUCCESS);
	return dma;
}

/*
 * An iWARP peer that answers the MPA request with a reject of its own and
 * no private data, as a stack other than ndk may (a raw TCP peer here):
 * the connect fails with STATUS_CONNECTION_REFUSED, and the connector
 * has no peer data to report.
 */
static void ndk_conn_mpa_reject_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mpa_req req = {}, rep = {};
	struct sockaddr_in dst = e->addr;
	struct socket *tcp, *child = NULL;
	struct msghdr msg = {};
	NDK_CONNECTOR *c;
	struct kvec iov;
	u8 pdata[256];
	ULONG len;
	struct ndk_wait w;
	NDK_QP *qp;
	NTSTATUS st;

	if (!ndk_test_iwarp())
		kunit_skip(test, "MPA is iWARP's");
	c = ndk_cenv_connector(test, e);
	qp = ndk_cenv_qp(test, e);
	tcp = ndk_tcp_listener(test, &e->addr, NDK_TEST_PORT + 11);
	tcp->sk->sk_rcvtimeo = NDK_TEST_TIMEOUT;
	dst.sin_port = htons(NDK_TEST_PORT + 11);
	ndk_wait_init(&w);
	st = ndk_connect_to(c, qp, (struct sockaddr *)&e->addr,
			    (struct sockaddr *)&dst, sizeof(dst), false, &w);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	if (!kernel_accept(tcp, &child, 0)) {
		child->sk->sk_rcvtimeo = NDK_TEST_TIMEOUT;
		iov = (struct kvec){ &req, sizeof(req) };
		KUNIT_EXPECT_EQ(test, kernel_recvmsg(child, &msg, &iov, 1,
						     sizeof(req), MSG_WAITALL),
				(int)sizeof(req));
		NDK_EXPECT_MEMEQ(test, req.key, "MPA ID Req Frame", 16);
		len = min_t(u16, be16_to_cpu(req.pd_len), sizeof(pdata));
		iov = (struct kvec){ pdata, len };
		KUNIT_EXPECT_EQ(test, kernel_recvmsg(child, &msg, &iov, 1, len,
						     MSG_WAITALL),
				(int)len);
		memcpy(rep.key, "MPA ID Rep Frame", sizeof(rep.key));
		/* The request's revision, with the reject bit. */
		rep.bits = cpu_to_be16(0x2000) | (req.bits & cpu_to_be16(0xff));
		iov = (struct kvec){ &rep, sizeof(rep) };
		KUNIT_EXPECT_EQ(test, kernel_sendmsg(child, &msg, &iov, 1,
						     sizeof(rep)),
				(int)sizeof(rep));
	} else {
		KUNIT_FAIL(test, "the connect made no TCP connection");
	}
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, st),
			STATUS_CONNECTION_REFUSED);
	len = sizeof(pdata);
	KUNIT_EXPECT_EQ(test, c->Dispatch->NdkGetConnectionData(c, NULL, NULL,
								pdata, &len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, len, 0U);
	if (child)
		sock_release(child);
	ndk_tcp_listener_release(tcp);
	ndk_close_all(test, c, qp);
}

/*
 * A connect to a silent peer fails with STATUS_IO_TIMEOUT at its bound,
 * where rdma_cm alone takes about 100 s on RoCE (to QEMU's user-network
 * gateway, 10.0.2.2, which answers ARP but runs no RDMA) and siw 10 s (to
 * a TCP listener that never answers the MPA request). The connector then
 * behaves as after any failure, and the timeout flushed its QP: a receive
 * posted before the connect comes back cancelled.
 */
static void ndk_tmo_connect_silent_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	struct ib_device *dev = container_of(e->pd, struct ndk_pd,
					     ndk)->ibpd->device;
	u8 *buf = kunit_kzalloc(test, 64, GFP_KERNEL);
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct sockaddr_in dst = e->addr;
	struct socket *tcp = NULL;
	unsigned long start;
	struct ndk_wait w;
	NDK_RESULT r;
	u64 dma;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	if (ndk_test_iwarp()) {
		tcp = ndk_tcp_listener(test, &e->addr, NDK_TEST_PORT + 3);
		dst.sin_port = htons(NDK_TEST_PORT + 3);
	} else {
		dst.sin_addr.s_addr = in_aton("10.0.2.2");
		dst.sin_port = htons(NDK_TEST_PORT);
	}
	dma = ndk_tmo_post_receive(test, e, qp, (void *)7, buf);
	ndk_wait_init(&w);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, ndk_connect_to(c, qp, (struct sockaddr *)&e->addr,
					     (struct sockaddr *)&dst,
					     sizeof(dst), false, &w),
			STATUS_PENDING);
	if (ndk_tmo_expect(test, &w, start, NDK_TMO_MS)) {
		/*
		 * On siw the id, and with it the QP's flush, goes only when
		 * siw itself gives up the connect; see the listener's end.
		 */
		if (!ndk_test_iwarp()) {
			KUNIT_EXPECT_EQ(test, ndk_poll_results(e->cq, &r, 1),
					1U);
			KUNIT_EXPECT_EQ(test, r.Status, STATUS_CANCELLED);
			KUNIT_EXPECT_PTR_EQ(test, r.RequestContext, (void *)7);
		}
		ndk_tmo_check_done(test, e, c, qp, ntohs(dst.sin_port));
		/* Whatever rdma_cm reports from now on changes nothing. */
		msleep(500);
		KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	}
	/*
	 * The silent peer goes away: the listener's end resets the TCP
	 * connection, and siw reports the connect failed now, not 10 s
	 * after it began, which the close would wait for.
	 */
	if (tcp) {
		ndk_tcp_listener_release(tcp);
		tcp = NULL;
		msleep(200);
		KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	}
	ndk_close_all(test, c, NULL);
	if (ndk_test_iwarp()) {
		KUNIT_EXPECT_EQ(test, ndk_poll_results(e->cq, &r, 1), 1U);
		KUNIT_EXPECT_EQ(test, r.Status, STATUS_CANCELLED);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	ndk_close_all(test, NULL, qp);
	ib_dma_unmap_single(dev, dma, 64, DMA_FROM_DEVICE);
}

/*
 * An ndk listener's consumer that never answers the request: rdma_cm
 * would keep the connect waiting for some 17 minutes (its MRA) on RoCE
 * and 10 s on siw; the bound ends it. On RoCE the timed-out side's
 * reject then reaches the listener's connector, so that a late NdkAccept
 * learns the peer gave up.
 */
static void ndk_tmo_connect_unanswered_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e), *pqp = ndk_cenv_qp(test, e);
	unsigned long start;
	struct ndk_wait w, aw;
	NDK_CONNECTOR *in;
	NTSTATUS st;

	reinit_completion(&e->incoming_done);
	ndk_wait_init(&w);
	start = jiffies;
	KUNIT_ASSERT_EQ(test, ndk_cenv_connect(e, c, qp, NDK_TEST_PORT, NULL, 0,
					       &w),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	in = e->incoming;
	if (ndk_tmo_expect(test, &w, start, NDK_TMO_MS)) {
		ndk_tmo_check_done(test, e, c, qp, NDK_TEST_PORT);
		if (!ndk_test_iwarp()) {
			msleep(500);
			ndk_wait_init(&aw);
			st = in->Dispatch->NdkAccept(in, pqp, 1, 1, NULL, 0,
						     NULL, NULL,
						     ndk_test_request_cb, &aw);
			if (st == STATUS_PENDING && ndk_wait_for(&aw))
				st = aw.status;
			KUNIT_EXPECT_EQ(test, st, STATUS_CONNECTION_ABORTED);
		}
	}
	ndk_close_all(test, in, pqp);
	ndk_close_all(test, c, qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
}

/*
 * A raw peer that never confirms the reply. On RoCE it asks for
 * rdma_cm's usual response time and retries, so that the connection
 * manager would wait over a minute; the bound fails NdkAccept at once.
 * iWARP has nothing to confirm: siw reports the connection up as soon as
 * its MPA reply is out, and no bound is left to expire afterwards.
 */
static void ndk_tmo_accept_mute_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	struct ndk_mute_peer m = {};
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct socket *tcp = NULL;
	struct sockaddr_in dst;
	unsigned long start;
	struct ndk_wait aw;
	NDK_CONNECTOR *in;

	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	if (ndk_test_iwarp())
		tcp = ndk_mpa_mute_connect(test, &dst);
	else
		ndk_mute_connect(test, &m, &e->addr, &dst, false);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	in = e->incoming;
	ndk_wait_init(&aw);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, in->Dispatch->NdkAccept(in, qp, 1, 1, NULL, 0,
						      NULL, NULL,
						      ndk_test_request_cb,
						      &aw),
			STATUS_PENDING);
	if (ndk_test_iwarp()) {
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
		KUNIT_EXPECT_EQ(test, aw.status, STATUS_SUCCESS);
		msleep(NDK_TMO_MS + 500);
	} else if (ndk_tmo_expect(test, &aw, start, NDK_TMO_MS)) {
		ndk_tmo_check_done(test, e, in, qp, 0);
		msleep(500);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&aw.calls), 1);
	ndk_close_all(test, in, qp);
	if (tcp)
		sock_release(tcp);
	else
		ndk_mute_free(&m);
}

/*
 * The accept's bound ends an accept that a silent RTR peer holds open:
 * the timeout work must not wait for the peer either (ndk_rtr_silent()).
 */
static void ndk_tmo_rtr_silent_test(struct kunit *test)
{
	ndk_rtr_silent(test, ndk_tmo_env(test), true);
}

/*
 * An ndk peer whose NdkConnect succeeded but which withholds
 * NdkCompleteConnect. Its rdma_cm asks for more time with an MRA, which
 * would keep NdkAccept waiting some 17 minutes on RoCE; the bound fails
 * it, and the reject of its teardown ends the peer's connection attempt
 * too. On iWARP the accept succeeds at once, and a confirmation long
 * after the bound still completes the connection.
 */
static void ndk_tmo_complete_withheld_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	struct sockaddr_in dst;
	struct ndk_wait cw, aw, ccw;
	unsigned long start;
	struct ndk_pair p;
	NTSTATUS st;

	ndk_pair_init(test, e, &p);
	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	ndk_wait_init(&cw);
	KUNIT_ASSERT_EQ(test, ndk_connect_to(p.c, p.aqp,
					     (struct sockaddr *)&e->addr,
					     (struct sockaddr *)&dst,
					     sizeof(dst), false, &cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	p.in = e->incoming;
	ndk_wait_init(&aw);
	start = jiffies;
	KUNIT_ASSERT_EQ(test, p.in->Dispatch->NdkAccept(p.in, p.pqp, 1, 1, NULL,
							0, NULL, NULL,
							ndk_test_request_cb,
							&aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_ASSERT_EQ(test, cw.status, STATUS_SUCCESS);

	ndk_wait_init(&ccw);
	if (ndk_test_iwarp()) {
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&aw));
		KUNIT_EXPECT_EQ(test, aw.status, STATUS_SUCCESS);
		msleep(NDK_TMO_MS + 500);
		st = p.c->Dispatch->NdkCompleteConnect(p.c, NULL, NULL,
						       ndk_test_request_cb,
						       &ccw);
		KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &ccw, st),
				STATUS_SUCCESS);
		ndk_conn_traffic(test, e, p.aqp, p.pqp);
		ndk_conn_traffic(test, e, p.pqp, p.aqp);
	} else if (ndk_tmo_expect(test, &aw, start, NDK_TMO_MS)) {
		ndk_tmo_check_done(test, e, p.in, p.pqp, 0);
		/* Give the reject of the passive side's teardown time to land. */
		msleep(500);
		st = p.c->Dispatch->NdkCompleteConnect(p.c, NULL, NULL,
						       ndk_test_request_cb,
						       &ccw);
		if (st == STATUS_PENDING && ndk_wait_for(&ccw))
			st = ccw.status;
		KUNIT_EXPECT_EQ(test, st, STATUS_CONNECTION_ABORTED);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&aw.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&cw.calls), 1);
	ndk_pair_close(test, &p);
}

/* Bounds of the race cases: a handshake step takes tens of ms in QEMU. */
#define NDK_TMO_RACE_MS		300
#define NDK_TMO_RACE_SPAN	160
#define NDK_TMO_RACE_STEP	40

/**
 * struct ndk_tmo_try - one handshake timed against the bounds
 * @accept_ms: when the passive side accepts, in ms after the connect
 *	started plus the bound (negative: before the bound is over)
 * @complete_ms: when the active side confirms, in ms after the accept
 *	plus the bound; ignored when the connect fails
 * @connect: the outcome of NdkConnect
 * @accept: of NdkAccept, inline or completed
 * @complete: of NdkCompleteConnect; STATUS_PENDING if never called
 */
struct ndk_tmo_try {
	int accept_ms;
	int complete_ms;
	NTSTATUS connect;
	NTSTATUS accept;
	NTSTATUS complete;
};

static void ndk_tmo_sleep_until(unsigned long start, int ms)
{
	long left = (long)(start + msecs_to_jiffies(max(ms, 0)) - jiffies);

	if (left > 0)
		schedule_timeout_uninterruptible(left);
}

/* The outcome of a request that ends soon: @inline_status unless it pended. */
static NTSTATUS ndk_tmo_outcome(struct kunit *test, struct ndk_wait *w,
				NTSTATUS inline_status)
{
	if (inline_status != STATUS_PENDING)
		return inline_status;
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&w->done,
							  msecs_to_jiffies(NDK_TMO_RACE_MS) +
							  NDK_TMO_SLACK),
			0UL);
	return w->status;
}

/*
 * One handshake with the accept and the confirmation made when @t says,
 * then checks that each request completed exactly once, with an outcome
 * its counterpart agrees with.
 */
static void ndk_tmo_try_once(struct kunit *test, struct ndk_cenv *e,
			     struct ndk_tmo_try *t)
{
	NTSTATUS st, st_c = STATUS_SUCCESS;
	struct ndk_wait cw, aw, ccw;
	unsigned long start, accepted;
	struct sockaddr_in dst;
	struct ndk_pair p;

	ndk_pair_init(test, e, &p);
	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	ndk_wait_init(&cw);
	ndk_wait_init(&aw);
	ndk_wait_init(&ccw);
	t->complete = STATUS_PENDING;
	start = jiffies;
	KUNIT_ASSERT_EQ(test, ndk_connect_to(p.c, p.aqp,
					     (struct sockaddr *)&e->addr,
					     (struct sockaddr *)&dst,
					     sizeof(dst), false, &cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	p.in = e->incoming;
	ndk_tmo_sleep_until(start, NDK_TMO_RACE_MS + t->accept_ms);
	accepted = jiffies;
	st = p.in->Dispatch->NdkAccept(p.in, p.pqp, 1, 1, NULL, 0, NULL, NULL,
				       ndk_test_request_cb, &aw);
	t->connect = ndk_tmo_outcome(test, &cw, STATUS_PENDING);
	if (t->connect == STATUS_SUCCESS) {
		ndk_tmo_sleep_until(accepted,
				    NDK_TMO_RACE_MS + t->complete_ms);
		st_c = p.c->Dispatch->NdkCompleteConnect(p.c, NULL, NULL,
							 ndk_test_request_cb,
							 &ccw);
		t->complete = ndk_tmo_outcome(test, &ccw, st_c);
	}
	t->accept = ndk_tmo_outcome(test, &aw, st);
	/* A second completion would come from whichever side lost. */
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&cw.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&aw.calls), st == STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, atomic_read(&ccw.calls), st_c == STATUS_PENDING);

	KUNIT_EXPECT_TRUE_MSG(test, t->connect == STATUS_SUCCESS ||
			      t->connect == STATUS_IO_TIMEOUT,
			      "connect 0x%08x", t->connect);
	KUNIT_EXPECT_TRUE_MSG(test, t->accept == STATUS_SUCCESS ||
			      t->accept == STATUS_IO_TIMEOUT ||
			      t->accept == STATUS_CONNECTION_ABORTED,
			      "accept 0x%08x", t->accept);
	KUNIT_EXPECT_TRUE_MSG(test, t->complete == STATUS_PENDING ||
			      t->complete == STATUS_SUCCESS ||
			      t->complete == STATUS_CONNECTION_ABORTED,
			      "complete 0x%08x", t->complete);
	/*
	 * On IB and RoCE the passive side is up only after the RTU, which
	 * only a successful confirmation sends; it gives up only by its
	 * own timeout.
	 */
	if (!ndk_test_iwarp()) {
		if (t->accept == STATUS_SUCCESS)
			KUNIT_EXPECT_EQ(test, t->complete, STATUS_SUCCESS);
		if (t->complete == STATUS_CONNECTION_ABORTED)
			KUNIT_EXPECT_EQ(test, t->accept, STATUS_IO_TIMEOUT);
	}
	ndk_pair_close(test, &p);
}

/* Neither bound is armed on @c: none is running, none has expired. */
static void ndk_tmo_unarmed(struct kunit *test, NDK_CONNECTOR *c,
			    const char *which)
{
	struct ndk_connector *conn = container_of(c, struct ndk_connector, ndk);
	u8 bound = READ_ONCE(conn->bound);

	KUNIT_EXPECT_EQ_MSG(test, bound, NDK_BOUND_NONE, "%s side", which);
	KUNIT_EXPECT_FALSE_MSG(test, timer_pending(&conn->timer), "%s side",
			       which);
}

/*
 * A bound of 0 is no bound: connect and accept arm no timer. The connect
 * waits for an accept that comes longer than NDK_TMO_MS after the
 * listener got the request, and on IB and RoCE the accept waits as long
 * for the confirmation (on iWARP it never waits for one); neither fails,
 * and the connection is made as with a bound.
 */
static void ndk_tmo_unbounded_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	/* Not on the stack: see ndk_establish_pair_disc(). */
	struct ndk_wait *w = kunit_kcalloc(test, 3, sizeof(*w), GFP_KERNEL);
	struct ndk_wait *cw = &w[0], *aw = &w[1], *ccw = &w[2];
	struct sockaddr_in dst;
	struct ndk_pair p;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, w);
	ndk_tmo_set(test, 0, 0);
	ndk_pair_init(test, e, &p);
	ndk_listen_addr(e, &dst);
	ndk_pair_request(test, e, &p, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, cw);
	msleep(NDK_TMO_MS + 500);
	KUNIT_EXPECT_EQ(test, atomic_read(&cw->calls), 0);
	ndk_tmo_unarmed(test, p.c, "active");

	ndk_wait_init(aw);
	KUNIT_ASSERT_EQ(test, p.in->Dispatch->NdkAccept(p.in, p.pqp, 1, 1, NULL,
							0, NULL, NULL,
							ndk_test_request_cb,
							aw),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(cw));
	KUNIT_ASSERT_EQ(test, cw->status, STATUS_SUCCESS);
	if (!ndk_test_iwarp()) {
		msleep(NDK_TMO_MS + 500);
		KUNIT_EXPECT_EQ(test, atomic_read(&aw->calls), 0);
		ndk_tmo_unarmed(test, p.in, "passive");
	}

	ndk_wait_init(ccw);
	st = p.c->Dispatch->NdkCompleteConnect(p.c, NULL, NULL,
					       ndk_test_request_cb, ccw);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, ccw, st), STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(aw));
	KUNIT_EXPECT_EQ(test, aw->status, STATUS_SUCCESS);
	ndk_conn_traffic(test, e, p.aqp, p.pqp);
	KUNIT_EXPECT_EQ(test, atomic_read(&cw->calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&aw->calls), 1);
	ndk_pair_close(test, &p);
}

/*
 * The reply arrives around the moment the connect's bound expires: the
 * passive side accepts from well before to well after it. Every request
 * completes exactly once, both outcomes occur, and the two sides agree.
 */
static void ndk_tmo_connect_race_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	int ms, ok = 0, timed_out = 0;
	struct ndk_tmo_try t;

	ndk_tmo_set(test, NDK_TMO_RACE_MS, NDK_TMO_RACE_MS);
	for (ms = -NDK_TMO_RACE_SPAN; ms <= NDK_TMO_RACE_SPAN;
	     ms += NDK_TMO_RACE_STEP) {
		t = (struct ndk_tmo_try){ .accept_ms = ms,
					  .complete_ms = -NDK_TMO_RACE_MS };
		ndk_tmo_try_once(test, e, &t);
		ok += t.connect == STATUS_SUCCESS;
		timed_out += t.connect == STATUS_IO_TIMEOUT;
		/* The passive side accepted in time but lost the race. */
		if (!ndk_test_iwarp() && t.connect == STATUS_IO_TIMEOUT)
			KUNIT_EXPECT_NE(test, t.accept, STATUS_SUCCESS);
	}
	KUNIT_EXPECT_GT(test, ok, 0);
	KUNIT_EXPECT_GT(test, timed_out, 0);
}

/*
 * The confirmation arrives around the moment the accept's bound expires:
 * the active side confirms from well before to well after it. On iWARP
 * the accept never waits for it.
 */
static void ndk_tmo_accept_race_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_tmo_env(test);
	int ms, ok = 0, timed_out = 0;
	struct ndk_tmo_try t;

	ndk_tmo_set(test, NDK_TMO_RACE_MS, NDK_TMO_RACE_MS);
	for (ms = -NDK_TMO_RACE_SPAN; ms <= NDK_TMO_RACE_SPAN;
	     ms += NDK_TMO_RACE_STEP) {
		t = (struct ndk_tmo_try){ .accept_ms = -NDK_TMO_RACE_MS,
					  .complete_ms = ms };
		ndk_tmo_try_once(test, e, &t);
		KUNIT_EXPECT_EQ(test, t.connect, STATUS_SUCCESS);
		ok += t.accept == STATUS_SUCCESS;
		timed_out += t.accept == STATUS_IO_TIMEOUT;
	}
	KUNIT_EXPECT_GT(test, ok, 0);
	if (ndk_test_iwarp())
		KUNIT_EXPECT_EQ(test, timed_out, 0);
	else
		KUNIT_EXPECT_GT(test, timed_out, 0);
}

/* The local ACK timeouts of @p's active and passive QPs, in @t. */
static void ndk_conn_ack_timeouts(struct kunit *test, struct ndk_pair *p,
				  u8 t[2])
{
	NDK_QP *qps[2] = { p->aqp, p->pqp };
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int i;

	for (i = 0; i < 2; i++) {
		KUNIT_ASSERT_EQ(test,
				ib_query_qp(container_of(qps[i], struct ndk_qp,
							 ndk)->ibqp,
					    &attr, IB_QP_TIMEOUT, &init),
				0);
		t[i] = attr.timeout;
	}
}

/*
 * ndk.ko's ack_timeout becomes the local ACK timeout of both ends' QPs:
 * a connection made with it set has it, one made with 0 has rdma_cm's
 * own; beyond 31 it is refused. A connector takes the value when it is
 * created, the listener when a request arrives: so a connector made
 * before the change keeps rdma_cm's own while its peer, accepted after,
 * has the new one. iWARP leaves retransmission to TCP.
 */
static void ndk_conn_ack_timeout_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in dst;
	struct ndk_pair p;
	u8 own[2], set[2], mixed[2];
	char buf[16];

	if (ndk_test_iwarp())
		kunit_skip(test, "iWARP has no local ACK timeout");
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[2],
					    ndk_tmo_saved[2],
					    sizeof(ndk_tmo_saved[2]), false),
			0);
	strscpy(buf, "0", sizeof(buf));
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[2], buf, 0, true),
			0);
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_conn_ack_timeouts(test, &p, own);
	ndk_pair_close(test, &p);
	kunit_info(test, "rdma_cm's own: active %u, passive %u\n", own[0],
		   own[1]);
	KUNIT_ASSERT_LT(test, own[0], 29);

	snprintf(buf, sizeof(buf), "%u", own[0] + 2);
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[2], buf, 0, true),
			0);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_conn_ack_timeouts(test, &p, set);
	ndk_pair_close(test, &p);
	KUNIT_EXPECT_EQ(test, set[0], own[0] + 2);
	KUNIT_EXPECT_EQ(test, set[1], own[0] + 2);

	strscpy(buf, "0", sizeof(buf));
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[2], buf, 0, true),
			0);
	ndk_pair_init(test, e, &p);
	snprintf(buf, sizeof(buf), "%u", own[0] + 2);
	KUNIT_ASSERT_EQ(test, ndk_tmo_param(ndk_tmo_params[2], buf, 0, true),
			0);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_conn_ack_timeouts(test, &p, mixed);
	ndk_pair_close(test, &p);
	KUNIT_EXPECT_EQ(test, mixed[0], own[0]);
	KUNIT_EXPECT_EQ(test, mixed[1], own[0] + 2);

	strscpy(buf, "32", sizeof(buf));
	KUNIT_EXPECT_EQ(test, ndk_tmo_param(ndk_tmo_params[2], buf, 0, true),
			-EINVAL);
}

static struct kunit_case ndk_connector_cases[] = {
	KUNIT_CASE(ndk_conn_connect_accept_test),
	KUNIT_CASE(ndk_conn_ack_timeout_test),
	KUNIT_CASE(ndk_conn_ex_test),
	KUNIT_CASE(ndk_conn_other_instance_test),
	KUNIT_CASE(ndk_conn_address_args_test),
	KUNIT_CASE(nd_conn_reject),
	KUNIT_CASE(ndk_conn_refused_test),
	KUNIT_CASE(nd_large_private_data),
	KUNIT_CASE_PARAM(ndk_conn_pdata_len_test, ndk_pdata_gen_params),
	KUNIT_CASE(ndk_conn_close_in_connect_test),
	KUNIT_CASE(ndk_conn_atomic_test),
	KUNIT_CASE(ndk_conn_chain_test),
	KUNIT_CASE(ndk_conn_close_inline_test),
	KUNIT_CASE(ndk_conn_foreign_handler_test),
	KUNIT_CASE(ndk_conn_zero_pdata_test),
	KUNIT_CASE(ndk_pdata_used_test),
	KUNIT_CASE(nd_dual_connection),
	KUNIT_CASE(ndk_conn_ipv6_test),
	KUNIT_CASE(ndk_conn_disconnect_flush_test),
	KUNIT_CASE(ndk_conn_send_receive_test),
	KUNIT_CASE_PARAM(ndk_conn_status_test, ndk_conn_status_gen_params),
	KUNIT_CASE(ndk_conn_time_wait_port_test),
	KUNIT_CASE(ndk_conn_bad_args_test),
	KUNIT_CASE(ndk_conn_data_in_flight_test),
	KUNIT_CASE(ndk_conn_reject_answered_test),
	KUNIT_CASE(ndk_conn_reject_nomem_test),
	KUNIT_CASE(ndk_conn_closing_qp_test),
	KUNIT_CASE(nd_conn_close),
	KUNIT_CASE(ndk_conn_cycles_test),
	KUNIT_CASE(ndk_conn_accept_timeout_test),
	KUNIT_CASE(ndk_conn_accept_rejected_test),
	KUNIT_CASE(ndk_conn_complete_rejected_test),
	KUNIT_CASE(ndk_conn_rtr_silent_test),
	/* ndk's own bounds: these shorten them (ndk_tmo_env()). */
	KUNIT_CASE(ndk_tmo_connect_silent_test),
	KUNIT_CASE(ndk_conn_mpa_reject_test),
	KUNIT_CASE(ndk_tmo_connect_unanswered_test),
	KUNIT_CASE(ndk_tmo_accept_mute_test),
	KUNIT_CASE(ndk_tmo_rtr_silent_test),
	KUNIT_CASE(ndk_tmo_complete_withheld_test),
	KUNIT_CASE(ndk_tmo_unbounded_test),
	KUNIT_CASE(ndk_tmo_connect_race_test),
	KUNIT_CASE(ndk_tmo_accept_race_test),
	KUNIT_CASE_PARAM(ndk_conn_cm_status_test, ndk_cm_status_gen_params),
	{}
};

NDK_SUITE(connector, ndk_conn_init_test, ndk_connector_exit_test);
