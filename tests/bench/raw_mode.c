// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndkperf over raw kernel verbs: the floor. What a kernel consumer of
 * ib_core and rdma_cm would write for the same workloads: QPs created on
 * the rdma_cm ids, the request accepted from the event handler, memory
 * registered with IB_WR_REG_MR posted on the data QP.
 *
 * mode=core prototypes ndk on the core CQ API instead, for notify_lat:
 * each side's CQ comes from ib_alloc_cq(IB_POLL_SOFTIRQ), whose softirq
 * polls it and hands every completion to an ib_cqe's ->done, which copies
 * it into a ring of the side's own, the one the consumer polls, and
 * wakes the waiter if the ring is armed. The core CQ may not be polled by
 * its user and knows no solicited-only arming, so the ring and its arming
 * rule are what ndk would have to add.
 */
#define pr_fmt(fmt) "ndkperf: " fmt

#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include "ndkperf.h"

#define RP_WAIT		(30 * HZ)
#define RP_CM_TIMEOUT	2000
#define RP_POLL_MAX	16
#define RP_ERROR	BIT(RDMA_CM_EVENT_ADDR_ERROR)
/* conn_scale: a phase of all the connections */
#define RP_SCALE_WAIT	(120 * HZ)

/* One end of an rdma_cm connection; @seen collects its events. */
struct rp_conn {
	struct rp *p;
	struct rdma_cm_id *id;
	unsigned long seen;
	int side;
	/* conn_scale: driven from the handler; up once established */
	bool scale;
	bool up;
};

/* A region registered by IB_WR_REG_MR. */
struct rp_mr {
	struct ib_mr *mr;
	struct sg_table sgt;
	bool mapped;
};

/* mode=core: a request's ib_cqe, one per side and kind (0: REG_MR). */
struct rp_cqe {
	struct ib_cqe cqe;
	struct rp_ring *ring;
	u64 kind;
};

/*
 * mode=core: the completions ->done copies for the consumer, sized like
 * the CQ. One producer, the CQ's softirq (irq_poll runs an instance on
 * one CPU at a time), and one consumer, so the indices need no lock;
 * each on the cache line of the side that writes it.
 */
struct rp_ring {
	struct rp_cqe cqe[PERF_K_READ + 1];
	struct perf_wc *ent;
	u32 mask;
	struct perf_notify *notify;
	u32 tail ____cacheline_aligned_in_smp;
	int armed;
	u32 head ____cacheline_aligned_in_smp;
};

struct rp {
	const struct perf_cfg *cfg;
	/* mode=core: the CQs are the core API's, polled through the rings */
	bool core;
	struct rp_ring *ring[2];
	wait_queue_head_t wq;
	struct rdma_cm_id *listen;
	struct rp_conn lconn;
	struct ib_pd *pd;
	struct ib_cq *cq[2];
	struct rp_conn *conn[2];
	/* the passive end the next connect request fills in */
	struct rp_conn *accepting;
	u8 *buf[2];
	struct rp_mr mr[2];
	u8 *rbuf;
	u64 reg_map_ns, reg_alloc_ns, reg_post_ns, reg_n;
	/* conn: handshake (with the QPs), disconnect, QPs and ids destroyed */
	u64 conn_ns[4], conn_n;
	struct ib_wc wc[RP_POLL_MAX];
	/*
	 * conn_scale: the CQs all connections share, [side][send, receive];
	 * the connections' ends, side 0 of connection i at 2 i and side 1
	 * at 2 i + 1; the listener's requests go to them while sc_open,
	 * sc_accepted counting them. The events a phase waits for are
	 * counted in sc_pending, which the issuing thread holds one of until
	 * all its calls are made; sc_status keeps the first failure.
	 */
	struct ib_cq *scq[2][2];
	struct rp_conn *sc;
	bool sc_open;
	atomic_t sc_accepted;
	atomic_t sc_pending;
	atomic_t sc_status;
	struct completion sc_done;
};

static int rp_sc_handler(struct rp_conn *c, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev);
static int rp_sc_accept(struct rp *p, struct rdma_cm_id *id);

