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
#include <linux/workqueue.h>
#include <ndk/ndk.h>

static uint seconds = 600;
module_param(seconds, uint, 0444);
MODULE_PARM_DESC(seconds, "how long to churn (default 600)");

static uint threads_per_cpu = 2;
module_param(threads_per_cpu, uint, 0444);
MODULE_PARM_DESC(threads_per_cpu, "threads per online CPU (default 2)");

static uint seed;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "random seed; 0 picks one (logged)");

static uint timeout = 30;
module_param(timeout, uint, 0444);
MODULE_PARM_DESC(timeout, "seconds any one wait may take before it counts as stuck");

static char *addr6;
module_param(addr6, charp, 0444);
MODULE_PARM_DESC(addr6, "IPv6 address of the adapter's interface: half the connections use it");

/*
 * Off by default: ndk reads the freed verbs QP when it polls completions
 * of a QP closed before they were polled (Documentation/ndk/testing.rst,
 * "Stress").
 */
static bool close_unpolled = true;
module_param(close_unpolled, bool, 0444);
MODULE_PARM_DESC(close_unpolled, "sometimes close a QP whose completions are not polled yet, then poll them");

static ushort port = 20000;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "first of the listening ports; each thread uses 64 from here");

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
#define ST_PORTS	64

/* Private data of the connect request and of the accept. */
#define ST_HELLO	"ndk_stress connect"
#define ST_REPLY	"ndk_stress accept"

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

static const u8 st_fate_weight[ST_FATES] = { 12, 1, 1, 1, 1, 1 };

/* Non-work-request requests, each with a slot of its own. */
enum st_req_id {
	ST_R_LISTEN, ST_R_CONNECT, ST_R_ACCEPT, ST_R_COMPLETE, ST_R_DISC,
	ST_R_CREG, ST_R_SREG, ST_R_FINIT, ST_R_CDEREG, ST_R_SDEREG,
	ST_R_RESIZE0, ST_R_RESIZE1, ST_REQS
};

static struct {
	atomic64_t cycles, started, completed, cancelled, failed, bad_status;
	atomic64_t problems, unaccounted, verified, cb_closes, events;
	atomic_t logged;
} st;

static unsigned long st_end;
static int st_ifindex;
static struct sockaddr_in st_addr4;
static struct sockaddr_in6 st_addr6;
static bool st_have6;
static atomic_t st_running;
static unsigned long st_started_at;

struct st_worker {
	struct task_struct *task;
	unsigned int id;
	struct rnd_state rnd;
	u64 cycle;
};

static struct st_worker *st_workers;
static unsigned int st_nworkers;

struct st_cycle;

