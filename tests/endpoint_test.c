// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_endpoint, the tests of ndk/endpoint.c: shared endpoints, the table
 * of their connections, the reference counting of the addresses
 * connectors, listeners and shared endpoints hold, and a local port range
 * with no port left.
 */
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>
#include "ndk_tests.h"
#include "trace.h"

static NDK_SHARED_ENDPOINT *ndk_cenv_sep(struct kunit *test,
					 struct ndk_cenv *e, u16 port,
					 NTSTATUS *status)
{
	struct sockaddr_in sin = e->addr;
	NDK_SHARED_ENDPOINT *unused = NULL;
	unsigned long flags;
	struct ndk_wait w;
	NTSTATUS st;

	sin.sin_port = htons(port);
	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
						     (struct sockaddr *)&sin,
						     sizeof(sin),
						     ndk_test_create_cb, &w,
						     &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	*status = w.status;
	return w.obj ? container_of(w.obj, NDK_SHARED_ENDPOINT, Header) : NULL;
}

#define NDK_PORT_RANGE	"/proc/sys/net/ipv4/ip_local_port_range"

/* Read (@buf of @len bytes) or write net.ipv4.ip_local_port_range. */
static int ndk_port_range(char *buf, size_t len, bool write)
{
	return ndk_rw_file(NDK_PORT_RANGE, buf, len, write);
}

static int ndk_idle_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	return 0;
}