static void rp_qp_attr(struct rp *p, int side, struct ib_qp_init_attr *init)
{
	*init = (struct ib_qp_init_attr) {
		.send_cq = p->cq[side],
		.recv_cq = p->cq[side],
		.cap = { .max_send_wr = p->cfg->depth,
			 .max_recv_wr = 2 * p->cfg->depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
}

static void rp_conn_param(struct rdma_conn_param *param)
{
	*param = (struct rdma_conn_param) {
		.responder_resources = PERF_RD_LIMIT,
		.initiator_depth = PERF_RD_LIMIT,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
}

/* On the listener's new id, @id->context is still the listener's. */
static int rp_accept(struct rdma_cm_id *id)
{
	struct rp *p = ((struct rp_conn *)id->context)->p;
	struct rp_conn *c = p->accepting;
	struct rdma_conn_param param;
	struct ib_qp_init_attr init;
	int err;

	if (READ_ONCE(p->sc_open))
		return rp_sc_accept(p, id);
	if (!c)
		return -EINVAL;
	p->accepting = NULL;
	id->context = c;
	rp_qp_attr(p, c->side, &init);
	err = rdma_create_qp(id, p->pd, &init);
	if (!err) {
		rp_conn_param(&param);
		err = rdma_accept(id, &param);
		if (err)
			rdma_destroy_qp(id);
	}
	if (!err)
		c->id = id;
	else
		set_bit(RDMA_CM_EVENT_ADDR_ERROR, &c->seen);
	wake_up_all(&p->wq);
	/* Non-zero makes rdma_cm destroy the new id. */
	return err;
}

static int rp_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rp_conn *c = id->context;

	if (c->scale)
		return rp_sc_handler(c, id, ev);
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return rp_accept(id);
	case RDMA_CM_EVENT_DISCONNECTED:
		/* The passive end answers the request (DREP) at once. */
		if (c->side)
			rdma_disconnect(id);
		fallthrough;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		set_bit(ev->event, &c->seen);
		break;
	default:
		set_bit(RDMA_CM_EVENT_ADDR_ERROR, &c->seen);
		break;
	}
	wake_up_all(&c->p->wq);
	return 0;
}

static int rp_wait_event(struct rp_conn *c, enum rdma_cm_event_type ev)
{
	if (!wait_event_timeout(c->p->wq, c->seen & (BIT(ev) | RP_ERROR),
				RP_WAIT) ||
	    (c->seen & RP_ERROR)) {
		pr_err("rdma_cm: no event %d (seen %#lx)\n", ev, c->seen);
		return -EIO;
	}
	return 0;
}

static void rp_destroy_qp(struct rp_conn *c)
{
	if (c && c->id && c->id->qp)
		rdma_destroy_qp(c->id);
}

static void rp_destroy_conn(struct rp_conn *c)
{
	if (!c)
		return;
	rp_destroy_qp(c);
	if (c->id)
		rdma_destroy_id(c->id);
	kfree(c);
}

/* Resolve, create the QP, connect; the handler accepts on side 1. */
static int rp_connect(struct rp *p, struct rp_conn **client,
		      struct rp_conn **server)
{
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = p->cfg->addr };
	struct sockaddr_in dst = src;
	struct rdma_conn_param param;
	struct ib_qp_init_attr init;
	struct rp_conn *c, *s;
	struct rdma_cm_id *id;
	int err;

	dst.sin_port = htons(p->cfg->port);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	*client = c;
	*server = s;
	if (!c || !s)
		return -ENOMEM;
	c->p = p;
	s->p = p;
	s->side = 1;
	id = rdma_create_id(&init_net, rp_cm_handler, c, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	c->id = id;
	err = rdma_resolve_addr(id, (struct sockaddr *)&src,
				(struct sockaddr *)&dst, RP_CM_TIMEOUT);
	if (!err)
		err = rp_wait_event(c, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!err)
		err = rdma_resolve_route(id, RP_CM_TIMEOUT);
	if (!err)
		err = rp_wait_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (err)
		return err;
	rp_qp_attr(p, 0, &init);
	err = rdma_create_qp(id, p->pd, &init);
	if (err)
		return err;
	p->accepting = s;
	rp_conn_param(&param);
	err = rdma_connect(id, &param);
	if (!err)
		err = rp_wait_event(c, RDMA_CM_EVENT_ESTABLISHED);
	if (!err)
		err = rp_wait_event(s, RDMA_CM_EVENT_ESTABLISHED);
	if (err)
		p->accepting = NULL;
	return err;
}

static void rp_disconnect(struct rp_conn *c)
{
	if (!rdma_disconnect(c->id))
		rp_wait_event(c, RDMA_CM_EVENT_DISCONNECTED);
}

static void rp_dereg(struct rp *p, struct rp_mr *m)
{
	if (m->mr)
		ib_dereg_mr(m->mr);
	if (m->mapped)
		ib_dma_unmap_sgtable_attrs(p->pd->device, &m->sgt,
					   DMA_BIDIRECTIONAL, 0);
	sg_free_table(&m->sgt);
	memset(m, 0, sizeof(*m));
}

static int rp_poll(void *st, int side, struct perf_wc *wc, int n);
static int rp_core_poll(void *st, int side, struct perf_wc *wc, int n);

/* Wait for the one completion of a REG_MR, polling side 0's CQ. */
static int rp_reg_wait(struct rp *p)
{
	unsigned long end = jiffies + RP_WAIT;
	struct perf_wc wc;
	int n;

	while (!(n = p->core ? rp_core_poll(p, 0, &wc, 1) :
			       rp_poll(p, 0, &wc, 1))) {
		cond_resched();
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
	}
	return n < 0 || wc.status ? -EIO : 0;
}

/* mode=core: the ib_cqe that replaces a request's kind as its wr_id. */
static struct ib_cqe *rp_cqe(struct rp *p, int side, u64 kind)
{
	return &p->ring[side]->cqe[kind].cqe;
}

/*
 * Register @len bytes at @buf: the pages into a DMA-mapped scatterlist,
 * a fast-register MR filled from it, IB_WR_REG_MR on side 0's QP and its
 * completion polled. @split, if set, adds the time of the three parts.
 */
static int rp_reg(struct rp *p, void *buf, u32 len, struct rp_mr *m,
		  u64 *split)
{
	struct ib_device *dev = p->pd->device;
	unsigned int off = offset_in_page(buf);
	u32 i, npages = DIV_ROUND_UP(off + len, PAGE_SIZE);
	u8 *base = (u8 *)buf - off;
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			  IB_ACCESS_REMOTE_WRITE,
	};
	struct page **pages;
	ktime_t t0, t1, t2;
	int err;

	t0 = ktime_get();
	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < npages; i++)
		pages[i] = virt_to_page(base + i * PAGE_SIZE);
	err = sg_alloc_table_from_pages(&m->sgt, pages, npages, off, len,
					GFP_KERNEL);
	kvfree(pages);
	if (err)
		return err;
	err = ib_dma_map_sgtable_attrs(dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
	if (err)
		return err;
	m->mapped = true;
	t1 = ktime_get();
	m->mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(m->mr)) {
		err = PTR_ERR(m->mr);
		m->mr = NULL;
		return err;
	}
	if (ib_map_mr_sg(m->mr, m->sgt.sgl, m->sgt.nents, NULL,
			 PAGE_SIZE) != m->sgt.nents)
		return -EIO;
	t2 = ktime_get();
	wr.mr = m->mr;
	wr.key = m->mr->rkey;
	if (p->core)
		wr.wr.wr_cqe = rp_cqe(p, 0, 0);
	err = ib_post_send(p->conn[0]->id->qp, &wr.wr, NULL);
	if (!err)
		err = rp_reg_wait(p);
	if (split) {
		split[0] += ktime_to_ns(ktime_sub(t1, t0));
		split[1] += ktime_to_ns(ktime_sub(t2, t1));
		split[2] += ktime_to_ns(ktime_sub(ktime_get(), t2));
	}
	return err;
}

