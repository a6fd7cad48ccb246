// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndkperf: benchmark of ndk against raw kernel verbs.
 *
 * Loading the module runs one workload once, over NDK (mode=ndk),
 * directly over ib_core and rdma_cm (mode=raw) or both (mode=both), between
 * two QPs of the same adapter connected over its own address, and prints
 * one line per mode. For notify_lat, mode=core is raw verbs with ndk's
 * dispatch rebuilt on the core CQ API (see raw_mode.c), and mode=all runs
 * NDK, raw and core:
 *
 *   ndkperf: result workload=W mode=M size=S depth=D iters=N ns=T post_ns=P round=R
 *
 * T is the time of the N timed iterations, P the part of it spent in the
 * posting calls of the bandwidth workloads (0 elsewhere); the line goes on
 * with the time spent in polling calls and the completions they returned,
 * and with, for notify_lat, the time from posting a send to the callback
 * that woke the waiting receiver, summed over such callbacks, and their
 * number, with the time spent posting the receiver's receives (send_bw)
 * and arming (notify_lat) and how many such calls, and with the slab
 * allocations made during the timed iterations (any
 * context, counted through the kmalloc and kmem_cache_alloc tracepoints)
 * and how many of them ndk.ko made; conn_scale adds the time of its three
 * phases and the memory the open connections took. The workload
 * loops below are shared, so both modes pay the same harness costs and
 * differ only in what struct perf_ops calls. With mode=both (or all) the
 * modes are set up side by side and the timed iterations alternate between
 * them in PERF_CHUNKS chunks, so that all see the same load of the machine;
 * bench-init.sh, the bench VM's /init, loads the module so once per
 * workload and round.
 */
#define pr_fmt(fmt) "ndkperf: " fmt

#include <linux/inetdevice.h>
#include <linux/kallsyms.h>
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sort.h>
#include <linux/vmstat.h>
#include <trace/events/kmem.h>
#include "ndkperf.h"

static char *workload = "send_lat";
module_param(workload, charp, 0444);
MODULE_PARM_DESC(workload, "send_lat, write_lat, send_bw, write_bw, read_bw, reg_mr, conn, poll_empty, notify_lat, send_bw_2cpu, conn_scale or objects");
static char *mode = "ndk";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "ndk, raw, both (alternating chunks); for notify_lat also core or all (ndk, raw and core)");
static unsigned int size = 8;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "message, transfer or region size in bytes");
static unsigned int iters = 1000;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "timed iterations (round trips, messages, registrations, connections)");
static unsigned int depth = 32;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "requests outstanding in the bandwidth workloads");
static unsigned int round;
module_param(round, uint, 0444);
MODULE_PARM_DESC(round, "round number, only printed");
static char *netdev = "eth0";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "interface of the RDMA device, whose IPv4 address is used");
static bool sizes;
module_param(sizes, bool, 0444);
MODULE_PARM_DESC(sizes, "print ndk's per-object memory (mode=ndk)");
static unsigned int conns = 1000;
module_param(conns, uint, 0444);
MODULE_PARM_DESC(conns, "conn_scale: connections open at once");

static const char * const perf_names[] = {
	[PERF_SEND_LAT] = "send_lat",
	[PERF_WRITE_LAT] = "write_lat",
	[PERF_SEND_BW] = "send_bw",
	[PERF_WRITE_BW] = "write_bw",
	[PERF_READ_BW] = "read_bw",
	[PERF_REG_MR] = "reg_mr",
	[PERF_CONN] = "conn",
	[PERF_POLL_EMPTY] = "poll_empty",
	[PERF_NOTIFY_LAT] = "notify_lat",
	[PERF_SEND_BW_2CPU] = "send_bw_2cpu",
	[PERF_CONN_SCALE] = "conn_scale",
	[PERF_OBJECTS] = "objects",
};

const char * const perf_obj_names[PERF_O_KINDS] = {
	[PERF_O_PD] = "pd",
	[PERF_O_CQ] = "cq",
	[PERF_O_QP] = "qp",
	[PERF_O_MR] = "mr",
	[PERF_O_CONNECTOR] = "connector",
	[PERF_O_LISTENER] = "listener",
};

/* mode=both or all: the modes take turns this many times each. */
#define PERF_CHUNKS	10
/* mode=all: NDK, raw and core */
#define PERF_MODES	3

/* A stuck peer must not hang insmod forever. */
#define PERF_TIMEOUT	(60 * HZ)
#define PERF_POLL_MAX	16
/* objects: the most timed iterations, whose times it keeps */
#define PERF_OBJ_ITERS	1024