static void ndk_endpoint_create_in(struct ndk_test_call *c)
{
	struct ndk_cenv *e = c->arg;
	/* Port 0: an ephemeral port, none of the suite's. */
	struct sockaddr_in sin = e->addr;

	c->st = e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
							(struct sockaddr *)&sin,
							sizeof(sin),
							ndk_test_create_cb,
							&c->w,
							(NDK_SHARED_ENDPOINT **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_endpoint_contexts_test(struct kunit *test)
{
	ndk_test_contexts(test, ndk_endpoint_create_in, test->priv);
}

/*
 * With the ephemeral range down to one port and that port taken, NdkConnect,
 * NdkListen and NdkCreateSharedEndpoint asked for port 0 all report
 * STATUS_TOO_MANY_ADDRESSES. Only EXPECTs until the range is restored.
 */
static void ndk_endpoint_no_port_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in src = e->addr, dst;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_LISTENER *l = ndk_cenv_listener(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	char old[32], one[] = "61000 61000";
	NDK_SHARED_ENDPOINT *sep;
	struct rdma_cm_id *id;
	struct ndk_wait cw, lw;
	NTSTATUS st;

	id = rdma_create_id(&init_net, ndk_idle_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	KUNIT_ASSERT_FALSE(test, IS_ERR(id));
	src.sin_port = htons(61000);
	KUNIT_EXPECT_EQ(test, rdma_bind_addr(id, (struct sockaddr *)&src), 0);
	src.sin_port = 0;
	ndk_listen_addr(e, &dst);
	KUNIT_EXPECT_EQ(test, ndk_port_range(old, sizeof(old), false), 0);
	KUNIT_EXPECT_EQ(test, ndk_port_range(one, 0, true), 0);

	ndk_wait_init(&cw);
	st = ndk_connect_to(c, qp, (struct sockaddr *)&src,
			    (struct sockaddr *)&dst, sizeof(dst), true, &cw);
	if (st == STATUS_PENDING && ndk_wait_for(&cw))
		st = cw.status;
	KUNIT_EXPECT_EQ(test, st, STATUS_TOO_MANY_ADDRESSES);

	ndk_wait_init(&lw);
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&src, sizeof(src),
				    ndk_test_request_cb, &lw);
	if (st == STATUS_PENDING && ndk_wait_for(&lw))
		st = lw.status;
	KUNIT_EXPECT_EQ(test, st, STATUS_TOO_MANY_ADDRESSES);

	sep = ndk_cenv_sep(test, e, 0, &st);
	KUNIT_EXPECT_EQ(test, st, STATUS_TOO_MANY_ADDRESSES);
	KUNIT_EXPECT_NULL(test, sep);

	KUNIT_EXPECT_EQ(test, ndk_port_range(old, 0, true), 0);
	rdma_destroy_id(id);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
	ndk_close_all(test, c, qp);
	/* The range is back: port 0 works again. */
	sep = ndk_cenv_sep(test, e, 0, &st);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	if (sep)
		ndk_test_close(test, &sep->Header,
			       sep->Dispatch->NdkCloseSharedEndpoint);
}

/*
 * Two connections from one shared endpoint's port to two destinations; a
 * third to a destination already used would repeat a four-tuple. The port
 * stays taken until the endpoint and its connectors are closed, and the
 * endpoint's close waits for them.
 */
static void ndk_endpoint_shared_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	const u16 port = NDK_TEST_PORT + 3;
	struct sockaddr_in dst, local;
	NDK_SHARED_ENDPOINT *sep, *dup;
	const NDK_CONNECTOR_DISPATCH *d;
	struct ndk_pair p[2];
	struct ndk_wait cw, aw, ccw, sw;
	NDK_LISTENER *l, *l2;
	NDK_CONNECTOR *c3;
	NDK_QP *qp3;
	NTSTATUS status;
	ULONG len;
	int i;

	sep = ndk_cenv_sep(test, e, port, &status);
	KUNIT_ASSERT_EQ(test, status, STATUS_SUCCESS);
	len = sizeof(local);
	KUNIT_EXPECT_EQ(test, sep->Dispatch->NdkGetLocalAddress(sep,
								(struct sockaddr *)&local,
								&len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ntohs(local.sin_port), port);
	/* The address is the endpoint's alone. */
	dup = ndk_cenv_sep(test, e, port, &status);
	KUNIT_EXPECT_EQ(test, status, STATUS_SHARING_VIOLATION);
	KUNIT_EXPECT_NULL(test, dup);

	/* Two destinations: one endpoint connects once to each. */
	l2 = ndk_cenv_listener(test, e);
	KUNIT_ASSERT_EQ(test, ndk_cenv_listen(test, e, l2, NDK_TEST_PORT + 4),
			STATUS_SUCCESS);
	for (i = 0; i < 2; i++) {
		ndk_listen_addr(e, &dst);
		if (i)
			dst.sin_port = htons(NDK_TEST_PORT + 4);
		p[i].c = ndk_cenv_connector(test, e);
		p[i].aqp = ndk_cenv_qp(test, e);
		p[i].pqp = ndk_cenv_qp(test, e);
		reinit_completion(&e->incoming_done);
		ndk_wait_init(&cw);
		d = p[i].c->Dispatch;
		status = d->NdkConnectWithSharedEndpoint(p[i].c, p[i].aqp, sep,
							 (struct sockaddr *)&dst,
							 sizeof(dst), 2, 2,
							 NULL, 0,
							 ndk_test_request_cb,
							 &cw);
		KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&e->incoming_done,
							    NDK_TEST_TIMEOUT),
				0UL);
		p[i].in = e->incoming;
		ndk_wait_init(&aw);
		KUNIT_ASSERT_EQ(test, p[i].in->Dispatch->NdkAccept(p[i].in,
								   p[i].pqp, 2,
								   2, NULL, 0,
								   NULL, NULL,
								   ndk_test_request_cb,
								   &aw),
				STATUS_PENDING);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
		KUNIT_ASSERT_EQ(test, cw.status, STATUS_SUCCESS);
		ndk_wait_init(&ccw);
		status = d->NdkCompleteConnect(p[i].c, NULL, NULL,
					       ndk_test_request_cb, &ccw);
		KUNIT_ASSERT_EQ(test, ndk_test_outcome(test, &ccw, status),
				STATUS_SUCCESS);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&aw));
		len = sizeof(local);
		status = d->NdkGetLocalAddress(p[i].c,
					       (struct sockaddr *)&local, &len);
		KUNIT_EXPECT_EQ(test, status, STATUS_SUCCESS);
		KUNIT_EXPECT_EQ(test, ntohs(local.sin_port), port);
		ndk_conn_traffic(test, e, p[i].aqp, p[i].pqp);
	}

	/* A second connection to the first destination: same four-tuple. */
	c3 = ndk_cenv_connector(test, e);
	qp3 = ndk_cenv_qp(test, e);
	ndk_listen_addr(e, &dst);
	ndk_wait_init(&cw);
	status = c3->Dispatch->NdkConnectWithSharedEndpoint(c3, qp3, sep,
							    (struct sockaddr *)&dst,
							    sizeof(dst), 2, 2,
							    NULL, 0,
							    ndk_test_request_cb,
							    &cw);
	KUNIT_EXPECT_EQ(test, status, STATUS_ADDRESS_ALREADY_EXISTS);
	ndk_close_all(test, c3, qp3);

	ndk_wait_init(&sw);
	status = sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header,
						       ndk_test_close_cb, &sw);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	l = ndk_cenv_listener(test, e);
	for (i = 0; i < 2; i++) {
		/* The port is still taken: a listen on it fails. */
		KUNIT_EXPECT_EQ(test, ndk_cenv_listen(test, e, l, port),
				STATUS_SHARING_VIOLATION);
		KUNIT_EXPECT_FALSE(test, completion_done(&sw.done));
		ndk_pair_close(test, &p[i]);
	}
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&sw));
	KUNIT_EXPECT_EQ(test, ndk_cenv_listen(test, e, l, port),
			STATUS_SUCCESS);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
	ndk_test_close(test, &l2->Header, l2->Dispatch->NdkCloseListener);
}

