// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_pd: protection domains, and through them the create/close contract
 * every object follows: inline completion where the caller may sleep,
 * pending completion from a workqueue where it may not (with a spinlock
 * held, in a timer), closable from inside its own create completion, and
 * an adapter close that waits for every callback to return.
 */
#include <linux/delay.h>
#include "ndk_tests.h"
#include "ndk_priv.h"

static void ndk_pd_create_close_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_pd(test, a);
	NDK_PD *pd = container_of(hdr, NDK_PD, Header);

	KUNIT_EXPECT_EQ(test, hdr->Version.Major, 1);
	KUNIT_EXPECT_EQ(test, hdr->Version.Minor, 2);
	KUNIT_ASSERT_NOT_NULL(test, pd->Dispatch);
	KUNIT_EXPECT_PTR_EQ(test, pd->Dispatch->NdkClosePd,
			    (NDK_FN_CLOSE_OBJECT)ndk_close_object);
	ndk_test_close(test, hdr, pd->Dispatch->NdkClosePd);
}

static void ndk_pd_create_in(struct ndk_test_call *c)
{
	NDK_ADAPTER *a = c->arg;

	c->st = a->Dispatch->NdkCreatePd(a, ndk_test_create_cb, &c->w,
					 (NDK_PD **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_pd_contexts_test(struct kunit *test)
{
	ndk_test_contexts(test, ndk_pd_create_in, ndk_env_adapter(test));
}

/* Create and close with a spinlock held and interrupts off. */
static void ndk_pd_atomic_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_wait w, c;
	unsigned long flags;
	NDK_PD *pd = NULL;
	NTSTATUS status;

	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = a->Dispatch->NdkCreatePd(a, ndk_test_create_cb, &w, &pd);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_ASSERT_EQ(test, w.status, STATUS_SUCCESS);
	pd = container_of(w.obj, NDK_PD, Header);

	status = ndk_test_close_atomic(&pd->Header, pd->Dispatch->NdkClosePd,
				       &c);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&c));
	KUNIT_EXPECT_EQ(test, atomic_read(&c.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
}

/*
 * The consumer may close an object from inside its create completion
 * (the create made from atomic context, so that it pends); that close
 * may finish inline or pend.
 */
static void ndk_pd_close_in_create_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_close_in_create t;
	unsigned long flags;
	NDK_PD *pd = NULL;
	NTSTATUS st;

	ndk_close_in_create_init(&t);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = a->Dispatch->NdkCreatePd(a, ndk_close_in_create_cb, &t, &pd);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	ndk_create_with(test, st, &t.create);
	ndk_close_in_create_check(test, &t);
}

/* The privileged token is the local DMA key: local access, never remote. */
static void ndk_pd_privileged_token_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_pd(test, a);
	NDK_PD *pd = container_of(hdr, NDK_PD, Header);
	struct ndk_pd *p = container_of(pd, struct ndk_pd, ndk);
	UINT32 token = 0;

	pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &token);
	KUNIT_EXPECT_EQ(test, token, p->ibpd->local_dma_lkey);
	KUNIT_EXPECT_FALSE(test, p->ibpd->flags & IB_PD_UNSAFE_GLOBAL_RKEY);
	KUNIT_EXPECT_EQ(test, p->ibpd->unsafe_global_rkey, 0U);
	ndk_test_close(test, hdr, pd->Dispatch->NdkClosePd);
}

static void ndk_pd_bad_args_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr;
	NDK_PD *pd = NULL;
	struct ndk_wait w;

	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkCreatePd(a, NULL, NULL, &pd),
			STATUS_INVALID_PARAMETER);
	/* An adapter is closed with ndk_close_adapter, not NdkCloseObject. */
	hdr = ndk_test_create_pd(test, a);
	pd = container_of(hdr, NDK_PD, Header);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, pd->Dispatch->NdkClosePd(&a->Header,
						       ndk_test_close_cb, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, pd->Dispatch->NdkClosePd(NULL, ndk_test_close_cb,
						       &w),
			STATUS_INVALID_PARAMETER);
	ndk_test_close(test, hdr, pd->Dispatch->NdkClosePd);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);
}

#define NDK_PD_MANY	64

/*
 * Many creations in flight at once, then many closes in flight, all from
 * atomic context so that they pend.
 */
