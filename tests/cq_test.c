// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_cq, the tests of ndk/cq.c: completion queue creation limits,
 * affinity, the arm merge table, resize and interrupt moderation, and
 * overflow; then notification and polling with real completions from a
 * raw loopback QP on the NDK CQ, the serialization of notifications,
 * and a consumer that polls, posts and re-arms from inside them; and the
 * loopback connection of those raw QPs (ndk/loopback.c) refusing a QP
 * with no peer on iWARP.
 *
 * The suite's init opens only the adapter; the notification cases
 * complete the connection environment (ndk_cenv_need()) they ran in
 * when they were a suite of their own.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include "ndk_tests.h"
#include "ndk_priv.h"

static NDK_CQ *to_cq(NDK_OBJECT_HEADER *hdr)
{
	return container_of(hdr, NDK_CQ, Header);
}

static ULONG ndk_test_max_cq(NDK_ADAPTER *a)
{
	return container_of(a, struct ndk_adapter, ndk)->info.MaxCqDepth;
}

/*
 * Wait until every notification already asked of @c has run: its kick's
 * irq_work synced, its softirq off the list, and a grace period for one
 * still returning. What the consumer was told is then final.
 */
static void ndk_cq_settle(struct ndk_cq *c)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	irq_work_sync(&c->kick);
	while (test_bit(IRQ_POLL_F_SCHED, &c->iop.state) &&
	       time_before(jiffies, end))
		usleep_range(1000, 2000);
	synchronize_rcu();
}

static void ndk_cq_create_close_test(struct kunit *test)
{
	NDK_OBJECT_HEADER *hdr = ndk_test_create_cq(test,
						    ndk_env_adapter(test), 64);
	NDK_CQ *cq = to_cq(hdr);
	struct ndk_cq *p = container_of(cq, struct ndk_cq, ndk);

	KUNIT_EXPECT_GE(test, p->ibcq->cqe, 64);
	KUNIT_EXPECT_EQ(test, hdr->Version.Minor, 2);
	ndk_test_close(test, hdr, cq->Dispatch->NdkCloseCq);
}

static void ndk_cq_notify_count(PVOID Context, NTSTATUS CqStatus)
{
	atomic_inc((atomic_t *)Context);
}

/* Create, arm, poll and close with a spinlock held and interrupts off. */
static void ndk_cq_atomic_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_wait w, c;
	NDK_RESULT r[4];
	NDK_RESULT_EX rx[4];
	unsigned long flags;
	atomic_t notified = ATOMIC_INIT(0);
	NDK_CQ *cq = NULL;
	NTSTATUS status;
	ULONG n, nx;

	ndk_wait_init(&w);
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = a->Dispatch->NdkCreateCq(a, 16, ndk_cq_notify_count,
					  &notified, NULL, ndk_test_create_cb,
					  &w, &cq);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
	KUNIT_ASSERT_EQ(test, w.status, STATUS_SUCCESS);
	cq = to_cq(w.obj);

	spin_lock_irqsave(&ndk_test_lock, flags);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	n = cq->Dispatch->NdkGetCqResults(cq, r, ARRAY_SIZE(r));
	nx = cq->Dispatch->NdkGetCqResultsEx(cq, rx, ARRAY_SIZE(rx));
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_EXPECT_EQ(test, n, 0U);
	KUNIT_EXPECT_EQ(test, nx, 0U);

	status = ndk_test_close_atomic(&cq->Header, cq->Dispatch->NdkCloseCq,
				       &c);
	KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&c));
	/* Armed but empty: no notification, before or after the close. */
	KUNIT_EXPECT_EQ(test, atomic_read(&notified), 0);
}

static void ndk_cq_close_in_create_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_close_in_create t;
	unsigned long flags;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	ndk_close_in_create_init(&t);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = a->Dispatch->NdkCreateCq(a, 8, NULL, NULL, NULL,
				      ndk_close_in_create_cb, &t, &cq);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	ndk_create_with(test, st, &t.create);
	ndk_close_in_create_check(test, &t);
}

static void ndk_cq_create_in(struct ndk_test_call *c)
{
	NDK_ADAPTER *a = c->arg;

	c->st = a->Dispatch->NdkCreateCq(a, 8, NULL, NULL, NULL,
					 ndk_test_create_cb, &c->w,
					 (NDK_CQ **)&c->out);
}

/*
 * Created and closed inline from the test's thread, with no callback;
 * pending, with one callback each, under a spinlock and in a timer.
 */
static void ndk_cq_contexts_test(struct kunit *test)
{
	ndk_test_contexts(test, ndk_cq_create_in, ndk_env_adapter(test));
}

/* Depth limits are checked inline; the largest legal depth works. */
static void ndk_cq_depth_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	ULONG max = ndk_test_max_cq(a);
	NDK_OBJECT_HEADER *hdr;
	struct ndk_wait w;
	NDK_CQ *cq = NULL;

	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkCreateCq(a, 0, NULL, NULL, NULL,
						       ndk_test_create_cb, &w,
						       &cq),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkCreateCq(a, max + 1, NULL, NULL,
						       NULL, ndk_test_create_cb,
						       &w, &cq),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkCreateCq(a, 8, NULL, NULL, NULL,
						       NULL, &w, &cq),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);

	hdr = ndk_test_create_cq(test, a, max);
	ndk_test_close(test, hdr, to_cq(hdr)->Dispatch->NdkCloseCq);
}

static void ndk_cq_affinity_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ib_device *ibdev = container_of(a, struct ndk_adapter,
					       ndk)->ibdev;
	GROUP_AFFINITY none = { .Mask = 0 };
	GROUP_AFFINITY cpu1 = { .Mask = 2 };
	NDK_OBJECT_HEADER *hdr;
	struct ndk_wait w;
	NDK_CQ *cq = NULL;
	NTSTATUS st;
	int v;

	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkCreateCq(a, 8, NULL, NULL, &none,
						       ndk_test_create_cb, &w,
						       &cq),
			STATUS_INVALID_PARAMETER);
	st = a->Dispatch->NdkCreateCq(a, 8, NULL, NULL, &cpu1,
				      ndk_test_create_cb, &w, &cq);
	hdr = ndk_created(test, st, &w, cq);
	ndk_test_close(test, hdr, to_cq(hdr)->Dispatch->NdkCloseCq);

	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(ibdev, NULL), 0);
	v = ndk_cq_pick_vector(ibdev, &cpu1);
	KUNIT_EXPECT_GE(test, v, 0);
	KUNIT_EXPECT_LT(test, v, ibdev->num_comp_vectors);
}

/* A device double's vector 2 interrupts CPU 1; its others, no CPU known. */
static const struct cpumask *ndk_vector_affinity(struct ib_device *ibdev,
						 int v)
{
	return v == 2 ? cpumask_of(1) : NULL;
}

/*
 * The completion vector of an affinity, on a device double of four
 * vectors: the one whose interrupt goes to the affinity's first CPU
 * (where the kernel tells a vector's affinity), else that CPU spread
 * over the vectors; vector 0 without an affinity or with one vector.
 */
static void ndk_cq_vector_test(struct kunit *test)
{
	struct ib_device *dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);
	GROUP_AFFINITY none = { .Mask = 0 }, cpu1 = { .Mask = 2 };
	GROUP_AFFINITY cpu0 = { .Mask = 1 }, cpu3 = { .Mask = 8 };
	GROUP_AFFINITY far = { .Group = 1, .Mask = 2 };

	KUNIT_ASSERT_NOT_NULL(test, dev);
	dev->num_comp_vectors = 4;
	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, NULL), 0);
	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &none), 0);
	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &cpu1), 1);
	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &cpu3), 3);
	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &far),
			(BITS_PER_LONG + 1) % 4);
	/* 7.3 knows no interrupt affinity of a vector (tests/compat.h). */
	if (ndk_test_set_vector_affinity(dev, ndk_vector_affinity)) {
		if (nr_cpu_ids > 1)
			KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &cpu1),
					2);
		/* Vector 2 interrupts another CPU: spread as without. */
		KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &cpu0), 0);
		KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &cpu3), 3);
		KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &far),
				(BITS_PER_LONG + 1) % 4);
	}
	dev->num_comp_vectors = 1;
	KUNIT_EXPECT_EQ(test, ndk_cq_pick_vector(dev, &cpu1), 0);
}

struct ndk_arm_case {
	int first;
	ULONG second;
	int merged;
};

/* NDK_ARM_*: 0 none, 1 errors, 2 solicited, 3 any. */
static const struct ndk_arm_case ndk_arm_cases[] = {
	{ 0, NDK_CQ_NOTIFY_ANY, 3 },
	{ 0, NDK_CQ_NOTIFY_ERRORS, 1 },
	{ 0, NDK_CQ_NOTIFY_SOLICITED, 2 },
	{ 3, NDK_CQ_NOTIFY_ANY, 3 },
	{ 3, NDK_CQ_NOTIFY_ERRORS, 3 },
	{ 3, NDK_CQ_NOTIFY_SOLICITED, 3 },
	{ 1, NDK_CQ_NOTIFY_ANY, 3 },
	{ 1, NDK_CQ_NOTIFY_ERRORS, 1 },
	{ 1, NDK_CQ_NOTIFY_SOLICITED, 2 },
	{ 2, NDK_CQ_NOTIFY_ANY, 3 },
	{ 2, NDK_CQ_NOTIFY_ERRORS, 2 },
	{ 2, NDK_CQ_NOTIFY_SOLICITED, 2 },
	{ 0, 3, -EINVAL },
	{ 1, 0xffffffff, -EINVAL },
};

static void ndk_arm_desc(const struct ndk_arm_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "armed %d then %u", c->first,
		 c->second);
}

KUNIT_ARRAY_PARAM(ndk_arm, ndk_arm_cases, ndk_arm_desc);

/* The merge table of the completion-handling rules. */
static void ndk_cq_arm_merge_test(struct kunit *test)
{
	const struct ndk_arm_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, ndk_cq_arm_merge(c->first, c->second), c->merged);
}

/* Arming an empty CQ notifies nobody; an unknown type changes nothing. */
static void ndk_cq_arm_empty_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	atomic_t notified = ATOMIC_INIT(0);
	struct ndk_cq *p;
	struct ndk_wait w;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 8, ndk_cq_notify_count, &notified,
				      NULL, ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	p = container_of(cq, struct ndk_cq, ndk);
	cq->Dispatch->NdkArmCq(cq, 7);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->arm), 0);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ERRORS);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_SOLICITED);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->arm), 2);
	ndk_cq_settle(p);
	KUNIT_EXPECT_EQ(test, atomic_read(&notified), 0);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
	KUNIT_EXPECT_EQ(test, atomic_read(&notified), 0);
}

