// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndkperf over NDK: the public headers only, every asynchronous call made
 * synchronous by one completion helper, as in samples/ndk_demo.
 */
#define pr_fmt(fmt) "ndkperf: " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <ndk/ndk.h>
#include "ndkperf.h"

#define NP_WAIT		(30 * HZ)
/* conn_scale: a phase of all the connections; ndk's own timers are 20 s */
#define NP_SCALE_WAIT	(120 * HZ)
#define NP_POLL_MAX	16
#define NP_MR_FLAGS	(NDK_MR_FLAG_ALLOW_LOCAL_WRITE | \
			 NDK_MR_FLAG_ALLOW_REMOTE_READ | \
			 NDK_MR_FLAG_ALLOW_REMOTE_WRITE)

struct np_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
	ktime_t cb_time;
};

static void np_wait_init(struct np_wait *w)
{
	init_completion(&w->done);
	w->obj = NULL;
}

static void np_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
	struct np_wait *w = ctx;

	w->status = status;
	w->obj = obj;
	complete(&w->done);
}

static void np_request_done(PVOID ctx, NTSTATUS status)
{
	struct np_wait *w = ctx;

	w->cb_time = ktime_get();
	w->status = status;
	complete(&w->done);
}

static void np_close_done(PVOID ctx)
{
	complete(&((struct np_wait *)ctx)->done);
}

static NTSTATUS np_wait(struct np_wait *w, NTSTATUS status)
{
	if (status != STATUS_PENDING)
		return status;
	if (!wait_for_completion_timeout(&w->done, NP_WAIT))
		return STATUS_IO_TIMEOUT;
	return w->status;
}

/*
 * The object of a create call: @obj, what it stored through its object
 * argument when it completed inline, or the completion's.
 */
static NDK_OBJECT_HEADER *np_created(struct np_wait *w, NTSTATUS status,
				     void *obj, const char *what)
{
	bool pending = status == STATUS_PENDING;

	status = np_wait(w, status);
	if (status) {
		pr_err("creating the %s failed: %#x\n", what, status);
		return NULL;
	}
	/* The header is the first member of every NDK object. */
	return pending ? w->obj : obj;
}

#define np_obj(hdr, type)						\
	({								\
		NDK_OBJECT_HEADER *__h = (hdr);				\
									\
		__h ? container_of(__h, type, Header) : NULL;		\
	})

/* Return: true if the close pended, rather than finish in the call. */
static bool np_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close)
{
	struct np_wait w;

	np_wait_init(&w);
	if (close(obj, np_close_done, &w) != STATUS_PENDING)
		return false;
	if (!wait_for_completion_timeout(&w.done, NP_WAIT))
		pr_err("a close did not complete\n");
	return true;
}

static void np_close_qp(NDK_QP *o)
{
	if (o)
		np_close(&o->Header, o->Dispatch->NdkCloseQp);
}

static bool np_close_conn(NDK_CONNECTOR *o)
{
	return o && np_close(&o->Header, o->Dispatch->NdkCloseConnector);
}

static void np_close_mr(NDK_MR *o)
{
	if (o)
		np_close(&o->Header, o->Dispatch->NdkCloseMr);
}

static void np_close_cq(NDK_CQ *o)
{
	if (o)
		np_close(&o->Header, o->Dispatch->NdkCloseCq);
}

/* One end: side 0 is the client, side 1 the server. */
struct np_side {
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	/*
	 * write_lat: a second connection with side 1 active, for side 1's
	 * writes. ndk's active side QP refuses inbound RDMA (see
	 * Documentation/ndk/performance.rst), so each side writes over the
	 * connection it started.
	 */
	NDK_QP *wqp;
	NDK_CONNECTOR *wconn;
	u8 *buf;
	struct ndk_mdl mdl;
	NDK_MR *mr;
	u32 lkey;
	u32 rkey;
};

struct np;

/* conn_scale: one end of a connection, the context of its callbacks. */
struct np_end {
	struct np *p;
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	bool up;	/* its NdkCompleteConnect or NdkAccept completed */
};

struct np_sconn {
	struct np_end end[2];
};

/* The active side of np_connect(): its connector and confirmation. */
struct np_hs {
	NDK_CONNECTOR *c;
	struct np_wait w;
};

