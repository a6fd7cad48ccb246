// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_rping: an NDK consumer that speaks the wire protocols of rdma-core's
 * example programs, so that ndk can be tried against Linux RDMA peers
 * written by someone else:
 *
 *  - proto=rping: the ping loop of rping (librdmacm/examples/rping.c).
 *    The client advertises its source buffer (address, rkey, size), the
 *    server RDMA-reads it and sends a "go ahead", the client advertises
 *    its sink, the server RDMA-writes the data into it and sends another
 *    "go ahead"; count times. The client then disconnects.
 *  - proto=rdmacm: rdma_client and rdma_server (librdmacm/examples): one
 *    16-byte message each way, the client first.
 *
 * mode=server listens on addr:port and serves one connection; mode=client
 * connects to addr:port. Loading the module only checks the parameters
 * and queues the run on a work item. The run ends with one line in the
 * kernel log, "ndk_rping: <proto> <mode>: PASS ..." or "... FAIL ...";
 * a server logs "listening on" once a client may connect. Every step
 * waits at most timeout seconds; unloading the module cancels a run that
 * is still going.
 *
 * Only the public NDK headers are used. Requests complete through their
 * callbacks and work requests through an armed CQ; the run itself is one
 * sequential function that sleeps on a wait queue the callbacks wake,
 * since they may run in atomic context.
 */
#define pr_fmt(fmt) "ndk_rping: " fmt

#include <linux/build_bug.h>
#include <linux/err.h>
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <ndk/ndk.h>

static char *mode = "server";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "server or client");

static char *proto = "rping";
module_param(proto, charp, 0444);
MODULE_PARM_DESC(proto, "rping, or rdmacm for rdma_server and rdma_client");

static char *addr;
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address to listen on (server) or connect to (client)");

static char *src;
module_param(src, charp, 0444);
MODULE_PARM_DESC(src, "client: local IPv4 address (default: addr, a server on this host)");

static ushort port;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "port (default: 7174 for rping, 7471 for rdmacm, as the programs)");

static uint count = 10;
module_param(count, uint, 0444);
MODULE_PARM_DESC(count, "rping: iterations");

static uint size = 64;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "rping: bytes per ping, 26 to 65535 as rping accepts");

static bool verbose;
module_param(verbose, bool, 0444);
MODULE_PARM_DESC(verbose, "log every step");

static uint timeout = 30;
module_param(timeout, uint, 0444);
MODULE_PARM_DESC(timeout, "seconds that any one step may take");