static void ndk_cq_resize_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_cq(test, a, 16);
	NDK_CQ *cq = to_cq(hdr);
	struct ndk_cq *p = container_of(cq, struct ndk_cq, ndk);
	bool can = ndk_ib_can_resize_cq(p->ibcq->device);
	NTSTATUS bad = can ? STATUS_INVALID_PARAMETER : STATUS_NOT_SUPPORTED;
	struct ndk_wait w;
	unsigned long flags;
	NTSTATUS status;

	/* A device that cannot resize says so before judging the depth. */
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkResizeCq(cq, 0, ndk_test_request_cb,
							&w),
			bad);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkResizeCq(cq, ndk_test_max_cq(a) + 1,
							ndk_test_request_cb, &w),
			bad);
	/* Nothing to call back: refused whatever the device can do. */
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkResizeCq(cq, 32, NULL, &w),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 0);

	spin_lock_irqsave(&ndk_test_lock, flags);
	status = cq->Dispatch->NdkResizeCq(cq, 256, ndk_test_request_cb, &w);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	if (!can) {
		KUNIT_EXPECT_EQ(test, status, STATUS_NOT_SUPPORTED);
	} else {
		KUNIT_ASSERT_EQ(test, status, STATUS_PENDING);
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(&w));
		KUNIT_EXPECT_EQ(test, w.status, STATUS_SUCCESS);
		KUNIT_EXPECT_GE(test, p->ibcq->cqe, 256);
	}
	ndk_test_close(test, hdr, cq->Dispatch->NdkCloseCq);
}

struct ndk_order {
	struct ndk_wait resize, close;
	bool resize_first;
};

static void ndk_order_resize_cb(PVOID Context, NTSTATUS Status)
{
	struct ndk_order *o = Context;

	o->resize.status = Status;
	complete(&o->resize.done);
}

static void ndk_order_close_cb(PVOID Context)
{
	struct ndk_order *o = Context;

	o->resize_first = completion_done(&o->resize.done);
	complete(&o->close.done);
}

/* Close while a resize is pending: the resize completes first. */
static void ndk_cq_close_during_resize_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_cq(test, a, 16);
	NDK_CQ *cq = to_cq(hdr);
	struct ndk_order o = {};
	unsigned long flags;
	NTSTATUS st;

	if (!(container_of(a, struct ndk_adapter, ndk)->info.AdapterFlags &
	      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED)) {
		ndk_test_close(test, hdr, cq->Dispatch->NdkCloseCq);
		kunit_skip(test, "device cannot resize CQs");
	}
	ndk_wait_init(&o.resize);
	ndk_wait_init(&o.close);
	KUNIT_ASSERT_EQ(test, cq->Dispatch->NdkResizeCq(cq, 128,
							ndk_order_resize_cb,
							&o),
			STATUS_PENDING);
	/* Atomic: in a thread the close could end inline once resized. */
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = cq->Dispatch->NdkCloseCq(hdr, ndk_order_close_cb, &o);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	KUNIT_ASSERT_EQ(test, st, STATUS_PENDING);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&o.close));
	KUNIT_EXPECT_TRUE(test, o.resize_first);
}

/* The call agrees with the adapter flag that advertises it. */
static void ndk_cq_moderation_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	NDK_OBJECT_HEADER *hdr = ndk_test_create_cq(test, a, 16);
	NDK_CQ *cq = to_cq(hdr);
	ULONG flags = container_of(a, struct ndk_adapter, ndk)->info.AdapterFlags;
	bool supported = flags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
	NTSTATUS status;

	status = cq->Dispatch->NdkControlCqInterruptModeration(cq, 100, 8);
	KUNIT_EXPECT_EQ(test, status,
			supported ? STATUS_SUCCESS : STATUS_NOT_SUPPORTED);
	ndk_test_close(test, hdr, cq->Dispatch->NdkCloseCq);
}

static void ndk_cq_query_extension_test(struct kunit *test)
{
	NDK_OBJECT_HEADER *hdr = ndk_test_create_cq(test,
						    ndk_env_adapter(test), 4);
	NDK_CQ *cq = to_cq(hdr);
	GUID id = { 2 };
	NDK_VERSION v = { .Major = 1 };
	NDK_EXTENSION_INTERFACE iface = { .Dispatch = NULL };

	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkQueryExtension(hdr, &id, v,
							      &iface),
			STATUS_NOT_SUPPORTED);
	KUNIT_EXPECT_NULL(test, iface.Dispatch);
	ndk_test_close(test, hdr, cq->Dispatch->NdkCloseCq);
}

struct ndk_notify_rec {
	atomic_t count;
	atomic_t wrong_ctx;
	NTSTATUS status;
	struct completion done;
	NDK_CQ *rearm;
	struct task_struct *task;
};

/*
 * Notifications run in softirq with interrupts on, NDKPI's DISPATCH_LEVEL:
 * not in a work item, and not inside a driver handler that disabled
 * interrupts to hold its CQ lock.
 */
static bool ndk_notify_ctx_ok(void)
{
	return in_serving_softirq() && !in_hardirq() && !irqs_disabled();
}

static void ndk_notify_rec_cb(PVOID Context, NTSTATUS CqStatus)
{
	struct ndk_notify_rec *rec = Context;

	if (!ndk_notify_ctx_ok())
		atomic_inc(&rec->wrong_ctx);
	rec->status = CqStatus;
	rec->task = current;
	atomic_inc(&rec->count);
	if (rec->rearm)
		rec->rearm->Dispatch->NdkArmCq(rec->rearm, NDK_CQ_NOTIFY_ANY);
	complete(&rec->done);
}

/* A CQ with a recording notification callback and a loopback QP on it. */
static NDK_CQ *ndk_notify_setup(struct kunit *test, struct ndk_notify_rec *rec,
				struct ndk_test_lqp **lqp)
{
	NDK_ADAPTER *a = ndk_cenv_need(test)->a;
	struct ndk_wait w;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	atomic_set(&rec->count, 0);
	atomic_set(&rec->wrong_ctx, 0);
	rec->status = STATUS_PENDING;
	rec->rearm = NULL;
	init_completion(&rec->done);
	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 64, ndk_notify_rec_cb, rec, NULL,
				      ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	*lqp = ndk_test_loopback_qp(test,
				    container_of(a, struct ndk_adapter, ndk),
				    container_of(cq, struct ndk_cq, ndk)->ibcq);
	return cq;
}

/* Also checks that no notification ran outside softirq (@wrong_ctx). */
static void ndk_notify_teardown(struct kunit *test, atomic_t *wrong_ctx,
				NDK_CQ *cq, struct ndk_test_lqp *l)
{
	KUNIT_EXPECT_EQ(test, atomic_read(wrong_ctx), 0);
	ndk_test_loopback_free(l);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/* Poll until @n results arrived (or a timeout); returns how many did. */
static ULONG ndk_poll_n(NDK_CQ *cq, NDK_RESULT_EX *r, ULONG n, bool ex)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	NDK_RESULT plain[4];
	ULONG got = 0, i, k;

	while (got < n && time_before(jiffies, end)) {
		if (ex) {
			got += cq->Dispatch->NdkGetCqResultsEx(cq, r + got,
							       n - got);
		} else {
			k = cq->Dispatch->NdkGetCqResults(cq, plain,
							  min_t(ULONG, n - got,
								ARRAY_SIZE(plain)));
			for (i = 0; i < k; i++)
				memcpy(&r[got + i], &plain[i], sizeof(plain[i]));
			got += k;
		}
		if (got < n)
			usleep_range(5000, 10000);
	}
	return got;
}

/* A completion with no arm pending notifies nobody. */
static void ndk_cq_unarmed_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);

	ndk_test_loopback_send(test, l, 1, 2, false);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 2, false), 2U);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 0);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/*
 * Arm ANY: exactly one notification for two completions, and the results
 * carry status, length, QPContext and RequestContext.
 */
static void ndk_cq_notify_any_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_RESULT *recv, *send;
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);

	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	ndk_test_loopback_send(test, l, 1, 2, false);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&rec.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_EQ(test, ndk_poll_n(cq, r, 2, false), 2U);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 1);
	KUNIT_EXPECT_EQ(test, rec.status, STATUS_SUCCESS);

	recv = (NDK_RESULT *)&r[0];
	send = (NDK_RESULT *)&r[1];
	if (recv->RequestContext != (void *)1)
		swap(recv, send);
	KUNIT_EXPECT_PTR_EQ(test, recv->RequestContext, (void *)1);
	KUNIT_EXPECT_PTR_EQ(test, send->RequestContext, (void *)2);
	KUNIT_EXPECT_EQ(test, recv->Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, send->Status, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, recv->BytesTransferred, (ULONG)NDK_TEST_MSG);
	KUNIT_EXPECT_PTR_EQ(test, recv->QPContext, (void *)l);
	KUNIT_EXPECT_PTR_EQ(test, send->QPContext, (void *)l);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/* Completions already queued when the CQ is armed must notify. */
static void ndk_cq_notify_missed_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);
	struct ib_wc wc;

	ndk_test_loopback_send(test, l, 1, 2, false);
	/*
	 * Let both completions land in the CQ (a loopback message takes
	 * about 10 ms under TCG) without reaping them.
	 */
	msleep(500);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&rec.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 2, true), 2U);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(container_of(cq, struct ndk_cq,
						      ndk)->ibcq, 1, &wc), 0);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/* SOLICITED ignores unsolicited completions and fires on a solicited one. */
static void ndk_cq_notify_solicited_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);

	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_SOLICITED);
	ndk_test_loopback_send(test, l, 1, 2, false);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 2, false), 2U);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 0);

	ndk_test_loopback_send(test, l, 3, 4, true);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&rec.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 2, false), 2U);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 1);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/* The extended results name each operation. */
static void ndk_cq_results_ex_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2], *recv, *send;
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);

	ndk_test_loopback_send(test, l, 1, 2, false);
	KUNIT_ASSERT_EQ(test, ndk_poll_n(cq, r, 2, true), 2U);
	recv = r[0].RequestContext == (void *)1 ? &r[0] : &r[1];
	send = recv == &r[0] ? &r[1] : &r[0];
	KUNIT_EXPECT_EQ(test, recv->Type, NdkOperationTypeReceive);
	KUNIT_EXPECT_EQ(test, send->Type, NdkOperationTypeSend);
	KUNIT_EXPECT_EQ(test, recv->ProviderErrorCode, 0U);
	KUNIT_EXPECT_EQ(test, recv->TypeSpecificCompletionOutput, 0UL);
	KUNIT_EXPECT_EQ(test, recv->BytesTransferred, (ULONG)NDK_TEST_MSG);
	KUNIT_EXPECT_PTR_EQ(test, send->QPContext, (void *)l);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/*
 * A poll for no results returns none and takes none from the CQ: the
 * two completions waiting are all there for the next poll.
 */
