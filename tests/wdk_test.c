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
#include <linux/kthread.h>
#include <linux/sched/task.h>
#include <wdm.h>

#include "ndk_tests.h"

/*
 * The other side of a case runs in a kthread bound to another CPU and
 * already spinning there before the case takes the lock: starting it then
 * needs nothing from the case's CPU. (A work item could not promise that:
 * its pool may first create a worker, and that creation can wait for the
 * very CPU the case holds with interrupts or preemption off.)
 */
struct wdk_ev_case {
	KEVENT ev;
	void (*fn)(struct wdk_ev_case *c);
	struct task_struct *task;
	struct completion ready;
	atomic_t go;
	atomic_t step;
};

static int wdk_other_side(void *arg)
{
	struct wdk_ev_case *c = arg;

	complete(&c->ready);
	while (!atomic_read(&c->go) && !kthread_should_stop())
		cond_resched();
	/* It may end before kthread_stop(): wdk_start() holds the task. */
	if (atomic_read(&c->go))
		c->fn(c);
	return 0;
}

/* Stop the other side, once its @fn (if it was let go) has returned. */
static void wdk_stop(struct wdk_ev_case *c)
{
	kthread_stop(c->task);
	put_task_struct(c->task);
}

/*
 * A case whose other side, @fn, will run in a kthread on another CPU than
 * the case's own; wdk_start() starts it.
 */
static struct wdk_ev_case *wdk_ev_case(struct kunit *test,
				       void (*fn)(struct wdk_ev_case *c),
				       BOOLEAN signaled)
{
	struct wdk_ev_case *c;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	KeInitializeEvent(&c->ev, SynchronizationEvent, signaled);
	c->fn = fn;
	init_completion(&c->ready);
	return c;
}

/*
 * Pin the case's thread (KUnit's, one per case) to its CPU and start the
 * other side on another; false, the case failed, if it did not start.
 * From here on the case must reach wdk_stop(): no assertion in between.
 */
static bool wdk_start(struct kunit *test, struct wdk_ev_case *c)
{
	int cpu = raw_smp_processor_id();

	if (set_cpus_allowed_ptr(current, cpumask_of(cpu))) {
		KUNIT_FAIL(test, "cannot pin the case to CPU %d", cpu);
		return false;
	}
	c->task = kthread_create(wdk_other_side, c, "ndk_wdk_other");
	if (IS_ERR(c->task)) {
		KUNIT_FAIL(test, "kthread_create: %ld", PTR_ERR(c->task));
		return false;
	}
	get_task_struct(c->task);
	kthread_bind(c->task, cpumask_any_but(cpu_online_mask, cpu));
	wake_up_process(c->task);
	if (wait_for_completion_timeout(&c->ready, NDK_TEST_TIMEOUT))
		return true;
	KUNIT_FAIL(test, "the other side never ran");
	wdk_stop(c);
	return false;
}

/*
 * Let the other side go and spin until its first step: the caller holds
 * the lock or runs with preemption off, so it cannot sleep. The other side
 * is running already, so the bound only turns a hang into a failure.
 */
static int wdk_go(struct wdk_ev_case *c)
{
	ktime_t end = ktime_add_ms(ktime_get(), 1000);
	int step;

	atomic_set(&c->go, 1);
	while (!(step = atomic_read(&c->step)) &&
	       ktime_before(ktime_get(), end))
		cpu_relax();
	return step;
}

static void wdk_set_fn(struct wdk_ev_case *c)
{
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

	if (!wdk_start(test, c))
		return;
	spin_lock_irqsave(&c->ev.Wait.lock, flags);
	started = wdk_go(c);
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
	wdk_stop(c);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->step), 2);
}

static void wdk_hold_fn(struct wdk_ev_case *c)
{
	unsigned long flags;

	spin_lock_irqsave(&c->ev.Wait.lock, flags);
	atomic_set(&c->step, 1);
	mdelay(20);
	atomic_set(&c->step, 2);
	spin_unlock_irqrestore(&c->ev.Wait.lock, flags);
}

/*
 * A satisfied wait returns only once it has had the lock: a KeSetEvent()
 * still holding it (here, the other side stands in for one) is over then.
 */
static void ndk_wdk_wait_takes_lock_test(struct kunit *test)
{
	struct wdk_ev_case *c = wdk_ev_case(test, wdk_hold_fn, TRUE);
	LARGE_INTEGER zero = { .QuadPart = 0 };
	int started, step;
	NTSTATUS st;

	if (!wdk_start(test, c))
		return;
	/*
	 * Nothing between seeing the lock taken and the wait may sleep or
	 * be preempted: the wait must begin well within the 20 ms. A
	 * zero-timeout wait never sleeps.
	 */
	preempt_disable();
	started = wdk_go(c);
	st = KeWaitForSingleObject(&c->ev, Executive, KernelMode, FALSE,
				   &zero);
	step = atomic_read(&c->step);
	preempt_enable();
	wdk_stop(c);

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