#define nr_dbg(fmt, ...)						\
	do {								\
		if (verbose)						\
			pr_info(fmt, ##__VA_ARGS__);			\
	} while (0)

/* rping's RPING_MIN_BUFSIZE and RPING_BUFSIZE - 1. */
#define NR_RPING_MIN	26
#define NR_RPING_MAX	65535
/* Every message of both protocols has this size. */
#define NR_MSG		16

/* One registered region: the received message, the sent one, two areas. */
#define NR_RECV_OFF	0
#define NR_SEND_OFF	64
#define NR_DATA_OFF	128

#define NR_CQ_DEPTH	16
#define NR_RQ_DEPTH	4
#define NR_SQ_DEPTH	8

/* rping's struct rping_rdma_info: where the peer may read or write. */
struct nr_rping_info {
	__be64 buf;
	__be32 rkey;
	__be32 size;
};

static_assert(sizeof(struct nr_rping_info) == NR_MSG);

/* Work request kinds, passed as RequestContext. */
enum nr_op { NR_OP_RECV, NR_OP_SEND, NR_OP_READ, NR_OP_WRITE, NR_OPS };
#define NR_CTX(op)	((void *)(uintptr_t)(op))

/*
 * Asynchronous requests other than work requests. Each kind has a slot of
 * its own, so that a callback arriving after its wait gave up cannot
 * complete another request.
 */
enum nr_req_id {
	NR_CREATE, NR_REGISTER, NR_LISTEN, NR_CONNECT, NR_ACCEPT,
	NR_DISCONNECT, NR_CLOSE, NR_REQS
};

struct ndk_rping;

struct nr_req {
	struct ndk_rping *rp;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
	bool done;
};

/* Set in ->incoming once the listener must hand out no more connectors. */
#define NR_NO_MORE	((NDK_CONNECTOR *)ERR_PTR(-ESHUTDOWN))

struct ndk_rping {
	struct work_struct work;
	wait_queue_head_t wq;
	bool stop;		/* the module is being unloaded */
	bool server, rping;
	struct sockaddr_in local, peer;

	NDK_ADAPTER *adapter;
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_MR *mr;
	NDK_LISTENER *listener;
	NDK_CONNECTOR *conn;
	NDK_CONNECTOR *incoming;	/* from the connect event */
	bool cq_event, peer_gone;
	struct nr_req req[NR_REQS];

	NDK_RESULT result[NR_OPS];
	unsigned long seen;		/* NR_OP_* bits with a result */

	u8 *buf;
	size_t area;			/* bytes of each data area */
	struct ndk_mdl mdl;
	u32 lkey, rkey;
	u8 msg[NR_MSG] __aligned(8);	/* the last message received */

	unsigned int iters;
	const char *failed;		/* the first step that failed */
	NTSTATUS status;
};

static struct ndk_rping nr_run_state;

static int nr_fail(struct ndk_rping *rp, const char *what, NTSTATUS status)
{
	if (!rp->failed) {
		rp->failed = what;
		rp->status = status;
	}
	return -EIO;
}

static struct nr_req *nr_req(struct ndk_rping *rp, enum nr_req_id id)
{
	struct nr_req *req = &rp->req[id];

	req->rp = rp;
	req->obj = NULL;
	req->done = false;
	return req;
}

static void nr_done(struct nr_req *req, NTSTATUS status)
{
	req->status = status;
	/* Status and object first; pairs with nr_req_done(). */
	smp_store_release(&req->done, true);
	wake_up(&req->rp->wq);
}

static bool nr_req_done(struct nr_req *req)
{
	/* Pairs with nr_done(): what it stored before is visible now. */
	return smp_load_acquire(&req->done);
}

static void nr_created(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
	struct nr_req *req = ctx;

	req->obj = obj;
	nr_done(req, status);
}

static void nr_requested(PVOID ctx, NTSTATUS status)
{
	nr_done(ctx, status);
}

static void nr_closed(PVOID ctx)
{
	nr_done(ctx, STATUS_SUCCESS);
}

static void nr_cq_notify(PVOID ctx, NTSTATUS status)
{
	struct ndk_rping *rp = ctx;

	WRITE_ONCE(rp->cq_event, true);
	wake_up(&rp->wq);
}

static void nr_disconnected(PVOID ctx)
{
	struct ndk_rping *rp = ctx;

	WRITE_ONCE(rp->peer_gone, true);
	wake_up(&rp->wq);
}

/* Nothing to do: the listener's close completes only after this one. */
static void nr_extra_closed(PVOID ctx)
{
}

static void nr_connect_event(PVOID ctx, NDK_CONNECTOR *conn)
{
	struct ndk_rping *rp = ctx;

	/* One connection per run; closing any other rejects it. */
	if (cmpxchg(&rp->incoming, NULL, conn)) {
		conn->Dispatch->NdkCloseConnector(&conn->Header,
						  nr_extra_closed, NULL);
		return;
	}
	wake_up(&rp->wq);
}

static long nr_timeout(void)
{
	return (long)max(timeout, 1U) * HZ;
}

/* Wait for @req, which @status says is pending, or give up. */
static NTSTATUS nr_request(struct ndk_rping *rp, struct nr_req *req,
			   NTSTATUS status)
{
	if (status != STATUS_PENDING)
		return status;
	wait_event_timeout(rp->wq, nr_req_done(req) ||
			   READ_ONCE(rp->stop), nr_timeout());
	if (nr_req_done(req))
		return req->status;
	return READ_ONCE(rp->stop) ? STATUS_CANCELLED : STATUS_IO_TIMEOUT;
}

/* The object that a create call returned inline or through @req. */
static void *nr_create(struct ndk_rping *rp, struct nr_req *req,
		       NTSTATUS status, void *obj, const char *what)
{
	status = nr_request(rp, req, status);
	if (status) {
		nr_fail(rp, what, status);
		return NULL;
	}
	/* The header is the first member of every NDK object. */
	return req->obj ? (void *)req->obj : obj;
}

static void nr_close(struct ndk_rping *rp, NDK_OBJECT_HEADER *obj,
		     NDK_FN_CLOSE_OBJECT close, const char *what)
{
	struct nr_req *req = nr_req(rp, NR_CLOSE);

	if (close(obj, nr_closed, req) != STATUS_PENDING)
		return;
	/* ndk always completes a close; the callback must not outlive us. */
	if (!wait_event_timeout(rp->wq, nr_req_done(req),
				nr_timeout())) {
		pr_err("closing the %s takes longer than %u s\n", what,
		       timeout);
		wait_event(rp->wq, nr_req_done(req));
	}
}

static int nr_setup(struct ndk_rping *rp)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	const NDK_ADAPTER_DISPATCH *a;
	struct net_device *ndev;
	size_t len = NR_DATA_OFF + 2 * rp->area;
	struct nr_req *req;
	NDK_PD *pd = NULL;
	NDK_CQ *cq = NULL;
	NDK_QP *qp = NULL;
	NDK_MR *mr = NULL;
	NTSTATUS st;

	ndev = ip_dev_find(&init_net, rp->local.sin_addr.s_addr);
	if (!ndev)
		return nr_fail(rp, "finding the interface of the local address",
			       STATUS_INVALID_ADDRESS);
	st = ndk_open_adapter(ndev->ifindex, v, &rp->adapter);
	dev_put(ndev);
	if (st)
		return nr_fail(rp, "opening the adapter", st);
	a = rp->adapter->Dispatch;

	req = nr_req(rp, NR_CREATE);
	st = a->NdkCreatePd(rp->adapter, nr_created, req, &pd);
	rp->pd = nr_create(rp, req, st, pd, "creating the PD");
	if (!rp->pd)
		return -EIO;
	req = nr_req(rp, NR_CREATE);
	st = a->NdkCreateCq(rp->adapter, NR_CQ_DEPTH, nr_cq_notify, rp, NULL,
			    nr_created, req, &cq);
	rp->cq = nr_create(rp, req, st, cq, "creating the CQ");
	if (!rp->cq)
		return -EIO;
	req = nr_req(rp, NR_CREATE);
	st = rp->pd->Dispatch->NdkCreateQp(rp->pd, rp->cq, rp->cq, rp,
					   NR_RQ_DEPTH, NR_SQ_DEPTH, 1, 1, 0,
					   nr_created, req, &qp);
	rp->qp = nr_create(rp, req, st, qp, "creating the QP");
	if (!rp->qp)
		return -EIO;
	req = nr_req(rp, NR_CREATE);
	st = rp->pd->Dispatch->NdkCreateMr(rp->pd, FALSE, nr_created, req,
					   &mr);
	rp->mr = nr_create(rp, req, st, mr, "creating the MR");
	if (!rp->mr)
		return -EIO;

	rp->buf = kvzalloc(len, GFP_KERNEL);
	if (!rp->buf)
		return nr_fail(rp, "allocating the buffer",
			       STATUS_INSUFFICIENT_RESOURCES);
	/*
	 * One region for everything, readable and writable by the peer:
	 * rping's client lets the server read one area and write the other,
	 * and on iWARP a read's sink needs remote write access too.
	 */
	ndk_mdl_init_kva(&rp->mdl, rp->buf, len);
	req = nr_req(rp, NR_REGISTER);
	st = rp->mr->Dispatch->NdkRegisterMr(rp->mr, &rp->mdl, len,
					     NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					     NDK_MR_FLAG_ALLOW_REMOTE_READ |
					     NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
					     nr_requested, req);
	st = nr_request(rp, req, st);
	if (st)
		return nr_fail(rp, "registering the buffer", st);
	rp->lkey = rp->mr->Dispatch->NdkGetLocalTokenFromMr(rp->mr);
	rp->rkey = rp->mr->Dispatch->NdkGetRemoteTokenFromMr(rp->mr);
	return 0;
}

