// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: a conformance pass over what an NDK consumer relies on,
 * on a device the user names, without KUnit (distribution kernels have
 * none). It is a consumer itself: public headers only.
 *
 *   insmod ndk_selftest.ko ifname=eth0              loopback on one device
 *   insmod ndk_selftest.ko ifname=eth0 listen=1     passive side of a pair
 *   insmod ndk_selftest.ko ifname=eth0 peer=A.B.C.D active side of a pair
 *
 * Each check prints a KTAP line; the last line is "ndk_selftest: N passed,
 * N failed, N skipped", and insmod fails if anything failed. The module
 * has done its work once loaded and may be removed at once.
 *
 * The active side drives sessions, one connection each, told apart by the
 * private data of its connect; the passive side accepts, publishes its
 * memory (a region, a fast-registered region and a window) in a message
 * and answers echo and invalidate requests until the connection ends. In
 * loopback both sides run in this module, the passive one in a thread.
 */
#define pr_fmt(fmt) fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <ndk/ndk.h>
#include "../compat.h"

static char *ifname;
module_param(ifname, charp, 0444);
MODULE_PARM_DESC(ifname, "network interface of the RDMA device to test");
static char *peer;
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "IPv4 address of a host running ndk_selftest listen=1");
static bool listen;
module_param(listen, bool, 0444);
MODULE_PARM_DESC(listen, "serve one peer= run from another host, then finish");
static ushort port = 18700;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "port of the passive side (18700)");
static uint wait_s = 300;
module_param(wait_s, uint, 0444);
MODULE_PARM_DESC(wait_s, "seconds the passive side waits for its peer (300)");

#define ST_TIMEOUT	(20 * HZ)
#define ST_MAGIC	0x4e444b53	/* "NDKS" */
#define ST_BUF		(4 * PAGE_SIZE)
#define ST_DATA		(8 * PAGE_SIZE)	/* the active side's data */
#define ST_READ_OFF	(4 * PAGE_SIZE + 500)	/* where reads land */
#define ST_DEPTH	16
/* Room for what a device that rounds ST_DEPTH up may take. */
#define ST_CQ_DEPTH	256
#define ST_RECVS	8
#define ST_SGE		4
#define ST_MSG		256	/* bytes of a receive buffer */
#define ST_STASH	64
#define ST_MW_OFF	100
#define ST_MW_LEN	1000

/* Session kinds, the first byte of the connect's private data. */
enum { ST_SESSION = 1, ST_SESSION_SRQ, ST_REJECT, ST_DONE };
/* Messages, the first word of a send. */
enum { ST_HELLO = 1, ST_ECHO, ST_INVALIDATE, ST_ACK };

/*
 * A connect's private data: the session's kind, and its name, which both
 * sides print so that a log says which check a line belongs to.
 */
struct st_req {
	__le32 magic;
	u8 kind;
	u8 pad[3];
	char name[40];
};

/* What the passive side publishes; a zero token: not offered. */
struct st_hello {
	__le32 type;
	__le32 magic;
	__le64 mr_va, fr_va, mw_va;
	__le32 mr_tok, fr_tok, mw_tok;
	__le32 mr_len, fr_len, mw_len;
};

/* Message words, wherever they sit in a buffer. */
static u32 st_get32(const void *p)
{
	__le32 v;

	memcpy(&v, p, sizeof(v));
	return le32_to_cpu(v);
}

static void st_put32(u32 x, void *p)
{
	__le32 v = cpu_to_le32(x);

	memcpy(p, &v, sizeof(v));
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static DEFINE_MUTEX(st_lock);
static unsigned int st_num, st_passed, st_failed, st_skipped;

/* Report check @name: @fail is NULL for a pass, else why it failed. */
static void st_report(const char *name, const char *fail)
{
	mutex_lock(&st_lock);
	st_num++;
	if (fail) {
		st_failed++;
		pr_info("not ok %u %s\n", st_num, name);
		pr_info("# %s: %s\n", name, fail);
	} else {
		st_passed++;
		pr_info("ok %u %s\n", st_num, name);
	}
	mutex_unlock(&st_lock);
}

static void st_skip(const char *name, const char *missing)
{
	mutex_lock(&st_lock);
	st_num++;
	st_skipped++;
	pr_info("ok %u %s # SKIP device has no %s\n", st_num, name, missing);
	mutex_unlock(&st_lock);
}

/*
 * A check accumulates its first failure; ST_CHECK records one unless the
 * condition holds and yields the condition.
 */
struct st_check {
	const char *name;
	char why[160];
};

static __printf(3, 4) bool st_expect(struct st_check *c, bool ok,
				     const char *fmt, ...)
{
	va_list ap;

	if (ok || c->why[0])
		return ok;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return false;
}

#define ST_CHECK(c, cond)	st_expect(c, cond, "line %d: %s", __LINE__, #cond)
#define ST_STATUS(c, st, want)						\
	({								\
		NTSTATUS __st = (st), __want = (want);			\
									\
		st_expect(c, __st == __want,				\
			  "line %d: status %#x, expected %#x", __LINE__, \
			  (u32)__st, (u32)__want);			\
	})

static void st_begin(struct st_check *c, const char *name)
{
	c->name = name;
	c->why[0] = 0;
}

static bool st_end(struct st_check *c)
{
	st_report(c->name, c->why[0] ? c->why : NULL);
	return !c->why[0];
}

/* ------------------------------------------------------------------ */
/* Asynchronous calls made synchronous                                 */
/* ------------------------------------------------------------------ */

struct st_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
	atomic_t calls;
};

static void st_wait_init(struct st_wait *w)
{
	init_completion(&w->done);
	w->status = STATUS_PENDING;
	w->obj = NULL;
	atomic_set(&w->calls, 0);
}

static void st_create_cb(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
	struct st_wait *w = ctx;

	w->status = status;
	w->obj = obj;
	atomic_inc(&w->calls);
	complete(&w->done);
}

static void st_request_cb(PVOID ctx, NTSTATUS status)
{
	struct st_wait *w = ctx;

	w->status = status;
	atomic_inc(&w->calls);
	complete(&w->done);
}

static void st_close_cb(PVOID ctx)
{
	struct st_wait *w = ctx;

	w->status = STATUS_SUCCESS;
	atomic_inc(&w->calls);
	complete(&w->done);
}

/* Set once a wait ran out: a callback may still come, so stay loaded. */
static bool st_abandoned;

/* The outcome of a call that returned @st: its own, or its callback's. */
static NTSTATUS st_wait(struct st_wait *w, NTSTATUS st)
{
	if (st != STATUS_PENDING)
		return st;
	if (!wait_for_completion_timeout(&w->done, ST_TIMEOUT)) {
		st_abandoned = true;
		return STATUS_IO_TIMEOUT;
	}
	return w->status;
}

/* The object of a create that returned @st with *@inline_obj. */
static NDK_OBJECT_HEADER *st_created(struct st_wait *w, NTSTATUS st,
				     void *inline_obj, NTSTATUS *out)
{
	bool pending = st == STATUS_PENDING;

	st = st_wait(w, st);
	if (out)
		*out = st;
	if (st)
		return NULL;
	return pending ? w->obj : inline_obj;
}

#define st_obj(hdr, type)						\
	({								\
		NDK_OBJECT_HEADER *__h = (hdr);				\
									\
		__h ? container_of(__h, type, Header) : NULL;		\
	})

static NTSTATUS st_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close)
{
	struct st_wait w;

	if (!obj)
		return STATUS_SUCCESS;
	st_wait_init(&w);
	return st_wait(&w, close(obj, st_close_cb, &w));
}

/* ------------------------------------------------------------------ */
/* The device                                                          */
/* ------------------------------------------------------------------ */

struct st {
	NDK_ADAPTER *a;
	NDK_ADAPTER_INFO info;
	int ifindex;
	struct sockaddr_in local, remote;
	NDK_PD *pd;
	spinlock_t lock;	/* held around calls made in atomic context */
	/* The passive side. */
	NDK_LISTENER *listener;
	struct task_struct *server;
	struct completion server_done;
	wait_queue_head_t incoming_wq;
	struct _NDK_CONNECTOR *incoming[4];
	unsigned int nincoming;
	bool server_stop;
	bool srq_notified_seen, disc_seen, inval_seen, pdata_seen;
};

static NDK_CQ *st_cq(struct st *s, ULONG depth,
		     NDK_FN_CQ_NOTIFICATION_CALLBACK cb, void *ctx)
{
	NDK_CQ *cq = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreateCq(s->a, depth, cb, ctx, NULL,
					 st_create_cb, &w, &cq);
	return st_obj(st_created(&w, st, cq, NULL), NDK_CQ);
}

static NDK_QP *st_qp(struct st *s, NDK_CQ *cq, NDK_SRQ *srq, void *ctx,
		     ULONG depth, ULONG inline_size)
{
	NDK_QP *qp = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	if (srq)
		st = s->pd->Dispatch->NdkCreateQpWithSrq(s->pd, cq, cq, srq, ctx,
							 depth, ST_SGE,
							 inline_size,
							 st_create_cb, &w, &qp);
	else
		st = s->pd->Dispatch->NdkCreateQp(s->pd, cq, cq, ctx, depth,
						  depth, ST_SGE, ST_SGE,
						  inline_size, st_create_cb,
						  &w, &qp);
	return st_obj(st_created(&w, st, qp, NULL), NDK_QP);
}

static NDK_CONNECTOR *st_connector(struct st *s)
{
	NDK_CONNECTOR *c = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreateConnector(s->a, st_create_cb, &w, &c);
	return st_obj(st_created(&w, st, c, NULL), NDK_CONNECTOR);
}

/* Page-aligned memory, registered on the PD. */
struct st_mem {
	u8 *buf;
	size_t len;
	struct ndk_mdl mdl;
	NDK_MR *mr;
	u32 ltok, rtok;
};

static NTSTATUS st_mem_new(struct st *s, struct st_mem *m, size_t len,
			   ULONG flags)
{
	NDK_MR *mr = NULL;
	struct st_wait w;
	NTSTATUS st;

	memset(m, 0, sizeof(*m));
	m->buf = (u8 *)__get_free_pages(GFP_KERNEL | __GFP_ZERO,
					get_order(len));
	if (!m->buf)
		return STATUS_INSUFFICIENT_RESOURCES;
	m->len = len;
	st_wait_init(&w);
	st = s->pd->Dispatch->NdkCreateMr(s->pd, FALSE, st_create_cb, &w, &mr);
	m->mr = st_obj(st_created(&w, st, mr, &st), NDK_MR);
	if (!m->mr)
		return st;
	ndk_mdl_init_kva(&m->mdl, m->buf, len);
	st_wait_init(&w);
	st = m->mr->Dispatch->NdkRegisterMr(m->mr, &m->mdl, len, flags,
					    st_request_cb, &w);
	st = st_wait(&w, st);
	if (st)
		return st;
	m->ltok = m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr);
	m->rtok = m->mr->Dispatch->NdkGetRemoteTokenFromMr(m->mr);
	return STATUS_SUCCESS;
}

