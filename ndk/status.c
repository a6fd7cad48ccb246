// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The one place where Linux error codes and work-completion statuses
 * become NTSTATUS values. Tables rather than switches so that the KUnit
 * suite can walk them.
 */
#include "ndk_priv.h"

static const struct ndk_errno_map ndk_errno_table[] = {
	{ 0,			STATUS_SUCCESS },
	{ -ENOMEM,		STATUS_INSUFFICIENT_RESOURCES },
	{ -ENOBUFS,		STATUS_INSUFFICIENT_RESOURCES },
	{ -ENOSPC,		STATUS_INSUFFICIENT_RESOURCES },
	{ -EINVAL,		STATUS_INVALID_PARAMETER },
	{ -ERANGE,		STATUS_INVALID_PARAMETER },
	{ -EOPNOTSUPP,		STATUS_NOT_SUPPORTED },
	{ -EPROTONOSUPPORT,	STATUS_NOT_SUPPORTED },
	{ -EAFNOSUPPORT,	STATUS_NOT_SUPPORTED },
	{ -ENODEV,		STATUS_DEVICE_REMOVED },
	{ -ENXIO,		STATUS_DEVICE_REMOVED },
	{ -EBUSY,		STATUS_DEVICE_BUSY },
	{ -EAGAIN,		STATUS_DEVICE_BUSY },
	{ -ETIMEDOUT,		STATUS_IO_TIMEOUT },
	{ -ECONNREFUSED,	STATUS_CONNECTION_REFUSED },
	{ -ECONNRESET,		STATUS_CONNECTION_RESET },
	{ -ECONNABORTED,	STATUS_CONNECTION_ABORTED },
	{ -ENOTCONN,		STATUS_CONNECTION_INVALID },
	{ -EISCONN,		STATUS_CONNECTION_ACTIVE },
	{ -EALREADY,		STATUS_CONNECTION_ACTIVE },
	{ -ESHUTDOWN,		STATUS_CONNECTION_DISCONNECTED },
	{ -EPIPE,		STATUS_CONNECTION_DISCONNECTED },
	{ -ENETUNREACH,		STATUS_NETWORK_UNREACHABLE },
	{ -ENETDOWN,		STATUS_NETWORK_UNREACHABLE },
	{ -EHOSTUNREACH,	STATUS_HOST_UNREACHABLE },
	{ -EADDRINUSE,		STATUS_ADDRESS_ALREADY_EXISTS },
	{ -EADDRNOTAVAIL,	STATUS_INVALID_ADDRESS },
	{ -ENOENT,		STATUS_NOT_FOUND },
	{ -ECANCELED,		STATUS_CANCELLED },
	{ -EINTR,		STATUS_CANCELLED },
	{ -EIO,			STATUS_IO_DEVICE_ERROR },
	{ -EPERM,		STATUS_ACCESS_DENIED },
	{ -EACCES,		STATUS_ACCESS_DENIED },
	{ -EMSGSIZE,		STATUS_INVALID_BUFFER_SIZE },
	{ -EOVERFLOW,		STATUS_BUFFER_OVERFLOW },
	{ -EFAULT,		STATUS_ACCESS_VIOLATION },
};

/*
 * A work completion's status as the consumer sees it in NDK_RESULT; the
 * driver's own code for it goes in NDK_RESULT_EX's ProviderErrorCode
 * (wc->vendor_err). Flushed requests were not executed and complete
 * with STATUS_CANCELLED, as NdkFlush requires and as the implicit flush
 * of a disconnect does. A request the device failed because its QP or
 * connection broke under it may have been executed in part: the local
 * side's failure is STATUS_CONNECTION_ABORTED (siw reports a transmit
 * cut off by its connection's close as a local QP operation error), the
 * peer's STATUS_CONNECTION_RESET. Documentation/ndk/mapping.rst gives
 * the reason for each row.
 */
