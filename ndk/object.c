// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lifetime rules every NDK object shares.
 *
 * Create and close are callable from atomic context. Where the kernel can
 * tell that the caller may sleep, they finish in the call, as NDKPI
 * allows (STATUS_SUCCESS, no callback): that saves a trip through ndk_wq
 * and the waiting consumer's wakeup. Elsewhere they only record the
 * request and queue the object's work item; the verbs calls, which may
 * sleep, run on ndk_wq and end in the consumer's completion callback. A
 * close finishes inline only when it drops the last reference: a
 * successor or a pending request of the object makes it pend.
 *
 * An object holds a reference on its antecedent from the moment its
 * creation starts until its close completion callback has returned, so
 * an antecedent's close completes (and the adapter's close returns) only
 * after every successor's callbacks are over. After calling a completion
 * callback the work function touches nothing but what the object's
 * reference keeps alive, because the consumer may close the object from
 * inside the callback.
 */
#include "ndk_priv.h"
#include "trace.h"

/*
 * Every creation, destruction and pending request runs here; module init
 * in main.c allocates it, before any object can exist.
 */
struct workqueue_struct *ndk_wq;

static void ndk_obj_work(struct work_struct *work);

/* Object ids for traces and debugfs; 0 is never used. */
static atomic_t ndk_obj_last_id = ATOMIC_INIT(0);

/**
 * ndk_obj_init() - prepare the common part of a new object
 * @obj: the object's lifetime state
 * @hdr: its public header
 * @type: its NDK object type
 * @ops: its type operations
 * @parent: the antecedent to reference, or NULL for an adapter
 *
 * Takes a reference on @parent. Atomic context is fine.
 */
void ndk_obj_init(struct ndk_obj *obj, NDK_OBJECT_HEADER *hdr,
		  NDK_OBJECT_TYPE type, const struct ndk_obj_ops *ops,
		  struct ndk_obj *parent)
{
	obj->hdr = hdr;
	obj->id = atomic_inc_return(&ndk_obj_last_id);
	obj->owner_id = 0;
	obj->ops = ops;
	obj->parent = parent;
	memset(obj->extra, 0, sizeof(obj->extra));
	refcount_set(&obj->refs, 1);
	obj->state = NDK_OBJ_CREATING;
	INIT_WORK(&obj->work, ndk_obj_work);
	INIT_LIST_HEAD(&obj->dev_node);
	INIT_LIST_HEAD(&obj->linger_node);
	if (parent) {
		obj->adapter = parent->adapter;
		ndk_obj_get(parent);
		hdr->Version = parent->hdr->Version;
	}
	hdr->ObjectType = type;
}

/**
 * ndk_obj_add_antecedent() - reference one more antecedent
 * @obj: an object being set up, before ndk_obj_create()
 * @ante: an object that must outlive @obj, besides its parent
 *
 * The reference is dropped with the parent's, after the close (or failed
 * create) completion of @obj has returned. Atomic context is fine.
 */
void ndk_obj_add_antecedent(struct ndk_obj *obj, struct ndk_obj *ante)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(obj->extra); i++) {
		if (!obj->extra[i]) {
			ndk_obj_get(ante);
			obj->extra[i] = ante;
			return;
		}
	}
	WARN_ON_ONCE(1);
}

/* Drop the references @obj held on its antecedents. */
static void ndk_obj_put_antecedents(struct ndk_obj *parent,
				    struct ndk_obj **extra, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (extra[i])
			ndk_obj_put(extra[i]);
	ndk_obj_put(parent);
}

/* Whether @ante is an antecedent of @obj. */
static bool ndk_obj_holds(struct ndk_obj *obj, struct ndk_obj *ante)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(obj->extra); i++)
		if (obj->extra[i] == ante)
			return true;
	return obj->parent == ante;
}

/**
 * ndk_obj_linger() - @obj is closed but keeps its antecedents a while
 * @obj: an object whose destruction leaves work behind (a QP whose verbs
 *	QP retires)
 *
 * Takes a reference on each antecedent, so that none of them finishes
 * its close before @obj calls ndk_obj_unlinger(). Closing one of them
 * calls @obj's let_go operation; an antecedent already closing does so
 * before this returns. Process context.
 */
