/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Private structures of the ndk provider. Every NDK object embeds its
 * public NDKPI struct (header + dispatch table) and a struct ndk_obj that
 * carries the lifetime rules common to all objects.
 */
#ifndef _NDK_PRIV_H
#define _NDK_PRIV_H

#include <linux/completion.h>
#include <linux/irq_poll.h>
#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_user_cm.h>
#include <ndk/ndk.h>

#if IS_ENABLED(CONFIG_KUNIT)
/* Internal functions the KUnit module checks directly. */
#define EXPORT_SYMBOL_NDK_TEST(sym)	EXPORT_SYMBOL_NS_GPL(sym, NDK_KUNIT)
#else
/* Still names the symbol (discarded at link): a typo fails here too. */
#define EXPORT_SYMBOL_NDK_TEST(sym)	__ADDRESSABLE(sym)
#endif

/* The workqueue of every asynchronous request (object.c). */
extern struct workqueue_struct *ndk_wq;

/* Slab caches (slab.c) */
extern struct kmem_cache *ndk_conn_cache;
extern struct kmem_cache *ndk_qp_cache;
extern struct kmem_cache *ndk_cq_cache;
extern struct kmem_cache *ndk_mr_cache;
int ndk_slab_init(void);
void ndk_slab_exit(void);

/*
 * Failure injection for the ndk_faults suite: every call on a create,
 * connect or register path that can fail is wrapped, so the suite can
 * make the n-th such call fail (ndk_fault_arm()) and count them. Without
 * KUnit the wrappers are the bare calls (fault.c).
 */
#if IS_ENABLED(CONFIG_KUNIT)
bool ndk_fault(void);
void ndk_fault_arm(int nth);
int ndk_fault_disarm(bool *fired);
#else
static inline bool ndk_fault(void)
{
	return false;
}
#endif
#define NDK_FI_NULL(call)	(ndk_fault() ? NULL : (call))
#define NDK_FI_PTR(call)	(ndk_fault() ? ERR_PTR(-ENOMEM) : (call))
#define NDK_FI_ERR(call)	(ndk_fault() ? -ENOMEM : (call))

/* ------------------------------------------------------------------ */
/* Status translation (status.c)                                      */

struct ndk_errno_map {
	int err;
	NTSTATUS status;
};

struct ndk_wc_map {
	enum ib_wc_status wc_status;
	NTSTATUS status;
};

NTSTATUS ndk_status_from_errno(int err);
NTSTATUS ndk_status_from_wc(enum ib_wc_status wc_status);
#if IS_ENABLED(CONFIG_KUNIT)
const struct ndk_errno_map *ndk_errno_map_table(size_t *n);
const struct ndk_wc_map *ndk_wc_map_table(size_t *n);
#endif

/* ------------------------------------------------------------------ */
/* Object lifetime (object.c)                                         */

struct ndk_obj;

/**
 * struct ndk_obj_ops - what differs between object types
 * @close: optional; runs at NdkCloseObject time, in the caller's
 *	(possibly atomic) context, for side effects the close must have at
 *	once, such as a listener refusing new requests
 * @create: allocate the verbs resources and return the NTSTATUS of the
 *	creation; may sleep; runs on ndk_wq, or inline in a caller that may
 *	sleep for types created with ndk_obj_create()
 * @destroy: release them; may sleep; also called after a failed @create,
 *	so it must cope with partly created objects
 * @free: free the containing structure
 * @released: for an object without antecedent (the adapter) instead of
 *	the queued destruction: the last reference went away
 * @kill: optional; the object's device is being removed (main.c), so it
 *	must stop what it has outstanding; called with a reference held, may
 *	sleep
 * @cm_event: optional; an event of an rdma_cm id whose context is the
 *	object (cm.c); returns non-zero only to refuse a connect request
 * @close_inline: @destroy and @free wait for no consumer code (callback,
 *	work item), so a close by a caller that may sleep can finish inline
 *
 * The core (object.c, main.c, cm.c) reaches the object types only through
 * these: each type's file registers its table, and no arrow points up.
 */
struct ndk_obj_ops {
	void (*close)(struct ndk_obj *obj);
	NTSTATUS (*create)(struct ndk_obj *obj);
	void (*destroy)(struct ndk_obj *obj);
	void (*free)(struct ndk_obj *obj);
	void (*released)(struct ndk_obj *obj);
	void (*kill)(struct ndk_obj *obj);
	int (*cm_event)(struct ndk_obj *obj, struct rdma_cm_id *id,
			struct rdma_cm_event *ev);
	bool close_inline;
};

enum ndk_obj_state {
	NDK_OBJ_CREATING,
	NDK_OBJ_LIVE,
	NDK_OBJ_CLOSING,
};

/**
 * struct ndk_obj - lifetime state shared by every NDK object
 * @hdr: the public object header inside the containing structure
 * @id: small number naming the object in traces and debugfs, which never
 *	show kernel pointers
 * @ops: type operations
 * @adapter: the adapter the object descends from (NULL for an adapter)
 * @parent: antecedent holding a reference for this object, or NULL
 * @refs: one for the consumer's handle, one per live successor and one
 *	per provider operation that must finish before the object goes
 * @state: enum ndk_obj_state
 * @work: runs creation and destruction on ndk_wq
 * @extra: further antecedents referenced, such as a QP's CQs and SRQ
 * @create_cb: consumer's create completion
 * @close_cb: consumer's close completion
 * @cb_ctx: context for whichever of the two is pending
 * @dev_node: entry in its device's list of live objects (debugfs.c)
 */
