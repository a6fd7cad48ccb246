// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Failure injection for the ndk_fault suite (see NDK_FI_NULL() and kin
 * in ndk_priv.h). Every file wraps its calls that can fail, so this sits
 * below them all and calls nothing of ndk. Built with KUnit only.
 */
#include "ndk_priv.h"

#if IS_ENABLED(CONFIG_KUNIT)
/* The ndk_fault suite's injection state; see NDK_FI_NULL() and kin. */
static struct {
	atomic_t countdown;	/* the call that makes it 0 fails */
	atomic_t seen;		/* wrapped calls since arming */
	bool on;
} ndk_fi;

/**
 * ndk_fault() - whether the wrapped call about to be made must fail
 *
 * Return: true for the call ndk_fault_arm() chose.
 */
bool ndk_fault(void)
{
	if (likely(!READ_ONCE(ndk_fi.on)))
		return false;
	atomic_inc(&ndk_fi.seen);
	return atomic_dec_return(&ndk_fi.countdown) == 0;
}

/**
 * ndk_fault_errno() - the error an injected failure returns
 *
 * Return: -ENOMEM.
 */
int ndk_fault_errno(void)
{
	return -ENOMEM;
}

/**
 * ndk_fault_null() - the pointer an injected allocation failure returns
 *
 * Return: NULL.
 */
void *ndk_fault_null(void)
{
	return NULL;
}

/**
 * ndk_fault_arm() - make the @nth wrapped call from now on fail
 * @nth: 1 for the next one
 */
void ndk_fault_arm(int nth)
{
	atomic_set(&ndk_fi.seen, 0);
	atomic_set(&ndk_fi.countdown, nth);
	WRITE_ONCE(ndk_fi.on, true);
}
EXPORT_SYMBOL_NDK_TEST(ndk_fault_arm);

/**
 * ndk_fault_disarm() - stop injecting
 * @fired: set to whether the chosen call came and failed
 *
 * Return: how many wrapped calls were made since ndk_fault_arm().
 */
int ndk_fault_disarm(bool *fired)
{
	WRITE_ONCE(ndk_fi.on, false);
	*fired = atomic_read(&ndk_fi.countdown) <= 0;
	return atomic_read(&ndk_fi.seen);
}
EXPORT_SYMBOL_NDK_TEST(ndk_fault_disarm);

/**
 * ndk_fault_seen() - wrapped calls since ndk_fault_arm(), still armed
 *
 * Return: how many wrapped calls were made since ndk_fault_arm(), which
 * tells a test how far a path running on another thread has come.
 */
int ndk_fault_seen(void)
{
	return atomic_read(&ndk_fi.seen);
}
EXPORT_SYMBOL_NDK_TEST(ndk_fault_seen);

/*
 * While set, the poll path drops every flushed completion the device
 * reports, as a driver that never reports them would (see sweep.c).
 */
bool ndk_fault_lose_flushes;

/**
 * ndk_fault_lose() - play a driver that loses its flushes, or stop
 * @on: whether the poll path drops flushed completions from now on
 */
void ndk_fault_lose(bool on)
{
	WRITE_ONCE(ndk_fault_lose_flushes, on);
}
EXPORT_SYMBOL_NDK_TEST(ndk_fault_lose);
#endif
