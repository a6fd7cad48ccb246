/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared pieces of the ndk KUnit suites: the suites, and helpers that
 * turn NDK's asynchronous completions into waits a test can make.
 */
#ifndef _NDK_TESTS_H
#define _NDK_TESTS_H

#include <kunit/test.h>
#include <linux/bvec.h>
#include <linux/completion.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <ndk/ndk.h>
#include "ndk_priv.h"
#include "compat.h"

/*
 * One suite per file: tests/<stem>_test.c holds ndk_<stem>, which tests
 * ndk/<stem>.c (ndkpi_test.c the public header, wdk_test.c the WDK layer).
 */
extern struct kunit_suite ndk_ndkpi_suite;
extern struct kunit_suite ndk_fuzz_suite;
extern struct kunit_suite ndk_status_suite;
extern struct kunit_suite ndk_adapter_suite;
extern struct kunit_suite ndk_pd_suite;
extern struct kunit_suite ndk_cq_suite;
extern struct kunit_suite ndk_qp_suite;
extern struct kunit_suite ndk_ring_suite;
extern struct kunit_suite ndk_sweep_suite;
extern struct kunit_suite ndk_connector_suite;
extern struct kunit_suite ndk_listener_suite;
extern struct kunit_suite ndk_endpoint_suite;
extern struct kunit_suite ndk_mr_suite;
extern struct kunit_suite ndk_mdl_suite;
extern struct kunit_suite ndk_mw_suite;
extern struct kunit_suite ndk_srq_suite;
extern struct kunit_suite ndk_trace_suite;
extern struct kunit_suite ndk_debugfs_suite;
extern struct kunit_suite ndk_fault_suite;
extern struct kunit_suite ndk_object_suite;
extern struct kunit_suite ndk_main_suite;
extern struct kunit_suite ndk_wdk_suite;

/*
 * The suite of tests/<stem>_test.c: ndk_<stem>, running the cases of
 * ndk_<stem>_cases[] between @init_fn and @exit_fn, which may be NULL;
 * ndk_test_exit() runs @exit_fn. @start_fn, if not NULL, runs once
 * before the suite's first case.
 */
#define NDK_SUITE_START(stem, start_fn, init_fn, exit_fn)		\
	static void ndk_##stem##_suite_exit(struct kunit *test)		\
	{								\
		ndk_test_exit(test, exit_fn);				\
	}								\
	struct kunit_suite ndk_##stem##_suite = {			\
		.name = "ndk_" #stem,					\
		.suite_init = start_fn,					\
		.init = init_fn,					\
		.exit = ndk_##stem##_suite_exit,			\
		.test_cases = ndk_##stem##_cases,			\
	}
#define NDK_SUITE(stem, init_fn, exit_fn)				\
	NDK_SUITE_START(stem, NULL, init_fn, exit_fn)

/* The start of the first suite (ndk_ndkpi): see tests/main.c. */
int ndk_test_first_suite(struct kunit_suite *suite);

void ndk_test_exit(struct kunit *test, void (*exit_fn)(struct kunit *test));

/* KUNIT_EXPECT_MEMEQ arrived after 6.1. */
#define NDK_EXPECT_MEMEQ(test, a, b, n)					\
	KUNIT_EXPECT_EQ_MSG(test, memcmp(a, b, n), 0, "bytes differ")

/* How long a test waits for a completion before calling it lost. */
#define NDK_TEST_TIMEOUT	(20 * HZ)

/**
 * struct ndk_wait - one asynchronous NDK completion a test waits for
 * @done: completed by the callback
 * @status: status the callback reported
 * @obj: object a create completion returned
 * @calls: how many times the callback ran (must end up 1)
 */
struct ndk_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
	atomic_t calls;
};

void ndk_wait_init(struct ndk_wait *w);
bool ndk_wait_for(struct ndk_wait *w);
NTSTATUS ndk_test_outcome(struct kunit *test, struct ndk_wait *w,
			  NTSTATUS st);
/*
 * What a request that can finish in its caller returns to a test thread:
 * only a kernel that counts preemption can tell that the thread may sleep.
 */
#define NDK_TEST_INLINE	\
	(IS_ENABLED(CONFIG_PREEMPT_COUNT) ? STATUS_SUCCESS : STATUS_PENDING)