struct ndk_obj {
	NDK_OBJECT_HEADER *hdr;
	u32 id;
	const struct ndk_obj_ops *ops;
	struct ndk_adapter *adapter;
	struct ndk_obj *parent;
	refcount_t refs;
	enum ndk_obj_state state;
	struct work_struct work;
	struct ndk_obj *extra[3];
	NDK_FN_CREATE_COMPLETION create_cb;
	NDK_FN_CLOSE_COMPLETION close_cb;
	void *cb_ctx;
	struct list_head dev_node;
};

bool ndk_caller_may_sleep(void);
void ndk_obj_init(struct ndk_obj *obj, NDK_OBJECT_HEADER *hdr,
		  NDK_OBJECT_TYPE type, const struct ndk_obj_ops *ops,
		  struct ndk_obj *parent);
NTSTATUS ndk_obj_create(struct ndk_obj *obj, NDK_FN_CREATE_COMPLETION cb,
			void *ctx, bool may_inline);
NTSTATUS ndk_obj_create_async(struct ndk_obj *obj,
			      NDK_FN_CREATE_COMPLETION cb, void *ctx);
NTSTATUS ndk_obj_close(struct ndk_obj *obj, NDK_FN_CLOSE_COMPLETION cb,
		       void *ctx);
NTSTATUS ndk_close_object(NDK_OBJECT_HEADER *pNdkObject,
			  NDK_FN_CLOSE_COMPLETION CloseCompletion,
			  PVOID RequestContext);
void ndk_obj_add_antecedent(struct ndk_obj *obj, struct ndk_obj *ante);
void ndk_obj_get(struct ndk_obj *obj);
bool ndk_obj_tryget(struct ndk_obj *obj);
void ndk_obj_put(struct ndk_obj *obj);
void ndk_obj_put_may_sleep(struct ndk_obj *obj);
NTSTATUS ndk_query_extension(NDK_OBJECT_HEADER *hdr, GUID *id,
			     NDK_VERSION version,
			     NDK_EXTENSION_INTERFACE *iface);

/* ------------------------------------------------------------------ */
/* Statistics (debugfs.c)                                             */

/* Counters of one RDMA device, summed over its adapters. */
enum ndk_stat {
	NDK_STAT_CONNECTS,		/* NdkConnect(WithSharedEndpoint) pending */
	NDK_STAT_ACCEPTS,		/* NdkAccept(Ex) pending */
	NDK_STAT_REJECTS,		/* NdkReject sent */
	NDK_STAT_CONNECT_FAILURES,	/* connect, complete or accept failed */
	NDK_STAT_CONNECTION_ERRORS,	/* established, ended by the peer */
	NDK_STAT_CQ_ERRORS,		/* completions polled with an error */
	NDK_STAT_CQ_FLUSHED,		/* completions polled as flushed */
	NDK_STAT_POSTED,		/* requests posted */
	NDK_STAT_COMPLETED,		/* completions polled */
	NDK_STAT_MAX,
};

/* Per-CPU, so that the post and poll paths count without lock or atomic. */
struct ndk_stats {
	u64 v[NDK_STAT_MAX];
};

/* ------------------------------------------------------------------ */
/* Devices and adapters (main.c, adapter.c)                           */

/**
 * struct ndk_device - one RDMA device known to the ib_client
 * @ibdev: the device
 * @list: entry in ndk_devices
 * @ref: one for the ib_client, one per open adapter; removal drops the
 *	first while adapters may still be open
 * @descs: its adapters, found when the device was added
 * @ndescs: how many
 * @max_inline: largest inline size an RC QP accepts, probed once
 * @probe_lock: serializes the probe
 * @probed: @max_inline is valid
 * @stats: counters of every adapter opened on the device
 * @objs_lock: protects @objs and @dead; taken from atomic context too
 * @objs: live objects of every adapter on the device, for debugfs and
 *	removal
 * @dead: the device is being removed; no object is created on it any more
 * @debugfs: its directory, ndk/<device name>
 */
struct ndk_device {
	struct ib_device *ibdev;
	struct list_head list;
	struct kref ref;
	struct ndk_adapter_desc descs[4];
	int ndescs;
	struct mutex probe_lock; /* protects @probed and @max_inline */
	bool probed;
	u32 max_inline;
	struct ndk_stats __percpu *stats;
	spinlock_t objs_lock; /* see above */
	struct list_head objs;
	bool dead;
	struct dentry *debugfs;
};

/**
 * struct ndk_adapter - an open NDK_ADAPTER instance
 * @ndk: the public object; must stay first for the casts of consumers
 * @obj: lifetime state; the adapter is the root of its object tree
 * @ibdev: the RDMA device, referenced while the adapter is open
 * @port: port number
 * @ifindex: network interface index the consumer opened
 * @info: adapter information computed at open
 * @released: completed when the last reference on @obj is gone
 * @dev: the ib_client's entry for @ibdev, referenced while open
 */
struct ndk_adapter {
	NDK_ADAPTER ndk;
	struct ndk_obj obj;
	struct ndk_device *dev;
	struct ib_device *ibdev;
	u32 port;
	int ifindex;
	NDK_ADAPTER_INFO info;
	struct completion released;
};

extern struct mutex ndk_devices_lock;
extern struct list_head ndk_devices;

int ndk_device_port_of(struct ib_device *ibdev, struct net_device *ndev,
		       u32 *port);
void ndk_device_release(struct kref *ref);
NDK_RDMA_TECHNOLOGY ndk_rdma_technology(struct ib_device *ibdev, u32 port);
#if IS_ENABLED(CONFIG_KUNIT)
struct module *ndk_module(void);
bool ndk_close_adapter_timeout(NDK_ADAPTER *adapter, unsigned long timeout);
#endif