struct np {
	const struct perf_cfg *cfg;
	NDK_ADAPTER *adapter;
	NDK_PD *pd;
	NDK_LISTENER *listener;
	/* Each side's CQ, laid out as raw_mode.c's, for the same polling code */
	NDK_CQ *cq[2];
	struct np_side sd[2];
	/*
	 * np_connect(): the request's connector, accepted with accept_qp
	 * into aw; hs, the active side. The handshake's callbacks report
	 * here, not to np_connect()'s stack, which a failed wait leaves
	 * while they may still come.
	 */
	struct completion incoming;
	NDK_CONNECTOR *incoming_conn;
	NDK_QP *accept_qp;
	struct np_hs hs;
	struct np_wait aw;
	/* reg_mr: the region registered again and again */
	u8 *rbuf;
	struct ndk_mdl rmdl;
	NDK_MR *rmr;
	u64 reg_call_ns, reg_work_ns, reg_wake_ns, reg_n, reg_inline;
	/*
	 * conn: QPs created, handshake, disconnect, connector and QP closes;
	 * connector closes that pended
	 */
	u64 conn_ns[5], conn_n, conn_pended[2];
	u64 disc_ns[3], disc_n;
	NDK_RESULT res[NP_POLL_MAX];
	/*
	 * conn_scale: the CQs all connections share, [side][send, receive];
	 * the connections; the listener's requests go to them while
	 * sc_open; sc_accepted counts those requests. The calls of a phase
	 * are counted in sc_pending, which the issuing thread holds one of
	 * until all are made; sc_status keeps the first failure.
	 */
	NDK_CQ *scq[2][2];
	struct np_sconn *sc;
	bool sc_open;
	atomic_t sc_accepted;
	atomic_t sc_pending;
	atomic_t sc_status;
	struct completion sc_done;
};

static void np_sc_incoming(struct np *p, NDK_CONNECTOR *connector);

/* The accept is made here, as raw mode makes it in its rdma_cm handler. */
static void np_connect_event(PVOID ctx, NDK_CONNECTOR *connector)
{
	struct np *p = ctx;
	NTSTATUS st;

	if (READ_ONCE(p->sc_open)) {
		np_sc_incoming(p, connector);
		return;
	}
	st = connector->Dispatch->NdkAccept(connector, p->accept_qp,
					    PERF_RD_LIMIT, PERF_RD_LIMIT,
					    NULL, 0, NULL, NULL,
					    np_request_done, &p->aw);
	if (st != STATUS_PENDING)
		np_request_done(&p->aw, st);
	p->incoming_conn = connector;
	complete(&p->incoming);
}

/* From ndk's CQ softirq, as the consumer's notification callback. */
static void np_notified(PVOID ctx, NTSTATUS status)
{
	perf_notified(ctx);
}

static NDK_QP *np_qp(struct np *p, int side)
{
	NDK_CQ *cq = p->cq[side];
	u32 d = p->cfg->depth;
	NDK_QP *qp = NULL;
	struct np_wait w;
	NTSTATUS st;

	np_wait_init(&w);
	st = p->pd->Dispatch->NdkCreateQp(p->pd, cq, cq, p, 2 * d, d, 1, 1, 0,
					  np_create_done, &w, &qp);
	return np_obj(np_created(&w, st, qp, "QP"), NDK_QP);
}

static NDK_MR *np_register(struct np *p, void *buf, struct ndk_mdl *mdl,
			   u32 len)
{
	NDK_MR *mr = NULL;
	struct np_wait w;
	NTSTATUS st;

	np_wait_init(&w);
	st = p->pd->Dispatch->NdkCreateMr(p->pd, FALSE, np_create_done, &w,
					  &mr);
	mr = np_obj(np_created(&w, st, mr, "MR"), NDK_MR);
	if (!mr)
		return NULL;
	ndk_mdl_init_kva(mdl, buf, len);
	np_wait_init(&w);
	st = mr->Dispatch->NdkRegisterMr(mr, mdl, len, NP_MR_FLAGS,
					 np_request_done, &w);
	st = np_wait(&w, st);
	if (st) {
		pr_err("registering memory failed: %#x\n", st);
		np_close(&mr->Header, mr->Dispatch->NdkCloseMr);
		return NULL;
	}
	return mr;
}

/* NdkConnect's completion confirms at once, in the callback. */
static void np_connected(PVOID ctx, NTSTATUS status)
{
	struct np_hs *hs = ctx;

	if (!status)
		status = hs->c->Dispatch->NdkCompleteConnect(hs->c, NULL, NULL,
							     np_request_done,
							     &hs->w);
	if (status != STATUS_PENDING)
		np_request_done(&hs->w, status);
}

/*
 * Connect QP @cqp to QP @sqp through the listener: the NDK handshake,
 * each step made from the callback of the one before, as raw mode's
 * handler accepts and rdma_cm confirms in its own handler.
 */
static int np_connect(struct np *p, NDK_QP *cqp, NDK_QP *sqp,
		      NDK_CONNECTOR **client, NDK_CONNECTOR **server)
{
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = p->cfg->addr };
	struct sockaddr_in dst = src;
	struct np_hs *hs = &p->hs;
	struct np_wait w;
	NDK_CONNECTOR *c = NULL;
	NTSTATUS st;

	dst.sin_port = htons(p->cfg->port);
	np_wait_init(&w);
	st = p->adapter->Dispatch->NdkCreateConnector(p->adapter,
						      np_create_done, &w, &c);
	*client = np_obj(np_created(&w, st, c, "connector"), NDK_CONNECTOR);
	if (!*client)
		return -ENOMEM;
	c = *client;
	reinit_completion(&p->incoming);
	np_wait_init(&p->aw);
	p->accept_qp = sqp;
	hs->c = c;
	np_wait_init(&hs->w);
	st = c->Dispatch->NdkConnect(c, cqp, (struct sockaddr *)&src,
				     sizeof(src), (struct sockaddr *)&dst,
				     sizeof(dst), PERF_RD_LIMIT, PERF_RD_LIMIT,
				     NULL, 0, np_connected, hs);
	if (st != STATUS_PENDING ||
	    !wait_for_completion_timeout(&p->incoming, NP_WAIT)) {
		pr_err("connect failed: %#x\n", st);
		return -EIO;
	}
	*server = p->incoming_conn;
	st = np_wait(&hs->w, STATUS_PENDING);
	if (np_wait(&p->aw, STATUS_PENDING) || st) {
		pr_err("connect, accept or confirmation failed: %#x / %#x\n",
		       hs->w.status, p->aw.status);
		return -EIO;
	}
	return 0;
}