/* One object of a cycle: its handle once created, and its close. */
struct st_obj {
	struct st_cycle *c;
	const char *name;
	NDK_OBJECT_HEADER *hdr;
	bool created;		/* the create completion ran */
	bool closed;		/* the close completion ran */
	atomic_t claimed;	/* the close was issued */
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

/*
 * Completion flags: a callback stores what it reports, then the flag
 * with release semantics...
 */
#define st_set(flag)	smp_store_release(&(flag), true)
/* ... and the thread reads the flag with acquire, then the report. */
#define st_done(flag)	smp_load_acquire(&(flag))

static u32 st_rand(struct st_cycle *c, u32 n)
{
	return prandom_u32_state(&c->w->rnd) % n;
}

static bool st_chance(struct st_cycle *c, u32 one_in)
{
	return st_rand(c, one_in) == 0;
}

static __printf(2, 3) void st_problem(struct st_cycle *c, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	atomic64_inc(&st.problems);
	c->failed = true;
	if (atomic_inc_return(&st.logged) > 100)
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("thread %u cycle %llu: %pV\n", c->w->id, c->w->cycle, &vaf);
	va_end(args);
}

static void st_cb_enter(struct st_cycle *c)
{
	atomic_inc(&c->in_cb);
}

static void st_cb_exit(struct st_cycle *c)
{
	atomic_dec(&c->in_cb);
}

static void st_start(struct st_cycle *c)
{
	atomic64_inc(&st.started);
	atomic_inc(&c->pending);
}

/* One started operation ended with @status; @allow says what may fail. */
static void st_account(struct st_cycle *c, NTSTATUS status, u32 allow,
		       const char *what)
{
	if (NT_SUCCESS(status)) {
		atomic64_inc(&st.completed);
	} else if (status == STATUS_CANCELLED && (allow & ST_ALLOW_CANCEL)) {
		atomic64_inc(&st.cancelled);
	} else if (status != STATUS_CANCELLED && (allow & ST_ALLOW_FAIL)) {
		atomic64_inc(&st.failed);
	} else {
		atomic64_inc(&st.bad_status);
		c->failed = true;
		if (atomic_inc_return(&st.logged) <= 100)
			pr_err("thread %u cycle %llu: %s: status %#x\n",
			       c->w->id, c->w->cycle, what, status);
	}
	atomic_dec(&c->pending);
	wake_up(&c->wq);
}

/* Every dispatch table starts with the close entry of its object. */
static NDK_FN_CLOSE_OBJECT st_close_fn(NDK_OBJECT_HEADER *hdr)
{
	switch (hdr->ObjectType) {
	case NdkObjectTypePd:
		return container_of(hdr, NDK_PD, Header)->Dispatch->NdkClosePd;
	case NdkObjectTypeCq:
		return container_of(hdr, NDK_CQ, Header)->Dispatch->NdkCloseCq;
	case NdkObjectTypeQp:
		return container_of(hdr, NDK_QP, Header)->Dispatch->NdkCloseQp;
	case NdkObjectTypeMr:
		return container_of(hdr, NDK_MR, Header)->Dispatch->NdkCloseMr;
	case NdkObjectTypeConnector:
		return container_of(hdr, NDK_CONNECTOR,
				    Header)->Dispatch->NdkCloseConnector;
	case NdkObjectTypeListener:
		return container_of(hdr, NDK_LISTENER,
				    Header)->Dispatch->NdkCloseListener;
	case NdkObjectTypeSrq:
		return container_of(hdr, NDK_SRQ, Header)->Dispatch->NdkCloseSrq;
	case NdkObjectTypeSharedEndpoint:
		return container_of(hdr, NDK_SHARED_ENDPOINT,
				    Header)->Dispatch->NdkCloseSharedEndpoint;
	default:
		return NULL;
	}
}

static void st_close(struct st_obj *o, bool in_cb);

/* The successors of @o: QPs of a CQ, everything made on a PD ... */
static unsigned int st_successors(struct st_obj *o, struct st_obj **succ)
{
	struct st_cycle *c = o->c;
	unsigned int i, n = 0;

	for (i = 0; i < 2; i++) {
		if (o == &c->pd || (o == &c->srq && i == 1) ||
		    (c->side[i].cq && o == &c->side[i].cq->obj))
			succ[n++] = &c->side[i].qp;
		if (o == &c->pd)
			succ[n++] = &c->side[i].mr;
	}
	if (o == &c->pd) {
		succ[n++] = &c->fmr;
		succ[n++] = &c->srq;
		if (c->extra_mr)
			succ[n++] = &c->extra;
	}
	if (o == &c->lis) {
		succ[n++] = &c->srv;
		for (i = 0; i < ST_STRAYS; i++)
			succ[n++] = &c->stray[i];
	}
	if (o == &c->sep && c->sep_used)
		succ[n++] = &c->cli;
	return n;
}

/* ... whose close completions must all have come before that of @o. */
static void st_check_order(struct st_obj *o)
{
	struct st_obj *succ[ST_STRAYS + 8];
	unsigned int i, n = st_successors(o, succ);

	for (i = 0; i < n; i++)
		if (READ_ONCE(succ[i]->hdr) && !READ_ONCE(succ[i]->closed))
			st_problem(o->c, "%s closed before its successor, the %s",
				   o->name, succ[i]->name);
}

/*
 * @o is closed, by its completion callback (@in_cb) or inline, as NDKPI
 * lets a close finish (STATUS_SUCCESS, no callback): the same follows.
 */
static void st_close_done(struct st_obj *o, NTSTATUS status, bool in_cb)
{
	struct st_cycle *c = o->c;

	if (READ_ONCE(o->closed))
		st_problem(c, "%s: second close completion", o->name);
	st_check_order(o);
	/* The mapping stays until no registration uses its pages. */
	if (o == &c->fmr && c->lam)
		c->adapter->Dispatch->NdkReleaseLAM(c->adapter, c->lam);
	st_set(o->closed);
	if (o->close_on_close)
		st_close(o->close_on_close, in_cb);
	st_account(c, status, 0, o->name);
}

static void st_closed(PVOID ctx)
{
	struct st_obj *o = ctx;
	struct st_cycle *c = o->c;

	st_cb_enter(c);
	st_close_done(o, STATUS_SUCCESS, true);
	st_cb_exit(c);
}

/*
 * Close @o unless it was never created or is closed already; from a
 * callback too, which is what @in_cb counts.
 */
static void st_close(struct st_obj *o, bool in_cb)
{
	struct st_cycle *c = o->c;
	NDK_OBJECT_HEADER *hdr = READ_ONCE(o->hdr);
	NDK_FN_CLOSE_OBJECT close;
	NTSTATUS status;

	if (!hdr || atomic_xchg(&o->claimed, 1))
		return;
	close = st_close_fn(hdr);
	if (!close) {
		st_problem(c, "%s: object type %d", o->name, hdr->ObjectType);
		return;
	}
	if (in_cb)
		atomic64_inc(&st.cb_closes);
	st_start(c);
	status = close(hdr, st_closed, o);
	/* Done inline: no completion will come. */
	if (status != STATUS_PENDING)
		st_close_done(o, status, in_cb);
}

static void st_created(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *hdr)
{
	struct st_obj *o = ctx;
	struct st_cycle *c = o->c;

	st_cb_enter(c);
	if (NT_SUCCESS(status))
		WRITE_ONCE(o->hdr, hdr);
	st_set(o->created);
	if (NT_SUCCESS(status) && o->close_on_create)
		st_close(o->close_on_create, true);
	st_account(c, status, 0, o->name);
	st_cb_exit(c);
}

/* A create that completed inline: as st_created(), outside a callback. */
static void st_created_inline(struct st_cycle *c, struct st_obj *o,
			      NTSTATUS status, NDK_OBJECT_HEADER *hdr)
{
	if (NT_SUCCESS(status))
		WRITE_ONCE(o->hdr, hdr);
	WRITE_ONCE(o->created, true);
	if (NT_SUCCESS(status) && o->close_on_create)
		st_close(o->close_on_create, false);
	st_account(c, status, 0, o->name);
}

static void st_req_done(PVOID ctx, NTSTATUS status)
{
	struct st_req *r = ctx;
	struct st_cycle *c = r->c;

	st_cb_enter(c);
	if (r->obj && READ_ONCE(r->obj->closed))
		st_problem(c, "%s completed after its object's close", r->what);
	r->status = status;
	st_set(r->done);
	if (r->close)
		st_close(r->close, true);
	st_account(c, status, r->allow, r->what);
	st_cb_exit(c);
}

/* Start request @id on @obj; the call's status goes to st_issued(). */
static struct st_req *st_req(struct st_cycle *c, enum st_req_id id,
			     struct st_obj *obj, const char *what, u32 allow,
			     struct st_obj *close)
{
	struct st_req *r = &c->req[id];