void ndk_debugfs_init(void);
void ndk_debugfs_exit(void);
void ndk_device_debugfs_add(struct ndk_device *dev);
void ndk_device_debugfs_remove(struct ndk_device *dev);
bool ndk_obj_track(struct ndk_obj *obj);
void ndk_obj_untrack(struct ndk_obj *obj);

/* The adapter's device is being removed: nothing new may start on it. */
static inline bool ndk_adapter_dead(struct ndk_adapter *adapter)
{
	return READ_ONCE(adapter->dev->dead);
}

/*
 * The module of @ibdev's driver is being unloaded. siw stops its transmit
 * threads before it unregisters its devices, so a send it accepts on a
 * connected QP from then on takes a QP reference nothing drops, and
 * destroying that QP never returns (see deviations.rst): ndk hands such
 * a QP no initiator request from then on.
 */
static inline bool ndk_driver_going(const struct ib_device *ibdev)
{
	struct module *owner = ibdev->ops.owner;

	return owner && !module_is_live(owner);
}

extern const enum module_state ndk_builtin_state;

/*
 * Where ndk_driver_going() reads the state of @ibdev's driver, kept by
 * the QP so that its post path tests it in one load: the state of the
 * driver's module, or for a driver built in one that stays live.
 */
static inline const enum module_state *
ndk_driver_state(const struct ib_device *ibdev)
{
	struct module *owner = ibdev->ops.owner;

	return owner ? &owner->state : &ndk_builtin_state;
}

/* Count @n events of @stat on this CPU: no lock, no allocation. */
static inline void ndk_stat_add(struct ndk_adapter *adapter,
				enum ndk_stat stat, u64 n)
{
	this_cpu_add(adapter->dev->stats->v[stat], n);
}

static inline void ndk_stat_inc(struct ndk_adapter *adapter,
				enum ndk_stat stat)
{
	ndk_stat_add(adapter, stat, 1);
}

/*
 * The post and poll paths count into the counters their QP or CQ keeps a
 * pointer to, one load instead of the chain through adapter and device.
 */
static __always_inline void ndk_stat_add_to(struct ndk_stats __percpu *stats,
					    enum ndk_stat stat, u64 n)
{
	this_cpu_add(stats->v[stat], n);
}

/* ------------------------------------------------------------------ */
/* PD and CQ (pd.c, cq.c)                                             */

/**
 * struct ndk_loop_side - what rdma_cm reported to one end of an iWARP loop
 * @done: completed at each awaited event
 * @status: 0 or the failure the event carried
 * @passive: the accepted id (passive side)
 * @peer: the QP the passive side accepts with
 * @expect: the active id's address: the only request accepted
 */
struct ndk_loop_side {
	struct completion done;
	int status;
	struct rdma_cm_id *passive;
	struct ib_qp *peer;
	struct sockaddr_in expect;
};

/**
 * struct ndk_loop - a loopback connection (loopback.c)
 * @qp: the QP whose sends reach this adapter
 * @peer: iWARP: its other end (IB and RoCE: unused)
 * @id: iWARP: the active rdma_cm id owning @qp
 * @peer_id: iWARP: the passive id owning @peer
 * @act: iWARP: reports of @id
 * @pas: iWARP: reports of the listener and @peer_id
 */
struct ndk_loop {
	struct ib_qp *qp;
	struct ib_qp *peer;
	struct rdma_cm_id *id;
	struct rdma_cm_id *peer_id;
	struct ndk_loop_side act;
	struct ndk_loop_side pas;
};

int ndk_loop_connect(struct ndk_adapter *adapter, struct ndk_loop *loop);
void ndk_loop_disconnect(struct ndk_loop *loop);

/**
 * struct ndk_reg - a PD's path for memory registration
 * @lock: serializes the requests; each waits for its own completion
 * @cq: completion queue of the loop's QPs, polled by the request
 * @done: completed by @cq's completion handler
 * @loop: a loopback connection, made at the first registration; REG_MR
 *	and LOCAL_INV requests go to @loop.qp
 *
 * Kernel verbs make a region valid only through a work request posted on
 * a QP of its PD, so each PD that registers memory owns one such QP.
 */
struct ndk_reg {
	struct mutex lock; /* one registration request at a time */
	struct ib_cq *cq;
	struct completion done;
	struct ndk_loop loop;
};

/**
 * struct ndk_pd - an NDK_PD
 * @ndk: the public object
 * @obj: lifetime state
 * @ibpd: the verbs protection domain
 * @reg: the registration path, for NdkRegisterMr
 * @mw_lock: protects @mws; held while windows of a region are revoked
 * @mws: the PD's memory windows (struct ndk_mw)
 */
struct ndk_pd {
	NDK_PD ndk;
	struct ndk_obj obj;
	struct ib_pd *ibpd;
	struct ndk_reg reg;
	struct mutex mw_lock; /* see above */
	struct list_head mws;
};

/* Completions polled from the device per call into NdkGetCqResults. */
#define NDK_CQ_POLL_BATCH	16
/* irq_poll weight of a CQ; each delivered notification counts one. */
#define NDK_CQ_NOTIFY_WEIGHT	4