/*
 * conn's split of NdkDisconnect, when it pends: the call, the disconnect
 * until its completion runs, and the wakeup of this thread.
 */
static void np_disconnect(struct np *p, NDK_CONNECTOR *c)
{
	ktime_t t0, t1, t2;
	struct np_wait w;
	NTSTATUS s;

	np_wait_init(&w);
	t0 = ktime_get();
	s = c->Dispatch->NdkDisconnect(c, np_request_done, &w);
	t1 = ktime_get();
	if (s != STATUS_PENDING)
		return;
	np_wait(&w, s);
	t2 = ktime_get();
	p->disc_ns[0] += ktime_to_ns(ktime_sub(t1, t0));
	p->disc_ns[1] += ktime_to_ns(ktime_sub(w.cb_time, t1));
	p->disc_ns[2] += ktime_to_ns(ktime_sub(t2, w.cb_time));
	p->disc_n++;
}

static int np_find_adapter(struct np *p)
{
	NDK_VERSION v = { .Major = NDK_PROVIDER_VERSION_MAJOR,
			  .Minor = NDK_PROVIDER_VERSION_MINOR };
	struct ndk_adapter_desc desc[4];
	int i, n;

	n = ndk_enum_adapters(desc, ARRAY_SIZE(desc));
	for (i = 0; i < n; i++)
		if (desc[i].ifindex == p->cfg->ifindex)
			return ndk_open_adapter(desc[i].ifindex, v,
						&p->adapter) ? -ENODEV : 0;
	pr_err("no NDK adapter on the interface\n");
	return -ENODEV;
}

static void np_teardown(void *st)
{
	struct np *p = st;
	int s;

	if (p->reg_n)
		pr_info("detail workload=reg_mr mode=ndk n=%llu inline=%llu call_ns=%llu work_ns=%llu wake_ns=%llu\n",
			p->reg_n, p->reg_inline,
			div64_u64(p->reg_call_ns, p->reg_n),
			div64_u64(p->reg_work_ns, p->reg_n),
			div64_u64(p->reg_wake_ns, p->reg_n));
	if (p->conn_n)
		pr_info("detail workload=conn mode=ndk n=%llu qp_ns=%llu connect_ns=%llu disconnect_ns=%llu close_conn_ns=%llu close_qp_ns=%llu pended0=%llu pended1=%llu disc_pended=%llu disc_call_ns=%llu disc_work_ns=%llu disc_wake_ns=%llu\n",
			p->conn_n, div64_u64(p->conn_ns[0], p->conn_n),
			div64_u64(p->conn_ns[1], p->conn_n),
			div64_u64(p->conn_ns[2], p->conn_n),
			div64_u64(p->conn_ns[3], p->conn_n),
			div64_u64(p->conn_ns[4], p->conn_n),
			p->conn_pended[0], p->conn_pended[1], p->disc_n,
			div64_u64(p->disc_ns[0], max(p->disc_n, 1ULL)),
			div64_u64(p->disc_ns[1], max(p->disc_n, 1ULL)),
			div64_u64(p->disc_ns[2], max(p->disc_n, 1ULL)));
	if (p->sd[0].conn && p->sd[1].conn)
		np_disconnect(p, p->sd[0].conn);
	if (p->sd[0].wconn && p->sd[1].wconn)
		np_disconnect(p, p->sd[1].wconn);
	for (s = 1; s >= 0; s--) {
		np_close_conn(p->sd[s].conn);
		np_close_conn(p->sd[s].wconn);
		np_close_qp(p->sd[s].wqp);
	}
	if (p->listener)
		np_close(&p->listener->Header,
			 p->listener->Dispatch->NdkCloseListener);
	for (s = 1; s >= 0; s--) {
		np_close_qp(p->sd[s].qp);
		np_close_mr(p->sd[s].mr);
	}
	np_close_mr(p->rmr);
	for (s = 1; s >= 0; s--) {
		np_close_cq(p->cq[s]);
		np_close_cq(p->scq[s][0]);
		np_close_cq(p->scq[s][1]);
	}
	if (p->pd)
		np_close(&p->pd->Header, p->pd->Dispatch->NdkClosePd);
	if (p->adapter)
		ndk_close_adapter(p->adapter);
	kfree(p->sd[0].buf);
	kfree(p->sd[1].buf);
	kfree(p->rbuf);
	kvfree(p->sc);
	kfree(p);
}

