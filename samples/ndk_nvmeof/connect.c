// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A queue's NDK objects: created, connected with NVMe/RDMA's private
 * data, and closed in order. All of it runs in process context and
 * waits for NDK's callbacks.
 */
#include "nvmeof.h"
#include <linux/slab.h>

/* The completion queue takes a result of every receive and request. */
static ULONG nvmeof_cq_depth(u16 size)
{
	return size + size * NVMEOF_WR_PER_CMD;
}

static int nvmeof_queue_objects(struct nvmeof_queue *q)
{
	struct nvmeof_ctrl *ctrl = q->ctrl;
	const NDK_PD_DISPATCH *pd = ctrl->pd->Dispatch;
	NDK_ADAPTER *adapter = ctrl->adapter;
	struct nvmeof_wait w;
	NDK_CQ *cq = NULL;
	NDK_QP *qp = NULL;
	NDK_MR *mr = NULL;
	NTSTATUS status;

	nvmeof_wait_init(&w);
	status = adapter->Dispatch->NdkCreateCq(adapter,
						nvmeof_cq_depth(q->size),
						nvmeof_cq_event, q, NULL,
						nvmeof_create_done, &w, &cq);
	q->cq = nvmeof_obj(nvmeof_created(&w, status, cq, "CQ"), NDK_CQ);
	if (!q->cq)
		return -ENOMEM;
	q->cq->Dispatch->NdkArmCq(q->cq, NDK_CQ_NOTIFY_ANY);

	nvmeof_wait_init(&w);
	status = pd->NdkCreateQp(ctrl->pd, q->cq, q->cq, q, q->size,
				 q->size * NVMEOF_WR_PER_CMD, 1,
				 NVMEOF_SEND_SGE, 0, nvmeof_create_done, &w,
				 &qp);
	q->qp = nvmeof_obj(nvmeof_created(&w, status, qp, "QP"), NDK_QP);
	if (!q->qp)
		return -ENOMEM;

	/* The capsules and responses: one region the QP's requests name. */
	nvmeof_wait_init(&w);
	status = pd->NdkCreateMr(ctrl->pd, FALSE, nvmeof_create_done, &w, &mr);
	q->mr = nvmeof_obj(nvmeof_created(&w, status, mr, "capsule MR"),
			   NDK_MR);
	if (!q->mr)
		return -ENOMEM;
	ndk_mdl_init_kva(&q->mdl, q->capsules, q->mdl.length);
	nvmeof_wait_init(&w);
	status = q->mr->Dispatch->NdkRegisterMr(q->mr, &q->mdl, q->mdl.length,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
						nvmeof_request_done, &w);
	status = nvmeof_wait(&w, status);
	if (status) {
		pr_err("registering the capsules failed: %#x\n", status);
		return -ENOMEM;
	}
	q->mr_registered = true;
	q->ltoken = q->mr->Dispatch->NdkGetLocalTokenFromMr(q->mr);
	return 0;
}

/* Each slot's fast-register region, for the data of its command. */
static int nvmeof_req_init(struct nvmeof_queue *q, struct nvmeof_req *req,
			   u16 tag)
{
	const NDK_PD_DISPATCH *pd = q->ctrl->pd->Dispatch;
	struct nvmeof_wait w;
	NDK_MR *mr = NULL;
	NTSTATUS status;

	req->queue = q;
	req->tag = tag;
	req->lam = kmalloc(struct_size(req->lam, AdapterPageArray,
				       NVMEOF_MAX_PAGES), GFP_KERNEL);
	if (!req->lam)
		return -ENOMEM;
	nvmeof_wait_init(&w);
	status = pd->NdkCreateMr(q->ctrl->pd, TRUE, nvmeof_create_done, &w,
				 &mr);
	req->mr = nvmeof_obj(nvmeof_created(&w, status, mr, "data MR"),
			     NDK_MR);
	if (!req->mr)
		return -ENOMEM;
	nvmeof_wait_init(&w);
	status = req->mr->Dispatch->NdkInitializeFastRegisterMr(req->mr,
							NVMEOF_MAX_PAGES, TRUE,
							nvmeof_request_done,
							&w);
	status = nvmeof_wait(&w, status);
	if (status)
		pr_err("initializing a data MR failed: %#x\n", status);
	return status ? -ENOMEM : 0;
}

/**
 * nvmeof_queue_create() - the objects of one NVMe queue, unconnected
 * @ctrl: its controller, with adapter and PD open
 * @q: the queue to set up
 * @qid: NVMe queue id, 0 for the admin queue
 * @size: entries, commands in flight at most
 *
 * Return: 0 or a negative errno; nvmeof_queue_destroy() cleans up either
 * way.
 */