/**
 * struct ndk_cq - an NDK_CQ
 * @ndk: the public object
 * @obj: lifetime state
 * @ibcq: the verbs CQ
 * @depth: entries the consumer asked for
 * @comp_vector: completion vector chosen from the affinity
 * @notify_cb: the consumer's notification callback
 * @notify_ctx: its context
 * @arm: NDK_ARM_* state; a notification consumes it
 * @dead: set before destruction, under @notify_lock; no notification
 *	starts afterwards
 * @notify_lock: serializes notification callbacks
 * @in_notify: a notification callback is running; destruction waits for
 *	it to clear
 * @notify_again: another one is due when it returns
 * @fatal: STATUS_SUCCESS, or the error that made the CQ unusable
 * @iop: softirq context in which notifications are delivered
 * @kick: schedules @iop from hard interrupt context for a task that
 *	called a handler with interrupts off (see ndk_cq_kick())
 * @moderation: newest moderation setting, count << 16 | period
 * @moderation_work: applies @moderation
 * @stats: the device's counters, at hand for the poll path
 * @owner: a hint, the QP the poll path last found as the owner of a
 *	request; it names a QP that is live, or closed since but not freed
 *	(see ndk_cq_forget_owner())
 * @results: the buffer of the NdkGetCqResults(Ex) call in progress
 * @nresults: and its length
 * @wc: poll buffer; the consumer serializes polling
 * @rcu: frees the CQ after a grace period, for a notification
 */
struct ndk_cq {
	NDK_CQ ndk;
	struct ndk_obj obj;
	struct ib_cq *ibcq;
	u32 depth;
	int comp_vector;
	NDK_FN_CQ_NOTIFICATION_CALLBACK notify_cb;
	void *notify_ctx;
	atomic_t arm;
	bool dead;
	spinlock_t notify_lock; /* serializes notification callbacks */
	bool in_notify;
	bool notify_again;
	NTSTATUS fatal;
	struct irq_poll iop;
	struct irq_work kick;
	atomic_t moderation;
	struct work_struct moderation_work;
	struct ndk_stats __percpu *stats;
	struct ndk_obj *owner;
	void *results;
	ULONG nresults;
	struct ib_wc wc[NDK_CQ_POLL_BATCH];
	struct rcu_head rcu;
};

NTSTATUS ndk_create_pd(NDK_ADAPTER *pNdkAdapter,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_PD **ppNdkPd);
NTSTATUS ndk_create_cq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
		       NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
		       PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_CQ **ppNdkCq);
int ndk_cq_pick_vector(struct ib_device *ibdev, const GROUP_AFFINITY *aff);
int ndk_cq_arm_merge(int armed, ULONG type);
void ndk_cq_forget_owner(struct ndk_cq *cq, struct ndk_obj *owner);
NTSTATUS ndk_cq_moderation(ULONG interval, ULONG count, ULONG depth,
			   u16 *cq_count, u16 *cq_period);

/* ------------------------------------------------------------------ */
/* QP (qp.c)                                                          */

/**
 * struct ndk_wr_ring - the requests of one work queue, until polled
 * @ctx: RequestContext of each slot
 * @type: NDK_OPERATION_TYPE of each slot; every type a request is posted
 *	as fits a byte (ReceiveAndInvalidate is only reported, never posted)
 * @state: NDK_SLOT_* of each slot, in the block of @type behind it; the
 *	poster fills a free slot, the poller frees it once it has read it
 * @mask: slots - 1; there are twice as many slots as the queue holds
 *	requests, so a slot is free long before the sequence comes back
 * @depth: requests a QP's queue holds, as the consumer asked (an SRQ's
 *	depth is its own @depth, which may change)
 * @head: sequence number of the next request; poster only
 * @retired: requests the poller has retired; poller only (QP queues)
 * @scan: every request before this sequence number is polled or a
 *	silent one retired; poller only (QP queues)
 * @tag: the queue's kind and the owner's object id, placed as in a wr_id
 *
 * A request occupies its queue from posting until its result is polled,
 * whenever the device frees its own entry, so that a slot is never
 * reused under a completion still waiting in a CQ. A work request's
 * wr_id names its queue's owner, the queue and the sequence number, so
 * a completion finds its RequestContext and operation type even when
 * the device reports no opcode, as it may for errors and flushed
 * requests; and it finds them without wc->qp, which dangles once the QP
 * is destroyed.
 */
struct ndk_wr_ring {
	void **ctx;
	u8 *type;
	u8 *state;
	u32 mask;
	u32 depth;
	u32 head;
	u32 retired;
	u32 scan;
	u64 tag;
};

/*
 * Slot states. A silent request has no result of its own to retire it;
 * a result polled after it does, since a queue completes its requests in
 * order. Reads are the exception (siw completes one after the requests
 * behind it), so ndk always signals them and drops the success of a
 * silent one (QUIET) when it is polled.
 */
#define NDK_SLOT_FREE		0
#define NDK_SLOT_BUSY		1
#define NDK_SLOT_SILENT		2
#define NDK_SLOT_QUIET		3

/*
 * A wr_id: the queue's kind in the top two bits (0 for a request ndk did
 * not post), the owning QP's or SRQ's object id below, the sequence
 * number in the low 32 bits. @tag of a ring holds the id part.
 */
#define NDK_WR_SQ		1ULL
#define NDK_WR_RQ		2ULL
#define NDK_WR_SRQ		3ULL
#define NDK_WR_KIND_SHIFT	62
#define NDK_WR_ID_SHIFT		32
#define NDK_WR_ID_MASK		((1U << (NDK_WR_KIND_SHIFT - NDK_WR_ID_SHIFT)) - 1)

int ndk_ring_init(struct ndk_wr_ring *ring, u32 depth);
void ndk_ring_free(struct ndk_wr_ring *ring);
int ndk_wr_owner_add(struct ndk_obj *obj);
void ndk_wr_owner_del(struct ndk_obj *obj);
extern struct xarray ndk_wr_owners;