void ndk_obj_linger(struct ndk_obj *obj)
{
	struct ndk_adapter *a = obj->adapter;
	bool closing;
	int i;

	for (i = 0; i < ARRAY_SIZE(obj->extra); i++)
		if (obj->extra[i])
			ndk_obj_get(obj->extra[i]);
	ndk_obj_get(obj->parent);
	spin_lock_irq(&a->linger_lock);
	list_add_tail(&obj->linger_node, &a->lingering);
	spin_unlock_irq(&a->linger_lock);
	/*
	 * An antecedent that walked the list before @obj was on it: the
	 * lock orders its closing state before this read.
	 */
	closing = READ_ONCE(obj->parent->state) == NDK_OBJ_CLOSING;
	for (i = 0; i < ARRAY_SIZE(obj->extra); i++)
		if (obj->extra[i] &&
		    READ_ONCE(obj->extra[i]->state) == NDK_OBJ_CLOSING)
			closing = true;
	if (closing)
		obj->ops->let_go(obj);
}

/**
 * ndk_obj_unlinger() - @obj lets go of its antecedents
 * @obj: an object ndk_obj_linger() kept
 *
 * Any context.
 */
void ndk_obj_unlinger(struct ndk_obj *obj)
{
	struct ndk_adapter *a = obj->adapter;
	unsigned long flags;

	spin_lock_irqsave(&a->linger_lock, flags);
	list_del_init(&obj->linger_node);
	spin_unlock_irqrestore(&a->linger_lock, flags);
	ndk_obj_put_antecedents(obj->parent, obj->extra,
				ARRAY_SIZE(obj->extra));
}

/* @ante is being closed: what lingers on it lets go. */
static void ndk_obj_let_go(struct ndk_obj *ante)
{
	struct ndk_adapter *a = ante->adapter;
	struct ndk_obj *obj;
	unsigned long flags;

	spin_lock_irqsave(&a->linger_lock, flags);
	list_for_each_entry(obj, &a->lingering, linger_node)
		if (ndk_obj_holds(obj, ante))
			obj->ops->let_go(obj);
	spin_unlock_irqrestore(&a->linger_lock, flags);
}

void ndk_obj_get(struct ndk_obj *obj)
{
	refcount_inc(&obj->refs);
}

/**
 * ndk_obj_tryget() - take a reference unless the last one is gone
 * @obj: an object whose memory the caller knows to be alive, whatever
 *	its count
 *
 * For an event that may race with the object's close: the count can
 * reach zero before the destruction that the event's context holds off.
 *
 * Return: true if the reference was taken.
 */
bool ndk_obj_tryget(struct ndk_obj *obj)
{
	return refcount_inc_not_zero(&obj->refs);
}

/**
 * ndk_obj_put() - drop a reference
 * @obj: the object
 *
 * The last reference of an object goes away only after its consumer
 * closed it; destruction may sleep, so it is queued. Atomic context is
 * fine.
 */
void ndk_obj_put(struct ndk_obj *obj)
{
	if (!refcount_dec_and_test(&obj->refs))
		return;
	if (!obj->parent) {
		/* The adapter: its closer waits for this. */
		obj->ops->released(obj);
		return;
	}
	queue_work(ndk_wq, &obj->work);
}

/**
 * ndk_caller_may_sleep() - whether a request may finish in its caller
 *
 * Return: true only where the caller may sleep for certain. Without
 * PREEMPT_COUNT a spinlock leaves no trace, and preemptible() is always
 * false there: every caller counts as atomic. Under preemptible RCU a
 * read-side section does not show in the preempt count, so it is checked
 * on its own.
 */
bool ndk_caller_may_sleep(void)
{
	return preemptible() && !rcu_preempt_depth();
}

/*
 * Run the type's create. With @cb (on ndk_wq) report to the consumer;
 * without (inline) the caller returns the status. From the success
 * callback on, the consumer owns the object and may close it at once.
 */