int nvmeof_queue_create(struct nvmeof_ctrl *ctrl, struct nvmeof_queue *q,
			u16 qid, u16 size)
{
	size_t cmds = size * sizeof(struct nvme_command);
	int err;
	u16 i;

	memset(q, 0, sizeof(*q));
	q->ctrl = ctrl;
	q->qid = qid;
	q->size = size;
	/* The admin queue takes no in-capsule data (NVMe/RDMA). */
	q->inline_max = qid ? ctrl->inline_max : 0;
	spin_lock_init(&q->post_lock);
	init_waitqueue_head(&q->wait);
	q->mdl.length = cmds + size * sizeof(struct nvme_completion);
	q->capsules = kzalloc(q->mdl.length, GFP_KERNEL);
	q->reqs = kcalloc(size, sizeof(*q->reqs), GFP_KERNEL);
	q->rx = kcalloc(size, sizeof(*q->rx), GFP_KERNEL);
	q->busy = bitmap_zalloc(size, GFP_KERNEL);
	if (!q->capsules || !q->reqs || !q->rx || !q->busy)
		return -ENOMEM;
	q->cmds = q->capsules;
	q->rsps = q->capsules + cmds;

	err = nvmeof_queue_objects(q);
	for (i = 0; !err && i < size; i++)
		err = nvmeof_req_init(q, &q->reqs[i], i);
	if (err)
		pr_err("queue %u: its NDK objects could not be created\n", qid);
	return err;
}

static const char *nvmeof_reject_reason(NDK_CONNECTOR *connector)
{
	struct nvme_rdma_cm_rej rej = {};
	ULONG len = sizeof(rej);

	if (connector->Dispatch->NdkGetConnectionData(connector, NULL, NULL,
						      &rej, &len) ||
	    len < sizeof(rej) ||
	    le16_to_cpu(rej.recfmt) != NVME_RDMA_CM_FMT_1_0 || !rej.sts)
		return "no reason given";
	return nvme_rdma_cm_msg(le16_to_cpu(rej.sts));
}

/* The target's accept: its format and the commands it takes at once. */
static int nvmeof_check_accept(struct nvmeof_queue *q)
{
	struct nvme_rdma_cm_rep rep = {};
	ULONG len = sizeof(rep);
	NTSTATUS status;

	status = q->connector->Dispatch->NdkGetConnectionData(q->connector,
							     NULL, NULL, &rep,
							     &len);
	/* IB pads the data to its field's size; iWARP gives what was sent. */
	if (status == STATUS_BUFFER_TOO_SMALL) {
		len = sizeof(rep);
		status = STATUS_SUCCESS;
	}
	if (status || len < offsetofend(struct nvme_rdma_cm_rep, crqsize)) {
		pr_err("queue %u: the target's accept carries no NVMe/RDMA data\n",
		       q->qid);
		return -EPROTO;
	}
	if (le16_to_cpu(rep.recfmt) != NVME_RDMA_CM_FMT_1_0) {
		pr_err("queue %u: accept of record format %u\n", q->qid,
		       le16_to_cpu(rep.recfmt));
		return -EPROTO;
	}
	if (le16_to_cpu(rep.crqsize) < q->size) {
		pr_err("queue %u: the target takes %u commands, not %u\n",
		       q->qid, le16_to_cpu(rep.crqsize), q->size);
		return -EPROTO;
	}
	return 0;
}

/**
 * nvmeof_queue_connect() - connect a queue to the target
 * @q: a queue of nvmeof_queue_create()
 *
 * Posts a receive for every entry, then connects with the NVMe/RDMA
 * request (queue id and sizes) as private data; a reject's reason is
 * logged. The Fabrics Connect command is the caller's.
 *
 * Return: 0, -ECONNREFUSED, or another negative errno.
 */
