// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_stress: churn NDK objects and connections until time runs out.
 *
 * Loading the module starts threads_per_cpu kernel threads per online
 * CPU. Each thread runs cycles until `seconds` have passed: open an
 * adapter, create a PD, one or two CQs, memory regions (NdkRegisterMr
 * and a fast-register MR over a logical address mapping), two QPs, a
 * listener and a connector, connect the two QPs to each other over the
 * adapter's own address, move data (send/receive, RDMA write and read,
 * fast registration, every byte verified), disconnect from a random
 * side, flush, close everything in a random order and close the
 * adapter. Some cycles end the connection early instead: a reject, a
 * close inside the connect event, a close inside the connect
 * completion, a close while the connect is pending. Objects are also
 * closed from inside their own callbacks: create completions, request
 * completions, CQ notifications, connect and disconnect events.
 *
 * Every asynchronous operation that was started (a call that pended, a
 * work request that was posted) is counted, and so is every completion,
 * cancellation and failure; a failure counts as expected only where the
 * cycle provoked it. Each wait is bounded by `timeout` seconds: a stuck
 * operation is reported, the cycle is abandoned and its thread stops,
 * but nothing hangs. When the last thread is done one line sums it up:
 * "ndk_stress: done: ... result=PASS" (or FAIL).
 *
 * Only the public NDK headers are used. Callbacks may run in softirq
 * context, so they only count, close and wake; the threads do the rest.
 *
 * This file holds the module: its parameters, the run-wide counters,
 * the threads and their cycles, and the summary. stress.h says which
 * file does which step of a cycle.
 */
#define pr_fmt(fmt) "ndk_stress: " fmt

#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "stress.h"

static uint seconds = 600;
module_param(seconds, uint, 0444);
MODULE_PARM_DESC(seconds, "how long to churn (default 600)");

static uint threads_per_cpu = 2;
module_param(threads_per_cpu, uint, 0444);
MODULE_PARM_DESC(threads_per_cpu, "threads per online CPU (default 2)");

static uint seed;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "random seed; 0 picks one (logged)");

uint st_timeout = 30;
module_param_named(timeout, st_timeout, uint, 0444);
MODULE_PARM_DESC(timeout, "seconds any one wait may take before it counts as stuck");

static char *addr6;
module_param(addr6, charp, 0444);
MODULE_PARM_DESC(addr6, "IPv6 address of the adapter's interface: half the connections use it");

/*
 * On by default: polling the completions of a QP closed before they were
 * polled once read the freed verbs QP (Documentation/ndk/testing.rst,
 * "Stress").
 */
bool st_close_unpolled = true;
module_param_named(close_unpolled, st_close_unpolled, bool, 0444);
MODULE_PARM_DESC(close_unpolled, "sometimes close a QP whose completions are not polled yet, then poll them");

ushort st_port = 20000;
module_param_named(port, st_port, ushort, 0444);
MODULE_PARM_DESC(port, "first of the listening ports; each thread uses 64 from here");

struct st_counters st;

static const u8 st_fate_weight[ST_FATES] = { 12, 1, 1, 1, 1, 1 };

static unsigned long st_end;
static int st_ifindex;
/* The adapter's addresses, found at load; every connection uses one. */
struct sockaddr_in st_addr4;
struct sockaddr_in6 st_addr6;
bool st_have6;
static atomic_t st_running;
static unsigned long st_started_at;

static struct st_worker *st_workers;
static unsigned int st_nworkers;

static void st_obj_init(struct st_cycle *c, struct st_obj *o,
			const char *name)
{
	o->c = c;
	o->name = name;
}

/* The cycle and what st_setup() allocated for it. */
static void st_free(struct st_cycle *c)
{
	kfree(c->lam);
	if (c->fpage)
		__free_pages(c->fpage, get_order(ST_FR_PAGES * PAGE_SIZE));
	kvfree(c->side[0].buf);
	kvfree(c->side[1].buf);
	kfree(c);
}

