/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ndk_stress: what its files share.
 *
 * One cycle, and the file that does each step of it:
 *
 *  main.c      the module, its parameters and counters, the threads, one
 *              cycle from adapter open to adapter close, the summary;
 *  objects.c   object churn: create every object of the cycle, register
 *              memory, build the fast-register mapping (st_setup());
 *  connect.c   connection churn: listen, connect, accept or reject or
 *              cancel, disconnect, and the connect and disconnect events;
 *  traffic.c   data: post work requests, reap them from the CQs (polled
 *              or notified), verify every byte;
 *  teardown.c  flush, deregister, resize and close in a random order,
 *              then close the adapter, with every wait bounded;
 *  account.c   the bookkeeping all of them use: every started operation
 *              ends exactly once, closes come in the order NDKPI
 *              promises, and a problem is counted and logged.
 */
#ifndef NDK_STRESS_H
#define NDK_STRESS_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/prandom.h>
#include <linux/sched.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <ndk/ndk.h>

/* Per side: four areas of 4 KiB in one registered buffer. */
#define ST_AREA		4096
#define ST_SEND		0		/* what this side sends or writes */
#define ST_RECV		(1 * ST_AREA)	/* receives, ST_RECV_SLICE each */
#define ST_TARGET	(2 * ST_AREA)	/* what the peer writes and reads */
#define ST_SINK		(3 * ST_AREA)	/* where this side's reads land */
#define ST_BUF		(4 * ST_AREA)
#define ST_RECV_SLICE	1024

#define ST_CQ_DEPTH	64
#define ST_QP_DEPTH	16
#define ST_FR_PAGES	2
#define ST_WRS		48
#define ST_STRAYS	4

/* Outcomes of an operation that do not count as a failure of the run. */
#define ST_ALLOW_CANCEL	BIT(0)
#define ST_ALLOW_FAIL	BIT(1)
#define ST_ALLOW_ANY	(ST_ALLOW_CANCEL | ST_ALLOW_FAIL)

/* How a cycle's connection goes; FULL is the common case. */
enum st_fate {
	ST_FULL,		/* connect, move data, disconnect */
	ST_REJECT,		/* the passive side rejects */
	ST_CLOSE_IN_EVENT,	/* the connect event closes the new connector */
	ST_CLOSE_IN_CONNECT,	/* the connect completion closes the connector */
	ST_CANCEL,		/* the connector is closed while connecting */
	ST_CANCEL_ACCEPT,	/* the passive one is closed while accepting */
	ST_FATES
};

/* Non-work-request requests, each with a slot of its own. */
enum st_req_id {
	ST_R_LISTEN, ST_R_CONNECT, ST_R_ACCEPT, ST_R_COMPLETE, ST_R_DISC,
	ST_R_CREG, ST_R_SREG, ST_R_FINIT, ST_R_CDEREG, ST_R_SDEREG,
	ST_R_RESIZE0, ST_R_RESIZE1, ST_REQS
};

/* The run's counters, summed over every thread and cycle. */
struct st_counters {
	atomic64_t cycles, started, completed, cancelled, failed, bad_status;
	atomic64_t problems, unaccounted, verified, cb_closes, events;
	atomic64_t unpolled_closes, closed_outstanding;
	atomic_t logged;
};

struct st_worker {
	struct task_struct *task;
	unsigned int id;
	struct rnd_state rnd;
	u64 cycle;
};

struct st_cycle;

/*
 * Where an object's close call is: an inline close finishes inside it,
 * before the caller can record that, so an antecedent's completion seen
 * meanwhile is judged once the call has returned.
 */
enum st_close_call {
	ST_CLOSE_NOT_CALLING,
	ST_CLOSE_CALLING,
	ST_CLOSE_OVERTAKEN,	/* calling, and an antecedent completed */
};

/* One object of a cycle: its handle once created, and its close. */
struct st_obj {
	struct st_cycle *c;
	const char *name;
	NDK_OBJECT_HEADER *hdr;
	bool created;		/* the create completion ran */
	bool closed;		/* the close completion ran */
	atomic_t claimed;	/* the close was issued */
	atomic_t close_call;	/* enum st_close_call */
	struct st_obj *close_on_create;
	struct st_obj *close_on_close;
};

struct st_cq {
	struct st_obj obj;
	spinlock_t lock;	/* polling and arming, against the close */
	bool notify;		/* drained by its notification, not polled */
	bool stop;		/* closing: no more polling or arming */
	bool hold;		/* not polled for a while */
	bool close_in_notify;
	atomic_t pending;	/* work requests that complete here */
};

struct st_wr {
	struct st_cycle *c;
	struct st_cq *q;
	struct st_side *side;	/* posted there */
	bool via_srq;		/* a receive on the SRQ, not on the QP */
	const char *what;
	u32 allow;
	bool done;
	NTSTATUS status;
	ULONG bytes;
	NDK_OPERATION_TYPE type;
};

struct st_req {
	struct st_cycle *c;
	struct st_obj *obj;	/* the object the request is on */
	struct st_obj *close;	/* closed from inside the completion */
	const char *what;
	u32 allow;
	bool done;
	NTSTATUS status;
};

/* One end of the connection. */
struct st_side {
	struct st_cycle *c;
	struct st_obj *conn;
	bool event;		/* the disconnect event ran */
	bool close_in_event;
	u8 *buf;
	struct ndk_mdl mdl;
	struct st_obj mr;
	struct st_obj qp;
	struct st_cq *cq;
	u32 ltok, rtok;
};

