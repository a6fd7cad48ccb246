/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Network Direct Kernel Provider Interface (NDKPI) for Linux.
 *
 * This is the provider/consumer contract of Microsoft's NDKPI, declared so
 * that the structures have the same layout as with the Windows x64 headers
 * (ndkinfo.h and ndkpi.h): same member order, same member widths. Names are
 * kept as Windows spells them so that code written against NDKPI reads the
 * same here.
 *
 * Every NDK object starts with an NDK_OBJECT_HEADER followed by a pointer
 * to its dispatch table; consumers only call through that table. The
 * platform entry points that open and close an adapter are Linux functions
 * declared elsewhere in this project (NDK_ADAPTER_DISPATCH has no close).
 */
#ifndef _NDK_NDKPI_H
#define _NDK_NDKPI_H

#include <linux/build_bug.h>
#include <linux/stddef.h>

#include "ndk_types.h"
#include "ndk_mdl.h"

/* ------------------------------------------------------------------ */
/* Adapter information (ndkinfo.h)                                     */
/* ------------------------------------------------------------------ */

/* Interface version: 1.1 is Windows Server 2012, 1.2 is 2012 R2. */
typedef struct {
	USHORT Major;
	USHORT Minor;
} NDK_VERSION;

/* Kind of RDMA fabric the adapter runs on. */
typedef enum _NDK_RDMA_TECHNOLOGY {
	NdkUndefined = 0,
	NdkiWarp = 1,
	NdkInfiniBand = 2,
	NdkRoCE = 3,
	NdkRoCEv2 = 4,
	NdkMaxTechnology
} NDK_RDMA_TECHNOLOGY;

/* Bits of NDK_ADAPTER_INFO.AdapterFlags. */
#define NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED			0x00000001
#define NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED		0x00000002
#define NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED	0x00000004
#define NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED			0x00000008
#define NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED	0x00000010
#define NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED			0x00000100
#define NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED		0x00010000

