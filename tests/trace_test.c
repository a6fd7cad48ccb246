// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_trace, the tests of ndk/trace.c: probes on ndk's tracepoints
 * record a connection's life, and a reject's and a refusal's, and the
 * cases check ids, order and statuses; a failed handshake must also move
 * the counters of the stats file on both sides.
 */
#include <linux/tracepoint.h>
#include "ndk_tests.h"
#include "trace.h"

/* One recorded tracepoint hit. */
struct ndk_obs_event {
	const char *name;	/* the tracepoint, without "ndk_" */
	u32 kind;		/* callback kind or rdma_cm event */
	u32 type;		/* object type */
	u32 id;			/* object id */
	u32 other;		/* parent id, or the connector's QP id */
	u16 port;		/* a connector's destination port */
	NTSTATUS status;
};

#define NDK_OBS_MAX	256

/* Probes may run in any context, so the record takes a spinlock. */
static struct {
	spinlock_t lock; /* protects n and ev */
	unsigned int n;
	bool on;
	struct ndk_obs_event ev[NDK_OBS_MAX];
} ndk_obs = { .lock = __SPIN_LOCK_UNLOCKED(ndk_obs.lock) };

static void ndk_obs_add(const struct ndk_obs_event *e)
{
	unsigned long flags;

	spin_lock_irqsave(&ndk_obs.lock, flags);
	if (ndk_obs.n < NDK_OBS_MAX)
		ndk_obs.ev[ndk_obs.n++] = *e;
	spin_unlock_irqrestore(&ndk_obs.lock, flags);
}

static void ndk_obs_create(void *data, u32 type, u32 id, u32 parent,
			   NTSTATUS status)
{
	struct ndk_obs_event e = { .name = "object_create", .type = type,
				   .id = id, .other = parent,
				   .status = status };

	ndk_obs_add(&e);
}

static void ndk_obs_obj(void *data, const struct ndk_obj *obj)
{
	struct ndk_obs_event e = { .name = data, .type = obj->hdr->ObjectType,
				   .id = obj->id };

	ndk_obs_add(&e);
}

static void ndk_obs_callback(void *data, enum ndk_cb_kind kind, u32 type,
			     u32 id, NTSTATUS status)
{
	struct ndk_obs_event e = { .name = "callback", .kind = kind,
				   .type = type, .id = id, .status = status };

	ndk_obs_add(&e);
}

static void ndk_obs_conn(void *data, const struct ndk_connector *conn,
			 NTSTATUS status)
{
	const struct sockaddr_in *dst = (const void *)&conn->dst;
	struct ndk_obs_event e = { .name = data,
				   .type = NdkObjectTypeConnector,
				   .id = conn->obj.id,
				   .other = conn->qp ? conn->qp->obj.id : 0,
				   .port = ntohs(dst->sin_port),
				   .status = status };

	ndk_obs_add(&e);
}

static void ndk_obs_cm(void *data, const struct ndk_obj *obj,
		       const struct rdma_cm_event *ev)
{
	struct ndk_obs_event e = { .name = "cm_event", .kind = ev->event,
				   .type = obj->hdr->ObjectType,
				   .id = obj->id, .status = ev->status };

	ndk_obs_add(&e);
}

/* Stop recording; no probe runs once this returns. */
static void ndk_obs_stop(void)
{
	if (!ndk_obs.on)
		return;
	unregister_trace_ndk_object_create(ndk_obs_create, NULL);
	unregister_trace_ndk_object_close(ndk_obs_obj, "object_close");
	unregister_trace_ndk_close_done(ndk_obs_obj, "close_done");
	unregister_trace_ndk_callback(ndk_obs_callback, NULL);
	unregister_trace_ndk_connect(ndk_obs_conn, "connect");
	unregister_trace_ndk_accept(ndk_obs_conn, "accept");
	unregister_trace_ndk_complete_connect(ndk_obs_conn, "complete_connect");
	unregister_trace_ndk_cm_event(ndk_obs_cm, NULL);
	tracepoint_synchronize_unregister();
	ndk_obs.on = false;
}

static void ndk_obs_start(struct kunit *test)
{
	int err;

	ndk_obs.n = 0;
	ndk_obs.on = true;
	err = register_trace_ndk_object_create(ndk_obs_create, NULL);
	err = err ?: register_trace_ndk_object_close(ndk_obs_obj,
						     "object_close");
	err = err ?: register_trace_ndk_close_done(ndk_obs_obj, "close_done");
	err = err ?: register_trace_ndk_callback(ndk_obs_callback, NULL);
	err = err ?: register_trace_ndk_connect(ndk_obs_conn, "connect");
	err = err ?: register_trace_ndk_accept(ndk_obs_conn, "accept");
	err = err ?: register_trace_ndk_complete_connect(ndk_obs_conn,
							 "complete_connect");
	err = err ?: register_trace_ndk_cm_event(ndk_obs_cm, NULL);
	/* Unregistering what was never registered only returns an error. */
	if (err)
		ndk_obs_stop();
	KUNIT_ASSERT_EQ(test, err, 0);
}