static enum st_fate st_pick_fate(struct st_cycle *c)
{
	unsigned int i, sum = 0, x;

	for (i = 0; i < ST_FATES; i++)
		sum += st_fate_weight[i];
	x = st_rand(c, sum);
	for (i = 0; x >= st_fate_weight[i]; i++)
		x -= st_fate_weight[i];
	return i;
}

/* One cycle; false if something got stuck and the thread must stop. */
static bool st_cycle(struct st_worker *w)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct st_wr *arecv = NULL, *precv = NULL;
	ULONG size = sizeof(NDK_ADAPTER_INFO);
	struct st_cycle *c;
	unsigned int i;
	u32 allow;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		msleep(20);
		return true;
	}
	c->w = w;
	init_waitqueue_head(&c->wq);
	spin_lock_init(&c->lock);
	st_obj_init(c, &c->pd, "PD");
	st_obj_init(c, &c->lis, "listener");
	st_obj_init(c, &c->cli, "active connector");
	st_obj_init(c, &c->srv, "passive connector");
	st_obj_init(c, &c->fmr, "fast-register MR");
	st_obj_init(c, &c->extra, "extra");
	st_obj_init(c, &c->sep, NULL);
	st_obj_init(c, &c->srq, NULL);
	for (i = 0; i < ST_STRAYS; i++)
		st_obj_init(c, &c->stray[i], "stray connector");
	for (i = 0; i < 2; i++) {
		spin_lock_init(&c->cq[i].lock);
		st_obj_init(c, &c->cq[i].obj, "CQ");
		c->side[i].c = c;
		st_obj_init(c, &c->side[i].mr, "MR");
		st_obj_init(c, &c->side[i].qp, "QP");
	}
	c->side[0].conn = &c->cli;
	c->side[1].conn = &c->srv;
	c->fate = st_pick_fate(c);

	if (ndk_open_adapter(st_ifindex, v, &c->adapter)) {
		st_problem(c, "ndk_open_adapter failed");
		kfree(c);
		msleep(100);
		return true;
	}
	c->adapter->Dispatch->NdkQueryAdapterInfo(c->adapter, &c->info, &size);
	st_addresses(c);

	if (st_setup(c) && st_listen(c)) {
		/* Receives may wait for the connection. */
		allow = c->fate == ST_FULL ? 0 : ST_ALLOW_CANCEL;
		arecv = st_post_recv(c, &c->side[0], 0, allow);
		precv = st_post_recv(c, &c->side[1], 0, allow);
		if (arecv && precv && st_connect(c)) {
			st_transfer(c, arecv, precv);
			if (!c->stuck)
				st_disconnect(c);
		}
	}
	if (!st_teardown(c)) {
		/* Callbacks may still come: leave the cycle to them. */
		__module_get(THIS_MODULE);
		return false;
	}
	atomic64_inc(&st.cycles);
	st_free(c);
	return true;
}

static void st_summary(void)
{
	u64 started = atomic64_read(&st.started);
	u64 done = atomic64_read(&st.completed) +
		   atomic64_read(&st.cancelled) + atomic64_read(&st.failed) +
		   atomic64_read(&st.bad_status);
	u64 secs = max_t(u64, 1, (jiffies - st_started_at) / HZ);
	bool pass = started == done && !atomic64_read(&st.bad_status) &&
		    !atomic64_read(&st.problems) &&
		    !atomic64_read(&st.unaccounted);

	pr_info("done: seconds=%llu threads=%u cycles=%lld ops=%llu completed=%lld cancelled=%lld failed=%lld bad=%lld unaccounted=%llu problems=%lld verified=%lld callback_closes=%lld events=%lld unpolled_closes=%lld closed_outstanding=%lld ops_per_s=%llu result=%s\n",
		secs, st_nworkers, atomic64_read(&st.cycles), started,
		atomic64_read(&st.completed), atomic64_read(&st.cancelled),
		atomic64_read(&st.failed), atomic64_read(&st.bad_status),
		started - done, atomic64_read(&st.problems),
		atomic64_read(&st.verified), atomic64_read(&st.cb_closes),
		atomic64_read(&st.events),
		atomic64_read(&st.unpolled_closes),
		atomic64_read(&st.closed_outstanding),
		div64_u64(started, secs), pass ? "PASS" : "FAIL");
}

