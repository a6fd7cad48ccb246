/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ndk_selftest: what its files share.
 *
 * The module checks, on a device the user names, what an NDK consumer
 * relies on; see main.c. The file that does each part:
 *
 *  main.c      the module, its parameters, the run and its summary;
 *  report.c    the KTAP lines and checks, and asynchronous calls made
 *              synchronous with bounded waits;
 *  objects.c   the device's objects and memory, and the checks made on
 *              one side alone: objects, queues, memory, listeners;
 *  conn.c      one side of a connection: its CQ, QP, message memory,
 *              receives, sends, RDMA, results and private data;
 *  server.c    the passive side: accept, publish memory, answer;
 *  session.c   the active side's sessions, and what must be refused;
 *  teardown.c  connections torn down with requests outstanding.
 */
#ifndef NDK_SELFTEST_H
#define NDK_SELFTEST_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <ndk/ndk.h>

/* Module parameters other files read; main.c has them. */
extern char *st_ifname;
extern ushort st_port;
extern uint st_wait_s;
extern uint st_teardown_rounds;

#define ST_TIMEOUT	(20 * HZ)
#define ST_MAGIC	0x4e444b53	/* "NDKS" */
#define ST_BUF		(4 * PAGE_SIZE)
#define ST_DATA		(8 * PAGE_SIZE)	/* the active side's data */
#define ST_READ_OFF	(4 * PAGE_SIZE + 500)	/* where reads land */
#define ST_DEPTH	16
/* Room for what a device that rounds ST_DEPTH up may take. */
#define ST_CQ_DEPTH	256
#define ST_RECVS	8
#define ST_SGE		4
#define ST_MSG		256	/* bytes of a receive buffer */
#define ST_STASH	64
#define ST_MW_OFF	100
#define ST_MW_LEN	1000

/* Session kinds, the first byte of the connect's private data. */
enum { ST_SESSION = 1, ST_SESSION_SRQ, ST_REJECT, ST_DONE };
/* Messages, the first word of a send. */
enum { ST_HELLO = 1, ST_ECHO, ST_INVALIDATE, ST_ACK, ST_QUIET, ST_BYE };

/*
 * A connect's private data: the session's kind, and its name, which both
 * sides print so that a log says which check a line belongs to.
 */
struct st_req {
	__le32 magic;
	u8 kind;
	u8 pad[3];
	char name[40];
};

/* What the passive side publishes; a zero token: not offered. */
struct st_hello {
	__le32 type;
	__le32 magic;
	__le64 mr_va, fr_va, mw_va;
	__le32 mr_tok, fr_tok, mw_tok;
	__le32 mr_len, fr_len, mw_len;
};

/* Message words, wherever they sit in a buffer. */
static inline u32 st_get32(const void *p)
{
	__le32 v;

	memcpy(&v, p, sizeof(v));
	return le32_to_cpu(v);
}

static inline void st_put32(u32 x, void *p)
{
	__le32 v = cpu_to_le32(x);

	memcpy(p, &v, sizeof(v));
}

/*
 * A check accumulates its first failure; ST_CHECK records one unless the
 * condition holds and yields the condition.
 */
struct st_check {
	const char *name;
	char why[160];
};

#define ST_CHECK(c, cond)	st_expect(c, cond, "line %d: %s", __LINE__, #cond)
#define ST_STATUS(c, st, want)						\
	({								\
		NTSTATUS __st = (st), __want = (want);			\
									\
		st_expect(c, __st == __want,				\
			  "line %d: status %#x, expected %#x", __LINE__, \
			  (u32)__st, (u32)__want);			\
	})

struct st_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
	atomic_t calls;
};

#define st_obj(hdr, type)						\
	({								\
		NDK_OBJECT_HEADER *__h = (hdr);				\
									\
		__h ? container_of(__h, type, Header) : NULL;		\
	})

/* The device, and the passive side's state. */
struct st {
	NDK_ADAPTER *a;
	NDK_ADAPTER_INFO info;
	int ifindex;
	struct sockaddr_in local, remote;
	NDK_PD *pd;
	spinlock_t lock;	/* held around calls made in atomic context */
	/* The passive side. */
	NDK_LISTENER *listener;
	struct task_struct *server;
	struct completion server_done;
	wait_queue_head_t incoming_wq;
	struct _NDK_CONNECTOR *incoming[4];
	unsigned int nincoming;
	bool server_stop;
	bool srq_notified_seen, disc_seen, inval_seen, pdata_seen;
};

/* Page-aligned memory, registered on the PD. */
struct st_mem {
	u8 *buf;
	size_t len;
	struct ndk_mdl mdl;
	NDK_MR *mr;
	u32 ltok, rtok;
};