void ndk_test_create_cb(PVOID Context, NTSTATUS Status,
			NDK_OBJECT_HEADER *pNdkObject);
void ndk_test_close_cb(PVOID Context);
void ndk_test_request_cb(PVOID Context, NTSTATUS Status);

NDK_ADAPTER *ndk_test_open(struct kunit *test);
void ndk_test_close_adapter(struct kunit *test, NDK_ADAPTER *a);
int ndk_test_ifindex(struct kunit *test);
int ndk_test_shell(const char *cmd);
NDK_OBJECT_HEADER *ndk_test_create_pd(struct kunit *test, NDK_ADAPTER *a);
NDK_OBJECT_HEADER *ndk_test_create_cq(struct kunit *test, NDK_ADAPTER *a,
				      ULONG depth);
void ndk_test_close(struct kunit *test, NDK_OBJECT_HEADER *obj,
		    NDK_FN_CLOSE_OBJECT close);
NTSTATUS ndk_test_close_atomic(NDK_OBJECT_HEADER *obj,
			       NDK_FN_CLOSE_OBJECT close, struct ndk_wait *c);

/**
 * struct ndk_close_in_create - an object closed by its create completion
 * @create: the create's completion
 * @close: the close's completion
 * @close_status: what the close returned
 */
struct ndk_close_in_create {
	struct ndk_wait create;
	struct ndk_wait close;
	NTSTATUS close_status;
};

void ndk_close_in_create_init(struct ndk_close_in_create *t);
void ndk_close_in_create_cb(PVOID Context, NTSTATUS Status,
			    NDK_OBJECT_HEADER *pNdkObject);
void ndk_close_in_create_check(struct kunit *test,
			       struct ndk_close_in_create *t);

/* Where a test makes an NDK call (ndk_test_run_in()). */
enum ndk_test_ctx {
	NDK_CTX_THREAD,		/* the test's own thread, which may sleep */
	NDK_CTX_LOCKED,		/* under a spinlock with interrupts off */
	NDK_CTX_TIMER,		/* a timer's softirq */
	/* Not in ndk_test_contexts(): they hide from the preempt count. */
	NDK_CTX_RCU,		/* under rcu_read_lock() alone */
	NDK_CTX_IRQS_OFF,	/* under local_irq_disable() alone */
};

/**
 * struct ndk_test_call - one NDK call made in a chosen context
 * @timer: runs @fn for NDK_CTX_TIMER
 * @ran: completed once @fn returned in the timer
 * @fn: makes the call
 * @softirq: whether @fn ran in softirq, for NDK_CTX_TIMER
 * @arg: what @fn needs besides the fields below
 * @w: the call's callback reports here
 * @st: what the call returned
 * @obj: the object to close
 * @out: where a create stores the object it made inline
 */
struct ndk_test_call {
	struct timer_list timer;
	struct completion ran;
	void (*fn)(struct ndk_test_call *c);
	bool softirq;
	void *arg;
	struct ndk_wait w;
	NTSTATUS st;
	NDK_OBJECT_HEADER *obj;
	void *out;
};

void ndk_test_run_in(struct ndk_test_call *c, enum ndk_test_ctx ctx);
void ndk_test_context(struct kunit *test, enum ndk_test_ctx ctx,
		      void (*create)(struct ndk_test_call *c), void *arg);
void ndk_test_contexts(struct kunit *test,
		       void (*create)(struct ndk_test_call *c), void *arg);

struct ndk_adapter;

/* Bytes a loopback QP sends per message. */
#define NDK_TEST_MSG	8

/**
 * struct ndk_test_lqp - raw RC QPs connected in a loop
 * @fake: stands in for an NDK QP so completions carry a QPContext
 *	(its context points back at this struct)
 * @pd: their protection domain
 * @loop: @loop.qp sends; on iWARP @loop.peer receives, elsewhere
 *	@loop.qp is its own peer
 * @rqp: the QP that receives
 * @buf: send buffer followed by receive buffer
 * @dma: DMA address of @buf
 */