/**
 * ndk_wr_owner() - the live QP or SRQ that posted a request
 * @wr_id: the request's wr_id, of a kind ndk posts
 *
 * Call under rcu_read_lock(), which the poll path holds already, so the
 * lookup does without xa_load()'s own; the owner stays valid until it is
 * dropped.
 *
 * Return: the owner's object, or NULL once it is destroyed.
 */
static __always_inline struct ndk_obj *ndk_wr_owner(u64 wr_id)
{
	XA_STATE(xas, &ndk_wr_owners,
		 (wr_id >> NDK_WR_ID_SHIFT) & NDK_WR_ID_MASK);
	void *entry;

	do
		entry = xas_load(&xas);
	while (xas_retry(&xas, entry));
	return entry;
}

/* The tag of @obj's queue of kind @kind (NDK_WR_SQ, _RQ or _SRQ). */
static inline u64 ndk_wr_tag(const struct ndk_obj *obj, u64 kind)
{
	return kind << NDK_WR_KIND_SHIFT |
	       (u64)(obj->id & NDK_WR_ID_MASK) << NDK_WR_ID_SHIFT;
}

/*
 * Whether a QP's queue has room for request @head (the queue's head,
 * read once by the caller): fewer than its depth unretired, and the slot
 * retired. Poster only.
 */
static __always_inline bool ndk_ring_room(const struct ndk_wr_ring *ring,
					  u32 head)
{
	if (head - READ_ONCE(ring->retired) >= ring->depth)
		return false;
	/* Pairs with ndk_ring_retire(): the poller is done with the slot. */
	return smp_load_acquire(&ring->state[head & ring->mask]) ==
	       NDK_SLOT_FREE;
}

/*
 * Fill the slot of request @head and return the wr_id naming it; no
 * allocation. The slot is taken before the device sees the request,
 * whose completion may be polled before the post returns;
 * ndk_ring_untake() gives it back if the device refuses it. The caller
 * reads the head once and passes it: every store here may alias it for
 * the compiler, which would load it again after each.
 */
static __always_inline u64 ndk_ring_take(struct ndk_wr_ring *ring, u32 head,
					 void *ctx, NDK_OPERATION_TYPE type,
					 u8 state)
{
	u32 slot = head & ring->mask;

	ring->ctx[slot] = ctx;
	ring->type[slot] = type;
	WRITE_ONCE(ring->state[slot], state);
	return ring->tag | head;
}

/* The device refused request @head: nothing will poll it. */
static __always_inline void ndk_ring_untake(struct ndk_wr_ring *ring, u32 head)
{
	WRITE_ONCE(ring->state[head & ring->mask], NDK_SLOT_FREE);
}

/*
 * Initiator requests with NDK_OP_FLAG_DEFER a QP holds at most; the chain
 * goes to the device when it is full, or sooner on a shallower queue.
 */
#define NDK_DEFER_MAX		16

/**
 * union ndk_held_wr - a deferred initiator request waiting in its QP
 * @wr: the request
 * @rdma: an RDMA read or write
 * @reg: a fast registration
 */
union ndk_held_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_reg_wr reg;
};

/**
 * struct ndk_qp - an NDK_QP
 * @ndk: the public object
 * @obj: lifetime state; successor of its PD and of both CQs, which are
 *	its first two @obj.extra antecedents, the receive CQ first
 * @ibqp: the verbs RC QP
 * @context: the consumer's QPContext, returned in every result
 * @srq: SRQ that replaces the receive queue, or NULL
 * @conn: the connector using the QP, if any
 * @connected: the connection is established; sends may be posted
 * @in_error: ndk_qp_set_error() moved the QP to the error state
 * @max_rsge: SGEs per receive, as the consumer asked (the adapter's
 *	MaxReceiveRequestSge bounds it to 16 bits)
 * @max_isge: SGEs per initiator request, as the consumer asked (16 bits,
 *	as @max_rsge)
 * @inline_size: inline bytes per request, as the consumer asked (the
 *	adapter's MaxInlineDataSize bounds it to 16 bits)
 * @max_xfer: the adapter's MaxTransferLength, at hand for the post path
 * @stats: the device's counters, at hand for the post path
 * @driver: the state of the driver's module (ndk_driver_state()), at
 *	hand for the post path
 * @max_held: deferred requests held at most: NDK_DEFER_MAX, or the
 *	initiator queue's depth if smaller (a chain cannot be longer)
 * @isge: @max_held initiator SGE arrays of max(@max_isge, 1) entries,
 *	one per held request; the consumer serializes the initiator queue
 * @held: @max_held deferred requests not posted yet, chained in order
 * @nheld: how many; only the poster raises it
 * @held_owner: 1 while the poster or ndk_qp_set_error() works on @held
 * @sq: slots of the initiator queue
 * @rq: slots of the receive queue, with an SRQ none; its depth is the
 *	receive queue's, as the consumer asked, from creation on
 * @flush_work: moves the QP to the error state for NdkFlush
 * @srq_node: entry in the SRQ's @qps
 * @rcu: frees the QP after a grace period, for the poll path
 *
 * The depths and SGE counts the device granted are not kept: ndk checks
 * requests against what the consumer asked for, as every device would.
 */
struct ndk_qp {
	NDK_QP ndk;
	struct ndk_obj obj;
	struct ib_qp *ibqp;
	PVOID context;
	struct ndk_srq *srq;
	struct ndk_connector *conn;
	bool connected;
	bool in_error;
	u16 inline_size;
	u16 max_rsge;
	u16 max_isge;
	u32 max_held;
	u32 max_xfer;
	struct ndk_stats __percpu *stats;
	const enum module_state *driver;
	struct ib_sge *isge;
	union ndk_held_wr *held;
	u32 nheld;
	atomic_t held_owner;
	struct ndk_wr_ring sq;
	struct ndk_wr_ring rq;
	struct work_struct flush_work;
	struct hlist_node srq_node;
	struct rcu_head rcu;
};

