// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_status: errno and work-completion status translation. The expected
 * values are written out here independently of the provider's tables,
 * and every row the provider has must appear here too.
 */
#include "ndk_tests.h"
#include "ndk_priv.h"

struct ndk_errno_case {
	int err;
	NTSTATUS status;
};

static const struct ndk_errno_case ndk_errno_cases[] = {
	{ 0, STATUS_SUCCESS },
	{ -ENOMEM, STATUS_INSUFFICIENT_RESOURCES },
	{ -ENOBUFS, STATUS_INSUFFICIENT_RESOURCES },
	{ -ENOSPC, STATUS_INSUFFICIENT_RESOURCES },
	{ -EINVAL, STATUS_INVALID_PARAMETER },
	{ -ERANGE, STATUS_INVALID_PARAMETER },
	{ -EOPNOTSUPP, STATUS_NOT_SUPPORTED },
	{ -EPROTONOSUPPORT, STATUS_NOT_SUPPORTED },
	{ -EAFNOSUPPORT, STATUS_NOT_SUPPORTED },
	{ -ENODEV, STATUS_DEVICE_REMOVED },
	{ -ENXIO, STATUS_DEVICE_REMOVED },
	{ -EBUSY, STATUS_DEVICE_BUSY },
	{ -EAGAIN, STATUS_DEVICE_BUSY },
	{ -ETIMEDOUT, STATUS_IO_TIMEOUT },
	{ -ECONNREFUSED, STATUS_CONNECTION_REFUSED },
	{ -ECONNRESET, STATUS_CONNECTION_RESET },
	{ -ECONNABORTED, STATUS_CONNECTION_ABORTED },
	{ -ENOTCONN, STATUS_CONNECTION_INVALID },
	{ -EISCONN, STATUS_CONNECTION_ACTIVE },
	{ -EALREADY, STATUS_CONNECTION_ACTIVE },
	{ -ESHUTDOWN, STATUS_CONNECTION_DISCONNECTED },
	{ -EPIPE, STATUS_CONNECTION_DISCONNECTED },
	{ -ENETUNREACH, STATUS_NETWORK_UNREACHABLE },
	{ -ENETDOWN, STATUS_NETWORK_UNREACHABLE },
	{ -EHOSTUNREACH, STATUS_HOST_UNREACHABLE },
	{ -EADDRINUSE, STATUS_ADDRESS_ALREADY_EXISTS },
	{ -EADDRNOTAVAIL, STATUS_INVALID_ADDRESS },
	{ -ENOENT, STATUS_NOT_FOUND },
	{ -ECANCELED, STATUS_CANCELLED },
	{ -EINTR, STATUS_CANCELLED },
	{ -EIO, STATUS_IO_DEVICE_ERROR },
	{ -EPERM, STATUS_ACCESS_DENIED },
	{ -EACCES, STATUS_ACCESS_DENIED },
	{ -EMSGSIZE, STATUS_INVALID_BUFFER_SIZE },
	{ -EOVERFLOW, STATUS_BUFFER_OVERFLOW },
	{ -EFAULT, STATUS_ACCESS_VIOLATION },
	/* Not in the table: the generic failure. */
	{ -EDOM, STATUS_UNSUCCESSFUL },
	{ -4095, STATUS_UNSUCCESSFUL },
	{ 1, STATUS_UNSUCCESSFUL },
};

struct ndk_wc_case {
	enum ib_wc_status wc;
	NTSTATUS status;
};