struct ndk_test_lqp {
	struct ndk_qp fake;
	struct ib_pd *pd;
	struct ndk_loop loop;
	struct ib_qp *rqp;
	u8 *buf;
	u64 dma;
};

struct ndk_test_lqp *ndk_test_loopback_qp(struct kunit *test,
					  struct ndk_adapter *a,
					  struct ib_cq *cq);
void ndk_test_loopback_send(struct kunit *test, struct ndk_test_lqp *l,
			    u64 recv_id, u64 send_id, bool solicited);
void ndk_test_loopback_free(struct ndk_test_lqp *l);

/**
 * struct ndk_test_dev2 - a second RDMA device beside the case's own
 * @res: ends it with the case, whatever the case's assertions did
 * @test: the case
 * @ifindex: its interface, a dummy one of its own (NDK_TEST_DEV2)
 * @addr: that interface's IPv4 address, port 0
 * @a: an adapter the case opened on it, closed before the device goes
 * @gone: the case deleted the RDMA device itself; only the interface is
 *	left to delete
 */
struct ndk_test_dev2 {
	struct kunit_resource res;
	struct kunit *test;
	int ifindex;
	struct sockaddr_in addr;
	NDK_ADAPTER *a;
	bool gone;
};

/* The second device's name, as its interface's and as RDMA device. */
#define NDK_TEST_DEV2	"ndk_d2"

struct ndk_test_dev2 *ndk_test_dev2_add(struct kunit *test);
void ndk_test_dev2_del(struct kunit *test, struct ndk_test_dev2 *d);

/**
 * struct ndk_test_removal - the second device's deletion, on a work item
 * @work: runs `rdma link delete`, which returns only once the device's
 *	last adapter is closed
 * @ret: its exit status
 */
struct ndk_test_removal {
	struct work_struct work;
	int ret;
};

void ndk_test_dev2_remove(struct ndk_test_dev2 *d, struct ndk_test_removal *r);
int ndk_test_dev2_removed(struct ndk_test_removal *r);
bool ndk_test_until(bool (*cond)(void *arg), void *arg);
bool ndk_test_adapter_dead(void *arg);

/* A spinlock the tests hold to call NDK functions from atomic context. */
extern spinlock_t ndk_test_lock;
bool ndk_test_iwarp(void);
int ndk_test_rounds(int all, int few);
u32 ndk_test_cmdline_u64s(const char *name, u64 *v, u32 max);
/* main.c's provoke=open keeps an adapter open for the harness to find. */
bool ndk_test_kept_open(void);
int ndk_rw_file(const char *path, char *buf, size_t len, bool write);
unsigned int ndk_test_other_cpu(struct kunit *test);

/**
 * struct ndk_verbs_double - a driver double under an NDK QP
 * @dev: stands in for the device: the real one's operations, where the
 *	case puts its own in place of some (post_send, post_recv)
 * @ibqp: stands in for the QP's verbs QP, on @dev; whatever else ndk asks
 *	of it goes to the real QP through @ibqp.real_qp
 * @real: the real verbs QP
 */
struct ndk_verbs_double {
	struct ib_device dev;
	struct ib_qp ibqp;
	struct ib_qp *real;
};

void ndk_verbs_double_insert(struct ndk_verbs_double *d, struct ndk_qp *q);
void ndk_verbs_double_remove(struct ndk_verbs_double *d, struct ndk_qp *q);

/**
 * struct ndk_cleaner - a driver that deletes a destroyed QP's completions
 *	from its CQs, as mlx5 and mlx4 do, played under up to two CQs
 * @cq: the CQs whose polls it filters
 * @poll: their driver's poll_cq
 * @watch: the verbs QP whose destruction the case waits for
 * @gone: verbs QPs destroyed since the start; their completions vanish
 * @ngone: how many
 * @destroyed: completed when @watch is destroyed
 */
struct ndk_cleaner {
	struct ndk_cq *cq[2];
	int (*poll)(struct ib_cq *ibcq, int n, struct ib_wc *wc);
	struct ib_qp *watch;
	struct ib_qp *gone[8];
	int ngone;
	struct completion destroyed;
};

void ndk_cleaner_start(struct ndk_cleaner *c, NDK_CQ *a, NDK_CQ *b,
		       NDK_QP *watch);