static void ndk_cq_poll_none_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);

	ndk_test_loopback_send(test, l, 1, 2, false);
	msleep(100);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResults(cq, NULL, 0), 0U);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResultsEx(cq, NULL, 0),
			0U);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 2, true), 2U);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

static void ndk_cq_lost_event_handler(struct ib_cq *ibcq, void *ctx)
{
}

/*
 * A device that loses the notification for a completion it adds right
 * after an arm (siw's arm reads its producer index unordered against its
 * completer): the consumer's polls still find the completions. Each poll
 * asks the device, however recently an arm reported nothing missed.
 */
static void ndk_cq_lost_event_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_RESULT plain[2];
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);
	struct ndk_cq *c = container_of(cq, struct ndk_cq, ndk);
	void (*handler)(struct ib_cq *ibcq, void *ctx) = c->ibcq->comp_handler;
	ULONG got;

	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkGetCqResults(cq, plain, 2), 0U);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	WRITE_ONCE(c->ibcq->comp_handler, ndk_cq_lost_event_handler);
	ndk_test_loopback_send(test, l, 1, 2, false);
	got = ndk_poll_n(cq, r, 2, false);
	WRITE_ONCE(c->ibcq->comp_handler, handler);
	KUNIT_EXPECT_EQ(test, got, 2U);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 0);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/* Re-arming from inside the notification works and fires again. */
static void ndk_cq_rearm_in_callback_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[2];
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);

	rec.rearm = cq;
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	ndk_test_loopback_send(test, l, 1, 2, false);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&rec.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_ASSERT_EQ(test, ndk_poll_n(cq, r, 2, false), 2U);
	reinit_completion(&rec.done);
	rec.rearm = NULL;
	ndk_test_loopback_send(test, l, 3, 4, false);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&rec.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 2, false), 2U);
	KUNIT_EXPECT_GE(test, atomic_read(&rec.count), 2);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/*
 * This CPU's ksoftirqd, found by name: the kernel exports no pointer to
 * it. A per-CPU kthread lives as long as its CPU is up.
 */
static struct task_struct *ndk_ksoftirqd(unsigned int cpu)
{
	struct task_struct *p, *found = NULL;
	char name[TASK_COMM_LEN];

	snprintf(name, sizeof(name), "ksoftirqd/%u", cpu);
	rcu_read_lock();
	for_each_process(p) {
		if ((p->flags & PF_KTHREAD) && !strcmp(p->comm, name)) {
			found = p;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/*
 * One notification after a completion handler called with interrupts
 * (@bh false) or bottom halves (@bh true) off: none comes inside that
 * section, one right after it. *@deferred tells whether this CPU's
 * ksoftirqd was runnable as the section ended, which makes 6.1 leave the
 * softirq to it. Return: the task it ran in.
 */
static struct task_struct *ndk_notify_after(struct kunit *test, NDK_CQ *cq,
					    struct ndk_notify_rec *rec,
					    bool bh, bool *deferred)
{
	struct ib_cq *ibcq = container_of(cq, struct ndk_cq, ndk)->ibcq;
	int before = atomic_read(&rec->count), during;
	struct task_struct *ksd;
	unsigned long flags = 0;

	reinit_completion(&rec->done);
	rec->task = NULL;
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	if (bh)
		local_bh_disable();
	else
		local_irq_save(flags);
	ibcq->comp_handler(ibcq, ibcq->cq_context);
	during = atomic_read(&rec->count);
	/* Either way the CPU stays this one until the section ends. */
	ksd = ndk_ksoftirqd(smp_processor_id());
	*deferred = ksd && task_is_running(ksd);
	if (bh)
		local_bh_enable();
	else
		local_irq_restore(flags);
	KUNIT_EXPECT_EQ(test, during, before);
	if (!wait_for_completion_timeout(&rec->done, NDK_TEST_TIMEOUT)) {
		KUNIT_FAIL(test, "no notification after the section");
		return NULL;
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&rec->count), before + 1);
	return READ_ONCE(rec->task);
}

#define NDK_KICK_TRIES	5
/* Tries at most, those 6.1 deferred to ksoftirqd included. */
#define NDK_KICK_MAX	50

/*
 * A completion handler called by a task with interrupts off, as 6.12's
 * rxe calls it from its work items under its CQ lock: the notification
 * waits until the task turns interrupts back on, then comes right away,
 * in softirq at the exit of ndk's self-interrupt, on the task's own stack
 * rather than from ksoftirqd. With bottom halves off it comes at
 * local_bh_enable(), again in the task that enabled them. Linux 6.1
 * leaves pending softirqs to ksoftirqd instead whenever that thread is
 * runnable on the CPU (ksoftirqd_running(), gone in 6.5), which load
 * makes happen now and then: every notification must run in this task
 * or in ksoftirqd, and of the tries that did not go to a runnable
 * ksoftirqd (NDK_KICK_TRIES of them are made; a try that came here
 * counts, runnable ksoftirqd or not, which on 7.3 under load is most)
 * at least one in this task.
 */
static void ndk_cq_notify_irqs_off_test(struct kunit *test)
{
	struct ndk_notify_rec rec;
	struct ndk_test_lqp *l;
	NDK_CQ *cq = ndk_notify_setup(test, &rec, &l);
	int bh, i, here, counted;
	struct task_struct *t;
	bool deferred;

	for (bh = 0; bh < 2; bh++) {
		here = 0;
		counted = 0;
		for (i = 0; i < NDK_KICK_MAX && counted < NDK_KICK_TRIES; i++) {
			t = ndk_notify_after(test, cq, &rec, bh, &deferred);
			if (t && t != current)
				KUNIT_EXPECT_TRUE_MSG(test,
						      str_has_prefix(t->comm,
								     "ksoftirqd/"),
						      "notified in %s", t->comm);
			/* Only a try that went to a running ksoftirqd. */
			if (deferred && t != current)
				continue;
			counted++;
			here += t == current;
		}
		KUNIT_EXPECT_EQ_MSG(test, counted, NDK_KICK_TRIES,
				    "bottom halves off: %d", bh);
		KUNIT_EXPECT_GE_MSG(test, here, 1, "bottom halves off: %d", bh);
	}
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/**
 * struct ndk_serial - what a notification callback saw of itself
 * @cq: the CQ, re-armed from inside the callback
 * @l: the loopback QP whose completions wait in @cq
 * @inside: callbacks running now
 * @calls: callbacks so far
 * @arms: arms so far, the first one included
 * @overlaps: callbacks that started while another one ran
 * @wrong_ctx: callbacks that ran outside softirq or with interrupts off
 * @stop: the callback stops re-arming
 * @done: the callback saw @stop
 * @sent: the other CPU's messages are all posted
 */
struct ndk_serial {
	NDK_CQ *cq;
	struct ndk_test_lqp *l;
	atomic_t inside;
	atomic_t calls;
	atomic_t arms;
	atomic_t overlaps;
	atomic_t wrong_ctx;
	bool stop;
	struct completion done;
	struct completion sent;
};

/*
 * The completions stay queued, so every arm from in here is satisfied at
 * once from another context, often on the other CPU while this call
 * still runs; the delay widens that window.
 */
static void ndk_serial_cb(PVOID Context, NTSTATUS CqStatus)
{
	struct ndk_serial *s = Context;

	if (atomic_inc_return(&s->inside) != 1)
		atomic_inc(&s->overlaps);
	if (!ndk_notify_ctx_ok())
		atomic_inc(&s->wrong_ctx);
	atomic_inc(&s->calls);
	if (!READ_ONCE(s->stop)) {
		atomic_inc(&s->arms);
		s->cq->Dispatch->NdkArmCq(s->cq, NDK_CQ_NOTIFY_ANY);
	} else {
		complete(&s->done);
	}
	mdelay(1);
	atomic_dec(&s->inside);
}

/* Loopback messages from another CPU while the callbacks run. */
static int ndk_serial_sender(void *arg)
{
	struct ndk_serial *s = arg;
	struct ndk_test_lqp *l = s->l;
	struct ib_sge rsge = { .addr = l->dma + NDK_TEST_MSG,
			       .length = NDK_TEST_MSG,
			       .lkey = l->pd->local_dma_lkey };
	struct ib_sge ssge = { .addr = l->dma, .length = NDK_TEST_MSG,
			       .lkey = l->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 100, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 101, .sg_list = &ssge,
				  .num_sge = 1, .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_SIGNALED };
	int i;

	for (i = 0; i < 6; i++) {
		if (ib_post_recv(l->rqp, &rwr, NULL) ||
		    ib_post_send(l->loop.qp, &swr, NULL))
			break;
		usleep_range(1000, 2000);
	}
	complete(&s->sent);
	while (!kthread_should_stop())
		usleep_range(1000, 2000);
	return i;
}

/*
 * Notifications of one CQ are serialized: with the callback re-arming
 * from inside itself while completions wait, and the device adding more
 * from the other CPU, no callback ever starts while another one runs,
 * and each arm gives exactly one.
 */
static void ndk_cq_notify_serial_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_cenv_need(test)->a;
	struct ndk_serial s = {};
	struct ndk_test_lqp *l;
	struct task_struct *t;
	NDK_CQ *unused = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	init_completion(&s.done);
	init_completion(&s.sent);
	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 64, ndk_serial_cb, &s, NULL,
				      ndk_test_create_cb, &w, &unused);
	s.cq = to_cq(ndk_created(test, st, &w, unused));
	l = ndk_test_loopback_qp(test, container_of(a, struct ndk_adapter, ndk),
				 container_of(s.cq, struct ndk_cq, ndk)->ibcq);
	s.l = l;
	ndk_test_loopback_send(test, l, 1, 2, false);
	msleep(200);
	t = kthread_create(ndk_serial_sender, &s, "ndk_serial");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	kthread_bind(t, ndk_test_other_cpu(test));
	get_task_struct(t);
	atomic_set(&s.arms, 1);
	s.cq->Dispatch->NdkArmCq(s.cq, NDK_CQ_NOTIFY_ANY);
	wake_up_process(t);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&s.sent,
							  NDK_TEST_TIMEOUT),
			0UL);
	msleep(20);
	WRITE_ONCE(s.stop, true);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&s.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, kthread_stop(t), 6);
	put_task_struct(t);
	msleep(100);
	KUNIT_EXPECT_GT(test, atomic_read(&s.calls), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&s.calls), atomic_read(&s.arms));
	KUNIT_EXPECT_EQ(test, atomic_read(&s.overlaps), 0);
	ndk_notify_teardown(test, &s.wrong_ctx, s.cq, l);
}

