// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_wdk: the KEVENT of the WDK layer. Windows code keeps events on its
 * stack and moves on as soon as a wait for one is satisfied, so the
 * KeSetEvent() that satisfied it must be done with the event by then.
 * Each case holds the event's wait-queue lock on one CPU while the other
 * side runs on another, which shows its half of that rule without a race.
 */
#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/workqueue.h>
#include <wdm.h>

#include "ndk_tests.h"

struct wdk_ev_case {
	KEVENT ev;
	struct work_struct work;
	atomic_t step;
};

/* Another online CPU than the caller's, which must not migrate. */
static int wdk_other_cpu(void)
{
	return cpumask_any_but(cpu_online_mask, smp_processor_id());
}

static struct wdk_ev_case *wdk_ev_case(struct kunit *test,
				       work_func_t fn, BOOLEAN signaled)
{
	struct wdk_ev_case *c;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	KeInitializeEvent(&c->ev, SynchronizationEvent, signaled);
	INIT_WORK(&c->work, fn);
	return c;
}

/*
 * The work item's first step, spinning up to a second for it: the
 * caller holds the lock or runs with preemption off, so it cannot sleep.
 */
static int wdk_started(struct wdk_ev_case *c)
{
	ktime_t end = ktime_add_ms(ktime_get(), 1000);
	int step;

	while (!(step = atomic_read(&c->step)) &&
	       ktime_before(ktime_get(), end))
		cpu_relax();
	return step;
}

static void wdk_set_fn(struct work_struct *work)
{
	struct wdk_ev_case *c = container_of(work, struct wdk_ev_case, work);

	atomic_set(&c->step, 1);
	KeSetEvent(&c->ev, IO_NO_INCREMENT, FALSE);
	atomic_set(&c->step, 2);
}

/*
 * KeSetEvent() signals under the lock: while another CPU holds it, a
 * KeSetEvent() that has started has not signalled yet, so no waiter can
 * go on while KeSetEvent() still has the event's wake-up ahead of it.
 */
static void ndk_wdk_set_under_lock_test(struct kunit *test)
{
	struct wdk_ev_case *c = wdk_ev_case(test, wdk_set_fn, FALSE);
	LARGE_INTEGER second = { .QuadPart = -10 * 1000 * 1000 };
	unsigned long flags;
	int started, step;
	LONG signaled;

	spin_lock_irqsave(&c->ev.Wait.lock, flags);
	queue_work_on(wdk_other_cpu(), system_highpri_wq, &c->work);
	started = wdk_started(c);
	/* Long enough, under TCG too, for an unlocked signal to land. */
	mdelay(5);
	signaled = KeReadStateEvent(&c->ev);
	step = atomic_read(&c->step);
	spin_unlock_irqrestore(&c->ev.Wait.lock, flags);

	KUNIT_EXPECT_EQ(test, started, 1);
	KUNIT_EXPECT_EQ(test, signaled, 0);
	KUNIT_EXPECT_EQ(test, step, 1);
	KUNIT_EXPECT_EQ(test, KeWaitForSingleObject(&c->ev, Executive,
						    KernelMode, FALSE,
						    &second),
			STATUS_SUCCESS);
	flush_work(&c->work);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->step), 2);
}

static void wdk_hold_fn(struct work_struct *work)
{
	struct wdk_ev_case *c = container_of(work, struct wdk_ev_case, work);
	unsigned long flags;

	spin_lock_irqsave(&c->ev.Wait.lock, flags);
	atomic_set(&c->step, 1);
	mdelay(20);
	atomic_set(&c->step, 2);
	spin_unlock_irqrestore(&c->ev.Wait.lock, flags);
}

/*
 * A satisfied wait returns only once it has had the lock: a KeSetEvent()
 * still holding it (here, the work item stands in for one) is over then.
 */
static void ndk_wdk_wait_takes_lock_test(struct kunit *test)
{
	struct wdk_ev_case *c = wdk_ev_case(test, wdk_hold_fn, TRUE);
	LARGE_INTEGER zero = { .QuadPart = 0 };
	int started, step;
	NTSTATUS st;

	/*
	 * Nothing between seeing the lock taken and the wait may sleep or
	 * be preempted: the wait must begin well within the 20 ms. A
	 * zero-timeout wait never sleeps.
	 */
	preempt_disable();
	queue_work_on(wdk_other_cpu(), system_highpri_wq, &c->work);
	started = wdk_started(c);
	st = KeWaitForSingleObject(&c->ev, Executive, KernelMode, FALSE,
				   &zero);
	step = atomic_read(&c->step);
	preempt_enable();
	flush_work(&c->work);

	KUNIT_EXPECT_NE(test, started, 0);
	KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, step, 2);
	/* The synchronization event was reset by the wait. */
	KUNIT_EXPECT_EQ(test, KeReadStateEvent(&c->ev), 0);
}

static struct kunit_case ndk_wdk_cases[] = {
	KUNIT_CASE(ndk_wdk_set_under_lock_test),
	KUNIT_CASE(ndk_wdk_wait_takes_lock_test),
	{}
};

NDK_SUITE(wdk, NULL, NULL);
