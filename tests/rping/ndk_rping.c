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
 *  - proto=ndk: ndk_rping on both sides, e.g. on two hosts. The two
 *    exchange where their buffers are, then take turns, count times: RDMA
 *    read the peer's source, RDMA write the own source to the peer, send
 *    a message saying whose turn it was; the other side checks that
 *    message and what was written to it, and takes its turn.
 *
 * mode=server listens on addr:port and serves one connection; mode=client
 * connects to addr:port. hangup says how the connection ends: this side
 * disconnects (self, the client's default), waits for the peer to
 * disconnect (peer, the server's default), or waits for its own adapter
 * to be removed (removal). Once connected, a receive stays posted; with
 * proto=ndk it must complete as cancelled when the connection ends.
 * Loading the module only checks the parameters
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
MODULE_PARM_DESC(proto, "rping, rdmacm for rdma_server and rdma_client, or ndk for ndk_rping");

static char *addr;
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address to listen on (server) or connect to (client)");

static char *src;
module_param(src, charp, 0444);
MODULE_PARM_DESC(src, "client: local IPv4 address (default: addr, a server on this host)");

static ushort port;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "port (default: 7174 for rping and ndk, 7471 for rdmacm, as the programs)");

static uint count = 10;
module_param(count, uint, 0444);
MODULE_PARM_DESC(count, "rping and ndk: iterations");

static uint size = 64;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "rping and ndk: bytes per ping, 26 to 65535 as rping accepts");

static char *hangup = "";
module_param(hangup, charp, 0444);
MODULE_PARM_DESC(hangup, "self, peer or removal (of this side's adapter); default: the client disconnects");

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

/*
 * One registered region: the received message, the sent one, then the
 * data areas: rping's source and sink; ndk's source, the sink of its
 * reads and the area the peer writes to.
 */
#define NR_RECV_OFF	0
#define NR_SEND_OFF	64
#define NR_DATA_OFF	128
#define NR_SRC		0
#define NR_SINK		1
#define NR_LANDING	2

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

/* The values of proto and hangup, in the order of their enums. */
enum nr_proto { NR_PROTO_RPING, NR_PROTO_RDMACM, NR_PROTO_NDK };
static const char * const nr_protos[] = { "rping", "rdmacm", "ndk" };
enum nr_hangup { NR_HANGUP_SELF, NR_HANGUP_PEER, NR_HANGUP_REMOVAL };
static const char * const nr_hangups[] = { "self", "peer", "removal" };

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
	bool server;
	enum nr_proto proto;
	enum nr_hangup hangup;
	struct sockaddr_in local, peer;
	int ifindex;
	struct notifier_block nb;	/* hangup=removal */
	bool removed;			/* our adapter is going away */

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
	unsigned int areas;		/* NR_SRC, NR_SINK (, NR_LANDING) */
	struct ndk_mdl mdl;
	u32 lkey, rkey;
	u8 msg[NR_MSG] __aligned(8);	/* the last message received */
	struct nr_rping_info remote;	/* proto=ndk: the peer's areas */

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
	size_t len = NR_DATA_OFF + rp->areas * rp->area;
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
	rp->ifindex = ndev->ifindex;
	dev_put(ndev);
	st = ndk_open_adapter(rp->ifindex, v, &rp->adapter);
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
 * Wait for the completion of the outstanding work request of kind @op,
 * whatever its status; results of other kinds that arrive first are kept
 * for their waits.
 */
static int nr_wait_result(struct ndk_rping *rp, enum nr_op op,
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
	return 0;
}

/* Wait for the successful completion of the work request of kind @op. */
static int nr_wait_op(struct ndk_rping *rp, enum nr_op op, ULONG *bytes,
		      const char *what)
{
	int err = nr_wait_result(rp, op, what);

	if (err)
		return err;
	if (rp->result[op].Status)
		return nr_fail(rp, what, rp->result[op].Status);
	if (bytes)
		*bytes = rp->result[op].BytesTransferred;
	return 0;
}