#define NDK_PING_N	10

/**
 * struct ndk_ping - messages driven entirely from notification callbacks
 * @cq: CQ of both QPs, with the callback
 * @p: the connection
 * @buf: receive slots of 16 bytes from 0, send sources from 2048
 * @dma: device address of @buf
 * @tok: the privileged token
 * @dev: the device that mapped @buf
 * @received: receives completed
 * @errors: failed results, failed posts and wrong bytes
 * @wrong_ctx: callbacks that ran outside softirq or with interrupts off
 * @done: the last receive completed
 */
struct ndk_ping {
	NDK_CQ *cq;
	struct ndk_pair p;
	u8 *buf;
	u64 dma;
	UINT32 tok;
	struct ib_device *dev;
	int received;
	int errors;
	atomic_t wrong_ctx;
	struct completion done;
};

/* Post receive @i on the passive QP and send @i from the active one. */
static int ndk_ping_post(struct ndk_ping *pg, int i)
{
	NDK_SGE rs = { .LogicalAddress = pg->dma + 16 * i, .Length = 16,
		       .MemoryRegionToken = pg->tok };
	NDK_SGE ss = { .LogicalAddress = pg->dma + 2048 + 16 * i,
		       .Length = 16, .MemoryRegionToken = pg->tok };

	if (pg->p.pqp->Dispatch->NdkReceive(pg->p.pqp,
					    (void *)(uintptr_t)(0x100 + i),
					    &rs, 1))
		return -EIO;
	/* Every other send is deferred and ends with the next one. */
	if (pg->p.aqp->Dispatch->NdkSend(pg->p.aqp,
					 (void *)(uintptr_t)(0x200 + i),
					 &ss, 1,
					 i % 2 ? 0 : NDK_OP_FLAG_DEFER))
		return -EIO;
	return 0;
}

/*
 * The consumer's side of a ping: poll, check, post the next message and
 * re-arm, all from the notification callback, which runs in softirq
 * context (where the atomic-sleep checks of the test kernel watch it).
 */
static void ndk_ping_cb(PVOID Context, NTSTATUS CqStatus)
{
	struct ndk_ping *pg = Context;
	NDK_RESULT r[4];
	ULONG n, k;
	int i;

	if (!ndk_notify_ctx_ok())
		atomic_inc(&pg->wrong_ctx);
	while ((n = pg->cq->Dispatch->NdkGetCqResults(pg->cq, r, 4))) {
		for (k = 0; k < n; k++) {
			if (r[k].Status)
				pg->errors++;
			i = (uintptr_t)r[k].RequestContext - 0x100;
			if (i < 0 || i >= NDK_PING_N)
				continue;
			ib_dma_sync_single_for_cpu(pg->dev, pg->dma, PAGE_SIZE,
						   DMA_BIDIRECTIONAL);
			if (memcmp(pg->buf + 16 * i, pg->buf + 2048 + 16 * i,
				   16))
				pg->errors++;
			pg->received++;
			/* Two messages per round: one deferred, one not. */
			if (i % 2 && i + 2 < NDK_PING_N &&
			    (ndk_ping_post(pg, i + 1) || ndk_ping_post(pg, i + 2)))
				pg->errors++;
		}
	}
	if (pg->received == NDK_PING_N)
		complete(&pg->done);
	else
		pg->cq->Dispatch->NdkArmCq(pg->cq, NDK_CQ_NOTIFY_ANY);
}

/*
 * Messages driven by the notification callback alone: it polls, checks
 * the bytes, posts deferred and ordinary sends and receives, and re-arms,
 * from the device's completion context.
 */
static void ndk_cq_notify_post_in_callback_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	struct ndk_ping *pg = kunit_kzalloc(test, sizeof(*pg), GFP_KERNEL);
	NDK_QP *uqp = NULL;
	NDK_CQ *unused = NULL;
	struct sockaddr_in dst;
	struct ndk_wait w;
	NTSTATUS st;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, pg);
	init_completion(&pg->done);
	pg->buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pg->buf);
	for (i = 0; i < PAGE_SIZE / 2; i++)
		pg->buf[2048 + i] = (u8)(i * 11 + 3);
	pg->dev = container_of(e->pd, struct ndk_pd, ndk)->ibpd->device;
	pg->dma = ib_dma_map_single(pg->dev, pg->buf, PAGE_SIZE,
				    DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(pg->dev, pg->dma));
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &pg->tok);

	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateCq(e->a, 64, ndk_ping_cb, pg, NULL,
					 ndk_test_create_cb, &w, &unused);
	pg->cq = to_cq(ndk_created(test, st, &w, unused));
	pg->p.c = ndk_cenv_connector(test, e);
	ndk_wait_init(&w);
	uqp = NULL;
	st = e->pd->Dispatch->NdkCreateQp(e->pd, pg->cq, pg->cq, e, 8, 8, 1, 1,
					  0, ndk_test_create_cb, &w, &uqp);
	pg->p.aqp = container_of(ndk_created(test, st, &w, uqp), NDK_QP,
				 Header);
	ndk_wait_init(&w);
	uqp = NULL;
	st = e->pd->Dispatch->NdkCreateQp(e->pd, pg->cq, pg->cq, e, 8, 8, 1, 1,
					  0, ndk_test_create_cb, &w, &uqp);
	pg->p.pqp = container_of(ndk_created(test, st, &w, uqp), NDK_QP,
				 Header);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &pg->p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);

	/* The first round from here; the arm finds its completions. */
	KUNIT_ASSERT_EQ(test, ndk_ping_post(pg, 0), 0);
	KUNIT_ASSERT_EQ(test, ndk_ping_post(pg, 1), 0);
	pg->cq->Dispatch->NdkArmCq(pg->cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&pg->done,
							  NDK_TEST_TIMEOUT),
			0UL);
	msleep(100);
	KUNIT_EXPECT_EQ(test, pg->received, NDK_PING_N);
	KUNIT_EXPECT_EQ(test, pg->errors, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&pg->wrong_ctx), 0);
	ndk_pair_close(test, &pg->p);
	ndk_test_close(test, &pg->cq->Header, pg->cq->Dispatch->NdkCloseCq);
	ib_dma_unmap_single(pg->dev, pg->dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
}

struct ndk_moderation_case {
	ULONG interval, count, depth;
	NTSTATUS status;
	u16 cq_count, cq_period;
};

static const struct ndk_moderation_case ndk_moderation_cases[] = {
	{ 0, 16, 64, STATUS_SUCCESS, 0, 0 },
	{ 100, 0, 64, STATUS_SUCCESS, 0, 0 },
	{ 100, 1, 64, STATUS_SUCCESS, 0, 0 },
	{ 100, 16, 64, STATUS_SUCCESS, 16, 100 },
	{ U32_MAX, 16, 64, STATUS_SUCCESS, 16, U16_MAX },
	{ 100, U32_MAX, 64, STATUS_SUCCESS, U16_MAX, 100 },
	{ 100, 65, 64, STATUS_SUCCESS, U16_MAX, 100 },
	{ 1000000, 64, 64, STATUS_SUCCESS, 64, U16_MAX },
	{ U32_MAX, U32_MAX, 64, STATUS_INVALID_PARAMETER_MIX, 0, 0 },
	{ U32_MAX, 65, 64, STATUS_INVALID_PARAMETER_MIX, 0, 0 },
};

static void ndk_moderation_desc(const struct ndk_moderation_case *c,
				char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "interval %u count %u depth %u",
		 c->interval, c->count, c->depth);
}

KUNIT_ARRAY_PARAM(ndk_moderation, ndk_moderation_cases, ndk_moderation_desc);

/* The parameter rules of NdkControlCqInterruptModeration. */
static void ndk_cq_moderation_params_test(struct kunit *test)
{
	const struct ndk_moderation_case *c = test->param_value;
	u16 count = 0xbeef, period = 0xbeef;

	KUNIT_ASSERT_EQ(test, ndk_cq_moderation(c->interval, c->count,
						c->depth, &count, &period),
			c->status);
	if (c->status != STATUS_SUCCESS)
		return;
	KUNIT_EXPECT_EQ(test, count, c->cq_count);
	KUNIT_EXPECT_EQ(test, period, c->cq_period);
}

/*
 * An overflowing CQ is unusable. It says so only through a notification,
 * so nothing arrives until the consumer arms, and then the status is
 * STATUS_INTERNAL_ERROR. Another event of the device's for the CQ is no
 * failure.
 */
static void ndk_cq_overflow_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_notify_rec rec = {};
	struct ndk_test_lqp *l;
	struct ib_event ev;
	struct ndk_wait w;
	struct ndk_cq *p;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	init_completion(&rec.done);
	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 1, ndk_notify_rec_cb, &rec, NULL,
				      ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	p = container_of(cq, struct ndk_cq, ndk);
	if (p->ibcq->cqe > 4) {
		ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
		kunit_skip(test, "device rounds a 1-entry CQ up to %d",
			   p->ibcq->cqe);
	}
	/* An event of another kind leaves the CQ as it was. */
	ev = (struct ib_event){ .device = p->ibcq->device,
				.element.cq = p->ibcq,
				.event = IB_EVENT_PORT_ACTIVE };
	p->ibcq->event_handler(&ev, p->ibcq->cq_context);
	KUNIT_EXPECT_EQ(test, READ_ONCE(p->fatal), STATUS_SUCCESS);
	l = ndk_test_loopback_qp(test, container_of(a, struct ndk_adapter, ndk),
				 p->ibcq);
	ndk_test_loopback_send(test, l, 1, 2, false);
	ndk_test_loopback_send(test, l, 3, 4, false);
	ndk_test_loopback_send(test, l, 5, 6, false);
	msleep(500);
	KUNIT_EXPECT_EQ(test, READ_ONCE(p->fatal), STATUS_INTERNAL_ERROR);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 0);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&rec.done,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, rec.status, STATUS_INTERNAL_ERROR);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/**
 * struct ndk_script - a device whose CQ returns the completions a case
 *	wrote, in order, in place of its own
 * @wc: the completions
 * @n: how many
 * @at: how many the CQ returned so far
 */
struct ndk_script {
	struct ib_wc wc[NDK_CQ_POLL_BATCH];
	int n;
	int at;
};

/* The script being played; one case at a time plays one. */
static struct ndk_script *ndk_script;