static const struct ndk_wc_map ndk_wc_table[] = {
	{ IB_WC_SUCCESS,		STATUS_SUCCESS },
	{ IB_WC_LOC_LEN_ERR,		STATUS_BUFFER_OVERFLOW },
	{ IB_WC_LOC_QP_OP_ERR,		STATUS_CONNECTION_ABORTED },
	{ IB_WC_LOC_EEC_OP_ERR,		STATUS_INTERNAL_ERROR },
	{ IB_WC_LOC_PROT_ERR,		STATUS_ACCESS_VIOLATION },
	{ IB_WC_WR_FLUSH_ERR,		STATUS_CANCELLED },
	{ IB_WC_MW_BIND_ERR,		STATUS_ACCESS_VIOLATION },
	{ IB_WC_BAD_RESP_ERR,		STATUS_INVALID_NETWORK_RESPONSE },
	{ IB_WC_LOC_ACCESS_ERR,		STATUS_ACCESS_VIOLATION },
	{ IB_WC_REM_INV_REQ_ERR,	STATUS_INVALID_PARAMETER },
	{ IB_WC_REM_ACCESS_ERR,		STATUS_ACCESS_VIOLATION },
	{ IB_WC_REM_OP_ERR,		STATUS_CONNECTION_RESET },
	{ IB_WC_RETRY_EXC_ERR,		STATUS_IO_TIMEOUT },
	{ IB_WC_RNR_RETRY_EXC_ERR,	STATUS_REMOTE_RESOURCES },
	{ IB_WC_LOC_RDD_VIOL_ERR,	STATUS_ACCESS_VIOLATION },
	{ IB_WC_REM_INV_RD_REQ_ERR,	STATUS_INVALID_PARAMETER },
	{ IB_WC_REM_ABORT_ERR,		STATUS_CONNECTION_RESET },
	{ IB_WC_INV_EECN_ERR,		STATUS_INTERNAL_ERROR },
	{ IB_WC_INV_EEC_STATE_ERR,	STATUS_INTERNAL_ERROR },
	{ IB_WC_FATAL_ERR,		STATUS_INTERNAL_ERROR },
	{ IB_WC_RESP_TIMEOUT_ERR,	STATUS_IO_TIMEOUT },
	{ IB_WC_GENERAL_ERR,		STATUS_UNSUCCESSFUL },
};

/**
 * ndk_status_from_errno() - translate a Linux error code to NTSTATUS
 * @err: zero or a negative errno
 *
 * Return: the matching NTSTATUS; STATUS_UNSUCCESSFUL for anything unlisted.
 */
NTSTATUS ndk_status_from_errno(int err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ndk_errno_table); i++)
		if (ndk_errno_table[i].err == err)
			return ndk_errno_table[i].status;
	return STATUS_UNSUCCESSFUL;
}
EXPORT_SYMBOL_NDK_TEST(ndk_status_from_errno);

/**
 * ndk_status_from_wc() - translate a work-completion status to NTSTATUS
 * @wc_status: the ib_wc status
 *
 * Return: the matching NTSTATUS; STATUS_UNSUCCESSFUL for anything unlisted.
 */
NTSTATUS ndk_status_from_wc(enum ib_wc_status wc_status)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ndk_wc_table); i++)
		if (ndk_wc_table[i].wc_status == wc_status)
			return ndk_wc_table[i].status;
	return STATUS_UNSUCCESSFUL;
}
EXPORT_SYMBOL_NDK_TEST(ndk_status_from_wc);

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * ndk_errno_map_table() - the errno table, for the tests to check every row
 * @n: set to the number of rows
 *
 * Return: the first row of ndk_status_from_errno()'s table.
 */
const struct ndk_errno_map *ndk_errno_map_table(size_t *n)
{
	*n = ARRAY_SIZE(ndk_errno_table);
	return ndk_errno_table;
}
EXPORT_SYMBOL_NDK_TEST(ndk_errno_map_table);

/**
 * ndk_wc_map_table() - the work-completion table, for the tests to check
 * @n: set to the number of rows
 *
 * Return: the first row of ndk_status_from_wc()'s table.
 */
const struct ndk_wc_map *ndk_wc_map_table(size_t *n)
{
	*n = ARRAY_SIZE(ndk_wc_table);
	return ndk_wc_table;
}
EXPORT_SYMBOL_NDK_TEST(ndk_wc_map_table);
#endif