static NDK_SGE nr_sge(struct ndk_rping *rp, size_t off, u32 len)
{
	return (NDK_SGE){ .VirtualAddress = rp->buf + off, .Length = len,
			  .MemoryRegionToken = rp->lkey };
}

/* The address the peer uses for the byte at @off of the region. */
static u64 nr_remote_addr(struct ndk_rping *rp, size_t off)
{
	return (uintptr_t)MmGetMdlVirtualAddress(&rp->mdl) + off;
}

static bool nr_poll(struct ndk_rping *rp)
{
	NDK_RESULT r;
	uintptr_t op;

	if (!rp->cq->Dispatch->NdkGetCqResults(rp->cq, &r, 1))
		return false;
	op = (uintptr_t)r.RequestContext;
	if (op < NR_OPS) {
		rp->result[op] = r;
		rp->seen |= BIT(op);
	}
	return true;
}

/*
 * Wait for the completion of the outstanding work request of kind @op;
 * results of other kinds that arrive first are kept for their waits.
 */
static int nr_wait_op(struct ndk_rping *rp, enum nr_op op, ULONG *bytes,
		      const char *what)
{
	unsigned long end = jiffies + nr_timeout();

	while (!(rp->seen & BIT(op))) {
		if (nr_poll(rp))
			continue;
		WRITE_ONCE(rp->cq_event, false);
		rp->cq->Dispatch->NdkArmCq(rp->cq, NDK_CQ_NOTIFY_ANY);
		/* A completion that came before the arm notifies nobody. */
		if (nr_poll(rp))
			continue;
		if (time_after_eq(jiffies, end))
			return nr_fail(rp, what, STATUS_IO_TIMEOUT);
		wait_event_timeout(rp->wq, READ_ONCE(rp->cq_event) ||
				   READ_ONCE(rp->stop), end - jiffies);
		if (READ_ONCE(rp->stop))
			return nr_fail(rp, what, STATUS_CANCELLED);
	}
	rp->seen &= ~BIT(op);
	if (rp->result[op].Status)
		return nr_fail(rp, what, rp->result[op].Status);
	if (bytes)
		*bytes = rp->result[op].BytesTransferred;
	return 0;
}