static void rp_teardown(void *st)
{
	struct rp *p = st;
	int s;

	if (p->reg_n)
		pr_info("detail workload=reg_mr mode=raw n=%llu map_ns=%llu alloc_ns=%llu post_ns=%llu\n",
			p->reg_n, div64_u64(p->reg_map_ns, p->reg_n),
			div64_u64(p->reg_alloc_ns, p->reg_n),
			div64_u64(p->reg_post_ns, p->reg_n));
	if (p->conn_n)
		pr_info("detail workload=conn mode=raw n=%llu connect_ns=%llu disconnect_ns=%llu close_qp_ns=%llu close_id_ns=%llu\n",
			p->conn_n, div64_u64(p->conn_ns[0], p->conn_n),
			div64_u64(p->conn_ns[1], p->conn_n),
			div64_u64(p->conn_ns[2], p->conn_n),
			div64_u64(p->conn_ns[3], p->conn_n));
	if (p->conn[0] && p->conn[0]->id && p->conn[1] && p->conn[1]->id)
		rp_disconnect(p->conn[0]);
	for (s = 1; s >= 0; s--) {
		rp_destroy_conn(p->conn[s]);
		rp_dereg(p, &p->mr[s]);
	}
	if (!IS_ERR_OR_NULL(p->listen))
		rdma_destroy_id(p->listen);
	for (s = 1; s >= 0; s--) {
		if (!IS_ERR_OR_NULL(p->cq[s]) && p->core)
			ib_free_cq(p->cq[s]);
		else if (!IS_ERR_OR_NULL(p->cq[s]))
			ib_destroy_cq(p->cq[s]);
		/* After ib_free_cq(): the last flushes went through ->done. */
		if (p->ring[s])
			kfree(p->ring[s]->ent);
		kfree(p->ring[s]);
		if (!IS_ERR_OR_NULL(p->scq[s][0]))
			ib_destroy_cq(p->scq[s][0]);
		if (!IS_ERR_OR_NULL(p->scq[s][1]))
			ib_destroy_cq(p->scq[s][1]);
	}
	if (!IS_ERR_OR_NULL(p->pd))
		ib_dealloc_pd(p->pd);
	kfree(p->buf[0]);
	kfree(p->buf[1]);
	kfree(p->rbuf);
	kvfree(p->sc);
	kfree(p);
}

