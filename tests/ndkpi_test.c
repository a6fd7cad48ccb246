// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_ndkpi, the tests of include/ndk/ndkpi.h, the NDKPI header: every
 * numeric value the interface defines, NT_SUCCESS() semantics, and the
 * layout of objects, dispatch tables and data structures.
 */
#include <kunit/test.h>
#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <ndk/ndkpi.h>

#include "ndk_tests.h"

/* Status codes must have the NTSTATUS type, not an unsigned one. */
static_assert(__same_type(STATUS_SUCCESS, NTSTATUS));
static_assert(__same_type(STATUS_INVALID_PARAMETER, NTSTATUS));
static_assert(sizeof(NTSTATUS) == 4 && sizeof(ULONG) == 4 && sizeof(LONG) == 4);

/* A named constant and the value the interface gives it. */
struct ndk_value_case {
	const char *name;
	u32 actual;
	u32 expected;
};

#define NDK_VALUE(sym, val) { .name = #sym, .actual = (u32)(sym), .expected = (val) }

/* A status code, kept with its NTSTATUS type, and its 32-bit value. */
struct ndk_status_case {
	const char *name;
	NTSTATUS status;
	u32 expected;
};

#define NDK_STATUS(sym, val) { .name = #sym, .status = (sym), .expected = (val) }

/* A status and whether NT_SUCCESS() must accept it. */
struct ndk_success_case {
	const char *name;
	NTSTATUS status;
	bool success;
};

#define NDK_SUCCESS(sym, ok) { .name = #sym, .status = (sym), .success = (ok) }

/* An offset or a size and the value the Windows x64 layout has. */
struct ndk_layout_case {
	const char *name;
	size_t actual;
	size_t expected;
};

#define NDK_LAYOUT(expr, val) { .name = #expr, .actual = (expr), .expected = (val) }

/* Dispatch entry at position idx of its table. */
#define NDK_SLOT(type, member, idx)					\
	{ .name = #type "." #member, .actual = offsetof(type, member),	\
	  .expected = (idx) * sizeof(void *) }

/* Dispatch table with n entries and nothing else. */
#define NDK_SLOTS(type, n)						\
	{ .name = "sizeof(" #type ")", .actual = sizeof(type),		\
	  .expected = (n) * sizeof(void *) }

static const struct ndk_value_case ndk_object_type_cases[] = {
	NDK_VALUE(NdkObjectTypeUndefined, 0),
	NDK_VALUE(NdkObjectTypeAdapter, 1),
	NDK_VALUE(NdkObjectTypeQp, 2),
	NDK_VALUE(NdkObjectTypeCq, 3),
	NDK_VALUE(NdkObjectTypeMr, 4),
	NDK_VALUE(NdkObjectTypeMw, 5),
	NDK_VALUE(NdkObjectTypePd, 6),
	NDK_VALUE(NdkObjectTypeSharedEndpoint, 7),
	NDK_VALUE(NdkObjectTypeConnector, 8),
	NDK_VALUE(NdkObjectTypeListener, 9),
	NDK_VALUE(NdkObjectTypeSrq, 10),
	NDK_VALUE(NdkObjectTypeMax, 11),
};

static const struct ndk_value_case ndk_operation_type_cases[] = {
	NDK_VALUE(NdkOperationTypeReceive, 1),
	NDK_VALUE(NdkOperationTypeReceiveAndInvalidate, 0x8001),
	NDK_VALUE(NdkOperationTypeSend, 2),
	NDK_VALUE(NdkOperationTypeFastRegister, 4),
	NDK_VALUE(NdkOperationTypeBind, 8),
	NDK_VALUE(NdkOperationTypeInvalidate, 16),
	NDK_VALUE(NdkOperationTypeRead, 32),
	NDK_VALUE(NdkOperationTypeWrite, 64),
};

static const struct ndk_value_case ndk_op_flag_cases[] = {
	NDK_VALUE(NDK_OP_FLAG_SILENT_SUCCESS, 0x001),
	NDK_VALUE(NDK_OP_FLAG_READ_FENCE, 0x002),
	NDK_VALUE(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, 0x004),
	NDK_VALUE(NDK_OP_FLAG_ALLOW_REMOTE_READ, 0x008),
	NDK_VALUE(NDK_OP_FLAG_ALLOW_LOCAL_WRITE, 0x010),
	NDK_VALUE(NDK_OP_FLAG_ALLOW_REMOTE_WRITE, 0x030),
	NDK_VALUE(NDK_OP_FLAG_INLINE, 0x040),
	NDK_VALUE(NDK_OP_FLAG_RDMA_READ_SINK, 0x080),
	NDK_VALUE(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, 0x100),
	NDK_VALUE(NDK_OP_FLAG_DEFER, 0x200),
	/* Remote write includes local write. */
	NDK_VALUE(NDK_OP_FLAG_ALLOW_REMOTE_WRITE & NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
		  0x010),
};