/* Limits and capabilities reported by NdkQueryAdapterInfo. */
typedef struct _NDK_ADAPTER_INFO {
	NDK_VERSION Version;
	UINT32 VendorId;
	UINT32 DeviceId;
	SIZE_T MaxRegistrationSize;
	SIZE_T MaxWindowSize;
	ULONG FRMRPageCount;
	ULONG MaxInitiatorRequestSge;
	ULONG MaxReceiveRequestSge;
	ULONG MaxReadRequestSge;
	ULONG MaxTransferLength;
	ULONG MaxInlineDataSize;
	ULONG MaxInboundReadLimit;
	ULONG MaxOutboundReadLimit;
	ULONG MaxReceiveQueueDepth;
	ULONG MaxInitiatorQueueDepth;
	ULONG MaxSrqDepth;
	ULONG MaxCqDepth;
	ULONG LargeRequestThreshold;
	ULONG MaxCallerData;
	ULONG MaxCalleeData;
	ULONG AdapterFlags;
	NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;

/* ------------------------------------------------------------------ */
/* Common object definitions                                           */
/* ------------------------------------------------------------------ */

/* Value of NDK_OBJECT_HEADER.ObjectType for each kind of object. */
typedef enum _NDK_OBJECT_TYPE {
	NdkObjectTypeUndefined = 0,
	NdkObjectTypeAdapter = 1,
	NdkObjectTypeQp = 2,
	NdkObjectTypeCq = 3,
	NdkObjectTypeMr = 4,
	NdkObjectTypeMw = 5,
	NdkObjectTypePd = 6,
	NdkObjectTypeSharedEndpoint = 7,
	NdkObjectTypeConnector = 8,
	NdkObjectTypeListener = 9,
	NdkObjectTypeSrq = 10,
	NdkObjectTypeMax = 11
} NDK_OBJECT_TYPE;

/* Space owned by the consumer; the provider zeroes it and leaves it alone. */
typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
	PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;

/* First member of every NDK object. */
typedef struct _NDK_OBJECT_HEADER {
	NDK_VERSION Version;
	NDK_OBJECT_TYPE ObjectType;
	NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;

/* One completion as returned by NdkGetCqResults. */
typedef struct _NDK_RESULT {
	NTSTATUS Status;
	ULONG BytesTransferred;
	PVOID QPContext;
	PVOID RequestContext;
} NDK_RESULT;

/* Kind of request a completion belongs to (NDK_RESULT_EX.Type). */
typedef enum _NDK_OPERATION_TYPE {
	NdkOperationTypeReceive = 1,
	NdkOperationTypeReceiveAndInvalidate = 32769,	/* 0x8001 */
	NdkOperationTypeSend = 2,
	NdkOperationTypeFastRegister = 4,
	NdkOperationTypeBind = 8,
	NdkOperationTypeInvalidate = 16,
	NdkOperationTypeRead = 32,
	NdkOperationTypeWrite = 64
} NDK_OPERATION_TYPE;

/*
 * One completion as returned by NdkGetCqResultsEx. ProviderErrorCode
 * (NDKPI 2.1) lives in what is padding before TypeSpecificCompletionOutput
 * on 64-bit builds; it is 0 on success or when the provider has no code.
 * For a receive that invalidated a token, TypeSpecificCompletionOutput
 * holds that 32-bit token.
 */
typedef struct _NDK_RESULT_EX {
	NTSTATUS Status;
	ULONG BytesTransferred;
	PVOID QPContext;
	PVOID RequestContext;
	NDK_OPERATION_TYPE Type;
	ULONG ProviderErrorCode;
	ULONG_PTR TypeSpecificCompletionOutput;
} NDK_RESULT_EX;

/*
 * Adapter page list of a virtually contiguous buffer (built by
 * NdkBuildLAM). Each entry is the device address of one PAGE_SIZE page.
 * Windows declares the array with one element, and its consumers size
 * the buffer as sizeof() plus one entry per further page: the union keeps
 * that sizeof() (24) while the array stays flexible for bounds checking.
 */
typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
	PVOID AdapterContext;
	ULONG AdapterPageCount;
	union {
		NDK_LOGICAL_ADDRESS ndk_first_page;
		DECLARE_FLEX_ARRAY(NDK_LOGICAL_ADDRESS, AdapterPageArray);
	};
} NDK_LOGICAL_ADDRESS_MAPPING;

/*
 * Scatter/gather element of a work request. The address is a virtual
 * address inside a registered region, or a logical (device) address when
 * MemoryRegionToken is the privileged token of the PD.
 */
typedef struct _NDK_SGE {
	union {
		PVOID VirtualAddress;
		NDK_LOGICAL_ADDRESS LogicalAddress;
	};
	ULONG Length;
	UINT32 MemoryRegionToken;
} NDK_SGE;

/* Flags of QP work requests (Send, Read, Write, Bind, FastRegister...). */
#define NDK_OP_FLAG_SILENT_SUCCESS		0x00000001
#define NDK_OP_FLAG_READ_FENCE			0x00000002
#define NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT	0x00000004
#define NDK_OP_FLAG_ALLOW_REMOTE_READ		0x00000008
#define NDK_OP_FLAG_ALLOW_LOCAL_WRITE		0x00000010
/* Remote write access implies local write access. */
#define NDK_OP_FLAG_ALLOW_REMOTE_WRITE		0x00000030
#define NDK_OP_FLAG_INLINE			0x00000040
#define NDK_OP_FLAG_RDMA_READ_SINK		0x00000080
#define NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE	0x00000100
#define NDK_OP_FLAG_DEFER			0x00000200

/* Access flags of NdkRegisterMr. */
#define NDK_MR_FLAG_ALLOW_LOCAL_READ		0x00000000
#define NDK_MR_FLAG_ALLOW_LOCAL_WRITE		0x00000001
#define NDK_MR_FLAG_ALLOW_REMOTE_READ		0x00000002
/* Remote write access implies local write access. */
#define NDK_MR_FLAG_ALLOW_REMOTE_WRITE		0x00000005
#define NDK_MR_FLAG_RDMA_READ_SINK		0x00000008

/* Notification types of NdkArmCq. */
#define NDK_CQ_NOTIFY_ERRORS			0
#define NDK_CQ_NOTIFY_ANY			1
#define NDK_CQ_NOTIFY_SOLICITED			2

/* Objects; each is { NDK_OBJECT_HEADER Header; const ..._DISPATCH *Dispatch; }. */
typedef struct _NDK_ADAPTER NDK_ADAPTER;
typedef struct _NDK_PD NDK_PD;
typedef struct _NDK_CQ NDK_CQ;
typedef struct _NDK_QP NDK_QP;
typedef struct _NDK_SRQ NDK_SRQ;
typedef struct _NDK_MR NDK_MR;
typedef struct _NDK_MW NDK_MW;
typedef struct _NDK_CONNECTOR NDK_CONNECTOR;
typedef struct _NDK_LISTENER NDK_LISTENER;
typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;

/* ------------------------------------------------------------------ */
/* Consumer callbacks                                                  */
/* ------------------------------------------------------------------ */

/* An asynchronous close (STATUS_PENDING from a close call) has finished. */
typedef void (*NDK_FN_CLOSE_COMPLETION)(PVOID Context);

/* A pending request that is not a work request has finished. */
typedef void (*NDK_FN_REQUEST_COMPLETION)(PVOID Context,
					  NTSTATUS Status);

/* A pending object creation has finished; pNdkObject is the new object. */
typedef void (*NDK_FN_CREATE_COMPLETION)(PVOID Context,
					 NTSTATUS Status,
					 NDK_OBJECT_HEADER *pNdkObject);

/* An armed CQ has a completion (or an error when CqStatus is a failure). */
typedef void (*NDK_FN_CQ_NOTIFICATION_CALLBACK)(PVOID CqNotificationContext,
						NTSTATUS CqStatus);

/* The SRQ fell below its notify threshold, or failed. */
typedef void (*NDK_FN_SRQ_NOTIFICATION_CALLBACK)(PVOID SrqNotificationContext,
						 NTSTATUS SrqStatus);

/* A listener received a connection request, handed over as a connector. */
typedef void (*NDK_FN_CONNECT_EVENT_CALLBACK)(PVOID ConnectEventContext,
					      NDK_CONNECTOR *pNdkConnector);

/* The peer disconnected; called at most once per connection. */
typedef void (*NDK_FN_DISCONNECT_EVENT_CALLBACK)(PVOID DisconnectEventContext);

/* As above, with a provider-specific reason code (0 when none). */
typedef void (*NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(PVOID DisconnectEventContext,
						    ULONG ProviderDisconnectReason);

/* ------------------------------------------------------------------ */
/* Functions shared by every object type                               */
/* ------------------------------------------------------------------ */

/* Close any object; may pend and then report through CloseCompletion. */
typedef NTSTATUS (*NDK_FN_CLOSE_OBJECT)(NDK_OBJECT_HEADER *pNdkObject,
					NDK_FN_CLOSE_COMPLETION CloseCompletion,
					PVOID RequestContext);

/* Extension interface: a dispatch table identified by a GUID. */
typedef struct _NDK_EXTENSION_INTERFACE {
	const void *Dispatch;
} NDK_EXTENSION_INTERFACE;

/* Look up an extension interface of an object (none is standard). */
typedef NTSTATUS (*NDK_FN_QUERY_EXTENSION_INTERFACE)(NDK_OBJECT_HEADER *pNdkObject,
						     GUID *ExtensionInterfaceID,
						     NDK_VERSION ExtensionInterfaceVersion,
						     NDK_EXTENSION_INTERFACE *pExtensionInterface);

/* ------------------------------------------------------------------ */
/* Completion queue                                                    */
/* ------------------------------------------------------------------ */

/* Change the CQ depth; only with NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED. */
typedef NTSTATUS (*NDK_FN_RESIZE_CQ)(NDK_CQ *pNdkCq,
				     ULONG CqDepth,
				     NDK_FN_REQUEST_COMPLETION RequestCompletion,
				     PVOID RequestContext);

/* Request one notification; Type is an NDK_CQ_NOTIFY_* value. */
typedef void (*NDK_FN_ARM_CQ)(NDK_CQ *pNdkCq,
			      ULONG Type);

/* Reap up to nResults completions; returns how many were written. */
typedef ULONG (*NDK_FN_GET_CQ_RESULTS)(NDK_CQ *pNdkCq,
				       NDK_RESULT Results[],
				       ULONG nResults);

/* Interrupt moderation: delay in microseconds and completion count. */
typedef NTSTATUS (*NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(NDK_CQ *pNdkCq,
							   ULONG ModerationInterval,
							   ULONG ModerationCount);

/* Same as NDK_FN_GET_CQ_RESULTS with the extended result format. */
typedef ULONG (*NDK_FN_GET_CQ_RESULTS_EX)(NDK_CQ *pNdkCq,
					  NDK_RESULT_EX Results[],
					  ULONG nResults);

typedef struct _NDK_CQ_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseCq;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_RESIZE_CQ NdkResizeCq;
	NDK_FN_ARM_CQ NdkArmCq;
	NDK_FN_GET_CQ_RESULTS NdkGetCqResults;
	NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
	NDK_FN_GET_CQ_RESULTS_EX NdkGetCqResultsEx;
} NDK_CQ_DISPATCH;

struct _NDK_CQ {
	NDK_OBJECT_HEADER Header;
	const NDK_CQ_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Memory region                                                       */
/* ------------------------------------------------------------------ */

/* Register Length bytes of a virtually contiguous buffer; Flags: NDK_MR_FLAG_*. */
typedef NTSTATUS (*NDK_FN_REGISTER_MR)(NDK_MR *pNdkMr,
				       MDL *Mdl,
				       SIZE_T Length,
				       ULONG Flags,
				       NDK_FN_REQUEST_COMPLETION RequestCompletion,
				       PVOID RequestContext);

/* Undo NdkRegisterMr. */
typedef NTSTATUS (*NDK_FN_DEREGISTER_MR)(NDK_MR *pNdkMr,
					 NDK_FN_REQUEST_COMPLETION RequestCompletion,
					 PVOID RequestContext);

/* Prepare an MR created for fast registration (NdkFastRegister). */
typedef NTSTATUS (*NDK_FN_INITIALIZE_FAST_REGISTER_MR)(NDK_MR *pNdkMr,
						       ULONG AdapterPageCount,
						       BOOLEAN RemoteAccess,
						       NDK_FN_REQUEST_COMPLETION RequestCompletion,
						       PVOID RequestContext);

/* Tokens of a registered MR, for peers (remote) and local SGEs. */
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

typedef UINT32 (*NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

typedef struct _NDK_MR_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseMr;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_REGISTER_MR NdkRegisterMr;
	NDK_FN_DEREGISTER_MR NdkDeregisterMr;
	NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
	NDK_FN_GET_REMOTE_TOKEN_FROM_MR NdkGetRemoteTokenFromMr;
	NDK_FN_GET_LOCAL_TOKEN_FROM_MR NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;

struct _NDK_MR {
	NDK_OBJECT_HEADER Header;
	const NDK_MR_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Memory window                                                       */
/* ------------------------------------------------------------------ */

/* Token of a bound MW, for peers. */
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(NDK_MW *pNdkMw);

typedef struct _NDK_MW_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseMw;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;

struct _NDK_MW {
	NDK_OBJECT_HEADER Header;
	const NDK_MW_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Shared receive queue                                                */
/* ------------------------------------------------------------------ */

/* Change the SRQ depth and its notify threshold. */
typedef NTSTATUS (*NDK_FN_MODIFY_SRQ)(NDK_SRQ *pNdkSrq,
				      ULONG SrqDepth,
				      ULONG NotifyThreshold,
				      NDK_FN_REQUEST_COMPLETION RequestCompletion,
				      PVOID RequestContext);

/* Post a receive buffer to the SRQ. */
typedef NTSTATUS (*NDK_FN_SRQ_RECEIVE)(NDK_SRQ *pNdkSrq,
				       PVOID RequestContext,
				       const NDK_SGE *pSgl,
				       ULONG nSge);

typedef struct _NDK_SRQ_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseSrq;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_MODIFY_SRQ NdkModifySrq;
	NDK_FN_SRQ_RECEIVE NdkSrqReceive;
} NDK_SRQ_DISPATCH;

struct _NDK_SRQ {
	NDK_OBJECT_HEADER Header;
	const NDK_SRQ_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Queue pair                                                          */
/* ------------------------------------------------------------------ */

/* Cancel all outstanding requests of the QP; they complete as cancelled. */
typedef void (*NDK_FN_FLUSH)(NDK_QP *pNdkQp);

/*
 * Work requests. pSgl/nSge describe local buffers; Flags are NDK_OP_FLAG_*;
 * RequestContext comes back in the CQ entry of the request.
 */
typedef NTSTATUS (*NDK_FN_SEND)(NDK_QP *pNdkQp,
				PVOID RequestContext,
				const NDK_SGE *pSgl,
				ULONG nSge,
				ULONG Flags);

typedef NTSTATUS (*NDK_FN_RECEIVE)(NDK_QP *pNdkQp,
				   PVOID RequestContext,
				   const NDK_SGE *pSgl,
				   ULONG nSge);

typedef NTSTATUS (*NDK_FN_BIND)(NDK_QP *pNdkQp,
				PVOID RequestContext,
				NDK_MR *pMr,
				NDK_MW *pMw,
				PVOID VirtualAddress,
				SIZE_T Length,
				ULONG Flags);

typedef NTSTATUS (*NDK_FN_FAST_REGISTER)(NDK_QP *pNdkQp,
					 PVOID RequestContext,
					 NDK_MR *pMr,
					 ULONG AdapterPageCount,
					 const NDK_LOGICAL_ADDRESS *AdapterPageArray,
					 ULONG FBO,
					 SIZE_T Length,
					 PVOID BaseVirtualAddress,
					 ULONG Flags);

/* pNdkMrOrMw is the header of an NDK_MR or an NDK_MW. */
typedef NTSTATUS (*NDK_FN_INVALIDATE)(NDK_QP *pNdkQp,
				      PVOID RequestContext,
				      NDK_OBJECT_HEADER *pNdkMrOrMw,
				      ULONG Flags);

typedef NTSTATUS (*NDK_FN_READ)(NDK_QP *pNdkQp,
				PVOID RequestContext,
				const NDK_SGE *pSgl,
				ULONG nSge,
				UINT64 RemoteAddress,
				UINT32 RemoteToken,
				ULONG Flags);

typedef NTSTATUS (*NDK_FN_WRITE)(NDK_QP *pNdkQp,
				 PVOID RequestContext,
				 const NDK_SGE *pSgl,
				 ULONG nSge,
				 UINT64 RemoteAddress,
				 UINT32 RemoteToken,
				 ULONG Flags);

typedef NTSTATUS (*NDK_FN_SEND_AND_INVALIDATE)(NDK_QP *pNdkQp,
					       PVOID RequestContext,
					       const NDK_SGE *pSgl,
					       ULONG nSge,
					       ULONG Flags,
					       UINT32 RemoteToken);

typedef struct _NDK_QP_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseQp;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_FLUSH NdkFlush;
	NDK_FN_SEND NdkSend;
	NDK_FN_RECEIVE NdkReceive;
	NDK_FN_BIND NdkBind;
	NDK_FN_FAST_REGISTER NdkFastRegister;
	NDK_FN_INVALIDATE NdkInvalidate;
	NDK_FN_READ NdkRead;
	NDK_FN_WRITE NdkWrite;
	NDK_FN_SEND_AND_INVALIDATE NdkSendAndInvalidate;
} NDK_QP_DISPATCH;

struct _NDK_QP {
	NDK_OBJECT_HEADER Header;
	const NDK_QP_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Protection domain                                                   */
/* ------------------------------------------------------------------ */

/*
 * Object creation: STATUS_PENDING means the object arrives later through
 * CreateCompletion, otherwise it is returned in the last parameter.
 */
typedef NTSTATUS (*NDK_FN_CREATE_MR)(NDK_PD *pNdkPd,
				     BOOLEAN FastRegister,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext,
				     NDK_MR **ppNdkMr);

typedef NTSTATUS (*NDK_FN_CREATE_MW)(NDK_PD *pNdkPd,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext,
				     NDK_MW **ppNdkMw);

typedef NTSTATUS (*NDK_FN_CREATE_SRQ)(NDK_PD *pNdkPd,
				      ULONG SrqDepth,
				      ULONG MaxReceiveRequestSge,
				      ULONG NotifyThreshold,
				      NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
				      PVOID SrqNotificationContext,
				      GROUP_AFFINITY *Affinity,
				      NDK_FN_CREATE_COMPLETION CreateCompletion,
				      PVOID RequestContext,
				      NDK_SRQ **ppNdkSrq);

typedef NTSTATUS (*NDK_FN_CREATE_QP)(NDK_PD *pNdkPd,
				     NDK_CQ *pReceiveCq,
				     NDK_CQ *pInitiatorCq,
				     PVOID QPContext,
				     ULONG ReceiveQueueDepth,
				     ULONG InitiatorQueueDepth,
				     ULONG MaxReceiveRequestSge,
				     ULONG MaxInitiatorRequestSge,
				     ULONG InlineDataSize,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext,
				     NDK_QP **ppNdkQp);

typedef NTSTATUS (*NDK_FN_CREATE_QP_WITH_SRQ)(NDK_PD *pNdkPd,
					      NDK_CQ *pReceiveCq,
					      NDK_CQ *pInitiatorCq,
					      NDK_SRQ *pSrq,
					      PVOID QPContext,
					      ULONG InitiatorQueueDepth,
					      ULONG MaxInitiatorRequestSge,
					      ULONG InlineDataSize,
					      NDK_FN_CREATE_COMPLETION CreateCompletion,
					      PVOID RequestContext,
					      NDK_QP **ppNdkQp);

/* Token that lets SGEs carry logical addresses from NdkBuildLAM. */
typedef void (*NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(NDK_PD *pNdkPd,
							  UINT32 *pToken);

typedef struct _NDK_PD_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkClosePd;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_CREATE_MR NdkCreateMr;
	NDK_FN_CREATE_MW NdkCreateMw;
	NDK_FN_CREATE_SRQ NdkCreateSrq;
	NDK_FN_CREATE_QP NdkCreateQp;
	NDK_FN_CREATE_QP_WITH_SRQ NdkCreateQpWithSrq;
	NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;

struct _NDK_PD {
	NDK_OBJECT_HEADER Header;
	const NDK_PD_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Shared endpoint                                                     */
/* ------------------------------------------------------------------ */

/* *pAddressLength: buffer size in, address size out. */
typedef NTSTATUS
(*NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
					    PSOCKADDR pAddress,
					    ULONG *pAddressLength);

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseSharedEndpoint;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;

struct _NDK_SHARED_ENDPOINT {
	NDK_OBJECT_HEADER Header;
	const NDK_SHARED_ENDPOINT_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Connector                                                           */
/* ------------------------------------------------------------------ */

/*
 * As on Windows, the address and private data parameters are "const
 * pointer" (the pointer itself is const), not pointers to const data.
 */
typedef NTSTATUS (*NDK_FN_CONNECT)(NDK_CONNECTOR *pNdkConnector,
				   NDK_QP *pNdkQp,
				   const PSOCKADDR pSrcAddress,
				   ULONG SrcAddressLength,
				   const PSOCKADDR pDestAddress,
				   ULONG DestAddressLength,
				   ULONG InboundReadLimit,
				   ULONG OutboundReadLimit,
				   const PVOID pPrivateData,
				   ULONG PrivateDataLength,
				   NDK_FN_REQUEST_COMPLETION RequestCompletion,
				   PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(NDK_CONNECTOR *pNdkConnector,
							NDK_QP *pNdkQp,
							NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
							const PSOCKADDR pDestAddress,
							ULONG DestAddressLength,
							ULONG InboundReadLimit,
							ULONG OutboundReadLimit,
							const PVOID pPrivateData,
							ULONG PrivateDataLength,
							NDK_FN_REQUEST_COMPLETION RequestCompletion,
							PVOID RequestContext);

/* Second step of an active connection, after the peer accepted. */
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT)(NDK_CONNECTOR *pNdkConnector,
					    NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
					    PVOID DisconnectEventContext,
					    NDK_FN_REQUEST_COMPLETION RequestCompletion,
					    PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT_EX)(NDK_CONNECTOR *pNdkConnector,
					       NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
					       PVOID DisconnectEventContext,
					       NDK_FN_REQUEST_COMPLETION RequestCompletion,
					       PVOID RequestContext);

/* Accept the connection request a listener handed over as pNdkConnector. */
typedef NTSTATUS (*NDK_FN_ACCEPT)(NDK_CONNECTOR *pNdkConnector,
				  NDK_QP *pNdkQp,
				  ULONG InboundReadLimit,
				  ULONG OutboundReadLimit,
				  const PVOID pPrivateData,
				  ULONG PrivateDataLength,
				  NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
				  PVOID DisconnectEventContext,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_ACCEPT_EX)(NDK_CONNECTOR *pNdkConnector,
				     NDK_QP *pNdkQp,
				     ULONG InboundReadLimit,
				     ULONG OutboundReadLimit,
				     const PVOID pPrivateData,
				     ULONG PrivateDataLength,
				     NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
				     PVOID DisconnectEventContext,
				     NDK_FN_REQUEST_COMPLETION RequestCompletion,
				     PVOID RequestContext);

/* Refuse the connection request, optionally with private data. */
typedef NTSTATUS (*NDK_FN_REJECT)(NDK_CONNECTOR *pNdkConnector,
				  const PVOID pPrivateData,
				  ULONG PrivateDataLength);

/*
 * Read limits and private data of the peer; the limits are optional
 * outputs, *pPrivateDataLength is buffer size in, needed size out.
 */
typedef NTSTATUS (*NDK_FN_GET_CONNECTION_DATA)(NDK_CONNECTOR *pNdkConnector,
					       ULONG *pInboundReadLimit,
					       ULONG *pOutboundReadLimit,
					       PVOID pPrivateData,
					       ULONG *pPrivateDataLength);

/* *pAddressLength: buffer size in, address size out. */
typedef NTSTATUS (*NDK_FN_GET_LOCAL_ADDRESS)(NDK_CONNECTOR *pNdkConnector,
					     PSOCKADDR pAddress,
					     ULONG *pAddressLength);

typedef NTSTATUS (*NDK_FN_GET_PEER_ADDRESS)(NDK_CONNECTOR *pNdkConnector,
					    PSOCKADDR pAddress,
					    ULONG *pAddressLength);

/* Graceful disconnect of an established connection. */
typedef NTSTATUS (*NDK_FN_DISCONNECT)(NDK_CONNECTOR *pNdkConnector,
				      NDK_FN_REQUEST_COMPLETION RequestCompletion,
				      PVOID RequestContext);

typedef struct _NDK_CONNECTOR_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseConnector;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_CONNECT NdkConnect;
	NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
	NDK_FN_COMPLETE_CONNECT NdkCompleteConnect;
	NDK_FN_ACCEPT NdkAccept;
	NDK_FN_REJECT NdkReject;
	NDK_FN_GET_CONNECTION_DATA NdkGetConnectionData;
	NDK_FN_GET_LOCAL_ADDRESS NdkGetLocalAddress;
	NDK_FN_GET_PEER_ADDRESS NdkGetPeerAddress;
	NDK_FN_DISCONNECT NdkDisconnect;
	NDK_FN_COMPLETE_CONNECT_EX NdkCompleteConnectEx;
	NDK_FN_ACCEPT_EX NdkAcceptEx;
} NDK_CONNECTOR_DISPATCH;

struct _NDK_CONNECTOR {
	NDK_OBJECT_HEADER Header;
	const NDK_CONNECTOR_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Listener                                                            */
/* ------------------------------------------------------------------ */

/* Pause (TRUE) or resume (FALSE) connect event callbacks. */
typedef void (*NDK_FN_CONTROL_CONNECT_EVENTS)(NDK_LISTENER *pNdkListener,
					      BOOLEAN Pause);

/* Start listening on a local address. */
typedef NTSTATUS (*NDK_FN_LISTEN)(NDK_LISTENER *pNdkListener,
				  const PSOCKADDR pAddress,
				  ULONG AddressLength,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(NDK_LISTENER *pNdkListener,
						      PSOCKADDR pAddress,
						      ULONG *pAddressLength);

typedef struct _NDK_LISTENER_DISPATCH {
	NDK_FN_CLOSE_OBJECT NdkCloseListener;
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_LISTEN NdkListen;
	NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
	NDK_FN_CONTROL_CONNECT_EVENTS NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;

struct _NDK_LISTENER {
	NDK_OBJECT_HEADER Header;
	const NDK_LISTENER_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Adapter                                                             */
/* ------------------------------------------------------------------ */

/* *pBufferSize: buffer size in, size of the returned info out. */
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO)(NDK_ADAPTER *pNdkAdapter,
					      NDK_ADAPTER_INFO *pInfo,
					      ULONG *pBufferSize);

typedef NTSTATUS (*NDK_FN_CREATE_CQ)(NDK_ADAPTER *pNdkAdapter,
				     ULONG CqDepth,
				     NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
				     PVOID CqNotificationContext,
				     GROUP_AFFINITY *Affinity,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext,
				     NDK_CQ **ppNdkCq);

typedef NTSTATUS (*NDK_FN_CREATE_PD)(NDK_ADAPTER *pNdkAdapter,
				     NDK_FN_CREATE_COMPLETION CreateCompletion,
				     PVOID RequestContext,
				     NDK_PD **ppNdkPd);

typedef NTSTATUS (*NDK_FN_CREATE_SHARED_ENDPOINT)(NDK_ADAPTER *pNdkAdapter,
						  const PSOCKADDR pAddress,
						  ULONG AddressLength,
						  NDK_FN_CREATE_COMPLETION CreateCompletion,
						  PVOID RequestContext,
						  NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);

typedef NTSTATUS (*NDK_FN_CREATE_CONNECTOR)(NDK_ADAPTER *pNdkAdapter,
					    NDK_FN_CREATE_COMPLETION CreateCompletion,
					    PVOID RequestContext,
					    NDK_CONNECTOR **ppNdkConnector);

typedef NTSTATUS (*NDK_FN_CREATE_LISTENER)(NDK_ADAPTER *pNdkAdapter,
					   NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
					   PVOID ConnectEventContext,
					   NDK_FN_CREATE_COMPLETION CreateCompletion,
					   PVOID RequestContext,
					   NDK_LISTENER **ppNdkListener);

/*
 * Build a logical address mapping (LAM) of Length bytes of a virtually
 * contiguous buffer. *pLAMSize is buffer size in, bytes used (or needed)
 * out; *pFBO receives the offset of the data in the first page.
 */
typedef NTSTATUS (*NDK_FN_BUILD_LAM)(NDK_ADAPTER *pNdkAdapter,
				     MDL *Mdl,
				     SIZE_T Length,
				     NDK_FN_REQUEST_COMPLETION RequestCompletion,
				     PVOID RequestContext,
				     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
				     ULONG *pLAMSize,
				     ULONG *pFBO);

typedef void (*NDK_FN_RELEASE_LAM)(NDK_ADAPTER *pNdkAdapter,
				   NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

typedef struct _NDK_ADAPTER_DISPATCH {
	NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
	NDK_FN_QUERY_ADAPTER_INFO NdkQueryAdapterInfo;
	NDK_FN_CREATE_CQ NdkCreateCq;
	NDK_FN_CREATE_PD NdkCreatePd;
	NDK_FN_CREATE_SHARED_ENDPOINT NdkCreateSharedEndpoint;
	NDK_FN_CREATE_CONNECTOR NdkCreateConnector;
	NDK_FN_CREATE_LISTENER NdkCreateListener;
	NDK_FN_BUILD_LAM NdkBuildLAM;
	NDK_FN_RELEASE_LAM NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;

struct _NDK_ADAPTER {
	NDK_OBJECT_HEADER Header;
	const NDK_ADAPTER_DISPATCH *Dispatch;
};

/* ------------------------------------------------------------------ */
/* Layout checks against the Windows x64 headers                       */
/* ------------------------------------------------------------------ */

#ifdef CONFIG_64BIT

static_assert(sizeof(GUID) == 16);
static_assert(sizeof(GROUP_AFFINITY) == 16);
static_assert(offsetof(GROUP_AFFINITY, Group) == 8);

static_assert(sizeof(NDK_VERSION) == 4);
static_assert(offsetof(NDK_VERSION, Minor) == 2);

static_assert(sizeof(NDK_OBJECT_TYPE) == 4);
static_assert(sizeof(NDK_OBJECT_HEADER_RESERVED_BLOCK) == 32);
static_assert(sizeof(NDK_OBJECT_HEADER) == 40);
static_assert(offsetof(NDK_OBJECT_HEADER, Version) == 0);
static_assert(offsetof(NDK_OBJECT_HEADER, ObjectType) == 4);
static_assert(offsetof(NDK_OBJECT_HEADER, NdkReserved) == 8);

static_assert(sizeof(NDK_ADAPTER) == 48);
static_assert(offsetof(NDK_ADAPTER, Header) == 0);
static_assert(offsetof(NDK_ADAPTER, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_PD) == 48);
static_assert(offsetof(NDK_PD, Header) == 0);
static_assert(offsetof(NDK_PD, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_CQ) == 48);
static_assert(offsetof(NDK_CQ, Header) == 0);
static_assert(offsetof(NDK_CQ, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_QP) == 48);
static_assert(offsetof(NDK_QP, Header) == 0);
static_assert(offsetof(NDK_QP, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_SRQ) == 48);
static_assert(offsetof(NDK_SRQ, Header) == 0);
static_assert(offsetof(NDK_SRQ, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_MR) == 48);
static_assert(offsetof(NDK_MR, Header) == 0);
static_assert(offsetof(NDK_MR, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_MW) == 48);
static_assert(offsetof(NDK_MW, Header) == 0);
static_assert(offsetof(NDK_MW, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_CONNECTOR) == 48);
static_assert(offsetof(NDK_CONNECTOR, Header) == 0);
static_assert(offsetof(NDK_CONNECTOR, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_LISTENER) == 48);
static_assert(offsetof(NDK_LISTENER, Header) == 0);
static_assert(offsetof(NDK_LISTENER, Dispatch) == sizeof(NDK_OBJECT_HEADER));
static_assert(sizeof(NDK_SHARED_ENDPOINT) == 48);
static_assert(offsetof(NDK_SHARED_ENDPOINT, Header) == 0);
static_assert(offsetof(NDK_SHARED_ENDPOINT, Dispatch) == sizeof(NDK_OBJECT_HEADER));

static_assert(sizeof(NDK_SGE) == 16);
static_assert(offsetof(NDK_SGE, VirtualAddress) == 0);
static_assert(offsetof(NDK_SGE, LogicalAddress) == 0);
static_assert(offsetof(NDK_SGE, Length) == 8);
static_assert(offsetof(NDK_SGE, MemoryRegionToken) == 12);

static_assert(sizeof(NDK_RESULT) == 24);
static_assert(offsetof(NDK_RESULT, Status) == 0);
static_assert(offsetof(NDK_RESULT, BytesTransferred) == 4);
static_assert(offsetof(NDK_RESULT, QPContext) == 8);
static_assert(offsetof(NDK_RESULT, RequestContext) == 16);

static_assert(sizeof(NDK_OPERATION_TYPE) == 4);
static_assert(sizeof(NDK_RESULT_EX) == 40);
static_assert(offsetof(NDK_RESULT_EX, QPContext) == 8);
static_assert(offsetof(NDK_RESULT_EX, RequestContext) == 16);
static_assert(offsetof(NDK_RESULT_EX, Type) == 24);
static_assert(offsetof(NDK_RESULT_EX, ProviderErrorCode) == 28);
static_assert(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 32);

/* As on Windows, sizeof() counts the first page (see above). */
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterContext) == 0);
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount) == 8);
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) == 16);
static_assert(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) == 24);

static_assert(sizeof(NDK_ADAPTER_INFO) == 104);
static_assert(offsetof(NDK_ADAPTER_INFO, VendorId) == 4);
static_assert(offsetof(NDK_ADAPTER_INFO, DeviceId) == 8);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize) == 16);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxWindowSize) == 24);
static_assert(offsetof(NDK_ADAPTER_INFO, FRMRPageCount) == 32);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCqDepth) == 76);
static_assert(offsetof(NDK_ADAPTER_INFO, AdapterFlags) == 92);
static_assert(offsetof(NDK_ADAPTER_INFO, RdmaTechnology) == 96);

static_assert(sizeof(NDK_EXTENSION_INTERFACE) == 8);

#endif /* CONFIG_64BIT */

#endif /* _NDK_NDKPI_H */
