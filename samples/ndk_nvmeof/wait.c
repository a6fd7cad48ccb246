// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK creates, registers, connects and closes asynchronously: a call
 * returns STATUS_PENDING and its callback finishes it later, or it
 * finishes at once. Setup and teardown run in process context, where
 * the host simply waits for the callback.
 */
#include "nvmeof.h"

void nvmeof_wait_init(struct nvmeof_wait *w)
{
	init_completion(&w->done);
	w->status = STATUS_PENDING;
	w->obj = NULL;
}

void nvmeof_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
	struct nvmeof_wait *w = ctx;

	w->status = status;
	w->obj = obj;
	complete(&w->done);
}

void nvmeof_request_done(PVOID ctx, NTSTATUS status)
{
	struct nvmeof_wait *w = ctx;

	w->status = status;
	complete(&w->done);
}

static void nvmeof_close_done(PVOID ctx)
{
	complete(&((struct nvmeof_wait *)ctx)->done);
}

/* The status of a call that may pend, once it has finished. */
NTSTATUS nvmeof_wait(struct nvmeof_wait *w, NTSTATUS status)
{
	if (status != STATUS_PENDING)
		return status;
	wait_for_completion(&w->done);
	return w->status;
}

/*
 * The object a create call made, or NULL with the failure logged: the
 * one it stored through its last argument (@obj) when it finished at
 * once, else the callback's.
 */
NDK_OBJECT_HEADER *nvmeof_created(struct nvmeof_wait *w, NTSTATUS status,
				  void *obj, const char *what)
{
	bool pending = status == STATUS_PENDING;

	status = nvmeof_wait(w, status);
	if (status) {
		pr_err("creating the %s failed: %#x\n", what, status);
		return NULL;
	}
	return pending ? w->obj : obj;
}

/* Close an NDK object with its dispatch table's close call, and wait. */
void nvmeof_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close)
{
	struct nvmeof_wait w;

	nvmeof_wait_init(&w);
	if (close(obj, nvmeof_close_done, &w) == STATUS_PENDING)
		wait_for_completion(&w.done);
}