static void rp_comp(struct ib_cq *cq, void *ctx)
{
	perf_notified(ctx);
}

/*
 * mode=core: what ndk's ->done would do for every completion, in the
 * core's softirq: copy it into the ring and, if the consumer armed the
 * ring, disarm it and notify. There is no call at the end of a batch, so
 * the arm is checked per completion.
 */
static void rp_core_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rp_cqe *c = container_of(wc->wr_cqe, struct rp_cqe, cqe);
	struct rp_ring *r = c->ring;
	u32 head = r->head;

	/*
	 * Acquire: the consumer is done with the entries before its tail.
	 * Never full with depth outstanding; ndk would report an overrun.
	 */
	if (WARN_ON_ONCE(head - smp_load_acquire(&r->tail) > r->mask))
		return;
	r->ent[head & r->mask] = (struct perf_wc) { .kind = c->kind,
						    .status = wc->status };
	/* Release: the entry is written before the consumer sees it. */
	smp_store_release(&r->head, head + 1);
	/*
	 * Pairs with rp_core_arm(): either this sees the arm or the poll
	 * that follows the arm sees this completion.
	 */
	smp_mb();
	if (READ_ONCE(r->armed) && xchg(&r->armed, 0))
		perf_notified(r->notify);
}

static struct rp_ring *rp_ring_alloc(u32 cqe, struct perf_notify *notify)
{
	struct rp_ring *r = kzalloc(sizeof(*r), GFP_KERNEL);
	u32 n = roundup_pow_of_two(cqe);
	int k;

	if (!r)
		return NULL;
	r->ent = kcalloc(n, sizeof(*r->ent), GFP_KERNEL);
	if (!r->ent) {
		kfree(r);
		return NULL;
	}
	r->mask = n - 1;
	r->notify = notify;
	for (k = 0; k < ARRAY_SIZE(r->cqe); k++) {
		r->cqe[k].cqe.done = rp_core_done;
		r->cqe[k].ring = r;
		r->cqe[k].kind = k;
	}
	return r;
}

static int rp_setup_objects(struct rp *p)
{
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_port = htons(p->cfg->port),
				    .sin_addr.s_addr = p->cfg->addr };
	struct ib_cq_init_attr attr = { .cqe = 4 * p->cfg->depth };
	u32 len = 2 * p->cfg->size;
	struct ib_device *dev;
	int err, s;

	/* Binding the listener to the address finds the device. */
	p->lconn.p = p;
	p->listen = rdma_create_id(&init_net, rp_cm_handler, &p->lconn,
				   RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(p->listen))
		return PTR_ERR(p->listen);
	err = rdma_bind_addr(p->listen, (struct sockaddr *)&addr);
	if (!err)
		err = rdma_listen(p->listen, 16);
	if (err)
		return err;
	dev = p->listen->device;
	if (!dev)
		return -ENODEV;
	p->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(p->pd))
		return PTR_ERR(p->pd);
	for (s = 0; s < 2; s++) {
		/*
		 * Polled, or in notify_lat with the completion handler of a
		 * ULP that wakes its thread from the driver's context; in
		 * mode=core (notify_lat only) the core's CQ and a ring.
		 */
		if (p->core) {
			p->ring[s] = rp_ring_alloc(attr.cqe,
						   &p->cfg->notify[s]);
			if (!p->ring[s])
				return -ENOMEM;
			p->cq[s] = ib_alloc_cq(dev, NULL, attr.cqe, 0,
					       IB_POLL_SOFTIRQ);
		} else {
			p->cq[s] = ib_create_cq(dev, p->cfg->notify ?
						rp_comp : NULL, NULL,
						p->cfg->notify ?
						&p->cfg->notify[s] : (void *)p,
						&attr);
		}
		if (IS_ERR(p->cq[s]))
			return PTR_ERR(p->cq[s]);
		p->buf[s] = kzalloc(len, GFP_KERNEL);
		if (!p->buf[s])
			return -ENOMEM;
	}
	if (p->cfg->wl == PERF_REG_MR) {
		p->rbuf = kzalloc(p->cfg->size, GFP_KERNEL);
		if (!p->rbuf)
			return -ENOMEM;
	}
	if (p->cfg->wl == PERF_CONN_SCALE) {
		/* Deep enough for one completion of each connection. */
		attr.cqe = p->cfg->conns + 16;
		for (s = 0; s < 4; s++) {
			p->scq[s / 2][s % 2] = ib_create_cq(dev, NULL, NULL, p,
							    &attr);
			if (IS_ERR(p->scq[s / 2][s % 2]))
				return PTR_ERR(p->scq[s / 2][s % 2]);
		}
		p->sc = kvcalloc(2 * p->cfg->conns, sizeof(*p->sc),
				 GFP_KERNEL);
		if (!p->sc)
			return -ENOMEM;
	}
	err = rp_connect(p, &p->conn[0], &p->conn[1]);
	for (s = 0; s < 2 && !err; s++)
		err = rp_reg(p, p->buf[s], len, &p->mr[s], NULL);
	return err;
}