static int nr_post_recv(struct ndk_rping *rp)
{
	NDK_SGE sge = nr_sge(rp, NR_RECV_OFF, NR_MSG);
	NTSTATUS st;

	st = rp->qp->Dispatch->NdkReceive(rp->qp, NR_CTX(NR_OP_RECV), &sge, 1);
	return st ? nr_fail(rp, "posting a receive", st) : 0;
}

/*
 * Wait for the next message and copy it to rp->msg. With @again the
 * receive is posted again at once, before anything is sent that the
 * peer could answer: on iWARP a message without a receive waiting for it
 * ends the connection.
 */
static int nr_recv(struct ndk_rping *rp, bool again, const char *what)
{
	ULONG bytes;
	int err;

	err = nr_wait_op(rp, NR_OP_RECV, &bytes, what);
	if (err)
		return err;
	if (bytes != NR_MSG) {
		pr_err("%s: %u bytes, not %u\n", what, bytes, NR_MSG);
		return nr_fail(rp, what, STATUS_INVALID_BUFFER_SIZE);
	}
	memcpy(rp->msg, rp->buf + NR_RECV_OFF, NR_MSG);
	nr_dbg("%s: %*phN\n", what, NR_MSG, rp->msg);
	return again ? nr_post_recv(rp) : 0;
}

static int nr_send(struct ndk_rping *rp, const void *msg, const char *what)
{
	NDK_SGE sge = nr_sge(rp, NR_SEND_OFF, NR_MSG);
	NTSTATUS st;

	memcpy(rp->buf + NR_SEND_OFF, msg, NR_MSG);
	st = rp->qp->Dispatch->NdkSend(rp->qp, NR_CTX(NR_OP_SEND), &sge, 1, 0);
	if (st)
		return nr_fail(rp, what, st);
	return nr_wait_op(rp, NR_OP_SEND, NULL, what);
}

/* RDMA read (@op NR_OP_READ) or write @len bytes at @off from/to @info. */
static int nr_rdma(struct ndk_rping *rp, enum nr_op op, size_t off, u32 len,
		   const struct nr_rping_info *info, const char *what)
{
	const NDK_QP_DISPATCH *d = rp->qp->Dispatch;
	NDK_SGE sge = nr_sge(rp, off, len);
	u64 raddr = be64_to_cpu(info->buf);
	u32 rkey = be32_to_cpu(info->rkey);
	NTSTATUS st;

	nr_dbg("%s: %u bytes at %#llx, rkey %#x\n", what, len, raddr, rkey);
	if (op == NR_OP_READ)
		st = d->NdkRead(rp->qp, NR_CTX(NR_OP_READ), &sge, 1, raddr,
				rkey, 0);
	else
		st = d->NdkWrite(rp->qp, NR_CTX(NR_OP_WRITE), &sge, 1, raddr,
				 rkey, 0);
	if (st)
		return nr_fail(rp, what, st);
	return nr_wait_op(rp, op, NULL, what);
}