static const struct ndk_value_case ndk_mr_flag_cases[] = {
	NDK_VALUE(NDK_MR_FLAG_ALLOW_LOCAL_READ, 0x0),
	NDK_VALUE(NDK_MR_FLAG_ALLOW_LOCAL_WRITE, 0x1),
	NDK_VALUE(NDK_MR_FLAG_ALLOW_REMOTE_READ, 0x2),
	NDK_VALUE(NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 0x5),
	NDK_VALUE(NDK_MR_FLAG_RDMA_READ_SINK, 0x8),
	/* Remote write includes local write. */
	NDK_VALUE(NDK_MR_FLAG_ALLOW_REMOTE_WRITE & NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
		  0x1),
};

static const struct ndk_value_case ndk_cq_notify_cases[] = {
	NDK_VALUE(NDK_CQ_NOTIFY_ERRORS, 0),
	NDK_VALUE(NDK_CQ_NOTIFY_ANY, 1),
	NDK_VALUE(NDK_CQ_NOTIFY_SOLICITED, 2),
};

static const struct ndk_value_case ndk_adapter_flag_cases[] = {
	NDK_VALUE(NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, 0x1),
	NDK_VALUE(NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, 0x2),
	NDK_VALUE(NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0x4),
	NDK_VALUE(NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, 0x8),
	NDK_VALUE(NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 0x10),
	NDK_VALUE(NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, 0x100),
	NDK_VALUE(NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, 0x10000),
};

static const struct ndk_value_case ndk_rdma_technology_cases[] = {
	NDK_VALUE(NdkUndefined, 0),
	NDK_VALUE(NdkiWarp, 1),
	NDK_VALUE(NdkInfiniBand, 2),
	NDK_VALUE(NdkRoCE, 3),
	NDK_VALUE(NdkRoCEv2, 4),
	NDK_VALUE(NdkMaxTechnology, 5),
};

