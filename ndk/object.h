/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The lifetime core (object.c): struct ndk_obj, which every NDK object
 * embeds behind its public NDKPI struct, the operations each type
 * registers, and the workqueue requests run on. Used by every file;
 * calls only go down into object.c.
 */
#ifndef _NDK_PRIV_OBJECT_H
#define _NDK_PRIV_OBJECT_H

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
#include "compat.h"

#if IS_ENABLED(CONFIG_KUNIT)
/* Internal functions the KUnit module checks directly. */
#define EXPORT_SYMBOL_NDK_TEST(sym)	EXPORT_SYMBOL_NS_GPL(sym, NDK_KUNIT_NS)
#else
/* Still names the symbol (discarded at link): a typo fails here too. */
#define EXPORT_SYMBOL_NDK_TEST(sym)	__ADDRESSABLE(sym)
#endif

/* The workqueue of every asynchronous request (object.c). */
extern struct workqueue_struct *ndk_wq;

struct ndk_obj;
struct ndk_obj_ops;

/* The lifetime calls every object file makes (object.c). */
bool ndk_caller_may_sleep(void);
void ndk_obj_init(struct ndk_obj *obj, NDK_OBJECT_HEADER *hdr,
		  NDK_OBJECT_TYPE type, const struct ndk_obj_ops *ops,
		  struct ndk_obj *parent);
bool ndk_obj_may_inline(struct ndk_obj *obj);
NTSTATUS ndk_obj_create(struct ndk_obj *obj, NDK_FN_CREATE_COMPLETION cb,
			void *ctx, bool may_inline);
NTSTATUS ndk_close_object(NDK_OBJECT_HEADER *pNdkObject,
			  NDK_FN_CLOSE_COMPLETION CloseCompletion,
			  PVOID RequestContext);
void ndk_obj_add_antecedent(struct ndk_obj *obj, struct ndk_obj *ante);
void ndk_obj_get(struct ndk_obj *obj);
bool ndk_obj_tryget(struct ndk_obj *obj);
void ndk_obj_put(struct ndk_obj *obj);
void ndk_obj_put_may_sleep(struct ndk_obj *obj);
void ndk_obj_linger(struct ndk_obj *obj);
void ndk_obj_unlinger(struct ndk_obj *obj);
NTSTATUS ndk_query_extension(NDK_OBJECT_HEADER *hdr, GUID *id,
			     NDK_VERSION version,
			     NDK_EXTENSION_INTERFACE *iface);

/**
 * struct ndk_obj_ops - what differs between object types
 * @close: optional; runs at NdkCloseObject time, in the caller's
 *	(possibly atomic) context, for side effects the close must have at
 *	once, such as a listener refusing new requests
 * @create: allocate the verbs resources and return the NTSTATUS of the
 *	creation; may sleep; runs inline in a caller that may sleep, else on
 *	ndk_wq
 * @destroy: release them; may sleep; also called after a failed @create,
 *	so it must cope with partly created objects; runs inline in a caller
 *	that may sleep and drops the last reference, else on ndk_wq; so it
 *	waits for no consumer code but a running CQ notification, which
 *	cannot sleep
 * @free: free the containing structure
 * @released: for an object without antecedent (the adapter) instead of
 *	the queued destruction: the last reference went away
 * @kill: optional; the object's device is being removed (main.c), so it
 *	must stop what it has outstanding; called with a reference held, may
 *	sleep
 * @cm_event: optional; an event of an rdma_cm id whose context is the
 *	object (cm.c); returns non-zero only to refuse a connect request
 * @inline_ok: optional; called only where the caller may sleep, at create
 *	time and at close time (the object's state tells which); false makes the request
 *	pend on ndk_wq all the same, for a type whose @create or @destroy
 *	must not run there (an rdma_cm id's destruction inside ndk's
 *	rdma_cm handler)
 * @let_go: the object lingers (ndk_obj_linger()) and one of its
 *	antecedents is being closed: end the lingering soon, calling
 *	ndk_obj_unlinger(); called under a spinlock
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
	bool (*inline_ok)(struct ndk_obj *obj);
	void (*let_go)(struct ndk_obj *obj);
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
 * @owner_id: a QP's or SRQ's index in ndk_wr_owners, which its wr_ids
 *	carry (ring.h); 0 for other types
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
 * @linger_node: entry in its adapter's @lingering, while it lingers
 */
struct ndk_obj {
	NDK_OBJECT_HEADER *hdr;
	u32 id;
	u32 owner_id;
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
	struct list_head linger_node;
};

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

#endif /* _NDK_PRIV_OBJECT_H */