static void st_mem_free(struct st_mem *m)
{
	if (m->mr)
		st_close(&m->mr->Header, m->mr->Dispatch->NdkCloseMr);
	if (m->buf)
		free_pages((unsigned long)m->buf, get_order(m->len));
	memset(m, 0, sizeof(*m));
}

static NDK_SGE st_sge(struct st_mem *m, size_t off, ULONG len)
{
	return (NDK_SGE){ .VirtualAddress = m->buf + off, .Length = len,
			  .MemoryRegionToken = m->ltok };
}

/* ------------------------------------------------------------------ */
/* Calls from atomic context: under a spinlock and in a timer softirq   */
/* ------------------------------------------------------------------ */

enum st_ctx { ST_PROCESS, ST_LOCKED, ST_TIMER, ST_NCTX };
static const char * const st_ctx_name[] = { "process", "spinlock", "timer" };

struct st_call {
	struct timer_list timer;
	struct completion ran;
	void (*fn)(struct st_call *c);
	struct st *s;
	bool softirq;
	/* In and out of fn. */
	NDK_OBJECT_HEADER *obj;
	NDK_FN_CLOSE_OBJECT close;
	struct st_wait *w;
	int kind;
	NTSTATUS st;
	void *out;
};

static void st_call_timer(struct timer_list *t)
{
	struct st_call *c = timer_container_of(c, t, timer);

	c->softirq = in_softirq();
	c->fn(c);
	complete(&c->ran);
}

/* Run @c->fn in context @ctx; for ST_TIMER, from a timer's expiry. */
static void st_run_in(struct st_call *c, enum st_ctx ctx)
{
	unsigned long flags;

	switch (ctx) {
	case ST_PROCESS:
		c->fn(c);
		break;
	case ST_LOCKED:
		spin_lock_irqsave(&c->s->lock, flags);
		c->fn(c);
		spin_unlock_irqrestore(&c->s->lock, flags);
		break;
	default:
		init_completion(&c->ran);
		timer_setup_on_stack(&c->timer, st_call_timer, 0);
		mod_timer(&c->timer, jiffies + 1);
		wait_for_completion(&c->ran);
		timer_delete_sync(&c->timer);
		timer_destroy_on_stack(&c->timer);
		break;
	}
}

/* The objects a consumer creates and closes, by kind. */
enum {
	OBJ_PD, OBJ_CQ, OBJ_QP, OBJ_SRQ, OBJ_MR, OBJ_FRMR, OBJ_MW,
	OBJ_CONNECTOR, OBJ_LISTENER, OBJ_ENDPOINT, OBJ_N
};

static const char * const st_obj_name[] = {
	"object_pd", "object_cq", "object_qp", "object_srq", "object_mr",
	"object_fast_register_mr", "object_mw", "object_connector",
	"object_listener", "object_shared_endpoint",
};

static void st_nop_cq(PVOID ctx, NTSTATUS status)
{
}

static void st_nop_event(PVOID ctx, NDK_CONNECTOR *c)
{
	c->Dispatch->NdkReject(c, NULL, 0);
}

/* The CQ objects of kind OBJ_QP are created on. */
static NDK_CQ *st_obj_cq;

static void st_create_fn(struct st_call *c)
{
	struct st *s = c->s;
	NDK_PD *pd = s->pd;
	struct sockaddr_in any = { .sin_family = AF_INET,
				   .sin_addr = s->local.sin_addr };

	switch (c->kind) {
	case OBJ_PD:
		c->st = s->a->Dispatch->NdkCreatePd(s->a, st_create_cb, c->w,
						    (NDK_PD **)&c->out);
		break;
	case OBJ_CQ:
		c->st = s->a->Dispatch->NdkCreateCq(s->a, 8, st_nop_cq, NULL,
						    NULL, st_create_cb, c->w,
						    (NDK_CQ **)&c->out);
		break;
	case OBJ_QP:
		c->st = pd->Dispatch->NdkCreateQp(pd, st_obj_cq, st_obj_cq,
						  NULL, 4, 4, 1, 1, 0,
						  st_create_cb, c->w,
						  (NDK_QP **)&c->out);
		break;
	case OBJ_SRQ:
		c->st = pd->Dispatch->NdkCreateSrq(pd, 4, 1, 0, st_nop_cq, NULL,
						   NULL, st_create_cb, c->w,
						   (NDK_SRQ **)&c->out);
		break;
	case OBJ_MR:
	case OBJ_FRMR:
		c->st = pd->Dispatch->NdkCreateMr(pd, c->kind == OBJ_FRMR,
						  st_create_cb, c->w,
						  (NDK_MR **)&c->out);
		break;
	case OBJ_MW:
		c->st = pd->Dispatch->NdkCreateMw(pd, st_create_cb, c->w,
						  (NDK_MW **)&c->out);
		break;
	case OBJ_CONNECTOR:
		c->st = s->a->Dispatch->NdkCreateConnector(s->a, st_create_cb,
							   c->w,
							   (NDK_CONNECTOR **)&c->out);
		break;
	case OBJ_LISTENER:
		c->st = s->a->Dispatch->NdkCreateListener(s->a, st_nop_event,
							  NULL, st_create_cb,
							  c->w,
							  (NDK_LISTENER **)&c->out);
		break;
	default:
		/* Port 0: an ephemeral port. */
		c->st = s->a->Dispatch->NdkCreateSharedEndpoint(s->a,
								(struct sockaddr *)&any,
								sizeof(any),
								st_create_cb,
								c->w,
								(NDK_SHARED_ENDPOINT **)&c->out);
		break;
	}
}

static NDK_FN_CLOSE_OBJECT st_closer(int kind, NDK_OBJECT_HEADER *h)
{
	switch (kind) {
	case OBJ_PD:
		return container_of(h, NDK_PD, Header)->Dispatch->NdkClosePd;
	case OBJ_CQ:
		return container_of(h, NDK_CQ, Header)->Dispatch->NdkCloseCq;
	case OBJ_QP:
		return container_of(h, NDK_QP, Header)->Dispatch->NdkCloseQp;
	case OBJ_SRQ:
		return container_of(h, NDK_SRQ, Header)->Dispatch->NdkCloseSrq;
	case OBJ_MR:
	case OBJ_FRMR:
		return container_of(h, NDK_MR, Header)->Dispatch->NdkCloseMr;
	case OBJ_MW:
		return container_of(h, NDK_MW, Header)->Dispatch->NdkCloseMw;
	case OBJ_CONNECTOR:
		return container_of(h, NDK_CONNECTOR,
				    Header)->Dispatch->NdkCloseConnector;
	case OBJ_LISTENER:
		return container_of(h, NDK_LISTENER,
				    Header)->Dispatch->NdkCloseListener;
	default:
		return container_of(h, NDK_SHARED_ENDPOINT,
				    Header)->Dispatch->NdkCloseSharedEndpoint;
	}
}

static void st_close_fn(struct st_call *c)
{
	c->st = c->close(c->obj, st_close_cb, c->w);
}

/*
 * Every kind of object, created and closed from process context, with a
 * spinlock held, and from a timer's softirq; each create and close either
 * completes inline or calls back exactly once.
 */
static void st_objects(struct st *s)
{
	struct st_call c = { .s = s };
	struct st_check chk;
	struct st_wait w;
	NDK_OBJECT_HEADER *h;
	NTSTATUS st;
	int kind, ctx;

	st_obj_cq = st_cq(s, 16, NULL, NULL);
	for (kind = 0; kind < OBJ_N; kind++) {
		if (kind == OBJ_SRQ && !s->info.MaxSrqDepth) {
			st_skip(st_obj_name[kind], "SRQ (MaxSrqDepth 0)");
			continue;
		}
		if (kind == OBJ_FRMR && !s->info.FRMRPageCount) {
			st_skip(st_obj_name[kind],
				"fast registration (FRMRPageCount 0)");
			continue;
		}
		if (kind == OBJ_MW && !s->info.MaxWindowSize) {
			st_skip(st_obj_name[kind],
				"memory windows (MaxWindowSize 0)");
			continue;
		}
		st_begin(&chk, st_obj_name[kind]);
		if (kind == OBJ_QP && !ST_CHECK(&chk, st_obj_cq)) {
			st_end(&chk);
			continue;
		}
		for (ctx = 0; ctx < ST_NCTX; ctx++) {
			st_wait_init(&w);
			c.w = &w;
			c.kind = kind;
			c.out = NULL;
			c.fn = st_create_fn;
			st_run_in(&c, ctx);
			if (ctx == ST_TIMER)
				ST_CHECK(&chk, c.softirq);
			if (c.st == STATUS_PENDING || !c.st)
				h = st_created(&w, c.st, c.out, &st);
			else
				h = NULL, st = c.st;
			if (!st_expect(&chk, h && !st,
				       "create from %s context: status %#x",
				       st_ctx_name[ctx], st))
				break;
			if (c.st != STATUS_PENDING)
				ST_CHECK(&chk, !atomic_read(&w.calls));
			st_wait_init(&w);
			c.obj = h;
			c.close = st_closer(kind, h);
			c.fn = st_close_fn;
			st_run_in(&c, ctx);
			st = st_wait(&w, c.st);
			st_expect(&chk, !st, "close from %s context: status %#x",
				  st_ctx_name[ctx], st);
			st_expect(&chk, atomic_read(&w.calls) ==
				  (c.st == STATUS_PENDING),
				  "close from %s context: %d callbacks",
				  st_ctx_name[ctx], atomic_read(&w.calls));
		}
		st_end(&chk);
	}
	if (st_obj_cq)
		st_close(&st_obj_cq->Header, st_obj_cq->Dispatch->NdkCloseCq);
	st_obj_cq = NULL;
}

/* ------------------------------------------------------------------ */
/* Local checks: adapter, memory, queues, listeners                    */
/* ------------------------------------------------------------------ */