/*
 * The implicit endpoint of a listener: after the listener closed, its
 * port stays taken until the last accepted connector is closed.
 */
static void ndk_endpoint_listener_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct sockaddr_in dst;
	struct ndk_wait lw;
	struct ndk_pair p;
	NDK_LISTENER *l;

	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_wait_init(&lw);
	KUNIT_ASSERT_EQ(test, ndk_listener_close(e->listener, &lw),
			STATUS_PENDING);
	e->listener = NULL;
	l = ndk_cenv_listener(test, e);
	KUNIT_EXPECT_EQ(test, ndk_cenv_listen(test, e, l, NDK_TEST_PORT),
			STATUS_SHARING_VIOLATION);
	ndk_pair_close(test, &p);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&lw));
	KUNIT_EXPECT_EQ(test, ndk_cenv_listen(test, e, l, NDK_TEST_PORT),
			STATUS_SUCCESS);
	e->listener = l;
}

/* Connections ndk_endpoint_table_test() opens from one endpoint. */
#define NDK_SEP_TABLE_CONNS	2048

/* Destination @i of ndk_endpoint_table_test(): distinct for each @i. */
static void ndk_sep_table_dst(struct ndk_connector *c, u32 i, bool v6)
{
	memset(&c->dst, 0, sizeof(c->dst));
	if (v6) {
		c->dst.in6.sin6_family = AF_INET6;
		c->dst.in6.sin6_addr.s6_addr32[0] = htonl(0xfd000000);
		c->dst.in6.sin6_addr.s6_addr32[3] = htonl(i / 4);
		c->dst.in6.sin6_port = htons(4791 + i % 4);
		return;
	}
	c->dst.in.sin_family = AF_INET;
	c->dst.in.sin_addr.s_addr = htonl(0x0a000000 | i / 4);
	c->dst.in.sin_port = htons(4791 + i % 4);
}

/*
 * Expect @c's destination to be refused from @sep. A connector the table
 * took anyway is taken out again, so that a failure cannot leave the
 * test's memory linked in ndk's table.
 */
static void ndk_sep_table_refused(struct kunit *test, struct ndk_sep *sep,
				  struct ndk_connector *c)
{
	NTSTATUS status = ndk_sep_add_conn(sep, c);

	KUNIT_EXPECT_EQ(test, status, STATUS_ADDRESS_ALREADY_EXISTS);
	if (status == STATUS_SUCCESS)
		ndk_sep_del_conn(c);
}

/*
 * The table of connections from shared endpoints, alone: with more
 * connections from one endpoint than the table has buckets, each
 * destination is refused to a second connection from that endpoint only,
 * over IPv4 and IPv6, and is free again once its connection leaves.
 */
static void ndk_endpoint_table_test(struct kunit *test)
{
	struct ndk_connector **c, *other;
	struct ndk_sep *sep;
	bool v6;
	u32 i;

	sep = kunit_kcalloc(test, 2, sizeof(*sep), GFP_KERNEL);
	other = kunit_kzalloc(test, sizeof(*other), GFP_KERNEL);
	c = kunit_kcalloc(test, NDK_SEP_TABLE_CONNS, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, sep);
	KUNIT_ASSERT_NOT_NULL(test, other);
	KUNIT_ASSERT_NOT_NULL(test, c);
	for (i = 0; i < NDK_SEP_TABLE_CONNS; i++) {
		c[i] = kunit_kzalloc(test, sizeof(*c[i]), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, c[i]);
	}
	for (i = 0; i < NDK_SEP_TABLE_CONNS; i++) {
		ndk_sep_table_dst(c[i], i, i % 2);
		KUNIT_EXPECT_EQ(test, ndk_sep_add_conn(&sep[0], c[i]),
				STATUS_SUCCESS);
	}
	for (i = 0; i < NDK_SEP_TABLE_CONNS; i++) {
		v6 = i % 2;
		ndk_sep_table_dst(other, i, v6);
		ndk_sep_table_refused(test, &sep[0], other);
		/* Another endpoint: another four-tuple. */
		KUNIT_EXPECT_EQ(test, ndk_sep_add_conn(&sep[1], other),
				STATUS_SUCCESS);
		ndk_sep_del_conn(other);
		/* The same address over the other family. */
		ndk_sep_table_dst(other, i, !v6);
		KUNIT_EXPECT_EQ(test, ndk_sep_add_conn(&sep[0], other),
				STATUS_SUCCESS);
		ndk_sep_del_conn(other);
	}
	for (i = 0; i < NDK_SEP_TABLE_CONNS; i += 2) {
		ndk_sep_del_conn(c[i]);
		ndk_sep_table_dst(other, i, false);
		KUNIT_EXPECT_EQ(test, ndk_sep_add_conn(&sep[0], other),
				STATUS_SUCCESS);
		ndk_sep_del_conn(other);
		ndk_sep_table_dst(other, i + 1, true);
		ndk_sep_table_refused(test, &sep[0], other);
	}
	for (i = 1; i < NDK_SEP_TABLE_CONNS; i += 2)
		ndk_sep_del_conn(c[i]);
}