static void *rp_setup_mode(const struct perf_cfg *cfg, bool core)
{
	struct rp *p = kzalloc(sizeof(*p), GFP_KERNEL);
	int err;

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->cfg = cfg;
	p->core = core;
	init_waitqueue_head(&p->wq);
	init_completion(&p->sc_done);
	err = rp_setup_objects(p);
	if (err) {
		rp_teardown(p);
		return ERR_PTR(err);
	}
	return p;
}

static void *rp_setup(const struct perf_cfg *cfg)
{
	return rp_setup_mode(cfg, false);
}

static void *rp_core_setup(const struct perf_cfg *cfg)
{
	return rp_setup_mode(cfg, true);
}

static u8 *rp_buf(void *st, int side)
{
	return ((struct rp *)st)->buf[side];
}

/* The address of @buf's byte @off in its region. */
static u64 rp_addr(struct rp *p, int side, u32 off)
{
	return p->mr[side].mr->iova + off;
}

static int rp_post(struct rp *p, int side, struct ib_send_wr *wr, u32 off,
		   u32 len)
{
	struct ib_sge sge = { .addr = rp_addr(p, side, off), .length = len,
			      .lkey = p->mr[side].mr->lkey };

	if (p->core)
		wr->wr_cqe = rp_cqe(p, side, wr->wr_id);
	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = IB_SEND_SIGNALED;
	return ib_post_send(p->conn[side]->id->qp, wr, NULL);
}

static int rp_send(void *st, int side, u32 len)
{
	struct ib_send_wr wr = { .wr_id = PERF_K_SEND, .opcode = IB_WR_SEND };

	return rp_post(st, side, &wr, 0, len);
}

static int rp_recv(void *st, int side, u32 len)
{
	struct rp *p = st;
	struct ib_sge sge = { .addr = rp_addr(p, side, p->cfg->size),
			      .length = len, .lkey = p->mr[side].mr->lkey };
	struct ib_recv_wr wr = { .wr_id = PERF_K_RECV, .sg_list = &sge,
				 .num_sge = 1 };

	if (p->core)
		wr.wr_cqe = rp_cqe(p, side, PERF_K_RECV);
	return ib_post_recv(p->conn[side]->id->qp, &wr, NULL);
}

/* From this side's first half into the peer's second half. */
static int rp_write(void *st, int side, u32 len)
{
	struct rp *p = st;
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = PERF_K_WRITE, .opcode = IB_WR_RDMA_WRITE },
		.remote_addr = rp_addr(p, !side, p->cfg->size),
		.rkey = p->mr[!side].mr->rkey,
	};

	return rp_post(p, side, &wr.wr, 0, len);
}

/* From the peer's first half into this side's second half. */
static int rp_read(void *st, int side, u32 len)
{
	struct rp *p = st;
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = PERF_K_READ, .opcode = IB_WR_RDMA_READ },
		.remote_addr = rp_addr(p, !side, 0),
		.rkey = p->mr[!side].mr->rkey,
	};

	return rp_post(p, side, &wr.wr, p->cfg->size, len);
}