int nvmeof_queue_connect(struct nvmeof_queue *q)
{
	struct nvmeof_ctrl *ctrl = q->ctrl;
	struct nvmeof_cm_req priv = {
		.recfmt = cpu_to_le16(NVME_RDMA_CM_FMT_1_0),
		.qid = cpu_to_le16(q->qid),
		.hrqsize = cpu_to_le16(q->size),
		.hsqsize = cpu_to_le16(q->size - 1),
		.cntlid = cpu_to_le16(q->qid ? ctrl->cntlid : 0),
	};
	const NDK_CONNECTOR_DISPATCH *conn;
	NDK_CONNECTOR *connector = NULL;
	struct nvmeof_wait w;
	NTSTATUS status;
	u16 i;

	for (i = 0; i < q->size; i++) {
		q->rx[i].queue = q;
		q->rx[i].index = i;
		if (!nvmeof_post_recv(q, &q->rx[i]))
			return -ENOMEM;
	}

	nvmeof_wait_init(&w);
	status = ctrl->adapter->Dispatch->NdkCreateConnector(ctrl->adapter,
							     nvmeof_create_done,
							     &w, &connector);
	q->connector = nvmeof_obj(nvmeof_created(&w, status, connector,
						 "connector"),
				  NDK_CONNECTOR);
	if (!q->connector)
		return -ENOMEM;
	conn = q->connector->Dispatch;

	/* The target reads the host's memory; the host reads nothing. */
	nvmeof_wait_init(&w);
	status = conn->NdkConnect(q->connector, q->qp,
				  (struct sockaddr *)&ctrl->src, sizeof(ctrl->src),
				  (struct sockaddr *)&ctrl->dst, sizeof(ctrl->dst),
				  ctrl->info.MaxInboundReadLimit, 0, &priv,
				  sizeof(priv), nvmeof_request_done, &w);
	status = nvmeof_wait(&w, status);
	if (status == STATUS_CONNECTION_REFUSED) {
		pr_err("queue %u: the target refused the connection: %s\n",
		       q->qid, nvmeof_reject_reason(q->connector));
		return -ECONNREFUSED;
	}
	if (status) {
		pr_err("queue %u: connecting to %pISpc failed: %#x\n", q->qid,
		       &ctrl->dst, status);
		return -ENOTCONN;
	}
	if (nvmeof_check_accept(q))
		return -EPROTO;

	nvmeof_wait_init(&w);
	status = conn->NdkCompleteConnect(q->connector,
					  nvmeof_disconnect_event, q,
					  nvmeof_request_done, &w);
	if (nvmeof_wait(&w, status)) {
		pr_err("queue %u: completing the connection failed: %#x\n",
		       q->qid, w.status);
		return -ENOTCONN;
	}
	set_bit(NVMEOF_Q_CONNECTED, &q->flags);
	return 0;
}

/**
 * nvmeof_queue_destroy() - disconnect a queue and close its objects
 * @q: a queue of nvmeof_queue_create(), in any state
 *
 * Every command in flight ends first, through its end callback.
 */
void nvmeof_queue_destroy(struct nvmeof_queue *q)
{
	struct nvmeof_wait w;
	NTSTATUS status;
	u16 i;

	if (test_bit(NVMEOF_Q_CONNECTED, &q->flags) &&
	    !test_bit(NVMEOF_Q_FAILED, &q->flags)) {
		/* What the disconnect flushes is this close's, no failure. */
		nvmeof_queue_fail(q);
		nvmeof_wait_init(&w);
		status = q->connector->Dispatch->NdkDisconnect(q->connector,
							       nvmeof_request_done,
							       &w);
		nvmeof_wait(&w, status);
	}
	if (q->qp) {
		nvmeof_queue_fail(q);
		q->qp->Dispatch->NdkFlush(q->qp);
		/* NDK gives every receive and request its one result. */
		if (!wait_event_timeout(q->wait,
					test_bit(NVMEOF_Q_DRAINED, &q->flags) &&
					bitmap_empty(q->busy, q->size),
					NVMEOF_CMD_TIMEOUT))
			pr_err("queue %u: requests did not come back\n",
			       q->qid);
	}
	if (q->connector)
		nvmeof_close(&q->connector->Header,
			     q->connector->Dispatch->NdkCloseConnector);
	if (q->qp)
		nvmeof_close(&q->qp->Header, q->qp->Dispatch->NdkCloseQp);
	for (i = 0; q->reqs && i < q->size; i++) {
		struct nvmeof_req *req = &q->reqs[i];

		if (req->mr)
			nvmeof_close(&req->mr->Header,
				     req->mr->Dispatch->NdkCloseMr);
		kfree(req->lam);
	}
	if (q->mr) {
		if (q->mr_registered) {
			nvmeof_wait_init(&w);
			status = q->mr->Dispatch->NdkDeregisterMr(q->mr,
						nvmeof_request_done, &w);
			nvmeof_wait(&w, status);
		}
		nvmeof_close(&q->mr->Header, q->mr->Dispatch->NdkCloseMr);
	}
	if (q->cq)
		nvmeof_close(&q->cq->Header, q->cq->Dispatch->NdkCloseCq);
	bitmap_free(q->busy);
	kfree(q->rx);
	kfree(q->reqs);
	kfree(q->capsules);
	memset(q, 0, sizeof(*q));
}