static NTSTATUS ndk_obj_run_create(struct ndk_obj *obj,
				   NDK_FN_CREATE_COMPLETION cb, void *ctx)
{
	struct ndk_obj *extra[ARRAY_SIZE(obj->extra)];
	struct ndk_obj *parent = obj->parent;
	u32 type = obj->hdr->ObjectType, id = obj->id;
	NTSTATUS status;

	status = ndk_adapter_dead(obj->adapter) ? STATUS_DEVICE_REMOVED :
						  obj->ops->create(obj);
	if (!status && !ndk_obj_track(obj))
		status = STATUS_DEVICE_REMOVED;
	trace_ndk_object_create(type, id, parent->id, status);
	if (status) {
		memcpy(extra, obj->extra, sizeof(extra));
		obj->ops->destroy(obj);
		obj->ops->free(obj);
		if (cb) {
			trace_ndk_callback(NDK_CB_CREATE, type, id, status);
			cb(ctx, status, NULL);
		}
		ndk_obj_put_antecedents(parent, extra, ARRAY_SIZE(extra));
		return status;
	}
	WRITE_ONCE(obj->state, NDK_OBJ_LIVE);
	if (cb) {
		trace_ndk_callback(NDK_CB_CREATE, type, id, STATUS_SUCCESS);
		cb(ctx, STATUS_SUCCESS, obj->hdr);
	}
	return STATUS_SUCCESS;
}

static void ndk_obj_finish_create(struct ndk_obj *obj)
{
	ndk_obj_run_create(obj, obj->create_cb, obj->cb_ctx);
}

static void ndk_obj_finish_close(struct ndk_obj *obj)
{
	NDK_FN_CLOSE_COMPLETION cb = obj->close_cb;
	struct ndk_obj *extra[ARRAY_SIZE(obj->extra)];
	void *ctx = obj->cb_ctx;
	struct ndk_obj *parent = obj->parent;
	u32 type = obj->hdr->ObjectType, id = obj->id;

	memcpy(extra, obj->extra, sizeof(extra));
	/* Off the debugfs lists before anything goes. */
	ndk_obj_untrack(obj);
	trace_ndk_close_done(obj);
	obj->ops->destroy(obj);
	obj->ops->free(obj);
	if (cb) {
		trace_ndk_callback(NDK_CB_CLOSE, type, id, STATUS_SUCCESS);
		cb(ctx);
	}
	ndk_obj_put_antecedents(parent, extra, ARRAY_SIZE(extra));
}

static void ndk_obj_work(struct work_struct *work)
{
	struct ndk_obj *obj = container_of(work, struct ndk_obj, work);

	if (READ_ONCE(obj->state) == NDK_OBJ_CREATING)
		ndk_obj_finish_create(obj);
	else
		ndk_obj_finish_close(obj);
}

/**
 * ndk_obj_put_may_sleep() - drop a reference where sleeping is fine
 * @obj: an object other than an adapter
 *
 * For a work item of @obj that touches nothing of it afterwards: if this
 * was the last reference, the close finishes here rather than in one more
 * trip through ndk_wq.
 */
void ndk_obj_put_may_sleep(struct ndk_obj *obj)
{
	might_sleep();
	if (refcount_dec_and_test(&obj->refs))
		ndk_obj_work(&obj->work);
}

/*
 * Whether a call on @obj that may sleep can run in its caller: the caller
 * may sleep, and the type has no reason of its own to refuse. The type's
 * test runs only where the caller may sleep, so it may take locks that
 * are not safe in interrupts.
 */
bool ndk_obj_may_inline(struct ndk_obj *obj)
{
	return ndk_caller_may_sleep() &&
	       (!obj->ops->inline_ok || obj->ops->inline_ok(obj));
}

/**
 * ndk_obj_create() - create an object, inline if the caller may sleep
 * @obj: an object set up with ndk_obj_init()
 * @cb: the consumer's create completion
 * @ctx: its context
 * @may_inline: false when the consumer gave no place for the object
 *
 * Return: STATUS_SUCCESS, the object created and the consumer's to use
 * (the caller stores it for the consumer; @cb is not called); a failure
 * status of the creation, the object gone; or STATUS_PENDING, the
 * creation queued on ndk_wq and @cb to report its result.
 */
