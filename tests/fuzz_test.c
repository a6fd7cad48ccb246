// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_fuzz: a seeded consumer fuzzer with a reference model.
 *
 * A connected pair of QPs, each with a CQ of its own, takes a random
 * sequence of posting, polling, arming and flushing calls, drawn from a
 * seed: valid and invalid SGE counts, lengths, tokens and flags, made
 * with a spinlock held, from a timer's softirq, and (the polls) inside
 * the CQs' notification callbacks. A model predicts the status of every
 * call and checks every result: each accepted request gets exactly one
 * (a silent one at most one), of its queue, in order, with its type,
 * and while nothing has failed, with success and the byte count its
 * peer's request implies. A request the model knows must fail (a
 * receive too small, a remote token or range that is wrong, a flush)
 * breaks the connection: from then on a result may carry any completion
 * status ndk documents, still exactly once, until the model drains both
 * queues, closes the pair and connects a new one.
 *
 * The seeds and the number of calls come from the kernel command line
 * (ndk_check.fuzz_seeds=1,2,3 ndk_check.fuzz_ops=N, `make fuzz`); `make
 * check` runs a few fixed seeds, briefly. A failing seed is run again on
 * shorter prefixes of its calls, and the shortest that still fails is
 * printed with the seed.
 */
#include <linux/delay.h>
#include <linux/timer.h>
#include "ndk_tests.h"

#define NDK_FZ_DEPTH	8	/* requests per queue */
#define NDK_FZ_SGE	3	/* SGEs per request */
#define NDK_FZ_INLINE	64	/* inline bytes */
#define NDK_FZ_CQ	64	/* CQ entries */
#define NDK_FZ_QCAP	64	/* requests the model tracks per queue */
#define NDK_FZ_BROKEN	32	/* calls at most after a failure */
#define NDK_FZ_LOG	40	/* calls and results a failure shows */

/* The seeds and calls of `make check`. */
static const u64 ndk_fz_check_seeds[] = { 1, 2, 3 };
#define NDK_FZ_CHECK_OPS	400

enum { NDK_FZ_SQ, NDK_FZ_RQ };

/* One request the model waits for. */
struct ndk_fz_req {
	u64 ctx;
	u8 type;	/* NDK_OPERATION_TYPE */
	bool live;
	bool silent;
	bool matched;	/* a receive: its send is known */
	bool inval;	/* a receive: its send invalidates */
	u32 len;	/* bytes a send carries, a read reads, a receive holds */
};

struct ndk_fz_queue {
	struct ndk_fz_req r[NDK_FZ_QCAP];
	u32 head;	/* next request's index */
	u32 tail;	/* oldest live one */
};

/* Messages to one side not matched yet: its sends or its receives. */
struct ndk_fz_match {
	u32 seq[NDK_FZ_QCAP];	/* receive: index in the RQ; send: length */
	bool inval[NDK_FZ_QCAP];
	u32 head, tail;
	bool sends;
};

struct ndk_fz;

struct ndk_fz_side {
	struct ndk_fz *f;
	int i;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	struct ndk_pmem *mem;	/* data, and the peer's RDMA target */
	struct ndk_pmem *inv;	/* what the peer's sends invalidate */
	struct ndk_fz_queue q[2];
	struct ndk_fz_match match;	/* messages to this side */
	bool inv_out;
	bool armed;
	u32 polls;		/* by the notification callback */
};

struct ndk_fz {
	struct kunit *test;
	struct ndk_cenv *e;
	spinlock_t lock;	/* the model, and every NDK call it makes */
	u64 seed;
	u64 rnd;
	u32 ops;		/* calls to make */
	u32 op;			/* the one being made */
	u32 round;
	u64 next_ctx;
	bool iwarp;
	bool broken;
	u32 broken_left;
	bool failed;
	u32 fail_op;
	char msg[256];
	char what[96];		/* the call being made */
	char log[NDK_FZ_LOG][112];	/* the last calls and results */
	u32 nlog;
	unsigned long *late;	/* by ctx >> 3: a silent one's result may come */
	u64 nctx;		/* ids @late has room for */
	u8 *buf;		/* with the privileged token */
	u64 dma;
	struct ib_device *dev;
	UINT32 ptok;
	NDK_ADAPTER_INFO info;
	struct ndk_fz_side s[2];
	struct ndk_test_call call;
};

static __printf(2, 3) void ndk_fz_fail(struct ndk_fz *f, const char *fmt, ...)
{
	va_list ap;

	if (f->failed)
		return;
	f->failed = true;
	f->fail_op = f->op;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
}

