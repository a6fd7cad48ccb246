/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ndk_nvmeof: a minimal NVMe over Fabrics host (initiator) on NDKPI.
 *
 * queue.c carries NVMe/RDMA capsules over one NDK connection: the
 * connector, QP and CQ of one NVMe queue, its receive buffers, and the
 * keyed SGLs of fast-registered regions that the target reads or writes.
 * ctrl.c drives a controller over those queues: Fabrics Connect, the
 * properties, Identify, Set Features, Keep Alive, shutdown and failure.
 * main.c is the exerciser that `make check` runs against Linux's nvmet,
 * bench.c its timed mode for `make bench`.
 */
#ifndef _NDK_NVMEOF_H
#define _NDK_NVMEOF_H

/* Every file includes this first: its messages name the module. */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/nvme.h>
#include <linux/nvme-rdma.h>
#include <linux/uuid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <ndk/ndk.h>
#include <ndk/ndk_mdl.h>

/* Entries of each queue: the admin queue's NVMe depth, and the I/O's. */
#define NVMEOF_QUEUE_SIZE	32
/* Largest transfer of one command, and the adapter pages it may span. */
#define NVMEOF_MAX_IO		(128 * 1024)
#define NVMEOF_MAX_PAGES	(NVMEOF_MAX_IO / PAGE_SIZE + 1)
/*
 * Writes up to a page go in the command capsule (when the target offers
 * that much in-capsule data): the command's SGE and two page pieces.
 */
#define NVMEOF_INLINE_MAX	PAGE_SIZE
#define NVMEOF_SEND_SGE		3
/*
 * Initiator requests of one command: its fast registration, its send,
 * and a local invalidation if the target did not invalidate.
 */
#define NVMEOF_WR_PER_CMD	3
/* A command unanswered this long fails the controller. */
#define NVMEOF_CMD_TIMEOUT	(30 * HZ)
/* How long a timed-out I/O job still waits once a Flush was answered. */
#define NVMEOF_PROBE_WAIT	(5 * HZ)
/* How often a long run logs its progress. */
#define NVMEOF_PROGRESS		(60 * HZ)

/*
 * Of a completion's status field without its phase bit (the value in
 * nvmeof_req.nvme_status): status code type and code, and Do Not Retry.
 */
#define NVMEOF_SC(status)	((status) & 0x7ff)
#define NVMEOF_DNR(status)	((status) & 0x4000)

/*
 * The private data of NVMe/RDMA's connection request, as the transport
 * specification (1.1) has it; Linux 6.1's nvme_rdma_cm_req still calls
 * the controller id reserved.
 */
struct nvmeof_cm_req {
	__le16 recfmt;
	__le16 qid;
	__le16 hrqsize;
	__le16 hsqsize;
	__le16 cntlid;
	u8 rsvd[22];
};

struct nvmeof_ctrl;
struct nvmeof_queue;
struct nvmeof_req;

/* Called once per submitted command, from the CQ's notification. */
typedef void (*nvmeof_end_fn)(struct nvmeof_req *req);

/* Bits of nvmeof_req.flags. */
enum {
	NVMEOF_REQ_POSTED,	/* its requests went to the QP */
	NVMEOF_REQ_ANSWERED,	/* its response came, or never will */
};

/* One command slot of a queue; its index is the NVMe command id. */
struct nvmeof_req {
	struct nvmeof_queue *queue;
	u16 tag;
	unsigned long flags;
	/* Parts still outstanding: the send, the response, an invalidation. */
	atomic_t pending;
	NDK_MR *mr;
	UINT32 rtoken;
	/* The region holds a registration the target was asked to end. */
	bool registered;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	bool mapped;
	/* What the end callback reads. */
	NTSTATUS status;
	u16 nvme_status;
	union nvme_result result;
	nvmeof_end_fn end;
	void *priv;
};

/* A receive buffer's slot; its address is the receive's context. */
struct nvmeof_rx {
	struct nvmeof_queue *queue;
	u16 index;
};

/* Bits of nvmeof_queue.flags. */
enum {
	NVMEOF_Q_CONNECTED,	/* NdkCompleteConnect succeeded */
	NVMEOF_Q_FAILED,	/* no more requests: failed or shutting down */
	NVMEOF_Q_DRAINED,	/* failed and every receive came back */
};

/* One NVMe queue: one NDK connection. */
struct nvmeof_queue {
	struct nvmeof_ctrl *ctrl;
	u16 qid;
	u16 size;
	u32 inline_max;
	unsigned long flags;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_CONNECTOR *connector;
	/* Command capsules and response buffers, one registered region. */
	void *capsules;
	struct ndk_mdl mdl;
	NDK_MR *mr;
	bool mr_registered;
	UINT32 ltoken;
	struct nvme_command *cmds;
	struct nvme_completion *rsps;
	struct nvmeof_req *reqs;
	struct nvmeof_rx *rx;
	unsigned long *busy;
	atomic_t rx_posted;
	/*
	 * Responses that invalidated their command's token, and commands
	 * whose region the host had to invalidate itself.
	 */
	atomic_long_t remote_inv;
	atomic_long_t local_inv;
	/* NDKPI leaves the serialization of one QP's posts to its consumer. */
	spinlock_t post_lock;
	/* Woken when a slot frees and when the queue has drained. */
	wait_queue_head_t wait;
};