/* Wait up to the timeout for @flag, set by a callback. */
static int nr_wait_flag(struct ndk_rping *rp, bool *flag, const char *what)
{
	wait_event_timeout(rp->wq, READ_ONCE(*flag) || READ_ONCE(rp->stop),
			   nr_timeout());
	if (READ_ONCE(*flag))
		return 0;
	return nr_fail(rp, what, READ_ONCE(rp->stop) ? STATUS_CANCELLED :
		       STATUS_IO_TIMEOUT);
}

static int nr_post_recv(struct ndk_rping *rp)
{
	NDK_SGE sge = nr_sge(rp, NR_RECV_OFF, NR_MSG);
	NTSTATUS st;

	st = rp->qp->Dispatch->NdkReceive(rp->qp, NR_CTX(NR_OP_RECV), &sge, 1);
	return st ? nr_fail(rp, "posting a receive", st) : 0;
}

/*
 * The receives to post before connecting. proto=ndk keeps a second one
 * posted: when the connection ends, one is surely waiting, even if the
 * peer hung up right after its last message.
 */
static int nr_post_recv_all(struct ndk_rping *rp)
{
	if (rp->proto == NR_PROTO_NDK && nr_post_recv(rp))
		return -EIO;
	return nr_post_recv(rp);
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

static int nr_post_send(struct ndk_rping *rp, const void *msg,
			const char *what)
{
	NDK_SGE sge = nr_sge(rp, NR_SEND_OFF, NR_MSG);
	NTSTATUS st;

	memcpy(rp->buf + NR_SEND_OFF, msg, NR_MSG);
	st = rp->qp->Dispatch->NdkSend(rp->qp, NR_CTX(NR_OP_SEND), &sge, 1, 0);
	return st ? nr_fail(rp, what, st) : 0;
}

static int nr_send(struct ndk_rping *rp, const void *msg, const char *what)
{
	if (nr_post_send(rp, msg, what))
		return -EIO;
	return nr_wait_op(rp, NR_OP_SEND, NULL, what);
}

/*
 * The server's last message, after which the client disconnects (rping's,
 * rdma_client's, and ours with proto=ndk). On IB their QP goes to error
 * before the DREQ, and rxe acknowledges a message only after its receive
 * completed: the ACK may be dropped, and our send then ends flushed by
 * the disconnect although the client has the message. rping and
 * rdma_server take a flushed send as the end of the run; so do we, but
 * only when the client does disconnect. Its result says whether it got
 * the data.
 */
static int nr_send_last(struct ndk_rping *rp, const void *msg,
			const char *what)
{
	NTSTATUS st;

	if (nr_post_send(rp, msg, what) ||
	    nr_wait_result(rp, NR_OP_SEND, what))
		return -EIO;
	st = rp->result[NR_OP_SEND].Status;
	if (st != STATUS_CANCELLED)
		return st ? nr_fail(rp, what, st) : 0;
	pr_info("%s: flushed by the client's disconnect\n", what);
	return nr_wait_flag(rp, &rp->peer_gone, what);
}

/*
 * The client's message, which rdma_server answers and then disconnects
 * at once: its disconnect may reach us before rxe has taken the ACK of
 * our send, which then ends flushed although the server has it (seen on
 * 7.3 under load). The answer proves it does, and cannot be flushed
 * itself: rxe acknowledges the answer, which the server waits for before
 * it disconnects, only once our receive of it completed.
 */
static int nr_send_answered(struct ndk_rping *rp, const void *msg,
			    const char *what, const char *answer)
{
	NTSTATUS st;

	if (nr_post_send(rp, msg, what) ||
	    nr_wait_result(rp, NR_OP_SEND, what))
		return -EIO;
	st = rp->result[NR_OP_SEND].Status;
	if (st && st != STATUS_CANCELLED)
		return nr_fail(rp, what, st);
	if (nr_recv(rp, false, answer))
		return -EIO;
	if (st)
		pr_info("%s: flushed by the server's disconnect after its answer\n",
			what);
	return 0;
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
	if (nr_post_recv_all(rp))
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
	if (!rp->conn || nr_post_recv_all(rp))
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
			    "writing the sink"))
			return -EIO;
		if (rp->iters + 1 < count ?
		    nr_send(rp, go_ahead, "sending go-ahead after the write") :
		    nr_send_last(rp, go_ahead,
				 "sending go-ahead after the last write"))
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
		/* Nothing follows the last go-ahead (see nr_ndk_check_peer()). */
		if (nr_send(rp, &info, "sending the sink") ||
		    nr_recv(rp, rp->iters + 1 < count,
			    "receiving go-ahead after the write"))
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
		    nr_send_last(rp, hello, "sending the answer"))
			return -EIO;
	} else if (nr_send_answered(rp, hello, "sending the message",
				    "receiving the answer")) {
		return -EIO;
	}
	if (memcmp(rp->msg, zero, NR_MSG))
		return nr_fail(rp, "checking the message", STATUS_DATA_ERROR);
	rp->iters = 1;
	return 0;
}

