// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_debugfs, the tests of ndk/debugfs.c: the connections, endpoints
 * and stats files, read back from the kernel while a connection is up;
 * the counters must move.
 */
#include "ndk_tests.h"

/* A connections line of connector @id, split into its fields. */
struct ndk_obs_line {
	u32 conn, qp, qpn, ird, ord;
	char local[64], peer[64], state[16];
};

static bool ndk_obs_conn_line(const char *text, u32 id,
			      struct ndk_obs_line *l)
{
	const char *line;

	for (line = text; line; line = ndk_obs_next(line))
		if (sscanf(line, "%u %u %63s %63s %15s %u %u %u", &l->conn,
			   &l->qp, l->local, l->peer, l->state, &l->qpn,
			   &l->ird, &l->ord) == 8 && l->conn == id)
			return true;
	return false;
}

static void ndk_obs_addr_str(char *buf, size_t len, NDK_CONNECTOR *c,
			     bool local)
{
	struct sockaddr_storage ss = {};
	ULONG sz = sizeof(ss);

	if (local)
		c->Dispatch->NdkGetLocalAddress(c, (struct sockaddr *)&ss, &sz);
	else
		c->Dispatch->NdkGetPeerAddress(c, (struct sockaddr *)&ss, &sz);
	snprintf(buf, len, "%pISpc", &ss);
}

/* One connector's line names its QP, addresses, state and limits. */
static void ndk_obs_expect_line(struct kunit *test, const char *text,
				NDK_CONNECTOR *c, NDK_QP *qp)
{
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);
	char local[64], peer[64];
	struct ndk_obs_line l;

	KUNIT_ASSERT_TRUE_MSG(test, ndk_obs_conn_line(text, ndk_obs_id(&c->Header),
						      &l),
			      "connector %u missing:\n%s",
			      ndk_obs_id(&c->Header), text);
	ndk_obs_addr_str(local, sizeof(local), c, true);
	ndk_obs_addr_str(peer, sizeof(peer), c, false);
	KUNIT_EXPECT_EQ(test, l.qp, ndk_obs_id(&qp->Header));
	KUNIT_EXPECT_EQ(test, l.qpn, q->ibqp->qp_num);
	KUNIT_EXPECT_STREQ(test, l.local, local);
	KUNIT_EXPECT_STREQ(test, l.peer, peer);
	KUNIT_EXPECT_STREQ(test, l.state, "ESTABLISHED");
	/* Both sides asked for 4; rxe allows more. */
	KUNIT_EXPECT_EQ(test, l.ird, 4U);
	KUNIT_EXPECT_EQ(test, l.ord, 4U);
}

/* The endpoints line of object @id: kind, address and state. */
static bool ndk_obs_ep_line(const char *text, u32 id, char *kind,
			    char *addr, char *state)
{
	const char *line;
	u32 got;

	for (line = text; line; line = ndk_obs_next(line))
		if (sscanf(line, "%u %15s %63s %15s", &got, kind, addr,
			   state) == 4 && got == id)
			return true;
	return false;
}