static __printf(2, 3) void ndk_fz_log(struct ndk_fz *f, const char *fmt, ...)
{
	va_list ap;

	if (f->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(f->log[f->nlog++ % NDK_FZ_LOG], sizeof(f->log[0]), fmt, ap);
	va_end(ap);
}

/* xorshift64*: the same sequence for a seed on every kernel. */
static u64 ndk_fz_next(u64 *s)
{
	u64 x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static u32 ndk_fz_below(struct ndk_fz *f, u32 n)
{
	return n ? (u32)((ndk_fz_next(&f->rnd) >> 32) % n) : 0;
}

static bool ndk_fz_one_in(struct ndk_fz *f, u32 n)
{
	return ndk_fz_below(f, n) == 0;
}

/* The completion statuses ndk documents (status.rst). */
static bool ndk_fz_documented(NTSTATUS st)
{
	static const NTSTATUS ok[] = {
		STATUS_SUCCESS, STATUS_CANCELLED, STATUS_BUFFER_OVERFLOW,
		STATUS_CONNECTION_ABORTED, STATUS_INTERNAL_ERROR,
		STATUS_ACCESS_VIOLATION, STATUS_INVALID_NETWORK_RESPONSE,
		STATUS_INVALID_PARAMETER, STATUS_CONNECTION_RESET,
		STATUS_IO_TIMEOUT, STATUS_REMOTE_RESOURCES,
		STATUS_UNSUCCESSFUL,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(ok); i++)
		if (st == ok[i])
			return true;
	return false;
}

static void ndk_fz_break(struct ndk_fz *f)
{
	if (f->broken)
		return;
	f->broken = true;
	f->broken_left = 1 + ndk_fz_below(f, NDK_FZ_BROKEN);
}

static u32 ndk_fz_live(struct ndk_fz_queue *q, bool *silent)
{
	u32 i, n = 0;

	*silent = false;
	for (i = q->tail; i != q->head; i++) {
		struct ndk_fz_req *r = &q->r[i % NDK_FZ_QCAP];

		if (r->live) {
			n++;
			*silent |= r->silent;
		}
	}
	return n;
}

static void ndk_fz_advance(struct ndk_fz_queue *q)
{
	while (q->tail != q->head && !q->r[q->tail % NDK_FZ_QCAP].live)
		q->tail++;
}

/*
 * A silent request the model stops waiting for, done unseen or with a
 * failure still to come (after its QP closed, or out of order on siw).
 */
static void ndk_fz_late(struct ndk_fz *f, u64 ctx)
{
	if ((ctx >> 3) < f->nctx)
		set_bit(ctx >> 3, f->late);
}

/*
 * The device accepted a request where the model counted the queue full:
 * only silent requests done unseen can have made room, and they are the
 * oldest (a queue completes in order). Forget enough of them.
 */
static void ndk_fz_room(struct ndk_fz *f, struct ndk_fz_queue *q, u32 live)
{
	u32 i;

	for (i = q->tail; i != q->head && live >= NDK_FZ_DEPTH; i++) {
		struct ndk_fz_req *r = &q->r[i % NDK_FZ_QCAP];

		if (!r->live)
			continue;
		/* siw completes what follows a read before the read. */
		if (f->iwarp && r->type == NdkOperationTypeRead && !r->silent)
			continue;
		if (!r->silent) {
			if (!f->broken)
				ndk_fz_fail(f, "%s taken, %u waiting, first %llx",
					    f->what, live, r->ctx);
			return;
		}
		/* Done, or (siw, out of order) its failure is still to come. */
		ndk_fz_late(f, r->ctx);
		r->live = false;
		live--;
	}
	ndk_fz_advance(q);
}

/* A random SGE list: its total, and whether it has the privileged token. */
struct ndk_fz_sgl {
	NDK_SGE sge[NDK_FZ_SGE + 1];
	ULONG n;
	bool null;	/* pass NULL for the array */
	u64 total;
	bool privileged;
};

/* Requests ndk counts in a queue: posted, not retired. */
static u32 ndk_fz_ndk_live(struct ndk_fz *f, int side, int qi)
{
	struct ndk_qp *qp = container_of(f->s[side].qp, struct ndk_qp, ndk);
	struct ndk_wr_ring *ring = qi == NDK_FZ_SQ ? &qp->sq : &qp->rq;

	return ring->head - READ_ONCE(ring->retired);
}

/* What the call being made is, for a failure's message. */
static void ndk_fz_what(struct ndk_fz *f, const char *call, u64 ctx,
			const struct ndk_fz_sgl *l, ULONG flags)
{
	snprintf(f->what, sizeof(f->what),
		 "%s %llx: %u SGEs%s, %llu bytes%s, flags 0x%x", call, ctx,
		 l->n, l->null ? " (NULL)" : "", l->total,
		 l->privileged ? " (privileged)" : "", flags);
}

static u64 ndk_fz_ctx(struct ndk_fz *f, int side, int qi)
{
	return (f->next_ctx++ << 3) | (side << 1) | qi;
}

static struct ndk_fz_req *ndk_fz_add(struct ndk_fz *f, int side, int qi,
				     u64 ctx, u8 type, bool silent, u32 len)
{
	struct ndk_fz_queue *q = &f->s[side].q[qi];
	struct ndk_fz_req *r = &q->r[q->head % NDK_FZ_QCAP];

	*r = (struct ndk_fz_req){ .ctx = ctx, .type = type, .live = true,
				  .silent = silent, .len = len };
	q->head++;
	return r;
}

/*
 * Pair a send of @len bytes to @d (@inval: with invalidate) or a receive
 * of @d (@rseq its index, @len its room) with what waits unmatched.
 */
static void ndk_fz_match(struct ndk_fz *f, struct ndk_fz_side *d, bool send,
			 u32 len, bool inval, u32 rseq)
{
	struct ndk_fz_match *m = &d->match;
	struct ndk_fz_req *rr;
	u32 slen, room;

	if (m->head == m->tail || m->sends == send) {
		if (m->head - m->tail == NDK_FZ_QCAP) {
			ndk_fz_break(f);
			return;
		}
		m->sends = send;
		m->seq[m->head % NDK_FZ_QCAP] = send ? len : rseq;
		m->inval[m->head % NDK_FZ_QCAP] = inval;
		m->head++;
		return;
	}
	if (send) {
		rseq = m->seq[m->tail % NDK_FZ_QCAP];
		slen = len;
	} else {
		slen = m->seq[m->tail % NDK_FZ_QCAP];
		inval = m->inval[m->tail % NDK_FZ_QCAP];
	}
	m->tail++;
	rr = &d->q[NDK_FZ_RQ].r[rseq % NDK_FZ_QCAP];
	room = rr->len;
	if (slen > room) {
		/* Too large for its receive: both fail. */
		ndk_fz_break(f);
		return;
	}
	rr->matched = true;
	rr->inval = inval;
	rr->len = slen;
}

static void ndk_fz_sgl(struct ndk_fz *f, struct ndk_fz_side *s,
		       struct ndk_fz_sgl *l, u32 maxsge, bool big)
{
	u32 i, off, len;

	l->n = ndk_fz_one_in(f, 24) ? maxsge + 1 : ndk_fz_below(f, maxsge + 1);
	l->null = l->n && ndk_fz_one_in(f, 40);
	l->total = 0;
	l->privileged = false;
	for (i = 0; i < l->n; i++) {
		if (big)
			len = 128 + ndk_fz_below(f, 1024);
		else
			len = ndk_fz_one_in(f, 4) ? ndk_fz_below(f, 8) :
						   ndk_fz_below(f, 96);
		if (ndk_fz_one_in(f, 2)) {
			off = ndk_fz_below(f, NDK_POST_BUF - len + 1);
			l->sge[i].LogicalAddress = f->dma + off;
			l->sge[i].Length = len;
			l->sge[i].MemoryRegionToken = f->ptok;
			l->privileged = true;
		} else {
			off = ndk_fz_below(f, NDK_PMEM_LEN - len + 1);
			l->sge[i] = ndk_pmem_sge(s->mem, off, len);
		}
		if (ndk_fz_one_in(f, 64))
			l->sge[i].Length = f->info.MaxTransferLength + 1;
		l->total += l->sge[i].Length;
	}
}

/*
 * NDKPI's checks of a posting call, in ndk's order (qp.c): the status a
 * call with these arguments must get, the queue's room aside.
 */
static NTSTATUS ndk_fz_expect(struct ndk_fz *f, const struct ndk_fz_sgl *l,
			      u32 maxsge, ULONG flags, ULONG allowed)
{
	if (flags & ~allowed)
		return STATUS_INVALID_PARAMETER;
	if (l->n > maxsge || (l->n && l->null))
		return STATUS_INVALID_PARAMETER;
	if (l->total > f->info.MaxTransferLength)
		return STATUS_INVALID_BUFFER_SIZE;
	if ((flags & NDK_OP_FLAG_INLINE) &&
	    (l->total > NDK_FZ_INLINE || l->privileged))
		return STATUS_INVALID_PARAMETER;
	return STATUS_SUCCESS;
}

/* Flags from @allowed, now and then one it does not take. */
static ULONG ndk_fz_flags(struct ndk_fz *f, ULONG allowed)
{
	static const ULONG other[] = {
		NDK_OP_FLAG_SILENT_SUCCESS, NDK_OP_FLAG_READ_FENCE,
		NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, NDK_OP_FLAG_INLINE,
		NDK_OP_FLAG_DEFER, NDK_OP_FLAG_ALLOW_REMOTE_READ,
		NDK_OP_FLAG_RDMA_READ_SINK, 0x1000, 0x80000000,
	};
	ULONG flags = 0;
	int i;

	for (i = 0; i < 5; i++)
		if ((other[i] & allowed) && ndk_fz_one_in(f, 4))
			flags |= other[i];
	if (ndk_fz_one_in(f, 48))
		flags |= other[ndk_fz_below(f, ARRAY_SIZE(other))];
	return flags;
}

/*
 * The post's status against the model's; on success the request joins
 * its queue. Return the request, or NULL.
 */
static struct ndk_fz_req *ndk_fz_posted(struct ndk_fz *f, int side, int qi,
					NTSTATUS want, NTSTATUS st, u64 ctx,
					u8 type, bool silent, u32 len)
{
	struct ndk_fz_queue *q = &f->s[side].q[qi];
	bool silents;
	u32 live = ndk_fz_live(q, &silents);
	bool full = live >= NDK_FZ_DEPTH;

	/*
	 * A receive whose result the CQ holds back until its region is
	 * restored (cq.c) has left its queue already.
	 */
	if (want == STATUS_SUCCESS && full && st == STATUS_SUCCESS &&
	    qi == NDK_FZ_RQ && f->s[side].inv_out)
		;
	else if (want == STATUS_SUCCESS && full && st == STATUS_SUCCESS)
		ndk_fz_room(f, q, live);
	else if (want == STATUS_SUCCESS && full && !silents)
		want = STATUS_INSUFFICIENT_RESOURCES;
	else if (want == STATUS_SUCCESS && full &&
		 st == STATUS_INSUFFICIENT_RESOURCES)
		want = st;
	/* Refused for the connection's state once it failed. */
	if (f->broken && st != want && st != STATUS_SUCCESS &&
	    (qi == NDK_FZ_SQ || want == STATUS_SUCCESS))
		want = st;
	ndk_fz_log(f, "%u: side %d %s: 0x%08x", f->op, side, f->what, st);
	if (st != want) {
		struct ndk_qp *qp = container_of(f->s[side].qp, struct ndk_qp,
						 ndk);

		/* Requests waiting: the model's and ndk's; the round. */
		ndk_fz_fail(f, "side %d %s: 0x%08x, model 0x%08x (%u/%u; %u%s%s)",
			    side, f->what, st, want, live,
			    ndk_fz_ndk_live(f, side, qi), f->round,
			    READ_ONCE(qp->connected) ? "" : ", disconnected",
			    READ_ONCE(qp->in_error) ? ", in error" : "");
		return NULL;
	}
	if (st != STATUS_SUCCESS)
		return NULL;
	if (q->head - q->tail >= NDK_FZ_QCAP - 1) {
		ndk_fz_break(f);
		f->broken_left = 0;
	}
	return ndk_fz_add(f, side, qi, ctx, type, silent, len);
}

static NTSTATUS ndk_fz_receive(struct ndk_fz *f, int side)
{
	struct ndk_fz_side *s = &f->s[side];
	struct ndk_fz_queue *q = &s->q[NDK_FZ_RQ];
	u64 ctx = ndk_fz_ctx(f, side, NDK_FZ_RQ);
	struct ndk_fz_sgl l;
	NTSTATUS want, st;
	u32 seq = q->head;

	/* Mostly room for any send; now and then too little. */
	ndk_fz_sgl(f, s, &l, NDK_FZ_SGE, !ndk_fz_one_in(f, 48));
	want = ndk_fz_expect(f, &l, NDK_FZ_SGE, 0, 0);
	ndk_fz_what(f, "receive", ctx, &l, 0);
	st = s->qp->Dispatch->NdkReceive(s->qp, (void *)ctx,
					 l.null ? NULL : l.sge, l.n);
	if (ndk_fz_posted(f, side, NDK_FZ_RQ, want, st, ctx,
			  NdkOperationTypeReceive, false, (u32)l.total))
		ndk_fz_match(f, s, false, (u32)l.total, false, seq);
	return st;
}

static NTSTATUS ndk_fz_send(struct ndk_fz *f, int side, bool inv)
{
	struct ndk_fz_side *s = &f->s[side], *d = &f->s[!side];
	ULONG allowed = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE |
			NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT |
			NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER;
	struct ndk_fz_sgl l;
	ULONG flags = ndk_fz_flags(f, allowed);
	u64 ctx = ndk_fz_ctx(f, side, NDK_FZ_SQ);
	UINT32 tok = 0;
	NTSTATUS want, st;
	bool bad = false;

	/*
	 * iWARP has no receiver-not-ready wait: a send that finds no
	 * receive fails the connection. Mostly, the peer posts one first.
	 */
	if (f->iwarp && (d->match.head == d->match.tail || d->match.sends)) {
		if (!ndk_fz_one_in(f, 8))
			return ndk_fz_receive(f, !side);
		bad = true;
	}
	ndk_fz_sgl(f, s, &l, NDK_FZ_SGE, false);
	want = ndk_fz_expect(f, &l, NDK_FZ_SGE, flags, allowed);
	if (inv) {
		/* One invalidation of the peer's region at a time. */
		tok = ndk_pmem_rtok(d->inv);
		if (ndk_fz_one_in(f, 16)) {
			bad = true;
			tok ^= 0x5a000000;
		} else if (d->inv_out) {
			inv = false;
		}
	}
	/* siw sends no inline data with an invalidation (deviations.rst). */
	if (inv && (flags & NDK_OP_FLAG_INLINE) && f->iwarp)
		want = STATUS_NOT_SUPPORTED;
	ndk_fz_what(f, inv ? "send-and-invalidate" : "send", ctx, &l, flags);
	if (inv)
		st = s->qp->Dispatch->NdkSendAndInvalidate(s->qp, (void *)ctx,
							   l.null ? NULL : l.sge,
							   l.n, flags, tok);
	else
		st = s->qp->Dispatch->NdkSend(s->qp, (void *)ctx,
					      l.null ? NULL : l.sge, l.n,
					      flags);
	if (!ndk_fz_posted(f, side, NDK_FZ_SQ, want, st, ctx,
			   NdkOperationTypeSend,
			   flags & NDK_OP_FLAG_SILENT_SUCCESS, (u32)l.total))
		return st;
	if (bad)
		ndk_fz_break(f);
	else if (inv)
		d->inv_out = true;
	ndk_fz_match(f, d, true, (u32)l.total, inv && !bad && !f->broken, 0);
	return st;
}

static NTSTATUS ndk_fz_rdma(struct ndk_fz *f, int side, bool write)
{
	struct ndk_fz_side *s = &f->s[side], *d = &f->s[!side];
	ULONG allowed = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE |
			NDK_OP_FLAG_DEFER;
	u32 maxsge = NDK_FZ_SGE;
	u64 ctx = ndk_fz_ctx(f, side, NDK_FZ_SQ);
	struct ndk_fz_sgl l;
	ULONG flags;
	UINT32 tok = ndk_pmem_rtok(d->mem);
	u64 raddr;
	NTSTATUS want, st;
	bool bad = false;

	if (write)
		allowed |= NDK_OP_FLAG_INLINE;
	else
		maxsge = min_t(u32, maxsge, f->info.MaxReadRequestSge);
	flags = ndk_fz_flags(f, allowed);
	ndk_fz_sgl(f, s, &l, maxsge, false);
	want = ndk_fz_expect(f, &l, maxsge, flags, allowed);
	raddr = ndk_pmem_va(d->mem,
			    ndk_fz_below(f, NDK_PMEM_LEN -
					    min_t(u64, l.total,
						  NDK_PMEM_LEN) + 1));
	if (ndk_fz_one_in(f, 48)) {
		bad = true;
		if (ndk_fz_one_in(f, 2))
			tok ^= 0x3c000000;
		else
			raddr = ndk_pmem_va(d->mem, NDK_PMEM_LEN - 4);
	}
	ndk_fz_what(f, write ? "write" : "read", ctx, &l, flags);
	if (write)
		st = s->qp->Dispatch->NdkWrite(s->qp, (void *)ctx,
					       l.null ? NULL : l.sge, l.n,
					       raddr, tok, flags);
	else
		st = s->qp->Dispatch->NdkRead(s->qp, (void *)ctx,
					      l.null ? NULL : l.sge, l.n,
					      raddr, tok, flags);
	/* An RDMA beyond the region (tiny ones at its end may fit). */
	if (bad && l.total <= 4 && raddr == ndk_pmem_va(d->mem, NDK_PMEM_LEN - 4))
		bad = false;
	/*
	 * siw answers a read of nothing that waits behind other answers
	 * with a stale length, and the reader terminates (deviations.rst).
	 */
	if (!write && !l.total && f->iwarp)
		bad = true;
	if (ndk_fz_posted(f, side, NDK_FZ_SQ, want, st, ctx,
			  write ? NdkOperationTypeWrite : NdkOperationTypeRead,
			  flags & NDK_OP_FLAG_SILENT_SUCCESS, (u32)l.total) &&
	    bad && (l.total || !write))
		ndk_fz_break(f);
	return st;
}

/* A result of @cq's side, @ex if an NDK_RESULT_EX. */
static void ndk_fz_result(struct ndk_fz *f, int cqside, const void *res,
			  bool ex)
{
	const NDK_RESULT *r = res;
	const NDK_RESULT_EX *rx = res;
	u64 ctx = (uintptr_t)r->RequestContext;
	int side = (ctx >> 1) & 1, qi = ctx & 1;
	struct ndk_fz_queue *q = &f->s[side].q[qi];
	struct ndk_fz_req *e = NULL, *x;
	bool rq = qi == NDK_FZ_RQ, inv;
	u32 i;

	ndk_fz_log(f, "%u: side %d result %llx: 0x%08x, %u bytes, type %u",
		   f->op, cqside, ctx, r->Status, r->BytesTransferred,
		   ex ? rx->Type : 0);
	if (side != cqside) {
		ndk_fz_fail(f, "result %llx on the other side's CQ", ctx);
		return;
	}
	for (i = q->tail; i != q->head; i++) {
		x = &q->r[i % NDK_FZ_QCAP];
		if (x->live && x->ctx == ctx) {
			e = x;
			break;
		}
	}
	if (!e) {
		if ((ctx >> 3) < f->nctx &&
		    test_and_clear_bit(ctx >> 3, f->late))
			return;
		ndk_fz_fail(f, "result for %llx, which has none to come (status 0x%08x)",
			    ctx, r->Status);
		return;
	}
	if (r->QPContext != &f->s[side]) {
		ndk_fz_fail(f, "result %llx: QPContext %p", ctx, r->QPContext);
		return;
	}
	if (ex && rx->Type != e->type &&
	    !(rq && rx->Type == NdkOperationTypeReceiveAndInvalidate &&
	      (f->broken || e->inval))) {
		ndk_fz_fail(f, "result %llx: type %u, posted as %u", ctx,
			    rx->Type, e->type);
		return;
	}
	if (!ndk_fz_documented(r->Status)) {
		ndk_fz_fail(f, "result %llx: status 0x%08x", ctx, r->Status);
		return;
	}
	if (!f->broken) {
		/* In order: the requests before it are silent ones, done. */
		for (i = q->tail; &q->r[i % NDK_FZ_QCAP] != e; i++) {
			x = &q->r[i % NDK_FZ_QCAP];
			/*
			 * siw completes a write or send once it is sent,
			 * before an earlier read's answer is in
			 * (deviations.rst).
			 */
			if (x->live && f->iwarp &&
			    x->type == NdkOperationTypeRead)
				continue;
			if (x->live && !x->silent) {
				ndk_fz_fail(f, "result %llx before %llx of the same queue",
					    ctx, x->ctx);
				return;
			}
			x->live = false;
		}
		if (r->Status != STATUS_SUCCESS) {
			ndk_fz_fail(f, "result %llx: status 0x%08x with nothing failed",
				    ctx, r->Status);
			return;
		}
		if ((rq && e->matched) || e->type == NdkOperationTypeRead) {
			if (r->BytesTransferred != e->len) {
				ndk_fz_fail(f, "result %llx: %u bytes, %u expected",
					    ctx, r->BytesTransferred, e->len);
				return;
			}
		}
		inv = ex && rx->Type == NdkOperationTypeReceiveAndInvalidate;
		if (ex && rq && e->inval != inv) {
			ndk_fz_fail(f, "result %llx: type %u", ctx, rx->Type);
			return;
		}
		if (rq && e->inval)
			f->s[side].inv_out = false;
		if (rq && !e->matched) {
			ndk_fz_fail(f, "receive %llx completed with no send", ctx);
			return;
		}
	}
	e->live = false;
	ndk_fz_advance(q);
}

/* Poll @side's CQ for up to @n results. */
static ULONG ndk_fz_poll_cq(struct ndk_fz *f, int side, ULONG n, bool ex)
{
	NDK_RESULT_EX rx[8];
	NDK_RESULT *r = (NDK_RESULT *)rx;
	NDK_CQ *cq = f->s[side].cq;
	ULONG got, i;

	if (ex)
		got = cq->Dispatch->NdkGetCqResultsEx(cq, rx, n);
	else
		got = cq->Dispatch->NdkGetCqResults(cq, r, n);
	if (got > n) {
		ndk_fz_fail(f, "poll for %u gave %u", n, got);
		return 0;
	}
	for (i = 0; i < got; i++)
		ndk_fz_result(f, side, ex ? (void *)&rx[i] : (void *)&r[i], ex);
	return got;
}

/*
 * A notification: it must follow an arm, and polls from inside the
 * callback.
 */
static void ndk_fz_notify(PVOID ctx, NTSTATUS status)
{
	struct ndk_fz_side *s = ctx;
	struct ndk_fz *f = s->f;
	unsigned long flags;

	spin_lock_irqsave(&f->lock, flags);
	if (status != STATUS_SUCCESS) {
		ndk_fz_fail(f, "side %d: notification status 0x%08x", s->i,
			    status);
	} else if (!s->armed) {
		ndk_fz_fail(f, "side %d: a notification without an arm",
			    s->i);
	} else {
		s->armed = false;
		s->polls++;
		ndk_fz_log(f, "%u: side %d notified", f->op, s->i);
		ndk_fz_poll_cq(f, s->i, 1 + s->polls % 8, s->polls & 1);
	}
	spin_unlock_irqrestore(&f->lock, flags);
}

/* One random call. */
static NTSTATUS ndk_fz_op(struct ndk_fz *f)
{
	u32 pick = ndk_fz_below(f, 1000);
	int side = ndk_fz_below(f, 2);
	struct ndk_fz_side *s = &f->s[side];
	static const ULONG arms[] = { NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_ANY,
				      NDK_CQ_NOTIFY_SOLICITED };

	if (pick < 220)
		return ndk_fz_send(f, side, false);
	if (pick < 240)
		return ndk_fz_send(f, side, true);
	if (pick < 470)
		return ndk_fz_receive(f, side);
	if (pick < 580)
		return ndk_fz_rdma(f, side, true);
	if (pick < 670)
		return ndk_fz_rdma(f, side, false);
	if (pick < 950) {
		ndk_fz_poll_cq(f, side, ndk_fz_below(f, 9),
			       ndk_fz_one_in(f, 2));
		return STATUS_SUCCESS;
	}
	if (pick < 998) {
		ndk_fz_log(f, "%u: side %d arm", f->op, side);
		s->armed = true;
		s->cq->Dispatch->NdkArmCq(s->cq,
					  arms[ndk_fz_below(f, ARRAY_SIZE(arms))]);
		return STATUS_SUCCESS;
	}
	ndk_fz_log(f, "%u: side %d flush", f->op, side);
	s->qp->Dispatch->NdkFlush(s->qp);
	ndk_fz_break(f);
	return STATUS_SUCCESS;
}

static void ndk_fz_timer_op(struct ndk_test_call *c)
{
	struct ndk_fz *f = container_of(c, struct ndk_fz, call);

	spin_lock(&f->lock);
	ndk_fz_op(f);
	spin_unlock(&f->lock);
}

static void ndk_fz_cq(struct ndk_fz *f, struct ndk_fz_side *s)
{
	struct ndk_wait w;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = f->e->a->Dispatch->NdkCreateCq(f->e->a, NDK_FZ_CQ, ndk_fz_notify,
					    s, NULL, ndk_test_create_cb, &w,
					    &cq);
	s->cq = container_of(ndk_created(f->test, st, &w, cq), NDK_CQ,
			     Header);
}

static void ndk_fz_qp(struct ndk_fz *f, struct ndk_fz_side *s)
{
	NDK_PD *pd = f->e->pd;
	struct ndk_wait w;
	NDK_QP *qp = NULL;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = pd->Dispatch->NdkCreateQp(pd, s->cq, s->cq, s, NDK_FZ_DEPTH,
				       NDK_FZ_DEPTH, NDK_FZ_SGE, NDK_FZ_SGE,
				       NDK_FZ_INLINE, ndk_test_create_cb, &w,
				       &qp);
	s->qp = container_of(ndk_created(f->test, st, &w, qp), NDK_QP, Header);
}

#define NDK_FZ_MR_FLAGS	(NDK_MR_FLAG_ALLOW_LOCAL_WRITE |		\
			 NDK_MR_FLAG_ALLOW_REMOTE_READ |		\
			 NDK_MR_FLAG_ALLOW_REMOTE_WRITE |		\
			 NDK_MR_FLAG_RDMA_READ_SINK)

/* A new connected pair, and a model that waits for nothing. */
static void ndk_fz_connect(struct ndk_fz *f)
{
	struct ndk_pair p = {};
	struct sockaddr_in dst;
	int i;

	for (i = 0; i < 2; i++) {
		struct ndk_fz_side *s = &f->s[i];

		memset(s->q, 0, sizeof(s->q));
		memset(&s->match, 0, sizeof(s->match));
		s->inv_out = false;
		s->inv = ndk_pmem_new(f->test, f->e, NDK_FZ_MR_FLAGS);
		ndk_fz_qp(f, s);
	}
	p.c = ndk_cenv_connector(f->test, f->e);
	p.aqp = f->s[0].qp;
	p.pqp = f->s[1].qp;
	ndk_listen_addr(f->e, &dst);
	ndk_establish_pair(f->test, f->e, &p, (struct sockaddr *)&f->e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	f->s[0].conn = p.c;
	f->s[1].conn = p.in;
	f->broken = false;
	f->round++;
	ndk_fz_log(f, "%u: round %u connected", f->op, f->round);
}

/* Every request with a result to come has had it: flush, then poll. */
static void ndk_fz_drain(struct ndk_fz *f)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	bool left;
	int i;

	spin_lock_bh(&f->lock);
	ndk_fz_break(f);
	for (i = 0; i < 2; i++)
		f->s[i].qp->Dispatch->NdkFlush(f->s[i].qp);
	spin_unlock_bh(&f->lock);
	do {
		left = false;
		spin_lock_bh(&f->lock);
		for (i = 0; i < 4; i++) {
			struct ndk_fz_queue *q = &f->s[i / 2].q[i % 2];
			u32 j;

			ndk_fz_poll_cq(f, i / 2, 8, true);
			for (j = q->tail; j != q->head; j++)
				left |= q->r[j % NDK_FZ_QCAP].live &&
					!q->r[j % NDK_FZ_QCAP].silent;
		}
		spin_unlock_bh(&f->lock);
		if (left)
			usleep_range(1000, 2000);
	} while (left && !f->failed && time_before(jiffies, end));
	if (left)
		ndk_fz_fail(f, "requests without a result %u s after the flush",
			    NDK_TEST_TIMEOUT / HZ);
	/* Silent requests may still report a failure, once. */
	spin_lock_bh(&f->lock);
	for (i = 0; i < 4; i++) {
		struct ndk_fz_queue *q = &f->s[i / 2].q[i % 2];
		u32 j;

		for (j = q->tail; j != q->head; j++) {
			struct ndk_fz_req *r = &q->r[j % NDK_FZ_QCAP];

			if (r->live)
				ndk_fz_late(f, r->ctx);
			r->live = false;
		}
		q->tail = q->head;
	}
	spin_unlock_bh(&f->lock);
}

static void ndk_fz_close_pair(struct ndk_fz *f)
{
	int i;

	for (i = 0; i < 2; i++) {
		ndk_close_all(f->test, f->s[i].conn, f->s[i].qp);
		f->s[i].conn = NULL;
		f->s[i].qp = NULL;
		ndk_pmem_free(f->test, f->s[i].inv);
	}
}

/* Run @f->seed for @f->ops calls; whether it failed, in @f->msg. */
static bool ndk_fz_run(struct ndk_fz *f)
{
	struct ndk_pd *pd = container_of(f->e->pd, struct ndk_pd, ndk);
	u32 i;
	int k;

	f->rnd = f->seed * 0x9E3779B97F4A7C15ULL + 1;
	f->failed = false;
	f->op = 0;
	f->round = 0;
	f->next_ctx = 1;
	/* A send that turns into the peer's receive takes two ids. */
	f->nctx = 2 * (u64)f->ops + 2;
	f->late = kvcalloc(BITS_TO_LONGS(f->nctx), sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(f->test, f->late);
	f->nlog = 0;
	f->dev = pd->ibpd->device;
	f->dma = ib_dma_map_single(f->dev, f->buf, NDK_POST_BUF,
				   DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(f->test, ib_dma_mapping_error(f->dev, f->dma));
	f->e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(f->e->pd,
							      &f->ptok);
	for (k = 0; k < 2; k++) {
		f->s[k] = (struct ndk_fz_side){ .f = f, .i = k };
		ndk_fz_cq(f, &f->s[k]);
		f->s[k].mem = ndk_pmem_new(f->test, f->e, NDK_FZ_MR_FLAGS);
	}
	ndk_fz_connect(f);
	for (i = 0; i < f->ops && !f->failed; i++) {
		f->op = i;
		if (f->broken && !f->broken_left--) {
			ndk_fz_drain(f);
			ndk_fz_close_pair(f);
			if (f->failed)
				goto closed;
			ndk_fz_connect(f);
		}
		if (ndk_fz_one_in(f, 32)) {
			f->call.fn = ndk_fz_timer_op;
			ndk_test_run_in(&f->call, NDK_CTX_TIMER);
		} else {
			spin_lock_bh(&f->lock);
			ndk_fz_op(f);
			spin_unlock_bh(&f->lock);
		}
	}
	f->op = i;
	ndk_fz_drain(f);
	ndk_fz_close_pair(f);
closed:
	for (k = 0; k < 2; k++) {
		ndk_pmem_free(f->test, f->s[k].mem);
		ndk_test_close(f->test, &f->s[k].cq->Header,
			       f->s[k].cq->Dispatch->NdkCloseCq);
	}
	ib_dma_unmap_single(f->dev, f->dma, NDK_POST_BUF, DMA_BIDIRECTIONAL);
	kvfree(f->late);
	return f->failed;
}

/*
 * The shortest prefix of @seed's calls that still fails, searched by
 * halving between what passed and @fail calls.
 */
static u32 ndk_fz_shortest(struct ndk_fz *f, u32 fail)
{
	u32 good = 0, mid;

	while (fail - good > 1) {
		mid = good + (fail - good) / 2;
		f->ops = mid;
		if (ndk_fz_run(f))
			fail = mid;
		else
			good = mid;
	}
	return fail;
}

/*
 * The seeds and calls the harness asked for: the seeds into @seeds, the
 * number of seeds returned, the calls per seed in *@ops.
 */
static u32 ndk_fz_settings(u64 *seeds, u32 max, u32 *ops, u32 check_ops,
			   bool *asked)
{
	u64 v;
	u32 n;

	n = ndk_test_cmdline_u64s("fuzz_seeds", seeds, max);
	*asked = n;
	if (!n) {
		n = min_t(u32, max, ARRAY_SIZE(ndk_fz_check_seeds));
		memcpy(seeds, ndk_fz_check_seeds, n * sizeof(*seeds));
	}
	if (!ndk_test_cmdline_u64s("fuzz_ops", &v, 1) || !v || v > U32_MAX)
		*ops = check_ops;
	else
		*ops = v;
	return n;
}

static void ndk_fuzz_consumer_test(struct kunit *test)
{
	struct ndk_fz *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	u64 seeds[8];
	u32 nseeds, ops, i, j, shortest, fail_op;
	bool asked;
	char msg[sizeof(f->msg)];
	ULONG size;

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->buf = kunit_kzalloc(test, NDK_POST_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->buf);
	f->test = test;
	f->e = ndk_cenv_need(test);
	f->iwarp = ndk_test_iwarp();
	spin_lock_init(&f->lock);
	size = sizeof(f->info);
	f->info.Version.Major = 1;
	f->info.Version.Minor = 2;
	KUNIT_ASSERT_EQ(test, f->e->a->Dispatch->NdkQueryAdapterInfo(f->e->a,
								     &f->info,
								     &size),
			STATUS_SUCCESS);
	nseeds = ndk_fz_settings(seeds, ARRAY_SIZE(seeds), &ops,
				 NDK_FZ_CHECK_OPS, &asked);
	for (i = 0; i < nseeds; i++) {
		f->seed = seeds[i];
		f->ops = ops;
		if (!ndk_fz_run(f)) {
			kunit_info(test, "seed %llu: %u calls in %u connections, 0 failed\n",
				   f->seed, ops, f->round);
			continue;
		}
		memcpy(msg, f->msg, sizeof(msg));
		fail_op = f->fail_op;
		kunit_info(test, "seed %llu: the last calls and results before the failure:\n",
			   f->seed);
		for (j = f->nlog > NDK_FZ_LOG ? f->nlog - NDK_FZ_LOG : 0;
		     j < f->nlog; j++)
			kunit_info(test, "  %s\n", f->log[j % NDK_FZ_LOG]);
		shortest = ndk_fz_shortest(f, fail_op + 1);
		KUNIT_FAIL(test, "seed %llu, call %u: %s; fails from %u calls on",
			   seeds[i], fail_op, msg, shortest);
		kunit_info(test, "again: make fuzz NDK_FUZZ_SEED=%llu NDK_FUZZ_OPS=%u\n",
			   seeds[i], shortest);
	}
}

/* How long a close may take whatever the peer does (deviations.rst). */
#define NDK_FZ_CLOSE_BOUND	(12 * HZ)

/* The statuses an accept may complete with when the peer misbehaves. */
static bool ndk_fz_accept_status(NTSTATUS st)
{
	return st == STATUS_SUCCESS || st == STATUS_CONNECTION_ABORTED ||
	       st == STATUS_CONNECTION_RESET || st == STATUS_IO_TIMEOUT ||
	       st == STATUS_CONNECTION_REFUSED || st == STATUS_CANCELLED ||
	       st == STATUS_CONNECTION_DISCONNECTED;
}

/* Close @obj and require its completion within NDK_FZ_CLOSE_BOUND. */
static void ndk_fz_close_bounded(struct kunit *test, u64 seed, u32 round,
				 NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close)
{
	struct ndk_wait *w = kzalloc(sizeof(*w), GFP_KERNEL);
	unsigned long start = jiffies;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, w);
	ndk_wait_init(w);
	st = close(obj, ndk_test_close_cb, w);
	if (st == STATUS_PENDING &&
	    !wait_for_completion_timeout(&w->done, NDK_FZ_CLOSE_BOUND)) {
		/*
		 * The close may still complete into @w: it stays, and the
		 * harness finds the object open.
		 */
		KUNIT_FAIL(test, "seed %llu round %u: close of type %u not done in %u s",
			   seed, round, obj->ObjectType,
			   NDK_FZ_CLOSE_BOUND / HZ);
		return;
	}
	kfree(w);
	if (time_after(jiffies, start + HZ))
		kunit_info(test, "seed %llu round %u: close of type %u took %u ms\n",
			   seed, round, obj->ObjectType,
			   jiffies_to_msecs(jiffies - start));
}

/*
 * A raw iWARP peer: a TCP connection to ndk's listener carrying an MPA
 * request of random revision, flags, MPA v2 read limits and RTR kind and
 * private data of random length and content; then it sends garbage,
 * hangs up, or stays silent. ndk's consumer accepts, rejects or just
 * closes what comes; every status it sees must be one NDKPI documents,
 * and every close must complete within NDK_FZ_CLOSE_BOUND. A request
 * that announces more private data than it carries is left out: siw
 * leaks its endpoint for it (deviations.rst).
 *
 * An accepted MPA v2 request may ask for RTR: siw then waits for the
 * peer's first frame, and a hang-up or garbage instead crashes the kernel
 * in siw and iw_cm, while the frame itself trips lockdep (deviations.rst).
 * Where lockdep runs, the consumer rejects such a request. Elsewhere the
 * peer stays silent until the connector has closed, which must not wait
 * for it, and then sends an RDMA write of nothing as its first frame,
 * without CRC: only then can iw_cm let go of the QP.
 */
static void ndk_fz_mpa_round(struct kunit *test, struct ndk_cenv *e,
			     u64 *rnd, u64 seed, u32 round)
{
	u8 *frame = kunit_kzalloc(test, 1024, GFP_KERNEL);
	struct ndk_mpa_req *req = (struct ndk_mpa_req *)frame;
	u32 r = (u32)(ndk_fz_next(rnd) >> 32);
	u32 pd = (r >> 8) % 600, len, i, action, peer;
	struct ndk_wait *aw = kunit_kzalloc(test, sizeof(*aw), GFP_KERNEL);
	struct socket *sock = NULL;
	struct sockaddr_in dst;
	bool enhanced, pending = false;
	NDK_QP *qp = NULL;
	NTSTATUS st;
	__be16 *v2;

	KUNIT_ASSERT_NOT_NULL(test, frame);
	KUNIT_ASSERT_NOT_NULL(test, aw);
	memcpy(req->key, "MPA ID Req Frame", sizeof(req->key));
	/* Revision 1 or 2; markers, CRC, reject and enhanced at random. */
	req->bits = cpu_to_be16(((r >> 2) & 0xf000) | (1 + ((r >> 6) & 1)));
	v2 = (__be16 *)(req + 1);
	if (pd >= 4) {
		v2[0] = cpu_to_be16((r & 0xc000) | ((r >> 20) & 0x3f));
		v2[1] = cpu_to_be16(((r << 2) & 0xc000) | ((r >> 26) & 0x3f));
	}
	for (i = 4; i < pd; i++)
		frame[sizeof(*req) + i] = (u8)ndk_fz_next(rnd);
	req->pd_len = cpu_to_be16(pd);
	len = sizeof(*req) + pd;
	action = (r >> 12) % 3;
	peer = (r >> 14) % 3;
	enhanced = (be16_to_cpu(req->bits) & 0x10ff) == 0x1002;
	if (enhanced && !action && IS_ENABLED(CONFIG_PROVE_LOCKING)) {
		action = 1;
	} else if (enhanced && !action) {
		peer = 2;
		req->bits &= ~cpu_to_be16(0x4000);
		if (pd >= 4)
			v2[1] |= cpu_to_be16(0x8000);
	}

	ndk_listen_addr(e, &dst);
	reinit_completion(&e->incoming_done);
	if (ndk_mpa_connect(&dst, frame, len, &sock))
		return;
	kunit_info(test, "seed %llu round %u: MPA bits 0x%04x, %u bytes of private data, consumer %u, peer %u\n",
		   seed, round, be16_to_cpu(req->bits), pd, action, peer);
	if (wait_for_completion_timeout(&e->incoming_done, HZ)) {
		ndk_wait_init(aw);
		switch (action) {
		case 0:
			qp = ndk_cenv_qp(test, e);
			st = e->incoming->Dispatch->NdkAccept(e->incoming, qp,
							      1, 1, frame, pd % 64,
							      NULL, NULL,
							      ndk_test_request_cb,
							      aw);
			KUNIT_EXPECT_TRUE(test, st == STATUS_PENDING ||
					  ndk_fz_accept_status(st));
			pending = st == STATUS_PENDING;
			if (pending && !enhanced &&
			    wait_for_completion_timeout(&aw->done, 2 * HZ))
				KUNIT_EXPECT_TRUE_MSG(test,
						      ndk_fz_accept_status(aw->status),
						      "seed %llu round %u: accept 0x%08x",
						      seed, round, aw->status);
			break;
		case 1:
			st = e->incoming->Dispatch->NdkReject(e->incoming,
							      frame, pd % 64);
			KUNIT_EXPECT_TRUE(test, st == STATUS_SUCCESS ||
					  ndk_fz_accept_status(st));
			break;
		default:
			break;
		}
	}
	/*
	 * The peer: garbage, a hang-up, or silence. Garbage where an
	 * accepted MPA v2 request awaits its first frame crashes the
	 * kernel in siw and iw_cm (deviations.rst): not sent there.
	 */
	if (peer == 0 && !(qp && (be16_to_cpu(req->bits) & 0xff) == 2)) {
		struct kvec iov = { .iov_base = frame, .iov_len = 256 };
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

		kernel_sendmsg(sock, &msg, &iov, 1, iov.iov_len);
	} else if (peer == 1) {
		sock_release(sock);
		sock = NULL;
	}
	if (e->incoming)
		ndk_fz_close_bounded(test, seed, round, &e->incoming->Header,
				     e->incoming->Dispatch->NdkCloseConnector);
	e->incoming = NULL;
	if (pending && enhanced) {
		KUNIT_EXPECT_EQ_MSG(test, atomic_read(&aw->calls), 1,
				    "seed %llu round %u: accept results",
				    seed, round);
		KUNIT_EXPECT_TRUE_MSG(test, ndk_fz_accept_status(aw->status),
				      "seed %llu round %u: accept 0x%08x",
				      seed, round, aw->status);
	}
	if (qp && enhanced)
		ndk_mpa_send_rtr(sock);
	if (qp)
		ndk_fz_close_bounded(test, seed, round, &qp->Header,
				     qp->Dispatch->NdkCloseQp);
	if (sock)
		sock_release(sock);
}

static void ndk_fuzz_mpa_test(struct kunit *test)
{
	struct ndk_cenv *e = ndk_cenv_need(test);
	u32 nseeds, ops, i, round;
	u64 seeds[8], rnd;
	bool asked;

	if (!ndk_test_iwarp())
		kunit_skip(test, "MPA is iWARP's");
	/* A round connects once: a hundredth of the calls, at least 4. */
	nseeds = ndk_fz_settings(seeds, ARRAY_SIZE(seeds), &ops, 400, &asked);
	for (i = 0; i < nseeds; i++) {
		rnd = seeds[i] * 0x9E3779B97F4A7C15ULL + 7;
		for (round = 0; round < max(ops / 100, 4U); round++)
			ndk_fz_mpa_round(test, e, &rnd, seeds[i], round);
		kunit_info(test, "seed %llu: %u MPA peers\n", seeds[i],
			   max(ops / 100, 4U));
	}
}

static struct kunit_case ndk_fuzz_cases[] = {
	KUNIT_CASE(ndk_fuzz_consumer_test),
	KUNIT_CASE(ndk_fuzz_mpa_test),
	{}
};

NDK_SUITE(fuzz, ndk_env_objects_init, ndk_conn_exit_test);