/*
 * What rping's client puts in its source buffer for ping @ping
 * (rping_test_client()): "rdma-ping-<ping>: ", then letters from 'A' to
 * 'z' in a cycle whose start moves on by one every ping, and a final NUL.
 */
static void nr_rping_pattern(u8 *buf, u32 len, u32 ping)
{
	u8 c = 'A' + ping % ('z' - 'A' + 1);
	u32 i;

	i = scnprintf(buf, len, "rdma-ping-%u: ", ping);
	for (; i < len; i++) {
		buf[i] = c;
		if (++c > 'z')
			c = 'A';
	}
	buf[len - 1] = 0;
}

static int nr_listen(struct ndk_rping *rp)
{
	NDK_LISTENER *listener = NULL;
	struct nr_req *req;
	NTSTATUS st;

	req = nr_req(rp, NR_CREATE);
	st = rp->adapter->Dispatch->NdkCreateListener(rp->adapter,
						       nr_connect_event, rp,
						       nr_created, req,
						       &listener);
	rp->listener = nr_create(rp, req, st, listener, "creating the listener");
	if (!rp->listener)
		return -EIO;
	req = nr_req(rp, NR_LISTEN);
	st = rp->listener->Dispatch->NdkListen(rp->listener,
					       (struct sockaddr *)&rp->local,
					       sizeof(rp->local),
					       nr_requested, req);
	st = nr_request(rp, req, st);
	if (st)
		return nr_fail(rp, "listening", st);
	pr_info("%s server: listening on %pI4:%u\n", proto,
		&rp->local.sin_addr, ntohs(rp->local.sin_port));

	wait_event_timeout(rp->wq, READ_ONCE(rp->incoming) ||
			   READ_ONCE(rp->stop), nr_timeout());
	rp->conn = READ_ONCE(rp->incoming);
	if (!rp->conn)
		return nr_fail(rp, "waiting for a connection",
			       READ_ONCE(rp->stop) ? STATUS_CANCELLED :
			       STATUS_IO_TIMEOUT);
	nr_dbg("connection request\n");

	/* The client may send as soon as it is connected. */
	if (nr_post_recv(rp))
		return -EIO;
	req = nr_req(rp, NR_ACCEPT);
	st = rp->conn->Dispatch->NdkAccept(rp->conn, rp->qp, 1, 1, NULL, 0,
					   nr_disconnected, rp, nr_requested,
					   req);
	st = nr_request(rp, req, st);
	return st ? nr_fail(rp, "accepting", st) : 0;
}

static int nr_connect(struct ndk_rping *rp)
{
	NDK_CONNECTOR *conn = NULL;
	struct nr_req *req;
	NTSTATUS st;

	req = nr_req(rp, NR_CREATE);
	st = rp->adapter->Dispatch->NdkCreateConnector(rp->adapter, nr_created,
							req, &conn);
	rp->conn = nr_create(rp, req, st, conn, "creating the connector");
	if (!rp->conn || nr_post_recv(rp))
		return -EIO;
	/* rping asks for one read each way; so do we, in both protocols. */
	req = nr_req(rp, NR_CONNECT);
	st = rp->conn->Dispatch->NdkConnect(rp->conn, rp->qp,
					    (struct sockaddr *)&rp->local,
					    sizeof(rp->local),
					    (struct sockaddr *)&rp->peer,
					    sizeof(rp->peer), 1, 1, NULL, 0,
					    nr_requested, req);
	st = nr_request(rp, req, st);
	if (st)
		return nr_fail(rp, "connecting", st);
	req = nr_req(rp, NR_CONNECT);
	st = rp->conn->Dispatch->NdkCompleteConnect(rp->conn, nr_disconnected,
						    rp, nr_requested, req);
	st = nr_request(rp, req, st);
	return st ? nr_fail(rp, "completing the connection", st) : 0;
}