static int st_open(struct st *s)
{
	NDK_VERSION v12 = { .Major = 1, .Minor = 2 };
	NDK_VERSION v2 = { .Major = 2, .Minor = 0 };
	struct ndk_adapter_desc *descs;
	NDK_ADAPTER_INFO info;
	struct net_device *ndev;
	struct st_check chk;
	NDK_ADAPTER *bad;
	bool found = false;
	ULONG size;
	int n, i;

	st_begin(&chk, "adapter_enumerate");
	ndev = dev_get_by_name(&init_net, ifname);
	if (!st_expect(&chk, ndev, "no interface %s", ifname)) {
		st_end(&chk);
		return -ENODEV;
	}
	s->ifindex = ndev->ifindex;
	s->local.sin_family = AF_INET;
	s->local.sin_addr.s_addr = inet_select_addr(ndev, 0,
						    RT_SCOPE_UNIVERSE);
	dev_put(ndev);
	st_expect(&chk, s->local.sin_addr.s_addr, "%s has no IPv4 address",
		  ifname);
	descs = kcalloc(16, sizeof(*descs), GFP_KERNEL);
	n = descs ? ndk_enum_adapters(descs, 16) : 0;
	for (i = 0; i < min(n, 16); i++)
		if (descs[i].ifindex == s->ifindex) {
			found = true;
			pr_info("# device %s port %u on %s\n",
				descs[i].ibdev_name, descs[i].port, ifname);
		}
	kfree(descs);
	st_expect(&chk, found, "no NDK adapter on %s: is an RDMA device up on it?",
		  ifname);
	if (!st_end(&chk))
		return -ENODEV;

	st_begin(&chk, "adapter_open");
	bad = NULL;
	ST_STATUS(&chk, ndk_open_adapter(s->ifindex, v2, &bad),
		  STATUS_NDIS_BAD_VERSION);
	ST_CHECK(&chk, !bad);
	ST_STATUS(&chk, ndk_open_adapter(s->ifindex, v12, &s->a),
		  STATUS_SUCCESS);
	if (!st_end(&chk) || !s->a)
		return -ENODEV;

	st_begin(&chk, "adapter_query");
	size = 4;
	ST_STATUS(&chk, s->a->Dispatch->NdkQueryAdapterInfo(s->a, &info, &size),
		  STATUS_BUFFER_TOO_SMALL);
	ST_CHECK(&chk, size == sizeof(info));
	size = sizeof(s->info);
	ST_STATUS(&chk, s->a->Dispatch->NdkQueryAdapterInfo(s->a, &s->info,
							    &size),
		  STATUS_SUCCESS);
	ST_CHECK(&chk, s->info.Version.Major == 1);
	ST_CHECK(&chk, s->info.MaxCqDepth >= ST_CQ_DEPTH);
	ST_CHECK(&chk, s->info.MaxInitiatorQueueDepth >= ST_DEPTH);
	ST_CHECK(&chk, s->info.MaxReceiveQueueDepth >= ST_DEPTH);
	ST_CHECK(&chk, s->info.MaxInitiatorRequestSge >= ST_SGE);
	ST_CHECK(&chk, s->info.MaxReceiveRequestSge >= ST_SGE);
	ST_CHECK(&chk, s->info.MaxRegistrationSize >= ST_DATA);
	ST_CHECK(&chk, s->info.MaxCallerData >= sizeof(struct st_req));
	ST_CHECK(&chk, s->info.MaxCalleeData >= sizeof(struct st_req));
	pr_info("# NDK %u.%u, %s, max transfer %u, inline %u, FRMR pages %u, SRQ depth %u\n",
		s->info.Version.Major, s->info.Version.Minor,
		s->info.RdmaTechnology == NdkiWarp ? "iWARP" : "IB/RoCE",
		s->info.MaxTransferLength, s->info.MaxInlineDataSize,
		s->info.FRMRPageCount, s->info.MaxSrqDepth);
	if (!st_end(&chk))
		return -EIO;
	return 0;
}

static NTSTATUS st_poll_one(NDK_CQ *cq, NDK_RESULT_EX *r)
{
	unsigned long end = jiffies + ST_TIMEOUT;

	while (time_before(jiffies, end)) {
		if (cq->Dispatch->NdkGetCqResultsEx(cq, r, 1))
			return STATUS_SUCCESS;
		usleep_range(100, 300);
	}
	return STATUS_IO_TIMEOUT;
}

/* A CQ notification: where it ran and how often. */
struct st_notify {
	struct completion done;
	atomic_t calls;
	bool dispatch;	/* ran in softirq or hardirq: NDKPI's DISPATCH_LEVEL */
	NTSTATUS status;
};

static void st_notify_cb(PVOID ctx, NTSTATUS status)
{
	struct st_notify *n = ctx;

	/* preemptible() says nothing on kernels without preempt counts. */
	n->dispatch = in_interrupt();
	n->status = status;
	atomic_inc(&n->calls);
	complete(&n->done);
}

/*
 * Receives on a QP that is not connected: accepted up to the queue's
 * depth and refused past it; a flush cancels them, and the armed CQ
 * notifies.
 */
static void st_receive_queue(struct st *s)
{
	struct st_notify n = {};
	struct st_check chk;
	struct st_mem m;
	NDK_RESULT_EX r;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_SGE sge;
	NTSTATUS st = STATUS_SUCCESS;
	int posted, got;

	init_completion(&n.done);
	st_begin(&chk, "receive_queue_depth");
	cq = st_cq(s, 64, st_notify_cb, &n);
	qp = cq ? st_qp(s, cq, NULL, s, 4, 0) : NULL;
	if (!ST_CHECK(&chk, qp) ||
	    !ST_STATUS(&chk, st_mem_new(s, &m, PAGE_SIZE,
					NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
		       STATUS_SUCCESS))
		goto out;
	sge = st_sge(&m, 0, 64);
	for (posted = 0; posted < 64; posted++) {
		st = qp->Dispatch->NdkReceive(qp, (void *)(uintptr_t)(posted + 1),
					      &sge, 1);
		if (st)
			break;
	}
	ST_STATUS(&chk, st, STATUS_INSUFFICIENT_RESOURCES);
	st_expect(&chk, posted >= 4 && posted < 64, "%d receives taken",
		  posted);
	st_end(&chk);

	st_begin(&chk, "flush_and_cq_notification");
	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	qp->Dispatch->NdkFlush(qp);
	ST_CHECK(&chk, wait_for_completion_timeout(&n.done, ST_TIMEOUT));
	ST_CHECK(&chk, n.dispatch);
	ST_STATUS(&chk, n.status, STATUS_SUCCESS);
	for (got = 0; got < posted; got++) {
		if (!ST_STATUS(&chk, st_poll_one(cq, &r), STATUS_SUCCESS))
			break;
		ST_STATUS(&chk, r.Status, STATUS_CANCELLED);
		ST_CHECK(&chk, r.Type == NdkOperationTypeReceive);
		ST_CHECK(&chk, r.RequestContext == (void *)(uintptr_t)(got + 1));
		ST_CHECK(&chk, r.QPContext == s);
	}
	ST_CHECK(&chk, !cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1));
	ST_CHECK(&chk, atomic_read(&n.calls) == 1);
	/* Sending needs a connection. */
	ST_CHECK(&chk, qp->Dispatch->NdkSend(qp, NULL, &sge, 1, 0) !=
		 STATUS_SUCCESS);
out:
	st_end(&chk);
	st_mem_free(&m);
	if (qp)
		st_close(&qp->Header, qp->Dispatch->NdkCloseQp);
	if (cq)
		st_close(&cq->Header, cq->Dispatch->NdkCloseCq);
}

static void st_srq_local(struct st *s)
{
	NDK_SRQ *srq = NULL;
	struct st_check chk;
	struct st_wait w;
	struct st_mem m;
	NDK_SGE sge;
	NTSTATUS st = STATUS_SUCCESS;
	int posted;

	if (!s->info.MaxSrqDepth) {
		st_skip("srq_depth", "SRQ (MaxSrqDepth 0)");
		return;
	}
	st_begin(&chk, "srq_depth");
	st_wait_init(&w);
	st = s->pd->Dispatch->NdkCreateSrq(s->pd, 4, 1, 0, NULL, NULL, NULL,
					   st_create_cb, &w, &srq);
	srq = st_obj(st_created(&w, st, srq, NULL), NDK_SRQ);
	if (!ST_CHECK(&chk, srq) ||
	    !ST_STATUS(&chk, st_mem_new(s, &m, PAGE_SIZE,
					NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
		       STATUS_SUCCESS))
		goto out;
	sge = st_sge(&m, 0, 64);
	for (posted = 0; posted < 64; posted++) {
		st = srq->Dispatch->NdkSrqReceive(srq, NULL, &sge, 1);
		if (st)
			break;
	}
	ST_STATUS(&chk, st, STATUS_INSUFFICIENT_RESOURCES);
	st_expect(&chk, posted >= 4 && posted < 64, "%d receives taken",
		  posted);
	st_wait_init(&w);
	st = srq->Dispatch->NdkModifySrq(srq, s->info.MaxSrqDepth + 1, 0,
					 st_request_cb, &w);
	ST_CHECK(&chk, st_wait(&w, st) != STATUS_SUCCESS);
out:
	st_end(&chk);
	st_mem_free(&m);
	if (srq)
		st_close(&srq->Header, srq->Dispatch->NdkCloseSrq);
}

/* Registration rules a consumer meets before any data moves. */
static void st_memory_local(struct st *s)
{
	NDK_LOGICAL_ADDRESS_MAPPING *lam = NULL;
	struct st_check chk;
	struct st_wait w;
	struct st_mem m;
	unsigned long flags;
	ULONG size = 0, fbo = 0;
	NTSTATUS st;
	u32 priv = 0;

	st_begin(&chk, "memory_register");
	ST_STATUS(&chk, st_mem_new(s, &m, ST_BUF,
				   NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
				   NDK_MR_FLAG_ALLOW_REMOTE_READ),
		  STATUS_SUCCESS);
	if (m.mr) {
		ST_CHECK(&chk, m.ltok && m.rtok);
		st_wait_init(&w);
		st = m.mr->Dispatch->NdkDeregisterMr(m.mr, st_request_cb, &w);
		ST_STATUS(&chk, st_wait(&w, st), STATUS_SUCCESS);
		/* Register again, called with a spinlock held. */
		st_wait_init(&w);
		spin_lock_irqsave(&s->lock, flags);
		st = m.mr->Dispatch->NdkRegisterMr(m.mr, &m.mdl, m.len,
						   NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
						   st_request_cb, &w);
		spin_unlock_irqrestore(&s->lock, flags);
		ST_STATUS(&chk, st_wait(&w, st), STATUS_SUCCESS);
		/* A length beyond the adapter's limit is refused. */
		st_wait_init(&w);
		st = m.mr->Dispatch->NdkDeregisterMr(m.mr, st_request_cb, &w);
		ST_STATUS(&chk, st_wait(&w, st), STATUS_SUCCESS);
		st_wait_init(&w);
		st = m.mr->Dispatch->NdkRegisterMr(m.mr, &m.mdl,
						   s->info.MaxRegistrationSize + 1,
						   0, st_request_cb, &w);
		ST_CHECK(&chk, st_wait(&w, st) != STATUS_SUCCESS);
	}
	st_end(&chk);

	st_begin(&chk, "logical_address_mapping");
	s->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(s->pd, &priv);
	ST_STATUS(&chk, s->a->Dispatch->NdkBuildLAM(s->a, &m.mdl, ST_BUF, NULL,
						    NULL, NULL, &size, &fbo),
		  STATUS_BUFFER_TOO_SMALL);
	lam = size ? kzalloc(size, GFP_KERNEL) : NULL;
	if (ST_CHECK(&chk, lam)) {
		ST_STATUS(&chk, s->a->Dispatch->NdkBuildLAM(s->a, &m.mdl,
							    ST_BUF, NULL, NULL,
							    lam, &size, &fbo),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, lam->AdapterPageCount == ST_BUF / PAGE_SIZE);
		ST_CHECK(&chk, fbo == 0);
		s->a->Dispatch->NdkReleaseLAM(s->a, lam);
		kfree(lam);
	}
	st_end(&chk);
	st_mem_free(&m);
}

/* Resizing a CQ, where the device can; past the adapter's limit fails. */
static void st_cq_resize(struct st *s)
{
	struct st_check chk;
	struct st_wait w;
	NDK_CQ *cq;
	NTSTATUS st;

	if (!(s->info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED)) {
		st_skip("cq_resize", "CQ resize (AdapterFlags)");
		return;
	}
	st_begin(&chk, "cq_resize");
	cq = st_cq(s, 16, NULL, NULL);
	if (ST_CHECK(&chk, cq)) {
		st_wait_init(&w);
		st = cq->Dispatch->NdkResizeCq(cq, 64, st_request_cb, &w);
		ST_STATUS(&chk, st_wait(&w, st), STATUS_SUCCESS);
		st_wait_init(&w);
		st = cq->Dispatch->NdkResizeCq(cq, s->info.MaxCqDepth + 1,
					       st_request_cb, &w);
		ST_CHECK(&chk, st_wait(&w, st) != STATUS_SUCCESS);
		st_close(&cq->Header, cq->Dispatch->NdkCloseCq);
	}
	st_end(&chk);
}

/* A QP beyond the adapter's limits is refused, inline or by callback. */
static void st_qp_limits(struct st *s)
{
	struct st_check chk;
	struct st_wait w;
	NDK_QP *qp = NULL;
	NDK_CQ *cq;
	NTSTATUS st;

	st_begin(&chk, "qp_limits_refused");
	cq = st_cq(s, 16, NULL, NULL);
	if (ST_CHECK(&chk, cq)) {
		st_wait_init(&w);
		st = s->pd->Dispatch->NdkCreateQp(s->pd, cq, cq, NULL,
						  s->info.MaxReceiveQueueDepth + 1,
						  4, 1, 1, 0, st_create_cb, &w,
						  &qp);
		qp = st_obj(st_created(&w, st, qp, &st), NDK_QP);
		ST_CHECK(&chk, !qp && st);
		if (qp)
			st_close(&qp->Header, qp->Dispatch->NdkCloseQp);
		qp = NULL;
		st_wait_init(&w);
		st = s->pd->Dispatch->NdkCreateQp(s->pd, cq, cq, NULL, 4, 4, 1,
						  s->info.MaxInitiatorRequestSge + 1,
						  0, st_create_cb, &w, &qp);
		qp = st_obj(st_created(&w, st, qp, &st), NDK_QP);
		ST_CHECK(&chk, !qp && st);
		if (qp)
			st_close(&qp->Header, qp->Dispatch->NdkCloseQp);
		st_close(&cq->Header, cq->Dispatch->NdkCloseCq);
	}
	st_end(&chk);
}

static void st_listen_cb(PVOID ctx, NDK_CONNECTOR *c);

static NTSTATUS st_listen_on(struct st *s, NDK_LISTENER **lp,
			     NDK_FN_CONNECT_EVENT_CALLBACK cb, u16 p)
{
	struct sockaddr_in a = s->local;
	NDK_LISTENER *l = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreateListener(s->a, cb, s, st_create_cb, &w,
					       &l);
	*lp = l = st_obj(st_created(&w, st, l, &st), NDK_LISTENER);
	if (!l)
		return st;
	a.sin_port = htons(p);
	st_wait_init(&w);
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&a, sizeof(a),
				    st_request_cb, &w);
	return st_wait(&w, st);
}