static const struct ndk_status_case ndk_status_cases[] = {
	NDK_STATUS(STATUS_SUCCESS, 0x00000000U),
	NDK_STATUS(STATUS_PENDING, 0x00000103U),
	NDK_STATUS(STATUS_TIMEOUT, 0x00000102U),
	NDK_STATUS(STATUS_BUFFER_OVERFLOW, 0x80000005U),
	NDK_STATUS(STATUS_DEVICE_BUSY, 0x80000011U),
	NDK_STATUS(STATUS_UNSUCCESSFUL, 0xC0000001U),
	NDK_STATUS(STATUS_INVALID_HANDLE, 0xC0000008U),
	NDK_STATUS(STATUS_INVALID_PARAMETER, 0xC000000DU),
	NDK_STATUS(STATUS_INVALID_DEVICE_REQUEST, 0xC0000010U),
	NDK_STATUS(STATUS_NO_MEMORY, 0xC0000017U),
	NDK_STATUS(STATUS_BUFFER_TOO_SMALL, 0xC0000023U),
	NDK_STATUS(STATUS_DATA_OVERRUN, 0xC000003CU),
	NDK_STATUS(STATUS_DATA_ERROR, 0xC000003EU),
	NDK_STATUS(STATUS_SHARING_VIOLATION, 0xC0000043U),
	NDK_STATUS(STATUS_DELETE_PENDING, 0xC0000056U),
	NDK_STATUS(STATUS_INSUFFICIENT_RESOURCES, 0xC000009AU),
	NDK_STATUS(STATUS_DEVICE_DATA_ERROR, 0xC000009CU),
	NDK_STATUS(STATUS_DEVICE_NOT_READY, 0xC00000A3U),
	NDK_STATUS(STATUS_IO_TIMEOUT, 0xC00000B5U),
	NDK_STATUS(STATUS_NOT_SUPPORTED, 0xC00000BBU),
	NDK_STATUS(STATUS_NETWORK_BUSY, 0xC00000BFU),
	NDK_STATUS(STATUS_INVALID_NETWORK_RESPONSE, 0xC00000C3U),
	NDK_STATUS(STATUS_INTERNAL_ERROR, 0xC00000E5U),
	NDK_STATUS(STATUS_INVALID_PARAMETER_1, 0xC00000EFU),
	NDK_STATUS(STATUS_CANCELLED, 0xC0000120U),
	NDK_STATUS(STATUS_LOCAL_DISCONNECT, 0xC000013BU),
	NDK_STATUS(STATUS_REMOTE_DISCONNECT, 0xC000013CU),
	NDK_STATUS(STATUS_INVALID_ADDRESS, 0xC0000141U),
	NDK_STATUS(STATUS_INVALID_DEVICE_STATE, 0xC0000184U),
	NDK_STATUS(STATUS_IO_DEVICE_ERROR, 0xC0000185U),
	NDK_STATUS(STATUS_INVALID_BUFFER_SIZE, 0xC0000206U),
	NDK_STATUS(STATUS_TOO_MANY_ADDRESSES, 0xC0000209U),
	NDK_STATUS(STATUS_ADDRESS_ALREADY_EXISTS, 0xC000020AU),
	NDK_STATUS(STATUS_CONNECTION_DISCONNECTED, 0xC000020CU),
	NDK_STATUS(STATUS_CONNECTION_RESET, 0xC000020DU),
	NDK_STATUS(STATUS_NOT_FOUND, 0xC0000225U),
	NDK_STATUS(STATUS_CONNECTION_REFUSED, 0xC0000236U),
	NDK_STATUS(STATUS_ADDRESS_ALREADY_ASSOCIATED, 0xC0000238U),
	NDK_STATUS(STATUS_ADDRESS_NOT_ASSOCIATED, 0xC0000239U),
	NDK_STATUS(STATUS_CONNECTION_INVALID, 0xC000023AU),
	NDK_STATUS(STATUS_CONNECTION_ACTIVE, 0xC000023BU),
	NDK_STATUS(STATUS_NETWORK_UNREACHABLE, 0xC000023CU),
	NDK_STATUS(STATUS_HOST_UNREACHABLE, 0xC000023DU),
	NDK_STATUS(STATUS_PROTOCOL_UNREACHABLE, 0xC000023EU),
	NDK_STATUS(STATUS_PORT_UNREACHABLE, 0xC000023FU),
	NDK_STATUS(STATUS_REQUEST_ABORTED, 0xC0000240U),
	NDK_STATUS(STATUS_CONNECTION_ABORTED, 0xC0000241U),
	NDK_STATUS(STATUS_CONNECTION_COUNT_LIMIT, 0xC0000246U),
	NDK_STATUS(STATUS_DEVICE_REMOVED, 0xC00002B6U),
	/* Codes named by the function pages beyond the common list. */
	NDK_STATUS(STATUS_ACCESS_VIOLATION, 0xC0000005U),
	NDK_STATUS(STATUS_INVALID_PARAMETER_MIX, 0xC0000030U),
	NDK_STATUS(STATUS_REMOTE_RESOURCES, 0xC000013DU),
	NDK_STATUS(STATUS_IMPLEMENTATION_LIMIT, 0xC000042BU),
};

static const struct ndk_success_case ndk_success_cases[] = {
	NDK_SUCCESS(STATUS_SUCCESS, true),
	NDK_SUCCESS(STATUS_PENDING, true),
	NDK_SUCCESS(STATUS_TIMEOUT, true),
	/* Warnings have the top bit set: negative, so not a success. */
	NDK_SUCCESS(STATUS_BUFFER_OVERFLOW, false),
	NDK_SUCCESS(STATUS_DEVICE_BUSY, false),
	NDK_SUCCESS(STATUS_UNSUCCESSFUL, false),
	NDK_SUCCESS(STATUS_INVALID_PARAMETER, false),
	NDK_SUCCESS(STATUS_INSUFFICIENT_RESOURCES, false),
	NDK_SUCCESS(STATUS_CANCELLED, false),
	NDK_SUCCESS(STATUS_DEVICE_REMOVED, false),
};