	r->c = c;
	r->obj = obj;
	r->what = what;
	r->allow = allow;
	r->close = close;
	r->done = false;
	st_start(c);
	return r;
}

/*
 * True if the request pends; otherwise it is accounted here, and the
 * close its completion would have made follows, as in st_req_done().
 */
static bool st_issued(struct st_cycle *c, struct st_req *r, NTSTATUS status)
{
	if (status == STATUS_PENDING)
		return true;
	r->status = status;
	WRITE_ONCE(r->done, true);
	if (r->close)
		st_close(r->close, false);
	st_account(c, status, r->allow, r->what);
	return false;
}

static void st_result(struct st_cq *q, const NDK_RESULT_EX *res)
{
	struct st_cycle *c = q->obj.c;
	struct st_wr *w = res->RequestContext;

	if (w < c->wr || w >= c->wr + ST_WRS) {
		st_problem(c, "result with an unknown request context");
		return;
	}
	if (w->q != q || READ_ONCE(w->done)) {
		st_problem(c, "%s: result on the wrong CQ or twice", w->what);
		return;
	}
	w->status = res->Status;
	w->bytes = res->BytesTransferred;
	w->type = res->Type;
	st_set(w->done);
	atomic_dec(&q->pending);
	st_account(c, res->Status, w->allow, w->what);
}

/*
 * @s's QP is closed: ndk drops the completions of its requests still in
 * the CQ, as nothing can name them any more, so they end here, cancelled.
 * Receives taken from the SRQ are the SRQ's and still complete.
 */
static void st_drop_closed(struct st_cycle *c, struct st_side *s)
{
	unsigned long flags;
	struct st_wr *w;

	spin_lock_irqsave(&s->cq->lock, flags);
	for (w = c->wr; w < c->wr + c->nwr; w++) {
		if (w->side != s || w->via_srq || READ_ONCE(w->done))
			continue;
		w->status = STATUS_CANCELLED;
		st_set(w->done);
		atomic_dec(&w->q->pending);
		st_account(c, STATUS_CANCELLED, ST_ALLOW_CANCEL, w->what);
	}
	spin_unlock_irqrestore(&s->cq->lock, flags);
}

/* Reap everything; the caller holds @q->lock and @q is not stopped. */
static void st_drain(struct st_cq *q)
{
	NDK_CQ *cq = container_of(q->obj.hdr, NDK_CQ, Header);
	NDK_RESULT_EX res[8];
	ULONG n, i;

	while ((n = cq->Dispatch->NdkGetCqResultsEx(cq, res, ARRAY_SIZE(res))))
		for (i = 0; i < n; i++)
			st_result(q, &res[i]);
}

static void st_cq_notify(PVOID ctx, NTSTATUS status)
{
	struct st_cq *q = ctx;
	struct st_cycle *c = q->obj.c;
	unsigned long flags;
	bool close = false;
	NDK_CQ *cq;

	st_cb_enter(c);
	if (READ_ONCE(q->obj.closed))
		st_problem(c, "CQ notification after the CQ's close");
	if (!NT_SUCCESS(status))
		st_problem(c, "CQ notification with status %#x", status);
	spin_lock_irqsave(&q->lock, flags);
	if (!q->stop) {
		st_drain(q);
		if (READ_ONCE(c->teardown) && q->close_in_notify &&
		    !atomic_read(&q->pending)) {
			q->stop = true;
			close = true;
		} else {
			cq = container_of(q->obj.hdr, NDK_CQ, Header);
			cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
		}
	}
	spin_unlock_irqrestore(&q->lock, flags);
	/* Its QPs may still be open: the close waits for them. */
	if (close)
		st_close(&q->obj, true);
	wake_up(&c->wq);
	st_cb_exit(c);
}

static void st_stuck(struct st_cycle *c, const char *what)
{
	st_problem(c, "stuck: %s", what);
	c->stuck = true;
}

static void st_poll(struct st_cycle *c)
{
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < c->ncq; i++) {
		struct st_cq *q = &c->cq[i];

		if (q->notify || q->hold || !READ_ONCE(q->obj.hdr))
			continue;
		spin_lock_irqsave(&q->lock, flags);
		if (!q->stop)
			st_drain(q);
		spin_unlock_irqrestore(&q->lock, flags);
	}
}

/*
 * Wait at most `timeout` seconds for @cond, polling the CQs that have
 * no notification meanwhile. False, and the cycle failed, on timeout.
 */