/*
 * conn_scale: the CQs every connection shares, one for sends and one
 * for receives per side, each deep enough for one completion of each
 * connection, and the connections' array.
 */
static int np_setup_scale(struct np *p)
{
	const NDK_ADAPTER_DISPATCH *a = p->adapter->Dispatch;
	struct np_wait w;
	NTSTATUS st;
	int s, k;

	for (s = 0; s < 2; s++) {
		for (k = 0; k < 2; k++) {
			np_wait_init(&w);
			st = a->NdkCreateCq(p->adapter, p->cfg->conns + 16, NULL,
					    NULL, NULL, np_create_done, &w,
					    &p->scq[s][k]);
			p->scq[s][k] = np_obj(np_created(&w, st, p->scq[s][k],
							 "CQ"), NDK_CQ);
			if (!p->scq[s][k])
				return -ENOMEM;
		}
	}
	p->sc = kvcalloc(p->cfg->conns, sizeof(*p->sc), GFP_KERNEL);
	return p->sc ? 0 : -ENOMEM;
}

static int np_setup_objects(struct np *p)
{
	const NDK_ADAPTER_DISPATCH *a = p->adapter->Dispatch;
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_port = htons(p->cfg->port),
				    .sin_addr.s_addr = p->cfg->addr };
	u32 len = 2 * p->cfg->size;
	NDK_LISTENER *l = NULL;
	struct np_side *d;
	struct np_wait w;
	NTSTATUS st;
	int s;

	np_wait_init(&w);
	st = a->NdkCreatePd(p->adapter, np_create_done, &w, &p->pd);
	p->pd = np_obj(np_created(&w, st, p->pd, "PD"), NDK_PD);
	if (!p->pd)
		return -ENOMEM;
	for (s = 0; s < 2; s++) {
		d = &p->sd[s];
		/* Polled, or driven by notifications in notify_lat. */
		np_wait_init(&w);
		st = a->NdkCreateCq(p->adapter, 4 * p->cfg->depth,
				    p->cfg->notify ? np_notified : NULL,
				    p->cfg->notify ? &p->cfg->notify[s] : NULL,
				    NULL, np_create_done, &w, &p->cq[s]);
		p->cq[s] = np_obj(np_created(&w, st, p->cq[s], "CQ"), NDK_CQ);
		if (!p->cq[s])
			return -ENOMEM;
		d->qp = np_qp(p, s);
		d->buf = kzalloc(len, GFP_KERNEL);
		if (!d->qp || !d->buf)
			return -ENOMEM;
		d->mr = np_register(p, d->buf, &d->mdl, len);
		if (!d->mr)
			return -EIO;
		d->lkey = d->mr->Dispatch->NdkGetLocalTokenFromMr(d->mr);
		d->rkey = d->mr->Dispatch->NdkGetRemoteTokenFromMr(d->mr);
	}
	np_wait_init(&w);
	st = a->NdkCreateListener(p->adapter, np_connect_event, p,
				  np_create_done, &w, &l);
	p->listener = np_obj(np_created(&w, st, l, "listener"), NDK_LISTENER);
	if (!p->listener)
		return -ENOMEM;
	np_wait_init(&w);
	l = p->listener;
	st = l->Dispatch->NdkListen(l, (struct sockaddr *)&addr, sizeof(addr),
				    np_request_done, &w);
	if (np_wait(&w, st))
		return -EIO;
	if (p->cfg->wl == PERF_REG_MR) {
		p->rbuf = kzalloc(p->cfg->size, GFP_KERNEL);
		if (!p->rbuf)
			return -ENOMEM;
		np_wait_init(&w);
		st = p->pd->Dispatch->NdkCreateMr(p->pd, FALSE, np_create_done,
						  &w, &p->rmr);
		p->rmr = np_obj(np_created(&w, st, p->rmr, "MR"), NDK_MR);
		if (!p->rmr)
			return -ENOMEM;
		ndk_mdl_init_kva(&p->rmdl, p->rbuf, p->cfg->size);
	}
	if (p->cfg->wl == PERF_CONN_SCALE && np_setup_scale(p))
		return -ENOMEM;
	if (p->cfg->wl == PERF_WRITE_LAT) {
		p->sd[0].wqp = np_qp(p, 0);
		p->sd[1].wqp = np_qp(p, 1);
		if (!p->sd[0].wqp || !p->sd[1].wqp ||
		    np_connect(p, p->sd[1].wqp, p->sd[0].wqp, &p->sd[1].wconn,
			       &p->sd[0].wconn))
			return -EIO;
	}
	return np_connect(p, p->sd[0].qp, p->sd[1].qp, &p->sd[0].conn,
			  &p->sd[1].conn);
}