static const struct ndk_layout_case ndk_object_layout_cases[] = {
	NDK_LAYOUT(offsetof(NDK_ADAPTER, Header), 0),
	NDK_LAYOUT(offsetof(NDK_ADAPTER, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_ADAPTER), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_PD, Header), 0),
	NDK_LAYOUT(offsetof(NDK_PD, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_PD), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_CQ, Header), 0),
	NDK_LAYOUT(offsetof(NDK_CQ, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_CQ), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_QP, Header), 0),
	NDK_LAYOUT(offsetof(NDK_QP, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_QP), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_SRQ, Header), 0),
	NDK_LAYOUT(offsetof(NDK_SRQ, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_SRQ), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_MR, Header), 0),
	NDK_LAYOUT(offsetof(NDK_MR, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_MR), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_MW, Header), 0),
	NDK_LAYOUT(offsetof(NDK_MW, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_MW), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_CONNECTOR, Header), 0),
	NDK_LAYOUT(offsetof(NDK_CONNECTOR, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_CONNECTOR), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_LISTENER, Header), 0),
	NDK_LAYOUT(offsetof(NDK_LISTENER, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_LISTENER), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
	NDK_LAYOUT(offsetof(NDK_SHARED_ENDPOINT, Header), 0),
	NDK_LAYOUT(offsetof(NDK_SHARED_ENDPOINT, Dispatch), sizeof(NDK_OBJECT_HEADER)),
	NDK_LAYOUT(sizeof(NDK_SHARED_ENDPOINT), sizeof(NDK_OBJECT_HEADER) + sizeof(void *)),
};

static const struct ndk_layout_case ndk_dispatch_layout_cases[] = {
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkQueryExtension, 0),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo, 1),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateCq, 2),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkCreatePd, 3),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint, 4),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateConnector, 5),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateListener, 6),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkBuildLAM, 7),
	NDK_SLOT(NDK_ADAPTER_DISPATCH, NdkReleaseLAM, 8),
	NDK_SLOTS(NDK_ADAPTER_DISPATCH, 9),
	NDK_SLOT(NDK_PD_DISPATCH, NdkClosePd, 0),
	NDK_SLOT(NDK_PD_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_PD_DISPATCH, NdkCreateMr, 2),
	NDK_SLOT(NDK_PD_DISPATCH, NdkCreateMw, 3),
	NDK_SLOT(NDK_PD_DISPATCH, NdkCreateSrq, 4),
	NDK_SLOT(NDK_PD_DISPATCH, NdkCreateQp, 5),
	NDK_SLOT(NDK_PD_DISPATCH, NdkCreateQpWithSrq, 6),
	NDK_SLOT(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken, 7),
	NDK_SLOTS(NDK_PD_DISPATCH, 8),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkCloseCq, 0),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkResizeCq, 2),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkArmCq, 3),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkGetCqResults, 4),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkControlCqInterruptModeration, 5),
	NDK_SLOT(NDK_CQ_DISPATCH, NdkGetCqResultsEx, 6),
	NDK_SLOTS(NDK_CQ_DISPATCH, 7),
	NDK_SLOT(NDK_QP_DISPATCH, NdkCloseQp, 0),
	NDK_SLOT(NDK_QP_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_QP_DISPATCH, NdkFlush, 2),
	NDK_SLOT(NDK_QP_DISPATCH, NdkSend, 3),
	NDK_SLOT(NDK_QP_DISPATCH, NdkReceive, 4),
	NDK_SLOT(NDK_QP_DISPATCH, NdkBind, 5),
	NDK_SLOT(NDK_QP_DISPATCH, NdkFastRegister, 6),
	NDK_SLOT(NDK_QP_DISPATCH, NdkInvalidate, 7),
	NDK_SLOT(NDK_QP_DISPATCH, NdkRead, 8),
	NDK_SLOT(NDK_QP_DISPATCH, NdkWrite, 9),
	NDK_SLOT(NDK_QP_DISPATCH, NdkSendAndInvalidate, 10),
	NDK_SLOTS(NDK_QP_DISPATCH, 11),
	NDK_SLOT(NDK_SRQ_DISPATCH, NdkCloseSrq, 0),
	NDK_SLOT(NDK_SRQ_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_SRQ_DISPATCH, NdkModifySrq, 2),
	NDK_SLOT(NDK_SRQ_DISPATCH, NdkSrqReceive, 3),
	NDK_SLOTS(NDK_SRQ_DISPATCH, 4),
	NDK_SLOT(NDK_MR_DISPATCH, NdkCloseMr, 0),
	NDK_SLOT(NDK_MR_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_MR_DISPATCH, NdkRegisterMr, 2),
	NDK_SLOT(NDK_MR_DISPATCH, NdkDeregisterMr, 3),
	NDK_SLOT(NDK_MR_DISPATCH, NdkInitializeFastRegisterMr, 4),
	NDK_SLOT(NDK_MR_DISPATCH, NdkGetRemoteTokenFromMr, 5),
	NDK_SLOT(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr, 6),
	NDK_SLOTS(NDK_MR_DISPATCH, 7),
	NDK_SLOT(NDK_MW_DISPATCH, NdkCloseMw, 0),
	NDK_SLOT(NDK_MW_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_MW_DISPATCH, NdkGetRemoteTokenFromMw, 2),
	NDK_SLOTS(NDK_MW_DISPATCH, 3),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkCloseConnector, 0),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkConnect, 2),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint, 3),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect, 4),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkAccept, 5),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkReject, 6),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData, 7),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress, 8),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress, 9),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkDisconnect, 10),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx, 11),
	NDK_SLOT(NDK_CONNECTOR_DISPATCH, NdkAcceptEx, 12),
	NDK_SLOTS(NDK_CONNECTOR_DISPATCH, 13),
	NDK_SLOT(NDK_LISTENER_DISPATCH, NdkCloseListener, 0),
	NDK_SLOT(NDK_LISTENER_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_LISTENER_DISPATCH, NdkListen, 2),
	NDK_SLOT(NDK_LISTENER_DISPATCH, NdkGetLocalAddress, 3),
	NDK_SLOT(NDK_LISTENER_DISPATCH, NdkControlConnectEvents, 4),
	NDK_SLOTS(NDK_LISTENER_DISPATCH, 5),
	NDK_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkCloseSharedEndpoint, 0),
	NDK_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkQueryExtension, 1),
	NDK_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkGetLocalAddress, 2),
	NDK_SLOTS(NDK_SHARED_ENDPOINT_DISPATCH, 3),
};