static int ndk_script_poll(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct ndk_script *s = ndk_script;
	int k = min(n, s->n - s->at);

	memcpy(wc, s->wc + s->at, k * sizeof(*wc));
	s->at += k;
	return k;
}

/* Append a completion of @wr_id (a raw QP's if its kind bits are 0). */
static void ndk_script_add(struct ndk_script *s, u64 wr_id,
			   enum ib_wc_status status, enum ib_wc_opcode opcode,
			   u32 len, u32 invalidated)
{
	struct ib_wc *wc = &s->wc[s->n++];

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = status;
	wc->opcode = opcode;
	wc->byte_len = len;
	if (invalidated) {
		wc->wc_flags = IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = invalidated;
	}
}

/* A request of an NDK QP's queue of @kind whose slot @slot is free. */
static u64 ndk_script_stale(NDK_QP *qp, u64 kind, u32 slot)
{
	struct ndk_qp *q = container_of(qp, struct ndk_qp, ndk);

	return ndk_wr_tag(&q->obj, kind) | slot;
}

/* A request of a receive queue whose QP is gone: no owner has the id. */
#define NDK_SCRIPT_GONE	(NDK_WR_RQ << NDK_WR_KIND_SHIFT | \
			 (u64)NDK_WR_ID_MASK << NDK_WR_ID_SHIFT | 1)

/* A key no region of the device has: its index is beyond them all. */
#define NDK_SCRIPT_NO_REGION	0xfffffe11U

/* A CQ with a recording callback, and an NDK QP on it that posts nothing. */
static NDK_CQ *ndk_script_cq(struct kunit *test, struct ndk_notify_rec *rec,
			     NDK_QP **qp)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	NDK_CQ *cq = NULL;
	NDK_QP *uqp = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	memset(rec, 0, sizeof(*rec));
	rec->status = STATUS_PENDING;
	init_completion(&rec->done);
	ndk_wait_init(&w);
	st = e->a->Dispatch->NdkCreateCq(e->a, 64, ndk_notify_rec_cb, rec,
					 NULL, ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, cq, cq, e, 8, 8, 1, 1, 0,
					  ndk_test_create_cb, &w, &uqp);
	*qp = container_of(ndk_created(test, st, &w, uqp), NDK_QP, Header);
	return cq;
}

/*
 * An SRQ of the environment's PD with one receive of @ctx posted, its
 * wr_id in @wr_id[0], and in @wr_id[1] that of a request of the same
 * slot one round of the ring before: a late report.
 */
static NDK_SRQ *ndk_script_srq(struct kunit *test, void *ctx, u64 wr_id[2])
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	NDK_SRQ *unused = NULL, *srq;
	struct ndk_srq *q;
	struct ndk_wait w;
	NDK_SGE sge = { .LogicalAddress = PAGE_SIZE, .Length = 16 };
	NTSTATUS st;

	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd,
							   &sge.MemoryRegionToken);
	ndk_wait_init(&w);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, 4, 1, 0, NULL, NULL, NULL,
					   ndk_test_create_cb, &w, &unused);
	srq = container_of(ndk_created(test, st, &w, unused), NDK_SRQ, Header);
	q = container_of(srq, struct ndk_srq, ndk);
	KUNIT_EXPECT_EQ(test, srq->Dispatch->NdkSrqReceive(srq, ctx, &sge, 1),
			STATUS_SUCCESS);
	wr_id[0] = q->ring.tag | (u32)(q->ring.head - 1);
	wr_id[1] = q->ring.tag | (u32)(q->ring.head - 1 - (q->ring.mask + 1));
	return srq;
}

/* Close what ndk_script_cq() made; the QP first, as its CQ outlives it. */
static void ndk_script_close(struct kunit *test, NDK_CQ *cq, NDK_QP *qp)
{
	ndk_test_close(test, &qp->Header, qp->Dispatch->NdkCloseQp);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/*
 * Up to @n results of @cq into @r, with NdkGetCqResultsEx if @ex, else
 * with NdkGetCqResults (the fields that has; the rest of @r zero).
 */
static noinline ULONG ndk_script_get(NDK_CQ *cq, NDK_RESULT_EX *r, ULONG n, bool ex)
{
	NDK_RESULT plain[NDK_CQ_POLL_BATCH];
	ULONG k, i;

	if (ex)
		return cq->Dispatch->NdkGetCqResultsEx(cq, r, n);
	k = cq->Dispatch->NdkGetCqResults(cq, plain, min_t(ULONG, n,
							   ARRAY_SIZE(plain)));
	for (i = 0; i < k; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		memcpy(&r[i], &plain[i], sizeof(plain[i]));
	}
	return k;
}

/* Result @r is @ctx's, with @status and @len; if @ex, of @type and @key. */
static void ndk_script_expect(struct kunit *test, const NDK_RESULT_EX *r,
			      bool ex, uintptr_t ctx, NTSTATUS status,
			      u32 len, NDK_OPERATION_TYPE type, u32 key)
{
	KUNIT_EXPECT_PTR_EQ(test, r->RequestContext, (void *)ctx);
	KUNIT_EXPECT_EQ(test, r->Status, status);
	KUNIT_EXPECT_EQ(test, r->BytesTransferred, len);
	KUNIT_EXPECT_NULL(test, r->QPContext);
	if (!ex)
		return;
	KUNIT_EXPECT_EQ(test, r->Type, (ULONG)type);
	KUNIT_EXPECT_EQ(test, (u32)r->TypeSpecificCompletionOutput, key);
}

/*
 * Completions ndk did not post, or no longer owns, from a device whose
 * CQ returns what the case scripted, polled with NdkGetCqResults and
 * then NdkGetCqResultsEx. A raw QP's request failed with a local QP
 * error is STATUS_CONNECTION_ABORTED: only an NDK QP's cancellation
 * makes that STATUS_CANCELLED. A raw receive that invalidated a key no
 * region has reports it at once, with its bytes, as a raw read and an
 * SRQ's receive do. A completion of a gone QP, of a request that had its
 * result already (its slot free, or taken by a later request), or a
 * flush while ndk plays a driver that loses them (ndk_fault_lose()),
 * gives no result. Nothing more comes after.
 */
static void ndk_cq_foreign_results_test(struct kunit *test)
{
	struct ndk_script *s = ndk_kzalloc_test(test, sizeof(*s));
	int (*poll)(struct ib_cq *ibcq, int n, struct ib_wc *wc);
	struct ndk_notify_rec rec;
	NDK_RESULT_EX *r = ndk_kzalloc_test(test, NDK_CQ_POLL_BATCH *
					    sizeof(*r));
	struct ndk_cq *c;
	NDK_SRQ *srq[2];
	u64 srq_id[2];
	NDK_CQ *cq;
	NDK_QP *qp;
	ULONG got;
	int ex;

	cq = ndk_script_cq(test, &rec, &qp);
	c = container_of(cq, struct ndk_cq, ndk);
	poll = c->poll_cq;
	ndk_script = s;
	WRITE_ONCE(c->poll_cq, ndk_script_poll);
	for (ex = 0; ex < 2; ex++) {
		memset(s, 0, sizeof(*s));
		srq[ex] = ndk_script_srq(test, (void *)0x75, srq_id);
		ndk_script_add(s, 0x71, IB_WC_LOC_QP_OP_ERR, IB_WC_SEND, 0, 0);
		ndk_script_add(s, ndk_script_stale(qp, NDK_WR_SQ, 3), IB_WC_SUCCESS,
			       IB_WC_SEND, 0, 0);
		ndk_script_add(s, NDK_SCRIPT_GONE, IB_WC_SUCCESS, IB_WC_RECV,
			       8, 0);
		ndk_script_add(s, 0x72, IB_WC_SUCCESS, IB_WC_RECV, 40,
			       NDK_SCRIPT_NO_REGION);
		ndk_script_add(s, 0x73, IB_WC_WR_FLUSH_ERR, IB_WC_RECV, 0, 0);
		ndk_script_add(s, 0x74, IB_WC_SUCCESS, IB_WC_RDMA_READ, 24, 0);
		ndk_script_add(s, srq_id[1], IB_WC_SUCCESS, IB_WC_RECV, 4, 0);
		ndk_script_add(s, srq_id[0], IB_WC_SUCCESS, IB_WC_RECV, 12, 0);
		/* As many as the device has: ndk asks it again, for none. */
		ndk_fault_lose(true);
		got = ndk_script_get(cq, r, s->n, ex);
		ndk_fault_lose(false);
		KUNIT_EXPECT_EQ(test, s->at, s->n);
		KUNIT_EXPECT_EQ(test, got, 4U);
		if (got != 4)
			continue;
		ndk_script_expect(test, &r[0], ex, 0x71,
				  STATUS_CONNECTION_ABORTED, 0,
				  NdkOperationTypeSend, 0);
		ndk_script_expect(test, &r[1], ex, 0x72, STATUS_SUCCESS, 40,
				  NdkOperationTypeReceiveAndInvalidate,
				  NDK_SCRIPT_NO_REGION);
		ndk_script_expect(test, &r[2], ex, 0x74, STATUS_SUCCESS, 24,
				  NdkOperationTypeRead, 0);
		ndk_script_expect(test, &r[3], ex, 0x75, STATUS_SUCCESS, 12,
				  NdkOperationTypeReceive, 0);
		KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, NDK_CQ_POLL_BATCH, ex),
				0U);
		KUNIT_EXPECT_FALSE(test, READ_ONCE(c->held));
	}
	WRITE_ONCE(c->poll_cq, poll);
	ndk_script = NULL;
	ndk_script_close(test, cq, qp);
	for (ex = 0; ex < 2; ex++)
		ndk_test_close(test, &srq[ex]->Header,
			       srq[ex]->Dispatch->NdkCloseSrq);
}

/* Poll @cq until a result comes, for NDK_TEST_TIMEOUT; how many came. */
static ULONG ndk_script_wait(NDK_CQ *cq, NDK_RESULT_EX *r, ULONG n, bool ex)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	ULONG got;

	while (!(got = ndk_script_get(cq, r, n, ex)) &&
	       time_before(jiffies, end))
		usleep_range(2000, 4000);
	return got;
}

/* Wait for notification @n of @rec; whether it came. */
static bool ndk_script_notified(struct ndk_notify_rec *rec, int n)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	while (atomic_read(&rec->count) < n && time_before(jiffies, end))
		usleep_range(2000, 4000);
	return atomic_read(&rec->count) == n;
}

/* A region registered over @t, one page, for a script's invalidations. */
static NDK_MR *ndk_script_region(struct kunit *test, struct ndk_mem *t)
{
	NDK_MR *mr;

	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, 0, PAGE_SIZE);
	mr = ndk_test_mr(test, ndk_cenv_need(test), false);
	KUNIT_ASSERT_EQ(test, ndk_test_register(test, mr, t, t->len,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE),
			STATUS_SUCCESS);
	return mr;
}

