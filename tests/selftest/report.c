// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: the report and its checks, one KTAP line each, and
 * asynchronous calls made synchronous with bounded waits.
 */
#define pr_fmt(fmt) fmt

#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/printk.h>

#include "selftest.h"

static DEFINE_MUTEX(st_lock);
static unsigned int st_num;
unsigned int st_passed, st_failed, st_skipped;

/* Report check @name: @fail is NULL for a pass, else why it failed. */
void st_report(const char *name, const char *fail)
{
	mutex_lock(&st_lock);
	st_num++;
	if (fail) {
		st_failed++;
		pr_info("not ok %u %s\n", st_num, name);
		pr_info("# %s: %s\n", name, fail);
	} else {
		st_passed++;
		pr_info("ok %u %s\n", st_num, name);
	}
	mutex_unlock(&st_lock);
}

void st_skip(const char *name, const char *missing)
{
	mutex_lock(&st_lock);
	st_num++;
	st_skipped++;
	pr_info("ok %u %s # SKIP device has no %s\n", st_num, name, missing);
	mutex_unlock(&st_lock);
}

bool st_expect(struct st_check *c, bool ok,
	       const char *fmt, ...)
{
	va_list ap;

	if (ok || c->why[0])
		return ok;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return false;
}

void st_begin(struct st_check *c, const char *name)
{
	c->name = name;
	c->why[0] = 0;
}

bool st_end(struct st_check *c)
{
	st_report(c->name, c->why[0] ? c->why : NULL);
	return !c->why[0];
}

/* ------------------------------------------------------------------ */
/* Asynchronous calls made synchronous                                */
/* ------------------------------------------------------------------ */

void st_wait_init(struct st_wait *w)
{
	init_completion(&w->done);
	w->status = STATUS_PENDING;
	w->obj = NULL;
	atomic_set(&w->calls, 0);
}

void st_create_cb(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
	struct st_wait *w = ctx;

	w->status = status;
	w->obj = obj;
	atomic_inc(&w->calls);
	complete(&w->done);
}

void st_request_cb(PVOID ctx, NTSTATUS status)
{
	struct st_wait *w = ctx;

	w->status = status;
	atomic_inc(&w->calls);
	complete(&w->done);
}

void st_close_cb(PVOID ctx)
{
	struct st_wait *w = ctx;

	w->status = STATUS_SUCCESS;
	atomic_inc(&w->calls);
	complete(&w->done);
}

/* Set once a wait ran out: a callback may still come, so stay loaded. */
bool st_abandoned;

/* The outcome of a call that returned @st: its own, or its callback's. */
NTSTATUS st_wait(struct st_wait *w, NTSTATUS st)
{
	if (st != STATUS_PENDING)
		return st;
	if (!wait_for_completion_timeout(&w->done, ST_TIMEOUT)) {
		st_abandoned = true;
		return STATUS_IO_TIMEOUT;
	}
	return w->status;
}

/* The object of a create that returned @st with *@inline_obj. */
NDK_OBJECT_HEADER *st_created(struct st_wait *w, NTSTATUS st,
			      void *inline_obj, NTSTATUS *out)
{
	bool pending = st == STATUS_PENDING;

	st = st_wait(w, st);
	if (out)
		*out = st;
	if (st)
		return NULL;
	return pending ? w->obj : inline_obj;
}

NTSTATUS st_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close)
{
	struct st_wait w;

	if (!obj)
		return STATUS_SUCCESS;
	st_wait_init(&w);
	return st_wait(&w, close(obj, st_close_cb, &w));
}
