// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: the active side. It drives sessions, one connection
 * each, told apart by the private data of its connect: the one that must
 * work, those whose requests the peer must refuse, and connects that are
 * refused.
 */
#define pr_fmt(fmt) fmt

#include <linux/slab.h>

#include "selftest.h"

/* Connect for a session of @kind; the connect's outcome. */
NTSTATUS st_connect(struct st *s, struct st_sess *ss, u8 kind,
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
void st_sess_end(struct st_sess *ss)
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
 * A connect the peer rejects, or that nothing listens for; for a reject,
 * whether its private data arrived (*@lost false) or the refusal came
 * without any (*@lost true).
 */
static void st_refused_try(struct st *s, struct st_check *chk, u8 kind, u16 p,
			   bool *lost)
{
	struct st_conn *cn = kzalloc(sizeof(*cn), GFP_KERNEL);
	struct st_req req = { .magic = cpu_to_le32(ST_MAGIC), .kind = kind };
	struct sockaddr_in dst = s->remote;
	struct st_wait w;
	char got[16];
	ULONG len;
	NTSTATUS st;

	*lost = false;
	if (!st_expect(chk, cn, "no memory"))
		return;
	strscpy(req.name, chk->name, sizeof(req.name));
	dst.sin_port = htons(p);
	if (!ST_STATUS(chk, st_conn_init(s, cn, 0), STATUS_SUCCESS))
		goto out;
	st_wait_init(&w);
	st = cn->c->Dispatch->NdkConnect(cn->c, cn->qp, (struct sockaddr *)&s->local,
					 sizeof(s->local), (struct sockaddr *)&dst,
					 sizeof(dst), 1, 1, &req, sizeof(req),
					 st_request_cb, &w);
	if (!ST_STATUS(chk, st_wait(&w, st), STATUS_CONNECTION_REFUSED) ||
	    kind != ST_REJECT)
		goto out;
	if (!ST_STATUS(chk, st_pdata(cn->c, got, sizeof(got) - 1, &len),
		       STATUS_SUCCESS))
		goto out;
	*lost = !len;
	if (!*lost)
		ST_CHECK(chk, len >= 11 && !strcmp(got, "st-refused"));
out:
	st_conn_free(cn);
	kfree(cn);
}

/*
 * The tries a reject gets over iWARP, where siw can lose the reject's
 * private data (deviations.rst): each loss is reported, and one try in
 * ST_REJECT_TRIES must bring the data.
 */
#define ST_REJECT_TRIES	3

static void st_refused_connect(struct st *s, const char *name, u8 kind, u16 p)
{
	bool iwarp = s->info.RdmaTechnology == NdkiWarp;
	struct st_check chk;
	bool lost;
	int try;

	st_begin(&chk, name);
	for (try = 1; try <= ST_REJECT_TRIES; try++) {
		st_refused_try(s, &chk, kind, p, &lost);
		if (!lost)
			break;
		pr_info("# %s: device defect: the reject's private data was lost (try %d)\n",
			name, try);
		if (!st_expect(&chk, iwarp && try < ST_REJECT_TRIES,
			       "the reject's private data was lost"))
			break;
	}
	st_end(&chk);
}

void st_client(struct st *s)
{
	st_session_main(s);
	st_refused_connect(s, "connect_reject_private_data", ST_REJECT, st_port);
	st_refused_connect(s, "connect_no_listener", ST_SESSION, st_port + 3);
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
	st_session_teardown(s);
	/* Tell the passive side the run is over. */
	st_refused_connect(s, "connect_done", ST_DONE, st_port);
}