/*
 * NdkCreateSharedEndpoint without a completion or an address, and
 * NdkConnectWithSharedEndpoint with no endpoint or another object in
 * its place, fail inline with no callback.
 */
static void ndk_endpoint_args_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_SHARED_ENDPOINT *unused = NULL;
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct sockaddr_in sin = e->addr, dst;
	NDK_FN_CONNECT_WITH_SHARED_ENDPOINT cws =
		c->Dispatch->NdkConnectWithSharedEndpoint;
	NDK_SHARED_ENDPOINT *not_sep = (NDK_SHARED_ENDPOINT *)e->cq;
	struct sockaddr *to = (struct sockaddr *)&dst;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_listen_addr(e, &dst);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
								      (struct sockaddr *)&sin,
								      sizeof(sin),
								      NULL, &w,
								      &unused),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
								      (struct sockaddr *)&sin,
								      0,
								      ndk_test_create_cb,
								      &w, &unused),
			STATUS_INVALID_PARAMETER);
	/* The wildcard address binds no device, so not the adapter's. */
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	sin.sin_port = htons(NDK_TEST_PORT + 8);
	st = e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
						     (struct sockaddr *)&sin,
						     sizeof(sin),
						     ndk_test_create_cb, &w,
						     &unused);
	KUNIT_EXPECT_EQ(test, ndk_test_outcome(test, &w, st),
			STATUS_INVALID_ADDRESS);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, cws(c, qp, NULL, to, sizeof(dst), 1, 1, NULL, 0,
				  ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, cws(c, qp, not_sep, to, sizeof(dst), 1, 1, NULL,
				  0, ndk_test_request_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
	ndk_close_all(test, c, qp);
}

/*
 * Two shared endpoints on two ports of one address are both created (the
 * second passes over the first), and NdkConnectWithSharedEndpoint
 * refuses, with no callback, an endpoint of another adapter instance and
 * one whose close is pending because a connector it started still holds
 * it. That close completes once the connector is closed.
 */
static void ndk_endpoint_closing_test(struct kunit *test)
{
	struct ndk_wait *w = ndk_kzalloc_test(test, 3 * sizeof(*w));
	struct ndk_cenv *e = test->priv, other = *e;
	NDK_SHARED_ENDPOINT *sep, *sep2, *osep;
	struct ndk_wait *cw = &w[0], *sw = &w[1], *rw = &w[2];
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_CONNECTOR *c2 = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e), *qp2 = ndk_cenv_qp(test, e);
	NDK_FN_CONNECT_WITH_SHARED_ENDPOINT cws =
		c->Dispatch->NdkConnectWithSharedEndpoint;
	struct sockaddr_in dst, local;
	ULONG len = sizeof(local);
	NTSTATUS st;

	ndk_listen_addr(e, &dst);
	sep = ndk_cenv_sep(test, e, NDK_TEST_PORT + 6, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	sep2 = ndk_cenv_sep(test, e, NDK_TEST_PORT + 7, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, sep2->Dispatch->NdkGetLocalAddress(sep2,
								 (struct sockaddr *)&local,
								 &len),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ntohs(local.sin_port), NDK_TEST_PORT + 7);

	/* An endpoint of another instance of the adapter. */
	other.a = ndk_test_open(test);
	osep = ndk_cenv_sep(test, &other, NDK_TEST_PORT + 9, &st);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	ndk_wait_init(rw);
	if (osep) {
		KUNIT_EXPECT_EQ(test, cws(c2, qp2, osep, (struct sockaddr *)&dst,
					  sizeof(dst), 1, 1, NULL, 0,
					  ndk_test_request_cb, rw),
				STATUS_INVALID_PARAMETER);
		ndk_test_close(test, &osep->Header,
			       osep->Dispatch->NdkCloseSharedEndpoint);
	}
	ndk_test_close_adapter(test, other.a);

	/* A request from the first endpoint holds it. */
	reinit_completion(&e->incoming_done);
	ndk_wait_init(cw);
	KUNIT_ASSERT_EQ(test, cws(c, qp, sep, (struct sockaddr *)&dst,
				  sizeof(dst), 1, 1, NULL, 0,
				  ndk_test_request_cb, cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	ndk_wait_init(sw);
	KUNIT_EXPECT_EQ(test, sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header,
								    ndk_test_close_cb,
								    sw),
			STATUS_PENDING);
	KUNIT_EXPECT_EQ(test, cws(c2, qp2, sep, (struct sockaddr *)&dst,
				  sizeof(dst), 1, 1, NULL, 0,
				  ndk_test_request_cb, rw),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_FALSE(test, completion_done(&sw->done));

	/* Closing the unanswered request refuses the connection. */
	ndk_close_all(test, e->incoming, NULL);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(cw));
	KUNIT_EXPECT_EQ(test, cw->status, STATUS_CONNECTION_REFUSED);
	ndk_close_all(test, c, qp);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(sw));
	KUNIT_EXPECT_EQ(test, atomic_read(&sw->calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&rw->calls), 0);
	ndk_close_all(test, c2, qp2);
	ndk_test_close(test, &sep2->Header,
		       sep2->Dispatch->NdkCloseSharedEndpoint);
}

/* What rdma_cm told a shared endpoint's id (ndk_cm_event's trace). */
struct ndk_sep_heard {
	const struct ndk_obj *obj;
	struct completion removal;
};

static void ndk_sep_heard_cm(void *data, const struct ndk_obj *obj,
			     const struct rdma_cm_event *ev)
{
	struct ndk_sep_heard *h = data;

	if (obj == READ_ONCE(h->obj) &&
	    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		complete(&h->removal);
}

/*
 * A shared endpoint only holds its address: when its device goes,
 * rdma_cm's DEVICE_REMOVAL on its id finds nothing to do, and the
 * removal waits for the consumer to close the endpoint and the adapter.
 */
static void ndk_endpoint_removed_test(struct kunit *test)
{
	struct ndk_cenv *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct ndk_sep_heard h = {};
	struct ndk_test_removal rm;
	NDK_SHARED_ENDPOINT *sep;
	struct ndk_test_dev2 *d;
	NTSTATUS st;
	bool heard;

	KUNIT_ASSERT_NOT_NULL(test, e);
	d = ndk_test_dev2_add(test);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, ndk_open_adapter(d->ifindex, v, &d->a),
			STATUS_SUCCESS);
	e->a = d->a;
	e->addr = d->addr;
	sep = ndk_cenv_sep(test, e, 0, &st);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, sep);
	init_completion(&h.removal);
	h.obj = ndk_obj_of(&sep->Header);
	KUNIT_ASSERT_EQ(test, register_trace_ndk_cm_event(ndk_sep_heard_cm, &h),
			0);

	/* No assertion until the device is gone: @rm and @h are on the stack. */
	ndk_test_dev2_remove(d, &rm);
	heard = wait_for_completion_timeout(&h.removal, NDK_TEST_TIMEOUT);
	KUNIT_EXPECT_TRUE(test, heard);
	ndk_test_close(test, &sep->Header,
		       sep->Dispatch->NdkCloseSharedEndpoint);
	ndk_close_adapter(d->a);
	d->a = NULL;
	KUNIT_EXPECT_EQ(test, ndk_test_dev2_removed(&rm), 0);
	unregister_trace_ndk_cm_event(ndk_sep_heard_cm, &h);
	tracepoint_synchronize_unregister();
	ndk_test_dev2_del(test, d);
}

static struct kunit_case ndk_endpoint_cases[] = {
	KUNIT_CASE(ndk_endpoint_contexts_test),
	KUNIT_CASE(ndk_endpoint_args_test),
	KUNIT_CASE(ndk_endpoint_shared_test),
	KUNIT_CASE(ndk_endpoint_closing_test),
	KUNIT_CASE(ndk_endpoint_table_test),
	KUNIT_CASE(ndk_endpoint_listener_test),
	KUNIT_CASE(ndk_endpoint_no_port_test),
	KUNIT_CASE(ndk_endpoint_removed_test),
	{}
};

NDK_SUITE(endpoint, ndk_conn_init_test, ndk_conn_exit_test);