struct nvmeof_ctrl {
	NDK_ADAPTER *adapter;
	NDK_ADAPTER_INFO info;
	NDK_PD *pd;
	UINT32 ptoken;
	struct sockaddr_in src;
	struct sockaddr_in dst;
	char subnqn[NVMF_NQN_FIELD_LEN];
	char hostnqn[NVMF_NQN_FIELD_LEN];
	uuid_t hostid;
	u16 cntlid;
	u64 cap;
	u32 cc;
	u32 kato_ms;
	u32 inline_max;
	u32 max_io;
	u32 nsid;
	u32 lba_shift;
	u64 nsze;
	struct nvmeof_queue admin;
	struct nvmeof_queue *io;
	int nr_io;
	/* ctrl_fail()'s decision against stop()'s; bit 0 of failed. */
	spinlock_t lock;
	bool stopping;
	unsigned long failed;
	struct work_struct fail_work;
	struct delayed_work ka_work;
	/* The Keep Alive in flight, if any, and when it was sent. */
	atomic_t ka_busy;
	unsigned long ka_sent;
	/* The longest Keep Alive round trip and interval (jiffies), logged. */
	unsigned long ka_rtt_max;
	unsigned long ka_gap_max;
	/* When the last response of any queue came (jiffies). */
	unsigned long last_rsp;
	/* Why the host gave up, for its log. */
	const char *fail_reason;
};

/* queue.c and connect.c */
int nvmeof_queue_create(struct nvmeof_ctrl *ctrl, struct nvmeof_queue *q,
			u16 qid, u16 size);
int nvmeof_queue_connect(struct nvmeof_queue *q);
void nvmeof_queue_destroy(struct nvmeof_queue *q);
void nvmeof_queue_fail(struct nvmeof_queue *q);
void nvmeof_queue_report(struct nvmeof_queue *q);

/* Queue @i of @ctrl: -1 is the admin queue, 0 to nr_io - 1 the I/O ones. */
static inline struct nvmeof_queue *nvmeof_queue_nr(struct nvmeof_ctrl *ctrl,
						   int i)
{
	return i < 0 ? &ctrl->admin : &ctrl->io[i];
}

bool nvmeof_post_recv(struct nvmeof_queue *q, struct nvmeof_rx *rx);
void nvmeof_cq_event(PVOID ctx, NTSTATUS status);
void nvmeof_disconnect_event(PVOID ctx);
int nvmeof_submit(struct nvmeof_queue *q, struct nvme_command *cmd,
		  void *buf, u32 len, bool to_target, nvmeof_end_fn end,
		  void *priv);
int nvmeof_exec(struct nvmeof_queue *q, struct nvme_command *cmd, void *buf,
		u32 len, bool to_target, union nvme_result *result);

/* ctrl.c */
int nvmeof_ctrl_start(struct nvmeof_ctrl *ctrl, int ifindex, int nr_io);
void nvmeof_ctrl_stop(struct nvmeof_ctrl *ctrl);
void nvmeof_ctrl_fail(struct nvmeof_ctrl *ctrl, const char *reason);
int nvmeof_rw(struct nvmeof_ctrl *ctrl, struct nvmeof_queue *q, bool write,
	      u64 lba, void *buf, u32 len, nvmeof_end_fn end, void *priv);
int nvmeof_flush(struct nvmeof_ctrl *ctrl, struct nvmeof_queue *q);

/* bench.c: main.c's bench mode. */
int nvmeof_bench(struct nvmeof_ctrl *ctrl, u32 ios);

/* wait.c: NDK's asynchronous calls made synchronous. */
struct nvmeof_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
};

void nvmeof_wait_init(struct nvmeof_wait *w);
void nvmeof_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj);
void nvmeof_request_done(PVOID ctx, NTSTATUS status);
NTSTATUS nvmeof_wait(struct nvmeof_wait *w, NTSTATUS status);
NDK_OBJECT_HEADER *nvmeof_created(struct nvmeof_wait *w, NTSTATUS status,
				  void *obj, const char *what);
void nvmeof_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close);

#define nvmeof_obj(hdr, type)						\
	({								\
		NDK_OBJECT_HEADER *__h = (hdr);				\
									\
		__h ? container_of(__h, type, Header) : NULL;		\
	})

#endif /* _NDK_NVMEOF_H */