/* The requests of an NDK_MR, which run one at a time. */
enum ndk_mr_op {
	NDK_MR_REGISTER,
	NDK_MR_DEREGISTER,
	NDK_MR_INIT_FAST,
};

/**
 * struct ndk_mr - an NDK_MR
 * @ndk: the public object
 * @obj: lifetime state
 * @pd: its PD
 * @fast: created for fast registration
 * @op: the request that claimed the MR (enum ndk_mr_op)
 * @busy: a register, deregister or initialize request is running
 * @ibmr: the verbs region: registered memory, or the fast-register MR
 * @sgt: the pages of registered memory, DMA-mapped
 * @mapped: @sgt is mapped
 * @remote: fast-register MR initialized for remote access
 * @max_pages: pages a fast registration may use; for registered memory,
 *	pages @ibmr or @spare can map
 * @spare: the invalidated verbs MR of the last registration, kept for the
 *	next one
 * @frsg: @max_pages entries the fast-register posting path fills
 * @work: runs a request that pends
 * @cb: its completion
 * @ctx: and its context
 * @mdl: register: the memory
 * @length: register: bytes
 * @access: register: IB access flags
 */
struct ndk_mr {
	NDK_MR ndk;
	struct ndk_obj obj;
	struct ndk_pd *pd;
	bool fast;
	u8 op;
	atomic_t busy;
	struct ib_mr *ibmr;
	struct sg_table sgt;
	bool mapped;
	bool remote;
	u32 max_pages;
	struct ib_mr *spare;
	struct scatterlist *frsg;
	struct work_struct work;
	NDK_FN_REQUEST_COMPLETION cb;
	void *ctx;
	const struct ndk_mdl *mdl;
	u64 length;
	int access;
};

NTSTATUS ndk_create_mr(NDK_PD *pNdkPd, BOOLEAN FastRegister,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MR **ppNdkMr);
void ndk_reg_init(struct ndk_reg *reg);
void ndk_reg_destroy(struct ndk_reg *reg);
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO);
void ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);
void ndk_mr_revoke_windows(struct ndk_mr *mr);

/**
 * struct ndk_mw - an NDK_MW: a fast-register MR that NdkBind fills with
 *	pages of a registered region
 * @ndk: the public object
 * @obj: lifetime state; successor of its PD
 * @pd: its PD
 * @ibmr: the verbs MR; its keys are the window's token
 * @sg: @max_pages entries the bind posting path fills
 * @max_pages: pages @ibmr maps
 * @mr: the region of the last bind, until that region's memory goes
 *	(ndk_mr_revoke_windows()) or the window is bound again
 * @pd_node: entry in the PD's @mws
 */
struct ndk_mw {
	NDK_MW ndk;
	struct ndk_obj obj;
	struct ndk_pd *pd;
	struct ib_mr *ibmr;
	struct scatterlist *sg;
	u32 max_pages;
	struct ndk_mr *mr;
	struct list_head pd_node;
};

NTSTATUS ndk_create_mw(NDK_PD *pNdkPd,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_MW **ppNdkMw);
struct ndk_mw *ndk_mw_of(const NDK_OBJECT_HEADER *hdr, struct ndk_pd *pd);
NTSTATUS ndk_mw_bind_wr(struct ndk_qp *qp, struct ib_reg_wr *wr,
			NDK_MR *pMr, NDK_MW *pMw, u64 va, SIZE_T Length,
			ULONG Flags);

/**
 * struct ndk_srq - an NDK_SRQ
 * @ndk: the public object
 * @obj: lifetime state
 * @ibsrq: the verbs SRQ
 * @init: its creation attributes
 * @max_sge: SGEs per receive
 * @depth: current depth
 * @queued: receives posted minus SRQ receive completions polled
 * @notify: consumer's notification callback, or NULL
 * @notify_ctx: its context
 * @event_work: runs the notification of a device event on ndk_wq
 * @event_status: the status of that event
 * @busy: an NdkModifySrq is pending
 * @modify_work: runs it
 * @new_depth: its depth, 0 to keep
 * @new_threshold: its threshold, 0 to leave the notification as it is
 * @modify_cb: its completion
 * @modify_ctx: and its context
 * @ring: slots of the receives, sized for MaxSrqDepth so that a resize
 *	never has to replace it under a poster. Receives of one SRQ are
 *	polled from the CQs of its QPs, in any order and concurrently, so
 *	the poster takes the next free slot rather than the next in order,
 *	and @queued, not the ring, counts what the SRQ holds
 * @qps_lock: serializes changes of @qps
 * @qps: the live QPs on the SRQ (RCU), which give a completion's QPContext
 * @free_work: frees the SRQ after a grace period, for the poll path
 */
struct ndk_srq {
	NDK_SRQ ndk;
	struct ndk_obj obj;
	struct ib_srq *ibsrq;
	struct ib_srq_init_attr init;
	u32 max_sge;
	u32 depth;
	atomic_t queued;
	NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
	void *notify_ctx;
	struct work_struct event_work;
	NTSTATUS event_status;
	atomic_t busy;
	struct work_struct modify_work;
	u32 new_depth;
	u32 new_threshold;
	NDK_FN_REQUEST_COMPLETION modify_cb;
	void *modify_ctx;
	struct ndk_wr_ring ring;
	spinlock_t qps_lock; /* see above */
	struct hlist_head qps;
	struct rcu_work free_work;
};