static const struct ndk_wc_case ndk_wc_cases[] = {
	{ IB_WC_SUCCESS, STATUS_SUCCESS },
	{ IB_WC_LOC_LEN_ERR, STATUS_BUFFER_OVERFLOW },
	{ IB_WC_LOC_QP_OP_ERR, STATUS_CONNECTION_ABORTED },
	{ IB_WC_LOC_EEC_OP_ERR, STATUS_INTERNAL_ERROR },
	{ IB_WC_LOC_PROT_ERR, STATUS_ACCESS_VIOLATION },
	{ IB_WC_WR_FLUSH_ERR, STATUS_CANCELLED },
	{ IB_WC_MW_BIND_ERR, STATUS_ACCESS_VIOLATION },
	{ IB_WC_BAD_RESP_ERR, STATUS_INVALID_NETWORK_RESPONSE },
	{ IB_WC_LOC_ACCESS_ERR, STATUS_ACCESS_VIOLATION },
	{ IB_WC_REM_INV_REQ_ERR, STATUS_INVALID_PARAMETER },
	{ IB_WC_REM_ACCESS_ERR, STATUS_ACCESS_VIOLATION },
	{ IB_WC_REM_OP_ERR, STATUS_CONNECTION_RESET },
	{ IB_WC_RETRY_EXC_ERR, STATUS_IO_TIMEOUT },
	{ IB_WC_RNR_RETRY_EXC_ERR, STATUS_REMOTE_RESOURCES },
	{ IB_WC_LOC_RDD_VIOL_ERR, STATUS_ACCESS_VIOLATION },
	{ IB_WC_REM_INV_RD_REQ_ERR, STATUS_INVALID_PARAMETER },
	{ IB_WC_REM_ABORT_ERR, STATUS_CONNECTION_RESET },
	{ IB_WC_INV_EECN_ERR, STATUS_INTERNAL_ERROR },
	{ IB_WC_INV_EEC_STATE_ERR, STATUS_INTERNAL_ERROR },
	{ IB_WC_FATAL_ERR, STATUS_INTERNAL_ERROR },
	{ IB_WC_RESP_TIMEOUT_ERR, STATUS_IO_TIMEOUT },
	{ IB_WC_GENERAL_ERR, STATUS_UNSUCCESSFUL },
	{ IB_WC_GENERAL_ERR + 1, STATUS_UNSUCCESSFUL },
};

static void ndk_errno_desc(const struct ndk_errno_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "errno %d", c->err);
}

static void ndk_wc_desc(const struct ndk_wc_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "wc status %d", c->wc);
}

KUNIT_ARRAY_PARAM(ndk_errno, ndk_errno_cases, ndk_errno_desc);
KUNIT_ARRAY_PARAM(ndk_wc, ndk_wc_cases, ndk_wc_desc);

static void ndk_status_errno_test(struct kunit *test)
{
	const struct ndk_errno_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, ndk_status_from_errno(c->err), c->status);
}

static void ndk_status_wc_test(struct kunit *test)
{
	const struct ndk_wc_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, ndk_status_from_wc(c->wc), c->status);
}

/* A row added to the provider's errno table needs a row here as well. */
static void ndk_status_errno_table_covered_test(struct kunit *test)
{
	const struct ndk_errno_map *map;
	size_t i, j, n;
	bool found;

	map = ndk_errno_map_table(&n);
	for (i = 0; i < n; i++) {
		found = false;
		for (j = 0; j < ARRAY_SIZE(ndk_errno_cases); j++)
			found |= ndk_errno_cases[j].err == map[i].err;
		KUNIT_EXPECT_TRUE_MSG(test, found, "errno %d untested",
				      map[i].err);
	}
}

/* Every verbs status is covered, and only success maps to success. */
static void ndk_status_wc_table_covered_test(struct kunit *test)
{
	const struct ndk_wc_map *map;
	size_t i, j, n;
	bool found;

	map = ndk_wc_map_table(&n);
	KUNIT_EXPECT_EQ(test, n, (size_t)IB_WC_GENERAL_ERR + 1);
	for (i = 0; i < n; i++) {
		found = false;
		for (j = 0; j < ARRAY_SIZE(ndk_wc_cases); j++)
			found |= ndk_wc_cases[j].wc == map[i].wc_status;
		KUNIT_EXPECT_TRUE(test, found);
		KUNIT_EXPECT_EQ(test, NT_SUCCESS(map[i].status),
				map[i].wc_status == IB_WC_SUCCESS);
	}
}

/* Every failing errno becomes an NTSTATUS error, never a success. */
static void ndk_status_errno_never_success_test(struct kunit *test)
{
	int err;

	for (err = -1; err >= -MAX_ERRNO; err--)
		KUNIT_EXPECT_FALSE(test, NT_SUCCESS(ndk_status_from_errno(err)));
}

static struct kunit_case ndk_status_cases[] = {
	KUNIT_CASE_PARAM(ndk_status_errno_test, ndk_errno_gen_params),
	KUNIT_CASE_PARAM(ndk_status_wc_test, ndk_wc_gen_params),
	KUNIT_CASE(ndk_status_errno_table_covered_test),
	KUNIT_CASE(ndk_status_wc_table_covered_test),
	KUNIT_CASE(ndk_status_errno_never_success_test),
	{}
};

NDK_SUITE(status, NULL, NULL);