static const struct ndk_layout_case ndk_struct_layout_cases[] = {
	NDK_LAYOUT(sizeof(NDK_SGE), 16),
	NDK_LAYOUT(offsetof(NDK_SGE, VirtualAddress), 0),
	NDK_LAYOUT(offsetof(NDK_SGE, LogicalAddress), 0),
	NDK_LAYOUT(offsetof(NDK_SGE, Length), 8),
	NDK_LAYOUT(offsetof(NDK_SGE, MemoryRegionToken), 12),
	NDK_LAYOUT(sizeof(NDK_VERSION), 4),
	NDK_LAYOUT(offsetof(NDK_VERSION, Minor), 2),
	NDK_LAYOUT(sizeof(GUID), 16),
	NDK_LAYOUT(offsetof(NDK_OBJECT_HEADER, ObjectType), 4),
#ifdef CONFIG_64BIT
	NDK_LAYOUT(sizeof(GROUP_AFFINITY), 16),
	NDK_LAYOUT(sizeof(NDK_OBJECT_HEADER), 40),
	NDK_LAYOUT(offsetof(NDK_OBJECT_HEADER, NdkReserved), 8),
	NDK_LAYOUT(sizeof(NDK_RESULT), 24),
	NDK_LAYOUT(offsetof(NDK_RESULT, QPContext), 8),
	NDK_LAYOUT(offsetof(NDK_RESULT, RequestContext), 16),
	NDK_LAYOUT(sizeof(NDK_RESULT_EX), 40),
	NDK_LAYOUT(offsetof(NDK_RESULT_EX, Type), 24),
	NDK_LAYOUT(offsetof(NDK_RESULT_EX, ProviderErrorCode), 28),
	NDK_LAYOUT(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput), 32),
	NDK_LAYOUT(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount), 8),
	NDK_LAYOUT(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray), 16),
	NDK_LAYOUT(sizeof(NDK_LOGICAL_ADDRESS_MAPPING), 24),
	NDK_LAYOUT(sizeof(NDK_ADAPTER_INFO), 104),
	NDK_LAYOUT(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize), 16),
	NDK_LAYOUT(offsetof(NDK_ADAPTER_INFO, FRMRPageCount), 32),
	NDK_LAYOUT(offsetof(NDK_ADAPTER_INFO, AdapterFlags), 92),
	NDK_LAYOUT(offsetof(NDK_ADAPTER_INFO, RdmaTechnology), 96),
#endif
};