static int rp_poll(void *st, int side, struct perf_wc *wc, int n)
{
	struct rp *p = st;
	int i, got;

	got = ib_poll_cq(p->cq[side], min(n, RP_POLL_MAX), p->wc);
	for (i = 0; i < got; i++) {
		wc[i].kind = p->wc[i].wr_id;
		wc[i].status = p->wc[i].status;
	}
	return got;
}

static void rp_arm(void *st, int side)
{
	ib_req_notify_cq(((struct rp *)st)->cq[side], IB_CQ_NEXT_COMP);
}

/* mode=core: NdkGetCqResults would read the ring, not the CQ. */
static int rp_core_poll(void *st, int side, struct perf_wc *wc, int n)
{
	struct rp_ring *r = ((struct rp *)st)->ring[side];
	u32 tail = r->tail, head;
	int i;

	/* Acquire: the entries before head are written; see rp_core_done(). */
	head = smp_load_acquire(&r->head);
	for (i = 0; i < n && tail != head; i++, tail++)
		wc[i] = r->ent[tail & r->mask];
	/* Release: the entries are read before ->done may reuse them. */
	smp_store_release(&r->tail, tail);
	return i;
}

/*
 * mode=core: the arm is only the ring's, ndk's rule; the core CQ is
 * always armed by its softirq. ndk would also notify at once for a ring
 * that is not empty; the harness polls after arming and finds those.
 */
static void rp_core_arm(void *st, int side)
{
	/* Ordered before the poll after the arm; see rp_core_done(). */
	smp_store_mb(((struct rp *)st)->ring[side]->armed, 1);
}

/* Timed: the registration until its completion; deregistered untimed. */
static int rp_reg_once(void *st, u64 *ns)
{
	struct rp *p = st;
	struct rp_mr m = { };
	u64 split[3] = { };
	int err;

	err = rp_reg(p, p->rbuf, p->cfg->size, &m, split);
	*ns = split[0] + split[1] + split[2];
	p->reg_map_ns += split[0];
	p->reg_alloc_ns += split[1];
	p->reg_post_ns += split[2];
	p->reg_n++;
	rp_dereg(p, &m);
	return err;
}

/* New ids and QPs each time, all destroyed again. */
static int rp_conn_once(void *st)
{
	struct rp *p = st;
	struct rp_conn *c, *s;
	ktime_t t[5];
	int err, i;

	t[0] = ktime_get();
	err = rp_connect(p, &c, &s);
	t[1] = ktime_get();
	if (!err)
		rp_disconnect(c);
	t[2] = ktime_get();
	rp_destroy_qp(s);
	rp_destroy_qp(c);
	t[3] = ktime_get();
	rp_destroy_conn(s);
	rp_destroy_conn(c);
	t[4] = ktime_get();
	for (i = 0; i < 4; i++)
		p->conn_ns[i] += ktime_to_ns(ktime_sub(t[i + 1], t[i]));
	p->conn_n++;
	return err;
}

/*
 * objects: one object of @kind created and destroyed, as a kernel ULP
 * gets the same: the QP moved to INIT as rdma_create_qp() and ndk do on
 * IB and RoCE, the MR one that fast registration fills, the connector an
 * rdma_cm id, the listener an id bound to an ephemeral port and listening.
 */
static int rp_obj_once(void *st, int kind)
{
	struct rp *p = st;
	struct ib_device *dev = p->pd->device;
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = p->cfg->addr };
	struct ib_cq_init_attr cq_attr = { .cqe = 4 * p->cfg->depth };
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_WRITE,
	};
	struct ib_qp_init_attr init;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_mr *mr;
	int err;

	switch (kind) {
	case PERF_O_PD:
		pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(pd))
			return PTR_ERR(pd);
		ib_dealloc_pd(pd);
		return 0;
	case PERF_O_CQ:
		cq = ib_create_cq(dev, NULL, NULL, p, &cq_attr);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		ib_destroy_cq(cq);
		return 0;
	case PERF_O_QP:
		rp_qp_attr(p, 0, &init);
		qp = ib_create_qp(p->pd, &init);
		if (IS_ERR(qp))
			return PTR_ERR(qp);
		err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
		ib_destroy_qp(qp);
		return err;
	case PERF_O_MR:
		mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG,
				 DIV_ROUND_UP(p->cfg->size, PAGE_SIZE) + 1);
		if (IS_ERR(mr))
			return PTR_ERR(mr);
		ib_dereg_mr(mr);
		return 0;
	case PERF_O_CONNECTOR:
		id = rdma_create_id(&init_net, rp_cm_handler, &p->lconn,
				    RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(id))
			return PTR_ERR(id);
		rdma_destroy_id(id);
		return 0;
	default:
		id = rdma_create_id(&init_net, rp_cm_handler, &p->lconn,
				    RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(id))
			return PTR_ERR(id);
		err = rdma_bind_addr(id, (struct sockaddr *)&addr);
		if (!err)
			err = rdma_listen(id, 0);
		rdma_destroy_id(id);
		return err;
	}
}

