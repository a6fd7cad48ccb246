// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: connections torn down with requests outstanding.
 */
#define pr_fmt(fmt) fmt

#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/slab.h>

#include "selftest.h"

/*
 * Requests in flight when the connection goes: by NdkDisconnect, or by
 * closing the connector. Each completes exactly once, and nothing else
 * arrives. The writes complete in order: successfully, then at most one
 * with an error (the one the device was carrying when the connection
 * went: siw reports a local QP error for it), then cancelled; the
 * receives, to which nothing was sent, cancelled.
 */
void st_session_teardown(struct st *s, const char *name, bool close)
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