static void *np_setup(const struct perf_cfg *cfg)
{
	struct np *p = kzalloc(sizeof(*p), GFP_KERNEL);
	int err;

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->cfg = cfg;
	init_completion(&p->incoming);
	init_completion(&p->sc_done);
	err = np_find_adapter(p);
	if (!err)
		err = np_setup_objects(p);
	if (err) {
		np_teardown(p);
		return ERR_PTR(err);
	}
	return p;
}

static u8 *np_buf(void *st, int side)
{
	return ((struct np *)st)->sd[side].buf;
}

static int np_status(NTSTATUS st)
{
	return st ? -EIO : 0;
}

static int np_send(void *st, int side, u32 len)
{
	struct np *p = st;
	NDK_SGE sge = { .VirtualAddress = p->sd[side].buf, .Length = len,
			.MemoryRegionToken = p->sd[side].lkey };
	NDK_QP *qp = p->sd[side].qp;

	return np_status(qp->Dispatch->NdkSend(qp, (void *)PERF_K_SEND, &sge,
					       1, 0));
}

static int np_recv(void *st, int side, u32 len)
{
	struct np *p = st;
	NDK_SGE sge = { .VirtualAddress = p->sd[side].buf + p->cfg->size,
			.Length = len, .MemoryRegionToken = p->sd[side].lkey };
	NDK_QP *qp = p->sd[side].qp;

	return np_status(qp->Dispatch->NdkReceive(qp, (void *)PERF_K_RECV,
						  &sge, 1));
}

/* From this side's first half into the peer's second half. */
static int np_write(void *st, int side, u32 len)
{
	struct np *p = st;
	NDK_SGE sge = { .VirtualAddress = p->sd[side].buf, .Length = len,
			.MemoryRegionToken = p->sd[side].lkey };
	u64 raddr = (uintptr_t)(p->sd[!side].buf + p->cfg->size);
	NDK_QP *qp = side && p->sd[1].wqp ? p->sd[1].wqp : p->sd[side].qp;

	return np_status(qp->Dispatch->NdkWrite(qp, (void *)PERF_K_WRITE,
						&sge, 1, raddr,
						p->sd[!side].rkey, 0));
}

/* From the peer's first half into this side's second half. */
static int np_read(void *st, int side, u32 len)
{
	struct np *p = st;
	NDK_SGE sge = { .VirtualAddress = p->sd[side].buf + p->cfg->size,
			.Length = len, .MemoryRegionToken = p->sd[side].lkey };
	u64 raddr = (uintptr_t)p->sd[!side].buf;
	NDK_QP *qp = p->sd[side].qp;

	return np_status(qp->Dispatch->NdkRead(qp, (void *)PERF_K_READ, &sge,
					       1, raddr, p->sd[!side].rkey, 0));
}

static int np_poll(void *st, int side, struct perf_wc *wc, int n)
{
	struct np *p = st;
	NDK_CQ *cq = p->cq[side];
	int i, got;

	got = cq->Dispatch->NdkGetCqResults(cq, p->res, min(n, NP_POLL_MAX));
	for (i = 0; i < got; i++) {
		wc[i].kind = (uintptr_t)p->res[i].RequestContext;
		wc[i].status = p->res[i].Status;
	}
	return got;
}

static void np_arm(void *st, int side)
{
	NDK_CQ *cq = ((struct np *)st)->cq[side];

	cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
}

/*
 * Timed: NdkRegisterMr until its completion has woken this thread, or
 * until it returned if it completed inline. The split shows where the
 * time goes: the call itself, the request on ndk's workqueue until the
 * callback, and the wakeup of the waiter. A request that completed
 * inline did its work in the call and woke nobody: all of it is work.
 */
static int np_reg_once(void *st, u64 *ns)
{
	struct np *p = st;
	ktime_t t0, t1, t2;
	struct np_wait w;
	bool pending;
	NTSTATUS s;

	np_wait_init(&w);
	t0 = ktime_get();
	s = p->rmr->Dispatch->NdkRegisterMr(p->rmr, &p->rmdl, p->cfg->size,
					    NP_MR_FLAGS, np_request_done, &w);
	t1 = ktime_get();
	pending = s == STATUS_PENDING;
	s = np_wait(&w, s);
	t2 = ktime_get();
	if (s)
		return -EIO;
	*ns = ktime_to_ns(ktime_sub(t2, t0));
	if (pending) {
		p->reg_call_ns += ktime_to_ns(ktime_sub(t1, t0));
		p->reg_work_ns += ktime_to_ns(ktime_sub(w.cb_time, t1));
		p->reg_wake_ns += ktime_to_ns(ktime_sub(t2, w.cb_time));
	} else {
		p->reg_work_ns += ktime_to_ns(ktime_sub(t1, t0));
		p->reg_inline++;
	}
	p->reg_n++;
	np_wait_init(&w);
	s = p->rmr->Dispatch->NdkDeregisterMr(p->rmr, np_request_done, &w);
	return np_status(np_wait(&w, s));
}