/* debugfs during a connection: its lines, the listener, the counters. */
static void ndk_obs_debugfs_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	char kind[16], addr[64], state[16], listen[64];
	char *text, *before, *after;
	struct ndk_obs_line unused;
	struct sockaddr_in dst;
	NDK_RESULT r[2];
	struct ndk_pair p;
	bool found;
	u32 c;

	before = ndk_obs_read(test, e, "stats");
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);

	text = ndk_obs_read(test, e, "connections");
	ndk_obs_expect_line(test, text, p.c, p.aqp);
	ndk_obs_expect_line(test, text, p.in, p.pqp);
	KUNIT_EXPECT_NULL(test, strstr(text, "0x"));

	text = ndk_obs_read(test, e, "endpoints");
	found = ndk_obs_ep_line(text, ndk_obs_id(&e->listener->Header), kind,
				addr, state);
	KUNIT_ASSERT_TRUE_MSG(test, found, "no listener line:\n%s", text);
	snprintf(listen, sizeof(listen), "%pISpc", &dst);
	KUNIT_EXPECT_STREQ(test, kind, "listener");
	KUNIT_EXPECT_STREQ(test, addr, listen);
	KUNIT_EXPECT_STREQ(test, state, "listening");

	/* Zero-length messages: one receive and one send, both polled. */
	KUNIT_ASSERT_EQ(test,
			p.pqp->Dispatch->NdkReceive(p.pqp, (void *)1, NULL, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test,
			p.aqp->Dispatch->NdkSend(p.aqp, (void *)2, NULL, 0, 0),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, ndk_poll_results(e->cq, r, 2), 2UL);

	after = ndk_obs_read(test, e, "stats");
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "connects"),
			ndk_obs_stat(test, before, "connects") + 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "accepts"),
			ndk_obs_stat(test, before, "accepts") + 1);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "requests_posted"),
			ndk_obs_stat(test, before, "requests_posted") + 2);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "requests_completed"),
			ndk_obs_stat(test, before, "requests_completed") + 2);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "cq_errors"),
			ndk_obs_stat(test, before, "cq_errors"));
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after,
					   "established_connections"), 2ULL);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "open_connectors"),
			ndk_obs_stat(test, before, "open_connectors") + 2);
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after, "open_qps"),
			ndk_obs_stat(test, before, "open_qps") + 2);
	KUNIT_EXPECT_GE(test, ndk_obs_stat(test, after, "open_adapters"), 1ULL);

	c = ndk_obs_id(&p.c->Header);
	ndk_pair_close(test, &p);
	after = ndk_obs_read(test, e, "stats");
	KUNIT_EXPECT_EQ(test, ndk_obs_stat(test, after,
					   "established_connections"), 0ULL);
	text = ndk_obs_read(test, e, "connections");
	KUNIT_EXPECT_FALSE(test, ndk_obs_conn_line(text, c, &unused));
}

/* The endpoints line of listener @l: its address and state. */
static void ndk_obs_expect_listener(struct kunit *test, struct ndk_cenv *e,
				    NDK_LISTENER *l, const char *want_addr,
				    const char *want_state)
{
	char kind[16], addr[64], state[16], *text;

	text = ndk_obs_read(test, e, "endpoints");
	KUNIT_ASSERT_TRUE_MSG(test, ndk_obs_ep_line(text, ndk_obs_id(&l->Header),
						    kind, addr, state),
			      "no listener line:\n%s", text);
	KUNIT_EXPECT_STREQ(test, kind, "listener");
	KUNIT_EXPECT_STREQ(test, addr, want_addr);
	KUNIT_EXPECT_STREQ(test, state, want_state);
}

/*
 * A listener's line through its life: idle and without an address
 * before NdkListen, then listening at the address it asked for, paused
 * while NdkControlConnectEvents holds its requests back, listening again.
 */
static void ndk_obs_listener_states_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LISTENER *l = ndk_cenv_listener(test, e);
	struct sockaddr_in sin = e->addr;
	char addr[64];

	ndk_obs_expect_listener(test, e, l, "-", "idle");
	KUNIT_ASSERT_EQ(test, ndk_cenv_listen(test, e, l, NDK_TEST_PORT + 5),
			STATUS_SUCCESS);
	sin.sin_port = htons(NDK_TEST_PORT + 5);
	snprintf(addr, sizeof(addr), "%pISpc", &sin);
	ndk_obs_expect_listener(test, e, l, addr, "listening");
	l->Dispatch->NdkControlConnectEvents(l, TRUE);
	ndk_obs_expect_listener(test, e, l, addr, "paused");
	l->Dispatch->NdkControlConnectEvents(l, FALSE);
	ndk_obs_expect_listener(test, e, l, addr, "listening");
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
}

/* A shared endpoint of the case's adapter at @port of its address. */
static NDK_SHARED_ENDPOINT *ndk_obs_sep(struct kunit *test,
					struct ndk_cenv *e, u16 port)
{
	NDK_SHARED_ENDPOINT *made = NULL;
	struct sockaddr_in sin = e->addr;
	struct ndk_wait w;
	NTSTATUS st;

	sin.sin_port = htons(port);
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
						     (struct sockaddr *)&sin,
						     sizeof(sin),
						     ndk_test_create_cb, &w,
						     &made);
	return container_of(ndk_created(test, st, &w, made),
			    NDK_SHARED_ENDPOINT, Header);
}