/* Index of the first event from @from on that matches, or -1. */
static int ndk_obs_find(unsigned int from, const char *name, u32 kind,
			u32 type, u32 id)
{
	unsigned int i;

	for (i = from; i < ndk_obs.n; i++) {
		const struct ndk_obs_event *e = &ndk_obs.ev[i];

		if (!strcmp(e->name, name) && e->kind == kind &&
		    e->type == type && e->id == id)
			return i;
	}
	return -1;
}

static int ndk_obs_count(const char *name, u32 kind, u32 type, u32 id)
{
	int i = -1, n = 0;

	while ((i = ndk_obs_find(i + 1, name, kind, type, id)) >= 0)
		n++;
	return n;
}

/* The first matching event, which the case asserts is there. */
static const struct ndk_obs_event *ndk_obs_get(struct kunit *test,
					       const char *name, u32 kind,
					       u32 type, u32 id)
{
	int i = ndk_obs_find(0, name, kind, type, id);

	KUNIT_ASSERT_GE_MSG(test, i, 0, "no %s event for %u/%u", name, type,
			    id);
	return &ndk_obs.ev[i];
}

static int ndk_obs_init(struct kunit *test)
{
	return ndk_conn_init_test(test);
}

static void ndk_obs_exit(struct kunit *test)
{
	/* A case that failed half-way must not leave probes behind. */
	ndk_obs_stop();
	ndk_conn_exit_test(test);
}

/* A connection's life in trace events, with ids and statuses. */
static void ndk_obs_trace_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	u32 adapter = ndk_obs_id(&e->a->Header);
	u32 listener = ndk_obs_id(&e->listener->Header);
	const struct ndk_obs_event *ev;
	struct sockaddr_in dst;
	struct ndk_pair p;
	u32 c, in, aqp, pqp;
	int conn_at, req_at, acc_at, cc_at;

	ndk_obs_start(test);
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	c = ndk_obs_id(&p.c->Header);
	in = ndk_obs_id(&p.in->Header);
	aqp = ndk_obs_id(&p.aqp->Header);
	pqp = ndk_obs_id(&p.pqp->Header);
	ndk_pair_close(test, &p);
	ndk_obs_stop();

	KUNIT_EXPECT_NE(test, c, in);
	ev = ndk_obs_get(test, "object_create", 0, NdkObjectTypeConnector, c);
	KUNIT_EXPECT_EQ(test, ev->other, adapter);
	KUNIT_EXPECT_EQ(test, ev->status, STATUS_SUCCESS);
	/* The listener made the incoming connector. */
	ev = ndk_obs_get(test, "object_create", 0, NdkObjectTypeConnector, in);
	KUNIT_EXPECT_EQ(test, ev->other, listener);

	ev = ndk_obs_get(test, "connect", 0, NdkObjectTypeConnector, c);
	KUNIT_EXPECT_EQ(test, ev->other, aqp);
	KUNIT_EXPECT_EQ(test, ev->port, NDK_TEST_PORT);
	KUNIT_EXPECT_EQ(test, ev->status, STATUS_PENDING);
	ev = ndk_obs_get(test, "accept", 0, NdkObjectTypeConnector, in);
	KUNIT_EXPECT_EQ(test, ev->other, pqp);
	KUNIT_EXPECT_EQ(test, ev->status, STATUS_PENDING);
	/* From a test thread, which may sleep, it completes in the call. */
	ev = ndk_obs_get(test, "complete_connect", 0, NdkObjectTypeConnector,
			 c);
	KUNIT_EXPECT_EQ(test, ev->other, aqp);
	KUNIT_EXPECT_EQ(test, ev->status, NDK_TEST_INLINE);

	/*
	 * In the handshake's order. The connect event fires as NdkConnect
	 * returns, and the listener may hear the request before that on
	 * another CPU, so only the accept, which this thread calls after
	 * both, is ordered after each of them.
	 */
	conn_at = ndk_obs_find(0, "connect", 0, NdkObjectTypeConnector, c);
	req_at = ndk_obs_find(0, "cm_event", RDMA_CM_EVENT_CONNECT_REQUEST,
			      NdkObjectTypeListener, listener);
	acc_at = ndk_obs_find(0, "accept", 0, NdkObjectTypeConnector, in);
	cc_at = ndk_obs_find(0, "complete_connect", 0, NdkObjectTypeConnector,
			     c);
	KUNIT_EXPECT_GE(test, conn_at, 0);
	KUNIT_EXPECT_GE(test, req_at, 0);
	KUNIT_EXPECT_LT(test, conn_at, acc_at);
	KUNIT_EXPECT_LT(test, req_at, acc_at);
	KUNIT_EXPECT_LT(test, acc_at, cc_at);
	KUNIT_EXPECT_GE(test, ndk_obs_find(0, "callback", NDK_CB_CONNECT_EVENT,
					   NdkObjectTypeListener, listener),
			req_at);
	KUNIT_EXPECT_GE(test, ndk_obs_find(0, "cm_event",
					   RDMA_CM_EVENT_ESTABLISHED,
					   NdkObjectTypeConnector, in), 0);

	/* Connect (and complete) on the active side, accept on the other. */
	KUNIT_EXPECT_EQ(test, ndk_obs_count("callback", NDK_CB_REQUEST,
					    NdkObjectTypeConnector, c),
			IS_ENABLED(CONFIG_PREEMPT_COUNT) ? 1 : 2);
	KUNIT_EXPECT_EQ(test, ndk_obs_count("callback", NDK_CB_REQUEST,
					    NdkObjectTypeConnector, in), 1);
	ev = ndk_obs_get(test, "callback", NDK_CB_REQUEST,
			 NdkObjectTypeConnector, in);
	KUNIT_EXPECT_EQ(test, ev->status, STATUS_SUCCESS);

	/* Both connectors closed, were destroyed and completed the close. */
	KUNIT_EXPECT_GE(test, ndk_obs_find(0, "object_close", 0,
					   NdkObjectTypeConnector, c), 0);
	KUNIT_EXPECT_LT(test, ndk_obs_find(0, "object_close", 0,
					   NdkObjectTypeConnector, in),
			ndk_obs_find(0, "close_done", 0,
				     NdkObjectTypeConnector, in));
	/*
	 * The passive side closes while connected, which pends; the active
	 * side closes inline if the passive side's disconnect has reached
	 * it by then, with no callback (see ndk_conn_close_inline_test).
	 */
	KUNIT_EXPECT_EQ(test, ndk_obs_count("callback", NDK_CB_CLOSE,
					    NdkObjectTypeConnector, in), 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_count("close_done", 0,
					    NdkObjectTypeConnector, c), 1);
	KUNIT_EXPECT_LE(test, ndk_obs_count("callback", NDK_CB_CLOSE,
					    NdkObjectTypeConnector, c), 1);
	/*
	 * Closed after its connector, from a test thread that may sleep,
	 * the QP goes inline where the kernel can tell, without a callback.
	 */
	KUNIT_EXPECT_EQ(test, ndk_obs_count("close_done", 0, NdkObjectTypeQp,
					    pqp), 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_count("callback", NDK_CB_CLOSE,
					    NdkObjectTypeQp, pqp),
			IS_ENABLED(CONFIG_PREEMPT_COUNT) ? 0 : 1);
	KUNIT_EXPECT_LE(test, ndk_obs.n, (unsigned int)NDK_OBS_MAX - 1);
}

