/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ndkperf: the same workloads over NDK and over raw ib_core/rdma_cm.
 * main.c runs a workload through struct perf_ops; ndk_mode.c implements
 * them with the public NDK headers only, raw_mode.c with kernel verbs.
 */
#ifndef _NDKPERF_H
#define _NDKPERF_H

#include <linux/completion.h>
#include <linux/in.h>
#include <linux/ktime.h>
#include <linux/types.h>
#include <ndk/ndkpi.h>

enum perf_workload {
	PERF_SEND_LAT,	/* send/receive ping-pong */
	PERF_WRITE_LAT,	/* RDMA write ping-pong, the peer polls memory */
	PERF_SEND_BW,	/* sends with queue depth outstanding */
	PERF_WRITE_BW,	/* RDMA writes with queue depth outstanding */
	PERF_READ_BW,	/* RDMA reads with queue depth outstanding */
	PERF_REG_MR,	/* register and deregister memory */
	PERF_CONN,	/* connect, accept, complete, disconnect, close */
	PERF_POLL_EMPTY, /* poll an empty CQ: the bare cost of a poll call */
	PERF_NOTIFY_LAT, /* send ping-pong driven by CQ notifications */
	PERF_SEND_BW_2CPU, /* send_bw on one connection per CPU at once */
	PERF_CONN_SCALE, /* conns connections at once, a send on each, closed */
	PERF_OBJECTS,	/* create and close one object of each kind */
};

/* objects: the kinds of object, each created and closed in turn. */
enum perf_obj {
	PERF_O_PD,
	PERF_O_CQ,
	PERF_O_QP,
	PERF_O_MR,
	PERF_O_CONNECTOR,
	PERF_O_LISTENER,
	PERF_O_KINDS,
};

extern const char * const perf_obj_names[PERF_O_KINDS];

/* What a request's completion belongs to, as its request context. */
enum perf_kind {
	PERF_K_SEND = 1,
	PERF_K_RECV,
	PERF_K_WRITE,
	PERF_K_READ,
};

/* Read limit asked for on both sides, in both modes. */
#define PERF_RD_LIMIT	16
#define PERF_PORT	18700

/*
 * Phase marks for NDK_BENCH_PROFILE (tbprof.c): the instructions after a
 * mark count for its phase as well, up to the next mark. Each is xchg of
 * a 16-bit register with itself, which does nothing and which no
 * compiler emits; the register, in the ModRM byte below, names the
 * phase. Only on x86-64, the bench VM's architecture.
 */
enum perf_phase {
	PERF_PHASE_NONE = 0xf6,	/* %si */
	PERF_PHASE_1 = 0xc9,	/* %cx */
	PERF_PHASE_2 = 0xd2,	/* %dx */
	PERF_PHASE_3 = 0xdb,	/* %bx */
};

static __always_inline void perf_phase(enum perf_phase modrm)
{
	if (IS_ENABLED(CONFIG_X86_64))
		asm volatile(".byte 0x66, 0x87, %c0" : : "i" (modrm));
}

struct perf_cfg {
	enum perf_workload wl;
	u32 size;
	u32 iters;
	u32 depth;
	__be32 addr;		/* the adapter's IPv4 address */
	int ifindex;
	u16 port;		/* the listener's; each mode has its own */
	/* notify_lat: per side; the CQs get a notification callback */
	struct perf_notify *notify;
	u32 conns;		/* conn_scale: connections open at once */
};

/*
 * notify_lat: what a side's CQ notification callback leaves for the
 * thread that waits for it, and when it ran.
 */
struct perf_notify {
	struct completion done;
	ktime_t t;
};

/* Called by either mode's notification callback, in any context. */
static inline void perf_notified(struct perf_notify *n)
{
	WRITE_ONCE(n->t, ktime_get());
	complete(&n->done);
}

/* One completion, as both modes report it. */
struct perf_wc {
	u64 kind;
	int status;
};

/*
 * A mode. Side 0 is the client, side 1 the server; each has a QP, a CQ
 * for both of its queues and a buffer of 2 * size bytes, registered: the
 * first half is what it sends, writes or is read from, the second half
 * receives, is written to or is read into.
 */
struct perf_ops {
	const char *name;
	void *(*setup)(const struct perf_cfg *cfg);
	void (*teardown)(void *st);
	u8 *(*buf)(void *st, int side);
	int (*send)(void *st, int side, u32 len);
	int (*recv)(void *st, int side, u32 len);
	int (*write)(void *st, int side, u32 len);
	int (*read)(void *st, int side, u32 len);
	int (*poll)(void *st, int side, struct perf_wc *wc, int n);
	/* Ask for one notification of side @side's next completion. */
	void (*arm)(void *st, int side);
	/* One timed registration of size bytes, deregistered untimed. */
	int (*reg_once)(void *st, u64 *ns);
	/* One full connection setup and teardown on new QPs. */
	int (*conn_once)(void *st);
	/*
	 * objects: create and close one object of kind @kind (enum
	 * perf_obj) on the side 0 PD and CQ; the caller times it.
	 */
	int (*obj_once)(void *st, int kind);
	/*
	 * conn_scale, in this order: open cfg->conns connections at once,
	 * each with its own QPs and connectors (ids) on CQs they all share
	 * (a send and a receive CQ per side), a receive posted on side 1;
	 * send once on each from side 0 and reap every completion; then
	 * disconnect and close all. scale_close also cleans up after a
	 * failed scale_open or scale_send.
	 */
	int (*scale_open)(void *st);
	int (*scale_send)(void *st);
	void (*scale_close)(void *st);
	/* Print ndk's private object sizes (NDK mode only). */
	void (*sizes)(void *st);
};

extern const struct perf_ops perf_ndk_ops;
extern const struct perf_ops perf_raw_ops;
extern const struct perf_ops perf_core_ops;

void perf_print_sizes(NDK_PD *pd, NDK_CQ *cq, NDK_QP *qp, NDK_MR *mr,
		      NDK_CONNECTOR *active, NDK_CONNECTOR *passive);

#endif /* _NDKPERF_H */