NTSTATUS ndk_obj_create(struct ndk_obj *obj, NDK_FN_CREATE_COMPLETION cb,
			void *ctx, bool may_inline)
{
	if (may_inline && ndk_obj_may_inline(obj))
		return ndk_obj_run_create(obj, NULL, NULL);
	obj->create_cb = cb;
	obj->cb_ctx = ctx;
	queue_work(ndk_wq, &obj->work);
	return STATUS_PENDING;
}

/**
 * ndk_obj_close() - the NdkCloseObject logic shared by every type
 * @obj: the object
 * @cb: the consumer's close completion
 * @ctx: its context
 *
 * Drops the consumer's reference. The object is destroyed, and @cb
 * called, once its successors and pending operations are gone too. Where
 * the close may finish inline (ndk_obj_may_inline()) and drops the last
 * reference, it finishes here instead, without @cb.
 *
 * Return: STATUS_SUCCESS if the object is gone already, else
 * STATUS_PENDING.
 */
static NTSTATUS ndk_obj_close(struct ndk_obj *obj,
			      NDK_FN_CLOSE_COMPLETION cb, void *ctx)
{
	trace_ndk_object_close(obj);
	obj->close_cb = cb;
	obj->cb_ctx = ctx;
	WRITE_ONCE(obj->state, NDK_OBJ_CLOSING);
	ndk_obj_let_go(obj);
	if (obj->ops->close)
		obj->ops->close(obj);
	if (ndk_obj_may_inline(obj)) {
		if (!refcount_dec_and_test(&obj->refs))
			return STATUS_PENDING;
		/* Nothing else can reach the object now. */
		obj->close_cb = NULL;
		ndk_obj_finish_close(obj);
		return STATUS_SUCCESS;
	}
	ndk_obj_put(obj);
	return STATUS_PENDING;
}

/**
 * ndk_close_object() - NdkCloseObject for every object type
 * @pNdkObject: the object's header
 * @CloseCompletion: called once the object is gone
 * @RequestContext: passed back to @CloseCompletion
 *
 * Callable from atomic context.
 *
 * Return: STATUS_PENDING, STATUS_SUCCESS when the close finished inline
 * (see ndk_obj_close()), or STATUS_INVALID_PARAMETER for a header that
 * names no closable object.
 */
NTSTATUS ndk_close_object(NDK_OBJECT_HEADER *pNdkObject,
			  NDK_FN_CLOSE_COMPLETION CloseCompletion,
			  PVOID RequestContext)
{
	struct ndk_obj *obj;

	if (!pNdkObject || pNdkObject->ObjectType <= NdkObjectTypeAdapter ||
	    pNdkObject->ObjectType >= NdkObjectTypeMax)
		return STATUS_INVALID_PARAMETER;
	obj = ndk_obj_of(pNdkObject);
	if (obj->hdr != pNdkObject || READ_ONCE(obj->state) != NDK_OBJ_LIVE)
		return STATUS_INVALID_PARAMETER;
	return ndk_obj_close(obj, CloseCompletion, RequestContext);
}
EXPORT_SYMBOL_NDK_TEST(ndk_close_object);

/**
 * ndk_query_extension() - NdkQueryExtensionInterface of every object
 * @hdr: the object
 * @id: the extension interface GUID
 * @version: the requested interface version
 * @iface: left untouched
 *
 * No extension interfaces are defined, so none is supported.
 *
 * Return: STATUS_NOT_SUPPORTED, or STATUS_INVALID_PARAMETER for NULL
 * arguments.
 */
NTSTATUS ndk_query_extension(NDK_OBJECT_HEADER *hdr, GUID *id,
			     NDK_VERSION version,
			     NDK_EXTENSION_INTERFACE *iface)
{
	if (!hdr || !id || !iface)
		return STATUS_INVALID_PARAMETER;
	return STATUS_NOT_SUPPORTED;
}