static void ndk_value_desc(const struct ndk_value_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

static void ndk_status_desc(const struct ndk_status_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

static void ndk_success_desc(const struct ndk_success_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

static void ndk_layout_desc(const struct ndk_layout_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_object_type, ndk_object_type_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_operation_type, ndk_operation_type_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_op_flag, ndk_op_flag_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_mr_flag, ndk_mr_flag_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_cq_notify, ndk_cq_notify_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_adapter_flag, ndk_adapter_flag_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_rdma_technology, ndk_rdma_technology_cases, ndk_value_desc);
KUNIT_ARRAY_PARAM(ndk_status, ndk_status_cases, ndk_status_desc);
KUNIT_ARRAY_PARAM(ndk_success, ndk_success_cases, ndk_success_desc);
KUNIT_ARRAY_PARAM(ndk_object_layout, ndk_object_layout_cases, ndk_layout_desc);
KUNIT_ARRAY_PARAM(ndk_dispatch_layout, ndk_dispatch_layout_cases, ndk_layout_desc);
KUNIT_ARRAY_PARAM(ndk_struct_layout, ndk_struct_layout_cases, ndk_layout_desc);

static void ndk_check_value(struct kunit *test)
{
	const struct ndk_value_case *c = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, c->actual, c->expected, "%s", c->name);
}

static void ndk_check_layout(struct kunit *test)
{
	const struct ndk_layout_case *c = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, c->actual, c->expected, "%s", c->name);
}

static void ndk_object_type_test(struct kunit *test)
{
	ndk_check_value(test);
}

static void ndk_operation_type_test(struct kunit *test)
{
	ndk_check_value(test);
}

static void ndk_op_flag_test(struct kunit *test)
{
	ndk_check_value(test);
}

static void ndk_mr_flag_test(struct kunit *test)
{
	ndk_check_value(test);
}

static void ndk_cq_notify_test(struct kunit *test)
{
	ndk_check_value(test);
}

static void ndk_adapter_flag_test(struct kunit *test)
{
	ndk_check_value(test);
}

static void ndk_rdma_technology_test(struct kunit *test)
{
	ndk_check_value(test);
}

/* Exact 32-bit value, and the sign that the severity bits imply. */
static void ndk_status_test(struct kunit *test)
{
	const struct ndk_status_case *c = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, (u32)c->status, c->expected, "%s", c->name);
	KUNIT_EXPECT_EQ_MSG(test, c->status < 0, c->expected >= 0x80000000U,
			    "%s", c->name);
}

static void ndk_nt_success_test(struct kunit *test)
{
	const struct ndk_success_case *c = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, (bool)NT_SUCCESS(c->status), c->success,
			    "%s", c->name);
}

static void ndk_object_layout_test(struct kunit *test)
{
	ndk_check_layout(test);
}

static void ndk_dispatch_layout_test(struct kunit *test)
{
	ndk_check_layout(test);
}

static void ndk_struct_layout_test(struct kunit *test)
{
	ndk_check_layout(test);
}

static struct kunit_case ndk_ndkpi_cases[] = {
	KUNIT_CASE_PARAM(ndk_object_type_test, ndk_object_type_gen_params),
	KUNIT_CASE_PARAM(ndk_operation_type_test, ndk_operation_type_gen_params),
	KUNIT_CASE_PARAM(ndk_op_flag_test, ndk_op_flag_gen_params),
	KUNIT_CASE_PARAM(ndk_mr_flag_test, ndk_mr_flag_gen_params),
	KUNIT_CASE_PARAM(ndk_cq_notify_test, ndk_cq_notify_gen_params),
	KUNIT_CASE_PARAM(ndk_adapter_flag_test, ndk_adapter_flag_gen_params),
	KUNIT_CASE_PARAM(ndk_rdma_technology_test, ndk_rdma_technology_gen_params),
	KUNIT_CASE_PARAM(ndk_status_test, ndk_status_gen_params),
	KUNIT_CASE_PARAM(ndk_nt_success_test, ndk_success_gen_params),
	KUNIT_CASE_PARAM(ndk_object_layout_test, ndk_object_layout_gen_params),
	KUNIT_CASE_PARAM(ndk_dispatch_layout_test, ndk_dispatch_layout_gen_params),
	KUNIT_CASE_PARAM(ndk_struct_layout_test, ndk_struct_layout_gen_params),
	{}
};

NDK_SUITE_START(ndkpi, ndk_test_first_suite, NULL, NULL);