NTSTATUS ndk_create_srq(NDK_PD *pNdkPd, ULONG SrqDepth,
			ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
			NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
			PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
			NDK_FN_CREATE_COMPLETION CreateCompletion,
			PVOID RequestContext, NDK_SRQ **ppNdkSrq);
NTSTATUS ndk_create_qp_with_srq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
				NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
				PVOID QPContext, ULONG InitiatorQueueDepth,
				ULONG MaxInitiatorRequestSge,
				ULONG InlineDataSize,
				NDK_FN_CREATE_COMPLETION CreateCompletion,
				PVOID RequestContext, NDK_QP **ppNdkQp);
void ndk_srq_consumed(struct ndk_srq *srq, u32 slot);
PVOID ndk_srq_qp_context(struct ndk_srq *srq, struct ib_qp *ibqp);

/*
 * An NDK_SGE is laid out as an ib_sge (address, length, token), so the
 * posting calls hand the consumer's array to the device as it is: a
 * driver reads the list only during the call.
 */
static_assert(sizeof(NDK_SGE) == sizeof(struct ib_sge));
static_assert(offsetof(NDK_SGE, LogicalAddress) ==
	      offsetof(struct ib_sge, addr));
static_assert(offsetof(NDK_SGE, Length) == offsetof(struct ib_sge, length));
static_assert(offsetof(NDK_SGE, MemoryRegionToken) ==
	      offsetof(struct ib_sge, lkey));

static __always_inline struct ib_sge *ndk_ib_sges(const NDK_SGE *sgl)
{
	return (struct ib_sge *)sgl;
}

/*
 * Check that @sgl has at most @max entries and add up their bytes. An
 * SGE's address is a virtual address inside a region registered at that
 * address, or a device address with the privileged token: either way the
 * 64 bits go to the device unchanged.
 */
static __always_inline NTSTATUS ndk_sges(const NDK_SGE *sgl, ULONG n,
					 ULONG max, u64 *total)
{
	u64 sum = 0;
	ULONG i;

	if (unlikely(n > max || (n && !sgl)))
		return STATUS_INVALID_PARAMETER;
	for (i = 0; i < n; i++)
		sum += sgl[i].Length;
	*total = sum;
	return STATUS_SUCCESS;
}

void ndk_qp_set_error(struct ndk_qp *qp);
NTSTATUS ndk_create_qp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
		       NDK_CQ *pInitiatorCq, PVOID QPContext,
		       ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth,
		       ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge,
		       ULONG InlineDataSize,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_QP **ppNdkQp);

/* The consumer's QPContext of a work completion's QP. */
static inline PVOID ndk_qp_context(struct ib_qp *ibqp)
{
	struct ndk_qp *qp = ibqp ? ibqp->qp_context : NULL;

	return qp ? qp->context : NULL;
}

/*
 * Every object structure starts with its public NDKPI struct (header and
 * dispatch pointer, the same size for every type) followed by its
 * struct ndk_obj; NDK_OBJ_CHECK_LAYOUT enforces that per type.
 */
#define NDK_OBJ_OFFSET		sizeof(NDK_PD)
#define NDK_OBJ_CHECK_LAYOUT(type)					\
	static_assert(offsetof(type, ndk) == 0 &&			\
		      sizeof_field(type, ndk) == NDK_OBJ_OFFSET &&		\
		      offsetof(type, obj) == NDK_OBJ_OFFSET)

static inline struct ndk_obj *ndk_obj_of(NDK_OBJECT_HEADER *hdr)
{
	return (struct ndk_obj *)((char *)hdr + NDK_OBJ_OFFSET);
}

/* ------------------------------------------------------------------ */
/* Connections (connector.c, listener.c)                              */

/* Largest private data any transport carries (iWARP MPA); IB's is less. */
#define NDK_PDATA_MAX		RDMA_MAX_PRIVATE_DATA

/* rdma_cm address and route resolution timeout. */
#define NDK_CM_TIMEOUT_MS	2000

enum ndk_conn_state {
	NDK_CONN_IDLE,		/* created, not used yet */
	NDK_CONN_CONNECTING,	/* NdkConnect pending */
	NDK_CONN_CONNECTED,	/* peer accepted; NdkCompleteConnect next */
	NDK_CONN_COMPLETING,	/* NdkCompleteConnect pending */
	NDK_CONN_REQUESTED,	/* incoming request given to the consumer */
	NDK_CONN_ACCEPTING,	/* NdkAccept pending */
	NDK_CONN_REJECTING,	/* NdkReject sending */
	NDK_CONN_ESTABLISHED,
	NDK_CONN_DISCONNECTING,	/* NdkDisconnect pending */
	NDK_CONN_DONE,		/* disconnected, rejected or failed */
};

/* The timer bounding a connect's or an accept's wait for the peer. */
enum ndk_conn_bound {
	NDK_BOUND_NONE,		/* not running */
	NDK_BOUND_ARMED,	/* running for the pending request */
	NDK_BOUND_EXPIRED,	/* fired first and took the request over */
};