/* Where area @i of the peer's is, for nr_rdma(). */
static struct nr_rping_info nr_peer_area(struct ndk_rping *rp, unsigned int i)
{
	struct nr_rping_info info = rp->remote;

	be64_add_cpu(&info.buf, i * rp->area);
	return info;
}

static u8 *nr_area(struct ndk_rping *rp, unsigned int i)
{
	return rp->buf + NR_DATA_OFF + i * rp->area;
}

/*
 * The pattern of a side's source after it took @turns turns: each side
 * refills its source after every turn, with a seed of its own.
 */
static void nr_ndk_pattern(u8 *buf, unsigned int turns, bool server)
{
	nr_rping_pattern(buf, size, 2 * turns + server);
}

/* The message that ends turn @turn of a side. */
static void nr_turn_msg(u8 *msg, unsigned int turn, bool server)
{
	memset(msg, 0, NR_MSG);
	scnprintf(msg, NR_MSG, "turn %u %s", turn, server ? "srv" : "cli");
}

/*
 * proto=ndk: send our areas' place (client first), receive the peer's.
 * Their size must match: both sides take size from their parameters.
 */
static int nr_ndk_exchange(struct ndk_rping *rp)
{
	struct nr_rping_info info = {
		.buf = cpu_to_be64(nr_remote_addr(rp, NR_DATA_OFF)),
		.rkey = cpu_to_be32(rp->rkey),
		.size = cpu_to_be32(size),
	};

	if (!rp->server && nr_send(rp, &info, "sending the areas"))
		return -EIO;
	if (nr_recv(rp, true, "receiving the peer's areas"))
		return -EIO;
	memcpy(&rp->remote, rp->msg, NR_MSG);
	if (be32_to_cpu(rp->remote.size) != size)
		return nr_fail(rp, "the peer's area size",
			       STATUS_INVALID_BUFFER_SIZE);
	if (rp->server && nr_send(rp, &info, "sending the areas"))
		return -EIO;
	return 0;
}

/*
 * The peer has taken @turns turns: its last message names the last one,
 * and what it wrote into our landing area is its source of before. After
 * the peer's last turn (@last) no receive is posted again: the peer may
 * hang up at once, and a device whose QP is closing may refuse a receive
 * (siw does). The second receive is still posted and comes back flushed.
 */
static int nr_ndk_check_peer(struct ndk_rping *rp, unsigned int turns,
			     bool last, u8 *expect)
{
	u8 msg[NR_MSG];

	if (nr_recv(rp, !last, "receiving the end of the peer's turn"))
		return -EIO;
	nr_turn_msg(msg, turns - 1, !rp->server);
	if (memcmp(rp->msg, msg, NR_MSG))
		return nr_fail(rp, "checking the peer's message",
			       STATUS_DATA_ERROR);
	nr_ndk_pattern(expect, turns - 1, !rp->server);
	if (memcmp(nr_area(rp, NR_LANDING), expect, size))
		return nr_fail(rp, "checking the data the peer wrote",
			       STATUS_DATA_ERROR);
	return 0;
}

/*
 * Our turn @turn: RDMA read the peer's source and check it, RDMA write
 * our source into the peer's landing area, refill the source and tell
 * the peer. The peer has taken @peer_turns turns before.
 */