struct st_cycle {
	struct st_worker *w;
	wait_queue_head_t wq;
	spinlock_t lock;	/* the incoming connector */
	atomic_t pending;	/* operations started and not accounted */
	atomic_t in_cb;		/* callbacks running */
	bool failed;
	bool stuck;

	NDK_ADAPTER *adapter;
	NDK_ADAPTER_INFO info;
	enum st_fate fate;
	struct sockaddr_storage src, dst;
	ULONG alen;

	struct st_obj pd, lis, cli, srv, fmr, extra, sep, srq;
	bool close_srq_in_notify;
	bool sep_used;		/* the connector went over the endpoint */
	bool extra_mr;		/* the extra object is an MR of the PD */
	struct st_obj stray[ST_STRAYS];
	atomic_t nstray;
	struct st_cq cq[2];
	unsigned int ncq;
	struct st_side side[2];	/* [0] active, [1] passive */
	bool want_incoming;
	bool incoming;
	bool close_lis_in_event;
	bool teardown;

	struct st_req req[ST_REQS];
	struct st_wr wr[ST_WRS];
	unsigned int nwr;

	bool fr;
	struct page *fpage;
	struct page *fpages[ST_FR_PAGES];
	struct ndk_mdl fmdl;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	ULONG fbo;
	u32 flen;

	struct work_struct close_work;
	struct completion closed;
};

/* main.c: the module's parameters and the run-wide state. */
extern uint st_timeout;
extern bool st_close_unpolled;
extern ushort st_port;
extern struct st_counters st;
extern struct sockaddr_in st_addr4;
extern struct sockaddr_in6 st_addr6;
extern bool st_have6;

/* account.c: operations, closes and problems. */
__printf(2, 3) void st_problem(struct st_cycle *c, const char *fmt, ...);
void st_stuck(struct st_cycle *c, const char *what);
void st_start(struct st_cycle *c);
void st_account(struct st_cycle *c, NTSTATUS status, u32 allow,
		const char *what);
void st_close(struct st_obj *o, bool in_cb);
struct st_req *st_req(struct st_cycle *c, enum st_req_id id,
		      struct st_obj *obj, const char *what, u32 allow,
		      struct st_obj *close);
bool st_issued(struct st_cycle *c, struct st_req *r, NTSTATUS status);
void st_req_done(PVOID ctx, NTSTATUS status);

/* objects.c: object churn, everything a cycle creates. */
bool st_setup(struct st_cycle *c);

/* connect.c: connection churn; st_connect_event() serves every listener. */
void st_connect_event(PVOID ctx, NDK_CONNECTOR *conn);
void st_addresses(struct st_cycle *c);
bool st_listen(struct st_cycle *c);
bool st_connect(struct st_cycle *c);
void st_disconnect(struct st_cycle *c);

/* traffic.c: work requests and the CQs they complete on. */
void st_cq_notify(PVOID ctx, NTSTATUS status);
void st_poll(struct st_cycle *c);
struct st_wr *st_post_recv(struct st_cycle *c, struct st_side *s,
			   unsigned int slice, u32 allow);
void st_transfer(struct st_cycle *c, struct st_wr *arecv,
		 struct st_wr *precv);

/* teardown.c: the end of every cycle; false if something is stuck. */
bool st_teardown(struct st_cycle *c);

/*
 * Completion flags: a callback stores what it reports, then the flag
 * with release semantics...
 */
#define st_set(flag)	smp_store_release(&(flag), true)
/* ... and the thread reads the flag with acquire, then the report. */
#define st_done(flag)	smp_load_acquire(&(flag))

static inline u32 st_rand(struct st_cycle *c, u32 n)
{
	return prandom_u32_state(&c->w->rnd) % n;
}

static inline bool st_chance(struct st_cycle *c, u32 one_in)
{
	return st_rand(c, one_in) == 0;
}

static inline void st_cb_enter(struct st_cycle *c)
{
	atomic_inc(&c->in_cb);
}

static inline void st_cb_exit(struct st_cycle *c)
{
	atomic_dec(&c->in_cb);
}

static inline struct sockaddr *st_src(struct st_cycle *c)
{
	return (struct sockaddr *)&c->src;
}

static inline struct sockaddr *st_dst(struct st_cycle *c)
{
	return (struct sockaddr *)&c->dst;
}

static inline NDK_MR *st_mr(struct st_obj *o)
{
	return container_of(o->hdr, NDK_MR, Header);
}

static inline NDK_QP *st_qp(struct st_side *s)
{
	return container_of(s->qp.hdr, NDK_QP, Header);
}

/*
 * Wait at most `timeout` seconds for @cond, polling the CQs that have
 * no notification meanwhile. False, and the cycle failed, on timeout.
 */
#define st_wait(c, cond, what)						\
({									\
	struct st_cycle *__c = (c);					\
	unsigned long __end = jiffies + st_timeout * HZ;		\
	DEFINE_WAIT(__wait);						\
	bool __ok;							\
									\
	for (;;) {							\
		st_poll(__c);						\
		prepare_to_wait(&__c->wq, &__wait, TASK_UNINTERRUPTIBLE); \
		__ok = (cond);						\
		if (__ok || time_after(jiffies, __end))			\
			break;						\
		schedule_timeout(1);					\
	}								\
	finish_wait(&__c->wq, &__wait);					\
	if (!__ok)							\
		st_stuck(__c, what);					\
	__ok;								\
})

#endif /* NDK_STRESS_H */