static int st_thread(void *arg)
{
	struct st_worker *w = arg;
	unsigned long next = jiffies + 60 * HZ;

	while (!kthread_should_stop() && time_before(jiffies, st_end)) {
		if (!st_cycle(w))
			break;
		w->cycle++;
		if (w->id == 0 && time_after(jiffies, next)) {
			pr_info("progress: %lu s, %lld cycles, %lld ops\n",
				(jiffies - st_started_at) / HZ,
				atomic64_read(&st.cycles),
				atomic64_read(&st.started));
			next += 60 * HZ;
		}
	}
	if (atomic_dec_and_test(&st_running))
		st_summary();
	/* kthread_stop() of the module's exit collects the thread. */
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

static int st_find_adapter(void)
{
	struct ndk_adapter_desc desc;
	struct net_device *ndev;

	if (ndk_enum_adapters(&desc, 1) < 1) {
		pr_err("no NDK adapter: is an RDMA device up?\n");
		return -ENODEV;
	}
	st_ifindex = desc.ifindex;
	ndev = dev_get_by_index(&init_net, desc.ifindex);
	if (!ndev)
		return -ENODEV;
	st_addr4.sin_family = AF_INET;
	st_addr4.sin_addr.s_addr = inet_select_addr(ndev, 0,
						    RT_SCOPE_UNIVERSE);
	dev_put(ndev);
	if (addr6 && *addr6) {
		st_addr6.sin6_family = AF_INET6;
		if (!in6_pton(addr6, -1, st_addr6.sin6_addr.s6_addr, -1,
			      NULL)) {
			pr_err("addr6: not an IPv6 address\n");
			return -EINVAL;
		}
		st_have6 = true;
	}
	pr_info("adapter %s on ifindex %d, %pI4%s%pI6c\n", desc.ibdev_name,
		st_ifindex, &st_addr4.sin_addr, st_have6 ? " and " : "",
		st_have6 ? &st_addr6.sin6_addr : &in6addr_any);
	return 0;
}

static int __init st_init(void)
{
	unsigned int i;
	int err;

	if (!threads_per_cpu || !st_timeout)
		return -EINVAL;
	err = st_find_adapter();
	if (err)
		return err;
	if (!seed)
		seed = get_random_u32() | 1;
	st_nworkers = threads_per_cpu * num_online_cpus();
	st_workers = kcalloc(st_nworkers, sizeof(*st_workers), GFP_KERNEL);
	if (!st_workers)
		return -ENOMEM;
	st_started_at = jiffies;
	st_end = jiffies + seconds * HZ;
	atomic_set(&st_running, st_nworkers);
	pr_info("start: %u threads for %u s, seed %u\n", st_nworkers, seconds,
		seed);
	for (i = 0; i < st_nworkers; i++) {
		struct st_worker *w = &st_workers[i];

		w->id = i;
		prandom_seed_state(&w->rnd, (u64)seed * 1000003 + i);
		w->task = kthread_run(st_thread, w, "ndk_stress/%u", i);
		if (IS_ERR(w->task)) {
			err = PTR_ERR(w->task);
			w->task = NULL;
			pr_err("cannot start thread %u: %d\n", i, err);
			/* The thread that never ran is done already. */
			if (atomic_dec_and_test(&st_running))
				st_summary();
		}
	}
	return 0;
}

static void __exit st_exit(void)
{
	unsigned int i;

	for (i = 0; i < st_nworkers; i++)
		if (st_workers[i].task)
			kthread_stop(st_workers[i].task);
	kfree(st_workers);
}

module_init(st_init);
module_exit(st_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ndk stress: churn NDK objects and connections under the kernel's checkers");
