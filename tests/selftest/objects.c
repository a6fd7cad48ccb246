// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: the device's objects and memory, and the checks made
 * on one side alone: opening the adapter, creating and closing every
 * object in every context, receive queues, SRQs, memory, CQ resizing,
 * QP limits and listeners.
 */
#define pr_fmt(fmt) fmt

#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include "../compat.h"

#include "selftest.h"

NDK_CQ *st_cq(struct st *s, ULONG depth,
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

NDK_QP *st_qp(struct st *s, NDK_CQ *cq, NDK_SRQ *srq, void *ctx,
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

NDK_CONNECTOR *st_connector(struct st *s)
{
	NDK_CONNECTOR *c = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreateConnector(s->a, st_create_cb, &w, &c);
	return st_obj(st_created(&w, st, c, NULL), NDK_CONNECTOR);
}

NTSTATUS st_mem_new(struct st *s, struct st_mem *m, size_t len,
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

void st_mem_free(struct st_mem *m)
{
	if (m->mr)
		st_close(&m->mr->Header, m->mr->Dispatch->NdkCloseMr);
	if (m->buf)
		free_pages((unsigned long)m->buf, get_order(m->len));
	memset(m, 0, sizeof(*m));
}

NDK_SGE st_sge(struct st_mem *m, size_t off, ULONG len)
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
void st_objects(struct st *s)
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

int st_open(struct st *s)
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
	ndev = dev_get_by_name(&init_net, st_ifname);
	if (!st_expect(&chk, ndev, "no interface %s", st_ifname)) {
		st_end(&chk);
		return -ENODEV;
	}
	s->ifindex = ndev->ifindex;
	s->local.sin_family = AF_INET;
	s->local.sin_addr.s_addr = inet_select_addr(ndev, 0,
						    RT_SCOPE_UNIVERSE);
	dev_put(ndev);
	st_expect(&chk, s->local.sin_addr.s_addr, "%s has no IPv4 address",
		  st_ifname);
	descs = kcalloc(16, sizeof(*descs), GFP_KERNEL);
	n = descs ? ndk_enum_adapters(descs, 16) : 0;
	for (i = 0; i < min(n, 16); i++)
		if (descs[i].ifindex == s->ifindex) {
			found = true;
			pr_info("# device %s port %u on %s\n",
				descs[i].ibdev_name, descs[i].port, st_ifname);
		}
	kfree(descs);
	st_expect(&chk, found, "no NDK adapter on %s: is an RDMA device up on it?",
		  st_ifname);
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

NTSTATUS st_poll_one(NDK_CQ *cq, NDK_RESULT_EX *r)
{
	unsigned long end = jiffies + ST_TIMEOUT;

	while (time_before(jiffies, end)) {
		if (cq->Dispatch->NdkGetCqResultsEx(cq, r, 1))
			return STATUS_SUCCESS;
		usleep_range(100, 300);
	}
	return STATUS_IO_TIMEOUT;
}

void st_notify_cb(PVOID ctx, NTSTATUS status)
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
void st_receive_queue(struct st *s)
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

void st_srq_local(struct st *s)
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
void st_memory_local(struct st *s)
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
void st_cq_resize(struct st *s)
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
void st_qp_limits(struct st *s)
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

NTSTATUS st_listen_on(struct st *s, NDK_LISTENER **lp,
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
void st_listeners(struct st *s)
{
	NDK_LISTENER *l1 = NULL, *l2 = NULL;
	NDK_SHARED_ENDPOINT *e1 = NULL, *e2 = NULL;
	struct sockaddr_in got = {}, a = s->local;
	struct st_check chk;
	struct st_wait w;
	ULONG len = sizeof(got);
	NTSTATUS st;

	st_begin(&chk, "listener_address");
	ST_STATUS(&chk, st_listen_on(s, &l1, st_nop_event, st_port + 1),
		  STATUS_SUCCESS);
	if (l1) {
		ST_STATUS(&chk, l1->Dispatch->NdkGetLocalAddress(l1,
								 (struct sockaddr *)&got,
								 &len),
			  STATUS_SUCCESS);
		ST_CHECK(&chk, got.sin_port == htons(st_port + 1));
		ST_CHECK(&chk, got.sin_addr.s_addr == s->local.sin_addr.s_addr);
		ST_STATUS(&chk, st_listen_on(s, &l2, st_nop_event, st_port + 1),
			  STATUS_SHARING_VIOLATION);
	}
	if (l2)
		st_close(&l2->Header, l2->Dispatch->NdkCloseListener);
	if (l1)
		st_close(&l1->Header, l1->Dispatch->NdkCloseListener);
	st_end(&chk);

	st_begin(&chk, "shared_endpoint_address");
	a.sin_port = htons(st_port + 2);
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
		ST_CHECK(&chk, got.sin_port == htons(st_port + 2));
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