/*
 * conn_scale, as a kernel ULP that opens many connections writes it
 * (nvme-rdma, for one): every rdma_resolve_addr() issued at once and
 * each connection carried on from the rdma_cm handler: route resolution,
 * the QP and rdma_connect_locked() on the active side, the QP, a receive
 * and rdma_accept() on the request's id on the passive side. The thread
 * waits once per phase. rp_sc_put() counts down an awaited event.
 */
static void rp_sc_start(struct rp *p)
{
	atomic_set(&p->sc_pending, 1);
	atomic_set(&p->sc_status, 0);
	reinit_completion(&p->sc_done);
}

static void rp_sc_put(struct rp *p, int err)
{
	/* A failure ends the wait: its peer's events may never come. */
	if (err && !atomic_cmpxchg(&p->sc_status, 0, err))
		complete(&p->sc_done);
	if (atomic_dec_and_test(&p->sc_pending))
		complete(&p->sc_done);
}

static int rp_sc_wait(struct rp *p, const char *what)
{
	rp_sc_put(p, 0);
	if (!wait_for_completion_timeout(&p->sc_done, RP_SCALE_WAIT)) {
		pr_err("conn_scale: %s: %d events did not come\n", what,
		       atomic_read(&p->sc_pending));
		return -ETIMEDOUT;
	}
	if (atomic_read(&p->sc_status)) {
		pr_err("conn_scale: %s failed: %d\n", what,
		       atomic_read(&p->sc_status));
		return -EIO;
	}
	return 0;
}

static void rp_sc_qp_attr(struct rp *p, int side, struct ib_qp_init_attr *init)
{
	rp_qp_attr(p, side, init);
	init->send_cq = p->scq[side][0];
	init->recv_cq = p->scq[side][1];
}

/* A request on the listener, from its handler: the next end of side 1. */
static int rp_sc_accept(struct rp *p, struct rdma_cm_id *id)
{
	u32 i = atomic_inc_return(&p->sc_accepted) - 1;
	struct ib_sge sge = { .length = p->cfg->size };
	struct ib_recv_wr wr = { .wr_id = PERF_K_RECV, .sg_list = &sge,
				 .num_sge = 1 };
	struct rdma_conn_param param;
	struct ib_qp_init_attr init;
	struct rp_conn *c;
	int err;

	if (i >= p->cfg->conns) {
		rp_sc_put(p, -EINVAL);
		return -EINVAL;
	}
	c = &p->sc[2 * i + 1];
	id->context = c;
	rp_sc_qp_attr(p, 1, &init);
	err = rdma_create_qp(id, p->pd, &init);
	if (err)
		goto out;
	/* Posted before the accept, so that no send meets an empty queue. */
	sge.addr = rp_addr(p, 1, p->cfg->size);
	sge.lkey = p->mr[1].mr->lkey;
	err = ib_post_recv(id->qp, &wr, NULL);
	if (!err) {
		rp_conn_param(&param);
		err = rdma_accept(id, &param);
	}
	if (err)
		rdma_destroy_qp(id);
	else
		c->id = id;
out:
	if (err)
		rp_sc_put(p, err);
	/* Non-zero makes rdma_cm destroy the new id. */
	return err;
}

static int rp_sc_handler(struct rp_conn *c, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev)
{
	struct rp *p = c->p;
	struct rdma_conn_param param;
	struct ib_qp_init_attr init;
	int err = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = rdma_resolve_route(id, RP_CM_TIMEOUT);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rp_sc_qp_attr(p, 0, &init);
		err = rdma_create_qp(id, p->pd, &init);
		if (!err) {
			rp_conn_param(&param);
			/* The handler holds the id's lock already. */
			err = rdma_connect_locked(id, &param);
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		WRITE_ONCE(c->up, true);
		rp_sc_put(p, 0);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* The passive end answers the request (DREP) at once. */
		if (c->side)
			rdma_disconnect(id);
		else
			rp_sc_put(p, 0);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		pr_err("conn_scale: side %d: event %d, status %d\n", c->side,
		       ev->event, ev->status);
		err = -EIO;
		break;
	}
	if (err)
		rp_sc_put(p, err);
	/* The ids are destroyed by rp_scale_close(), not by rdma_cm. */
	return 0;
}