/* New QPs and connectors each time, all closed again. */
static int np_conn_once(void *st)
{
	struct np *p = st;
	NDK_CONNECTOR *c[2] = { };
	ktime_t t[6];
	NDK_QP *qp[2];
	int err = -ENOMEM, s;

	t[0] = ktime_get();
	qp[0] = np_qp(p, 0);
	qp[1] = np_qp(p, 1);
	t[1] = ktime_get();
	if (qp[0] && qp[1])
		err = np_connect(p, qp[0], qp[1], &c[0], &c[1]);
	t[2] = ktime_get();
	if (!err)
		np_disconnect(p, c[0]);
	t[3] = ktime_get();
	for (s = 1; s >= 0; s--)
		p->conn_pended[s] += np_close_conn(c[s]);
	t[4] = ktime_get();
	for (s = 1; s >= 0; s--)
		np_close_qp(qp[s]);
	t[5] = ktime_get();
	for (s = 0; s < 5; s++)
		p->conn_ns[s] += ktime_to_ns(ktime_sub(t[s + 1], t[s]));
	p->conn_n++;
	return err;
}

/* objects: one object of @kind created and closed. */
static int np_obj_once(void *state, int kind)
{
	struct np *p = state;
	const NDK_ADAPTER_DISPATCH *a = p->adapter->Dispatch;
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = p->cfg->addr };
	NDK_CONNECTOR *c = NULL;
	NDK_LISTENER *l = NULL;
	NDK_PD *pd = NULL;
	NDK_CQ *cq = NULL;
	NDK_MR *mr = NULL;
	NDK_QP *qp;
	struct np_wait w;
	NTSTATUS st;

	np_wait_init(&w);
	switch (kind) {
	case PERF_O_PD:
		st = a->NdkCreatePd(p->adapter, np_create_done, &w, &pd);
		pd = np_obj(np_created(&w, st, pd, "PD"), NDK_PD);
		if (!pd)
			return -ENOMEM;
		np_close(&pd->Header, pd->Dispatch->NdkClosePd);
		return 0;
	case PERF_O_CQ:
		st = a->NdkCreateCq(p->adapter, 4 * p->cfg->depth, NULL, NULL,
				    NULL, np_create_done, &w, &cq);
		cq = np_obj(np_created(&w, st, cq, "CQ"), NDK_CQ);
		np_close_cq(cq);
		return cq ? 0 : -ENOMEM;
	case PERF_O_QP:
		qp = np_qp(p, 0);
		np_close_qp(qp);
		return qp ? 0 : -ENOMEM;
	case PERF_O_MR:
		st = p->pd->Dispatch->NdkCreateMr(p->pd, FALSE, np_create_done,
						  &w, &mr);
		mr = np_obj(np_created(&w, st, mr, "MR"), NDK_MR);
		np_close_mr(mr);
		return mr ? 0 : -ENOMEM;
	case PERF_O_CONNECTOR:
		st = a->NdkCreateConnector(p->adapter, np_create_done, &w, &c);
		c = np_obj(np_created(&w, st, c, "connector"), NDK_CONNECTOR);
		np_close_conn(c);
		return c ? 0 : -ENOMEM;
	default:
		/* Listening on an ephemeral port of the adapter's address. */
		st = a->NdkCreateListener(p->adapter, np_connect_event, p,
					  np_create_done, &w, &l);
		l = np_obj(np_created(&w, st, l, "listener"), NDK_LISTENER);
		if (!l)
			return -ENOMEM;
		np_wait_init(&w);
		st = np_wait(&w, l->Dispatch->NdkListen(l,
							(struct sockaddr *)&addr,
							sizeof(addr),
							np_request_done, &w));
		np_close(&l->Header, l->Dispatch->NdkCloseListener);
		return st ? -EIO : 0;
	}
}

/*
 * conn_scale. Every call of a phase is made at once from this thread and
 * the chains of calls go on from the completion callbacks, as a consumer
 * that opens many connections writes them: NdkConnect's completion
 * calls NdkCompleteConnect, the listener's connect event NdkAccept with
 * the next free QP of side 1; nothing waits but the thread, once per
 * phase. np_sc_call() counts a call that returned @st: a pending one is
 * counted down by its callback, any other at once.
 */
static void np_sc_start(struct np *p)
{
	atomic_set(&p->sc_pending, 1);
	atomic_set(&p->sc_status, 0);
	reinit_completion(&p->sc_done);
}

static void np_sc_put(struct np *p, NTSTATUS st)
{
	/* A failure ends the wait: its peer's calls may never come. */
	if (st && !atomic_cmpxchg(&p->sc_status, 0, st))
		complete(&p->sc_done);
	if (atomic_dec_and_test(&p->sc_pending))
		complete(&p->sc_done);
}

static void np_sc_call(struct np *p, NTSTATUS st)
{
	if (st != STATUS_PENDING)
		np_sc_put(p, st);
}