void ndk_cleaner_stop(struct ndk_cleaner *c);

/* Listener port of the connection environment; suites use it and +1..+4. */
#define NDK_TEST_PORT	18515

/* The connection environment of a suite (env.c), in test->priv. */
struct ndk_cenv {
	NDK_ADAPTER *a;
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_LISTENER *listener;
	struct sockaddr_in addr;	/* the adapter's IPv4 address, port 0 */
	struct sockaddr_in6 addr6;	/* its global IPv6 address, if any */
	/* the connector the listener handed over, and when */
	NDK_CONNECTOR *incoming;
	struct completion incoming_done;
	/* what the connect event callback does with the request */
	bool reject;
	/* if set, it accepts on this QP, reporting to accept_w */
	NDK_QP *accept_qp;
	struct ndk_wait *accept_w;
	NTSTATUS accept_st;
	int disconnects;
	/* the adapter's limits, where the suite's init asked for them */
	NDK_ADAPTER_INFO info;
};

/* One connection: active connector and QP, passive connector and QP. */
struct ndk_pair {
	NDK_CONNECTOR *c, *in;
	NDK_QP *aqp, *pqp;
};

void ndk_conn_event_cb(PVOID ConnectEventContext,
		       NDK_CONNECTOR *pNdkConnector);
void ndk_disc_cb(PVOID DisconnectEventContext);
NDK_OBJECT_HEADER *ndk_create_with(struct kunit *test, NTSTATUS st,
				   struct ndk_wait *w);
NDK_OBJECT_HEADER *ndk_created(struct kunit *test, NTSTATUS st,
			       struct ndk_wait *w, void *obj);
NDK_QP *ndk_cenv_qp_sge(struct kunit *test, struct ndk_cenv *e, ULONG sge,
			ULONG inline_size);
NDK_QP *ndk_cenv_qp(struct kunit *test, struct ndk_cenv *e);
NDK_CONNECTOR *ndk_cenv_connector(struct kunit *test,
				  struct ndk_cenv *e);
NDK_MW *ndk_cenv_mw(struct kunit *test, struct ndk_cenv *e);
NTSTATUS ndk_listen_at(struct kunit *test, NDK_LISTENER *l,
		       const struct sockaddr_in *sin);
NTSTATUS ndk_cenv_listen(struct kunit *test, struct ndk_cenv *e,
			 NDK_LISTENER *l, u16 port);
NDK_LISTENER *ndk_cenv_listener(struct kunit *test, struct ndk_cenv *e);
void ndk_find_addr6(struct net_device *ndev, struct sockaddr_in6 *sin6);
int ndk_env_adapter_init(struct kunit *test);
int ndk_env_objects_init(struct kunit *test);
NDK_ADAPTER *ndk_env_adapter(struct kunit *test);
struct ndk_cenv *ndk_cenv_need(struct kunit *test);
int ndk_conn_init_test(struct kunit *test);
void ndk_conn_exit_test(struct kunit *test);
NTSTATUS ndk_connect_to(NDK_CONNECTOR *c, NDK_QP *qp,
			const struct sockaddr *src,
			const struct sockaddr *dst, ULONG len,
			bool atomic, struct ndk_wait *w);
NTSTATUS ndk_cenv_connect(struct ndk_cenv *e, NDK_CONNECTOR *c,
			  NDK_QP *qp, u16 port, const void *pdata,
			  ULONG len, struct ndk_wait *w);
NTSTATUS ndk_cenv_connect_done(struct kunit *test, struct ndk_cenv *e,
			       NDK_CONNECTOR *c, NDK_QP *qp, u16 port,
			       struct ndk_wait *w);
void ndk_cenv_connect_incoming(struct kunit *test, struct ndk_cenv *e,
			       NDK_CONNECTOR *c, NDK_QP *qp,
			       struct ndk_wait *w);
NTSTATUS ndk_listener_close(NDK_LISTENER *l, struct ndk_wait *w);
void ndk_close_all(struct kunit *test, NDK_CONNECTOR *c, NDK_QP *qp);
void ndk_pair_init(struct kunit *test, struct ndk_cenv *e,
		   struct ndk_pair *p);