/* rping_test_server(): read the client's buffer, write it back. */
static int nr_rping_server(struct ndk_rping *rp)
{
	static const u8 go_ahead[NR_MSG];
	struct nr_rping_info *info = (void *)rp->msg;
	u8 *data = rp->buf + NR_DATA_OFF, *expect = data + rp->area;
	u32 len;

	for (; rp->iters < count; rp->iters++) {
		if (nr_recv(rp, true, "receiving the source"))
			return -EIO;
		len = be32_to_cpu(info->size);
		if (len < NR_RPING_MIN || len > size) {
			pr_err("the client's source has %u bytes, size=%u\n",
			       len, size);
			return nr_fail(rp, "the source's size",
				       STATUS_INVALID_BUFFER_SIZE);
		}
		memset(data, 0, len);
		if (nr_rdma(rp, NR_OP_READ, NR_DATA_OFF, len, info,
			    "reading the source"))
			return -EIO;
		nr_rping_pattern(expect, len, rp->iters);
		if (memcmp(data, expect, len))
			return nr_fail(rp, "checking the data read",
				       STATUS_DATA_ERROR);
		nr_dbg("ping %u: %s\n", rp->iters, data);
		if (nr_send(rp, go_ahead, "sending go-ahead after the read") ||
		    nr_recv(rp, true, "receiving the sink"))
			return -EIO;
		if (be32_to_cpu(info->size) < len)
			return nr_fail(rp, "the sink's size",
				       STATUS_INVALID_BUFFER_SIZE);
		/* rping writes strlen() + 1 bytes: all of them here. */
		if (nr_rdma(rp, NR_OP_WRITE, NR_DATA_OFF, len, info,
			    "writing the sink") ||
		    nr_send(rp, go_ahead, "sending go-ahead after the write"))
			return -EIO;
	}
	return 0;
}

/* rping_test_client(): let the server read the source, write the sink. */
static int nr_rping_client(struct ndk_rping *rp)
{
	size_t src_off = NR_DATA_OFF, sink_off = NR_DATA_OFF + rp->area;
	u8 *start = rp->buf + src_off, *sink = rp->buf + sink_off;
	struct nr_rping_info info = {
		.rkey = cpu_to_be32(rp->rkey),
		.size = cpu_to_be32(size),
	};

	for (; rp->iters < count; rp->iters++) {
		nr_rping_pattern(start, size, rp->iters);
		memset(sink, 0, size);
		info.buf = cpu_to_be64(nr_remote_addr(rp, src_off));
		if (nr_send(rp, &info, "sending the source") ||
		    nr_recv(rp, true, "receiving go-ahead after the read"))
			return -EIO;
		info.buf = cpu_to_be64(nr_remote_addr(rp, sink_off));
		if (nr_send(rp, &info, "sending the sink") ||
		    nr_recv(rp, true, "receiving go-ahead after the write"))
			return -EIO;
		if (memcmp(start, sink, size))
			return nr_fail(rp, "checking the data written",
				       STATUS_DATA_ERROR);
		nr_dbg("ping %u: %s\n", rp->iters, sink);
	}
	return 0;
}

/*
 * rdma_server and rdma_client: the client sends, the server answers,
 * both with 16 bytes. Both programs send their zero-initialized static
 * buffers; ours carry a text that the peer ignores.
 */
static int nr_rdmacm(struct ndk_rping *rp)
{
	static const u8 zero[NR_MSG];
	static const char hello[NR_MSG] = "ndk_rping hello";

	if (rp->server) {
		if (nr_recv(rp, false, "receiving the message") ||
		    nr_send(rp, hello, "sending the answer"))
			return -EIO;
	} else if (nr_send(rp, hello, "sending the message") ||
		   nr_recv(rp, false, "receiving the answer")) {
		return -EIO;
	}
	if (memcmp(rp->msg, zero, NR_MSG))
		return nr_fail(rp, "checking the message", STATUS_DATA_ERROR);
	rp->iters = 1;
	return 0;
}

/* A server waits for its client to hang up, as rping's server does. */
static int nr_disconnect(struct ndk_rping *rp)
{
	struct nr_req *req;
	NTSTATUS st;

	if (rp->server) {
		wait_event_timeout(rp->wq, READ_ONCE(rp->peer_gone) ||
				   READ_ONCE(rp->stop), nr_timeout());
		if (!READ_ONCE(rp->peer_gone))
			return nr_fail(rp, "waiting for the client to disconnect",
				       READ_ONCE(rp->stop) ? STATUS_CANCELLED :
				       STATUS_IO_TIMEOUT);
	}
	/* Completes at once when the peer has disconnected already. */
	req = nr_req(rp, NR_DISCONNECT);
	st = rp->conn->Dispatch->NdkDisconnect(rp->conn, nr_requested, req);
	st = nr_request(rp, req, st);
	return st ? nr_fail(rp, "disconnecting", st) : 0;
}