/* A connection's address: only AF_INET and AF_INET6 are used. */
union ndk_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/**
 * struct ndk_connector - an NDK_CONNECTOR
 * @ndk: the public object
 * @obj: lifetime state; successor of the adapter (and of its listener
 *	when it came from one)
 * @id: the rdma_cm id; destroyed only by the cancel work or after a
 *	timeout, never from its handler, and set to NULL under @lock then
 * @iwarp: the transport has no RTU step
 * @flushed: the QP was moved to the error state; written only in the
 *	id's event handler and in work items that the close waits for
 * @lock: protects @state, the pending request, @bound and @id's
 *	disappearance
 * @state: enum ndk_conn_state
 * @bound: enum ndk_conn_bound of @timer
 * @timer: bounds the wait of a pending connect or accept for the peer
 * @tmo_cb: completion of the request @timer took over
 * @tmo_ctx: its context
 * @timeout_work: completes that request and tears the id down
 * @qp: QP of the connection, referenced while associated
 * @req_cb: completion of the pending request
 * @req_ctx: its context
 * @disc_cb: disconnect event callback
 * @disc_cb_ex: the Ex form
 * @disc_ctx: their context
 * @work: performs the pending request's steps that may sleep
 * @cancel_work: ends everything pending when the consumer closes
 * @pdata: private data this side sends, allocated to its size; NULL
 *	while there is none
 * @pdata_len: its size
 * @ird: effective inbound read limit
 * @ord: effective outbound read limit
 * @callbacks: consumer callbacks about the connector that are running,
 *	under @lock (see ndk_connector_called())
 * @peer_pdata: private data the peer sent with request, reply or reject,
 *	allocated to its size; NULL if it was all zeros
 * @rds: size of the private data the transport delivered
 * @src: source address of NdkConnect, then as rdma_cm resolved it
 * @dst: destination address of NdkConnect, then as rdma_cm resolved it
 * @sep: shared endpoint it connects from, if any
 * @sep_node: entry in @sep's list of connectors
 *
 * Private data is allocated only when there is some, since a connector
 * usually carries none: two NDK_PDATA_MAX arrays would more than double
 * its size. For the same reason @state and @bound are bytes and what the
 * connect or accept sends is built when it is sent: the structure fits
 * a 512-byte slab object, one connection having two.
 */
struct ndk_connector {
	NDK_CONNECTOR ndk;
	struct ndk_obj obj;
	struct rdma_cm_id *id;
	bool iwarp;
	bool flushed;
	u8 ird;
	u8 ord;
	u8 callbacks;
	u8 pdata_len;
	u16 rds;
	spinlock_t lock; /* see above */
	u8 state;
	u8 bound;
	struct timer_list timer;
	NDK_FN_REQUEST_COMPLETION tmo_cb;
	void *tmo_ctx;
	struct work_struct timeout_work;
	struct ndk_qp *qp;
	NDK_FN_REQUEST_COMPLETION req_cb;
	void *req_ctx;
	NDK_FN_DISCONNECT_EVENT_CALLBACK disc_cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_cb_ex;
	void *disc_ctx;
	struct work_struct work;
	struct work_struct cancel_work;
	u8 *pdata;
	u8 *peer_pdata;
	union ndk_sockaddr src;
	union ndk_sockaddr dst;
	struct ndk_sep *sep;
	struct list_head sep_node;
};

/**
 * struct ndk_listener - an NDK_LISTENER
 * @ndk: the public object
 * @obj: lifetime state; connectors it hands out are its successors
 * @id: the listening rdma_cm id
 * @event_cb: the consumer's connect event callback
 * @event_ctx: its context
 * @paused: NdkControlConnectEvents paused delivery: refuse requests
 * @closing: close has started: refuse requests
 * @listen_cb: completion of a pending NdkListen
 * @listen_ctx: its context
 * @addr: address NdkListen binds
 * @work: binds and listens, which may sleep
 */
struct ndk_listener {
	NDK_LISTENER ndk;
	struct ndk_obj obj;
	struct rdma_cm_id *id;
	NDK_FN_CONNECT_EVENT_CALLBACK event_cb;
	void *event_ctx;
	bool paused;
	bool closing;
	NDK_FN_REQUEST_COMPLETION listen_cb;
	void *listen_ctx;
	struct sockaddr_storage addr;
	struct work_struct work;
};

/**
 * struct ndk_sep - an NDK_SHARED_ENDPOINT
 * @ndk: the public object
 * @obj: lifetime state; connectors over it are its successors
 * @id: rdma_cm id bound with address reuse, holding the port
 * @addr: the bound address (with the port actually taken)
 * @list: entry in the list of shared endpoints
 * @conns: connectors over it, to keep their destinations distinct
 */
struct ndk_sep {
	NDK_SHARED_ENDPOINT ndk;
	struct ndk_obj obj;
	struct rdma_cm_id *id;
	struct sockaddr_storage addr;
	struct list_head list;
	struct list_head conns;
};

NTSTATUS ndk_create_shared_endpoint(NDK_ADAPTER *pNdkAdapter,
				    const PSOCKADDR pAddress,
				    ULONG AddressLength,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);
struct ndk_sep *ndk_sep_of(NDK_SHARED_ENDPOINT *s, struct ndk_adapter *adapter);
bool ndk_sep_same_addr(const struct sockaddr *a, const struct sockaddr *b);
NTSTATUS ndk_sep_add_conn(struct ndk_sep *sep, struct ndk_connector *conn);
void ndk_sep_del_conn(struct ndk_connector *conn);
NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector);
NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_LISTENER **ppNdkListener);
struct ndk_connector *ndk_connector_alloc(struct ndk_adapter *adapter,
					  const struct rdma_conn_param *req,
					  gfp_t gfp);
void ndk_connector_adopt(struct ndk_connector *conn, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev);
void ndk_connector_called(struct ndk_connector *conn);
struct rdma_cm_id *ndk_cm_handler_id(void);
NTSTATUS ndk_cm_create_id(void *ctx, struct rdma_cm_id **idp);
NTSTATUS ndk_bind_status(const struct sockaddr *addr, int err);
NTSTATUS ndk_copy_addr(const struct sockaddr *addr, PSOCKADDR pAddress,
		       ULONG *pAddressLength);
ULONG ndk_addr_len(const struct sockaddr *addr, ULONG len);

#endif /* _NDK_PRIV_H */