static int rp_scale_open(void *st)
{
	struct rp *p = st;
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = p->cfg->addr };
	struct sockaddr_in dst = src;
	struct rdma_cm_id *id;
	struct rp_conn *c;
	u32 i;
	int err;

	dst.sin_port = htons(p->cfg->port);
	atomic_set(&p->sc_accepted, 0);
	WRITE_ONCE(p->sc_open, true);
	rp_sc_start(p);
	for (i = 0; i < p->cfg->conns; i++) {
		c = &p->sc[2 * i];
		c->p = p;
		c->scale = true;
		c[1].p = p;
		c[1].scale = true;
		c[1].side = 1;
		id = rdma_create_id(&init_net, rp_cm_handler, c, RDMA_PS_TCP,
				    IB_QPT_RC);
		if (IS_ERR(id)) {
			rp_sc_put(p, PTR_ERR(id));
			break;
		}
		c->id = id;
		/* Established on both sides: two events. */
		atomic_add(2, &p->sc_pending);
		err = rdma_resolve_addr(id, (struct sockaddr *)&src,
					(struct sockaddr *)&dst,
					RP_CM_TIMEOUT);
		if (err) {
			rp_sc_put(p, err);
			rp_sc_put(p, 0);
		}
	}
	return rp_sc_wait(p, "connecting");
}

static int rp_scale_send(void *st)
{
	struct rp *p = st;
	struct ib_sge sge = { .addr = rp_addr(p, 0, 0),
			      .length = p->cfg->size,
			      .lkey = p->mr[0].mr->lkey };
	struct ib_send_wr wr = { .wr_id = PERF_K_SEND, .opcode = IB_WR_SEND,
				 .sg_list = &sge, .num_sge = 1,
				 .send_flags = IB_SEND_SIGNALED };
	unsigned long end = jiffies + RP_SCALE_WAIT;
	u32 n = p->cfg->conns, want[2] = { n, n }, i;
	struct ib_cq *cq[2] = { p->scq[0][0], p->scq[1][1] };
	int k, j, got, err;

	for (i = 0; i < n; i++) {
		err = ib_post_send(p->sc[2 * i].id->qp, &wr, NULL);
		if (err) {
			pr_err("conn_scale: send failed: %d\n", err);
			return err;
		}
	}
	while (want[0] || want[1]) {
		for (k = 0; k < 2; k++) {
			got = ib_poll_cq(cq[k], RP_POLL_MAX, p->wc);
			if (got < 0)
				return got;
			for (j = 0; j < got; j++) {
				if (p->wc[j].status) {
					pr_err("conn_scale: completion failed: %d\n",
					       p->wc[j].status);
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

/* Disconnect from side 0 what connected, then destroy everything. */
static void rp_scale_close(void *st)
{
	struct rp *p = st;
	u32 n = p->cfg->conns, i;
	struct rp_conn *c;

	WRITE_ONCE(p->sc_open, false);
	rp_sc_start(p);
	for (i = 0; i < n; i++) {
		c = &p->sc[2 * i];
		if (!READ_ONCE(c->up))
			continue;
		atomic_inc(&p->sc_pending);
		if (rdma_disconnect(c->id))
			rp_sc_put(p, -EIO);
	}
	rp_sc_wait(p, "disconnecting");
	for (i = 0; i < 2 * n; i++) {
		c = &p->sc[i];
		if (!c->id)
			continue;
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	memset(p->sc, 0, 2 * n * sizeof(*p->sc));
}

const struct perf_ops perf_raw_ops = {
	.name = "raw",
	.setup = rp_setup,
	.teardown = rp_teardown,
	.buf = rp_buf,
	.send = rp_send,
	.recv = rp_recv,
	.write = rp_write,
	.read = rp_read,
	.poll = rp_poll,
	.arm = rp_arm,
	.reg_once = rp_reg_once,
	.conn_once = rp_conn_once,
	.obj_once = rp_obj_once,
	.scale_open = rp_scale_open,
	.scale_send = rp_scale_send,
	.scale_close = rp_scale_close,
};

/* notify_lat only: the other workloads poll, or need no CQ. */
const struct perf_ops perf_core_ops = {
	.name = "core",
	.setup = rp_core_setup,
	.teardown = rp_teardown,
	.buf = rp_buf,
	.send = rp_send,
	.recv = rp_recv,
	.write = rp_write,
	.read = rp_read,
	.poll = rp_core_poll,
	.arm = rp_core_arm,
};