/* A CQ notification: where it ran and how often. */
struct st_notify {
	struct completion done;
	atomic_t calls;
	bool dispatch;	/* ran in softirq or hardirq: NDKPI's DISPATCH_LEVEL */
	NTSTATUS status;
};

/* Request contexts; receives carry ST_RECV_CTX + their slot. */
#define ST_RECV_CTX	0x1000
#define ST_CTX(n)	((void *)(uintptr_t)(n))
/* Where a receive's second SGE lands in the message memory. */
#define ST_SCATTER	64
#define ST_TAIL_OFF	(2 * PAGE_SIZE)
#define ST_SEND_SLOT	ST_RECVS

/* One side of a connection, with its CQ, QP and message memory. */
struct st_conn {
	struct st *s;
	NDK_CQ *cq;
	NDK_QP *qp;
	NDK_SRQ *srq;
	NDK_CONNECTOR *c;
	struct st_mem msg;
	struct st_notify notify, srq_notify;
	atomic_t disconnected;
	NDK_RESULT_EX stash[ST_STASH];
	int nstash;
};

/* A session: a connection to the passive side and what it published. */
struct st_sess {
	struct st_conn cn;
	struct st_mem data;
	struct st_hello hello;
	char why[96];
};

/* report.c */
extern bool st_abandoned;
extern unsigned int st_passed, st_failed, st_skipped;
void st_report(const char *name, const char *fail);
void st_skip(const char *name, const char *missing);
__printf(3, 4) bool st_expect(struct st_check *c, bool ok, const char *fmt,
			      ...);
void st_begin(struct st_check *c, const char *name);
bool st_end(struct st_check *c);
void st_wait_init(struct st_wait *w);
void st_create_cb(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj);
void st_request_cb(PVOID ctx, NTSTATUS status);
void st_close_cb(PVOID ctx);
NTSTATUS st_wait(struct st_wait *w, NTSTATUS st);
NDK_OBJECT_HEADER *st_created(struct st_wait *w, NTSTATUS st,
			      void *inline_obj, NTSTATUS *out);
NTSTATUS st_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close);

/* objects.c */
NDK_CQ *st_cq(struct st *s, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK cb,
	      void *ctx);
NDK_QP *st_qp(struct st *s, NDK_CQ *cq, NDK_SRQ *srq, void *ctx,
	      ULONG depth, ULONG inline_size);
NDK_CONNECTOR *st_connector(struct st *s);
NTSTATUS st_mem_new(struct st *s, struct st_mem *m, size_t len, ULONG flags);
void st_mem_free(struct st_mem *m);
NDK_SGE st_sge(struct st_mem *m, size_t off, ULONG len);
NTSTATUS st_poll_one(NDK_CQ *cq, NDK_RESULT_EX *r);
void st_notify_cb(PVOID ctx, NTSTATUS status);
int st_open(struct st *s);
void st_objects(struct st *s);
void st_memory_local(struct st *s);
void st_receive_queue(struct st *s);
void st_srq_local(struct st *s);
void st_cq_resize(struct st *s);
void st_qp_limits(struct st *s);
NTSTATUS st_listen_on(struct st *s, NDK_LISTENER **lp,
		      NDK_FN_CONNECT_EVENT_CALLBACK cb, u16 p);
void st_listeners(struct st *s);

/* conn.c */
void st_disconnect_cb(PVOID ctx);
NTSTATUS st_conn_init(struct st *s, struct st_conn *cn, ULONG srq_threshold);
void st_conn_free(struct st_conn *cn);
NTSTATUS st_post_recv(struct st_conn *cn, int slot);
void st_recv_copy(struct st_conn *cn, int slot, void *dst, size_t len);
NTSTATUS st_result(struct st_conn *cn, void *ctx, NDK_RESULT_EX *out,
		   unsigned long timeout);
NTSTATUS st_next(struct st_conn *cn, NDK_RESULT_EX *out);
NTSTATUS st_send(struct st_conn *cn, size_t len, ULONG flags);
u8 *st_send_buf(struct st_conn *cn);
NTSTATUS st_rdma(struct st_conn *cn, bool write, NDK_SGE *sges, ULONG n,
		 u64 raddr, u32 token);
NTSTATUS st_pdata(NDK_CONNECTOR *c, void *out, ULONG outlen, ULONG *got);

/* server.c */
void st_listen_cb(PVOID ctx, NDK_CONNECTOR *c);
int st_server_fn(void *arg);

/* session.c */
NTSTATUS st_connect(struct st *s, struct st_sess *ss, u8 kind,
		    const char *name);
void st_sess_end(struct st_sess *ss);
void st_client(struct st *s);

/* teardown.c */
void st_session_teardown(struct st *s);

#endif