struct perf_run {
	const struct perf_ops *ops;
	void *st;
	const struct perf_cfg *cfg;
	unsigned long deadline;
	u32 sq_out[2];
	u32 rq_out[2];
	u64 rx[2];
	u64 tx[2];
	u64 post_ns;
	u64 poll_ns;	/* bandwidth workloads: time in polling calls */
	u64 polled;	/* and the completions they returned */
	u64 recv_ns;	/* send_bw: time in the receiver's posting calls */
	u64 recvs;	/* and the receives they posted */
	u64 arm_ns;	/* notify_lat: time in arming calls */
	u64 arms;	/* and their number */
	u32 seq;	/* write_lat: round trips so far */
	/*
	 * notify_lat: the notifications, when the last send was posted, and
	 * the time from there to the callback that woke the waiter, summed
	 * over the waits a callback ended
	 */
	struct perf_notify notify[2];
	ktime_t t_post;
	u64 notify_ns;
	u64 notifies;
	/*
	 * conn_scale, summed over the timed cycles: the time of opening,
	 * of the sends and of the teardown, and the pages in use (of them
	 * slab pages) with everything open and after the teardown, against
	 * before the cycle
	 */
	u64 scale_ns[3];
	s64 open_pages, slab_pages, left_pages;
	/*
	 * objects: the time of each kind's create and close, each timed
	 * iteration's
	 */
	u32 obj_ns[PERF_O_KINDS][PERF_OBJ_ITERS];
	u32 obj_n;
};

/*
 * Slab allocations during the timed iterations, per mode and call site,
 * from the kmem tracepoints: every allocation of any context counts, so
 * the driver's own (rxe allocates a packet per request) count in both
 * modes alike. Sites are told apart after the run, by symbol. A site's
 * count is found by hashing its address: the probes run inside the timed
 * iterations, and a search in the order the sites first came would
 * charge each allocation by its site's place in that order, which
 * differs between the modes.
 */
#define PERF_SITE_BITS	7
#define PERF_SITES	BIT(PERF_SITE_BITS)

struct perf_site {
	unsigned long ip;
	u64 n;
};

static struct perf_allocs {
	raw_spinlock_t lock;	/* the probes run in any context */
	int mode;		/* counting for this mode; -1: not counting */
	struct perf_site site[PERF_MODES][PERF_SITES];
	u64 other[PERF_MODES];	/* allocations of sites beyond PERF_SITES */
} perf_allocs = {
	.lock = __RAW_SPIN_LOCK_UNLOCKED(perf_allocs.lock),
	.mode = -1,
};

static void perf_alloc_count(unsigned long ip)
{
	struct perf_allocs *a = &perf_allocs;
	struct perf_site *site;
	unsigned long flags;
	u32 h = hash_long(ip, PERF_SITE_BITS);
	int m, i;

	if (READ_ONCE(a->mode) < 0)
		return;
	raw_spin_lock_irqsave(&a->lock, flags);
	m = a->mode;
	for (i = 0; m >= 0 && i < PERF_SITES; i++) {
		site = &a->site[m][(h + i) % PERF_SITES];
		if (site->ip == ip || !site->ip) {
			site->ip = ip;
			site->n++;
			break;
		}
	}
	if (m >= 0 && i == PERF_SITES)
		a->other[m]++;
	raw_spin_unlock_irqrestore(&a->lock, flags);
}

static void perf_kmalloc(void *data, unsigned long call_site,
			 const void *ptr, size_t bytes_req, size_t bytes_alloc,
			 gfp_t gfp_flags, int node)
{
	perf_alloc_count(call_site);
}

static void perf_kmem_cache_alloc(void *data, unsigned long call_site,
				  const void *ptr, struct kmem_cache *s,
				  gfp_t gfp_flags, int node)
{
	perf_alloc_count(call_site);
}

static void perf_count_allocs(int mode)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&perf_allocs.lock, flags);
	perf_allocs.mode = mode;
	raw_spin_unlock_irqrestore(&perf_allocs.lock, flags);
}

/*
 * Allocations of mode @m: all, and ndk.ko's, whose sites print with
 * "[ndk]"; each site is printed too.
 */
static void perf_alloc_totals(int m, const char *name, u64 *all, u64 *ndk)
{
	struct perf_site *site;
	char sym[KSYM_SYMBOL_LEN];
	int i;

	*all = perf_allocs.other[m];
	*ndk = 0;
	for (i = 0; i < PERF_SITES; i++) {
		site = &perf_allocs.site[m][i];
		if (!site->ip)
			continue;
		sprint_symbol(sym, site->ip);
		*all += site->n;
		if (strstr(sym, " [ndk]"))
			*ndk += site->n;
		pr_info("allocsite workload=%s mode=%s n=%llu site=%s\n",
			workload, name, site->n, sym);
	}
}