/* The endpoints line of @hdr is of @want_kind, at @port, in @want_state. */
static void ndk_obs_expect_ep(struct kunit *test, struct ndk_cenv *e,
			      const char *text, NDK_OBJECT_HEADER *hdr,
			      const char *want_kind, u16 port,
			      const char *want_state)
{
	char kind[16], addr[64], state[16], want[64];
	struct sockaddr_in sin = e->addr;

	KUNIT_ASSERT_TRUE_MSG(test, ndk_obs_ep_line(text, ndk_obs_id(hdr), kind,
						    addr, state),
			      "no line of %u:\n%s", ndk_obs_id(hdr), text);
	sin.sin_port = htons(port);
	snprintf(want, sizeof(want), "%pISpc", &sin);
	KUNIT_EXPECT_STREQ(test, kind, want_kind);
	KUNIT_EXPECT_STREQ(test, addr, want);
	KUNIT_EXPECT_STREQ(test, state, want_state);
}

/*
 * What the files show while closes pend and connectors have no QP: a
 * listener whose close waits for the request it handed out, "closing";
 * a shared endpoint bound, and one whose close waits for the connector
 * it started, "closing"; connections lists neither an idle connector
 * nor the unanswered one, only the connecting one with its QP.
 */
static void ndk_obs_pending_test(struct kunit *test)
{
	struct ndk_wait *w = ndk_kzalloc_test(test, 3 * sizeof(*w));
	struct ndk_wait *cw = &w[0], *lw = &w[1], *sw = &w[2];
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *idle = ndk_cenv_connector(test, e);
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	NDK_SHARED_ENDPOINT *sep, *sep2;
	NDK_LISTENER *l = e->listener;
	struct ndk_obs_line line;
	struct sockaddr_in dst;
	char *text;

	sep = ndk_obs_sep(test, e, NDK_TEST_PORT + 6);
	sep2 = ndk_obs_sep(test, e, NDK_TEST_PORT + 7);
	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	ndk_wait_init(cw);
	KUNIT_ASSERT_EQ(test,
			c->Dispatch->NdkConnectWithSharedEndpoint(c, qp, sep,
								  (struct sockaddr *)&dst,
								  sizeof(dst),
								  1, 1, NULL,
								  0,
								  ndk_test_request_cb,
								  cw),
			STATUS_PENDING);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&e->incoming_done,
							  NDK_TEST_TIMEOUT),
			0UL);
	ndk_wait_init(sw);
	KUNIT_EXPECT_EQ(test, sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header,
								    ndk_test_close_cb,
								    sw),
			STATUS_PENDING);
	ndk_wait_init(lw);
	KUNIT_ASSERT_EQ(test, ndk_listener_close(l, lw), STATUS_PENDING);
	e->listener = NULL;

	text = ndk_obs_read(test, e, "endpoints");
	ndk_obs_expect_ep(test, e, text, &l->Header, "listener", NDK_TEST_PORT,
			  "closing");
	ndk_obs_expect_ep(test, e, text, &sep->Header, "shared",
			  NDK_TEST_PORT + 6, "closing");
	ndk_obs_expect_ep(test, e, text, &sep2->Header, "shared",
			  NDK_TEST_PORT + 7, "bound");

	text = ndk_obs_read(test, e, "connections");
	KUNIT_EXPECT_FALSE(test, ndk_obs_conn_line(text,
						   ndk_obs_id(&idle->Header),
						   &line));
	KUNIT_EXPECT_FALSE(test,
			   ndk_obs_conn_line(text,
					     ndk_obs_id(&e->incoming->Header),
					     &line));
	KUNIT_EXPECT_TRUE(test, ndk_obs_conn_line(text, ndk_obs_id(&c->Header),
						  &line));
	KUNIT_EXPECT_EQ(test, line.qp, ndk_obs_id(&qp->Header));
	KUNIT_EXPECT_STREQ(test, line.state, "CONNECTING");

	/* Closing the unanswered request refuses it and ends both closes. */
	ndk_close_all(test, e->incoming, NULL);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(lw));
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(cw));
	KUNIT_EXPECT_EQ(test, cw->status, STATUS_CONNECTION_REFUSED);
	ndk_close_all(test, c, qp);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(sw));
	ndk_close_all(test, idle, NULL);
	ndk_test_close(test, &sep2->Header,
		       sep2->Dispatch->NdkCloseSharedEndpoint);
}

static struct kunit_case ndk_debugfs_cases[] = {
	KUNIT_CASE(ndk_obs_debugfs_test),
	KUNIT_CASE(ndk_obs_listener_states_test),
	KUNIT_CASE(ndk_obs_pending_test),
	{}
};

NDK_SUITE(debugfs, ndk_conn_init_test, ndk_conn_exit_test);
