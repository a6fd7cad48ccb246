// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One NVMe/RDMA queue on NDK.
 *
 * A command goes to the target as a send of its 64-byte capsule, with
 * small writes' data in the capsule after it. Larger data stays where
 * the caller has it: the host fast-registers it (NdkBuildLAM, then
 * NdkFastRegister on the queue's QP) and names the region's remote token
 * in a keyed SGL of the "invalidate" subtype, so that the target reads
 * or writes it with RDMA and answers with a send that invalidates the
 * token; NdkGetCqResultsEx reports that receive as
 * NdkOperationTypeReceiveAndInvalidate with the token. A response that
 * did not invalidate makes the host post NdkInvalidate itself.
 *
 * A command ends exactly once, when each of its parts has come back:
 * its send's result, its response, and the invalidation if one was
 * posted. When the connection fails, no response can come any more once
 * every receive has come back flushed: then the commands still waiting
 * for one end with the failure (nvmeof_queue_drained()).
 *
 * Every result arrives in the CQ's notification callback, which NDK
 * runs at DISPATCH_LEVEL: nothing here sleeps or allocates.
 */
#include "nvmeof.h"
#include <linux/slab.h>

/* What a request context names: the low bits of a slot's address. */
enum {
	NVMEOF_CTX_SEND,
	NVMEOF_CTX_REG,
	NVMEOF_CTX_INV,
	NVMEOF_CTX_RECV,
	NVMEOF_CTX_MASK = 3,
};

static PVOID nvmeof_ctx(void *slot, unsigned int kind)
{
	return (PVOID)((uintptr_t)slot | kind);
}

bool nvmeof_post_recv(struct nvmeof_queue *q, struct nvmeof_rx *rx)
{
	NDK_SGE sge = {
		.VirtualAddress = &q->rsps[rx->index],
		.Length = sizeof(struct nvme_completion),
		.MemoryRegionToken = q->ltoken,
	};
	unsigned long flags;
	NTSTATUS status;

	atomic_inc(&q->rx_posted);
	spin_lock_irqsave(&q->post_lock, flags);
	status = q->qp->Dispatch->NdkReceive(q->qp,
					     nvmeof_ctx(rx, NVMEOF_CTX_RECV),
					     &sge, 1);
	spin_unlock_irqrestore(&q->post_lock, flags);
	if (!status)
		return true;
	atomic_dec(&q->rx_posted);
	return false;
}

/* The command's last part came back: hand it to its caller, free the slot. */
static void nvmeof_req_put(struct nvmeof_req *req)
{
	struct nvmeof_queue *q = req->queue;

	if (!atomic_dec_and_test(&req->pending))
		return;
	if (req->mapped) {
		q->ctrl->adapter->Dispatch->NdkReleaseLAM(q->ctrl->adapter,
							  req->lam);
		req->mapped = false;
	}
	req->end(req);
	clear_bit(NVMEOF_REQ_POSTED, &req->flags);
	clear_bit_unlock(req->tag, q->busy);
	wake_up(&q->wait);
}

static void nvmeof_req_error(struct nvmeof_req *req, NTSTATUS status)
{
	if (!req->status)
		req->status = status;
}

/*
 * Every receive is back and the queue takes no more: no response can
 * come, so end each command still waiting for one.
 */
static void nvmeof_queue_drained(struct nvmeof_queue *q)
{
	unsigned long flags;
	int tag;

	if (test_and_set_bit(NVMEOF_Q_DRAINED, &q->flags))
		return;
	/* A submission posting now sees the queue failed, or is done. */
	spin_lock_irqsave(&q->post_lock, flags);
	spin_unlock_irqrestore(&q->post_lock, flags);
	for (tag = 0; tag < q->size; tag++) {
		struct nvmeof_req *req = &q->reqs[tag];

		if (!test_bit(NVMEOF_REQ_POSTED, &req->flags) ||
		    test_and_set_bit(NVMEOF_REQ_ANSWERED, &req->flags))
			continue;
		nvmeof_req_error(req, STATUS_CONNECTION_ABORTED);
		nvmeof_req_put(req);
	}
	wake_up_all(&q->wait);
}

static void nvmeof_rx_done(struct nvmeof_queue *q)
{
	if (atomic_dec_and_test(&q->rx_posted) &&
	    test_bit(NVMEOF_Q_FAILED, &q->flags))
		nvmeof_queue_drained(q);
}

/**
 * nvmeof_queue_fail() - take no more commands on a queue
 * @q: the queue
 *
 * Commands already posted end when their parts come back; those waiting
 * for a response end once every receive has come back (the caller
 * flushes the QP, or the connection's end does).
 */
void nvmeof_queue_fail(struct nvmeof_queue *q)
{
	unsigned long flags;

	spin_lock_irqsave(&q->post_lock, flags);
	set_bit(NVMEOF_Q_FAILED, &q->flags);
	spin_unlock_irqrestore(&q->post_lock, flags);
	if (!atomic_read(&q->rx_posted))
		nvmeof_queue_drained(q);
	wake_up_all(&q->wait);
}

/**
 * nvmeof_queue_report() - log the commands a queue still waits for
 * @q: the queue
 *
 * For a timeout's log: which parts of each command are still out (its
 * send, the target's response, an invalidation), and how many receives
 * are posted for the responses.
 */
void nvmeof_queue_report(struct nvmeof_queue *q)
{
	unsigned int tag;

	pr_err("queue %u: %d receives posted\n", q->qid,
	       atomic_read(&q->rx_posted));
	for_each_set_bit(tag, q->busy, q->size) {
		struct nvmeof_req *req = &q->reqs[tag];

		pr_err("queue %u: command %u: %s, %s, %d parts out\n", q->qid,
		       tag, test_bit(NVMEOF_REQ_POSTED, &req->flags) ?
		       "posted" : "not posted",
		       test_bit(NVMEOF_REQ_ANSWERED, &req->flags) ?
		       "answered" : "no response", atomic_read(&req->pending));
	}
}

/* A peer that breaks the protocol gets no second chance. */
static void nvmeof_protocol_error(struct nvmeof_queue *q, const char *what)
{
	pr_err("queue %u: %s\n", q->qid, what);
	nvmeof_queue_fail(q);
	nvmeof_ctrl_fail(q->ctrl, "protocol error");
}

/* The target did not invalidate the command's region: do it here. */
static void nvmeof_invalidate(struct nvmeof_req *req)
{
	struct nvmeof_queue *q = req->queue;
	unsigned long flags;
	NTSTATUS status;

	atomic_inc(&req->pending);
	spin_lock_irqsave(&q->post_lock, flags);
	status = q->qp->Dispatch->NdkInvalidate(q->qp,
						nvmeof_ctx(req, NVMEOF_CTX_INV),
						&req->mr->Header, 0);
	spin_unlock_irqrestore(&q->post_lock, flags);
	if (status) {
		nvmeof_req_error(req, status);
		atomic_dec(&req->pending);
	}
}

static void nvmeof_response(struct nvmeof_queue *q, struct nvmeof_rx *rx,
			    const NDK_RESULT_EX *r)
{
	struct nvme_completion *cqe = &q->rsps[rx->index];
	bool invalidated = r->Type == NdkOperationTypeReceiveAndInvalidate;
	struct nvmeof_req *req;
	u16 tag;

	if (r->BytesTransferred != sizeof(*cqe)) {
		nvmeof_protocol_error(q, "response of the wrong length");
		return;
	}
	tag = cqe->command_id;
	if (tag >= q->size ||
	    !test_bit(NVMEOF_REQ_POSTED, &q->reqs[tag].flags) ||
	    test_and_set_bit(NVMEOF_REQ_ANSWERED, &q->reqs[tag].flags)) {
		nvmeof_protocol_error(q, "response to no command in flight");
		return;
	}
	req = &q->reqs[tag];
	WRITE_ONCE(q->ctrl->last_rsp, jiffies);
	req->nvme_status = le16_to_cpu(cqe->status) >> 1;
	req->result = cqe->result;
	if (invalidated) {
		if (!req->registered ||
		    r->TypeSpecificCompletionOutput != req->rtoken) {
			nvmeof_req_error(req, STATUS_DATA_ERROR);
			nvmeof_protocol_error(q, "invalidation of a token never offered");
		} else {
			req->registered = false;
			atomic_long_inc(&q->remote_inv);
		}
	} else if (req->registered) {
		atomic_long_inc(&q->local_inv);
		nvmeof_invalidate(req);
	}
	/* The buffer is copied out: the target may send into it again. */
	if (!test_bit(NVMEOF_Q_FAILED, &q->flags) && !nvmeof_post_recv(q, rx))
		nvmeof_protocol_error(q, "a receive could not be posted again");
	nvmeof_req_put(req);
}

/*
 * Flushed results follow a queue's first failure: log that one, and any
 * failure after it that is not a flush.
 */
static bool nvmeof_failure_news(struct nvmeof_queue *q, const NDK_RESULT_EX *r)
{
	return !test_bit(NVMEOF_Q_FAILED, &q->flags) ||
	       r->Status != STATUS_CANCELLED;
}

static void nvmeof_result(struct nvmeof_queue *q, const NDK_RESULT_EX *r)
{
	unsigned int kind = (uintptr_t)r->RequestContext & NVMEOF_CTX_MASK;
	void *slot = (void *)((uintptr_t)r->RequestContext & ~NVMEOF_CTX_MASK);
	struct nvmeof_req *req = slot;

	if (kind == NVMEOF_CTX_RECV) {
		if (r->Status == STATUS_SUCCESS) {
			nvmeof_response(q, slot, r);
		} else {
			if (nvmeof_failure_news(q, r))
				pr_err("queue %u: receive failed: %#x (device code %#x)\n",
				       q->qid, r->Status, r->ProviderErrorCode);
			nvmeof_queue_fail(q);
			nvmeof_ctrl_fail(q->ctrl, "the connection failed");
		}
		nvmeof_rx_done(q);
		return;
	}
	if (r->Status) {
		if (nvmeof_failure_news(q, r))
			pr_err("queue %u: request of type %d failed: %#x (device code %#x)\n",
			       q->qid, r->Type, r->Status, r->ProviderErrorCode);
		nvmeof_req_error(req, r->Status);
		nvmeof_queue_fail(q);
		nvmeof_ctrl_fail(q->ctrl, "a request failed");
	}
	switch (kind) {
	case NVMEOF_CTX_SEND:
		nvmeof_req_put(req);
		break;
	case NVMEOF_CTX_INV:
		if (!r->Status)
			req->registered = false;
		nvmeof_req_put(req);
		break;
	default:
		/* A fast registration reports only its failure. */
		break;
	}
}

/*
 * The CQ's notification: take every result, arm again, and take what
 * came between the last poll and the arm.
 */
void nvmeof_cq_event(PVOID ctx, NTSTATUS status)
{
	struct nvmeof_queue *q = ctx;
	const NDK_CQ_DISPATCH *cq = q->cq->Dispatch;
	NDK_RESULT_EX r[16];
	ULONG n, i;

	if (status) {
		nvmeof_queue_fail(q);
		nvmeof_ctrl_fail(q->ctrl, "the CQ failed");
	}
	do {
		while ((n = cq->NdkGetCqResultsEx(q->cq, r, ARRAY_SIZE(r))))
			for (i = 0; i < n; i++)
				nvmeof_result(q, &r[i]);
		cq->NdkArmCq(q->cq, NDK_CQ_NOTIFY_ANY);
		n = cq->NdkGetCqResultsEx(q->cq, r, ARRAY_SIZE(r));
		for (i = 0; i < n; i++)
			nvmeof_result(q, &r[i]);
	} while (n);
}

/* The target ended the connection. */
void nvmeof_disconnect_event(PVOID ctx)
{
	struct nvmeof_queue *q = ctx;

	if (!test_bit(NVMEOF_Q_FAILED, &q->flags))
		pr_err("queue %u: the connection was ended by the target or the network\n",
		       q->qid);
	nvmeof_queue_fail(q);
	nvmeof_ctrl_fail(q->ctrl, "the target disconnected");
}

/* A free slot, or -1; the bit's acquire pairs with nvmeof_req_put(). */
static int nvmeof_get_tag(struct nvmeof_queue *q)
{
	int tag;

	for (;;) {
		tag = find_first_zero_bit(q->busy, q->size);
		if (tag >= q->size)
			return -1;
		if (!test_and_set_bit_lock(tag, q->busy))
			return tag;
	}
}

/*
 * The data's SGL: in the capsule (@sge gets its pieces, described by
 * the command's logical addresses and the PD's privileged token), or a
 * keyed SGL of the fast-registered region. Returns the SGEs to send.
 */
static ULONG nvmeof_map_inline(struct nvmeof_req *req, struct nvme_command *c,
			       NDK_SGE *sge, ULONG fbo, u32 len)
{
	NDK_LOGICAL_ADDRESS_MAPPING *lam = req->lam;
	u32 ptoken = req->queue->ctrl->ptoken;
	ULONG i, n = 1;
	u32 left = len;

	for (i = 0; i < lam->AdapterPageCount && left; i++) {
		u32 off = i ? 0 : fbo;
		u32 chunk = min_t(u32, left, PAGE_SIZE - off);

		sge[n].LogicalAddress = lam->AdapterPageArray[i] + off;
		sge[n].Length = chunk;
		sge[n].MemoryRegionToken = ptoken;
		left -= chunk;
		n++;
	}
	c->common.dptr.sgl.addr = 0;
	c->common.dptr.sgl.length = cpu_to_le32(len);
	c->common.dptr.sgl.type = (NVME_SGL_FMT_DATA_DESC << 4) |
				  NVME_SGL_FMT_OFFSET;
	return n;
}

static void nvmeof_map_keyed(struct nvmeof_req *req, struct nvme_command *c,
			     void *buf, u32 len)
{
	struct nvme_keyed_sgl_desc *sg = &c->common.dptr.ksgl;
	__le32 key = cpu_to_le32(req->rtoken);

	sg->addr = cpu_to_le64((uintptr_t)buf);
	sg->length[0] = len;
	sg->length[1] = len >> 8;
	sg->length[2] = len >> 16;
	memcpy(sg->key, &key, sizeof(key));
	sg->type = (NVME_KEY_SGL_FMT_DATA_DESC << 4) | NVME_SGL_FMT_INVALIDATE;
}

/**
 * nvmeof_submit() - send one command
 * @q: the queue
 * @cmd: the command; its id and data pointer are filled in here
 * @buf: the data, kernel memory of @len bytes, or NULL
 * @len: data length, at most NVMEOF_MAX_IO
 * @to_target: the data goes to the target (a write), else comes from it
 * @end: called once when the command has ended, from the CQ notification
 * @priv: the caller's, in nvmeof_req.priv
 *
 * Sleeps until a slot is free. Return: 0 when the command went out and
 * @end will be called, else a negative errno and @end will not be.
 */
int nvmeof_submit(struct nvmeof_queue *q, struct nvme_command *cmd,
		  void *buf, u32 len, bool to_target, nvmeof_end_fn end,
		  void *priv)
{
	const NDK_QP_DISPATCH *qp = q->qp->Dispatch;
	NDK_ADAPTER *adapter = q->ctrl->adapter;
	NDK_SGE sge[NVMEOF_SEND_SGE];
	struct nvmeof_req *req;
	struct nvme_command *c;
	bool inline_data = false;
	unsigned long flags;
	ULONG lam_size, fbo;
	ULONG nsge = 1;
	NTSTATUS status;
	int tag;

	if (len > q->ctrl->max_io || (len && !buf))
		return -EINVAL;
	wait_event(q->wait,
		   (tag = nvmeof_get_tag(q)) >= 0 ||
		   test_bit(NVMEOF_Q_FAILED, &q->flags));
	if (tag < 0)
		return -ENOTCONN;
	req = &q->reqs[tag];
	req->flags = 0;
	req->status = STATUS_SUCCESS;
	req->nvme_status = 0;
	memset(&req->result, 0, sizeof(req->result));
	req->end = end;
	req->priv = priv;
	req->registered = false;
	/* The send's result and the response. */
	atomic_set(&req->pending, 2);

	c = &q->cmds[tag];
	*c = *cmd;
	c->common.command_id = tag;
	c->common.flags = NVME_CMD_SGL_METABUF;
	sge[0].VirtualAddress = c;
	sge[0].Length = sizeof(*c);
	sge[0].MemoryRegionToken = q->ltoken;

	if (len) {
		struct ndk_mdl mdl;

		ndk_mdl_init_kva(&mdl, buf, len);
		lam_size = struct_size(req->lam, AdapterPageArray,
				       NVMEOF_MAX_PAGES);
		/* ndk never pends here; another provider may. */
		status = adapter->Dispatch->NdkBuildLAM(adapter, &mdl, len,
							NULL, NULL, req->lam,
							&lam_size, &fbo);
		if (status)
			goto unbuilt;
		req->mapped = true;
		inline_data = to_target && len <= q->inline_max &&
			      req->lam->AdapterPageCount < NVMEOF_SEND_SGE;
		if (inline_data)
			nsge = nvmeof_map_inline(req, c, sge, fbo, len);
		else
			req->registered = true;
	} else {
		c->common.dptr.ksgl.type = NVME_KEY_SGL_FMT_DATA_DESC << 4;
	}

	spin_lock_irqsave(&q->post_lock, flags);
	if (test_bit(NVMEOF_Q_FAILED, &q->flags)) {
		status = STATUS_CONNECTION_INVALID;
		goto unposted;
	}
	if (req->registered) {
		status = qp->NdkFastRegister(q->qp,
					     nvmeof_ctx(req, NVMEOF_CTX_REG),
					     req->mr,
					     req->lam->AdapterPageCount,
					     req->lam->AdapterPageArray, fbo,
					     len, buf,
					     NDK_OP_FLAG_SILENT_SUCCESS |
					     (to_target ?
					      NDK_OP_FLAG_ALLOW_REMOTE_READ :
					      NDK_OP_FLAG_ALLOW_REMOTE_WRITE));
		if (status)
			goto unposted;
		/* The token the registration made valid, for the target. */
		req->rtoken = req->mr->Dispatch->NdkGetRemoteTokenFromMr(req->mr);
		nvmeof_map_keyed(req, c, buf, len);
	}
	set_bit(NVMEOF_REQ_POSTED, &req->flags);
	status = qp->NdkSend(q->qp, nvmeof_ctx(req, NVMEOF_CTX_SEND), sge,
			     nsge, 0);
	spin_unlock_irqrestore(&q->post_lock, flags);
	if (status) {
		/* The registration went out: end like a failed send. */
		nvmeof_req_error(req, status);
		nvmeof_queue_fail(q);
		nvmeof_ctrl_fail(q->ctrl, "a send could not be posted");
		nvmeof_req_put(req);
	}
	return 0;

unposted:
	spin_unlock_irqrestore(&q->post_lock, flags);
	adapter->Dispatch->NdkReleaseLAM(adapter, req->lam);
	req->mapped = false;
	req->registered = false;
unbuilt:
	clear_bit_unlock(tag, q->busy);
	wake_up(&q->wait);
	pr_err("queue %u: command not sent: %#x\n", q->qid, status);
	return -EIO;
}

/* A command of nvmeof_exec(), as its end left it. */
struct nvmeof_sync {
	struct completion done;
	NTSTATUS status;
	u16 nvme_status;
	union nvme_result result;
};

static void nvmeof_exec_end(struct nvmeof_req *req)
{
	struct nvmeof_sync *sync = req->priv;

	sync->status = req->status;
	sync->nvme_status = req->nvme_status;
	sync->result = req->result;
	complete(&sync->done);
}

/**
 * nvmeof_exec() - send one command and wait for its end
 * @q: the queue
 * @cmd: the command
 * @buf: the data, or NULL
 * @len: its length
 * @to_target: the data goes to the target
 * @result: the completion's result field, if not NULL
 *
 * A command the target leaves unanswered for NVMEOF_CMD_TIMEOUT fails
 * the controller, which ends every command.
 *
 * Return: 0, the NVMe status (positive) of a command the target
 * refused, or a negative errno when the command could not complete.
 */
int nvmeof_exec(struct nvmeof_queue *q, struct nvme_command *cmd, void *buf,
		u32 len, bool to_target, union nvme_result *result)
{
	struct nvmeof_sync sync;
	int err;

	init_completion(&sync.done);
	err = nvmeof_submit(q, cmd, buf, len, to_target, nvmeof_exec_end,
			    &sync);
	if (err)
		return err;
	if (!wait_for_completion_timeout(&sync.done, NVMEOF_CMD_TIMEOUT)) {
		/* Also while the controller stops, when ctrl_fail() is out. */
		nvmeof_queue_fail(q);
		q->qp->Dispatch->NdkFlush(q->qp);
		nvmeof_ctrl_fail(q->ctrl, "a command timed out");
		wait_for_completion(&sync.done);
	}
	if (sync.status) {
		pr_err("queue %u: command %#x ended with %#x\n", q->qid,
		       cmd->common.opcode, sync.status);
		return -EIO;
	}
	if (result)
		*result = sync.result;
	return sync.nvme_status;
}