/* Deregister, close and free what ndk_script_region() made. */
static void ndk_script_region_free(struct kunit *test, NDK_MR *mr,
				   struct ndk_mem *t)
{
	KUNIT_EXPECT_EQ(test, ndk_test_deregister(test, mr), STATUS_SUCCESS);
	ndk_test_close_mr(test, mr);
	ndk_mem_free(t);
}

static const bool ndk_hold_ex[] = { false, true };

static void ndk_hold_desc(const bool *ex, char *desc)
{
	strscpy(desc, *ex ? "NdkGetCqResultsEx" : "NdkGetCqResults",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_hold, ndk_hold_ex, ndk_hold_desc);

/*
 * Results held behind receives that invalidated a registered region,
 * polled one at a time (NdkGetCqResults or NdkGetCqResultsEx, by the
 * parameter). The scripted device returns, in one batch, a receive
 * naming the region's local token, a send, a receive naming its remote
 * token, a raw request failed with a local QP error, the completions of
 * a gone QP, of free slots and of a slot's earlier round, an SRQ's
 * receive, a receive naming a key no region has, a flush (while ndk
 * plays a driver that loses them) and a last receive. While the case holds the region's
 * lock, so that the region is not restored: no result, and an arm
 * notifies nobody. Once restored: the CQ notifies once for its arm,
 * again for an arm while it still holds results, gives none to a poll
 * for none, then gives them one per poll in order, notifying an arm
 * while more wait; the second
 * invalidating receive holds the rest again until its own restoring,
 * which the case holds off as well; then the rest comes, without the
 * dropped ones. An arm before the next poll notifies (that poll looks
 * at the sweep); after it, an arm finds nothing to notify. The
 * region reports are stale (it was never invalidated), which ndk's
 * restoring survives: the device refuses the registration.
 */
static void ndk_cq_held_stash_test(struct kunit *test)
{
	const bool ex = *(const bool *)test->param_value;
	struct ndk_script *s = ndk_kzalloc_test(test, sizeof(*s));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	int (*poll)(struct ib_cq *ibcq, int n, struct ib_wc *wc);
	NDK_OPERATION_TYPE inv = NdkOperationTypeReceiveAndInvalidate;
	struct ndk_notify_rec rec;
	NDK_RESULT_EX *r = ndk_kzalloc_test(test, NDK_CQ_POLL_BATCH *
					    sizeof(*r));
	struct ndk_mr *m;
	struct ndk_cq *c;
	u32 lkey, rkey;
	u64 srq_id[2];
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_SRQ *srq;
	NDK_MR *mr;
	ULONG got;

	mr = ndk_script_region(test, t);
	m = container_of(mr, struct ndk_mr, ndk);
	lkey = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	cq = ndk_script_cq(test, &rec, &qp);
	c = container_of(cq, struct ndk_cq, ndk);
	srq = ndk_script_srq(test, (void *)0x87, srq_id);

	ndk_script_add(s, 0x81, IB_WC_SUCCESS, IB_WC_RECV, 16, lkey);
	ndk_script_add(s, 0x82, IB_WC_SUCCESS, IB_WC_SEND, 0, 0);
	ndk_script_add(s, 0x83, IB_WC_SUCCESS, IB_WC_RECV, 32, rkey);
	ndk_script_add(s, 0x84, IB_WC_LOC_QP_OP_ERR, IB_WC_SEND, 0, 0);
	ndk_script_add(s, NDK_SCRIPT_GONE, IB_WC_SUCCESS, IB_WC_RECV, 8, 0);
	ndk_script_add(s, ndk_script_stale(qp, NDK_WR_SQ, 5), IB_WC_SUCCESS, IB_WC_SEND,
		       0, 0);
	ndk_script_add(s, ndk_script_stale(qp, NDK_WR_RQ, 6), IB_WC_SUCCESS,
		       IB_WC_RECV, 4, 0);
	ndk_script_add(s, srq_id[1], IB_WC_SUCCESS, IB_WC_RECV, 4, 0);
	ndk_script_add(s, srq_id[0], IB_WC_SUCCESS, IB_WC_RECV, 12, 0);
	ndk_script_add(s, 0x88, IB_WC_SUCCESS, IB_WC_RECV, 20,
		       NDK_SCRIPT_NO_REGION);
	ndk_script_add(s, 0x85, IB_WC_WR_FLUSH_ERR, IB_WC_RECV, 0, 0);
	ndk_script_add(s, 0x86, IB_WC_SUCCESS, IB_WC_RECV, 8, 0);
	poll = c->poll_cq;
	ndk_script = s;
	WRITE_ONCE(c->poll_cq, ndk_script_poll);

	/* Held while the region cannot be restored. */
	mutex_lock(&m->lock);
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, NDK_CQ_POLL_BATCH, ex), 0U);
	KUNIT_EXPECT_EQ(test, s->at, s->n);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(c->held));
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, 1, ex), 0U);
	ndk_cq_settle(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 0);
	mutex_unlock(&m->lock);

	/* Restored: the arm's notification, then one for the next arm. */
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 1));
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 2));
	KUNIT_EXPECT_EQ(test, rec.status, STATUS_SUCCESS);
	/* A poll for none takes none. */
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, NULL, 0, ex), 0U);

	/* One per poll: more stay held than the buffer takes. */
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, 1, ex), 1U);
	ndk_script_expect(test, &r[0], ex, 0x81, STATUS_SUCCESS, 16, inv,
			  lkey);
	/* Restored and given, results still wait: an arm notifies. */
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 3));
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, 1, ex), 1U);
	ndk_script_expect(test, &r[0], ex, 0x82, STATUS_SUCCESS, 0,
			  NdkOperationTypeSend, 0);

	/* The second invalidating receive holds the rest again. */
	mutex_lock(&m->lock);
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, 1, ex), 0U);
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, 1, ex), 0U);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(c->held));
	mutex_unlock(&m->lock);
	KUNIT_EXPECT_EQ(test, ndk_script_wait(cq, r, 1, ex), 1U);
	ndk_script_expect(test, &r[0], ex, 0x83, STATUS_SUCCESS, 32, inv,
			  rkey);

	/* The rest, without what gives no result. */
	ndk_fault_lose(true);
	got = ndk_script_get(cq, r, NDK_CQ_POLL_BATCH, ex);
	ndk_fault_lose(false);
	KUNIT_EXPECT_EQ(test, got, 4U);
	if (got == 4) {
		ndk_script_expect(test, &r[0], ex, 0x84,
				  STATUS_CONNECTION_ABORTED, 0,
				  NdkOperationTypeSend, 0);
		ndk_script_expect(test, &r[1], ex, 0x87, STATUS_SUCCESS, 12,
				  NdkOperationTypeReceive, 0);
		ndk_script_expect(test, &r[2], ex, 0x88, STATUS_SUCCESS, 20,
				  inv, NDK_SCRIPT_NO_REGION);
		ndk_script_expect(test, &r[3], ex, 0x86, STATUS_SUCCESS, 8,
				  NdkOperationTypeReceive, 0);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&container_of(srq, struct ndk_srq,
							ndk)->queued), 0);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(c->held));
	/* Until a poll finds the CQ empty, an arm notifies at once. */
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 4));
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, NDK_CQ_POLL_BATCH, ex), 0U);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(c->sweep_due));
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	ndk_cq_settle(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 4);

	WRITE_ONCE(c->poll_cq, poll);
	ndk_script = NULL;
	ndk_script_close(test, cq, qp);
	ndk_test_close(test, &srq->Header, srq->Dispatch->NdkCloseSrq);
	ndk_script_region_free(test, mr, t);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.wrong_ctx), 0);
}

/*
 * ndk_cq_restore_late_test's pause of the restoring, between its end and
 * its notifications.
 */
static struct {
	struct completion reached;
	struct completion go;
} ndk_restore_pause;

static void ndk_restore_pause_hook(struct ndk_device *dev)
{
	complete(&ndk_restore_pause.reached);
	wait_for_completion_timeout(&ndk_restore_pause.go, NDK_TEST_TIMEOUT);
}

/*
 * The restoring's notification comes late: its region is restored (the
 * restoring published its ticket), and before it notifies the CQs that
 * held results back, the consumer arms, is notified by the arm, takes
 * the held results and the rest, finds the CQ empty and arms again. The
 * restoring's notification then has nothing to report, and the CQ
 * notifies nobody. The scripted device returns a receive that
 * invalidated the region's remote token and a receive behind it.
 */
static void ndk_cq_restore_late_test(struct kunit *test)
{
	const bool ex = *(const bool *)test->param_value;
	struct ndk_script *s = ndk_kzalloc_test(test, sizeof(*s));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	int (*poll)(struct ib_cq *ibcq, int n, struct ib_wc *wc);
	struct ndk_notify_rec rec;
	NDK_RESULT_EX r[4];
	struct ndk_cq *c;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_MR *mr;
	u32 rkey;

	mr = ndk_script_region(test, t);
	rkey = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	cq = ndk_script_cq(test, &rec, &qp);
	c = container_of(cq, struct ndk_cq, ndk);
	ndk_script_add(s, 0x91, IB_WC_SUCCESS, IB_WC_RECV, 16, rkey);
	ndk_script_add(s, 0x92, IB_WC_SUCCESS, IB_WC_RECV, 8, 0);
	poll = c->poll_cq;
	ndk_script = s;
	WRITE_ONCE(c->poll_cq, ndk_script_poll);
	init_completion(&ndk_restore_pause.reached);
	init_completion(&ndk_restore_pause.go);
	ndk_mr_set_restored_hook(ndk_restore_pause_hook);

	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, ARRAY_SIZE(r), ex), 0U);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(c->held));
	KUNIT_EXPECT_TRUE(test,
			  wait_for_completion_timeout(&ndk_restore_pause.reached,
						      NDK_TEST_TIMEOUT));
	/* Restored, not yet notified: the arm notifies, for what waits. */
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 1));
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, ARRAY_SIZE(r), ex), 2U);
	ndk_script_expect(test, &r[0], ex, 0x91, STATUS_SUCCESS, 16,
			  NdkOperationTypeReceiveAndInvalidate, rkey);
	ndk_script_expect(test, &r[1], ex, 0x92, STATUS_SUCCESS, 8,
			  NdkOperationTypeReceive, 0);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(c->held));
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, ARRAY_SIZE(r), ex), 0U);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);

	/* The restoring's notification, late: nothing new, nobody told. */
	complete(&ndk_restore_pause.go);
	flush_work(&c->obj.adapter->dev->restore_work);
	/* Its kick has run, not only been scheduled. */
	ndk_cq_settle(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 1);
	ndk_mr_set_restored_hook(NULL);

	WRITE_ONCE(c->poll_cq, poll);
	ndk_script = NULL;
	ndk_script_close(test, cq, qp);
	ndk_script_region_free(test, mr, t);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.wrong_ctx), 0);
}