static int nr_ndk_turn(struct ndk_rping *rp, unsigned int turn,
		       unsigned int peer_turns, u8 *expect)
{
	struct nr_rping_info peer_src = nr_peer_area(rp, NR_SRC);
	struct nr_rping_info peer_landing = nr_peer_area(rp, NR_LANDING);
	u8 msg[NR_MSG];

	memset(nr_area(rp, NR_SINK), 0, size);
	if (nr_rdma(rp, NR_OP_READ, NR_DATA_OFF + NR_SINK * rp->area, size,
		    &peer_src, "reading the peer's source"))
		return -EIO;
	nr_ndk_pattern(expect, peer_turns, !rp->server);
	if (memcmp(nr_area(rp, NR_SINK), expect, size))
		return nr_fail(rp, "checking the data read", STATUS_DATA_ERROR);
	if (nr_rdma(rp, NR_OP_WRITE, NR_DATA_OFF + NR_SRC * rp->area, size,
		    &peer_landing, "writing the peer's landing area"))
		return -EIO;
	/* The write has completed: the source is ours again. */
	nr_ndk_pattern(nr_area(rp, NR_SRC), turn + 1, rp->server);
	nr_turn_msg(msg, turn, rp->server);
	/* The client disconnects once it has checked our last turn. */
	if (rp->server && turn + 1 == count && rp->hangup == NR_HANGUP_PEER)
		return nr_send_last(rp, msg, "sending the end of the last turn");
	return nr_send(rp, msg, "sending the end of the turn");
}

/*
 * proto=ndk: the client takes turn 0, the server turn 0, the client turn
 * 1 and so on; the client checks the server's last turn at the end. Only
 * one side acts at a time, so nobody reads or writes an area that its
 * owner is still using.
 */
static int nr_ndk(struct ndk_rping *rp)
{
	u8 *expect;
	int err;

	expect = kmalloc(size, GFP_KERNEL);
	if (!expect)
		return nr_fail(rp, "allocating", STATUS_INSUFFICIENT_RESOURCES);
	nr_ndk_pattern(nr_area(rp, NR_SRC), 0, rp->server);
	err = nr_ndk_exchange(rp);
	for (; !err && rp->iters < count; rp->iters++) {
		if (rp->server || rp->iters)
			err = nr_ndk_check_peer(rp, rp->iters + rp->server,
						false, expect);
		if (!err)
			err = nr_ndk_turn(rp, rp->iters, rp->iters + rp->server,
					  expect);
	}
	if (!err && !rp->server)
		err = nr_ndk_check_peer(rp, count, true, expect);
	kfree(expect);
	return err;
}

static int nr_removal_event(struct notifier_block *nb, unsigned long event,
			    void *data)
{
	struct ndk_rping *rp = container_of(nb, struct ndk_rping, nb);
	const struct ndk_adapter_desc *desc = data;

	if (event == NDK_ADAPTER_REMOVED &&
	    desc->ifindex == READ_ONCE(rp->ifindex)) {
		WRITE_ONCE(rp->removed, true);
		wake_up(&rp->wq);
	}
	return NOTIFY_DONE;
}

/* With proto=ndk the receive left posted must end as cancelled. */
static int nr_wait_flushed(struct ndk_rping *rp)
{
	const char *what = "waiting for the receive to be flushed";

	if (rp->proto != NR_PROTO_NDK)
		return 0;
	if (nr_wait_result(rp, NR_OP_RECV, what))
		return -EIO;
	if (rp->result[NR_OP_RECV].Status != STATUS_CANCELLED)
		return nr_fail(rp, what, rp->result[NR_OP_RECV].Status);
	return 0;
}