static int np_sc_wait(struct np *p, const char *what)
{
	np_sc_put(p, STATUS_SUCCESS);
	if (!wait_for_completion_timeout(&p->sc_done, NP_SCALE_WAIT)) {
		pr_err("conn_scale: %s: %d calls did not complete\n", what,
		       atomic_read(&p->sc_pending));
		return -ETIMEDOUT;
	}
	if (atomic_read(&p->sc_status)) {
		pr_err("conn_scale: %s failed: %#x\n", what,
		       atomic_read(&p->sc_status));
		return -EIO;
	}
	return 0;
}

static void np_sc_done(PVOID ctx, NTSTATUS status)
{
	np_sc_put(((struct np_end *)ctx)->p, status);
}

/* The last step of either side: the connection is up. */
static void np_sc_up(PVOID ctx, NTSTATUS status)
{
	struct np_end *e = ctx;

	if (!status)
		WRITE_ONCE(e->up, true);
	np_sc_put(e->p, status);
}

static void np_sc_rejected(PVOID ctx)
{
}

static void np_sc_closed(PVOID ctx)
{
	np_sc_put(((struct np_end *)ctx)->p, STATUS_SUCCESS);
}

static void np_sc_qp_created(PVOID ctx, NTSTATUS status,
			     NDK_OBJECT_HEADER *obj)
{
	struct np_end *e = ctx;

	if (!status)
		e->qp = container_of(obj, NDK_QP, Header);
	np_sc_put(e->p, status);
}

static void np_sc_conn_created(PVOID ctx, NTSTATUS status,
			       NDK_OBJECT_HEADER *obj)
{
	struct np_end *e = ctx;

	if (!status)
		e->conn = container_of(obj, NDK_CONNECTOR, Header);
	np_sc_put(e->p, status);
}

/* The peer accepted: confirm, the NDK handshake's third step. */
static void np_sc_connected(PVOID ctx, NTSTATUS status)
{
	struct np_end *e = ctx;
	NDK_CONNECTOR *c = e->conn;

	if (status) {
		np_sc_put(e->p, status);
		return;
	}
	status = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, np_sc_up, e);
	if (status != STATUS_PENDING)
		np_sc_up(e, status);
}

/* A request on the listener: accept it on the next QP of side 1. */
static void np_sc_incoming(struct np *p, NDK_CONNECTOR *connector)
{
	u32 i = atomic_inc_return(&p->sc_accepted) - 1;
	struct np_end *e;
	NTSTATUS st;

	if (i >= p->cfg->conns) {
		/* Not ours; closing it rejects it. */
		np_sc_put(p, STATUS_CONNECTION_REFUSED);
		connector->Dispatch->NdkCloseConnector(&connector->Header,
						       np_sc_rejected, NULL);
		return;
	}
	e = &p->sc[i].end[1];
	e->conn = connector;
	st = connector->Dispatch->NdkAccept(connector, e->qp, PERF_RD_LIMIT,
					    PERF_RD_LIMIT, NULL, 0, NULL, NULL,
					    np_sc_up, e);
	if (st != STATUS_PENDING)
		np_sc_up(e, st);
}

static int np_scale_open(void *st)
{
	struct np *p = st;
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = p->cfg->addr };
	struct sockaddr_in dst = src;
	u32 n = p->cfg->conns, d = p->cfg->depth, i;
	NDK_SGE sge = { .VirtualAddress = p->sd[1].buf + p->cfg->size,
			.Length = p->cfg->size,
			.MemoryRegionToken = p->sd[1].lkey };
	const NDK_ADAPTER_DISPATCH *a = p->adapter->Dispatch;
	struct np_end *e;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	NTSTATUS s;
	int side, err;

	/* The QPs and side 0's connectors, all asked for at once. */
	np_sc_start(p);
	for (i = 0; i < n; i++) {
		for (side = 0; side < 2; side++) {
			e = &p->sc[i].end[side];
			e->p = p;
			atomic_inc(&p->sc_pending);
			qp = NULL;
			/* NDKPI: the receive CQ first. */
			s = p->pd->Dispatch->NdkCreateQp(p->pd,
							 p->scq[side][1],
							 p->scq[side][0], e,
							 2 * d, d, 1, 1, 0,
							 np_sc_qp_created, e,
							 &qp);
			if (s == STATUS_SUCCESS)
				e->qp = qp;
			np_sc_call(p, s);
		}
		e = &p->sc[i].end[0];
		atomic_inc(&p->sc_pending);
		c = NULL;
		s = a->NdkCreateConnector(p->adapter, np_sc_conn_created, e,
					  &c);
		if (s == STATUS_SUCCESS)
			e->conn = c;
		np_sc_call(p, s);
	}
	err = np_sc_wait(p, "creating QPs and connectors");
	if (err)
		return err;

	/* A receive on every QP of side 1 (allowed before connecting). */
	for (i = 0; i < n; i++) {
		qp = p->sc[i].end[1].qp;
		s = qp->Dispatch->NdkReceive(qp, (void *)PERF_K_RECV, &sge, 1);
		if (s) {
			pr_err("conn_scale: receive failed: %#x\n", s);
			return -EIO;
		}
	}

	/*
	 * Every connect at once: each makes two chains of calls, side 0's
	 * connect and completion and side 1's accept, counted here.
	 */
	dst.sin_port = htons(p->cfg->port);
	atomic_set(&p->sc_accepted, 0);
	WRITE_ONCE(p->sc_open, true);
	np_sc_start(p);
	for (i = 0; i < n; i++) {
		e = &p->sc[i].end[0];
		c = e->conn;
		atomic_add(2, &p->sc_pending);
		s = c->Dispatch->NdkConnect(c, e->qp, (struct sockaddr *)&src,
					    sizeof(src),
					    (struct sockaddr *)&dst,
					    sizeof(dst), PERF_RD_LIMIT,
					    PERF_RD_LIMIT, NULL, 0,
					    np_sc_connected, e);
		if (s != STATUS_PENDING) {
			np_sc_put(p, s ?: STATUS_UNSUCCESSFUL);
			np_sc_put(p, STATUS_SUCCESS);
		}
	}
	return np_sc_wait(p, "connecting");
}