void ndk_pair_request(struct kunit *test, struct ndk_cenv *e,
		      struct ndk_pair *p, const struct sockaddr *src,
		      const struct sockaddr *dst, ULONG len, bool atomic,
		      struct ndk_wait *cw);
void ndk_establish_pair_disc(struct kunit *test, struct ndk_cenv *e,
			     struct ndk_pair *p, const struct sockaddr *src,
			     const struct sockaddr *dst, ULONG len, bool atomic,
			     NDK_FN_DISCONNECT_EVENT_CALLBACK disc,
			     void *disc_ctx);
void ndk_establish_pair(struct kunit *test, struct ndk_cenv *e,
			struct ndk_pair *p, const struct sockaddr *src,
			const struct sockaddr *dst, ULONG len,
			bool atomic);
void ndk_establish(struct kunit *test, struct ndk_cenv *e,
		   struct ndk_pair *p, const struct sockaddr *src,
		   const struct sockaddr *dst, ULONG len, bool atomic);
void ndk_pair_close(struct kunit *test, struct ndk_pair *p);
void ndk_listen_addr(struct ndk_cenv *e, struct sockaddr_in *sin);
ULONG ndk_poll_results(NDK_CQ *cq, NDK_RESULT *r, ULONG n);

/* What ndk shows of itself (util.c): object ids and its debugfs files. */
u32 ndk_obs_id(NDK_OBJECT_HEADER *hdr);
char *ndk_obs_read(struct kunit *test, struct ndk_cenv *e, const char *file);
const char *ndk_obs_next(const char *line);
u64 ndk_obs_stat(struct kunit *test, const char *stats, const char *name);
void ndk_conn_traffic(struct kunit *test, struct ndk_cenv *e,
		      NDK_QP *from, NDK_QP *to);
NDK_RESULT *ndk_find_result(NDK_RESULT *r, ULONG n, uintptr_t ctx);

/* The memory environment (mem.c). */
#define NDK_MEM_PAGES	4

/**
 * struct ndk_mem - test memory in one of the forms an MDL describes
 * @kind: NDK_MDL_* (KVA memory from kmalloc or vmalloc, see @vmalloc)
 * @vmalloc: KVA memory comes from vmalloc
 * @chain: describe it as two MDLs split at a page boundary
 * @base: KVA memory
 * @pages: page-backed memory
 * @bv: bio_vecs of @pages
 * @sg: scatterlist of @pages
 * @mdl: the MDL chain
 * @off: where the region starts in the memory
 * @len: region length
 */
struct ndk_mem {
	enum ndk_mdl_kind kind;
	bool vmalloc;
	bool chain;
	u8 *base;
	struct page *pages[NDK_MEM_PAGES];
	struct bio_vec bv[NDK_MEM_PAGES];
	struct scatterlist sg[NDK_MEM_PAGES];
	struct ndk_mdl mdl[2];
	u32 off;
	u32 len;
};

/**
 * struct ndk_menv - a connection and a local buffer to move data with
 * @p: the connection; the active QP initiates, the passive one owns the
 *	target memory
 * @lmem: local buffer of the active side
 * @lmr: @lmem registered for local write
 * @early: results that arrived before their wait
 * @nearly: how many
 */
struct ndk_menv {
	struct ndk_pair p;
	struct ndk_mem lmem;
	NDK_MR *lmr;
	NDK_RESULT_EX early[8];
	int nearly;
};

u8 *ndk_mem_byte(struct ndk_mem *m, u32 i);
void ndk_mem_fill(struct ndk_mem *m, u32 from, u32 n, u8 seed);
bool ndk_mem_check(struct ndk_mem *m, u32 from, u32 n, u8 seed);
void ndk_mem_init(struct kunit *test, struct ndk_mem *m,
		  enum ndk_mdl_kind kind, bool vmalloc, bool chain,
		  u32 off, u32 len);
void ndk_mem_free(struct ndk_mem *m);
u64 ndk_mem_va(struct ndk_mem *m);
NDK_MR *ndk_test_mr(struct kunit *test, struct ndk_cenv *e, bool fast);
NTSTATUS ndk_test_register(struct kunit *test, NDK_MR *mr,
			   struct ndk_mem *m, u64 len, ULONG flags);