static int nr_disconnect(struct ndk_rping *rp)
{
	struct nr_req *req;
	NTSTATUS st;

	if (rp->hangup == NR_HANGUP_REMOVAL) {
		pr_info("%s %s: waiting for the adapter's removal\n", proto,
			mode);
		if (nr_wait_flag(rp, &rp->removed,
				 "waiting for the adapter's removal"))
			return -EIO;
	}
	/* Also what rdma_cm tells of our device's removal. */
	if (rp->hangup != NR_HANGUP_SELF &&
	    (nr_wait_flag(rp, &rp->peer_gone,
			  "waiting for the disconnect event") ||
	     nr_wait_flushed(rp)))
		return -EIO;
	/* Completes at once when the peer has disconnected already. */
	req = nr_req(rp, NR_DISCONNECT);
	st = rp->conn->Dispatch->NdkDisconnect(rp->conn, nr_requested, req);
	st = nr_request(rp, req, st);
	if (st)
		return nr_fail(rp, "disconnecting", st);
	return rp->hangup == NR_HANGUP_SELF ? nr_wait_flushed(rp) : 0;
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
	int err = 0;

	/* Before the adapter is opened: its removal must not go unseen. */
	if (rp->hangup == NR_HANGUP_REMOVAL) {
		rp->nb.notifier_call = nr_removal_event;
		if (ndk_register_adapter_notifier(&rp->nb))
			err = nr_fail(rp, "registering the adapter notifier",
				      STATUS_INSUFFICIENT_RESOURCES);
	}
	if (!err)
		err = nr_setup(rp);
	if (!err)
		err = rp->server ? nr_listen(rp) : nr_connect(rp);
	if (!err) {
		nr_dbg("connected\n");
		if (rp->proto == NR_PROTO_RDMACM)
			err = nr_rdmacm(rp);
		else if (rp->proto == NR_PROTO_NDK)
			err = nr_ndk(rp);
		else if (rp->server)
			err = nr_rping_server(rp);
		else
			err = nr_rping_client(rp);
	}
	if (!err)
		err = nr_disconnect(rp);
	nr_teardown(rp);
	if (rp->nb.notifier_call)
		ndk_unregister_adapter_notifier(&rp->nb);

	if (err)
		pr_err("%s %s: FAIL after %u iterations: %s: status %#x\n",
		       proto, mode, rp->iters, rp->failed, rp->status);
	else if (rp->proto == NR_PROTO_NDK)
		pr_info("%s %s: PASS %u turns of %u bytes each way verified, hangup=%s\n",
			proto, mode, rp->iters, size, nr_hangups[rp->hangup]);
	else if (rp->proto == NR_PROTO_RPING)
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
	int ret;
	u16 p;

	if (!sysfs_streq(mode, "server") && !sysfs_streq(mode, "client")) {
		pr_err("mode must be server or client\n");
		return -EINVAL;
	}
	ret = match_string(nr_protos, ARRAY_SIZE(nr_protos), proto);
	if (ret < 0) {
		pr_err("proto must be rping, rdmacm or ndk\n");
		return -EINVAL;
	}
	rp->proto = ret;
	rp->server = sysfs_streq(mode, "server");
	rp->hangup = rp->server ? NR_HANGUP_PEER : NR_HANGUP_SELF;
	if (*hangup) {
		ret = match_string(nr_hangups, ARRAY_SIZE(nr_hangups), hangup);
		if (ret < 0) {
			pr_err("hangup must be self, peer or removal\n");
			return -EINVAL;
		}
		rp->hangup = ret;
	}
	if (rp->proto != NR_PROTO_RDMACM &&
	    (size < NR_RPING_MIN || size > NR_RPING_MAX)) {
		pr_err("size must be %u to %u\n", NR_RPING_MIN, NR_RPING_MAX);
		return -EINVAL;
	}
	p = port ? port : rp->proto == NR_PROTO_RDMACM ? 7471 : 7174;
	if (nr_parse_addr(addr, rp->server ? &rp->local : &rp->peer, p) ||
	    (!rp->server &&
	     nr_parse_addr(src ? src : addr, &rp->local, 0))) {
		pr_err("addr (and src) must be IPv4 addresses\n");
		return -EINVAL;
	}
	rp->area = ALIGN(rp->proto == NR_PROTO_RDMACM ? NR_MSG : size, 64);
	rp->areas = rp->proto == NR_PROTO_NDK ? 3 : 2;
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