/* A reject and a refusal: counted on both sides, traced with statuses. */
static void ndk_obs_failure_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	NDK_CONNECTOR *c2 = ndk_cenv_connector(test, e);
	NDK_QP *qp2 = ndk_cenv_qp(test, e);
	const struct ndk_obs_event *ev;
	struct ndk_wait cw, cw2;
	char *before, *after;

	before = ndk_obs_read(test, e, "stats");
	ndk_obs_start(test);
	e->reject = true;
	ndk_cenv_connect_done(test, e, c, qp, NDK_TEST_PORT, &cw);
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	ndk_close_all(test, e->incoming, NULL);
	ndk_close_all(test, c, qp);

	/* Nobody listens there; a QP serves one connection attempt. */
	ndk_cenv_connect_done(test, e, c2, qp2, NDK_TEST_PORT + 1, &cw2);
	KUNIT_EXPECT_EQ(test, cw2.status, STATUS_CONNECTION_REFUSED);
	ndk_obs_stop();

	ev = ndk_obs_get(test, "callback", NDK_CB_REQUEST,
			 NdkObjectTypeConnector, ndk_obs_id(&c2->Header));
	KUNIT_EXPECT_EQ(test, ev->status, STATUS_CONNECTION_REFUSED);
	/*
	 * siw opens the TCP connection inside rdma_connect(), which then
	 * fails by itself; elsewhere the peer's CM rejects.
	 */
	if (ndk_test_iwarp()) {
		KUNIT_EXPECT_EQ(test, ndk_obs_count("cm_event",
						    RDMA_CM_EVENT_REJECTED,
						    NdkObjectTypeConnector,
						    ndk_obs_id(&c2->Header)),
				0);
	} else {
		ev = ndk_obs_get(test, "cm_event", RDMA_CM_EVENT_REJECTED,
				 NdkObjectTypeConnector,
				 ndk_obs_id(&c2->Header));
		KUNIT_EXPECT_NE(test, ev->status, 0);
	}

	after = ndk_obs_read(test, e, "stats");
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "connects"),
			ndk_obs_stat(test, before, "connects") + 2);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "rejects"),
			ndk_obs_stat(test, before, "rejects") + 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "connect_failures"),
			ndk_obs_stat(test, before, "connect_failures") + 2);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "accepts"),
			ndk_obs_stat(test, before, "accepts"));
	ndk_close_all(test, c2, qp2);
}

static struct kunit_case ndk_trace_cases[] = {
	KUNIT_CASE(ndk_obs_trace_test),
	KUNIT_CASE(ndk_obs_failure_test),
	{}
};

NDK_SUITE(trace, ndk_obs_init, ndk_obs_exit);