/* Listening: the address comes back, a second listen is refused. */
static void st_listeners(struct st *s)
{
	NDK_LISTENER *l1 = NULL, *l2 = NULL;
	NDK_SHARED_ENDPOINT *e1 = NULL, *e2 = NULL;
	struct sockaddr_in got = {}, a = s->local;
	struct st_check chk;
	struct st_wait w;
	ULONG len = sizeof(got);
	NTSTATUS st;

	st_begin(&chk, "listener_address");
	ST_STATUS(&chk, st_listen_on(s, &l1, st_nop_event, port + 1),
		  STATUS_SUCCESS);
	if (l1) {
		ST_STATUS(&chk, l1->Dispatch->NdkGetLocalAddress(l1,
								 (struct sockaddr *)&got,
								 &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, got.sin_port == htons(port + 1));
		ST_CHECK(&chk, got.sin_addr.s_addr == s->local.sin_addr.s_addr);
		ST_STATUS(&chk, st_listen_on(s, &l2, st_nop_event, port + 1),
			  STATUS_SHARING_VIOLATION);
	}
	if (l2)
		st_close(&l2->Header, l2->Dispatch->NdkCloseListener);
	if (l1)
		st_close(&l1->Header, l1->Dispatch->NdkCloseListener);
	st_end(&chk);

	st_begin(&chk, "shared_endpoint_address");
	a.sin_port = htons(port + 2);
	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreateSharedEndpoint(s->a, (struct sockaddr *)&a,
						     sizeof(a), st_create_cb,
						     &w, &e1);
	e1 = st_obj(st_created(&w, st, e1, &st), NDK_SHARED_ENDPOINT);
	ST_STATUS(&chk, st, STATUS_SUCCESS);
	if (e1) {
		len = sizeof(got);
		ST_STATUS(&chk, e1->Dispatch->NdkGetLocalAddress(e1,
								 (struct sockaddr *)&got,
								 &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, got.sin_port == htons(port + 2));
		st_wait_init(&w);
		st = s->a->Dispatch->NdkCreateSharedEndpoint(s->a,
							     (struct sockaddr *)&a,
							     sizeof(a),
							     st_create_cb, &w,
							     &e2);
		e2 = st_obj(st_created(&w, st, e2, &st), NDK_SHARED_ENDPOINT);
		ST_STATUS(&chk, st, STATUS_SHARING_VIOLATION);
	}
	if (e2)
		st_close(&e2->Header, e2->Dispatch->NdkCloseSharedEndpoint);
	if (e1)
		st_close(&e1->Header, e1->Dispatch->NdkCloseSharedEndpoint);
	st_end(&chk);
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/* Request contexts; receives carry ST_RECV_CTX + their slot. */
#define ST_RECV_CTX	0x1000
#define ST_CTX(n)	((void *)(uintptr_t)(n))
/* Where a receive's second SGE lands in the message memory. */
#define ST_SCATTER	64
#define ST_TAIL_OFF	(2 * PAGE_SIZE)
#define ST_SEND_SLOT	ST_RECVS

/* One side of a connection, with its CQ, QP and message memory. */
struct st_conn {
	struct st *s;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_SRQ *srq;
	NDK_CONNECTOR *c;
	struct st_mem msg;
	struct st_notify notify, srq_notify;
	atomic_t disconnected;
	NDK_RESULT_EX stash[ST_STASH];
	int nstash;
};

static void st_disconnect_cb(PVOID ctx)
{
	struct st_conn *cn = ctx;

	atomic_inc(&cn->disconnected);
}

/* Create the CQ (notifying), QP (on an SRQ if @srq_threshold) and memory. */
static NTSTATUS st_conn_init(struct st *s, struct st_conn *cn,
			     ULONG srq_threshold)
{
	ULONG inl = min_t(ULONG, s->info.MaxInlineDataSize, 128);
	struct st_wait w;
	NTSTATUS st;

	memset(cn, 0, sizeof(*cn));
	cn->s = s;
	init_completion(&cn->notify.done);
	init_completion(&cn->srq_notify.done);
	cn->cq = st_cq(s, ST_CQ_DEPTH, st_notify_cb, &cn->notify);
	if (!cn->cq)
		return STATUS_INSUFFICIENT_RESOURCES;
	if (srq_threshold) {
		st_wait_init(&w);
		st = s->pd->Dispatch->NdkCreateSrq(s->pd, ST_DEPTH, ST_SGE,
						   srq_threshold, st_notify_cb,
						   &cn->srq_notify, NULL,
						   st_create_cb, &w, &cn->srq);
		cn->srq = st_obj(st_created(&w, st, cn->srq, &st), NDK_SRQ);
		if (!cn->srq)
			return st;
	}
	cn->qp = st_qp(s, cn->cq, cn->srq, cn, ST_DEPTH, inl);
	cn->c = st_connector(s);
	if (!cn->qp || !cn->c)
		return STATUS_INSUFFICIENT_RESOURCES;
	return st_mem_new(s, &cn->msg, ST_BUF, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
}

static void st_conn_free(struct st_conn *cn)
{
	if (cn->c)
		st_close(&cn->c->Header, cn->c->Dispatch->NdkCloseConnector);
	if (cn->qp)
		st_close(&cn->qp->Header, cn->qp->Dispatch->NdkCloseQp);
	if (cn->srq)
		st_close(&cn->srq->Header, cn->srq->Dispatch->NdkCloseSrq);
	st_mem_free(&cn->msg);
	if (cn->cq)
		st_close(&cn->cq->Header, cn->cq->Dispatch->NdkCloseCq);
	cn->c = NULL;
	cn->qp = NULL;
	cn->srq = NULL;
	cn->cq = NULL;
}

/* Post receive @slot: its first bytes and the rest in another page. */
static NTSTATUS st_post_recv(struct st_conn *cn, int slot)
{
	NDK_SGE sge[2] = {
		st_sge(&cn->msg, slot * ST_MSG, ST_SCATTER),
		st_sge(&cn->msg, ST_TAIL_OFF + slot * ST_MSG,
		       ST_MSG - ST_SCATTER),
	};

	if (cn->srq)
		return cn->srq->Dispatch->NdkSrqReceive(cn->srq,
							ST_CTX(ST_RECV_CTX + slot),
							sge, 2);
	return cn->qp->Dispatch->NdkReceive(cn->qp, ST_CTX(ST_RECV_CTX + slot),
					    sge, 2);
}

/* The message of receive @slot, @len bytes of it, gathered into @dst. */
static void st_recv_copy(struct st_conn *cn, int slot, void *dst, size_t len)
{
	size_t head = min_t(size_t, len, ST_SCATTER);

	memcpy(dst, cn->msg.buf + slot * ST_MSG, head);
	if (len > head)
		memcpy(dst + head, cn->msg.buf + ST_TAIL_OFF + slot * ST_MSG,
		       min_t(size_t, len - head, ST_MSG - ST_SCATTER));
}

static bool st_match(NDK_RESULT_EX *r, void *ctx)
{
	if (ctx)
		return r->RequestContext == ctx;
	return (uintptr_t)r->RequestContext >= ST_RECV_CTX &&
	       (uintptr_t)r->RequestContext < ST_RECV_CTX + ST_RECVS;
}

/*
 * The result of request @ctx (NULL: of any receive), waiting up to
 * @timeout; results of other requests are kept for later.
 */
static NTSTATUS st_result(struct st_conn *cn, void *ctx, NDK_RESULT_EX *out,
			  unsigned long timeout)
{
	unsigned long end = jiffies + timeout;
	NDK_RESULT_EX r;
	int i;

	for (;;) {
		for (i = 0; i < cn->nstash; i++) {
			if (!st_match(&cn->stash[i], ctx))
				continue;
			*out = cn->stash[i];
			cn->stash[i] = cn->stash[--cn->nstash];
			return STATUS_SUCCESS;
		}
		if (cn->cq->Dispatch->NdkGetCqResultsEx(cn->cq, &r, 1)) {
			if (st_match(&r, ctx)) {
				*out = r;
				return STATUS_SUCCESS;
			}
			if (cn->nstash < ST_STASH)
				cn->stash[cn->nstash++] = r;
			continue;
		}
		if (time_after(jiffies, end))
			return STATUS_IO_TIMEOUT;
		usleep_range(100, 300);
	}
}

/* The next result of any request, kept ones first. */
static NTSTATUS st_next(struct st_conn *cn, NDK_RESULT_EX *out)
{
	if (cn->nstash) {
		*out = cn->stash[0];
		cn->stash[0] = cn->stash[--cn->nstash];
		return STATUS_SUCCESS;
	}
	return st_poll_one(cn->cq, out);
}

/* Send @len bytes of the send slot, split over two SGEs. */
static NTSTATUS st_send(struct st_conn *cn, size_t len, ULONG flags)
{
	size_t head = min_t(size_t, len, 16);
	NDK_SGE sge[2] = {
		st_sge(&cn->msg, ST_SEND_SLOT * ST_MSG, head),
		st_sge(&cn->msg, ST_SEND_SLOT * ST_MSG + head, len - head),
	};
	NDK_RESULT_EX r;
	NTSTATUS st;

	st = cn->qp->Dispatch->NdkSend(cn->qp, ST_CTX(1), sge,
				       len > head ? 2 : 1, flags);
	if (st)
		return st;
	st = st_result(cn, ST_CTX(1), &r, ST_TIMEOUT);
	return st ? st : r.Status;
}

static u8 *st_send_buf(struct st_conn *cn)
{
	return cn->msg.buf + ST_SEND_SLOT * ST_MSG;
}

/* One RDMA read or write of @sges, waited for; the completion's status. */
static NTSTATUS st_rdma(struct st_conn *cn, bool write, NDK_SGE *sges,
			ULONG n, u64 raddr, u32 token)
{
	NDK_QP *qp = cn->qp;
	NDK_RESULT_EX r;
	NTSTATUS st;

	if (write)
		st = qp->Dispatch->NdkWrite(qp, ST_CTX(2), sges, n, raddr,
					    token, 0);
	else
		st = qp->Dispatch->NdkRead(qp, ST_CTX(2), sges, n, raddr,
					   token, 0);
	if (st)
		return st;
	st = st_result(cn, ST_CTX(2), &r, ST_TIMEOUT);
	if (!st && r.Type != (write ? NdkOperationTypeWrite :
			      NdkOperationTypeRead))
		return STATUS_INTERNAL_ERROR;
	return st ? st : r.Status;
}

/*
 * The peer's private data, up to @outlen bytes of it into @out; the
 * device may pad it (IB: to the CM message's size), so ask for all.
 */
static NTSTATUS st_pdata(NDK_CONNECTOR *c, void *out, ULONG outlen,
			 ULONG *got)
{
	u8 buf[256];
	ULONG len = sizeof(buf);
	NTSTATUS st;

	memset(out, 0, outlen);
	st = c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &len);
	*got = len;
	if (!st)
		memcpy(out, buf, min(len, outlen));
	return st;
}

/* ------------------------------------------------------------------ */
/* The passive side                                                    */
/* ------------------------------------------------------------------ */

static void st_listen_cb(PVOID ctx, NDK_CONNECTOR *c)
{
	struct st *s = ctx;
	unsigned long flags;
	bool queued = false;

	spin_lock_irqsave(&s->lock, flags);
	if (s->nincoming < ARRAY_SIZE(s->incoming)) {
		s->incoming[s->nincoming++] = c;
		queued = true;
	}
	spin_unlock_irqrestore(&s->lock, flags);
	/* Outside the lock: no lock across a call into ndk. */
	if (!queued)
		c->Dispatch->NdkReject(c, NULL, 0);
	wake_up(&s->incoming_wq);
}

static NDK_CONNECTOR *st_take_incoming(struct st *s)
{
	NDK_CONNECTOR *c = NULL;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	if (s->nincoming) {
		c = s->incoming[0];
		memmove(&s->incoming[0], &s->incoming[1],
			--s->nincoming * sizeof(c));
	}
	spin_unlock_irqrestore(&s->lock, flags);
	return c;
}

/* The passive side's memory: a region, a fast-registered page, a window. */
struct st_srv_mem {
	struct st_mem region;
	u8 *fr_buf;
	NDK_MR *fr;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	NDK_MW *mw;
};

static void st_srv_mem_free(struct st *s, struct st_srv_mem *m)
{
	if (m->mw)
		st_close(&m->mw->Header, m->mw->Dispatch->NdkCloseMw);
	if (m->fr)
		st_close(&m->fr->Header, m->fr->Dispatch->NdkCloseMr);
	if (m->lam) {
		s->a->Dispatch->NdkReleaseLAM(s->a, m->lam);
		kfree(m->lam);
	}
	if (m->fr_buf)
		free_page((unsigned long)m->fr_buf);
	st_mem_free(&m->region);
}

/* The status of request @ctx posted with result @st: inline or polled. */
static NTSTATUS st_srv_post_wait(struct st_conn *cn, NTSTATUS st, void *ctx)
{
	NDK_RESULT_EX r;

	if (st)
		return st;
	st = st_result(cn, ctx, &r, ST_TIMEOUT);
	return st ? st : r.Status;
}

/* Fast-register a page of its own on the QP; its token, 0 if none. */
static u32 st_srv_fast_register(struct st_conn *cn, struct st_srv_mem *m)
{
	ULONG flags = NDK_OP_FLAG_ALLOW_REMOTE_READ |
		      NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	const NDK_ADAPTER_DISPATCH *a = cn->s->a->Dispatch;
	NDK_PD *pd = cn->s->pd;
	struct ndk_mdl mdl;
	ULONG size = 0, fbo = 0;
	NDK_MR *fr = NULL;
	struct st_wait w;
	NTSTATUS st;

	m->fr_buf = (u8 *)get_zeroed_page(GFP_KERNEL);
	if (!m->fr_buf)
		return 0;
	ndk_mdl_init_kva(&mdl, m->fr_buf, PAGE_SIZE);
	if (a->NdkBuildLAM(cn->s->a, &mdl, PAGE_SIZE, NULL, NULL, NULL, &size,
			   &fbo) != STATUS_BUFFER_TOO_SMALL)
		return 0;
	m->lam = kzalloc(size, GFP_KERNEL);
	if (!m->lam)
		return 0;
	if (a->NdkBuildLAM(cn->s->a, &mdl, PAGE_SIZE, NULL, NULL, m->lam,
			   &size, &fbo)) {
		kfree(m->lam);
		m->lam = NULL;
		return 0;
	}
	st_wait_init(&w);
	st = pd->Dispatch->NdkCreateMr(pd, TRUE, st_create_cb, &w, &fr);
	m->fr = st_obj(st_created(&w, st, fr, NULL), NDK_MR);
	if (!m->fr)
		return 0;
	st_wait_init(&w);
	st = m->fr->Dispatch->NdkInitializeFastRegisterMr(m->fr, 1, TRUE,
							  st_request_cb, &w);
	st = st_wait(&w, st);
	if (!st)
		st = cn->qp->Dispatch->NdkFastRegister(cn->qp, ST_CTX(3), m->fr,
						       m->lam->AdapterPageCount,
						       m->lam->AdapterPageArray,
						       fbo, PAGE_SIZE,
						       m->fr_buf, flags);
	st = st_srv_post_wait(cn, st, ST_CTX(3));
	if (st) {
		pr_info("# fast registration failed: %#x\n", st);
		return 0;
	}
	return m->fr->Dispatch->NdkGetRemoteTokenFromMr(m->fr);
}

/* Bind a window over part of the region on the QP; its token, 0 if none. */
static u32 st_srv_bind(struct st_conn *cn, struct st_srv_mem *m)
{
	ULONG flags = NDK_OP_FLAG_ALLOW_REMOTE_READ |
		      NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	NDK_PD *pd = cn->s->pd;
	NDK_MW *mw = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	st = pd->Dispatch->NdkCreateMw(pd, st_create_cb, &w, &mw);
	m->mw = st_obj(st_created(&w, st, mw, NULL), NDK_MW);
	if (!m->mw)
		return 0;
	st = cn->qp->Dispatch->NdkBind(cn->qp, ST_CTX(4), m->region.mr, m->mw,
				       m->region.buf + ST_MW_OFF, ST_MW_LEN,
				       flags);
	st = st_srv_post_wait(cn, st, ST_CTX(4));
	if (st) {
		pr_info("# memory window bind failed: %#x\n", st);
		return 0;
	}
	return m->mw->Dispatch->NdkGetRemoteTokenFromMw(m->mw);
}

/* Make the memory the hello publishes; what is missing stays zero. */
static void st_srv_publish(struct st_conn *cn, struct st_srv_mem *m,
			   struct st_hello *h)
{
	struct st *s = cn->s;
	u32 tok;

	memset(h, 0, sizeof(*h));
	h->type = cpu_to_le32(ST_HELLO);
	h->magic = cpu_to_le32(ST_MAGIC);
	if (st_mem_new(s, &m->region, 2 * PAGE_SIZE,
		       NDK_MR_FLAG_ALLOW_REMOTE_READ |
		       NDK_MR_FLAG_ALLOW_REMOTE_WRITE))
		return;
	h->mr_va = cpu_to_le64((uintptr_t)m->region.buf);
	h->mr_len = cpu_to_le32(m->region.len);
	h->mr_tok = cpu_to_le32(m->region.rtok);
	tok = s->info.FRMRPageCount ? st_srv_fast_register(cn, m) : 0;
	if (tok) {
		h->fr_va = cpu_to_le64((uintptr_t)m->fr_buf);
		h->fr_len = cpu_to_le32(PAGE_SIZE);
		h->fr_tok = cpu_to_le32(tok);
	}
	tok = s->info.MaxWindowSize ? st_srv_bind(cn, m) : 0;
	if (tok) {
		h->mw_va = cpu_to_le64((uintptr_t)m->region.buf + ST_MW_OFF);
		h->mw_len = cpu_to_le32(ST_MW_LEN);
		h->mw_tok = cpu_to_le32(tok);
	}
}

/* Answer the peer's messages until the connection ends. */
static void st_srv_loop(struct st_conn *cn, struct st_srv_mem *m)
{
	struct st *s = cn->s;
	NDK_RESULT_EX r;
	u8 *out = st_send_buf(cn);
	u8 in[ST_MSG];
	NTSTATUS st;
	int slot;
	u32 type;

	for (;;) {
		reinit_completion(&cn->notify.done);
		cn->cq->Dispatch->NdkArmCq(cn->cq, NDK_CQ_NOTIFY_ANY);
		if (st_result(cn, NULL, &r, 0)) {
			if (atomic_read(&cn->disconnected))
				return;
			/* Woken by the notification, or a second's poll. */
			wait_for_completion_timeout(&cn->notify.done, HZ);
			continue;
		}
		if (r.Status)
			return;
		slot = (uintptr_t)r.RequestContext - ST_RECV_CTX;
		st_recv_copy(cn, slot, in, min_t(ULONG, r.BytesTransferred,
						 ST_MSG));
		if (st_post_recv(cn, slot))
			return;
		type = st_get32(in);
		if (type == ST_ECHO) {
			memcpy(out, in, r.BytesTransferred);
			st = st_send(cn, r.BytesTransferred, 0);
		} else if (type == ST_INVALIDATE && m->fr) {
			st = cn->qp->Dispatch->NdkInvalidate(cn->qp, ST_CTX(5),
							     &m->fr->Header, 0);
			st = st_srv_post_wait(cn, st, ST_CTX(5));
			if (!s->inval_seen) {
				s->inval_seen = true;
				st_report("server_invalidate",
					  st ? "NdkInvalidate failed" : NULL);
			}
			st_put32(ST_ACK, out);
			st_put32(st, out + 4);
			st = st_send(cn, 8, 0);
		} else {
			st = STATUS_INVALID_PARAMETER;
		}
		if (st)
			return;
	}
}

/* One connection of the peer's run; false once the run is over. */
static bool st_serve(struct st *s, NDK_CONNECTOR *c)
{
	char refused[] = "st-refused", bye[] = "st-bye";
	struct st_srv_mem m = {};
	struct st_hello *h;
	struct st_conn *cn;
	struct st_req req = {};
	struct st_wait w;
	ULONG len;
	NTSTATUS st;
	int i;

	st = st_pdata(c, &req, sizeof(req), &len);
	if (st || len < sizeof(req) || le32_to_cpu(req.magic) != ST_MAGIC ||
	    req.kind == ST_REJECT || req.kind == ST_DONE) {
		c->Dispatch->NdkReject(c, req.kind == ST_DONE ? bye : refused,
				       req.kind == ST_DONE ? sizeof(bye) :
				       sizeof(refused));
		st_close(&c->Header, c->Dispatch->NdkCloseConnector);
		return req.kind != ST_DONE;
	}
	req.name[sizeof(req.name) - 1] = 0;
	pr_info("# session %s\n", req.name);
	if (!s->pdata_seen) {
		s->pdata_seen = true;
		st_report("server_accept_private_data", NULL);
	}
	cn = kzalloc(sizeof(*cn), GFP_KERNEL);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!cn || !h)
		goto reject;
	st = st_conn_init(s, cn, req.kind == ST_SESSION_SRQ &&
			  s->info.MaxSrqDepth ? ST_RECVS : 0);
	/* The connector came from the listener, not from st_conn_init(). */
	if (cn->c)
		st_close(&cn->c->Header, cn->c->Dispatch->NdkCloseConnector);
	cn->c = NULL;
	for (i = 0; !st && i < ST_RECVS; i++)
		st = st_post_recv(cn, i);
	if (st)
		goto reject;
	cn->c = c;
	req.kind |= 0x80;
	st_wait_init(&w);
	st = c->Dispatch->NdkAccept(c, cn->qp, 1, 1, &req, sizeof(req),
				    st_disconnect_cb, cn, st_request_cb, &w);
	if (st_wait(&w, st)) {
		pr_info("# server: accept failed: %#x\n", w.status);
		goto out;
	}
	st_srv_publish(cn, &m, h);
	memcpy(st_send_buf(cn), h, sizeof(*h));
	if (!st_send(cn, sizeof(*h), 0))
		st_srv_loop(cn, &m);
	if (cn->srq && !s->srq_notified_seen) {
		s->srq_notified_seen = true;
		wait_for_completion_timeout(&cn->srq_notify.done, 2 * HZ);
		st_report("server_srq_notification",
			  atomic_read(&cn->srq_notify.calls) != 1 ?
			  "no single notification below the threshold" :
			  cn->srq_notify.status ? "notification failed" : NULL);
	}
	/* The first session ends with the peer's NdkDisconnect. */
	if (!s->disc_seen) {
		s->disc_seen = true;
		for (i = 0; i < 50 && !atomic_read(&cn->disconnected); i++)
			msleep(100);
		st_report("server_disconnect_event",
			  atomic_read(&cn->disconnected) != 1 ?
			  "no single disconnect event" : NULL);
	}
	st_wait_init(&w);
	st_wait(&w, c->Dispatch->NdkDisconnect(c, st_request_cb, &w));
	goto out;
reject:
	c->Dispatch->NdkReject(c, refused, sizeof(refused));
	st_close(&c->Header, c->Dispatch->NdkCloseConnector);
out:
	if (cn) {
		st_conn_free(cn);
		st_srv_mem_free(s, &m);
		kfree(cn);
	}
	kfree(h);
	pr_info("# session end %s\n", req.name);
	return true;
}

static int st_server_fn(void *arg)
{
	struct st *s = arg;
	unsigned long end = jiffies + wait_s * HZ;
	NDK_CONNECTOR *c;

	while (!READ_ONCE(s->server_stop) && time_before(jiffies, end)) {
		wait_event_timeout(s->incoming_wq, READ_ONCE(s->nincoming) ||
				   READ_ONCE(s->server_stop), HZ);
		c = st_take_incoming(s);
		if (!c)
			continue;
		if (!st_serve(s, c))
			break;
		end = jiffies + wait_s * HZ;
	}
	s->server_stop = true;
	/* Connections that came after the last one are refused. */
	while ((c = st_take_incoming(s))) {
		c->Dispatch->NdkReject(c, NULL, 0);
		st_close(&c->Header, c->Dispatch->NdkCloseConnector);
	}
	complete(&s->server_done);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The active side                                                     */
/* ------------------------------------------------------------------ */

/* A session: a connection to the passive side and what it published. */
struct st_sess {
	struct st_conn cn;
	struct st_mem data;
	struct st_hello hello;
	char why[96];
};

/* Connect for a session of @kind; the connect's outcome. */
static NTSTATUS st_connect(struct st *s, struct st_sess *ss, u8 kind,
			   const char *name)
{
	struct st_conn *cn = &ss->cn;
	struct st_req req = { .magic = cpu_to_le32(ST_MAGIC), .kind = kind };
	struct st_req rep = {};
	struct st_wait w;
	NDK_RESULT_EX r;
	ULONG len;
	NTSTATUS st;
	int i;

	ss->why[0] = 0;
	strscpy(req.name, name, sizeof(req.name));
	pr_info("# session %s\n", name);
	st = st_conn_init(s, cn, 0);
	if (!st)
		st = st_mem_new(s, &ss->data, ST_DATA,
				NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	for (i = 0; !st && i < ST_RECVS; i++)
		st = st_post_recv(cn, i);
	if (st) {
		snprintf(ss->why, sizeof(ss->why), "setup: %#x", st);
		return st;
	}
	st_wait_init(&w);
	st = cn->c->Dispatch->NdkConnect(cn->c, cn->qp, (struct sockaddr *)&s->local,
					 sizeof(s->local),
					 (struct sockaddr *)&s->remote,
					 sizeof(s->remote), 1, 1, &req,
					 sizeof(req), st_request_cb, &w);
	st = st_wait(&w, st);
	if (st)
		return st;
	st = st_pdata(cn->c, &rep, sizeof(rep), &len);
	if (st || len < sizeof(rep) || le32_to_cpu(rep.magic) != ST_MAGIC ||
	    rep.kind != (kind | 0x80)) {
		snprintf(ss->why, sizeof(ss->why),
			 "accept's private data: status %#x, %u bytes", st,
			 len);
		return STATUS_DATA_ERROR;
	}
	st_wait_init(&w);
	st = cn->c->Dispatch->NdkCompleteConnect(cn->c, st_disconnect_cb, cn,
						 st_request_cb, &w);
	st = st_wait(&w, st);
	if (st) {
		snprintf(ss->why, sizeof(ss->why), "complete connect: %#x", st);
		return st;
	}
	st = st_result(cn, NULL, &r, ST_TIMEOUT);
	if (st || r.Status || r.BytesTransferred < sizeof(ss->hello)) {
		snprintf(ss->why, sizeof(ss->why), "no hello: %#x/%#x", st,
			 r.Status);
		return st ? st : STATUS_DATA_ERROR;
	}
	i = (uintptr_t)r.RequestContext - ST_RECV_CTX;
	st_recv_copy(cn, i, &ss->hello, sizeof(ss->hello));
	if (le32_to_cpu(ss->hello.magic) != ST_MAGIC ||
	    !ss->hello.mr_tok) {
		snprintf(ss->why, sizeof(ss->why), "bad hello");
		return STATUS_DATA_ERROR;
	}
	return st_post_recv(cn, i);
}

/* Disconnect (ignoring how that goes) and close everything. */
static void st_sess_end(struct st_sess *ss)
{
	struct st_wait w;
	NTSTATUS st;

	if (ss->cn.c) {
		st_wait_init(&w);
		st = ss->cn.c->Dispatch->NdkDisconnect(ss->cn.c, st_request_cb,
						       &w);
		st_wait(&w, st);
	}
	st_conn_free(&ss->cn);
	st_mem_free(&ss->data);
}

static void st_fill(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(i * 13 + seed);
}

/* Echo @len bytes through the peer, sent with @flags; 0 if it matched. */
static NTSTATUS st_echo(struct st_sess *ss, size_t len, ULONG flags,
			u8 seed)
{
	struct st_conn *cn = &ss->cn;
	u8 *out = st_send_buf(cn), *back = ss->data.buf + 3 * PAGE_SIZE;
	NDK_RESULT_EX r;
	NTSTATUS st;

	st_fill(out, len, seed);
	st_put32(ST_ECHO, out);
	st = st_send(cn, len, flags);
	if (st)
		return st;
	st = st_result(cn, NULL, &r, ST_TIMEOUT);
	if (st || r.Status)
		return st ? st : r.Status;
	if (r.BytesTransferred != len)
		return STATUS_DATA_ERROR;
	st_recv_copy(cn, (uintptr_t)r.RequestContext - ST_RECV_CTX, back, len);
	st = memcmp(back, out, len) ? STATUS_DATA_ERROR : STATUS_SUCCESS;
	return st ? st : st_post_recv(cn, (uintptr_t)r.RequestContext -
				      ST_RECV_CTX);
}

/* Write @len bytes to @raddr, read them back elsewhere, compare. */
static NTSTATUS st_write_read(struct st_sess *ss, u64 raddr, u32 tok,
			      u32 len, u8 seed)
{
	struct st_mem *d = &ss->data;
	NDK_SGE w[3], r;
	u32 third = len / 3;
	NTSTATUS st;

	/* The write gathers three pieces; the read lands in one. */
	w[0] = st_sge(d, 0, third);
	w[1] = st_sge(d, PAGE_SIZE, third);
	w[2] = st_sge(d, 2 * PAGE_SIZE - 100, len - 2 * third);
	st_fill(d->buf, third, seed);
	st_fill(d->buf + PAGE_SIZE, third, seed + 1);
	st_fill(d->buf + 2 * PAGE_SIZE - 100, len - 2 * third, seed + 2);
	st = st_rdma(&ss->cn, true, w, 3, raddr, tok);
	if (st)
		return st;
	r = st_sge(d, ST_READ_OFF, len);
	memset(r.VirtualAddress, 0, len);
	st = st_rdma(&ss->cn, false, &r, 1, raddr, tok);
	if (st)
		return st;
	if (memcmp(d->buf + ST_READ_OFF, d->buf, third) ||
	    memcmp(d->buf + ST_READ_OFF + third, d->buf + PAGE_SIZE, third) ||
	    memcmp(d->buf + ST_READ_OFF + 2 * third,
		   d->buf + 2 * PAGE_SIZE - 100, len - 2 * third))
		return STATUS_DATA_ERROR;
	return STATUS_SUCCESS;
}

/* Writes posted with a spinlock held until the queue refuses one. */
static void st_initiator_depth(struct st *s, struct st_sess *ss)
{
	struct st_conn *cn = &ss->cn;
	NDK_SGE sge = st_sge(&ss->data, 0, 64);
	u64 raddr = le64_to_cpu(ss->hello.mr_va);
	u32 tok = le32_to_cpu(ss->hello.mr_tok);
	struct st_check chk;
	unsigned long flags;
	NDK_RESULT_EX r;
	NTSTATUS st = STATUS_SUCCESS;
	int k, got;

	st_begin(&chk, "initiator_queue_depth");
	spin_lock_irqsave(&s->lock, flags);
	for (k = 0; k < ST_CQ_DEPTH / 2; k++) {
		st = cn->qp->Dispatch->NdkWrite(cn->qp, ST_CTX(0x100 + k), &sge,
						1, raddr, tok, 0);
		if (st)
			break;
	}
	spin_unlock_irqrestore(&s->lock, flags);
	ST_STATUS(&chk, st, STATUS_INSUFFICIENT_RESOURCES);
	st_expect(&chk, k >= ST_DEPTH && k < ST_CQ_DEPTH / 2, "%d writes taken",
		  k);
	for (got = 0; got < k; got++) {
		if (!ST_STATUS(&chk, st_result(cn, ST_CTX(0x100 + got), &r,
					       ST_TIMEOUT), STATUS_SUCCESS))
			break;
		ST_STATUS(&chk, r.Status, STATUS_SUCCESS);
	}
	st_end(&chk);
}

/* The session that must work: data both ways in every form. */
static void st_session_main(struct st *s)
{
	struct st_sess *ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	struct st_conn *cn;
	struct st_check chk;
	struct st_notify *n;
	NDK_RESULT_EX r;
	NDK_SGE sge;
	NTSTATUS st;

	if (!ss)
		return;
	cn = &ss->cn;
	st_begin(&chk, "connect_accept_private_data");
	st = st_connect(s, ss, ST_SESSION, chk.name);
	st_expect(&chk, !st, "status %#x %s", st, ss->why);
	if (!st_end(&chk))
		goto out;

	st_begin(&chk, "connector_addresses");
	{
		struct sockaddr_in a = {};
		ULONG len = sizeof(a), ird = 0, ord = 0;

		ST_STATUS(&chk, cn->c->Dispatch->NdkGetLocalAddress(cn->c,
								    (struct sockaddr *)&a,
								    &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, a.sin_addr.s_addr == s->local.sin_addr.s_addr);
		len = sizeof(a);
		ST_STATUS(&chk, cn->c->Dispatch->NdkGetPeerAddress(cn->c,
								   (struct sockaddr *)&a,
								   &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, a.sin_addr.s_addr == s->remote.sin_addr.s_addr);
		ST_CHECK(&chk, a.sin_port == s->remote.sin_port);
		len = 0;
		ST_STATUS(&chk, cn->c->Dispatch->NdkGetConnectionData(cn->c,
								      &ird,
								      &ord,
								      NULL,
								      &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, ird >= 1 && ord >= 1);
	}
	st_end(&chk);

	st_begin(&chk, "send_receive_sges");
	ST_STATUS(&chk, st_echo(ss, 40, 0, 1), STATUS_SUCCESS);
	ST_STATUS(&chk, st_echo(ss, ST_MSG, 0, 2), STATUS_SUCCESS);
	/* Zero-length payload beyond the type word. */
	ST_STATUS(&chk, st_echo(ss, 4, 0, 3), STATUS_SUCCESS);
	st_end(&chk);

	if (s->info.MaxInlineDataSize >= 32) {
		st_begin(&chk, "send_inline");
		ST_STATUS(&chk, st_echo(ss, 32, NDK_OP_FLAG_INLINE, 4),
			  STATUS_SUCCESS);
		st_end(&chk);
	} else {
		st_skip("send_inline", "inline data (MaxInlineDataSize < 32)");
	}

	st_begin(&chk, "rdma_write_read_region");
	ST_STATUS(&chk, st_write_read(ss, le64_to_cpu(ss->hello.mr_va),
				      le32_to_cpu(ss->hello.mr_tok),
				      PAGE_SIZE + 1000, 5), STATUS_SUCCESS);
	/* The last bytes of the region are still inside it. */
	ST_STATUS(&chk, st_write_read(ss, le64_to_cpu(ss->hello.mr_va) +
				      le32_to_cpu(ss->hello.mr_len) - 30,
				      le32_to_cpu(ss->hello.mr_tok), 30, 6),
		  STATUS_SUCCESS);
	st_end(&chk);

	if (ss->hello.fr_tok) {
		st_begin(&chk, "rdma_fast_registered");
		ST_STATUS(&chk, st_write_read(ss,
					      le64_to_cpu(ss->hello.fr_va) + 8,
					      le32_to_cpu(ss->hello.fr_tok),
					      1000, 7), STATUS_SUCCESS);
		st_end(&chk);
	} else {
		st_skip("rdma_fast_registered",
			"fast registration (the peer offered no such region)");
	}

	if (ss->hello.mw_tok) {
		st_begin(&chk, "rdma_memory_window");
		ST_STATUS(&chk, st_write_read(ss, le64_to_cpu(ss->hello.mw_va),
					      le32_to_cpu(ss->hello.mw_tok),
					      min_t(u32, PAGE_SIZE,
						    le32_to_cpu(ss->hello.mw_len)),
					      8), STATUS_SUCCESS);
		st_end(&chk);
	} else {
		st_skip("rdma_memory_window",
			"memory windows (the peer offered none)");
	}

	st_initiator_depth(s, ss);

	st_begin(&chk, "cq_notification_completion");
	n = &cn->notify;
	reinit_completion(&n->done);
	atomic_set(&n->calls, 0);
	cn->cq->Dispatch->NdkArmCq(cn->cq, NDK_CQ_NOTIFY_ANY);
	sge = st_sge(&ss->data, 0, 128);
	st = cn->qp->Dispatch->NdkRead(cn->qp, ST_CTX(9), &sge, 1,
				       le64_to_cpu(ss->hello.mr_va),
				       le32_to_cpu(ss->hello.mr_tok), 0);
	ST_STATUS(&chk, st, STATUS_SUCCESS);
	ST_CHECK(&chk, wait_for_completion_timeout(&n->done, ST_TIMEOUT));
	ST_CHECK(&chk, n->dispatch);
	ST_CHECK(&chk, atomic_read(&n->calls) == 1);
	ST_STATUS(&chk, st_result(cn, ST_CTX(9), &r, ST_TIMEOUT),
		  STATUS_SUCCESS);
	ST_STATUS(&chk, r.Status, STATUS_SUCCESS);
	ST_CHECK(&chk, r.QPContext == cn);
	st_end(&chk);

	st_begin(&chk, "disconnect");
	{
		struct st_wait w;

		st_wait_init(&w);
		st = cn->c->Dispatch->NdkDisconnect(cn->c, st_request_cb, &w);
		ST_STATUS(&chk, st_wait(&w, st), STATUS_SUCCESS);
	}
	/* Receives still posted are flushed. */
	ST_STATUS(&chk, st_result(cn, NULL, &r, ST_TIMEOUT), STATUS_SUCCESS);
	ST_STATUS(&chk, r.Status, STATUS_CANCELLED);
	st_end(&chk);
out:
	st_conn_free(cn);
	st_mem_free(&ss->data);
	kfree(ss);
}

/*
 * A session whose request the peer must refuse: @op gets the session and
 * returns the failed request's status, which must not be success.
 */
static void st_session_refused(struct st *s, const char *name, u8 kind,
			       NTSTATUS (*op)(struct st_sess *ss))
{
	struct st_sess *ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	struct st_check chk;
	NTSTATUS st;

	if (!ss)
		return;
	st_begin(&chk, name);
	st = st_connect(s, ss, kind, name);
	if (st_expect(&chk, !st, "connect: %#x %s", st, ss->why)) {
		st = op(ss);
		st_expect(&chk, st && st != STATUS_IO_TIMEOUT,
			  "the request completed with %#x", st);
	}
	st_end(&chk);
	st_sess_end(ss);
	kfree(ss);
}

/*
 * A write the peer must refuse. On iWARP a write completes once sent and
 * the peer answers a bad one by terminating the connection, so a write
 * that completed is followed by a read through the region's own token,
 * which then fails; on IB and RoCE the write fails itself.
 */
static NTSTATUS st_write_refused(struct st_sess *ss, u64 raddr, u32 tok)
{
	NDK_SGE sge = st_sge(&ss->data, 0, 64);
	NTSTATUS st;

	st = st_rdma(&ss->cn, true, &sge, 1, raddr, tok);
	if (st)
		return st;
	return st_rdma(&ss->cn, false, &sge, 1, le64_to_cpu(ss->hello.mr_va),
		       le32_to_cpu(ss->hello.mr_tok));
}

static NTSTATUS st_op_wrong_token(struct st_sess *ss)
{
	return st_write_refused(ss, le64_to_cpu(ss->hello.mr_va),
				le32_to_cpu(ss->hello.mr_tok) ^ 0x5a5a00);
}

static NTSTATUS st_op_out_of_range(struct st_sess *ss)
{
	NDK_SGE sge = st_sge(&ss->data, 0, 64);

	return st_rdma(&ss->cn, false, &sge, 1,
		       le64_to_cpu(ss->hello.mr_va) +
		       le32_to_cpu(ss->hello.mr_len) - 32,
		       le32_to_cpu(ss->hello.mr_tok));
}

static NTSTATUS st_op_window_out_of_range(struct st_sess *ss)
{
	if (!ss->hello.mw_tok)
		return STATUS_NOT_SUPPORTED;
	return st_write_refused(ss, le64_to_cpu(ss->hello.mw_va) +
				le32_to_cpu(ss->hello.mw_len) - 16,
				le32_to_cpu(ss->hello.mw_tok));
}

/* The peer invalidates its fast-registered region; then it is closed. */
static NTSTATUS st_op_invalidated(struct st_sess *ss)
{
	struct st_conn *cn = &ss->cn;
	NDK_SGE sge = st_sge(&ss->data, 0, 64);
	u8 *out = st_send_buf(cn), ack[8];
	NDK_RESULT_EX r;
	NTSTATUS st;

	if (!ss->hello.fr_tok)
		return STATUS_NOT_SUPPORTED;
	/* It works before. */
	st = st_rdma(cn, true, &sge, 1, le64_to_cpu(ss->hello.fr_va),
		     le32_to_cpu(ss->hello.fr_tok));
	if (st)
		return STATUS_SUCCESS;
	st_put32(ST_INVALIDATE, out);
	st = st_send(cn, 4, 0);
	if (!st)
		st = st_result(cn, NULL, &r, ST_TIMEOUT);
	if (st || r.Status || r.BytesTransferred != 8)
		return STATUS_SUCCESS;
	st_recv_copy(cn, (uintptr_t)r.RequestContext - ST_RECV_CTX, ack, 8);
	if (st_get32(ack) != ST_ACK || st_get32(ack + 4))
		return STATUS_SUCCESS;
	return st_write_refused(ss, le64_to_cpu(ss->hello.fr_va),
				le32_to_cpu(ss->hello.fr_tok));
}

/* Echoes through the peer's SRQ, which notifies below its threshold. */
static void st_session_srq(struct st *s)
{
	struct st_sess *ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	struct st_check chk;
	NTSTATUS st;

	if (!ss)
		return;
	st_begin(&chk, "srq_send_receive");
	st = st_connect(s, ss, ST_SESSION_SRQ, chk.name);
	if (st_expect(&chk, !st, "connect: %#x %s", st, ss->why)) {
		ST_STATUS(&chk, st_echo(ss, 100, 0, 9), STATUS_SUCCESS);
		ST_STATUS(&chk, st_echo(ss, 200, 0, 10), STATUS_SUCCESS);
	}
	st_end(&chk);
	st_sess_end(ss);
	kfree(ss);
}

/*
 * Requests in flight when the connection goes: by NdkDisconnect, or by
 * closing the connector. Each completes exactly once, and nothing else
 * arrives. The writes complete in order: successfully, then at most one
 * with an error (the one the device was carrying when the connection
 * went: siw reports a local QP error for it), then cancelled; the
 * receives, to which nothing was sent, cancelled.
 */
static void st_session_teardown(struct st *s, const char *name, bool close)
{
	struct st_sess *ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	DECLARE_BITMAP(seen, ST_DEPTH + ST_RECVS) = {};
	struct st_conn *cn;
	struct st_check chk;
	struct st_wait w;
	NDK_RESULT_EX r;
	NDK_SGE sge;
	NTSTATUS st;
	int k, posted = 0, id, next = 0;
	bool failed = false;

	if (!ss)
		return;
	cn = &ss->cn;
	st_begin(&chk, name);
	st = st_connect(s, ss, ST_SESSION, name);
	if (!st_expect(&chk, !st, "connect: %#x %s", st, ss->why))
		goto out;
	sge = st_sge(&ss->data, 0, PAGE_SIZE);
	for (k = 0; k < ST_DEPTH; k++) {
		st = cn->qp->Dispatch->NdkWrite(cn->qp, ST_CTX(0x200 + k), &sge,
						1, le64_to_cpu(ss->hello.mr_va),
						le32_to_cpu(ss->hello.mr_tok),
						0);
		if (st)
			break;
		posted++;
	}
	ST_CHECK(&chk, posted == ST_DEPTH);
	st_wait_init(&w);
	if (close) {
		st = st_close(&cn->c->Header, cn->c->Dispatch->NdkCloseConnector);
		cn->c = NULL;
	} else {
		st = cn->c->Dispatch->NdkDisconnect(cn->c, st_request_cb, &w);
		st = st_wait(&w, st);
	}
	ST_STATUS(&chk, st, STATUS_SUCCESS);
	/* The writes, then the receives the connection had posted. */
	for (k = 0; k < posted + ST_RECVS; k++) {
		if (!ST_STATUS(&chk, st_next(cn, &r), STATUS_SUCCESS))
			break;
		id = (uintptr_t)r.RequestContext;
		if (id >= ST_RECV_CTX && id < ST_RECV_CTX + ST_RECVS)
			id = ST_DEPTH + id - ST_RECV_CTX;
		else
			id -= 0x200;
		if (!st_expect(&chk, id >= 0 && id < ST_DEPTH + ST_RECVS &&
			       !test_and_set_bit(id, seen),
			       "unknown or repeated request %p",
			       r.RequestContext))
			break;
		if (id >= ST_DEPTH) {
			ST_STATUS(&chk, r.Status, STATUS_CANCELLED);
			continue;
		}
		st_expect(&chk, id == next, "write %d completed before %d",
			  id, next);
		next = id + 1;
		if (r.Status == STATUS_SUCCESS)
			st_expect(&chk, !failed, "write %d succeeded after one failed",
				  id);
		else if (r.Status != STATUS_CANCELLED)
			st_expect(&chk, !failed, "write %d failed with %#x after one failed",
				  id, r.Status);
		if (r.Status != STATUS_SUCCESS && r.Status != STATUS_CANCELLED)
			pr_info("# %s: write %d in flight completed with %#x\n",
				name, id, r.Status);
		failed |= r.Status != STATUS_SUCCESS;
	}
	msleep(50);
	ST_CHECK(&chk, !cn->cq->Dispatch->NdkGetCqResultsEx(cn->cq, &r, 1));
out:
	st_end(&chk);
	st_conn_free(cn);
	st_mem_free(&ss->data);
	kfree(ss);
}

/* A connect the peer rejects, or that nothing listens for. */
static void st_refused_connect(struct st *s, const char *name, u8 kind,
			       u16 p)
{
	struct st_conn *cn = kzalloc(sizeof(*cn), GFP_KERNEL);
	struct st_req req = { .magic = cpu_to_le32(ST_MAGIC), .kind = kind };
	struct sockaddr_in dst = s->remote;
	struct st_check chk;
	struct st_wait w;
	char got[16];
	ULONG len;
	NTSTATUS st;

	if (!cn)
		return;
	st_begin(&chk, name);
	strscpy(req.name, name, sizeof(req.name));
	dst.sin_port = htons(p);
	if (!ST_STATUS(&chk, st_conn_init(s, cn, 0), STATUS_SUCCESS))
		goto out;
	st_wait_init(&w);
	st = cn->c->Dispatch->NdkConnect(cn->c, cn->qp, (struct sockaddr *)&s->local,
					 sizeof(s->local), (struct sockaddr *)&dst,
					 sizeof(dst), 1, 1, &req, sizeof(req),
					 st_request_cb, &w);
	ST_STATUS(&chk, st_wait(&w, st), STATUS_CONNECTION_REFUSED);
	if (kind == ST_REJECT) {
		ST_STATUS(&chk, st_pdata(cn->c, got, sizeof(got) - 1, &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, len >= 11 && !strcmp(got, "st-refused"));
	}
out:
	st_end(&chk);
	st_conn_free(cn);
	kfree(cn);
}

static void st_client(struct st *s)
{
	st_session_main(s);
	st_refused_connect(s, "connect_reject_private_data", ST_REJECT, port);
	st_refused_connect(s, "connect_no_listener", ST_SESSION, port + 3);
	st_session_refused(s, "rdma_wrong_token_refused", ST_SESSION,
			   st_op_wrong_token);
	st_session_refused(s, "rdma_out_of_range_refused", ST_SESSION,
			   st_op_out_of_range);
	if (s->info.MaxWindowSize)
		st_session_refused(s, "memory_window_out_of_range_refused",
				   ST_SESSION, st_op_window_out_of_range);
	else
		st_skip("memory_window_out_of_range_refused",
			"memory windows (MaxWindowSize 0)");
	if (s->info.FRMRPageCount)
		st_session_refused(s, "fast_register_invalidated_refused",
				   ST_SESSION, st_op_invalidated);
	else
		st_skip("fast_register_invalidated_refused",
			"fast registration (FRMRPageCount 0)");
	if (s->info.MaxSrqDepth)
		st_session_srq(s);
	else
		st_skip("srq_send_receive", "SRQ (MaxSrqDepth 0)");
	st_session_teardown(s, "disconnect_under_traffic", false);
	st_session_teardown(s, "close_under_traffic", true);
	/* Tell the passive side the run is over. */
	st_refused_connect(s, "connect_done", ST_DONE, port);
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

static int st_run(struct st *s)
{
	bool serve = !peer;
	NDK_PD *pd = NULL;
	struct st_wait w;
	NTSTATUS st;
	int err;

	err = st_open(s);
	if (err)
		return err;
	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreatePd(s->a, st_create_cb, &w, &pd);
	s->pd = st_obj(st_created(&w, st, pd, NULL), NDK_PD);
	if (!s->pd) {
		st_report("protection_domain", "NdkCreatePd failed");
		return -EIO;
	}
	st_objects(s);
	st_memory_local(s);
	st_receive_queue(s);
	st_srq_local(s);
	st_cq_resize(s);
	st_qp_limits(s);
	st_listeners(s);

	s->remote = s->local;
	s->remote.sin_port = htons(port);
	if (peer && !in4_pton(peer, -1, (u8 *)&s->remote.sin_addr.s_addr, -1,
			      NULL)) {
		st_report("peer_address", "peer= is no IPv4 address");
		return -EINVAL;
	}
	if (serve) {
		st = st_listen_on(s, &s->listener, st_listen_cb, port);
		if (st) {
			st_report("listen", "NdkListen failed");
			return -EIO;
		}
		pr_info("ndk_selftest: listening on %pI4:%u\n",
			&s->local.sin_addr, port);
		init_completion(&s->server_done);
		s->server = kthread_run(st_server_fn, s, "ndk_selftest");
		if (IS_ERR(s->server)) {
			s->server = NULL;
			return -ENOMEM;
		}
	}
	if (!listen)
		st_client(s);
	if (s->server) {
		if (!listen)
			WRITE_ONCE(s->server_stop, true);
		wake_up(&s->incoming_wq);
		wait_for_completion(&s->server_done);
		if (listen)
			st_report("peer_run", s->pdata_seen ? NULL :
				  "no peer came");
	}
	return 0;
}

static void st_teardown(struct st *s)
{
	if (s->listener)
		st_close(&s->listener->Header,
			 s->listener->Dispatch->NdkCloseListener);
	if (s->pd)
		st_close(&s->pd->Header, s->pd->Dispatch->NdkClosePd);
	if (s->a && !st_abandoned)
		ndk_close_adapter(s->a);
}

static int __init st_init(void)
{
	struct st *s;
	int err;

	if (!ifname) {
		pr_err("ndk_selftest: ifname= names the RDMA device's interface\n");
		return -EINVAL;
	}
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	spin_lock_init(&s->lock);
	init_waitqueue_head(&s->incoming_wq);
	/*
	 * No plan line: the passive side's checks, run only in loopback
	 * and with listen=1, vary the count.
	 */
	pr_info("KTAP version 1\n");
	pr_info("# ndk_selftest on %s: %s\n", ifname,
		listen ? "passive side" : peer ? "active side" : "loopback");
	err = st_run(s);
	st_teardown(s);
	pr_info("ndk_selftest: %u passed, %u failed, %u skipped\n", st_passed,
		st_failed, st_skipped);
	if (!err && st_failed)
		err = -EIO;
	/* A callback may still come for what timed out: stay loaded. */
	if (st_abandoned) {
		pr_err("ndk_selftest: requests did not complete; staying loaded\n");
		return 0;
	}
	kfree(s);
	return err;
}

static void __exit st_exit(void)
{
}

module_init(st_init);
module_exit(st_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ndk conformance self-test on a user's RDMA device");
