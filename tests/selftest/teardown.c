// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: connections torn down with requests outstanding, each of
 * the ways a consumer's device can end one (the ndk_sweep KUnit suite
 * adds the device's removal, and flushes the device loses): NdkFlush,
 * NdkDisconnect, the peer's disconnect and then the local one,
 * NdkCloseConnector and NdkCloseQp. Every request must come back exactly
 * once, within ndk's sweep of what the device never reports.
 */
#define pr_fmt(fmt) fmt

#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "selftest.h"

/* Send-queue requests carry ST_TD_CTX + their index. */
#define ST_TD_CTX	0x200
/* Where a round's sends, writes and reads take and put their bytes. */
#define ST_TD_SEND_OFF	0
#define ST_TD_BYE_OFF	64
#define ST_TD_WRITE_OFF	PAGE_SIZE
#define ST_TD_READ_OFF	(2 * PAGE_SIZE)

enum st_way {
	ST_WAY_FLUSH,		/* NdkFlush, then NdkDisconnect */
	ST_WAY_DISCONNECT,	/* NdkDisconnect: the implicit flush */
	ST_WAY_PEER,		/* the peer's disconnect, then the local one */
	ST_WAY_CLOSE_CONNECTOR,	/* NdkCloseConnector, connected */
	ST_WAY_CLOSE_QP,	/* NdkCloseQp with requests outstanding */
	ST_NWAYS
};

static const char * const st_way_name[ST_NWAYS] = {
	"teardown_flush", "teardown_disconnect", "teardown_peer_disconnect",
	"teardown_close_connector", "teardown_close_qp",
};

/* What a round saw of its send queue, in the order results came. */
struct st_td {
	DECLARE_BITMAP(seen, ST_DEPTH + ST_RECVS);
	int posted;		/* send-queue requests the QP took */
	int next;		/* the sends and writes complete in order */
	bool failed;		/* a send or write did not succeed */
	bool cancelled;		/* a send-queue request came back cancelled */
};

/*
 * Request @k of the send queue: a send, a write and a read in turn. The
 * passive side has ST_RECVS receives posted and answers an ST_QUIET
 * message with nothing, so the ST_DEPTH / 3 + 1 sends (fewer than its
 * receives) never find it without one: on iWARP that would end the
 * connection. In @bye's round the first send asks it to disconnect.
 */
static NTSTATUS st_td_post(struct st_sess *ss, int k, bool bye)
{
	NDK_QP *qp = ss->cn.qp;
	u64 raddr = le64_to_cpu(ss->hello.mr_va);
	u32 tok = le32_to_cpu(ss->hello.mr_tok);
	void *ctx = ST_CTX(ST_TD_CTX + k);
	NDK_SGE sge;

	switch (k % 3) {
	case 0:
		sge = st_sge(&ss->data, bye && !k ? ST_TD_BYE_OFF :
			     ST_TD_SEND_OFF, 16);
		return qp->Dispatch->NdkSend(qp, ctx, &sge, 1, 0);
	case 1:
		sge = st_sge(&ss->data, ST_TD_WRITE_OFF, PAGE_SIZE);
		return qp->Dispatch->NdkWrite(qp, ctx, &sge, 1, raddr, tok, 0);
	default:
		sge = st_sge(&ss->data, ST_TD_READ_OFF, PAGE_SIZE);
		return qp->Dispatch->NdkRead(qp, ctx, &sge, 1,
					     raddr + PAGE_SIZE, tok, 0);
	}
}

/* Wait, bounded, for the peer's disconnect to reach this side. */
static bool st_td_peer_gone(struct st_conn *cn)
{
	unsigned long end = jiffies + ST_TIMEOUT;

	while (!atomic_read(&cn->disconnected) && time_before(jiffies, end))
		usleep_range(1000, 2000);
	return atomic_read(&cn->disconnected);
}

/*
 * End the connection @way with the requests outstanding; the QP's close
 * waits for its connector's, so NdkCloseQp closes the connector too.
 */
static void st_td_tear(struct st_check *chk, struct st_conn *cn,
		       enum st_way way)
{
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	switch (way) {
	case ST_WAY_FLUSH:
		cn->qp->Dispatch->NdkFlush(cn->qp);
		return;
	case ST_WAY_PEER:
		st_expect(chk, st_td_peer_gone(cn), "no disconnect event");
		fallthrough;
	case ST_WAY_DISCONNECT:
		st = cn->c->Dispatch->NdkDisconnect(cn->c, st_request_cb, &w);
		ST_STATUS(chk, st_wait(&w, st), STATUS_SUCCESS);
		return;
	case ST_WAY_CLOSE_CONNECTOR:
		ST_STATUS(chk, st_close(&cn->c->Header,
					cn->c->Dispatch->NdkCloseConnector),
			  STATUS_SUCCESS);
		cn->c = NULL;
		return;
	default:
		st = cn->qp->Dispatch->NdkCloseQp(&cn->qp->Header, st_close_cb,
						  &w);
		ST_STATUS(chk, st_close(&cn->c->Header,
					cn->c->Dispatch->NdkCloseConnector),
			  STATUS_SUCCESS);
		ST_STATUS(chk, st_wait(&w, st), STATUS_SUCCESS);
		cn->c = NULL;
		cn->qp = NULL;
		return;
	}
}