/* Reap what side @side's CQ holds; returns how many, or an error. */
static int perf_poll(struct perf_run *r, int side)
{
	struct perf_wc wc[PERF_POLL_MAX];
	int i, n;

	n = r->ops->poll(r->st, side, wc, ARRAY_SIZE(wc));
	for (i = 0; i < n; i++) {
		if (wc[i].status) {
			pr_err("side %d: completion of kind %llu failed: %#x\n",
			       side, wc[i].kind, wc[i].status);
			return -EIO;
		}
		if (wc[i].kind == PERF_K_RECV) {
			r->rq_out[side]--;
			r->rx[side]++;
		} else {
			r->sq_out[side]--;
			r->tx[side]++;
		}
	}
	return n;
}

/*
 * Called in every busy loop: rxe finishes some requests in tasklets,
 * which may need this CPU, and a dead peer ends the run.
 */
static int perf_spin(struct perf_run *r)
{
	cond_resched();
	if (time_after(jiffies, r->deadline)) {
		pr_err("timed out\n");
		return -ETIMEDOUT;
	}
	return 0;
}

static int perf_post_recv(struct perf_run *r, int side, u32 want)
{
	int err;

	while (r->rq_out[side] < want) {
		err = r->ops->recv(r->st, side, r->cfg->size);
		if (err)
			return err;
		r->rq_out[side]++;
	}
	return 0;
}

/* Room for one more request on side @side's initiator queue. */
static int perf_sq_room(struct perf_run *r, int side, u32 limit)
{
	int err;

	while (r->sq_out[side] >= limit) {
		err = perf_poll(r, side);
		if (err < 0)
			return err;
		err = perf_spin(r);
		if (err)
			return err;
	}
	return 0;
}