static void ndk_pd_many_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	unsigned long flags;
	struct ndk_wait *w;
	NDK_PD *pd = NULL;
	NTSTATUS st;
	int i;

	w = kunit_kcalloc(test, NDK_PD_MANY, sizeof(*w), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w);
	for (i = 0; i < NDK_PD_MANY; i++) {
		ndk_wait_init(&w[i]);
		spin_lock_irqsave(&ndk_test_lock, flags);
		st = a->Dispatch->NdkCreatePd(a, ndk_test_create_cb, &w[i],
					      &pd);
		spin_unlock_irqrestore(&ndk_test_lock, flags);
		KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	}
	for (i = 0; i < NDK_PD_MANY; i++) {
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w[i]));
		KUNIT_ASSERT_EQ(test, w[i].status, STATUS_SUCCESS);
	}
	for (i = 0; i < NDK_PD_MANY; i++) {
		pd = container_of(w[i].obj, NDK_PD, Header);
		KUNIT_ASSERT_EQ(test, ndk_test_close_atomic(&pd->Header,
							    pd->Dispatch->NdkClosePd,
							    &w[i]),
				STATUS_PENDING);
	}
	for (i = 0; i < NDK_PD_MANY; i++)
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w[i]));
}

struct ndk_slow_close {
	struct ndk_wait w;
	bool returned;
};

static void ndk_slow_close_cb(PVOID Context)
{
	struct ndk_slow_close *s = Context;

	complete(&s->w.done);
	/* Still inside the consumer's callback: the adapter must wait. */
	msleep(200);
	WRITE_ONCE(s->returned, true);
}

/*
 * ndk_close_adapter returns only after the close completion of the last
 * object has returned, even when the consumer closed the adapter as soon
 * as that callback signalled it.
 */
static void ndk_pd_adapter_close_barrier_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_pd(test, a);
	NDK_PD *pd = container_of(hdr, NDK_PD, Header);
	struct ndk_slow_close s = {};
	unsigned long flags;
	NTSTATUS st;

	ndk_wait_init(&s.w);
	/* From atomic context, so that the close pends and calls back. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = pd->Dispatch->NdkClosePd(hdr, ndk_slow_close_cb, &s);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&s.w));
	ndk_close_adapter(a);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(s.returned));
}

struct ndk_closer {
	struct work_struct work;
	NDK_ADAPTER *adapter;
	struct completion done;
};

static void ndk_closer_work(struct work_struct *work)
{
	struct ndk_closer *c = container_of(work, struct ndk_closer, work);

	ndk_close_adapter(c->adapter);
	complete(&c->done);
}

/*
 * Closing the adapter first is allowed: it blocks until its last
 * successor is closed, and only then returns.
 */
static void ndk_pd_adapter_close_first_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_pd(test, a);
	NDK_PD *pd = container_of(hdr, NDK_PD, Header);
	struct ndk_closer c = { .adapter = a };

	init_completion(&c.done);
	INIT_WORK_ONSTACK(&c.work, ndk_closer_work);
	schedule_work(&c.work);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&c.done, HZ / 2), 0UL);
	ndk_test_close(test, hdr, pd->Dispatch->NdkClosePd);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&c.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	flush_work(&c.work);
	destroy_work_on_stack(&c.work);
}

static void ndk_pd_query_extension_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_pd(test, a);
	NDK_PD *pd = container_of(hdr, NDK_PD, Header);
	GUID id = { 1 };
	NDK_VERSION v = { .Major = 1 };
	NDK_EXTENSION_INTERFACE iface = { .Dispatch = NULL };

	KUNIT_EXPECT_EQ(test, pd->Dispatch->NdkQueryExtension(hdr, &id, v,
							      &iface),
			STATUS_NOT_SUPPORTED);
	KUNIT_EXPECT_NULL(test, iface.Dispatch);
	ndk_test_close(test, hdr, pd->Dispatch->NdkClosePd);
}

static struct kunit_case ndk_pd_cases[] = {
	KUNIT_CASE(ndk_pd_create_close_test),
	KUNIT_CASE(ndk_pd_contexts_test),
	KUNIT_CASE(ndk_pd_atomic_test),
	KUNIT_CASE(ndk_pd_close_in_create_test),
	KUNIT_CASE(ndk_pd_privileged_token_test),
	KUNIT_CASE(ndk_pd_bad_args_test),
	KUNIT_CASE(ndk_pd_many_test),
	KUNIT_CASE(ndk_pd_adapter_close_barrier_test),
	KUNIT_CASE(ndk_pd_adapter_close_first_test),
	KUNIT_CASE(ndk_pd_query_extension_test),
	{}
};

NDK_SUITE(pd, ndk_env_adapter_init, ndk_conn_exit_test);
