// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Helpers shared by the ndk KUnit suites. */
#include "ndk_tests.h"

DEFINE_SPINLOCK(ndk_test_lock);

void ndk_wait_init(struct ndk_wait *w)
{
	init_completion(&w->done);
	w->status = STATUS_PENDING;
	w->obj = NULL;
	atomic_set(&w->calls, 0);
}

/* True if the callback ran within NDK_TEST_TIMEOUT. */
bool ndk_wait_for(struct ndk_wait *w)
{
	return wait_for_completion_timeout(&w->done, NDK_TEST_TIMEOUT) != 0;
}

void ndk_test_create_cb(PVOID Context, NTSTATUS Status,
			NDK_OBJECT_HEADER *pNdkObject)
{
	struct ndk_wait *w = Context;

	w->status = Status;
	w->obj = pNdkObject;
	atomic_inc(&w->calls);
	complete(&w->done);
}

void ndk_test_close_cb(PVOID Context)
{
	struct ndk_wait *w = Context;

	w->status = STATUS_SUCCESS;
	atomic_inc(&w->calls);
	complete(&w->done);
}

void ndk_test_request_cb(PVOID Context, NTSTATUS Status)
{
	struct ndk_wait *w = Context;

	w->status = Status;
	atomic_inc(&w->calls);
	complete(&w->done);
}

/* The interface index of the first NDK adapter (rxe0 on eth0 in the VM). */
int ndk_test_ifindex(struct kunit *test)
{
	struct ndk_adapter_desc desc;

	KUNIT_ASSERT_GE_MSG(test, ndk_enum_adapters(&desc, 1), 1,
			    "no RDMA adapter: is rxe0 set up?");
	return desc.ifindex;
}

NDK_ADAPTER *ndk_test_open(struct kunit *test)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	NDK_ADAPTER *a = NULL;

	KUNIT_ASSERT_EQ(test, ndk_open_adapter(ndk_test_ifindex(test), v, &a),
			STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, a);
	return a;
}

NDK_OBJECT_HEADER *ndk_test_create_pd(struct kunit *test, NDK_ADAPTER *a)
{
	struct ndk_wait w;
	NDK_PD *unused = NULL;

	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test,
			a->Dispatch->NdkCreatePd(a, ndk_test_create_cb, &w,
						 &unused),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_ASSERT_EQ(test, w.status, STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, w.obj);
	KUNIT_EXPECT_EQ(test, w.obj->ObjectType, NdkObjectTypePd);
	return w.obj;
}

NDK_OBJECT_HEADER *ndk_test_create_cq(struct kunit *test, NDK_ADAPTER *a,
				      ULONG depth)
{
	struct ndk_wait w;
	NDK_CQ *unused = NULL;

	ndk_wait_init(&w);
	KUNIT_ASSERT_EQ(test,
			a->Dispatch->NdkCreateCq(a, depth, NULL, NULL, NULL,
						 ndk_test_create_cb, &w,
						 &unused),
			STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_ASSERT_EQ(test, w.status, STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, w.obj);
	KUNIT_EXPECT_EQ(test, w.obj->ObjectType, NdkObjectTypeCq);
	return w.obj;
}

/* Close @obj with @close and wait for the close to complete. */
void ndk_test_close(struct kunit *test, NDK_OBJECT_HEADER *obj,
		    NDK_FN_CLOSE_OBJECT close)
{
	struct ndk_wait w;
	NTSTATUS status;

	ndk_wait_init(&w);
	status = close(obj, ndk_test_close_cb, &w);
	if (status == STATUS_PENDING)
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	else
		KUNIT_ASSERT_EQ(test, status, STATUS_SUCCESS);
}
