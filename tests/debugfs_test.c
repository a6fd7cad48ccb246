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

static struct kunit_case ndk_debugfs_cases[] = {
	KUNIT_CASE(ndk_obs_debugfs_test),
	KUNIT_CASE(ndk_obs_listener_states_test),
	{}
};

NDK_SUITE(debugfs, ndk_conn_init_test, ndk_conn_exit_test);