/*
 * A device's IB_EVENT_CQ_ERR on a CQ nobody armed notifies nobody; the
 * next arm, with no completion in the CQ, notifies at once, with
 * STATUS_INTERNAL_ERROR, and so does every arm after it.
 */
static void ndk_cq_error_event_arm_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_notify_rec rec = {};
	struct ib_event ev;
	struct ndk_wait w;
	struct ndk_cq *p;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	init_completion(&rec.done);
	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 8, ndk_notify_rec_cb, &rec, NULL,
				      ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	p = container_of(cq, struct ndk_cq, ndk);
	ev = (struct ib_event){ .device = p->ibcq->device,
				.element.cq = p->ibcq,
				.event = IB_EVENT_CQ_ERR };
	p->ibcq->event_handler(&ev, p->ibcq->cq_context);
	KUNIT_EXPECT_EQ(test, READ_ONCE(p->fatal), STATUS_INTERNAL_ERROR);
	ndk_cq_settle(p);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.count), 0);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ERRORS);
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 1));
	KUNIT_EXPECT_EQ(test, rec.status, STATUS_INTERNAL_ERROR);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	KUNIT_EXPECT_TRUE(test, ndk_script_notified(&rec, 2));
	KUNIT_EXPECT_EQ(test, rec.status, STATUS_INTERNAL_ERROR);
	KUNIT_EXPECT_EQ(test, atomic_read(&rec.wrong_ctx), 0);
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
}

/*
 * NdkResizeCq below the completions the CQ holds: rxe refuses it, and
 * the request completes with STATUS_INVALID_PARAMETER; the CQ keeps its
 * depth and every completion. siw cannot resize at all.
 */
static void ndk_cq_resize_below_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_cenv_need(test)->a;
	struct ndk_notify_rec rec = {};
	struct ndk_test_lqp *l;
	NDK_RESULT_EX r[4];
	struct ndk_wait w;
	struct ndk_cq *p;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	init_completion(&rec.done);
	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 16, ndk_notify_rec_cb, &rec, NULL,
				      ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	p = container_of(cq, struct ndk_cq, ndk);
	if (!(container_of(a, struct ndk_adapter, ndk)->info.AdapterFlags &
	      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED)) {
		ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
		kunit_skip(test, "device cannot resize CQs");
	}
	l = ndk_test_loopback_qp(test, container_of(a, struct ndk_adapter, ndk),
				 p->ibcq);
	ndk_test_loopback_send(test, l, 1, 2, false);
	ndk_test_loopback_send(test, l, 3, 4, false);
	/* Let the four completions land (about 10 ms each under TCG). */
	msleep(1000);
	ndk_wait_init(&w);
	KUNIT_EXPECT_EQ(test, cq->Dispatch->NdkResizeCq(cq, 1,
							ndk_test_request_cb,
							&w),
			STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	KUNIT_EXPECT_EQ(test, w.status, STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, atomic_read(&w.calls), 1);
	KUNIT_EXPECT_EQ(test, p->depth, 16U);
	KUNIT_EXPECT_EQ(test, ndk_poll_n(cq, r, 4, true), 4U);
	KUNIT_EXPECT_EQ(test, ndk_script_get(cq, r, 4, true), 0U);
	ndk_notify_teardown(test, &rec.wrong_ctx, cq, l);
}

/**
 * struct ndk_spin - a notification callback that runs until it is let go
 * @cq: the CQ
 * @entered: completed as each callback starts
 * @release: the first callback may end
 * @calls: callbacks so far
 * @saw_dead: the second callback ended because the CQ was dead
 */
struct ndk_spin {
	struct ndk_cq *cq;
	struct completion entered;
	bool release;
	atomic_t calls;
	bool saw_dead;
};

/*
 * The first call spins until the case lets it go, the second until the
 * CQ is dead; each gives up after 10 s, should that never come.
 */
static void ndk_spin_cb(PVOID Context, NTSTATUS CqStatus)
{
	struct ndk_spin *s = Context;
	int n = atomic_inc_return(&s->calls), i;

	complete(&s->entered);
	for (i = 0; i < 10 * 1000 * 1000; i++) {
		if (n == 1 && READ_ONCE(s->release))
			return;
		if (n > 1 && READ_ONCE(s->cq->dead)) {
			WRITE_ONCE(s->saw_dead, true);
			return;
		}
		udelay(1);
	}
}

/*
 * Arm @cq and call its device's completion handler, here; whether ndk
 * then owes a notification behind the running callback. The kick's
 * softirq runs at local_bh_enable(), except where 6.1 leaves it to a
 * running ksoftirqd (a loaded host): it is waited for, up to the cases'
 * timeout. Nothing clears the debt before the running callback ends.
 */
static bool ndk_spin_again(struct ndk_spin *s, NDK_CQ *cq)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	struct ib_cq *ibcq = s->cq->ibcq;
	bool again;

	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	local_bh_disable();
	ibcq->comp_handler(ibcq, ibcq->cq_context);
	local_bh_enable();
	for (;;) {
		spin_lock_irq(&s->cq->notify_lock);
		again = s->cq->notify_again;
		spin_unlock_irq(&s->cq->notify_lock);
		if (again || time_after(jiffies, end))
			return again;
		usleep_range(1000, 2000);
	}
}

/* The device's completion handler, called on another CPU. */
static int ndk_spin_kick(void *arg)
{
	struct ib_cq *ibcq = arg;

	local_bh_disable();
	ibcq->comp_handler(ibcq, ibcq->cq_context);
	local_bh_enable();
	while (!kthread_should_stop())
		usleep_range(1000, 2000);
	return 0;
}

/*
 * Notifications that come while the callback runs on another CPU (the
 * consumer re-armed, the device completed) run right after it, there;
 * and NdkCloseCq while one runs waits for it: the callback, which spins
 * until the CQ is dead, sees it so and ends, and the notification due
 * behind it never runs. The callback ran twice.
 */
static void ndk_cq_close_in_notify_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_env_adapter(test);
	struct ndk_spin *s = ndk_kzalloc_test(test, sizeof(*s));
	struct task_struct *t;
	struct ib_cq *ibcq;
	struct ndk_wait w;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	init_completion(&s->entered);
	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, 8, ndk_spin_cb, s, NULL,
				      ndk_test_create_cb, &w, &cq);
	cq = to_cq(ndk_created(test, st, &w, cq));
	s->cq = container_of(cq, struct ndk_cq, ndk);
	ibcq = s->cq->ibcq;
	/* This thread stays off the CPU the callback will keep busy. */
	migrate_disable();
	t = kthread_create(ndk_spin_kick, ibcq, "ndk_spin");
	if (IS_ERR(t)) {
		migrate_enable();
		KUNIT_FAIL(test, "no thread: %ld", PTR_ERR(t));
		ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
		return;
	}
	kthread_bind(t, cpumask_any_but(cpu_online_mask,
					raw_smp_processor_id()));
	get_task_struct(t);
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	wake_up_process(t);
	if (!wait_for_completion_timeout(&s->entered, NDK_TEST_TIMEOUT))
		KUNIT_FAIL(test, "no notification");
	/* Another one is due behind it: it runs once the first ends. */
	KUNIT_EXPECT_TRUE(test, ndk_spin_again(s, cq));
	WRITE_ONCE(s->release, true);
	if (!wait_for_completion_timeout(&s->entered, NDK_TEST_TIMEOUT))
		KUNIT_FAIL(test, "no second notification");
	/* And one more, due while the close waits. */
	KUNIT_EXPECT_TRUE(test, ndk_spin_again(s, cq));
	ndk_test_close(test, &cq->Header, cq->Dispatch->NdkCloseCq);
	migrate_enable();
	KUNIT_EXPECT_TRUE(test, READ_ONCE(s->saw_dead));
	KUNIT_EXPECT_EQ(test, atomic_read(&s->calls), 2);
	kthread_stop(t);
	put_task_struct(t);
}

/* A small RC QP in RESET on @pd and @cq, for a loopback connection. */
static struct ib_qp *ndk_loop_qp(struct ib_pd *pd, struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.send_cq = cq,
		.recv_cq = cq,
	};

	return ib_create_qp(pd, &init);
}

/*
 * The loopback connection the raw QPs of these cases use
 * (ndk_loop_connect()), given no peer: on iWARP, which needs one, it is
 * refused with -EINVAL and leaves the QP as it was, so that the same QP
 * connects once it has a peer; on IB and RoCE the peer is not used, and
 * the QP is connected to itself.
 */
static void ndk_cq_loop_no_peer_test(struct kunit *test)
{
	struct ndk_adapter *a = container_of(ndk_env_adapter(test),
					     struct ndk_adapter, ndk);
	struct ndk_loop *loop = kunit_kzalloc(test, sizeof(*loop), GFP_KERNEL);
	bool iwarp = rdma_protocol_iwarp(a->ibdev, a->port);
	struct ib_qp_init_attr got;
	struct ib_qp_attr attr;
	struct ib_pd *pd;
	struct ib_cq *cq;

	KUNIT_ASSERT_NOT_NULL(test, loop);
	pd = ib_alloc_pd(a->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pd));
	cq = ib_alloc_cq(a->ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(cq));
	loop->qp = ndk_loop_qp(pd, cq);
	KUNIT_ASSERT_FALSE(test, IS_ERR(loop->qp));

	KUNIT_EXPECT_EQ(test, ndk_loop_connect(a, loop), iwarp ? -EINVAL : 0);
	KUNIT_EXPECT_NULL(test, loop->id);
	KUNIT_EXPECT_NULL(test, loop->peer_id);
	if (iwarp) {
		loop->peer = ndk_loop_qp(pd, cq);
		KUNIT_ASSERT_FALSE(test, IS_ERR(loop->peer));
		KUNIT_EXPECT_EQ(test, ndk_loop_connect(a, loop), 0);
	} else {
		KUNIT_EXPECT_EQ(test, ib_query_qp(loop->qp, &attr, IB_QP_STATE,
						  &got),
				0);
		KUNIT_EXPECT_EQ(test, attr.qp_state, IB_QPS_RTS);
	}
	ndk_loop_disconnect(loop);
	ib_destroy_qp(loop->qp);
	if (loop->peer)
		ib_destroy_qp(loop->peer);
	ib_free_cq(cq);
	ib_dealloc_pd(pd);
}

