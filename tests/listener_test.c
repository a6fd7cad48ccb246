// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_listener, the tests of ndk/listener.c: a second listen on a taken
 * address, a listener's close while it holds connectors, and pausing its
 * connect events.
 */
#include "ndk_tests.h"

/* nd_dual_listen: a second listen on the same address and port fails. */
static void nd_dual_listen(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LISTENER *l = ndk_cenv_listener(test, e);

	KUNIT_EXPECT_EQ(test, ndk_cenv_listen(test, e, l, NDK_TEST_PORT),
			STATUS_SHARING_VIOLATION);
	ndk_test_close(test, &l->Header, l->Dispatch->NdkCloseListener);
}

/*
 * nd_conn_listen_closing: a listener's close waits for the connectors it
 * handed out, and requests that arrive while it closes are refused.
 */
static void nd_conn_listen_closing(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_CONNECTOR *c2 = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e), *qp2 = ndk_cenv_qp(test, e);
	struct ndk_wait cw, cw2, lw;

	ndk_cenv_connect_incoming(test, e, c, qp, &cw);

	ndk_wait_init(&lw);
	KUNIT_ASSERT_EQ(test, ndk_listener_close(e->listener, &lw),
			STATUS_PENDING);
	e->listener = NULL;
	/* A new request is refused while the close is pending. */
	reinit_completion(&e->incoming_done);
	ndk_cenv_connect_done(test, e, c2, qp2, NDK_TEST_PORT, &cw2);
	KUNIT_EXPECT_EQ(test, cw2.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_FALSE(test, completion_done(&e->incoming_done));
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&lw.done, HZ / 5),
			0UL);

	/* Closing the unanswered request rejects it. */
	ndk_close_all(test, e->incoming, NULL);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&lw));
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&cw));
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	ndk_close_all(test, c, qp);
	ndk_close_all(test, c2, qp2);
}

/* While paused the listener is as good as absent; resume restores it. */
static void ndk_conn_pause_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	unsigned long flags;
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *qp = ndk_cenv_qp(test, e);
	struct sockaddr_in dst;
	struct ndk_pair p;
	struct ndk_wait cw;

	spin_lock_irqsave(&ndk_test_lock, flags);
	e->listener->Dispatch->NdkControlConnectEvents(e->listener, TRUE);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	reinit_completion(&e->incoming_done);
	ndk_cenv_connect_done(test, e, c, qp, NDK_TEST_PORT, &cw);
	KUNIT_EXPECT_EQ(test, cw.status, STATUS_CONNECTION_REFUSED);
	KUNIT_EXPECT_FALSE(test, completion_done(&e->incoming_done));
	ndk_close_all(test, c, qp);

	e->listener->Dispatch->NdkControlConnectEvents(e->listener, FALSE);
	ndk_listen_addr(e, &dst);
	ndk_establish(test, e, &p, (struct sockaddr *)&e->addr,
		      (struct sockaddr *)&dst, sizeof(dst), false);
	ndk_pair_close(test, &p);
}

static struct kunit_case ndk_listener_cases[] = {
	KUNIT_CASE(nd_dual_listen),
	KUNIT_CASE(nd_conn_listen_closing),
	KUNIT_CASE(ndk_conn_pause_test),
	{}
};

NDK_SUITE(listener, ndk_conn_init_test, ndk_conn_exit_test);