#define st_wait(c, cond, what)						\
({									\
	struct st_cycle *__c = (c);					\
	unsigned long __end = jiffies + timeout * HZ;			\
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

static void st_disc_event(PVOID ctx)
{
	struct st_side *s = ctx;
	struct st_cycle *c = s->c;

	st_cb_enter(c);
	atomic64_inc(&st.events);
	if (READ_ONCE(s->conn->closed))
		st_problem(c, "disconnect event after the connector's close");
	if (READ_ONCE(s->event))
		st_problem(c, "second disconnect event");
	st_set(s->event);
	if (s->close_in_event)
		st_close(s->conn, true);
	wake_up(&c->wq);
	st_cb_exit(c);
}

static void st_disc_event_ex(PVOID ctx, ULONG reason)
{
	st_disc_event(ctx);
}

static void st_connect_event(PVOID ctx, NDK_CONNECTOR *conn)
{
	struct st_cycle *c = ctx;
	struct st_obj *o = NULL;
	unsigned long flags;
	int n;

	st_cb_enter(c);
	atomic64_inc(&st.events);
	if (READ_ONCE(c->lis.closed))
		st_problem(c, "connect event after the listener's close");
	spin_lock_irqsave(&c->lock, flags);
	if (c->want_incoming && !c->incoming) {
		c->incoming = true;
		o = &c->srv;
		WRITE_ONCE(o->hdr, &conn->Header);
	}
	spin_unlock_irqrestore(&c->lock, flags);
	if (!o) {
		/* Nobody waits for it: a retry, or a cancelled connect. */
		n = atomic_inc_return(&c->nstray) - 1;
		if (n >= ST_STRAYS) {
			st_problem(c, "too many connection requests");
			goto out;
		}
		o = &c->stray[n];
		WRITE_ONCE(o->hdr, &conn->Header);
	}
	st_set(o->created);
	if (o != &c->srv || c->fate == ST_CLOSE_IN_EVENT)
		st_close(o, true);
	if (c->close_lis_in_event)
		st_close(&c->lis, true);
	wake_up(&c->wq);
out:
	st_cb_exit(c);
}

static void st_obj_init(struct st_cycle *c, struct st_obj *o,
			const char *name)
{
	o->c = c;
	o->name = name;
}

/* Wait for @o's creation; true if it exists. */
static bool st_created_ok(struct st_cycle *c, struct st_obj *o)
{
	if (!st_wait(c, st_done(o->created), o->name))
		return false;
	return o->hdr;
}

static void st_create_pd(struct st_cycle *c, struct st_obj *o)
{
	NDK_PD *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreatePd(c->adapter, st_created, o,
						   &unused);
	if (status != STATUS_PENDING) {
		WRITE_ONCE(o->created, true);
		st_account(c, status, 0, o->name);
	}
}

static void st_create_cq(struct st_cycle *c, struct st_obj *o,
			 struct st_cq *q)
{
	NDK_CQ *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreateCq(c->adapter, ST_CQ_DEPTH,
						   q ? st_cq_notify : NULL, q,
						   NULL, st_created, o,
						   &unused);
	if (status != STATUS_PENDING) {
		WRITE_ONCE(o->created, true);
		st_account(c, status, 0, o->name);
	}
}

static void st_create_connector(struct st_cycle *c, struct st_obj *o)
{
	NDK_CONNECTOR *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreateConnector(c->adapter,
							  st_created, o,
							  &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static void st_create_listener(struct st_cycle *c, struct st_obj *o)
{
	NDK_LISTENER *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreateListener(c->adapter,
							 st_connect_event, c,
							 st_created, o,
							 &unused);
	if (status != STATUS_PENDING) {
		WRITE_ONCE(o->created, true);
		st_account(c, status, 0, o->name);
	}
}

static struct sockaddr *st_src(struct st_cycle *c)
{
	return (struct sockaddr *)&c->src;
}

static struct sockaddr *st_dst(struct st_cycle *c)
{
	return (struct sockaddr *)&c->dst;
}

static void st_srq_notify(PVOID ctx, NTSTATUS status)
{
	struct st_cycle *c = ctx;

	st_cb_enter(c);
	atomic64_inc(&st.events);
	if (READ_ONCE(c->srq.closed))
		st_problem(c, "SRQ notification after the SRQ's close");
	if (!NT_SUCCESS(status))
		st_problem(c, "SRQ notification with status %#x", status);
	/* Its QP is still open: the close waits for it. */
	if (c->close_srq_in_notify)
		st_close(&c->srq, true);
	st_cb_exit(c);
}

/*
 * A shared receive queue for the passive QP: one receive per message it
 * takes, since receives left on an SRQ are never flushed; it notifies
 * when the queue runs empty.
 */
static void st_create_srq(struct st_cycle *c)
{
	NDK_PD *pd = container_of(c->pd.hdr, NDK_PD, Header);
	NDK_SRQ *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = pd->Dispatch->NdkCreateSrq(pd, ST_QP_DEPTH, 1, 1,
					    st_srq_notify, c, NULL,
					    st_created, &c->srq, &unused);
	if (status != STATUS_PENDING) {
		WRITE_ONCE(c->srq.created, true);
		st_account(c, status, 0, c->srq.name);
	}
}

/* An endpoint on the local address with an ephemeral port. */
static void st_create_sep(struct st_cycle *c, struct st_obj *o)
{
	const NDK_ADAPTER_DISPATCH *a = c->adapter->Dispatch;
	NDK_SHARED_ENDPOINT *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = a->NdkCreateSharedEndpoint(c->adapter, st_src(c), c->alen,
					    st_created, o, &unused);
	if (status != STATUS_PENDING) {
		WRITE_ONCE(o->created, true);
		st_account(c, status, 0, o->name);
	}
}

static NDK_PD *st_pd(struct st_cycle *c)
{
	return container_of(c->pd.hdr, NDK_PD, Header);
}

static void st_create_mr(struct st_cycle *c, struct st_obj *o, bool fast)
{
	NDK_PD *pd = st_pd(c);
	NDK_MR *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = pd->Dispatch->NdkCreateMr(pd, fast, st_created, o, &unused);
	if (status != STATUS_PENDING) {
		WRITE_ONCE(o->created, true);
		st_account(c, status, 0, o->name);
	}
}

static void st_create_qp(struct st_cycle *c, struct st_side *s)
{
	NDK_CQ *rcq = container_of(s->cq->obj.hdr, NDK_CQ, Header);
	NDK_PD *pd = st_pd(c);
	NDK_QP *unused = NULL;
	NTSTATUS status;

	st_start(c);
	if (s == &c->side[1] && c->srq.hdr)
		status = pd->Dispatch->NdkCreateQpWithSrq(pd, rcq, rcq,
				container_of(c->srq.hdr, NDK_SRQ, Header), s,
				ST_QP_DEPTH, 2, 0, st_created, &s->qp,
				&unused);
	else
		status = pd->Dispatch->NdkCreateQp(pd, rcq, rcq, s,
						   ST_QP_DEPTH, ST_QP_DEPTH, 2,
						   2, 0, st_created, &s->qp,
						   &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, &s->qp, status,
				  unused ? &unused->Header : NULL);
}

static NDK_MR *st_mr(struct st_obj *o)
{
	return container_of(o->hdr, NDK_MR, Header);
}

static NDK_QP *st_qp(struct st_side *s)
{
	return container_of(s->qp.hdr, NDK_QP, Header);
}

static NDK_CONNECTOR *st_conn(struct st_obj *o)
{
	return container_of(o->hdr, NDK_CONNECTOR, Header);
}

static void st_register(struct st_cycle *c, struct st_side *s,
			enum st_req_id id)
{
	NDK_MR *mr = st_mr(&s->mr);
	struct st_req *r;
	NTSTATUS status;

	ndk_mdl_init_kva(&s->mdl, s->buf, ST_BUF);
	r = st_req(c, id, &s->mr, "NdkRegisterMr", 0, NULL);
	status = mr->Dispatch->NdkRegisterMr(mr, &s->mdl, ST_BUF,
					     NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					     NDK_MR_FLAG_ALLOW_REMOTE_READ |
					     NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
					     NDK_MR_FLAG_RDMA_READ_SINK,
					     st_req_done, r);
	st_issued(c, r, status);
}

/* The fast-register buffer and its logical address mapping. */
static bool st_lam(struct st_cycle *c)
{
	ULONG size = 0, fbo;
	u32 off, i;

	c->fpage = alloc_pages(GFP_KERNEL, get_order(ST_FR_PAGES * PAGE_SIZE));
	if (!c->fpage)
		return false;
	for (i = 0; i < ST_FR_PAGES; i++)
		c->fpages[i] = c->fpage + i;
	off = st_rand(c, PAGE_SIZE);
	c->flen = 1 + st_rand(c, ST_FR_PAGES * PAGE_SIZE - off);
	c->flen = min_t(u32, c->flen, ST_AREA);
	ndk_mdl_init_pages(&c->fmdl, c->fpages,
			   DIV_ROUND_UP(off + c->flen, PAGE_SIZE), off,
			   c->flen);
	if (c->adapter->Dispatch->NdkBuildLAM(c->adapter, &c->fmdl, c->flen,
					      NULL, NULL, NULL, &size,
					      &fbo) != STATUS_BUFFER_TOO_SMALL)
		return false;
	c->lam = kzalloc(size, GFP_KERNEL);
	if (!c->lam)
		return false;
	if (c->adapter->Dispatch->NdkBuildLAM(c->adapter, &c->fmdl, c->flen,
					      NULL, NULL, c->lam, &size,
					      &c->fbo)) {
		kfree(c->lam);
		c->lam = NULL;
		return false;
	}
	return true;
}

static bool st_alloc_side(struct st_cycle *c, struct st_side *s)
{
	s->buf = st_chance(c, 2) ? vzalloc(ST_BUF) : kzalloc(ST_BUF, GFP_KERNEL);
	return s->buf;
}

/* Create everything the cycle needs; false if it cannot go on. */
static bool st_setup(struct st_cycle *c)
{
	NTSTATUS status;
	static const char *const extra_kind[] = {
		"extra PD", "extra CQ", "extra connector", "extra listener",
		"extra MR",
	};
	struct st_side *act = &c->side[0], *pas = &c->side[1];
	unsigned int i, kind;

	if (!st_alloc_side(c, act) || !st_alloc_side(c, pas)) {
		st_problem(c, "out of memory for buffers");
		return false;
	}
	st_create_pd(c, &c->pd);
	if (!st_created_ok(c, &c->pd))
		return false;

	/* CQs, the listener, the connector and an object closed at birth. */
	c->ncq = 1 + st_chance(c, 2);
	for (i = 0; i < c->ncq; i++) {
		struct st_cq *q = &c->cq[i];

		q->notify = st_chance(c, 2);
		q->close_in_notify = q->notify && st_chance(c, 2);
		st_create_cq(c, &q->obj, q);
	}
	act->cq = &c->cq[0];
	pas->cq = &c->cq[c->ncq - 1];
	st_create_listener(c, &c->lis);
	st_create_connector(c, &c->cli);
	if (st_chance(c, 4)) {
		c->sep.name = "shared endpoint";
		st_create_sep(c, &c->sep);
	}
	if (c->fate == ST_FULL && st_chance(c, 4)) {
		c->srq.name = "SRQ";
		c->close_srq_in_notify = st_chance(c, 2);
		st_create_srq(c);
	}
	kind = st_rand(c, ARRAY_SIZE(extra_kind));
	c->extra.name = extra_kind[kind];
	c->extra.close_on_create = &c->extra;
	switch (kind) {
	case 0:
		st_create_pd(c, &c->extra);
		break;
	case 1:
		st_create_cq(c, &c->extra, NULL);
		break;
	case 2:
		st_create_connector(c, &c->extra);
		break;
	case 3:
		st_create_listener(c, &c->extra);
		break;
	default:
		c->extra_mr = true;
		st_create_mr(c, &c->extra, st_chance(c, 2));
		break;
	}
	for (i = 0; i < c->ncq; i++)
		if (!st_created_ok(c, &c->cq[i].obj))
			return false;
	if (!st_created_ok(c, &c->lis) || !st_created_ok(c, &c->cli))
		return false;
	if (c->sep.name && !st_created_ok(c, &c->sep))
		return false;
	if (c->srq.name && !st_created_ok(c, &c->srq))
		return false;

	/* Notification-driven CQs are armed before anything completes. */
	for (i = 0; i < c->ncq; i++) {
		NDK_CQ *cq = container_of(c->cq[i].obj.hdr, NDK_CQ, Header);

		if (c->cq[i].notify)
			cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	}

	/* Memory: two registered buffers and perhaps a fast-register MR. */
	st_create_mr(c, &act->mr, false);
	st_create_mr(c, &pas->mr, false);
	c->fr = c->fate == ST_FULL && st_chance(c, 2);
	if (c->fr)
		st_create_mr(c, &c->fmr, true);
	if (!st_created_ok(c, &act->mr) || !st_created_ok(c, &pas->mr))
		return false;
	st_register(c, act, ST_R_CREG);
	st_register(c, pas, ST_R_SREG);
	if (c->fr && st_created_ok(c, &c->fmr)) {
		struct st_req *r = st_req(c, ST_R_FINIT, &c->fmr,
					  "NdkInitializeFastRegisterMr", 0,
					  NULL);
		NDK_MR *mr = st_mr(&c->fmr);

		status = mr->Dispatch->NdkInitializeFastRegisterMr(mr,
								   ST_FR_PAGES,
								   TRUE,
								   st_req_done,
								   r);
		st_issued(c, r, status);
		if (!st_lam(c)) {
			st_problem(c, "NdkBuildLAM failed");
			return false;
		}
	} else if (c->fr) {
		return false;
	}
	if (!st_wait(c, st_done(c->req[ST_R_CREG].done) &&
		     st_done(c->req[ST_R_SREG].done), "NdkRegisterMr") ||
	    c->req[ST_R_CREG].status || c->req[ST_R_SREG].status)
		return false;
	if (c->fr && (!st_wait(c, st_done(c->req[ST_R_FINIT].done),
			       "NdkInitializeFastRegisterMr") ||
		      c->req[ST_R_FINIT].status))
		return false;
	for (i = 0; i < 2; i++) {
		NDK_MR *mr = st_mr(&c->side[i].mr);

		c->side[i].ltok = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
		c->side[i].rtok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	}

	/*
	 * The QPs last: the passive one's create completion may close the
	 * PD, which then waits for its QPs and MRs.
	 */
	if (st_chance(c, 4))
		pas->qp.close_on_create = &c->pd;
	st_create_qp(c, act);
	st_create_qp(c, pas);
	if (!st_created_ok(c, &act->qp) || !st_created_ok(c, &pas->qp))
		return false;
	return !c->failed;
}

/* A work request slot completing on @q; NULL if the cycle ran out. */
static struct st_wr *st_new_wr(struct st_cycle *c, struct st_side *s,
			       const char *what, u32 allow)
{
	struct st_cq *q = s->cq;
	struct st_wr *w;

	if (c->nwr >= ST_WRS) {
		st_problem(c, "out of work request slots");
		return NULL;
	}
	w = &c->wr[c->nwr++];
	*w = (struct st_wr){ .c = c, .q = q, .side = s, .what = what,
			     .allow = allow };
	atomic_inc(&q->pending);
	st_start(c);
	return w;
}

/* @w was posted with @status; NULL, and accounted, if that failed. */
static struct st_wr *st_posted(struct st_cycle *c, struct st_wr *w,
			       NTSTATUS status)
{
	if (!status)
		return w;
	atomic_dec(&w->q->pending);
	WRITE_ONCE(w->done, true);
	st_account(c, status, 0, w->what);
	return NULL;
}

/* Post one receive into slice @slice of @s's receive area. */
static struct st_wr *st_post_recv(struct st_cycle *c, struct st_side *s,
				  unsigned int slice, u32 allow)
{
	NDK_SGE sge = { .VirtualAddress = s->buf + ST_RECV +
					  slice * ST_RECV_SLICE,
			.Length = ST_RECV_SLICE, .MemoryRegionToken = s->ltok };
	struct st_wr *w;

	memset(sge.VirtualAddress, 0, ST_RECV_SLICE);
	w = st_new_wr(c, s, "NdkReceive", allow);
	if (!w)
		return NULL;
	if (s == &c->side[1] && c->srq.hdr) {
		NDK_SRQ *srq = container_of(c->srq.hdr, NDK_SRQ, Header);

		w->via_srq = true;
		return st_posted(c, w, srq->Dispatch->NdkSrqReceive(srq, w,
								    &sge, 1));
	}
	return st_posted(c, w, st_qp(s)->Dispatch->NdkReceive(st_qp(s), w,
							       &sge, 1));
}

enum st_op { ST_OP_SEND, ST_OP_WRITE, ST_OP_READ };

/* One initiator request from @s; its result, or NULL if it failed. */
static struct st_wr *st_post(struct st_cycle *c, struct st_side *s,
			     enum st_op op, u32 off, u32 len, u64 raddr,
			     u32 rtok, ULONG flags)
{
	static const char *const names[] = { "NdkSend", "NdkWrite",
					     "NdkRead" };
	NDK_SGE sge = { .VirtualAddress = s->buf + off, .Length = len,
			.MemoryRegionToken = s->ltok };
	NDK_QP *qp = st_qp(s);
	struct st_wr *w;
	NTSTATUS status;

	w = st_new_wr(c, s, names[op], 0);
	if (!w)
		return NULL;
	switch (op) {
	case ST_OP_SEND:
		status = qp->Dispatch->NdkSend(qp, w, &sge, 1, flags);
		break;
	case ST_OP_WRITE:
		status = qp->Dispatch->NdkWrite(qp, w, &sge, 1, raddr, rtok,
						flags);
		break;
	default:
		status = qp->Dispatch->NdkRead(qp, w, &sge, 1, raddr, rtok,
					       flags);
		break;
	}
	return st_posted(c, w, status);
}

static bool st_wr_ok(struct st_cycle *c, struct st_wr *w)
{
	return w && st_wait(c, st_done(w->done), w->what) && !w->status;
}

static void st_fill(struct st_cycle *c, u8 *p, u32 len)
{
	u8 x = st_rand(c, 256);
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = x + i * 31;
}

static void st_verify(struct st_cycle *c, const void *got, const void *want,
		      u32 len, const char *what)
{
	if (memcmp(got, want, len))
		st_problem(c, "%s: data mismatch over %u bytes", what, len);
	else
		atomic64_inc(&st.verified);
}

static u64 st_va(struct st_side *s, u32 off)
{
	return (uintptr_t)MmGetMdlVirtualAddress(&s->mdl) + off;
}

/* A message from @from to the receive @rw posted on @to. */
static bool st_message(struct st_cycle *c, struct st_side *from,
		       struct st_side *to, struct st_wr *rw,
		       unsigned int slice)
{
	u32 len = 1 + st_rand(c, ST_RECV_SLICE);
	struct st_wr *sw;

	st_fill(c, from->buf + ST_SEND, len);
	sw = st_post(c, from, ST_OP_SEND, ST_SEND, len, 0, 0,
		     st_chance(c, 4) ? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT : 0);
	if (!st_wr_ok(c, sw) || !st_wr_ok(c, rw))
		return false;
	if (rw->bytes != len || rw->type != NdkOperationTypeReceive)
		st_problem(c, "receive: %u bytes of type %d, sent %u",
			   rw->bytes, rw->type, len);
	st_verify(c, to->buf + ST_RECV + slice * ST_RECV_SLICE,
		  from->buf + ST_SEND, len, "send/receive");
	return !c->failed;
}

/*
 * @from writes a pattern into @to's target area (or @raddr/@rtok, the
 * fast-registered buffer at @tbuf), reads it back into its sink and
 * checks both copies.
 */
static bool st_write_read(struct st_cycle *c, struct st_side *from,
			  u8 *tbuf, u64 raddr, u32 rtok, u32 room)
{
	u32 len = 1 + st_rand(c, room);
	u32 off = st_rand(c, room - len + 1);
	struct st_wr *ww, *rw;

	st_fill(c, from->buf + ST_SEND, len);
	memset(from->buf + ST_SINK, 0, len);
	/* A deferred write goes out with the read that follows it. */
	ww = st_post(c, from, ST_OP_WRITE, ST_SEND, len, raddr + off, rtok,
		     st_chance(c, 4) ? NDK_OP_FLAG_DEFER : 0);
	rw = ww ? st_post(c, from, ST_OP_READ, ST_SINK, len, raddr + off,
			  rtok, 0) : NULL;
	if (!st_wr_ok(c, ww) || !st_wr_ok(c, rw))
		return false;
	if (rw->bytes != len)
		st_problem(c, "read: %u bytes of %u", rw->bytes, len);
	st_verify(c, from->buf + ST_SINK, from->buf + ST_SEND, len,
		  "RDMA read");
	st_verify(c, tbuf + off, from->buf + ST_SEND, len, "RDMA write");
	return !c->failed;
}

/* The passive side fast-registers its page buffer; the active side uses it. */
static bool st_fast_register(struct st_cycle *c)
{
	struct st_side *act = &c->side[0], *pas = &c->side[1];
	NDK_MR *mr = st_mr(&c->fmr);
	NDK_QP *qp = st_qp(pas);
	struct st_wr *w;
	NTSTATUS status;

	w = st_new_wr(c, pas, "NdkFastRegister", 0);
	if (!w)
		return false;
	status = qp->Dispatch->NdkFastRegister(qp, w, mr,
					       c->lam->AdapterPageCount,
					       c->lam->AdapterPageArray, c->fbo,
					       c->flen,
					       MmGetMdlVirtualAddress(&c->fmdl),
					       NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
					       NDK_OP_FLAG_ALLOW_REMOTE_READ);
	w = st_posted(c, w, status);
	if (!st_wr_ok(c, w))
		return false;
	if (w->type != NdkOperationTypeFastRegister)
		st_problem(c, "fast register completed as type %d", w->type);
	if (!st_write_read(c, act,
			   page_address(c->fpage) + c->fmdl.offset,
			   (uintptr_t)MmGetMdlVirtualAddress(&c->fmdl),
			   mr->Dispatch->NdkGetRemoteTokenFromMr(mr),
			   min_t(u32, c->flen, ST_AREA)))
		return false;
	if (st_chance(c, 2))
		return true;
	w = st_new_wr(c, pas, "NdkInvalidate", 0);
	if (!w)
		return false;
	status = qp->Dispatch->NdkInvalidate(qp, w, &mr->Header, 0);
	return st_wr_ok(c, st_posted(c, w, status));
}

static void st_transfer(struct st_cycle *c, struct st_wr *arecv,
			struct st_wr *precv)
{
	struct st_side *act = &c->side[0], *pas = &c->side[1];
	unsigned int i, n = 1 + st_rand(c, 4);

	if (!st_message(c, act, pas, precv, 0) ||
	    !st_message(c, pas, act, arecv, 0))
		return;
	for (i = 0; i < n; i++) {
		struct st_side *from = &c->side[st_rand(c, 2)];
		struct st_side *to = &c->side[from == act];

		if (!st_write_read(c, from, to->buf + ST_TARGET,
				   st_va(to, ST_TARGET), to->rtok, ST_AREA))
			return;
	}
	if (c->fr && !st_fast_register(c))
		return;
	/* Left for the disconnect and the flush to cancel. */
	st_post_recv(c, act, 1, ST_ALLOW_CANCEL);
	if (!c->srq.hdr)
		st_post_recv(c, pas, 1, ST_ALLOW_CANCEL);
}

/* Listen on this thread's next port; false if the cycle cannot go on. */
static bool st_listen(struct st_cycle *c)
{
	NDK_LISTENER *l = container_of(c->lis.hdr, NDK_LISTENER, Header);
	struct st_req *r;
	NTSTATUS status;

	r = st_req(c, ST_R_LISTEN, &c->lis, "NdkListen", 0, NULL);
	status = l->Dispatch->NdkListen(l, st_dst(c), c->alen, st_req_done, r);
	st_issued(c, r, status);
	return st_wait(c, st_done(r->done), "NdkListen") && !r->status;
}

/* IPv4 or IPv6; the listener takes this thread's next port. */
static void st_addresses(struct st_cycle *c)
{
	u16 p = port + c->w->id * ST_PORTS + c->w->cycle % ST_PORTS;

	if (st_have6 && st_chance(c, 2)) {
		memcpy(&c->src, &st_addr6, sizeof(st_addr6));
		memcpy(&c->dst, &st_addr6, sizeof(st_addr6));
		((struct sockaddr_in6 *)&c->dst)->sin6_port = htons(p);
		c->alen = sizeof(st_addr6);
	} else {
		memcpy(&c->src, &st_addr4, sizeof(st_addr4));
		memcpy(&c->dst, &st_addr4, sizeof(st_addr4));
		((struct sockaddr_in *)&c->dst)->sin_port = htons(p);
		c->alen = sizeof(st_addr4);
	}
}

static void st_accept(struct st_cycle *c, u32 allow)
{
	struct st_side *pas = &c->side[1];
	NDK_CONNECTOR *conn = st_conn(&c->srv);
	struct st_req *r;
	NTSTATUS status;

	r = st_req(c, ST_R_ACCEPT, &c->srv, "NdkAccept", allow, NULL);
	if (st_chance(c, 2))
		status = conn->Dispatch->NdkAccept(conn, st_qp(pas), 1, 1,
						   ST_REPLY, sizeof(ST_REPLY),
						   st_disc_event, pas,
						   st_req_done, r);
	else
		status = conn->Dispatch->NdkAcceptEx(conn, st_qp(pas), 1, 1,
						     ST_REPLY,
						     sizeof(ST_REPLY),
						     st_disc_event_ex, pas,
						     st_req_done, r);
	st_issued(c, r, status);
}

/* The NDK handshake, or one of the ways it ends early. */
static bool st_connect(struct st_cycle *c)
{
	struct st_side *act = &c->side[0];
	NDK_CONNECTOR *cli = st_conn(&c->cli);
	u32 allow = c->fate == ST_FULL ? 0 : ST_ALLOW_ANY;
	NDK_SHARED_ENDPOINT *sep = NULL;
	struct st_req *r, *cc;
	char data[256];
	ULONG len = sizeof(data);
	NTSTATUS status;

	if (c->sep.hdr)
		sep = container_of(c->sep.hdr, NDK_SHARED_ENDPOINT, Header);
	c->want_incoming = c->fate != ST_CANCEL;
	c->close_lis_in_event = st_chance(c, 4);
	r = st_req(c, ST_R_CONNECT, &c->cli, "NdkConnect", allow,
		   c->fate == ST_CLOSE_IN_CONNECT ? &c->cli : NULL);
	if (sep)
		status = cli->Dispatch->NdkConnectWithSharedEndpoint(cli,
								     st_qp(act),
								     sep,
								     st_dst(c),
								     c->alen,
								     1, 1,
								     ST_HELLO,
								     sizeof(ST_HELLO),
								     st_req_done,
								     r);
	else
		status = cli->Dispatch->NdkConnect(cli, st_qp(act), st_src(c),
						   c->alen, st_dst(c), c->alen,
						   1, 1, ST_HELLO,
						   sizeof(ST_HELLO),
						   st_req_done, r);
	if (!st_issued(c, r, status))
		return false;
	c->sep_used = sep;
	if (c->fate == ST_CANCEL)
		st_close(&c->cli, false);
	if (c->fate == ST_CANCEL || c->fate == ST_CLOSE_IN_EVENT) {
		st_wait(c, st_done(r->done), "NdkConnect that fails");
		return false;
	}
	if (!st_wait(c, READ_ONCE(c->incoming) && st_done(c->srv.created),
		     "connect event"))
		return false;
	if (c->fate == ST_REJECT) {
		NDK_CONNECTOR *srv = st_conn(&c->srv);

		/* Rejecting completes inline. */
		st_start(c);
		st_account(c, srv->Dispatch->NdkReject(srv, ST_HELLO, 4), 0,
			   "NdkReject");
		st_wait(c, st_done(r->done), "rejected NdkConnect");
		return false;
	}
	st_accept(c, allow);
	if (c->fate == ST_CANCEL_ACCEPT) {
		st_close(&c->srv, false);
		st_wait(c, st_done(r->done) &&
			st_done(c->req[ST_R_ACCEPT].done),
			"cancelled NdkAccept");
		return false;
	}
	if (!st_wait(c, st_done(r->done), "NdkConnect"))
		return false;
	if (c->fate == ST_CLOSE_IN_CONNECT) {
		st_wait(c, st_done(c->req[ST_R_ACCEPT].done),
			"NdkAccept of a closed peer");
		return false;
	}
	if (r->status)
		return false;
	if (cli->Dispatch->NdkGetConnectionData(cli, NULL, NULL, data, &len) ||
	    len < sizeof(ST_REPLY) ||
	    memcmp(data, ST_REPLY, sizeof(ST_REPLY)))
		st_problem(c, "NdkGetConnectionData: %u bytes", len);
	cc = st_req(c, ST_R_COMPLETE, &c->cli, "NdkCompleteConnect", 0, NULL);
	if (st_chance(c, 2))
		status = cli->Dispatch->NdkCompleteConnect(cli, st_disc_event,
							   act, st_req_done,
							   cc);
	else
		status = cli->Dispatch->NdkCompleteConnectEx(cli,
							     st_disc_event_ex,
							     act, st_req_done,
							     cc);
	st_issued(c, cc, status);
	return st_wait(c, st_done(cc->done) &&
		       st_done(c->req[ST_R_ACCEPT].done), "connection") &&
	       !cc->status && !c->req[ST_R_ACCEPT].status;
}

/* End an established connection from a random side, in a random way. */
static void st_disconnect(struct st_cycle *c)
{
	unsigned int from = st_rand(c, 2), how = st_rand(c, 3);
	struct st_side *s = &c->side[from], *peer = &c->side[!from];
	NDK_CONNECTOR *conn = st_conn(s->conn);
	struct st_req *r;
	NTSTATUS status;

	peer->close_in_event = st_chance(c, 2);
	if (how == 2) {
		/* Closing the connector disconnects too. */
		st_close(s->conn, false);
	} else {
		r = st_req(c, ST_R_DISC, s->conn, "NdkDisconnect", 0,
			   how ? s->conn : NULL);
		status = conn->Dispatch->NdkDisconnect(conn, st_req_done, r);
		if (st_issued(c, r, status))
			st_wait(c, st_done(r->done), "NdkDisconnect");
	}
	st_wait(c, st_done(peer->event), "disconnect event");
}

/* Close the adapter on a work item, so that the wait for it is bounded. */
static void st_close_adapter_work(struct work_struct *work)
{
	struct st_cycle *c = container_of(work, struct st_cycle, close_work);

	ndk_close_adapter(c->adapter);
	complete(&c->closed);
}

static void st_free(struct st_cycle *c)
{
	kfree(c->lam);
	if (c->fpage)
		__free_pages(c->fpage, get_order(ST_FR_PAGES * PAGE_SIZE));
	kvfree(c->side[0].buf);
	kvfree(c->side[1].buf);
	kfree(c);
}

/*
 * Flush, let every work request complete, close what is left in a
 * random order and close the adapter, whose return guarantees that no
 * callback of the cycle runs any more. False if something is stuck.
 */
static bool st_teardown(struct st_cycle *c)
{
	struct st_obj *objs[16];
	unsigned int i, j, n = 0;
	struct st_side *s;
	unsigned long flags;
	NTSTATUS status;
	int k;

	WRITE_ONCE(c->teardown, true);
	/* A request that comes now is closed by the connect event. */
	spin_lock_irqsave(&c->lock, flags);
	c->want_incoming = false;
	spin_unlock_irqrestore(&c->lock, flags);

	/*
	 * Sometimes the PD is closed from inside a QP's close completion;
	 * only the teardown closes QPs, so the completion will come.
	 */
	i = st_rand(c, 2);
	if (c->side[i].qp.hdr && c->pd.hdr && st_chance(c, 3))
		c->side[i].qp.close_on_close = &c->pd;

	/*
	 * Sometimes a QP is closed, with its connector, while completions
	 * of its work requests still wait unpolled in its CQ, which is
	 * polled once the QP is gone.
	 */
	s = &c->side[st_rand(c, 2)];
	if (close_unpolled && c->fate == ST_FULL && !s->cq->notify &&
	    s->qp.hdr && st_chance(c, 4)) {
		s->cq->hold = true;
		msleep(20);
		st_close(s->conn, false);
		st_close(&s->qp, false);
		st_wait(c, st_done(s->qp.closed),
			"close of a QP with unpolled completions");
		st_drop_closed(c, s);
		s->cq->hold = false;
	}

	for (i = 0; i < 2; i++)
		if (c->side[i].qp.hdr && !atomic_read(&c->side[i].qp.claimed))
			st_qp(&c->side[i])->Dispatch->NdkFlush(st_qp(&c->side[i]));
	st_wait(c, !atomic_read(&c->cq[0].pending) &&
		!atomic_read(&c->cq[1].pending), "flushed work requests");

	/* A polled CQ may be resized while it is being closed. */
	for (i = 0; i < c->ncq && !c->stuck; i++) {
		struct st_cq *q = &c->cq[i];
		NDK_CQ *cq = container_of(q->obj.hdr, NDK_CQ, Header);
		struct st_req *r;

		if (q->notify || !q->obj.hdr || !st_chance(c, 4) ||
		    !(c->info.AdapterFlags &
		      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
			continue;
		spin_lock_irqsave(&q->lock, flags);
		q->stop = true;
		spin_unlock_irqrestore(&q->lock, flags);
		r = st_req(c, ST_R_RESIZE0 + i, &q->obj, "NdkResizeCq", 0,
			   NULL);
		status = cq->Dispatch->NdkResizeCq(cq, 2 * ST_CQ_DEPTH,
						   st_req_done, r);
		st_issued(c, r, status);
	}

	/* Sometimes deregister first, perhaps closing in the completion. */
	for (i = 0; i < 2 && !c->stuck; i++) {
		struct st_side *s = &c->side[i];
		NDK_MR *mr = st_mr(&s->mr);
		struct st_req *r;

		if (!s->mr.hdr || !st_done(c->req[ST_R_CREG + i].done) ||
		    c->req[ST_R_CREG + i].status || !st_chance(c, 3))
			continue;
		r = st_req(c, ST_R_CDEREG + i, &s->mr, "NdkDeregisterMr", 0,
			   st_chance(c, 2) ? &s->mr : NULL);
		status = mr->Dispatch->NdkDeregisterMr(mr, st_req_done, r);
		st_issued(c, r, status);
	}

	objs[n++] = &c->cli;
	objs[n++] = &c->srv;
	objs[n++] = &c->lis;
	objs[n++] = &c->fmr;
	objs[n++] = &c->sep;
	objs[n++] = &c->srq;
	if (!c->side[0].qp.close_on_close && !c->side[1].qp.close_on_close)
		objs[n++] = &c->pd;
	for (i = 0; i < 2; i++) {
		objs[n++] = &c->side[i].qp;
		objs[n++] = &c->side[i].mr;
	}
	for (i = 0; i < c->ncq; i++)
		objs[n++] = &c->cq[i].obj;
	for (i = n - 1; i > 0; i--) {
		j = st_rand(c, i + 1);
		swap(objs[i], objs[j]);
	}
	for (i = 0; i < n; i++) {
		if (objs[i] == &c->cq[0].obj || objs[i] == &c->cq[1].obj) {
			struct st_cq *q = container_of(objs[i], struct st_cq,
						       obj);

			spin_lock_irqsave(&q->lock, flags);
			q->stop = true;
			spin_unlock_irqrestore(&q->lock, flags);
		}
		st_close(objs[i], false);
		if (st_chance(c, 8))
			usleep_range(100, 1000);
	}

	/* NdkReleaseLAM needs the adapter: before it is closed. */
	if (c->fmr.hdr)
		st_wait(c, st_done(c->fmr.closed), "close of the fast-register MR");
	/* Or let ndk_close_adapter() wait for the closes itself. */
	if (st_chance(c, 2))
		st_wait(c, !atomic_read(&c->pending), "close completions");

	INIT_WORK(&c->close_work, st_close_adapter_work);
	init_completion(&c->closed);
	queue_work(system_unbound_wq, &c->close_work);
	if (!wait_for_completion_timeout(&c->closed, timeout * HZ)) {
		st_problem(c, "stuck: ndk_close_adapter()");
		return false;
	}
	k = atomic_read(&c->in_cb);
	if (k)
		st_problem(c, "%d callbacks still running after ndk_close_adapter()",
			   k);
	k = atomic_read(&c->pending);
	if (k) {
		st_problem(c, "%d operations neither completed nor cancelled",
			   k);
		atomic64_add(k, &st.unaccounted);
	}
	return true;
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

	pr_info("done: seconds=%llu threads=%u cycles=%lld ops=%llu completed=%lld cancelled=%lld failed=%lld bad=%lld unaccounted=%llu problems=%lld verified=%lld callback_closes=%lld events=%lld ops_per_s=%llu result=%s\n",
		secs, st_nworkers, atomic64_read(&st.cycles), started,
		atomic64_read(&st.completed), atomic64_read(&st.cancelled),
		atomic64_read(&st.failed), atomic64_read(&st.bad_status),
		started - done, atomic64_read(&st.problems),
		atomic64_read(&st.verified), atomic64_read(&st.cb_closes),
		atomic64_read(&st.events), div64_u64(started, secs),
		pass ? "PASS" : "FAIL");
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

	if (!threads_per_cpu || !timeout)
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