/*
 * iWARP: a loopback connection whose passive QP cannot be accepted (it is
 * in the error state already) fails with the reset or the refusal the
 * active side hears, and leaves no rdma_cm id behind.
 */
static void ndk_cq_loop_peer_error_test(struct kunit *test)
{
	struct ndk_adapter *a = container_of(ndk_env_adapter(test),
					     struct ndk_adapter, ndk);
	struct ndk_loop *loop = kunit_kzalloc(test, sizeof(*loop), GFP_KERNEL);
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_pd *pd;
	struct ib_cq *cq;
	int err;

	KUNIT_ASSERT_NOT_NULL(test, loop);
	if (!rdma_protocol_iwarp(a->ibdev, a->port))
		kunit_skip(test, "only iWARP joins two QPs through rdma_cm");
	pd = ib_alloc_pd(a->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pd));
	cq = ib_alloc_cq(a->ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(cq));
	loop->qp = ndk_loop_qp(pd, cq);
	KUNIT_ASSERT_FALSE(test, IS_ERR(loop->qp));
	loop->peer = ndk_loop_qp(pd, cq);
	KUNIT_ASSERT_FALSE(test, IS_ERR(loop->peer));
	KUNIT_ASSERT_EQ(test, ib_modify_qp(loop->peer, &attr, IB_QP_STATE), 0);

	err = ndk_loop_connect(a, loop);
	KUNIT_EXPECT_TRUE_MSG(test, err == -ECONNRESET || err == -ECONNREFUSED,
			      "ndk_loop_connect() = %d", err);
	KUNIT_EXPECT_NULL(test, loop->id);
	KUNIT_EXPECT_NULL(test, loop->peer_id);
	ndk_loop_disconnect(loop);
	ib_destroy_qp(loop->qp);
	ib_destroy_qp(loop->peer);
	ib_free_cq(cq);
	ib_dealloc_pd(pd);
}

/*
 * Give @a's device a PD, a CQ and two fresh QPs, expect the loopback
 * connection between them to be refused with @want and leave no id, and
 * free all of it. The setup's failures are expectations, not assertions,
 * so that the caller always removes the devices it added.
 */
static void ndk_loop_refused(struct kunit *test, struct ndk_adapter *a,
			     int want)
{
	struct ndk_loop *loop = kunit_kzalloc(test, sizeof(*loop), GFP_KERNEL);
	struct ib_pd *pd;
	struct ib_cq *cq;

	KUNIT_EXPECT_NOT_NULL(test, loop);
	if (!loop)
		return;
	pd = ib_alloc_pd(a->ibdev, 0);
	KUNIT_EXPECT_FALSE(test, IS_ERR(pd));
	cq = IS_ERR(pd) ? ERR_CAST(pd) :
	     ib_alloc_cq(a->ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	KUNIT_EXPECT_FALSE(test, IS_ERR(cq));
	loop->qp = IS_ERR(cq) ? ERR_CAST(cq) : ndk_loop_qp(pd, cq);
	loop->peer = IS_ERR(loop->qp) ? loop->qp : ndk_loop_qp(pd, cq);
	KUNIT_EXPECT_FALSE(test, IS_ERR(loop->peer));
	if (!IS_ERR(loop->peer)) {
		KUNIT_EXPECT_EQ(test, ndk_loop_connect(a, loop), want);
		KUNIT_EXPECT_NULL(test, loop->id);
		KUNIT_EXPECT_NULL(test, loop->peer_id);
		ndk_loop_disconnect(loop);
		ib_destroy_qp(loop->peer);
	}
	if (!IS_ERR(loop->qp))
		ib_destroy_qp(loop->qp);
	if (!IS_ERR(cq))
		ib_free_cq(cq);
	if (!IS_ERR(pd))
		ib_dealloc_pd(pd);
}

#define NDK_SIWETH_DEV	"ndksiweth"

/*
 * iWARP: the loop listens on its interface's address, and where that
 * address leads rdma_cm to another device of the same interface, the loop
 * is refused (-ENODEV) rather than join QPs of two devices. siw added on
 * the rxe run's interface: rdma_cm lists the older rxe device first, and
 * rxe's GIDs hold the address. The adapter is the loop's view of siw's
 * port alone, as ndk would not pick siw by interface beside rxe.
 */
static void ndk_cq_loop_other_device_test(struct kunit *test)
{
	struct ndk_adapter *own = container_of(ndk_env_adapter(test),
					       struct ndk_adapter, ndk);
	struct ndk_adapter *a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	struct net_device *ndev;

	KUNIT_ASSERT_NOT_NULL(test, a);
	if (ndk_test_iwarp())
		kunit_skip(test, "siw goes beside the rxe run's own device");
	KUNIT_ASSERT_EQ(test, ndk_test_shell("modprobe siw"), 0);
	KUNIT_ASSERT_EQ(test, ndk_test_shell("rdma link add " NDK_SIWETH_DEV
					     " type siw netdev eth0"), 0);
	ndev = dev_get_by_index(&init_net, own->ifindex);
	if (ndev) {
		a->ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_SIW);
		dev_put(ndev);
	}
	a->port = 1;
	a->ifindex = own->ifindex;
	KUNIT_EXPECT_NOT_NULL(test, a->ibdev);
	if (a->ibdev) {
		ndk_loop_refused(test, a, -ENODEV);
		ib_device_put(a->ibdev);
	}
	KUNIT_EXPECT_EQ(test, ndk_test_shell("rdma link delete "
					     NDK_SIWETH_DEV), 0);
}

#define NDK_BARE_DEV	"ndkbare0"

/*
 * iWARP: an adapter whose interface has no IPv4 address has no address
 * for a loopback connection: -EADDRNOTAVAIL before any QP is touched,
 * whether the interface has IPv4 state with no address or, its MTU below
 * IPv4's least, none. siw on a dummy interface of the case's own.
 */
static void ndk_cq_loop_no_address_test(struct kunit *test)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct net_device *ndev;
	NDK_ADAPTER *na = NULL;
	struct ndk_adapter *a;
	int ifindex = 0;

	if (!ndk_test_iwarp())
		kunit_skip(test, "only iWARP needs an address to loop through");
	KUNIT_ASSERT_EQ(test, ndk_test_shell("ip link add " NDK_BARE_DEV
					     " type dummy"), 0);
	if (ndk_test_shell("ip link set " NDK_BARE_DEV " up") ||
	    ndk_test_shell("rdma link add " NDK_BARE_DEV " type siw netdev "
			   NDK_BARE_DEV)) {
		ndk_test_shell("ip link delete " NDK_BARE_DEV);
		KUNIT_FAIL(test, "no siw device on " NDK_BARE_DEV);
		return;
	}
	ndev = dev_get_by_name(&init_net, NDK_BARE_DEV);
	if (ndev) {
		ifindex = ndev->ifindex;
		dev_put(ndev);
	}
	KUNIT_EXPECT_EQ(test, ndk_open_adapter(ifindex, v, &na),
			STATUS_SUCCESS);
	if (na) {
		a = container_of(na, struct ndk_adapter, ndk);
		ndk_loop_refused(test, a, -EADDRNOTAVAIL);
		/* Below IPv4's least MTU it has no IPv4 state at all. */
		KUNIT_EXPECT_EQ(test, ndk_test_shell("ip link set " NDK_BARE_DEV
						     " mtu 60"), 0);
		ndk_loop_refused(test, a, -EADDRNOTAVAIL);
		ndk_close_adapter(na);
	}
	KUNIT_EXPECT_EQ(test, ndk_test_shell("rdma link delete " NDK_BARE_DEV),
			0);
	KUNIT_EXPECT_EQ(test, ndk_test_shell("ip link delete " NDK_BARE_DEV),
			0);
}

static struct kunit_case ndk_cq_cases[] = {
	KUNIT_CASE(ndk_cq_create_close_test),
	KUNIT_CASE(ndk_cq_atomic_test),
	KUNIT_CASE(ndk_cq_close_in_create_test),
	KUNIT_CASE(ndk_cq_contexts_test),
	KUNIT_CASE(ndk_cq_depth_test),
	KUNIT_CASE(ndk_cq_affinity_test),
	KUNIT_CASE(ndk_cq_vector_test),
	KUNIT_CASE_PARAM(ndk_cq_arm_merge_test, ndk_arm_gen_params),
	KUNIT_CASE(ndk_cq_arm_empty_test),
	KUNIT_CASE(ndk_cq_resize_test),
	KUNIT_CASE(ndk_cq_close_during_resize_test),
	KUNIT_CASE(ndk_cq_moderation_test),
	KUNIT_CASE(ndk_cq_query_extension_test),
	KUNIT_CASE_PARAM(ndk_cq_moderation_params_test,
			 ndk_moderation_gen_params),
	KUNIT_CASE(ndk_cq_overflow_test),
	/* Notification: these complete the connection environment. */
	KUNIT_CASE(ndk_cq_unarmed_test),
	KUNIT_CASE(ndk_cq_notify_any_test),
	KUNIT_CASE(ndk_cq_notify_missed_test),
	KUNIT_CASE(ndk_cq_notify_solicited_test),
	KUNIT_CASE(ndk_cq_results_ex_test),
	KUNIT_CASE(ndk_cq_poll_none_test),
	KUNIT_CASE(ndk_cq_lost_event_test),
	KUNIT_CASE(ndk_cq_rearm_in_callback_test),
	KUNIT_CASE(ndk_cq_notify_irqs_off_test),
	KUNIT_CASE(ndk_cq_notify_serial_test),
	KUNIT_CASE(ndk_cq_notify_post_in_callback_test),
	KUNIT_CASE(ndk_cq_error_event_arm_test),
	KUNIT_CASE(ndk_cq_resize_below_test),
	KUNIT_CASE(ndk_cq_close_in_notify_test),
	/* A device double returns scripted completions. */
	KUNIT_CASE(ndk_cq_foreign_results_test),
	KUNIT_CASE_PARAM(ndk_cq_held_stash_test, ndk_hold_gen_params),
	KUNIT_CASE_PARAM(ndk_cq_restore_late_test, ndk_hold_gen_params),
	KUNIT_CASE(ndk_cq_loop_no_peer_test),
	KUNIT_CASE(ndk_cq_loop_peer_error_test),
	KUNIT_CASE(ndk_cq_loop_no_address_test),
	KUNIT_CASE(ndk_cq_loop_other_device_test),
	{}
};

NDK_SUITE(cq, ndk_env_adapter_init, ndk_conn_exit_test);