static void nr_teardown(struct ndk_rping *rp)
{
	NDK_CONNECTOR *late;

	/* A request that came in but was never accepted is ours to close. */
	late = xchg(&rp->incoming, NR_NO_MORE);
	if (late && late != rp->conn)
		nr_close(rp, &late->Header, late->Dispatch->NdkCloseConnector,
			 "unanswered connector");
	if (rp->conn)
		nr_close(rp, &rp->conn->Header,
			 rp->conn->Dispatch->NdkCloseConnector, "connector");
	if (rp->listener)
		nr_close(rp, &rp->listener->Header,
			 rp->listener->Dispatch->NdkCloseListener, "listener");
	if (rp->qp)
		nr_close(rp, &rp->qp->Header, rp->qp->Dispatch->NdkCloseQp,
			 "QP");
	if (rp->mr)
		nr_close(rp, &rp->mr->Header, rp->mr->Dispatch->NdkCloseMr,
			 "MR");
	if (rp->cq)
		nr_close(rp, &rp->cq->Header, rp->cq->Dispatch->NdkCloseCq,
			 "CQ");
	if (rp->pd)
		nr_close(rp, &rp->pd->Header, rp->pd->Dispatch->NdkClosePd,
			 "PD");
	if (rp->adapter)
		ndk_close_adapter(rp->adapter);
	kvfree(rp->buf);
}

static void nr_run(struct work_struct *work)
{
	struct ndk_rping *rp = container_of(work, struct ndk_rping, work);
	int err;

	err = nr_setup(rp);
	if (!err)
		err = rp->server ? nr_listen(rp) : nr_connect(rp);
	if (!err) {
		nr_dbg("connected\n");
		if (!rp->rping)
			err = nr_rdmacm(rp);
		else if (rp->server)
			err = nr_rping_server(rp);
		else
			err = nr_rping_client(rp);
	}
	if (!err)
		err = nr_disconnect(rp);
	nr_teardown(rp);

	if (err)
		pr_err("%s %s: FAIL after %u iterations: %s: status %#x\n",
		       proto, mode, rp->iters, rp->failed, rp->status);
	else if (rp->rping)
		pr_info("%s %s: PASS %u iterations of %u bytes verified\n",
			proto, mode, rp->iters, size);
	else
		pr_info("%s %s: PASS one 16-byte message each way verified\n",
			proto, mode);
}

static int nr_parse_addr(const char *s, struct sockaddr_in *sin, u16 p)
{
	sin->sin_family = AF_INET;
	sin->sin_port = htons(p);
	if (!s || !in4_pton(s, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	return 0;
}

static int __init nr_init(void)
{
	struct ndk_rping *rp = &nr_run_state;
	u16 p;

	if (!sysfs_streq(mode, "server") && !sysfs_streq(mode, "client")) {
		pr_err("mode must be server or client\n");
		return -EINVAL;
	}
	if (!sysfs_streq(proto, "rping") && !sysfs_streq(proto, "rdmacm")) {
		pr_err("proto must be rping or rdmacm\n");
		return -EINVAL;
	}
	rp->server = sysfs_streq(mode, "server");
	rp->rping = sysfs_streq(proto, "rping");
	if (rp->rping && (size < NR_RPING_MIN || size > NR_RPING_MAX)) {
		pr_err("size must be %u to %u\n", NR_RPING_MIN, NR_RPING_MAX);
		return -EINVAL;
	}
	p = port ? port : rp->rping ? 7174 : 7471;
	if (nr_parse_addr(addr, rp->server ? &rp->local : &rp->peer, p) ||
	    (!rp->server &&
	     nr_parse_addr(src ? src : addr, &rp->local, 0))) {
		pr_err("addr (and src) must be IPv4 addresses\n");
		return -EINVAL;
	}
	rp->area = ALIGN(rp->rping ? size : NR_MSG, 64);
	init_waitqueue_head(&rp->wq);
	INIT_WORK(&rp->work, nr_run);
	queue_work(system_long_wq, &rp->work);
	return 0;
}

static void __exit nr_exit(void)
{
	struct ndk_rping *rp = &nr_run_state;

	WRITE_ONCE(rp->stop, true);
	wake_up(&rp->wq);
	cancel_work_sync(&rp->work);
}

module_init(nr_init);
module_exit(nr_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ndk_rping: rping and rdma_server/rdma_client peer over NDK");