/*
 * Take one result and check it against the round: a request of this QP
 * (its QPContext even after NdkCloseQp), not seen before. The receives,
 * to which the peer sent nothing, come back cancelled. On the send
 * queue, what the device executed comes first: nothing succeeds after a
 * cancelled request. The sends and writes complete in posting order,
 * successfully, then at most one with an error (the one the device was
 * carrying when the connection went: siw reports it aborted, or now and
 * then a local QP error), then cancelled. Reads are kept out of that
 * order: siw completes a read after the requests behind it, so a read
 * waiting for its response can fail beside the send or write under way.
 */
static bool st_td_take(struct st_check *chk, struct st_conn *cn,
		       struct st_td *td)
{
	NDK_RESULT_EX r;
	int id;

	if (!ST_STATUS(chk, st_next(cn, &r), STATUS_SUCCESS))
		return false;
	id = (uintptr_t)r.RequestContext;
	if (id >= ST_RECV_CTX && id < ST_RECV_CTX + ST_RECVS)
		id = ST_DEPTH + id - ST_RECV_CTX;
	else
		id -= ST_TD_CTX;
	if (!st_expect(chk, id >= 0 && id < ST_DEPTH + ST_RECVS &&
		       (id >= ST_DEPTH || id < td->posted) &&
		       !test_and_set_bit(id, td->seen),
		       "unknown or repeated request %p", r.RequestContext))
		return false;
	st_expect(chk, r.QPContext == cn, "request %d: QP context %p", id,
		  r.QPContext);
	if (id >= ST_DEPTH) {
		ST_STATUS(chk, r.Status, STATUS_CANCELLED);
		return true;
	}
	if (r.Status != STATUS_SUCCESS && r.Status != STATUS_CANCELLED)
		pr_info("# %s: request %d in flight completed with %#x\n",
			chk->name, id, r.Status);
	st_expect(chk, r.Status != STATUS_SUCCESS || !td->cancelled,
		  "request %d succeeded after one was cancelled", id);
	td->cancelled |= r.Status == STATUS_CANCELLED;
	if (id % 3 == 2)
		return true;
	st_expect(chk, id == td->next, "request %d completed before %d", id,
		  td->next);
	td->next = id + 1 + (id % 3 == 1);
	st_expect(chk, r.Status == STATUS_CANCELLED || !td->failed,
		  "request %d completed with %#x after one failed", id,
		  r.Status);
	td->failed |= r.Status != STATUS_SUCCESS;
	return true;
}

/* Every request of the round, each once. */
static void st_td_collect(struct st_check *chk, struct st_conn *cn,
			  struct st_td *td)
{
	int k;

	for (k = 0; k < td->posted + ST_RECVS; k++)
		if (!st_td_take(chk, cn, td))
			return;
}

/* Nothing comes after every request came back, not a moment later. */
static void st_td_nothing_more(struct st_check *chk, struct st_conn *cn)
{
	NDK_RESULT_EX r;

	msleep(50);
	st_expect(chk, !cn->nstash &&
		  !cn->cq->Dispatch->NdkGetCqResultsEx(cn->cq, &r, 1),
		  "a result after every request came back");
}

/* One round of @way: connect, post, tear down, count, close. */
static void st_td_round(struct st *s, struct st_check *chk, enum st_way way)
{
	struct st_sess *ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	struct st_td td = {};
	struct st_conn *cn;
	NTSTATUS st;
	int k;

	if (!st_expect(chk, ss, "no memory"))
		return;
	cn = &ss->cn;
	st = st_connect(s, ss, ST_SESSION, chk->name);
	if (!st_expect(chk, !st, "connect: %#x %s", st, ss->why))
		goto out;
	st_put32(ST_QUIET, ss->data.buf + ST_TD_SEND_OFF);
	st_put32(ST_BYE, ss->data.buf + ST_TD_BYE_OFF);
	for (k = 0; k < ST_DEPTH; k++) {
		st = st_td_post(ss, k, way == ST_WAY_PEER);
		if (st)
			break;
		td.posted++;
	}
	/*
	 * The peer may disconnect before the last is posted: from then on
	 * the QP refuses requests, and its disconnect event follows.
	 */
	if (way == ST_WAY_PEER && st == STATUS_CONNECTION_INVALID &&
	    st_td_peer_gone(cn))
		st = STATUS_SUCCESS;
	st_expect(chk, !st, "request %d refused: %#x", td.posted, st);
	st_td_tear(chk, cn, way);
	st_td_collect(chk, cn, &td);
	if (way == ST_WAY_FLUSH) {
		struct st_wait w;

		st_wait_init(&w);
		st = cn->c->Dispatch->NdkDisconnect(cn->c, st_request_cb, &w);
		ST_STATUS(chk, st_wait(&w, st), STATUS_SUCCESS);
	}
	st_td_nothing_more(chk, cn);
	st_expect(chk, atomic_read(&cn->disconnected) <= 1,
		  "%d disconnect events", atomic_read(&cn->disconnected));
out:
	st_conn_free(cn);
	st_mem_free(&ss->data);
	kfree(ss);
}

/* Each way, st_teardown_rounds rounds of it, one check each. */
void st_session_teardown(struct st *s)
{
	struct st_check chk;
	enum st_way way;
	unsigned int i;

	for (way = 0; way < ST_NWAYS; way++) {
		st_begin(&chk, st_way_name[way]);
		for (i = 0; i < st_teardown_rounds && !chk.why[0]; i++) {
			st_td_round(s, &chk, way);
			if (chk.why[0])
				pr_info("# %s: round %u of %u failed\n",
					chk.name, i + 1, st_teardown_rounds);
		}
		st_end(&chk);
	}
}
