// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_fuzz: seeded fuzzers with reference models: a consumer's calls
 * (this comment), a raw MPA peer and a hostile raw-verbs peer (the
 * comments of their cases).
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
 * check` runs a few fixed seeds, briefly. A seed's calls run in slices,
 * each a case of its own with a pair of its own (ndk_fz_slices_fill()).
 * A failing slice is run again on shorter prefixes of its calls, and the
 * shortest that still fails is printed with the slice's seed.
 */
#include <linux/delay.h>
#include <linux/timer.h>
#include <net/sock.h>
#include "ndk_tests.h"

#define NDK_FZ_DEPTH	8	/* requests per queue */
#define NDK_FZ_SGE	3	/* SGEs per request */
#define NDK_FZ_INLINE	64	/* inline bytes */
#define NDK_FZ_CQ	64	/* CQ entries */
#define NDK_FZ_QCAP	64	/* requests the model tracks per queue */
#define NDK_FZ_BROKEN	32	/* calls at most after a failure */
#define NDK_FZ_LOG	40	/* calls and results a failure shows */
/*
 * One in this many requests is one that must fail and so breaks the
 * connection (a wrong token, a receive too small...): a new connection
 * costs the guest as much as a few hundred calls.
 */
#define NDK_FZ_RARE	32

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
	/*
	 * Arms a notification may answer, at most 3: ndk_cq_fire() may
	 * have one callback running (waiting for the model's lock), one
	 * more due after it (an arm it took meanwhile), and a third arm
	 * set; an arm beyond those merges with the one set.
	 */
	u8 arms;
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
 * only silent requests done unseen can have made room. Forget enough of
 * them, the oldest first, and over iWARP the silent reads last: siw
 * completes what follows a read before the read, so the one done may be
 * a later write or send, which a later result would then vouch for
 * (ndk_fz_result()). Had the model forgotten a read still waiting
 * instead, it would count one request fewer than ndk from there on.
 */
static void ndk_fz_room(struct ndk_fz *f, struct ndk_fz_queue *q, u32 live)
{
	int pass;
	u32 i;

	for (pass = 0; pass < 2; pass++) {
		for (i = q->tail; i != q->head && live >= NDK_FZ_DEPTH; i++) {
			struct ndk_fz_req *r = &q->r[i % NDK_FZ_QCAP];
			bool read = f->iwarp && r->type == NdkOperationTypeRead;

			if (!r->live || (read && (!r->silent || !pass)))
				continue;
			if (!r->silent) {
				/* Nothing after it is done either. */
				if (!pass)
					break;
				if (!f->broken)
					ndk_fz_fail(f, "%s taken, %u waiting, first %llx",
						    f->what, live, r->ctx);
				return;
			}
			/* Done, or (siw) its failure is still to come. */
			ndk_fz_late(f, r->ctx);
			r->live = false;
			live--;
		}
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

	return ring->posted - READ_ONCE(ring->retired);
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
		struct ndk_wr_ring *ring = qi == NDK_FZ_SQ ? &qp->sq : &qp->rq;
		u32 slot = ring->head & ring->mask;
		char next[48];

		/* The state, sequence number and type of the next slot. */
		snprintf(next, sizeof(next), "; slot %u: %u, %u of %u, type %u",
			 slot, READ_ONCE(ring->state[slot]),
			 READ_ONCE(ring->seq[slot]), ring->head,
			 READ_ONCE(ring->type[slot]));
		/* Requests waiting: the model's and ndk's; the round. */
		ndk_fz_fail(f, "side %d %s: 0x%08x, model 0x%08x (%u/%u; %u%s%s%s)",
			    side, f->what, st, want, live,
			    ndk_fz_ndk_live(f, side, qi), f->round,
			    READ_ONCE(qp->connected) ? "" : ", disconnected",
			    READ_ONCE(qp->in_error) ? ", in error" : "", next);
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
	ndk_fz_sgl(f, s, &l, NDK_FZ_SGE, !ndk_fz_one_in(f, 4 * NDK_FZ_RARE));
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
		if (!ndk_fz_one_in(f, NDK_FZ_RARE))
			return ndk_fz_receive(f, !side);
		bad = true;
	}
	ndk_fz_sgl(f, s, &l, NDK_FZ_SGE, false);
	want = ndk_fz_expect(f, &l, NDK_FZ_SGE, flags, allowed);
	if (inv) {
		/* One invalidation of the peer's region at a time. */
		tok = ndk_pmem_rtok(d->inv);
		if (ndk_fz_one_in(f, NDK_FZ_RARE)) {
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
	/* A read of nothing fails on siw (below): mostly, one reads more. */
	while (!write && f->iwarp && !l.total && !ndk_fz_one_in(f, NDK_FZ_RARE))
		ndk_fz_sgl(f, s, &l, maxsge, false);
	want = ndk_fz_expect(f, &l, maxsge, flags, allowed);
	raddr = ndk_pmem_va(d->mem,
			    ndk_fz_below(f, NDK_PMEM_LEN -
					    min_t(u64, l.total,
						  NDK_PMEM_LEN) + 1));
	if (ndk_fz_one_in(f, 4 * NDK_FZ_RARE)) {
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
	} else if (!s->arms) {
		ndk_fz_fail(f, "side %d: a notification without an arm",
			    s->i);
	} else {
		s->arms--;
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
	if (pick < 998 || !ndk_fz_one_in(f, 4)) {
		ndk_fz_log(f, "%u: side %d arm", f->op, side);
		s->arms = min_t(u8, s->arms + 1, 3);
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
 * The shortest prefix of @f->seed's calls that still fails, searched by
 * halving between what passed and @fail calls, until @deadline: KUnit
 * ends a case after 300 s on 6.1 and 6.12. *@all says whether the
 * search ended before it.
 */
static u32 ndk_fz_shortest(struct ndk_fz *f, u32 fail, unsigned long deadline,
			   bool *all)
{
	u32 good = 0, mid;

	while (fail - good > 1 && time_before(jiffies, deadline)) {
		mid = good + (fail - good) / 2;
		f->ops = mid;
		if (ndk_fz_run(f))
			fail = mid;
		else
			good = mid;
	}
	*all = fail - good <= 1;
	return fail;
}

/*
 * A seed's calls run in slices, each a case of its own, short enough for
 * KUnit's 300 s per case on 6.1 and 6.12. Slice k of seed s draws from
 * the stream of seed s + (k << 32), whose own next slice is slice k + 1
 * of s: a slice repeats on its own, as `make fuzz` with that seed.
 */
struct ndk_fz_slice {
	u64 base;	/* the seed asked for */
	u64 seed;	/* its slice's */
	u64 first;	/* its first call among the seed's */
	u32 calls;	/* 0: more slices than the table holds */
};

#define NDK_FZ_SLICES	1024
static struct ndk_fz_slice ndk_fz_slices[NDK_FZ_SLICES];
static u32 ndk_fz_nslices;

/*
 * The slices of the seeds and calls the harness asked for
 * (ndk_check.fuzz_seeds=1,2,3 ndk_check.fuzz_ops=N), or of `make
 * check`'s, @per calls each at most. The cases run one at a time: each
 * case's generator fills the one table anew.
 */
static void ndk_fz_slices_fill(u32 per)
{
	u64 seeds[8], v, first;
	u32 n, i, ops;

	n = ndk_test_cmdline_u64s("fuzz_seeds", seeds, ARRAY_SIZE(seeds));
	if (!n) {
		n = ARRAY_SIZE(ndk_fz_check_seeds);
		memcpy(seeds, ndk_fz_check_seeds, sizeof(ndk_fz_check_seeds));
	}
	if (!ndk_test_cmdline_u64s("fuzz_ops", &v, 1) || !v || v > U32_MAX)
		ops = NDK_FZ_CHECK_OPS;
	else
		ops = v;
	ndk_fz_nslices = 0;
	for (i = 0; i < n; i++) {
		for (first = 0; first < ops; first += per) {
			struct ndk_fz_slice *sl;

			if (ndk_fz_nslices == NDK_FZ_SLICES - 1) {
				ndk_fz_slices[ndk_fz_nslices++] =
					(struct ndk_fz_slice){};
				return;
			}
			sl = &ndk_fz_slices[ndk_fz_nslices++];
			sl->base = seeds[i];
			sl->seed = seeds[i] + ((first / per) << 32);
			sl->first = first;
			sl->calls = min_t(u64, per, ops - first);
		}
	}
}

static const void *ndk_fz_slices_gen(const void *prev, char *desc, u32 per)
{
	const struct ndk_fz_slice *sl = prev;
	u32 i;

	if (!sl)
		ndk_fz_slices_fill(per);
	i = sl ? sl - ndk_fz_slices + 1 : 0;
	if (i >= ndk_fz_nslices)
		return NULL;
	sl = &ndk_fz_slices[i];
	if (sl->calls)
		snprintf(desc, KUNIT_PARAM_DESC_SIZE, "seed %llu, calls %llu-%llu",
			 sl->base, sl->first,
			 sl->first + sl->calls - 1);
	else
		strscpy(desc, "the slices left out", KUNIT_PARAM_DESC_SIZE);
	return sl;
}

/* The slice a case runs; NULL (the case failed) past the table's end. */
static const struct ndk_fz_slice *ndk_fz_slice(struct kunit *test)
{
	const struct ndk_fz_slice *sl = test->param_value;

	if (sl->calls)
		return sl;
	KUNIT_FAIL(test, "more than %u slices of calls: run fewer seeds or calls at once",
		   NDK_FZ_SLICES - 1);
	return NULL;
}

/* Calls per slice of the consumer fuzzer: about 20 guest seconds on siw. */
#define NDK_FZ_SLICE	10000

static NDK_PARAM_GEN(ndk_fz_consumer_gen)
{
	return ndk_fz_slices_gen(prev, desc, NDK_FZ_SLICE);
}

static void ndk_fuzz_consumer_test(struct kunit *test)
{
	const struct ndk_fz_slice *sl = ndk_fz_slice(test);
	struct ndk_fz *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	unsigned long deadline = jiffies + 180 * HZ;
	u32 j, shortest, fail_op;
	char msg[sizeof(f->msg)];
	ULONG size;
	bool all;

	if (!sl)
		return;
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
	f->seed = sl->seed;
	f->ops = sl->calls;
	if (!ndk_fz_run(f)) {
		kunit_info(test, "seed %llu: %u calls in %u connections, 0 failed\n",
			   f->seed, sl->calls, f->round);
		return;
	}
	memcpy(msg, f->msg, sizeof(msg));
	fail_op = f->fail_op;
	/* Said first: the search for the shortest prefix takes long. */
	kunit_info(test, "seed %llu, call %u: %s; the last calls and results before it:\n",
		   f->seed, fail_op, msg);
	for (j = f->nlog > NDK_FZ_LOG ? f->nlog - NDK_FZ_LOG : 0; j < f->nlog;
	     j++)
		kunit_info(test, "  %s\n", f->log[j % NDK_FZ_LOG]);
	shortest = ndk_fz_shortest(f, fail_op + 1, deadline, &all);
	KUNIT_FAIL(test, "seed %llu, call %u: %s; fails from %s%u calls on",
		   sl->seed, fail_op, msg, all ? "" : "at most ", shortest);
	kunit_info(test, "again: make fuzz NDK_FUZZ_SEED=%llu NDK_FUZZ_OPS=%u\n",
		   sl->seed, shortest);
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
 * Whether the consumer got the request on @sock within a second. siw
 * answers a request it refuses, or hangs up, and never reports it: then
 * the wait ends there.
 */
static bool ndk_fz_mpa_incoming(struct ndk_cenv *e, struct socket *sock)
{
	unsigned long end = jiffies + HZ;
	struct sock *sk = sock->sk;

	do {
		if (wait_for_completion_timeout(&e->incoming_done,
						msecs_to_jiffies(10)))
			return true;
		if (!skb_queue_empty_lockless(&sk->sk_receive_queue) ||
		    (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) ||
		    READ_ONCE(sk->sk_err))
			break;
	} while (time_before(jiffies, end));
	return completion_done(&e->incoming_done);
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
 *
 * Return: whether the request reached the consumer.
 */
static bool ndk_fz_mpa_round(struct kunit *test, struct ndk_cenv *e,
			     u64 *rnd, u64 seed, u32 round)
{
	u8 *frame = kunit_kzalloc(test, 1024, GFP_KERNEL);
	struct ndk_mpa_req *req = (struct ndk_mpa_req *)frame;
	u32 r = (u32)(ndk_fz_next(rnd) >> 32);
	u32 pd = (r >> 8) % 600, len, i, action, peer;
	struct ndk_wait *aw = kunit_kzalloc(test, sizeof(*aw), GFP_KERNEL);
	struct socket *sock = NULL;
	struct sockaddr_in dst;
	bool enhanced, incoming, pending = false;
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
		return false;
	kunit_info(test, "seed %llu round %u: MPA bits 0x%04x, %u bytes of private data, consumer %u, peer %u\n",
		   seed, round, be16_to_cpu(req->bits), pd, action, peer);
	incoming = ndk_fz_mpa_incoming(e, sock);
	if (incoming) {
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
	return incoming;
}

/*
 * A round connects once, as costly as a hundred of the consumer fuzzer's
 * calls (siw refuses most requests at once): one per hundred, at least
 * four a slice; a thousand a slice, about 20 guest seconds over siw.
 */
static NDK_PARAM_GEN(ndk_fz_mpa_gen)
{
	return ndk_fz_slices_gen(prev, desc, 100000);
}

static void ndk_fuzz_mpa_test(struct kunit *test)
{
	const struct ndk_fz_slice *sl = ndk_fz_slice(test);
	struct ndk_cenv *e;
	u32 round, rounds, got = 0;
	u64 rnd;

	if (!sl)
		return;
	if (!ndk_test_iwarp())
		kunit_skip(test, "MPA is iWARP's");
	e = ndk_cenv_need(test);
	rounds = max(sl->calls / 100, 4U);
	rnd = sl->seed * 0x9E3779B97F4A7C15ULL + 7;
	for (round = 0; round < rounds; round++)
		got += ndk_fz_mpa_round(test, e, &rnd, sl->seed, round);
	kunit_info(test, "seed %llu: %u MPA peers, %u of them reported to the consumer\n",
		   sl->seed, rounds, got);
}

/*
 * A hostile peer speaking raw verbs to ndk's consumer: it connects with
 * private data of random length and content, then sends messages of
 * random length (some too long for the receive), sends that invalidate
 * ndk's token or any other key, and RDMA writes and reads with ndk's
 * token or a wrong one, at offsets in and around the region, and it
 * disconnects at a random point. The consumer keeps receives posted and
 * a region open to the peer, whose contents a shadow copy follows. What
 * must hold: the peer's private data reaches the consumer as sent; each
 * receive gets exactly one result, in order, with a documented status;
 * a message or an access in bounds through a valid token succeeds, and
 * a write's data is in the region once the message that follows it has
 * arrived; nothing outside the region, and nothing through a wrong
 * token, ever changes it; an invalidated token works again as soon as
 * the consumer has polled the receive that carried the invalidation;
 * and the consumer's closes end within NDK_FZ_CLOSE_BOUND whatever the
 * peer did.
 */
#define NDK_FZP_RECV	8		/* receives kept posted */
#define NDK_FZP_RLEN	256		/* bytes each receive holds */
#define NDK_FZP_WIN	(NDK_FZP_RECV * NDK_FZP_RLEN) /* the window's offset */
#define NDK_FZP_STEPS	24		/* peer operations per connection */

/* The peer's operations, counted for the seed's summary. */
enum {
	NDK_FZP_SEND, NDK_FZP_INV, NDK_FZP_WRITE, NDK_FZP_READ,
	NDK_FZP_IMM, NDK_FZP_ATOMIC, NDK_FZP_HANGUP, NDK_FZP_KINDS
};

struct ndk_fzp {
	struct kunit *test;
	struct ndk_cenv *e;
	u64 seed;
	u64 rnd;
	u32 round;
	bool iwarp;
	bool failed;
	ULONG pdata_max;		/* the adapter's MaxCallerData */
	/* the peer */
	struct rdma_cm_id *id;
	struct completion ev_done;
	enum rdma_cm_event_type ev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u8 *buf;			/* NDK_PMEM_LEN: sent, then read */
	u64 dma;
	u8 pdata[264];			/* sent with the request */
	u8 got[RDMA_MAX_PRIVATE_DATA];	/* as the consumer got it */
	/* ndk's consumer */
	NDK_QP *qp;
	NDK_CONNECTOR *conn;
	struct ndk_pmem *mem;		/* receives, then the window */
	u8 *shadow;			/* what the window must hold */
	UINT32 ptok;			/* the PD's privileged token */
	u64 posted;			/* receives posted, by context 1.. */
	u64 reaped;			/* their results polled */
	u32 count[NDK_FZP_KINDS];	/* operations by kind, for a seed */
	u32 bad;			/* of them, ones that had to fail */
};

static __printf(3, 4) void ndk_fzp_expect(struct ndk_fzp *p, bool cond,
					   const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	if (cond || p->failed)
		return;
	p->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	KUNIT_FAIL(p->test, "seed %llu round %u: %s", p->seed, p->round, msg);
}

static u32 ndk_fzp_below(struct ndk_fzp *p, u32 n)
{
	return n ? (u32)((ndk_fz_next(&p->rnd) >> 32) % n) : 0;
}

static int ndk_fzp_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct ndk_fzp *p = id->context;

	p->ev = ev->event;
	complete(&p->ev_done);
	return 0;
}

/* The peer's next CM event; false if none came. */
static bool ndk_fzp_event(struct ndk_fzp *p)
{
	return wait_for_completion_timeout(&p->ev_done, NDK_TEST_TIMEOUT);
}

/* One completion of the peer's; false if none came. */
static bool ndk_fzp_wc(struct ndk_fzp *p, struct ib_wc *wc)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	while (ib_poll_cq(p->cq, 1, wc) < 1) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(200, 1000);
	}
	return true;
}

static void ndk_fzp_post_recv(struct ndk_fzp *p)
{
	u32 slot = p->posted % NDK_FZP_RECV;
	NDK_SGE sge = ndk_pmem_sge(p->mem, slot * NDK_FZP_RLEN, NDK_FZP_RLEN);
	NTSTATUS st;

	st = p->qp->Dispatch->NdkReceive(p->qp,
					 (void *)(uintptr_t)(p->posted + 1),
					 &sge, 1);
	ndk_fzp_expect(p, st == STATUS_SUCCESS, "receive posted: 0x%08x", st);
	if (st == STATUS_SUCCESS)
		p->posted++;
}

/*
 * The consumer's next result, which must be the oldest receive's, with a
 * documented status. With @wait, waits for it. Returns false if none came.
 */
static bool ndk_fzp_reap(struct ndk_fzp *p, NDK_RESULT_EX *r, bool wait)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	NDK_CQ *cq = p->e->cq;

	while (!cq->Dispatch->NdkGetCqResultsEx(cq, r, 1)) {
		if (!wait || time_after(jiffies, end))
			return false;
		usleep_range(200, 1000);
	}
	p->reaped++;
	ndk_fzp_expect(p, r->RequestContext == (void *)(uintptr_t)p->reaped,
		       "result %llu has context %lu", p->reaped,
		       (unsigned long)(uintptr_t)r->RequestContext);
	ndk_fzp_expect(p, ndk_fz_documented(r->Status),
		       "receive %llu: status 0x%08x", p->reaped, r->Status);
	return true;
}

/* The window of the region against its shadow. */
static void ndk_fzp_check_window(struct ndk_fzp *p, const char *when)
{
	u32 n = NDK_PMEM_LEN - NDK_FZP_WIN, i;
	const u8 *b = p->mem->buf + NDK_FZP_WIN;

	for (i = 0; i < n && b[i] == p->shadow[i]; i++)
		;
	ndk_fzp_expect(p, i == n, "%s: region byte %u is 0x%02x, not 0x%02x",
		       when, NDK_FZP_WIN + i, i < n ? b[i] : 0,
		       i < n ? p->shadow[i] : 0);
}

/*
 * Connect to ndk's listener with @len bytes of private data and read
 * limits @ird and @ord; true once ndk's consumer has the request.
 */
static bool ndk_fzp_connect(struct ndk_fzp *p, u32 len, u32 ird, u32 ord)
{
	struct rdma_conn_param param = {};
	struct ib_qp_init_attr init = {};
	/* What arrives intact is what ndk tells its consumers it carries. */
	u32 i, max = p->pdata_max;
	struct kunit *test = p->test;
	unsigned long end;
	struct sockaddr_in dst;
	ULONG n, in, out;
	NTSTATUS st;
	int ret;

	for (i = 0; i < len; i++)
		p->pdata[i] = ndk_fzp_below(p, 4) ? (u8)ndk_fz_next(&p->rnd) : 0;
	ndk_listen_addr(p->e, &dst);
	init_completion(&p->ev_done);
	p->id = rdma_create_id(&init_net, ndk_fzp_handler, p, RDMA_PS_TCP,
			       IB_QPT_RC);
	KUNIT_ASSERT_FALSE(test, IS_ERR(p->id));
	KUNIT_ASSERT_EQ(test,
			rdma_resolve_addr(p->id, (struct sockaddr *)&p->e->addr,
					  (struct sockaddr *)&dst, 2000), 0);
	KUNIT_ASSERT_TRUE(test, ndk_fzp_event(p));
	KUNIT_ASSERT_EQ(test, p->ev, RDMA_CM_EVENT_ADDR_RESOLVED);
	reinit_completion(&p->ev_done);
	KUNIT_ASSERT_EQ(test, rdma_resolve_route(p->id, 2000), 0);
	KUNIT_ASSERT_TRUE(test, ndk_fzp_event(p));
	KUNIT_ASSERT_EQ(test, p->ev, RDMA_CM_EVENT_ROUTE_RESOLVED);
	p->pd = ib_alloc_pd(p->id->device, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(p->pd));
	p->cq = ib_alloc_cq(p->id->device, p, 32, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(p->cq));
	init.send_cq = p->cq;
	init.recv_cq = p->cq;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_ALL_WR;
	init.cap.max_send_wr = 8;
	init.cap.max_recv_wr = 1;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	KUNIT_ASSERT_EQ(test, rdma_create_qp(p->id, p->pd, &init), 0);

	param.private_data = len ? p->pdata : NULL;
	param.private_data_len = len;
	param.responder_resources = ird;
	param.initiator_depth = ord;
	param.retry_count = 7;
	param.rnr_retry_count = ndk_fzp_below(p, 8);
	reinit_completion(&p->ev_done);
	reinit_completion(&p->e->incoming_done);
	ret = rdma_connect(p->id, &param);
	if (ret) {
		/* The port rdma_cm gave the id, which siw binds to. */
		ndk_fzp_expect(p, len > max,
			       "%u bytes of private data: connect %d from port %u",
			       len, ret,
			       ntohs(((struct sockaddr_in *)
				      &p->id->route.addr.src_addr)->sin_port));
		return false;
	}
	/* The request, or the peer's news that it went nowhere. */
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!completion_done(&p->e->incoming_done) &&
	       !completion_done(&p->ev_done) && time_before(jiffies, end))
		usleep_range(1000, 5000);
	if (!try_wait_for_completion(&p->e->incoming_done)) {
		ndk_fzp_expect(p, len > max,
			       "no request for %u bytes of private data (event %d)",
			       len, completion_done(&p->ev_done) ? p->ev : -1);
		return false;
	}
	p->conn = p->e->incoming;
	p->e->incoming = NULL;
	n = sizeof(p->got);
	st = p->conn->Dispatch->NdkGetConnectionData(p->conn, &in, &out, p->got,
						     &n);
	ndk_fzp_expect(p, st == STATUS_SUCCESS, "connection data 0x%08x", st);
	/* Up to its last byte that is not zero, as the transport pads it. */
	if (st == STATUS_SUCCESS)
		ndk_fzp_expect(p, !memcmp(p->got, p->pdata, min_t(u32, n, len)) &&
			       (n <= len || !memchr_inv(p->got + len, 0, n - len)) &&
			       (n >= len || !memchr_inv(p->pdata + n, 0, len - n)),
			       "%u bytes of private data sent, %u reported, differing",
			       len, (u32)n);
	return true;
}

/* A token for the peer to name: ndk's own mostly, else a wrong one. */
static UINT32 ndk_fzp_token(struct ndk_fzp *p, UINT32 rtok, bool *valid)
{
	u32 k = ndk_fzp_below(p, 24);

	*valid = k < 20;
	switch (k) {
	case 20:
		return rtok ^ (1U << ndk_fzp_below(p, 32));
	case 21:
		return rtok + 0x100;
	case 22:
		return p->ptok;
	case 23:
		return (u32)ndk_fz_next(&p->rnd);
	default:
		return rtok;
	}
}

/* What a peer's operation must do. */
enum { NDK_FZP_GOOD, NDK_FZP_BAD, NDK_FZP_ANY };

/* A peer's access to ndk's region: where, how long, through what. */
static void ndk_fzp_aim(struct ndk_fzp *p, struct ib_rdma_wr *wr,
			u32 *len, u32 *off, int *expect)
{
	UINT32 rtok = ndk_pmem_rtok(p->mem);
	bool valid;

	wr->rkey = ndk_fzp_token(p, rtok, &valid);
	*len = ndk_fzp_below(p, 8) ? ndk_fzp_below(p, 512) :
	       ndk_fzp_below(p, NDK_PMEM_LEN);
	*off = NDK_FZP_WIN - 64 + ndk_fzp_below(p, NDK_PMEM_LEN -
						 NDK_FZP_WIN + 128);
	wr->remote_addr = ndk_pmem_va(p->mem, *off);
	if (!ndk_fzp_below(p, 32)) {
		wr->remote_addr = ndk_pmem_va(p->mem, 0) - 1 -
				  ndk_fzp_below(p, 64);
		valid = false;
	}
	if (*off + *len > NDK_PMEM_LEN)
		valid = false;
	*expect = valid ? NDK_FZP_GOOD : NDK_FZP_BAD;
}

/* The shadow after an atomic at @off that returned @old. */
static void ndk_fzp_atomic_done(struct ndk_fzp *p, struct ib_atomic_wr *aw,
				u32 off, u64 old)
{
	u8 *s = p->shadow + off - NDK_FZP_WIN;
	u64 now = get_unaligned((u64 *)s);

	ndk_fzp_expect(p, old == now, "atomic at +%u returned %llx, held %llx",
		       off, old, now);
	if (aw->wr.opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		put_unaligned(now + aw->compare_add, (u64 *)s);
	else if (now == aw->compare_add)
		put_unaligned(aw->swap, (u64 *)s);
}

/*
 * One operation of the peer's. Returns false once the connection is
 * broken, or ought to be.
 */
static bool ndk_fzp_step(struct ndk_fzp *p, bool reads)
{
	struct ib_sge sge = { .addr = p->dma, .lkey = p->pd->local_dma_lkey };
	struct ib_atomic_wr aw = { .wr.sg_list = &sge, .wr.num_sge = 1 };
	struct ib_rdma_wr wr = { .wr.sg_list = &sge, .wr.num_sge = 1 };
	u32 op = ndk_fzp_below(p, 16), len = 0, off = 0, i, kind;
	int expect = NDK_FZP_GOOD;
	bool received, placed;
	struct ib_send_wr *w = &wr.wr;
	NDK_RESULT_EX r;
	struct ib_wc wc;
	UINT32 key = 0;

	if (op == 15) {
		p->count[NDK_FZP_HANGUP]++;
		return false;
	}
	if (op < 5) {
		/* A message, a few too long for the receive. */
		kind = NDK_FZP_SEND;
		w->opcode = IB_WR_SEND;
		len = ndk_fzp_below(p, 16) ? ndk_fzp_below(p, NDK_FZP_RLEN + 1) :
		      NDK_FZP_RLEN + 1 + ndk_fzp_below(p, 64);
		if (len > NDK_FZP_RLEN)
			expect = NDK_FZP_BAD;
	} else if (op < 7) {
		bool valid;

		kind = NDK_FZP_INV;
		w->opcode = IB_WR_SEND_WITH_INV;
		key = ndk_fzp_token(p, ndk_pmem_rtok(p->mem), &valid);
		w->ex.invalidate_rkey = key;
		len = ndk_fzp_below(p, NDK_FZP_RLEN + 1);
		expect = valid ? NDK_FZP_GOOD : NDK_FZP_BAD;
	} else if (op < 13) {
		/* An access in, before or beyond the region. */
		ndk_fzp_aim(p, &wr, &len, &off, &expect);
		/*
		 * Without read credits on both sides a read stalls in the
		 * peer's own QP, which would show nothing of ndk.
		 */
		if (op < 10 || !reads) {
			kind = NDK_FZP_WRITE;
			w->opcode = IB_WR_RDMA_WRITE;
		} else {
			kind = NDK_FZP_READ;
			w->opcode = IB_WR_RDMA_READ;
		}
	} else if (op == 13) {
		/*
		 * Immediate data, which NDKPI never sends: a message or a
		 * write that takes a receive. ndk may fail either.
		 */
		kind = NDK_FZP_IMM;
		w->ex.imm_data = cpu_to_be32((u32)ndk_fz_next(&p->rnd));
		if (ndk_fzp_below(p, 2)) {
			w->opcode = IB_WR_SEND_WITH_IMM;
			len = ndk_fzp_below(p, NDK_FZP_RLEN + 1);
		} else {
			w->opcode = IB_WR_RDMA_WRITE_WITH_IMM;
			ndk_fzp_aim(p, &wr, &len, &off, &expect);
		}
		if (expect == NDK_FZP_GOOD)
			expect = NDK_FZP_ANY;
	} else {
		/* An atomic, which NDKPI never grants: it may fail. */
		if (!reads)
			return true;
		kind = NDK_FZP_ATOMIC;
		w = &aw.wr;
		w->opcode = ndk_fzp_below(p, 2) ? IB_WR_ATOMIC_FETCH_AND_ADD :
			    IB_WR_ATOMIC_CMP_AND_SWP;
		ndk_fzp_aim(p, &wr, &len, &off, &expect);
		len = 8;
		off &= ~7U;
		aw.remote_addr = ndk_pmem_va(p->mem, off) +
				 (ndk_fzp_below(p, 8) ? 0 : 1 + ndk_fzp_below(p, 7));
		aw.rkey = wr.rkey;
		aw.compare_add = ndk_fzp_below(p, 2) ?
				 get_unaligned((u64 *)(p->shadow + (off < NDK_FZP_WIN ? 0 :
							off - NDK_FZP_WIN))) :
				 ndk_fz_next(&p->rnd);
		aw.swap = ndk_fz_next(&p->rnd);
		if (aw.remote_addr != ndk_pmem_va(p->mem, off) ||
		    off < NDK_FZP_WIN || off + 8 > NDK_PMEM_LEN)
			expect = NDK_FZP_BAD;
		else if (expect == NDK_FZP_GOOD)
			expect = NDK_FZP_ANY;
	}
	sge.length = len;
	for (i = 0; i < len && w->opcode != IB_WR_RDMA_READ; i++)
		p->buf[i] = (u8)ndk_fz_next(&p->rnd);
	/* A device that cannot send this (siw: atomics, immediate data). */
	if (ib_post_send(p->id->qp, w, NULL))
		return true;
	p->count[kind]++;
	if (expect == NDK_FZP_BAD)
		p->bad++;
	if (!ndk_fzp_wc(p, &wc)) {
		ndk_fzp_expect(p, false, "the peer's operation %d never completed",
			       w->opcode);
		return false;
	}
	/*
	 * Zero bytes touch no memory: a wrong token may go unchecked, also
	 * that of a write with immediate data (rxe takes it).
	 */
	if (!len && (w->opcode == IB_WR_RDMA_WRITE ||
		     w->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
		     w->opcode == IB_WR_RDMA_READ) && expect == NDK_FZP_BAD)
		expect = NDK_FZP_ANY;
	if (expect == NDK_FZP_BAD) {
		/* iWARP completes a write once sent, not once placed. */
		ndk_fzp_expect(p, wc.status != IB_WC_SUCCESS || p->iwarp ||
			       w->opcode == IB_WR_SEND_WITH_INV,
			       "operation %d through token 0x%x at +%d, %u bytes succeeded",
			       w->opcode, wr.rkey, (int)off, len);
		return false;
	}
	ndk_fzp_expect(p, wc.status == IB_WC_SUCCESS || expect == NDK_FZP_ANY,
		       "operation %d of %u bytes at +%u: status %d",
		       w->opcode, len, off, wc.status);
	if (wc.status != IB_WC_SUCCESS)
		return false;
	placed = w->opcode == IB_WR_RDMA_WRITE ||
		 w->opcode == IB_WR_RDMA_WRITE_WITH_IMM;
	if (placed)
		for (i = 0; i < len; i++)
			if (off + i >= NDK_FZP_WIN)
				p->shadow[off + i - NDK_FZP_WIN] = p->buf[i];
	if (kind == NDK_FZP_ATOMIC) {
		ndk_fzp_atomic_done(p, &aw, off, get_unaligned((u64 *)p->buf));
		ndk_fzp_check_window(p, "after an atomic");
		return true;
	}
	if (w->opcode == IB_WR_RDMA_READ) {
		if (off >= NDK_FZP_WIN)
			ndk_fzp_expect(p, !memcmp(p->buf, p->shadow + off -
						  NDK_FZP_WIN, len),
				       "read of %u bytes at +%u differs", len,
				       off);
		return true;
	}
	received = w->opcode != IB_WR_RDMA_WRITE;
	if (!received) {
		/* The message behind it says the write is placed. */
		wr.wr.opcode = IB_WR_SEND;
		sge.length = 0;
		if (ib_post_send(p->id->qp, &wr.wr, NULL) || !ndk_fzp_wc(p, &wc) ||
		    wc.status != IB_WC_SUCCESS) {
			ndk_fzp_expect(p, false, "the message behind a write failed");
			return false;
		}
		len = 0;
	}
	/* The consumer's receive of the message. */
	if (!ndk_fzp_reap(p, &r, true)) {
		ndk_fzp_expect(p, false, "receive %llu never completed",
			       p->reaped + 1);
		return false;
	}
	if (kind == NDK_FZP_IMM && r.Status != STATUS_SUCCESS)
		return false;
	/* A write's immediate data: its length is the device's to say. */
	if (w->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
		len = r.BytesTransferred;
	ndk_fzp_expect(p, r.Status == STATUS_SUCCESS && r.BytesTransferred == len,
		       "receive %llu: 0x%08x, %u bytes of %u", p->reaped,
		       r.Status, r.BytesTransferred, len);
	if (r.Status == STATUS_SUCCESS && len && w->opcode != IB_WR_RDMA_WRITE_WITH_IMM)
		ndk_fzp_expect(p, !memcmp(p->mem->buf + (p->reaped - 1) %
					  NDK_FZP_RECV * NDK_FZP_RLEN,
					  p->buf, len),
			       "receive %llu: data differs", p->reaped);
	if (key)
		ndk_fzp_expect(p, r.Type == NdkOperationTypeReceiveAndInvalidate &&
			       r.TypeSpecificCompletionOutput == key,
			       "receive %llu: type 0x%x, token 0x%lx, not 0x%x",
			       p->reaped, r.Type,
			       (unsigned long)r.TypeSpecificCompletionOutput, key);
	if (placed)
		ndk_fzp_check_window(p, "after a write");
	ndk_fzp_post_recv(p);
	return r.Status == STATUS_SUCCESS;
}

/* One connection of the hostile peer, from request to close. */
static void ndk_fzp_round(struct ndk_fzp *p)
{
	struct kunit *test = p->test;
	u32 len, ird = ndk_fzp_below(p, 3), ord = ndk_fzp_below(p, 3), i;
	u32 steps = ndk_fzp_below(p, NDK_FZP_STEPS + 1);
	struct ndk_wait *aw = kunit_kzalloc(test, sizeof(*aw), GFP_KERNEL);
	NDK_RESULT_EX r;
	NTSTATUS st;

	KUNIT_ASSERT_NOT_NULL(test, aw);
	/* rdma_conn_param's length is a byte: 255 at most. */
	len = ndk_fzp_below(p, 4) ? ndk_fzp_below(p, 57) :
	      ndk_fzp_below(p, p->iwarp ? 256 : 65);
	p->qp = ndk_cenv_qp(test, p->e);
	p->posted = 0;
	p->reaped = 0;
	if (!ndk_fzp_connect(p, len, ird, ord))
		goto out;
	for (i = 0; i < NDK_FZP_RECV; i++)
		ndk_fzp_post_recv(p);
	ndk_wait_init(aw);
	st = p->conn->Dispatch->NdkAccept(p->conn, p->qp, ird, ord, NULL, 0,
					  NULL, NULL, ndk_test_request_cb, aw);
	if (st == STATUS_PENDING && ndk_wait_for(aw))
		st = aw->status;
	ndk_fzp_expect(p, st == STATUS_SUCCESS, "accept: 0x%08x", st);
	if (st != STATUS_SUCCESS || !ndk_fzp_event(p) ||
	    p->ev != RDMA_CM_EVENT_ESTABLISHED) {
		ndk_fzp_expect(p, false, "the peer's connect ended with event %d",
			       p->ev);
		goto out;
	}
	reinit_completion(&p->ev_done);
	for (i = 0; i < steps; i++)
		if (!ndk_fzp_step(p, ird && ord))
			break;
out:
	if (p->id)
		rdma_disconnect(p->id);
	if (p->conn)
		ndk_fz_close_bounded(test, p->seed, p->round, &p->conn->Header,
				     p->conn->Dispatch->NdkCloseConnector);
	p->conn = NULL;
	ndk_fz_close_bounded(test, p->seed, p->round, &p->qp->Header,
			     p->qp->Dispatch->NdkCloseQp);
	/*
	 * Every receive gets its result, exactly once: the last ones from
	 * the device's flush or ndk's sweep, which may come after the close
	 * (deviations.rst).
	 */
	while (p->reaped < p->posted && ndk_fzp_reap(p, &r, true))
		;
	ndk_fzp_reap(p, &r, false);
	ndk_fzp_expect(p, p->reaped == p->posted, "%llu receives, %llu results",
		       p->posted, p->reaped);
	ndk_fzp_check_window(p, "after the close");
	if (p->id) {
		if (p->id->qp)
			rdma_destroy_qp(p->id);
		if (!IS_ERR_OR_NULL(p->cq))
			ib_free_cq(p->cq);
		if (!IS_ERR_OR_NULL(p->pd))
			ib_dealloc_pd(p->pd);
		rdma_destroy_id(p->id);
	}
	p->id = NULL;
	p->cq = NULL;
	p->pd = NULL;
}

/*
 * A connection costs about as much guest time as four hundred of the
 * consumer fuzzer's calls: one per four hundred, at least ten a slice;
 * 250 a slice, about 30 guest seconds.
 */
static NDK_PARAM_GEN(ndk_fz_peer_gen)
{
	return ndk_fz_slices_gen(prev, desc, 100000);
}

static void ndk_fuzz_peer_test(struct kunit *test)
{
	const struct ndk_fz_slice *sl = ndk_fz_slice(test);
	struct ndk_fzp *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	NDK_ADAPTER_INFO info;
	ULONG size = sizeof(info);
	struct ib_device *dev;
	u32 rounds;

	if (!sl)
		return;
	KUNIT_ASSERT_NOT_NULL(test, p);
	p->test = test;
	p->e = ndk_cenv_need(test);
	p->iwarp = ndk_test_iwarp();
	KUNIT_ASSERT_EQ(test, p->e->a->Dispatch->NdkQueryAdapterInfo(p->e->a,
								     &info,
								     &size),
			STATUS_SUCCESS);
	p->pdata_max = info.MaxCallerData;
	dev = container_of(p->e->a, struct ndk_adapter, ndk)->ibdev;
	p->buf = kunit_kzalloc(test, NDK_PMEM_LEN, GFP_KERNEL);
	p->shadow = kunit_kzalloc(test, NDK_PMEM_LEN, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p->buf);
	KUNIT_ASSERT_NOT_NULL(test, p->shadow);
	p->dma = ib_dma_map_single(dev, p->buf, NDK_PMEM_LEN,
				   DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, p->dma));
	p->e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(p->e->pd,
							      &p->ptok);
	p->mem = ndk_pmem_new(test, p->e, NDK_MR_FLAG_ALLOW_REMOTE_READ |
			      NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
			      NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	memcpy(p->shadow, p->mem->buf + NDK_FZP_WIN, NDK_PMEM_LEN - NDK_FZP_WIN);
	p->seed = sl->seed;
	p->rnd = sl->seed * 0x9E3779B97F4A7C15ULL + 11;
	rounds = max(sl->calls / 400, 10U);
	for (p->round = 0; p->round < rounds && !p->failed; p->round++)
		ndk_fzp_round(p);
	kunit_info(test, "seed %llu: %u hostile peers: %u messages, %u invalidating, %u writes, %u reads, %u with immediate data, %u atomics, %u that had to fail, %u hang-ups\n",
		   p->seed, p->round, p->count[NDK_FZP_SEND],
		   p->count[NDK_FZP_INV], p->count[NDK_FZP_WRITE],
		   p->count[NDK_FZP_READ], p->count[NDK_FZP_IMM],
		   p->count[NDK_FZP_ATOMIC], p->bad, p->count[NDK_FZP_HANGUP]);
	/* Its rounds draw from one stream: a prefix of them repeats. */
	if (p->failed)
		kunit_info(test, "again: make fuzz NDK_FUZZ_SEED=%llu NDK_FUZZ_OPS=%u\n",
			   p->seed, p->round * 400);
	ndk_pmem_free(test, p->mem);
	ib_dma_unmap_single(dev, p->dma, NDK_PMEM_LEN, DMA_BIDIRECTIONAL);
}

static struct kunit_case ndk_fuzz_cases[] = {
	KUNIT_CASE_PARAM(ndk_fuzz_consumer_test, ndk_fz_consumer_gen),
	KUNIT_CASE_PARAM(ndk_fuzz_mpa_test, ndk_fz_mpa_gen),
	KUNIT_CASE_PARAM(ndk_fuzz_peer_test, ndk_fz_peer_gen),
	{}
};

NDK_SUITE(fuzz, ndk_env_objects_init, ndk_conn_exit_test);