/* One send from side 0 on every connection; all completions reaped. */
static int np_scale_send(void *st)
{
	struct np *p = st;
	NDK_SGE sge = { .VirtualAddress = p->sd[0].buf,
			.Length = p->cfg->size,
			.MemoryRegionToken = p->sd[0].lkey };
	unsigned long end = jiffies + NP_SCALE_WAIT;
	u32 n = p->cfg->conns, want[2] = { n, n }, i;
	NDK_CQ *cq[2] = { p->scq[0][0], p->scq[1][1] };
	NDK_QP *qp;
	NTSTATUS s;
	int k, j, got;

	for (i = 0; i < n; i++) {
		qp = p->sc[i].end[0].qp;
		s = qp->Dispatch->NdkSend(qp, (void *)PERF_K_SEND, &sge, 1, 0);
		if (s) {
			pr_err("conn_scale: send failed: %#x\n", s);
			return -EIO;
		}
	}
	while (want[0] || want[1]) {
		for (k = 0; k < 2; k++) {
			got = cq[k]->Dispatch->NdkGetCqResults(cq[k], p->res,
							       NP_POLL_MAX);
			for (j = 0; j < got; j++) {
				if (p->res[j].Status) {
					pr_err("conn_scale: completion failed: %#x\n",
					       p->res[j].Status);
					return -EIO;
				}
			}
			want[k] -= min_t(u32, want[k], got);
		}
		cond_resched();
		if (time_after(jiffies, end)) {
			pr_err("conn_scale: %u sends, %u receives missing\n",
			       want[0], want[1]);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/*
 * Disconnect from side 0 what connected, then close the connectors and
 * then the QPs, each phase's calls all at once.
 */
static void np_scale_close(void *st)
{
	struct np *p = st;
	u32 n = p->cfg->conns, i;
	struct np_end *e;
	NDK_CONNECTOR *c;
	int side;

	WRITE_ONCE(p->sc_open, false);
	np_sc_start(p);
	for (i = 0; i < n; i++) {
		e = &p->sc[i].end[0];
		if (!e->up)
			continue;
		atomic_inc(&p->sc_pending);
		c = e->conn;
		np_sc_call(p, c->Dispatch->NdkDisconnect(c, np_sc_done, e));
	}
	np_sc_wait(p, "disconnecting");
	np_sc_start(p);
	for (i = 0; i < n; i++) {
		for (side = 0; side < 2; side++) {
			e = &p->sc[i].end[side];
			c = e->conn;
			if (!c)
				continue;
			atomic_inc(&p->sc_pending);
			np_sc_call(p, c->Dispatch->NdkCloseConnector(&c->Header,
								     np_sc_closed,
								     e));
		}
	}
	np_sc_wait(p, "closing connectors");
	np_sc_start(p);
	for (i = 0; i < n; i++) {
		for (side = 0; side < 2; side++) {
			e = &p->sc[i].end[side];
			if (!e->qp)
				continue;
			atomic_inc(&p->sc_pending);
			np_sc_call(p, e->qp->Dispatch->NdkCloseQp(&e->qp->Header,
								  np_sc_closed,
								  e));
		}
	}
	np_sc_wait(p, "closing QPs");
	memset(p->sc, 0, n * sizeof(*p->sc));
}

static void np_sizes(void *st)
{
	struct np *p = st;

	perf_print_sizes(p->pd, p->cq[0], p->sd[0].qp, p->sd[0].mr,
			 p->sd[0].conn, p->sd[1].conn);
}

const struct perf_ops perf_ndk_ops = {
	.name = "ndk",
	.setup = np_setup,
	.teardown = np_teardown,
	.buf = np_buf,
	.send = np_send,
	.recv = np_recv,
	.write = np_write,
	.read = np_read,
	.poll = np_poll,
	.arm = np_arm,
	.reg_once = np_reg_once,
	.conn_once = np_conn_once,
	.obj_once = np_obj_once,
	.scale_open = np_scale_open,
	.scale_send = np_scale_send,
	.scale_close = np_scale_close,
	.sizes = np_sizes,
};