/* One ping-pong: each side sends once and receives the other's message. */
static int perf_send_rt(struct perf_run *r)
{
	int s, peer, err;
	u64 want;

	for (s = 0; s < 2; s++) {
		peer = !s;
		err = perf_sq_room(r, s, r->cfg->depth);
		if (err)
			return err;
		err = r->ops->send(r->st, s, r->cfg->size);
		if (err)
			return err;
		r->sq_out[s]++;
		want = r->rx[peer] + 1;
		while (r->rx[peer] < want) {
			err = perf_poll(r, peer);
			if (err < 0)
				return err;
			if (!err && perf_spin(r))
				return -ETIMEDOUT;
		}
		err = perf_post_recv(r, peer, r->cfg->depth);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Reap side @side's completions the way a notification-driven consumer
 * does until it has received its message @want: poll until the CQ is
 * empty, arm it, poll once more for what completed before the arm, then
 * sleep until the notification callback wakes the thread.
 */
static int perf_notify_wait(struct perf_run *r, int side, u64 want)
{
	struct perf_notify *n = &r->notify[side];
	ktime_t t;
	s64 ns;
	int got;

	for (;;) {
		do {
			got = perf_poll(r, side);
			if (got < 0)
				return got;
		} while (got);
		if (r->rx[side] >= want)
			return 0;
		reinit_completion(&n->done);
		t = ktime_get();
		r->ops->arm(r->st, side);
		r->arm_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		r->arms++;
		got = perf_poll(r, side);
		if (got < 0)
			return got;
		if (got)
			continue;
		if (!wait_for_completion_timeout(&n->done, PERF_TIMEOUT)) {
			pr_err("side %d: no notification\n", side);
			return -ETIMEDOUT;
		}
		/* A callback of an earlier arm may end a wait: skip it. */
		ns = ktime_to_ns(ktime_sub(READ_ONCE(n->t), r->t_post));
		if (ns > 0) {
			r->notify_ns += ns;
			r->notifies++;
		}
	}
}

/* One ping-pong in which the receiver waits for notifications. */
static int perf_notify_rt(struct perf_run *r)
{
	int s, peer, err;

	for (s = 0; s < 2; s++) {
		peer = !s;
		err = perf_sq_room(r, s, r->cfg->depth);
		if (err)
			return err;
		r->t_post = ktime_get();
		err = r->ops->send(r->st, s, r->cfg->size);
		if (err)
			return err;
		r->sq_out[s]++;
		err = perf_notify_wait(r, peer, r->rx[peer] + 1);
		if (!err)
			err = perf_post_recv(r, peer, r->cfg->depth);
		if (err)
			return err;
	}
	return 0;
}

/*
 * One write ping-pong: each side writes a new last byte into the peer's
 * receive half, and the peer watches that byte, as ib_write_lat does.
 * Write completions are reaped before the queue fills, off the wait.
 */
static int perf_write_rt(struct perf_run *r, u8 seq)
{
	u32 len = r->cfg->size;
	int s, err;
	u8 *dst;

	for (s = 0; s < 2; s++) {
		if (r->sq_out[s] >= r->cfg->depth / 2) {
			err = perf_poll(r, s);
			if (err < 0)
				return err;
		}
		err = perf_sq_room(r, s, r->cfg->depth);
		if (err)
			return err;
		WRITE_ONCE(r->ops->buf(r->st, s)[len - 1], seq);
		err = r->ops->write(r->st, s, len);
		if (err)
			return err;
		r->sq_out[s]++;
		dst = r->ops->buf(r->st, !s) + len;
		while (READ_ONCE(dst[len - 1]) != seq) {
			cpu_relax();
			if (perf_spin(r)) {
				/* A failed write would explain it: show it. */
				pr_err("side %d: byte %u, want %u\n", !s,
				       dst[len - 1], seq);
				perf_poll(r, s);
				return -ETIMEDOUT;
			}
		}
	}
	return 0;
}

/* @n messages from side 0 with up to depth outstanding, all completed. */
static int perf_stream(struct perf_run *r, u32 n)
{
	const struct perf_cfg *c = r->cfg;
	bool is_send = c->wl == PERF_SEND_BW;
	u64 done0 = is_send ? r->rx[1] : r->tx[0];
	u32 posted = 0, k, rq;
	ktime_t t;
	int err;

	while ((is_send ? r->rx[1] : r->tx[0]) - done0 < n) {
		t = ktime_get();
		for (k = 0; posted < n && r->sq_out[0] < c->depth; k++) {
			if (c->wl == PERF_SEND_BW)
				err = r->ops->send(r->st, 0, c->size);
			else if (c->wl == PERF_WRITE_BW)
				err = r->ops->write(r->st, 0, c->size);
			else
				err = r->ops->read(r->st, 0, c->size);
			if (err)
				return err;
			r->sq_out[0]++;
			posted++;
		}
		if (k)
			r->post_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		t = ktime_get();
		err = perf_poll(r, 0);
		r->poll_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		if (err < 0)
			return err;
		r->polled += err;
		if (is_send) {
			t = ktime_get();
			err = perf_poll(r, 1);
			r->poll_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
			if (err < 0)
				return err;
			r->polled += err;
			rq = r->rq_out[1];
			t = ktime_get();
			err = perf_post_recv(r, 1, 2 * c->depth);
			r->recv_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
			r->recvs += r->rq_out[1] - rq;
			if (err)
				return err;
		}
		err = perf_spin(r);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The pages in use in the machine, and of them slab pages, for
 * conn_scale. Besides the buddy allocator's free pages, the pages on the
 * per-CPU lists are free too, though NR_FREE_PAGES does not count them:
 * a teardown leaves up to pcp->high pages (megabytes) there, which the
 * next setup takes first without moving NR_FREE_PAGES. vmalloc()ed
 * memory (rxe's queues) is in, as is every driver's; the slab counts
 * may lag by the per-CPU vmstat thresholds, a few dozen pages.
 */
static void perf_mem(s64 *used, s64 *slab)
{
	struct zone *zone;
	s64 free = 0;
	int nid, z, cpu;

	for_each_online_node(nid) {
		for (z = 0; z < MAX_NR_ZONES; z++) {
			zone = &NODE_DATA(nid)->node_zones[z];
			if (!populated_zone(zone))
				continue;
			free += zone_page_state_snapshot(zone, NR_FREE_PAGES);
			for_each_online_cpu(cpu)
				free += READ_ONCE(per_cpu_ptr(zone->per_cpu_pageset,
							      cpu)->count);
		}
	}
	*used = totalram_pages() - free;
	*slab = global_node_page_state_pages(NR_SLAB_RECLAIMABLE_B) +
		global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B);
}

/*
 * conn_scale: what a close leaves to free later (ndk's objects on its
 * workqueue after the close callback, RCU-deferred frees, rdma_cm's
 * work items) is given time to go before a snapshot, so that neither a
 * cycle's own leftovers nor the previous cycle's, freed meanwhile, show
 * as growth or shrink. Not timed.
 */
#define PERF_SETTLE_MS	300

static void perf_settle(void)
{
	msleep(PERF_SETTLE_MS);
	rcu_barrier();
}

/*
 * One conn_scale cycle: open, send, close, each phase timed, and the
 * memory with everything open (after the sends, so that whatever the
 * first message allocates is in) and after the close against before.
 * The snapshots are not timed. A profile counts the three phases apart
 * (1, 2, 3).
 */
static int perf_scale_once(struct perf_run *r)
{
	const struct perf_ops *o = r->ops;
	s64 used[3], slab[3];
	ktime_t t[5];
	int err;

	perf_settle();
	perf_mem(&used[0], &slab[0]);
	t[0] = ktime_get();
	perf_phase(PERF_PHASE_1);
	err = o->scale_open(r->st);
	perf_phase(PERF_PHASE_NONE);
	t[1] = ktime_get();
	perf_phase(PERF_PHASE_2);
	if (!err)
		err = o->scale_send(r->st);
	perf_phase(PERF_PHASE_NONE);
	t[2] = ktime_get();
	perf_mem(&used[1], &slab[1]);
	t[3] = ktime_get();
	perf_phase(PERF_PHASE_3);
	o->scale_close(r->st);
	perf_phase(PERF_PHASE_NONE);
	t[4] = ktime_get();
	perf_settle();
	perf_mem(&used[2], &slab[2]);
	r->scale_ns[0] += ktime_to_ns(ktime_sub(t[1], t[0]));
	r->scale_ns[1] += ktime_to_ns(ktime_sub(t[2], t[1]));
	r->scale_ns[2] += ktime_to_ns(ktime_sub(t[4], t[3]));
	r->open_pages += used[1] - used[0];
	r->slab_pages += slab[1] - slab[0];
	r->left_pages += used[2] - used[0];
	return err;
}

/* objects: each kind created and closed once, each pair timed. */
static int perf_objects_once(struct perf_run *r)
{
	u32 i = min(r->obj_n++, PERF_OBJ_ITERS - 1);
	ktime_t t;
	int k, err;

	for (k = 0; k < PERF_O_KINDS; k++) {
		t = ktime_get();
		err = r->ops->obj_once(r->st, k);
		r->obj_ns[k][i] = ktime_to_ns(ktime_sub(ktime_get(), t));
		if (err) {
			pr_err("creating and closing a %s failed: %d\n",
			       perf_obj_names[k], err);
			return err;
		}
	}
	return 0;
}

/* Run @n iterations of the workload; the first call warms up. */
static int perf_iterate(struct perf_run *r, u32 n, u64 *ns)
{
	const struct perf_cfg *c = r->cfg;
	u64 one, sum = 0;
	ktime_t t0;
	int err = 0;
	u32 i;

	t0 = ktime_get();
	for (i = 0; i < n && !err; i++) {
		switch (c->wl) {
		case PERF_SEND_LAT:
			err = perf_send_rt(r);
			break;
		case PERF_WRITE_LAT:
			err = perf_write_rt(r, r->seq++ % 255 + 1);
			break;
		case PERF_REG_MR:
			/* Only the registration itself is timed. */
			err = r->ops->reg_once(r->st, &one);
			sum += one;
			break;
		case PERF_CONN:
			err = r->ops->conn_once(r->st);
			break;
		case PERF_POLL_EMPTY:
			err = min(perf_poll(r, 0), 0);
			break;
		case PERF_NOTIFY_LAT:
			err = perf_notify_rt(r);
			break;
		case PERF_CONN_SCALE:
			err = perf_scale_once(r);
			break;
		case PERF_OBJECTS:
			err = perf_objects_once(r);
			break;
		default:
			err = perf_stream(r, n);
			i = n;
			break;
		}
	}
	*ns = c->wl == PERF_REG_MR ? sum : ktime_to_ns(ktime_sub(ktime_get(), t0));
	return err;
}

/* Set up @r and warm it up; returns 0 or an error. */
static int perf_start(struct perf_run *r, const struct perf_ops *ops,
		      const struct perf_cfg *cfg)
{
	u32 warm = max(cfg->iters / 10, 1U);
	u64 ns;
	int err;

	r->ops = ops;
	r->cfg = cfg;
	r->st = ops->setup(cfg);
	if (IS_ERR(r->st))
		return PTR_ERR(r->st);
	if (sizes && ops->sizes)
		ops->sizes(r->st);
	r->deadline = jiffies + PERF_TIMEOUT;
	err = perf_post_recv(r, 0, cfg->depth);
	if (!err)
		err = perf_post_recv(r, 1, cfg->wl == PERF_SEND_BW ?
				     2 * cfg->depth : cfg->depth);
	if (!err)
		err = perf_iterate(r, warm, &ns);
	r->post_ns = 0;
	r->poll_ns = 0;
	r->polled = 0;
	r->notify_ns = 0;
	r->notifies = 0;
	r->recv_ns = 0;
	r->recvs = 0;
	r->arm_ns = 0;
	r->arms = 0;
	memset(r->scale_ns, 0, sizeof(r->scale_ns));
	r->open_pages = 0;
	r->slab_pages = 0;
	r->left_pages = 0;
	r->obj_n = 0;
	return err;
}

static int perf_cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * objects: the median of a kind's timed iterations. Now and then one
 * iteration of either mode meets work that is not its own to the same
 * degree each time (a purge of lazily freed vmap areas, a slab refill,
 * a tick): it would move a mean by several percent from round to round.
 */
static u32 perf_obj_median(struct perf_run *r, int k)
{
	u32 n = min(r->obj_n, PERF_OBJ_ITERS);

	sort(r->obj_ns[k], n, sizeof(u32), perf_cmp_u32, NULL);
	return n ? r->obj_ns[k][n / 2] : 0;
}

/*
 * Let the last requests finish, print the result (if @report) and tear
 * down.
 */
static int perf_finish(struct perf_run *r, int m, int err, u64 ns,
		       bool report)
{
	const struct perf_cfg *cfg = r->cfg;
	u64 allocs, ndk_allocs;

	r->deadline = jiffies + PERF_TIMEOUT;
	while (!err && (r->sq_out[0] || r->sq_out[1])) {
		err = perf_poll(r, 0);
		if (err >= 0)
			err = perf_poll(r, 1);
		if (err >= 0)
			err = perf_spin(r);
	}
	if (!report)
		goto out;
	perf_alloc_totals(m, r->ops->name, &allocs, &ndk_allocs);
	if (!err)
		pr_info("result workload=%s mode=%s size=%u depth=%u iters=%u ns=%llu post_ns=%llu round=%u poll_ns=%llu polled=%llu notify_ns=%llu notifies=%llu recv_ns=%llu recvs=%llu arm_ns=%llu arms=%llu allocs=%llu ndk_allocs=%llu\n",
			perf_names[cfg->wl], r->ops->name, cfg->size,
			cfg->depth, cfg->iters, ns, r->post_ns, round,
			r->poll_ns, r->polled, r->notify_ns, r->notifies,
			r->recv_ns, r->recvs, r->arm_ns, r->arms,
			allocs, ndk_allocs);
	/* Times in ns and memory in KiB, summed over the cycles. */
	if (!err && cfg->wl == PERF_CONN_SCALE)
		pr_info("scale workload=conn_scale mode=%s round=%u iters=%u conns=%u setup_ns=%llu send_ns=%llu teardown_ns=%llu open_kib=%lld slab_kib=%lld left_kib=%lld\n",
			r->ops->name, round, cfg->iters, cfg->conns,
			r->scale_ns[0], r->scale_ns[1], r->scale_ns[2],
			r->open_pages << (PAGE_SHIFT - 10),
			r->slab_pages << (PAGE_SHIFT - 10),
			r->left_pages << (PAGE_SHIFT - 10));
	/* Per create and close, in ns: the medians. */
	if (!err && cfg->wl == PERF_OBJECTS)
		pr_info("detail workload=objects mode=%s n=%u pd_ns=%u cq_ns=%u qp_ns=%u mr_ns=%u connector_ns=%u listener_ns=%u\n",
			r->ops->name, cfg->iters,
			perf_obj_median(r, PERF_O_PD),
			perf_obj_median(r, PERF_O_CQ),
			perf_obj_median(r, PERF_O_QP),
			perf_obj_median(r, PERF_O_MR),
			perf_obj_median(r, PERF_O_CONNECTOR),
			perf_obj_median(r, PERF_O_LISTENER));
out:
	r->ops->teardown(r->st);
	return err;
}

/* Too large for the stack with lockdep's completions; one run per load. */
static struct perf_run perf_runs[PERF_MODES];

/*
 * Run @n modes (1 to PERF_MODES) for cfg[0].iters iterations each; with
 * more than one, in alternating chunks.
 */
static int perf_run(const struct perf_ops **ops, struct perf_cfg *cfg,
		    int n)
{
	struct perf_run *r = perf_runs;
	u32 chunk = n > 1 ? max(cfg[0].iters / PERF_CHUNKS, 1U) : cfg[0].iters;
	u32 done = 0, k;
	u64 ns[PERF_MODES] = { }, one;
	int err = 0, m, i, c, started;

	memset(perf_runs, 0, sizeof(perf_runs));
	for (started = 0; started < n && !err; started++) {
		for (i = 0; i < 2; i++)
			init_completion(&r[started].notify[i].done);
		if (cfg[started].wl == PERF_NOTIFY_LAT)
			cfg[started].notify = r[started].notify;
		err = perf_start(&r[started], ops[started], &cfg[started]);
	}
	if (err)
		started--;
	for (c = 0; !err && done < cfg[0].iters; c++) {
		k = min(chunk, cfg[0].iters - done);
		for (i = 0; i < n && !err; i++) {
			/*
			 * Every other chunk in the other order (A B C C B A),
			 * so that neither mode always runs right after the
			 * other's work, with the caches and the host's load
			 * that leaves.
			 */
			m = c % 2 ? n - 1 - i : i;
			r[m].deadline = jiffies + PERF_TIMEOUT;
			perf_count_allocs(m);
			err = perf_iterate(&r[m], k, &one);
			perf_count_allocs(-1);
			ns[m] += one;
		}
		done += k;
	}
	for (m = 0; m < n; m++) {
		if (m < started) {
			int e = perf_finish(&r[m], m, err, ns[m], true);

			err = err ?: e;
		} else if (m == started && !IS_ERR_OR_NULL(r[m].st)) {
			r[m].ops->teardown(r[m].st);
		}
	}
	return err;
}

/*
 * send_bw_2cpu: a connection per CPU, each driven by a kthread bound to
 * its CPU, all timed together as one wall time; in the same chunk the
 * first one alone, for the scaling against one QP.
 */
#define PERF_CPUS	2

struct perf_worker {
	struct perf_run *r;
	u32 n;
	u64 ns;
	int err;
	struct completion done;
	struct task_struct *task;
};

static int perf_worker_fn(void *arg)
{
	struct perf_worker *w = arg;

	w->err = perf_iterate(w->r, w->n, &w->ns);
	complete(&w->done);
	return 0;
}

/*
 * @n iterations on each of the first @nr runs of @runs, run i from CPU i;
 * @ns is the wall time. Allocations count for mode @m while they run.
 */
static int perf_on_cpus(struct perf_run *runs, int nr, int m, u32 n, u64 *ns)
{
	struct perf_worker w[PERF_CPUS] = { };
	int err = 0, i;
	ktime_t t0;

	for (i = 0; i < nr && !err; i++) {
		w[i].r = &runs[i];
		w[i].n = n;
		init_completion(&w[i].done);
		runs[i].deadline = jiffies + PERF_TIMEOUT;
		w[i].task = kthread_create_on_cpu(perf_worker_fn, &w[i], i,
						  "ndkperf/%u");
		if (IS_ERR(w[i].task)) {
			err = PTR_ERR(w[i].task);
			w[i].task = NULL;
		} else {
			/* kthread_stop() below, after the thread is gone. */
			get_task_struct(w[i].task);
		}
	}
	perf_count_allocs(m);
	t0 = ktime_get();
	for (i = 0; i < nr && !err; i++)
		wake_up_process(w[i].task);
	for (i = 0; i < nr && !err; i++)
		wait_for_completion(&w[i].done);
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	perf_count_allocs(-1);
	for (i = 0; i < nr; i++) {
		if (!w[i].task)
			continue;
		/* A thread never woken ends here without running. */
		kthread_stop(w[i].task);
		put_task_struct(w[i].task);
		if (!err)
			err = w[i].err;
	}
	return err;
}

static struct perf_run perf_cpu_runs[2][PERF_CPUS];
static struct perf_cfg perf_cpu_cfg[2][PERF_CPUS];

static int perf_run_cpus(const struct perf_ops **ops,
			 const struct perf_cfg *cfg, int n)
{
	u32 chunk = n > 1 ? max(cfg[0].iters / PERF_CHUNKS, 1U) : cfg[0].iters;
	u64 ns[2] = { }, ns1[2] = { }, one, allocs, ndk_allocs;
	int err = 0, m, q, i, c, started = 0, e;
	struct perf_run *r;
	u32 done = 0, k;

	for (q = 0; q < PERF_CPUS; q++) {
		if (!cpu_online(q)) {
			pr_err("send_bw_2cpu: CPU %d is not online\n", q);
			return -ENODEV;
		}
	}
	memset(perf_cpu_runs, 0, sizeof(perf_cpu_runs));
	for (i = 0; i < n * PERF_CPUS && !err; i++) {
		m = i / PERF_CPUS;
		q = i % PERF_CPUS;
		perf_cpu_cfg[m][q] = cfg[m];
		perf_cpu_cfg[m][q].wl = PERF_SEND_BW;
		perf_cpu_cfg[m][q].port = PERF_PORT + m + 2 * q;
		err = perf_start(&perf_cpu_runs[m][q], ops[m],
				 &perf_cpu_cfg[m][q]);
		if (!err)
			started++;
	}
	for (c = 0; !err && done < cfg[0].iters; c++) {
		k = min(chunk, cfg[0].iters - done);
		for (i = 0; i < n && !err; i++) {
			m = c % 2 ? n - 1 - i : i;
			err = perf_on_cpus(perf_cpu_runs[m], 1, m, k, &one);
			ns1[m] += one;
			if (!err)
				err = perf_on_cpus(perf_cpu_runs[m], PERF_CPUS, m,
						   k, &one);
			ns[m] += one;
		}
		done += k;
	}
	for (i = 0; i < n * PERF_CPUS; i++) {
		r = &perf_cpu_runs[i / PERF_CPUS][i % PERF_CPUS];
		if (i < started) {
			e = perf_finish(r, i / PERF_CPUS, err, 0, false);
			err = err ?: e;
		} else if (i == started && !IS_ERR_OR_NULL(r->st)) {
			r->ops->teardown(r->st);
		}
	}
	for (m = 0; m < n && !err; m++) {
		perf_alloc_totals(m, ops[m]->name, &allocs, &ndk_allocs);
		pr_info("result workload=send_bw_2cpu mode=%s size=%u depth=%u iters=%u ns=%llu ns1=%llu round=%u allocs=%llu ndk_allocs=%llu\n",
			ops[m]->name, cfg[m].size, cfg[m].depth, cfg[m].iters,
			ns[m], ns1[m], round, allocs, ndk_allocs);
	}
	return err;
}

static int __init perf_init(void)
{
	struct perf_cfg cfg[PERF_MODES] = {
		{ .size = size, .iters = iters, .depth = depth,
		  .port = PERF_PORT, .conns = conns },
	};
	const struct perf_ops *ops[PERF_MODES] = { &perf_ndk_ops, &perf_raw_ops,
						   &perf_core_ops };
	struct net_device *ndev;
	int err, n = 1, m;

	cfg[0].wl = match_string(perf_names, ARRAY_SIZE(perf_names), workload);
	if ((int)cfg[0].wl < 0 || !iters || depth < 2 || depth > 1024 ||
	    size < 8 || size > SZ_4M || !conns || conns > 65536 ||
	    (cfg[0].wl == PERF_OBJECTS && iters > PERF_OBJ_ITERS)) {
		pr_err("bad parameters\n");
		return -EINVAL;
	}
	if (!strcmp(mode, "both"))
		n = 2;
	else if (!strcmp(mode, "all"))
		n = 3;
	else if (!strcmp(mode, "raw"))
		ops[0] = &perf_raw_ops;
	else if (!strcmp(mode, "core"))
		ops[0] = &perf_core_ops;
	else if (strcmp(mode, "ndk"))
		return -EINVAL;
	if ((n == 3 || ops[0] == &perf_core_ops) &&
	    cfg[0].wl != PERF_NOTIFY_LAT) {
		pr_err("mode=%s runs notify_lat only\n", mode);
		return -EINVAL;
	}

	ndev = dev_get_by_name(&init_net, netdev);
	if (!ndev)
		return -ENODEV;
	cfg[0].ifindex = ndev->ifindex;
	cfg[0].addr = inet_select_addr(ndev, 0, RT_SCOPE_UNIVERSE);
	dev_put(ndev);
	for (m = 1; m < n; m++) {
		cfg[m] = cfg[0];
		cfg[m].port = PERF_PORT + m;
	}

	err = register_trace_kmalloc(perf_kmalloc, NULL);
	if (err)
		return err;
	err = register_trace_kmem_cache_alloc(perf_kmem_cache_alloc, NULL);
	if (!err) {
		err = cfg[0].wl == PERF_SEND_BW_2CPU ?
		      perf_run_cpus(ops, cfg, n) : perf_run(ops, cfg, n);
		unregister_trace_kmem_cache_alloc(perf_kmem_cache_alloc, NULL);
	}
	unregister_trace_kmalloc(perf_kmalloc, NULL);
	tracepoint_synchronize_unregister();
	if (err)
		pr_err("workload=%s mode=%s failed: %d\n", workload, mode, err);
	return 0;
}

static void __exit perf_exit(void)
{
}

module_init(perf_init);
module_exit(perf_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ndkperf: NDK and raw verbs benchmark");