NTSTATUS ndk_test_deregister(struct kunit *test, NDK_MR *mr);
void ndk_test_close_mr(struct kunit *test, NDK_MR *mr);
void *ndk_kzalloc_test(struct kunit *test, size_t size);
NTSTATUS ndk_test_result(struct kunit *test, struct ndk_menv *me,
			 NDK_CQ *cq, void *ctx, NDK_RESULT_EX *out);
void ndk_menv_init(struct kunit *test, struct ndk_cenv *e,
		   struct ndk_menv *me);
void ndk_menv_free(struct kunit *test, struct ndk_menv *me);
NTSTATUS ndk_menv_rdma_on(struct kunit *test, struct ndk_cenv *e,
			  struct ndk_menv *me, NDK_QP *qp, bool write,
			  u64 raddr, u32 token, u32 len);
NTSTATUS ndk_menv_rdma(struct kunit *test, struct ndk_cenv *e,
		       struct ndk_menv *me, bool write, u64 raddr,
		       u32 token, u32 len);
NTSTATUS ndk_test_invalidate(struct kunit *test, struct ndk_cenv *e,
			     struct ndk_menv *me,
			     NDK_OBJECT_HEADER *obj);

/* The posting environment (env.c, mem.c). */
#define NDK_POST_BUF	PAGE_SIZE

/**
 * struct ndk_penv - a connection whose QPs take four SGEs, and a buffer
 * @p: the connection
 * @buf: NDK_POST_BUF bytes, DMA-mapped
 * @dma: its device address
 * @tok: the privileged token, for @dma
 * @dev: the device that mapped it
 */
struct ndk_penv {
	struct ndk_pair p;
	u8 *buf;
	u64 dma;
	UINT32 tok;
	struct ib_device *dev;
};

/**
 * struct ndk_qpspec - what the QPs of a test connection are created with
 * @depth: requests each way
 * @sge: SGEs per receive and per initiator request
 * @inline_size: inline bytes
 * @acq: CQ of the active QP
 * @pcq: CQ of the passive QP
 * @srq: SRQ that replaces the passive QP's receive queue, or NULL
 */
struct ndk_qpspec {
	ULONG depth;
	ULONG sge[2];
	ULONG inline_size;
	NDK_CQ *acq, *pcq;
	NDK_SRQ *srq;
};

/**
 * struct ndk_pmem - a registered kernel buffer
 * @buf: PAGE_SIZE * 4 bytes
 * @mdl: describes @buf; NdkRegisterMr reads it after returning
 * @mr: the region
 */
struct ndk_pmem {
	u8 *buf;
	struct ndk_mdl mdl;
	NDK_MR *mr;
};

#define NDK_PMEM_LEN	(4 * PAGE_SIZE)

struct ndk_penv *ndk_penv_new_spec(struct kunit *test,
				   struct ndk_cenv *e, bool connect,
				   const struct ndk_qpspec *q);
void ndk_penv_free(struct kunit *test, struct ndk_penv *pe);
NDK_SGE ndk_penv_sge(struct ndk_penv *pe, u32 off, u32 len);
bool ndk_penv_poll(NDK_CQ *cq, NDK_RESULT_EX *out, int n);
NTSTATUS ndk_penv_send(struct ndk_penv *pe, uintptr_t ctx, int i,
		       u32 src, ULONG flags);
struct ndk_pmem *ndk_pmem_new(struct kunit *test, struct ndk_cenv *e,
			      ULONG flags);
void ndk_pmem_free(struct kunit *test, struct ndk_pmem *m);
NDK_SGE ndk_pmem_sge(struct ndk_pmem *m, u32 off, u32 len);
u64 ndk_pmem_va(struct ndk_pmem *m, u32 off);
UINT32 ndk_pmem_rtok(struct ndk_pmem *m);

/* The start of an MPA request or reply (RFC 5044). */
struct ndk_mpa_req {
	u8 key[16];
	__be16 bits;
	__be16 pd_len;
} __packed;

int ndk_mpa_connect(const struct sockaddr_in *dst, const void *frame,
		    size_t len, struct socket **sockp);
int ndk_mpa_send_rtr(struct socket *sock);

#endif /* _NDK_TESTS_H */
